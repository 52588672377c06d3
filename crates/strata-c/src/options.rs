//! Option objects of the C API: `rocksdb_options_t` (DB and column family
//! settings together, as RocksDB's `Options`), block-based table options,
//! caches, filter policies, read/write/flush/compact options, and the
//! universal and FIFO compaction settings.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uchar};
use std::sync::Arc;

use strata::BlockCache;
use strata::CompressionType;
use strata::Statistics;
use strata::options::{
    CompactionStyle, FifoCompactionOptions, Options, ReadOptions, UniversalCompactionOptions,
    WalRecoveryMode, WriteOptions,
};

use crate::callbacks::{
    rocksdb_compactionfilter_t, rocksdb_comparator_t, rocksdb_mergeoperator_t,
    rocksdb_slicetransform_t,
};
use crate::ffi::{bytes, cstr, drop_raw, guard_quiet, into_raw, malloc_cstr};

/// RocksDB's `Options`: a database's settings and its default column
/// family's (also used as a column family's options).
#[derive(Clone, Default)]
pub struct rocksdb_options_t {
    pub opts: Options,
    /// `max_open_files` as the caller set it (-1 = unlimited).
    max_open_files: Option<c_int>,
    /// Settings of RocksDB's own machinery (see [`crate::knobs`]).
    pub knobs: crate::knobs::DbKnobs,
}

impl rocksdb_options_t {
    /// The options a database opens with: Strata's, with what the knobs
    /// decide applied, or why the knobs ask for what Strata cannot do.
    pub fn engine(&self) -> Result<Options, String> {
        if let Some(why) = self.knobs.refusal() {
            return Err(why);
        }
        let mut o = self.opts.clone();
        o.max_background_jobs = self.knobs.background_jobs(o.max_background_jobs);
        Ok(o)
    }
}

/// RocksDB's `BlockBasedTableOptions` (the subset Strata's tables have).
#[derive(Clone)]
pub struct rocksdb_block_based_table_options_t {
    block_size: usize,
    block_restart_interval: usize,
    bloom_bits_per_key: Option<f64>,
    filter_policy: strata::FilterPolicy,
    cache_index_and_filter_blocks: bool,
    pin_l0_filter_and_index_blocks_in_cache: bool,
    pin_top_level_index_and_filter: bool,
    block_cache: Option<Arc<BlockCache>>,
    no_block_cache: bool,
    checksum: strata::ChecksumType,
    format_version: u32,
    whole_key_filtering: bool,
    index_type: strata::IndexType,
    data_block_index_type: strata::DataBlockIndexType,
    data_block_hash_ratio: f64,
    partition_filters: bool,
    metadata_block_size: usize,
    index_block_restart_interval: usize,
}

impl Default for rocksdb_block_based_table_options_t {
    fn default() -> Self {
        let d = Options::default().cf;
        rocksdb_block_based_table_options_t {
            block_size: d.block_size,
            block_restart_interval: d.block_restart_interval,
            // RocksDB's BlockBasedTableOptions has no filter by default.
            bloom_bits_per_key: None,
            filter_policy: strata::FilterPolicy::Bloom,
            cache_index_and_filter_blocks: false,
            pin_l0_filter_and_index_blocks_in_cache: false,
            pin_top_level_index_and_filter: true,
            block_cache: None,
            no_block_cache: false,
            checksum: d.checksum,
            format_version: d.format_version,
            whole_key_filtering: d.whole_key_filtering,
            index_type: d.index_type,
            data_block_index_type: d.data_block_index_type,
            data_block_hash_ratio: d.data_block_hash_table_util_ratio,
            partition_filters: d.partition_filters,
            metadata_block_size: d.metadata_block_size,
            index_block_restart_interval: d.index_block_restart_interval,
        }
    }
}

/// An LRU block cache (RocksDB's `NewLRUCache`), shareable by databases.
pub struct rocksdb_cache_t {
    pub cache: Arc<BlockCache>,
}

/// A filter policy: full Bloom or Standard128 Ribbon filters of a
/// Bloom-equivalent bits/key.
pub struct rocksdb_filterpolicy_t {
    bits_per_key: f64,
    policy: strata::FilterPolicy,
}

#[derive(Clone, Default)]
pub struct rocksdb_readoptions_t {
    pub opts: ReadOptions,
    verify_checksums: Option<bool>,
    fill_cache: Option<bool>,
    /// RocksDB read settings Strata keeps (see [`crate::knobs::ReadKnobs`]).
    pub knobs: crate::knobs::ReadKnobs,
}

#[derive(Clone, Default)]
pub struct rocksdb_writeoptions_t {
    pub opts: WriteOptions,
    /// RocksDB write settings Strata keeps (see [`crate::knobs::WriteKnobs`]).
    pub knobs: crate::knobs::WriteKnobs,
}

pub struct rocksdb_flushoptions_t {
    pub wait: bool,
}

#[derive(Clone)]
pub struct rocksdb_compactoptions_t {
    pub exclusive_manual_compaction: bool,
    pub bottommost_level_compaction: c_uchar,
    pub change_level: bool,
    pub target_level: c_int,
}

pub struct rocksdb_universal_compaction_options_t {
    opts: UniversalCompactionOptions,
    /// RocksDB's `compression_size_percent` (-1: compress every run) and
    /// `stop_style` (0: similar size, 1: total size): kept; Strata's
    /// universal picker compresses every run and uses similar-size
    /// stopping.
    compression_size_percent: c_int,
    stop_style: c_int,
}

pub struct rocksdb_fifo_compaction_options_t {
    opts: FifoCompactionOptions,
}

/// RocksDB's numeric compression codes (`rocksdb_no_compression` = 0, ...).
pub fn compression_from_c(v: c_int) -> Option<CompressionType> {
    u8::try_from(v)
        .ok()
        .and_then(CompressionType::from_u8)
        .filter(|c| *c != CompressionType::ZstdNotFinal)
}

pub(crate) fn compression_to_c(c: CompressionType) -> c_int {
    c as c_int
}

macro_rules! setter {
    ($ty:ty, $name:ident, $vty:ty, |$o:ident, $v:ident| $body:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(opt: *mut $ty, $v: $vty) {
            guard_quiet((), || {
                // SAFETY: NULL or a live object of this library (C API contract).
                if let Some($o) = unsafe { opt.as_mut() } {
                    $body;
                }
            })
        }
    };
}

macro_rules! getter {
    ($ty:ty, $name:ident, $rty:ty, |$o:ident| $body:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(opt: *mut $ty) -> $rty {
            guard_quiet(Default::default(), || {
                // SAFETY: NULL or a live object of this library (C API contract).
                match unsafe { opt.as_ref() } {
                    Some($o) => $body,
                    None => Default::default(),
                }
            })
        }
    };
}

