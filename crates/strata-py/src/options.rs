//! rocksdict's option classes: `Options`, `ReadOptions`, `WriteOptions`,
//! `BlockBasedOptions`, `Cache`, `DBCompressionType`, `DBCompactionStyle`,
//! `SliceTransform`, `AccessType`, `IngestExternalFileOptions`. Setters
//! exist for what Strata supports; rocksdict's others are absent (an
//! AttributeError, not a silent no-op).

use std::sync::Arc;

use pyo3::prelude::*;
use strata::BlockCache;
use strata::BlockCacheApi;
use strata::CompressionType;
use strata::options::{
    CompactionStyle, IngestExternalFileOptions as Ingest, ReadOptions as Ro, WriteOptions as Wo,
};
use strata::{CappedPrefix, FixedPrefix, SliceTransform as St, SliceTransformRef};

/// rocksdict's defaults: missing databases are created; outside raw mode
/// keys are ordered by rocksdict's comparator (ints numerically).
pub fn default_options(raw_mode: bool) -> strata::Options {
    let mut opts = strata::Options {
        create_if_missing: true,
        ..strata::Options::default()
    };
    if !raw_mode {
        opts.cf.comparator = Arc::new(crate::codec::RocksdictComparator);
    }
    opts
}

#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct Options {
    pub opts: strata::Options,
    pub raw_mode: bool,
}

#[pymethods]
impl Options {
    #[new]
    #[pyo3(signature = (raw_mode = false))]
    fn new(raw_mode: bool) -> Self {
        Options {
            opts: default_options(raw_mode),
            raw_mode,
        }
    }

