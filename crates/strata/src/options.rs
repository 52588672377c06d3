//! Options with RocksDB's names and (where sensible) defaults: DB-wide
//! settings, per-column-family settings, and per-read / per-write options.

use std::path::PathBuf;
use std::sync::Arc;

use crate::compaction_filter::CompactionFilterRef;
use crate::format::SequenceNumber;
use crate::fs::FileSystemRef;
use crate::merge_operator::MergeOperatorRef;
use crate::table::options::BlockCacheApi;
use crate::table::{CompressionType, TableOptions};
use crate::util::checksum::ChecksumType;
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

/// How a column family's files are compacted (RocksDB's
/// `CompactionStyle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CompactionStyle {
    /// Leveled: L0 into a base level, each level a sorted run about
    /// `max_bytes_for_level_multiplier` times the one above.
    #[default]
    Level,
    /// Universal (tiered): sorted runs merged by size ratio and size
    /// amplification.
    Universal,
    /// FIFO: files are deleted oldest first past a total size or an age.
    Fifo,
    /// No automatic compaction (manual `compact_range` still works).
    None,
}

impl CompactionStyle {
    /// RocksDB's enum value (`kCompactionStyleLevel` = 0, ...).
    pub fn rocksdb_code(self) -> u32 {
        match self {
            CompactionStyle::Level => 0,
            CompactionStyle::Universal => 1,
            CompactionStyle::Fifo => 2,
            CompactionStyle::None => 3,
        }
    }

    /// RocksDB's option-file name (`kCompactionStyleLevel`, ...).
    pub fn rocksdb_name(self) -> &'static str {
        match self {
            CompactionStyle::Level => "kCompactionStyleLevel",
            CompactionStyle::Universal => "kCompactionStyleUniversal",
            CompactionStyle::Fifo => "kCompactionStyleFIFO",
            CompactionStyle::None => "kCompactionStyleNone",
        }
    }
}

/// Universal compaction settings (RocksDB's
/// `CompactionOptionsUniversal`, same defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UniversalCompactionOptions {
    /// Percent by which a run may be larger than the sum of the newer runs
    /// picked before it and still join them.
    pub size_ratio: u32,
    pub min_merge_width: usize,
    pub max_merge_width: usize,
    /// Compact everything when the newer runs exceed this percentage of
    /// the oldest run's size.
    pub max_size_amplification_percent: u64,
}

impl Default for UniversalCompactionOptions {
    fn default() -> Self {
        UniversalCompactionOptions {
            size_ratio: 1,
            min_merge_width: 2,
            max_merge_width: usize::MAX,
            max_size_amplification_percent: 200,
        }
    }
}

/// FIFO compaction settings (RocksDB's `CompactionOptionsFIFO`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FifoCompactionOptions {
    /// Oldest files are deleted while the total exceeds this.
    pub max_table_files_size: u64,
    /// Files older than this many seconds are deleted (RocksDB's former
    /// `CompactionOptionsFIFO::ttl`; folded into `ColumnFamilyOptions::ttl`
    /// at open). 0 leaves the age limit to `ttl`, whose RocksDB default
    /// is 30 days under FIFO too: no limit needs `ttl` and
    /// `periodic_compaction_seconds` both 0.
    pub ttl_seconds: u64,
}

impl Default for FifoCompactionOptions {
    fn default() -> Self {
        FifoCompactionOptions {
            max_table_files_size: 1 << 30,
            ttl_seconds: 0,
        }
    }
}

/// Which table format a column family writes (RocksDB's
/// `table_factory`). Whatever it says, tables of either format are read
/// (by their magic number).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum TableFactory {
    /// Block-based tables, shaped by the `block_*`, `format_version`,
    /// `index_*` and filter fields of [`ColumnFamilyOptions`].
    #[default]
    BlockBased,
    /// PlainTable files (for data kept in RAM; see `table::plain`).
    /// Range deletions are `NotSupported` in such a column family.
    Plain(crate::table::PlainTableOptions),
    /// CuckooTable files (fixed-size keys and values, point lookups; see
    /// `table::cuckoo`). A flush or compaction whose entries do not fit
    /// the format writes a block-based table instead (shaped by the
    /// block-based fields) and says why in the LOG; no write is lost.
    Cuckoo(crate::table::CuckooTableOptions),
}

