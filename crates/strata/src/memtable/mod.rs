//! The memtable: the in-memory write buffer that every write goes to after
//! the WAL (RocksDB's `db/memtable.h`). Point entries and range tombstones
//! are kept in two reps over one arena; `approximate_memory_usage` is the
//! arena's exact byte count, checked against `write_buffer_size`.
//!
//! Thread-safety: `MemTable` is `Send + Sync`. `add` may be called from many
//! threads at once (concurrent memtable writes); `get`, `iter` and the
//! counters never block and may run concurrently with `add`. An iterator
//! holds an `Arc` of the memtable, so it may outlive the caller's borrow.
//!
//! Invariants:
//! - no two entries share an internal key (`(user_key, seq, type)`): the DB
//!   layer never adds `(key, seq)` twice (REQUIRES on `add`);
//! - entries are never removed or modified; memory is freed only when the
//!   last `Arc` (memtable or iterator) drops;
//! - the counters and sequence bounds cover every completed `add`.

pub mod arena;
pub mod block_pool;
pub mod bloom;
pub mod hash_skiplist_rep;
pub mod rep;
pub mod skiplist;
mod sync;
pub mod vector_rep;
pub mod write_buffer_manager;

pub use write_buffer_manager::{MemoryCharger, WriteBufferManager};

// Plain-thread tests; loom builds (`--cfg loom`) run only `loom_tests`, as
// loom's atomics panic outside `loom::model`.
#[cfg(all(test, not(loom)))]
mod tests;

// Model-checked interleavings of concurrent inserts and readers; see the
// file for how to run them.
#[cfg(all(test, loom))]
mod loom_tests;

use std::ops::ControlFlow;
use std::sync::Arc;

use self::sync::{AtomicU64, Ordering};

use crate::error::Result;
use crate::format::dbformat::{
    InternalKeyComparator, MAX_SEQUENCE_NUMBER, SequenceNumber, TRAILER_LEN, VALUE_TYPE_FOR_SEEK,
    ValueType, pack_sequence_and_type, parse_internal_key,
};
use crate::format::iterator::InternalIterator;
use crate::format::range_tombstones::FragmentedRangeTombstoneList;
use arena::Arena;
pub use rep::{MemTableRep, MemTableRepIter, SkipListRep};
use rep::{decode_entry, encode_entry, encoded_entry_len, rewrite_value_in_place};

/// The memtable's index structure (RocksDB's `memtable_factory`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemTableFactory {
    /// A concurrent skiplist (RocksDB's `SkipListFactory`).
    #[default]
    SkipList,
    /// Appended entries sorted when read (RocksDB's `VectorRepFactory`):
    /// cheap unordered bulk loads, expensive reads of the active
    /// memtable. No concurrent memtable writes (as in RocksDB).
    Vector,
    /// A hash of prefixes to skiplists (RocksDB's `HashSkipListRepFactory`,
    /// db_bench's `prefix_hash`): point lookups search one bucket; total
    /// order reads sort a copy. Needs a prefix extractor (without one the
    /// skiplist is used, as RocksDB does); no concurrent memtable writes.
    PrefixHash { bucket_count: usize },
    /// A hash of prefixes to sorted linked lists, indexed like skiplists
    /// past `threshold_use_skiplist` entries (RocksDB's
    /// `HashLinkListRepFactory`, db_bench's `hash_linkedlist`): the least
    /// memory per entry for few keys per prefix. Needs a prefix extractor
    /// (the skiplist serves without one); no concurrent memtable writes.
    HashLinkList {
        bucket_count: usize,
        threshold_use_skiplist: usize,
    },
}

impl MemTableFactory {
    /// RocksDB's name (the OPTIONS file's `memtable_factory`).
    pub fn name(self) -> &'static str {
        match self {
            MemTableFactory::SkipList => "SkipListFactory",
            MemTableFactory::Vector => "VectorRepFactory",
            MemTableFactory::PrefixHash { .. } => "HashSkipListRepFactory",
            MemTableFactory::HashLinkList { .. } => "HashLinkListRepFactory",
        }
    }

    /// Parses RocksDB's names and db_bench's nicknames.
    pub fn from_name(n: &str) -> Option<Self> {
        match n {
            "SkipListFactory" | "skip_list" | "skiplist" => Some(MemTableFactory::SkipList),
            "VectorRepFactory" | "vector" => Some(MemTableFactory::Vector),
            "HashSkipListRepFactory" | "prefix_hash" => Some(MemTableFactory::PrefixHash {
                bucket_count: hash_skiplist_rep::DEFAULT_BUCKET_COUNT,
            }),
            "HashLinkListRepFactory" | "hash_linkedlist" => Some(MemTableFactory::HashLinkList {
                bucket_count: hash_skiplist_rep::DEFAULT_LINK_LIST_BUCKET_COUNT,
                threshold_use_skiplist: hash_skiplist_rep::DEFAULT_THRESHOLD_USE_SKIPLIST,
            }),
            _ => None,
        }
    }

    /// Whether members of a write group may insert into it at once.
    pub fn supports_concurrent_insert(self) -> bool {
        self == MemTableFactory::SkipList
    }
}

