//! Two-phase commit in the engine, as RocksDB does it for the
//! WriteCommitted policy (`allow_2pc`):
//!
//! - prepare writes the transaction's batch to the WAL only, between a
//!   `BeginPrepareXID` marker and an `EndPrepareXID(name)` marker; it
//!   takes no sequence numbers and reaches no memtable;
//! - commit writes a `CommitXID(name)` marker to the WAL and the batch to
//!   the memtables (at fresh sequence numbers); rollback writes a
//!   `RollbackXID(name)` marker;
//! - recovery keeps prepared sections aside, applies one when its commit
//!   marker comes (at the marker's sequence number), drops it at its
//!   rollback marker, and hands the rest to the transaction layer.
//!
//! Invariants: a WAL holding a prepared section stays while the section
//! is outstanding (counted in `prep_wals`) and while a memtable holds the
//! data committed from it (`MemTable::min_prep_wal`), since recovery
//! rebuilds that data from the section; `min_log_number_to_keep` in the
//! MANIFEST never passes such a WAL, and recovery with `allow_2pc` reads
//! every WAL from it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::DbInner;
use super::commit_table::JobView;
use super::write_thread::WriteSpecial;
use crate::error::{Error, Result};
use crate::format::write_batch::{BatchRecord, HEADER_LEN};
use crate::format::{SequenceNumber, ValueType, WriteBatch};
use crate::options::WriteOptions;
use crate::util::coding::put_length_prefixed_slice;
use crate::util::sync::lock;

/// A prepared section recovery found with no commit or rollback after it.
#[derive(Clone, Debug)]
pub struct RecoveredPrepared {
    pub name: String,
    /// The section (markers included; they write nothing).
    pub batch: WriteBatch,
    /// The WAL holding it.
    pub wal: u64,
    /// A WritePrepared section (`BeginPersistedPrepareXID`): its data is
    /// in the memtables, at the section's own sequence numbers, and
    /// tracked as prepared in the commit table.
    pub persisted: bool,
}

/// Where a WritePrepared prepare put its writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreparedRange {
    /// The WAL holding the section (kept until the decision).
    pub wal: u64,
    /// The first sequence number of its entries.
    pub first: SequenceNumber,
    /// How many entries (sequence numbers) it has.
    pub count: u64,
}

#[derive(Default)]
pub(crate) struct TwoPhase {
    /// WAL number -> outstanding prepared sections in it.
    prep_wals: Mutex<BTreeMap<u64, usize>>,
    /// Sections recovery left prepared, until the transaction layer takes
    /// them.
    recovered: Mutex<BTreeMap<String, RecoveredPrepared>>,
}

impl TwoPhase {
    pub(crate) fn add_prep(&self, wal: u64) {
        *lock(&self.prep_wals).entry(wal).or_default() += 1;
    }

    pub(crate) fn release_prep(&self, wal: u64) {
        let mut m = lock(&self.prep_wals);
        if let Some(n) = m.get_mut(&wal) {
            *n -= 1;
            if *n == 0 {
                m.remove(&wal);
            }
        }
    }

    /// The oldest WAL holding an outstanding prepared section.
    pub(crate) fn min_prep_wal(&self) -> Option<u64> {
        lock(&self.prep_wals).keys().next().copied()
    }

    pub(crate) fn set_recovered(&self, sections: BTreeMap<String, RecoveredPrepared>) {
        for s in sections.values() {
            self.add_prep(s.wal);
        }
        *lock(&self.recovered) = sections;
    }
}

/// `data`'s records between the prepare markers (`BeginPrepareXID`, or
/// `BeginPersistedPrepareXID` for WritePrepared, first;
/// `EndPrepareXID(name)` last; the count is `data`'s).
pub(crate) fn prepared_section(
    data: &WriteBatch,
    name: &str,
    begin: ValueType,
) -> Result<WriteBatch> {
    debug_assert!(matches!(
        begin,
        ValueType::BeginPrepareXid | ValueType::BeginPersistedPrepareXid
    ));
    let mut rep = Vec::with_capacity(data.data().len() + name.len() + 8);
    rep.extend_from_slice(&data.data()[..HEADER_LEN]);
    rep.push(begin as u8);
    rep.extend_from_slice(&data.data()[HEADER_LEN..]);
    rep.push(ValueType::EndPrepareXid as u8);
    put_length_prefixed_slice(&mut rep, name.as_bytes());
    WriteBatch::from_bytes(rep)
}