    fn create_if_missing(&mut self, v: bool) {
        self.opts.create_if_missing = v;
    }
    fn create_missing_column_families(&mut self, v: bool) {
        self.opts.create_missing_column_families = v;
    }
    fn set_error_if_exists(&mut self, v: bool) {
        self.opts.error_if_exists = v;
    }
    fn set_paranoid_checks(&mut self, v: bool) {
        self.opts.paranoid_checks = v;
    }
    fn increase_parallelism(&mut self, n: i32) {
        self.opts.max_background_jobs = n.max(1) as usize;
    }
    fn set_max_background_jobs(&mut self, n: i32) {
        self.opts.max_background_jobs = n.max(1) as usize;
    }
    fn set_max_subcompactions(&mut self, n: u32) {
        self.opts.max_subcompactions = n.max(1) as usize;
    }
    fn optimize_level_style_compaction(&mut self, budget: usize) {
        self.opts.cf.optimize_level_style_compaction(budget as u64);
    }
    fn optimize_for_point_lookup(&mut self, cache_size_mb: u64) {
        self.opts.cf.optimize_for_point_lookup(cache_size_mb);
    }
    fn set_write_buffer_size(&mut self, n: usize) {
        self.opts.cf.write_buffer_size = n;
    }
    /// One memtable budget for every column family (0: none).
    fn set_db_write_buffer_size(&mut self, n: usize) {
        self.opts.db_write_buffer_size = n;
    }
    /// Keeps point-lookup results per table file in `cache` (RocksDB's
    /// row cache; it may be the block cache too).
    fn set_row_cache(&mut self, cache: &Cache) {
        self.opts.row_cache = Some(cache.0.clone());
    }
    fn set_max_write_buffer_number(&mut self, n: i32) {
        self.opts.cf.max_write_buffer_number = n.max(1) as usize;
    }
    fn set_max_open_files(&mut self, n: i32) {
        self.opts.max_open_files = if n < 0 {
            i32::MAX as usize
        } else {
            (n as usize).max(20)
        };
    }
    fn set_compression_type(&mut self, t: &DBCompressionType) {
        self.opts.cf.compression = t.0;
    }
    /// A codec per level (flushes take the first; see RocksDB's
    /// `compression_per_level`).
    fn set_compression_per_level(&mut self, level_types: Vec<DBCompressionType>) {
        self.opts.cf.compression_per_level = level_types.into_iter().map(|t| t.0).collect();
    }
    /// Codec of outputs at the bottom of the tree (RocksDB's
    /// `bottommost_compression`).
    fn set_bottommost_compression_type(&mut self, t: &DBCompressionType) {
        self.opts.cf.bottommost_compression = Some(t.0);
    }
    /// Window bits, level, strategy and compression dictionary size
    /// (RocksDB's `compression_opts`).
    fn set_compression_options(
        &mut self,
        w_bits: i32,
        level: i32,
        strategy: i32,
        max_dict_bytes: i32,
    ) {
        let c = &mut self.opts.cf.compression_opts;
        (c.window_bits, c.level, c.strategy) = (w_bits, level, strategy);
        c.max_dict_bytes = max_dict_bytes.max(0) as u32;
    }
    /// Bytes sampled to train a ZSTD dictionary (0: raw samples).
    fn set_zstd_max_train_bytes(&mut self, value: i32) {
        self.opts.cf.compression_opts.zstd_max_train_bytes = value.max(0) as u32;
    }
    /// `set_compression_options` for outputs at the bottom, and whether
    /// they apply (RocksDB's `bottommost_compression_opts`).
    fn set_bottommost_compression_options(
        &mut self,
        w_bits: i32,
        level: i32,
        strategy: i32,
        max_dict_bytes: i32,
        enabled: bool,
    ) {
        let c = &mut self.opts.cf.bottommost_compression_opts;
        (c.window_bits, c.level, c.strategy) = (w_bits, level, strategy);
        c.max_dict_bytes = max_dict_bytes.max(0) as u32;
        c.enabled = enabled;
    }
    /// ZSTD training bytes for outputs at the bottom, and whether the
    /// bottommost options apply.
    fn set_bottommost_zstd_max_train_bytes(&mut self, value: i32, enabled: bool) {
        let c = &mut self.opts.cf.bottommost_compression_opts;
        c.zstd_max_train_bytes = value.max(0) as u32;
        c.enabled = enabled;
    }
    /// Levels below `lvl` uncompressed, the rest with the current codec.
    fn set_min_level_to_compress(&mut self, lvl: i32) {
        if lvl >= 0 {
            self.opts.cf.set_min_level_to_compress(lvl as usize);
        }
    }
    fn set_compaction_style(&mut self, s: &DBCompactionStyle) {
        self.opts.cf.compaction_style = s.0;
    }
    fn set_num_levels(&mut self, n: i32) {
        self.opts.cf.num_levels = n.max(1) as usize;
    }
    fn set_level_zero_file_num_compaction_trigger(&mut self, n: i32) {
        self.opts.cf.level0_file_num_compaction_trigger = n.max(1) as usize;
    }
    fn set_level_zero_slowdown_writes_trigger(&mut self, n: i32) {
        self.opts.cf.level0_slowdown_writes_trigger = n.max(1) as usize;
    }
    fn set_level_zero_stop_writes_trigger(&mut self, n: i32) {
        self.opts.cf.level0_stop_writes_trigger = n.max(1) as usize;
    }
    fn set_target_file_size_base(&mut self, n: u64) {
        self.opts.cf.target_file_size_base = n;
    }
    fn set_target_file_size_multiplier(&mut self, n: i32) {
        self.opts.cf.target_file_size_multiplier = n.max(1) as u64;
    }
    fn set_max_bytes_for_level_base(&mut self, n: u64) {
        self.opts.cf.max_bytes_for_level_base = n;
    }
    fn set_max_bytes_for_level_multiplier(&mut self, m: f64) {
        self.opts.cf.max_bytes_for_level_multiplier = m;
    }
    fn set_level_compaction_dynamic_level_bytes(&mut self, v: bool) {
        self.opts.cf.level_compaction_dynamic_level_bytes = v;
    }
    fn set_disable_auto_compactions(&mut self, v: bool) {
        self.opts.cf.disable_auto_compactions = v;
    }
    fn set_max_compaction_bytes(&mut self, n: u64) {
        self.opts.cf.max_compaction_bytes = n;
    }
    fn set_soft_pending_compaction_bytes_limit(&mut self, n: u64) {
        self.opts.cf.soft_pending_compaction_bytes_limit = n;
    }
    fn set_hard_pending_compaction_bytes_limit(&mut self, n: u64) {
        self.opts.cf.hard_pending_compaction_bytes_limit = n;
    }
    fn set_allow_concurrent_memtable_write(&mut self, v: bool) {
        self.opts.allow_concurrent_memtable_write = v;
    }
    fn set_enable_pipelined_write(&mut self, v: bool) {
        self.opts.enable_pipelined_write = v;
    }
    fn set_unordered_write(&mut self, v: bool) {
        self.opts.unordered_write = v;
    }
    fn set_wal_dir(&mut self, path: &str) {
        self.opts.wal_dir = Some(path.into());
    }
    /// Table files in these directories, by target size (RocksDB's
    /// `db_paths`; at most four).
    fn set_db_paths(&mut self, paths: Vec<DbPath>) {
        self.opts.db_paths = paths.into_iter().map(|p| p.0).collect();
    }
    fn set_wal_ttl_seconds(&mut self, secs: u64) {
        self.opts.wal_ttl_seconds = secs;
    }
    fn set_wal_size_limit_mb(&mut self, mb: u64) {
        self.opts.wal_size_limit_mb = mb;
    }
    fn set_keep_log_file_num(&mut self, n: usize) {
        self.opts.keep_log_file_num = n;
    }
    fn set_max_log_file_size(&mut self, n: usize) {
        self.opts.max_log_file_size = n as u64;
    }
    fn set_max_manifest_file_size(&mut self, n: usize) {
        self.opts.max_manifest_file_size = n as u64;
    }
    fn set_prefix_extractor(&mut self, t: &SliceTransform) {
        self.opts.cf.prefix_extractor = Some(t.0.clone());
    }
    fn set_block_based_table_factory(&mut self, f: &BlockBasedOptions) {
        let cf = &mut self.opts.cf;
        cf.table_factory = strata::TableFactory::BlockBased;
        cf.block_size = f.block_size;
        cf.block_restart_interval = f.block_restart_interval;
        cf.bloom_bits_per_key = f.bloom_bits_per_key;
        cf.filter_policy = f.filter_policy;
        cf.cache_index_and_filter_blocks = f.cache_index_and_filter_blocks;
        cf.pin_l0_filter_and_index_blocks_in_cache = f.pin_l0_filter_and_index_blocks_in_cache;
        cf.pin_top_level_index_and_filter = f.pin_top_level_index_and_filter;
        cf.format_version = f.format_version;
        cf.whole_key_filtering = f.whole_key_filtering;
        cf.index_type = f.index_type;
        cf.data_block_index_type = f.data_block_index_type;
        cf.data_block_hash_table_util_ratio = f.data_block_hash_ratio;
        cf.partition_filters = f.partition_filters;
        cf.metadata_block_size = f.metadata_block_size;
        cf.index_block_restart_interval = f.index_block_restart_interval;
        cf.checksum = f.checksum;
        cf.block_cache = f.cache.clone().map(|c| c as Arc<dyn BlockCacheApi>);
    }
    /// Read table files through memory maps (PlainTable files are then
    /// used in place).
    fn set_allow_mmap_reads(&mut self, is_enabled: bool) {
        self.opts.allow_mmap_reads = is_enabled;
    }
    /// Write table files by copying into memory maps instead of `write`
    /// calls (RocksDB's `allow_mmap_writes`; 64-bit Linux).
    fn set_allow_mmap_writes(&mut self, is_enabled: bool) {
        self.opts.allow_mmap_writes = is_enabled;
    }
    /// Read tables with O_DIRECT (RocksDB's `use_direct_reads`).
    fn set_use_direct_reads(&mut self, enabled: bool) {
        self.opts.use_direct_reads = enabled;
    }
    /// Write flush and compaction outputs with O_DIRECT.
    fn set_use_direct_io_for_flush_and_compaction(&mut self, enabled: bool) {
        self.opts.use_direct_io_for_flush_and_compaction = enabled;
    }
    fn set_memtable_factory(&mut self, factory: &MemtableFactory) {
        self.opts.cf.memtable_factory = factory.0;
    }
    /// RocksDB's PlainTable format for this column family's files (data
    /// held in RAM; a prefix extractor enables its hash index).
    fn set_plain_table_factory(&mut self, options: &PlainTableFactoryOptions) {
        self.opts.cf.table_factory = strata::TableFactory::Plain(options.0.clone());
    }
    /// The memtable bloom's size as a fraction of the write buffer
    /// (RocksDB's `memtable_prefix_bloom_size_ratio`).
    fn set_memtable_prefix_bloom_ratio(&mut self, ratio: f64) -> PyResult<()> {
        if !(0.0..=1.0).contains(&ratio) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "memtable_prefix_bloom_size_ratio must be between 0 and 1",
            ));
        }
        self.opts.cf.memtable_prefix_bloom_size_ratio = ratio;
        Ok(())
    }
    /// Whole keys in the memtable bloom too.
    fn set_memtable_huge_page_size(&mut self, size: usize) {
        self.opts.cf.memtable_huge_page_size = size;
    }

    fn set_memtable_whole_key_filtering(&mut self, whole_key_filter: bool) {
        self.opts.cf.memtable_whole_key_filtering = whole_key_filter;
    }
    /// No filters in tables compacted to the bottom of the tree.
    fn set_optimize_filters_for_hits(&mut self, optimize_for_hits: bool) {
        self.opts.cf.optimize_filters_for_hits = optimize_for_hits;
    }
    /// Cache-line locality of PlainTable bloom filters (0 or 1).
    fn set_bloom_locality(&mut self, v: u32) {
        self.opts.cf.bloom_locality = v;
    }
    /// CuckooTable files (RocksDB's format; data the format cannot hold is
    /// written block-based, never dropped).
    fn set_cuckoo_table_factory(&mut self, options: &CuckooTableOptions) {
        self.opts.cf.table_factory = strata::TableFactory::Cuckoo(options.0.clone());
    }
    /// The options a database was last opened with (its newest OPTIONS
    /// file): the database's and each column family's.
    #[staticmethod]
    #[pyo3(signature = (path, env = None, ignore_unknown_options = false, cache = None))]
    fn load_latest(
        path: &str,
        env: Option<&Bound<'_, PyAny>>,
        ignore_unknown_options: bool,
        cache: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Options, std::collections::HashMap<String, Options>)> {
        let _ = (env, ignore_unknown_options, cache);
        let dir = std::path::Path::new(path);
        let file = strata::db::options_parser::load_latest(dir)
            .map_err(crate::rdict::err)?
            .ok_or_else(|| {
                pyo3::exceptions::PyException::new_err(format!(
                    "NotFound: no OPTIONS file in {path}"
                ))
            })?;
        let raw = std::fs::read_to_string(dir.join("rocksdict-config.json"))
            .is_ok_and(|c| c.replace(' ', "").contains("\"raw_mode\":true"));
        let mut db = default_options(raw);
        file.apply_db(&mut db).map_err(crate::rdict::err)?;
        let mut cfs = std::collections::HashMap::new();
        for name in file.column_families() {
            let mut o = default_options(raw);
            file.apply_cf(name, &mut o.cf).map_err(crate::rdict::err)?;
            if let Some(c) = file.cf_option(name, "comparator") {
                o.cf.comparator = default_options(c != "rocksdict").cf.comparator;
            }
            if name == "default" {
                db.cf = o.cf.clone();
            } else {
                cfs.insert(
                    name.to_string(),
                    Options {
                        opts: o,
                        raw_mode: raw,
                    },
                );
            }
        }
        Ok((
            Options {
                opts: db,
                raw_mode: raw,
            },
            cfs,
        ))
    }
    fn enable_statistics(&mut self) {
        self.opts.statistics = Some(Arc::new(strata::Statistics::new()));
    }
    /// The statistics as text (None without `enable_statistics`).
    fn get_statistics(&self) -> Option<String> {
        self.opts.statistics.as_ref().map(|s| s.report())
    }
}

