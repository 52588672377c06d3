//! WritePrepared transactions through the public API (seed 003's policy):
//! prepared writes sit in the memtables but stay invisible until commit,
//! snapshots see only what was committed when they were taken, rollback
//! after prepare restores each key, flushes and compactions keep what
//! snapshots and rollbacks need, prepared transactions survive a crash
//! (with the recovery flush), conflicts are found by commit order, the
//! commit table's eviction keeps long-lived snapshots right, and a
//! bank-transfer invariant holds with concurrent two-phase commits.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use strata::fs::mem::MemFileSystem;
use strata::merge_operator::StringAppendOperator;
use strata::options::{Options, ReadOptions, WriteOptions};
use strata::tools::util::rng::Rng;
use strata::utilities::transactions::{
    Transaction, TransactionDB, TransactionDBOptions, TransactionOptions, TxnDBWritePolicy,
};
use strata::{DB, Error};

fn opts(fs: &MemFileSystem) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    o.cf.merge_operator = Some(Arc::new(StringAppendOperator::default()));
    o.cf.write_buffer_size = 64 << 10;
    o
}

fn wp() -> TransactionDBOptions {
    TransactionDBOptions {
        write_policy: TxnDBWritePolicy::WritePrepared,
        ..Default::default()
    }
}

fn open(fs: &MemFileSystem) -> TransactionDB {
    TransactionDB::open(opts(fs), wp(), "/db").unwrap()
}

fn wo() -> WriteOptions {
    WriteOptions {
        sync: true,
        ..Default::default()
    }
}

fn ro() -> ReadOptions {
    ReadOptions::default()
}

fn at(seq: u64) -> ReadOptions {
    ReadOptions {
        snapshot: Some(seq),
        ..Default::default()
    }
}

fn get(db: &TransactionDB, r: &ReadOptions, k: &str) -> Option<String> {
    db.get(r, k.as_bytes())
        .unwrap()
        .map(|v| String::from_utf8(v).unwrap())
}

fn scan(db: &TransactionDB, r: &ReadOptions) -> Vec<(String, String)> {
    let mut it = db.iter(r).unwrap();
    let mut out = Vec::new();
    while it.valid() {
        out.push((
            String::from_utf8(it.key().to_vec()).unwrap(),
            String::from_utf8(it.value().to_vec()).unwrap(),
        ));
        it.next();
    }
    it.status().unwrap();
    out
}

fn named<'a>(db: &'a TransactionDB, name: &str) -> Transaction<'a> {
    let mut t = db.begin_transaction(wo(), TransactionOptions::default());
    t.set_name(name).unwrap();
    t
}

fn compact(db: &TransactionDB) {
    db.db().flush().unwrap();
    db.db().compact_range(None, None).unwrap();
}

#[test]
fn prepared_writes_stay_invisible_until_commit_and_snapshots_stay_immutable() {
    let fs = MemFileSystem::new();
    let db = open(&fs);
    assert_eq!(db.write_policy(), TxnDBWritePolicy::WritePrepared);
    db.put(&wo(), b"k", b"old").unwrap();
    let mut t = named(&db, "t");
    t.put(b"k", b"new").unwrap();
    t.put(b"n", b"1").unwrap();
    t.merge(b"m", b"x").unwrap();
    t.prepare().unwrap();
    // The writes are in the memtable: the base DB (as RocksDB's) sees
    // them; the TransactionDB does not.
    assert_eq!(db.db().get(&ro(), b"k").unwrap(), Some(b"new".to_vec()));
    assert_eq!(get(&db, &ro(), "k").as_deref(), Some("old"));
    assert_eq!(get(&db, &ro(), "n"), None);
    assert_eq!(scan(&db, &ro()), [("k".into(), "old".into())]);
    // A transaction reads committed data under its own writes.
    let mut other = db.begin_transaction(wo(), TransactionOptions::default());
    assert_eq!(other.get(&ro(), b"n").unwrap(), None);
    drop(other);
    let before = db.db().snapshot();
    t.commit().unwrap();
    let after = db.db().snapshot();
    assert_eq!(get(&db, &ro(), "k").as_deref(), Some("new"));
    assert_eq!(get(&db, &ro(), "m").as_deref(), Some("x"));
    // The snapshot taken between prepare and commit keeps its view, though
    // the prepared sequence numbers are below it.
    assert!(before.sequence() > 1);
    assert_eq!(
        get(&db, &at(before.sequence()), "k").as_deref(),
        Some("old")
    );
    assert_eq!(get(&db, &at(before.sequence()), "n"), None);
    assert_eq!(
        scan(&db, &at(before.sequence())),
        [("k".into(), "old".into())]
    );
    let all = vec![
        ("k".to_string(), "new".to_string()),
        ("m".into(), "x".into()),
        ("n".into(), "1".into()),
    ];
    assert_eq!(scan(&db, &at(after.sequence())), all);
    // The same after a flush and a full compaction.
    compact(&db);
    assert_eq!(
        get(&db, &at(before.sequence()), "k").as_deref(),
        Some("old")
    );
    assert_eq!(
        scan(&db, &at(before.sequence())),
        [("k".into(), "old".into())]
    );
    assert_eq!(scan(&db, &ro()), all);
    drop(before);
    drop(after);
    compact(&db);
    assert_eq!(scan(&db, &ro()), all);
}