/// A batch of one commit or rollback marker for `name`.
pub(crate) fn marker(t: ValueType, name: &str) -> Result<WriteBatch> {
    debug_assert!(matches!(t, ValueType::CommitXid | ValueType::RollbackXid));
    let mut rep = vec![0u8; HEADER_LEN];
    rep.push(t as u8);
    put_length_prefixed_slice(&mut rep, name.as_bytes());
    WriteBatch::from_bytes(rep)
}

/// What one WAL record holds of two-phase commit, checked for structure
/// before anything of it is applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RecordShape {
    /// Sequence numbers the record's own data takes: every counted entry
    /// except those of WriteCommitted sections (WAL-only until commit).
    pub(crate) own_sequences: u64,
    /// Whether it holds a prepared section.
    pub(crate) sections: bool,
    /// Whether it holds a commit or rollback marker: a WriteCommitted
    /// commit applies its section's data after the marker's sequence
    /// number, and a WritePrepared decision reserves one, so the record
    /// may take more sequence numbers than `own_sequences`.
    pub(crate) decisions: bool,
}

/// Reads `batch`'s structure: sections begin and end in the record, never
/// nested; WriteUnprepared sections are `NotSupported` (naming `wal`).
pub(crate) fn record_shape(batch: &WriteBatch, wal: u64) -> Result<RecordShape> {
    let mut shape = RecordShape::default();
    // Inside a section: whether it is WAL-only (WriteCommitted).
    let mut section: Option<bool> = None;
    for r in batch.iter() {
        match r? {
            BatchRecord::BeginPrepare {
                unprepared: true, ..
            } => {
                return Err(Error::NotSupported(format!(
                    "WAL #{wal} holds a WriteUnprepared transaction's section (BeginUnprepareXID)"
                )));
            }
            BatchRecord::BeginPrepare { persisted, .. } => {
                if section.is_some() {
                    return Err(Error::corruption("", 0, "nested prepared sections"));
                }
                section = Some(!persisted);
                shape.sections = true;
            }
            BatchRecord::EndPrepare(_) if section.take().is_none() => {
                return Err(Error::corruption(
                    "",
                    0,
                    "end of a prepared section that did not begin",
                ));
            }
            BatchRecord::EndPrepare(_) => {}
            BatchRecord::Commit(_) | BatchRecord::Rollback(_) => shape.decisions = true,
            r if r.is_counted() && section != Some(true) => shape.own_sequences += 1,
            _ => {}
        }
    }
    if section.is_some() {
        return Err(Error::corruption(
            "",
            0,
            "prepared section without its end marker",
        ));
    }
    Ok(shape)
}

