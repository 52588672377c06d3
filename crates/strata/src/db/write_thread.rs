//! The writer queue (RocksDB's `WriteThread`): writers join a FIFO queue;
//! the writer at its front leads the next group. A waiting writer never
//! sleeps on a shared condition variable: each has its own state word,
//! which it watches by spinning briefly, then yielding, then parking its
//! thread (RocksDB's `AwaitState`), and whoever changes the state unparks
//! exactly that thread. One group costs one wake-up per member at most,
//! and none for members still spinning.
//!
//! States: a writer starts `INIT`; becomes `LEADER` when it reaches the
//! front of the queue; `MEMTABLE_WRITER` when its leader has put the group
//! in the WAL and asks it to insert its own batch; `COMPLETED` when its
//! result is set.
//!
//! Invariants: the queue's front is the only writer in state `LEADER`;
//! a group is a prefix of the queue and leaves it as a whole
//! (`exit_group`), which makes the next front the leader; a writer's data
//! is touched by others only while it waits, and the state change that
//! ends the wait publishes it (release/acquire).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::format::WriteBatch;
use crate::options::WriteOptions;
use crate::util::sync::lock;

pub(crate) const STATE_INIT: u8 = 1;
pub(crate) const STATE_LEADER: u8 = 2;
pub(crate) const STATE_MEMTABLE_WRITER: u8 = 4;
pub(crate) const STATE_COMPLETED: u8 = 8;

/// Largest group a leader assembles (bytes of batches), RocksDB's
/// `max_write_batch_group_size_bytes`.
pub(crate) const MAX_GROUP_BYTES: usize = 1 << 20;

/// Spins before yielding (each a `spin_loop` hint; about a microsecond).
const SPIN_ROUNDS: u32 = 200;
/// Time a waiter yields its core before it parks.
const YIELD_LIMIT: Duration = Duration::from_micros(100);

/// What a writer brings and what it gets back.
/// Runs in the WAL stage just before a writer's batch gets its sequence
/// numbers, with no other write able to start, and (with
/// [`WriteSpecial::after_earlier_writes`]) every earlier write visible
/// (RocksDB's `WriteCallback`); an error fails the write, nothing of it
/// written. Optimistic transactions validate with it; two-phase commit
/// records where its sections go.
pub(crate) type WriteCallback = Box<dyn FnOnce(&super::DbInner) -> crate::Result<()> + Send>;

/// Run by a group's leader in the WAL stage, with the writer's first
/// sequence number, after its batch got its sequence numbers and before
/// any of them is published (RocksDB's `PreReleaseCallback`). Two-phase
/// commit records where its sections go with it.
pub(crate) type StageHook = Box<dyn FnOnce(&super::DbInner, crate::format::SequenceNumber) + Send>;

/// What makes a write special: a callback (the writer is then a group of
/// its own), a stage hook, a WAL-only batch, a different batch for the
/// WAL, or a reserved sequence number (a group of its own).
#[derive(Default)]
pub(crate) struct WriteSpecial {
    pub(crate) callback: Option<WriteCallback>,
    /// The callback waits until every earlier write is visible (memtable
    /// inserts in flight finished) before it runs.
    pub(crate) after_earlier_writes: bool,
    pub(crate) stage_hook: Option<StageHook>,
    /// The batch goes to the WAL only: it takes no sequence numbers and
    /// reaches no memtable (a prepared section, a rollback marker).
    pub(crate) wal_only: bool,
    /// The WAL gets this batch (with the write's first sequence number)
    /// instead of the one the memtables get (a commit marker, whose data
    /// recovery takes from the prepared section).
    pub(crate) wal_batch: Option<WriteBatch>,
    /// The write takes one sequence number even if its batch has no
    /// entries (a WritePrepared commit marker: its commit sequence).
    pub(crate) reserve_seq: bool,
}

