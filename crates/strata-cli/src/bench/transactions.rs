//! db_bench's `randomtransaction` (RocksDB's `RandomTransactionInserter`):
//! each transaction adds one random increment to one random key of every
//! set (`--transaction_sets` key prefixes `0001`, `0002`, ...), so every
//! set's sum stays equal; the verification after the run checks that.
//!
//! With `--transaction_db` a pessimistic transaction per insert: named,
//! a snapshot half the time (always without `--transaction_set_snapshot`),
//! each key read (half of them for update), deleted (single-deleted for
//! sets not divisible by 4) and put, then prepared (90%) and committed
//! (95%) or rolled back. With `--optimistic_transaction_db` the same
//! without names or prepare. Without either, one write batch per insert.
//! Conflicts, lock timeouts and deadlocks are counted as aborts; any
//! other error stops the benchmark. As in RocksDB, optimistic transactions
//! without `--transaction_set_snapshot` may lose updates (a plain get is
//! not validated, and a write is checked only from the moment it is
//! made), so their verification can fail without an engine fault.

use strata::utilities::transactions::{
    OptimisticTransactionDB, OptimisticTransactionOptions, Transaction, TransactionDB,
    TransactionOptions,
};
use strata::{DB, Error, ReadOptions, WriteBatch};

use super::random::Random64;
use super::stats::OpType;
use super::{OpBudget, Shared, ThreadState};

/// The database kind the run opened (`--transaction_db`,
/// `--optimistic_transaction_db`, neither).
pub enum TxnEngine<'a> {
    Plain,
    Pessimistic(&'a TransactionDB),
    Optimistic(&'a OptimisticTransactionDB),
}

/// `--transaction_*` flags.
#[derive(Clone, Copy, Debug)]
pub struct TxnConfig {
    pub sets: u16,
    pub set_snapshot: bool,
    /// Microseconds of sleep between reading and writing at most.
    pub sleep_micros: u64,
    pub lock_timeout_ms: i64,
}

fn uniform(r: &mut Random64, n: u64) -> u64 {
    r.next() % n.max(1)
}

fn one_in(r: &mut Random64, n: u64) -> bool {
    uniform(r, n) == 0
}

/// `[SET#][random#]`: the set number (from 1) in four digits, then the
/// key number in decimal.
pub fn set_key(set: u16, k: u64) -> Vec<u8> {
    format!("{:04}{k}", u32::from(set) + 1).into_bytes()
}

fn parse_value(v: &[u8]) -> Result<u64, String> {
    let s = std::str::from_utf8(v).map_err(|_| format!("value {v:?} is not a number"))?;
    let n: u64 = s
        .parse()
        .map_err(|_| format!("value {s:?} is not a number"))?;
    if n == 0 {
        return Err(format!("unexpected value {s:?}"));
    }
    Ok(n)
}

/// A transaction that ended in a conflict the benchmark expects.
fn expected_abort(e: &Error) -> bool {
    matches!(
        e,
        Error::Busy(_) | Error::TimedOut(_) | Error::TryAgain(_) | Error::Expired(_)
    )
}

/// One thread's inserter.
struct Inserter<'a> {
    sh: &'a Shared<'a>,
    cfg: TxnConfig,
    num_keys: u64,
    next_id: u64,
    failures: u64,
    bytes: u64,
}

