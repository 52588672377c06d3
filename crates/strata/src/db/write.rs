//! The write path: group commit through the writer queue
//! (`write_thread.rs`). The writer at the queue's front leads a group of
//! compatible writers behind it: under `write_mutex` it makes room
//! (switching full memtables, stalling while compaction is behind),
//! assigns sequence numbers and appends the whole group to the WAL as one
//! record (syncing if any writer asked), without holding the DB state
//! mutex. Then the group's batches go into the memtables: each writer
//! inserts its own, in parallel (`allow_concurrent_memtable_write`, the
//! default), or the leader inserts them all. The last inserter to finish
//! publishes the group's sequence numbers and wakes the group.
//!
//! Three modes (`Options`):
//! - default: the next group starts once this one is published, as in
//!   RocksDB;
//! - `enable_pipelined_write`: the next group writes its WAL record while
//!   this one inserts; groups publish in sequence order
//!   (`publisher.rs`), and a writer returns once its group is visible;
//! - `unordered_write`: as pipelined, but a writer returns as soon as its
//!   own batch is in the memtable, without waiting for earlier groups. The
//!   visible sequence still only covers whole groups, so a reader never
//!   sees part of a batch nor a later write without every earlier one, and
//!   snapshots stay immutable; a read that starts after an acknowledged
//!   write that earlier groups still hide waits until they finish
//!   inserting (`DbInner::visible_sequence`), so every acknowledged write
//!   is visible to reads that start after its acknowledgement.
//!
//! Invariants: only the WAL stage (under `write_mutex`) appends to the WAL,
//! switches memtables or allocates sequence numbers; a memtable is
//! switched only when every allocated sequence is published (no insert in
//! flight); `last_sequence` (visible) never passes a sequence whose batch
//! is not wholly in its memtable; a failed WAL write or sync is never
//! acknowledged and stops all later writes (the DB becomes read-only until
//! reopened).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::flow_control::StallCondition;
use super::wal_set::{ClosedWal, predecessor_record};
use super::write_signals::WriteSignals;
use super::write_thread::{
    STATE_COMPLETED, STATE_LEADER, STATE_MEMTABLE_WRITER, WriteCallback, WriteSpecial, Writer,
    write_stall,
};
use super::{DbInner, DbState, MemTables};
use crate::error::{Error, Result};
use crate::format::write_batch::BatchRecord;
use crate::format::{SequenceNumber, ValueType, WriteBatch};
use crate::memtable::MemTable;
use crate::options::WriteOptions;
use crate::util::comparator::ComparatorRef;
use crate::util::statistics::{HistogramKind, StopWatch, Ticker, record};
use crate::util::sync::lock;
use crate::wal::LogWriter;

/// How groups move through the write path (from `Options`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteMode {
    /// WAL and memtable stages of one group before the next group starts.
    Ordered,
    /// `enable_pipelined_write`.
    Pipelined,
    /// `unordered_write`.
    Unordered,
}

/// A group after its WAL stage: what its members insert and how it ends.
pub(crate) struct Group {
    pub(crate) writers: Vec<Arc<Writer>>,
    pub(crate) mems: Arc<MemTables>,
    pub(crate) last_seq: SequenceNumber,
    /// Inserters that have not finished.
    pending: AtomicUsize,
    /// The publisher's ticket (pipelined and unordered modes).
    ticket: AtomicU64,
    /// Set (after `error`) when an insert of the group failed, so the
    /// common, successful group is read without taking the lock.
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl Group {
    fn result(&self) -> Result<()> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        match &*lock(&self.error) {
            None => Ok(()),
            Some(e) => Err(e.duplicate()),
        }
    }

    fn fail(&self, e: &Error) {
        lock(&self.error).get_or_insert(e.duplicate());
        self.failed.store(true, Ordering::Release);
    }
}

/// Per-DB state of the write path besides the queue.
#[derive(Default)]
pub(crate) struct WritePath {
    /// Last sequence number handed out by the WAL stage (>= the visible
    /// `DbInner::last_sequence`; equal when no insert is in flight).
    pub(crate) last_allocated: AtomicU64,
    /// Unordered mode: the largest sequence acknowledged to a writer.
    pub(crate) acked: AtomicU64,
    pub(crate) publisher: super::publisher::Publisher,
    /// Size of the last group that synced the WAL.
    last_sync_group: AtomicUsize,
    /// Serializes the inserts of concurrent groups when memtables must
    /// not take concurrent inserts (pipelined mode without
    /// `allow_concurrent_memtable_write`).
    insert_lock: Mutex<()>,
    /// When the next low-priority write may start (its pacing).
    low_pri_next: Mutex<Option<Instant>>,
}

/// Pace of low-priority writes while writes stall (RocksDB's
/// `low_pri_rate_bytes_per_sec` default).
const LOW_PRI_RATE: u64 = 1 << 20;

/// What the WAL stage remembers of the DB state between groups, under
/// `write_mutex`.
#[derive(Default)]
pub(crate) struct WriteStage {
    view: Option<WriteView>,
}

/// The live column families as the WAL stage checks and inserts batches,
/// valid while `WriteSignals::memtables_epoch` equals `epoch`.
struct WriteView {
    epoch: u64,
    mems: Arc<MemTables>,
    cfs: crate::util::id_map::IdMap<CfCheck>,
}

/// What a batch is checked against, per live column family.
struct CfCheck {
    name: String,
    comparator: ComparatorRef,
    has_merge_operator: bool,
    mem: Arc<MemTable>,
    write_buffer_size: usize,
    /// The column family writes PlainTable files: no range deletions.
    plain_table: bool,
}