pub use crate::memtable::MemTableFactory;

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
    /// Size of each memtable's bloom filter as a fraction of
    /// `write_buffer_size` (RocksDB's `memtable_prefix_bloom_size_ratio`;
    /// 0 = none, at most 0.25). It holds prefixes (with a prefix
    /// extractor) and, with `memtable_whole_key_filtering`, whole keys; a
    /// point lookup asks it before searching the memtable. Strata's
    /// default is 0.02 with whole keys (RocksDB's is 0): a lookup of a key
    /// the memtable lacks then costs one cache miss instead of a skiplist
    /// descent, for 2% more memtable memory and a few percent on random
    /// inserts.
    pub memtable_prefix_bloom_size_ratio: f64,
    /// Put whole keys into the memtable bloom too (RocksDB's
    /// `memtable_whole_key_filtering`; Strata's default is true).
    pub memtable_whole_key_filtering: bool,
    /// RocksDB's `inplace_update_support`: a `Put` over a key whose newest
    /// memtable entry is a `Put` with a value at least as long overwrites
    /// it in place (memtables grow less under updates of the same keys;
    /// snapshots older than such a write see its value, as in RocksDB).
    /// Needs `allow_concurrent_memtable_write` off and the skiplist
    /// memtable.
    pub inplace_update_support: bool,
    /// RocksDB's lock stripes for in-place updates; Strata takes one lock
    /// per memtable (kept for the OPTIONS file).
    pub inplace_update_num_locks: usize,
    /// The memtable's index structure (RocksDB's `memtable_factory`).
    pub memtable_factory: MemTableFactory,
    /// Huge pages for memtable arenas (RocksDB's `memtable_huge_page_size`;
    /// 0 = none). Nonzero: where an eighth of `write_buffer_size` holds a
    /// 2 MiB page (write buffers of 16 MiB and more), the arena's blocks
    /// are 2 MiB transparent huge pages (Linux; elsewhere, or if the
    /// kernel refuses, ordinary memory). RocksDB takes explicitly reserved
    /// hugetlbfs pages and defaults to 0; Strata's default is 2 MiB: random
    /// inserts then skip most TLB misses (fillrandom about 10% faster
    /// here), at the price of the first write into each 2 MiB block
    /// faulting the whole page in (tens of microseconds, once per about
    /// fifteen thousand 100-byte entries).
    pub memtable_huge_page_size: usize,
    pub compression: CompressionType,
    /// Codec by level (RocksDB's `compression_per_level`): empty means
    /// `compression` everywhere. Otherwise flushes take entry 0 (leveled
    /// and FIFO; universal flushes use `compression`, as RocksDB's) and a
    /// compaction into level L > 0 takes entry `L - base_level + 1`,
    /// clamped to the last entry (RocksDB's `GetCompressionType`).
    pub compression_per_level: Vec<CompressionType>,
    /// Codec of compaction outputs at the bottom of the tree (RocksDB's
    /// `bottommost_compression`; `None` is RocksDB's
    /// kDisableCompressionOption: the level's codec). An output is at the
    /// bottom when no level below its own holds data.
    pub bottommost_compression: Option<CompressionType>,
    /// Codec level and compression dictionary (RocksDB's
    /// `compression_opts`): with `max_dict_bytes > 0` every table builds a
    /// dictionary from its own data blocks and compresses them against it
    /// (ZSTD, LZ4 and Zlib use it).
    pub compression_opts: crate::table::CompressionOptions,
    /// `compression_opts` for outputs at the bottom, when its `enabled`
    /// is set (RocksDB's `bottommost_compression_opts`).
    pub bottommost_compression_opts: crate::table::CompressionOptions,
    pub block_size: usize,
    pub block_restart_interval: usize,
    pub bloom_bits_per_key: Option<f64>,
    /// Bloom or Ribbon filters, sized by `bloom_bits_per_key` (RocksDB's
    /// `filter_policy`).
    pub filter_policy: crate::table::options::FilterPolicy,
    /// Put whole user keys into the filter (with a prefix extractor, off
    /// leaves only prefixes in it).
    pub whole_key_filtering: bool,
    /// Index and filter blocks are `block_cache` entries, read when a
    /// table opens, evicted like data blocks and read again when needed
    /// (RocksDB's `cache_index_and_filter_blocks`); off, each open reader
    /// holds its own.
    pub cache_index_and_filter_blocks: bool,
    /// With `cache_index_and_filter_blocks`, readers of level-0 files hold
    /// their index and filter (RocksDB's
    /// `pin_l0_filter_and_index_blocks_in_cache`; decided when the reader
    /// opens, as in RocksDB).
    pub pin_l0_filter_and_index_blocks_in_cache: bool,
    /// With `cache_index_and_filter_blocks`, readers hold the top levels of
    /// partitioned indexes and filters (RocksDB's
    /// `pin_top_level_index_and_filter`, default true).
    pub pin_top_level_index_and_filter: bool,
    /// Table format_version of new files: 5 (default; RocksDB 6.6 and
    /// later read it, 7.8.3's default) or 6 (RocksDB 8.6 and later only;
    /// the default of RocksDB 9 and 10: block checksums bound to their
    /// file offset, a checksummed footer). 2 to 4 write older filter-less
    /// forms.
    pub format_version: u32,
    /// Block checksum of new files.
    pub checksum: ChecksumType,
    /// Compress index blocks with `compression` (RocksDB's
    /// `enable_index_compression`, on by default).
    pub enable_index_compression: bool,
    /// Entries between restart points in index blocks (RocksDB's
    /// `index_block_restart_interval`, default 1).
    pub index_block_restart_interval: usize,
    /// How index keys are shortened (RocksDB's `index_shortening`).
    pub index_shortening: crate::table::options::IndexShorteningMode,
    /// Index form: one block, one block with key prefixes for prefix
    /// seeks (needs `prefix_extractor`), or partitions paged through the
    /// block cache (RocksDB's `index_type`).
    pub index_type: crate::table::options::IndexType,
    /// Data blocks searched by binary search alone, or with a hash index
    /// of their user keys for point lookups (RocksDB's
    /// `data_block_index_type`).
    pub data_block_index_type: crate::table::options::DataBlockIndexType,
    /// Keys per bucket of data block hash indexes (RocksDB's
    /// `data_block_hash_table_util_ratio`, default 0.75).
    pub data_block_hash_table_util_ratio: f64,
    /// Partition the filter as well (needs the two-level index; RocksDB's
    /// `partition_filters`).
    pub partition_filters: bool,
    /// Target size of index and filter partitions (RocksDB's
    /// `metadata_block_size`).
    pub metadata_block_size: usize,
    /// The table format flushes and compactions write.
    pub table_factory: TableFactory,
    /// Cache-line locality of PlainTable bloom filters (RocksDB's
    /// `bloom_locality`: 0 spreads probes over the filter, 1 keeps them
    /// in one cache line).
    pub bloom_locality: u32,
    pub num_levels: usize,
    /// Block cache for this column family's tables; `None` gets the DB's
    /// default 8 MiB cache. Pass one `Arc` to several DBs to share it.
    pub block_cache: Option<Arc<dyn BlockCacheApi>>,
    pub compaction_style: CompactionStyle,
    /// No automatic compactions (manual ones still run).
    pub disable_auto_compactions: bool,
    /// L0 files that make L0 due for compaction.
    pub level0_file_num_compaction_trigger: usize,
    /// L0 files at which writes start to slow down.
    pub level0_slowdown_writes_trigger: usize,
    /// L0 files at which writes stop until compaction catches up.
    pub level0_stop_writes_trigger: usize,
    /// Target size of a table file written by compaction at level 1.
    pub target_file_size_base: u64,
    /// Each level's target file size is this times the level above's.
    pub target_file_size_multiplier: u64,
    /// Target size of the base level (level 1 unless dynamic).
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: f64,
    /// Size levels from the last one up, so the last level holds ~90% of
    /// the data (RocksDB's `level_compaction_dynamic_level_bytes`; on by
    /// default here, as in RocksDB 8.4 and later).
    pub level_compaction_dynamic_level_bytes: bool,
    /// Upper bound of one compaction's input bytes (0 = 25 x
    /// `target_file_size_base`).
    pub max_compaction_bytes: u64,
    /// Estimated compaction debt at which writes slow down (0 = never).
    pub soft_pending_compaction_bytes_limit: u64,
    /// Estimated compaction debt at which writes stop (0 = never).
    pub hard_pending_compaction_bytes_limit: u64,
    /// Run on the values compactions rewrite.
    pub compaction_filter: Option<CompactionFilterRef>,
    /// Makes a filter per compaction when `compaction_filter` is unset.
    pub compaction_filter_factory: Option<crate::compaction_filter::CompactionFilterFactoryRef>,
    pub universal: UniversalCompactionOptions,
    pub fifo: FifoCompactionOptions,
    /// RocksDB's `ttl`, in seconds (0 = off; [`DEFAULT_COMPACTION_SECONDS`]
    /// = RocksDB's default, resolved by [`ColumnFamilyOptions::sanitized`]:
    /// 30 days for leveled and universal compaction of block-based tables,
    /// else off). Leveled: a file whose data is older (its
    /// `oldest_ancester_time`) moves one level down, until the last
    /// non-empty level. Universal: as `periodic_compaction_seconds`. FIFO:
    /// files older than this are deleted (as `fifo.ttl_seconds`).
    pub ttl: u64,
    /// No filters in tables written at the bottom of the tree (RocksDB's
    /// `optimize_filters_for_hits`): for workloads whose reads mostly
    /// find their key, the last level's filters (most of the filter
    /// memory) save nothing.
    pub optimize_filters_for_hits: bool,
    /// Size bloom filters by sorted run (Monkey, Dayan et al., SIGMOD
    /// 2017; not in RocksDB; opt-in): for the same filter memory as
    /// `bloom_bits_per_key` everywhere, the fewest false positives over a
    /// lookup that probes every run come from false-positive rates
    /// proportional to the runs' sizes, so a table gets
    /// `bloom_bits_per_key + (H - ln n) / ln(2)^2` bits per key, where `n`
    /// is the size of the run it is written into (a level, or one level-0
    /// file) and `H` the size-weighted mean of `ln` of every run's size
    /// when it is written: the largest run gets a little less than the
    /// uniform figure, the small upper ones much more (clamped to
    /// [1, 4 x `bloom_bits_per_key`]). Sizes are the tree's file bytes at
    /// the time (a flush counts as a run of its memtables' bytes, which
    /// are uncompressed and larger than the file it writes, so a flushed
    /// table gets somewhat fewer bits than its file's size would give).
    pub level_scaled_filters: bool,
    /// RocksDB's `periodic_compaction_seconds` (0 = off;
    /// [`DEFAULT_COMPACTION_SECONDS`] = RocksDB's default: 30 days when a
    /// compaction filter is set on block-based tables, else off). A file
    /// written longer ago is rewritten (leveled: in place; universal: a
    /// full compaction), so compaction filters and deletions reach data
    /// no other compaction touches.
    pub periodic_compaction_seconds: u64,
}

