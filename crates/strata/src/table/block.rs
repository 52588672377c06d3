//! A decoded block and its iterator (RocksDB `table/block_based/block.cc`):
//! binary search over restart points, then a linear scan of
//! prefix-compressed entries.
//!
//! Invariants: every offset read from the block is bounds-checked before
//! use, so malformed bytes make the iterator invalid with a Corruption
//! status naming the file and offset, never a panic; while valid, `key`
//! holds the fully reconstructed key of the entry at `current`.

use std::cmp::Ordering;
use std::sync::Arc;

use super::footer::BlockHandle;
use crate::error::{Error, Result};
use crate::format::dbformat::{InternalKeyComparator, extract_user_key};
use crate::format::iterator::InternalIterator;
use crate::util::coding::{Decoder, decode_fixed16, decode_fixed32};
use crate::util::comparator::{ComparatorRef, bytewise_compare};

/// Blocks larger than this cannot carry a data-block hash index, so bit 31
/// of their footer is part of the restart count.
const MAX_BLOCK_SIZE_FOR_HASH_INDEX: usize = 1 << 16;

/// How the keys of a block are ordered.
#[derive(Clone)]
pub enum KeyOrder {
    /// Plain byte order (meta-index and properties blocks).
    Bytewise,
    /// Internal keys (data blocks, index blocks with internal keys).
    Internal(InternalKeyComparator),
    /// User keys compared with the user comparator (index blocks whose keys
    /// are user keys); seek targets are internal keys and are stripped.
    User(ComparatorRef),
    /// `User` with the bytewise comparator, compared inline.
    UserBytewise,
}

impl KeyOrder {
    /// The order of index blocks whose keys are user keys of `cmp`.
    pub fn user(cmp: &ComparatorRef) -> KeyOrder {
        if cmp.is_bytewise() {
            KeyOrder::UserBytewise
        } else {
            KeyOrder::User(cmp.clone())
        }
    }
}

impl std::fmt::Debug for KeyOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyOrder::Bytewise => write!(f, "Bytewise"),
            KeyOrder::Internal(c) => write!(f, "Internal({c:?})"),
            KeyOrder::User(c) => write!(f, "User({})", c.name()),
            KeyOrder::UserBytewise => write!(f, "User(leveldb.BytewiseComparator)"),
        }
    }
}

impl KeyOrder {
    /// Compares a block key with a seek target (an internal key, or a plain
    /// key for `Bytewise`).
    #[inline]
    fn compare_to_target(&self, block_key: &[u8], target: &[u8]) -> Ordering {
        match self {
            KeyOrder::Bytewise => block_key.cmp(target),
            KeyOrder::Internal(c) => c.compare(block_key, target),
            KeyOrder::User(c) => c.compare(block_key, extract_user_key(target)),
            KeyOrder::UserBytewise => bytewise_compare(block_key, extract_user_key(target)),
        }
    }
}

/// An immutable, validated block.
#[derive(Clone)]
pub struct Block {
    data: Arc<[u8]>,
    /// Start of the restart array = end of the entries.
    restart_offset: usize,
    num_restarts: usize,
    file: Arc<str>,
    /// File offset of the block (for error messages).
    offset: u64,
    /// Bytes kept as they are ([`Block::opaque`]: a filter), not entries.
    opaque: bool,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("file", &self.file)
            .field("offset", &self.offset)
            .field("size", &self.data.len())
            .field("num_restarts", &self.num_restarts)
            .finish()
    }
}

