//! Options for building and reading block-based tables (RocksDB's
//! `BlockBasedTableOptions` plus the column-family settings tables record).

use std::sync::Arc;

use super::block::Block;
use super::compression::CompressionType;
use crate::util::checksum::ChecksumType;
use crate::util::comparator::{ComparatorRef, bytewise};
use crate::util::slice_transform::SliceTransformRef;

/// A cache of parsed blocks keyed by (table cache id, block offset).
/// Implemented by `crate::cache::BlockCache`; tables only see this trait.
pub trait BlockCacheApi: Send + Sync {
    fn lookup(&self, cache_id: u64, offset: u64) -> Option<Arc<Block>>;
    fn insert(&self, cache_id: u64, offset: u64, block: Arc<Block>);
    /// Bytes the cached blocks take (RocksDB's `GetUsage`).
    fn usage(&self) -> u64;
    /// The configured capacity in bytes.
    fn capacity(&self) -> u64;
    /// Bytes of entries in use outside the cache (RocksDB's
    /// `GetPinnedUsage`).
    fn pinned_usage(&self) -> u64 {
        0
    }
    /// Charges `bytes` of other memory to the cache until the token is
    /// dropped (`None`: this cache takes no charges).
    fn charge(&self, _bytes: u64) -> Option<Box<dyn Send + Sync>> {
        None
    }
}

/// RocksDB's `BlockBasedTableOptions::IndexShorteningMode`: how far index
/// keys between data blocks are shortened (shorter keys, smaller index;
/// longer keys, fewer needless block reads on seeks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexShorteningMode {
    /// The last key of each block as it is.
    NoShortening,
    /// The shortest separator between blocks; the last block's key as is
    /// (RocksDB's default).
    #[default]
    ShortenSeparators,
    /// Separators, and a short successor for the last block (db_bench's
    /// default, mode 2).
    ShortenSeparatorsAndSuccessor,
}

impl IndexShorteningMode {
    /// db_bench's `--index_shortening_mode` number.
    pub fn from_code(c: i64) -> Option<Self> {
        Some(match c {
            0 => IndexShorteningMode::NoShortening,
            1 => IndexShorteningMode::ShortenSeparators,
            2 => IndexShorteningMode::ShortenSeparatorsAndSuccessor,
            _ => return None,
        })
    }

    /// The OPTIONS file's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            IndexShorteningMode::NoShortening => "kNoShortening",
            IndexShorteningMode::ShortenSeparators => "kShortenSeparators",
            IndexShorteningMode::ShortenSeparatorsAndSuccessor => "kShortenSeparatorsAndSuccessor",
        }
    }

    pub fn from_name(n: &str) -> Option<Self> {
        (0..3).filter_map(Self::from_code).find(|m| m.name() == n)
    }
}

/// The index forms (RocksDB's `BlockBasedTableOptions::IndexType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexType {
    /// One index block (`kBinarySearch`, 0).
    #[default]
    BinarySearch,
    /// One index block plus the prefixes of the keys in each data block
    /// (`kHashSearch`, 1: the `rocksdb.hashindex.*` meta blocks), for
    /// prefix seeks; needs a prefix extractor.
    HashSearch,
    /// Index partitions under a top-level index (`kTwoLevelIndexSearch`,
    /// 2): index memory is paged through the block cache.
    TwoLevelIndexSearch,
    /// One index block whose values also hold each data block's first
    /// internal key (`kBinarySearchWithFirstKey`, 3). RocksDB uses the
    /// first keys to defer reading a block an iterator lands on; Strata
    /// writes and reads them, and reads blocks as for `BinarySearch`.
    BinarySearchWithFirstKey,
}

impl IndexType {
    /// RocksDB's number for the type (the `index.type` table property).
    pub fn code(self) -> u32 {
        match self {
            IndexType::BinarySearch => 0,
            IndexType::HashSearch => 1,
            IndexType::TwoLevelIndexSearch => 2,
            IndexType::BinarySearchWithFirstKey => 3,
        }
    }

    /// The OPTIONS file's name.
    pub fn name(self) -> &'static str {
        match self {
            IndexType::BinarySearch => "kBinarySearch",
            IndexType::HashSearch => "kHashSearch",
            IndexType::TwoLevelIndexSearch => "kTwoLevelIndexSearch",
            IndexType::BinarySearchWithFirstKey => "kBinarySearchWithFirstKey",
        }
    }

    pub fn from_name(n: &str) -> Option<Self> {
        [
            IndexType::BinarySearch,
            IndexType::HashSearch,
            IndexType::TwoLevelIndexSearch,
            IndexType::BinarySearchWithFirstKey,
        ]
        .into_iter()
        .find(|t| t.name() == n)
    }

    /// RocksDB's number (`rocksdb_block_based_table_index_type_*`).
    pub fn from_code(c: i64) -> Option<Self> {
        [
            IndexType::BinarySearch,
            IndexType::HashSearch,
            IndexType::TwoLevelIndexSearch,
            IndexType::BinarySearchWithFirstKey,
        ]
        .into_iter()
        .find(|t| i64::from(t.code()) == c)
    }
}

