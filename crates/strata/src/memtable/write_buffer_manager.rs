//! One memory budget for memtables across column families and databases
//! (RocksDB's `WriteBufferManager`, `db_write_buffer_size`).
//!
//! Every memtable created with a manager charges its arena's growth to it,
//! moves its bytes from "mutable" to "being flushed" when it becomes
//! immutable, and returns them when it is freed. A database asks
//! [`WriteBufferManager::should_flush`] on its write path, as RocksDB does:
//! when the active memtables hold more than 7/8 of the budget, or the
//! whole budget is used and at least half of it by active memtables, the
//! database switches its oldest non-empty active memtable and flushes it.
//! With `allow_stall`, writers wait while the budget is used up (they slow
//! down and stop; they never fail).
//!
//! With a cache to charge (RocksDB's `WriteBufferManager(buffer_size,
//! cache)`, `cost_to_cache`), memtable memory is also reserved in the block
//! cache in 256 KiB entries (RocksDB's dummy entries), so memtables and
//! cached blocks share one capacity; the reservation grows with the
//! memtables and shrinks, with RocksDB's delay, once they use less than 3/4
//! of it.
//!
//! Invariant: `memory_usage` is the sum of the bytes charged by live
//! memtables, and `mutable_memory_usage` the part charged by memtables not
//! yet marked immutable (a memtable is marked once, after its last insert:
//! the write path switches memtables only with no insert in flight).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// Somewhere memory can be charged: the block cache (RocksDB's cache
/// reservations). Implemented by `crate::cache::BlockCache`.
pub trait MemoryCharger: Send + Sync {
    /// Charges `bytes` until the returned token is dropped; `None` when
    /// the charger's strict limit refuses them.
    fn charge(&self, bytes: u64) -> Option<Box<dyn Send + Sync>>;
}

/// RocksDB's `kSizeDummyEntry`: the unit memtables are charged in.
pub const CHARGE_UNIT: usize = 256 << 10;

/// The reservation held in a cache for the memtables.
struct CacheCharge {
    cache: Arc<dyn MemoryCharger>,
    /// One token per `CHARGE_UNIT` reserved.
    tokens: Mutex<Vec<Box<dyn Send + Sync>>>,
}

impl std::fmt::Debug for CacheCharge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheCharge").finish_non_exhaustive()
    }
}

impl CacheCharge {
    /// RocksDB's `UpdateCacheReservation` with delayed decrease: grow to
    /// cover `used`; shrink only below 3/4 of what is held, to the
    /// smallest number of units covering `used`.
    fn update(&self, memory_used: &AtomicUsize) {
        let mut t = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        // Read under the lock, so a reservation and a free that race apply
        // in order and the charge follows the latest usage.
        let used = memory_used.load(Ordering::Relaxed);
        let held = t.len() * CHARGE_UNIT;
        if used > held {
            while t.len() * CHARGE_UNIT < used {
                match self.cache.charge(CHARGE_UNIT as u64) {
                    Some(tok) => t.push(tok),
                    // The cache is full of pinned entries: charge what fits.
                    None => break,
                }
            }
        } else if used < held / 4 * 3 {
            t.truncate(used.div_ceil(CHARGE_UNIT));
        }
    }

    fn charged(&self) -> usize {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
            * CHARGE_UNIT
    }
}

/// A memtable budget shared by the column families of one or more
/// databases (pass one `Arc` in each database's
/// `Options::write_buffer_manager`).
#[derive(Debug)]
pub struct WriteBufferManager {
    buffer_size: usize,
    allow_stall: bool,
    memory_used: AtomicUsize,
    mutable_used: AtomicUsize,
    /// Writers waiting for room (with `allow_stall`) sleep here.
    room: Mutex<()>,
    room_cv: Condvar,
    /// The block cache memtables are charged to, if any.
    cache: Option<CacheCharge>,
}