impl Block {
    /// Parses the block trailer (restart array). `file`/`handle` are used
    /// only to name the block in errors.
    pub fn new(data: Arc<[u8]>, file: Arc<str>, handle: BlockHandle) -> Result<Block> {
        let size = data.len();
        let bad = |msg: String| Error::corruption(&*file, handle.offset, msg);
        let footer = decode_fixed32(&data, size.wrapping_sub(4)).ok_or_else(|| {
            bad(format!(
                "bad block contents: block of {size} bytes is too short"
            ))
        })?;
        let (num_restarts, restarts_end) =
            if size <= MAX_BLOCK_SIZE_FOR_HASH_INDEX && footer & (1 << 31) != 0 {
                // Data block with a hash index: [restarts][buckets][num_buckets: u16][footer].
                let num_buckets = decode_fixed16(&data, size.wrapping_sub(6))
                    .ok_or_else(|| bad("bad data block hash index".into()))?;
                let end = size
                    .checked_sub(6 + usize::from(num_buckets))
                    .ok_or_else(|| bad("bad data block hash index".into()))?;
                ((footer & 0x7fff_ffff) as usize, end)
            } else {
                (footer as usize, size - 4)
            };
        let restart_offset = num_restarts
            .checked_mul(4)
            .and_then(|n| restarts_end.checked_sub(n))
            .ok_or_else(|| {
                bad(format!(
                    "bad block contents: {num_restarts} restarts in {size} bytes"
                ))
            })?;
        if num_restarts == 0 && restart_offset > 0 {
            return Err(bad(
                "bad block contents: entries without restart points".into()
            ));
        }
        Ok(Block {
            data,
            restart_offset,
            num_restarts,
            file,
            offset: handle.offset,
            opaque: false,
        })
    }

    /// A block whose bytes are not entries (a filter), kept as is so it
    /// can live in the block cache; its iterators see no entries.
    pub fn opaque(data: Arc<[u8]>, file: Arc<str>, handle: BlockHandle) -> Block {
        Block {
            data,
            restart_offset: 0,
            num_restarts: 0,
            file,
            offset: handle.offset,
            opaque: true,
        }
    }

    /// Whether the block was kept as bytes ([`Block::opaque`]), not parsed.
    pub fn is_opaque(&self) -> bool {
        self.opaque
    }

    /// An iterator over no entries whose status is `err` (a block that
    /// could not be read).
    pub fn failed_iter(err: Error) -> BlockIter {
        let empty = Arc::new(Block::opaque(
            Arc::from(&[][..]),
            Arc::from(""),
            BlockHandle::default(),
        ));
        let mut it = empty.iter(KeyOrder::Bytewise, false);
        it.status = Some(err);
        it
    }

    /// Parses a block held in memory (tests and meta blocks).
    pub fn from_vec(data: Vec<u8>) -> Result<Block> {
        Self::new(data.into(), Arc::from(""), BlockHandle::default())
    }

    pub fn size(&self) -> usize {
        self.data.len()
    }

    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// The raw bytes.
    pub fn data(&self) -> &Arc<[u8]> {
        &self.data
    }

    /// An iterator over the block. `value_delta_encoded` selects the
    /// index-block entry form without `value_len` whose values are block
    /// handles, delta-encoded after restart points.
    pub fn iter(self: &Arc<Self>, order: KeyOrder, value_delta_encoded: bool) -> BlockIter {
        self.index_iter(order, value_delta_encoded, false)
    }

    /// An iterator over an index block whose values may also carry each
    /// data block's first internal key after its handle (`has_first_key`:
    /// `kBinarySearchWithFirstKey`). [`InternalIterator::value`] is the
    /// handle, followed by the first key when the values are not
    /// delta-encoded (callers decode the handle and ignore the rest).
    pub fn index_iter(
        self: &Arc<Self>,
        order: KeyOrder,
        value_delta_encoded: bool,
        has_first_key: bool,
    ) -> BlockIter {
        BlockIter {
            block: Arc::clone(self),
            order,
            delta: value_delta_encoded,
            first_key: has_first_key,
            current: self.restart_offset,
            next: self.restart_offset,
            restart_index: self.num_restarts,
            key: Vec::new(),
            value: (0, 0),
            handle_buf: Vec::new(),
            prev_handle: None,
            status: None,
            prev_cache: Vec::new(),
            prev_keys: Vec::new(),
            prev_pos: 0,
        }
    }
}