/// The value of `ttl` and `periodic_compaction_seconds` that means "RocksDB's
/// default" (RocksDB's `kDefaultTtl` / `kDefaultPeriodicCompSecs`).
pub const DEFAULT_COMPACTION_SECONDS: u64 = 0xffff_ffff_ffff_fffe;

/// What RocksDB's defaults of `ttl` and `periodic_compaction_seconds`
/// become when they apply: 30 days.
const ADJUSTED_COMPACTION_SECONDS: u64 = 30 * 24 * 60 * 60;

impl Default for ColumnFamilyOptions {
    fn default() -> Self {
        ColumnFamilyOptions {
            comparator: bytewise(),
            merge_operator: None,
            prefix_extractor: None,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            compression: CompressionType::Snappy,
            compression_per_level: Vec::new(),
            bottommost_compression: None,
            compression_opts: Default::default(),
            bottommost_compression_opts: Default::default(),
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: Some(10.0),
            filter_policy: Default::default(),
            cache_index_and_filter_blocks: false,
            pin_l0_filter_and_index_blocks_in_cache: false,
            pin_top_level_index_and_filter: true,
            whole_key_filtering: true,
            format_version: 5,
            checksum: ChecksumType::Crc32c,
            enable_index_compression: true,
            index_block_restart_interval: 1,
            index_shortening: crate::table::options::IndexShorteningMode::ShortenSeparators,
            index_type: crate::table::options::IndexType::BinarySearch,
            data_block_index_type: Default::default(),
            data_block_hash_table_util_ratio: 0.75,
            partition_filters: false,
            metadata_block_size: 4096,
            table_factory: TableFactory::BlockBased,
            bloom_locality: 0,
            memtable_prefix_bloom_size_ratio: 0.02,
            memtable_whole_key_filtering: true,
            inplace_update_support: false,
            inplace_update_num_locks: 10_000,
            memtable_factory: MemTableFactory::SkipList,
            memtable_huge_page_size: crate::memtable::arena::HUGE_BLOCK_SIZE,
            num_levels: 7,
            block_cache: None,
            compaction_style: CompactionStyle::Level,
            disable_auto_compactions: false,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            target_file_size_base: 64 << 20,
            target_file_size_multiplier: 1,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            level_compaction_dynamic_level_bytes: true,
            max_compaction_bytes: 0,
            soft_pending_compaction_bytes_limit: 64 << 30,
            hard_pending_compaction_bytes_limit: 256 << 30,
            compaction_filter: None,
            compaction_filter_factory: None,
            universal: UniversalCompactionOptions::default(),
            fifo: FifoCompactionOptions::default(),
            ttl: DEFAULT_COMPACTION_SECONDS,
            periodic_compaction_seconds: DEFAULT_COMPACTION_SECONDS,
            optimize_filters_for_hits: false,
            level_scaled_filters: false,
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
            .field("compaction_style", &self.compaction_style)
            .finish()
    }
}

impl ColumnFamilyOptions {
    /// A compaction filter or a factory of them is set.
    pub fn has_compaction_filter(&self) -> bool {
        self.compaction_filter.is_some() || self.compaction_filter_factory.is_some()
    }

    /// `max_compaction_bytes`, with 0 meaning RocksDB's default of 25 x
    /// `target_file_size_base`.
    pub fn effective_max_compaction_bytes(&self) -> u64 {
        if self.max_compaction_bytes == 0 {
            self.target_file_size_base.saturating_mul(25)
        } else {
            self.max_compaction_bytes
        }
    }

    /// These options adjusted as RocksDB's `SanitizeOptions` adjusts
    /// them: FIFO keeps a single level and never stalls writes on L0
    /// files; the L0 triggers are put in order (compaction <= slowdown <=
    /// stop); a zero compaction trigger becomes 1.
    pub fn sanitized(&self) -> ColumnFamilyOptions {
        let mut o = self.clone();
        if o.compaction_style == CompactionStyle::Fifo {
            o.num_levels = 1;
            o.level0_slowdown_writes_trigger = i32::MAX as usize;
            o.level0_stop_writes_trigger = i32::MAX as usize;
        }
        o.level0_file_num_compaction_trigger = o.level0_file_num_compaction_trigger.max(1);
        o.level0_slowdown_writes_trigger = o
            .level0_slowdown_writes_trigger
            .max(o.level0_file_num_compaction_trigger);
        o.level0_stop_writes_trigger = o
            .level0_stop_writes_trigger
            .max(o.level0_slowdown_writes_trigger);
        o.resolve_compaction_ages();
        o
    }

