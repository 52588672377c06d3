//! The write path: group commit. Writers queue up; the writer at the front
//! becomes the leader, takes a group of compatible writers behind it, makes
//! room (switching full memtables), assigns sequence numbers, appends the
//! whole group to the WAL as one record (syncing if any writer asked),
//! then every writer of the group inserts its own batch into the memtables
//! in parallel (the skiplist takes concurrent inserts); the leader waits
//! for all, publishes the last sequence and wakes the group.
//!
//! Invariants: only the leader appends to the WAL or switches memtables,
//! and memtable inserts happen only inside a group whose leader holds
//! `write_mutex`; sequence numbers are assigned in queue order and
//! published only after every entry of the group is in its memtable; a
//! failed WAL write or sync is never acknowledged and stops all later
//! writes (the DB becomes read-only until reopened).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use std::time::{Duration, Instant};

use super::flow_control::StallCondition;
use super::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::format::write_batch::BatchRecord;
use crate::format::{SequenceNumber, ValueType, WriteBatch};
use crate::memtable::MemTable;
use crate::options::WriteOptions;
use crate::util::statistics::{HistogramKind, StopWatch, Ticker, record};
use crate::wal::LogWriter;

/// Largest group a leader assembles (bytes of batches).
const MAX_GROUP_BYTES: usize = 1 << 20;

struct Writer {
    batch: WriteBatch,
    opts: WriteOptions,
    result: Option<Result<()>>,
    /// Set by the leader once the group is in the WAL: this follower
    /// inserts its own batch into the memtables, in parallel with the rest
    /// of the group.
    insert: Option<InsertTask>,
}

/// A follower's share of a group's memtable inserts.
struct InsertTask {
    mems: Arc<HashMap<u32, Arc<MemTable>>>,
    group: Arc<GroupInsert>,
}

/// Completion of a group's parallel inserts: the leader publishes the
/// group's sequence numbers only once `pending` reaches zero.
#[derive(Default)]
struct GroupInsert {
    pending: Mutex<usize>,
    cv: Condvar,
    error: Mutex<Option<Error>>,
}

impl InsertTask {
    /// Inserts `w`'s batch and reports completion to the leader.
    fn run(self, w: &Mutex<Writer>) {
        let r = {
            let g = lock(w);
            insert_batch(&g.batch, g.batch.sequence(), &self.mems, None)
        };
        if let Err(e) = r {
            lock(&self.group.error).get_or_insert(e);
        }
        let mut pending = lock(&self.group.pending);
        *pending -= 1;
        if *pending == 0 {
            self.group.cv.notify_all();
        }
    }
}