/// Iterator over one block's entries.
pub struct BlockIter {
    block: Arc<Block>,
    order: KeyOrder,
    delta: bool,
    /// Delta-encoded index values are followed by a length-prefixed first
    /// key (`kBinarySearchWithFirstKey`), which decoding skips.
    first_key: bool,
    /// Offset of the current entry; `>= restart_offset` means invalid.
    current: usize,
    /// Offset just past the current entry.
    next: usize,
    /// Index of the restart point at or before `current`.
    restart_index: usize,
    key: Vec<u8>,
    /// Value as (offset, len) in the block (normal entries).
    value: (usize, usize),
    /// Decoded handle, re-encoded plainly (delta-encoded index entries).
    handle_buf: Vec<u8>,
    prev_handle: Option<BlockHandle>,
    status: Option<Error>,
    /// Entries of one restart interval decoded by the last `prev` that had
    /// to scan (RocksDB's `prev_entries_`), so stepping back through the
    /// interval parses it once. Entries are identified by their offset;
    /// the block is immutable, so a cached entry never goes stale.
    prev_cache: Vec<CachedEntry>,
    /// The keys of `prev_cache`, back to back.
    prev_keys: Vec<u8>,
    /// Index in `prev_cache` of the entry `prev` last returned.
    prev_pos: usize,
}

/// One decoded entry of a restart interval (see `BlockIter::prev_cache`).
#[derive(Clone, Copy)]
struct CachedEntry {
    current: usize,
    next: usize,
    restart_index: usize,
    value: (usize, usize),
    key_start: usize,
    key_len: usize,
}

impl std::fmt::Debug for BlockIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockIter")
            .field("block", &self.block)
            .field("current", &self.current)
            .finish()
    }
}

impl BlockIter {
    fn corrupt(&mut self, at: usize, msg: &str) {
        if self.status.is_none() {
            self.status = Some(Error::corruption(
                &*self.block.file,
                self.block.offset + at as u64,
                format!("bad entry in block: {msg}"),
            ));
        }
        self.current = self.block.restart_offset;
        self.next = self.block.restart_offset;
        self.restart_index = self.block.num_restarts;
        self.key.clear();
    }

    fn restart_point(&self, index: usize) -> Option<usize> {
        let pos = self.block.restart_offset + index * 4;
        let off = decode_fixed32(&self.block.data, pos)? as usize;
        (off <= self.block.restart_offset).then_some(off)
    }

    fn seek_to_restart(&mut self, index: usize) -> bool {
        match self.restart_point(index) {
            Some(off) => {
                self.key.clear();
                self.restart_index = index;
                self.next = off;
                self.prev_handle = None;
                true
            }
            None => {
                self.corrupt(
                    self.block.restart_offset + index * 4,
                    "restart point out of range",
                );
                false
            }
        }
    }

    /// Decodes the entry at `self.next`. Returns false at the end of the
    /// entries or on corruption.
    #[inline]
    fn parse_next(&mut self) -> bool {
        let start = self.next;
        let limit = self.block.restart_offset;
        if start >= limit {
            self.current = limit;
            self.restart_index = self.block.num_restarts;
            return false;
        }
        match self.decode_entry(start) {
            Ok(()) => true,
            Err(msg) => {
                self.corrupt(start, msg);
                false
            }
        }
    }