// ---- rocksdb_options_t ----

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_options_create() -> *mut rocksdb_options_t {
    into_raw(rocksdb_options_t::default())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_destroy(opt: *mut rocksdb_options_t) {
    // SAFETY: NULL or from rocksdb_options_create (C API contract).
    guard_quiet((), || unsafe { drop_raw(opt) })
}

/// RocksDB's `IncreaseParallelism`: background threads for flushes and
/// compactions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_increase_parallelism(
    opt: *mut rocksdb_options_t,
    total_threads: c_int,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.max_background_jobs = total_threads.max(1) as usize;
        }
    })
}

/// RocksDB's `OptimizeLevelStyleCompaction(memtable_memory_budget)`:
/// memtables of a quarter of the budget, L0 triggers at 2, the base level
/// as large as the budget, and lz4 (RocksDB puts lz4 below L1; this keeps
/// the behaviour it had before per-level codecs).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_optimize_level_style_compaction(
    opt: *mut rocksdb_options_t,
    memtable_memory_budget: u64,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts
                .cf
                .optimize_level_style_compaction(memtable_memory_budget);
            o.opts.cf.compression = CompressionType::Lz4;
        }
    })
}

/// RocksDB's `OptimizeForPointLookup(block_cache_size_mb)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_optimize_for_point_lookup(
    opt: *mut rocksdb_options_t,
    block_cache_size_mb: u64,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.cf.optimize_for_point_lookup(block_cache_size_mb);
        }
    })
}

setter!(
    rocksdb_options_t,
    rocksdb_options_set_create_if_missing,
    c_uchar,
    |o, v| o.opts.create_if_missing = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_create_if_missing,
    c_uchar,
    |o| o.opts.create_if_missing as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_create_missing_column_families,
    c_uchar,
    |o, v| o.opts.create_missing_column_families = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_create_missing_column_families,
    c_uchar,
    |o| o.opts.create_missing_column_families as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_error_if_exists,
    c_uchar,
    |o, v| o.opts.error_if_exists = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_error_if_exists,
    c_uchar,
    |o| o.opts.error_if_exists as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_paranoid_checks,
    c_uchar,
    |o, v| o.opts.paranoid_checks = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_paranoid_checks,
    c_uchar,
    |o| o.opts.paranoid_checks as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_write_buffer_size,
    usize,
    |o, v| o.opts.cf.write_buffer_size = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_write_buffer_size,
    usize,
    |o| o.opts.cf.write_buffer_size
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_max_write_buffer_number,
    c_int,
    |o, v| o.opts.cf.max_write_buffer_number = v.max(1) as usize
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_max_write_buffer_number,
    c_int,
    |o| o.opts.cf.max_write_buffer_number as c_int
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_max_open_files,
    c_int,
    |o, v| {
        o.max_open_files = Some(v);
        // -1 (RocksDB: keep every table open) becomes a bound no database
        // reaches; RocksDB reads the number back from the OPTIONS file.
        o.opts.max_open_files = if v < 0 {
            i32::MAX as usize
        } else {
            (v as usize).max(20)
        };
    }
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_max_open_files,
    c_int,
    |o| o
        .max_open_files
        .unwrap_or(o.opts.max_open_files.min(i32::MAX as usize) as c_int)
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_compression,
    c_int,
    |o, v| {
        // An unknown code keeps the current codec; open reports codecs Strata
        // cannot write.
        if let Some(c) = compression_from_c(v) {
            o.opts.cf.compression = c;
        }
    }
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_compression,
    c_int,
    |o| compression_to_c(o.opts.cf.compression)
);
/// The codec of each level (RocksDB's `compression_per_level`); an
/// unknown code keeps the list as it was.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_compression_per_level(
    opt: *mut rocksdb_options_t,
    level_values: *const c_int,
    num_levels: usize,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object; `level_values` holds
        // `num_levels` ints (C API contract).
        let Some(o) = (unsafe { opt.as_mut() }) else {
            return;
        };
        if level_values.is_null() && num_levels > 0 {
            return;
        }
        let codes = (0..num_levels).map(|i| unsafe { *level_values.add(i) });
        if let Some(list) = codes.map(compression_from_c).collect::<Option<Vec<_>>>() {
            o.opts.cf.compression_per_level = list;
        }
    })
}

/// Levels below `level` uncompressed, the rest with the current codec
/// (RocksDB's C helper over `compression_per_level`); call it after
/// setting `num_levels` and `compression`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_min_level_to_compress(
    opt: *mut rocksdb_options_t,
    level: c_int,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object.
        let Some(o) = (unsafe { opt.as_mut() }) else {
            return;
        };
        if level >= 0 {
            o.opts.cf.set_min_level_to_compress(level as usize);
        }
    })
}

