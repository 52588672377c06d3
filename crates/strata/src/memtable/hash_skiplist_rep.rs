//! RocksDB's `HashSkipListRep` (`--memtablerep=prefix_hash`): a hash table
//! of prefixes, each bucket a skiplist of the entries whose prefix hashes
//! there. A point lookup searches one short skiplist instead of the whole
//! memtable; a total-order read (an iterator, the flush) sorts a copy of
//! every entry, as RocksDB's total-order iterator does.
//!
//! With a linked-list threshold it is RocksDB's `HashLinkListRep`
//! (`--memtablerep=hash_linkedlist`): a bucket starts as a sorted linked
//! list (skiplist nodes of height 1: no index levels, the least memory per
//! entry) and, past `threshold_use_skiplist` entries, later entries get
//! skiplist heights (RocksDB rebuilds such a bucket as a skiplist; here its
//! first entries stay on the bottom level only, which every search still
//! walks correctly).
//!
//! Needs the column family's prefix extractor (RocksDB falls back to the
//! skiplist without one; so does Strata, see `MemTable::with_factory`).
//! No concurrent inserts (as in RocksDB): the DB refuses
//! `allow_concurrent_memtable_write` with it. Inserts take the entry log's
//! mutex; readers never block on buckets.
//!
//! Invariants: an entry is in exactly one bucket (the one its user key's
//! prefix hashes to) and in the entry log; bucket skiplists and the log
//! point at the same arena bytes, never written after publication.

use std::ops::ControlFlow;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::arena::Arena;
use super::rep::{EntryComparator, MemTableRep, MemTableRepIter, decode_entry, entry_key};
use super::skiplist::SkipList;
use super::vector_rep::{EntryLog, LoggedRep, SortedIter};
use crate::format::InternalKeyComparator;
use crate::format::dbformat::extract_user_key;
use crate::util::slice_transform::SliceTransformRef;

/// RocksDB's default bucket count (`NewHashSkipListRepFactory`).
pub const DEFAULT_BUCKET_COUNT: usize = 1_000_000;
/// RocksDB's defaults of `NewHashLinkListRepFactory`: buckets, and the
/// entries of a bucket past which it indexes like a skiplist.
pub const DEFAULT_LINK_LIST_BUCKET_COUNT: usize = 50_000;
pub const DEFAULT_THRESHOLD_USE_SKIPLIST: usize = 256;

/// One bucket: its entries, and how many.
struct Bucket {
    list: SkipList<EntryComparator>,
    entries: AtomicUsize,
}

/// See the module comment.
pub struct HashSkipListRep {
    icmp: InternalKeyComparator,
    arena: Arc<Arena>,
    prefix_extractor: SliceTransformRef,
    buckets: Box<[OnceLock<Box<Bucket>>]>,
    log: EntryLog,
    /// `HashLinkListRep`: entries of a bucket kept as a linked list.
    linked_list_threshold: Option<usize>,
}

impl std::fmt::Debug for HashSkipListRep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HashSkipListRep")
            .field("buckets", &self.buckets.len())
            .field("linked_list_threshold", &self.linked_list_threshold)
            .finish()
    }
}

impl HashSkipListRep {
    /// An empty rep of `bucket_count` buckets (at least 1) whose entries
    /// are allocated from `arena`.
    pub fn new(
        icmp: InternalKeyComparator,
        arena: Arc<Arena>,
        prefix_extractor: SliceTransformRef,
        bucket_count: usize,
    ) -> Self {
        HashSkipListRep {
            log: EntryLog::new(icmp.clone()),
            icmp,
            arena,
            prefix_extractor,
            buckets: (0..bucket_count.max(1)).map(|_| OnceLock::new()).collect(),
            linked_list_threshold: None,
        }
    }

    /// RocksDB's `HashLinkListRep`: [`HashSkipListRep::new`] whose buckets
    /// are sorted linked lists up to `threshold_use_skiplist` entries.
    pub fn linked_list(
        icmp: InternalKeyComparator,
        arena: Arc<Arena>,
        prefix_extractor: SliceTransformRef,
        bucket_count: usize,
        threshold_use_skiplist: usize,
    ) -> Self {
        HashSkipListRep {
            linked_list_threshold: Some(threshold_use_skiplist),
            ..HashSkipListRep::new(icmp, arena, prefix_extractor, bucket_count)
        }
    }

    /// The bucket of the entry (or seek target) `entry`.
    fn bucket_of(&self, entry: &[u8]) -> &OnceLock<Box<Bucket>> {
        self.bucket_of_key(extract_user_key(entry_key(entry)))
    }

    /// The bucket of entries with user key `user_key`.
    fn bucket_of_key(&self, user_key: &[u8]) -> &OnceLock<Box<Bucket>> {
        let prefix = self.prefix_extractor.transform(user_key);
        let h = xxhash_rust::xxh3::xxh3_64(prefix);
        &self.buckets[(h % self.buckets.len() as u64) as usize]
    }
}

impl LoggedRep for HashSkipListRep {
    fn log(&self) -> &EntryLog {
        &self.log
    }
    fn arena(&self) -> &Arena {
        &self.arena
    }
}

impl MemTableRep for HashSkipListRep {
    fn insert_with(&self, user_key: &[u8], len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let bucket = self.bucket_of_key(user_key).get_or_init(|| {
            Box::new(Bucket {
                list: SkipList::new(
                    EntryComparator::new(self.icmp.clone()),
                    Arc::clone(&self.arena),
                ),
                entries: AtomicUsize::new(0),
            })
        });
        let mut at = None;
        let mut fill_and_log = |buf: &mut [u8]| {
            fill(buf);
            debug_assert_eq!(extract_user_key(decode_entry(buf).0), user_key);
            at = NonNull::new(buf.as_mut_ptr());
        };
        // Inserts are not concurrent here (the DB refuses concurrent
        // memtable writes with this rep): the count is exact.
        let as_list = self
            .linked_list_threshold
            .is_some_and(|t| bucket.entries.load(Ordering::Relaxed) < t);
        let inserted = if as_list {
            len <= super::skiplist::MAX_KEY_LEN
                && bucket.list.insert_with_height(1, len, &mut fill_and_log)
        } else {
            bucket.list.insert_with(len, &mut fill_and_log)
        };
        if inserted {
            bucket.entries.fetch_add(1, Ordering::Relaxed);
        }
        if inserted && let Some(ptr) = at {
            // SAFETY: `ptr` is the node's key bytes in `self.arena`,
            // written just above and never again once published.
            unsafe { self.log.push(ptr, len) };
        }
        inserted
    }

    fn visit_from(&self, target: &[u8], visit: &mut dyn FnMut(&[u8]) -> ControlFlow<()>) {
        let Some(bucket) = self.bucket_of(target).get() else {
            return;
        };
        let mut it = bucket.list.iter();
        it.seek(target);
        while it.valid() {
            if visit(it.key()).is_break() {
                return;
            }
            it.next();
        }
    }

    fn iter(self: Arc<Self>) -> Box<dyn MemTableRepIter> {
        Box::new(SortedIter::new(self))
    }
}