    /// RocksDB's `SanitizeOptions` for `ttl` and
    /// `periodic_compaction_seconds` (7.8.3's rules), with FIFO's older
    /// `fifo.ttl_seconds` (RocksDB's former `CompactionOptionsFIFO::ttl`)
    /// taken as `ttl`. Afterwards neither holds the default marker, and
    /// under FIFO `fifo.ttl_seconds` equals `ttl`.
    fn resolve_compaction_ages(&mut self) {
        let block_based = matches!(self.table_factory, TableFactory::BlockBased);
        let fifo = self.compaction_style == CompactionStyle::Fifo;
        if fifo && self.fifo.ttl_seconds > 0 {
            self.ttl = match self.ttl {
                0 | DEFAULT_COMPACTION_SECONDS => self.fifo.ttl_seconds,
                t => t.min(self.fifo.ttl_seconds),
            };
        }
        if self.ttl == DEFAULT_COMPACTION_SECONDS {
            self.ttl = if block_based && !fifo {
                ADJUSTED_COMPACTION_SECONDS
            } else {
                0
            };
        }
        if !fifo {
            if self.has_compaction_filter()
                && self.periodic_compaction_seconds == DEFAULT_COMPACTION_SECONDS
                && block_based
            {
                self.periodic_compaction_seconds = ADJUSTED_COMPACTION_SECONDS;
            }
        } else if self.ttl == 0 {
            if block_based {
                if self.periodic_compaction_seconds == DEFAULT_COMPACTION_SECONDS {
                    self.periodic_compaction_seconds = ADJUSTED_COMPACTION_SECONDS;
                }
                self.ttl = self.periodic_compaction_seconds;
            }
        } else if self.periodic_compaction_seconds != 0 {
            self.ttl = self.ttl.min(self.periodic_compaction_seconds);
        }
        // Universal: ttl runs the periodic compaction code path.
        if self.compaction_style == CompactionStyle::Universal && self.ttl != 0 {
            self.periodic_compaction_seconds = match self.periodic_compaction_seconds {
                0 => self.ttl,
                p => p.min(self.ttl),
            };
        }
        if self.periodic_compaction_seconds == DEFAULT_COMPACTION_SECONDS {
            self.periodic_compaction_seconds = 0;
        }
        if fifo {
            self.fifo.ttl_seconds = self.ttl;
        }
    }

    /// [`ColumnFamilyOptions::sanitized`] for a database with `db`'s
    /// options: universal compaction under `allow_ingest_behind` needs a
    /// level above the reserved last one (RocksDB raises num_levels to 3).
    pub fn sanitized_for(&self, db: &Options) -> ColumnFamilyOptions {
        let mut o = self.sanitized();
        if db.allow_ingest_behind && o.compaction_style == CompactionStyle::Universal {
            o.num_levels = o.num_levels.max(3);
        }
        if db.db_paths.len() > 1 {
            // RocksDB's SanitizeOptions: levels sized from the bottom up
            // and several table paths do not work together.
            o.level_compaction_dynamic_level_bytes = false;
        }
        o
    }

    /// The target size of a compaction output file at `level`.
    pub fn target_file_size(&self, level: usize) -> u64 {
        let mut size = self.target_file_size_base;
        for _ in 1..level.max(1) {
            size = size.saturating_mul(self.target_file_size_multiplier.max(1));
        }
        size.max(1)
    }

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
        if self.block_restart_interval == 0 || self.index_block_restart_interval == 0 {
            return bad(
                "block_restart_interval and index_block_restart_interval must be at least 1".into(),
            );
        }
        if !(0.0..=1.0).contains(&self.memtable_prefix_bloom_size_ratio) {
            return bad(format!(
                "memtable_prefix_bloom_size_ratio {} must be between 0 and 1",
                self.memtable_prefix_bloom_size_ratio
            ));
        }
        if let TableFactory::Plain(p) = &self.table_factory {
            if !(p.hash_table_ratio.is_finite() && p.hash_table_ratio >= 0.0) {
                return bad(format!(
                    "PlainTable hash_table_ratio {} must be a number >= 0",
                    p.hash_table_ratio
                ));
            }
            if p.bloom_bits_per_key < 0 {
                return bad(format!(
                    "PlainTable bloom_bits_per_key {} must be >= 0",
                    p.bloom_bits_per_key
                ));
            }
            if p.store_index_in_file && p.hash_table_ratio <= 0.0 && self.prefix_extractor.is_some()
            {
                return bad(
                    "PlainTable store_index_in_file needs hash_table_ratio > 0 with a prefix \
                     extractor"
                        .into(),
                );
            }
        }
        if let TableFactory::Cuckoo(c) = &self.table_factory {
            if let Err(m) = c.validate() {
                return bad(m);
            }
        }
        if !matches!(self.table_factory, TableFactory::BlockBased) {
            let set = |v: u64| v > 0 && v != DEFAULT_COMPACTION_SECONDS;
            if set(self.ttl) {
                return Err(crate::error::Error::NotSupported(format!(
                    "column family {cf_name}: TTL is only supported in Block-Based Table format"
                )));
            }
            if set(self.periodic_compaction_seconds) {
                return Err(crate::error::Error::NotSupported(format!(
                    "column family {cf_name}: Periodic Compaction is only supported in \
                     Block-Based Table format"
                )));
            }
        }
        if self.num_levels == 0 || self.num_levels > 64 {
            return bad(format!(
                "num_levels {} out of range 1..=64",
                self.num_levels
            ));
        }
        if let Some(c) = self
            .compression_per_level
            .iter()
            .find(|c| !c.can_compress())
        {
            return bad(format!(
                "compression_per_level: {} is supported for reading only",
                c.name()
            ));
        }
        if !self.compression.can_compress() {
            return bad(format!(
                "compression {} is supported for reading only",
                self.compression.name()
            ));
        }
        if let Some(c) = self.bottommost_compression.filter(|c| !c.can_compress()) {
            return bad(format!(
                "bottommost_compression {} is supported for reading only",
                c.name()
            ));
        }
        // RocksDB's CheckCompressionSupported.
        if self.compression_opts.zstd_max_train_bytes > 0
            && self.compression_opts.max_dict_bytes == 0
        {
            return bad(
                "The dictionary size limit (`CompressionOptions::max_dict_bytes`) should \
                 be nonzero if we're using zstd's dictionary generator."
                    .into(),
            );
        }
        if self.level0_file_num_compaction_trigger == 0 {
            return bad("level0_file_num_compaction_trigger must be at least 1".into());
        }
        if self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger {
            return bad(format!(
                "level0_stop_writes_trigger ({}) must be at least level0_slowdown_writes_trigger ({})",
                self.level0_stop_writes_trigger, self.level0_slowdown_writes_trigger
            ));
        }
        if self.target_file_size_base == 0 || self.max_bytes_for_level_base == 0 {
            return bad(
                "target_file_size_base and max_bytes_for_level_base must be positive".into(),
            );
        }
        // RocksDB takes any positive multiplier (1 keeps every level the
        // size of the base, as ldb's reduce_levels opens with).
        if !(self.max_bytes_for_level_multiplier.is_finite()
            && self.max_bytes_for_level_multiplier > 0.0)
        {
            return bad(format!(
                "max_bytes_for_level_multiplier {} must be positive",
                self.max_bytes_for_level_multiplier
            ));
        }
        if self.universal.min_merge_width < 2
            || self.universal.max_merge_width < self.universal.min_merge_width
        {
            return bad(format!(
                "universal compaction needs 2 <= min_merge_width ({}) <= max_merge_width ({})",
                self.universal.min_merge_width, self.universal.max_merge_width
            ));
        }
        if self.compaction_style == CompactionStyle::Fifo && self.num_levels != 1 {
            return bad(format!(
                "FIFO compaction needs num_levels = 1 (got {})",
                self.num_levels
            ));
        }
        // RocksDB's BlockBasedTableFactory::ValidateOptions.
        if self.index_type == crate::table::options::IndexType::HashSearch
            && self.prefix_extractor.is_none()
            && matches!(self.table_factory, TableFactory::BlockBased)
        {
            return bad(
                "Hash index is specified for block-based table, but prefix_extractor is not \
                 given"
                    .into(),
            );
        }
        if let Some(b) = self.bloom_bits_per_key {
            if !b.is_finite() || b < 0.0 {
                return bad(format!("bloom_bits_per_key {b} is not a valid number"));
            }
        }
        let max = crate::table::footer::MAX_FORMAT_VERSION;
        if !(2..=max).contains(&self.format_version) {
            return Err(crate::error::Error::NotSupported(format!(
                "column family {cf_name}: table format_version {} (Strata writes 2 to {max})",
                self.format_version
            )));
        }
        Ok(())
    }