#[test]
fn rollback_after_prepare_restores_every_key_through_flushes_and_compactions() {
    let fs = MemFileSystem::new();
    let db = open(&fs);
    db.put(&wo(), b"a", b"1").unwrap();
    db.merge(&wo(), b"c", b"x").unwrap();
    db.put(&wo(), b"d", b"4").unwrap();
    let mut t = named(&db, "r");
    t.put(b"a", b"2").unwrap();
    t.put(b"b", b"3").unwrap();
    t.merge(b"c", b"y").unwrap();
    t.delete(b"d").unwrap();
    t.put(b"a", b"22").unwrap();
    t.prepare().unwrap();
    let held = db.db().snapshot();
    // The prepared entries reach a table, and are compacted with the
    // values they would hide, before the decision.
    compact(&db);
    t.rollback().unwrap();
    let want = vec![
        ("a".to_string(), "1".to_string()),
        ("c".into(), "x".into()),
        ("d".into(), "4".into()),
    ];
    assert_eq!(scan(&db, &ro()), want);
    assert_eq!(scan(&db, &at(held.sequence())), want);
    drop(held);
    compact(&db);
    assert_eq!(scan(&db, &ro()), want);
    assert_eq!(get(&db, &ro(), "b"), None);
    // The keys are free again and the name can be reused.
    let mut u = named(&db, "r");
    u.put(b"b", b"5").unwrap();
    u.prepare().unwrap();
    u.commit().unwrap();
    assert_eq!(get(&db, &ro(), "b").as_deref(), Some("5"));
}

#[test]
fn commits_without_prepare_and_plain_writes_are_visible_at_once() {
    let fs = MemFileSystem::new();
    let db = open(&fs);
    let mut t = db.begin_transaction(wo(), TransactionOptions::default());
    t.put(b"x", b"1").unwrap();
    t.commit().unwrap();
    assert_eq!(get(&db, &ro(), "x").as_deref(), Some("1"));
    db.put(&wo(), b"y", b"2").unwrap();
    assert_eq!(get(&db, &ro(), "y").as_deref(), Some("2"));
    // An empty prepared transaction commits and rolls back.
    let mut e = named(&db, "empty");
    e.prepare().unwrap();
    e.commit().unwrap();
    let mut e = named(&db, "empty2");
    e.prepare().unwrap();
    e.rollback().unwrap();
    assert_eq!(scan(&db, &ro()).len(), 2);
}

