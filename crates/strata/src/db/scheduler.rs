//! Background-work scheduling state: which flushes and compactions are
//! queued or running, which files and key ranges they hold, and whether a
//! manual compaction keeps automatic ones paused. This file decides
//! whether background work may start; `background.rs` runs it.
//!
//! Invariants (checked by the methods that change the state, and by the
//! unit tests below without a running database):
//! - a file is an input of at most one queued or running compaction
//!   (`being_compacted`);
//! - two queued or running compactions never write overlapping user-key
//!   ranges of the same level of the same column family (`running`);
//! - no automatic compaction is scheduled while a manual one waits or
//!   runs, and manual compactions run one at a time, each only once no
//!   automatic compaction is queued or running;
//! - flushes are counted apart from compactions: a flush never waits for a
//!   compaction slot (they run on separate pools).
//!
//! Every method runs under the DB state mutex (`BackgroundWork` is a field
//! of `DbState`), so the counts and sets change together.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex};

use crate::compaction::Compaction;
use crate::util::comparator::ComparatorRef;

/// The output range of a queued or running compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OutputRange {
    /// The compaction's first input file (an input of no other one).
    owner: u64,
    cf_id: u32,
    level: usize,
    /// Smallest and largest user key the compaction reads.
    smallest: Vec<u8>,
    largest: Vec<u8>,
}

impl OutputRange {
    fn overlaps(
        &self,
        cf_id: u32,
        level: usize,
        lo: &[u8],
        hi: &[u8],
        ucmp: &ComparatorRef,
    ) -> bool {
        self.cf_id == cf_id
            && self.level == level
            && ucmp.compare(lo, &self.largest).is_le()
            && ucmp.compare(&self.smallest, hi).is_le()
    }
}

/// RocksDB's `bg_flush_scheduled_`, `bg_compaction_scheduled_`,
/// `compaction_queue_`, `being_compacted` flags and manual-compaction
/// bookkeeping, owned by one type.
#[derive(Default)]
pub(crate) struct BackgroundWork {
    /// Flush jobs queued or running on the high-priority pool.
    flushes_scheduled: usize,
    /// Compaction jobs queued or running on the low-priority pool (each
    /// pops one compaction from `queue`, or finds it empty).
    compactions_scheduled: usize,
    /// Picked compactions waiting for a compaction thread.
    queue: VecDeque<Compaction>,
    /// Input files of queued and running compactions.
    being_compacted: HashSet<u64>,
    /// Output ranges of queued and running compactions.
    running: Vec<OutputRange>,
    /// Manual compactions waiting or running: automatic ones pause.
    manual_compactions: usize,
    /// A manual compaction is running.
    manual_running: bool,
}

impl BackgroundWork {
    // ---- flushes ----

    /// Whether one more flush job may be scheduled, with `max` flush
    /// threads and `due` column families waiting for one.
    pub(crate) fn may_schedule_flush(&self, max: usize, due: usize) -> bool {
        self.flushes_scheduled < max && self.flushes_scheduled < due
    }

    pub(crate) fn flush_scheduled(&mut self) {
        self.flushes_scheduled += 1;
    }

    pub(crate) fn flush_finished(&mut self) {
        debug_assert!(self.flushes_scheduled > 0);
        self.flushes_scheduled = self.flushes_scheduled.saturating_sub(1);
    }

    pub(crate) fn flushes_scheduled(&self) -> usize {
        self.flushes_scheduled
    }

    // ---- automatic compactions ----

    /// Whether one more automatic compaction may be picked, with `max`
    /// compaction threads: none while a manual compaction waits or runs.
    pub(crate) fn may_schedule_compaction(&self, max: usize) -> bool {
        self.manual_compactions == 0 && self.compactions_scheduled < max
    }

    /// Files no new compaction may take.
    pub(crate) fn being_compacted(&self) -> &HashSet<u64> {
        &self.being_compacted
    }