/// Arena block size of [`MemTable::new`].
pub const DEFAULT_ARENA_BLOCK_SIZE: usize = 64 << 10;

/// The arena block size for a write buffer size: RocksDB's default,
/// `min(1 MiB, write_buffer_size / 8)`, at least 4 KiB; but with `huge`
/// (`memtable_huge_page_size` set), write buffers whose eighth holds a huge
/// page (16 MiB and more) get huge-page blocks ([`arena::HUGE_BLOCK_SIZE`]),
/// which save random inserts and lookups their TLB misses.
pub fn arena_block_size_for(write_buffer_size: usize, huge: bool) -> usize {
    let eighth = write_buffer_size / 8;
    if huge && eighth >= arena::HUGE_BLOCK_SIZE {
        return arena::HUGE_BLOCK_SIZE;
    }
    eighth.clamp(arena::MIN_BLOCK_SIZE, arena::MAX_BLOCK_SIZE)
}

/// Result of [`MemTable::get`]: the point entries of one user key visible
/// at the snapshot, newest first, up to and including the first entry that
/// is not a merge operand. Sequence numbers are kept so the DB layer can
/// apply range tombstones (which `get` does not) entry by entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemTableGet {
    /// No visible entry for the key in this memtable.
    NotFound,
    /// The newest visible entry is not a merge operand: a `Value`, a
    /// `Deletion`/`SingleDeletion` (empty value), or another type the
    /// caller decides about (e.g. `BlobIndex`).
    Found {
        value_type: ValueType,
        seq: SequenceNumber,
        value: Vec<u8>,
    },
    /// The newest visible entries are merge operands.
    Merge {
        /// `(seq, operand)`, newest first.
        operands: Vec<(SequenceNumber, Vec<u8>)>,
        /// The entry that ended the chain in this memtable, if any, as
        /// `(type, seq, value)`; `None` means older sources must be read.
        base: Option<(ValueType, SequenceNumber, Vec<u8>)>,
    },
}

/// The in-memory write buffer. See the module comment.
pub struct MemTable {
    icmp: InternalKeyComparator,
    arena: Arc<Arena>,
    table: Arc<dyn MemTableRep>,
    range_del_table: Arc<dyn MemTableRep>,
    num_entries: AtomicU64,
    num_deletes: AtomicU64,
    num_range_deletes: AtomicU64,
    /// `u64::MAX` while empty.
    first_seqno: AtomicU64,
    largest_seqno: AtomicU64,
    /// The oldest WAL holding the prepared section of a two-phase commit
    /// whose data is in this memtable (`u64::MAX`: none): that WAL must
    /// stay until this memtable is flushed, since recovery rebuilds the
    /// data from it (RocksDB's `min_prep_log_referenced`).
    min_prep_wal: AtomicU64,
    /// The memory budget this memtable's arena is charged to, the bytes
    /// charged so far, and whether it was marked immutable.
    wbm: Option<std::sync::Arc<WriteBufferManager>>,
    charged: std::sync::atomic::AtomicUsize,
    immutable: std::sync::atomic::AtomicBool,
    /// See [`MemTable::with_inplace_updates`]: taken shared by every
    /// reader of point entries, exclusively by an in-place update.
    inplace: Option<std::sync::RwLock<()>>,
    /// See [`MemTable::expect_key_len`].
    expected_key_len: Option<usize>,
    key_of_other_length: std::sync::atomic::AtomicBool,
    /// RocksDB's memtable bloom: point entries' whole keys and/or
    /// prefixes, asked before a point lookup walks the rep.
    bloom: Option<MemTableBloomConfig>,
    /// The range tombstones fragmented, with the count of range deletions
    /// they were built from: rebuilt by the first read after a range
    /// deletion is added (never again once the memtable is immutable).
    fragmented_range_dels: arc_swap::ArcSwapOption<FragmentedCache>,
}

/// See [`MemTable::fragmented_range_tombstones`].
struct FragmentedCache {
    count: u64,
    list: Arc<FragmentedRangeTombstoneList>,
}

/// The memtable bloom and what goes into it.
#[derive(Debug)]
struct MemTableBloomConfig {
    filter: bloom::MemTableBloom,
    prefix_extractor: Option<crate::util::slice_transform::SliceTransformRef>,
    whole_key: bool,
    /// Sampled lookups' probes, and how many of them ruled the key out
    /// (both halved as they grow, so they follow the recent workload).
    sampled_probes: std::sync::atomic::AtomicU32,
    sampled_negatives: std::sync::atomic::AtomicU32,
}

/// One point lookup in 32 (those whose key hash has its top 5 bits clear)
/// always probes the memtable bloom and records whether it ruled the key
/// out.
const BLOOM_SAMPLE_SHIFT: u32 = 59;
/// Sampled probes kept before the counts are halved.
const BLOOM_SAMPLE_WINDOW: u32 = 4096;