impl WriteStage {
    /// The view, rebuilt from `st` if a memtable or column family changed
    /// since it was made. REQUIRES: the state lock (`st`).
    fn refresh(&mut self, st: &mut DbState, signals: &WriteSignals) -> &WriteView {
        let epoch = signals.memtables_epoch();
        if let Some(v) = self.view.take().filter(|v| v.epoch == epoch) {
            return self.view.insert(v);
        }
        let mems = st.memtables();
        let cfs = st
            .cfs
            .values()
            .filter(|c| !c.dropped)
            .map(|c| {
                let check = CfCheck {
                    name: c.name.clone(),
                    comparator: c.options.comparator.clone(),
                    has_merge_operator: c.options.merge_operator.is_some(),
                    mem: Arc::clone(&c.mem),
                    write_buffer_size: c.options.write_buffer_size,
                    plain_table: matches!(
                        c.options.table_factory,
                        crate::options::TableFactory::Plain(_)
                    ),
                };
                (c.id, check)
            })
            .collect();
        self.view.insert(WriteView { epoch, mems, cfs })
    }
}

impl WriteView {
    /// Fails, before anything is written, if a record of `batch` names a
    /// column family that does not exist, is a range deletion with begin >
    /// end (or into a PlainTable column family, as RocksDB), is a merge in
    /// a column family without a merge operator, or is too large for a
    /// memtable entry. Keys of any length go into a PlainTable column
    /// family, as in RocksDB (see `MemTable::expect_key_len`). With
    /// `ignore_missing` records of missing column families pass (the
    /// insert skips them).
    fn check_batch(&self, batch: &WriteBatch, ignore_missing: bool) -> Result<()> {
        for r in batch.iter() {
            let Some((cf, t, key, value)) = memtable_entry(r?)? else {
                continue;
            };
            let Some(c) = self.cfs.get(&cf) else {
                if ignore_missing {
                    continue;
                }
                return Err(Error::InvalidArgument(format!(
                    "Invalid column family specified in write batch: {cf}"
                )));
            };
            if t == ValueType::RangeDeletion
                && c.comparator.compare(key, value) == std::cmp::Ordering::Greater
            {
                return Err(Error::InvalidArgument(
                    "end key comes before start key in DeleteRange".into(),
                ));
            }
            if c.plain_table && t == ValueType::RangeDeletion {
                return Err(Error::NotSupported(format!(
                    "DeleteRange not supported for table type PlainTable in CF {}",
                    c.name
                )));
            }
            if t == ValueType::Merge && !c.has_merge_operator {
                return Err(Error::NotSupported(format!(
                    "Provide a merge_operator when opening DB (column family {})",
                    c.name
                )));
            }
            if !MemTable::entry_fits(key.len(), value.len()) {
                return Err(Error::InvalidArgument(format!(
                    "key ({} bytes) or value ({} bytes) too large",
                    key.len(),
                    value.len()
                )));
            }
        }
        Ok(())
    }

    /// Whether some column family's active memtable is due for a switch.
    fn any_memtable_full(&self) -> bool {
        self.cfs
            .values()
            .any(|c| super::memtable_full(&c.mem, c.write_buffer_size))
    }
}

impl DbInner {
    /// Creates the WAL file `path`: memory-mapped where the options and the
    /// file system allow it (`Options::mmap_wal_writes`).
    pub(crate) fn new_wal_file(
        &self,
        path: &std::path::Path,
    ) -> Result<Box<dyn crate::fs::WritableFile>> {
        if self.options.maps_wal() {
            // RocksDB's WAL preallocation: 1.1 x the write buffer, here at
            // least 1 MiB and at most 1 GiB.
            let wbs = self.options.cf.write_buffer_size as u64;
            let preallocate = (wbs.saturating_mul(11) / 10).clamp(1 << 20, 1 << 30);
            self.fs.new_mmap_log_file(path, preallocate)
        } else {
            self.fs.new_writable_file(path)
        }
    }