/// Replays one WAL record in order: its data at its sequence numbers, and
/// the two-phase commit sections and markers inside it (a write group's
/// record may hold several). A WriteCommitted section (`BeginPrepareXID`)
/// takes no sequence numbers and is kept aside until its commit marker
/// applies its data there; a WritePrepared section
/// (`BeginPersistedPrepareXID`) is applied at once (its data was in the
/// memtables from its prepare) and kept as prepared; a rollback marker
/// drops its section. Sections still open at the end of the WALs are the
/// undecided transactions. Returns the sequence number after the
/// record's last entry.
pub(crate) fn replay_record(
    batch: &WriteBatch,
    wal: u64,
    mems: &super::MemTables,
    skip: &dyn Fn(u32) -> bool,
    allow_2pc: bool,
    prepared: &mut BTreeMap<String, RecoveredPrepared>,
) -> Result<SequenceNumber> {
    // Nothing is applied from a record whose structure is wrong.
    let shape = record_shape(batch, wal)?;
    if shape.sections && !allow_2pc {
        return Err(Error::NotSupported(format!(
            "WAL #{wal} holds a prepared transaction: open with allow_2pc (a TransactionDB)"
        )));
    }
    let mut seq = batch.sequence();
    // The section being read: WritePrepared, its first sequence, its data.
    let mut section: Option<(bool, SequenceNumber, WriteBatch)> = None;
    for r in batch.iter() {
        match r? {
            BatchRecord::BeginPrepare { persisted, .. } => {
                section = Some((persisted, seq, WriteBatch::new()));
            }
            BatchRecord::EndPrepare(name) => {
                let Some((persisted, first, mut data)) = section.take() else {
                    unreachable!("record_shape checked the sections");
                };
                data.set_sequence(first);
                let name = String::from_utf8_lossy(name).into_owned();
                prepared.insert(
                    name.clone(),
                    RecoveredPrepared {
                        name,
                        batch: data,
                        wal,
                        persisted,
                    },
                );
            }
            BatchRecord::Commit(name) => {
                if let Some(p) = prepared.remove(String::from_utf8_lossy(name).as_ref())
                    && !p.persisted
                {
                    seq = super::write::insert_batch(&p.batch, seq, mems, Some(skip))?;
                }
            }
            BatchRecord::Rollback(name) => {
                prepared.remove(String::from_utf8_lossy(name).as_ref());
            }
            other => {
                if let Some((persisted, _, data)) = &mut section {
                    append_record(data, &other)?;
                    if !*persisted {
                        continue;
                    }
                }
                if super::write::insert_record(other, seq, mems, Some(skip))? {
                    seq += 1;
                }
            }
        }
    }
    debug_assert!(section.is_none(), "record_shape checked the sections");
    Ok(seq)
}

/// Adds a data record of a prepared section to `data` (log data and no-ops
/// carry nothing).
fn append_record(data: &mut WriteBatch, r: &BatchRecord<'_>) -> Result<()> {
    match *r {
        BatchRecord::Put { cf, key, value } => data.put_cf(cf, key, value),
        BatchRecord::Delete { cf, key } => data.delete_cf(cf, key),
        BatchRecord::SingleDelete { cf, key } => data.single_delete_cf(cf, key),
        BatchRecord::Merge { cf, key, value } => data.merge_cf(cf, key, value),
        BatchRecord::DeleteRange { cf, begin, end } => data.delete_range_cf(cf, begin, end),
        BatchRecord::BlobIndex { .. } | BatchRecord::PutEntity { .. } => {
            return Err(Error::NotSupported(
                "blob indexes and wide columns in a prepared section".into(),
            ));
        }
        _ => {}
    }
    Ok(())
}

impl DbInner {
    fn current_wal_number(&self) -> u64 {
        lock(&self.wal)
            .current
            .as_ref()
            .map_or(0, |w| w.log_number())
    }

    fn check_2pc(&self) -> Result<()> {
        if !self.options.allow_2pc {
            return Err(Error::InvalidArgument(
                "two-phase commit needs Options::allow_2pc (TransactionDB sets it)".into(),
            ));
        }
        Ok(())
    }

    /// Writes `data` as prepared section `name` (WAL only); returns the
    /// WAL holding it, which stays until [`Self::commit_prepared`] or
    /// [`Self::rollback_prepared`].
    pub(crate) fn write_prepared(
        &self,
        opts: &WriteOptions,
        name: &str,
        data: &WriteBatch,
    ) -> Result<u64> {
        self.check_2pc()?;
        let section = prepared_section(data, name, ValueType::BeginPrepareXid)?;
        let wal = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let got = Arc::clone(&wal);
        let hook = Box::new(move |inner: &DbInner, _first| {
            // Under the WAL stage: this WAL is current until the write.
            let w = inner.current_wal_number();
            inner.two_phase.add_prep(w);
            got.store(w, std::sync::atomic::Ordering::Release);
        });
        let r = self.write_special(
            opts,
            section,
            WriteSpecial {
                stage_hook: Some(hook),
                wal_only: true,
                ..Default::default()
            },
        );
        let w = wal.load(std::sync::atomic::Ordering::Acquire);
        if let Err(e) = r {
            if w != 0 {
                self.two_phase.release_prep(w);
            }
            return Err(e);
        }
        Ok(w)
    }

