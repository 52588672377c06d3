//! The compaction timer: a thread that schedules compactions that come due
//! by age alone (`ttl`, `periodic_compaction_seconds`, FIFO's TTL), which
//! no write or flush may come along to schedule. It sleeps until the
//! earliest file's deadline (`file_triggers::next_deadline`), at most
//! [`MAX_SLEEP`], and is woken early when a new version is installed (its
//! files may be due sooner) or the database closes.
//!
//! Invariants: the thread holds the database only while it schedules (a
//! `Weak` otherwise), so it never keeps a dropped database alive; once
//! [`CompactionTimer::stop`] returns, the thread has ended (or is the
//! caller).

use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use super::DbInner;

/// The longest sleep between two looks, whatever the deadlines say.
const MAX_SLEEP: Duration = Duration::from_secs(600);
/// The shortest: deadlines are whole seconds, and a file due but not
/// pickable yet (its inputs busy) is looked at again once a second.
const MIN_SLEEP: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Flags {
    stop: bool,
    /// A version was installed since the last look.
    changed: bool,
}

#[derive(Default)]
struct Shared {
    flags: Mutex<Flags>,
    cv: Condvar,
}

/// The timer of one database (idle until [`CompactionTimer::start`]).
#[derive(Default)]
pub(crate) struct CompactionTimer {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for CompactionTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionTimer").finish()
    }
}

impl CompactionTimer {
    /// Starts the thread for `db`. A failure to spawn is logged and leaves
    /// age-based compactions to the next version change.
    pub(crate) fn start(&self, db: &Arc<DbInner>) {
        let weak = Arc::downgrade(db);
        let shared = Arc::clone(&self.shared);
        match std::thread::Builder::new()
            .name("strata:compaction-timer".into())
            .spawn(move || run(&weak, &shared))
        {
            Ok(h) => *self.thread.lock().unwrap_or_else(PoisonError::into_inner) = Some(h),
            Err(e) => db
                .info_log
                .log(&format!("compaction timer not started: {e}")),
        }
    }

    /// A version was installed: look again.
    pub(crate) fn version_changed(&self) {
        let mut f = self
            .shared
            .flags
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !f.changed {
            f.changed = true;
            self.shared.cv.notify_one();
        }
    }

    /// Ends the thread and waits for it (unless called on it).
    pub(crate) fn stop(&self) {
        self.shared
            .flags
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stop = true;
        self.shared.cv.notify_one();
        let h = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = h
            && h.thread().id() != std::thread::current().id()
        {
            let _ = h.join();
        }
    }
}

fn run(db: &Weak<DbInner>, shared: &Shared) {
    loop {
        let sleep = {
            let Some(db) = db.upgrade() else {
                return;
            };
            let mut st = db.lock_state();
            db.maybe_schedule_work(&mut st);
            let next = db.next_age_deadline(&st);
            drop(st);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            next.map_or(MAX_SLEEP, |secs| {
                Duration::from_secs(secs)
                    .saturating_sub(now)
                    .clamp(MIN_SLEEP, MAX_SLEEP)
            })
        };
        let mut f = shared.flags.lock().unwrap_or_else(PoisonError::into_inner);
        if !f.stop && !f.changed {
            f = shared
                .cv
                .wait_timeout(f, sleep)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        if f.stop {
            return;
        }
        f.changed = false;
    }
}