setter!(
    rocksdb_options_t,
    rocksdb_options_set_compaction_style,
    c_int,
    |o, v| {
        o.opts.cf.compaction_style = match v {
            1 => CompactionStyle::Universal,
            2 => CompactionStyle::Fifo,
            3 => CompactionStyle::None,
            _ => CompactionStyle::Level,
        }
    }
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_compaction_style,
    c_int,
    |o| o.opts.cf.compaction_style.rocksdb_code() as c_int
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_num_levels,
    c_int,
    |o, v| o.opts.cf.num_levels = v.max(1) as usize
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_num_levels,
    c_int,
    |o| o.opts.cf.num_levels as c_int
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_level0_file_num_compaction_trigger,
    c_int,
    |o, v| o.opts.cf.level0_file_num_compaction_trigger = v.max(1) as usize
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_level0_file_num_compaction_trigger,
    c_int,
    |o| o.opts.cf.level0_file_num_compaction_trigger as c_int
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_level0_slowdown_writes_trigger,
    c_int,
    |o, v| o.opts.cf.level0_slowdown_writes_trigger = v.max(1) as usize
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_level0_slowdown_writes_trigger,
    c_int,
    |o| o.opts.cf.level0_slowdown_writes_trigger as c_int
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_level0_stop_writes_trigger,
    c_int,
    |o, v| o.opts.cf.level0_stop_writes_trigger = v.max(1) as usize
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_level0_stop_writes_trigger,
    c_int,
    |o| o.opts.cf.level0_stop_writes_trigger as c_int
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_target_file_size_base,
    u64,
    |o, v| o.opts.cf.target_file_size_base = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_target_file_size_base,
    u64,
    |o| o.opts.cf.target_file_size_base
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_target_file_size_multiplier,
    c_int,
    |o, v| o.opts.cf.target_file_size_multiplier = v.max(1) as u64
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_target_file_size_multiplier,
    c_int,
    |o| o.opts.cf.target_file_size_multiplier as c_int
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_max_bytes_for_level_base,
    u64,
    |o, v| o.opts.cf.max_bytes_for_level_base = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_max_bytes_for_level_base,
    u64,
    |o| o.opts.cf.max_bytes_for_level_base
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_max_bytes_for_level_multiplier,
    f64,
    |o, v| o.opts.cf.max_bytes_for_level_multiplier = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_max_bytes_for_level_multiplier,
    f64,
    |o| o.opts.cf.max_bytes_for_level_multiplier
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_level_compaction_dynamic_level_bytes,
    c_uchar,
    |o, v| o.opts.cf.level_compaction_dynamic_level_bytes = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_level_compaction_dynamic_level_bytes,
    c_uchar,
    |o| o.opts.cf.level_compaction_dynamic_level_bytes as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_disable_auto_compactions,
    c_int,
    |o, v| o.opts.cf.disable_auto_compactions = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_disable_auto_compactions,
    c_uchar,
    |o| o.opts.cf.disable_auto_compactions as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_max_background_jobs,
    c_int,
    |o, v| o.opts.max_background_jobs = v.max(1) as usize
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_max_background_jobs,
    c_int,
    |o| o.opts.max_background_jobs as c_int
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_db_write_buffer_size,
    usize,
    |o, v| o.opts.db_write_buffer_size = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_db_write_buffer_size,
    usize,
    |o| o.opts.db_write_buffer_size
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_max_subcompactions,
    u32,
    |o, v| o.opts.max_subcompactions = v.max(1) as usize
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_max_subcompactions,
    u32,
    |o| o.opts.max_subcompactions as u32
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_max_log_file_size,
    usize,
    |o, v| o.opts.max_log_file_size = v as u64
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_max_log_file_size,
    usize,
    |o| o.opts.max_log_file_size as usize
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_keep_log_file_num,
    usize,
    |o, v| o.opts.keep_log_file_num = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_keep_log_file_num,
    usize,
    |o| o.opts.keep_log_file_num
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_WAL_ttl_seconds,
    u64,
    |o, v| o.opts.wal_ttl_seconds = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_WAL_ttl_seconds,
    u64,
    |o| o.opts.wal_ttl_seconds
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_WAL_size_limit_MB,
    u64,
    |o, v| o.opts.wal_size_limit_mb = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_WAL_size_limit_MB,
    u64,
    |o| o.opts.wal_size_limit_mb
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_allow_concurrent_memtable_write,
    c_uchar,
    |o, v| o.opts.allow_concurrent_memtable_write = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_allow_concurrent_memtable_write,
    c_uchar,
    |o| o.opts.allow_concurrent_memtable_write as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_enable_pipelined_write,
    c_uchar,
    |o, v| o.opts.enable_pipelined_write = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_enable_pipelined_write,
    c_uchar,
    |o| o.opts.enable_pipelined_write as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_unordered_write,
    c_uchar,
    |o, v| o.opts.unordered_write = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_unordered_write,
    c_uchar,
    |o| o.opts.unordered_write as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_allow_ingest_behind,
    c_uchar,
    |o, v| o.opts.allow_ingest_behind = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_allow_ingest_behind,
    c_uchar,
    |o| o.opts.allow_ingest_behind as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_manual_wal_flush,
    c_uchar,
    |o, v| o.opts.manual_wal_flush = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_manual_wal_flush,
    c_uchar,
    |o| o.opts.manual_wal_flush as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_wal_recovery_mode,
    c_int,
    |o, v| {
        o.opts.wal_recovery_mode = match v {
            0 => WalRecoveryMode::TolerateCorruptedTailRecords,
            1 => WalRecoveryMode::AbsoluteConsistency,
            3 => WalRecoveryMode::SkipAnyCorruptedRecords,
            _ => WalRecoveryMode::PointInTime,
        }
    }
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_wal_recovery_mode,
    c_int,
    |o| match o.opts.wal_recovery_mode {
        WalRecoveryMode::TolerateCorruptedTailRecords => 0,
        WalRecoveryMode::AbsoluteConsistency => 1,
        WalRecoveryMode::PointInTime => 2,
        WalRecoveryMode::SkipAnyCorruptedRecords => 3,
    }
);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_wal_dir(
    opt: *mut rocksdb_options_t,
    dir: *const c_char,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object; `dir` NULL or a C string.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.wal_dir = unsafe { cstr(dir, "wal_dir") }
                .ok()
                .filter(|d| !d.is_empty())
                .map(Into::into);
        }
    })
}

/// RocksDB's `CreateDBStatistics`: tickers and histograms, read back with
/// `rocksdb_options_statistics_get_string`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_enable_statistics(opt: *mut rocksdb_options_t) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.statistics = Some(Arc::new(Statistics::new()));
        }
    })
}

/// The statistics as text (RocksDB's ticker and histogram names), malloc'd;
/// NULL without `rocksdb_options_enable_statistics`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_statistics_get_string(
    opt: *mut rocksdb_options_t,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL or a live options object.
        match unsafe { opt.as_ref() }.and_then(|o| o.opts.statistics.as_ref()) {
            Some(s) => malloc_cstr(&s.report()),
            None => std::ptr::null_mut(),
        }
    })
}

/// Shares the comparator with these options (the caller still destroys
/// its handle; the callbacks' destructor runs once nothing uses them).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_comparator(
    opt: *mut rocksdb_options_t,
    cmp: *mut rocksdb_comparator_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library.
        if let (Some(o), Some(c)) = unsafe { (opt.as_mut(), cmp.as_ref()) } {
            o.opts.cf.comparator = c.comparator.clone();
        }
    })
}

/// Hands the merge operator to these options (as RocksDB, which takes
/// ownership: do not destroy it afterwards).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_merge_operator(
    opt: *mut rocksdb_options_t,
    op: *mut rocksdb_mergeoperator_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library; `op` is consumed.
        if let Some(o) = unsafe { opt.as_mut() } {
            if op.is_null() {
                o.opts.cf.merge_operator = None;
            } else {
                let op = unsafe { Box::from_raw(op) };
                o.opts.cf.merge_operator = Some(op.op.clone());
            }
        }
    })
}

/// Shares the compaction filter with these options (the caller keeps its
/// handle and destroys it, as in RocksDB).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_compaction_filter(
    opt: *mut rocksdb_options_t,
    filter: *mut rocksdb_compactionfilter_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.cf.compaction_filter = unsafe { filter.as_ref() }.map(|f| f.filter.clone());
        }
    })
}

/// Hands the prefix extractor to these options (RocksDB takes ownership).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_prefix_extractor(
    opt: *mut rocksdb_options_t,
    st: *mut rocksdb_slicetransform_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library; `st` is consumed.
        if let Some(o) = unsafe { opt.as_mut() } {
            if st.is_null() {
                o.opts.cf.prefix_extractor = None;
            } else {
                let st = unsafe { Box::from_raw(st) };
                o.opts.cf.prefix_extractor = Some(st.transform.clone());
            }
        }
    })
}