impl MemTableBloomConfig {
    /// Whether probing pays for the lookups that are not sampled: a probe
    /// costs a cache miss on every lookup and saves a skiplist descent
    /// only when it says no, so when nearly every lookup finds its key
    /// (under 1 in 16 sampled probes said no; at least 32 sampled) the
    /// bloom is skipped.
    #[inline]
    fn worth_probing(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let probes = self.sampled_probes.load(Relaxed);
        probes < 32 || self.sampled_negatives.load(Relaxed) * 16 >= probes
    }

    #[cold]
    fn record(&self, may_contain: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        let probes = self.sampled_probes.fetch_add(1, Relaxed) + 1;
        if !may_contain {
            self.sampled_negatives.fetch_add(1, Relaxed);
        }
        if probes >= BLOOM_SAMPLE_WINDOW {
            // Racy halving: a concurrent count may be lost, which only
            // blurs the estimate.
            self.sampled_probes.store(probes / 2, Relaxed);
            let n = self.sampled_negatives.load(Relaxed);
            self.sampled_negatives.store(n / 2, Relaxed);
        }
    }
}

impl Drop for MemTable {
    fn drop(&mut self) {
        if let Some(w) = &self.wbm {
            w.free(*self.charged.get_mut(), !*self.immutable.get_mut());
        }
    }
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("num_entries", &self.num_entries())
            .field("num_range_deletes", &self.num_range_deletes())
            .field("memory_usage", &self.approximate_memory_usage())
            .finish()
    }
}

impl MemTable {
    /// An empty memtable with [`DEFAULT_ARENA_BLOCK_SIZE`] arena blocks.
    pub fn new(icmp: InternalKeyComparator) -> MemTable {
        MemTable::with_arena_block_size(icmp, DEFAULT_ARENA_BLOCK_SIZE)
    }

    /// An empty memtable whose arena uses blocks of `block_size` bytes
    /// (clamped to 4 KiB..=1 MiB); see [`arena_block_size_for`].
    pub fn with_arena_block_size(icmp: InternalKeyComparator, block_size: usize) -> MemTable {
        MemTable::with_factory(icmp, block_size, MemTableFactory::SkipList, None)
    }

    /// An empty memtable whose point entries are kept by `factory`'s rep
    /// (range tombstones always in a skiplist); the hash reps hash by
    /// `prefix_extractor` (the skiplist serves without one).
    pub fn with_factory(
        icmp: InternalKeyComparator,
        block_size: usize,
        factory: MemTableFactory,
        prefix_extractor: Option<crate::util::slice_transform::SliceTransformRef>,
    ) -> MemTable {
        MemTable::with_factory_in(icmp, block_size, factory, prefix_extractor, None)
    }

    /// As [`MemTable::with_factory`], with huge-page arena blocks drawn
    /// from and returned to `pool` (a database's; see
    /// [`block_pool::ArenaBlockPool`]).
    pub fn with_factory_in(
        icmp: InternalKeyComparator,
        block_size: usize,
        factory: MemTableFactory,
        prefix_extractor: Option<crate::util::slice_transform::SliceTransformRef>,
        pool: Option<Arc<block_pool::ArenaBlockPool>>,
    ) -> MemTable {
        let arena = Arc::new(Arena::with_pool(block_size, pool));
        let table: Arc<dyn MemTableRep> = match (factory, prefix_extractor) {
            (MemTableFactory::PrefixHash { bucket_count }, Some(pe)) => {
                Arc::new(hash_skiplist_rep::HashSkipListRep::new(
                    icmp.clone(),
                    Arc::clone(&arena),
                    pe,
                    bucket_count,
                ))
            }
            (
                MemTableFactory::HashLinkList {
                    bucket_count,
                    threshold_use_skiplist,
                },
                Some(pe),
            ) => Arc::new(hash_skiplist_rep::HashSkipListRep::linked_list(
                icmp.clone(),
                Arc::clone(&arena),
                pe,
                bucket_count,
                threshold_use_skiplist,
            )),
            (
                MemTableFactory::SkipList
                | MemTableFactory::PrefixHash { .. }
                | MemTableFactory::HashLinkList { .. },
                _,
            ) => Arc::new(SkipListRep::new(icmp.clone(), Arc::clone(&arena))),
            (MemTableFactory::Vector, _) => {
                Arc::new(vector_rep::VectorRep::new(icmp.clone(), Arc::clone(&arena)))
            }
        };
        let range_del_table = Arc::new(SkipListRep::new(icmp.clone(), Arc::clone(&arena)));
        MemTable {
            icmp,
            arena,
            table,
            range_del_table,
            num_entries: AtomicU64::new(0),
            num_deletes: AtomicU64::new(0),
            num_range_deletes: AtomicU64::new(0),
            fragmented_range_dels: Default::default(),
            first_seqno: AtomicU64::new(u64::MAX),
            largest_seqno: AtomicU64::new(0),
            min_prep_wal: AtomicU64::new(u64::MAX),
            wbm: None,
            charged: std::sync::atomic::AtomicUsize::new(0),
            immutable: std::sync::atomic::AtomicBool::new(false),
            inplace: None,
            expected_key_len: None,
            key_of_other_length: std::sync::atomic::AtomicBool::new(false),
            bloom: None,
        }
    }