pub(crate) struct WriterData {
    pub(crate) batch: WriteBatch,
    /// Taken by the leader of the writer's group (always its own group).
    pub(crate) callback: Option<WriteCallback>,
    pub(crate) after_earlier_writes: bool,
    pub(crate) stage_hook: Option<StageHook>,
    pub(crate) wal_batch: Option<WriteBatch>,
    /// Set by whoever completes the writer.
    pub(crate) result: Option<Result<()>>,
    /// The group this writer was put in, once its leader wrote the WAL.
    pub(crate) group: Option<Arc<super::write::Group>>,
    /// Why the leader took this writer's batch out of its group (an
    /// invalid batch fails its own write only; see `Writer::reject`).
    pub(crate) rejected: Option<crate::Error>,
}

/// One `DB::write` call waiting in (or leading) the queue.
pub(crate) struct Writer {
    state: AtomicU8,
    thread: Thread,
    pub(crate) opts: WriteOptions,
    /// A callback or a reserved sequence number: the writer is a group of
    /// its own.
    pub(crate) exclusive: bool,
    pub(crate) wal_only: bool,
    /// See [`WriteSpecial::reserve_seq`].
    pub(crate) reserve_seq: bool,
    /// `batch.byte_size()`, readable without locking `data`.
    pub(crate) size: usize,
    /// Set (after `WriterData::rejected`) when the writer's batch was
    /// taken out of its group.
    rejected: AtomicBool,
    pub(crate) data: Mutex<WriterData>,
}

impl Writer {
    pub(crate) fn new(batch: WriteBatch, opts: WriteOptions, special: WriteSpecial) -> Arc<Writer> {
        Arc::new(Writer {
            state: AtomicU8::new(STATE_INIT),
            thread: std::thread::current(),
            opts,
            exclusive: special.callback.is_some() || special.reserve_seq,
            wal_only: special.wal_only,
            reserve_seq: special.reserve_seq,
            size: batch.byte_size(),
            rejected: AtomicBool::new(false),
            data: Mutex::new(WriterData {
                batch,
                callback: special.callback,
                after_earlier_writes: special.after_earlier_writes,
                stage_hook: special.stage_hook,
                wal_batch: special.wal_batch,
                result: None,
                group: None,
                rejected: None,
            }),
        })
    }

    /// Takes the writer's batch out of its group with `error`: the group
    /// writes an empty batch in its place (no WAL bytes, no sequence
    /// numbers, nothing inserted, no hook run) and the writer's write
    /// fails with `error` alone. REQUIRES: the caller leads the writer's
    /// group in its WAL stage and holds `d`, this writer's data.
    pub(crate) fn reject(&self, d: &mut WriterData, error: crate::Error) {
        d.batch = WriteBatch::new();
        d.wal_batch = None;
        d.stage_hook = None;
        d.rejected = Some(error);
        self.rejected.store(true, Ordering::Release);
    }

    /// The error the writer's batch was rejected with, if it was.
    pub(crate) fn take_rejection(&self) -> Option<crate::Error> {
        if !self.rejected.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.data).rejected.take()
    }

    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// Sets the state and wakes the writer's thread if it parked. Every
    /// write to the writer's data made before happens-before the writer's
    /// observing the new state.
    pub(crate) fn set_state(&self, s: u8) {
        self.state.store(s, Ordering::Release);
        self.thread.unpark();
    }

    /// Waits until the state has a bit of `mask`; returns it. REQUIRES:
    /// called by the writer's own thread.
    pub(crate) fn await_state(&self, mask: u8) -> u8 {
        debug_assert_eq!(std::thread::current().id(), self.thread.id());
        for _ in 0..SPIN_ROUNDS {
            let s = self.state();
            if s & mask != 0 {
                return s;
            }
            std::hint::spin_loop();
        }
        let start = Instant::now();
        loop {
            let s = self.state();
            if s & mask != 0 {
                return s;
            }
            if start.elapsed() > YIELD_LIMIT {
                break;
            }
            std::thread::yield_now();
        }
        loop {
            let s = self.state();
            if s & mask != 0 {
                return s;
            }
            // A stale unpark (from a state this writer already saw) makes
            // this return at once; the loop checks again.
            std::thread::park();
        }
    }
}

/// The FIFO queue of writers.
#[derive(Default)]
pub(crate) struct WriteThread {
    queue: Mutex<VecDeque<Arc<Writer>>>,
    /// The leader waits in a write stall (RocksDB's `write_stall_dummy_`
    /// at the queue's tail): writers with `no_slowdown` are refused
    /// instead of queued. Changed and read only under `queue`'s lock.
    stalled: AtomicBool,
}

