//! The memtable entry encoding and the [`MemTableRep`] interface that hides
//! the index structure (the arena skiplist today; vector and prefix-hash
//! reps later), with the skiplist implementation.
//!
//! Entry encoding (RocksDB's memtable format):
//! `varint32 internal_key_len | internal_key | varint32 value_len | value`.
//! Entries are ordered by their internal key alone (the
//! [`InternalKeyComparator`]); a seek target is encoded the same way, with
//! or without the value part.
//!
//! Thread-safety: reps are `Send + Sync`; `insert_with` may be called
//! concurrently with itself and with readers; rep cursors are `Send`.
//!
//! Invariants: a rep never holds two entries with equal internal keys; an
//! entry is never modified once inserted; a cursor keeps its rep (and so
//! the arena holding its entries) alive.

use std::cmp::Ordering;
use std::fmt::Debug;
use std::ops::ControlFlow;
use std::sync::Arc;

use super::arena::Arena;
use super::skiplist::{self, KeyComparator, SkipList};
use crate::format::InternalKeyComparator;
use crate::util::coding::{get_varint32, varint_length};

/// The index structure of a memtable, over encoded entries.
pub trait MemTableRep: Send + Sync + Debug {
    /// Inserts one encoded entry of `len` bytes, which `fill` writes in
    /// place (into the rep's arena); `user_key` is the entry's user key
    /// (a hash rep picks its bucket by it). Returns false, inserting
    /// nothing, if an entry with the same internal key is present.
    /// Thread-safe.
    fn insert_with(&self, user_key: &[u8], len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool;

    /// Inserts up to `skiplist::BATCH` entries at once: entry `i` (user
    /// key `user_keys[i]`) has `lens[i]` bytes, written by `fill(i, buf)`.
    /// Returns a bit mask of the entries inserted (bit `i` clear: an equal
    /// entry was present). The default inserts them one at a time.
    fn insert_many_with(
        &self,
        user_keys: &[&[u8]],
        lens: &[usize],
        fill: &mut dyn FnMut(usize, &mut [u8]),
    ) -> u32 {
        let mut inserted = 0;
        for (i, (&key, &len)) in user_keys.iter().zip(lens).enumerate() {
            if self.insert_with(key, len, &mut |buf| fill(i, buf)) {
                inserted |= 1 << i;
            }
        }
        inserted
    }

    /// Calls `visit` on the entries from the first one >= `target` (an
    /// encoded entry or entry prefix) in order, until it breaks or the
    /// entries run out (RocksDB's `MemTableRep::Get`).
    fn visit_from(&self, target: &[u8], visit: &mut dyn FnMut(&[u8]) -> ControlFlow<()>);

    /// A cursor over the encoded entries that keeps the rep alive.
    fn iter(self: Arc<Self>) -> Box<dyn MemTableRepIter>;

    /// Lets `rewrite` change in place the first entry >= `target` (its
    /// value part only); returns what `rewrite` returns, false if there is
    /// no such entry or this representation cannot rewrite entries (the
    /// default).
    ///
    /// # Safety
    /// No other thread reads or writes this rep's entries while this runs
    /// (see `MemTable`'s in-place updates).
    unsafe fn rewrite_first_from(
        &self,
        _target: &[u8],
        _rewrite: &mut dyn FnMut(&mut [u8]) -> bool,
    ) -> bool {
        false
    }
}

/// A cursor over a rep's encoded entries. Seek targets are encoded entries
/// or entry prefixes (`varint32 len | internal_key`).
pub trait MemTableRepIter: Send + Debug {
    fn valid(&self) -> bool;
    /// The current encoded entry. REQUIRES: `valid()`.
    fn entry(&self) -> &[u8];
    /// REQUIRES: `valid()`.
    fn next(&mut self);
    /// REQUIRES: `valid()`.
    fn prev(&mut self);
    fn seek(&mut self, target: &[u8]);
    fn seek_for_prev(&mut self, target: &[u8]);
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
}

/// Length of the encoded entry, or `None` if the internal key or the value
/// is too long for a varint32 length.
pub fn encoded_entry_len(internal_key_len: usize, value_len: usize) -> Option<usize> {
    u32::try_from(internal_key_len).ok()?;
    u32::try_from(value_len).ok()?;
    varint_length(internal_key_len as u64)
        .checked_add(internal_key_len)?
        .checked_add(varint_length(value_len as u64))?
        .checked_add(value_len)
}

/// Writes `v` as a varint at the front of `dst`; returns the bytes written.
/// REQUIRES: `dst.len() >= varint_length(v)`.
fn write_varint(dst: &mut [u8], mut v: u64) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        dst[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    dst[i] = v as u8;
    i + 1
}

/// Writes an entry whose internal key is the concatenation of `key_parts`
/// into `dst`. REQUIRES: `dst.len() == encoded_entry_len(..)` of the parts.
pub fn encode_entry(dst: &mut [u8], key_parts: &[&[u8]], value: &[u8]) {
    let key_len: usize = key_parts.iter().map(|p| p.len()).sum();
    let mut pos = write_varint(dst, key_len as u64);
    for p in key_parts {
        dst[pos..pos + p.len()].copy_from_slice(p);
        pos += p.len();
    }
    pos += write_varint(&mut dst[pos..], value.len() as u64);
    dst[pos..pos + value.len()].copy_from_slice(value);
    debug_assert_eq!(pos + value.len(), dst.len());
}

/// The internal key of an encoded entry (or seek target): what every
/// comparison needs, without decoding the value. Keys shorter than 128
/// bytes (a one-byte length varint) take the fast path. Never panics: a
/// malformed entry decodes to an empty key, as in `decode_entry`.
#[inline]
pub fn entry_key(entry: &[u8]) -> &[u8] {
    match entry.first() {
        Some(&len) if len < 0x80 => match entry.get(1..1 + len as usize) {
            Some(key) => key,
            None => {
                debug_assert!(false, "malformed memtable entry");
                &[]
            }
        },
        _ => decode_entry(entry).0,
    }
}

/// Splits an encoded entry (or entry prefix) into `(internal_key, value)`;
/// the value is empty for a prefix. Never panics: a malformed entry (which
/// the memtable never writes) decodes to empty slices.
#[inline]
pub fn decode_entry(entry: &[u8]) -> (&[u8], &[u8]) {
    if entry.is_empty() {
        return (&[], &[]); // an empty seek target
    }
    let Some((klen, n)) = get_varint32(entry) else {
        debug_assert!(false, "malformed memtable entry");
        return (&[], &[]);
    };
    let Some(key) = entry.get(n..n + klen as usize) else {
        debug_assert!(false, "malformed memtable entry");
        return (&[], &[]);
    };
    let rest = &entry[n + klen as usize..];
    if rest.is_empty() {
        return (key, &[]);
    }
    match get_varint32(rest).and_then(|(vlen, m)| rest.get(m..m + vlen as usize)) {
        Some(value) => (key, value),
        None => {
            debug_assert!(false, "malformed memtable entry");
            (key, &[])
        }
    }
}

/// Rewrites the value of the encoded `entry` to `value` in place, if it
/// fits in the old value's bytes: the value length varint is rewritten
/// (it may get shorter, leaving unused bytes at the end of the entry,
/// which `decode_entry` ignores). Returns false, changing nothing, if the
/// new value is longer or the entry is malformed.
pub fn rewrite_value_in_place(entry: &mut [u8], value: &[u8]) -> bool {
    let Some((klen, n)) = get_varint32(entry) else {
        return false;
    };
    let at = n + klen as usize;
    let Some((old_len, m)) = entry.get(at..).and_then(get_varint32) else {
        return false;
    };
    if value.len() > old_len as usize || at + m + old_len as usize > entry.len() {
        return false;
    }
    let w = write_varint(&mut entry[at..], value.len() as u64);
    debug_assert!(w <= m, "a shorter value never needs a longer varint");
    entry[at + w..at + w + value.len()].copy_from_slice(value);
    true
}

/// Orders encoded entries by their internal keys.
#[derive(Clone, Debug)]
pub struct EntryComparator {
    icmp: InternalKeyComparator,
}

impl EntryComparator {
    pub fn new(icmp: InternalKeyComparator) -> Self {
        EntryComparator { icmp }
    }
}

impl KeyComparator for EntryComparator {
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.icmp.compare(entry_key(a), entry_key(b))
    }
}

