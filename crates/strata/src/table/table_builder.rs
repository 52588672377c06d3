//! Writes a block-based table: data blocks, full filter, index, range
//! deletions, properties, meta-index and footer, in RocksDB's order and
//! encodings (`block_based_table_builder.cc`).
//!
//! Data blocks are cut as RocksDB's `FlushBlockBySizePolicy` cuts them
//! (block_size_deviation 10): before an entry, when the block has reached
//! `block_size`, or when the entry would take it past `block_size` and it
//! is already over 90% full.
//!
//! With a compression dictionary (`compression_opts.max_dict_bytes`), data
//! blocks are held back uncompressed until they pass the buffer limit or
//! the table ends (RocksDB's kBuffered state); the dictionary is then
//! built from them (`compression_dict.rs`), and their filter keys, index
//! entries and compressed bytes are written as if they had just been cut.
//!
//! Invariants: keys are added in strictly increasing internal-key order
//! (checked in debug builds); an index entry for a data block is written
//! only once the next key (or the end) is known, so its separator satisfies
//! `last_key(block) <= sep < first_key(next block)`; a block is stored
//! compressed only if that saves at least 12.5%.

use std::cmp::Ordering;

use super::block_builder::BlockBuilder;
use super::compression::{CompressionType, DictCompressor, compress_with_dict};
use super::compression_dict::build_dictionary;
use super::filter::{FilterBuilder, FilterFlavor, PartitionedFilterBuilder};
use super::footer::{
    BLOCK_TRAILER_SIZE, BlockHandle, Footer, MAX_FORMAT_VERSION, checksum_modifier_for_context,
};
use super::index_builder::{HashIndexPrefixes, IndexBuilder, PartitionedIndexBuilder};
use super::options::{DataBlockIndexType, IndexShorteningMode, IndexType, TableOptions};
use super::table_properties::{
    COMPRESSION_DICT_BLOCK, FULL_FILTER_BLOCK, HASH_INDEX_METADATA_BLOCK,
    HASH_INDEX_PREFIXES_BLOCK, INDEX_BLOCK, INDEX_TYPE, PARTITIONED_FILTER_BLOCK, PREFIX_FILTERING,
    PROPERTIES_BLOCK, RANGE_DEL_BLOCK, TableProperties, WHOLE_KEY_FILTERING,
};
use crate::error::{Error, Result};
use crate::format::dbformat::{
    InternalKeyComparator, ValueType, extract_user_key, parse_internal_key,
};
use crate::fs::WritableFile;
use crate::util::checksum::block_checksum;

/// What a finished table holds.
#[derive(Clone, Debug, Default)]
pub struct TableInfo {
    pub file_size: u64,
    pub num_entries: u64,
    /// Smallest and largest internal keys of point entries and range
    /// tombstones (empty if the table is empty).
    pub smallest_key: Vec<u8>,
    pub largest_key: Vec<u8>,
    pub smallest_seqno: u64,
    pub largest_seqno: u64,
    pub properties: TableProperties,
    /// Why a table the column family meant to write in another format
    /// (CuckooTable) was written block-based; `None` when it has the
    /// configured format.
    pub block_based_fallback: Option<String>,
}

/// Builds one table file.
pub struct BlockBasedTableBuilder {
    opts: TableOptions,
    icmp: InternalKeyComparator,
    file: Box<dyn WritableFile>,
    offset: u64,
    data_block: BlockBuilder,
    index: IndexWriter,
    /// RocksDB's `block_size_deviation_limit_`: a block over this many
    /// bytes is cut before an entry that would take it past `block_size`.
    deviation_limit: usize,
    range_del_block: BlockBuilder,
    filter: Option<FilterWriter>,
    last_prefix: Option<Vec<u8>>,
    /// Handle of the last data block, awaiting its index entry.
    pending_handle: Option<BlockHandle>,
    last_key: Vec<u8>,
    props: TableProperties,
    info: TableInfo,
    compressed_buf: Vec<u8>,
    /// format_version >= 6: this file's nonzero base for block checksum
    /// contexts (random per file, as RocksDB); 0 before.
    base_context_checksum: u32,
    /// Data blocks held back until the compression dictionary is built;
    /// `None` once it is (or when there is none to build).
    held: Option<HeldBlocks>,
    /// The data blocks' compression dictionary, once built.
    dict: Option<DictCompressor>,
    /// Hash-search indexes: the key prefixes per data block.
    hash_prefixes: Option<HashIndexPrefixes>,
    /// Index entries written so far (the data block a key goes to).
    index_entries: u32,
    /// `kBinarySearchWithFirstKey`: the first key of each data block not
    /// indexed yet, oldest first (blocks are indexed in order).
    first_keys: Option<std::collections::VecDeque<Vec<u8>>>,
    finished: bool,
}

