//! Opens and reads a PlainTable file (RocksDB's `PlainTableReader`).
//!
//! The whole file is read into memory at open (PlainTable is RocksDB's
//! format for data that lives in RAM; RocksDB maps it with
//! `allow_mmap_reads`), and one pass over the entries validates them and
//! builds what lookups need:
//! * the **prefix hash index** and **bloom** of prefix mode (from the file
//!   when it stores them for the same prefix extractor, else rebuilt as
//!   RocksDB rebuilds them), used by point lookups and prefix seeks;
//! * a **sparse offset index** (every 16th decodable entry), used for
//!   total-order seeks, reverse iteration and approximate offsets, which
//!   RocksDB's reader does not offer.
//!
//! Invariants: every offset the reader decodes at is an entry start that
//! the open pass saw (restarts) or one the hash index holds (checked to
//! lie inside the data); decoding never reads outside the data section;
//! damage is `Corruption` naming the file and offset.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::bloom::PlainBloom;
use super::index::{Bucket, INDEX_BLOCK, PlainIndex, PlainIndexBuilder, slice_hash};
use super::key_coding::{EncodingType, Entry, KeyDecoder};
use super::{
    BLOOM_BLOCK, ENCODING_TYPE_PROPERTY, MAX_FILE_SIZE, NUM_BLOOM_BLOCKS_PROPERTY,
    PlainTableOptions,
};
use crate::error::{Error, Result};
use crate::format::dbformat::{InternalKeyComparator, extract_user_key};
use crate::format::iterator::InternalIterator;
use crate::fs::RandomAccessFile;
use crate::table::block::{Block, decode_metaindex};
use crate::table::footer::{BlockHandle, Footer, TableKind};
use crate::table::options::TableOptions;
use crate::table::table_properties::{PROPERTIES_BLOCK, PROPERTIES_BLOCK_OLD, TableProperties};
use crate::util::coding::get_varint32;
use crate::util::slice_transform::SliceTransformRef;

/// Entries between two offsets of the sparse offset index.
const RESTART_INTERVAL: usize = 16;

/// An open PlainTable.
pub struct PlainTable {
    file: Arc<dyn RandomAccessFile>,
    name: Arc<str>,
    file_size: u64,
    footer: Footer,
    meta: BTreeMap<String, BlockHandle>,
    props: TableProperties,
    /// The entries (the file's first `data_size` bytes).
    data: TableBytes,
    icmp: InternalKeyComparator,
    encoding: EncodingType,
    fixed_key_len: u32,
    /// Prefix mode's extractor; `None`: total order only.
    prefix: Option<SliceTransformRef>,
    hash_index: Option<PlainIndex>,
    bloom: Option<PlainBloom>,
    /// The bloom holds prefix hashes (prefix mode), else whole-key hashes.
    bloom_on_prefix: bool,
    /// Offsets of decodable entries, every `RESTART_INTERVAL` or so.
    restarts: Vec<u32>,
    statistics: Option<Arc<crate::util::statistics::Statistics>>,
}

impl std::fmt::Debug for PlainTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainTable")
            .field("name", &self.name)
            .field("file_size", &self.file_size)
            .field("encoding", &self.encoding)
            .field("prefix_mode", &self.prefix.is_some())
            .finish()
    }
}

/// A table's entries: copied into memory, or in place in a memory map
/// (`allow_mmap_reads`).
pub(crate) enum TableBytes {
    Owned(Vec<u8>),
    Mapped(crate::fs::MappedBytes, usize),
}

impl std::ops::Deref for TableBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            TableBytes::Owned(b) => b,
            TableBytes::Mapped(m, len) => &(**m).as_ref()[..*len],
        }
    }
}

/// What one pass over the entries yields.
struct Scan {
    restarts: Vec<u32>,
    index: Option<Vec<u8>>,
    bloom_hashes: Vec<u32>,
    num_prefixes: u32,
}