    /// Commits prepared section `name` (in WAL `prep_wal`): its commit
    /// marker to the WAL, `data` to the memtables.
    pub(crate) fn commit_prepared(
        &self,
        opts: &WriteOptions,
        name: &str,
        data: WriteBatch,
        prep_wal: u64,
    ) -> Result<()> {
        self.check_2pc()?;
        let mut cfs: Vec<u32> = Vec::new();
        for r in data.iter() {
            match r? {
                BatchRecord::Put { cf, .. }
                | BatchRecord::Delete { cf, .. }
                | BatchRecord::SingleDelete { cf, .. }
                | BatchRecord::DeleteRange { cf, .. }
                | BatchRecord::Merge { cf, .. } => cfs.push(cf),
                _ => {}
            }
        }
        cfs.sort_unstable();
        cfs.dedup();
        // Before sequence numbers are allocated the memtables are the
        // ones the data goes to: they keep the section's WAL.
        let hook = Box::new(move |inner: &DbInner, _first| {
            for cf in cfs {
                // A dropped column family's data goes nowhere.
                if let Ok(sv) = inner.super_version(cf) {
                    sv.mem.reference_prep_wal(prep_wal);
                }
            }
        });
        self.write_special(
            opts,
            data,
            WriteSpecial {
                stage_hook: Some(hook),
                wal_batch: Some(marker(ValueType::CommitXid, name)?),
                ..Default::default()
            },
        )?;
        self.two_phase.release_prep(prep_wal);
        Ok(())
    }

    /// Rolls back prepared section `name` (in WAL `prep_wal`).
    pub(crate) fn rollback_prepared(
        &self,
        opts: &WriteOptions,
        name: &str,
        prep_wal: u64,
    ) -> Result<()> {
        self.check_2pc()?;
        self.write_special(
            opts,
            marker(ValueType::RollbackXid, name)?,
            WriteSpecial {
                wal_only: true,
                ..Default::default()
            },
        )?;
        self.two_phase.release_prep(prep_wal);
        Ok(())
    }

    /// WritePrepared's prepare: `data` as section `name` to the WAL and
    /// to the memtables, its sequence numbers entered as prepared in the
    /// commit table before any of them is published (readers through the
    /// commit table skip them until the commit).
    pub(crate) fn write_persisted_prepared(
        &self,
        opts: &WriteOptions,
        name: &str,
        data: &WriteBatch,
    ) -> Result<PreparedRange> {
        use std::sync::atomic::{AtomicU64, Ordering};
        self.check_2pc()?;
        let section = prepared_section(data, name, ValueType::BeginPersistedPrepareXid)?;
        let count = u64::from(section.count());
        let got = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
        let seen = Arc::clone(&got);
        let hook = Box::new(move |inner: &DbInner, first: SequenceNumber| {
            // In the WAL stage, before the section's sequence numbers are
            // published.
            let w = inner.current_wal_number();
            inner.two_phase.add_prep(w);
            if count > 0 {
                inner.commit_table.add_prepared(first, first + count - 1);
            }
            seen.0.store(w, Ordering::Release);
            seen.1.store(first, Ordering::Release);
        });
        let r = self.write_special(
            opts,
            section,
            WriteSpecial {
                stage_hook: Some(hook),
                ..Default::default()
            },
        );
        let (wal, first) = (got.0.load(Ordering::Acquire), got.1.load(Ordering::Acquire));
        if let Err(e) = r {
            if wal != 0 {
                self.two_phase.release_prep(wal);
            }
            if first != 0 && count > 0 {
                self.commit_table.remove_prepared(first);
            }
            return Err(e);
        }
        Ok(PreparedRange { wal, first, count })
    }

