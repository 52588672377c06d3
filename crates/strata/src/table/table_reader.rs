//! Opens a block-based table and reads it: point lookups through the
//! filter, and a two-level iterator (index block -> data blocks).
//!
//! Indexes are read in every form RocksDB writes: binary search (user or
//! internal keys, plain or delta-encoded handles, with or without each
//! block's first key: `kBinarySearchWithFirstKey`, whose first keys are
//! skipped), hash search (its binary-search index is used; the prefix hash
//! is an optional accelerator), and partitioned (two-level, see
//! `partitioned.rs`), with full or partitioned filters.
//!
//! Invariants: every handle read from the file is bounds-checked against
//! the file size before a read; every block's checksum is verified when
//! `verify_checksums` is set; an unsupported feature is a clear
//! `NotSupported` error at open.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::block::{Block, BlockIter, KeyOrder};
use super::filter::FilterReader;
use super::footer::{
    BLOCK_TRAILER_SIZE, BlockContents, BlockHandle, BlockReadOptions, Footer, read_block,
    read_footer,
};
use super::options::TableOptions;
use super::partitioned::{IndexIter, PartitionSource, PartitionedFilter};
use super::table_properties::{
    COMPRESSION_DICT_BLOCK, FULL_FILTER_BLOCK, INDEX_BLOCK, PARTITIONED_FILTER_BLOCK,
    PROPERTIES_BLOCK, PROPERTIES_BLOCK_OLD, RANGE_DEL_BLOCK, TableProperties,
};
use crate::error::{Error, Result};
use crate::format::dbformat::{InternalKeyComparator, extract_user_key, pack_sequence_and_type};
use crate::format::iterator::InternalIterator;
use crate::format::range_tombstones::FragmentedRangeTombstoneList;
use crate::format::{ValueType, parse_internal_key};
use crate::fs::RandomAccessFile;

static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(1);

/// A table's filter: one full filter (held by the reader, or a
/// block-cache entry), or partitions under a top-level index.
enum TableFilter {
    Full(FilterReader),
    FullCached(BlockHandle),
    Partitioned(PartitionedFilter),
}

/// The index block (a partitioned index's top level): held by the reader,
/// or a block-cache entry read again after eviction
/// (`cache_index_and_filter_blocks`).
enum IndexBlock {
    Held(Arc<Block>),
    Cached(BlockHandle),
}

/// RocksDB's `BlockBasedTableOptions::IndexType` values.
const INDEX_BINARY_SEARCH: u32 = 0;
const INDEX_HASH_SEARCH: u32 = 1;
const INDEX_TWO_LEVEL: u32 = 2;
const INDEX_BINARY_SEARCH_WITH_FIRST_KEY: u32 = 3;

/// An open table.
pub struct BlockBasedTable {
    /// Unique in the process: the block-cache key prefix of this open.
    cache_id: u64,
    block_cache: Option<Arc<dyn super::options::BlockCacheApi>>,
    statistics: Option<Arc<crate::util::statistics::Statistics>>,
    file: Arc<dyn RandomAccessFile>,
    name: Arc<str>,
    file_size: u64,
    footer: Footer,
    read_opts: BlockReadOptions,
    icmp: InternalKeyComparator,
    props: TableProperties,
    meta: BTreeMap<String, BlockHandle>,
    index_block: IndexBlock,
    /// Reads index and filter blocks through the block cache.
    meta_source: Arc<PartitionSource>,
    index_order: KeyOrder,
    index_delta: bool,
    /// Index values carry each block's first key (`kBinarySearchWithFirstKey`).
    index_first_key: bool,
    filter: Option<TableFilter>,
    /// Set for a partitioned (two-level) index: `index_block` is its top
    /// level, partitions come from here.
    partitions: Option<Arc<PartitionSource>>,
    /// The data blocks' compression dictionary (`rocksdb.compression_dict`).
    compression_dict: Option<Arc<[u8]>>,
    whole_key_filtering: bool,
    prefix_filter: Option<crate::util::slice_transform::SliceTransformRef>,
    range_tombstones: Vec<(Vec<u8>, Vec<u8>)>,
    /// `range_tombstones` fragmented, built on first use and shared by
    /// every read and compaction of this table.
    fragmented_range_dels: std::sync::OnceLock<Arc<FragmentedRangeTombstoneList>>,
    /// Sequence number every key reads with (an ingested external file);
    /// `None`: keys carry their own.
    global_seqno: Option<u64>,
    /// File offset of the 8-byte `global_seqno` property value, where
    /// ingestion writes the number (RocksDB's
    /// `external_sst_file_global_seqno_offset`).
    global_seqno_offset: Option<u64>,
}

impl std::fmt::Debug for BlockBasedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockBasedTable")
            .field("name", &self.name)
            .field("file_size", &self.file_size)
            .field("footer", &self.footer)
            .finish()
    }
}