#[test]
fn a_write_committed_after_the_snapshot_conflicts_though_prepared_before_it() {
    let fs = MemFileSystem::new();
    let db = open(&fs);
    db.put(&wo(), b"k", b"0").unwrap();
    let mut w = named(&db, "w");
    w.put(b"k", b"1").unwrap();
    w.prepare().unwrap();
    // The reader's snapshot is above the prepared sequence numbers but
    // below the commit.
    let mut r = db.begin_transaction(
        wo(),
        TransactionOptions {
            set_snapshot: true,
            lock_timeout: 2000,
            ..Default::default()
        },
    );
    w.commit().unwrap();
    drop(w);
    let err = r.get_for_update(&ro(), b"k", true).unwrap_err();
    assert!(matches!(err, Error::Busy(_)), "{err:?}");
    // A snapshot after the commit has no conflict.
    let mut r2 = db.begin_transaction(
        wo(),
        TransactionOptions {
            set_snapshot: true,
            ..Default::default()
        },
    );
    assert_eq!(
        r2.get_for_update(&ro(), b"k", true).unwrap(),
        Some(b"1".to_vec())
    );
    r2.put(b"k", b"2").unwrap();
    r2.commit().unwrap();
    assert_eq!(get(&db, &ro(), "k").as_deref(), Some("2"));
}

#[test]
fn prepared_transactions_survive_a_crash_and_the_recovery_flush() {
    let fs = MemFileSystem::new();
    {
        let db = open(&fs);
        db.put(&wo(), b"ka", b"a0").unwrap();
        db.put(&wo(), b"kb", b"b0").unwrap();
        let mut a = named(&db, "a");
        a.put(b"ka", b"a1").unwrap();
        a.put(b"na", b"new").unwrap();
        a.prepare().unwrap();
        let mut b = named(&db, "b");
        b.put(b"kb", b"b1").unwrap();
        b.merge(b"kb-m", b"m1").unwrap();
        b.prepare().unwrap();
        let mut c = named(&db, "c");
        c.put(b"kc", b"c1").unwrap();
        c.prepare().unwrap();
        c.commit().unwrap();
        let mut d = named(&db, "d");
        d.put(b"ka-d", b"d1").unwrap();
        d.prepare().unwrap();
        d.rollback().unwrap();
        drop((a, b, c, d));
        // Crash with everything (synced) in the WAL and one memtable: the
        // recovery flush sees each prepared value beside the value it
        // would hide.
    }
    fs.crash_drop_unsynced();
    // Neither a plain open nor a WriteCommitted one can recover them.
    assert!(matches!(
        DB::open(opts(&fs), "/db"),
        Err(Error::NotSupported(_))
    ));
    match TransactionDB::open(opts(&fs), TransactionDBOptions::default(), "/db") {
        Err(Error::NotSupported(m)) => assert!(m.contains("WritePrepared"), "{m}"),
        other => panic!("expected NotSupported, got {other:?}"),
    }
    let db = open(&fs);
    assert_eq!(get(&db, &ro(), "ka").as_deref(), Some("a0"));
    assert_eq!(get(&db, &ro(), "na"), None);
    assert_eq!(get(&db, &ro(), "kb").as_deref(), Some("b0"));
    assert_eq!(get(&db, &ro(), "kc").as_deref(), Some("c1"));
    assert_eq!(get(&db, &ro(), "ka-d"), None);
    let mut txns = db.get_all_prepared_transactions().unwrap();
    txns.sort_by(|x, y| x.name().cmp(&y.name()));
    let names: Vec<_> = txns.iter().map(|t| t.name().unwrap().to_string()).collect();
    assert_eq!(names, ["a", "b"]);
    let mut b = txns.pop().unwrap();
    let mut a = txns.pop().unwrap();
    compact(&db);
    a.rollback().unwrap();
    b.commit().unwrap();
    drop((a, b, txns));
    let want = vec![
        ("ka".to_string(), "a0".to_string()),
        ("kb".into(), "b1".into()),
        ("kb-m".into(), "m1".into()),
        ("kc".into(), "c1".into()),
    ];
    assert_eq!(scan(&db, &ro()), want);
    drop(db);
    fs.crash_drop_unsynced();
    let db = open(&fs);
    assert!(db.get_all_prepared_transactions().unwrap().is_empty());
    assert_eq!(scan(&db, &ro()), want);
    compact(&db);
    assert_eq!(scan(&db, &ro()), want);
}