    pub(crate) fn is_being_compacted(&self, number: u64) -> bool {
        self.being_compacted.contains(&number)
    }

    /// True if `c` takes a file another compaction holds or writes a range
    /// of a level another compaction writes.
    pub(crate) fn conflicts(&self, c: &Compaction, ucmp: &ComparatorRef) -> bool {
        if c.input_files()
            .any(|(_, f)| self.being_compacted.contains(&f.number))
        {
            return true;
        }
        let Some((lo, hi)) = c.user_key_range(ucmp) else {
            return false;
        };
        self.running
            .iter()
            .any(|r| r.overlaps(c.cf_id, c.output_level, &lo, &hi, ucmp))
    }

    /// Whether no queued or running compaction writes `[lo, hi]` of
    /// `level` in column family `cf_id` (ingestion's check before it
    /// places a file there).
    pub(crate) fn range_is_free(
        &self,
        cf_id: u32,
        level: usize,
        lo: &[u8],
        hi: &[u8],
        ucmp: &ComparatorRef,
    ) -> bool {
        !self
            .running
            .iter()
            .any(|r| r.overlaps(cf_id, level, lo, hi, ucmp))
    }

    /// Marks `c`'s inputs and output range as taken. REQUIRES: `c` does
    /// not conflict (`conflicts` is false).
    pub(crate) fn register(&mut self, c: &Compaction, ucmp: &ComparatorRef) {
        debug_assert!(
            !self.conflicts(c, ucmp),
            "registering a conflicting compaction"
        );
        for (_, f) in c.input_files() {
            let fresh = self.being_compacted.insert(f.number);
            debug_assert!(fresh, "file #{} is already being compacted", f.number);
        }
        if let Some((smallest, largest)) = c.user_key_range(ucmp)
            && let Some((_, first)) = c.input_files().next()
        {
            self.running.push(OutputRange {
                owner: first.number,
                cf_id: c.cf_id,
                level: c.output_level,
                smallest,
                largest,
            });
        }
    }

    /// Releases what [`register`](Self::register) took for `c` (the
    /// column family may be gone by now).
    pub(crate) fn unregister(&mut self, c: &Compaction) {
        for (_, f) in c.input_files() {
            let held = self.being_compacted.remove(&f.number);
            debug_assert!(held, "file #{} was not being compacted", f.number);
        }
        if let Some((_, first)) = c.input_files().next()
            && let Some(i) = self.running.iter().position(|r| r.owner == first.number)
        {
            self.running.swap_remove(i);
        }
    }

    /// Registers `c` and queues it for one more compaction job, which the
    /// caller schedules on the pool.
    pub(crate) fn enqueue(&mut self, c: Compaction, ucmp: &ComparatorRef) {
        self.register(&c, ucmp);
        self.queue.push_back(c);
        self.compactions_scheduled += 1;
    }

    /// The compaction a starting compaction job runs (`None`: another job
    /// took it, or close drained the queue).
    pub(crate) fn next_queued(&mut self) -> Option<Compaction> {
        self.queue.pop_front()
    }

    /// A compaction job ended (after unregistering what it ran).
    pub(crate) fn compaction_finished(&mut self) {
        debug_assert!(self.compactions_scheduled > 0);
        self.compactions_scheduled = self.compactions_scheduled.saturating_sub(1);
    }

    pub(crate) fn compactions_scheduled(&self) -> usize {
        self.compactions_scheduled
    }

    /// Takes every compaction still queued (at close); the caller
    /// unregisters them. Their jobs find the queue empty and end.
    pub(crate) fn drain_queue(&mut self) -> Vec<Compaction> {
        self.queue.drain(..).collect()
    }

    // ---- manual compactions ----

    /// A manual compaction starts waiting: automatic ones stop being
    /// scheduled from now on.
    pub(crate) fn manual_wait(&mut self) {
        self.manual_compactions += 1;
    }

