//! `rocksdb_options_t` settings that tune RocksDB's own machinery (its
//! thread pools, file I/O hints, mutexes, stats dumps, blob files) rather
//! than what a database stores or returns.
//!
//! Strata keeps each value, so getters, `rocksdb_options_create_copy` and
//! programs that set and read them back behave as with RocksDB, and honours
//! it where Strata has the machinery:
//! - `max_background_compactions` / `max_background_flushes` size Strata's
//!   background jobs (RocksDB's `GetBGJobLimits`: when either is set, their
//!   sum replaces `max_background_jobs`);
//! - features a database would rely on and Strata does not have refuse the
//!   open with `NotSupported` naming them, never pretend: blob files
//!   (`enable_blob_files`), `atomic_flush`, WAL compression.
//!
//! The rest are hints with no counterpart in Strata (documented per field):
//! setting them changes nothing in what the database does.

#![allow(non_camel_case_types)]

use std::ffi::{c_int, c_uchar, c_uint};

use crate::ffi::guard_quiet;

use crate::options::rocksdb_options_t;

/// RocksDB's values of the settings (its defaults in 7.8.3).
#[derive(Clone, Debug)]
pub struct DbKnobs {
    /// `Options::access_hint_on_compaction_start` (NORMAL = 1): an fadvise
    /// hint; Strata gives none.
    pub access_hint_on_compaction_start: c_int,
    /// fadvise(RANDOM) on table files: Strata reads tables with pread and
    /// gives no hint.
    pub advise_random_on_open: bool,
    /// Memtable arena block size (0: RocksDB derives it). Strata's arena
    /// sizes its blocks from `write_buffer_size`.
    pub arena_block_size: usize,
    /// Refused at open when set (Strata flushes column families one by one).
    pub atomic_flush: bool,
    /// Blob files: refused at open when enabled; the rest are kept.
    pub enable_blob_files: bool,
    pub min_blob_size: u64,
    pub blob_file_size: u64,
    pub blob_compression_type: c_int,
    pub enable_blob_gc: bool,
    pub blob_gc_age_cutoff: f64,
    pub blob_gc_force_threshold: f64,
    pub blob_compaction_readahead_size: u64,
    pub blob_file_starting_level: c_int,
    pub prepopulate_blob_cache: c_int,
    /// Incremental write-back of WALs: Strata syncs them when the
    /// durability contract says so and not in between. (Tables' is the
    /// engine's `Options::bytes_per_sync`, set in `options.rs`.)
    pub wal_bytes_per_sync: u64,
    /// Readahead of compaction inputs: Strata's compaction reads whole
    /// blocks through its table readers.
    pub compaction_readahead_size: usize,
    /// Strata deletes obsolete files as soon as nothing holds them.
    pub delete_obsolete_files_period_micros: u64,
    /// Write-thread spinning: Strata's writers wait on a condition variable.
    pub enable_write_thread_adaptive_yield: bool,
    /// Mempurge (an experimental RocksDB feature): not in Strata.
    pub experimental_mempurge_threshold: f64,
    /// The LOG's threshold (INFO = 1); Strata's LOG has one level.
    pub info_log_level: c_int,
    /// Strata opens every file with O_CLOEXEC.
    pub is_fd_close_on_exec: bool,
    /// Strata's MANIFEST writer does not preallocate.
    pub manifest_preallocation_size: usize,
    /// -1: not set (RocksDB's default); see the module doc.
    pub max_background_compactions: c_int,
    pub max_background_flushes: c_int,
    /// Strata opens tables lazily through its table cache.
    pub max_file_opening_threads: c_int,
    /// A reseek heuristic of RocksDB's iterators.
    pub max_sequential_skip_in_iterations: u64,
    /// Merge operands collapsed at memtable insert (0: never, as Strata).
    pub max_successive_merges: usize,
    /// WAL size that forces flushes (0: derived).
    pub max_total_wal_size: u64,
    /// Memtable history for transactions' conflict checks.
    pub max_write_buffer_number_to_maintain: c_int,
    pub max_write_buffer_size_to_maintain: i64,
    /// Strata flushes every immutable memtable of a column family at once.
    pub min_write_buffer_number_to_merge: c_int,
    /// WAL file reuse: Strata writes new WAL files (it reads recycled ones).
    pub recycle_log_file_num: usize,
    pub report_bg_io_stats: bool,
    pub skip_checking_sst_file_sizes_on_db_open: bool,
    pub skip_stats_update_on_db_open: bool,
    /// Periodic statistics dumps to the LOG.
    pub stats_dump_period_sec: c_uint,
    pub stats_persist_period_sec: c_uint,
    pub table_cache_numshardbits: c_int,
    pub use_adaptive_mutex: bool,
    /// Strata syncs with fsync-level guarantees either way.
    pub use_fsync: c_int,
    /// WAL compression (RocksDB's `CompressionType` code): refused at open
    /// unless none.
    pub wal_compression: c_int,
    pub writable_file_max_buffer_size: u64,
    /// RocksDB's background-write rate limiter: Strata's flushes and
    /// compactions do not throttle their writes yet; kept.
    pub rate_limiter: Option<rocksdb_ratelimiter_t>,
    /// `CompactOnDeletionCollector(window, trigger)`: Strata marks
    /// deletion-heavy tables for compaction with its own rule (over half
    /// deletions, 32 entries or more); kept.
    pub compact_on_deletion: Option<(usize, usize)>,
    /// A logger object was given: refused at open.
    pub custom_info_log: bool,
}