    /// This memtable with a bloom filter of `bytes` bytes (RocksDB's
    /// `memtable_prefix_bloom_size_ratio` x `write_buffer_size`) over the
    /// point entries' prefixes (with `prefix_extractor`) and, with
    /// `whole_key`, their whole user keys (RocksDB's
    /// `memtable_whole_key_filtering`). No filter if `bytes` is 0 or there
    /// is nothing to put in it. Its memory is outside the arena.
    /// REQUIRES: nothing was added yet.
    pub fn with_bloom(
        mut self,
        bytes: usize,
        prefix_extractor: Option<crate::util::slice_transform::SliceTransformRef>,
        whole_key: bool,
    ) -> MemTable {
        debug_assert!(self.is_empty());
        if bytes > 0 && (whole_key || prefix_extractor.is_some()) {
            self.bloom = Some(MemTableBloomConfig {
                filter: bloom::MemTableBloom::new(bytes),
                prefix_extractor,
                whole_key,
                sampled_probes: std::sync::atomic::AtomicU32::new(0),
                sampled_negatives: std::sync::atomic::AtomicU32::new(0),
            });
        }
        self
    }

    /// Bytes of the memtable bloom (0 without one).
    pub fn bloom_size(&self) -> usize {
        self.bloom.as_ref().map_or(0, |b| b.filter.size())
    }

    /// False only if the memtable bloom proves `user_key` has no point
    /// entry here.
    #[inline]
    fn bloom_may_contain(&self, user_key: &[u8]) -> bool {
        let Some(b) = &self.bloom else {
            return true;
        };
        let h = if b.whole_key {
            bloom::MemTableBloom::hash(user_key)
        } else {
            match &b.prefix_extractor {
                Some(pe) if pe.in_domain(user_key) => {
                    bloom::MemTableBloom::hash(pe.transform(user_key))
                }
                _ => return true,
            }
        };
        let sampled = h >> BLOOM_SAMPLE_SHIFT == 0;
        if !sampled && !b.worth_probing() {
            return true;
        }
        let may = b.filter.may_contain(h);
        if sampled {
            b.record(may);
        }
        may
    }

    /// This memtable with its memory charged to `wbm` (see
    /// `write_buffer_manager.rs`).
    pub fn charged_to(mut self, wbm: Option<std::sync::Arc<WriteBufferManager>>) -> MemTable {
        self.wbm = wbm;
        self.charge_growth();
        self
    }

    /// Charges the arena's growth since the last charge.
    #[inline]
    fn charge_growth(&self) {
        let Some(w) = &self.wbm else { return };
        let now = self.arena.memory_usage();
        let before = self.charged.load(std::sync::atomic::Ordering::Relaxed);
        if now > before
            && self
                .charged
                .compare_exchange(
                    before,
                    now,
                    std::sync::atomic::Ordering::Relaxed,
                    std::sync::atomic::Ordering::Relaxed,
                )
                .is_ok()
        {
            w.reserve(now - before);
        }
    }

    /// This memtable with RocksDB's `inplace_update_support`: a `Put` of a
    /// key whose newest entry here is a `Put` with a value at least as long
    /// overwrites that value in place, keeping the entry's sequence number
    /// (so snapshots older than the write see the new value, as in
    /// RocksDB); otherwise it is added. Readers of point entries then take
    /// a shared lock and iterators copy each entry they stand on; the
    /// update takes it exclusively. REQUIRES: writes are not concurrent
    /// (`allow_concurrent_memtable_write` off) and the rep can rewrite
    /// entries (the skiplist).
    pub fn with_inplace_updates(mut self, on: bool) -> MemTable {
        self.inplace = on.then(|| std::sync::RwLock::new(()));
        self
    }

