//! Reading partitioned indexes and partitioned filters (RocksDB's
//! `kTwoLevelIndexSearch` with `partition_filters`).
//!
//! A partitioned index is a small top-level index whose entries map the
//! last separator of each partition to the partition's handle; each
//! partition is an ordinary index block (same key form and value encoding
//! as the table's properties say). [`IndexIter`] walks either form: a flat
//! index block, or the top level and one partition at a time, loading
//! partitions through the block cache (when the table has one) so index
//! memory stays bounded by the cache.
//!
//! A partitioned filter is a top-level index over filter partitions, each
//! a full filter. A whole-key probe reads the one partition whose range
//! holds the key (the last one for keys past every separator, as RocksDB's
//! `GetFilterPartitionHandle`). Prefix probes answer "may match": a
//! prefix's keys can span partitions, and saying so is always correct.
//!
//! Invariant: every handle taken from a top-level block is bounds-checked
//! by the block read; a partition that fails to read or parse makes the
//! iterator invalid with that error (never a panic, never skipped data).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::block::{Block, BlockIter, KeyOrder};
use super::filter::FilterReader;
use super::footer::{BlockHandle, BlockReadOptions, read_block};
use super::options::BlockCacheApi;
use crate::error::{Error, Result};
use crate::format::iterator::InternalIterator;
use crate::fs::RandomAccessFile;

/// Where index partitions come from: the table's file, read options and
/// block cache.
pub(crate) struct PartitionSource {
    pub file: Arc<dyn RandomAccessFile>,
    pub name: Arc<str>,
    pub read_opts: BlockReadOptions,
    pub cache: Option<Arc<dyn BlockCacheApi>>,
    pub cache_id: u64,
    pub order: KeyOrder,
    pub value_delta: bool,
}

impl PartitionSource {
    /// The parsed block at `h`, from the cache or (unless `no_io`:
    /// `Incomplete`) the file.
    pub(crate) fn block(&self, h: BlockHandle, no_io: bool) -> Result<Arc<Block>> {
        self.fetch(h, no_io, false)
    }

    /// [`PartitionSource::block`] for a block that is not entries (a
    /// filter): kept as [`Block::opaque`].
    pub(crate) fn opaque_block(&self, h: BlockHandle, no_io: bool) -> Result<Arc<Block>> {
        self.fetch(h, no_io, true)
    }

    fn fetch(&self, h: BlockHandle, no_io: bool, opaque: bool) -> Result<Arc<Block>> {
        // A block cached in the other form (a damaged handle naming a
        // filter as an index block, or the reverse) is read again in the
        // form asked for, so its bytes are checked for what they must be.
        if let Some(c) = &self.cache
            && let Some(b) = c.lookup(self.cache_id, h.offset)
            && b.is_opaque() == opaque
        {
            return Ok(b);
        }
        if no_io {
            return Err(no_blocking_io(&self.name, h));
        }
        let contents = read_block(&*self.file, &self.name, h, &self.read_opts)?;
        let b = Arc::new(if opaque {
            Block::opaque(contents.data, self.name.clone(), h)
        } else {
            Block::new(contents.data, self.name.clone(), h)?
        });
        if let Some(c) = &self.cache {
            c.insert(self.cache_id, h.offset, Arc::clone(&b));
        }
        Ok(b)
    }
}

/// An iterator over a table's index entries (separator -> data block
/// handle), whatever the index's form.
// The flat form is every read's hot path: it stays inline (no box), the
// rare two-level form is boxed.
#[allow(clippy::large_enum_variant)]
pub enum IndexIter {
    Flat(BlockIter),
    TwoLevel(Box<TwoLevelIter>),
}

/// The top-level iterator and the current partition's.
pub struct TwoLevelIter {
    top: BlockIter,
    inner: Option<BlockIter>,
    inner_handle: Option<BlockHandle>,
    src: Arc<PartitionSource>,
    status: Option<Error>,
    /// Partitions not in the block cache are `Incomplete`, not read.
    no_io: bool,
}

/// The error of a block a read may not fetch (`ReadTier::BlockCache`;
/// RocksDB's "no blocking io").
pub(crate) fn no_blocking_io(file: &str, h: BlockHandle) -> Error {
    Error::Incomplete(format!(
        "no blocking io: block at offset {} of {file} is not in the block cache",
        h.offset
    ))
}

impl std::fmt::Debug for IndexIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexIter::Flat(_) => write!(f, "IndexIter::Flat"),
            IndexIter::TwoLevel(t) => write!(f, "IndexIter::TwoLevel({:?})", t.inner_handle),
        }
    }
}

impl std::fmt::Debug for TwoLevelIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TwoLevelIter({:?})", self.inner_handle)
    }
}