    /// RocksDB's `OptimizeLevelStyleCompaction(memtable_memory_budget)`, the
    /// shape part: memtables of a quarter of the budget (up to 6), L0
    /// compacted at 2 files, table files of an eighth, a base level as
    /// large as the budget, leveled compaction. Budgets under 1 MiB count as
    /// 1 MiB.
    pub fn optimize_level_style_compaction(&mut self, memtable_memory_budget: u64) {
        let budget = memtable_memory_budget.max(1 << 20);
        self.write_buffer_size = (budget / 4) as usize;
        self.max_write_buffer_number = 6;
        self.level0_file_num_compaction_trigger = 2;
        self.target_file_size_base = budget / 8;
        self.max_bytes_for_level_base = budget;
        self.compaction_style = CompactionStyle::Level;
    }

    /// RocksDB's `OptimizeForPointLookup(block_cache_size_mb)`: a block
    /// cache of that size, a 10-bit Bloom filter, data block hash indexes
    /// (0.75 keys per bucket) and a memtable bloom of whole keys (2% of
    /// the write buffer).
    pub fn optimize_for_point_lookup(&mut self, block_cache_size_mb: u64) {
        self.block_cache = Some(crate::cache::BlockCache::new(
            block_cache_size_mb.saturating_mul(1 << 20),
        ));
        self.bloom_bits_per_key = Some(10.0);
        self.filter_policy = crate::table::options::FilterPolicy::Bloom;
        self.data_block_index_type = crate::table::options::DataBlockIndexType::BinaryAndHash;
        self.data_block_hash_table_util_ratio = 0.75;
        self.memtable_prefix_bloom_size_ratio = 0.02;
        self.memtable_whole_key_filtering = true;
    }

    /// Levels below `level` uncompressed, the rest with `compression`, as
    /// `compression_per_level` (db_bench's `--min_level_to_compress`, the C
    /// API's `rocksdb_options_set_min_level_to_compress`); uses the
    /// current `num_levels` and `compression`.
    pub fn set_min_level_to_compress(&mut self, level: usize) {
        let c = self.compression;
        self.compression_per_level = (0..self.num_levels)
            .map(|l| if l < level { CompressionType::None } else { c })
            .collect();
    }

    /// The codec of a flush's table.
    pub fn compression_for_flush(&self) -> CompressionType {
        match (self.compaction_style, self.compression_per_level.first()) {
            (CompactionStyle::Universal, _) | (_, None) => self.compression,
            (_, Some(&c)) => c,
        }
    }

    /// Bytes of each memtable's bloom filter (RocksDB's sanitizing caps
    /// the ratio at 0.25); 0 without one.
    pub fn memtable_bloom_bytes(&self) -> usize {
        let ratio = self.memtable_prefix_bloom_size_ratio.clamp(0.0, 0.25);
        if ratio <= 0.0 || (self.prefix_extractor.is_none() && !self.memtable_whole_key_filtering) {
            return 0;
        }
        (self.write_buffer_size as f64 * ratio) as usize
    }

    /// Bloom bits per key of a table written into a sorted run of
    /// `run_bytes` in a tree whose runs will be `runs` (bytes each, the
    /// output's included), `bottommost` when no data lies below it:
    /// `bloom_bits_per_key`, none at the bottom under
    /// `optimize_filters_for_hits`, sized by run under
    /// `level_scaled_filters`.
    pub fn bloom_bits_for_output(
        &self,
        run_bytes: u64,
        runs: &[u64],
        bottommost: bool,
    ) -> Option<f64> {
        let bits = self.bloom_bits_per_key?;
        if self.optimize_filters_for_hits && bottommost {
            return None;
        }
        if !self.level_scaled_filters {
            return Some(bits);
        }
        let total: f64 = runs.iter().map(|&n| n as f64).sum();
        if total <= 0.0 || run_bytes == 0 {
            return Some(bits);
        }
        // Size-weighted mean of ln(run size).
        let h: f64 = runs
            .iter()
            .filter(|&&n| n > 0)
            .map(|&n| n as f64 / total * (n as f64).ln())
            .sum();
        let c = std::f64::consts::LN_2.powi(2);
        let b = bits + (h - (run_bytes as f64).ln()) / c;
        Some(b.clamp(1.0, bits.max(1.0) * 4.0))
    }

    /// The codec and its options for a compaction's output into `level`
    /// (RocksDB's `GetCompressionType` and `GetCompressionOptions`):
    /// `bottommost` when no level below `level` holds data; `base_level`
    /// (asked only with `compression_per_level`) is the level L0 compacts
    /// into (1 for universal compaction).
    pub fn compression_for_output(
        &self,
        level: usize,
        bottommost: bool,
        base_level: impl FnOnce() -> usize,
    ) -> (CompressionType, crate::table::CompressionOptions) {
        let codec = match self.bottommost_compression {
            Some(c) if bottommost => c,
            _ if self.compression_per_level.is_empty() => self.compression,
            _ => self.compression_for_level(level, base_level()),
        };
        let opts = if bottommost && self.bottommost_compression_opts.enabled {
            self.bottommost_compression_opts
        } else {
            self.compression_opts
        };
        (codec, opts)
    }

    /// Whether choosing an output's compression needs to know if it is at
    /// the bottom of the tree.
    pub fn compression_depends_on_bottommost(&self) -> bool {
        self.bottommost_compression.is_some() || self.bottommost_compression_opts.enabled
    }

    /// The codec and options of a file `SstFileWriter` writes (RocksDB's:
    /// the bottommost codec if set, with its options when enabled; else
    /// the last level's codec, else `compression`).
    pub fn compression_for_sst_file_writer(
        &self,
    ) -> (CompressionType, crate::table::CompressionOptions) {
        match (
            self.bottommost_compression,
            self.compression_per_level.last(),
        ) {
            (Some(c), _) => (
                c,
                if self.bottommost_compression_opts.enabled {
                    self.bottommost_compression_opts
                } else {
                    self.compression_opts
                },
            ),
            (None, Some(&c)) => (c, self.compression_opts),
            (None, None) => (self.compression, self.compression_opts),
        }
    }