impl BlockBasedTable {
    /// Opens the block-based table in `file` (`file_size` bytes; `name` is
    /// used in errors) whose footer is `footer`; [`super::Table::open`] and
    /// [`super::Table::open_in_db`] read the footer and call this.
    /// `opts.comparator` must match the one the table was written with
    /// (checked by name when the table records one). `largest_seqno` is the
    /// MANIFEST's for the file: an ingested external file takes it as its
    /// global sequence number when its own property says 0 (it was
    /// ingested without writing the number into the file), and a nonzero
    /// property that disagrees is corruption, as RocksDB's
    /// `GetGlobalSequenceNumber` decides. `None`: the sequence is unknown
    /// (a file outside any database; one an `SstFileWriter` made reads
    /// with its recorded global sequence number).
    pub(crate) fn open_with_footer(
        file: Arc<dyn RandomAccessFile>,
        name: &str,
        file_size: u64,
        opts: &TableOptions,
        largest_seqno: Option<u64>,
        mut footer: Footer,
    ) -> Result<BlockBasedTable> {
        if footer.kind != super::footer::TableKind::BlockBased {
            return Err(Error::InvalidArgument(format!(
                "{name}: not a block-based table ({:?})",
                footer.kind
            )));
        }
        // The footer's handles carry no checksum: one that points outside
        // the blocks is damage in the footer, reported there (not at the
        // offset the damaged handle names).
        // The last block before the footer is the metaindex (RocksDB) or
        // the index (LevelDB): if neither handle ends there, the footer is
        // what is damaged.
        let bad_footer = |msg: String| Error::corruption(name, footer.offset, msg);
        for (what, h) in [
            ("metaindex", footer.metaindex_handle),
            ("index", footer.index_handle),
        ] {
            if !h.fits_in(footer.offset) {
                return Err(bad_footer(format!(
                    "bad footer: {what} block handle ({}, {}) runs past the blocks, which end at {}",
                    h.offset, h.size, footer.offset
                )));
            }
        }
        let ends_at_footer =
            |h: BlockHandle| h.offset + h.size + BLOCK_TRAILER_SIZE as u64 == footer.offset;
        if !ends_at_footer(footer.metaindex_handle) && !ends_at_footer(footer.index_handle) {
            return Err(bad_footer(format!(
                "bad footer: neither the metaindex ({}, {}) nor the index ({}, {}) is the \
                 last block, which ends at {}",
                footer.metaindex_handle.offset,
                footer.metaindex_handle.size,
                footer.index_handle.offset,
                footer.index_handle.size,
                footer.offset
            )));
        }
        let name: Arc<str> = Arc::from(name);
        let read_opts = BlockReadOptions::for_footer(&footer, opts.verify_checksums, file_size);
        // The meta-index is read with checksums on whatever the caller asked.
        let meta_opts = BlockReadOptions {
            verify_checksums: true,
            ..read_opts
        };
        let metaindex = read_block(&*file, &name, footer.metaindex_handle, &meta_opts)?;
        let metaindex = Arc::new(Block::new(
            metaindex.data,
            name.clone(),
            footer.metaindex_handle,
        )?);
        let meta =
            super::block::decode_metaindex(&metaindex, &name, footer.metaindex_handle.offset)?;
        if footer.format_version >= 6 {
            // format_version 6 keeps the index handle in the meta-index.
            footer.index_handle = match meta.get(INDEX_BLOCK) {
                Some(&h) if h.fits_in(footer.offset) => h,
                Some(h) => {
                    return Err(bad_footer(format!(
                        "bad meta-index: index block handle ({}, {}) runs past the blocks, \
                         which end at {}",
                        h.offset, h.size, footer.offset
                    )));
                }
                None => {
                    return Err(Error::corruption(
                        &*name,
                        footer.metaindex_handle.offset,
                        "Index block handle not found in metaindex",
                    ));
                }
            };
        }

        let mut global_seqno_offset = None;
        let props = match meta
            .get(PROPERTIES_BLOCK)
            .or_else(|| meta.get(PROPERTIES_BLOCK_OLD))
        {
            Some(&h) => {
                let (c, offset) = read_properties_block(&*file, &name, h, &read_opts)?;
                global_seqno_offset = offset;
                let b = Arc::new(Block::new(c.data, name.clone(), h)?);
                TableProperties::decode_block(b, &name, h.offset)?
            }
            None => TableProperties::default(),
        };
        let index_type = props.index_type();
        if !matches!(
            index_type,
            INDEX_BINARY_SEARCH
                | INDEX_HASH_SEARCH
                | INDEX_TWO_LEVEL
                | INDEX_BINARY_SEARCH_WITH_FIRST_KEY
        ) {
            return Err(Error::NotSupported(format!(
                "{name}: index type {index_type} (unknown; Strata reads binary-search, \
                 hash-search, partitioned and first-key indexes)"
            )));
        }
        let icmp = InternalKeyComparator::new(opts.comparator.clone());
        let index_order = if props.index_key_is_user_key != 0 {
            KeyOrder::user(&opts.comparator)
        } else {
            KeyOrder::Internal(icmp.clone())
        };
        let index = read_block(&*file, &name, footer.index_handle, &read_opts)?;
        let index_block = Arc::new(Block::new(index.data, name.clone(), footer.index_handle)?);

        let cache_id = NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed);
        // cache_index_and_filter_blocks: the index and filter go into the
        // block cache now (RocksDB's prefetch at open) and the reader keeps
        // only what is pinned.
        let cached_meta = opts.cache_index_and_filter_blocks && opts.block_cache.is_some();
        let hold = !cached_meta || opts.pin_index_and_filter;
        let hold_top = hold || opts.pin_top_level_index_and_filter;
        let cache_block = |b: &Arc<Block>, h: BlockHandle| {
            if let Some(c) = &opts.block_cache {
                c.insert(cache_id, h.offset, Arc::clone(b));
            }
        };
        let source_with = |read_opts: BlockReadOptions| {
            Arc::new(PartitionSource {
                file: Arc::clone(&file),
                name: name.clone(),
                read_opts,
                cache: opts.block_cache.clone(),
                cache_id,
                order: index_order.clone(),
                value_delta: props.index_value_is_delta_encoded != 0,
            })
        };
        let source = || source_with(read_opts);
        let partitions = (index_type == INDEX_TWO_LEVEL).then(source);
        let hold_index = if partitions.is_some() { hold_top } else { hold };
        let index_block = if hold_index {
            IndexBlock::Held(index_block)
        } else {
            cache_block(&index_block, footer.index_handle);
            IndexBlock::Cached(footer.index_handle)
        };
        let filter = if let Some(&h) = meta.get(FULL_FILTER_BLOCK) {
            let data = read_block(&*file, &name, h, &meta_opts)?.data;
            if hold {
                Some(TableFilter::Full(FilterReader::from_shared(data)))
            } else {
                cache_block(&Arc::new(Block::opaque(data, name.clone(), h)), h);
                Some(TableFilter::FullCached(h))
            }
        } else if let Some(&h) = meta.get(PARTITIONED_FILTER_BLOCK) {
            let top = read_block(&*file, &name, h, &meta_opts)?;
            let top = Arc::new(Block::new(top.data, name.clone(), h)?);
            let top = if hold_top {
                Some(top)
            } else {
                cache_block(&top, h);
                None
            };
            Some(TableFilter::Partitioned(PartitionedFilter::new(
                top,
                h,
                source(),
                !hold,
            )))
        } else {
            None
        };
        let compression_dict = match meta.get(COMPRESSION_DICT_BLOCK) {
            Some(&h) => Some(read_block(&*file, &name, h, &meta_opts)?.data),
            None => None,
        };
        let prefix_filter =
            if props.user_property(super::table_properties::PREFIX_FILTERING) == Some(b"1") {
                crate::util::slice_transform::parse_slice_transform(&String::from_utf8_lossy(
                    &props.prefix_extractor_name,
                ))
            } else {
                None
            };
        let whole_key_filtering =
            props.user_property(super::table_properties::WHOLE_KEY_FILTERING) != Some(b"0");

