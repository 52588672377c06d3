//! The commit table of WritePrepared transactions (RocksDB's
//! `CommitCache`, `PreparedHeap` and `old_commit_map` in one ordered map).
//!
//! A WritePrepared transaction's writes reach the memtables at prepare,
//! with the sequence numbers the prepare's write took (`first..=last`);
//! its commit later takes a sequence number of its own. Sequence order
//! alone then no longer says what a reader sees: an entry of a prepared
//! range is visible at snapshot `s` only once committed, and only if its
//! commit sequence is `<= s`. Every other entry is committed at its own
//! sequence number (plain writes, commits without prepare, rollbacks'
//! compensating writes).
//!
//! Invariants:
//! - a range is entered here (as prepared) before any of its sequence
//!   numbers is published, and its commit before the commit's sequence
//!   number is published, so a reader never sees a prepared entry as a
//!   plain one, nor a commit its snapshot predates;
//! - ranges never overlap;
//! - a committed range is evicted only when no reader can tell it from a
//!   plain write: its commit is at or below the eviction bound (the
//!   visible sequence at the previous eviction pass), and no live
//!   snapshot lies in `[first, commit)`. Reads without a registered
//!   snapshot check [`CommitTable::max_evicted`] after reading and retry
//!   when an eviction passed their sequence (RocksDB's `ValidateSnapshot`);
//! - `floor` is at or below the first sequence of every range: below it
//!   every entry is plain, and no lock is taken.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::compaction::SnapshotChecker;
use crate::format::{MAX_SEQUENCE_NUMBER, SequenceNumber};
use crate::util::sync::{read, write};

/// Committed ranges kept before an eviction pass runs.
const EVICT_AFTER: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    last: SequenceNumber,
    /// `None` while prepared.
    commit: Option<SequenceNumber>,
}

#[derive(Default)]
struct Inner {
    /// First sequence of a range -> the range.
    ranges: BTreeMap<SequenceNumber, Range>,
    committed: usize,
    /// The visible sequence at the last eviction pass: the next pass
    /// evicts commits at or below it.
    next_bound: SequenceNumber,
}

pub(crate) struct CommitTable {
    inner: RwLock<Inner>,
    floor: AtomicU64,
    max_evicted: AtomicU64,
}

impl Default for CommitTable {
    fn default() -> Self {
        CommitTable {
            inner: RwLock::new(Inner::default()),
            floor: AtomicU64::new(MAX_SEQUENCE_NUMBER),
            max_evicted: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for CommitTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = read(&self.inner);
        f.debug_struct("CommitTable")
            .field("ranges", &inner.ranges.len())
            .field("committed", &inner.committed)
            .field("max_evicted", &self.max_evicted.load(Ordering::Relaxed))
            .finish()
    }
}

impl CommitTable {
    /// True when no range is tracked: every entry is plain.
    pub(crate) fn is_empty(&self) -> bool {
        self.floor.load(Ordering::Acquire) == MAX_SEQUENCE_NUMBER
    }

    /// Enters `first..=last` as prepared. REQUIRES: none of it published.
    pub(crate) fn add_prepared(&self, first: SequenceNumber, last: SequenceNumber) {
        debug_assert!(first <= last);
        let mut inner = write(&self.inner);
        debug_assert!(
            inner
                .ranges
                .range(..=last)
                .next_back()
                .is_none_or(|(&f, r)| r.last < first && f < first),
            "prepared ranges never overlap"
        );
        inner.ranges.insert(first, Range { last, commit: None });
        self.floor.fetch_min(first, Ordering::AcqRel);
    }

    /// Forgets a prepared range whose write failed (nothing of it was
    /// published).
    pub(crate) fn remove_prepared(&self, first: SequenceNumber) {
        let mut inner = write(&self.inner);
        if inner.ranges.get(&first).is_some_and(|r| r.commit.is_none()) {
            inner.ranges.remove(&first);
            self.reset_floor(&inner);
        }
    }

    /// Marks the prepared range starting at `first` committed at
    /// `commit`. REQUIRES: `commit` not yet published.
    pub(crate) fn commit(&self, first: SequenceNumber, commit: SequenceNumber) {
        let mut inner = write(&self.inner);
        if let Some(r) = inner.ranges.get_mut(&first) {
            debug_assert!(r.commit.is_none(), "a range commits once");
            debug_assert!(r.last < commit, "a commit follows its prepare");
            r.commit = Some(commit);
            inner.committed += 1;
        }
    }

    /// Whether the prepared range starting at `first` is tracked and not
    /// committed.
    #[cfg(test)]
    pub(crate) fn is_prepared(&self, first: SequenceNumber) -> bool {
        read(&self.inner)
            .ranges
            .get(&first)
            .is_some_and(|r| r.commit.is_none())
    }

