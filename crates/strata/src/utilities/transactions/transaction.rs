//! One transaction, pessimistic or optimistic (RocksDB's `Transaction`):
//! its writes collect in a [`WriteBatchWithIndex`] that its reads see, the
//! keys it writes or reads for update are tracked (and, pessimistically,
//! locked), and commit writes the batch atomically.
//!
//! Invariants: only a `Started` transaction reads, writes or commits;
//! every tracked key of a pessimistic transaction is locked by it until it
//! commits, rolls back or drops; each save point lists the keys first
//! tracked after it, so rolling back to it untracks (and unlocks) exactly
//! those.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::base_delta_iterator::BaseDeltaIterator;
use super::lock_manager::{LockRequest, TransactionId};
use super::optimistic::OptimisticTransactionDB;
use super::transaction_db::TransactionDB;
use super::write_batch_with_index::{BatchLookup, WriteBatchWithIndex, full_merge};
use crate::db::{ColumnFamilyHandle, DB, Snapshot};
use crate::error::{Error, Result};
use crate::format::{SequenceNumber, WriteBatch};
use crate::options::{ReadOptions, WriteOptions};

/// Where a transaction is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionState {
    Started,
    /// Two-phase commit's first phase is durable: only commit or
    /// rollback remain.
    Prepared,
    Committed,
    RolledBack,
}

pub(crate) enum Backend<'db> {
    Pessimistic(&'db TransactionDB),
    Optimistic(&'db OptimisticTransactionDB),
}

#[derive(Clone, Copy, Debug)]
struct Tracked {
    /// Optimistic: a write to the key above this is a conflict.
    seq: SequenceNumber,
    /// Pessimistic: the lock held is exclusive.
    exclusive: bool,
}

struct SavePoint {
    snapshot: Option<Arc<Snapshot>>,
    /// Keys first tracked after this save point.
    new_keys: Vec<(u32, Vec<u8>)>,
}

/// Pessimistic settings of one transaction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LockSettings {
    pub(crate) timeout: Option<Duration>,
    pub(crate) deadlock_detect: bool,
    pub(crate) deadlock_detect_depth: usize,
    pub(crate) expires_at: Option<Instant>,
    pub(crate) max_write_batch_size: usize,
}

pub struct Transaction<'db> {
    backend: Backend<'db>,
    db: &'db DB,
    id: TransactionId,
    write_options: WriteOptions,
    batch: WriteBatchWithIndex,
    snapshot: Option<Arc<Snapshot>>,
    snapshot_on_next_op: bool,
    /// Optimistic: a snapshot at or below every tracked key's sequence,
    /// held while keys are tracked. Compactions give a Put sequence 0 only
    /// when every snapshot sees it, so a write after a tracked sequence
    /// keeps its number and validation sees it (RocksDB validates against
    /// memtables only, and answers TryAgain when they are too short).
    seq_guard: Option<Arc<Snapshot>>,
    tracked: HashMap<(u32, Vec<u8>), Tracked>,
    save_points: Vec<SavePoint>,
    state: TransactionState,
    locks: LockSettings,
    name: Option<String>,
    /// The WAL holding the prepared section, once prepared.
    prep_wal: Option<u64>,
    /// WritePrepared: where the prepare put the writes.
    prepared_range: Option<crate::db::two_phase::PreparedRange>,
    /// See `TransactionOptions::skip_prepare`.
    pub(crate) skip_prepare: bool,
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.id)
            .field("state", &self.state)
            .field("writes", &self.batch.count())
            .finish()
    }
}

impl<'db> Transaction<'db> {
    pub(crate) fn new(
        backend: Backend<'db>,
        db: &'db DB,
        id: TransactionId,
        write_options: WriteOptions,
        set_snapshot: bool,
        locks: LockSettings,
    ) -> Self {
        let mut t = Transaction {
            backend,
            db,
            id,
            write_options,
            batch: WriteBatchWithIndex::default(),
            snapshot: None,
            snapshot_on_next_op: false,
            seq_guard: None,
            tracked: HashMap::new(),
            save_points: Vec::new(),
            state: TransactionState::Started,
            locks,
            name: None,
            prep_wal: None,
            prepared_range: None,
            skip_prepare: true,
        };
        if set_snapshot {
            t.set_snapshot();
        }
        t
    }