/// The default rep: an arena skiplist of encoded entries.
#[derive(Debug)]
pub struct SkipListRep {
    list: Arc<SkipList<EntryComparator>>,
}

impl SkipListRep {
    /// An empty rep whose entries are allocated from `arena`.
    pub fn new(icmp: InternalKeyComparator, arena: Arc<Arena>) -> Self {
        SkipListRep {
            list: Arc::new(SkipList::new(EntryComparator::new(icmp), arena)),
        }
    }
}

impl MemTableRep for SkipListRep {
    fn insert_with(&self, _user_key: &[u8], len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        self.list.insert_with(len, fill)
    }

    fn insert_many_with(
        &self,
        _user_keys: &[&[u8]],
        lens: &[usize],
        fill: &mut dyn FnMut(usize, &mut [u8]),
    ) -> u32 {
        self.list.insert_many_with(lens, fill)
    }

    fn visit_from(&self, target: &[u8], visit: &mut dyn FnMut(&[u8]) -> ControlFlow<()>) {
        let mut it = self.list.iter();
        it.seek(target);
        while it.valid() {
            if visit(it.key()).is_break() {
                return;
            }
            it.next();
        }
    }

    unsafe fn rewrite_first_from(
        &self,
        target: &[u8],
        rewrite: &mut dyn FnMut(&mut [u8]) -> bool,
    ) -> bool {
        // SAFETY: the caller's contract is `with_key_mut`'s.
        unsafe { self.list.with_key_mut(target, rewrite) }.unwrap_or(false)
    }

    fn iter(self: Arc<Self>) -> Box<dyn MemTableRepIter> {
        Box::new(SkipListRepIter {
            inner: skiplist::Iter::new(Arc::clone(&self.list)),
        })
    }
}

/// Cursor of a [`SkipListRep`]; owns an `Arc` of its list.
#[derive(Debug)]
struct SkipListRepIter {
    inner: skiplist::Iter<Arc<SkipList<EntryComparator>>>,
}

impl MemTableRepIter for SkipListRepIter {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn entry(&self) -> &[u8] {
        self.inner.key()
    }
    fn next(&mut self) {
        self.inner.next();
    }
    fn prev(&mut self) {
        self.inner.prev();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target);
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
    }
}