/// The queue of waiting writers.
#[derive(Default)]
pub(crate) struct WriteQueue {
    queue: Mutex<VecDeque<Arc<Mutex<Writer>>>>,
    cv: Condvar,
    /// Size of the last group that synced the WAL.
    last_sync_group: std::sync::atomic::AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl DbInner {
    /// Applies `batch` atomically.
    pub(crate) fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        if self.read_only {
            return Err(Error::NotSupported("write on a read-only database".into()));
        }
        if opts.sync && opts.disable_wal {
            return Err(Error::InvalidArgument(
                "Sync writes has to enable WAL.".into(),
            ));
        }
        if batch.count() == 0 {
            return Ok(());
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
        let me = Arc::new(Mutex::new(Writer {
            batch,
            opts: *opts,
            result: None,
            insert: None,
        }));
        let mut q = lock(&self.writers.queue);
        q.push_back(Arc::clone(&me));
        loop {
            if let Some(r) = lock(&me).result.take() {
                record(stats, Ticker::WriteDoneByOther, 1);
                return r;
            }
            let task = lock(&me).insert.take();
            if let Some(task) = task {
                // Never hold the queue while inserting.
                drop(q);
                task.run(&me);
                q = lock(&self.writers.queue);
                continue;
            }
            if q.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
                break;
            }
            q = self
                .writers
                .cv
                .wait(q)
                .unwrap_or_else(PoisonError::into_inner);
        }
        record(stats, Ticker::WriteDoneBySelf, 1);
        let lead_opts = lock(&me).opts;
        // A synced group costs an fsync whatever its size. When fewer
        // writers wait than the last synced group had, those writers are
        // most likely just waking up from it: let them queue first, so
        // groups stay large instead of alternating one and many.
        if lead_opts.sync && q.len() < self.writers.last_sync_group.load(Ordering::Relaxed) {
            drop(q);
            std::thread::yield_now();
            q = lock(&self.writers.queue);
        }
        // Leader: take a group of compatible writers.
        let mut group: Vec<Arc<Mutex<Writer>>> = Vec::new();
        let mut bytes = 0;
        for w in q.iter() {
            let g = lock(w);
            if !group.is_empty()
                && (g.opts.disable_wal != lead_opts.disable_wal
                    || (g.opts.sync && !lead_opts.sync)
                    || bytes + g.batch.byte_size() > MAX_GROUP_BYTES)
            {
                break;
            }
            bytes += g.batch.byte_size();
            drop(g);
            group.push(Arc::clone(w));
        }
        drop(q);
        if lead_opts.sync {
            self.writers
                .last_sync_group
                .store(group.len(), Ordering::Relaxed);
        }
        let leader = lock(&self.write_mutex);
        let result = self.write_group(&group, lead_opts, bytes as u64);
        drop(leader);
        let mut q = lock(&self.writers.queue);
        for w in &group {
            let popped = q.pop_front();
            debug_assert!(popped.is_some_and(|p| Arc::ptr_eq(&p, w)));
            let mut g = lock(w);
            g.result = Some(match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(e.duplicate()),
            });
        }
        // Everyone waiting on the condvar is a follower of this group or
        // still queued: with neither, skip the wake-up (a syscall).
        if group.len() > 1 || !q.is_empty() {
            self.writers.cv.notify_all();
        }
        drop(q);
        let r = lock(&me).result.take();
        r.unwrap_or(Ok(()))
    }

    /// `bytes`: the group's batch bytes (what a delayed write is paced by).
    fn write_group(
        &self,
        group: &[Arc<Mutex<Writer>>],
        opts: WriteOptions,
        bytes: u64,
    ) -> Result<()> {
        let st = self.lock_state();
        if let Some(e) = &st.bg_error {
            return Err(Error::InvalidArgument(format!(
                "database is read-only after a background error: {e}"
            )));
        }
        // Validate column families before anything is written.
        for w in group {
            let g = lock(w);
            check_batch(&st, &g.batch)?;
        }
        let mut st = self.make_room_for_write(st, bytes)?;
        let first_seq = self.last_sequence.load(Ordering::Acquire) + 1;
        // A group of one writes its own batch (no merged copy).
        let mut single = (group.len() == 1).then(|| lock(&group[0]));
        let mut merged = WriteBatch::new();
        let last_seq = match single.as_mut() {
            Some(g) => {
                g.batch.set_sequence(first_seq);
                first_seq + u64::from(g.batch.count()) - 1
            }
            None => {
                let mut seq = first_seq;
                for w in group {
                    let mut g = lock(w);
                    g.batch.set_sequence(seq);
                    seq += u64::from(g.batch.count());
                    merged.append(&g.batch);
                }
                merged.set_sequence(first_seq);
                seq - 1
            }
        };
        let group_batch: &WriteBatch = match single.as_ref() {
            Some(g) => &g.batch,
            None => &merged,
        };
        self.user_bytes_written
            .fetch_add(group_batch.data().len() as u64, Ordering::Relaxed);
        if !opts.disable_wal {
            let wal = st
                .wal
                .as_mut()
                .ok_or_else(|| Error::InvalidArgument("no WAL is open".into()))?;
            let stats = &self.options.statistics;
            record(stats, Ticker::WalFileBytes, group_batch.data().len() as u64);
            let r = wal.add_record(group_batch.data()).and_then(|()| {
                crate::crash_point!("wal::after_append");
                if opts.sync {
                    record(stats, Ticker::WalFileSynced, 1);
                    let _t = StopWatch::new(stats, HistogramKind::WalFileSyncMicros);
                    wal.sync()
                } else {
                    wal.flush()
                }
            });
            if let Err(e) = r {
                st.bg_error = Some(e.duplicate());
                return Err(e);
            }
            if opts.sync {
                crate::crash_point!("wal::after_sync");
            }
        }
        let mems = st.memtables();
        if opts.disable_wal {
            self.has_unpersisted_data
                .store(true, std::sync::atomic::Ordering::Release);
        }
        drop(st);
        if single.is_some() {
            insert_batch(group_batch, first_seq, &mems, None)?;
        } else if let Err(e) = self.insert_in_parallel(group, mems) {
            // Unreachable for validated batches; if it happens the group's
            // entries may be partly inserted, so no later write may publish
            // them: stop writes.
            self.lock_state().bg_error = Some(e.duplicate());
            return Err(e);
        }
        drop(single);
        self.last_sequence.store(last_seq, Ordering::Release);
        let st = self.lock_state();
        st.versions.set_last_sequence(last_seq);
        Ok(())
    }

    /// Every writer of `group` (the leader first) inserts its own batch,
    /// whose sequence numbers are already set, concurrently; returns once
    /// all have. REQUIRES: the caller is the leader and the group is in the
    /// WAL; the memtables in `mems` cannot be switched meanwhile (the
    /// leader holds `write_mutex`).
    fn insert_in_parallel(
        &self,
        group: &[Arc<Mutex<Writer>>],
        mems: Arc<HashMap<u32, Arc<MemTable>>>,
    ) -> Result<()> {
        let done = Arc::new(GroupInsert {
            pending: Mutex::new(group.len() - 1),
            ..GroupInsert::default()
        });
        for w in &group[1..] {
            lock(w).insert = Some(InsertTask {
                mems: Arc::clone(&mems),
                group: Arc::clone(&done),
            });
        }
        {
            // Under the queue lock so no follower misses the wake-up
            // between checking for its task and waiting.
            let _q = lock(&self.writers.queue);
            self.writers.cv.notify_all();
        }
        let mine = {
            let g = lock(&group[0]);
            insert_batch(&g.batch, g.batch.sequence(), &mems, None)
        };
        let mut pending = lock(&done.pending);
        while *pending > 0 {
            pending = done
                .cv
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(pending);
        mine?;
        match lock(&done.error).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Switches every full memtable to the immutable list, waiting while
    /// too many are queued for flush or while compaction is too far behind
    /// (a stop), and pacing the group at the delayed write rate while
    /// compaction is behind (a delay). Stall time goes to the statistics.
    fn make_room_for_write<'a>(
        &'a self,
        mut st: std::sync::MutexGuard<'a, DbState>,
        bytes: u64,
    ) -> Result<std::sync::MutexGuard<'a, DbState>> {
        let mut stopped_since: Option<Instant> = None;
        let result = loop {
            if let Some(e) = &st.bg_error {
                break Err(Error::InvalidArgument(format!(
                    "database is read-only after a background error: {e}"
                )));
            }
            if self.shutting_down.load(Ordering::Acquire) {
                break Err(Error::Incomplete("the database is closing".into()));
            }
            let full: Vec<u32> = st
                .cfs
                .values()
                .filter(|c| !c.dropped && c.mem_full())
                .map(|c| c.id)
                .collect();
            let memtables_full = full.iter().any(|id| {
                st.cfs
                    .get(id)
                    .is_some_and(|c| c.imms.len() + 1 >= c.options.max_write_buffer_number.max(2))
            });
            let stopped = matches!(st.write_stall, StallCondition::Stopped { .. });
            if memtables_full || stopped {
                self.maybe_schedule_work(&mut st);
                stopped_since.get_or_insert_with(Instant::now);
                // Woken by every flush and compaction; the timeout only
                // guards against a missed wake-up.
                st = self
                    .bg_cv
                    .wait_timeout(st, Duration::from_millis(100))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                continue;
            }
            if !full.is_empty() {
                if let Err(e) = self.switch_memtables(&mut st, &full) {
                    // As RocksDB (a memtable-switch background error): a
                    // WAL that cannot be created stops writes until the
                    // DB is reopened.
                    st.bg_error = Some(e.duplicate());
                    break Err(e);
                }
                self.maybe_schedule_work(&mut st);
                continue;
            }
            break Ok(());
        };
        if let Some(t) = stopped_since {
            let us = t.elapsed().as_micros() as u64;
            st.stall_stats.stops += 1;
            st.stall_stats.stop_micros += us;
            record(&self.options.statistics, Ticker::StallMicros, us);
            st.stall_stats.max_stall_micros = st.stall_stats.max_stall_micros.max(us);
        }
        result?;
        if matches!(st.write_stall, StallCondition::Delayed { .. }) {
            let pause = st.write_controller.delay_for(bytes, Instant::now());
            if !pause.is_zero() {
                drop(st);
                std::thread::sleep(pause);
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

    /// Starts a new WAL and moves the memtables of `cfs` to their immutable
    /// lists. REQUIRES: the caller is the write leader or the only writer.
    pub(crate) fn switch_memtables(&self, st: &mut DbState, cfs: &[u32]) -> Result<()> {
        let new_wal = st.versions.new_file_number();
        let path = self.wal_dir.join(crate::wal::log_file_name(new_wal));
        let file = self.fs.new_writable_file(&path)?;
        crate::crash_point!("wal::switch_after_create");
        // The new WAL's directory entry must be durable before a synced
        // write relies on it, and the old WAL must be durable before any
        // write lands in the new one: otherwise a power loss could keep a
        // later synced write and lose earlier unsynced ones (a hole).
        let synced = (|| {
            self.fs.sync_dir(&self.wal_dir)?;
            crate::crash_point!("wal::switch_after_dir_sync");
            match st.wal.as_mut() {
                Some(old) => old.sync().and_then(|()| old.close()),
                None => Ok(()),
            }
        })();
        if let Err(e) = synced {
            st.bg_error = Some(e.duplicate());
            return Err(e);
        }
        st.wal = None;
        st.wal = Some(LogWriter::new(file, new_wal, false));
        st.wal_number = new_wal;
        st.alive_wals.push(new_wal);
        for id in cfs {
            if let Some(cf) = st.cfs.get_mut(id) {
                if cf.mem.is_empty() {
                    cf.mem_wal = new_wal;
                    continue;
                }
                let fresh = super::new_memtable(&cf.icmp, &cf.options);
                let old = std::mem::replace(&mut cf.mem, fresh);
                st.mems_cache = None;
                cf.imms.push((old, cf.mem_wal));
                cf.mem_wal = new_wal;
            }
        }
        self.install_super_versions(st);
        Ok(())
    }
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

/// Fails, before anything is written, if a record of `batch` names a
/// column family that does not exist, is a range deletion with begin >
/// end, is a merge in a column family without a merge operator, or is too
/// large for a memtable entry.
fn check_batch(st: &DbState, batch: &WriteBatch) -> Result<()> {
    for r in batch.iter() {
        let Some((cf, t, key, value)) = memtable_entry(r?)? else {
            continue;
        };
        let Some(c) = st.cfs.get(&cf).filter(|c| !c.dropped) else {
            return Err(Error::InvalidArgument(format!(
                "Invalid column family specified in write batch: {cf}"
            )));
        };
        if t == ValueType::RangeDeletion
            && c.options.comparator.compare(key, value) == std::cmp::Ordering::Greater
        {
            return Err(Error::InvalidArgument(
                "end key comes before start key in DeleteRange".into(),
            ));
        }
        if t == ValueType::Merge && c.options.merge_operator.is_none() {
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

/// Inserts every record of `batch` (sequence numbers from `first_seq`)
/// into the memtables of its column families. `min_log` (recovery) skips
/// column families whose data in this WAL is already flushed: it maps a
/// column family to whether to skip it.
pub(crate) fn insert_batch(
    batch: &WriteBatch,
    first_seq: SequenceNumber,
    mems: &std::collections::HashMap<u32, Arc<MemTable>>,
    skip: Option<&dyn Fn(u32) -> bool>,
) -> Result<SequenceNumber> {
    let mut seq = first_seq;
    for r in batch.iter() {
        let Some((cf, t, key, value)) = memtable_entry(r?)? else {
            continue;
        };
        let skipped = skip.is_some_and(|f| f(cf));
        if !skipped && !MemTable::entry_fits(key.len(), value.len()) {
            // Only a damaged WAL can get here (writes are checked first).
            return Err(Error::InvalidArgument(format!(
                "record too large for a memtable: key {} bytes, value {} bytes",
                key.len(),
                value.len()
            )));
        }
        if !skipped {
            match mems.get(&cf) {
                Some(m) => m.add(seq, t, key, value),
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "Invalid column family specified in write batch: {cf}"
                    )));
                }
            }
        }
        seq += 1;
    }
    Ok(seq)
}
