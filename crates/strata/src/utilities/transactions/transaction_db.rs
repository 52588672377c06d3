//! `TransactionDB`: a database whose writers lock keys (RocksDB's
//! `PessimisticTransactionDB`). Writes made through it outside a
//! transaction lock their keys too, so they wait for (and never slip
//! under) a transaction holding one.
//!
//! Two write policies, as RocksDB's:
//! - WriteCommitted (the default): a transaction's writes reach the
//!   memtables at commit; prepare writes them to the WAL only.
//! - WritePrepared: prepare writes them to the WAL and the memtables, and
//!   a commit table (`db::commit_table`) says which sequence numbers are
//!   committed, and from which sequence on. Reads through the
//!   TransactionDB and its transactions see only committed data, and a
//!   snapshot sees only what was committed when it was taken; flushes and
//!   compactions keep what the commit table says readers may still need.
//!   Rollback after prepare writes each key's previous value (or a
//!   deletion) and commits it with the prepared writes, which it hides.
//!   Reading through [`TransactionDB::db`] directly sees prepared,
//!   uncommitted data (as RocksDB's base DB does).

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::lock_manager::{DeadlockPath, LockManager, LockRequest};
use super::transaction::{Backend, LockSettings, Transaction};
use crate::db::two_phase::RecoveredPrepared;
use crate::db::{ColumnFamilyDescriptor, ColumnFamilyHandle, DB, DbIterator};
use crate::error::{Error, Result};
use crate::format::WriteBatch;
use crate::format::write_batch::BatchRecord;
use crate::options::{Options, ReadOptions, WriteOptions};

/// When a transaction's writes reach the memtable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TxnDBWritePolicy {
    /// At commit (the default).
    #[default]
    WriteCommitted,
    /// At prepare, with a commit table deciding visibility.
    WritePrepared,
    /// Before prepare (not yet).
    WriteUnprepared,
}

/// RocksDB 7.8.3's `TransactionDBOptions` (times in milliseconds; a
/// negative time means none).
#[derive(Clone, Debug)]
pub struct TransactionDBOptions {
    /// Locks held at most at once (negative: no limit).
    pub max_num_locks: i64,
    /// Deadlocks remembered for `deadlock_info_buffer`.
    pub max_num_deadlocks: usize,
    /// Lock-table stripes.
    pub num_stripes: usize,
    /// Lock wait of transactions whose own `lock_timeout` is negative.
    pub transaction_lock_timeout: i64,
    /// Lock wait of writes made outside transactions.
    pub default_lock_timeout: i64,
    pub write_policy: TxnDBWritePolicy,
}

impl Default for TransactionDBOptions {
    fn default() -> Self {
        TransactionDBOptions {
            max_num_locks: -1,
            max_num_deadlocks: 5,
            num_stripes: 16,
            transaction_lock_timeout: 1000,
            default_lock_timeout: 1000,
            write_policy: TxnDBWritePolicy::WriteCommitted,
        }
    }
}

/// RocksDB 7.8.3's `TransactionOptions` (times in milliseconds).
#[derive(Clone, Debug)]
pub struct TransactionOptions {
    /// Take a snapshot at begin (as `Transaction::set_snapshot`).
    pub set_snapshot: bool,
    pub deadlock_detect: bool,
    /// Negative: the database's `transaction_lock_timeout`; 0: fail at
    /// once when a lock is taken.
    pub lock_timeout: i64,
    /// After this long the transaction cannot commit and its locks may be
    /// taken by others (negative: never).
    pub expiration: i64,
    pub deadlock_detect_depth: i64,
    /// Bytes the batch may reach (0: no limit).
    pub max_write_batch_size: usize,
    /// A commit may come without a prepare (RocksDB's default); false:
    /// such a commit fails with `Invalid argument: Txn not prepared`.
    pub skip_prepare: bool,
}

impl Default for TransactionOptions {
    fn default() -> Self {
        TransactionOptions {
            set_snapshot: false,
            deadlock_detect: false,
            lock_timeout: -1,
            expiration: -1,
            deadlock_detect_depth: 50,
            max_write_batch_size: 0,
            skip_prepare: true,
        }
    }
}

fn millis(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

pub struct TransactionDB {
    db: DB,
    options: TransactionDBOptions,
    locks: LockManager,
    next_id: AtomicU64,
    /// Names of live named transactions.
    names: Mutex<HashSet<String>>,
    /// Prepared sections recovery found, not yet handed out.
    recovered: Mutex<Vec<RecoveredPrepared>>,
}

impl std::fmt::Debug for TransactionDB {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionDB")
            .field("db", &self.db)
            .finish()
    }
}