    /// Whether the waiting manual compaction may run now: no automatic
    /// compaction is queued or running, and no other manual one runs.
    pub(crate) fn manual_may_start(&self) -> bool {
        debug_assert!(self.manual_compactions > 0);
        self.compactions_scheduled == 0 && !self.manual_running
    }

    /// The waiting manual compaction runs. REQUIRES: `manual_may_start`.
    pub(crate) fn manual_start(&mut self) {
        debug_assert!(self.manual_may_start());
        self.manual_running = true;
    }

    /// A manual compaction gave up waiting (shutdown).
    pub(crate) fn manual_abandon(&mut self) {
        debug_assert!(self.manual_compactions > 0);
        self.manual_compactions = self.manual_compactions.saturating_sub(1);
    }

    /// The running manual compaction ended.
    pub(crate) fn manual_finish(&mut self) {
        debug_assert!(self.manual_running && self.manual_compactions > 0);
        self.manual_running = false;
        self.manual_compactions = self.manual_compactions.saturating_sub(1);
    }

    // ---- the whole ----

    /// No flush and no compaction job is queued or running.
    pub(crate) fn is_idle(&self) -> bool {
        self.flushes_scheduled == 0 && self.compactions_scheduled == 0
    }
}

/// Background job closures not yet finished, counted apart from the state
/// mutex: a job holds an `Arc` of the database until its closure returns,
/// after it has told `BackgroundWork` it is done. Close waits for this
/// count too, so that once a database is closed no pool thread holds it:
/// otherwise the last reference to a shared `Env` could be dropped on one
/// of the Env's own threads, which would then join itself.
#[derive(Debug, Default)]
pub(crate) struct JobsInFlight {
    n: Mutex<usize>,
    cv: Condvar,
}