/// How data blocks are searched (RocksDB's `DataBlockIndexType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DataBlockIndexType {
    /// Binary search over restart points (`kDataBlockBinarySearch`).
    #[default]
    BinarySearch,
    /// Also a hash table from user key to restart point at the end of
    /// each data block under 64 KiB (`kDataBlockBinaryAndHash`): point
    /// lookups skip the binary search.
    BinaryAndHash,
}

impl DataBlockIndexType {
    /// The OPTIONS file's name.
    pub fn name(self) -> &'static str {
        match self {
            DataBlockIndexType::BinarySearch => "kDataBlockBinarySearch",
            DataBlockIndexType::BinaryAndHash => "kDataBlockBinaryAndHash",
        }
    }

    pub fn from_name(n: &str) -> Option<Self> {
        [
            DataBlockIndexType::BinarySearch,
            DataBlockIndexType::BinaryAndHash,
        ]
        .into_iter()
        .find(|t| t.name() == n)
    }
}

/// RocksDB's built-in filter policies (`filter_policy`); the filter's
/// accuracy is set by `bloom_bits_per_key` either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FilterPolicy {
    /// FastLocalBloom (legacy Bloom below format_version 5):
    /// `bloomfilter`.
    #[default]
    Bloom,
    /// Standard128 Ribbon (RocksDB's `NewRibbonFilterPolicy(bits,
    /// bloom_before_level)`, `ribbonfilter`): as accurate as a Bloom filter
    /// of the same bits/key in about 30% less space, for more CPU when
    /// building. Files written at levels below `bloom_before_level` get a
    /// FastLocalBloom filter (flushes count as level -1, so 0 keeps
    /// flushes on Bloom; -1 is Ribbon everywhere); files of unknown level
    /// and FIFO compaction's count as the bottom.
    Ribbon { bloom_before_level: i32 },
}

impl FilterPolicy {
    /// The `rocksdb.filter.policy` property and the OPTIONS file's policy
    /// name.
    pub fn name(self) -> &'static str {
        match self {
            FilterPolicy::Bloom => "bloomfilter",
            FilterPolicy::Ribbon { .. } => "ribbonfilter",
        }
    }

    /// The OPTIONS file's `filter_policy` value for `bits` per key.
    pub fn options_string(self, bits: f64) -> String {
        match self {
            FilterPolicy::Bloom => format!("bloomfilter:{bits}:false"),
            FilterPolicy::Ribbon { bloom_before_level } => {
                format!("ribbonfilter:{bits}:{bloom_before_level}")
            }
        }
    }

    /// Whether a file written at `levelish` (RocksDB's: -1 for flushes,
    /// the output level, `i32::MAX` when unknown) gets a Ribbon filter.
    pub fn ribbon_at(self, levelish: i32) -> bool {
        match self {
            FilterPolicy::Bloom => false,
            FilterPolicy::Ribbon { bloom_before_level } => levelish >= bloom_before_level,
        }
    }
}