        // Index and filter blocks read again after eviction are checked as
        // at open (a damaged filter must not rule out a present key).
        let meta_source = source_with(BlockReadOptions {
            verify_checksums: true,
            ..read_opts
        });
        let mut range_tombstones = Vec::new();
        if let Some(&h) = meta.get(RANGE_DEL_BLOCK) {
            let c = read_block(&*file, &name, h, &meta_opts)?;
            let b = Arc::new(Block::new(c.data, name.clone(), h)?);
            let mut it = b.iter(KeyOrder::Internal(icmp.clone()), false);
            it.seek_to_first();
            while it.valid() {
                if parse_internal_key(it.key()).is_none() {
                    return Err(Error::corruption(
                        &*name,
                        h.offset,
                        "bad range tombstone key",
                    ));
                }
                range_tombstones.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
            }
            it.status()?;
        }
        let global_seqno = external_global_seqno(&props, largest_seqno, &name)?;
        if let Some(seq) = global_seqno {
            for (k, _) in &mut range_tombstones {
                let n = k.len() - 8;
                let t = parse_internal_key(k).map_or(ValueType::RangeDeletion, |p| p.value_type);
                k[n..].copy_from_slice(&pack_sequence_and_type(seq, t).to_le_bytes());
            }
        }
        Ok(BlockBasedTable {
            cache_id,
            block_cache: opts.block_cache.clone(),
            statistics: opts.statistics.clone(),
            file,
            name,
            file_size,
            footer,
            read_opts,
            icmp,
            index_delta: props.index_value_is_delta_encoded != 0,
            index_first_key: index_type == INDEX_BINARY_SEARCH_WITH_FIRST_KEY,
            props,
            meta,
            index_block,
            meta_source,
            index_order,
            filter,
            partitions,
            compression_dict,
            whole_key_filtering,
            prefix_filter,
            range_tombstones,
            fragmented_range_dels: std::sync::OnceLock::new(),
            global_seqno,
            global_seqno_offset,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes this reader keeps in memory outside the block cache: the
    /// index block (a partitioned index's top level) and the filter (full,
    /// or the partitions probed so far) unless they are cache entries, the
    /// compression dictionary and the range tombstones.
    pub fn memory_usage(&self) -> u64 {
        let filter = match &self.filter {
            Some(TableFilter::Full(f)) => f.size(),
            Some(TableFilter::Partitioned(p)) => p.memory_usage(),
            Some(TableFilter::FullCached(_)) | None => 0,
        };
        let index = match &self.index_block {
            IndexBlock::Held(b) => b.size(),
            IndexBlock::Cached(_) => 0,
        };
        let tombstones: usize = self
            .range_tombstones
            .iter()
            .map(|(b, e)| b.len() + e.len())
            .sum();
        (index + filter + self.compression_dict.as_ref().map_or(0, |d| d.len()) + tombstones) as u64
    }

    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// Meta-index entries by name.
    pub fn meta_blocks(&self) -> &BTreeMap<String, BlockHandle> {
        &self.meta
    }

    /// Range tombstones as (internal begin key, exclusive end user key).
    pub fn range_tombstones(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.range_tombstones
    }

    /// The range tombstones fragmented (built once per reader).
    pub fn fragmented_range_tombstones(&self) -> &Arc<FragmentedRangeTombstoneList> {
        self.fragmented_range_dels.get_or_init(|| {
            Arc::new(FragmentedRangeTombstoneList::from_encoded(
                self.icmp.user_comparator().clone(),
                &self.range_tombstones,
            ))
        })
    }

    /// The global sequence number of an ingested external file, if any.
    pub fn global_seqno(&self) -> Option<u64> {
        self.global_seqno
    }

    /// Where in the file the 8-byte global sequence number property value
    /// lies (an uncompressed properties block of an external file), if
    /// anywhere.
    pub fn global_seqno_offset(&self) -> Option<u64> {
        self.global_seqno_offset
    }

    /// An iterator over the index: keys are separators, values encoded
    /// data-block handles (a partitioned index is walked through its
    /// partitions).
    pub fn index_iter(&self) -> IndexIter {
        self.index_iter_io(false)
    }

    /// The index block, held or from the block cache (with `no_io`, a
    /// block not in the cache is `Incomplete`).
    fn index_block(&self, no_io: bool) -> Result<Arc<Block>> {
        match &self.index_block {
            IndexBlock::Held(b) => Ok(Arc::clone(b)),
            IndexBlock::Cached(h) => self.meta_source.block(*h, no_io),
        }
    }

    /// [`BlockBasedTable::index_iter`]; with `no_io`, an index block that
    /// is not in the cache gives an iterator whose status is `Incomplete`.
    fn index_iter_io(&self, no_io: bool) -> IndexIter {
        let top = match self.index_block(no_io) {
            Ok(b) => b.index_iter(
                self.index_order.clone(),
                self.index_delta,
                self.index_first_key,
            ),
            Err(e) => return IndexIter::Flat(Block::failed_iter(e)),
        };
        match &self.partitions {
            None => IndexIter::Flat(top),
            Some(src) => IndexIter::two_level(top, Arc::clone(src)),
        }
    }

    /// The handles of a partitioned index's partitions (empty for a flat
    /// index).
    pub fn index_partitions(&self) -> Result<Vec<BlockHandle>> {
        if self.partitions.is_none() {
            return Ok(Vec::new());
        }
        let it = self
            .index_block(false)?
            .iter(self.index_order.clone(), self.index_delta);
        super::partitioned::partition_handles(it, &self.name, self.footer.index_handle.offset)
    }

    /// Reads and checks a block of this table (uncompressed contents;
    /// data blocks decompress with the table's dictionary, if any).
    pub fn read_block(&self, handle: BlockHandle) -> Result<BlockContents> {
        self.read_data_contents(handle, &self.read_opts)
    }

    /// Reads a data block's contents with `opts`, through the table's
    /// compression dictionary.
    fn read_data_contents(
        &self,
        handle: BlockHandle,
        opts: &BlockReadOptions,
    ) -> Result<BlockContents> {
        super::footer::check_in_file(&self.name, handle, opts.file_size)?;
        let len = handle.size as usize + BLOCK_TRAILER_SIZE;
        let raw = crate::fs::read_exact_at(&*self.file, &self.name, handle.offset, len)?;
        super::footer::decode_block_with_dict(
            raw,
            &self.name,
            handle,
            opts,
            self.compression_dict.as_deref(),
        )
    }

    /// Reads a data block (through the block cache when there is one).
    pub fn read_data_block(&self, handle: BlockHandle) -> Result<Arc<Block>> {
        self.read_data_block_with(handle, None, false, false)
    }

    /// `compaction`: neither look up nor fill the block cache, and always
    /// verify checksums (RocksDB's compaction reads). `no_io`: a block not
    /// in the block cache is `Incomplete`, not read.
    fn read_data_block_with(
        &self,
        handle: BlockHandle,
        readahead: Option<&mut Readahead>,
        compaction: bool,
        no_io: bool,
    ) -> Result<Arc<Block>> {
        use crate::util::statistics::{Ticker, record};
        let cache = if compaction {
            None
        } else {
            self.block_cache.as_ref()
        };
        let read_opts = BlockReadOptions {
            verify_checksums: self.read_opts.verify_checksums || compaction,
            ..self.read_opts
        };
        if let Some(cache) = cache {
            if let Some(b) = cache.lookup(self.cache_id, handle.offset) {
                record(&self.statistics, Ticker::BlockCacheHit, 1);
                record(&self.statistics, Ticker::BlockCacheDataHit, 1);
                return Ok(b);
            }
            record(&self.statistics, Ticker::BlockCacheMiss, 1);
            record(&self.statistics, Ticker::BlockCacheDataMiss, 1);
        }
        if no_io {
            return Err(super::partitioned::no_blocking_io(&self.name, handle));
        }
        let c = match readahead {
            None => self.read_data_contents(handle, &read_opts)?,
            Some(ra) => {
                let raw = ra.read(&*self.file, &self.name, handle, self.file_size)?;
                super::footer::decode_block_with_dict(
                    raw,
                    &self.name,
                    handle,
                    &read_opts,
                    self.compression_dict.as_deref(),
                )?
            }
        };
        let block = Arc::new(Block::new(c.data, self.name.clone(), handle)?);
        if let Some(cache) = cache {
            record(&self.statistics, Ticker::BlockCacheAdd, 1);
            record(&self.statistics, Ticker::BlockCacheDataAdd, 1);
            record(
                &self.statistics,
                Ticker::BlockCacheBytesWrite,
                block.size() as u64,
            );
            cache.insert(self.cache_id, handle.offset, Arc::clone(&block));
        }
        Ok(block)
    }

    /// Approximate file offset where entries at or after the internal key
    /// `ikey` begin (the data size for keys past the end).
    pub fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        let mut it = self.index_iter();
        it.seek(ikey);
        if it.valid()
            && let Some(h) = BlockHandle::decode(it.value())
        {
            return h.offset;
        }
        self.props
            .data_size
            .max(self.footer.index_handle.offset.min(self.file_size))
    }

    /// False only if the filter proves `user_key` is absent.
    pub fn key_may_match(&self, user_key: &[u8]) -> bool {
        self.key_may_match_with(user_key, false)
    }

    /// [`BlockBasedTable::key_may_match`]; with `no_io`, a filter
    /// partition not read before answers "may match" instead of being
    /// read.
    pub fn key_may_match_with(&self, user_key: &[u8], no_io: bool) -> bool {
        use crate::util::statistics::{Ticker, record};
        let Some(f) = &self.filter else { return true };
        // What a full filter is probed with: the key, or its prefix (a key
        // outside the extractor's domain cannot be ruled out).
        let probe = if self.whole_key_filtering {
            user_key
        } else {
            // Partitioned filters are probed by whole keys only.
            match (f, &self.prefix_filter) {
                (TableFilter::Partitioned(_), _) => return true,
                (_, Some(pe)) if pe.in_domain(user_key) => pe.transform(user_key),
                _ => return true,
            }
        };
        let may = match f {
            TableFilter::Partitioned(p) => {
                let lookup = crate::format::make_internal_key(
                    user_key,
                    crate::format::MAX_SEQUENCE_NUMBER,
                    crate::format::dbformat::VALUE_TYPE_FOR_SEEK,
                );
                p.key_may_match(&lookup, user_key, no_io)
            }
            // A cached filter not at hand (not in the cache with no_io, or
            // unreadable) may match: the data read that follows reports
            // damage.
            full => match self.full_filter_may_match(full, probe, no_io) {
                Some(may) => may,
                None => return true,
            },
        };
        crate::util::perf_context::record_filter_probe(may);
        record(
            &self.statistics,
            if may {
                Ticker::BloomFilterFullPositive
            } else {
                Ticker::BloomFilterUseful
            },
            1,
        );
        may
    }

    /// A full filter's answer for `probe`, the filter held or from the block
    /// cache; `None` for a partitioned filter and for a cached one that
    /// cannot be had (not in the cache with `no_io`, or unreadable).
    fn full_filter_may_match(&self, f: &TableFilter, probe: &[u8], no_io: bool) -> Option<bool> {
        match f {
            TableFilter::Full(f) => Some(f.key_may_match(probe)),
            TableFilter::FullCached(h) => {
                let b = self.meta_source.opaque_block(*h, no_io).ok()?;
                Some(FilterReader::from_shared(Arc::clone(b.data())).key_may_match(probe))
            }
            TableFilter::Partitioned(_) => None,
        }
    }

    /// False only if the filter proves no key shares `user_key`'s prefix
    /// (under the prefix extractor this table's filter was built with).
    pub fn prefix_of_key_may_match(&self, user_key: &[u8]) -> bool {
        match (&self.filter, &self.prefix_filter) {
            (Some(f), Some(pe)) if pe.in_domain(user_key) => self
                .full_filter_may_match(f, pe.transform(user_key), false)
                .unwrap_or(true),
            _ => true,
        }
    }

    /// The first point entry at or after the internal key `target` if it has
    /// the same user key; consults the filter first.
    pub fn get(self: &Arc<Self>, target: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let user_key = extract_user_key(target);
        if !self.key_may_match(user_key) {
            return Ok(None);
        }
        let mut it = self.iter();
        it.seek(target);
        it.status()?;
        if it.valid()
            && self
                .icmp
                .user_comparator()
                .compare(extract_user_key(it.key()), user_key)
                .is_eq()
        {
            return Ok(Some((it.key().to_vec(), it.value().to_vec())));
        }
        Ok(None)
    }

    /// A two-level iterator over all point entries.
    pub fn iter(self: &Arc<Self>) -> BlockBasedTableIter {
        self.iter_over(self.index_iter())
    }

    fn iter_over(self: &Arc<Self>, index: IndexIter) -> BlockBasedTableIter {
        BlockBasedTableIter {
            table: Arc::clone(self),
            index,
            data: None,
            data_handle: None,
            key_buf: Vec::new(),
            status: None,
            readahead: Readahead::default(),
            patched: self.global_seqno.is_some(),
            compaction: false,
            no_io: false,
        }
    }

    /// An iterator that reads no block missing from the block cache: it
    /// stops with an `Incomplete` status instead (`ReadTier::BlockCache`).
    pub fn no_io_iter(self: &Arc<Self>) -> BlockBasedTableIter {
        let mut it = self.iter_over(self.index_iter_io(true));
        it.no_io = true;
        it.index.set_no_io();
        it
    }

    /// An iterator for compaction input: reads bypass the block cache
    /// (neither looked up nor filled) and always verify checksums,
    /// whatever options the table was opened with.
    pub fn compaction_iter(self: &Arc<Self>) -> BlockBasedTableIter {
        let mut it = self.iter();
        it.compaction = true;
        it
    }

    /// Reads every block the table references and verifies its checksum,
    /// and checks that data-block keys are valid and increasing.
    pub fn verify_checksums(self: &Arc<Self>) -> Result<()> {
        let opts = BlockReadOptions {
            verify_checksums: true,
            ..self.read_opts
        };
        for (name, &h) in &self.meta {
            if name == PROPERTIES_BLOCK || name == PROPERTIES_BLOCK_OLD {
                // Checked as at open: ingestion may have written a global
                // sequence number into it after its checksum.
                read_properties_block(&*self.file, &self.name, h, &opts)?;
            } else {
                read_block(&*self.file, &self.name, h, &opts)?;
            }
        }
        read_block(&*self.file, &self.name, self.footer.index_handle, &opts)?;
        for h in self.index_partitions()? {
            read_block(&*self.file, &self.name, h, &opts)?;
        }
        if let Some(TableFilter::Partitioned(p)) = &self.filter {
            for h in p.partition_handles()? {
                read_block(&*self.file, &self.name, h, &opts)?;
            }
        }
        let mut idx = self.index_iter();
        idx.seek_to_first();
        while idx.valid() {
            let h = BlockHandle::decode(idx.value())
                .ok_or_else(|| Error::corruption(&*self.name, 0, "bad index entry"))?;
            self.read_data_contents(h, &opts)?;
            idx.next();
        }
        idx.status()
    }
}

/// The readahead of a forward scan (RocksDB's automatic readahead): once
/// three data blocks in a row were read from consecutive offsets, reads
/// fetch 8 KiB ahead, doubling per refill up to 256 KiB; blocks inside
/// the buffer are served from memory. Scans that jump around never
/// read ahead.
#[derive(Debug, Default)]
pub(crate) struct Readahead {
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    start: u64,
    next_size: usize,
    /// Consecutive reads at contiguous offsets.
    sequential: u32,
    /// End of the last block read.
    last_end: u64,
}

const READAHEAD_INITIAL: usize = 8 << 10;
const READAHEAD_MAX: usize = 256 << 10;

impl Readahead {
    /// The raw bytes (payload and trailer) of the block at `handle`.
    fn read(
        &mut self,
        file: &dyn RandomAccessFile,
        name: &str,
        handle: BlockHandle,
        file_size: u64,
    ) -> Result<Vec<u8>> {
        super::footer::check_in_file(name, handle, file_size)?;
        let len = handle.size as usize + super::footer::BLOCK_TRAILER_SIZE;
        let end = handle.offset + len as u64;
        if handle.offset >= self.start && end <= self.start + self.buf.len() as u64 {
            let at = (handle.offset - self.start) as usize;
            self.last_end = end;
            return Ok(self.buf[at..at + len].to_vec());
        }
        if handle.offset == self.last_end && self.sequential > 0 {
            self.sequential += 1;
        } else {
            self.sequential = 1;
            self.next_size = READAHEAD_INITIAL;
        }
        self.last_end = end;
        if self.sequential < 3 {
            return crate::fs::read_exact_at(file, name, handle.offset, len);
        }
        let want = (self.next_size.max(len) as u64).min(file_size - handle.offset) as usize;
        self.next_size = (self.next_size * 2).min(READAHEAD_MAX);
        // The buffer holds nothing valid until this read succeeds.
        let mut fresh = std::mem::take(&mut self.buf);
        fresh.clear();
        fresh.resize(want, 0);
        let n = file.read_at(handle.offset, &mut fresh)?;
        self.buf = fresh;
        if n < len {
            self.buf.clear();
            return Err(Error::corruption(
                name,
                handle.offset,
                format!("truncated block read: wanted {len} bytes, got {n}"),
            ));
        }
        self.buf.truncate(n);
        self.start = handle.offset;
        Ok(self.buf[..len].to_vec())
    }
}

/// Iterates over a table's point entries in internal-key order.
pub struct BlockBasedTableIter {
    table: Arc<BlockBasedTable>,
    index: IndexIter,
    data: Option<BlockIter>,
    data_handle: Option<BlockHandle>,
    /// Key with the global sequence number patched in (ingested files).
    key_buf: Vec<u8>,
    status: Option<Error>,
    readahead: Readahead,
    /// The table has a global sequence number: keys come from `key_buf`.
    patched: bool,
    /// Compaction input (see [`BlockBasedTable::compaction_iter`]).
    compaction: bool,
    /// See [`BlockBasedTable::no_io_iter`].
    no_io: bool,
}

impl std::fmt::Debug for BlockBasedTableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockBasedTableIter")
            .field("table", &self.table.name)
            .field("block", &self.data_handle)
            .finish()
    }
}

