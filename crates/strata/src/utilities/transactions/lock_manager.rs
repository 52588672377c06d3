//! Point locks for pessimistic transactions (RocksDB's
//! `PointLockManager`): one lock per `(column family, key)`, shared or
//! exclusive, held until the transaction ends; keys are spread over
//! striped maps, each with its own mutex and condition variable. A waiter
//! gives up at its timeout (`TimedOut`), steals the lock of holders whose
//! transaction expired, and, with deadlock detection, refuses a wait that
//! would close a cycle of waiters (`Busy` with [`DEADLOCK_MSG`]), recording
//! the cycle for [`LockManager::deadlock_info`].
//!
//! Invariants: a lock's holder list is non-empty and has one holder when
//! exclusive; `num_locks` counts map entries; the wait-for map holds an
//! entry for a transaction exactly while it waits, and is only changed
//! under its own mutex, taken after (never before) a stripe's.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{DEADLOCK_MSG, Error, Result};
use crate::util::sync::lock;

pub type TransactionId = u64;

/// One transaction in a detected cycle: what it waited for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockInfo {
    pub txn_id: TransactionId,
    pub cf_id: u32,
    pub waiting_key: Vec<u8>,
    pub exclusive: bool,
}

/// A detected cycle (RocksDB's `DeadlockPath`): the waiters from the one
/// refused around the cycle; `limit_exceeded` when the search stopped at
/// `deadlock_detect_depth` (the wait was refused without a full path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockPath {
    pub path: Vec<DeadlockInfo>,
    pub limit_exceeded: bool,
    /// Unix seconds.
    pub deadlock_time: u64,
}

struct LockInfo {
    exclusive: bool,
    holders: Vec<(TransactionId, Option<Instant>)>,
}

#[derive(Default)]
struct Stripe {
    locks: Mutex<HashMap<(u32, Vec<u8>), LockInfo>>,
    released: Condvar,
}

struct Waiting {
    holders: Vec<TransactionId>,
    cf_id: u32,
    key: Vec<u8>,
    exclusive: bool,
}

/// How one lock request may wait.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LockRequest {
    pub exclusive: bool,
    /// `None`: wait forever.
    pub timeout: Option<Duration>,
    pub deadlock_detect: bool,
    pub deadlock_detect_depth: usize,
    /// When the requesting transaction expires (its locks may be stolen
    /// after that).
    pub expires_at: Option<Instant>,
}

pub(crate) struct LockManager {
    stripes: Vec<Stripe>,
    /// `None`: no limit.
    max_num_locks: Option<i64>,
    num_locks: AtomicI64,
    waiting: Mutex<HashMap<TransactionId, Waiting>>,
    deadlocks: Mutex<(VecDeque<DeadlockPath>, usize)>,
}

impl LockManager {
    pub fn new(num_stripes: usize, max_num_locks: Option<i64>) -> LockManager {
        LockManager {
            stripes: (0..num_stripes.max(1)).map(|_| Stripe::default()).collect(),
            max_num_locks,
            num_locks: AtomicI64::new(0),
            waiting: Mutex::new(HashMap::new()),
            deadlocks: Mutex::new((VecDeque::new(), 5)),
        }
    }

    fn stripe(&self, cf: u32, key: &[u8]) -> &Stripe {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        cf.hash(&mut h);
        key.hash(&mut h);
        &self.stripes[(h.finish() % self.stripes.len() as u64) as usize]
    }

