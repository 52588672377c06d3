//! The block cache: uncompressed, parsed blocks keyed by (table cache id,
//! block offset), charged by their size in bytes, shareable between
//! tables and between DB instances in one process (RocksDB's block cache,
//! with its `strict_capacity_limit`, pinned usage and cache reservations).
//!
//! Eviction is quick_cache's sharded CLOCK-Pro. Blocks a reader still
//! holds (an `Arc<Block>` cloned out of the cache) are pinned: eviction
//! passes over them, as RocksDB's LRU cache passes over referenced
//! entries, and they count in `pinned_usage`. Reservations (memory that is
//! not a block, such as memtables a write buffer manager charges to the
//! cache: RocksDB's `CacheReservationManager` dummy entries) are entries
//! without a block, pinned until released.
//!
//! With `strict_capacity_limit`, an insert that does not fit once every
//! unpinned entry is evicted is undone (RocksDB's `Status::MemoryLimit`):
//! a reader keeps its block uncached, a reservation is refused. The check
//! sums every shard's weight after each insert (quick_cache keeps no
//! total), which costs concurrent readers: 30% of 8-thread readrandom on a
//! miss-heavy database (2 cores).
//!
//! The same cache can serve as a row cache (RocksDB's `row_cache`, which
//! takes any `Cache`): rows are entries keyed by a 128-bit hash of their
//! variable-length key, which the entry keeps and a lookup compares, so a
//! hash collision is a miss, never a wrong row.
//!
//! Invariant: a table's cache id is unique in the process, so two files
//! (or two opens of one file) never share entries; reservation keys use
//! cache ids from the top of the range, which tables never reach; row keys
//! use first halves in [2^62, 2^63), which neither reaches.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::table::block::Block;
use crate::table::options::BlockCacheApi;

/// (table cache id, block offset).
type CacheKey = (u64, u64);

/// Bookkeeping charged per block on top of its bytes.
const ENTRY_OVERHEAD: u64 = 64;

/// Reservations are entries of at most this many bytes (RocksDB's dummy
/// entry size), spread over the shards: quick_cache bounds each shard by
/// its share of the capacity, and one pinned entry larger than a share
/// would keep that shard over capacity.
const RESERVATION_UNIT: u64 = 256 << 10;

#[derive(Clone, Debug)]
enum Entry {
    Block(Arc<Block>),
    /// Bytes charged by a [`CacheReservation`].
    Reserved(u64),
    /// A row cache entry.
    Row(Arc<CachedRow>),
}

/// A row cache entry: its key and the bytes cached for it (the row cache's
/// user decides what they mean).
#[derive(Debug)]
pub struct CachedRow {
    key: Box<[u8]>,
    value: Box<[u8]>,
}

impl CachedRow {
    pub fn value(&self) -> &[u8] {
        &self.value
    }

    fn charge(&self) -> u64 {
        (self.key.len() + self.value.len()) as u64 + ENTRY_OVERHEAD
    }
}

/// Where a row key lives among the cache's (u64, u64) keys.
fn row_slot(key: &[u8]) -> CacheKey {
    let h = xxhash_rust::xxh3::xxh3_128(key);
    let hi = (h >> 64) as u64;
    ((hi & ((1 << 62) - 1)) | (1 << 62), h as u64)
}

#[derive(Clone, Copy, Debug)]
struct EntryWeighter;

impl quick_cache::Weighter<CacheKey, Entry> for EntryWeighter {
    fn weight(&self, _key: &CacheKey, e: &Entry) -> u64 {
        match e {
            Entry::Block(b) => b.size() as u64 + ENTRY_OVERHEAD,
            Entry::Reserved(n) => *n,
            Entry::Row(r) => r.charge(),
        }
    }
}

/// Pins reservations, and blocks referenced outside the cache.
#[derive(Clone, Copy, Debug, Default)]
struct PinInUse;

impl quick_cache::Lifecycle<CacheKey, Entry> for PinInUse {
    type RequestState = ();

    fn is_pinned(&self, _key: &CacheKey, e: &Entry) -> bool {
        match e {
            Entry::Block(b) => Arc::strong_count(b) > 1,
            Entry::Reserved(_) => true,
            Entry::Row(r) => Arc::strong_count(r) > 1,
        }
    }
}

