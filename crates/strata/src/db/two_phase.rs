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
use super::write_thread::WriteSpecial;
use crate::error::{Error, Result};
use crate::format::write_batch::{BatchRecord, HEADER_LEN};
use crate::format::{ValueType, WriteBatch};
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

/// `data`'s records between the prepare markers (`BeginPrepareXID` first,
/// `EndPrepareXID(name)` last; the count is `data`'s).
pub(crate) fn prepared_section(data: &WriteBatch, name: &str) -> Result<WriteBatch> {
    let mut rep = Vec::with_capacity(data.data().len() + name.len() + 8);
    rep.extend_from_slice(&data.data()[..HEADER_LEN]);
    rep.push(ValueType::BeginPrepareXid as u8);
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

/// What a WAL record is to recovery.
pub(crate) enum WalRecord {
    /// Data (and maybe commit or rollback markers, in order).
    Plain,
    /// A prepared section named so.
    Prepared(String),
}

pub(crate) fn classify(batch: &WriteBatch) -> Result<WalRecord> {
    let mut it = batch.iter();
    match it.next() {
        Some(Ok(BatchRecord::BeginPrepare)) => {}
        Some(Err(e)) => return Err(e),
        _ => return Ok(WalRecord::Plain),
    }
    for r in it {
        if let BatchRecord::EndPrepare(name) = r? {
            return Ok(WalRecord::Prepared(
                String::from_utf8_lossy(name).into_owned(),
            ));
        }
    }
    Err(Error::corruption(
        "",
        0,
        "prepared section without its end marker",
    ))
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
        let section = prepared_section(data, name)?;
        let wal = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let got = Arc::clone(&wal);
        let callback = Box::new(move |inner: &DbInner| {
            // Under the WAL stage: this WAL is current until the write.
            let w = inner.current_wal_number();
            inner.two_phase.add_prep(w);
            got.store(w, std::sync::atomic::Ordering::Release);
            Ok(())
        });
        let r = self.write_special(
            opts,
            section,
            WriteSpecial {
                callback: Some(callback),
                wal_only: true,
                wal_batch: None,
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
        let callback = Box::new(move |inner: &DbInner| {
            for cf in cfs {
                inner.super_version(cf)?.mem.reference_prep_wal(prep_wal);
            }
            Ok(())
        });
        self.write_special(
            opts,
            data,
            WriteSpecial {
                callback: Some(callback),
                wal_only: false,
                wal_batch: Some(marker(ValueType::CommitXid, name)?),
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
                callback: None,
                wal_only: true,
                wal_batch: None,
            },
        )?;
        self.two_phase.release_prep(prep_wal);
        Ok(())
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