/// Data blocks held back, uncompressed, with the keys each holds (whose
/// filter entries and index entries wait for the blocks' handles).
#[derive(Debug, Default)]
struct HeldBlocks {
    blocks: Vec<Vec<u8>>,
    /// Every held key, concatenated, and where each block's keys end.
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    block_key_counts: Vec<usize>,
    /// Keys of the open data block so far.
    open_block_keys: usize,
    /// Bytes held (RocksDB's `data_begin_offset` while buffered).
    bytes: u64,
    /// Build the dictionary once more than this is held (0: at the end).
    limit: u64,
}

/// The index being built: one block, or partitions.
#[derive(Debug)]
enum IndexWriter {
    Flat(IndexBuilder),
    Partitioned(PartitionedIndexBuilder),
}

/// The filter being built: one full filter, or partitions.
#[derive(Debug)]
enum FilterWriter {
    Full(FilterBuilder),
    Partitioned(PartitionedFilterBuilder),
}

impl FilterWriter {
    fn add_key(&mut self, key: &[u8]) {
        match self {
            FilterWriter::Full(f) => f.add_key(key),
            FilterWriter::Partitioned(p) => p.add_key(key),
        }
    }
}

/// RocksDB's default `block_size_deviation` (percent).
const BLOCK_SIZE_DEVIATION: usize = 10;

/// A random nonzero base context checksum for a new file.
fn new_base_context_checksum() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static FILES: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(FILES.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    let x = h.finish();
    ((x as u32) ^ ((x >> 32) as u32)).max(1)
}

impl std::fmt::Debug for BlockBasedTableBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockBasedTableBuilder")
            .field("offset", &self.offset)
            .field("entries", &self.props.num_entries)
            .finish()
    }
}

