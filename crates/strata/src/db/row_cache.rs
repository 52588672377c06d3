//! The row cache (RocksDB's `row_cache`): what a point lookup found for
//! one user key in one table file, kept in a cache so that the next
//! lookup of that key skips the table (its filter, index and data block).
//!
//! A row is the table's entries for the key, newest first, each with its
//! sequence number and type, up to and including the first entry that
//! ends a lookup whatever came before it (a value or a deletion), or all
//! of them. RocksDB's row cache keeps the types and values only and
//! replays them at the maximum sequence number, so a range tombstone can
//! no longer apply to them, and RocksDB refuses `DeleteRange` on a
//! database with a row cache; keeping the sequence numbers, Strata's rows
//! replay exactly, range tombstones included.
//!
//! The key is RocksDB's: a per-database row cache id, the file number,
//! a sequence number, and the user key. The sequence number is 0 when the
//! read sees every entry of the file (no snapshot, or one at or above the
//! file's largest sequence number, when that is known): the row is then
//! the same for every such read. An older snapshot sees a subset, so its
//! rows are keyed by its sequence number plus one. Files never change once
//! written, so rows never need invalidating: a deleted file's rows are
//! never asked for again and age out.
//!
//! Rows are cached only when the lookup found something in the file and
//! read no entry it could not parse (RocksDB: "only if something was
//! found"). Recording a row may read past the entry that settled the get
//! (a range tombstone can settle it at a merge operand); what goes wrong
//! past that point (a block not in memory for a non-blocking read, an I/O
//! error, a bad key) only keeps the row out of the cache: the get has its
//! answer, as it would without a row cache.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::cache::BlockCache;
use crate::cache::block_cache::CachedRow;
use crate::format::{SequenceNumber, ValueType};
use crate::util::coding::{get_varint64, put_varint64};
use crate::version::FileMetaData;

/// A database's handle on its row cache.
#[derive(Debug)]
pub(crate) struct RowCache {
    cache: Arc<BlockCache>,
    /// Unique among every database of the process (RocksDB's
    /// `row_cache_id_`), so databases sharing one cache never share rows.
    id: u64,
}

/// Ids for [`RowCache`]s.
static NEXT_ROW_CACHE_ID: AtomicU64 = AtomicU64::new(1);

