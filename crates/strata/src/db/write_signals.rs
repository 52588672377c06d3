//! What the write path needs to know of the DB state without taking the
//! state lock (RocksDB's `PreprocessWrite` reads the same facts from
//! atomics): whether a background error stopped writes, whether writes
//! stall, and whether a memtable or a column family changed since the WAL
//! stage last looked.
//!
//! Owns: [`WriteSignals`] (shared by `DbState` and the write path) and
//! [`BgError`], the DB state's sticky background error, which raises its
//! signal whenever it is set, so no site that records an error can forget
//! to stop the lock-free write path.
//!
//! Invariants: every signal is changed under the state lock, and only
//! grows (`bg_error`, `memtables_epoch`) or mirrors a state field exactly
//! (`stalled` == `DbState::write_stall` is not normal); a reader that
//! holds `write_mutex` and sees `memtables_epoch` unchanged sees the
//! memtables and column families it last saw under the state lock
//! (memtable switches and column family changes also hold `write_mutex`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::error::Error;

#[derive(Default, Debug)]
pub(crate) struct WriteSignals {
    /// A background error was recorded: writes fail from now on.
    bg_error: AtomicBool,
    /// Writes are delayed or stopped (`DbState::write_stall`).
    stalled: AtomicBool,
    /// Bumped whenever an active memtable is replaced or a column family
    /// is created or dropped.
    memtables_epoch: AtomicU64,
}

impl WriteSignals {
    pub(crate) fn bg_error(&self) -> bool {
        self.bg_error.load(Ordering::Acquire)
    }

    pub(crate) fn stalled(&self) -> bool {
        self.stalled.load(Ordering::Acquire)
    }

    /// REQUIRES: the state lock is held.
    pub(crate) fn set_stalled(&self, stalled: bool) {
        self.stalled.store(stalled, Ordering::Release);
    }

    pub(crate) fn memtables_epoch(&self) -> u64 {
        self.memtables_epoch.load(Ordering::Acquire)
    }

    /// REQUIRES: the state lock and `write_mutex` are held.
    pub(crate) fn memtables_changed(&self) {
        self.memtables_epoch.fetch_add(1, Ordering::AcqRel);
    }
}

/// The DB's background error: once set it stays (until the DB is
/// reopened), and setting it raises [`WriteSignals`]' `bg_error`.
#[derive(Debug)]
pub(crate) struct BgError {
    error: Option<Error>,
    signals: Arc<WriteSignals>,
}

impl BgError {
    pub(crate) fn new(signals: Arc<WriteSignals>) -> BgError {
        BgError {
            error: None,
            signals,
        }
    }

    pub(crate) fn get(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    pub(crate) fn is_some(&self) -> bool {
        self.error.is_some()
    }

    pub(crate) fn is_none(&self) -> bool {
        self.error.is_none()
    }

    /// Records `e` unless an error is already recorded; returns the
    /// recorded one.
    pub(crate) fn get_or_insert(&mut self, e: Error) -> &Error {
        self.signals.bg_error.store(true, Ordering::Release);
        self.error.get_or_insert(e)
    }

    /// Records `e`, replacing an earlier error.
    pub(crate) fn set(&mut self, e: Error) {
        self.signals.bg_error.store(true, Ordering::Release);
        self.error = Some(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setting_the_error_raises_the_signal() {
        let signals = Arc::new(WriteSignals::default());
        let mut e = BgError::new(Arc::clone(&signals));
        assert!(!signals.bg_error() && e.is_none());
        e.get_or_insert(Error::InvalidArgument("first".into()));
        assert!(signals.bg_error());
        e.get_or_insert(Error::InvalidArgument("second".into()));
        assert!(e.get().is_some_and(|e| e.to_string().contains("first")));
        let signals2 = Arc::new(WriteSignals::default());
        let mut e2 = BgError::new(Arc::clone(&signals2));
        e2.set(Error::InvalidArgument("x".into()));
        assert!(signals2.bg_error() && e2.is_some());
    }
}