    /// Whether the writes reach the memtables at prepare (the database's
    /// write policy is WritePrepared): reads then go through the commit
    /// table.
    fn write_prepared(&self) -> bool {
        matches!(self.backend, Backend::Pessimistic(tdb) if tdb.is_write_prepared())
    }

    /// A number no other transaction of the database has.
    pub fn id(&self) -> TransactionId {
        self.id
    }

    pub fn state(&self) -> TransactionState {
        self.state
    }

    fn check_started(&self) -> Result<()> {
        match self.state {
            TransactionState::Started => {
                if self.locks.expires_at.is_some_and(|e| Instant::now() > e) {
                    return Err(Error::Expired(String::new()));
                }
                Ok(())
            }
            TransactionState::Prepared => Err(Error::InvalidArgument(
                "Transaction has already been prepared".into(),
            )),
            TransactionState::Committed => Err(Error::InvalidArgument(
                "Transaction has already been committed".into(),
            )),
            TransactionState::RolledBack => Err(Error::InvalidArgument(
                "Transaction has already been rolled back".into(),
            )),
        }
    }

    /// Names the transaction (for two-phase commit); names are unique
    /// among the database's live transactions.
    pub fn set_name(&mut self, name: &str) -> Result<()> {
        self.check_started()?;
        if self.name.is_some() {
            return Err(Error::InvalidArgument(
                "Transaction's name cannot be changed".into(),
            ));
        }
        if name.is_empty() || name.len() > 512 {
            return Err(Error::InvalidArgument(
                "Transaction name length must be between 1 and 512 chars".into(),
            ));
        }
        match self.backend {
            Backend::Pessimistic(tdb) => tdb.register_name(name)?,
            Backend::Optimistic(_) => {
                return Err(Error::NotSupported(
                    "Two phase commit not supported for optimistic transactions".into(),
                ));
            }
        }
        self.name = Some(name.to_string());
        Ok(())
    }

    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Two-phase commit's first phase: the writes become durable in the
    /// WAL (not yet visible); after a crash the transaction is recovered
    /// prepared (`TransactionDB::get_all_prepared_transactions`). Then
    /// only commit or rollback.
    pub fn prepare(&mut self) -> Result<()> {
        self.check_started()?;
        let Some(name) = self.name.clone() else {
            return Err(Error::InvalidArgument(
                "Cannot prepare a transaction that has not been named.".into(),
            ));
        };
        let wal = if self.write_prepared() {
            let range = self.db.inner.write_persisted_prepared(
                &self.write_options,
                &name,
                self.batch.write_batch(),
            )?;
            self.prepared_range = Some(range);
            range.wal
        } else {
            self.db
                .inner
                .write_prepared(&self.write_options, &name, self.batch.write_batch())?
        };
        self.prep_wal = Some(wal);
        self.state = TransactionState::Prepared;
        Ok(())
    }