impl BlockBasedTableBuilder {
    /// Starts a table written to `file`, which must be empty.
    pub fn new(opts: TableOptions, file: Box<dyn WritableFile>) -> Result<BlockBasedTableBuilder> {
        if !(1..=MAX_FORMAT_VERSION).contains(&opts.format_version) {
            return Err(Error::InvalidArgument(format!(
                "unsupported table format_version {} (1..={MAX_FORMAT_VERSION})",
                opts.format_version
            )));
        }
        if !opts.compression.can_compress() {
            return Err(Error::NotSupported(format!(
                "writing {} compression",
                opts.compression.name()
            )));
        }
        if opts.block_size == 0
            || opts.block_restart_interval == 0
            || opts.index_block_restart_interval == 0
        {
            return Err(Error::InvalidArgument(
                "block_size, block_restart_interval and index_block_restart_interval must be \
                 positive"
                    .into(),
            ));
        }
        let two_level = opts.index_type == IndexType::TwoLevelIndexSearch;
        // Ribbon where the policy asks for it (RocksDB writes it whatever
        // the format_version); older tables carry RocksDB's legacy Bloom.
        let flavor = if opts.filter_policy.ribbon_at(opts.filter_levelish) {
            FilterFlavor::Ribbon
        } else if matches!(
            opts.filter_policy,
            super::options::FilterPolicy::Ribbon { .. }
        ) {
            // RocksDB's Ribbon policy builds FastLocalBloom below
            // bloom_before_level, whatever the format_version.
            FilterFlavor::FastLocalBloom
        } else if opts.format_version < 5 {
            FilterFlavor::LegacyBloom
        } else {
            FilterFlavor::FastLocalBloom
        };
        let filter = match opts.bloom_bits_per_key {
            Some(bits) if bits >= 0.5 && two_level && opts.partition_filters => {
                Some(FilterWriter::Partitioned(PartitionedFilterBuilder::new(
                    bits,
                    flavor,
                    opts.metadata_block_size,
                )))
            }
            Some(bits) if bits >= 0.5 => Some(FilterWriter::Full(FilterBuilder::of(flavor, bits))),
            _ => None,
        };
        let index = if two_level {
            IndexWriter::Partitioned(PartitionedIndexBuilder::new(
                opts.format_version,
                opts.index_block_restart_interval,
                opts.metadata_block_size,
            ))
        } else {
            // RocksDB forces restart interval 1 for hash-search indexes.
            let interval = if opts.index_type == IndexType::HashSearch {
                1
            } else {
                opts.index_block_restart_interval
            };
            IndexWriter::Flat(IndexBuilder::new(opts.format_version, interval))
        };
        let props = TableProperties {
            format_version: 0, // RocksDB writes 0 here for block-based tables
            compression_name: opts.compression.name().as_bytes().to_vec(),
            compression_options: opts.compression_opts.to_property_string().into_bytes(),
            filter_policy_name: if filter.is_some() {
                opts.filter_policy.name().as_bytes().to_vec()
            } else {
                Vec::new()
            },
            ..TableProperties::for_new_table(&opts)
        };
        let base_context_checksum = if opts.format_version >= 6 {
            new_base_context_checksum()
        } else {
            0
        };
        if opts.index_type == IndexType::HashSearch && opts.prefix_extractor.is_none() {
            return Err(Error::InvalidArgument(
                "Hash index is specified for block-based table, but prefix_extractor is not given"
                    .into(),
            ));
        }
        let hash_prefixes =
            (opts.index_type == IndexType::HashSearch).then(HashIndexPrefixes::default);
        // As RocksDB: no data block hash index where keys of different
        // bytes may be equal (custom comparators), since it hashes bytes.
        let hash_blocks = opts.data_block_index_type == DataBlockIndexType::BinaryAndHash
            && !opts.comparator.can_keys_with_different_bytes_be_equal();
        let data_block = if hash_blocks {
            BlockBuilder::with_hash_index(
                opts.block_restart_interval,
                opts.data_block_hash_table_util_ratio,
            )
        } else {
            BlockBuilder::new(opts.block_restart_interval)
        };
        let held = (opts.compression_opts.max_dict_bytes > 0).then(|| HeldBlocks {
            limit: opts.compression_opts.buffer_limit(opts.target_file_size),
            ..HeldBlocks::default()
        });
        let first_keys = (opts.index_type == IndexType::BinarySearchWithFirstKey)
            .then(std::collections::VecDeque::new);
        Ok(BlockBasedTableBuilder {
            icmp: InternalKeyComparator::new(opts.comparator.clone()),
            data_block,
            index,
            deviation_limit: (opts.block_size * (100 - BLOCK_SIZE_DEVIATION)).div_ceil(100),
            range_del_block: BlockBuilder::new(1),
            filter,
            last_prefix: None,
            opts,
            file,
            offset: 0,
            pending_handle: None,
            first_keys,
            last_key: Vec::new(),
            props,
            info: TableInfo {
                smallest_seqno: u64::MAX,
                ..Default::default()
            },
            compressed_buf: Vec::new(),
            base_context_checksum,
            held,
            dict: None,
            hash_prefixes,
            index_entries: 0,
            finished: false,
        })
    }

    /// Sets properties that identify the writer (db id, session, file number).
    pub fn set_identity(&mut self, id: &super::factory::TableIdentity<'_>, file_number: u64) {
        let super::factory::TableIdentity {
            db_id,
            session_id,
            host_id,
        } = *id;
        self.props.db_host_id = host_id.as_bytes().to_vec();
        self.props.db_id = db_id.as_bytes().to_vec();
        self.props.db_session_id = session_id.as_bytes().to_vec();
        self.props.orig_file_number = file_number;
    }

    /// Adds a user-collected property (e.g. the external-file markers).
    pub fn add_user_property(&mut self, name: &str, value: Vec<u8>) {
        self.props
            .user_collected
            .insert(name.as_bytes().to_vec(), value);
    }

    fn track_key(&mut self, ikey: &[u8], seq: u64, end_user_key: Option<&[u8]>) {
        if self.info.smallest_key.is_empty()
            || self.icmp.compare(ikey, &self.info.smallest_key) == Ordering::Less
        {
            self.info.smallest_key = ikey.to_vec();
        }
        let largest_candidate = match end_user_key {
            // A range tombstone covers keys up to (excluding) its end.
            Some(end) => crate::format::make_internal_key(
                end,
                crate::format::MAX_SEQUENCE_NUMBER,
                ValueType::RangeDeletion,
            ),
            None => ikey.to_vec(),
        };
        if self.info.largest_key.is_empty()
            || self
                .icmp
                .compare(&largest_candidate, &self.info.largest_key)
                == Ordering::Greater
        {
            self.info.largest_key = largest_candidate;
        }
        self.info.smallest_seqno = self.info.smallest_seqno.min(seq);
        self.info.largest_seqno = self.info.largest_seqno.max(seq);
    }