impl Default for DbKnobs {
    fn default() -> Self {
        DbKnobs {
            access_hint_on_compaction_start: 1,
            advise_random_on_open: true,
            arena_block_size: 0,
            atomic_flush: false,
            enable_blob_files: false,
            min_blob_size: 0,
            blob_file_size: 256 << 20,
            blob_compression_type: 0,
            enable_blob_gc: false,
            blob_gc_age_cutoff: 0.25,
            blob_gc_force_threshold: 1.0,
            blob_compaction_readahead_size: 0,
            blob_file_starting_level: 0,
            prepopulate_blob_cache: 0,
            wal_bytes_per_sync: 0,
            compaction_readahead_size: 0,
            delete_obsolete_files_period_micros: 6 * 60 * 60 * 1_000_000,
            enable_write_thread_adaptive_yield: true,
            experimental_mempurge_threshold: 0.0,
            info_log_level: 1,
            is_fd_close_on_exec: true,
            manifest_preallocation_size: 4 << 20,
            max_background_compactions: -1,
            max_background_flushes: -1,
            max_file_opening_threads: 16,
            max_sequential_skip_in_iterations: 8,
            max_successive_merges: 0,
            max_total_wal_size: 0,
            max_write_buffer_number_to_maintain: 0,
            max_write_buffer_size_to_maintain: 0,
            min_write_buffer_number_to_merge: 1,
            recycle_log_file_num: 0,
            report_bg_io_stats: false,
            skip_checking_sst_file_sizes_on_db_open: false,
            skip_stats_update_on_db_open: false,
            stats_dump_period_sec: 600,
            stats_persist_period_sec: 600,
            table_cache_numshardbits: 6,
            use_adaptive_mutex: false,
            use_fsync: 0,
            wal_compression: 0,
            writable_file_max_buffer_size: 1 << 20,
            rate_limiter: None,
            compact_on_deletion: None,
            custom_info_log: false,
        }
    }
}

impl DbKnobs {
    /// Why a database cannot be opened with these settings, if it cannot.
    pub fn refusal(&self) -> Option<String> {
        if self.custom_info_log {
            return Some(
                "Not implemented: info_log: Strata writes its own LOG file (pass NULL)".into(),
            );
        }
        if self.enable_blob_files {
            return Some(
                "Not implemented: enable_blob_files: Strata does not write blob files".into(),
            );
        }
        if self.atomic_flush {
            return Some(
                "Not implemented: atomic_flush: Strata flushes column families one at a time"
                    .into(),
            );
        }
        if self.wal_compression != 0 {
            return Some(format!(
                "Not implemented: wal_compression {}: Strata writes uncompressed WALs",
                self.wal_compression
            ));
        }
        None
    }

    /// RocksDB's `GetBGJobLimits`: explicit flush and compaction limits
    /// (either set) replace `max_background_jobs` with their sum.
    pub fn background_jobs(&self, max_background_jobs: usize) -> usize {
        if self.max_background_compactions < 0 && self.max_background_flushes < 0 {
            return max_background_jobs;
        }
        let flushes = if self.max_background_flushes < 0 {
            1
        } else {
            self.max_background_flushes.max(1) as usize
        };
        let compactions = if self.max_background_compactions < 0 {
            1
        } else {
            self.max_background_compactions.max(1) as usize
        };
        flushes + compactions
    }
}