    /// A transaction recovery found prepared, rebuilt: its writes indexed
    /// and its keys locked.
    pub(crate) fn recovered(
        tdb: &'db TransactionDB,
        id: TransactionId,
        p: &crate::db::two_phase::RecoveredPrepared,
        locks: LockSettings,
    ) -> Result<Self> {
        let mut t = Transaction::new(
            Backend::Pessimistic(tdb),
            tdb.db(),
            id,
            // As RocksDB: a recovered transaction's decision is synced.
            WriteOptions {
                sync: true,
                ..WriteOptions::default()
            },
            false,
            locks,
        );
        for r in p.batch.iter() {
            use crate::format::write_batch::BatchRecord as R;
            match r? {
                R::Put { cf, key, value } => t.put_cf_id(cf, key, value)?,
                R::Delete { cf, key } => t.delete_cf_id(cf, key)?,
                R::SingleDelete { cf, key } => t.single_delete_cf_id(cf, key)?,
                R::Merge { cf, key, value } => {
                    t.before_write(cf, key, 0)?;
                    t.batch.merge_cf_id(cf, key, value);
                }
                R::DeleteRange { .. } => {
                    return Err(Error::NotSupported(format!(
                        "recovered prepared transaction {:?} holds a range deletion",
                        p.name
                    )));
                }
                _ => {}
            }
        }
        tdb.register_name(&p.name)?;
        t.name = Some(p.name.clone());
        t.prep_wal = Some(p.wal);
        if p.persisted {
            t.prepared_range = Some(crate::db::two_phase::PreparedRange {
                wal: p.wal,
                first: p.batch.sequence(),
                count: u64::from(p.batch.count()),
            });
        }
        t.state = TransactionState::Prepared;
        Ok(t)
    }

    /// The write options `commit`, `rollback` and `prepare` use from now on
    /// (RocksDB's `SetWriteOptions`).
    pub fn set_write_options(&mut self, write_options: WriteOptions) {
        self.write_options = write_options;
    }

    /// The write options this transaction writes with.
    pub fn write_options(&self) -> &WriteOptions {
        &self.write_options
    }

    /// Takes a snapshot now: later reads for update and writes conflict
    /// with writes made after it.
    pub fn set_snapshot(&mut self) {
        self.snapshot = Some(Arc::new(self.db.snapshot()));
        self.snapshot_on_next_op = false;
    }

    /// Takes the snapshot at the next read for update or write.
    pub fn set_snapshot_on_next_operation(&mut self) {
        self.snapshot_on_next_op = true;
    }

    /// The transaction's snapshot, to read at it (`ReadOptions::snapshot`).
    pub fn snapshot(&self) -> Option<SequenceNumber> {
        self.snapshot.as_ref().map(|s| s.sequence())
    }

    pub fn clear_snapshot(&mut self) {
        self.snapshot = None;
        self.snapshot_on_next_op = false;
    }

    /// The writes so far.
    pub fn write_batch(&self) -> &WriteBatchWithIndex {
        &self.batch
    }

    fn prepare_cf(&mut self, cf: u32) -> Result<()> {
        if !self.batch.has_comparator(cf) {
            let sv = self.db.inner.super_version(cf)?;
            self.batch.set_comparator(cf, sv.options.comparator.clone());
        }
        Ok(())
    }

    /// Tracks `key` (locking it if pessimistic) before a read for update
    /// (`exclusive` as asked) or a write (exclusive).
    fn track(&mut self, cf: u32, key: &[u8], exclusive: bool) -> Result<()> {
        self.check_started()?;
        if self.snapshot_on_next_op {
            self.set_snapshot();
        }
        self.prepare_cf(cf)?;
        let k = (cf, key.to_vec());
        let prior = self.tracked.get(&k).copied();
        match self.backend {
            Backend::Pessimistic(tdb) => {
                let need_lock = prior.is_none_or(|p| exclusive && !p.exclusive);
                if need_lock {
                    let req = LockRequest {
                        exclusive,
                        timeout: self.locks.timeout,
                        deadlock_detect: self.locks.deadlock_detect,
                        deadlock_detect_depth: self.locks.deadlock_detect_depth,
                        expires_at: self.locks.expires_at,
                    };
                    tdb.lock_manager().try_lock(self.id, cf, key, req)?;
                }
                // A key locked before is safe from others' writes since.
                if prior.is_none()
                    && let Some(s) = &self.snapshot
                    && let Err(e) = check_conflict(self.db, cf, key, s.sequence())
                {
                    tdb.lock_manager().unlock(self.id, cf, key);
                    return Err(e);
                }
                let seq = self.snapshot().unwrap_or(0);
                self.tracked.insert(
                    k.clone(),
                    Tracked {
                        seq,
                        exclusive: exclusive || prior.is_some_and(|p| p.exclusive),
                    },
                );
            }
            Backend::Optimistic(_) => {
                if prior.is_none() {
                    let guard = self
                        .seq_guard
                        .get_or_insert_with(|| {
                            self.snapshot
                                .clone()
                                .unwrap_or_else(|| Arc::new(self.db.snapshot()))
                        })
                        .sequence();
                    let seq = self
                        .snapshot()
                        .unwrap_or_else(|| self.db.latest_sequence_number());
                    debug_assert!(guard <= seq, "the guard sees every tracked sequence");
                    self.tracked.insert(k.clone(), Tracked { seq, exclusive });
                }
            }
        }
        if prior.is_none()
            && let Some(sp) = self.save_points.last_mut()
        {
            sp.new_keys.push(k);
        }
        Ok(())
    }