    /// WritePrepared's commit of section `name`: a commit marker to the
    /// WAL, taking a sequence number of its own, at which the section's
    /// entries become visible.
    pub(crate) fn commit_persisted_prepared(
        &self,
        opts: &WriteOptions,
        name: &str,
        range: PreparedRange,
    ) -> Result<()> {
        self.decide_persisted_prepared(
            opts,
            range,
            WriteBatch::new(),
            marker(ValueType::CommitXid, name)?,
            true,
        )
    }

    /// WritePrepared's rollback of section `name`: `compensation` (each
    /// key's value from before the prepare, or a deletion) and a rollback
    /// marker written as one batch; the section's entries are committed
    /// with it, so the compensation (newer) hides them from every reader
    /// that could see them (RocksDB's `WritePreparedTxn::RollbackInternal`).
    pub(crate) fn rollback_persisted_prepared(
        &self,
        opts: &WriteOptions,
        name: &str,
        range: PreparedRange,
        mut compensation: WriteBatch,
    ) -> Result<()> {
        compensation.append(&marker(ValueType::RollbackXid, name)?);
        self.decide_persisted_prepared(opts, range, compensation, WriteBatch::new(), false)
    }

    /// Writes the decision (`batch` to WAL and memtables, or `wal_marker`
    /// to the WAL only when `wal_only_marker`) and commits `range` at the
    /// decision's last sequence number before it is published.
    fn decide_persisted_prepared(
        &self,
        opts: &WriteOptions,
        range: PreparedRange,
        batch: WriteBatch,
        wal_marker: WriteBatch,
        wal_only_marker: bool,
    ) -> Result<()> {
        self.check_2pc()?;
        let taken = u64::from(batch.count()).max(1);
        let hook = Box::new(move |inner: &DbInner, first: SequenceNumber| {
            if range.count > 0 {
                inner.commit_table.commit(range.first, first + taken - 1);
            }
        });
        self.write_special(
            opts,
            batch,
            WriteSpecial {
                stage_hook: Some(hook),
                wal_batch: wal_only_marker.then_some(wal_marker),
                reserve_seq: true,
                ..Default::default()
            },
        )?;
        self.two_phase.release_prep(range.wal);
        self.maybe_evict_commit_table();
        Ok(())
    }

    /// Runs an eviction pass of the commit table when enough committed
    /// ranges gathered.
    pub(crate) fn maybe_evict_commit_table(&self) {
        if !self.commit_table.wants_eviction() {
            return;
        }
        let st = self.lock_state();
        let snapshots: Vec<SequenceNumber> = st.snapshots.keys().copied().collect();
        let visible = self
            .last_sequence
            .load(std::sync::atomic::Ordering::Acquire);
        drop(st);
        // A snapshot taken after the list was read is at or above
        // `visible`, above every commit this pass may evict.
        self.commit_table.evict(visible, &snapshots);
    }

    /// Fixes what a flush or compaction starting now sees (see
    /// [`JobView`]); the caller ends it with [`DbInner::end_job_view`]
    /// under the state lock once the job's reads are done.
    pub(crate) fn begin_job_view(&self, st: &mut super::DbState) -> JobView {
        let snapshots: Vec<SequenceNumber> = st.snapshots.keys().copied().collect();
        if self.commit_table.is_empty() {
            // Ranges entered from now on belong to writes the job's
            // inputs (sealed memtables, table files) do not hold.
            return JobView {
                snapshots,
                checker: None,
                pinned: None,
            };
        }
        // Every commit at or below the visible sequence is in the table
        // (entered before its sequence number was published).
        let job = self
            .last_sequence
            .load(std::sync::atomic::Ordering::Acquire);
        st.add_snapshot(job);
        JobView::at(&self.commit_table, snapshots, job)
    }

    /// Releases the snapshot a job view registered.
    pub(crate) fn end_job_view(&self, st: &mut super::DbState, view: &mut JobView) {
        if let Some(job) = view.pinned.take() {
            // The job's install schedules whatever the release made due.
            let last = self
                .last_sequence
                .load(std::sync::atomic::Ordering::Acquire);
            st.release_snapshot(job, last);
        }
    }