impl Inserter<'_> {
    fn shuffled_sets(&self, r: &mut Random64) -> Vec<u16> {
        let mut sets: Vec<u16> = (0..self.cfg.sets).collect();
        for i in (1..sets.len()).rev() {
            let j = uniform(r, i as u64 + 1) as usize;
            sets.swap(i, j);
        }
        sets
    }

    fn sleep(&self, r: &mut Random64) {
        if self.cfg.sleep_micros > 0 {
            let us = uniform(r, self.cfg.sleep_micros);
            std::thread::sleep(std::time::Duration::from_micros(us));
        }
    }

    /// One insert; `Ok(false)` when it aborted as expected.
    fn insert(&mut self, tid: usize, r: &mut Random64) -> Result<bool, String> {
        match self.sh.txn {
            TxnEngine::Plain => self.insert_batch(r),
            TxnEngine::Pessimistic(tdb) => {
                let opts = TransactionOptions {
                    lock_timeout: self.cfg.lock_timeout_ms,
                    set_snapshot: self.cfg.set_snapshot,
                    ..Default::default()
                };
                let mut txn = tdb.begin_transaction(self.sh.run.cfg.write_opts, opts);
                txn.set_name(&format!("txn{tid}-{}", self.next_id))
                    .map_err(|e| format!("set_name: {e}"))?;
                self.next_id += 1;
                // A snapshot without set_snapshot, or half the time.
                if txn.snapshot().is_none() || one_in(r, 2) {
                    txn.set_snapshot();
                }
                self.insert_txn(&mut txn, r, false)
            }
            TxnEngine::Optimistic(odb) => {
                let mut txn = odb.begin_transaction(
                    self.sh.run.cfg.write_opts,
                    OptimisticTransactionOptions {
                        set_snapshot: self.cfg.set_snapshot,
                    },
                );
                self.insert_txn(&mut txn, r, true)
            }
        }
    }

    fn insert_batch(&mut self, r: &mut Random64) -> Result<bool, String> {
        let incr = r.next() % 100 + 1;
        let mut batch = WriteBatch::new();
        for set in self.shuffled_sets(r) {
            let key = set_key(set, uniform(r, self.num_keys));
            let old = match self.sh.db.get(&ReadOptions::default(), &key) {
                Ok(Some(v)) => parse_value(&v)?,
                Ok(None) => 0,
                Err(e) => return Err(format!("get: {e}")),
            };
            self.sleep(r);
            let sum = (old + incr).to_string();
            self.bytes += (key.len() + sum.len()) as u64;
            batch.put(&key, sum.as_bytes());
        }
        self.sh
            .db
            .write(&self.sh.run.cfg.write_opts, batch)
            .map_err(|e| format!("write: {e}"))?;
        Ok(true)
    }

    fn insert_txn(
        &mut self,
        txn: &mut Transaction<'_>,
        r: &mut Random64,
        optimistic: bool,
    ) -> Result<bool, String> {
        let incr = r.next() % 100 + 1;
        let ro = ReadOptions {
            snapshot: txn.snapshot(),
            ..Default::default()
        };
        let mut aborted = None;
        for set in self.shuffled_sets(r) {
            let key = set_key(set, uniform(r, self.num_keys));
            let for_update = one_in(r, 2);
            let got = if for_update {
                txn.get_for_update(&ro, &key, true)
            } else {
                txn.get(&ro, &key)
            };
            let old = match got {
                Ok(Some(v)) => parse_value(&v)?,
                Ok(None) => 0,
                Err(e) if !optimistic && expected_abort(&e) => {
                    aborted = Some(e);
                    break;
                }
                Err(e) => return Err(format!("get: {e}")),
            };
            self.sleep(r);
            let sum = (old + incr).to_string();
            let d = if set % 4 != 0 {
                txn.single_delete(&key)
            } else {
                txn.delete(&key)
            };
            match d {
                Ok(()) => {}
                Err(e) if !for_update && expected_abort(&e) => {
                    aborted = Some(e);
                    break;
                }
                Err(e) => return Err(format!("delete: {e}")),
            }
            txn.put(&key, sum.as_bytes())
                .map_err(|e| format!("put: {e}"))?;
            self.bytes += (key.len() + sum.len()) as u64;
        }
        if aborted.is_some() {
            txn.rollback().map_err(|e| format!("rollback: {e}"))?;
            self.failures += 1;
            return Ok(false);
        }
        if !optimistic && !one_in(r, 10) {
            txn.prepare().map_err(|e| format!("prepare: {e}"))?;
        }
        let r = if !one_in(r, 20) {
            txn.commit()
        } else {
            txn.rollback()
        };
        match r {
            Ok(()) => Ok(true),
            Err(e) if optimistic && expected_abort(&e) || matches!(e, Error::Expired(_)) => {
                self.failures += 1;
                Ok(false)
            }
            Err(e) => Err(format!("commit: {e}")),
        }
    }
}

/// The benchmark body (every thread).
pub fn random_transaction(sh: &Shared, ts: &mut ThreadState) -> Result<(), String> {
    let cfg = sh.txn_cfg;
    let mut ins = Inserter {
        sh,
        cfg,
        num_keys: sh.run.cfg.num,
        next_id: 0,
        failures: 0,
        bytes: 0,
    };
    let mut budget = OpBudget::new(sh.run.cfg.duration, sh.run.cfg.readwrites());
    let mut done = 0u64;
    while !budget.done(1) {
        ins.insert(ts.tid, &mut ts.rand)?;
        ts.stats.finished_ops(sh.stats_cfg, 1, OpType::Others);
        done += 1;
    }
    let msg = match sh.txn {
        TxnEngine::Plain => format!("( batches:{done} )"),
        _ => format!("( transactions:{done} aborts:{})", ins.failures),
    };
    ts.stats.add_message(&msg);
    ts.stats.add_bytes(ins.bytes);
    Ok(())
}

/// The sum of every set, which the inserts keep equal (RocksDB's
/// `RandomTransactionInserter::Verify`, at one snapshot).
pub fn verify(db: &DB, sets: u16) -> Result<(), String> {
    let snap = db.snapshot();
    let ro = ReadOptions {
        snapshot: Some(snap.sequence()),
        ..Default::default()
    };
    let mut totals = Vec::with_capacity(sets as usize);
    for set in 0..sets {
        let prefix = format!("{:04}", u32::from(set) + 1);
        let mut it = db.new_iterator(&ro).map_err(|e| e.to_string())?;
        it.seek(prefix.as_bytes());
        let mut total = 0u64;
        while it.valid() && it.key().starts_with(prefix.as_bytes()) {
            total += parse_value(it.value())?;
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        totals.push(total);
    }
    match totals.iter().position(|t| *t != totals[0]) {
        None => Ok(()),
        Some(i) => Err(format!(
            "set {} sums to {} but set 1 to {}",
            i + 1,
            totals[i],
            totals[0]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_set_in_four_digits() {
        assert_eq!(set_key(0, 17), b"000117");
        assert_eq!(set_key(41, 0), b"00420");
    }
}
