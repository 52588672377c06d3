//! Model test of transactions (issue 15's correctness list): several
//! transactions interleaved on one thread, each with a snapshot taken at
//! its start, doing puts, deletes, reads, reads for update, scans, save
//! points and their rollbacks, commits (some after a two-phase prepare)
//! and rollbacks, beside plain writes to the database and flushes. The
//! model applies committed transactions in commit order and says exactly
//! which operation must fail:
//! - pessimistic (WriteCommitted and WritePrepared): a key another open
//!   transaction locked times out (lock timeout 0); a key this one has
//!   not locked that was written after its snapshot is `Busy`; anything
//!   else succeeds, and commits always do;
//! - optimistic (both validation policies): writes never fail; a commit
//!   is `Busy` exactly when a key it tracks (written or read for update,
//!   and not undone by a save point rollback) was written after its
//!   snapshot.
//!
//! Every read, scan and the final contents (also after a reopen) must be
//! the model's. `STRATA_TXN_MODEL_SEEDS` seeds per configuration
//! (default 150).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use strata::fs::mem::MemFileSystem;
use strata::options::{Options, ReadOptions, WriteOptions};
use strata::tools::util::rng::Rng;
use strata::utilities::transactions::{
    OccValidationPolicy, OptimisticTransactionDB, OptimisticTransactionOptions, Transaction,
    TransactionDB, TransactionDBOptions, TransactionOptions, TxnDBWritePolicy,
};
use strata::{DB, Error};

type Writes = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// A key's committed versions: (commit order, value or deletion).
type Versions = Vec<(u64, Option<Vec<u8>>)>;

/// Committed history: each key's versions, oldest first (version =
/// commit order).
#[derive(Default)]
struct Committed {
    hist: BTreeMap<Vec<u8>, Versions>,
    version: u64,
}

impl Committed {
    fn at(&self, k: &[u8], v: u64) -> Option<Vec<u8>> {
        self.hist
            .get(k)?
            .iter()
            .rev()
            .find(|(ver, _)| *ver <= v)
            .and_then(|(_, val)| val.clone())
    }

    fn last_version(&self, k: &[u8]) -> u64 {
        self.hist
            .get(k)
            .and_then(|h| h.last())
            .map_or(0, |(v, _)| *v)
    }

    fn commit(&mut self, writes: &Writes) {
        self.version += 1;
        for (k, v) in writes {
            self.hist
                .entry(k.clone())
                .or_default()
                .push((self.version, v.clone()));
        }
    }

    fn scan_at(&self, v: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
        self.hist
            .keys()
            .filter_map(|k| Some((k.clone(), self.at(k, v)?)))
            .collect()
    }
}

/// A transaction and what the model knows of it.
struct Open<'a> {
    t: Transaction<'a>,
    /// The committed version its snapshot sees.
    snap: u64,
    writes: Writes,
    /// Keys locked (pessimistic) or tracked for validation (optimistic).
    keys: BTreeSet<Vec<u8>>,
    saves: Vec<(Writes, BTreeSet<Vec<u8>>)>,
}

impl Open<'_> {
    fn read(&self, c: &Committed, k: &[u8]) -> Option<Vec<u8>> {
        match self.writes.get(k) {
            Some(v) => v.clone(),
            None => c.at(k, self.snap),
        }
    }

    fn ro(&self) -> ReadOptions {
        ReadOptions {
            snapshot: self.t.snapshot(),
            ..Default::default()
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Pessimistic(TxnDBWritePolicy),
    Optimistic(OccValidationPolicy),
}

fn options(fs: &MemFileSystem) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    o.cf.write_buffer_size = 2048;
    o
}

enum Db {
    P(Box<TransactionDB>),
    O(Box<OptimisticTransactionDB>),
}

impl Db {
    fn open(kind: Kind, fs: &MemFileSystem) -> Db {
        match kind {
            Kind::Pessimistic(write_policy) => Db::P(Box::new(
                TransactionDB::open(
                    options(fs),
                    TransactionDBOptions {
                        write_policy,
                        ..Default::default()
                    },
                    "/db",
                )
                .unwrap(),
            )),
            Kind::Optimistic(policy) => Db::O(Box::new(OptimisticTransactionDB::wrap(
                DB::open(options(fs), "/db").unwrap(),
                policy,
            ))),
        }
    }

    fn base(&self) -> &DB {
        match self {
            Db::P(d) => d.db(),
            Db::O(d) => d.db(),
        }
    }

    fn begin(&self) -> Transaction<'_> {
        match self {
            Db::P(d) => d.begin_transaction(
                WriteOptions::default(),
                TransactionOptions {
                    set_snapshot: true,
                    lock_timeout: 0,
                    ..Default::default()
                },
            ),
            Db::O(d) => d.begin_transaction(
                WriteOptions::default(),
                OptimisticTransactionOptions { set_snapshot: true },
            ),
        }
    }
}