    /// Decodes the entry at `start` (< restart_offset) into `key`/`value`
    /// and advances `current`, `next` and `restart_index`.
    #[inline]
    fn decode_entry(&mut self, start: usize) -> std::result::Result<(), &'static str> {
        // Disjoint field borrows: the block's bytes stay borrowed while
        // `key` is rebuilt (no reference-count traffic per entry).
        let data = &self.block.data[..self.block.restart_offset];
        let entry = &data[start..];
        // Fast path (as RocksDB's DecodeEntry): all three lengths fit in
        // one byte each.
        let (shared, non_shared, value_len, header) =
            if !self.delta && entry.len() >= 3 && (entry[0] | entry[1] | entry[2]) < 0x80 {
                (entry[0] as usize, entry[1] as usize, entry[2] as usize, 3)
            } else {
                let mut d = Decoder::new(entry);
                let (Some(shared), Some(non_shared)) = (d.varint32(), d.varint32()) else {
                    return Err("bad key lengths");
                };
                let value_len = if self.delta {
                    0
                } else {
                    d.varint32().ok_or("bad value length")? as usize
                };
                (
                    shared as usize,
                    non_shared as usize,
                    value_len,
                    d.position(),
                )
            };
        if shared > self.key.len() {
            return Err("shared prefix longer than previous key");
        }
        let key_end = header
            .checked_add(non_shared)
            .filter(|e| *e <= entry.len())
            .ok_or("key runs past the end of the entries")?;
        self.key.truncate(shared);
        self.key.extend_from_slice(&entry[header..key_end]);
        let consumed = if self.delta {
            let mut d = Decoder::new(&entry[key_end..]);
            let handle = if shared == 0 {
                BlockHandle::decode_from(&mut d)
            } else {
                match (d.varsigned64(), self.prev_handle) {
                    (Some(delta), Some(prev)) => {
                        let size = (prev.size as i64).checked_add(delta).filter(|s| *s >= 0);
                        size.map(|s| BlockHandle::new(prev.offset + prev.size + 5, s as u64))
                    }
                    _ => None,
                }
            };
            let handle = handle.ok_or("bad delta-encoded block handle")?;
            if self.first_key {
                d.length_prefixed()
                    .ok_or("bad first key of an index entry")?;
            }
            self.prev_handle = Some(handle);
            self.handle_buf.clear();
            handle.encode_to(&mut self.handle_buf);
            self.value = (0, 0);
            key_end + d.position()
        } else {
            let value_end = key_end
                .checked_add(value_len)
                .filter(|e| *e <= entry.len())
                .ok_or("value runs past the end of the entries")?;
            self.value = (start + key_end, value_len);
            value_end
        };
        self.current = start;
        self.next = start + consumed;
        while self.restart_index + 1 < self.block.num_restarts
            && self
                .restart_point(self.restart_index + 1)
                .is_some_and(|r| r <= self.current)
        {
            self.restart_index += 1;
        }
        Ok(())
    }

    /// Key stored at restart point `index` (restart entries share nothing).
    fn restart_key(&mut self, index: usize) -> Option<(usize, usize)> {
        let off = self.restart_point(index)?;
        let limit = self.block.restart_offset;
        let mut d = Decoder::new(self.block.data.get(off..limit)?);
        let shared = d.varint32()?;
        let non_shared = d.varint32()? as usize;
        if !self.delta {
            d.varint32()?;
        }
        if shared != 0 {
            return None;
        }
        let kstart = off + d.position();
        d.bytes(non_shared)?;
        Some((kstart, non_shared))
    }

    fn is_valid(&self) -> bool {
        self.current < self.block.restart_offset
    }
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.is_valid()
    }

    fn seek_to_first(&mut self) {
        if self.block.num_restarts == 0 {
            self.current = self.block.restart_offset;
            return;
        }
        if self.seek_to_restart(0) {
            self.parse_next();
        }
    }

    fn seek_to_last(&mut self) {
        if self.block.num_restarts == 0 {
            self.current = self.block.restart_offset;
            return;
        }
        if !self.seek_to_restart(self.block.num_restarts - 1) {
            return;
        }
        while self.parse_next() && self.next < self.block.restart_offset {}
    }

    fn seek(&mut self, target: &[u8]) {
        if self.block.num_restarts == 0 {
            self.current = self.block.restart_offset;
            return;
        }
        // Find the last restart point whose key is < target.
        let (mut left, mut right) = (0usize, self.block.num_restarts - 1);
        while left < right {
            let mid = (left + right).div_ceil(2);
            let Some((ks, kl)) = self.restart_key(mid) else {
                self.corrupt(self.block.restart_offset, "bad restart entry");
                return;
            };
            let block = Arc::clone(&self.block);
            if self
                .order
                .compare_to_target(&block.data[ks..ks + kl], target)
                == Ordering::Less
            {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        if !self.seek_to_restart(left) {
            return;
        }
        while self.parse_next() {
            if self.order.compare_to_target(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if !self.is_valid() {
            if self.status.is_none() {
                self.seek_to_last();
            }
            return;
        }
        while self.is_valid()
            && self.order.compare_to_target(&self.key, target) == Ordering::Greater
        {
            self.prev();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.is_valid());
        self.parse_next();
    }

    fn prev(&mut self) {
        debug_assert!(self.is_valid());
        let original = self.current;
        // Within the cached interval: step back without parsing.
        if !self.delta
            && self.prev_pos > 0
            && self
                .prev_cache
                .get(self.prev_pos)
                .is_some_and(|e| e.current == original)
        {
            self.prev_pos -= 1;
            let e = self.prev_cache[self.prev_pos];
            self.current = e.current;
            self.next = e.next;
            self.restart_index = e.restart_index;
            self.value = e.value;
            self.key.clear();
            self.key
                .extend_from_slice(&self.prev_keys[e.key_start..e.key_start + e.key_len]);
            return;
        }
        // Back up to a restart point strictly before the current entry.
        let mut ri = self.restart_index;
        loop {
            match self.restart_point(ri) {
                Some(r) if r < original => break,
                Some(_) if ri == 0 => {
                    // No entry before the first one.
                    self.current = self.block.restart_offset;
                    self.restart_index = self.block.num_restarts;
                    return;
                }
                Some(_) => ri -= 1,
                None => {
                    self.corrupt(self.block.restart_offset, "restart point out of range");
                    return;
                }
            }
        }
        if !self.seek_to_restart(ri) {
            return;
        }
        self.prev_cache.clear();
        self.prev_keys.clear();
        // Scan forward to the entry just before `original`, remembering
        // each entry for the next steps back.
        while self.parse_next() {
            if !self.delta {
                self.prev_cache.push(CachedEntry {
                    current: self.current,
                    next: self.next,
                    restart_index: self.restart_index,
                    value: self.value,
                    key_start: self.prev_keys.len(),
                    key_len: self.key.len(),
                });
                self.prev_keys.extend_from_slice(&self.key);
            }
            if self.next >= original {
                self.prev_pos = self.prev_cache.len().saturating_sub(1);
                return;
            }
        }
        self.prev_cache.clear();
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        if self.delta {
            &self.handle_buf
        } else {
            &self.block.data[self.value.0..self.value.0 + self.value.1]
        }
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            None => Ok(()),
            Some(e) => Err(e.duplicate()),
        }
    }
}

#[cfg(test)]
mod tests;

/// The entries of a meta-index block (`block`, at `offset` in `file`):
/// meta-block name -> handle. A handle that does not decode is
/// corruption. Shared by the block-based and PlainTable readers.
pub fn decode_metaindex(
    block: &Arc<Block>,
    file: &str,
    offset: u64,
) -> Result<std::collections::BTreeMap<String, super::footer::BlockHandle>> {
    let mut meta = std::collections::BTreeMap::new();
    let mut it = block.iter(KeyOrder::Bytewise, false);
    it.seek_to_first();
    while it.valid() {
        let h = super::footer::BlockHandle::decode(it.value())
            .ok_or_else(|| Error::corruption(file, offset, "bad handle in meta-index"))?;
        meta.insert(String::from_utf8_lossy(it.key()).into_owned(), h);
        it.next();
    }
    it.status()?;
    Ok(meta)
}
