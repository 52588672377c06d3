//! Closing a database: flush what only the memtables hold (writes that
//! skipped the WAL), stop background work and wait for every job, flush
//! the WAL to the OS and release the lock.
//!
//! Invariant: once `close` returns, no background job runs or holds the
//! database, and a second call does nothing.

use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use super::DbInner;
use crate::error::Result;

impl DbInner {
    /// Stops background work, flushes the WAL to the OS and releases the
    /// lock. Idempotent.
    pub(crate) fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let mut result = self.cancel_all_background_work(true);
        // The jobs' closures, and the references to this database they
        // hold, are gone once this returns.
        self.bg_jobs.wait_idle();
        self.info_log.log("DB closed");
        self.info_log.close();
        if let Some(w) = crate::util::sync::lock(&self.wal).current.as_mut() {
            if let Err(e) = w.flush() {
                result = result.and(Err(e));
            }
        }
        self.lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        result
    }

    /// RocksDB's `CancelAllBackgroundWork`: flushes what only memtables
    /// hold (writes that skipped the WAL), then stops scheduling flushes
    /// and compactions; running compactions stop at their next check.
    /// With `wait`, returns once no background job runs. The database
    /// still answers reads; writes that need a flush fail `Incomplete`.
    pub(crate) fn cancel_all_background_work(&self, wait: bool) -> Result<()> {
        let mut result = Ok(());
        if !self.shutting_down.load(Ordering::Acquire)
            && !self.read_only
            && self.has_unpersisted_data.load(Ordering::Acquire)
        {
            let ids: Vec<u32> = self.lock_state().cfs.keys().copied().collect();
            for id in ids {
                if let Err(e) = self.flush(id) {
                    result = Err(e);
                    break;
                }
            }
        }
        if self.shutting_down.swap(true, Ordering::AcqRel) && !wait {
            return result;
        }
        self.compaction_timer.stop();
        // Queued jobs see `shutting_down` and return; running
        // compactions stop at their next check.
        let mut st = self.lock_state();
        self.bg_cv.notify_all();
        if wait {
            while !st.bg_work.is_idle() {
                st = self.bg_cv.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
            for c in st.bg_work.drain_queue() {
                st.bg_work.unregister(&c);
            }
        }
        result
    }
}