impl BlockBasedTableIter {
    /// Loads the data block the index iterator points at.
    fn init_data_block(&mut self) {
        if !self.index.valid() {
            self.data = None;
            return;
        }
        let Some(h) = BlockHandle::decode(self.index.value()) else {
            self.set_error(Error::corruption(
                &*self.table.name,
                self.table.footer.index_handle.offset,
                "bad block handle in index",
            ));
            return;
        };
        if self.data.is_some() && self.data_handle == Some(h) {
            return;
        }
        match self.table.read_data_block_with(
            h,
            Some(&mut self.readahead),
            self.compaction,
            self.no_io,
        ) {
            Ok(b) => {
                self.data = Some(b.iter(KeyOrder::Internal(self.table.icmp.clone()), false));
                self.data_handle = Some(h);
            }
            Err(e) => self.set_error(e),
        }
    }

    fn set_error(&mut self, e: Error) {
        if self.status.is_none() {
            self.status = Some(e);
        }
        self.data = None;
        self.data_handle = None;
    }

    fn data_valid(&self) -> bool {
        self.data.as_ref().is_some_and(|d| d.valid())
    }

    /// Moves over empty (or exhausted) data blocks, forward or backward,
    /// entering each new block at its first or last entry.
    fn skip_empty(&mut self, forward: bool) {
        while !self.data_valid() {
            if let Some(d) = &self.data
                && let Err(e) = d.status()
            {
                self.set_error(e);
                return;
            }
            if self.status.is_some() || !self.index.valid() {
                self.data = None;
                return;
            }
            if forward {
                self.index.next();
            } else {
                self.index.prev();
            }
            self.init_data_block();
            if let Some(d) = &mut self.data {
                if forward {
                    d.seek_to_first();
                } else {
                    d.seek_to_last();
                }
            }
        }
        self.patch_key();
    }