/// One setter and one getter of a [`DbKnobs`] field.
macro_rules! knob {
    ($set:ident, $get:ident, $field:ident, $cty:ty, |$v:ident| $to:expr, |$f:ident| $from:expr) => {
        setter!(rocksdb_options_t, $set, $cty, |o, $v| {
            o.knobs.$field = $to
        });
        getter!(rocksdb_options_t, $get, $cty, |o| {
            let $f = &o.knobs.$field;
            $from
        });
    };
}

/// A knob whose C type is its Rust type.
macro_rules! plain_knob {
    ($set:ident, $get:ident, $field:ident, $cty:ty) => {
        knob!($set, $get, $field, $cty, |v| v, |f| *f);
    };
}

/// A knob held as `bool`, passed as `unsigned char`.
macro_rules! bool_knob {
    ($set:ident, $get:ident, $field:ident) => {
        knob!($set, $get, $field, c_uchar, |v| v != 0, |f| c_uchar::from(
            *f
        ));
    };
}

plain_knob!(
    rocksdb_options_set_access_hint_on_compaction_start,
    rocksdb_options_get_access_hint_on_compaction_start,
    access_hint_on_compaction_start,
    c_int
);
bool_knob!(
    rocksdb_options_set_advise_random_on_open,
    rocksdb_options_get_advise_random_on_open,
    advise_random_on_open
);
plain_knob!(
    rocksdb_options_set_arena_block_size,
    rocksdb_options_get_arena_block_size,
    arena_block_size,
    usize
);
bool_knob!(
    rocksdb_options_set_atomic_flush,
    rocksdb_options_get_atomic_flush,
    atomic_flush
);
bool_knob!(
    rocksdb_options_set_enable_blob_files,
    rocksdb_options_get_enable_blob_files,
    enable_blob_files
);
plain_knob!(
    rocksdb_options_set_min_blob_size,
    rocksdb_options_get_min_blob_size,
    min_blob_size,
    u64
);
plain_knob!(
    rocksdb_options_set_blob_file_size,
    rocksdb_options_get_blob_file_size,
    blob_file_size,
    u64
);
plain_knob!(
    rocksdb_options_set_blob_compression_type,
    rocksdb_options_get_blob_compression_type,
    blob_compression_type,
    c_int
);
bool_knob!(
    rocksdb_options_set_enable_blob_gc,
    rocksdb_options_get_enable_blob_gc,
    enable_blob_gc
);
plain_knob!(
    rocksdb_options_set_blob_gc_age_cutoff,
    rocksdb_options_get_blob_gc_age_cutoff,
    blob_gc_age_cutoff,
    f64
);
plain_knob!(
    rocksdb_options_set_blob_gc_force_threshold,
    rocksdb_options_get_blob_gc_force_threshold,
    blob_gc_force_threshold,
    f64
);
plain_knob!(
    rocksdb_options_set_blob_compaction_readahead_size,
    rocksdb_options_get_blob_compaction_readahead_size,
    blob_compaction_readahead_size,
    u64
);
plain_knob!(
    rocksdb_options_set_blob_file_starting_level,
    rocksdb_options_get_blob_file_starting_level,
    blob_file_starting_level,
    c_int
);
plain_knob!(
    rocksdb_options_set_prepopulate_blob_cache,
    rocksdb_options_get_prepopulate_blob_cache,
    prepopulate_blob_cache,
    c_int
);
plain_knob!(
    rocksdb_options_set_wal_bytes_per_sync,
    rocksdb_options_get_wal_bytes_per_sync,
    wal_bytes_per_sync,
    u64
);
// RocksDB's C API names this setter without `set_`.
plain_knob!(
    rocksdb_options_compaction_readahead_size,
    rocksdb_options_get_compaction_readahead_size,
    compaction_readahead_size,
    usize
);
plain_knob!(
    rocksdb_options_set_delete_obsolete_files_period_micros,
    rocksdb_options_get_delete_obsolete_files_period_micros,
    delete_obsolete_files_period_micros,
    u64
);
bool_knob!(
    rocksdb_options_set_enable_write_thread_adaptive_yield,
    rocksdb_options_get_enable_write_thread_adaptive_yield,
    enable_write_thread_adaptive_yield
);
plain_knob!(
    rocksdb_options_set_experimental_mempurge_threshold,
    rocksdb_options_get_experimental_mempurge_threshold,
    experimental_mempurge_threshold,
    f64
);
plain_knob!(
    rocksdb_options_set_info_log_level,
    rocksdb_options_get_info_log_level,
    info_log_level,
    c_int
);
bool_knob!(
    rocksdb_options_set_is_fd_close_on_exec,
    rocksdb_options_get_is_fd_close_on_exec,
    is_fd_close_on_exec
);
plain_knob!(
    rocksdb_options_set_manifest_preallocation_size,
    rocksdb_options_get_manifest_preallocation_size,
    manifest_preallocation_size,
    usize
);
plain_knob!(
    rocksdb_options_set_max_background_compactions,
    rocksdb_options_get_max_background_compactions,
    max_background_compactions,
    c_int
);
plain_knob!(
    rocksdb_options_set_max_background_flushes,
    rocksdb_options_get_max_background_flushes,
    max_background_flushes,
    c_int
);
plain_knob!(
    rocksdb_options_set_max_file_opening_threads,
    rocksdb_options_get_max_file_opening_threads,
    max_file_opening_threads,
    c_int
);
plain_knob!(
    rocksdb_options_set_max_sequential_skip_in_iterations,
    rocksdb_options_get_max_sequential_skip_in_iterations,
    max_sequential_skip_in_iterations,
    u64
);
plain_knob!(
    rocksdb_options_set_max_successive_merges,
    rocksdb_options_get_max_successive_merges,
    max_successive_merges,
    usize
);
plain_knob!(
    rocksdb_options_set_max_total_wal_size,
    rocksdb_options_get_max_total_wal_size,
    max_total_wal_size,
    u64
);
plain_knob!(
    rocksdb_options_set_max_write_buffer_number_to_maintain,
    rocksdb_options_get_max_write_buffer_number_to_maintain,
    max_write_buffer_number_to_maintain,
    c_int
);
plain_knob!(
    rocksdb_options_set_max_write_buffer_size_to_maintain,
    rocksdb_options_get_max_write_buffer_size_to_maintain,
    max_write_buffer_size_to_maintain,
    i64
);
plain_knob!(
    rocksdb_options_set_min_write_buffer_number_to_merge,
    rocksdb_options_get_min_write_buffer_number_to_merge,
    min_write_buffer_number_to_merge,
    c_int
);
plain_knob!(
    rocksdb_options_set_recycle_log_file_num,
    rocksdb_options_get_recycle_log_file_num,
    recycle_log_file_num,
    usize
);
// RocksDB's setter takes an int, its getter returns an unsigned char.
setter!(
    rocksdb_options_t,
    rocksdb_options_set_report_bg_io_stats,
    c_int,
    |o, v| o.knobs.report_bg_io_stats = v != 0
);
getter!(
    rocksdb_options_t,
    rocksdb_options_get_report_bg_io_stats,
    c_uchar,
    |o| c_uchar::from(o.knobs.report_bg_io_stats)
);
bool_knob!(
    rocksdb_options_set_skip_checking_sst_file_sizes_on_db_open,
    rocksdb_options_get_skip_checking_sst_file_sizes_on_db_open,
    skip_checking_sst_file_sizes_on_db_open
);
bool_knob!(
    rocksdb_options_set_skip_stats_update_on_db_open,
    rocksdb_options_get_skip_stats_update_on_db_open,
    skip_stats_update_on_db_open
);
plain_knob!(
    rocksdb_options_set_stats_dump_period_sec,
    rocksdb_options_get_stats_dump_period_sec,
    stats_dump_period_sec,
    c_uint
);
plain_knob!(
    rocksdb_options_set_stats_persist_period_sec,
    rocksdb_options_get_stats_persist_period_sec,
    stats_persist_period_sec,
    c_uint
);
plain_knob!(
    rocksdb_options_set_table_cache_numshardbits,
    rocksdb_options_get_table_cache_numshardbits,
    table_cache_numshardbits,
    c_int
);
bool_knob!(
    rocksdb_options_set_use_adaptive_mutex,
    rocksdb_options_get_use_adaptive_mutex,
    use_adaptive_mutex
);
plain_knob!(
    rocksdb_options_set_use_fsync,
    rocksdb_options_get_use_fsync,
    use_fsync,
    c_int
);
plain_knob!(
    rocksdb_options_set_wal_compression,
    rocksdb_options_get_wal_compression,
    wal_compression,
    c_int
);
plain_knob!(
    rocksdb_options_set_writable_file_max_buffer_size,
    rocksdb_options_get_writable_file_max_buffer_size,
    writable_file_max_buffer_size,
    u64
);