/// rocksdict's PlainTable options (RocksDB's `PlainTableOptions`).
#[pyclass(module = "strata")]
#[derive(Clone, Default)]
pub struct PlainTableFactoryOptions(strata::PlainTableOptions);

#[pymethods]
impl PlainTableFactoryOptions {
    #[new]
    fn new() -> Self {
        PlainTableFactoryOptions::default()
    }
    /// Fixed key length; 0: keys of any length.
    #[getter]
    fn get_user_key_length(&self) -> u32 {
        self.0.user_key_len
    }
    #[setter]
    fn set_user_key_length(&mut self, v: u32) {
        self.0.user_key_len = v;
    }
    #[getter]
    fn get_bloom_bits_per_key(&self) -> i32 {
        self.0.bloom_bits_per_key
    }
    #[setter]
    fn set_bloom_bits_per_key(&mut self, v: i32) -> PyResult<()> {
        if v < 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "bloom_bits_per_key must be >= 0",
            ));
        }
        self.0.bloom_bits_per_key = v;
        Ok(())
    }
    #[getter]
    fn get_hash_table_ratio(&self) -> f64 {
        self.0.hash_table_ratio
    }
    #[setter]
    fn set_hash_table_ratio(&mut self, v: f64) -> PyResult<()> {
        if !(v.is_finite() && v >= 0.0) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "hash_table_ratio must be a number >= 0",
            ));
        }
        self.0.hash_table_ratio = v;
        Ok(())
    }
    #[getter]
    fn get_index_sparseness(&self) -> usize {
        self.0.index_sparseness
    }
    #[setter]
    fn set_index_sparseness(&mut self, v: usize) {
        self.0.index_sparseness = v;
    }
    #[getter]
    fn get_huge_page_tlb_size(&self) -> usize {
        self.0.huge_page_tlb_size
    }
    #[setter]
    fn set_huge_page_tlb_size(&mut self, v: usize) {
        self.0.huge_page_tlb_size = v;
    }
    #[getter]
    fn get_full_scan_mode(&self) -> bool {
        self.0.full_scan_mode
    }
    #[setter]
    fn set_full_scan_mode(&mut self, v: bool) {
        self.0.full_scan_mode = v;
    }
    #[getter]
    fn get_store_index_in_file(&self) -> bool {
        self.0.store_index_in_file
    }
    #[setter]
    fn set_store_index_in_file(&mut self, v: bool) {
        self.0.store_index_in_file = v;
    }
    /// `"plain"` or `"prefix"` (RocksDB's kPlain / kPrefix).
    #[getter]
    fn get_encoding_type(&self) -> &'static str {
        match self.0.encoding_type {
            strata::EncodingType::Plain => "plain",
            strata::EncodingType::Prefix => "prefix",
        }
    }
    #[setter]
    fn set_encoding_type(&mut self, v: &str) -> PyResult<()> {
        self.0.encoding_type = match v {
            "plain" | "kPlain" => strata::EncodingType::Plain,
            "prefix" | "kPrefix" => strata::EncodingType::Prefix,
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "encoding_type {v:?}: plain or prefix"
                )));
            }
        };
        Ok(())
    }
}

