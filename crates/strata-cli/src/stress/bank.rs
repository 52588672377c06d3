//! `strata stress --use_txn` / `--use_optimistic_txn`: the stress test of
//! transactions (RocksDB's db_stress `--use_txn`, with the bank invariant
//! of issue 15). `--max_key` accounts start with [`START`] each; threads
//! move money between two accounts in a transaction (pessimistic with
//! `--txn_write_policy` 0 = WriteCommitted or 1 = WritePrepared, some of
//! them prepared first under a name; or optimistic), and each transfer
//! also bumps its thread's operation counter. A checker thread sums every
//! account at a snapshot while they run.
//!
//! Across a SIGKILL the checks are: the total never changes (every
//! transaction whole or absent, prepared ones included: the next run
//! commits or rolls back each recovered prepared transaction at random);
//! and every acknowledged commit survives: a thread's counter in the
//! database is at least the count it acknowledged (kept in the expected
//! file with `pwrite`, which the page cache keeps across a SIGKILL) and
//! at most one more (the commit in flight).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use strata::options::{ReadOptions, WriteOptions};
use strata::utilities::transactions::{
    OptimisticTransactionDB, OptimisticTransactionOptions, Transaction, TransactionDB,
    TransactionDBOptions, TransactionOptions, TxnDBWritePolicy,
};
use strata::{DB, Error, Options};

use super::{Config, Rng, VERIFICATION_FAILED};

/// Each account's opening balance.
pub const START: u64 = 1000;
/// Present once the accounts exist (written with them, atomically).
const INIT_KEY: &[u8] = b"bank.init";

/// Which transactions the run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnKind {
    Pessimistic(TxnDBWritePolicy),
    Optimistic,
}

fn account(i: u64) -> Vec<u8> {
    format!("acct{i:08}").into_bytes()
}

fn counter(t: usize) -> Vec<u8> {
    format!("ops{t:04}").into_bytes()
}

fn parse(v: Option<Vec<u8>>, what: &[u8]) -> Result<u64, String> {
    let Some(v) = v else { return Ok(0) };
    String::from_utf8_lossy(&v).parse().map_err(|_| {
        format!(
            "{VERIFICATION_FAILED}: {} holds {:?}, not a number",
            String::from_utf8_lossy(what),
            String::from_utf8_lossy(&v)
        )
    })
}

enum BankDb {
    P(Box<TransactionDB>),
    O(OptimisticTransactionDB),
}

impl BankDb {
    fn base(&self) -> &DB {
        match self {
            BankDb::P(d) => d.db(),
            BankDb::O(d) => d.db(),
        }
    }

    fn get(&self, ro: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        match self {
            BankDb::P(d) => d.get(ro, key),
            BankDb::O(d) => d.db().get(ro, key),
        }
        .map_err(|e| format!("get: {e}"))
    }

    fn begin(&self, wo: WriteOptions) -> Transaction<'_> {
        match self {
            BankDb::P(d) => d.begin_transaction(
                wo,
                TransactionOptions {
                    deadlock_detect: true,
                    lock_timeout: 100,
                    ..Default::default()
                },
            ),
            BankDb::O(d) => d.begin_transaction(wo, OptimisticTransactionOptions::default()),
        }
    }

    /// The accounts' total and their count, at one snapshot.
    fn total(&self, accounts: u64) -> Result<u64, String> {
        let snap = self.base().snapshot();
        let ro = ReadOptions {
            snapshot: Some(snap.sequence()),
            ..Default::default()
        };
        let mut sum = 0;
        for i in 0..accounts {
            let k = account(i);
            sum += parse(self.get(&ro, &k)?, &k)?;
        }
        Ok(sum)
    }
}

/// The acknowledged transfer count of each thread, one fixed64 slot
/// each, written with `pwrite`.
struct Acked(File);