/// `ReadOptions` fields Strata keeps for their getters. Strata's reads
/// already give what each asks for or more: results are in total order
/// whatever `total_order_seek` says; range tombstones always apply (RocksDB
/// skips them under `ignore_range_deletions` only as an optimization for
/// databases without any); iterator keys and values stay valid until the
/// iterator moves (what `pin_data` adds is moot behind the C API, which
/// copies nothing it hands out); reads have no deadline, no per-read
/// readahead and no background purge.
#[derive(Clone, Debug, Default)]
pub struct ReadKnobs {
    pub background_purge_on_iterator_cleanup: bool,
    pub deadline: u64,
    pub io_timeout: u64,
    pub ignore_range_deletions: bool,
    pub max_skippable_internal_keys: u64,
    pub pin_data: bool,
    pub readahead_size: usize,
    pub tailing: bool,
    pub total_order_seek: bool,
}

/// `WriteOptions` fields Strata keeps for their getters only:
/// `memtable_insert_hint_per_batch` (a hint for a prefix-extractor
/// memtable insert path Strata does not have). `no_slowdown`, `low_pri`
/// and `ignore_missing_column_families` are Strata's own `WriteOptions`
/// fields and act.
#[derive(Clone, Debug, Default)]
pub struct WriteKnobs {
    pub memtable_insert_hint_per_batch: bool,
}