/// rocksdict's memtable kinds (`Options.set_memtable_factory`): RocksDB's
/// vector, HashSkipList and HashLinkList memtables. The hash kinds need a
/// prefix extractor (without one the skiplist serves, as in RocksDB); all
/// three need `set_allow_concurrent_memtable_write(False)`.
#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct MemtableFactory(strata::MemTableFactory);

#[pymethods]
impl MemtableFactory {
    #[staticmethod]
    fn vector() -> Self {
        MemtableFactory(strata::MemTableFactory::Vector)
    }
    /// `height` and `branching_factor` are accepted; Strata's skiplists
    /// choose their own.
    #[staticmethod]
    #[pyo3(signature = (bucket_count = 1_000_000, height = 4, branching_factor = 4))]
    fn hash_skip_list(bucket_count: usize, height: i32, branching_factor: i32) -> Self {
        let _ = (height, branching_factor);
        MemtableFactory(strata::MemTableFactory::PrefixHash { bucket_count })
    }
    #[staticmethod]
    #[pyo3(signature = (bucket_count = 50_000))]
    fn hash_link_list(bucket_count: usize) -> Self {
        MemtableFactory(strata::MemTableFactory::HashLinkList {
            bucket_count,
            threshold_use_skiplist: 256,
        })
    }
}