    /// Whether the entry at `seq` is visible to a reader at `snapshot`
    /// (`MAX_SEQUENCE_NUMBER`: whether it is committed at all).
    pub(crate) fn is_in_snapshot(&self, seq: SequenceNumber, snapshot: SequenceNumber) -> bool {
        if seq > snapshot {
            return false;
        }
        if seq < self.floor.load(Ordering::Acquire) {
            return true;
        }
        let inner = read(&self.inner);
        match inner.ranges.range(..=seq).next_back() {
            Some((_, r)) if seq <= r.last => r.commit.is_some_and(|c| c <= snapshot),
            _ => true,
        }
    }

    /// The largest commit sequence evicted so far: a read at a sequence
    /// below it that no registered snapshot protects may have missed a
    /// commit and reads again.
    pub(crate) fn max_evicted(&self) -> SequenceNumber {
        self.max_evicted.load(Ordering::Acquire)
    }

    /// Whether enough committed ranges gathered for an eviction pass.
    pub(crate) fn wants_eviction(&self) -> bool {
        read(&self.inner).committed >= EVICT_AFTER
    }

    /// Evicts committed ranges no reader can tell from plain writes (see
    /// the module's invariants). `visible` is the visible sequence now;
    /// `snapshots` the live snapshots, ascending.
    ///
    /// Passes may run concurrently, each with the list it read: a pass
    /// evicts no commit above its own `visible`, since a snapshot taken
    /// after its list was read lies at or above that.
    pub(crate) fn evict(&self, visible: SequenceNumber, snapshots: &[SequenceNumber]) {
        let mut inner = write(&self.inner);
        let bound = inner.next_bound.min(visible);
        let mut evicted_max = 0;
        let doomed: Vec<SequenceNumber> = inner
            .ranges
            .iter()
            .filter(|(first, r)| {
                r.commit.is_some_and(|c| {
                    c <= bound && {
                        let i = snapshots.partition_point(|&s| s < **first);
                        snapshots.get(i).is_none_or(|&s| s >= c)
                    }
                })
            })
            .map(|(&f, _)| f)
            .collect();
        for f in &doomed {
            if let Some(c) = inner.ranges.get(f).and_then(|r| r.commit) {
                evicted_max = evicted_max.max(c);
            }
        }
        // Published before the ranges go (readers check it after reading).
        self.max_evicted.fetch_max(evicted_max, Ordering::AcqRel);
        for f in doomed {
            inner.ranges.remove(&f);
        }
        inner.committed = inner.ranges.values().filter(|r| r.commit.is_some()).count();
        inner.next_bound = inner.next_bound.max(visible);
        self.reset_floor(&inner);
    }

    fn reset_floor(&self, inner: &Inner) {
        let floor = inner
            .ranges
            .keys()
            .next()
            .copied()
            .unwrap_or(MAX_SEQUENCE_NUMBER);
        self.floor.store(floor, Ordering::Release);
    }
}

/// What a flush or a compaction sees of snapshots and commits, fixed
/// when the job starts (RocksDB's job snapshot, `GetSnapshotContext`).
///
/// The job reads the snapshot list once, but the commit table keeps
/// changing under it: a transaction may commit, and a snapshot be taken
/// before that commit, while the job runs. So while prepared entries are
/// tracked, the job registers a snapshot of its own at the visible
/// sequence `job` and asks the table about `min(snapshot, job)`: an
/// entry committed after the job started counts as uncommitted (kept,
/// shadowing nothing), as the job cannot know which later snapshots see
/// it. The registered snapshot keeps eviction from forgetting a commit
/// the job still tells apart.
pub(crate) struct JobView {
    /// Live snapshots when the job started, ascending (the job's own
    /// excluded: nothing the job reads as committed lies above it).
    pub(crate) snapshots: Vec<SequenceNumber>,
    /// `None` when no range was tracked: sequence order rules.
    pub(crate) checker: Option<crate::compaction::SnapshotCheckerRef>,
    /// The job's registered snapshot, released when the job ends.
    pub(crate) pinned: Option<SequenceNumber>,
}

impl JobView {
    /// A view for a job no commit can race (recovery): the table as it is.
    pub(crate) fn quiescent(table: &Arc<CommitTable>) -> JobView {
        JobView {
            snapshots: Vec::new(),
            checker: (!table.is_empty())
                .then(|| Arc::clone(table) as crate::compaction::SnapshotCheckerRef),
            pinned: None,
        }
    }