/// RocksDB's PlainTable (`NewPlainTableFactory` with these four fields,
/// the rest at their defaults).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_plain_table_factory(
    opt: *mut rocksdb_options_t,
    user_key_len: u32,
    bloom_bits_per_key: c_int,
    hash_table_ratio: f64,
    index_sparseness: usize,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.cf.table_factory = strata::TableFactory::Plain(strata::PlainTableOptions {
                user_key_len,
                bloom_bits_per_key,
                hash_table_ratio,
                index_sparseness,
                ..Default::default()
            });
        }
    })
}

/// RocksDB's `CuckooTableOptions` (its defaults until set).
pub struct rocksdb_cuckoo_table_options_t {
    opts: strata::CuckooTableOptions,
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_cuckoo_options_create() -> *mut rocksdb_cuckoo_table_options_t {
    into_raw(rocksdb_cuckoo_table_options_t {
        opts: strata::CuckooTableOptions::default(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_cuckoo_options_destroy(o: *mut rocksdb_cuckoo_table_options_t) {
    // SAFETY: NULL or from rocksdb_cuckoo_options_create.
    guard_quiet((), || unsafe { drop_raw(o) })
}

setter!(
    rocksdb_cuckoo_table_options_t,
    rocksdb_cuckoo_options_set_hash_ratio,
    f64,
    |o, v| o.opts.hash_table_ratio = v
);
setter!(
    rocksdb_cuckoo_table_options_t,
    rocksdb_cuckoo_options_set_max_search_depth,
    u32,
    |o, v| o.opts.max_search_depth = v
);
setter!(
    rocksdb_cuckoo_table_options_t,
    rocksdb_cuckoo_options_set_cuckoo_block_size,
    u32,
    |o, v| o.opts.cuckoo_block_size = v
);
setter!(
    rocksdb_cuckoo_table_options_t,
    rocksdb_cuckoo_options_set_identity_as_first_hash,
    c_uchar,
    |o, v| o.opts.identity_as_first_hash = v != 0
);
setter!(
    rocksdb_cuckoo_table_options_t,
    rocksdb_cuckoo_options_set_use_module_hash,
    c_uchar,
    |o, v| o.opts.use_module_hash = v != 0
);

/// CuckooTable files for the column family (see `strata::CuckooTableOptions`:
/// data the format cannot hold is written block-based, never dropped).
/// The options are copied; NULL changes nothing, as in RocksDB.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_cuckoo_table_factory(
    opt: *mut rocksdb_options_t,
    table_options: *mut rocksdb_cuckoo_table_options_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library.
        if let (Some(o), Some(t)) = unsafe { (opt.as_mut(), table_options.as_ref()) } {
            o.opts.cf.table_factory = strata::TableFactory::Cuckoo(t.opts.clone());
        }
    })
}

/// RocksDB's `VectorRepFactory` memtable (needs
/// `allow_concurrent_memtable_write` off, as in RocksDB).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_memtable_vector_rep(opt: *mut rocksdb_options_t) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.cf.memtable_factory = strata::MemTableFactory::Vector;
        }
    })
}

/// RocksDB's `HashLinkListRepFactory` memtable: `bucket_count` buckets of
/// sorted linked lists (indexed like skiplists past RocksDB's default 256
/// entries). Needs a prefix extractor, and
/// `allow_concurrent_memtable_write` off.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_hash_link_list_rep(
    opt: *mut rocksdb_options_t,
    bucket_count: usize,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.cf.memtable_factory = strata::MemTableFactory::HashLinkList {
                bucket_count,
                threshold_use_skiplist: 256,
            };
        }
    })
}

/// RocksDB's `HashSkipListRepFactory` memtable: `bucket_count` buckets
/// (the skiplist height and branching factor are Strata's own). Needs a
/// prefix extractor, and `allow_concurrent_memtable_write` off.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_hash_skip_list_rep(
    opt: *mut rocksdb_options_t,
    bucket_count: usize,
    _skiplist_height: i32,
    _skiplist_branching_factor: i32,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live options object.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.cf.memtable_factory = strata::MemTableFactory::PrefixHash { bucket_count };
        }
    })
}

setter!(
    rocksdb_options_t,
    rocksdb_options_set_allow_mmap_reads,
    c_uchar,
    |o, v| o.opts.allow_mmap_reads = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_allow_mmap_reads,
    c_uchar,
    |o| o.opts.allow_mmap_reads as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_allow_mmap_writes,
    c_uchar,
    |o, v| o.opts.allow_mmap_writes = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_allow_mmap_writes,
    c_uchar,
    |o| o.opts.allow_mmap_writes as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_bytes_per_sync,
    u64,
    |o, v| o.opts.bytes_per_sync = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_bytes_per_sync,
    u64,
    |o| o.opts.bytes_per_sync
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_use_direct_reads,
    c_uchar,
    |o, v| o.opts.use_direct_reads = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_use_direct_reads,
    c_uchar,
    |o| o.opts.use_direct_reads as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_use_direct_io_for_flush_and_compaction,
    c_uchar,
    |o, v| o.opts.use_direct_io_for_flush_and_compaction = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_use_direct_io_for_flush_and_compaction,
    c_uchar,
    |o| o.opts.use_direct_io_for_flush_and_compaction as c_uchar
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_memtable_prefix_bloom_size_ratio,
    f64,
    |o, v| o.opts.cf.memtable_prefix_bloom_size_ratio = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_memtable_prefix_bloom_size_ratio,
    f64,
    |o| o.opts.cf.memtable_prefix_bloom_size_ratio
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_memtable_huge_page_size,
    usize,
    |o, v| o.opts.cf.memtable_huge_page_size = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_memtable_huge_page_size,
    usize,
    |o| o.opts.cf.memtable_huge_page_size
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_memtable_whole_key_filtering,
    c_uchar,
    |o, v| o.opts.cf.memtable_whole_key_filtering = v != 0
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_bloom_locality,
    u32,
    |o, v| o.opts.cf.bloom_locality = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_bloom_locality,
    u32,
    |o| o.opts.cf.bloom_locality
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_optimize_filters_for_hits,
    c_int,
    |o, v| o.opts.cf.optimize_filters_for_hits = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_optimize_filters_for_hits,
    c_uchar,
    |o| o.opts.cf.optimize_filters_for_hits as c_uchar
);