/// How tables are written and read.
#[derive(Clone)]
pub struct TableOptions {
    /// Target uncompressed size of a data block.
    pub block_size: usize,
    /// Entries between restart points in data blocks.
    pub block_restart_interval: usize,
    /// Entries between restart points in the index block (RocksDB's
    /// `index_block_restart_interval`, default 1).
    pub index_block_restart_interval: usize,
    /// Codec for data blocks.
    pub compression: CompressionType,
    /// Index form (RocksDB's `index_type`: binary search, hash search or
    /// two-level).
    pub index_type: IndexType,
    /// Data block search (RocksDB's `data_block_index_type`).
    pub data_block_index_type: DataBlockIndexType,
    /// Keys per hash bucket of data block hash indexes (RocksDB's
    /// `data_block_hash_table_util_ratio`, default 0.75).
    pub data_block_hash_table_util_ratio: f64,
    /// With a two-level index, partition the filter too (RocksDB's
    /// `partition_filters`; ignored otherwise, as RocksDB sanitizes it).
    pub partition_filters: bool,
    /// Target size of index and filter partitions (RocksDB's
    /// `metadata_block_size`, default 4096).
    pub metadata_block_size: usize,
    /// How index separators are shortened (RocksDB's `index_shortening`).
    pub index_shortening: IndexShorteningMode,
    /// Compress the index block with `compression` too (RocksDB's
    /// `enable_index_compression`, default true).
    pub enable_index_compression: bool,
    /// Codec level and compression dictionary settings (RocksDB's
    /// `compression_opts`, or `bottommost_compression_opts` for outputs at
    /// the bottom).
    pub compression_opts: super::compression_dict::CompressionOptions,
    /// The size at which the writer cuts output files (0: none, as for
    /// flushes); caps the data held back to build a compression
    /// dictionary, as RocksDB's `TableBuilderOptions::target_file_size`.
    pub target_file_size: u64,
    /// Block checksum written into the footer.
    pub checksum: ChecksumType,
    /// Table format_version (1..=6; RocksDB 7.8.3 reads up to 5). It also
    /// picks the index form: user keys from 3, delta-encoded handles from 4.
    pub format_version: u32,
    /// Bits per key of the full bloom filter; `None` writes no filter.
    pub bloom_bits_per_key: Option<f64>,
    /// Bloom or Ribbon filters (RocksDB's `filter_policy`).
    pub filter_policy: FilterPolicy,
    /// Where this table is written, for the filter policy: -1 for a
    /// flush, the output level of a compaction, `i32::MAX` when unknown
    /// (RocksDB's "levelish").
    pub filter_levelish: i32,
    /// Put whole user keys into the filter.
    pub whole_key_filtering: bool,
    /// Keep readers' index and filter blocks in `block_cache` as entries
    /// like data blocks (RocksDB's `cache_index_and_filter_blocks`): read
    /// into the cache when the table opens, evicted under pressure, read
    /// again on the next use. Off (the default), a reader holds them for
    /// as long as it is open. What a reader still holds (the compression
    /// dictionary, pinned blocks) is charged to the cache.
    pub cache_index_and_filter_blocks: bool,
    /// With `cache_index_and_filter_blocks`: the reader holds its index and
    /// filter anyway (set by the table cache for readers of level-0 files
    /// under `pin_l0_filter_and_index_blocks_in_cache`).
    pub pin_index_and_filter: bool,
    /// With `cache_index_and_filter_blocks`: readers of level-0 files hold
    /// their index and filter (RocksDB's
    /// `pin_l0_filter_and_index_blocks_in_cache`; decided when the reader
    /// opens).
    pub pin_l0_filter_and_index_blocks_in_cache: bool,
    /// With `cache_index_and_filter_blocks`: the reader holds the top
    /// levels of a partitioned index and filter, and only partitions are
    /// cache entries (RocksDB's `pin_top_level_index_and_filter`, default
    /// true).
    pub pin_top_level_index_and_filter: bool,
    /// Put prefixes of user keys into the filter.
    pub prefix_extractor: Option<SliceTransformRef>,
    /// User-key order; its name is stored in the properties.
    pub comparator: ComparatorRef,
    /// Verify block checksums on every read.
    pub verify_checksums: bool,
    /// Column family recorded in the properties.
    pub column_family_id: u64,
    pub column_family_name: String,
    /// Merge operator name recorded in the properties (`nullptr` if none).
    pub merge_operator_name: Option<String>,
    /// Cache for data blocks read through this table (none by default).
    pub block_cache: Option<Arc<dyn BlockCacheApi>>,
    /// Block-cache and filter counters go here when set.
    pub statistics: Option<Arc<crate::util::statistics::Statistics>>,
    /// Write PlainTable files with these options instead of block-based
    /// ones (RocksDB's `table_factory = NewPlainTableFactory(..)`). Files
    /// are read by their magic whatever this says; these options also
    /// shape how PlainTable files are read.
    pub plain: Option<super::plain::PlainTableOptions>,
    /// Write CuckooTable files with these options (RocksDB's
    /// `NewCuckooTableFactory(..)`); entries that do not fit the format are
    /// written block-based instead (see `table::cuckoo`). Takes precedence
    /// over `plain`.
    pub cuckoo: Option<super::cuckoo::CuckooTableOptions>,
    /// Open table files through memory maps (`Options::allow_mmap_reads`).
    pub allow_mmap_reads: bool,
    /// Open table files for direct reads (`Options::use_direct_reads`).
    pub use_direct_reads: bool,
    /// Cache-line locality of PlainTable bloom filters (RocksDB's
    /// `bloom_locality`; 0: probes spread over the whole filter).
    pub bloom_locality: u32,
}

impl std::fmt::Debug for TableOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableOptions")
            .field("block_size", &self.block_size)
            .field("block_restart_interval", &self.block_restart_interval)
            .field("compression", &self.compression)
            .field("checksum", &self.checksum)
            .field("format_version", &self.format_version)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("comparator", &self.comparator.name())
            .finish()
    }
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            block_restart_interval: 16,
            index_block_restart_interval: 1,
            compression: CompressionType::Snappy,
            enable_index_compression: true,
            index_shortening: IndexShorteningMode::ShortenSeparators,
            index_type: IndexType::BinarySearch,
            data_block_index_type: DataBlockIndexType::BinarySearch,
            data_block_hash_table_util_ratio: 0.75,
            partition_filters: false,
            metadata_block_size: 4096,
            compression_opts: Default::default(),
            target_file_size: 0,
            checksum: ChecksumType::Crc32c,
            format_version: 5,
            bloom_bits_per_key: Some(10.0),
            filter_policy: FilterPolicy::Bloom,
            filter_levelish: i32::MAX,
            whole_key_filtering: true,
            cache_index_and_filter_blocks: false,
            pin_index_and_filter: false,
            pin_l0_filter_and_index_blocks_in_cache: false,
            pin_top_level_index_and_filter: true,
            prefix_extractor: None,
            comparator: bytewise(),
            verify_checksums: true,
            column_family_id: 0,
            column_family_name: "default".into(),
            merge_operator_name: None,
            block_cache: None,
            statistics: None,
            plain: None,
            cuckoo: None,
            allow_mmap_reads: false,
            use_direct_reads: false,
            bloom_locality: 0,
        }
    }
}