type Inner = quick_cache::sync::Cache<
    CacheKey,
    Entry,
    EntryWeighter,
    quick_cache::DefaultHashBuilder,
    PinInUse,
>;

/// A byte-bounded cache of blocks.
pub struct BlockCache {
    cache: Inner,
    strict: AtomicBool,
    next_reservation: AtomicU64,
    /// This cache, for the reservations it hands out.
    me: std::sync::Weak<BlockCache>,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity_bytes", &self.capacity())
            .field("usage_bytes", &self.usage())
            .field("strict_capacity_limit", &self.strict_capacity_limit())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding about `capacity_bytes` of blocks.
    pub fn new(capacity_bytes: u64) -> Arc<BlockCache> {
        Self::with_options(capacity_bytes, -1, false)
    }

    /// [`BlockCache::new`] split into `2^shard_bits` shards (RocksDB's
    /// `NewLRUCache(capacity, num_shard_bits)`; each shard evicts on its
    /// own, so a small cache with many shards holds less of a hot set).
    /// `shard_bits` is capped at 10, as quick_cache wants shards of some
    /// size; a negative value (RocksDB: choose) lets quick_cache choose.
    pub fn with_shard_bits(capacity_bytes: u64, shard_bits: i32) -> Arc<BlockCache> {
        Self::with_options(capacity_bytes, shard_bits, false)
    }

    /// RocksDB's `NewLRUCache(capacity, num_shard_bits,
    /// strict_capacity_limit)`.
    pub fn with_options(
        capacity_bytes: u64,
        shard_bits: i32,
        strict_capacity_limit: bool,
    ) -> Arc<BlockCache> {
        let items = (capacity_bytes / 4096).max(16) as usize;
        let capacity = capacity_bytes.max(1);
        let mut builder = quick_cache::OptionsBuilder::new();
        builder
            .estimated_items_capacity(items)
            .weight_capacity(capacity);
        if let Ok(bits) = u32::try_from(shard_bits) {
            builder.shards(1usize << bits.min(10));
        }
        let hasher = quick_cache::DefaultHashBuilder::default;
        let cache = match builder.build() {
            Ok(options) => Inner::with_options(options, EntryWeighter, hasher(), PinInUse),
            // Shards quick_cache refuses: its own choice.
            Err(_) => Inner::with(items, capacity, EntryWeighter, hasher(), PinInUse),
        };
        Arc::new_cyclic(|me| BlockCache {
            cache,
            strict: AtomicBool::new(strict_capacity_limit),
            next_reservation: AtomicU64::new(0),
            me: me.clone(),
        })
    }

    /// Bytes currently charged (blocks and reservations).
    pub fn usage(&self) -> u64 {
        self.cache.weight()
    }

    pub fn capacity(&self) -> u64 {
        self.cache.capacity()
    }

    /// Bytes charged by blocks readers hold and by reservations (RocksDB's
    /// `GetPinnedUsage`). Walks the cache.
    pub fn pinned_usage(&self) -> u64 {
        self.cache
            .iter()
            .map(|(_, e)| match e {
                // The cache's reference, and this walk's clone.
                Entry::Block(b) if Arc::strong_count(&b) > 2 => b.size() as u64 + ENTRY_OVERHEAD,
                Entry::Block(_) => 0,
                Entry::Reserved(n) => n,
                Entry::Row(r) if Arc::strong_count(&r) > 2 => r.charge(),
                Entry::Row(_) => 0,
            })
            .sum()
    }

    /// The row cached under `key`, if any.
    pub fn lookup_row(&self, key: &[u8]) -> Option<Arc<CachedRow>> {
        match self.cache.get(&row_slot(key))? {
            Entry::Row(r) if *r.key == *key => Some(r),
            _ => None,
        }
    }

    /// Caches `value` as the row `key` (replacing a row whose key has the
    /// same hash). Refused under the strict limit when it does not fit.
    pub fn insert_row(&self, key: &[u8], value: Vec<u8>) {
        let row = CachedRow {
            key: key.into(),
            value: value.into_boxed_slice(),
        };
        self.insert_entry(row_slot(key), Entry::Row(Arc::new(row)));
    }

    /// Changes the capacity; unpinned blocks that no longer fit are
    /// evicted.
    pub fn set_capacity(&self, capacity_bytes: u64) {
        self.cache.set_capacity(capacity_bytes.max(1));
    }

