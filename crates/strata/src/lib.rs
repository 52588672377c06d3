//! Strata: an embedded, persistent key-value store. A log-structured merge
//! tree whose files (block-based tables, write-ahead logs, MANIFEST) use
//! RocksDB 7.8.3's byte layouts, so RocksDB's tools read them and Strata
//! reads RocksDB's.
//!
//! Layers (a module uses only modules above it):
//! `util` < `env` < `format` < `wal`, `memtable`, `table` < `cache` <
//! `version` < `compaction`, `iter` < `db`; `tools` exposes deliberate entry points.

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![warn(missing_debug_implementations, rust_2018_idioms)]

pub mod cache;
pub mod compaction;
pub mod compaction_filter;
pub mod db;
pub mod env;
pub mod error;
pub mod filename;
pub mod format;
pub mod iter;
pub mod memtable;
pub mod merge_operator;
pub mod options;
pub mod table;
pub mod tools;
pub mod util;
pub mod utilities;
pub mod version;
pub mod wal;

pub use db::{ColumnFamilyDescriptor, ColumnFamilyHandle, DB, DbIterator, Env, Snapshot};
pub use error::{Error, Result};
pub use format::WriteBatch;
pub use options::{
    ColumnFamilyOptions, CompactionStyle, FifoCompactionOptions, IngestExternalFileOptions,
    MemTableFactory, Options, ReadOptions, TableFactory, UniversalCompactionOptions,
    WalRecoveryMode, WriteOptions,
};
pub use table::PlainTableOptions;
pub use table::plain::EncodingType;
pub use util::statistics::{HistogramKind, Statistics, Ticker};

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