use crate::options::{rocksdb_readoptions_t, rocksdb_writeoptions_t};

/// One setter and one getter of a read or write knob.
macro_rules! opt_knob {
    ($ty:ty, $set:ident, $get:ident, $field:ident, bool) => {
        setter!($ty, $set, c_uchar, |o, v| o.knobs.$field = v != 0);
        getter!($ty, $get, c_uchar, |o| c_uchar::from(o.knobs.$field));
    };
    ($ty:ty, $set:ident, $get:ident, $field:ident, $cty:ty) => {
        setter!($ty, $set, $cty, |o, v| o.knobs.$field = v);
        getter!($ty, $get, $cty, |o| o.knobs.$field);
    };
}

opt_knob!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_background_purge_on_iterator_cleanup,
    rocksdb_readoptions_get_background_purge_on_iterator_cleanup,
    background_purge_on_iterator_cleanup,
    bool
);
opt_knob!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_deadline,
    rocksdb_readoptions_get_deadline,
    deadline,
    u64
);
opt_knob!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_io_timeout,
    rocksdb_readoptions_get_io_timeout,
    io_timeout,
    u64
);
opt_knob!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_ignore_range_deletions,
    rocksdb_readoptions_get_ignore_range_deletions,
    ignore_range_deletions,
    bool
);
opt_knob!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_max_skippable_internal_keys,
    rocksdb_readoptions_get_max_skippable_internal_keys,
    max_skippable_internal_keys,
    u64
);
opt_knob!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_pin_data,
    rocksdb_readoptions_get_pin_data,
    pin_data,
    bool
);
opt_knob!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_readahead_size,
    rocksdb_readoptions_get_readahead_size,
    readahead_size,
    usize
);
opt_knob!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_tailing,
    rocksdb_readoptions_get_tailing,
    tailing,
    bool
);
opt_knob!(
    rocksdb_readoptions_t,
    rocksdb_readoptions_set_total_order_seek,
    rocksdb_readoptions_get_total_order_seek,
    total_order_seek,
    bool
);
setter!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_set_ignore_missing_column_families,
    c_uchar,
    |o, v| o.opts.ignore_missing_column_families = v != 0
);
getter!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_get_ignore_missing_column_families,
    c_uchar,
    |o| c_uchar::from(o.opts.ignore_missing_column_families)
);
setter!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_set_low_pri,
    c_uchar,
    |o, v| o.opts.low_pri = v != 0
);
getter!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_get_low_pri,
    c_uchar,
    |o| c_uchar::from(o.opts.low_pri)
);
opt_knob!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_set_memtable_insert_hint_per_batch,
    rocksdb_writeoptions_get_memtable_insert_hint_per_batch,
    memtable_insert_hint_per_batch,
    bool
);
setter!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_set_no_slowdown,
    c_uchar,
    |o, v| o.opts.no_slowdown = v != 0
);
getter!(
    rocksdb_writeoptions_t,
    rocksdb_writeoptions_get_no_slowdown,
    c_uchar,
    |o| c_uchar::from(o.opts.no_slowdown)
);