/// rocksdict's `DBPath`: a directory for table files and its target size
/// (see `Options.set_db_paths`).
#[pyclass(module = "strata", name = "DBPath")]
#[derive(Clone)]
pub struct DbPath(strata::DbPath);

#[pymethods]
impl DbPath {
    #[new]
    fn new(path: &str, target_size: u64) -> Self {
        DbPath(strata::DbPath::new(path, target_size))
    }
}

/// rocksdict's CuckooTable options (RocksDB's defaults until set).
#[pyclass(module = "strata")]
#[derive(Clone, Default)]
pub struct CuckooTableOptions(strata::CuckooTableOptions);

#[pymethods]
impl CuckooTableOptions {
    #[new]
    fn new() -> Self {
        CuckooTableOptions::default()
    }
    fn set_hash_ratio(&mut self, ratio: f64) {
        self.0.hash_table_ratio = ratio;
    }
    fn set_max_search_depth(&mut self, depth: u32) {
        self.0.max_search_depth = depth;
    }
    fn set_cuckoo_block_size(&mut self, size: u32) {
        self.0.cuckoo_block_size = size;
    }
    fn set_identity_as_first_hash(&mut self, flag: bool) {
        self.0.identity_as_first_hash = flag;
    }
    fn set_use_module_hash(&mut self, flag: bool) {
        self.0.use_module_hash = flag;
    }
}

#[pyclass(module = "strata")]
#[derive(Clone, Default)]
pub struct ReadOptions {
    pub opts: Ro,
}

#[pymethods]
impl ReadOptions {
    #[new]
    fn new() -> Self {
        ReadOptions::default()
    }
    fn set_iterate_upper_bound(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.opts.iterate_upper_bound = Some(crate::rdict::bound_key(key)?);
        Ok(())
    }
    fn set_iterate_lower_bound(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.opts.iterate_lower_bound = Some(crate::rdict::bound_key(key)?);
        Ok(())
    }
    fn set_prefix_same_as_start(&mut self, v: bool) {
        self.opts.prefix_same_as_start = v;
    }
    /// Strata verifies every block it reads.
    fn set_verify_checksums(&mut self, _v: bool) {}
    /// Strata caches the blocks it reads.
    fn fill_cache(&mut self, _v: bool) {}
}

#[pyclass(module = "strata")]
#[derive(Clone, Default)]
pub struct WriteOptions {
    pub opts: Wo,
    /// rocksdict's hint for a prefix-extractor memtable insert path
    /// Strata does not have: kept for its getter only.
    memtable_insert_hint_per_batch: bool,
}