    pub fn strict_capacity_limit(&self) -> bool {
        self.strict.load(Ordering::Relaxed)
    }

    pub fn set_strict_capacity_limit(&self, strict: bool) {
        self.strict.store(strict, Ordering::Relaxed);
    }

    /// Inserts `e`; under the strict limit, undoes an insert that left the
    /// cache over capacity (nothing more could be evicted) and says so.
    fn insert_entry(&self, key: CacheKey, e: Entry) -> bool {
        self.cache.insert(key, e);
        if self.strict_capacity_limit() && self.cache.weight() > self.cache.capacity() {
            self.cache.remove(&key);
            return false;
        }
        true
    }

    /// Charges `bytes` of other memory (memtables, RocksDB's cache
    /// reservations) to the cache until the reservation is dropped; `None`
    /// when the strict limit refuses it.
    pub fn reserve(&self, bytes: u64) -> Option<CacheReservation> {
        self.reserve_in(bytes)
    }

    /// [`BlockCache::reserve`] that goes over a strict limit rather than
    /// fail (memory already in use, such as an open table reader's, is
    /// charged whatever the limit says; blocks give way first).
    pub fn reserve_over_limit(&self, bytes: u64) -> Option<CacheReservation> {
        self.reserve_units(bytes, false)
    }

    /// Inserts `bytes` as reservation entries of at most
    /// [`RESERVATION_UNIT`]; under the strict limit (`strict`), undoes them
    /// all if one does not fit.
    fn reserve_units(&self, bytes: u64, strict: bool) -> Option<CacheReservation> {
        let mut r = CacheReservation {
            cache: self.me.upgrade()?,
            keys: Vec::new(),
            bytes,
        };
        let mut left = bytes;
        loop {
            let unit = left.min(RESERVATION_UNIT);
            let key = self.next_reservation_key();
            if strict {
                if !self.insert_entry(key, Entry::Reserved(unit)) {
                    // Dropping `r` takes back the units inserted so far.
                    return None;
                }
            } else {
                self.cache.insert(key, Entry::Reserved(unit));
            }
            r.keys.push(key);
            left -= unit;
            if left == 0 {
                return Some(r);
            }
        }
    }

    fn next_reservation_key(&self) -> CacheKey {
        let n = self.next_reservation.fetch_add(1, Ordering::Relaxed);
        (u64::MAX - (n >> 32), n & 0xffff_ffff)
    }

    fn reserve_in(&self, bytes: u64) -> Option<CacheReservation> {
        self.reserve_units(bytes, self.strict_capacity_limit())
    }
}

/// Bytes charged to a block cache until dropped.
#[derive(Debug)]
pub struct CacheReservation {
    cache: Arc<BlockCache>,
    /// One entry per unit.
    keys: Vec<CacheKey>,
    bytes: u64,
}

impl CacheReservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for CacheReservation {
    fn drop(&mut self) {
        for k in &self.keys {
            self.cache.cache.remove(k);
        }
    }
}

impl crate::memtable::MemoryCharger for BlockCache {
    fn charge(&self, bytes: u64) -> Option<Box<dyn Send + Sync>> {
        self.reserve_in(bytes)
            .map(|r| Box::new(r) as Box<dyn Send + Sync>)
    }
}

impl BlockCacheApi for BlockCache {
    fn lookup(&self, cache_id: u64, offset: u64) -> Option<Arc<Block>> {
        match self.cache.get(&(cache_id, offset))? {
            Entry::Block(b) => Some(b),
            Entry::Reserved(_) | Entry::Row(_) => None,
        }
    }

    fn insert(&self, cache_id: u64, offset: u64, block: Arc<Block>) {
        // Refused under the strict limit: the reader keeps its block
        // uncached.
        self.insert_entry((cache_id, offset), Entry::Block(block));
    }

    fn usage(&self) -> u64 {
        BlockCache::usage(self)
    }

    fn capacity(&self) -> u64 {
        BlockCache::capacity(self)
    }

    fn pinned_usage(&self) -> u64 {
        BlockCache::pinned_usage(self)
    }

