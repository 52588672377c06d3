//! Strata: an embedded, persistent key-value store. A log-structured merge
//! tree whose files (block-based tables, write-ahead logs, MANIFEST) use
//! RocksDB 7.8.3's byte layouts, so RocksDB's tools read them and Strata
//! reads RocksDB's.
//!
//! The public surface is a facade: [`DB`] and its options, batches,
//! iterators, snapshots and errors, the user-supplied callbacks
//! (comparators, merge operators, compaction filters, prefix extractors,
//! file systems), [`SstFileWriter`], and the stacked layers of
//! [`utilities`]. The engine's internals are crate-private; [`tools`]
//! gives the command-line tools, benchmarks, fuzz targets and interop
//! tests a deliberate, unstable view of the parts they need.
//!
//! Layers (a module uses only modules of lower layers; the table in
//! `docs/ARCHITECTURE.md`): `error`, `util` < `fs` < `filename`, `format` <
//! `wal`, `table`, `memtable` < `cache` < `env`, `options` < `version`,
//! `iter` < `compaction` < `db` < `utilities`.

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![warn(missing_debug_implementations, rust_2018_idioms)]

// The facade: what an application uses.
pub mod compaction_filter;
pub mod db;
pub mod env;
pub mod error;
pub mod fs;
pub mod merge_operator;
pub mod options;
pub mod utilities;

// Everything else is the engine's own; the CLI, benchmarks, fuzz targets
// and interop tests reach what they need of it through `tools`.
pub(crate) mod cache;
pub(crate) mod compaction;
pub(crate) mod filename;
pub(crate) mod format;
pub(crate) mod iter;
pub(crate) mod memtable;
pub(crate) mod table;
pub(crate) mod util;
pub(crate) mod version;
pub(crate) mod wal;

pub mod tools;

pub use cache::BlockCache;
pub use db::{ColumnFamilyDescriptor, ColumnFamilyHandle, DB, DbIterator, Snapshot};
pub use env::{Env, ThreadPool};
pub use error::{Error, Result};
pub use format::WriteBatch;
pub use format::write_batch::BatchRecord;
pub use memtable::{MemoryCharger, WriteBufferManager};
pub use options::{
    ColumnFamilyOptions, CompactionStyle, DbPath, FifoCompactionOptions, IngestExternalFileOptions,
    MemTableFactory, Options, ReadOptions, TableFactory, UniversalCompactionOptions,
    WalRecoveryMode, WriteOptions,
};
pub use table::compression::CompressionType;
pub use table::compression_dict::CompressionOptions;
pub use table::options::{
    BlockCacheApi, DataBlockIndexType, FilterPolicy, IndexShorteningMode, IndexType, TableOptions,
};
pub use table::plain::EncodingType;
pub use table::{CuckooTableOptions, PlainTableOptions, SstFileWriter};
pub use util::checksum::ChecksumType;
pub use util::comparator::{
    BytewiseComparator, Comparator, ComparatorRef, ReverseBytewiseComparator, bytewise,
    bytewise_compare,
};
pub use util::file_checksum::{
    FileChecksumGenCrc32cFactory, FileChecksumGenFactory, FileChecksumGenFactoryRef,
    FileChecksumGenerator,
};
pub use util::perf_context;
pub use util::slice_transform::{CappedPrefix, FixedPrefix, SliceTransform, SliceTransformRef};
pub use util::statistics::{HistogramKind, Statistics, Ticker};

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