    fn before_write(&mut self, cf: u32, key: &[u8], bytes: usize) -> Result<()> {
        self.track(cf, key, true)?;
        let max = self.locks.max_write_batch_size;
        if max > 0 && self.batch.write_batch().data().len() + bytes > max {
            return Err(Error::Aborted(format!(
                "Memory limit reached: the write batch would exceed max_write_batch_size {max}"
            )));
        }
        Ok(())
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_cf_id(0, key, value)
    }

    pub fn put_cf(&mut self, cf: &ColumnFamilyHandle, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_cf_id(cf.id, key, value)
    }

    fn put_cf_id(&mut self, cf: u32, key: &[u8], value: &[u8]) -> Result<()> {
        self.before_write(cf, key, key.len() + value.len())?;
        self.batch.put_cf_id(cf, key, value);
        Ok(())
    }

    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.delete_cf_id(0, key)
    }

    pub fn delete_cf(&mut self, cf: &ColumnFamilyHandle, key: &[u8]) -> Result<()> {
        self.delete_cf_id(cf.id, key)
    }

    fn delete_cf_id(&mut self, cf: u32, key: &[u8]) -> Result<()> {
        self.before_write(cf, key, key.len())?;
        self.batch.delete_cf_id(cf, key);
        Ok(())
    }

    pub fn single_delete(&mut self, key: &[u8]) -> Result<()> {
        self.single_delete_cf_id(0, key)
    }

    pub fn single_delete_cf(&mut self, cf: &ColumnFamilyHandle, key: &[u8]) -> Result<()> {
        self.single_delete_cf_id(cf.id, key)
    }

    fn single_delete_cf_id(&mut self, cf: u32, key: &[u8]) -> Result<()> {
        self.before_write(cf, key, key.len())?;
        self.batch.single_delete_cf_id(cf, key);
        Ok(())
    }

    pub fn merge(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.merge_cf_id(0, key, value)
    }

    pub fn merge_cf(&mut self, cf: &ColumnFamilyHandle, key: &[u8], value: &[u8]) -> Result<()> {
        self.merge_cf_id(cf.id, key, value)
    }

    fn merge_cf_id(&mut self, cf: u32, key: &[u8], value: &[u8]) -> Result<()> {
        let sv = self.db.inner.super_version(cf)?;
        if sv.options.merge_operator.is_none() {
            return Err(Error::NotSupported(
                "Provide a merge_operator when opening DB".into(),
            ));
        }
        self.before_write(cf, key, key.len() + value.len())?;
        self.batch.merge_cf_id(cf, key, value);
        Ok(())
    }

    /// Reads `key` through the transaction's writes, then the database as
    /// `ro` says (RocksDB: the transaction's snapshot is not implied).
    pub fn get(&mut self, ro: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_cf_id(ro, 0, key)
    }

    pub fn get_cf(
        &mut self,
        ro: &ReadOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.get_cf_id(ro, cf.id, key)
    }

    /// Reads are allowed while started or prepared.
    fn check_readable(&self) -> Result<()> {
        match self.state {
            TransactionState::Prepared => Ok(()),
            _ => self.check_started(),
        }
    }

    fn get_cf_id(&mut self, ro: &ReadOptions, cf: u32, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_readable()?;
        self.prepare_cf(cf)?;
        get_from_batch_and_db_as(&self.batch, self.db, ro, cf, key, self.write_prepared())
    }

    /// Reads `key` and tracks it (locked: exclusive or shared), so a
    /// write by someone else before commit is a conflict.
    pub fn get_for_update(
        &mut self,
        ro: &ReadOptions,
        key: &[u8],
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>> {
        self.get_for_update_cf_id(ro, 0, key, exclusive)
    }

    pub fn get_for_update_cf(
        &mut self,
        ro: &ReadOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>> {
        self.get_for_update_cf_id(ro, cf.id, key, exclusive)
    }

    fn get_for_update_cf_id(
        &mut self,
        ro: &ReadOptions,
        cf: u32,
        key: &[u8],
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>> {
        self.track(cf, key, exclusive)?;
        get_from_batch_and_db_as(&self.batch, self.db, ro, cf, key, self.write_prepared())
    }

    /// Several keys of the default column family.
    pub fn multi_get(&mut self, ro: &ReadOptions, keys: &[&[u8]]) -> Vec<Result<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.get(ro, k)).collect()
    }

    /// An iterator over the database (as `ro` says) with the
    /// transaction's writes on top.
    pub fn iter(&mut self, ro: &ReadOptions) -> Result<BaseDeltaIterator<'_>> {
        self.iter_cf_id(ro, 0)
    }

    pub fn iter_cf(
        &mut self,
        ro: &ReadOptions,
        cf: &ColumnFamilyHandle,
    ) -> Result<BaseDeltaIterator<'_>> {
        self.iter_cf_id(ro, cf.id)
    }

    fn iter_cf_id(&mut self, ro: &ReadOptions, cf: u32) -> Result<BaseDeltaIterator<'_>> {
        self.check_readable()?;
        self.prepare_cf(cf)?;
        let merge = self
            .db
            .inner
            .super_version(cf)?
            .options
            .merge_operator
            .clone();
        let base = if self.write_prepared() {
            self.db.inner.new_iterator_committed(ro, cf)?
        } else {
            self.db.inner.new_iterator(ro, cf)?
        };
        Ok(BaseDeltaIterator::new(
            base,
            std::borrow::Cow::Borrowed(&self.batch),
            cf,
            merge,
            ro.iterate_lower_bound.clone(),
            ro.iterate_upper_bound.clone(),
        ))
    }

    /// [`Transaction::iter_cf`] over a copy of the transaction's writes as
    /// they are now: the iterator does not borrow the transaction (for
    /// bindings such as the C API, whose iterators live beside it) and
    /// does not see later writes.
    pub fn iter_detached_cf(
        &mut self,
        ro: &ReadOptions,
        cf: Option<&ColumnFamilyHandle>,
    ) -> Result<BaseDeltaIterator<'static>> {
        let it = self.iter_cf_id(ro, cf.map_or(0, |c| c.id))?;
        Ok(it.into_owned())
    }

    pub fn set_save_point(&mut self) {
        self.batch.set_save_point();
        self.save_points.push(SavePoint {
            snapshot: self.snapshot.clone(),
            new_keys: Vec::new(),
        });
    }

    /// Undoes the writes since the last save point, restores its snapshot
    /// and untracks (unlocks) the keys first tracked since; `NotFound`
    /// without a save point.
    pub fn rollback_to_save_point(&mut self) -> Result<()> {
        self.check_started()?;
        let sp = self
            .save_points
            .pop()
            .ok_or_else(|| Error::NotFound("No savepoint".into()))?;
        self.batch.rollback_to_save_point()?;
        self.snapshot = sp.snapshot;
        for (cf, key) in sp.new_keys {
            self.tracked.remove(&(cf, key.clone()));
            if let Backend::Pessimistic(tdb) = self.backend {
                tdb.lock_manager().unlock(self.id, cf, &key);
            }
        }
        Ok(())
    }

    /// Forgets the last save point (its keys stay tracked).
    pub fn pop_save_point(&mut self) -> Result<()> {
        let sp = self
            .save_points
            .pop()
            .ok_or_else(|| Error::NotFound("No savepoint".into()))?;
        self.batch.pop_save_point()?;
        if let Some(below) = self.save_points.last_mut() {
            below.new_keys.extend(sp.new_keys);
        }
        Ok(())
    }

    /// Writes the transaction's batch atomically; optimistic transactions
    /// first check that no tracked key was written by someone else since
    /// it was tracked (`Busy` if one was: nothing is written).
    pub fn commit(&mut self) -> Result<()> {
        if self.state == TransactionState::Prepared {
            let (name, wal) = (
                self.name.clone().unwrap_or_default(),
                self.prep_wal.unwrap_or(0),
            );
            if let Some(range) = self.prepared_range {
                self.db
                    .inner
                    .commit_persisted_prepared(&self.write_options, &name, range)?;
                self.batch.clear();
                self.state = TransactionState::Committed;
                self.release();
                return Ok(());
            }
            let batch = self.batch.write_batch().clone();
            self.db
                .inner
                .commit_prepared(&self.write_options, &name, batch, wal)?;
            self.batch.clear();
            self.state = TransactionState::Committed;
            self.release();
            return Ok(());
        }
        self.check_started()?;
        if !self.skip_prepare {
            return Err(Error::InvalidArgument("Txn not prepared".into()));
        }
        // A copy: after a failure the transaction still holds its writes
        // (to roll back, or retry a pessimistic commit).
        let batch = self.batch.write_batch().clone();
        match self.backend {
            Backend::Pessimistic(_) => self.db.write(&self.write_options, batch)?,
            Backend::Optimistic(odb) => {
                let keys: Vec<(u32, Vec<u8>, SequenceNumber)> = self
                    .tracked
                    .iter()
                    .map(|((cf, k), t)| (*cf, k.clone(), t.seq))
                    .collect();
                odb.commit(&self.write_options, batch, keys)?
            }
        }
        self.batch.clear();
        self.state = TransactionState::Committed;
        self.release();
        Ok(())
    }

    /// Drops the writes and releases the locks.
    pub fn rollback(&mut self) -> Result<()> {
        match self.state {
            TransactionState::Prepared => {
                let (name, wal) = (
                    self.name.clone().unwrap_or_default(),
                    self.prep_wal.unwrap_or(0),
                );
                if let Some(range) = self.prepared_range {
                    let compensation = self.compensation(range)?;
                    self.db.inner.rollback_persisted_prepared(
                        &self.write_options,
                        &name,
                        range,
                        compensation,
                    )?;
                } else {
                    self.db
                        .inner
                        .rollback_prepared(&self.write_options, &name, wal)?;
                }
                self.batch.clear();
                self.state = TransactionState::RolledBack;
                self.release();
                Ok(())
            }
            // As RocksDB: an unprepared transaction drops its writes, save
            // points and locks and stays usable (its name and snapshot
            // stay).
            TransactionState::Started => {
                self.batch.clear();
                self.unlock_all();
                Ok(())
            }
            TransactionState::Committed => Err(Error::InvalidArgument(
                "This transaction has already been committed.".into(),
            )),
            TransactionState::RolledBack => Err(Error::InvalidArgument(
                "Two phase transaction is not in state for rollback.".into(),
            )),
        }
    }

    /// WritePrepared rollback: for each key the prepared writes touched,
    /// its committed value from just before the prepare (a Put), or a
    /// Delete where it had none. The keys are still locked, so nothing
    /// else wrote them since.
    fn compensation(&self, range: crate::db::two_phase::PreparedRange) -> Result<WriteBatch> {
        use crate::format::write_batch::BatchRecord as R;
        let mut keys: Vec<(u32, Vec<u8>)> = Vec::new();
        for r in self.batch.write_batch().iter() {
            match r? {
                R::Put { cf, key, .. }
                | R::Delete { cf, key }
                | R::SingleDelete { cf, key }
                | R::Merge { cf, key, .. } => keys.push((cf, key.to_vec())),
                _ => {}
            }
        }
        keys.sort();
        keys.dedup();
        let ro = ReadOptions {
            snapshot: Some(range.first.saturating_sub(1)),
            ..ReadOptions::default()
        };
        let mut batch = WriteBatch::new();
        for (cf, key) in keys {
            match self.db.inner.get_committed(&ro, cf, &key)? {
                Some(v) => batch.put_cf(cf, &key, &v),
                None => batch.delete_cf(cf, &key),
            }
        }
        Ok(batch)
    }

    fn release(&mut self) {
        self.unlock_all();
        if let Backend::Pessimistic(tdb) = self.backend
            && let Some(n) = self.name.take()
        {
            tdb.unregister_name(&n);
        }
        self.snapshot = None;
    }

    /// Releases every lock and forgets tracked keys and save points.
    fn unlock_all(&mut self) {
        if let Backend::Pessimistic(tdb) = self.backend {
            for (cf, key) in self.tracked.keys() {
                tdb.lock_manager().unlock(self.id, *cf, key);
            }
        }
        self.tracked.clear();
        self.save_points.clear();
        self.seq_guard = None;
    }
}