    /// Takes (or upgrades) `txn`'s lock on `key`, waiting as `req` allows.
    pub fn try_lock(
        &self,
        txn: TransactionId,
        cf: u32,
        key: &[u8],
        req: LockRequest,
    ) -> Result<()> {
        let stripe = self.stripe(cf, key);
        let deadline = req.timeout.map(|t| Instant::now() + t);
        let mut locks = lock(&stripe.locks);
        loop {
            let now = Instant::now();
            let blockers: Vec<TransactionId> = match locks.get_mut(&(cf, key.to_vec())) {
                None => {
                    if let Some(max) = self.max_num_locks
                        && self.num_locks.load(Ordering::Acquire) >= max
                    {
                        return Err(Error::Busy(
                            "Failed to acquire lock due to max_num_locks limit".into(),
                        ));
                    }
                    locks.insert(
                        (cf, key.to_vec()),
                        LockInfo {
                            exclusive: req.exclusive,
                            holders: vec![(txn, req.expires_at)],
                        },
                    );
                    self.num_locks.fetch_add(1, Ordering::AcqRel);
                    return Ok(());
                }
                Some(info) => {
                    // Holders whose transaction expired lose the lock.
                    info.holders
                        .retain(|&(h, exp)| h == txn || exp.is_none_or(|e| e > now));
                    let mine = info.holders.iter().any(|&(h, _)| h == txn);
                    let others: Vec<TransactionId> = info
                        .holders
                        .iter()
                        .filter(|&&(h, _)| h != txn)
                        .map(|&(h, _)| h)
                        .collect();
                    if others.is_empty() {
                        info.exclusive = info.exclusive || req.exclusive;
                        if !mine {
                            info.holders = vec![(txn, req.expires_at)];
                            info.exclusive = req.exclusive;
                        }
                        return Ok(());
                    }
                    if !req.exclusive && !info.exclusive {
                        if !mine {
                            info.holders.push((txn, req.expires_at));
                        }
                        return Ok(());
                    }
                    others
                }
            };
            // Must wait for `blockers`.
            let remaining = match deadline {
                Some(d) if d <= now => {
                    self.stop_waiting(txn);
                    return Err(Error::TimedOut("Timeout waiting to lock key".into()));
                }
                Some(d) => Some(d - now),
                None => None,
            };
            if req.deadlock_detect
                && let Some(path) = self.start_waiting(txn, cf, key, &blockers, req)
            {
                self.record_deadlock(path);
                return Err(Error::Busy(DEADLOCK_MSG.into()));
            }
            // Wake up at the holders' expiry at the latest, to steal.
            let expiry = locks
                .get(&(cf, key.to_vec()))
                .and_then(|i| i.holders.iter().filter_map(|&(_, e)| e).min())
                .map(|e| e.saturating_duration_since(now) + Duration::from_millis(1));
            let wait = match (remaining, expiry) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            locks = match wait {
                Some(w) => {
                    stripe
                        .released
                        .wait_timeout(locks, w)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => stripe
                    .released
                    .wait(locks)
                    .unwrap_or_else(PoisonError::into_inner),
            };
            self.stop_waiting(txn);
        }
    }

    /// Releases `txn`'s lock on `key` (no-op if it holds none).
    pub fn unlock(&self, txn: TransactionId, cf: u32, key: &[u8]) {
        let stripe = self.stripe(cf, key);
        let mut locks = lock(&stripe.locks);
        let k = (cf, key.to_vec());
        if let Some(info) = locks.get_mut(&k) {
            info.holders.retain(|&(h, _)| h != txn);
            if info.holders.is_empty() {
                locks.remove(&k);
                self.num_locks.fetch_sub(1, Ordering::AcqRel);
            }
        }
        drop(locks);
        stripe.released.notify_all();
    }

    /// Locks held (map entries).
    pub fn num_locks(&self) -> i64 {
        self.num_locks.load(Ordering::Acquire)
    }

    /// Registers `txn` as waiting for `blockers`; returns the cycle if
    /// that wait would close one (and then does not register it).
    fn start_waiting(
        &self,
        txn: TransactionId,
        cf: u32,
        key: &[u8],
        blockers: &[TransactionId],
        req: LockRequest,
    ) -> Option<DeadlockPath> {
        let mut waiting = lock(&self.waiting);
        // Breadth-first over the wait-for edges from the blockers.
        let mut parent: HashMap<TransactionId, TransactionId> = HashMap::new();
        let mut seen: HashSet<TransactionId> = blockers.iter().copied().collect();
        let mut queue: VecDeque<(TransactionId, usize)> =
            blockers.iter().map(|&b| (b, 1)).collect();
        let mut limit_exceeded = false;
        let mut found = None;
        while let Some((t, depth)) = queue.pop_front() {
            if t == txn {
                found = Some(t);
                break;
            }
            if depth > req.deadlock_detect_depth {
                limit_exceeded = true;
                break;
            }
            if let Some(w) = waiting.get(&t) {
                for &next in &w.holders {
                    if next == txn {
                        parent.insert(next, t);
                        found = Some(next);
                        break;
                    }
                    if seen.insert(next) {
                        parent.insert(next, t);
                        queue.push_back((next, depth + 1));
                    }
                }
            }
            if found.is_some() {
                break;
            }
        }
        if found.is_some() || limit_exceeded {
            // The path: txn, then the chain of waiters back from txn.
            let mut path = vec![DeadlockInfo {
                txn_id: txn,
                cf_id: cf,
                waiting_key: key.to_vec(),
                exclusive: req.exclusive,
            }];
            if found.is_some() {
                let mut chain = Vec::new();
                let mut cur = parent.get(&txn).copied();
                while let Some(t) = cur {
                    chain.push(t);
                    cur = parent.get(&t).copied();
                }
                chain.reverse();
                for t in chain {
                    if let Some(w) = waiting.get(&t) {
                        path.push(DeadlockInfo {
                            txn_id: t,
                            cf_id: w.cf_id,
                            waiting_key: w.key.clone(),
                            exclusive: w.exclusive,
                        });
                    }
                }
            }
            return Some(DeadlockPath {
                path,
                limit_exceeded,
                deadlock_time: crate::compaction_filter::unix_now_seconds(),
            });
        }
        waiting.insert(
            txn,
            Waiting {
                holders: blockers.to_vec(),
                cf_id: cf,
                key: key.to_vec(),
                exclusive: req.exclusive,
            },
        );
        None
    }

    fn stop_waiting(&self, txn: TransactionId) {
        lock(&self.waiting).remove(&txn);
    }

    fn record_deadlock(&self, path: DeadlockPath) {
        let mut d = lock(&self.deadlocks);
        let cap = d.1;
        if cap == 0 {
            return;
        }
        while d.0.len() >= cap {
            d.0.pop_front();
        }
        d.0.push_back(path);
    }

    /// The last detected deadlocks, newest last (RocksDB's
    /// `GetDeadlockInfoBuffer`).
    pub fn deadlock_info(&self) -> Vec<DeadlockPath> {
        lock(&self.deadlocks).0.iter().cloned().collect()
    }

    /// How many deadlocks are kept (default 5).
    pub fn set_deadlock_info_buffer_size(&self, n: usize) {
        let mut d = lock(&self.deadlocks);
        d.1 = n;
        while d.0.len() > n {
            d.0.pop_front();
        }
    }
}