    /// Adds a point entry. REQUIRES: `ikey` is a valid internal key greater
    /// than every key added before.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let parsed = parse_internal_key(ikey).ok_or_else(|| {
            Error::InvalidArgument("table key is not a valid internal key".into())
        })?;
        if !self.last_key.is_empty() && self.icmp.compare(&self.last_key, ikey) != Ordering::Less {
            return Err(Error::InvalidArgument(
                "keys must be added to a table in strictly increasing order".into(),
            ));
        }
        if !self.data_block.is_empty() {
            let size = self.data_block.current_size_estimate();
            if size >= self.opts.block_size
                || (size > self.deviation_limit
                    && self.data_block.estimate_size_after(ikey.len(), value.len())
                        > self.opts.block_size)
            {
                self.flush_data_block()?;
                if self
                    .held
                    .as_ref()
                    .is_some_and(|h| h.limit != 0 && h.bytes > h.limit)
                {
                    self.write_held_blocks()?;
                }
            }
        }
        if let Some(handle) = self.pending_handle.take() {
            let last = std::mem::take(&mut self.last_key);
            self.add_index_entry(handle, last, ikey);
        }
        match &mut self.held {
            // Filter entries wait for the held block's handle.
            Some(h) => {
                h.keys.extend_from_slice(ikey);
                h.key_ends.push(h.keys.len());
                h.open_block_keys += 1;
            }
            None => self.on_key_added(ikey),
        }
        if let Some(q) = &mut self.first_keys
            && self.data_block.is_empty()
        {
            q.push_back(ikey.to_vec());
        }
        self.data_block.add(ikey, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.props.num_entries += 1;
        self.props.raw_key_size += ikey.len() as u64;
        self.props.raw_value_size += value.len() as u64;
        match parsed.value_type {
            ValueType::Deletion | ValueType::SingleDeletion | ValueType::DeletionWithTimestamp => {
                self.props.num_deletions += 1
            }
            ValueType::Merge => self.props.num_merge_operands += 1,
            _ => {}
        }
        self.track_key(ikey, parsed.sequence, None);
        Ok(())
    }

    /// Adds the index entry of the data block at `handle`, whose last key
    /// is `last`, given the first key of the next block.
    fn add_index_entry(&mut self, handle: BlockHandle, mut sep: Vec<u8>, next: &[u8]) {
        self.index_entries += 1;
        let splits_user_key = self
            .icmp
            .user_comparator()
            .compare(extract_user_key(&sep), extract_user_key(next))
            .is_eq();
        if self.opts.index_shortening != IndexShorteningMode::NoShortening {
            self.icmp.find_shortest_separator(&mut sep, next);
        }
        let first_key = self.first_keys.as_mut().and_then(|q| q.pop_front());
        match &mut self.index {
            IndexWriter::Flat(i) => {
                i.add_with_first_key(&sep, handle, splits_user_key, first_key.as_deref())
            }
            IndexWriter::Partitioned(i) => {
                // A closed index partition closes the filter's too, under
                // the key of the block just indexed (whose keys the filter
                // partition already holds).
                if i.add(&sep, handle, splits_user_key, false)
                    && let Some(FilterWriter::Partitioned(f)) = &mut self.filter
                {
                    f.cut(&sep);
                    // As RocksDB: the previous partition's last prefix goes
                    // into the new one too (prefix SeekForPrev probes the
                    // partition after a boundary).
                    if let Some(p) = &self.last_prefix {
                        f.add_key(p);
                    }
                }
            }
        }
    }

    /// Records a key of the open data block: its filter entries and, for
    /// hash-search indexes, its prefix (RocksDB's `OnKeyAdded`).
    fn on_key_added(&mut self, ikey: &[u8]) {
        let user_key = extract_user_key(ikey);
        if let (Some(h), Some(pe)) = (&mut self.hash_prefixes, &self.opts.prefix_extractor) {
            // Keys outside the extractor's domain count as their own prefix.
            let prefix = if pe.in_domain(user_key) {
                pe.transform(user_key)
            } else {
                user_key
            };
            h.on_key_added(prefix, self.index_entries);
        }
        self.add_filter_key(user_key);
    }

    /// Adds a user key's filter entries (its prefix, the whole key).
    fn add_filter_key(&mut self, user_key: &[u8]) {
        let Some(f) = &mut self.filter else {
            return;
        };
        if let Some(pe) = &self.opts.prefix_extractor
            && pe.in_domain(user_key)
        {
            let prefix = pe.transform(user_key);
            if self.last_prefix.as_deref() != Some(prefix) {
                f.add_key(prefix);
                self.last_prefix = Some(prefix.to_vec());
            }
        }
        if self.opts.whole_key_filtering {
            f.add_key(user_key);
        }
        if let (FilterWriter::Partitioned(f), IndexWriter::Partitioned(i)) = (f, &mut self.index)
            && f.wants_cut()
        {
            i.request_cut();
        }
    }

    /// Builds the compression dictionary from the held blocks and writes
    /// them, their filter keys and index entries, as RocksDB's
    /// `EnterUnbuffered`. The last block's index entry stays pending, as
    /// for a block just cut.
    fn write_held_blocks(&mut self) -> Result<()> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        debug_assert_eq!(
            held.open_block_keys, 0,
            "an open data block while writing held ones"
        );
        debug_assert!(self.pending_handle.is_none());
        let raw = build_dictionary(&held.blocks, &self.opts.compression_opts);
        if !raw.is_empty() {
            self.dict = Some(DictCompressor::new(
                raw,
                self.opts.compression,
                self.opts.compression_opts.codec_level(),
            )?);
        }
        let key_at = |k: usize| {
            let start = if k == 0 { 0 } else { held.key_ends[k - 1] };
            &held.keys[start..held.key_ends[k]]
        };
        let mut first = 0;
        for (i, block) in held.blocks.iter().enumerate() {
            let end = first + held.block_key_counts[i];
            for k in first..end {
                self.on_key_added(key_at(k));
            }
            let handle = self.write_data_block(block)?;
            if i + 1 < held.blocks.len() {
                self.add_index_entry(handle, key_at(end - 1).to_vec(), key_at(end));
            } else {
                self.pending_handle = Some(handle);
            }
            first = end;
        }
        debug_assert_eq!(first, held.key_ends.len());
        Ok(())
    }

    /// Adds a range tombstone deleting user keys in `[begin, end)` at `seq`.
    /// Tombstones must be added in increasing order of `(begin, seq desc)`.
    pub fn add_range_tombstone(&mut self, begin: &[u8], end: &[u8], seq: u64) -> Result<()> {
        let ikey = crate::format::make_internal_key(begin, seq, ValueType::RangeDeletion);
        self.range_del_block.add(&ikey, end);
        self.props.num_entries += 1;
        self.props.num_deletions += 1;
        self.props.num_range_deletions += 1;
        self.props.raw_key_size += ikey.len() as u64;
        self.props.raw_value_size += end.len() as u64;
        self.track_key(&ikey, seq, Some(end));
        Ok(())
    }

    /// Entries added so far (point entries and tombstones).
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written so far plus the unfinished data block.
    pub fn estimated_file_size(&self) -> u64 {
        self.offset + self.data_block.current_size_estimate() as u64
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let raw = self.data_block.finish().to_vec();
        self.data_block.reset();
        if let Some(h) = &mut self.held {
            h.bytes += raw.len() as u64;
            h.blocks.push(raw);
            h.block_key_counts
                .push(std::mem::take(&mut h.open_block_keys));
            return Ok(());
        }
        let handle = self.write_data_block(&raw)?;
        debug_assert!(self.pending_handle.is_none());
        self.pending_handle = Some(handle);
        Ok(())
    }

    /// Writes a data block, compressed against the dictionary if any.
    fn write_data_block(&mut self, raw: &[u8]) -> Result<BlockHandle> {
        let handle = self.write_block_with(raw, self.opts.compression, true)?;
        self.props.num_data_blocks += 1;
        self.props.data_size = self.offset;
        Ok(handle)
    }

    /// Writes a meta or index block with its trailer, compressing it if
    /// that pays.
    fn write_block(&mut self, raw: &[u8], kind: CompressionType) -> Result<BlockHandle> {
        self.write_block_with(raw, kind, false)
    }

    /// Writes a block with its trailer, compressing it if that pays (data
    /// blocks against the dictionary).
    fn write_block_with(
        &mut self,
        raw: &[u8],
        kind: CompressionType,
        data: bool,
    ) -> Result<BlockHandle> {
        let mut stored: &[u8] = raw;
        let mut type_byte = CompressionType::None;
        let dict = if data { self.dict.as_mut() } else { None };
        if kind != CompressionType::None
            && let Some(c) =
                compress_with_dict(kind, raw, self.opts.compression_opts.codec_level(), dict)?
            && c.len() < raw.len() - raw.len() / 8
        {
            self.compressed_buf = c;
            stored = &self.compressed_buf;
            type_byte = kind;
        }
        let handle = BlockHandle::new(self.offset, stored.len() as u64);
        let mut trailer = [0u8; BLOCK_TRAILER_SIZE];
        trailer[0] = type_byte as u8;
        let crc = block_checksum(self.opts.checksum, stored, type_byte as u8).wrapping_add(
            checksum_modifier_for_context(self.base_context_checksum, self.offset),
        );
        trailer[1..].copy_from_slice(&crc.to_le_bytes());
        self.file.append(stored)?;
        self.file.append(&trailer)?;
        self.offset += (stored.len() + BLOCK_TRAILER_SIZE) as u64;
        Ok(handle)
    }

    /// Writes the remaining blocks and the footer, syncs if asked, and
    /// closes the file.
    pub fn finish(mut self, sync: bool) -> Result<TableInfo> {
        self.flush_data_block()?;
        self.write_held_blocks()?;
        if let Some(handle) = self.pending_handle.take() {
            // RocksDB's default index_shortening (kShortenSeparators)
            // keeps the last key as it is.
            let mut last = std::mem::take(&mut self.last_key);
            if self.opts.index_shortening == IndexShorteningMode::ShortenSeparatorsAndSuccessor {
                self.icmp.find_short_successor(&mut last);
            }
            let first_key = self.first_keys.as_mut().and_then(|q| q.pop_front());
            match &mut self.index {
                IndexWriter::Flat(i) => {
                    i.add_with_first_key(&last, handle, false, first_key.as_deref())
                }
                IndexWriter::Partitioned(i) => {
                    i.add(&last, handle, false, true);
                }
            }
        }
        let mut meta: Vec<(&str, BlockHandle)> = Vec::new();
        let index_codec = if self.opts.enable_index_compression {
            self.opts.compression
        } else {
            CompressionType::None
        };
        // The index's key form decides the filter's top level too, so the
        // index is finished (in memory) first; RocksDB's block order
        // (filter, then index) is kept on disk.
        let index = std::mem::replace(&mut self.index, IndexWriter::Flat(IndexBuilder::new(1, 1)));
        // A partitioned index's last separator keys the last filter partition.
        let mut partition_last_key = Vec::new();
        let (flat, partitions, user_keys, delta) = match index {
            IndexWriter::Flat(i) => {
                let f = i.finish();
                let (u, d) = (f.key_is_user_key, f.value_is_delta_encoded);
                (Some(f.block), Vec::new(), u, d)
            }
            IndexWriter::Partitioned(i) => {
                partition_last_key = i.partition_key().to_vec();
                let p = i.finish();
                (
                    None,
                    p.partitions,
                    p.key_is_user_key,
                    p.value_is_delta_encoded,
                )
            }
        };
        let has_filter = self.filter.is_some();
        match self.filter.take() {
            Some(FilterWriter::Full(mut f)) => {
                self.props.num_filter_entries = f.num_added() as u64;
                let block = f.finish();
                if !block.is_empty() {
                    self.props.filter_size = block.len() as u64;
                    let h = self.write_block(&block, CompressionType::None)?;
                    meta.push((FULL_FILTER_BLOCK, h));
                }
            }
            Some(FilterWriter::Partitioned(f)) => {
                let (parts, added) = f.finish(&partition_last_key);
                self.props.num_filter_entries = added as u64;
                let mut top = IndexBuilder::new(
                    self.opts.format_version,
                    self.opts.index_block_restart_interval,
                );
                for (key, block) in &parts {
                    self.props.filter_size += block.len() as u64;
                    let h = self.write_block(block, CompressionType::None)?;
                    top.add(key, h, false);
                }
                let top = top.finish_with(!user_keys).block;
                self.props.filter_size += top.len() as u64;
                let h = self.write_block(&top, CompressionType::None)?;
                meta.push((PARTITIONED_FILTER_BLOCK, h));
            }
            None => {}
        }
        // RocksDB counts a hash-search index's prefix blocks in its size.
        let mut hash_index_bytes = 0;
        if let Some(h) = self.hash_prefixes.take() {
            // RocksDB writes these before the index block, compressed with
            // the table's codec when that pays.
            let (prefixes, metadata) = h.finish();
            hash_index_bytes = (prefixes.len() + metadata.len()) as u64;
            let hp = self.write_block(&prefixes, self.opts.compression)?;
            meta.push((HASH_INDEX_PREFIXES_BLOCK, hp));
            let hm = self.write_block(&metadata, self.opts.compression)?;
            meta.push((HASH_INDEX_METADATA_BLOCK, hm));
        }
        let index_handle = match flat {
            Some(block) => {
                let h = self.write_block(&block, index_codec)?;
                // RocksDB records the uncompressed index size plus one
                // block trailer.
                self.props.index_size =
                    block.len() as u64 + hash_index_bytes + BLOCK_TRAILER_SIZE as u64;
                h
            }
            None => {
                let mut top = IndexBuilder::new(
                    self.opts.format_version,
                    self.opts.index_block_restart_interval,
                );
                self.props.index_partitions = partitions.len() as u64;
                for (key, block) in &partitions {
                    self.props.index_size += block.len() as u64;
                    let h = self.write_block(block, index_codec)?;
                    top.add(key, h, false);
                }
                let top = top.finish_with(!user_keys).block;
                self.props.top_level_index_size = top.len() as u64;
                self.props.index_size += (top.len() + BLOCK_TRAILER_SIZE) as u64;
                self.write_block(&top, index_codec)?
            }
        };
        if let Some(d) = &self.dict {
            let raw = d.raw().to_vec();
            let h = self.write_block(&raw, CompressionType::None)?;
            meta.push((COMPRESSION_DICT_BLOCK, h));
        }
        self.props.index_key_is_user_key = u64::from(user_keys);
        self.props.index_value_is_delta_encoded = u64::from(delta);
        if !self.range_del_block.is_empty() {
            let rd = self.range_del_block.finish().to_vec();
            let h = self.write_block(&rd, CompressionType::None)?;
            meta.push((RANGE_DEL_BLOCK, h));
        }
        if self.opts.format_version >= 6 {
            meta.push((INDEX_BLOCK, index_handle));
        }
        self.props.user_collected.insert(
            INDEX_TYPE.as_bytes().to_vec(),
            self.opts.index_type.code().to_le_bytes().to_vec(),
        );
        let flag = |b: bool| if b { b"1".to_vec() } else { b"0".to_vec() };
        let prefix_filtering = self.opts.prefix_extractor.is_some() && has_filter;
        self.props.user_collected.insert(
            WHOLE_KEY_FILTERING.as_bytes().to_vec(),
            flag(self.opts.whole_key_filtering),
        );
        self.props
            .user_collected
            .insert(PREFIX_FILTERING.as_bytes().to_vec(), flag(prefix_filtering));
        let props_block = self.props.encode_block();
        let props_handle = self.write_block(&props_block, CompressionType::None)?;
        meta.push((PROPERTIES_BLOCK, props_handle));
        meta.sort_by(|a, b| a.0.cmp(b.0));
        let mut metaindex = BlockBuilder::new(1);
        for (name, h) in &meta {
            metaindex.add(name.as_bytes(), &h.encode());
        }
        let metaindex_raw = metaindex.finish().to_vec();
        let metaindex_handle = self.write_block(&metaindex_raw, CompressionType::None)?;
        let footer = Footer {
            kind: super::footer::TableKind::BlockBased,
            checksum_type: self.opts.checksum,
            metaindex_handle,
            index_handle,
            format_version: self.opts.format_version,
            offset: self.offset,
            base_context_checksum: self.base_context_checksum,
        };
        self.file.append(&footer.encode())?;
        self.offset += footer.encode().len() as u64;
        if sync {
            self.file.sync()?;
        }
        self.file.close()?;
        self.finished = true;
        if self.info.smallest_seqno == u64::MAX {
            self.info.smallest_seqno = 0;
        }
        self.info.file_size = self.offset;
        self.info.num_entries = self.props.num_entries;
        self.info.properties = std::mem::take(&mut self.props);
        Ok(std::mem::take(&mut self.info))
    }

    /// The user key of the last point entry added.
    pub fn last_user_key(&self) -> &[u8] {
        extract_user_key(&self.last_key)
    }
}