#[test]
fn the_commit_table_evicts_without_changing_what_snapshots_see() {
    let fs = MemFileSystem::new();
    let db = open(&fs);
    let wo = WriteOptions::default();
    for k in 0..10 {
        db.put(&wo, format!("k{k}").as_bytes(), b"0").unwrap();
    }
    let mut held = Vec::new();
    // Over two eviction rounds' worth of commits (4,096 a round), with
    // snapshots taken between prepare and commit along the way.
    for i in 1..=9000u64 {
        let mut t = db.begin_transaction(wo, TransactionOptions::default());
        t.set_name(&format!("t{i}")).unwrap();
        t.put(format!("k{}", i % 10).as_bytes(), i.to_string().as_bytes())
            .unwrap();
        t.prepare().unwrap();
        if i % 1500 == 0 {
            held.push((i, db.db().snapshot()));
        }
        t.commit().unwrap();
        if i % 2500 == 0 {
            compact(&db);
        }
    }
    for (i, snap) in &held {
        // Commit i is after the snapshot; commit i - 1 before it.
        for k in 0..10u64 {
            let last = (1..*i).rev().find(|n| n % 10 == k).unwrap_or(0);
            assert_eq!(
                get(&db, &at(snap.sequence()), &format!("k{k}")),
                Some(last.to_string()),
                "snapshot before commit {i}, key k{k}"
            );
        }
    }
    for k in 0..10u64 {
        let last = (1..=9000u64).rev().find(|n| n % 10 == k).unwrap();
        assert_eq!(get(&db, &ro(), &format!("k{k}")), Some(last.to_string()));
    }
}