/// Copies the table options into these options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_block_based_table_factory(
    opt: *mut rocksdb_options_t,
    t: *mut rocksdb_block_based_table_options_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library.
        if let (Some(o), Some(t)) = unsafe { (opt.as_mut(), t.as_ref()) } {
            let cf = &mut o.opts.cf;
            cf.table_factory = strata::TableFactory::BlockBased;
            cf.block_size = t.block_size;
            cf.block_restart_interval = t.block_restart_interval;
            cf.bloom_bits_per_key = t.bloom_bits_per_key;
            cf.filter_policy = t.filter_policy;
            cf.checksum = t.checksum;
            cf.format_version = t.format_version;
            cf.whole_key_filtering = t.whole_key_filtering;
            cf.cache_index_and_filter_blocks = t.cache_index_and_filter_blocks;
            cf.pin_l0_filter_and_index_blocks_in_cache = t.pin_l0_filter_and_index_blocks_in_cache;
            cf.pin_top_level_index_and_filter = t.pin_top_level_index_and_filter;
            cf.data_block_index_type = t.data_block_index_type;
            cf.data_block_hash_table_util_ratio = t.data_block_hash_ratio;
            cf.index_type = t.index_type;
            cf.partition_filters = t.partition_filters;
            cf.metadata_block_size = t.metadata_block_size;
            cf.index_block_restart_interval = t.index_block_restart_interval;
            cf.block_cache = if t.no_block_cache {
                // The smallest cache Strata has: blocks are not kept.
                Some(BlockCache::new(0) as Arc<dyn strata::BlockCacheApi>)
            } else {
                t.block_cache
                    .clone()
                    .map(|c| c as Arc<dyn strata::BlockCacheApi>)
            };
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_universal_compaction_options(
    opt: *mut rocksdb_options_t,
    u: *mut rocksdb_universal_compaction_options_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library.
        if let (Some(o), Some(u)) = unsafe { (opt.as_mut(), u.as_ref()) } {
            o.opts.cf.universal = u.opts;
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_fifo_compaction_options(
    opt: *mut rocksdb_options_t,
    f: *mut rocksdb_fifo_compaction_options_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library.
        if let (Some(o), Some(f)) = unsafe { (opt.as_mut(), f.as_ref()) } {
            o.opts.cf.fifo = f.opts;
        }
    })
}

setter!(
    rocksdb_options_t,
    rocksdb_options_set_log_file_time_to_roll,
    usize,
    |o, v| o.opts.log_file_time_to_roll = v as u64
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_log_file_time_to_roll,
    usize,
    |o| o.opts.log_file_time_to_roll as usize
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_max_manifest_file_size,
    usize,
    |o, v| o.opts.max_manifest_file_size = v as u64
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_max_manifest_file_size,
    usize,
    |o| o.opts.max_manifest_file_size as usize
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_max_compaction_bytes,
    u64,
    |o, v| o.opts.cf.max_compaction_bytes = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_max_compaction_bytes,
    u64,
    |o| o.opts.cf.max_compaction_bytes
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_soft_pending_compaction_bytes_limit,
    usize,
    |o, v| o.opts.cf.soft_pending_compaction_bytes_limit = v as u64
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_soft_pending_compaction_bytes_limit,
    usize,
    |o| o.opts.cf.soft_pending_compaction_bytes_limit as usize
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_hard_pending_compaction_bytes_limit,
    usize,
    |o, v| o.opts.cf.hard_pending_compaction_bytes_limit = v as u64
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_hard_pending_compaction_bytes_limit,
    usize,
    |o| o.opts.cf.hard_pending_compaction_bytes_limit as usize
);

/// A copy of the options (callbacks shared, as RocksDB's copy shares them).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_create_copy(
    opt: *mut rocksdb_options_t,
) -> *mut rocksdb_options_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL or a live options object.
        unsafe { opt.as_ref() }.map_or(std::ptr::null_mut(), |o| into_raw(o.clone()))
    })
}

/// The options a database was last opened with (its newest OPTIONS file):
/// the database's, and each column family's with its name (RocksDB's
/// `LoadLatestOptions`). Comparators and other callbacks are not in the
/// file: they are the defaults. Free everything with
/// `rocksdb_load_latest_options_destroy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_load_latest_options(
    db_path: *const c_char,
    _env: *mut crate::backup::rocksdb_env_t,
    _ignore_unknown_options: bool,
    _cache: *mut rocksdb_cache_t,
    db_options: *mut *mut rocksdb_options_t,
    num_column_families: *mut usize,
    column_family_names: *mut *mut *mut c_char,
    column_family_options: *mut *mut *mut rocksdb_options_t,
    errptr: *mut *mut c_char,
) {
    crate::ffi::guard(errptr, (), || {
        // SAFETY: a C string.
        let path = unsafe { cstr(db_path, "db_path") }?;
        let file = crate::ffi::st(strata::db::options_parser::load_latest(
            std::path::Path::new(&path),
        ))?
        .ok_or_else(|| format!("NotFound: no OPTIONS file in {path}"))?;
        let mut db = Options::default();
        crate::ffi::st(file.apply_db(&mut db))?;
        let names: Vec<String> = file.column_families().map(str::to_string).collect();
        let names_out = crate::ffi::malloc_array::<*mut c_char>(names.len());
        let opts_out = crate::ffi::malloc_array::<*mut rocksdb_options_t>(names.len());
        for (i, name) in names.iter().enumerate() {
            let mut o = db.clone();
            crate::ffi::st(file.apply_cf(name, &mut o.cf))?;
            // SAFETY: both arrays hold `names.len()` pointers.
            unsafe {
                *names_out.add(i) = malloc_cstr(name);
                *opts_out.add(i) = into_raw(rocksdb_options_t {
                    opts: o,
                    max_open_files: None,
                    knobs: Default::default(),
                });
            }
        }
        // SAFETY: out-pointers NULL or writable (C API contract).
        unsafe {
            crate::ffi::put_out(
                db_options,
                into_raw(rocksdb_options_t {
                    opts: db,
                    max_open_files: None,
                    knobs: Default::default(),
                }),
            );
            crate::ffi::put_out(num_column_families, names.len());
            crate::ffi::put_out(column_family_names, names_out);
            crate::ffi::put_out(column_family_options, opts_out);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_load_latest_options_destroy(
    db_options: *mut rocksdb_options_t,
    list_column_family_names: *mut *mut c_char,
    list_column_family_options: *mut *mut rocksdb_options_t,
    len: usize,
) {
    guard_quiet((), || {
        // SAFETY: what rocksdb_load_latest_options handed out, freed once.
        unsafe {
            drop_raw(db_options);
            for i in 0..len {
                if !list_column_family_names.is_null() {
                    crate::ffi::c_free(*list_column_family_names.add(i) as *mut _);
                }
                if !list_column_family_options.is_null() {
                    drop_raw(*list_column_family_options.add(i));
                }
            }
            crate::ffi::c_free(list_column_family_names as *mut _);
            crate::ffi::c_free(list_column_family_options as *mut _);
        }
    })
}

// ---- block-based table options, caches, filter policies ----

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_block_based_options_create() -> *mut rocksdb_block_based_table_options_t {
    into_raw(rocksdb_block_based_table_options_t::default())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_block_based_options_destroy(
    t: *mut rocksdb_block_based_table_options_t,
) {
    // SAFETY: NULL or from rocksdb_block_based_options_create.
    guard_quiet((), || unsafe { drop_raw(t) })
}

setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_block_size,
    usize,
    |t, v| t.block_size = v.max(1)
);
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_block_restart_interval,
    c_int,
    |t, v| t.block_restart_interval = v.max(1) as usize
);
// Checksum codes RocksDB does not know leave the checksum unchanged.
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_checksum,
    c_char,
    |t, v| if let Some(c) = strata::ChecksumType::from_u8(v as u8) {
        t.checksum = c
    }
);
// Versions Strata cannot write make the open fail (as RocksDB's).
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_format_version,
    c_int,
    |t, v| t.format_version = v.max(0) as u32
);
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_whole_key_filtering,
    c_uchar,
    |t, v| t.whole_key_filtering = v != 0
);
// An unknown code keeps the current index type.
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_index_type,
    c_int,
    |t, v| {
        if let Some(i) = strata::IndexType::from_code(i64::from(v)) {
            t.index_type = i;
        }
    }
);
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_data_block_index_type,
    c_int,
    |t, v| {
        match v {
            0 => t.data_block_index_type = strata::DataBlockIndexType::BinarySearch,
            1 => t.data_block_index_type = strata::DataBlockIndexType::BinaryAndHash,
            _ => {}
        }
    }
);
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_data_block_hash_ratio,
    f64,
    |t, v| t.data_block_hash_ratio = v
);
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_partition_filters,
    c_uchar,
    |t, v| t.partition_filters = v != 0
);
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_metadata_block_size,
    u64,
    |t, v| t.metadata_block_size = (v as usize).max(1)
);
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_index_block_restart_interval,
    c_int,
    |t, v| t.index_block_restart_interval = v.max(1) as usize
);
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_cache_index_and_filter_blocks,
    c_uchar,
    |t, v| t.cache_index_and_filter_blocks = v != 0
);
/// Strata's cache has no priority pools: accepted, it changes nothing.
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(
    _t: *mut rocksdb_block_based_table_options_t,
    _v: c_uchar,
) {
}
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache,
    c_uchar,
    |t, v| t.pin_l0_filter_and_index_blocks_in_cache = v != 0
);
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_pin_top_level_index_and_filter,
    c_uchar,
    |t, v| t.pin_top_level_index_and_filter = v != 0
);
setter!(
    rocksdb_block_based_table_options_t,
    rocksdb_block_based_options_set_no_block_cache,
    c_uchar,
    |t, v| t.no_block_cache = v != 0
);