    /// A view whose commits are those visible at `job`, registered by the
    /// caller as a snapshot (so eviction keeps what the view tells apart).
    pub(crate) fn at(
        table: &Arc<CommitTable>,
        snapshots: Vec<SequenceNumber>,
        job: SequenceNumber,
    ) -> JobView {
        JobView {
            snapshots,
            checker: Some(Arc::new(AtJobSnapshot {
                table: Arc::clone(table),
                job,
            })),
            pinned: Some(job),
        }
    }
}

/// The commit table seen from a job snapshot: commits after it do not
/// count.
struct AtJobSnapshot {
    table: Arc<CommitTable>,
    job: SequenceNumber,
}

impl SnapshotChecker for AtJobSnapshot {
    fn is_in_snapshot(&self, seq: SequenceNumber, snapshot: SequenceNumber) -> bool {
        self.table.is_in_snapshot(seq, snapshot.min(self.job))
    }
}

impl SnapshotChecker for CommitTable {
    fn is_in_snapshot(&self, seq: SequenceNumber, snapshot: SequenceNumber) -> bool {
        CommitTable::is_in_snapshot(self, seq, snapshot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: u64 = MAX_SEQUENCE_NUMBER;

    #[test]
    fn plain_entries_follow_sequence_order() {
        let t = CommitTable::default();
        assert!(t.is_empty());
        assert!(t.is_in_snapshot(5, 5));
        assert!(!t.is_in_snapshot(6, 5));
        assert!(t.is_in_snapshot(6, MAX));
    }

    #[test]
    fn prepared_is_invisible_until_committed_then_from_its_commit() {
        let t = CommitTable::default();
        t.add_prepared(10, 12);
        assert!(!t.is_empty());
        for s in [10, 11, 12] {
            assert!(!t.is_in_snapshot(s, MAX), "prepared {s} is uncommitted");
            assert!(!t.is_in_snapshot(s, 20));
        }
        // Plain neighbours are unaffected.
        assert!(t.is_in_snapshot(9, 9));
        assert!(t.is_in_snapshot(13, 13));
        assert!(t.is_prepared(10));
        t.commit(10, 20);
        assert!(!t.is_prepared(10));
        assert!(!t.is_in_snapshot(11, 19), "a snapshot before the commit");
        assert!(t.is_in_snapshot(11, 20));
        assert!(t.is_in_snapshot(12, MAX));
    }

    #[test]
    fn removed_prepared_ranges_are_plain_again() {
        let t = CommitTable::default();
        t.add_prepared(4, 4);
        t.remove_prepared(4);
        assert!(t.is_empty());
        assert!(t.is_in_snapshot(4, 4));
    }

    #[test]
    fn eviction_keeps_what_a_snapshot_or_a_recent_reader_needs() {
        let t = CommitTable::default();
        t.add_prepared(10, 10);
        t.commit(10, 20);
        t.add_prepared(30, 31);
        t.commit(30, 40);
        t.add_prepared(50, 50);
        // The first pass only records its bound: nothing is old enough.
        t.evict(45, &[]);
        assert_eq!(t.max_evicted(), 0);
        assert!(!t.is_in_snapshot(10, 15));
        // Second pass: bound 45; a snapshot at 35 needs [30, 40).
        t.evict(60, &[35]);
        assert_eq!(t.max_evicted(), 20);
        assert!(t.is_in_snapshot(10, 15), "evicted: plain from now on");
        assert!(!t.is_in_snapshot(30, 35), "kept for the snapshot at 35");
        assert!(!t.is_in_snapshot(50, MAX), "prepared ranges never go");
        // The snapshot is gone: the range goes too.
        t.evict(70, &[]);
        assert_eq!(t.max_evicted(), 40);
        assert!(t.is_in_snapshot(30, 35));
        assert!(!t.is_in_snapshot(50, MAX));
        t.commit(50, 80);
        t.evict(90, &[]);
        t.evict(90, &[]);
        assert!(t.is_empty());
    }

    #[test]
    fn a_pass_with_an_older_snapshot_list_evicts_nothing_newer_than_it_saw() {
        let t = CommitTable::default();
        t.add_prepared(55, 55);
        t.commit(55, 80);
        // Pass A reads no snapshot at visible 50; then a snapshot is taken
        // at 60; pass B reads it at visible 100 and runs first.
        t.evict(100, &[60]);
        assert!(!t.is_in_snapshot(55, 60));
        // Pass B's bound (100) covers the commit, but pass A's list
        // predates the snapshot at 60: A may evict nothing above 50.
        t.evict(50, &[]);
        assert_eq!(t.max_evicted(), 0);
        assert!(
            !t.is_in_snapshot(55, 60),
            "the snapshot at 60 predates the commit"
        );
        // A later pass that sees the snapshot released evicts it.
        t.evict(120, &[]);
        assert!(t.is_in_snapshot(55, 60));
    }

    #[test]
    fn a_job_view_counts_commits_after_its_snapshot_as_uncommitted() {
        let t = Arc::new(CommitTable::default());
        t.add_prepared(10, 11);
        let view = JobView::at(&t, vec![5], 15);
        let c = view.checker.as_deref().unwrap();
        assert!(c.is_in_snapshot(4, MAX), "plain entries stay visible");
        assert!(!c.is_in_snapshot(10, MAX));
        t.commit(10, 20);
        assert!(t.is_in_snapshot(10, MAX));
        assert!(
            !c.is_in_snapshot(10, MAX),
            "committed after the job snapshot"
        );
        assert!(!c.is_in_snapshot(11, 25));
        let quiet = JobView::quiescent(&t);
        assert!(quiet.checker.as_deref().unwrap().is_in_snapshot(10, MAX));
        assert_eq!(view.pinned, Some(15));
    }
}