    fn patch_key(&mut self) {
        if let (Some(seq), Some(d)) = (self.table.global_seqno, &self.data)
            && d.valid()
        {
            let k = d.key();
            self.key_buf.clear();
            self.key_buf.extend_from_slice(extract_user_key(k));
            let t = parse_internal_key(k).map_or(ValueType::Value, |p| p.value_type);
            self.key_buf
                .extend_from_slice(&pack_sequence_and_type(seq, t).to_le_bytes());
        }
    }
}

impl BlockBasedTableIter {
    /// Positions at the first entry whose stored key is at or after
    /// `target`.
    fn seek_stored(&mut self, target: &[u8]) {
        self.status = None;
        self.index.seek(target);
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek(target);
        }
        self.skip_empty(true);
    }
}

impl InternalIterator for BlockBasedTableIter {
    fn valid(&self) -> bool {
        self.status.is_none() && self.data_valid()
    }

    fn seek_to_first(&mut self) {
        self.status = None;
        self.index.seek_to_first();
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_to_first();
        }
        self.skip_empty(true);
    }

    fn seek_to_last(&mut self) {
        self.status = None;
        self.index.seek_to_last();
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_to_last();
        }
        self.skip_empty(false);
    }

    fn seek(&mut self, target: &[u8]) {
        let Some(seq) = self.table.global_seqno.filter(|_| self.patched) else {
            return self.seek_stored(target);
        };
        // Keys compare as they read, with the global sequence number (as
        // RocksDB's `CompareCurrentKey`): a target below it passes the
        // stored key of its user key. Stored keys are unique per user key
        // (an external file), all at sequence 0.
        let Some(t) = parse_internal_key(target) else {
            return self.seek_stored(target);
        };
        let target_trailer = pack_sequence_and_type(t.sequence, t.value_type);
        let user_key = t.user_key.to_vec();
        self.seek_stored(&crate::format::make_internal_key(
            &user_key,
            crate::format::MAX_SEQUENCE_NUMBER,
            crate::format::dbformat::VALUE_TYPE_FOR_SEEK,
        ));
        if self.valid()
            && let Some(k) = parse_internal_key(self.key())
            && self
                .table
                .icmp
                .user_comparator()
                .compare(k.user_key, &user_key)
                .is_eq()
            && pack_sequence_and_type(seq, k.value_type) > target_trailer
        {
            self.next();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.status.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
            return;
        }
        while self.valid() && self.table.icmp.compare(self.key(), target).is_gt() {
            self.prev();
        }
    }

    fn next(&mut self) {
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_empty(true);
    }

    fn prev(&mut self) {
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_empty(false);
    }

    fn key(&self) -> &[u8] {
        match &self.data {
            Some(d) if !self.patched => d.key(),
            Some(_) => &self.key_buf,
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.status {
            return Err(e.duplicate());
        }
        self.index.status()
    }
}
/// The properties of the table in `file` (`file_size` bytes; `name` for
/// errors) without opening it for reads: footer, meta-index and the
/// properties block only (RocksDB's `ReadTableProperties`). Default
/// properties if the table has none.
pub fn read_table_properties(
    file: &dyn RandomAccessFile,
    name: &str,
    file_size: u64,
) -> Result<TableProperties> {
    let footer = read_footer(file, name, file_size)?;
    if footer.kind != super::footer::TableKind::BlockBased {
        // PlainTable and CuckooTable: meta blocks without trailers.
        return super::plain::reader::read_properties(file, name, &footer);
    }
    let opts = BlockReadOptions::for_footer(&footer, true, file_size);
    let metaindex = read_block(file, name, footer.metaindex_handle, &opts)?;
    let block = Arc::new(Block::new(
        metaindex.data,
        Arc::from(name),
        footer.metaindex_handle,
    )?);
    let mut it = block.iter(KeyOrder::Bytewise, false);
    let mut found = None;
    it.seek_to_first();
    while it.valid() {
        if it.key() == PROPERTIES_BLOCK.as_bytes() || it.key() == PROPERTIES_BLOCK_OLD.as_bytes() {
            found = BlockHandle::decode(it.value());
            if it.key() == PROPERTIES_BLOCK.as_bytes() {
                break;
            }
        }
        it.next();
    }
    it.status()?;
    let Some(h) = found else {
        return Ok(TableProperties::default());
    };
    let (c, _) = read_properties_block(file, name, h, &opts)?;
    let b = Arc::new(Block::new(c.data, Arc::from(name), h)?);
    TableProperties::decode_block(b, name, h.offset)
}