    /// The WAL stage's view when the group needs nothing of the state
    /// lock: no background error, no stall, no memtable to switch, and no
    /// memtable or column family changed since the view was made (those
    /// changes hold `write_mutex`, which the caller holds, so none can
    /// happen until the group's sequence numbers are allocated).
    fn fast_path_view<'a>(&self, stage: &'a WriteStage) -> Option<&'a WriteView> {
        let signals = &self.write_signals;
        if signals.bg_error() || signals.stalled() || self.shutting_down.load(Ordering::Acquire) {
            return None;
        }
        if let Some(w) = &self.options.write_buffer_manager
            && (w.should_flush() || w.should_stall())
        {
            return None;
        }
        stage
            .view
            .as_ref()
            .filter(|v| v.epoch == signals.memtables_epoch() && !v.any_memtable_full())
    }

    /// Applies `batch` atomically.
    pub(crate) fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.write_impl(opts, batch, WriteSpecial::default())
    }

    /// Writes `batch` as [`WriteSpecial`] says (two-phase commit's
    /// prepared sections, commits and rollbacks).
    pub(crate) fn write_special(
        &self,
        opts: &WriteOptions,
        batch: WriteBatch,
        special: WriteSpecial,
    ) -> Result<()> {
        if opts.disable_wal && (special.wal_only || special.wal_batch.is_some()) {
            return Err(Error::InvalidArgument(
                "two-phase commit needs the WAL (disable_wal is set)".into(),
            ));
        }
        self.write_impl(opts, batch, special)
    }

    /// Applies `batch` atomically if `callback`, run in the WAL stage with
    /// every earlier write visible and no other write able to start,
    /// succeeds (RocksDB's `WriteWithCallback`). An empty batch writes
    /// nothing but still runs the callback under the same exclusion.
    pub(crate) fn write_with_callback(
        &self,
        opts: &WriteOptions,
        batch: WriteBatch,
        callback: WriteCallback,
    ) -> Result<()> {
        let records = batch.data().len() > crate::format::write_batch::HEADER_LEN;
        if batch.count() == 0 && (!records || opts.disable_wal) {
            let _stage = lock(&self.write_mutex);
            self.wait_for_pending_writes();
            return callback(self);
        }
        self.write_impl(
            opts,
            batch,
            WriteSpecial {
                callback: Some(callback),
                after_earlier_writes: true,
                ..Default::default()
            },
        )
    }

    fn write_impl(
        &self,
        opts: &WriteOptions,
        batch: WriteBatch,
        special: WriteSpecial,
    ) -> Result<()> {
        if self.read_only {
            return Err(Error::NotSupported("write on a read-only database".into()));
        }
        if opts.sync && opts.disable_wal {
            return Err(Error::InvalidArgument(
                "Sync writes has to enable WAL.".into(),
            ));
        }
        // A batch without records has nothing to write. One holding only
        // log data (`put_log_data`) goes to the WAL, as in RocksDB, and
        // takes no sequence number; with the WAL off it has nowhere to go.
        let records = batch.data().len() > crate::format::write_batch::HEADER_LEN
            || special.wal_batch.is_some();
        if batch.count() == 0 && (!records || opts.disable_wal) && !special.reserve_seq {
            return Ok(());
        }
        let plain = special.callback.is_none()
            && special.stage_hook.is_none()
            && special.wal_batch.is_none()
            && !special.wal_only
            && !special.reserve_seq;
        if opts.low_pri && plain && self.write_signals.stalled() {
            self.throttle_low_pri(opts, batch.data().len() as u64)?;
        }
        let stats = &self.options.statistics;
        let _timer = StopWatch::new(stats, HistogramKind::DbWrite);
        if let Some(s) = stats {
            let bytes = batch.data().len() as u64;
            s.record(Ticker::NumberKeysWritten, u64::from(batch.count()));
            s.record(Ticker::BytesWritten, bytes);
            s.measure(HistogramKind::BytesPerWrite, bytes);
            if !opts.disable_wal {
                s.record(Ticker::WriteWithWal, 1);
            }
        }
        let w = Writer::new(batch, *opts, special);
        let mut lone_group = self.write_thread.join(&w);
        let state = if lone_group.is_some() {
            STATE_LEADER
        } else {
            w.await_state(STATE_LEADER | STATE_MEMTABLE_WRITER | STATE_COMPLETED)
        };
        let r = match state {
            STATE_COMPLETED => {
                record(stats, Ticker::WriteDoneByOther, 1);
                // A WAL-stage failure sets the writer's result; otherwise
                // the leader inserted this batch for the group, and the
                // group's result (an insert error) is the writer's.
                // Taking the group breaks the cycle group -> writers ->
                // this writer -> group, which would keep the group, its
                // batches and its memtables alive forever.
                let mut d = lock(&w.data);
                let group = d.group.take();
                match (d.result.take(), group) {
                    (Some(r), _) => r,
                    (None, Some(g)) => g.result(),
                    (None, None) => Ok(()),
                }
            }
            STATE_MEMTABLE_WRITER => {
                record(stats, Ticker::WriteDoneByOther, 1);
                let group = lock(&w.data).group.take();
                match group {
                    Some(g) => {
                        let mine = self.insert_own(&w, &g);
                        self.finish_insert(&g);
                        self.after_insert(&w, &g, mine)
                    }
                    None => Err(Error::InvalidArgument(
                        "write path: memtable writer without a group".into(),
                    )),
                }
            }
            _ => {
                record(stats, Ticker::WriteDoneBySelf, 1);
                self.lead(&w, lone_group.take())
            }
        };
        // A batch taken out of its group fails with its own error.
        w.take_rejection().map_or(r, Err)
    }

    /// Paces a low-priority write at `LOW_PRI_RATE` while writes stall
    /// (RocksDB's `ThrottleLowPriWritesIfNeeded`): it waits until its own
    /// bytes (after those of the low-priority writes before it) are paid
    /// for, or until the stall ends, whichever comes first; transaction
    /// commits and markers are never paced.
    fn throttle_low_pri(&self, opts: &WriteOptions, bytes: u64) -> Result<()> {
        if opts.no_slowdown {
            return Err(Error::Incomplete("Low priority write stall".into()));
        }
        let cost = Duration::from_secs_f64(bytes as f64 / LOW_PRI_RATE as f64);
        let until = {
            let now = Instant::now();
            let mut next = lock(&self.write_path.low_pri_next);
            let until = next.filter(|t| *t > now).unwrap_or(now) + cost;
            *next = Some(until);
            until
        };
        loop {
            let now = Instant::now();
            if now >= until {
                return Ok(());
            }
            if !self.write_signals.stalled() {
                // The stall is over: no debt is carried into the next one.
                *lock(&self.write_path.low_pri_next) = None;
                return Ok(());
            }
            std::thread::sleep((until - now).min(Duration::from_millis(100)));
        }
    }

    /// Leads the group at the front of the queue through the WAL stage and
    /// the memtable stage; `lone_group` is the group `join` made when `w`
    /// found the queue empty.
    fn lead(&self, w: &Arc<Writer>, lone_group: Option<Vec<Arc<Writer>>>) -> Result<()> {
        // A synced group costs an fsync whatever its size. When fewer
        // writers wait than the last synced group had, those writers are
        // most likely just waking up from it: let them queue first, so
        // groups stay large instead of alternating one and many.
        let last_sync_group = self.write_path.last_sync_group.load(Ordering::Relaxed);
        let wait_for_more = w.opts.sync && last_sync_group > 1;
        let group = match lone_group {
            Some(g) if !wait_for_more => g,
            _ => {
                if wait_for_more && self.write_thread.len() < last_sync_group {
                    std::thread::yield_now();
                }
                self.write_thread.build_group(w)
            }
        };
        if w.opts.sync {
            self.write_path
                .last_sync_group
                .store(group.len(), Ordering::Relaxed);
        }
        let staged = {
            let mut stage = lock(&self.write_mutex);
            match self.wal_stage(&mut stage, &group) {
                Ok((mems, last_seq)) => Ok(self.new_group(group, mems, last_seq)),
                Err(e) => Err((e, group)),
            }
        };
        let g = match staged {
            Ok(g) => g,
            Err((e, group)) => {
                // Nothing of the group was inserted nor published.
                self.write_thread.exit_group(&group);
                for f in &group[1..] {
                    lock(&f.data).result = Some(Err(e.duplicate()));
                    f.set_state(STATE_COMPLETED);
                }
                return Err(e);
            }
        };
        let group = &g.writers;
        if self.write_mode != WriteMode::Ordered {
            // The next group may write the WAL while this one inserts.
            self.write_thread.exit_group(group);
        }
        let mine = if self.options.allow_concurrent_memtable_write && group.len() > 1 {
            for f in &group[1..] {
                f.set_state(STATE_MEMTABLE_WRITER);
            }
            self.insert_own(w, &g)
        } else {
            // The leader inserts for the whole group (one inserter).
            let _serial = (!self.options.allow_concurrent_memtable_write
                && self.write_mode == WriteMode::Pipelined)
                .then(|| lock(&self.write_path.insert_lock));
            group.iter().try_for_each(|f| self.insert_own(f, &g))
        };
        self.finish_insert(&g);
        self.after_insert(w, &g, mine)
    }

    /// Inserts `w`'s batch (sequence numbers already set) into the group's
    /// memtables. An error here is unreachable for a validated batch; if it
    /// happens the batch may be partly inserted, so writes stop.
    fn insert_own(&self, w: &Writer, g: &Group) -> Result<()> {
        if w.wal_only {
            return Ok(());
        }
        let r = {
            let d = lock(&w.data);
            if w.opts.ignore_missing_column_families {
                // With a `skip`, missing column families are skipped.
                insert_batch(&d.batch, d.batch.sequence(), &g.mems, Some(&|_| false))
            } else {
                insert_batch(&d.batch, d.batch.sequence(), &g.mems, None)
            }
            .map(|_| ())
        };
        if let Err(e) = &r {
            g.fail(e);
            self.lock_state().bg_error.get_or_insert(e.duplicate());
        }
        r
    }

    /// One inserter of `g` is done; the last one publishes the group (and
    /// in the default mode lets the next group start).
    fn finish_insert(&self, g: &Group) {
        if g.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        match self.write_mode {
            WriteMode::Ordered => {
                // Equal for a group of log-data-only batches.
                debug_assert!(self.last_sequence.load(Ordering::Relaxed) <= g.last_seq);
                self.last_sequence.store(g.last_seq, Ordering::Release);
                self.write_thread.exit_group(&g.writers);
                for m in &g.writers {
                    m.set_state(STATE_COMPLETED);
                }
            }
            WriteMode::Pipelined => {
                let ticket = g.ticket.load(Ordering::Acquire);
                self.write_path
                    .publisher
                    .complete(ticket, &self.last_sequence, |done| {
                        for m in &done.writers {
                            m.set_state(STATE_COMPLETED);
                        }
                    });
            }
            WriteMode::Unordered => {
                let ticket = g.ticket.load(Ordering::Acquire);
                self.write_path
                    .publisher
                    .complete(ticket, &self.last_sequence, |_| {});
            }
        }
    }

    /// What a member of `g` returns once its own insert (`mine`) is done.
    fn after_insert(&self, w: &Writer, g: &Group, mine: Result<()>) -> Result<()> {
        if self.write_mode == WriteMode::Unordered {
            mine?;
            if w.wal_only {
                return Ok(());
            }
            let last = {
                let d = lock(&w.data);
                d.batch.sequence() + seqs_taken(d.batch.count(), w.reserve_seq) - 1
            };
            self.write_path.acked.fetch_max(last, Ordering::AcqRel);
            return Ok(());
        }
        w.await_state(STATE_COMPLETED);
        mine.and_then(|()| g.result())
    }

    /// The sequence number a read that starts now reads at: the visible
    /// sequence, after waiting (unordered writes only) until it covers
    /// every write already acknowledged.
    pub(crate) fn visible_sequence(&self) -> SequenceNumber {
        let seq = self.last_sequence.load(Ordering::Acquire);
        if self.write_mode != WriteMode::Unordered {
            return seq;
        }
        let acked = self.write_path.acked.load(Ordering::Acquire);
        if seq >= acked {
            return seq;
        }
        self.wait_until_visible(acked)
    }

    /// Waits until the visible sequence reaches `seq` (inserts of
    /// allocated sequences are in flight and take no lock, so this ends).
    fn wait_until_visible(&self, seq: SequenceNumber) -> SequenceNumber {
        let start = Instant::now();
        loop {
            let v = self.last_sequence.load(Ordering::Acquire);
            if v >= seq {
                return v;
            }
            if start.elapsed() < Duration::from_micros(50) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }

    /// Waits until no memtable insert is in flight. REQUIRES: the caller
    /// holds `write_mutex` (no new sequence can be allocated).
    pub(crate) fn wait_for_pending_writes(&self) {
        let allocated = self.write_path.last_allocated.load(Ordering::Acquire);
        self.wait_until_visible(allocated);
    }

    /// The WAL stage of `group`: validates, makes room, assigns sequence
    /// numbers, writes (and syncs) the WAL. Returns the memtables the
    /// group inserts into and its last sequence number. REQUIRES: the
    /// caller holds `write_mutex` and leads `group`.
    fn wal_stage(
        &self,
        stage: &mut WriteStage,
        group: &[Arc<Writer>],
    ) -> Result<(Arc<MemTables>, SequenceNumber)> {
        let lead_opts = group[0].opts;
        let bytes: usize = group.iter().map(|w| w.size).sum();
        // A lone writer's data is locked once for the whole stage.
        let mut lone = match group {
            [only] => Some(lock(&only.data)),
            _ => None,
        };
        // An invalid batch fails its own write only: in a larger group
        // it is taken out (`Writer::reject`) and the others go on.
        let check_all = |view: &WriteView| -> Result<()> {
            match &lone {
                Some(d) => view.check_batch(&d.batch, lead_opts.ignore_missing_column_families),
                None => {
                    for w in group {
                        let mut d = lock(&w.data);
                        let ignore = w.opts.ignore_missing_column_families;
                        if let Err(e) = view.check_batch(&d.batch, ignore) {
                            w.reject(&mut d, e);
                        }
                    }
                    Ok(())
                }
            }
        };
        let mems = match self.fast_path_view(stage) {
            // Nothing to switch, no stall, no error: the state lock is not
            // needed (RocksDB's PreprocessWrite fast path).
            Some(view) => {
                check_all(view)?;
                Arc::clone(&view.mems)
            }
            None => {
                let mut st = self.lock_state();
                // The background error comes first, before any complaint
                // about the batches.
                if let Some(e) = st.bg_error.get() {
                    return Err(stopped_by(e));
                }
                let view = stage.refresh(&mut st, &self.write_signals);
                // Validate column families before anything is written.
                check_all(view)?;
                let mut st =
                    self.make_room_for_write(stage, st, bytes as u64, lead_opts.no_slowdown)?;
                st.memtables()
            }
        };
        if let Some(d) = lone.as_mut()
            && let Some(cb) = d.callback.take()
        {
            // Exclusive writers are groups of one (`build_group`).
            if d.after_earlier_writes {
                self.wait_for_pending_writes();
            }
            cb(self)?;
        }
        debug_assert!(
            group.len() == 1 || group.iter().all(|w| !w.exclusive),
            "an exclusive writer shares its group"
        );
        let first_seq = self.write_path.last_allocated.load(Ordering::Acquire) + 1;
        let last_seq = if let Some(d) = &mut lone {
            // A group of one writes its own batch (no merged copy), or
            // the WAL batch it brought.
            d.batch.set_sequence(first_seq);
            if let Some(hook) = d.stage_hook.take() {
                hook(self, first_seq);
            }
            if lead_opts.disable_wal {
                self.unlogged_write(bytes);
            } else if let Some(wb) = &mut d.wal_batch {
                wb.set_sequence(first_seq);
                self.write_wal(wb.data(), lead_opts.sync)?;
            } else {
                self.write_wal(d.batch.data(), lead_opts.sync)?;
            }
            if group[0].wal_only {
                // Recovery gives a prepared section its sequence numbers
                // from the commit that names it.
                first_seq - 1
            } else {
                first_seq + seqs_taken(d.batch.count(), group[0].reserve_seq) - 1
            }
        } else {
            // One WAL record, each writer's part in order (recovery
            // replays it so: `two_phase::replay_record`): its batch, or the
            // WAL batch it brought; WAL-only parts take no sequence numbers.
            let mut seq = first_seq;
            let mut merged = (!lead_opts.disable_wal).then(|| WriteBatch::with_capacity(bytes));
            for w in group {
                let mut d = lock(&w.data);
                debug_assert!(!w.reserve_seq, "reserved sequences are groups of one");
                d.batch.set_sequence(seq);
                if let Some(hook) = d.stage_hook.take() {
                    hook(self, seq);
                }
                if !w.wal_only {
                    seq += u64::from(d.batch.count());
                }
                if let Some(m) = &mut merged {
                    m.append(d.wal_batch.as_ref().unwrap_or(&d.batch));
                }
            }
            match &mut merged {
                // Every batch was rejected: nothing to log.
                Some(m) if m.data().len() <= crate::format::write_batch::HEADER_LEN => {}
                Some(m) => {
                    m.set_sequence(first_seq);
                    self.write_wal(m.data(), lead_opts.sync)?;
                }
                None => self.unlogged_write(bytes),
            }
            seq - 1
        };
        self.write_path
            .last_allocated
            .store(last_seq, Ordering::Release);
        Ok((mems, last_seq))
    }

    /// Accounts a group written with the WAL disabled.
    fn unlogged_write(&self, bytes: usize) {
        self.has_unpersisted_data.store(true, Ordering::Release);
        self.user_bytes_written
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// The group of `writers` after its WAL stage: registered with the
    /// publisher (in WAL order) and handed to every follower. REQUIRES:
    /// the caller holds `write_mutex`.
    fn new_group(
        &self,
        writers: Vec<Arc<Writer>>,
        mems: Arc<MemTables>,
        last_seq: SequenceNumber,
    ) -> Arc<Group> {
        let inserters = if self.options.allow_concurrent_memtable_write {
            writers.len()
        } else {
            1
        };
        let g = Arc::new(Group {
            writers,
            mems,
            last_seq,
            pending: AtomicUsize::new(inserters),
            ticket: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
        });
        if self.write_mode != WriteMode::Ordered {
            let ticket = self.write_path.publisher.register(Arc::clone(&g));
            g.ticket.store(ticket, Ordering::Release);
        }
        for w in &g.writers[1..] {
            lock(&w.data).group = Some(Arc::clone(&g));
        }
        g
    }

    /// Runs `f` on the WAL set under its lock; a failure stops all later
    /// writes (recorded after the lock is released: lock order is state,
    /// then wal).
    fn with_wal(&self, f: impl FnOnce(&mut super::wal_set::WalSet) -> Result<()>) -> Result<()> {
        let r = f(&mut lock(&self.wal));
        if let Err(e) = &r {
            self.lock_state().bg_error.get_or_insert(e.duplicate());
        }
        r
    }

    /// Appends one group record to the current WAL, then syncs it (after
    /// every closed WAL and the WAL directory: a durable write never
    /// follows a non-durable one) or hands it to the OS (unless
    /// `manual_wal_flush`).
    fn write_wal(&self, data: &[u8], sync: bool) -> Result<()> {
        let stats = &self.options.statistics;
        self.user_bytes_written
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        record(stats, Ticker::WalFileBytes, data.len() as u64);
        self.with_wal(|wal| {
            if sync {
                wal.sync_closed_and_dir(&self.fs, &self.wal_dir)?;
            }
            // Marked first: a failed append may still have left bytes.
            wal.current_written = true;
            let writer = wal.current_mut()?;
            writer.add_record(data)?;
            crate::crash_point!("wal::after_append");
            if sync {
                record(stats, Ticker::WalFileSynced, 1);
                let _t = StopWatch::new(stats, HistogramKind::WalFileSyncMicros);
                writer.sync()?;
                crate::crash_point!("wal::after_sync");
            } else if !self.options.manual_wal_flush {
                writer.flush()?;
            }
            Ok(())
        })
    }

    /// `DB::flush_wal`: hands buffered WAL bytes to the OS and, with
    /// `sync`, makes every WAL durable.
    pub(crate) fn flush_wal(&self, sync: bool) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        self.with_wal(|wal| {
            if sync {
                wal.sync_closed_and_dir(&self.fs, &self.wal_dir)?;
                wal.current_mut()?.sync()
            } else {
                wal.current_mut()?.flush()
            }
        })
    }

    /// Switches every full memtable to the immutable list, waiting while
    /// too many are queued for flush or while compaction is too far behind
    /// (a stop), and pacing the group at the delayed write rate while
    /// compaction is behind (a delay). Stall time goes to the statistics.
    /// A `no_slowdown` group never waits: where it would, it fails with
    /// `Incomplete("Write stall")`, nothing of it written. While the group
    /// waits, writers arriving with `no_slowdown` fail at once
    /// (`WriteThread::begin_stall`).
    fn make_room_for_write<'a>(
        &'a self,
        stage: &mut WriteStage,
        mut st: std::sync::MutexGuard<'a, DbState>,
        bytes: u64,
        no_slowdown: bool,
    ) -> Result<std::sync::MutexGuard<'a, DbState>> {
        let mut stopped_since: Option<Instant> = None;
        // Where the group would wait: a `no_slowdown` group fails instead;
        // otherwise the stall begins (once) for the writers behind it.
        let must_wait = |stopped_since: &mut Option<Instant>| -> Result<()> {
            if no_slowdown {
                return Err(write_stall());
            }
            if stopped_since.is_none() {
                self.write_thread.begin_stall();
                *stopped_since = Some(Instant::now());
            }
            Ok(())
        };
        let result = loop {
            if let Some(e) = st.bg_error.get() {
                break Err(stopped_by(e));
            }
            if self.shutting_down.load(Ordering::Acquire) {
                break Err(Error::Incomplete("the database is closing".into()));
            }
            let mut full: Vec<u32> = st
                .cfs
                .values()
                .filter(|c| !c.dropped && c.mem_full())
                .map(|c| c.id)
                .collect();
            // The memtable budget (RocksDB's HandleWriteBufferManagerFlush):
            // over it, the oldest non-empty active memtable is switched.
            let wbm = self.options.write_buffer_manager.as_deref();
            if full.is_empty()
                && let Some(w) = wbm
                && (w.should_flush() || w.should_stall())
                && let Some(c) = st
                    .cfs
                    .values()
                    .filter(|c| !c.dropped && !c.mem.is_empty())
                    .min_by_key(|c| c.mem.first_seqno())
            {
                full.push(c.id);
            }
            // Writers wait while the shared budget is used up, as long as
            // this database holds memtables a flush will free (a database
            // holding none does not wait on the others).
            if full.is_empty()
                && let Some(w) = wbm
                && w.should_stall()
                && st.cfs.values().any(|c| !c.dropped && !c.imms.is_empty())
            {
                self.maybe_schedule_work(&mut st);
                if let Err(e) = must_wait(&mut stopped_since) {
                    break Err(e);
                }
                drop(st);
                w.wait_for_room(Duration::from_millis(100));
                st = self.lock_state();
                continue;
            }
            let memtables_full = full.iter().any(|id| {
                st.cfs
                    .get(id)
                    .is_some_and(|c| c.imms.len() + 1 >= c.options.max_write_buffer_number.max(2))
            });
            let stopped = matches!(st.write_stall, StallCondition::Stopped { .. });
            if memtables_full || stopped {
                self.maybe_schedule_work(&mut st);
                if let Err(e) = must_wait(&mut stopped_since) {
                    break Err(e);
                }
                // Woken by every flush and compaction; the timeout only
                // guards against a missed wake-up.
                st = self
                    .bg_cv
                    .wait_timeout(st, Duration::from_millis(100))
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0;
                continue;
            }
            if !full.is_empty() {
                // Inserts of earlier groups may still be going into the
                // memtable about to become immutable (pipelined and
                // unordered modes): let them finish first.
                if self.write_path.last_allocated.load(Ordering::Acquire)
                    > self.last_sequence.load(Ordering::Acquire)
                {
                    drop(st);
                    self.wait_for_pending_writes();
                    st = self.lock_state();
                    continue;
                }
                if let Err(e) = self.switch_memtables(stage, &mut st, &full) {
                    // As RocksDB (a memtable-switch background error): a
                    // WAL that cannot be created stops writes until the
                    // DB is reopened.
                    st.bg_error.set(e.duplicate());
                    break Err(e);
                }
                self.maybe_schedule_work(&mut st);
                continue;
            }
            break Ok(());
        };
        if let Some(t) = stopped_since {
            self.write_thread.end_stall();
            let us = t.elapsed().as_micros() as u64;
            st.stall_stats.stops += 1;
            st.stall_stats.stop_micros += us;
            record(&self.options.statistics, Ticker::StallMicros, us);
            st.stall_stats.max_stall_micros = st.stall_stats.max_stall_micros.max(us);
        }
        result?;
        if matches!(st.write_stall, StallCondition::Delayed { .. }) {
            let now = Instant::now();
            if no_slowdown && st.write_controller.would_delay(now) {
                return Err(write_stall());
            }
            let pause = st.write_controller.delay_for(bytes, now);
            if !pause.is_zero() {
                drop(st);
                self.write_thread.begin_stall();
                std::thread::sleep(pause);
                self.write_thread.end_stall();
                st = self.lock_state();
                let us = pause.as_micros() as u64;
                st.stall_stats.delays += 1;
                st.stall_stats.delay_micros += us;
                record(&self.options.statistics, Ticker::StallMicros, us);
                st.stall_stats.max_stall_micros = st.stall_stats.max_stall_micros.max(us);
                // The memtable may have filled meanwhile; a later group
                // switches it (a write never needs the room it made).
            }
        }
        Ok(st)
    }

    /// Starts a new WAL (unless no write reached the current one, which
    /// the next memtables then keep) and moves the memtables of `cfs` to
    /// their immutable lists. No fsync happens here: the old WAL's bytes go to the OS and
    /// its handle waits in the WAL set for a later sync (`wal_set.rs`); the
    /// new WAL starts with a record naming the old one and its length, so
    /// recovery can tell a predecessor cut short by a power loss.
    /// `stage` is the caller's `write_mutex` guard (the proof it holds it):
    /// its cached view, which holds the memtables being switched, is
    /// dropped so it cannot keep them alive after their flush.
    /// REQUIRES: no insert is in flight.
    pub(crate) fn switch_memtables(
        &self,
        stage: &mut WriteStage,
        st: &mut DbState,
        cfs: &[u32],
    ) -> Result<()> {
        stage.view = None;
        debug_assert_eq!(
            self.write_path.last_allocated.load(Ordering::Acquire),
            self.last_sequence.load(Ordering::Acquire)
        );
        let wal = lock(&self.wal);
        debug_assert!(
            wal.current
                .as_ref()
                .is_none_or(|w| w.log_number() == st.wal_number)
        );
        if wal.current.is_some() && !wal.current_written {
            // No write reached the current WAL (writes with the WAL
            // disabled, or none): the next memtables keep it, as in
            // RocksDB (`log_empty_`). No file to create, and no seal,
            // whose cut of a mapped log's reserved tail can wait
            // milliseconds on a discard; no record of the switched
            // memtables is in it, so replaying it after their flush
            // replays only what came later.
            drop(wal);
            let current = st.wal_number;
            self.switch_memtables_to(st, cfs, current);
            return Ok(());
        }
        drop(wal);
        let new_wal = st.versions.new_file_number();
        let path = self.wal_dir.join(crate::filename::log_file_name(new_wal));
        let file = self.new_wal_file(&path)?;
        crate::crash_point!("wal::switch_after_create");
        let mut writer = LogWriter::new(file, new_wal, false);
        let mut wal = lock(&self.wal);
        let switched: Result<()> = (|| {
            if let Some(mut old) = wal.current.take() {
                // Sealed (a mapped log's zero tail cut) before anything is
                // written to the new log: only the newest log may end in
                // zeros, which recovery reads as its end.
                let r = old.seal();
                let (number, size) = (old.log_number(), old.file_size());
                wal.closed.push(ClosedWal {
                    number,
                    writer: Arc::new(Mutex::new(old)),
                });
                r?;
                let next = self.write_path.last_allocated.load(Ordering::Acquire) + 1;
                writer.add_record(predecessor_record(next, number, size).data())?;
                writer.flush()?;
            }
            Ok(())
        })();
        wal.current = Some(writer);
        wal.current_written = false;
        wal.dir_synced = false;
        drop(wal);
        if let Err(e) = switched {
            st.bg_error.set(e.duplicate());
            return Err(e);
        }
        st.wal_number = new_wal;
        st.files.wal_created(new_wal);
        self.switch_memtables_to(st, cfs, new_wal);
        Ok(())
    }

    /// Moves the non-empty memtables of `cfs` to their immutable lists
    /// (each with the WAL it has written to) and gives every one of `cfs`
    /// a memtable backed by WAL `wal`.
    fn switch_memtables_to(&self, st: &mut DbState, cfs: &[u32], wal: u64) {
        for id in cfs {
            if let Some(cf) = st.cfs.get_mut(id) {
                if cf.mem.is_empty() {
                    cf.mem_wal = wal;
                    continue;
                }
                let fresh = super::new_memtable(
                    &cf.icmp,
                    &cf.options,
                    self.options.write_buffer_manager.as_ref(),
                    Some(&self.arena_pool),
                );
                let old = std::mem::replace(&mut cf.mem, fresh);
                old.mark_immutable();
                cf.imms.push((old, cf.mem_wal));
                cf.mem_wal = wal;
                st.memtables_changed();
            }
        }
        self.install_super_versions(st);
    }
}