#[pymethods]
impl WriteOptions {
    #[new]
    fn new() -> Self {
        WriteOptions::default()
    }
    #[getter]
    fn get_sync(&self) -> bool {
        self.opts.sync
    }
    #[setter]
    fn set_sync(&mut self, v: bool) {
        self.opts.sync = v;
    }
    /// rocksdict's `disable_wal(disable)`: a method, not a property.
    fn disable_wal(&mut self, disable: bool) {
        self.opts.disable_wal = disable;
    }
    /// Fail with an error instead of waiting in a write stall.
    #[getter]
    fn get_no_slowdown(&self) -> bool {
        self.opts.no_slowdown
    }
    #[setter]
    fn set_no_slowdown(&mut self, v: bool) {
        self.opts.no_slowdown = v;
    }
    /// Paced (or, with `no_slowdown`, refused) while writes stall.
    #[getter]
    fn get_low_pri(&self) -> bool {
        self.opts.low_pri
    }
    #[setter]
    fn set_low_pri(&mut self, v: bool) {
        self.opts.low_pri = v;
    }
    /// Records of missing column families are skipped instead of failing.
    #[getter]
    fn get_ignore_missing_column_families(&self) -> bool {
        self.opts.ignore_missing_column_families
    }
    #[setter]
    fn set_ignore_missing_column_families(&mut self, v: bool) {
        self.opts.ignore_missing_column_families = v;
    }
    #[getter]
    fn get_memtable_insert_hint_per_batch(&self) -> bool {
        self.memtable_insert_hint_per_batch
    }
    #[setter]
    fn set_memtable_insert_hint_per_batch(&mut self, v: bool) {
        self.memtable_insert_hint_per_batch = v;
    }
}

#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct BlockBasedOptions {
    block_size: usize,
    block_restart_interval: usize,
    bloom_bits_per_key: Option<f64>,
    filter_policy: strata::FilterPolicy,
    cache_index_and_filter_blocks: bool,
    pin_l0_filter_and_index_blocks_in_cache: bool,
    pin_top_level_index_and_filter: bool,
    format_version: u32,
    whole_key_filtering: bool,
    index_type: strata::IndexType,
    data_block_index_type: strata::DataBlockIndexType,
    data_block_hash_ratio: f64,
    partition_filters: bool,
    metadata_block_size: usize,
    index_block_restart_interval: usize,
    checksum: strata::ChecksumType,
    cache: Option<Arc<BlockCache>>,
}

#[pymethods]
impl BlockBasedOptions {
    #[new]
    fn new() -> Self {
        let d = strata::ColumnFamilyOptions::default();
        BlockBasedOptions {
            block_size: d.block_size,
            block_restart_interval: d.block_restart_interval,
            bloom_bits_per_key: None,
            filter_policy: strata::FilterPolicy::Bloom,
            cache_index_and_filter_blocks: false,
            pin_l0_filter_and_index_blocks_in_cache: false,
            pin_top_level_index_and_filter: d.pin_top_level_index_and_filter,
            format_version: d.format_version,
            whole_key_filtering: d.whole_key_filtering,
            index_type: d.index_type,
            data_block_index_type: d.data_block_index_type,
            data_block_hash_ratio: d.data_block_hash_table_util_ratio,
            partition_filters: d.partition_filters,
            metadata_block_size: d.metadata_block_size,
            index_block_restart_interval: d.index_block_restart_interval,
            checksum: d.checksum,
            cache: None,
        }
    }
    fn set_index_type(&mut self, index_type: &BlockBasedIndexType) {
        self.index_type = index_type.0;
    }
    /// Keep index and filter blocks in the block cache as entries (evicted
    /// and read again like data blocks) instead of in each table reader.
    fn set_cache_index_and_filter_blocks(&mut self, v: bool) {
        self.cache_index_and_filter_blocks = v;
    }
    /// With cached index and filter blocks, readers of level-0 files hold
    /// theirs.
    fn set_pin_l0_filter_and_index_blocks_in_cache(&mut self, v: bool) {
        self.pin_l0_filter_and_index_blocks_in_cache = v;
    }
    /// With cached index and filter blocks, readers hold the top levels of
    /// partitioned indexes and filters (default true).
    fn set_pin_top_level_index_and_filter(&mut self, v: bool) {
        self.pin_top_level_index_and_filter = v;
    }
    /// Data blocks with a hash index of their keys
    /// (`DataBlockIndexType.binary_search_and_hash()`).
    fn set_data_block_index_type(&mut self, t: &DataBlockIndexType) {
        self.data_block_index_type = t.0;
    }
    /// Keys per bucket of data block hash indexes.
    fn set_data_block_hash_ratio(&mut self, ratio: f64) {
        self.data_block_hash_ratio = ratio;
    }
    /// Partition the filter too (with a two-level index).
    fn set_partition_filters(&mut self, v: bool) {
        self.partition_filters = v;
    }
    fn set_metadata_block_size(&mut self, size: usize) {
        self.metadata_block_size = size.max(1);
    }
    fn set_index_block_restart_interval(&mut self, interval: i32) {
        self.index_block_restart_interval = interval.max(1) as usize;
    }
    fn set_checksum_type(&mut self, checksum_type: &ChecksumType) {
        self.checksum = checksum_type.0;
    }
    /// Table format_version of new files: 5 (default; RocksDB 6.6+ reads
    /// it) or 6 (RocksDB 8.6+; rocksdict's default). Others are refused
    /// when the database opens.
    fn set_format_version(&mut self, version: i32) {
        self.format_version = version.max(0) as u32;
    }
    fn set_whole_key_filtering(&mut self, v: bool) {
        self.whole_key_filtering = v;
    }
    fn set_block_size(&mut self, n: usize) {
        self.block_size = n.max(1);
    }
    fn set_block_restart_interval(&mut self, n: i32) {
        self.block_restart_interval = n.max(1) as usize;
    }
    /// A full bloom filter (`block_based` filters are written as full ones).
    #[pyo3(signature = (bits_per_key, block_based = false))]
    fn set_bloom_filter(&mut self, bits_per_key: f64, block_based: bool) {
        let _ = block_based;
        self.bloom_bits_per_key = Some(bits_per_key);
        self.filter_policy = strata::FilterPolicy::Bloom;
    }
    /// Standard128 Ribbon filters as accurate as Bloom filters of
    /// `bloom_equivalent_bits_per_key` (flushes keep Bloom filters).
    fn set_ribbon_filter(&mut self, bloom_equivalent_bits_per_key: f64) {
        self.set_hybrid_ribbon_filter(bloom_equivalent_bits_per_key, 0);
    }
    /// Ribbon filters for files written at `bloom_before_level` and
    /// deeper, Bloom above (flushes count as level -1).
    fn set_hybrid_ribbon_filter(
        &mut self,
        bloom_equivalent_bits_per_key: f64,
        bloom_before_level: i32,
    ) {
        self.bloom_bits_per_key = Some(bloom_equivalent_bits_per_key);
        self.filter_policy = strata::FilterPolicy::Ribbon { bloom_before_level };
    }
    fn set_block_cache(&mut self, cache: &Cache) {
        self.cache = Some(cache.0.clone());
    }
}