impl WriteBufferManager {
    /// A budget of `buffer_size` bytes of memtables (0: track usage
    /// only, never flush or stall for it). `allow_stall`: writers wait
    /// while the budget is used up.
    pub fn new(buffer_size: usize, allow_stall: bool) -> Arc<WriteBufferManager> {
        Self::build(buffer_size, allow_stall, None)
    }

    fn build(
        buffer_size: usize,
        allow_stall: bool,
        cache: Option<CacheCharge>,
    ) -> Arc<WriteBufferManager> {
        Arc::new(WriteBufferManager {
            buffer_size,
            allow_stall,
            memory_used: AtomicUsize::new(0),
            mutable_used: AtomicUsize::new(0),
            room: Mutex::new(()),
            room_cv: Condvar::new(),
            cache,
        })
    }

    /// [`WriteBufferManager::new`] that also charges memtable memory to
    /// `cache` (RocksDB's `WriteBufferManager(buffer_size, cache,
    /// allow_stall)`): memtables and cached blocks then share the cache's
    /// capacity.
    pub fn with_cache(
        buffer_size: usize,
        cache: Arc<dyn MemoryCharger>,
        allow_stall: bool,
    ) -> Arc<WriteBufferManager> {
        let charge = CacheCharge {
            cache,
            tokens: Mutex::new(Vec::new()),
        };
        Self::build(buffer_size, allow_stall, Some(charge))
    }

    /// Whether memtables are charged to a cache (RocksDB's `cost_to_cache`).
    pub fn cost_to_cache(&self) -> bool {
        self.cache.is_some()
    }

    /// Bytes reserved in the cache for memtables (RocksDB's
    /// `dummy_entries_in_cache_usage`).
    pub fn charged_to_cache(&self) -> usize {
        self.cache.as_ref().map_or(0, CacheCharge::charged)
    }

    /// Whether a budget is set (not only tracking).
    pub fn enabled(&self) -> bool {
        self.buffer_size > 0
    }

    pub fn buffer_size(&self) -> usize {
        self.buffer_size
    }

    /// Bytes held by all memtables charged here.
    pub fn memory_usage(&self) -> usize {
        self.memory_used.load(Ordering::Relaxed)
    }

    /// Bytes held by active (not yet immutable) memtables.
    pub fn mutable_memory_usage(&self) -> usize {
        self.mutable_used.load(Ordering::Relaxed)
    }

    /// RocksDB's `ShouldFlush`: active memtables over 7/8 of the budget,
    /// or the whole budget used with at least half in active memtables.
    pub fn should_flush(&self) -> bool {
        if !self.enabled() {
            return false;
        }
        let mutable = self.mutable_memory_usage();
        mutable > self.buffer_size - self.buffer_size / 8
            || (self.memory_usage() >= self.buffer_size && mutable >= self.buffer_size / 2)
    }

    /// Writers must wait: stalling is on and the budget is used up.
    pub fn should_stall(&self) -> bool {
        self.allow_stall && self.enabled() && self.memory_usage() >= self.buffer_size
    }

    /// Waits up to `timeout` for memory to be freed.
    pub(crate) fn wait_for_room(&self, timeout: Duration) {
        let g = self.room.lock().unwrap_or_else(PoisonError::into_inner);
        if self.should_stall() {
            let _ = self.room_cv.wait_timeout(g, timeout);
        }
    }

    /// An active memtable grew by `bytes`.
    pub(crate) fn reserve(&self, bytes: usize) {
        self.memory_used.fetch_add(bytes, Ordering::Relaxed);
        self.mutable_used.fetch_add(bytes, Ordering::Relaxed);
        if let Some(c) = &self.cache {
            c.update(&self.memory_used);
        }
    }

