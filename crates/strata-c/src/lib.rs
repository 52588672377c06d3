//! Strata's C library: RocksDB 7.8.3's C API (`include/rocksdb/c.h`) over
//! the Strata engine, so programs written for RocksDB's C API compile
//! against our header and link with `-lstrata_c` unchanged.
//!
//! Conventions (see [`ffi`]): errors through `char** errptr` as malloc'd
//! `Status::ToString()` text; values handed out are malloc'd (free them with
//! `rocksdb_free`); no panic crosses the boundary; NULL handles are errors,
//! never dereferenced. Every exported function is `unsafe extern "C"`: its
//! safety contract is RocksDB's C API contract (live handles of this
//! library, buffers of the stated lengths, one thread per iterator, batch
//! or transaction at a time), stated once here rather than on each.

#![allow(clippy::missing_safety_doc)]
// RocksDB's C signatures, argument for argument.
#![allow(clippy::too_many_arguments)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod backup;
pub mod batch;
pub mod batch_wi;
pub mod callbacks;
pub mod db;
mod ffi;
pub mod iterator;
pub mod metadata;
#[macro_use]
pub mod options;
pub mod compression_options;
pub mod knobs;
pub mod memory_usage;
pub mod perf_context;
pub mod sst;
pub mod transactions;
pub mod wal;