#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct Cache(pub Arc<BlockCache>);

#[pymethods]
impl Cache {
    #[new]
    fn new(capacity: u64) -> Self {
        Cache(BlockCache::new(capacity))
    }
    fn get_usage(&self) -> u64 {
        self.0.usage()
    }
    fn get_capacity(&self) -> u64 {
        self.0.capacity()
    }
    /// Bytes of blocks in use outside the cache, and memory charged to it.
    fn get_pinned_usage(&self) -> u64 {
        self.0.pinned_usage()
    }
    /// Unpinned blocks that no longer fit are evicted.
    fn set_capacity(&self, capacity: u64) {
        self.0.set_capacity(capacity);
    }
}

/// rocksdict's `BlockBasedIndexType` (hash search needs a prefix
/// extractor).
#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct BlockBasedIndexType(strata::IndexType);

#[pymethods]
impl BlockBasedIndexType {
    #[staticmethod]
    fn binary_search() -> Self {
        BlockBasedIndexType(strata::IndexType::BinarySearch)
    }
    #[staticmethod]
    fn hash_search() -> Self {
        BlockBasedIndexType(strata::IndexType::HashSearch)
    }
    #[staticmethod]
    fn two_level_index_search() -> Self {
        BlockBasedIndexType(strata::IndexType::TwoLevelIndexSearch)
    }
}

/// rocksdict's `DataBlockIndexType`.
#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct DataBlockIndexType(strata::DataBlockIndexType);

#[pymethods]
impl DataBlockIndexType {
    #[staticmethod]
    fn binary_search() -> Self {
        DataBlockIndexType(strata::DataBlockIndexType::BinarySearch)
    }
    #[staticmethod]
    fn binary_search_and_hash() -> Self {
        DataBlockIndexType(strata::DataBlockIndexType::BinaryAndHash)
    }
}

/// rocksdict's `ChecksumType`.
#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct ChecksumType(strata::ChecksumType);

#[pymethods]
impl ChecksumType {
    #[staticmethod]
    fn no_checksum() -> Self {
        ChecksumType(strata::ChecksumType::NoChecksum)
    }
    #[staticmethod]
    fn crc32c() -> Self {
        ChecksumType(strata::ChecksumType::Crc32c)
    }
    #[staticmethod]
    fn xxhash() -> Self {
        ChecksumType(strata::ChecksumType::XxHash)
    }
    #[staticmethod]
    fn xxhash64() -> Self {
        ChecksumType(strata::ChecksumType::XxHash64)
    }
    #[staticmethod]
    fn xxh3() -> Self {
        ChecksumType(strata::ChecksumType::Xxh3)
    }
}

#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct DBCompressionType(pub CompressionType);