impl TransactionDB {
    /// Opens with `allow_2pc` set (prepared transactions survive a
    /// crash and are recovered).
    pub fn open(
        opts: Options,
        topts: TransactionDBOptions,
        path: impl AsRef<Path>,
    ) -> Result<Self> {
        Self::check_policy(&topts)?;
        let opts = Options {
            allow_2pc: true,
            ..opts
        };
        Self::wrap(DB::open(opts, path)?, topts)
    }

    pub fn open_cf(
        opts: Options,
        topts: TransactionDBOptions,
        path: impl AsRef<Path>,
        cfs: Vec<ColumnFamilyDescriptor>,
    ) -> Result<Self> {
        Self::check_policy(&topts)?;
        let opts = Options {
            allow_2pc: true,
            ..opts
        };
        Self::wrap(DB::open_cf(opts, path, cfs)?, topts)
    }

    fn check_policy(topts: &TransactionDBOptions) -> Result<()> {
        if topts.write_policy == TxnDBWritePolicy::WriteUnprepared {
            return Err(Error::NotSupported(
                "TransactionDB write policy WriteUnprepared".into(),
            ));
        }
        Ok(())
    }

    /// The write policy the database's transactions follow.
    pub fn write_policy(&self) -> TxnDBWritePolicy {
        self.options.write_policy
    }

    pub(crate) fn is_write_prepared(&self) -> bool {
        self.options.write_policy == TxnDBWritePolicy::WritePrepared
    }

    /// Stacks transactions on an open database (RocksDB's `WrapDB`).
    pub fn wrap(db: DB, topts: TransactionDBOptions) -> Result<Self> {
        Self::check_policy(&topts)?;
        let locks = LockManager::new(
            topts.num_stripes,
            (topts.max_num_locks >= 0).then_some(topts.max_num_locks),
        );
        locks.set_deadlock_info_buffer_size(topts.max_num_deadlocks);
        let recovered = db.inner.take_recovered_prepared();
        let write_prepared = topts.write_policy == TxnDBWritePolicy::WritePrepared;
        if let Some(p) = recovered.iter().find(|p| p.persisted != write_prepared) {
            let (found, wanted) = if p.persisted {
                ("WritePrepared", "WriteCommitted")
            } else {
                ("WriteCommitted", "WritePrepared")
            };
            return Err(Error::NotSupported(format!(
                "the WAL holds {found} prepared transaction {:?}, which a {wanted} \
                 TransactionDB cannot recover: open with write_policy {found}",
                p.name
            )));
        }
        Ok(TransactionDB {
            db,
            options: topts,
            locks,
            next_id: AtomicU64::new(1),
            names: Mutex::new(HashSet::new()),
            recovered: Mutex::new(recovered),
        })
    }

    pub(crate) fn register_name(&self, name: &str) -> Result<()> {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        if !names.insert(name.to_string()) {
            return Err(Error::InvalidArgument(
                "Transaction name must be unique".into(),
            ));
        }
        Ok(())
    }

    pub(crate) fn unregister_name(&self, name: &str) {
        self.names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
    }

    fn lock_settings(&self, txn_options: &TransactionOptions) -> LockSettings {
        let timeout = if txn_options.lock_timeout < 0 {
            millis(self.options.transaction_lock_timeout)
        } else {
            millis(txn_options.lock_timeout)
        };
        LockSettings {
            timeout,
            deadlock_detect: txn_options.deadlock_detect,
            deadlock_detect_depth: usize::try_from(txn_options.deadlock_detect_depth).unwrap_or(0),
            expires_at: millis(txn_options.expiration).map(|d| Instant::now() + d),
            max_write_batch_size: txn_options.max_write_batch_size,
        }
    }

    /// The transactions recovery found prepared (each once), rebuilt with
    /// their writes and locks: commit or roll back each. One that is
    /// dropped undecided stays prepared in the WAL for the next open.
    pub fn get_all_prepared_transactions(&self) -> Result<Vec<Transaction<'_>>> {
        let taken = std::mem::take(
            &mut *self
                .recovered
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let locks = self.lock_settings(&TransactionOptions::default());
        taken
            .iter()
            .map(|p| {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                Transaction::recovered(self, id, p, locks)
            })
            .collect()
    }

    /// The database underneath, for reads, flushes and the rest. Writing
    /// through it directly bypasses the locks.
    pub fn db(&self) -> &DB {
        &self.db
    }

    pub fn into_db(self) -> DB {
        self.db
    }