/// Reads the properties block at `h`. Its checksum is checked as RocksDB
/// checks it: ingestion may have written a global sequence number into
/// the block after the checksum was computed, so a mismatch is retried
/// with those 8 bytes zeroed. Returns the contents and, for an
/// uncompressed block holding the property, the global sequence number's
/// file offset.
fn read_properties_block(
    file: &dyn RandomAccessFile,
    name: &str,
    h: BlockHandle,
    read_opts: &BlockReadOptions,
) -> Result<(BlockContents, Option<u64>)> {
    use super::footer::{check_in_file, decode_block, verify_block_checksum};
    check_in_file(name, h, read_opts.file_size)?;
    let raw = crate::fs::read_exact_at(file, name, h.offset, h.size as usize + BLOCK_TRAILER_SIZE)?;
    let payload = &raw[..h.size as usize];
    let offset = (raw[h.size as usize] == 0)
        .then(|| {
            super::table_properties::fixed64_value_offset(
                payload,
                super::table_properties::EXTERNAL_SST_GLOBAL_SEQNO.as_bytes(),
            )
        })
        .flatten();
    let context = read_opts.base_context_checksum;
    if let Err(e) = verify_block_checksum(read_opts.checksum_type, context, &raw, name, h) {
        let Some(at) = offset else {
            return Err(e);
        };
        let mut zeroed = raw.clone();
        zeroed[at..at + 8].fill(0);
        verify_block_checksum(read_opts.checksum_type, context, &zeroed, name, h).map_err(|_| e)?;
    }
    let opts = BlockReadOptions {
        verify_checksums: false,
        ..*read_opts
    };
    let c = decode_block(raw, name, h, &opts)?;
    Ok((c, offset.map(|o| h.offset + o as u64)))
}