    /// The table options of a file `SstFileWriter` writes with these
    /// settings (no column family; the codec as RocksDB's SstFileWriter
    /// picks it).
    pub fn sst_file_writer_table_options(&self) -> TableOptions {
        let mut t = self.table_options(0, "");
        (t.compression, t.compression_opts) = self.compression_for_sst_file_writer();
        t
    }

    /// The codec of a compaction's output into `level`, with `base_level`
    /// the level L0 compacts into (1 for universal compaction).
    pub fn compression_for_level(&self, level: usize, base_level: usize) -> CompressionType {
        let n = self.compression_per_level.len();
        if n == 0 {
            return self.compression;
        }
        let idx = if level == 0 {
            0
        } else {
            (level + 1).saturating_sub(base_level)
        };
        self.compression_per_level[idx.min(n - 1)]
    }

    /// The table options these settings imply for column family `id`/`name`.
    pub fn table_options(&self, id: u32, name: &str) -> TableOptions {
        TableOptions {
            block_size: self.block_size,
            block_restart_interval: self.block_restart_interval,
            compression: self.compression,
            compression_opts: self.compression_opts,
            bloom_bits_per_key: self.bloom_bits_per_key,
            filter_policy: self.filter_policy,
            whole_key_filtering: self.whole_key_filtering,
            cache_index_and_filter_blocks: self.cache_index_and_filter_blocks,
            pin_index_and_filter: false,
            pin_l0_filter_and_index_blocks_in_cache: self.pin_l0_filter_and_index_blocks_in_cache,
            pin_top_level_index_and_filter: self.pin_top_level_index_and_filter,
            format_version: self.format_version,
            checksum: self.checksum,
            enable_index_compression: self.enable_index_compression,
            index_block_restart_interval: self.index_block_restart_interval,
            index_shortening: self.index_shortening,
            index_type: self.index_type,
            data_block_index_type: self.data_block_index_type,
            data_block_hash_table_util_ratio: self.data_block_hash_table_util_ratio,
            partition_filters: self.partition_filters,
            metadata_block_size: self.metadata_block_size,
            prefix_extractor: self.prefix_extractor.clone(),
            comparator: self.comparator.clone(),
            column_family_id: u64::from(id),
            column_family_name: name.to_string(),
            merge_operator_name: self.merge_operator.as_ref().map(|m| m.name().to_string()),
            block_cache: self.block_cache.clone(),
            plain: match &self.table_factory {
                TableFactory::BlockBased | TableFactory::Cuckoo(_) => None,
                TableFactory::Plain(p) => Some(p.clone()),
            },
            cuckoo: match &self.table_factory {
                TableFactory::Cuckoo(c) => Some(c.clone()),
                _ => None,
            },
            bloom_locality: self.bloom_locality,
            ..TableOptions::default()
        }
    }
}

/// A directory for table files and how many bytes of them it should hold
/// (RocksDB's `DbPath`; see [`Options::db_paths`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbPath {
    pub path: PathBuf,
    pub target_size: u64,
}