impl RowCache {
    pub(crate) fn new(cache: Arc<BlockCache>) -> RowCache {
        RowCache {
            cache,
            id: NEXT_ROW_CACHE_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The key of `user_key`'s row in `file` for a read at
    /// `read_seq` (see the module's comment).
    pub(crate) fn key(
        &self,
        file: &FileMetaData,
        read_seq: SequenceNumber,
        user_key: &[u8],
    ) -> Vec<u8> {
        // A file whose sequence range is unknown (LevelDB's MANIFEST
        // records, which carry none: smallest above largest) may hold
        // entries above `largest_seqno`: keyed by the read's sequence.
        let known = file.smallest_seqno <= file.largest_seqno;
        let seq = if known && read_seq >= file.largest_seqno {
            0
        } else {
            read_seq + 1
        };
        let mut k = Vec::with_capacity(user_key.len() + 24);
        put_varint64(&mut k, self.id);
        put_varint64(&mut k, file.number);
        put_varint64(&mut k, seq);
        k.extend_from_slice(user_key);
        k
    }

    pub(crate) fn lookup(&self, key: &[u8]) -> Option<Arc<CachedRow>> {
        self.cache.lookup_row(key)
    }

    pub(crate) fn insert(&self, key: &[u8], row: RowBuilder) {
        if row.is_worth_caching() {
            self.cache.insert_row(key, row.bytes);
        }
    }
}

/// Whether a lookup in one file stops at an entry of type `t`: nothing
/// older in the file can matter after it.
pub(crate) fn ends_lookup(t: ValueType) -> bool {
    t != ValueType::Merge
}

/// A row being recorded while a lookup reads a table.
#[derive(Debug, Default)]
pub(crate) struct RowBuilder {
    bytes: Vec<u8>,
    /// The lookup stopped before the row's end (an entry it could not
    /// read): the row must not be cached.
    abandoned: bool,
}

impl RowBuilder {
    pub(crate) fn abandon(&mut self) {
        self.abandoned = true;
    }

    pub(crate) fn push(&mut self, seq: SequenceNumber, t: ValueType, value: &[u8]) {
        put_varint64(&mut self.bytes, seq);
        self.bytes.push(t as u8);
        put_varint64(&mut self.bytes, value.len() as u64);
        self.bytes.extend_from_slice(value);
    }

    fn is_worth_caching(&self) -> bool {
        !self.bytes.is_empty() && !self.abandoned
    }
}

/// Feeds `f` the entries of `row` in order until it returns true; returns
/// whether it did. `None` if the row does not parse (it always does:
/// rows are only made by [`RowBuilder`]).
pub(crate) fn replay(
    row: &[u8],
    mut f: impl FnMut(SequenceNumber, ValueType, &[u8]) -> bool,
) -> Option<bool> {
    let mut rest = row;
    while !rest.is_empty() {
        let (seq, n) = get_varint64(rest)?;
        rest = &rest[n..];
        let (&t, tail) = rest.split_first()?;
        let t = ValueType::from_u8(t)?;
        let (len, n) = get_varint64(tail)?;
        let tail = &tail[n..];
        let len = usize::try_from(len).ok().filter(|&l| l <= tail.len())?;
        let (value, tail) = tail.split_at(len);
        rest = tail;
        if f(seq, t, value) {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_replay_what_was_recorded_in_order() {
        let mut b = RowBuilder::default();
        assert!(!b.is_worth_caching());
        b.push(900, ValueType::Merge, b"m2");
        b.push(7, ValueType::Merge, b"");
        b.push(300, ValueType::Value, &[0xff; 200]);
        let mut seen = Vec::new();
        let stopped = replay(&b.bytes, |s, t, v| {
            seen.push((s, t, v.to_vec()));
            false
        });
        assert_eq!(stopped, Some(false));
        assert_eq!(
            seen,
            vec![
                (900, ValueType::Merge, b"m2".to_vec()),
                (7, ValueType::Merge, vec![]),
                (300, ValueType::Value, vec![0xff; 200]),
            ]
        );
        // Stops where `f` says.
        let mut n = 0;
        assert_eq!(
            replay(&b.bytes, |_, _, _| {
                n += 1;
                n == 2
            }),
            Some(true)
        );
        assert_eq!(n, 2);
        // Cut rows do not parse.
        assert_eq!(replay(&b.bytes[..b.bytes.len() - 1], |_, _, _| false), None);
    }

    fn file(number: u64, smallest_seqno: u64, largest_seqno: u64) -> FileMetaData {
        FileMetaData {
            number,
            smallest_seqno,
            largest_seqno,
            ..Default::default()
        }
    }

    #[test]
    fn keys_separate_databases_files_and_old_snapshots() {
        let cache = BlockCache::new(1 << 20);
        let a = RowCache::new(Arc::clone(&cache));
        let b = RowCache::new(Arc::clone(&cache));
        let (f5, f6) = (file(5, 1, 100), file(6, 1, 100));
        assert_ne!(a.key(&f5, 100, b"k"), b.key(&f5, 100, b"k"));
        assert_ne!(a.key(&f5, 100, b"k"), a.key(&f6, 100, b"k"));
        // Every read that sees the whole file shares one row...
        assert_eq!(a.key(&f5, 100, b"k"), a.key(&f5, 5000, b"k"));
        // ...an older snapshot has its own...
        assert_ne!(a.key(&f5, 99, b"k"), a.key(&f5, 100, b"k"));
        assert_ne!(a.key(&f5, 99, b"k"), a.key(&f5, 98, b"k"));
        // ...and so has every read of a file whose sequence range is
        // unknown (LevelDB's MANIFEST records: largest 0).
        let unknown = file(7, u64::MAX, 0);
        assert_ne!(a.key(&unknown, 100, b"k"), a.key(&unknown, 5000, b"k"));
        let mut row = RowBuilder::default();
        row.push(1, ValueType::Value, b"v");
        a.insert(&a.key(&f5, 100, b"k"), row);
        assert!(a.lookup(&a.key(&f5, 100, b"k")).is_some());
        assert!(b.lookup(&b.key(&f5, 100, b"k")).is_none());
        // Nothing found: nothing cached.
        a.insert(&a.key(&f5, 100, b"j"), RowBuilder::default());
        assert!(a.lookup(&a.key(&f5, 100, b"j")).is_none());
    }
}