/// The result of a write refused because of a stall.
pub(crate) fn write_stall() -> Error {
    Error::Incomplete("Write stall".into())
}

/// Ends `w`'s wait with `result`. REQUIRES: `w` is waiting and in no
/// group.
fn complete(w: &Writer, result: Result<()>) {
    lock(&w.data).result = Some(result);
    w.set_state(STATE_COMPLETED);
}

impl WriteThread {
    /// Queues `w`. If the queue was empty, `w` leads at once, and its
    /// group (`w` alone: nobody else is queued) is returned, saving the
    /// leader a second pass over the queue.
    /// A `no_slowdown` writer arriving while the leader waits in a stall
    /// is completed at once with `Incomplete("Write stall")`.
    pub(crate) fn join(&self, w: &Arc<Writer>) -> Option<Vec<Arc<Writer>>> {
        let mut q = lock(&self.queue);
        if w.opts.no_slowdown && self.stalled.load(Ordering::Relaxed) {
            debug_assert!(!q.is_empty(), "a stall without a leader");
            complete(w, Err(write_stall()));
            return None;
        }
        q.push_back(Arc::clone(w));
        if q.len() > 1 {
            return None;
        }
        w.state.store(STATE_LEADER, Ordering::Relaxed);
        Some(vec![Arc::clone(w)])
    }

    /// The group `leader` leads: the longest prefix of the queue whose
    /// writers are compatible with the leader's (same WAL choice, no sync
    /// under a non-synced leader) and fit `MAX_GROUP_BYTES`; a writer with
    /// a callback is a group of its own. REQUIRES: `leader` is the
    /// queue's front.
    pub(crate) fn build_group(&self, leader: &Arc<Writer>) -> Vec<Arc<Writer>> {
        let q = lock(&self.queue);
        debug_assert!(q.front().is_some_and(|f| Arc::ptr_eq(f, leader)));
        let lead = leader.opts;
        let mut bytes = 0;
        let mut group = Vec::new();
        for w in q.iter() {
            if !group.is_empty()
                && (leader.exclusive
                    || w.exclusive
                    || w.opts.disable_wal != lead.disable_wal
                    || w.opts.no_slowdown != lead.no_slowdown
                    || (w.opts.sync && !lead.sync)
                    || bytes + w.size > MAX_GROUP_BYTES)
            {
                break;
            }
            bytes += w.size;
            group.push(Arc::clone(w));
        }
        group
    }

    /// The leader starts waiting in a stall: queued `no_slowdown` writers
    /// (never in the leader's group, which shares the leader's
    /// `no_slowdown`, and a `no_slowdown` leader does not wait) fail with
    /// `Incomplete("Write stall")`, and so do those that arrive until
    /// `end_stall` (RocksDB's `BeginWriteStall`).
    pub(crate) fn begin_stall(&self) {
        let mut q = lock(&self.queue);
        self.stalled.store(true, Ordering::Relaxed);
        debug_assert!(q.front().is_some_and(|l| !l.opts.no_slowdown));
        let mut i = 1;
        while i < q.len() {
            if q[i].opts.no_slowdown
                && let Some(w) = q.remove(i)
            {
                complete(&w, Err(write_stall()));
            } else {
                i += 1;
            }
        }
    }

    /// The stall `begin_stall` announced is over.
    pub(crate) fn end_stall(&self) {
        let _q = lock(&self.queue);
        self.stalled.store(false, Ordering::Relaxed);
    }

    /// Writers queued (the current group included).
    pub(crate) fn len(&self) -> usize {
        lock(&self.queue).len()
    }

    /// Removes the group (the queue's first `n` writers) and makes the
    /// next writer the leader.
    pub(crate) fn exit_group(&self, group: &[Arc<Writer>]) {
        let mut q = lock(&self.queue);
        for w in group {
            let popped = q.pop_front();
            debug_assert!(popped.is_some_and(|p| Arc::ptr_eq(&p, w)));
        }
        if let Some(next) = q.front() {
            next.set_state(STATE_LEADER);
        }
    }
}