impl IndexIter {
    pub(crate) fn two_level(top: BlockIter, src: Arc<PartitionSource>) -> IndexIter {
        IndexIter::TwoLevel(Box::new(TwoLevelIter {
            top,
            inner: None,
            inner_handle: None,
            src,
            status: None,
            no_io: false,
        }))
    }

    /// Reads no partition that is not in the block cache (`Incomplete`).
    pub(crate) fn set_no_io(&mut self) {
        if let IndexIter::TwoLevel(t) = self {
            t.no_io = true;
        }
    }
}

impl TwoLevelIter {
    /// Loads the partition the top-level iterator points at.
    fn load(&mut self) {
        if !self.top.valid() {
            self.inner = None;
            self.inner_handle = None;
            return;
        }
        let Some(h) = BlockHandle::decode(self.top.value()) else {
            self.fail(Error::corruption(
                &*self.src.name,
                0,
                "bad partition handle in the top-level index",
            ));
            return;
        };
        if self.inner.is_some() && self.inner_handle == Some(h) {
            return;
        }
        match self.src.block(h, self.no_io) {
            Ok(b) => {
                self.inner = Some(b.iter(self.src.order.clone(), self.src.value_delta));
                self.inner_handle = Some(h);
            }
            Err(e) => self.fail(e),
        }
    }

    fn fail(&mut self, e: Error) {
        if self.status.is_none() {
            self.status = Some(e);
        }
        self.inner = None;
        self.inner_handle = None;
    }

    fn inner_valid(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.valid())
    }

    /// Moves past empty or exhausted partitions.
    fn skip(&mut self, forward: bool) {
        while !self.inner_valid() {
            if let Some(i) = &self.inner
                && let Err(e) = i.status()
            {
                return self.fail(e);
            }
            if self.status.is_some() || !self.top.valid() {
                self.inner = None;
                return;
            }
            if forward {
                self.top.next();
            } else {
                self.top.prev();
            }
            self.load();
            if let Some(i) = &mut self.inner {
                if forward {
                    i.seek_to_first();
                } else {
                    i.seek_to_last();
                }
            }
        }
    }
}

impl InternalIterator for IndexIter {
    fn valid(&self) -> bool {
        match self {
            IndexIter::Flat(b) => b.valid(),
            IndexIter::TwoLevel(t) => t.status.is_none() && t.inner_valid(),
        }
    }

    fn seek_to_first(&mut self) {
        match self {
            IndexIter::Flat(b) => b.seek_to_first(),
            IndexIter::TwoLevel(t) => {
                t.status = None;
                t.top.seek_to_first();
                t.load();
                if let Some(i) = &mut t.inner {
                    i.seek_to_first();
                }
                t.skip(true);
            }
        }
    }

    fn seek_to_last(&mut self) {
        match self {
            IndexIter::Flat(b) => b.seek_to_last(),
            IndexIter::TwoLevel(t) => {
                t.status = None;
                t.top.seek_to_last();
                t.load();
                if let Some(i) = &mut t.inner {
                    i.seek_to_last();
                }
                t.skip(false);
            }
        }
    }

    fn seek(&mut self, target: &[u8]) {
        match self {
            IndexIter::Flat(b) => b.seek(target),
            IndexIter::TwoLevel(t) => {
                t.status = None;
                t.top.seek(target);
                t.load();
                if let Some(i) = &mut t.inner {
                    i.seek(target);
                }
                t.skip(true);
            }
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        match self {
            IndexIter::Flat(b) => b.seek_for_prev(target),
            IndexIter::TwoLevel(_) => {
                // Index entries are separators: the block that may hold
                // `target` is the first whose separator is >= it.
                self.seek(target);
                if !self.valid() && self.status().is_ok() {
                    self.seek_to_last();
                }
            }
        }
    }

    fn next(&mut self) {
        match self {
            IndexIter::Flat(b) => b.next(),
            IndexIter::TwoLevel(t) => {
                if let Some(i) = &mut t.inner {
                    i.next();
                }
                t.skip(true);
            }
        }
    }

    fn prev(&mut self) {
        match self {
            IndexIter::Flat(b) => b.prev(),
            IndexIter::TwoLevel(t) => {
                if let Some(i) = &mut t.inner {
                    i.prev();
                }
                t.skip(false);
            }
        }
    }

    fn key(&self) -> &[u8] {
        match self {
            IndexIter::Flat(b) => b.key(),
            IndexIter::TwoLevel(t) => t.inner.as_ref().map_or(&[], |i| i.key()),
        }
    }

    fn value(&self) -> &[u8] {
        match self {
            IndexIter::Flat(b) => b.value(),
            IndexIter::TwoLevel(t) => t.inner.as_ref().map_or(&[], |i| i.value()),
        }
    }

    fn status(&self) -> Result<()> {
        match self {
            IndexIter::Flat(b) => b.status(),
            IndexIter::TwoLevel(t) => {
                if let Some(e) = &t.status {
                    return Err(e.duplicate());
                }
                if let Some(i) = &t.inner {
                    i.status()?;
                }
                t.top.status()
            }
        }
    }
}

/// A table's partitioned filter: the top-level index over filter
/// partitions, and the partitions probed so far (kept, like a full
/// filter, for the table's lifetime).
pub(crate) struct PartitionedFilter {
    /// The top level, when the reader holds it (else a block-cache entry).
    top: Option<Arc<Block>>,
    /// Handle of the top-level block.
    top_handle: BlockHandle,
    src: Arc<PartitionSource>,
    /// Partitions probed so far, when the reader holds them; `None`: they
    /// are block-cache entries (`cache_index_and_filter_blocks`).
    loaded: Option<Mutex<HashMap<u64, Arc<FilterReader>>>>,
}

impl PartitionedFilter {
    /// A filter whose top level is `top` (held) or, if `None`, read
    /// through the block cache at `top_handle`; partitions are held once
    /// probed unless `cached`.
    pub(crate) fn new(
        top: Option<Arc<Block>>,
        top_handle: BlockHandle,
        src: Arc<PartitionSource>,
        cached: bool,
    ) -> Self {
        PartitionedFilter {
            top,
            top_handle,
            src,
            loaded: (!cached).then(|| Mutex::new(HashMap::new())),
        }
    }