    pub(crate) fn lock_manager(&self) -> &LockManager {
        &self.locks
    }

    pub fn begin_transaction(
        &self,
        write_options: WriteOptions,
        txn_options: TransactionOptions,
    ) -> Transaction<'_> {
        let locks = self.lock_settings(&txn_options);
        let mut txn = Transaction::new(
            Backend::Pessimistic(self),
            &self.db,
            self.next_id.fetch_add(1, Ordering::Relaxed),
            write_options,
            txn_options.set_snapshot,
            locks,
        );
        txn.skip_prepare = txn_options.skip_prepare;
        txn
    }

    /// The last detected deadlocks (RocksDB's `GetDeadlockInfoBuffer`).
    pub fn deadlock_info_buffer(&self) -> Vec<DeadlockPath> {
        self.locks.deadlock_info()
    }

    pub fn set_deadlock_info_buffer_size(&self, n: usize) {
        self.locks.set_deadlock_info_buffer_size(n);
    }

    /// Locks held now.
    pub fn num_locks(&self) -> i64 {
        self.locks.num_locks()
    }

    pub fn get(&self, ro: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.read_cf_id(ro, 0, key)
    }

    pub fn get_cf(
        &self,
        ro: &ReadOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.read_cf_id(ro, cf.id, key)
    }

    /// A read of committed data (WritePrepared: through the commit table).
    pub(crate) fn read_cf_id(
        &self,
        ro: &ReadOptions,
        cf: u32,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        if self.is_write_prepared() {
            self.db.inner.get_committed(ro, cf, key)
        } else {
            self.db.inner.get(ro, cf, key)
        }
    }

    /// An iterator over committed data, positioned at the first key.
    pub fn iter(&self, ro: &ReadOptions) -> Result<DbIterator> {
        let mut it = self.new_iterator_cf_id(ro, 0)?;
        it.seek_to_first();
        Ok(it)
    }

    /// An unpositioned iterator over committed data of `cf`.
    pub fn new_iterator_cf(&self, ro: &ReadOptions, cf: &ColumnFamilyHandle) -> Result<DbIterator> {
        self.new_iterator_cf_id(ro, cf.id)
    }

    pub(crate) fn new_iterator_cf_id(&self, ro: &ReadOptions, cf: u32) -> Result<DbIterator> {
        if self.is_write_prepared() {
            self.db.inner.new_iterator_committed(ro, cf)
        } else {
            self.db.inner.new_iterator(ro, cf)
        }
    }

    pub fn put(&self, wo: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(wo, b)
    }

    pub fn put_cf(
        &self,
        wo: &WriteOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put_cf(cf.id, key, value);
        self.write(wo, b)
    }

    pub fn delete(&self, wo: &WriteOptions, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(wo, b)
    }

    pub fn delete_cf(&self, wo: &WriteOptions, cf: &ColumnFamilyHandle, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_cf(cf.id, key);
        self.write(wo, b)
    }

    pub fn merge(&self, wo: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge(key, value);
        self.write(wo, b)
    }

    /// Writes `batch` outside any transaction: its keys are locked
    /// (waiting `default_lock_timeout`) for the write, as RocksDB does.
    /// Range deletions cannot be locked and are refused.
    pub fn write(&self, wo: &WriteOptions, batch: WriteBatch) -> Result<()> {
        let mut keys: Vec<(u32, Vec<u8>)> = Vec::new();
        for r in batch.iter() {
            match r? {
                BatchRecord::Put { cf, key, .. }
                | BatchRecord::Delete { cf, key }
                | BatchRecord::SingleDelete { cf, key }
                | BatchRecord::Merge { cf, key, .. } => keys.push((cf, key.to_vec())),
                BatchRecord::DeleteRange { .. } => {
                    return Err(Error::NotSupported(
                        "DeleteRange cannot be locked in a TransactionDB".into(),
                    ));
                }
                _ => {}
            }
        }
        keys.sort();
        keys.dedup();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let req = LockRequest {
            exclusive: true,
            timeout: millis(self.options.default_lock_timeout),
            deadlock_detect: false,
            deadlock_detect_depth: 0,
            expires_at: None,
        };
        let mut held = 0;
        let mut r = Ok(());
        for (cf, key) in &keys {
            r = self.locks.try_lock(id, *cf, key, req);
            if r.is_err() {
                break;
            }
            held += 1;
        }
        if r.is_ok() {
            r = self.db.write(wo, batch);
        }
        for (cf, key) in &keys[..held] {
            self.locks.unlock(id, *cf, key);
        }
        r
    }
}