#[pymethods]
impl DBCompressionType {
    #[staticmethod]
    fn none() -> Self {
        DBCompressionType(CompressionType::None)
    }
    #[staticmethod]
    fn snappy() -> Self {
        DBCompressionType(CompressionType::Snappy)
    }
    #[staticmethod]
    fn zlib() -> Self {
        DBCompressionType(CompressionType::Zlib)
    }
    #[staticmethod]
    fn bz2() -> Self {
        DBCompressionType(CompressionType::BZip2)
    }
    #[staticmethod]
    fn lz4() -> Self {
        DBCompressionType(CompressionType::Lz4)
    }
    #[staticmethod]
    fn lz4hc() -> Self {
        DBCompressionType(CompressionType::Lz4hc)
    }
    #[staticmethod]
    fn zstd() -> Self {
        DBCompressionType(CompressionType::Zstd)
    }
}

#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct DBCompactionStyle(pub CompactionStyle);

#[pymethods]
impl DBCompactionStyle {
    #[staticmethod]
    fn level() -> Self {
        DBCompactionStyle(CompactionStyle::Level)
    }
    #[staticmethod]
    fn universal() -> Self {
        DBCompactionStyle(CompactionStyle::Universal)
    }
    #[staticmethod]
    fn fifo() -> Self {
        DBCompactionStyle(CompactionStyle::Fifo)
    }
}

/// Every key is its own prefix.
struct Noop;

impl St for Noop {
    fn name(&self) -> String {
        "rocksdb.Noop".into()
    }
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        key
    }
    fn in_domain(&self, _key: &[u8]) -> bool {
        true
    }
}

#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct SliceTransform(pub SliceTransformRef);

#[pymethods]
impl SliceTransform {
    #[staticmethod]
    fn create_fixed_prefix(len: usize) -> Self {
        SliceTransform(Arc::new(FixedPrefix(len)))
    }
    #[staticmethod]
    fn create_max_len_prefix(len: usize) -> Self {
        SliceTransform(Arc::new(CappedPrefix(len)))
    }
    #[staticmethod]
    fn create_noop() -> Self {
        SliceTransform(Arc::new(Noop))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Access {
    ReadWrite,
    ReadOnly {
        error_if_log_file_exist: bool,
    },
    /// A secondary instance keeping its own files in this directory.
    Secondary(String),
    /// DBWithTTL with this TTL in seconds for every column family.
    WithTtl(i32),
}

#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct AccessType(pub Access);

#[pymethods]
impl AccessType {
    #[staticmethod]
    fn read_write() -> Self {
        AccessType(Access::ReadWrite)
    }
    #[staticmethod]
    #[pyo3(signature = (error_if_log_file_exist = true))]
    fn read_only(error_if_log_file_exist: bool) -> Self {
        AccessType(Access::ReadOnly {
            error_if_log_file_exist,
        })
    }
    /// A secondary instance (RocksDB's OpenAsSecondary): a read-only view
    /// of a database another process writes, refreshed by
    /// `Rdict.try_catch_up_with_primary()`.
    #[staticmethod]
    fn secondary(secondary_path: &str) -> Self {
        AccessType(Access::Secondary(secondary_path.to_string()))
    }
    /// A database whose values expire after `duration` seconds (an int,
    /// or a `datetime.timedelta`), RocksDB's DBWithTTL: values carry a
    /// 4-byte timestamp, compactions drop expired ones, reads may still
    /// return an expired value until a compaction ran (as RocksDB).
    #[staticmethod]
    fn with_ttl(duration: &Bound<'_, PyAny>) -> PyResult<Self> {
        let secs: i64 = match duration.extract::<i64>() {
            Ok(s) => s,
            Err(_) => duration
                .call_method0("total_seconds")?
                .extract::<f64>()
                .map(|s| s as i64)?,
        };
        let secs = i32::try_from(secs).map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!("ttl of {secs} s is out of range"))
        })?;
        Ok(AccessType(Access::WithTtl(secs)))
    }
}

#[pyclass(module = "strata")]
#[derive(Clone)]
pub struct IngestExternalFileOptions(pub Ingest);

#[pymethods]
impl IngestExternalFileOptions {
    #[new]
    fn new() -> Self {
        IngestExternalFileOptions(Ingest::default())
    }
    fn set_move_files(&mut self, v: bool) {
        self.0.move_files = v;
    }
    fn set_snapshot_consistency(&mut self, v: bool) {
        self.0.snapshot_consistency = v;
    }
    fn set_allow_global_seqno(&mut self, v: bool) {
        self.0.allow_global_seqno = v;
    }
    fn set_allow_blocking_flush(&mut self, v: bool) {
        self.0.allow_blocking_flush = v;
    }
    fn set_ingest_behind(&mut self, v: bool) {
        self.0.ingest_behind = v;
    }
}