impl DbPath {
    pub fn new(path: impl Into<PathBuf>, target_size: u64) -> Self {
        DbPath {
            path: path.into(),
            target_size,
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
    /// Directories for table files with their target sizes (RocksDB's
    /// `db_paths`; at most four). Empty: the DB directory alone. Flushes
    /// write to the first; a leveled compaction's output goes to the first
    /// path whose remaining target holds its level (levels sized from
    /// `max_bytes_for_level_base` down), a universal one's to the first
    /// path that holds it and the runs it will be merged with, and the
    /// last path takes what fits nowhere (RocksDB's `GetPathId`). With
    /// more than one path, `level_compaction_dynamic_level_bytes` is
    /// turned off (as RocksDB does), FIFO compaction is refused, and
    /// checkpoints and backups are `NotSupported`. The MANIFEST records
    /// each table's path index, so reopen with the same list.
    pub db_paths: Vec<DbPath>,
    /// Table readers kept open (at least 16 are always allowed).
    pub max_open_files: usize,
    /// MANIFEST size that triggers a rollover to a new MANIFEST.
    pub max_manifest_file_size: u64,
    /// Verify block checksums when reading tables.
    pub paranoid_checks: bool,
    /// Read table files through memory maps (RocksDB's
    /// `allow_mmap_reads`): PlainTable files are then used in place
    /// instead of copied into memory, and block reads copy from the map
    /// instead of calling `pread`.
    pub allow_mmap_reads: bool,
    /// Read table files bypassing the OS page cache (RocksDB's
    /// `use_direct_reads`; `O_DIRECT`): user reads and compaction inputs
    /// go through the block cache only. Opening a table fails with
    /// `NotSupported` where the file system refuses it (tmpfs).
    pub use_direct_reads: bool,
    /// Write flush and compaction outputs bypassing the OS page cache
    /// (RocksDB's `use_direct_io_for_flush_and_compaction`).
    pub use_direct_io_for_flush_and_compaction: bool,
    /// Write table files (flush and compaction outputs) by copying into
    /// shared memory maps of regions reserved with `posix_fallocate`
    /// instead of `write()` calls (RocksDB's `allow_mmap_writes`; as in
    /// RocksDB, the WAL and the MANIFEST are never mapped). 64-bit Linux
    /// only: elsewhere the first flush fails with `NotSupported`.
    pub allow_mmap_writes: bool,
    /// Flush and compaction outputs written with `write()` start their
    /// write-back every this many bytes (RocksDB's `bytes_per_sync`;
    /// `sync_file_range`, no durability promise), so a table's final
    /// `fdatasync` waits for the last stretch only. 0 turns it off.
    /// Default 1 MiB (RocksDB's default is 0; its tuning guide advises
    /// 1 MiB).
    pub bytes_per_sync: u64,
    /// The file system (the real one by default; tests pass in-memory ones).
    pub fs: Option<FileSystemRef>,
    /// Background jobs (flushes plus compactions) this DB runs at once
    /// when it creates its own thread pools; at least one flush and one
    /// compaction (RocksDB's `max_background_jobs`).
    pub max_background_jobs: usize,
    /// Key ranges a large compaction is split into, run in parallel.
    pub max_subcompactions: usize,
    /// One memtable budget for all column families (RocksDB's
    /// `db_write_buffer_size`; 0: none). Ignored when
    /// `write_buffer_manager` is set.
    pub db_write_buffer_size: usize,
    /// A memtable budget shared with other databases (RocksDB's
    /// `write_buffer_manager`).
    pub write_buffer_manager: Option<Arc<crate::memtable::WriteBufferManager>>,
    /// Strata's own: one memory budget, in bytes, for this database. It
    /// becomes a block cache of that capacity, shared by every column
    /// family that sets no cache of its own; the
    /// memtables are charged to it (a write buffer manager of a quarter of
    /// the budget, or `db_write_buffer_size` if smaller, whose writers wait
    /// rather than fail when it is used up), and so are the open table
    /// readers' indexes, filters and dictionaries. Blocks give way to
    /// them; iterators' pinned blocks count in it. With glibc it also caps
    /// the process's malloc arenas at one (`mallopt(M_ARENA_MAX)`, unless
    /// `MALLOC_ARENA_MAX` is set), so that blocks freed by many reader
    /// threads are reused instead of kept per thread (a process-wide
    /// setting, never undone; threads that had an arena before keep it).
    /// Not written to the OPTIONS file (RocksDB has no such option).
    pub memory_budget: Option<u64>,
    /// A cache of point-lookup results per table file (RocksDB's
    /// `row_cache`): a `get` of a key whose row is cached reads neither
    /// the table's filter nor its blocks. The cache may be the block
    /// cache itself (rows and blocks then share its capacity). Unlike
    /// RocksDB's, it works with range deletions (RocksDB refuses
    /// `DeleteRange` when it is set). Not written to the OPTIONS file, as
    /// RocksDB does not.
    pub row_cache: Option<Arc<crate::cache::BlockCache>>,
    /// What tables record as the host that wrote them (RocksDB's
    /// `db_host_id`): [`crate::util::host_name::HOSTNAME_FOR_DB_HOST_ID`]
    /// (the default, `"__hostname__"`) records the machine's host name,
    /// an empty string nothing.
    pub db_host_id: String,
    /// Bytes per second writes may proceed at while compaction is behind
    /// (the starting rate; it adapts to the debt).
    pub delayed_write_rate: u64,
    /// Thread pools and block cache shared with other DBs; `None` makes
    /// ones for this DB.
    pub env: Option<Arc<crate::env::Env>>,
    /// The LOG file rolls past this size (0 = never by size).
    pub max_log_file_size: u64,
    /// The LOG file rolls after this many seconds (0 = never by age).
    pub log_file_time_to_roll: u64,
    /// Old LOG files kept.
    pub keep_log_file_num: usize,
    /// Tickers and histograms (RocksDB's `Options::statistics`); off when
    /// `None`. Share one `Arc` between DBs to pool their counts.
    pub statistics: Option<Arc<crate::util::statistics::Statistics>>,
    /// Writers of a group insert their own batches into the memtables in
    /// parallel (RocksDB's default); false: the group's leader inserts
    /// them all.
    pub allow_concurrent_memtable_write: bool,
    /// Separate WAL and memtable stages: the next group writes its WAL
    /// record while this one inserts (RocksDB's `enable_pipelined_write`).
    pub enable_pipelined_write: bool,
    /// A writer returns once its own batch is in the memtable, without
    /// waiting for earlier groups' inserts (seed 003's `unordered_write`).
    /// Unlike RocksDB, Strata keeps snapshots immutable and never shows
    /// part of a batch; a read that starts just after such an
    /// acknowledgement may wait for earlier inserts still in flight.
    /// Requires `allow_concurrent_memtable_write`; excludes pipelining.
    pub unordered_write: bool,
    /// Two-phase commit: recovery keeps prepared sections found in the
    /// WALs, and WALs holding outstanding prepared sections (or the
    /// sections of committed data not yet flushed) are kept (RocksDB's
    /// `allow_2pc`; `TransactionDB` sets it).
    pub allow_2pc: bool,
    /// Reserves each column family's last level for files ingested with
    /// `IngestExternalFileOptions::ingest_behind` (RocksDB's
    /// `allow_ingest_behind`): compactions keep sequence numbers and
    /// deletions there as if it held older data, and universal
    /// compaction never writes to it (num_levels is raised to 3).
    pub allow_ingest_behind: bool,
    /// Group WAL records stay in the WAL file's buffer until
    /// `DB::flush_wal` (or the buffer fills, or a synced write): a process
    /// crash may lose unflushed writes (RocksDB's `manual_wal_flush`).
    pub manual_wal_flush: bool,
    /// Write the WAL through a shared memory map instead of one `write()`
    /// call per write group (a Strata extension; RocksDB never maps its
    /// WAL). A write is in the page cache, so it survives a process crash,
    /// once its records are copied; `sync` is `fdatasync` (which on Linux
    /// writes back the pages stored through the map).
    /// Used only on file systems that allocate in place (ext2/3/4, xfs,
    /// tmpfs; elsewhere `write()` as before) and not with
    /// `manual_wal_flush`, `allow_2pc` or `AbsoluteConsistency` recovery.
    /// The newest WAL may end in zeros (reserved space) after a crash;
    /// recovery reads them as the end of the log, as RocksDB's reader
    /// does. On by default.
    pub mmap_wal_writes: bool,
    /// WALs no longer needed move to `<wal_dir>/archive/` instead of being
    /// deleted (for `DB::get_updates_since`) while either of these is set;
    /// archived WALs older than this many seconds are deleted (RocksDB's
    /// `WAL_ttl_seconds`; 0: no age limit).
    pub wal_ttl_seconds: u64,
    /// Archived WALs beyond this many MiB in total are deleted, oldest
    /// first (RocksDB's `WAL_size_limit_MB`; 0: no size limit).
    pub wal_size_limit_mb: u64,
    /// Whole-file checksums of every table written, recorded in the
    /// MANIFEST (RocksDB's `file_checksum_gen_factory`; e.g.
    /// `FileChecksumGenCrc32cFactory`). `None`: none computed.
    pub file_checksum_gen_factory: Option<crate::util::file_checksum::FileChecksumGenFactoryRef>,
    /// Options of the default column family.
    pub cf: ColumnFamilyOptions,
}

impl Options {
    /// How flush and compaction outputs are written
    /// (`use_direct_io_for_flush_and_compaction`, `allow_mmap_writes`;
    /// `validate` refuses both at once).
    pub fn table_write_mode(&self) -> crate::fs::TableWriteMode {
        if self.use_direct_io_for_flush_and_compaction {
            crate::fs::TableWriteMode::Direct
        } else if self.allow_mmap_writes {
            crate::fs::TableWriteMode::Mmap
        } else {
            crate::fs::TableWriteMode::Buffered
        }
    }

    /// Refuses DB-wide settings the engine cannot honour.
    /// Whether WALs are written through memory maps (see
    /// [`Options::mmap_wal_writes`]; the file system decides last).
    pub fn maps_wal(&self) -> bool {
        self.mmap_wal_writes
            && !self.manual_wal_flush
            && !self.allow_2pc
            && self.wal_recovery_mode != WalRecoveryMode::AbsoluteConsistency
    }

    pub fn validate(&self) -> crate::error::Result<()> {
        if self.max_subcompactions == 0 || self.max_background_jobs == 0 {
            return Err(crate::error::Error::InvalidArgument(
                "max_subcompactions and max_background_jobs must be at least 1".into(),
            ));
        }
        if self.delayed_write_rate == 0 {
            return Err(crate::error::Error::InvalidArgument(
                "delayed_write_rate must be positive".into(),
            ));
        }
        if self.unordered_write && !self.allow_concurrent_memtable_write {
            return Err(crate::error::Error::InvalidArgument(
                "unordered_write is incompatible with !allow_concurrent_memtable_write".into(),
            ));
        }
        if self.unordered_write && self.enable_pipelined_write {
            return Err(crate::error::Error::InvalidArgument(
                "unordered_write is incompatible with enable_pipelined_write".into(),
            ));
        }
        if self.db_paths.len() > 4 {
            // RocksDB's ValidateOptions text.
            return Err(crate::error::Error::NotSupported(
                "More than four DB paths are not supported yet. ".into(),
            ));
        }
        if self.allow_mmap_reads && self.use_direct_reads {
            // RocksDB's SanitizeOptions text.
            return Err(crate::error::Error::NotSupported(
                "If memory mapped reads (allow_mmap_reads) are enabled then direct I/O reads \
                 (use_direct_reads) must be disabled. "
                    .into(),
            ));
        }
        if self.allow_mmap_writes && !cfg!(all(target_os = "linux", target_pointer_width = "64")) {
            return Err(crate::error::Error::NotSupported(
                "memory-mapped writes (allow_mmap_writes) are implemented for 64-bit Linux only"
                    .into(),
            ));
        }
        if self.allow_mmap_writes && self.use_direct_io_for_flush_and_compaction {
            // RocksDB's ValidateOptions text.
            return Err(crate::error::Error::NotSupported(
                "If memory mapped writes (allow_mmap_writes) are enabled then direct I/O \
                 writes (use_direct_io_for_flush_and_compaction) must be disabled. "
                    .into(),
            ));
        }
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
            db_paths: Vec::new(),
            max_open_files: 5000,
            max_manifest_file_size: 1 << 30,
            paranoid_checks: true,
            allow_mmap_reads: false,
            use_direct_reads: false,
            use_direct_io_for_flush_and_compaction: false,
            allow_mmap_writes: false,
            bytes_per_sync: 1 << 20,
            fs: None,
            max_background_jobs: 2,
            max_subcompactions: 1,
            db_write_buffer_size: 0,
            memory_budget: None,
            db_host_id: crate::util::host_name::HOSTNAME_FOR_DB_HOST_ID.to_string(),
            row_cache: None,
            write_buffer_manager: None,
            delayed_write_rate: 16 << 20,
            env: None,
            max_log_file_size: 0,
            log_file_time_to_roll: 0,
            keep_log_file_num: 1000,
            statistics: None,
            allow_concurrent_memtable_write: true,
            enable_pipelined_write: false,
            unordered_write: false,
            allow_2pc: false,
            allow_ingest_behind: false,
            manual_wal_flush: false,
            mmap_wal_writes: true,
            wal_ttl_seconds: 0,
            wal_size_limit_mb: 0,
            file_checksum_gen_factory: None,
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
            .field("db_paths", &self.db_paths)
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
    /// Fail with `Incomplete("Write stall")` instead of waiting when the
    /// write would have to be delayed or stopped (compaction or flush
    /// behind, too many memtables, the write buffer manager's budget
    /// used up). Nothing of a refused write is applied.
    pub no_slowdown: bool,
    /// Records for column families that do not exist (never created, or
    /// dropped) are skipped instead of failing the write. They still take
    /// their sequence numbers, as in RocksDB. As in RocksDB, they stay in
    /// the WAL: one naming the id a column family created later in the
    /// same WAL gets is replayed into it at recovery.
    pub ignore_missing_column_families: bool,
    /// A low-priority write (RocksDB's `low_pri`): while writes are
    /// delayed or stopped (compaction behind), it is paced at 1 MiB/s
    /// (with `no_slowdown`: fails with `Incomplete("Low priority write
    /// stall")`), so background work catches up at its expense rather
    /// than at the expense of normal writes.
    pub low_pri: bool,
}

/// How [`crate::DB::ingest_external_file`] adds files, with RocksDB
/// 7.8.3's `IngestExternalFileOptions` fields and defaults.
#[derive(Clone, Copy, Debug)]
pub struct IngestExternalFileOptions {
    /// Hard-link the files into the database (and remove the original
    /// names on success) instead of copying them.
    pub move_files: bool,
    /// With `move_files`, copy when a link is not possible (another file
    /// system).
    pub failed_move_fall_back_to_copy: bool,
    /// Existing snapshots do not see the ingested keys: with a live
    /// snapshot every file takes a new sequence number.
    pub snapshot_consistency: bool,
    /// Files may take a sequence number above 0 when they overlap
    /// existing data (otherwise such an ingestion fails).
    pub allow_global_seqno: bool,
    /// Flush memtables whose keys overlap the files (otherwise the
    /// ingestion fails with "External file requires flush").
    pub allow_blocking_flush: bool,
    /// Put the files under all existing data: into the last level, at
    /// sequence number 0 (needs `Options::allow_ingest_behind`; the files
    /// must not overlap each other nor the last level's files).
    pub ingest_behind: bool,
    /// Write the assigned sequence number into the ingested file, as
    /// RocksDB 7.8.3 does by default; otherwise it is kept in the MANIFEST
    /// only (files older RocksDB versions cannot read).
    pub write_global_seqno: bool,
    /// Verify every block's checksum before anything is added.
    pub verify_checksums_before_ingest: bool,
    /// Fail with `TryAgain` unless every file goes to the last level.
    pub fail_if_not_bottommost_level: bool,
}

impl Default for IngestExternalFileOptions {
    fn default() -> Self {
        IngestExternalFileOptions {
            move_files: false,
            failed_move_fall_back_to_copy: true,
            snapshot_consistency: true,
            allow_global_seqno: true,
            allow_blocking_flush: true,
            ingest_behind: false,
            write_global_seqno: true,
            verify_checksums_before_ingest: false,
            fail_if_not_bottommost_level: false,
        }
    }
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
    /// Where a read may look (RocksDB's `read_tier`).
    pub read_tier: ReadTier,
}

/// Where a read may look (RocksDB's `ReadTier`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadTier {
    /// Memtables, block cache and files (`kReadAllTier`).
    #[default]
    ReadAll,
    /// No I/O: memtables, open table readers and the block cache only; a
    /// read that would need a file answers `Incomplete`
    /// (`kBlockCacheTier`, for non-blocking reads). Gets and multi-gets.
    BlockCache,
    /// `kPersistedTier`: not supported (`NotSupported`).
    Persisted,
    /// `kMemtableTier`: not supported (`NotSupported`).
    Memtable,
}

impl std::fmt::Debug for ReadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOptions")
            .field("snapshot", &self.snapshot)
            .finish()
    }
}
