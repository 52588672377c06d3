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
//! Invariant: `memory_usage` is the sum of the bytes charged by live
//! memtables, and `mutable_memory_usage` the part charged by memtables not
//! yet marked immutable (a memtable is marked once, after its last insert:
//! the write path switches memtables only with no insert in flight).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

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
}

impl WriteBufferManager {
    /// A budget of `buffer_size` bytes of memtables (0: track usage
    /// only, never flush or stall for it). `allow_stall`: writers wait
    /// while the budget is used up.
    pub fn new(buffer_size: usize, allow_stall: bool) -> Arc<WriteBufferManager> {
        Arc::new(WriteBufferManager {
            buffer_size,
            allow_stall,
            memory_used: AtomicUsize::new(0),
            mutable_used: AtomicUsize::new(0),
            room: Mutex::new(()),
            room_cv: Condvar::new(),
        })
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
        self.memory_used.fetch_sub(bytes, Ordering::Relaxed);
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
}