impl PlainTable {
    /// Opens the PlainTable in `file` whose footer is `footer`.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        name: &str,
        file_size: u64,
        opts: &TableOptions,
        footer: Footer,
    ) -> Result<PlainTable> {
        debug_assert_eq!(footer.kind, TableKind::Plain);
        if file_size > MAX_FILE_SIZE {
            return Err(Error::NotSupported(format!(
                "{name}: File is too large for PlainTableReader! ({file_size} bytes)"
            )));
        }
        // The whole file: mapped in place, or read into memory.
        let mapped = file
            .mapped()
            .filter(|m| (**m).as_ref().len() as u64 == file_size);
        let mut read = Vec::new();
        let bytes: &[u8] = match &mapped {
            Some(m) => (**m).as_ref(),
            None => {
                read = crate::fs::read_exact_at(&*file, name, 0, file_size as usize)?;
                &read
            }
        };
        let name: Arc<str> = Arc::from(name);
        let (meta, props) = read_meta(&name, &footer, |h| Ok(Arc::from(block_bytes(bytes, h))))?;
        let data_end = props.data_size;
        let first_meta = meta
            .values()
            .map(|h| h.offset)
            .chain([footer.metaindex_handle.offset])
            .min()
            .unwrap_or(footer.offset);
        if data_end > first_meta {
            return Err(Error::corruption(
                &*name,
                footer.offset,
                format!("data size {data_end} runs into the meta blocks at {first_meta}"),
            ));
        }
        let encoding = match props.user_property(ENCODING_TYPE_PROPERTY) {
            None => EncodingType::Plain,
            Some(v) => {
                let code = crate::util::coding::decode_fixed32(v, 0).unwrap_or(u32::MAX);
                EncodingType::from_code(code).ok_or_else(|| {
                    Error::NotSupported(format!("{name}: PlainTable encoding type {code}"))
                })?
            }
        };
        let fixed_key_len = u32::try_from(props.fixed_key_len).map_err(|_| {
            Error::corruption(
                &*name,
                0,
                format!("bad fixed key length {}", props.fixed_key_len),
            )
        })?;
        let popts = opts.plain.clone().unwrap_or_default();
        let file_prefix = match props.prefix_extractor_name.as_slice() {
            b"" | b"nullptr" => None,
            n => Some(String::from_utf8_lossy(n).into_owned()),
        };
        // Prefix mode needs the reader's extractor; a table built with
        // another one is read in total order (RocksDB refuses to open it).
        let prefix = opts.prefix_extractor.clone().filter(|pe| {
            popts.hash_table_ratio > 0.0
                && !popts.full_scan_mode
                && file_prefix.as_ref().is_none_or(|n| *n == pe.name())
        });
        let same_mode = match (&prefix, &file_prefix) {
            (Some(pe), Some(n)) => pe.name() == *n,
            (None, None) => true,
            _ => false,
        };
        let stored_index = match (meta.get(INDEX_BLOCK), &prefix) {
            (Some(&h), Some(_)) if same_mode => {
                PlainIndex::parse(block_bytes(bytes, h).to_vec(), data_end as u32)
            }
            _ => None,
        };
        let stored_bloom = match meta.get(BLOOM_BLOCK) {
            Some(&h) if same_mode && !popts.full_scan_mode => {
                let blocks = props
                    .user_property(NUM_BLOOM_BLOCKS_PROPERTY)
                    .and_then(get_varint32)
                    .map_or(0, |(n, _)| n);
                PlainBloom::from_raw(block_bytes(bytes, h).to_vec(), blocks)
            }
            _ => None,
        };
        let icmp = InternalKeyComparator::new(opts.comparator.clone());
        let data_len = data_end as usize;
        let build_index = prefix.is_some() && stored_index.is_none();
        let want_bloom = popts.bloom_bits_per_key > 0 && !popts.full_scan_mode;
        let scan = scan_entries(
            &bytes[..data_len],
            &name,
            &icmp,
            encoding,
            fixed_key_len,
            prefix.as_ref(),
            build_index.then_some(&popts),
            want_bloom && stored_bloom.is_none(),
        )?;
        let hash_index = match (stored_index, scan.index) {
            (Some(i), _) => Some(i),
            (None, Some(raw)) => {
                Some(PlainIndex::parse(raw, data_end as u32).ok_or_else(|| {
                    Error::corruption(&*name, 0, "PlainTable index built at open is malformed")
                })?)
            }
            (None, None) => None,
        };
        let bloom = stored_bloom.or_else(|| {
            (want_bloom && !scan.bloom_hashes.is_empty()).then(|| {
                let n = if prefix.is_some() {
                    scan.num_prefixes
                } else {
                    scan.bloom_hashes.len() as u32
                };
                let bits = n.saturating_mul(popts.bloom_bits_per_key as u32);
                let mut b = PlainBloom::with_total_bits(bits, opts.bloom_locality);
                for &h in &scan.bloom_hashes {
                    b.add_hash(h);
                }
                b
            })
        });
        Ok(PlainTable {
            file,
            name,
            file_size,
            footer,
            meta,
            props,
            data: match mapped {
                Some(m) => TableBytes::Mapped(m, data_len),
                None => {
                    read.truncate(data_len);
                    TableBytes::Owned(read)
                }
            },
            icmp,
            encoding,
            fixed_key_len,
            bloom_on_prefix: prefix.is_some(),
            prefix,
            hash_index,
            bloom,
            restarts: scan.restarts,
            statistics: opts.statistics.clone(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
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

    pub fn meta_blocks(&self) -> &BTreeMap<String, BlockHandle> {
        &self.meta
    }

    /// The key encoding the file uses.
    pub fn encoding(&self) -> EncodingType {
        self.encoding
    }

    /// Whether point lookups go through a prefix hash index.
    pub fn prefix_mode(&self) -> bool {
        self.hash_index.is_some()
    }

    /// Bytes held in memory: the data, index, bloom and offset index.
    pub fn memory_usage(&self) -> u64 {
        let data = match &self.data {
            TableBytes::Owned(b) => b.len(),
            // Mapped pages belong to the page cache.
            TableBytes::Mapped(..) => 0,
        };
        (data
            + self.hash_index.as_ref().map_or(0, PlainIndex::size)
            + self.bloom.as_ref().map_or(0, |b| b.data().len())
            + self.restarts.len() * 4) as u64
    }

    fn prefix_of<'a>(&self, user_key: &'a [u8]) -> Option<&'a [u8]> {
        let pe = self.prefix.as_ref()?;
        pe.in_domain(user_key).then(|| pe.transform(user_key))
    }

    /// False only if the bloom proves `user_key` absent.
    pub fn key_may_match(&self, user_key: &[u8]) -> bool {
        use crate::util::statistics::{Ticker, record};
        let Some(bloom) = &self.bloom else {
            return true;
        };
        let hash = if self.bloom_on_prefix {
            match self.prefix_of(user_key) {
                Some(p) => slice_hash(p),
                None => return true,
            }
        } else {
            slice_hash(user_key)
        };
        let may = bloom.may_contain_hash(hash);
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

    /// Prefetches the bloom line a lookup of `user_key` will probe
    /// (RocksDB's `Prepare`: a lookup prepares every level-0 table before
    /// probing any, so their misses overlap).
    /// The hash index's bucket is loaded too, in parallel.
    pub fn prepare(&self, user_key: &[u8]) {
        match (self.prefix_of(user_key), &self.bloom) {
            (Some(p), bloom) => {
                let hash = slice_hash(p);
                if let Some(b) = bloom {
                    b.prefetch(hash);
                }
                if let Some(index) = &self.hash_index {
                    index.prefetch(hash);
                }
            }
            (None, Some(b)) if !self.bloom_on_prefix => b.prefetch(slice_hash(user_key)),
            (None, _) => {}
        }
    }

    /// False only if no key shares `user_key`'s prefix (prefix mode).
    pub fn prefix_of_key_may_match(&self, user_key: &[u8]) -> bool {
        match (&self.bloom, self.bloom_on_prefix, self.prefix_of(user_key)) {
            (Some(b), true, Some(p)) => b.may_contain_hash(slice_hash(p)),
            _ => true,
        }
    }

    fn corruption(&self, offset: usize, msg: &str) -> Error {
        Error::corruption(&*self.name, offset as u64, msg)
    }

    /// Decodes the (decodable) entry at `offset` with a fresh decoder.
    fn key_at(&self, offset: usize, key: &mut Vec<u8>) -> Result<Entry> {
        KeyDecoder::new(self.encoding, self.fixed_key_len)
            .next_entry(&self.data, offset, key)
            .map_err(|m| self.corruption(offset, m))
    }

    /// The restart to scan from for the first entry >= `target`: the last
    /// one whose key is below it (or the first).
    fn restart_for(&self, target: &[u8]) -> Result<usize> {
        let mut key = Vec::new();
        let (mut lo, mut hi) = (0, self.restarts.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            self.key_at(self.restarts[mid] as usize, &mut key)?;
            if self.icmp.compare(&key, target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(self
            .restarts
            .get(lo.saturating_sub(1))
            .map_or(0, |&r| r as usize))
    }

    /// Where a point lookup of `target` (whose prefix is `prefix`)
    /// starts, by the hash index (RocksDB's `GetOffset`): `None` if the
    /// prefix is absent; otherwise the offset and whether that entry is
    /// known to have the prefix.
    fn hash_start(
        &self,
        index: &PlainIndex,
        target: &[u8],
        prefix: &[u8],
        key: &mut Vec<u8>,
    ) -> Result<Option<(usize, bool)>> {
        let records = match index.bucket(slice_hash(prefix)) {
            Bucket::Empty => return Ok(None),
            Bucket::Offset(o) => return Ok(Some((o as usize, false))),
            Bucket::Records(r) => r,
        };
        let at = |i: usize| {
            u32::from_le_bytes([
                records[4 * i],
                records[4 * i + 1],
                records[4 * i + 2],
                records[4 * i + 3],
            ]) as usize
        };
        let n = records.len() / 4;
        let (mut low, mut high) = (0, n);
        while high - low > 1 {
            let mid = (low + high) / 2;
            self.key_at(at(mid), key)?;
            match self.icmp.compare(key, target) {
                Ordering::Less => low = mid,
                Ordering::Equal => return Ok(Some((at(mid), true))),
                Ordering::Greater => high = mid,
            }
        }
        self.key_at(at(low), key)?;
        if self.prefix_of(extract_user_key(key)) == Some(prefix) {
            Ok(Some((at(low), true)))
        } else if low + 1 < n {
            Ok(Some((at(low + 1), false)))
        } else {
            Ok(None)
        }
    }

    /// Approximate file offset where entries at or after `ikey` begin
    /// (RocksDB's PlainTable answers 0).
    pub fn approximate_offset_of(self: &Arc<Self>, ikey: &[u8]) -> u64 {
        let mut it = self.iter();
        it.seek(ikey);
        if it.valid() {
            it.offset as u64
        } else {
            self.props.data_size
        }
    }

    /// Re-reads the file and decodes every entry (PlainTable stores no
    /// checksums: this is the check there is).
    pub fn verify(&self) -> Result<()> {
        let bytes = crate::fs::read_exact_at(&*self.file, &self.name, 0, self.data.len())?;
        scan_entries(
            &bytes,
            &self.name,
            &self.icmp,
            self.encoding,
            self.fixed_key_len,
            None,
            None,
            false,
        )
        .map(|_| ())
    }

    /// An iterator over all entries; seeks are total order.
    pub fn iter(self: &Arc<Self>) -> PlainTableIter {
        Self::iter_on(Arc::clone(self))
    }

    /// A lookup iterator ([`PlainTable::prefix_iter`]'s) that borrows the
    /// table.
    pub fn lookup_iter(&self) -> PlainTableIter<&PlainTable> {
        let mut it = Self::iter_on(self);
        it.point_lookups = true;
        it
    }

    /// Runs `f` on a point-lookup iterator whose key buffer is this
    /// thread's, kept between lookups (a lookup then allocates nothing).
    pub fn with_lookup_iter<R>(&self, f: impl FnOnce(&mut PlainTableIter<&PlainTable>) -> R) -> R {
        thread_local! {
            static KEY: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
        }
        let mut it = self.lookup_iter();
        // A fresh buffer while the thread's locals are being destroyed.
        it.key = KEY.try_with(std::cell::Cell::take).unwrap_or_default();
        it.key.clear();
        let r = f(&mut it);
        let key = std::mem::take(&mut it.key);
        // A buffer grown by an unusually long key is not kept.
        if key.capacity() <= 4096 {
            let _ = KEY.try_with(|k| k.set(key));
        }
        r
    }

    fn iter_on<T: std::ops::Deref<Target = PlainTable>>(table: T) -> PlainTableIter<T> {
        PlainTableIter {
            decoder: KeyDecoder::new(table.encoding, table.fixed_key_len),
            table,
            key: Vec::new(),
            offset: 0,
            next: 0,
            value: (0, 0),
            valid: false,
            status: None,
            point_lookups: false,
        }
    }

    /// An iterator whose `seek` serves point lookups and prefix seeks
    /// through the hash index: it lands on the first entry >= the target
    /// when the target's prefix is present, and is invalid (or past the
    /// prefix) otherwise. Other moves are as [`PlainTable::iter`]'s.
    pub fn prefix_iter(self: &Arc<Self>) -> PlainTableIter {
        let mut it = self.iter();
        it.point_lookups = true;
        it
    }
}

/// The bytes of a meta block (handles were checked by `read_meta`).
pub(crate) fn block_bytes(bytes: &[u8], h: BlockHandle) -> &[u8] {
    &bytes[h.offset as usize..(h.offset + h.size) as usize]
}

/// Reads the meta-index and the properties (blocks without trailers);
/// `fetch` returns the bytes of a block whose handle was checked to lie
/// before the footer.
pub(crate) fn read_meta(
    name: &Arc<str>,
    footer: &Footer,
    fetch: impl Fn(BlockHandle) -> Result<Arc<[u8]>>,
) -> Result<(BTreeMap<String, BlockHandle>, TableProperties)> {
    let check = |h: BlockHandle, what: &str| {
        if h.offset
            .checked_add(h.size)
            .is_some_and(|e| e <= footer.offset)
        {
            Ok(())
        } else {
            Err(Error::corruption(
                &**name,
                footer.offset,
                format!("bad {what} block handle ({}, {})", h.offset, h.size),
            ))
        }
    };
    check(footer.metaindex_handle, "metaindex")?;
    let block = |h: BlockHandle| -> Result<Arc<Block>> {
        Ok(Arc::new(Block::new(fetch(h)?, name.clone(), h)?))
    };
    let metaindex = block(footer.metaindex_handle)?;
    let meta = decode_metaindex(&metaindex, name, footer.metaindex_handle.offset)?;
    for (what, &h) in &meta {
        check(h, what)?;
    }
    let Some(&h) = meta
        .get(PROPERTIES_BLOCK)
        .or_else(|| meta.get(PROPERTIES_BLOCK_OLD))
    else {
        return Err(Error::corruption(
            &**name,
            footer.metaindex_handle.offset,
            "table has no properties block",
        ));
    };
    let props = TableProperties::decode_block(block(h)?, name, h.offset)?;
    Ok((meta, props))
}

/// The table properties of the PlainTable in `file`, read without
/// loading its data.
pub(crate) fn read_properties(
    file: &dyn RandomAccessFile,
    name: &str,
    footer: &Footer,
) -> Result<TableProperties> {
    let fetch = |h: BlockHandle| {
        Ok(Arc::from(crate::fs::read_exact_at(
            file,
            name,
            h.offset,
            h.size as usize,
        )?))
    };
    Ok(read_meta(&Arc::from(name), footer, fetch)?.1)
}

/// One pass over the entries: checks that each decodes and that keys
/// increase, and collects the offset index, (if `index` is given) the
/// hash index and the bloom hashes.
#[allow(clippy::too_many_arguments)]
fn scan_entries(
    data: &[u8],
    name: &str,
    icmp: &InternalKeyComparator,
    encoding: EncodingType,
    fixed_key_len: u32,
    prefix: Option<&SliceTransformRef>,
    index: Option<&PlainTableOptions>,
    bloom: bool,
) -> Result<Scan> {
    let mut decoder = KeyDecoder::new(encoding, fixed_key_len);
    let mut builder =
        index.map(|o| PlainIndexBuilder::new(true, o.hash_table_ratio, o.index_sparseness));
    let mut restarts = Vec::new();
    let mut bloom_hashes = Vec::new();
    let mut num_prefixes = 0u32;
    let mut since_restart = usize::MAX;
    let (mut key, mut prev) = (Vec::new(), Vec::new());
    let mut prev_prefix: Option<Vec<u8>> = None;
    let mut pos = 0;
    while pos < data.len() {
        let e = decoder
            .next_entry(data, pos, &mut key)
            .map_err(|m| Error::corruption(name, pos as u64, m))?;
        if pos == 0 && !e.seekable {
            return Err(Error::corruption(
                name,
                0,
                "Key for a prefix is not seekable",
            ));
        }
        if !prev.is_empty() && icmp.compare(&prev, &key) != Ordering::Less {
            return Err(Error::corruption(
                name,
                pos as u64,
                "keys are not in increasing order",
            ));
        }
        if e.seekable && since_restart >= RESTART_INTERVAL {
            restarts.push(pos as u32);
            since_restart = 0;
        }
        since_restart += 1;
        let user_key = extract_user_key(&key);
        match prefix {
            Some(pe) => {
                let p = pe.transform(user_key);
                if prev_prefix.as_deref() != Some(p) {
                    num_prefixes += 1;
                    if bloom {
                        bloom_hashes.push(slice_hash(p));
                    }
                    prev_prefix = Some(p.to_vec());
                }
                if let Some(b) = &mut builder {
                    b.add(p, pos as u32, e.seekable);
                }
            }
            None if bloom => bloom_hashes.push(slice_hash(user_key)),
            None => {}
        }
        prev.clear();
        prev.extend_from_slice(&key);
        pos = e.next;
    }
    Ok(Scan {
        restarts,
        index: builder.map(PlainIndexBuilder::finish),
        bloom_hashes,
        num_prefixes,
    })
}

/// An iterator over a PlainTable (both directions; see the module
/// comment). `T` holds the table: an `Arc` (iterators that outlive the
/// caller's borrow) or a reference (point lookups, no reference count
/// touched).
pub struct PlainTableIter<T: std::ops::Deref<Target = PlainTable> = Arc<PlainTable>> {
    table: T,
    decoder: KeyDecoder,
    key: Vec<u8>,
    /// The current entry and the one after it.
    offset: usize,
    next: usize,
    value: (usize, usize),
    valid: bool,
    status: Option<Error>,
    point_lookups: bool,
}

impl<T: std::ops::Deref<Target = PlainTable>> std::fmt::Debug for PlainTableIter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainTableIter")
            .field("table", &self.table.name)
            .field("offset", &self.offset)
            .field("valid", &self.valid)
            .finish()
    }
}

impl<T: std::ops::Deref<Target = PlainTable>> PlainTableIter<T> {
    /// Decodes the entry at `pos`; `fresh`: `pos` is decodable on its own.
    fn decode_at(&mut self, pos: usize, fresh: bool) {
        if pos >= self.table.data.len() {
            self.valid = false;
            return;
        }
        if fresh {
            self.decoder = KeyDecoder::new(self.table.encoding, self.table.fixed_key_len);
        }
        match self
            .decoder
            .next_entry(&self.table.data, pos, &mut self.key)
        {
            Ok(e) => {
                self.offset = pos;
                self.next = e.next;
                self.value = (e.value_start, e.value_len);
                self.valid = true;
            }
            Err(m) => {
                self.status = Some(self.table.corruption(pos, m));
                self.valid = false;
            }
        }
    }

    fn fail(&mut self, e: Error) {
        self.status = Some(e);
        self.valid = false;
    }

    fn total_order_seek(&mut self, target: &[u8]) {
        match self.table.restart_for(target) {
            Ok(start) => self.decode_at(start, true),
            Err(e) => return self.fail(e),
        }
        while self.valid && self.table.icmp.compare(&self.key, target) == Ordering::Less {
            self.decode_at(self.next, false);
        }
    }

    /// RocksDB's prefix seek through the hash index. Returns false if the
    /// target has no prefix (the caller seeks in total order).
    fn hash_seek(&mut self, target: &[u8]) -> bool {
        let table: &PlainTable = &self.table;
        let (Some(index), Some(prefix)) =
            (&table.hash_index, table.prefix_of(extract_user_key(target)))
        else {
            return false;
        };
        // The callers (point lookups, prefix seeks) asked the bloom first.
        let found = table.hash_start(index, target, prefix, &mut self.key);
        self.valid = false;
        let (start, mut matched) = match found {
            Ok(Some(s)) => s,
            Ok(None) => return true,
            Err(e) => {
                self.fail(e);
                return true;
            }
        };
        self.decode_at(start, true);
        while self.valid {
            if !matched {
                if self.table.prefix_of(extract_user_key(&self.key)) != Some(prefix) {
                    self.valid = false;
                    return true;
                }
                matched = true;
            }
            if self.table.icmp.compare(&self.key, target) != Ordering::Less {
                return true;
            }
            self.decode_at(self.next, false);
        }
        true
    }
}

impl<T: std::ops::Deref<Target = PlainTable> + Send> InternalIterator for PlainTableIter<T> {
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek_to_first(&mut self) {
        self.status = None;
        self.decode_at(0, true);
    }

    fn seek_to_last(&mut self) {
        self.status = None;
        match self.table.restarts.last() {
            Some(&r) => self.decode_at(r as usize, true),
            None => self.valid = false,
        }
        while self.valid && self.next < self.table.data.len() {
            self.decode_at(self.next, false);
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.status = None;
        if self.point_lookups && self.hash_seek(target) {
            return;
        }
        self.total_order_seek(target);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.status = None;
        self.total_order_seek(target);
        if self.status.is_some() {
            return;
        }
        if !self.valid {
            self.seek_to_last();
        } else if self.table.icmp.compare(&self.key, target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid);
        self.decode_at(self.next, false);
    }

    fn prev(&mut self) {
        debug_assert!(self.valid);
        let current = self.offset;
        let restarts = &self.table.restarts;
        let i = restarts.partition_point(|&r| (r as usize) < current);
        if i == 0 {
            self.valid = false;
            return;
        }
        let start = restarts[i - 1] as usize;
        self.decode_at(start, true);
        while self.valid && self.next < current {
            self.decode_at(self.next, false);
        }
        if self.valid && self.next != current {
            let e = self
                .table
                .corruption(current, "entry boundaries disagree on a step back");
            self.fail(e);
        }
    }

    fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.key
    }

    fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.table.data[self.value.0..self.value.0 + self.value.1]
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