impl JobsInFlight {
    /// Runs `job` on a pool thread through `schedule`, counted until the
    /// closure, and everything it captured, is gone.
    pub(crate) fn spawn<J: FnOnce() + Send + 'static>(
        self: &Arc<Self>,
        schedule: impl FnOnce(Box<dyn FnOnce() + Send>),
        job: J,
    ) {
        *crate::util::sync::lock(&self.n) += 1;
        let me = Arc::clone(self);
        schedule(Box::new(move || {
            job();
            // `job` (and the database it captured) was consumed above.
            let mut n = crate::util::sync::lock(&me.n);
            *n -= 1;
            me.cv.notify_all();
        }));
    }

    /// Waits until no job closure is alive.
    pub(crate) fn wait_idle(&self) {
        let mut n = crate::util::sync::lock(&self.n);
        while *n > 0 {
            n = self
                .cv
                .wait(n)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::compaction::{CompactionReason, LevelInputs};
    use crate::format::{InternalKeyComparator, ValueType, make_internal_key};
    use crate::util::comparator::bytewise;
    use crate::version::{FileMetaData, Version};

    fn file(number: u64, lo: &str, hi: &str) -> Arc<FileMetaData> {
        Arc::new(FileMetaData::new(
            number,
            1000,
            make_internal_key(lo.as_bytes(), 1, ValueType::Value),
            make_internal_key(hi.as_bytes(), 1, ValueType::Value),
            1,
            1,
        ))
    }

    fn compaction(
        cf_id: u32,
        level: usize,
        files: Vec<Arc<FileMetaData>>,
        output: usize,
    ) -> Compaction {
        let icmp = InternalKeyComparator::new(bytewise());
        Compaction {
            cf_id,
            inputs: vec![LevelInputs { level, files }],
            output_level: output,
            target_file_size: 1 << 20,
            max_grandparent_overlap_bytes: 1 << 30,
            grandparents: Vec::new(),
            reason: CompactionReason::LevelMaxLevelSize,
            score: 1.0,
            deletion_only: false,
            allow_trivial_move: false,
            output_path_id: None,
            version: Arc::new(Version::new(icmp, 7)),
        }
    }

    #[test]
    fn a_file_is_an_input_of_one_compaction_at_a_time() {
        let ucmp = bytewise();
        let mut w = BackgroundWork::default();
        let a = compaction(0, 1, vec![file(5, "a", "c")], 2);
        assert!(!w.conflicts(&a, &ucmp));
        w.enqueue(a, &ucmp);
        assert!(w.is_being_compacted(5));
        // The same file picked again, even towards another level.
        let again = compaction(0, 1, vec![file(5, "a", "c")], 3);
        assert!(w.conflicts(&again, &ucmp));
        let a = w.next_queued().expect("queued");
        w.unregister(&a);
        w.compaction_finished();
        assert!(!w.is_being_compacted(5));
        assert!(!w.conflicts(&again, &ucmp));
        assert!(w.is_idle());
    }

    #[test]
    fn output_ranges_of_one_level_never_overlap() {
        let ucmp = bytewise();
        let mut w = BackgroundWork::default();
        w.enqueue(compaction(0, 1, vec![file(1, "d", "g")], 2), &ucmp);
        // Overlapping range, same cf and output level: conflict.
        assert!(w.conflicts(&compaction(0, 1, vec![file(2, "f", "k")], 2), &ucmp));
        // Touching at the boundary key counts as overlap.
        assert!(w.conflicts(&compaction(0, 1, vec![file(3, "a", "d")], 2), &ucmp));
        // Disjoint range, another level, another column family: free.
        assert!(!w.conflicts(&compaction(0, 1, vec![file(4, "h", "k")], 2), &ucmp));
        assert!(!w.conflicts(&compaction(0, 2, vec![file(5, "d", "g")], 3), &ucmp));
        assert!(!w.conflicts(&compaction(1, 1, vec![file(6, "d", "g")], 2), &ucmp));
        assert!(!w.range_is_free(0, 2, b"a", b"d", &ucmp));
        assert!(w.range_is_free(0, 2, b"h", b"z", &ucmp));
        assert!(w.range_is_free(0, 3, b"a", b"z", &ucmp));
    }

    #[test]
    fn manual_compactions_pause_automatic_ones_and_run_alone() {
        let ucmp = bytewise();
        let mut w = BackgroundWork::default();
        assert!(w.may_schedule_compaction(2));
        w.enqueue(compaction(0, 1, vec![file(1, "a", "b")], 2), &ucmp);
        w.manual_wait();
        // Waiting manual: no new automatic compaction, and the manual one
        // waits for the queued automatic one.
        assert!(!w.may_schedule_compaction(2));
        assert!(!w.manual_may_start());
        let c = w.next_queued().expect("queued");
        w.unregister(&c);
        w.compaction_finished();
        assert!(w.manual_may_start());
        w.manual_start();
        // A second manual compaction waits for the first.
        w.manual_wait();
        assert!(!w.manual_may_start());
        w.manual_finish();
        assert!(w.manual_may_start());
        w.manual_abandon();
        assert!(w.may_schedule_compaction(2));
    }

    #[test]
    fn flush_slots_are_counted_apart_from_compactions() {
        let ucmp = bytewise();
        let mut w = BackgroundWork::default();
        w.enqueue(compaction(0, 1, vec![file(1, "a", "b")], 2), &ucmp);
        assert!(!w.may_schedule_compaction(1));
        // Compactions use every compaction slot; flushes still start.
        assert!(w.may_schedule_flush(1, 1));
        w.flush_scheduled();
        assert!(!w.may_schedule_flush(1, 2));
        assert!(
            !w.may_schedule_flush(2, 1),
            "no more flush jobs than due column families"
        );
        assert!(w.may_schedule_flush(2, 2));
        w.flush_finished();
        assert_eq!(w.flushes_scheduled(), 0);
        assert!(!w.is_idle());
        assert_eq!(w.drain_queue().len(), 1);
        assert_eq!(
            w.compactions_scheduled(),
            1,
            "the job still ends on its own"
        );
    }
}