impl Acked {
    fn open(cfg: &Config) -> Result<Acked, String> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&cfg.expected)
            .map_err(|e| format!("open {}: {e}", cfg.expected.display()))?;
        Ok(Acked(f))
    }

    fn get(&self, t: usize) -> u64 {
        let mut b = [0u8; 8];
        match self.0.read_exact_at(&mut b, t as u64 * 8) {
            Ok(()) => u64::from_le_bytes(b),
            Err(_) => 0,
        }
    }

    fn set(&self, t: usize, n: u64) -> Result<(), String> {
        self.0
            .write_all_at(&n.to_le_bytes(), t as u64 * 8)
            .map_err(|e| format!("expected state: {e}"))
    }
}

/// Runs the bank stress test (see the module documentation).
pub fn run(cfg: &Config, opts: Options, kind: TxnKind) -> Result<(), String> {
    let started = Instant::now();
    let db = match kind {
        TxnKind::Pessimistic(write_policy) => BankDb::P(Box::new(
            TransactionDB::open(
                opts,
                TransactionDBOptions {
                    write_policy,
                    ..Default::default()
                },
                &cfg.db,
            )
            .map_err(|e| format!("open {}: {e}", cfg.db.display()))?,
        )),
        TxnKind::Optimistic => BankDb::O(
            OptimisticTransactionDB::open(opts, &cfg.db)
                .map_err(|e| format!("open {}: {e}", cfg.db.display()))?,
        ),
    };
    let acked = Acked::open(cfg)?;
    let accounts = cfg.max_key;
    let mut rng = Rng::seeded(cfg.seed);
    // What the killed run left: prepared transactions first, each
    // committed or rolled back.
    let mut settled = 0u64;
    if let BankDb::P(d) = &db {
        for mut t in d
            .get_all_prepared_transactions()
            .map_err(|e| format!("recovered transactions: {e}"))?
        {
            if rng.one_in(2) {
                t.commit()
            } else {
                t.rollback()
            }
            .map_err(|e| format!("ending a recovered transaction: {e}"))?;
            settled += 1;
        }
    }
    let ro = ReadOptions::default();
    if db.get(&ro, INIT_KEY)?.is_none() {
        // A new bank: every account and the marker in one transaction.
        let mut t = db.begin(WriteOptions::default());
        for i in 0..accounts {
            t.put(&account(i), START.to_string().as_bytes())
                .map_err(|e| format!("init: {e}"))?;
        }
        t.put(INIT_KEY, b"1").map_err(|e| format!("init: {e}"))?;
        t.commit().map_err(|e| format!("init: {e}"))?;
        for th in 0..cfg.threads {
            acked.set(th, 0)?;
        }
    }
    let total = db.total(accounts)?;
    if total != accounts * START {
        return Err(format!(
            "{VERIFICATION_FAILED}: the accounts hold {total}, not {}",
            accounts * START
        ));
    }
    for th in 0..cfg.threads {
        let k = counter(th);
        let got = parse(db.get(&ro, &k)?, &k)?;
        let want = acked.get(th);
        if got < want || got > want + 1 {
            return Err(format!(
                "{VERIFICATION_FAILED}: thread {th} acknowledged {want} transfers, the database \
                 counts {got}"
            ));
        }
        settled += got - want;
        acked.set(th, got)?;
    }
    println!(
        "stress: verified {accounts} keys ({accounts} present; {settled} in-flight writes \
         settled; bank total {total}, {kind:?}) in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    if cfg.verify_only {
        return close(db);
    }
    let done = AtomicBool::new(false);
    let transfers = AtomicU64::new(0);
    let conflicts = AtomicU64::new(0);
    // Names of prepared transactions: unique across runs.
    let run_id = std::process::id();
    let result: Result<(), String> = std::thread::scope(|s| {
        let checker = s.spawn(|| -> Result<u64, String> {
            let mut checks = 0;
            while !done.load(Ordering::Acquire) {
                let total = db.total(accounts)?;
                if total != accounts * START {
                    let msg = format!(
                        "{VERIFICATION_FAILED}: a snapshot saw a total of {total}, not {}",
                        accounts * START
                    );
                    eprintln!("{msg}");
                    return Err(msg);
                }
                checks += 1;
            }
            Ok(checks)
        });
        let workers: Vec<_> = (0..cfg.threads)
            .map(|th| {
                let (db, acked, transfers, conflicts) = (&db, &acked, &transfers, &conflicts);
                let mut rng = Rng::seeded(cfg.seed ^ ((th as u64 + 1) << 32));
                let deadline = cfg.duration.map(|d| started + d);
                s.spawn(move || -> Result<(), String> {
                    let mut n = 0u64;
                    while n < cfg.ops_per_thread && deadline.is_none_or(|d| Instant::now() < d) {
                        n += 1;
                        let from = rng.below(accounts);
                        let to = (from + 1 + rng.below(accounts.max(2) - 1)) % accounts;
                        let amount = rng.below(50);
                        let wo = WriteOptions {
                            sync: cfg.sync_one_in > 0 && rng.one_in(cfg.sync_one_in),
                            ..Default::default()
                        };
                        let two_phase = match kind {
                            TxnKind::Pessimistic(TxnDBWritePolicy::WritePrepared) => !rng.one_in(4),
                            TxnKind::Pessimistic(_) => rng.one_in(2),
                            TxnKind::Optimistic => false,
                        };
                        let roll_back = rng.one_in(20);
                        let mut t = db.begin(wo);
                        let r = (|| -> strata::Result<Option<u64>> {
                            let ro = ReadOptions::default();
                            let a = t.get_for_update(&ro, &account(from), true)?;
                            let b = t.get_for_update(&ro, &account(to), true)?;
                            let c = t.get_for_update(&ro, &counter(th), true)?;
                            let num = |v: Option<Vec<u8>>| {
                                v.and_then(|v| String::from_utf8_lossy(&v).parse::<u64>().ok())
                                    .unwrap_or(0)
                            };
                            let (a, b, c) = (num(a), num(b), num(c));
                            let amount = amount.min(a);
                            if from != to {
                                t.put(&account(from), (a - amount).to_string().as_bytes())?;
                                t.put(&account(to), (b + amount).to_string().as_bytes())?;
                            }
                            t.put(&counter(th), (c + 1).to_string().as_bytes())?;
                            if two_phase {
                                t.set_name(&format!("bank-{run_id}-{th}-{n}"))?;
                                t.prepare()?;
                            }
                            if roll_back {
                                t.rollback()?;
                                return Ok(None);
                            }
                            t.commit()?;
                            Ok(Some(c + 1))
                        })();
                        match r {
                            Ok(Some(count)) => {
                                acked.set(th, count)?;
                                transfers.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(None) => {}
                            Err(Error::Busy(_) | Error::TimedOut(_) | Error::TryAgain(_)) => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                                let _ = t.rollback();
                            }
                            Err(e) => return Err(format!("transfer: {e}")),
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        let mut r = Ok(());
        for w in workers {
            let out = w.join().unwrap_or_else(|_| Err("a worker panicked".into()));
            if r.is_ok() {
                r = out;
            }
        }
        done.store(true, Ordering::Release);
        let checks = checker
            .join()
            .unwrap_or_else(|_| Err("the checker panicked".into()))?;
        r?;
        println!(
            "stress: {} transfers ({} conflicts, {checks} total checks)",
            transfers.load(Ordering::Relaxed),
            conflicts.load(Ordering::Relaxed)
        );
        Ok(())
    });
    result?;
    let total = db.total(accounts)?;
    if total != accounts * START {
        return Err(format!(
            "{VERIFICATION_FAILED}: the accounts hold {total} after the run"
        ));
    }
    close(db)?;
    println!("stress: done, verified");
    Ok(())
}

fn close(db: BankDb) -> Result<(), String> {
    let base = match db {
        BankDb::P(d) => d.into_db(),
        BankDb::O(d) => d.into_db(),
    };
    base.close().map_err(|e| format!("close: {e}"))
}