const KEYS: u64 = 30;

fn key(i: u64) -> Vec<u8> {
    format!("k{i}").into_bytes()
}

use common::scan_all as scan_db;

/// What a run saw: lock timeouts, write conflicts, commit conflicts,
/// commits.
#[derive(Default, Debug)]
struct Seen {
    timeouts: u64,
    write_conflicts: u64,
    commit_conflicts: u64,
    commits: u64,
    /// Save point rollbacks that gave keys back.
    keys_given_back: u64,
}

fn run(kind: Kind, seed: u64, seen: &mut Seen) -> Result<(), String> {
    let fs = MemFileSystem::new();
    let mut rng = Rng::seeded(seed);
    let db = Db::open(kind, &fs);
    let pessimistic = matches!(kind, Kind::Pessimistic(_));
    let mut c = Committed::default();
    let mut open: Vec<Open<'_>> = Vec::new();
    let mut names = 0u64;
    for step in 0..400u64 {
        let at = |what: &str| format!("step {step}: {what}");
        if open.len() < 3 && (open.is_empty() || rng.one_in(6)) {
            let t = db.begin();
            open.push(Open {
                t,
                snap: c.version,
                writes: Writes::new(),
                keys: BTreeSet::new(),
                saves: Vec::new(),
            });
            continue;
        }
        let k = key(rng.below(KEYS));
        let v = format!("v{step}").into_bytes();
        match rng.below(20) {
            0 | 1 => {
                // A plain write, on a key no transaction locked.
                if pessimistic && open.iter().any(|o| o.keys.contains(&k)) {
                    continue;
                }
                let val = if rng.one_in(3) { None } else { Some(v) };
                match &val {
                    Some(v) => db.base().put(&WriteOptions::default(), &k, v),
                    None => db.base().delete(&WriteOptions::default(), &k),
                }
                .map_err(|e| at(&format!("plain write: {e}")))?;
                c.commit(&Writes::from([(k, val)]));
            }
            2 => {
                if rng.one_in(4) {
                    db.base().flush().map_err(|e| at(&format!("flush: {e}")))?;
                }
            }
            op => {
                let i = rng.below(open.len() as u64) as usize;
                // Locks of the other transactions.
                let locked_by_other = pessimistic
                    && open
                        .iter()
                        .enumerate()
                        .any(|(j, o)| j != i && o.keys.contains(&k));
                let o = &mut open[i];
                match op {
                    3..=8 => {
                        // put / delete / get_for_update: the same locking.
                        let val = if op == 8 { None } else { Some(v.clone()) };
                        let for_update = op == 7;
                        let got = if for_update {
                            let ro = o.ro();
                            o.t.get_for_update(&ro, &k, true).map(Some)
                        } else {
                            match &val {
                                Some(v) => o.t.put(&k, v),
                                None => o.t.delete(&k),
                            }
                            .map(|()| None)
                        };
                        let what = if for_update {
                            "get_for_update"
                        } else {
                            "write"
                        };
                        if pessimistic && locked_by_other {
                            match got {
                                Err(Error::TimedOut(_)) => seen.timeouts += 1,
                                r => return Err(at(&format!("{what} of a locked key: {r:?}"))),
                            }
                        } else if pessimistic && !o.keys.contains(&k) && c.last_version(&k) > o.snap
                        {
                            match got {
                                Err(Error::Busy(_)) => seen.write_conflicts += 1,
                                r => {
                                    return Err(at(&format!(
                                        "{what} of a key written after the snapshot: {r:?}"
                                    )));
                                }
                            }
                        } else {
                            let got = got.map_err(|e| at(&format!("{what}: {e}")))?;
                            if for_update {
                                let want = o.read(&c, &k);
                                if got.flatten() != want {
                                    return Err(at("get_for_update read the wrong value"));
                                }
                            } else {
                                o.writes.insert(k.clone(), val);
                            }
                            o.keys.insert(k);
                        }
                    }
                    9 | 10 => {
                        let ro = o.ro();
                        let got = o.t.get(&ro, &k).map_err(|e| at(&format!("get: {e}")))?;
                        if got != o.read(&c, &k) {
                            return Err(at(&format!(
                                "get {:?}: {got:?}, model {:?}",
                                String::from_utf8_lossy(&k),
                                o.read(&c, &k)
                            )));
                        }
                    }
                    11 => {
                        let mut want = c.scan_at(o.snap);
                        for (k, v) in &o.writes {
                            match v {
                                Some(v) => want.insert(k.clone(), v.clone()),
                                None => want.remove(k),
                            };
                        }
                        let ro = o.ro();
                        let mut it = o.t.iter(&ro).map_err(|e| at(&format!("iter: {e}")))?;
                        let mut got = BTreeMap::new();
                        it.seek_to_first();
                        while it.valid() {
                            got.insert(it.key().to_vec(), it.value().to_vec());
                            it.next();
                        }
                        it.status().map_err(|e| at(&format!("iter: {e}")))?;
                        drop(it);
                        if got != want {
                            return Err(at("the transaction's scan differs from the model"));
                        }
                    }
                    12 => {
                        o.t.set_save_point();
                        o.saves.push((o.writes.clone(), o.keys.clone()));
                    }
                    13 => {
                        let r = o.t.rollback_to_save_point();
                        match o.saves.pop() {
                            Some((w, keys)) => {
                                r.map_err(|e| at(&format!("rollback_to_save_point: {e}")))?;
                                seen.keys_given_back += u64::from(keys.len() < o.keys.len());
                                o.writes = w;
                                o.keys = keys;
                            }
                            None => {
                                if !matches!(r, Err(Error::NotFound(_))) {
                                    return Err(at(&format!(
                                        "rollback_to_save_point without one: {r:?}"
                                    )));
                                }
                            }
                        }
                    }
                    14 => {
                        let r = o.t.pop_save_point();
                        if o.saves.pop().is_some() != r.is_ok() {
                            return Err(at(&format!("pop_save_point: {r:?}")));
                        }
                    }
                    15..=17 => {
                        let mut o = open.swap_remove(i);
                        if pessimistic && rng.one_in(2) {
                            names += 1;
                            o.t.set_name(&format!("x{names}"))
                                .map_err(|e| at(&format!("set_name: {e}")))?;
                            o.t.prepare().map_err(|e| at(&format!("prepare: {e}")))?;
                        }
                        let conflict =
                            !pessimistic && o.keys.iter().any(|k| c.last_version(k) > o.snap);
                        match (o.t.commit(), conflict) {
                            (Ok(()), false) => {
                                seen.commits += 1;
                                c.commit(&o.writes);
                            }
                            (Err(Error::Busy(_)), true) => {
                                seen.commit_conflicts += 1;
                                let _ = o.t.rollback();
                            }
                            (r, _) => {
                                return Err(at(&format!(
                                    "commit: {r:?}, model says conflict={conflict}"
                                )));
                            }
                        }
                    }
                    _ => {
                        let mut o = open.swap_remove(i);
                        o.t.rollback().map_err(|e| at(&format!("rollback: {e}")))?;
                    }
                }
            }
        }
    }
    for mut o in open {
        o.t.rollback().map_err(|e| format!("final rollback: {e}"))?;
    }
    let want = c.scan_at(c.version);
    if scan_db(db.base()) != want {
        return Err("the database differs from the model".into());
    }
    let base = match db {
        Db::P(d) => d.into_db(),
        Db::O(d) => d.into_db(),
    };
    base.close().map_err(|e| format!("close: {e}"))?;
    let db = Db::open(kind, &fs);
    if scan_db(db.base()) != want {
        return Err("after a reopen the database differs from the model".into());
    }
    Ok(())
}