    fn charge(&self, bytes: u64) -> Option<Box<dyn Send + Sync>> {
        self.reserve_over_limit(bytes)
            .map(|r| Box::new(r) as Box<dyn Send + Sync>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(n: usize) -> Arc<Block> {
        let mut v = vec![0u8; n];
        v.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        Arc::new(Block::from_vec(v).unwrap())
    }

    #[test]
    fn bounded_by_bytes() {
        let c = BlockCache::new(64 * 1024);
        for i in 0..200u64 {
            c.insert(1, i, block(1024));
        }
        assert!(c.usage() <= 64 * 1024, "{}", c.usage());
        assert!(c.lookup(1, 199).is_some());
    }

    #[test]
    fn blocks_in_use_are_pinned_and_a_strict_cache_refuses_more() {
        let each = 1008 + ENTRY_OVERHEAD;
        let c = BlockCache::with_options(3 * each, 0, true);
        let held: Vec<_> = (0..3)
            .map(|i| {
                let b = block(1000);
                c.insert(1, i, Arc::clone(&b));
                b
            })
            .collect();
        assert_eq!(c.usage(), 3 * each);
        assert_eq!(c.pinned_usage(), 3 * each);
        // Everything is pinned: a strict cache does not take a fourth.
        c.insert(1, 3, block(1000));
        assert!(c.lookup(1, 3).is_none());
        assert_eq!(c.usage(), 3 * each);
        // Not strict: it goes over capacity instead.
        c.set_strict_capacity_limit(false);
        c.insert(1, 4, block(1000));
        assert!(c.lookup(1, 4).is_some());
        assert_eq!(c.usage(), 4 * each);
        // Released blocks give way when room is needed.
        drop(held);
        assert_eq!(c.pinned_usage(), 0);
        c.set_capacity(each);
        assert!(c.usage() <= each, "{}", c.usage());
    }

    #[test]
    fn rows_are_keyed_by_their_bytes_and_share_the_capacity() {
        let c = BlockCache::with_options(64 * 1024, 0, false);
        c.insert_row(b"row-a", vec![1; 100]);
        c.insert(1, 0, block(1000));
        let a = c.lookup_row(b"row-a").unwrap();
        assert_eq!(a.value(), &[1; 100][..]);
        assert!(c.lookup_row(b"row-b").is_none());
        assert!(c.lookup(1, 0).is_some());
        assert_eq!(
            c.usage(),
            (5 + 100 + ENTRY_OVERHEAD) + (1008 + ENTRY_OVERHEAD)
        );
        // Held rows are pinned, as held blocks are.
        assert_eq!(c.pinned_usage(), 5 + 100 + ENTRY_OVERHEAD);
        drop(a);
        assert_eq!(c.pinned_usage(), 0);
        // Rows are evicted like blocks.
        for i in 0..2000u32 {
            c.insert_row(&i.to_be_bytes(), vec![0; 100]);
        }
        assert!(c.usage() <= 64 * 1024, "{}", c.usage());
        // The slot of a key is never a block's or a reservation's.
        let (hi, _) = row_slot(b"row-a");
        assert!((1 << 62..1 << 63).contains(&hi));
    }

    #[test]
    fn reservations_charge_until_dropped() {
        let c = BlockCache::with_options(1 << 20, 0, true);
        let r = c.reserve(256 << 10).unwrap();
        let r2 = c.reserve(256 << 10).unwrap();
        assert_eq!(r.bytes() + r2.bytes(), 512 << 10);
        assert_eq!(c.usage(), 512 << 10);
        assert_eq!(c.pinned_usage(), 512 << 10);
        // Reservations never give way to blocks.
        for i in 0..2000 {
            c.insert(7, i, block(1000));
        }
        assert!(c.usage() <= 1 << 20, "{}", c.usage());
        assert_eq!(c.pinned_usage(), 512 << 10);
        drop((r, r2));
        assert!(c.usage() <= 512 << 10, "{}", c.usage());
        assert_eq!(c.pinned_usage(), 0);
        // Strict: a reservation past capacity is refused.
        let c = BlockCache::with_options(1000, 0, true);
        assert!(c.reserve(2000).is_none());
        assert_eq!(c.usage(), 0);
        // A reservation larger than a shard's share is split over shards,
        // and refused whole (nothing left behind) when it cannot fit.
        let c = BlockCache::with_options(4 << 20, 3, true);
        let big = c.reserve(3 << 20).unwrap();
        assert_eq!(c.usage(), 3 << 20);
        assert!(c.reserve(2 << 20).is_none());
        assert_eq!(c.usage(), 3 << 20);
        drop(big);
        assert_eq!(c.usage(), 0);
    }
}