    /// A shared hold of the in-place update lock, when updates are on.
    fn read_hold(&self) -> Option<std::sync::RwLockReadGuard<'_, ()>> {
        self.inplace
            .as_ref()
            .map(|l| l.read().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Overwrites the value of `key`'s newest entry if it is a `Put` whose
    /// value is at least as long (see `with_inplace_updates`).
    fn update_in_place(&self, lock: &std::sync::RwLock<()>, key: &[u8], value: &[u8]) -> bool {
        let _excl = lock
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let trailer =
            pack_sequence_and_type(MAX_SEQUENCE_NUMBER, VALUE_TYPE_FOR_SEEK).to_le_bytes();
        let ucmp = self.icmp.user_comparator();
        let mut rewrite = |entry: &mut [u8]| {
            let newest_is_put = match parse_internal_key(decode_entry(entry).0) {
                Some(p) => {
                    ucmp.compare(p.user_key, key).is_eq() && p.value_type == ValueType::Value
                }
                None => false,
            };
            newest_is_put && rewrite_value_in_place(entry, value)
        };
        with_lookup_entry(&[key, &trailer], |target| {
            // SAFETY: the exclusive lock keeps out every reader of the
            // point entries (they hold it shared while they look at entry
            // bytes), and writes are not concurrent (REQUIRES of
            // `with_inplace_updates`); only the value part changes, not
            // how the entry orders.
            unsafe { self.table.rewrite_first_from(target, &mut rewrite) }
        })
    }

    /// This memtable, noting whether a point entry's key is not
    /// `key_len` bytes long (a PlainTable column family's fixed
    /// `user_key_len`: the flush then writes a variable-length PlainTable;
    /// RocksDB takes such keys too, and writes a fixed-length table that
    /// misreads them). `None`: nothing noted.
    pub fn expect_key_len(mut self, key_len: Option<usize>) -> MemTable {
        self.expected_key_len = key_len;
        self
    }

    /// A point entry's key was not of the length given to
    /// [`MemTable::expect_key_len`]. Read once the memtable is immutable
    /// (its writers are done).
    pub fn has_key_of_other_length(&self) -> bool {
        self.key_of_other_length.load(Ordering::Relaxed)
    }

    /// Marks the memtable immutable (being flushed) in its memory budget.
    /// REQUIRES: no insert is in flight or will follow.
    pub fn mark_immutable(&self) {
        use std::sync::atomic::Ordering::{AcqRel, Relaxed};
        self.charge_growth();
        if !self.immutable.swap(true, AcqRel)
            && let Some(w) = &self.wbm
        {
            w.schedule_free(self.charged.load(Relaxed));
        }
    }

    /// Records that data committed from a section prepared in WAL `wal`
    /// goes into this memtable.
    pub fn reference_prep_wal(&self, wal: u64) {
        self.min_prep_wal.fetch_min(wal, Ordering::AcqRel);
    }

    /// The oldest prepared-section WAL this memtable's data needs, if any.
    pub fn min_prep_wal(&self) -> Option<u64> {
        let w = self.min_prep_wal.load(Ordering::Acquire);
        (w != u64::MAX).then_some(w)
    }

    pub fn comparator(&self) -> &InternalKeyComparator {
        &self.icmp
    }

    /// Adds an entry. For `ValueType::RangeDeletion`, `key` is the begin
    /// user key and `value` the (exclusive) end user key; it goes to the
    /// range-tombstone rep. The entry is encoded directly into arena memory
    /// (one allocation, no heap allocation). Thread-safe: concurrent calls
    /// are allowed.
    ///
    /// REQUIRES: `(key, seq)` is never added twice; `seq <=
    /// MAX_SEQUENCE_NUMBER`; `t` is a value type or `RangeDeletion`;
    /// `key.len() + 8` and `value.len()` fit in a `u32` (the DB layer must
    /// reject larger keys/values: this panics on them).
    pub fn add(&self, seq: SequenceNumber, t: ValueType, key: &[u8], value: &[u8]) {
        debug_assert!(seq <= MAX_SEQUENCE_NUMBER);
        if let Some(lock) = &self.inplace
            && t == ValueType::Value
            && self.update_in_place(lock, key, value)
        {
            return;
        }
        debug_assert!(t.is_extended_value_type(), "{t:?} in a memtable");
        let trailer = pack_sequence_and_type(seq, t).to_le_bytes();
        let len = encoded_entry_len(key.len() + TRAILER_LEN, value.len());
        let Some(len) = len else {
            // Documented REQUIRES; a silently dropped or truncated write
            // would be worse than stopping here.
            unreachable_oversize(key.len(), value.len());
        };
        let hashes = self.bloom_hashes(t, key);
        let rep = if t == ValueType::RangeDeletion {
            &self.range_del_table
        } else {
            &self.table
        };
        let inserted = rep.insert_with(key, len, &mut |buf| {
            encode_entry(buf, &[key, &trailer], value)
        });
        debug_assert!(inserted, "memtable entry (seq {seq}, {t:?}) added twice");
        self.bloom_add(&hashes);
        self.account(t, key);
        self.first_seqno.fetch_min(seq, Ordering::Relaxed);
        self.largest_seqno.fetch_max(seq, Ordering::Relaxed);
        self.charge_growth();
    }

    /// `add` for up to [`skiplist::BATCH`] entries `(seq, type, key,
    /// value)` at once (the write path passes a batch's consecutive
    /// entries for one memtable): the skiplist searches for their places
    /// together, overlapping their cache misses (see
    /// `SkipList::insert_many_with`). Same REQUIRES as `add`, for each.
    pub fn add_many(&self, entries: &[(SequenceNumber, ValueType, &[u8], &[u8])]) {
        let count = entries.len();
        if !(2..=skiplist::BATCH).contains(&count)
            || self.inplace.is_some()
            || entries.iter().any(|e| e.1 == ValueType::RangeDeletion)
        {
            for &(seq, t, key, value) in entries {
                self.add(seq, t, key, value);
            }
            return;
        }
        let mut keys: [&[u8]; skiplist::BATCH] = [&[]; skiplist::BATCH];
        let mut lens = [0usize; skiplist::BATCH];
        let mut hashes = [[None; 2]; skiplist::BATCH];
        let (mut first, mut last) = (MAX_SEQUENCE_NUMBER, 0);
        for (i, &(seq, t, key, value)) in entries.iter().enumerate() {
            debug_assert!(seq <= MAX_SEQUENCE_NUMBER);
            debug_assert!(t.is_extended_value_type(), "{t:?} in a memtable");
            let Some(len) = encoded_entry_len(key.len() + TRAILER_LEN, value.len()) else {
                unreachable_oversize(key.len(), value.len());
            };
            keys[i] = key;
            lens[i] = len;
            hashes[i] = self.bloom_hashes(t, key);
            first = first.min(seq);
            last = last.max(seq);
        }
        let inserted =
            self.table
                .insert_many_with(&keys[..count], &lens[..count], &mut |i, buf| {
                    let (seq, t, key, value) = entries[i];
                    encode_entry(
                        buf,
                        &[key, &pack_sequence_and_type(seq, t).to_le_bytes()],
                        value,
                    )
                });
        debug_assert_eq!(
            inserted,
            (1u32 << count) - 1,
            "memtable entries added twice"
        );
        for (i, &(_, t, key, _)) in entries.iter().enumerate() {
            self.bloom_add(&hashes[i]);
            self.account(t, key);
        }
        self.first_seqno.fetch_min(first, Ordering::Relaxed);
        self.largest_seqno.fetch_max(last, Ordering::Relaxed);
        self.charge_growth();
    }

    /// The memtable bloom's hashes of a new entry (whole key, prefix), with
    /// their lines prefetched so they load while the entry goes in.
    #[inline]
    fn bloom_hashes(&self, t: ValueType, key: &[u8]) -> [Option<u64>; 2] {
        let mut hashes = [None; 2];
        let Some(b) = self
            .bloom
            .as_ref()
            .filter(|_| t != ValueType::RangeDeletion)
        else {
            return hashes;
        };
        if b.whole_key {
            hashes[0] = Some(bloom::MemTableBloom::hash(key));
        }
        if let Some(pe) = &b.prefix_extractor
            && pe.in_domain(key)
        {
            hashes[1] = Some(bloom::MemTableBloom::hash(pe.transform(key)));
        }
        for h in hashes.iter().flatten() {
            b.filter.prefetch(*h);
        }
        hashes
    }

    /// Sets the bloom bits of an inserted entry. Called before the write
    /// returns, so before its sequence is published: a reader that may see
    /// the entry finds them.
    #[inline]
    fn bloom_add(&self, hashes: &[Option<u64>; 2]) {
        if let Some(b) = &self.bloom {
            for h in hashes.iter().flatten() {
                b.filter.add(*h);
            }
        }
    }

    /// Counts an inserted entry (entries, deletions, range deletions; keys
    /// of another length than a PlainTable's fixed one).
    #[inline]
    fn account(&self, t: ValueType, key: &[u8]) {
        if self.expected_key_len.is_some_and(|n| n != key.len()) && t != ValueType::RangeDeletion {
            self.key_of_other_length.store(true, Ordering::Relaxed);
        }
        self.num_entries.fetch_add(1, Ordering::Relaxed);
        match t {
            ValueType::Deletion | ValueType::SingleDeletion | ValueType::DeletionWithTimestamp => {
                self.num_deletes.fetch_add(1, Ordering::Relaxed);
            }
            ValueType::RangeDeletion => {
                // Release: a reader that sees the count sees the entry
                // (`fragmented_range_tombstones` builds from both).
                self.num_range_deletes.fetch_add(1, Ordering::Release);
            }
            _ => {}
        }
    }

    /// Whether an entry with a `key_len`-byte user key and a
    /// `value_len`-byte value can be added (see `add`'s REQUIRES).
    pub fn entry_fits(key_len: usize, value_len: usize) -> bool {
        key_len
            .checked_add(TRAILER_LEN)
            .and_then(|k| encoded_entry_len(k, value_len))
            .is_some()
    }

    /// Calls `f(seq, type, value)` on the point entries of `user_key` with
    /// `seq <= snapshot`, newest first, until `f` breaks or the key's
    /// entries run out. Range tombstones are not applied. This is the
    /// allocation-free form of [`MemTable::get`] (e.g. for a `GetContext`).
    pub fn get_with<F>(&self, user_key: &[u8], snapshot: SequenceNumber, mut f: F)
    where
        F: FnMut(SequenceNumber, ValueType, &[u8]) -> ControlFlow<()>,
    {
        if !self.bloom_may_contain(user_key) {
            return;
        }
        let snapshot = snapshot.min(MAX_SEQUENCE_NUMBER);
        let trailer = pack_sequence_and_type(snapshot, VALUE_TYPE_FOR_SEEK).to_le_bytes();
        let ucmp = self.icmp.user_comparator();
        let mut visit = |entry: &[u8]| {
            let (ikey, value) = decode_entry(entry);
            match parse_internal_key(ikey) {
                Some(p) if ucmp.compare(p.user_key, user_key).is_eq() => {
                    debug_assert!(p.sequence <= snapshot);
                    f(p.sequence, p.value_type, value)
                }
                _ => ControlFlow::Break(()),
            }
        };
        let _shared = self.read_hold();
        with_lookup_entry(&[user_key, &trailer], |target| {
            self.table.visit_from(target, &mut visit);
        });
    }

    /// The newest entries of `user_key` visible at `snapshot`; see
    /// [`MemTableGet`]. Range tombstones are not applied.
    pub fn get(&self, user_key: &[u8], snapshot: SequenceNumber) -> MemTableGet {
        let mut operands = Vec::new();
        let mut base = None;
        self.get_with(user_key, snapshot, |seq, t, value| {
            if t == ValueType::Merge {
                operands.push((seq, value.to_vec()));
                ControlFlow::Continue(())
            } else {
                base = Some((t, seq, value.to_vec()));
                ControlFlow::Break(())
            }
        });
        match (operands.is_empty(), base) {
            (true, None) => MemTableGet::NotFound,
            (true, Some((value_type, seq, value))) => MemTableGet::Found {
                value_type,
                seq,
                value,
            },
            (false, base) => MemTableGet::Merge { operands, base },
        }
    }

    /// An iterator over the point entries: `key()` is the internal key,
    /// `value()` the value. It sees entries added before each positioning
    /// call (and maybe later ones), always in internal-key order.
    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter {
            iter: Arc::clone(&self.table).iter(),
            copy: self.inplace.as_ref().map(|_| Vec::new()),
            mem: Arc::clone(self),
            scratch: Vec::new(),
        }
    }

