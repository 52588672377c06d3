//! Options with RocksDB's names and (where sensible) defaults: DB-wide
//! settings, per-column-family settings, and per-read / per-write options.

use std::path::PathBuf;
use std::sync::Arc;

use crate::env::FileSystemRef;
use crate::format::SequenceNumber;
use crate::merge_operator::MergeOperatorRef;
use crate::table::options::BlockCacheApi;
use crate::table::{CompressionType, TableOptions};
use crate::util::comparator::{ComparatorRef, bytewise};
use crate::util::slice_transform::SliceTransformRef;

/// What WAL recovery does with damage (RocksDB's `WALRecoveryMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WalRecoveryMode {
    /// A torn last record is fine; any other damage fails open.
    TolerateCorruptedTailRecords,
    /// Any damage, even a torn tail, fails open.
    AbsoluteConsistency,
    /// Replay stops at the first damage; the DB opens with the prefix.
    #[default]
    PointInTime,
    /// Damaged records are skipped and replay goes on (may leave holes).
    SkipAnyCorruptedRecords,
}

/// Settings of one column family.
#[derive(Clone)]
pub struct ColumnFamilyOptions {
    pub comparator: ComparatorRef,
    pub merge_operator: Option<MergeOperatorRef>,
    pub prefix_extractor: Option<SliceTransformRef>,
    /// Bytes of memtable before it is switched for flush.
    pub write_buffer_size: usize,
    /// Memtables (active + immutable) before writes wait for flushes.
    pub max_write_buffer_number: usize,
    pub compression: CompressionType,
    pub block_size: usize,
    pub block_restart_interval: usize,
    pub bloom_bits_per_key: Option<f64>,
    pub num_levels: usize,
    /// Block cache for this column family's tables; `None` gets the DB's
    /// default 8 MiB cache. Pass one `Arc` to several DBs to share it.
    pub block_cache: Option<Arc<dyn BlockCacheApi>>,
}

impl Default for ColumnFamilyOptions {
    fn default() -> Self {
        ColumnFamilyOptions {
            comparator: bytewise(),
            merge_operator: None,
            prefix_extractor: None,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            compression: CompressionType::Snappy,
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: Some(10.0),
            num_levels: 7,
            block_cache: None,
        }
    }
}

impl std::fmt::Debug for ColumnFamilyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnFamilyOptions")
            .field("comparator", &self.comparator.name())
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field("compression", &self.compression)
            .finish()
    }
}

impl ColumnFamilyOptions {
    /// Refuses settings the engine cannot honour (checked at open and when
    /// a column family is created), naming the column family.
    pub fn validate(&self, cf_name: &str) -> crate::error::Result<()> {
        let bad = |m: String| {
            Err(crate::error::Error::InvalidArgument(format!(
                "column family {cf_name}: {m}"
            )))
        };
        if self.write_buffer_size == 0 {
            return bad("write_buffer_size must be positive".into());
        }
        if self.block_size == 0 || self.block_size > (u32::MAX as usize) {
            return bad(format!("block_size {} out of range", self.block_size));
        }
        if self.block_restart_interval == 0 {
            return bad("block_restart_interval must be at least 1".into());
        }
        if self.num_levels == 0 || self.num_levels > 64 {
            return bad(format!(
                "num_levels {} out of range 1..=64",
                self.num_levels
            ));
        }
        if !self.compression.can_compress() {
            return bad(format!(
                "compression {} is supported for reading only",
                self.compression.name()
            ));
        }
        if let Some(b) = self.bloom_bits_per_key {
            if !b.is_finite() || b < 0.0 {
                return bad(format!("bloom_bits_per_key {b} is not a valid number"));
            }
        }
        Ok(())
    }

    /// The table options these settings imply for column family `id`/`name`.
    pub fn table_options(&self, id: u32, name: &str) -> TableOptions {
        TableOptions {
            block_size: self.block_size,
            block_restart_interval: self.block_restart_interval,
            compression: self.compression,
            bloom_bits_per_key: self.bloom_bits_per_key,
            prefix_extractor: self.prefix_extractor.clone(),
            comparator: self.comparator.clone(),
            column_family_id: u64::from(id),
            column_family_name: name.to_string(),
            merge_operator_name: self.merge_operator.as_ref().map(|m| m.name().to_string()),
            block_cache: self.block_cache.clone(),
            ..TableOptions::default()
        }
    }
}

/// Settings of a database (plus the default column family's).
#[derive(Clone)]
pub struct Options {
    pub create_if_missing: bool,
    pub error_if_exists: bool,
    /// Create column families named at open that do not exist yet.
    pub create_missing_column_families: bool,
    pub wal_recovery_mode: WalRecoveryMode,
    /// Directory for WAL files (the DB directory when `None`).
    pub wal_dir: Option<PathBuf>,
    /// Table readers kept open (at least 16 are always allowed).
    pub max_open_files: usize,
    /// MANIFEST size that triggers a rollover to a new MANIFEST.
    pub max_manifest_file_size: u64,
    /// Verify block checksums when reading tables.
    pub paranoid_checks: bool,
    /// The file system (the real one by default; tests pass in-memory ones).
    pub fs: Option<FileSystemRef>,
    /// Options of the default column family.
    pub cf: ColumnFamilyOptions,
}

impl Options {
    /// Refuses DB-wide settings the engine cannot honour.
    pub fn validate(&self) -> crate::error::Result<()> {
        if self.max_manifest_file_size == 0 {
            return Err(crate::error::Error::InvalidArgument(
                "max_manifest_file_size must be positive".into(),
            ));
        }
        self.cf.validate("default")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: false,
            error_if_exists: false,
            create_missing_column_families: false,
            wal_recovery_mode: WalRecoveryMode::default(),
            wal_dir: None,
            max_open_files: 5000,
            max_manifest_file_size: 1 << 30,
            paranoid_checks: true,
            fs: None,
            cf: ColumnFamilyOptions::default(),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("wal_recovery_mode", &self.wal_recovery_mode)
            .field("wal_dir", &self.wal_dir)
            .field("cf", &self.cf)
            .finish()
    }
}

/// Per-write options.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// fsync the WAL before acknowledging (survives power loss).
    pub sync: bool,
    /// Skip the WAL (the write survives only once flushed).
    pub disable_wal: bool,
}

/// Per-read options.
#[derive(Clone, Default)]
pub struct ReadOptions {
    /// Read as of this sequence number (a snapshot's) instead of the latest.
    pub snapshot: Option<SequenceNumber>,
    /// Iterators stop before keys below this bound.
    pub iterate_lower_bound: Option<Vec<u8>>,
    /// Iterators stop at keys at or above this bound (exclusive).
    pub iterate_upper_bound: Option<Vec<u8>>,
    /// Iterators stay within the seek key's prefix (needs a prefix extractor).
    pub prefix_same_as_start: bool,
}

impl std::fmt::Debug for ReadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOptions")
            .field("snapshot", &self.snapshot)
            .finish()
    }
}