    /// A memtable holding `bytes` became immutable (it is being flushed).
    pub(crate) fn schedule_free(&self, bytes: usize) {
        self.mutable_used.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// A memtable holding `bytes` was freed (`mutable`: it never became
    /// immutable).
    pub(crate) fn free(&self, bytes: usize, mutable: bool) {
        if mutable {
            self.mutable_used.fetch_sub(bytes, Ordering::Relaxed);
        }
        let before = self.memory_used.fetch_sub(bytes, Ordering::Relaxed);
        debug_assert!(before >= bytes, "freeing {bytes} of {before} charged bytes");
        if let Some(c) = &self.cache {
            c.update(&self.memory_used);
        }
        if self.allow_stall {
            let _g = self.room.lock().unwrap_or_else(PoisonError::into_inner);
            self.room_cv.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_and_stall_rules_are_rocksdbs() {
        let w = WriteBufferManager::new(1000, true);
        assert!(!w.should_flush() && !w.should_stall());
        w.reserve(875);
        assert!(!w.should_flush(), "exactly 7/8 is not over");
        w.reserve(1);
        assert!(w.should_flush());
        // Mostly immutable: full but under half mutable -> no flush, stall.
        w.schedule_free(876);
        w.reserve(400);
        assert_eq!((w.memory_usage(), w.mutable_memory_usage()), (1276, 400));
        assert!(!w.should_flush());
        assert!(w.should_stall());
        w.reserve(100);
        assert!(w.should_flush(), "full and half mutable");
        w.free(876, false);
        w.free(500, true);
        assert_eq!((w.memory_usage(), w.mutable_memory_usage()), (0, 0));
        assert!(!w.should_stall());
        let off = WriteBufferManager::new(0, true);
        off.reserve(1 << 30);
        assert!(!off.should_flush() && !off.should_stall());
    }

    /// Counts what is charged, refusing past a limit.
    struct Counter(Arc<AtomicUsize>, usize);

    impl MemoryCharger for Counter {
        fn charge(&self, bytes: u64) -> Option<Box<dyn Send + Sync>> {
            let c = Arc::clone(&self.0);
            if c.load(Ordering::Relaxed) + bytes as usize > self.1 {
                return None;
            }
            c.fetch_add(bytes as usize, Ordering::Relaxed);
            struct Release(Arc<AtomicUsize>, usize);
            impl Drop for Release {
                fn drop(&mut self) {
                    self.0.fetch_sub(self.1, Ordering::Relaxed);
                }
            }
            Some(Box::new(Release(c, bytes as usize)))
        }
    }

    /// RocksDB's cache charging: whole 256 KiB units covering the
    /// memtables, released only below 3/4 of the charge, never past what
    /// the cache accepts.
    #[test]
    fn memtables_are_charged_to_the_cache_in_units() {
        let charged = Arc::new(AtomicUsize::new(0));
        let w = WriteBufferManager::with_cache(
            0,
            Arc::new(Counter(Arc::clone(&charged), 4 << 20)),
            false,
        );
        assert!(w.cost_to_cache());
        w.reserve(1);
        assert_eq!(charged.load(Ordering::Relaxed), CHARGE_UNIT);
        w.reserve(CHARGE_UNIT);
        assert_eq!(charged.load(Ordering::Relaxed), 2 * CHARGE_UNIT);
        // Down to half a unit: below 3/4 of 2 units, shrink to 1.
        w.free(CHARGE_UNIT + 1 - CHARGE_UNIT / 2, true);
        assert_eq!(w.memory_usage(), CHARGE_UNIT / 2);
        assert_eq!(charged.load(Ordering::Relaxed), CHARGE_UNIT);
        // Up to 1.9 units: charge 2; back to 1.6: above 3/4, kept.
        w.reserve(CHARGE_UNIT * 14 / 10);
        assert_eq!(w.charged_to_cache(), 2 * CHARGE_UNIT);
        w.free(CHARGE_UNIT * 3 / 10, true);
        assert_eq!(w.charged_to_cache(), 2 * CHARGE_UNIT);
        // The cache refuses past 4 MiB: the charge stops there.
        w.reserve(10 << 20);
        assert_eq!(charged.load(Ordering::Relaxed), 4 << 20);
        w.free(w.memory_usage(), true);
        assert_eq!(charged.load(Ordering::Relaxed), 0);
    }
}