    /// The prepared sections recovery left (once: the transaction layer
    /// owns them after).
    pub(crate) fn take_recovered_prepared(&self) -> Vec<RecoveredPrepared> {
        std::mem::take(&mut *lock(&self.two_phase.recovered))
            .into_values()
            .collect()
    }

    /// The oldest WAL two-phase commit still needs, if any: outstanding
    /// sections and sections of committed data in memtables.
    pub(crate) fn min_wal_for_2pc(&self, st: &super::DbState) -> Option<u64> {
        if !self.options.allow_2pc {
            return None;
        }
        let mems = st.cfs.values().filter(|c| !c.dropped).flat_map(|c| {
            std::iter::once(c.mem.min_prep_wal())
                .chain(c.imms.iter().map(|(m, _)| m.min_prep_wal()))
        });
        mems.flatten().chain(self.two_phase.min_prep_wal()).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::InternalKeyComparator;
    use crate::memtable::MemTable;
    use crate::util::comparator::bytewise;

    fn section(data: &WriteBatch, name: &str, persisted: bool) -> WriteBatch {
        let begin = if persisted {
            ValueType::BeginPersistedPrepareXid
        } else {
            ValueType::BeginPrepareXid
        };
        prepared_section(data, name, begin).unwrap()
    }

    fn two(k: &[u8]) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(k, b"1");
        b.delete(k);
        b
    }

    #[test]
    fn a_record_shape_counts_what_takes_sequence_numbers() {
        let mut b = two(b"a");
        b.append(&section(&two(b"b"), "wc", false));
        b.append(&section(&two(b"c"), "wp", true));
        b.append(&marker(ValueType::CommitXid, "old").unwrap());
        let shape = record_shape(&b, 7).unwrap();
        assert_eq!(b.count(), 6);
        assert_eq!(
            shape.own_sequences, 4,
            "the WriteCommitted section takes none"
        );
        assert!(shape.sections && shape.decisions);
        let plain = record_shape(&two(b"a"), 7).unwrap();
        assert_eq!(
            plain,
            RecordShape {
                own_sequences: 2,
                sections: false,
                decisions: false
            }
        );
    }

    #[test]
    fn a_structurally_damaged_record_applies_nothing() {
        let icmp = InternalKeyComparator::new(bytewise());
        let mut mems = super::super::MemTables::default();
        mems.insert(0, Arc::new(MemTable::new(icmp)));
        // Data, then a section that begins inside another one.
        let inner = section(&two(b"b"), "inner", true);
        let mut outer = two(b"x");
        outer.append(&inner);
        let mut b = two(b"a");
        b.append(&section(&outer, "outer", true));
        b.set_sequence(10);
        let mut prepared = BTreeMap::new();
        let err = replay_record(&b, 3, &mems, &|_| false, true, &mut prepared).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{err:?}");
        assert!(mems[&0].is_empty(), "nothing applied before the damage");
        assert!(prepared.is_empty());
        // A WriteUnprepared section is named, not called damage.
        let mut rep = two(b"a").into_bytes();
        rep.push(ValueType::BeginUnprepareXid as u8);
        rep.push(ValueType::EndPrepareXid as u8);
        rep.extend_from_slice(&[1, b'u']);
        let b = WriteBatch::from_bytes(rep).unwrap();
        let err = replay_record(&b, 3, &mems, &|_| false, true, &mut prepared).unwrap_err();
        assert!(
            matches!(&err, Error::NotSupported(m) if m.contains("WAL #3") && m.contains("WriteUnprepared")),
            "{err:?}"
        );
        assert!(mems[&0].is_empty());
        // Without allow_2pc a section is NotSupported before anything applies.
        let mut b = two(b"a");
        b.append(&section(&two(b"b"), "wc", false));
        let err = replay_record(&b, 3, &mems, &|_| false, false, &mut prepared).unwrap_err();
        assert!(matches!(err, Error::NotSupported(_)), "{err:?}");
        assert!(mems[&0].is_empty());
    }
}