/// The sequence number all keys of the table with `props` read with, as
/// RocksDB's `GetGlobalSequenceNumber`: only an external file of version
/// 2 has one; its property, or when that is 0 the MANIFEST's
/// `largest_seqno` (known inside a database), which a nonzero property
/// must equal. `None` also for a global sequence number of 0 (the keys
/// already carry 0).
fn external_global_seqno(
    props: &TableProperties,
    largest_seqno: Option<u64>,
    name: &str,
) -> Result<Option<u64>> {
    let seqno_prop = props.user_property(super::table_properties::EXTERNAL_SST_GLOBAL_SEQNO);
    let corrupt = |msg: String| Err(Error::corruption(name, 0, msg));
    let Some(version) = props.external_sst_version() else {
        if seqno_prop.is_some() {
            return corrupt("external file global sequence number without a version".into());
        }
        return Ok(None);
    };
    if version < 2 {
        if seqno_prop.is_some() || version != 1 {
            return corrupt(format!(
                "external file of version {version} with a global sequence number"
            ));
        }
        return Ok(None);
    }
    let mut seqno = match seqno_prop {
        Some(v) => match crate::util::coding::decode_fixed64(v, 0) {
            Some(s) if v.len() == 8 => s,
            _ => return corrupt("external file global sequence number is not 8 bytes".into()),
        },
        None => 0,
    };
    if let Some(largest) = largest_seqno {
        if seqno == 0 {
            seqno = largest;
        }
        if seqno != largest {
            return corrupt(format!(
                "an external file's global seqno {seqno} is not equal to its largest seqno {largest}"
            ));
        }
    }
    if seqno > crate::format::MAX_SEQUENCE_NUMBER {
        return corrupt(format!("external file global seqno {seqno} is too large"));
    }
    Ok((seqno != 0).then_some(seqno))
}