    fn top(&self, no_io: bool) -> Result<Arc<Block>> {
        match &self.top {
            Some(t) => Ok(Arc::clone(t)),
            None => self.src.block(self.top_handle, no_io),
        }
    }

    /// False only if the partition that would hold `lookup_key` (an
    /// internal key at the lookup's sequence) proves `user_key` absent.
    /// A partition that cannot be read answers "may match": the data
    /// read that follows reports the damage.
    /// With `no_io`, a partition not probed before answers "may match".
    pub(crate) fn key_may_match(&self, lookup_key: &[u8], user_key: &[u8], no_io: bool) -> bool {
        let Ok(top) = self.top(no_io) else {
            return true;
        };
        let mut it = top.iter(self.src.order.clone(), self.src.value_delta);
        it.seek(lookup_key);
        if !it.valid() {
            it.seek_to_last();
        }
        let Some(h) = it
            .valid()
            .then(|| BlockHandle::decode(it.value()))
            .flatten()
        else {
            return true;
        };
        match self.partition(h, no_io) {
            Some(f) => f.key_may_match(user_key),
            None => true,
        }
    }

    /// Bytes the reader holds: the top level (if held) and the partitions
    /// probed so far (if held).
    pub(crate) fn memory_usage(&self) -> usize {
        let loaded: usize = self
            .loaded
            .as_ref()
            .and_then(|l| l.lock().ok().map(|m| m.values().map(|f| f.size()).sum()))
            .unwrap_or(0);
        self.top.as_ref().map_or(0, |t| t.size()) + loaded
    }

    /// Every filter partition's handle, in order.
    pub(crate) fn partition_handles(&self) -> Result<Vec<BlockHandle>> {
        let it = self
            .top(false)?
            .iter(self.src.order.clone(), self.src.value_delta);
        partition_handles(it, &self.src.name, self.top_handle.offset)
    }

    fn partition(&self, h: BlockHandle, no_io: bool) -> Option<Arc<FilterReader>> {
        let Some(loaded) = &self.loaded else {
            // A block-cache entry: the reader over the cached bytes.
            let b = self.src.opaque_block(h, no_io).ok()?;
            return Some(Arc::new(FilterReader::from_shared(Arc::clone(b.data()))));
        };
        if let Some(f) = loaded.lock().ok()?.get(&h.offset) {
            return Some(Arc::clone(f));
        }
        if no_io {
            return None;
        }
        let c = read_block(&*self.src.file, &self.src.name, h, &self.src.read_opts).ok()?;
        let f = Arc::new(FilterReader::new(c.data.to_vec()));
        loaded.lock().ok()?.insert(h.offset, Arc::clone(&f));
        Some(f)
    }
}

/// The handles a top-level block (index or filter) lists, in order; a
/// handle that does not decode is corruption at `offset` of `file`.
pub(crate) fn partition_handles(
    mut top: BlockIter,
    file: &str,
    offset: u64,
) -> Result<Vec<BlockHandle>> {
    let mut out = Vec::new();
    top.seek_to_first();
    while top.valid() {
        out.push(BlockHandle::decode(top.value()).ok_or_else(|| {
            Error::corruption(file, offset, "bad partition handle in a top-level block")
        })?);
        top.next();
    }
    top.status()?;
    Ok(out)
}