/// Hands the filter policy to the table options (RocksDB takes ownership).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_block_based_options_set_filter_policy(
    t: *mut rocksdb_block_based_table_options_t,
    policy: *mut rocksdb_filterpolicy_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library; `policy` is consumed.
        if let Some(t) = unsafe { t.as_mut() } {
            if policy.is_null() {
                t.bloom_bits_per_key = None;
            } else {
                let p = unsafe { Box::from_raw(policy) };
                t.bloom_bits_per_key = Some(p.bits_per_key);
                t.filter_policy = p.policy;
            }
        }
    })
}

/// Shares the cache with the table options (the caller still destroys its
/// handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_block_based_options_set_block_cache(
    t: *mut rocksdb_block_based_table_options_t,
    cache: *mut rocksdb_cache_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library.
        if let Some(t) = unsafe { t.as_mut() } {
            t.block_cache = unsafe { cache.as_ref() }.map(|c| c.cache.clone());
        }
    })
}

/// Shares the cache as the row cache (`Options::row_cache`); NULL leaves
/// the option as it was, as RocksDB does (the caller still destroys its
/// handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_row_cache(
    o: *mut rocksdb_options_t,
    cache: *mut rocksdb_cache_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library.
        if let (Some(o), Some(c)) = (unsafe { o.as_mut() }, unsafe { cache.as_ref() }) {
            o.opts.row_cache = Some(c.cache.clone());
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_cache_create_lru(capacity: usize) -> *mut rocksdb_cache_t {
    into_raw(rocksdb_cache_t {
        cache: BlockCache::new(capacity as u64),
    })
}

/// A cache that never holds more than `capacity`: a block that does not
/// fit once unpinned blocks are evicted is not cached.
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_cache_create_lru_with_strict_capacity_limit(
    capacity: usize,
) -> *mut rocksdb_cache_t {
    into_raw(rocksdb_cache_t {
        cache: BlockCache::with_options(capacity as u64, -1, true),
    })
}

/// RocksDB's `LRUCacheOptions` (capacity and shard bits).
pub struct rocksdb_lru_cache_options_t {
    capacity: usize,
    num_shard_bits: c_int,
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_lru_cache_options_create() -> *mut rocksdb_lru_cache_options_t {
    into_raw(rocksdb_lru_cache_options_t {
        capacity: 0,
        num_shard_bits: -1,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_lru_cache_options_destroy(o: *mut rocksdb_lru_cache_options_t) {
    // SAFETY: NULL or from rocksdb_lru_cache_options_create.
    guard_quiet((), || unsafe { drop_raw(o) })
}

setter!(
    rocksdb_lru_cache_options_t,
    rocksdb_lru_cache_options_set_capacity,
    usize,
    |o, v| o.capacity = v
);
setter!(
    rocksdb_lru_cache_options_t,
    rocksdb_lru_cache_options_set_num_shard_bits,
    c_int,
    |o, v| o.num_shard_bits = v
);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_cache_create_lru_opts(
    o: *mut rocksdb_lru_cache_options_t,
) -> *mut rocksdb_cache_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL (defaults) or live options.
        let (capacity, bits) =
            unsafe { o.as_ref() }.map_or((0, -1), |o| (o.capacity, o.num_shard_bits));
        into_raw(rocksdb_cache_t {
            cache: BlockCache::with_shard_bits(capacity as u64, bits),
        })
    })
}

/// Changes the capacity; unpinned blocks that no longer fit are evicted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_cache_set_capacity(cache: *mut rocksdb_cache_t, capacity: usize) {
    guard_quiet((), || {
        // SAFETY: NULL or a live cache.
        if let Some(c) = unsafe { cache.as_ref() } {
            c.cache.set_capacity(capacity as u64);
        }
    })
}

/// RocksDB leaks the cache's contents at destruction for a fast exit;
/// Strata frees them as usual (nothing to do here).
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_cache_disown_data(_cache: *mut rocksdb_cache_t) {}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_cache_destroy(cache: *mut rocksdb_cache_t) {
    // SAFETY: NULL or from rocksdb_cache_create_lru.
    guard_quiet((), || unsafe { drop_raw(cache) })
}

getter!(
    rocksdb_cache_t,
    rocksdb_cache_get_usage,
    usize,
    |c| c.cache.usage() as usize
);
getter!(
    rocksdb_cache_t,
    rocksdb_cache_get_capacity,
    usize,
    |c| c.cache.capacity() as usize
);
getter!(
    rocksdb_cache_t,
    rocksdb_cache_get_pinned_usage,
    usize,
    |c| c.cache.pinned_usage() as usize
);

/// A full bloom filter of `bits_per_key` (Strata writes RocksDB's
/// format_version 5 full filters for both calls).
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_filterpolicy_create_bloom(
    bits_per_key: f64,
) -> *mut rocksdb_filterpolicy_t {
    into_raw(rocksdb_filterpolicy_t {
        bits_per_key,
        policy: strata::FilterPolicy::Bloom,
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_filterpolicy_create_bloom_full(
    bits_per_key: f64,
) -> *mut rocksdb_filterpolicy_t {
    rocksdb_filterpolicy_create_bloom(bits_per_key)
}

/// A Standard128 Ribbon filter as accurate as a Bloom filter of
/// `bloom_equivalent_bits_per_key`, for every file, flushes included (RocksDB's
/// C API passes `bloom_before_level` -1; C++'s `NewRibbonFilterPolicy`
/// defaults to 0, Bloom filters for flushes).
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_filterpolicy_create_ribbon(
    bloom_equivalent_bits_per_key: f64,
) -> *mut rocksdb_filterpolicy_t {
    rocksdb_filterpolicy_create_ribbon_hybrid(bloom_equivalent_bits_per_key, -1)
}

/// Ribbon filters for files written at `bloom_before_level` and below
/// it in the tree, Bloom filters above (flushes count as level -1).
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_filterpolicy_create_ribbon_hybrid(
    bloom_equivalent_bits_per_key: f64,
    bloom_before_level: c_int,
) -> *mut rocksdb_filterpolicy_t {
    into_raw(rocksdb_filterpolicy_t {
        bits_per_key: bloom_equivalent_bits_per_key,
        policy: strata::FilterPolicy::Ribbon { bloom_before_level },
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_filterpolicy_destroy(p: *mut rocksdb_filterpolicy_t) {
    // SAFETY: NULL or a policy not handed to table options.
    guard_quiet((), || unsafe { drop_raw(p) })
}

// ---- universal and FIFO compaction ----

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_universal_compaction_options_create()
-> *mut rocksdb_universal_compaction_options_t {
    into_raw(rocksdb_universal_compaction_options_t {
        opts: UniversalCompactionOptions::default(),
        compression_size_percent: -1,
        stop_style: 0,
    })
}

setter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_set_size_ratio,
    c_int,
    |u, v| u.opts.size_ratio = v.max(0) as u32
);
setter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_set_min_merge_width,
    c_int,
    |u, v| u.opts.min_merge_width = v.max(2) as usize
);
setter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_set_max_merge_width,
    c_int,
    |u, v| u.opts.max_merge_width = v.max(2) as usize
);
setter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_set_max_size_amplification_percent,
    c_int,
    |u, v| u.opts.max_size_amplification_percent = v.max(0) as u64
);

getter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_get_size_ratio,
    c_int,
    |u| u.opts.size_ratio as c_int
);
getter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_get_min_merge_width,
    c_int,
    |u| u.opts.min_merge_width as c_int
);
getter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_get_max_merge_width,
    c_int,
    |u| u.opts.max_merge_width.min(c_int::MAX as usize) as c_int
);
getter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_get_max_size_amplification_percent,
    c_int,
    |u| u.opts.max_size_amplification_percent as c_int
);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_universal_compaction_options_destroy(
    u: *mut rocksdb_universal_compaction_options_t,
) {
    // SAFETY: NULL or from rocksdb_universal_compaction_options_create.
    guard_quiet((), || unsafe { drop_raw(u) })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_fifo_compaction_options_create() -> *mut rocksdb_fifo_compaction_options_t
{
    into_raw(rocksdb_fifo_compaction_options_t {
        opts: FifoCompactionOptions::default(),
    })
}

setter!(
    rocksdb_fifo_compaction_options_t,
    rocksdb_fifo_compaction_options_set_max_table_files_size,
    u64,
    |f, v| f.opts.max_table_files_size = v
);
getter!(
    rocksdb_fifo_compaction_options_t,
    rocksdb_fifo_compaction_options_get_max_table_files_size,
    u64,
    |f| f.opts.max_table_files_size
);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_fifo_compaction_options_destroy(
    f: *mut rocksdb_fifo_compaction_options_t,
) {
    // SAFETY: NULL or from rocksdb_fifo_compaction_options_create.
    guard_quiet((), || unsafe { drop_raw(f) })
}

// ---- read, write, flush and compact options ----

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_readoptions_create() -> *mut rocksdb_readoptions_t {
    into_raw(rocksdb_readoptions_t::default())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_readoptions_destroy(o: *mut rocksdb_readoptions_t) {
    // SAFETY: NULL or from rocksdb_readoptions_create.
    guard_quiet((), || unsafe { drop_raw(o) })
}

// Strata verifies every block checksum it reads and fills the cache on
// every read; the flags are kept so the getters answer what was set.
setter!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_verify_checksums,
    c_uchar,
    |o, v| o.verify_checksums = Some(v != 0)
);
getter!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_get_verify_checksums,
    c_uchar,
    |o| o.verify_checksums.unwrap_or(true) as c_uchar
);
setter!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_fill_cache,
    c_uchar,
    |o, v| o.fill_cache = Some(v != 0)
);
getter!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_get_fill_cache,
    c_uchar,
    |o| o.fill_cache.unwrap_or(true) as c_uchar
);
setter!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_prefix_same_as_start,
    c_uchar,
    |o, v| o.opts.prefix_same_as_start = v != 0
);
getter!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_get_prefix_same_as_start,
    c_uchar,
    |o| o.opts.prefix_same_as_start as c_uchar
);
// RocksDB's ReadTier values: 0 read all, 1 block cache, 2 persisted, 3
// memtable; others read all.
setter!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_read_tier,
    c_int,
    |o, v| {
        o.opts.read_tier = match v {
            1 => strata::options::ReadTier::BlockCache,
            2 => strata::options::ReadTier::Persisted,
            3 => strata::options::ReadTier::Memtable,
            _ => strata::options::ReadTier::ReadAll,
        }
    }
);
getter!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_get_read_tier,
    c_int,
    |o| match o.opts.read_tier {
        strata::options::ReadTier::ReadAll => 0,
        strata::options::ReadTier::BlockCache => 1,
        strata::options::ReadTier::Persisted => 2,
        strata::options::ReadTier::Memtable => 3,
    }
);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_readoptions_set_snapshot(
    o: *mut rocksdb_readoptions_t,
    snap: *const crate::iterator::rocksdb_snapshot_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects of this library.
        if let Some(o) = unsafe { o.as_mut() } {
            o.opts.snapshot = unsafe { snap.as_ref() }.and_then(|s| s.seq);
        }
    })
}