    /// An iterator over the range tombstones: `key()` is the internal begin
    /// key (type `RangeDeletion`), `value()` the end user key.
    pub fn range_del_iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter {
            iter: Arc::clone(&self.range_del_table).iter(),
            // Range tombstones are never rewritten.
            copy: None,
            mem: Arc::clone(self),
            scratch: Vec::new(),
        }
    }

    /// The range tombstones, fragmented (`None`: there are none). Shared
    /// between readers and rebuilt only after a range deletion was added
    /// (RocksDB's `MemTable::NewRangeTombstoneIterator` with its cached
    /// fragmented list).
    pub fn fragmented_range_tombstones(&self) -> Option<Arc<FragmentedRangeTombstoneList>> {
        // The count first: every tombstone it counts is in the rep, so a
        // list built afterwards holds at least `count` of them; labelling
        // it with `count` can only make a later reader rebuild, never
        // miss one.
        let count = self.num_range_deletes.load(Ordering::Acquire);
        if count == 0 {
            return None;
        }
        if let Some(c) = &*self.fragmented_range_dels.load()
            && c.count == count
        {
            return Some(Arc::clone(&c.list));
        }
        let list = Arc::new(FragmentedRangeTombstoneList::from_encoded(
            self.icmp.user_comparator().clone(),
            &self.range_tombstones(),
        ));
        self.fragmented_range_dels
            .store(Some(Arc::new(FragmentedCache {
                count,
                list: Arc::clone(&list),
            })));
        Some(list)
    }

    /// The range tombstones as `(internal begin key, end user key)`, sorted
    /// by internal key.
    pub fn range_tombstones(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut it = Arc::clone(&self.range_del_table).iter();
        it.seek_to_first();
        while it.valid() {
            let (k, v) = decode_entry(it.entry());
            out.push((k.to_vec(), v.to_vec()));
            it.next();
        }
        out
    }

    /// Bytes the arena obtained from the allocator (all entries, both reps,
    /// block overhead): the exact figure to hold against `write_buffer_size`.
    pub fn approximate_memory_usage(&self) -> usize {
        self.arena.memory_usage()
    }

    /// Bytes its entries take in the arena (what was allocated, less the
    /// unused rest of the current block): about what a flush writes,
    /// before compression.
    pub fn used_bytes(&self) -> usize {
        self.arena
            .memory_usage()
            .saturating_sub(self.arena.allocated_and_unused())
    }

    /// RocksDB's `MemTable::ShouldFlushNow`: whether this memtable is full
    /// for a `write_buffer_size` budget. It lets the arena over-allocate by
    /// at most 0.6 block, and stops once the last block is 3/4 used.
    pub fn should_flush(&self, write_buffer_size: usize) -> bool {
        let block = self.arena.block_size();
        let allowed_over = block * 6 / 10;
        let allocated = self.arena.memory_usage();
        if allocated + block < write_buffer_size + allowed_over {
            return false;
        }
        if allocated > write_buffer_size + allowed_over {
            return true;
        }
        self.arena.allocated_and_unused() < block / 4
    }

    /// Every `add`: point entries and range tombstones (as RocksDB counts).
    pub fn num_entries(&self) -> u64 {
        self.num_entries.load(Ordering::Relaxed)
    }

    /// `Deletion`, `SingleDeletion` and `DeletionWithTimestamp` entries.
    pub fn num_deletes(&self) -> u64 {
        self.num_deletes.load(Ordering::Relaxed)
    }

    /// `RangeDeletion` entries.
    pub fn num_range_deletes(&self) -> u64 {
        self.num_range_deletes.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.num_entries() == 0
    }

    /// The smallest sequence number added (0 if empty).
    pub fn first_seqno(&self) -> SequenceNumber {
        match self.first_seqno.load(Ordering::Relaxed) {
            u64::MAX => 0,
            s => s,
        }
    }

    /// The largest sequence number added (0 if empty).
    pub fn largest_seqno(&self) -> SequenceNumber {
        self.largest_seqno.load(Ordering::Relaxed)
    }
}