impl Drop for Transaction<'_> {
    /// A started transaction's writes are dropped; a prepared one stays
    /// prepared in the WAL (recovered at the next open, as in RocksDB).
    fn drop(&mut self) {
        if matches!(
            self.state,
            TransactionState::Started | TransactionState::Prepared
        ) {
            self.release();
        }
    }
}

/// `Busy` if `key` was written after `snapshot` (RocksDB's
/// `TransactionUtil::CheckKey`).
pub(crate) fn check_conflict(db: &DB, cf: u32, key: &[u8], snapshot: SequenceNumber) -> Result<()> {
    conflict_in(&db.inner, cf, key, snapshot)
}

pub(crate) fn conflict_in(
    inner: &crate::db::DbInner,
    cf: u32,
    key: &[u8],
    seq: SequenceNumber,
) -> Result<()> {
    // Through the commit table: a WritePrepared write committed after the
    // snapshot conflicts though its (prepare) sequence is older.
    match inner.latest_sequence_for_key_above(cf, key, seq)? {
        Some(latest) if !inner.commit_table.is_in_snapshot(latest, seq) => {
            Err(Error::Busy(String::new()))
        }
        _ => Ok(()),
    }
}

/// Reads `key` through `batch`, then `db` as `ro` says (RocksDB's
/// `GetFromBatchAndDB`): the batch's merges apply to the database's value.
pub(crate) fn get_from_batch_and_db(
    batch: &WriteBatchWithIndex,
    db: &DB,
    ro: &ReadOptions,
    cf: u32,
    key: &[u8],
) -> Result<Option<Vec<u8>>> {
    get_from_batch_and_db_as(batch, db, ro, cf, key, false)
}

/// [`get_from_batch_and_db`], reading the database through the commit
/// table when `committed` (WritePrepared).
fn get_from_batch_and_db_as(
    batch: &WriteBatchWithIndex,
    db: &DB,
    ro: &ReadOptions,
    cf: u32,
    key: &[u8],
    committed: bool,
) -> Result<Option<Vec<u8>>> {
    let sv = db.inner.super_version(cf)?;
    let merge = sv.options.merge_operator.as_deref();
    let read = |k: &[u8]| {
        if committed {
            db.inner.get_committed(ro, cf, k)
        } else {
            db.inner.get(ro, cf, k)
        }
    };
    match batch.lookup(cf, key, merge)? {
        BatchLookup::Found(v) => Ok(Some(v)),
        BatchLookup::Deleted => Ok(None),
        BatchLookup::NotFound => read(key),
        BatchLookup::MergeInProgress(ops) => {
            let base = read(key)?;
            full_merge(merge, key, base.as_deref(), &ops).map(Some)
        }
    }
}