// ---- rate limiter, table property collectors, paths, loggers ----

/// RocksDB's `NewGenericRateLimiter` settings. Kept by the options it is
/// set on (see [`DbKnobs::rate_limiter`]).
#[derive(Clone, Copy, Debug)]
pub struct rocksdb_ratelimiter_t {
    pub rate_bytes_per_sec: i64,
    pub refill_period_us: i64,
    pub fairness: i32,
}

#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_ratelimiter_create(
    rate_bytes_per_sec: i64,
    refill_period_us: i64,
    fairness: i32,
) -> *mut rocksdb_ratelimiter_t {
    crate::ffi::into_raw(rocksdb_ratelimiter_t {
        rate_bytes_per_sec,
        refill_period_us,
        fairness,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_ratelimiter_destroy(r: *mut rocksdb_ratelimiter_t) {
    // SAFETY: NULL or from rocksdb_ratelimiter_create.
    guard_quiet((), || unsafe { crate::ffi::drop_raw(r) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_ratelimiter(
    opt: *mut rocksdb_options_t,
    limiter: *mut rocksdb_ratelimiter_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live objects (the options keep a copy, so the
        // caller may destroy the limiter at once, as with RocksDB's
        // shared_ptr).
        if let Some(o) = unsafe { opt.as_mut() } {
            o.knobs.rate_limiter = unsafe { limiter.as_ref() }.copied();
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_add_compact_on_deletion_collector_factory(
    opt: *mut rocksdb_options_t,
    window_size: usize,
    num_dels_trigger: usize,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live options.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.knobs.compact_on_deletion = Some((window_size, num_dels_trigger));
        }
    })
}

/// A path for table files with its target size (RocksDB's `DbPath`).
#[derive(Clone, Debug)]
pub struct rocksdb_dbpath_t {
    pub path: strata::DbPath,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_dbpath_create(
    path: *const std::ffi::c_char,
    target_size: u64,
) -> *mut rocksdb_dbpath_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: a C string (C API contract).
        match unsafe { crate::ffi::cstr(path, "path") } {
            Ok(p) => crate::ffi::into_raw(rocksdb_dbpath_t {
                path: strata::DbPath::new(p, target_size),
            }),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_dbpath_destroy(p: *mut rocksdb_dbpath_t) {
    // SAFETY: NULL or from rocksdb_dbpath_create.
    guard_quiet((), || unsafe { crate::ffi::drop_raw(p) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_db_paths(
    opt: *mut rocksdb_options_t,
    path_values: *const *const rocksdb_dbpath_t,
    num_paths: usize,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live options; the array holds `num_paths` live
        // paths (C API contract).
        if let Some(o) = unsafe { opt.as_mut() } {
            o.opts.db_paths = (0..num_paths)
                .filter(|_| !path_values.is_null())
                .filter_map(|i| unsafe { (*path_values.add(i)).as_ref() })
                .map(|p| p.path.clone())
                .collect();
        }
    })
}

/// RocksDB's `Logger`: Strata writes its LOG file itself; the only logger
/// it takes is none (NULL, RocksDB's default of a LOG in the database
/// directory). Any other is refused at open.
pub struct rocksdb_logger_t {
    _private: (),
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_info_log(
    opt: *mut rocksdb_options_t,
    logger: *mut rocksdb_logger_t,
) {
    guard_quiet((), || {
        // SAFETY: NULL or live options.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.knobs.custom_info_log = !logger.is_null();
        }
    })
}