/// A broken `add` precondition: a key or value whose length does not fit
/// the entry format's varint32. Stopping is the only safe choice left (a
/// dropped or truncated write would lose data silently); the write path
/// rejects such keys and values before they get here.
#[cold]
#[allow(clippy::panic)]
fn unreachable_oversize(key_len: usize, value_len: usize) -> ! {
    panic!("memtable entry too large: key {key_len} bytes, value {value_len} bytes")
}

/// Runs `f` on the lookup entry `varint32 len | parts...` built on the
/// stack when it is short (the common case), else on the heap.
fn with_lookup_entry<R>(parts: &[&[u8]], f: impl FnOnce(&[u8]) -> R) -> R {
    let key_len: usize = parts.iter().map(|p| p.len()).sum();
    let Some(len) = encoded_entry_len(key_len, 0) else {
        // No entry can have a key this long; the empty target lands on an
        // early entry whose user key differs, so `get_with` finds nothing.
        return f(&[]);
    };
    let mut stack = [0u8; 128];
    let mut heap = Vec::new();
    let buf: &mut [u8] = if len <= stack.len() {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap
    };
    encode_entry(buf, parts, &[]);
    // The value length byte (0) is harmless: entries compare by key only.
    f(buf)
}

/// Iterator over a memtable's entries (see [`MemTable::iter`]); implements
/// [`InternalIterator`] and keeps the memtable alive.
pub struct MemTableIter {
    iter: Box<dyn MemTableRepIter>,
    /// With in-place updates: a copy of the current entry, taken under the
    /// shared lock (the entry's bytes may be rewritten once it is let go).
    copy: Option<Vec<u8>>,
    mem: Arc<MemTable>,
    /// Reused buffer for encoding seek targets.
    scratch: Vec<u8>,
}