/// What a write returns once background error `e` stopped writes.
/// Sequence numbers a write of `count` entries takes.
fn seqs_taken(count: u32, reserve_seq: bool) -> u64 {
    u64::from(count).max(u64::from(reserve_seq))
}

fn stopped_by(e: &Error) -> Error {
    Error::InvalidArgument(format!(
        "database is read-only after a background error: {e}"
    ))
}

/// `(column family, type, key, value)` of one memtable insert.
type MemTableEntry<'a> = (u32, ValueType, &'a [u8], &'a [u8]);

/// A batch record as a memtable entry `(cf, type, key, value)` (a range
/// deletion's value is its end key); `None` for records that carry no
/// entry (log data, markers).
fn memtable_entry(r: BatchRecord<'_>) -> Result<Option<MemTableEntry<'_>>> {
    Ok(Some(match r {
        BatchRecord::Put { cf, key, value } => (cf, ValueType::Value, key, value),
        BatchRecord::Delete { cf, key } => (cf, ValueType::Deletion, key, &[]),
        BatchRecord::SingleDelete { cf, key } => (cf, ValueType::SingleDeletion, key, &[]),
        BatchRecord::DeleteRange { cf, begin, end } => (cf, ValueType::RangeDeletion, begin, end),
        BatchRecord::Merge { cf, key, value } => (cf, ValueType::Merge, key, value),
        BatchRecord::BlobIndex { .. } | BatchRecord::PutEntity { .. } => {
            return Err(Error::NotSupported("blob indexes and wide columns".into()));
        }
        _ => return Ok(None),
    }))
}

/// Inserts one record at `seq` into the memtable of its column family
/// (unless `skip` says that column family's data in this WAL is already
/// flushed). Returns whether the record takes a sequence number (log data
/// and markers do not).
pub(crate) fn insert_record(
    r: BatchRecord<'_>,
    seq: SequenceNumber,
    mems: &MemTables,
    skip: Option<&dyn Fn(u32) -> bool>,
) -> Result<bool> {
    Ok(match resolve_record(r, mems, skip)? {
        Resolved::NoSequence => false,
        Resolved::Skipped => true,
        Resolved::Insert(m, (t, key, value)) => {
            m.add(seq, t, key, value);
            true
        }
    })
}

/// What `insert_record` does with a record.
enum Resolved<'a, 'm> {
    /// Takes no sequence number (a log data record, a 2PC marker).
    NoSequence,
    /// Takes a sequence number but is not inserted (a skipped column
    /// family).
    Skipped,
    /// Goes into memtable `m`: `(type, key, value)`.
    Insert(&'m Arc<MemTable>, (ValueType, &'a [u8], &'a [u8])),
}

/// Checks a record and finds its memtable (see `insert_record`).
fn resolve_record<'a, 'm>(
    r: BatchRecord<'a>,
    mems: &'m MemTables,
    skip: Option<&dyn Fn(u32) -> bool>,
) -> Result<Resolved<'a, 'm>> {
    let Some((cf, t, key, value)) = memtable_entry(r)? else {
        return Ok(Resolved::NoSequence);
    };
    if skip.is_some_and(|f| f(cf)) {
        return Ok(Resolved::Skipped);
    }
    let Some(m) = mems.get(&cf) else {
        // Recovery, repair and `ignore_missing_column_families` (the
        // callers that pass `skip`) skip records of column families that
        // no longer exist, as RocksDB's recovery does; they keep their
        // sequence numbers.
        if skip.is_some() {
            return Ok(Resolved::Skipped);
        }
        return Err(Error::InvalidArgument(format!(
            "Invalid column family specified in write batch: {cf}"
        )));
    };
    if !MemTable::entry_fits(key.len(), value.len()) {
        // Only a damaged WAL can get here (writes are checked first).
        return Err(Error::InvalidArgument(format!(
            "record too large for a memtable: key {} bytes, value {} bytes",
            key.len(),
            value.len()
        )));
    }
    Ok(Resolved::Insert(m, (t, key, value)))
}

/// Inserts every record of `batch` (sequence numbers from `first_seq`)
/// into the memtables of its column families. `skip` (recovery) says
/// which column families' data in this WAL is already flushed; with it,
/// records of column families without a memtable are skipped. Returns
/// the sequence number after the last record's.
pub(crate) fn insert_batch(
    batch: &WriteBatch,
    first_seq: SequenceNumber,
    mems: &MemTables,
    skip: Option<&dyn Fn(u32) -> bool>,
) -> Result<SequenceNumber> {
    let mut seq = first_seq;
    if batch.count() < 2 {
        for r in batch.iter() {
            if insert_record(r?, seq, mems, skip)? {
                seq += 1;
            }
        }
        return Ok(seq);
    }
    // Consecutive records for one memtable go in together, up to
    // `skiplist::BATCH` at a time (`MemTable::add_many`: their skiplist
    // searches overlap). Whatever is staged is inserted before an error
    // returns, so a failing record leaves the same memtable contents as
    // inserting one record at a time does.
    const BATCH: usize = crate::memtable::skiplist::BATCH;
    let empty: (SequenceNumber, ValueType, &[u8], &[u8]) = (0, ValueType::Value, &[], &[]);
    let mut staged = [empty; BATCH];
    let mut len = 0;
    let mut staged_mem: Option<&Arc<MemTable>> = None;
    let insert_staged = |mem: Option<&Arc<MemTable>>, staged: &[_], len: &mut usize| {
        if let Some(m) = mem {
            m.add_many(&staged[..*len]);
        }
        *len = 0;
    };
    for r in batch.iter() {
        let resolved = match r.and_then(|r| resolve_record(r, mems, skip)) {
            Ok(x) => x,
            Err(e) => {
                insert_staged(staged_mem, &staged, &mut len);
                return Err(e);
            }
        };
        match resolved {
            Resolved::NoSequence => continue,
            Resolved::Skipped => {}
            Resolved::Insert(m, (t, key, value)) => {
                let same = staged_mem.is_some_and(|s| Arc::ptr_eq(s, m));
                if !same || len == BATCH {
                    insert_staged(staged_mem, &staged, &mut len);
                    staged_mem = Some(m);
                }
                staged[len] = (seq, t, key, value);
                len += 1;
            }
        }
        seq += 1;
    }
    insert_staged(staged_mem, &staged, &mut len);
    Ok(seq)
}
