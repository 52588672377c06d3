//! `OptimisticTransactionDB`: transactions without locks, validated at
//! commit (RocksDB's `OptimisticTransactionDBImpl`). A tracked key
//! conflicts when the database holds a write to it newer than the sequence
//! number the transaction tracked it at (its snapshot's, or the latest at
//! the time it first touched the key).
//!
//! `ValidateSerial` (the default) validates inside the write path, with
//! every earlier write visible and no other write able to start, so no
//! write at all (transactional or not) can slip between validation and
//! the commit. `ValidateParallel` validates under bucket locks of the
//! tracked keys, taken in order: commits with disjoint keys validate in
//! parallel, and only transactions exclude each other (as in RocksDB).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use super::transaction::{Backend, LockSettings, Transaction, conflict_in};
use crate::db::{ColumnFamilyDescriptor, DB};
use crate::error::Result;
use crate::format::{SequenceNumber, WriteBatch};
use crate::options::{Options, WriteOptions};

/// How commits are validated (RocksDB's `OccValidationPolicy`; its
/// default, `kValidateParallel`, is ours).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OccValidationPolicy {
    /// In the write path, one commit at a time (a group of its own).
    ValidateSerial,
    /// Under per-key bucket locks taken in order, then a plain write
    /// that may share its group with others.
    #[default]
    ValidateParallel,
}

/// RocksDB's `OptimisticTransactionOptions`.
#[derive(Clone, Debug, Default)]
pub struct OptimisticTransactionOptions {
    pub set_snapshot: bool,
}

/// Buckets of the parallel policy (RocksDB's default is 2^20; fewer
/// suffice to make collisions between unrelated keys rare).
const BUCKETS: usize = 1 << 12;

pub struct OptimisticTransactionDB {
    db: DB,
    policy: OccValidationPolicy,
    buckets: Vec<Mutex<()>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for OptimisticTransactionDB {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptimisticTransactionDB")
            .field("db", &self.db)
            .field("policy", &self.policy)
            .finish()
    }
}

impl OptimisticTransactionDB {
    pub fn open(opts: Options, path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self::wrap(
            DB::open(opts, path)?,
            OccValidationPolicy::default(),
        ))
    }

    pub fn open_cf(
        opts: Options,
        path: impl AsRef<Path>,
        cfs: Vec<ColumnFamilyDescriptor>,
        policy: OccValidationPolicy,
    ) -> Result<Self> {
        Ok(Self::wrap(DB::open_cf(opts, path, cfs)?, policy))
    }

    pub fn wrap(db: DB, policy: OccValidationPolicy) -> Self {
        OptimisticTransactionDB {
            db,
            policy,
            buckets: (0..BUCKETS).map(|_| Mutex::new(())).collect(),
            next_id: AtomicU64::new(1),
        }
    }

    /// The database underneath (reads, and writes outside transactions:
    /// those are validated against like any other write).
    pub fn db(&self) -> &DB {
        &self.db
    }

    pub fn into_db(self) -> DB {
        self.db
    }

    pub fn policy(&self) -> OccValidationPolicy {
        self.policy
    }

    pub fn begin_transaction(
        &self,
        write_options: WriteOptions,
        txn_options: OptimisticTransactionOptions,
    ) -> Transaction<'_> {
        let locks = LockSettings {
            timeout: None,
            deadlock_detect: false,
            deadlock_detect_depth: 0,
            expires_at: None,
            max_write_batch_size: 0,
        };
        Transaction::new(
            Backend::Optimistic(self),
            &self.db,
            self.next_id.fetch_add(1, Ordering::Relaxed),
            write_options,
            txn_options.set_snapshot,
            locks,
        )
    }

    /// Validates `keys` (column family, key, tracked sequence) and writes
    /// `batch` if none was written since.
    pub(crate) fn commit(
        &self,
        wo: &WriteOptions,
        batch: WriteBatch,
        keys: Vec<(u32, Vec<u8>, SequenceNumber)>,
    ) -> Result<()> {
        match self.policy {
            OccValidationPolicy::ValidateSerial => self.db.inner.write_with_callback(
                wo,
                batch,
                Box::new(move |inner| {
                    keys.iter()
                        .try_for_each(|(cf, k, seq)| conflict_in(inner, *cf, k, *seq))
                }),
            ),
            OccValidationPolicy::ValidateParallel => {
                let mut ids: Vec<usize> = keys.iter().map(|(cf, k, _)| bucket(*cf, k)).collect();
                ids.sort_unstable();
                ids.dedup();
                // In ascending order: two commits never wait on each other
                // in a cycle.
                let _held: Vec<_> = ids
                    .iter()
                    .map(|&i| {
                        self.buckets[i]
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                    })
                    .collect();
                for (cf, k, seq) in &keys {
                    conflict_in(&self.db.inner, *cf, k, *seq)?;
                }
                self.db.write(wo, batch)
            }
        }
    }
}

fn bucket(cf: u32, key: &[u8]) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    cf.hash(&mut h);
    key.hash(&mut h);
    (h.finish() % BUCKETS as u64) as usize
}