impl std::fmt::Debug for MemTableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTableIter")
            .field("valid", &self.iter.valid())
            .finish()
    }
}

impl MemTableIter {
    /// Encodes `target` (an internal key) as an entry prefix in `scratch`.
    /// A target longer than any entry's key (4 GiB) is not supported.
    fn encode_target(&mut self, target: &[u8]) {
        let len = encoded_entry_len(target.len(), 0).unwrap_or(0);
        self.scratch.clear();
        self.scratch.resize(len, 0);
        if len > 0 {
            encode_entry(&mut self.scratch, &[target], &[]);
        }
    }
}

impl MemTableIter {
    /// Runs a positioning step; with in-place updates, under the shared
    /// lock, copying the entry it lands on.
    #[inline]
    fn step(&mut self, f: impl FnOnce(&mut dyn MemTableRepIter, &[u8])) {
        let Some(copy) = &mut self.copy else {
            f(&mut *self.iter, &self.scratch);
            return;
        };
        let _shared = self.mem.read_hold();
        f(&mut *self.iter, &self.scratch);
        copy.clear();
        if self.iter.valid() {
            copy.extend_from_slice(self.iter.entry());
        }
    }

    #[inline]
    fn entry(&self) -> &[u8] {
        match &self.copy {
            Some(c) => c,
            None => self.iter.entry(),
        }
    }
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.iter.valid()
    }

    fn seek_to_first(&mut self) {
        self.step(|it, _| it.seek_to_first());
    }

    fn seek_to_last(&mut self) {
        self.step(|it, _| it.seek_to_last());
    }

    fn seek(&mut self, target: &[u8]) {
        self.encode_target(target);
        self.step(|it, t| it.seek(t));
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.encode_target(target);
        self.step(|it, t| it.seek_for_prev(t));
    }

    fn next(&mut self) {
        self.step(|it, _| it.next());
    }

    fn prev(&mut self) {
        self.step(|it, _| it.prev());
    }

    fn key(&self) -> &[u8] {
        rep::entry_key(self.entry())
    }

    fn value(&self) -> &[u8] {
        decode_entry(self.entry()).1
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}