#[test]
fn transactions_match_a_commit_order_model() {
    let seeds: u64 = std::env::var("STRATA_TXN_MODEL_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let only: Option<u64> = std::env::var("STRATA_SEED")
        .ok()
        .and_then(|v| v.parse().ok());
    let mut failures = Vec::new();
    for kind in [
        Kind::Pessimistic(TxnDBWritePolicy::WriteCommitted),
        Kind::Pessimistic(TxnDBWritePolicy::WritePrepared),
        Kind::Optimistic(OccValidationPolicy::ValidateSerial),
        Kind::Optimistic(OccValidationPolicy::ValidateParallel),
    ] {
        let mut seen = Seen::default();
        for seed in only.map_or(1..=seeds, |s| s..=s) {
            if let Err(e) = run(kind, seed, &mut seen) {
                failures.push(format!("{kind:?} STRATA_SEED={seed}: {e}"));
            }
        }
        eprintln!("{kind:?}: {seen:?}");
        // The model must have had something to say.
        if only.is_none() {
            assert!(seen.commits > 0, "{kind:?}: {seen:?}");
            match kind {
                Kind::Pessimistic(_) => assert!(
                    seen.timeouts > 0 && seen.write_conflicts > 0,
                    "{kind:?}: {seen:?}"
                ),
                Kind::Optimistic(_) => assert!(seen.commit_conflicts > 0, "{kind:?}: {seen:?}"),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
}