/// A compaction filter that holds the first compaction reaching key `a`
/// until the test lets it go.
struct Gate {
    armed: AtomicBool,
    entered: std::sync::mpsc::SyncSender<()>,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl strata::compaction_filter::CompactionFilter for Gate {
    fn name(&self) -> &str {
        "Gate"
    }
    fn filter(&self, _: usize, key: &[u8], _: &[u8]) -> strata::compaction_filter::Decision {
        if key == b"a" && self.armed.swap(false, Ordering::AcqRel) {
            self.entered.send(()).unwrap();
            self.release.lock().unwrap().recv().unwrap();
        }
        strata::compaction_filter::Decision::Keep
    }
}

#[test]
fn a_commit_during_a_compaction_keeps_what_a_snapshot_taken_meanwhile_sees() {
    // The compaction reads the snapshot list when it starts; a snapshot
    // taken while it runs, before a prepared transaction commits, must
    // still read the value the commit replaces, and must not see the
    // committed one (as it would if the bottommost output zeroed its
    // sequence number).
    let fs = MemFileSystem::new();
    let (entered, entered_rx) = std::sync::mpsc::sync_channel(1);
    let (release_tx, release) = std::sync::mpsc::sync_channel(1);
    let gate = Arc::new(Gate {
        armed: AtomicBool::new(false),
        entered,
        release: std::sync::Mutex::new(release),
    });
    let mut o = opts(&fs);
    o.cf.compaction_filter = Some(Arc::clone(&gate) as _);
    let db = TransactionDB::open(o, wp(), "/db").unwrap();
    db.put(&wo(), b"a", b"x").unwrap();
    db.put(&wo(), b"k", b"old").unwrap();
    db.db().flush().unwrap();
    let mut t = named(&db, "t");
    t.put(b"k", b"new").unwrap();
    t.put(b"m", b"new").unwrap();
    t.prepare().unwrap();
    db.db().flush().unwrap();
    gate.armed.store(true, Ordering::Release);
    std::thread::scope(|s| {
        let job = s.spawn(|| db.db().compact_range(None, None));
        entered_rx.recv().unwrap();
        let snap = db.db().snapshot();
        t.commit().unwrap();
        release_tx.send(()).unwrap();
        job.join().unwrap().unwrap();
        let before = at(snap.sequence());
        assert_eq!(get(&db, &before, "k").as_deref(), Some("old"));
        assert_eq!(get(&db, &before, "m"), None);
        assert_eq!(get(&db, &ro(), "k").as_deref(), Some("new"));
        // A compaction that knows the snapshot keeps both.
        compact(&db);
        assert_eq!(get(&db, &before, "k").as_deref(), Some("old"));
        assert_eq!(get(&db, &before, "m"), None);
        drop(snap);
        compact(&db);
        assert_eq!(get(&db, &ro(), "k").as_deref(), Some("new"));
        assert_eq!(get(&db, &ro(), "m").as_deref(), Some("new"));
    });
}

use common::bank::{ACCOUNTS, START, account, parse};

#[test]
fn bank_transfers_keep_the_total_with_two_phase_write_prepared_transactions() {
    let fs = MemFileSystem::new();
    let db = open(&fs);
    for i in 0..ACCOUNTS {
        db.put(&wo(), &account(i), START.to_string().as_bytes())
            .unwrap();
    }
    let total = |r: &ReadOptions| -> u64 {
        (0..ACCOUNTS)
            .map(|i| parse(db.get(r, &account(i)).unwrap()))
            .sum()
    };
    let done = AtomicBool::new(false);
    let options = TransactionOptions {
        deadlock_detect: true,
        lock_timeout: 2000,
        ..Default::default()
    };
    let wo = WriteOptions::default();
    std::thread::scope(|s| {
        let checker = s.spawn(|| {
            let mut checks = 0u64;
            while !done.load(Ordering::Acquire) {
                let snap = db.db().snapshot();
                assert_eq!(total(&at(snap.sequence())), ACCOUNTS as u64 * START);
                // An iterator at its own snapshot sums the same.
                let mut it = db.iter(&ro()).unwrap();
                let mut sum = 0;
                while it.valid() {
                    sum += String::from_utf8_lossy(it.value()).parse::<u64>().unwrap();
                    it.next();
                }
                assert_eq!(sum, ACCOUNTS as u64 * START, "check {checks}");
                checks += 1;
            }
            checks
        });
        let compactor = s.spawn(|| {
            while !done.load(Ordering::Acquire) {
                compact(&db);
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let workers: Vec<_> = (0..4u64)
            .map(|w| {
                let (db, options) = (&db, options.clone());
                s.spawn(move || {
                    let mut rng = Rng(w * 7919 + 17);
                    let mut n = 0;
                    while n < 300 {
                        let from = rng.below(ACCOUNTS as u64) as usize;
                        let to = (from + 1 + rng.below(ACCOUNTS as u64 - 1) as usize) % ACCOUNTS;
                        let amount = rng.below(50);
                        let mut t = db.begin_transaction(wo, options.clone());
                        t.set_name(&format!("w{w}-{n}")).unwrap();
                        let r = (|| -> strata::Result<()> {
                            let a = parse(t.get_for_update(&ro(), &account(from), true)?);
                            let b = parse(t.get_for_update(&ro(), &account(to), true)?);
                            let amount = amount.min(a);
                            t.put(&account(from), (a - amount).to_string().as_bytes())?;
                            t.put(&account(to), (b + amount).to_string().as_bytes())?;
                            t.prepare()?;
                            // Some prepared transfers are rolled back.
                            if rng.below(5) == 0 {
                                t.rollback()
                            } else {
                                t.commit()
                            }
                        })();
                        match r {
                            Ok(()) => n += 1,
                            Err(e) if e.is_deadlock() || matches!(e, Error::TimedOut(_)) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        compactor.join().unwrap();
        assert!(checker.join().unwrap() > 0);
    });
    assert_eq!(total(&ro()), ACCOUNTS as u64 * START);
    drop(db);
    let db = open(&fs);
    assert_eq!(
        (0..ACCOUNTS)
            .map(|i| parse(db.get(&ro(), &account(i)).unwrap()))
            .sum::<u64>(),
        ACCOUNTS as u64 * START
    );
}

#[test]
fn rocksdb_ldb_names_the_write_prepared_marker() {
    let Some(_) = common::rocksdb::ldb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let o = Options {
            create_if_missing: true,
            ..Options::default()
        };
        let db = TransactionDB::open(o, wp(), &path).unwrap();
        let mut t = db.begin_transaction(wo(), TransactionOptions::default());
        t.set_name("wp-commit").unwrap();
        t.put(b"kc", b"vc").unwrap();
        t.prepare().unwrap();
        t.commit().unwrap();
        let mut r = db.begin_transaction(wo(), TransactionOptions::default());
        r.set_name("wp-rollback").unwrap();
        r.put(b"kr", b"vr").unwrap();
        r.prepare().unwrap();
        r.rollback().unwrap();
        drop((t, r));
    }
    // RocksDB's dump_wal prints with a WriteCommitted handler, which stops
    // at a WritePrepared section by name (as it does on RocksDB's own
    // WritePrepared WALs): our marker is the one RocksDB knows.
    let (_, out, err) = common::bank::ldb_dump_wal(&path).unwrap();
    let text = format!("{out}{err}");
    assert!(
        text.contains("WritePrepared/WriteUnprepared txn tag"),
        "ldb dump_wal on a WritePrepared WAL: {text}"
    );
}

/// Two-phase commit across repeated power losses, under both write
/// policies: every round reopens after a crash that keeps only synced
/// bytes, checks that exactly the undecided prepared transactions come
/// back (each with its writes), decides some of them, and makes new
/// transfers that commit (with and without prepare), roll back, or stay
/// prepared, with flushes and compactions between. Every acknowledged
/// decision survives, every balance matches the model, the total never
/// changes.
#[test]
fn two_phase_transfers_survive_repeated_power_losses() {
    use std::collections::BTreeMap;
    const N: usize = 12;
    let policies = [
        TxnDBWritePolicy::WriteCommitted,
        TxnDBWritePolicy::WritePrepared,
    ];
    for (seed, policy) in (0..8u64).map(|s| (s, policies[s as usize % 2])) {
        let fs = MemFileSystem::new();
        let mut rng = Rng(seed);
        let topts = TransactionDBOptions {
            write_policy: policy,
            ..Default::default()
        };
        let mut model = [START; N];
        // Undecided prepared transactions: name -> (account, new balance).
        let mut undecided: BTreeMap<String, Vec<(usize, u64)>> = BTreeMap::new();
        let mut next = 0u64;
        {
            let db = TransactionDB::open(opts(&fs), topts.clone(), "/db").unwrap();
            for (i, b) in model.iter().enumerate() {
                db.put(&wo(), &account(i), b.to_string().as_bytes())
                    .unwrap();
            }
        }
        for round in 0..10 {
            let ctx = format!("{policy:?} seed {seed} round {round}");
            let db = TransactionDB::open(opts(&fs), topts.clone(), "/db").unwrap();
            let mut alive = db.get_all_prepared_transactions().unwrap();
            let names: Vec<String> = alive.iter().map(|t| t.name().unwrap().into()).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(
                sorted,
                undecided.keys().cloned().collect::<Vec<_>>(),
                "{ctx}"
            );
            // Decide about half of the recovered ones.
            let mut kept = Vec::new();
            for mut t in alive.drain(..) {
                let name = t.name().unwrap().to_string();
                match rng.below(3) {
                    0 => {
                        t.commit().unwrap();
                        for (a, v) in undecided.remove(&name).unwrap() {
                            model[a] = v;
                        }
                    }
                    1 => {
                        t.rollback().unwrap();
                        undecided.remove(&name);
                    }
                    _ => kept.push(t),
                }
            }
            for _ in 0..25 {
                let from = rng.below(N as u64) as usize;
                let to = (from + 1 + rng.below(N as u64 - 1) as usize) % N;
                let mut t = db.begin_transaction(
                    wo(),
                    TransactionOptions {
                        lock_timeout: 0,
                        ..Default::default()
                    },
                );
                let name = format!("x{next}");
                next += 1;
                t.set_name(&name).unwrap();
                let got = (|| -> strata::Result<(u64, u64)> {
                    Ok((
                        parse(t.get_for_update(&ro(), &account(from), true)?),
                        parse(t.get_for_update(&ro(), &account(to), true)?),
                    ))
                })();
                let (a, b) = match got {
                    Ok(v) => v,
                    // A prepared transaction holds the key.
                    Err(Error::TimedOut(_)) => continue,
                    Err(e) => panic!("{ctx}: {e}"),
                };
                assert_eq!((a, b), (model[from], model[to]), "{ctx}: reads");
                let amount = rng.below(a + 1);
                let writes = vec![(from, a - amount), (to, b + amount)];
                for (acct, v) in &writes {
                    t.put(&account(*acct), v.to_string().as_bytes()).unwrap();
                }
                match rng.below(5) {
                    0 => t.commit().unwrap(),
                    1 | 2 => {
                        t.prepare().unwrap();
                        t.commit().unwrap();
                    }
                    3 => {
                        t.prepare().unwrap();
                        t.rollback().unwrap();
                        continue;
                    }
                    _ => {
                        t.prepare().unwrap();
                        undecided.insert(name, writes);
                        kept.push(t);
                        continue;
                    }
                }
                for (acct, v) in writes {
                    model[acct] = v;
                }
                if rng.one_in(8) {
                    compact(&db);
                }
            }
            for (i, want) in model.iter().enumerate() {
                assert_eq!(
                    parse(db.get(&ro(), &account(i)).unwrap()),
                    *want,
                    "{ctx}: account {i}"
                );
            }
            assert_eq!(model.iter().sum::<u64>(), N as u64 * START, "{ctx}");
            // Power loss with the database open and transactions prepared.
            fs.crash_drop_unsynced();
            drop((kept, alive));
            drop(db);
        }
    }
}

/// Concurrent two-phase transfers share write groups (a group's WAL
/// record then holds several prepared sections and markers): after a
/// power loss, exactly the transactions left prepared come back, the
/// committed balances keep the total, and committing the recovered ones
/// keeps it too. Both write policies.
#[test]
fn concurrent_two_phase_writes_recover_from_shared_wal_records() {
    use std::sync::Mutex;
    for policy in [
        TxnDBWritePolicy::WriteCommitted,
        TxnDBWritePolicy::WritePrepared,
    ] {
        let fs = MemFileSystem::new();
        let topts = TransactionDBOptions {
            write_policy: policy,
            ..Default::default()
        };
        let db = TransactionDB::open(opts(&fs), topts.clone(), "/db").unwrap();
        for i in 0..ACCOUNTS {
            db.put(&wo(), &account(i), START.to_string().as_bytes())
                .unwrap();
        }
        let left: Mutex<Vec<String>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            let mut kept_all = Vec::new();
            let handles: Vec<_> = (0..4u64)
                .map(|w| {
                    let (db, left) = (&db, &left);
                    s.spawn(move || {
                        let mut rng = Rng(w * 31 + 7);
                        let mut kept = Vec::new();
                        for n in 0..150 {
                            let from = rng.below(ACCOUNTS as u64) as usize;
                            let to =
                                (from + 1 + rng.below(ACCOUNTS as u64 - 1) as usize) % ACCOUNTS;
                            let mut t = db.begin_transaction(
                                wo(),
                                TransactionOptions {
                                    lock_timeout: 20,
                                    deadlock_detect: true,
                                    ..Default::default()
                                },
                            );
                            let name = format!("c{w}-{n}");
                            t.set_name(&name).unwrap();
                            let got = (|| -> strata::Result<(u64, u64)> {
                                Ok((
                                    parse(t.get_for_update(&ro(), &account(from), true)?),
                                    parse(t.get_for_update(&ro(), &account(to), true)?),
                                ))
                            })();
                            // A deadlock or a lock held by a transaction
                            // left prepared.
                            let Ok((a, b)) = got else { continue };
                            let amount = rng.below(a + 1);
                            t.put(&account(from), (a - amount).to_string().as_bytes())
                                .unwrap();
                            t.put(&account(to), (b + amount).to_string().as_bytes())
                                .unwrap();
                            t.prepare().unwrap();
                            // The last few stay prepared (holding their
                            // keys' locks until the crash).
                            match rng.below(6) {
                                0 if n >= 145 => {
                                    left.lock().unwrap().push(name);
                                    kept.push(t);
                                }
                                1 => t.rollback().unwrap(),
                                _ => t.commit().unwrap(),
                            }
                        }
                        kept
                    })
                })
                .collect();
            for h in handles {
                kept_all.push(h.join().unwrap());
            }
            fs.crash_drop_unsynced();
            drop(kept_all);
        });
        drop(db);
        let db = TransactionDB::open(opts(&fs), topts, "/db").unwrap();
        let total = || -> u64 {
            (0..ACCOUNTS)
                .map(|i| parse(db.get(&ro(), &account(i)).unwrap()))
                .sum()
        };
        assert_eq!(total(), ACCOUNTS as u64 * START, "{policy:?}");
        let mut recovered = db.get_all_prepared_transactions().unwrap();
        let mut names: Vec<String> = recovered
            .iter()
            .map(|t| t.name().unwrap().to_string())
            .collect();
        names.sort();
        let mut want = left.into_inner().unwrap();
        want.sort();
        assert_eq!(names, want, "{policy:?}");
        for t in &mut recovered {
            t.commit().unwrap();
        }
        drop(recovered);
        assert_eq!(total(), ACCOUNTS as u64 * START, "{policy:?}");
    }
}

#[test]
fn recovery_flushes_full_memtables_and_keeps_what_undecided_prepares_hide() {
    // WALs far larger than the write buffer recovery opens with: replay
    // writes a level-0 table each time a memtable fills (as RocksDB's
    // recovery does), and a transaction still undecided there keeps the
    // value it would replace, through those flushes, the final one, a
    // compaction and its rollback; one committed later in the WALs and
    // one rolled back later in the WALs end as they should.
    let fs = MemFileSystem::new();
    let filler = |db: &TransactionDB, tag: &str| {
        for i in 0..400 {
            db.put(&wo(), format!("f-{tag}-{i:04}").as_bytes(), &[b'x'; 200])
                .unwrap();
        }
    };
    {
        let mut o = opts(&fs);
        o.cf.write_buffer_size = 8 << 20;
        let db = TransactionDB::open(o, wp(), "/db").unwrap();
        db.put(&wo(), b"ku", b"old-u").unwrap();
        db.put(&wo(), b"kc", b"old-c").unwrap();
        db.put(&wo(), b"kr", b"old-r").unwrap();
        // The old values and the prepared ones share a memtable that
        // fills while all three transactions are undecided.
        let mut u = named(&db, "u");
        u.put(b"ku", b"new-u").unwrap();
        u.prepare().unwrap();
        let mut c = named(&db, "c");
        c.put(b"kc", b"new-c").unwrap();
        c.prepare().unwrap();
        let mut r = named(&db, "r");
        r.put(b"kr", b"new-r").unwrap();
        r.prepare().unwrap();
        filler(&db, "a");
        filler(&db, "b");
        c.commit().unwrap();
        filler(&db, "c");
        r.rollback().unwrap();
        filler(&db, "d");
        drop((u, c, r));
    }
    fs.crash_drop_unsynced();
    let l0 = |db: &TransactionDB| -> usize {
        db.db()
            .property("rocksdb.num-files-at-level0")
            .unwrap()
            .parse()
            .unwrap()
    };
    let mut o = opts(&fs);
    o.cf.write_buffer_size = 64 << 10;
    o.cf.disable_auto_compactions = true;
    let db = TransactionDB::open(o, wp(), "/db").unwrap();
    assert!(l0(&db) >= 4, "replay wrote {} tables", l0(&db));
    let check = |db: &TransactionDB, u: &str| {
        assert_eq!(get(db, &ro(), "ku").as_deref(), Some(u));
        assert_eq!(get(db, &ro(), "kc").as_deref(), Some("new-c"));
        assert_eq!(get(db, &ro(), "kr").as_deref(), Some("old-r"));
        assert_eq!(
            get(db, &ro(), "f-d-0399").as_deref(),
            Some(&"x".repeat(200)[..])
        );
    };
    check(&db, "old-u");
    compact(&db);
    check(&db, "old-u");
    let mut txns = db.get_all_prepared_transactions().unwrap();
    assert_eq!(txns.len(), 1);
    txns[0].rollback().unwrap();
    drop(txns);
    check(&db, "old-u");
    compact(&db);
    check(&db, "old-u");
}