/// Copies the bound (RocksDB keeps a pointer; a copy is as good and safer).
/// NULL clears it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_readoptions_set_iterate_upper_bound(
    o: *mut rocksdb_readoptions_t,
    key: *const c_char,
    keylen: usize,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live object; `key` NULL or `keylen` bytes.
        if let Some(o) = unsafe { o.as_mut() } {
            o.opts.iterate_upper_bound =
                (!key.is_null()).then(|| unsafe { bytes(key, keylen) }.to_vec());
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_readoptions_set_iterate_lower_bound(
    o: *mut rocksdb_readoptions_t,
    key: *const c_char,
    keylen: usize,
) {
    guard_quiet((), || {
        // SAFETY: NULL or a live object; `key` NULL or `keylen` bytes.
        if let Some(o) = unsafe { o.as_mut() } {
            o.opts.iterate_lower_bound =
                (!key.is_null()).then(|| unsafe { bytes(key, keylen) }.to_vec());
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_writeoptions_create() -> *mut rocksdb_writeoptions_t {
    into_raw(rocksdb_writeoptions_t::default())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writeoptions_destroy(o: *mut rocksdb_writeoptions_t) {
    // SAFETY: NULL or from rocksdb_writeoptions_create.
    guard_quiet((), || unsafe { drop_raw(o) })
}

setter!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_set_sync,
    c_uchar,
    |o, v| o.opts.sync = v != 0
);
getter!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_get_sync,
    c_uchar,
    |o| o.opts.sync as c_uchar
);
setter!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_disable_WAL,
    c_int,
    |o, v| o.opts.disable_wal = v != 0
);
getter!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_get_disable_WAL,
    c_uchar,
    |o| o.opts.disable_wal as c_uchar
);

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_flushoptions_create() -> *mut rocksdb_flushoptions_t {
    into_raw(rocksdb_flushoptions_t { wait: true })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_flushoptions_destroy(o: *mut rocksdb_flushoptions_t) {
    // SAFETY: NULL or from rocksdb_flushoptions_create.
    guard_quiet((), || unsafe { drop_raw(o) })
}

setter!(
    rocksdb_flushoptions_t,
    rocksdb_flushoptions_set_wait,
    c_uchar,
    |o, v| o.wait = v != 0
);
getter!(
    rocksdb_flushoptions_t,
    rocksdb_flushoptions_get_wait,
    c_uchar,
    |o| o.wait as c_uchar
);

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_compactoptions_create() -> *mut rocksdb_compactoptions_t {
    into_raw(rocksdb_compactoptions_t {
        exclusive_manual_compaction: true,
        bottommost_level_compaction: 1,
        change_level: false,
        target_level: -1,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compactoptions_destroy(o: *mut rocksdb_compactoptions_t) {
    // SAFETY: NULL or from rocksdb_compactoptions_create.
    guard_quiet((), || unsafe { drop_raw(o) })
}

setter!(
    rocksdb_compactoptions_t,
    rocksdb_compactoptions_set_exclusive_manual_compaction,
    c_uchar,
    |o, v| o.exclusive_manual_compaction = v != 0
);
getter!(
    rocksdb_compactoptions_t,
    rocksdb_compactoptions_get_exclusive_manual_compaction,
    c_uchar,
    |o| o.exclusive_manual_compaction as c_uchar
);
setter!(
    rocksdb_compactoptions_t,
    rocksdb_compactoptions_set_bottommost_level_compaction,
    c_uchar,
    |o, v| o.bottommost_level_compaction = v
);
getter!(
    rocksdb_compactoptions_t,
    rocksdb_compactoptions_get_bottommost_level_compaction,
    c_uchar,
    |o| o.bottommost_level_compaction
);
setter!(
    rocksdb_compactoptions_t,
    rocksdb_compactoptions_set_change_level,
    c_uchar,
    |o, v| o.change_level = v != 0
);
getter!(
    rocksdb_compactoptions_t,
    rocksdb_compactoptions_get_change_level,
    c_uchar,
    |o| o.change_level as c_uchar
);
setter!(
    rocksdb_compactoptions_t,
    rocksdb_compactoptions_set_target_level,
    c_int,
    |o, v| o.target_level = v
);
getter!(
    rocksdb_compactoptions_t,
    rocksdb_compactoptions_get_target_level,
    c_int,
    |o| o.target_level
);

/// Hands the factory to these options (RocksDB takes ownership: do not
/// destroy it after); NULL unsets it, dropping the options' share.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_compaction_filter_factory(
    opt: *mut rocksdb_options_t,
    factory: *mut crate::callbacks::rocksdb_compactionfilterfactory_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live options; the factory is ours from here on.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.cf.compaction_filter_factory =
                (!factory.is_null()).then(|| unsafe { Box::from_raw(factory) }.factory);
        }
    })
}

/// RocksDB's cache allocator: Strata never makes one (see
/// `rocksdb_jemalloc_nodump_allocator_create`), so there is none to use.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_lru_cache_options_set_memory_allocator(
    _o: *mut rocksdb_lru_cache_options_t,
    _allocator: *mut crate::memory_usage::rocksdb_memory_allocator_t,
) {
}

setter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_set_compression_size_percent,
    c_int,
    |u, v| u.compression_size_percent = v
);
getter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_get_compression_size_percent,
    c_int,
    |u| u.compression_size_percent
);
setter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_set_stop_style,
    c_int,
    |u, v| u.stop_style = v
);
getter!(
    rocksdb_universal_compaction_options_t,
    rocksdb_universal_compaction_options_get_stop_style,
    c_int,
    |u| u.stop_style
);

setter!(
    rocksdb_options_t,
    rocksdb_options_set_inplace_update_support,
    c_uchar,
    |o, v| o.opts.cf.inplace_update_support = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_inplace_update_support,
    c_uchar,
    |o| c_uchar::from(o.opts.cf.inplace_update_support)
);
setter!(
    rocksdb_options_t,
    rocksdb_options_set_inplace_update_num_locks,
    usize,
    |o, v| o.opts.cf.inplace_update_num_locks = v
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_inplace_update_num_locks,
    usize,
    |o| o.opts.cf.inplace_update_num_locks
);
