//! Transactions through the public API: WriteBatchWithIndex (lookups and
//! a model test of its iterator over a database), pessimistic
//! TransactionDB (locks, conflicts, timeouts, deadlocks, save points,
//! misuse) and OptimisticTransactionDB (validation, both policies), and a
//! bank-transfer invariant under concurrent transactions.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use strata::fs::mem::MemFileSystem;
use strata::merge_operator::StringAppendOperator;
use strata::options::{Options, ReadOptions, WriteOptions};
use strata::utilities::transactions::{
    BatchLookup, OccValidationPolicy, OptimisticTransactionDB, OptimisticTransactionOptions,
    TransactionDB, TransactionDBOptions, TransactionOptions, TransactionState, WriteBatchWithIndex,
};
use strata::{DB, Error};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts(fs: &MemFileSystem) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    o.cf.merge_operator = Some(Arc::new(StringAppendOperator::default()));
    o.cf.write_buffer_size = 4096;
    o
}

fn wo() -> WriteOptions {
    WriteOptions::default()
}

fn ro() -> ReadOptions {
    ReadOptions::default()
}

fn tdb(fs: &MemFileSystem) -> TransactionDB {
    TransactionDB::open(opts(fs), TransactionDBOptions::default(), "/db").unwrap()
}

fn quick() -> TransactionOptions {
    TransactionOptions {
        lock_timeout: 50,
        ..Default::default()
    }
}

// ---------------------------------------------------------------- WBWI

#[test]
fn write_batch_with_index_answers_lookups() {
    let merge = StringAppendOperator::default();
    let mut b = WriteBatchWithIndex::default();
    b.put(b"a", b"1");
    b.merge(b"a", b"2");
    b.delete(b"b");
    b.merge(b"c", b"x");
    b.merge(b"c", b"y");
    assert_eq!(
        b.get_from_batch(0, b"a", Some(&merge)).unwrap(),
        Some(b"1,2".to_vec())
    );
    assert_eq!(
        b.lookup(0, b"b", Some(&merge)).unwrap(),
        BatchLookup::Deleted
    );
    assert_eq!(
        b.lookup(0, b"z", Some(&merge)).unwrap(),
        BatchLookup::NotFound
    );
    assert_eq!(
        b.lookup(0, b"c", Some(&merge)).unwrap(),
        BatchLookup::MergeInProgress(vec![b"x".to_vec(), b"y".to_vec()])
    );
    assert!(matches!(
        b.get_from_batch(0, b"c", Some(&merge)),
        Err(Error::MergeInProgress(_))
    ));
    // Merges on a base in the batch need the operator.
    assert!(b.get_from_batch(0, b"a", None).is_err());
    // Range deletions cannot be indexed.
    assert!(matches!(
        b.delete_range(b"a", b"b"),
        Err(Error::NotSupported(_))
    ));
    // Save points undo writes and the index with them.
    b.set_save_point();
    b.put(b"b", b"back");
    b.put(b"d", b"4");
    assert_eq!(b.count(), 7);
    b.rollback_to_save_point().unwrap();
    assert_eq!(b.count(), 5);
    assert_eq!(
        b.lookup(0, b"b", Some(&merge)).unwrap(),
        BatchLookup::Deleted
    );
    assert_eq!(
        b.lookup(0, b"d", Some(&merge)).unwrap(),
        BatchLookup::NotFound
    );
    assert!(matches!(
        b.rollback_to_save_point(),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(b.pop_save_point(), Err(Error::NotFound(_))));
    // The batch itself is a normal write batch.
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    db.put(&wo(), b"c", b"base").unwrap();
    db.write(&wo(), b.write_batch().clone()).unwrap();
    assert_eq!(db.get(&ro(), b"a").unwrap(), Some(b"1,2".to_vec()));
    assert_eq!(db.get(&ro(), b"c").unwrap(), Some(b"base,x,y".to_vec()));
}

#[test]
fn overwrite_key_keeps_only_the_latest_entry_per_key() {
    let mut b = WriteBatchWithIndex::new(strata::tools::util::comparator::bytewise(), true);
    b.put(b"k", b"1");
    b.put(b"k", b"2");
    b.merge(b"k", b"3");
    b.put(b"j", b"x");
    let e = b.entries_cf(0).unwrap();
    let keys: Vec<(&[u8], &[u8])> = e.iter().map(|e| (e.key, e.value)).collect();
    assert_eq!(
        keys,
        vec![(&b"j"[..], &b"x"[..]), (b"k", b"2"), (b"k", b"3")]
    );
    assert_eq!(b.count(), 4, "the batch keeps every record");
    let mut b = WriteBatchWithIndex::default();
    b.put(b"k", b"1");
    b.put(b"k", b"2");
    assert_eq!(b.entries_cf(0).unwrap().len(), 2);
}

/// A small deterministic generator.
use strata::tools::util::rng::Rng;

/// A key of the transaction tests' 40-key space.
fn rand_key(r: &mut Rng) -> Vec<u8> {
    format!("k{:02}", r.below(40)).into_bytes()
}

fn apply_merge(m: &mut Model, k: &[u8], v: &[u8]) {
    let new = match m.get(k) {
        Some(old) => [old.as_slice(), b",", v].concat(),
        None => v.to_vec(),
    };
    m.insert(k.to_vec(), new);
}

#[test]
fn transaction_iterators_match_a_model_in_both_directions_with_bounds() {
    for seed in 1..=60u64 {
        let mut rng = Rng::seeded(seed);
        let fs = MemFileSystem::new();
        let db = OptimisticTransactionDB::open(opts(&fs), "/db").unwrap();
        let mut model = Model::new();
        for _ in 0..rng.below(60) {
            let k = rand_key(&mut rng);
            match rng.below(4) {
                0 => {
                    db.db().delete(&wo(), &k).unwrap();
                    model.remove(&k);
                }
                1 => {
                    db.db().merge(&wo(), &k, b"m").unwrap();
                    apply_merge(&mut model, &k, b"m");
                }
                _ => {
                    let v = format!("db{}", rng.below(100)).into_bytes();
                    db.db().put(&wo(), &k, &v).unwrap();
                    model.insert(k, v);
                }
            }
            if rng.below(20) == 0 {
                db.db().flush().unwrap();
            }
        }
        let mut txn = db.begin_transaction(wo(), OptimisticTransactionOptions::default());
        for _ in 0..rng.below(40) {
            let k = rand_key(&mut rng);
            match rng.below(5) {
                0 => {
                    txn.delete(&k).unwrap();
                    model.remove(&k);
                }
                1 => {
                    let v = format!("t{}", rng.below(100)).into_bytes();
                    txn.merge(&k, &v).unwrap();
                    apply_merge(&mut model, &k, &v);
                }
                2 if rng.below(3) == 0 => txn.set_save_point(),
                _ => {
                    let v = format!("t{}", rng.below(100)).into_bytes();
                    txn.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
        }
        let ctx = format!("seed {seed}");
        // Point reads.
        for i in 0..40 {
            let k = format!("k{i:02}").into_bytes();
            assert_eq!(
                txn.get(&ro(), &k).unwrap(),
                model.get(&k).cloned(),
                "{ctx} get"
            );
        }
        // Full scans both ways.
        let (lo, hi) = (rand_key(&mut rng), rand_key(&mut rng));
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        for bounded in [false, true] {
            let r = ReadOptions {
                iterate_lower_bound: bounded.then(|| lo.clone()),
                iterate_upper_bound: bounded.then(|| hi.clone()),
                ..Default::default()
            };
            let want: Vec<(Vec<u8>, Vec<u8>)> = model
                .iter()
                .filter(|(k, _)| !bounded || (**k >= lo && **k < hi))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut it = txn.iter(&r).unwrap();
            it.seek_to_first();
            let mut got = Vec::new();
            while it.valid() {
                got.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
            }
            it.status().unwrap();
            assert_eq!(got, want, "{ctx} forward bounded={bounded}");
            it.seek_to_last();
            let mut back = Vec::new();
            while it.valid() {
                back.push((it.key().to_vec(), it.value().to_vec()));
                it.prev();
            }
            back.reverse();
            assert_eq!(back, want, "{ctx} backward bounded={bounded}");
            // Seeks, then a step each way (direction changes).
            for _ in 0..10 {
                let t = rand_key(&mut rng);
                it.seek(&t);
                let at = want.iter().position(|(k, _)| *k >= t);
                assert_eq!(
                    it.valid().then(|| it.key().to_vec()),
                    at.map(|i| want[i].0.clone()),
                    "{ctx} seek {t:?}"
                );
                if let Some(i) = at {
                    it.prev();
                    assert_eq!(
                        it.valid().then(|| it.key().to_vec()),
                        i.checked_sub(1).map(|j| want[j].0.clone()),
                        "{ctx} prev after seek"
                    );
                }
                it.seek_for_prev(&t);
                let at = want.iter().rposition(|(k, _)| *k <= t);
                assert_eq!(
                    it.valid().then(|| it.key().to_vec()),
                    at.map(|i| want[i].0.clone()),
                    "{ctx} seek_for_prev {t:?}"
                );
                if let Some(i) = at {
                    it.next();
                    assert_eq!(
                        it.valid().then(|| (it.key().to_vec(), it.value().to_vec())),
                        want.get(i + 1).cloned(),
                        "{ctx} next after seek_for_prev"
                    );
                }
            }
        }
        txn.commit().unwrap();
        let mut it = db.db().iter(&ro()).unwrap();
        let mut after = Model::new();
        while it.valid() {
            after.insert(it.key().to_vec(), it.value().to_vec());
            it.next();
        }
        assert_eq!(after, model, "{ctx} after commit");
    }
}

// --------------------------------------------------------- pessimistic

#[test]
fn a_transaction_reads_its_own_writes_and_commits_atomically() {
    let fs = MemFileSystem::new();
    let db = tdb(&fs);
    db.put(&wo(), b"a", b"0").unwrap();
    let mut t = db.begin_transaction(wo(), TransactionOptions::default());
    t.put(b"a", b"1").unwrap();
    t.put(b"b", b"2").unwrap();
    t.merge(b"a", b"m").unwrap();
    assert_eq!(t.get(&ro(), b"a").unwrap(), Some(b"1,m".to_vec()));
    assert_eq!(
        db.get(&ro(), b"a").unwrap(),
        Some(b"0".to_vec()),
        "not yet visible"
    );
    t.commit().unwrap();
    assert_eq!(t.state(), TransactionState::Committed);
    assert_eq!(db.get(&ro(), b"a").unwrap(), Some(b"1,m".to_vec()));
    assert_eq!(db.get(&ro(), b"b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.num_locks(), 0, "commit releases every lock");
    // Misuse after the end: clear errors.
    assert!(matches!(t.put(b"c", b"3"), Err(Error::InvalidArgument(_))));
    assert!(matches!(t.commit(), Err(Error::InvalidArgument(_))));
    // As RocksDB (checked against librocksdb 7.8.3 by the C API's test
    // program): rolling back an unprepared transaction drops its writes
    // and locks, and the transaction stays usable.
    let mut r = db.begin_transaction(wo(), TransactionOptions::default());
    r.put(b"c", b"3").unwrap();
    r.rollback().unwrap();
    assert_eq!(db.num_locks(), 0, "rollback releases the locks");
    r.put(b"d", b"4").unwrap();
    r.commit().unwrap();
    assert_eq!(db.get(&ro(), b"c").unwrap(), None);
    assert_eq!(db.get(&ro(), b"d").unwrap(), Some(b"4".to_vec()));
    assert!(matches!(r.rollback(), Err(Error::InvalidArgument(_))));
    // Two-phase commit: a name first, unique among live transactions.
    let mut p = db.begin_transaction(wo(), TransactionOptions::default());
    assert!(
        matches!(p.prepare(), Err(Error::InvalidArgument(_))),
        "unnamed"
    );
    p.set_name("x").unwrap();
    assert!(matches!(p.set_name("y"), Err(Error::InvalidArgument(_))));
    let mut q = db.begin_transaction(wo(), TransactionOptions::default());
    assert!(
        matches!(q.set_name("x"), Err(Error::InvalidArgument(_))),
        "taken"
    );
    p.put(b"p", b"1").unwrap();
    p.prepare().unwrap();
    assert_eq!(p.state(), TransactionState::Prepared);
    assert!(matches!(p.put(b"p", b"2"), Err(Error::InvalidArgument(_))));
    assert!(matches!(p.prepare(), Err(Error::InvalidArgument(_))));
    assert_eq!(
        db.get(&ro(), b"p").unwrap(),
        None,
        "prepared is not visible"
    );
    p.commit().unwrap();
    assert_eq!(db.get(&ro(), b"p").unwrap(), Some(b"1".to_vec()));
    q.set_name("x").unwrap();
}

#[test]
fn locks_make_writers_wait_and_time_out() {
    let fs = MemFileSystem::new();
    let db = tdb(&fs);
    let mut a = db.begin_transaction(wo(), quick());
    a.put(b"k", b"a").unwrap();
    let mut b = db.begin_transaction(wo(), quick());
    let e = b.put(b"k", b"b").unwrap_err();
    assert!(matches!(e, Error::TimedOut(_)), "{e}");
    // get_for_update takes the same lock; a shared lock admits readers.
    let e = b.get_for_update(&ro(), b"k", true).unwrap_err();
    assert!(matches!(e, Error::TimedOut(_)), "{e}");
    let mut c = db.begin_transaction(wo(), quick());
    c.get_for_update(&ro(), b"s", false).unwrap();
    b.get_for_update(&ro(), b"s", false).unwrap();
    assert!(matches!(a.put(b"s", b"x"), Err(Error::TimedOut(_))));
    // A write outside transactions waits for the lock too.
    assert!(matches!(
        db.put(&wo(), b"k", b"plain"),
        Err(Error::TimedOut(_))
    ));
    a.commit().unwrap();
    db.put(&wo(), b"k", b"plain").unwrap();
    b.put(b"k", b"b").unwrap();
    b.commit().unwrap();
    assert_eq!(db.get(&ro(), b"k").unwrap(), Some(b"b".to_vec()));
    drop(c);
    assert_eq!(
        db.num_locks(),
        0,
        "dropping a transaction releases its locks"
    );
    // A waiter gets the lock when the holder finishes.
    let mut a = db.begin_transaction(wo(), quick());
    a.put(b"w", b"a").unwrap();
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            let mut b = db.begin_transaction(
                wo(),
                TransactionOptions {
                    lock_timeout: 5000,
                    ..Default::default()
                },
            );
            b.put(b"w", b"b").unwrap();
            b.commit().unwrap();
        });
        std::thread::sleep(Duration::from_millis(30));
        a.commit().unwrap();
        h.join().unwrap();
    });
    assert_eq!(db.get(&ro(), b"w").unwrap(), Some(b"b".to_vec()));
}

#[test]
fn a_write_after_the_snapshot_is_a_conflict() {
    let fs = MemFileSystem::new();
    let db = tdb(&fs);
    db.put(&wo(), b"k", b"0").unwrap();
    let mut t = db.begin_transaction(
        wo(),
        TransactionOptions {
            set_snapshot: true,
            ..quick()
        },
    );
    db.put(&wo(), b"k", b"1").unwrap();
    db.put(&wo(), b"other", b"1").unwrap();
    db.db().flush().unwrap();
    let e = t.put(b"k", b"2").unwrap_err();
    assert!(matches!(e, Error::Busy(_)) && !e.is_deadlock(), "{e}");
    let e = t.get_for_update(&ro(), b"k", true).unwrap_err();
    assert!(matches!(e, Error::Busy(_)), "{e}");
    assert_eq!(
        db.num_locks(),
        0,
        "a failed validation releases the new lock"
    );
    t.put(b"fresh", b"ok").unwrap();
    t.commit().unwrap();
    // A range deletion after the snapshot conflicts too.
    let mut t = db.begin_transaction(wo(), TransactionOptions::default());
    t.set_snapshot();
    db.db().delete_range(&wo(), b"a", b"z").unwrap();
    assert!(matches!(t.put(b"fresh", b"x"), Err(Error::Busy(_))));
    // Without a snapshot only locks order writers: no conflict.
    let mut u = db.begin_transaction(wo(), TransactionOptions::default());
    db.put(&wo(), b"k", b"3").unwrap();
    u.put(b"k", b"4").unwrap();
    u.commit().unwrap();
    // set_snapshot_on_next_operation takes it at the next write.
    let mut v = db.begin_transaction(wo(), TransactionOptions::default());
    v.set_snapshot_on_next_operation();
    assert_eq!(v.snapshot(), None);
    db.put(&wo(), b"k", b"5").unwrap();
    v.put(b"k", b"6").unwrap();
    assert!(v.snapshot().is_some());
    v.commit().unwrap();
    assert_eq!(db.get(&ro(), b"k").unwrap(), Some(b"6".to_vec()));
}

#[test]
fn save_points_undo_writes_and_release_new_locks() {
    let fs = MemFileSystem::new();
    let db = tdb(&fs);
    let mut t = db.begin_transaction(wo(), quick());
    t.put(b"a", b"1").unwrap();
    t.set_save_point();
    t.put(b"a", b"2").unwrap();
    t.put(b"b", b"2").unwrap();
    assert_eq!(t.get(&ro(), b"a").unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.num_locks(), 2);
    t.rollback_to_save_point().unwrap();
    assert_eq!(t.get(&ro(), b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(t.get(&ro(), b"b").unwrap(), None);
    assert_eq!(db.num_locks(), 1, "b was locked after the save point");
    // Another transaction may now take b but not a.
    let mut o = db.begin_transaction(wo(), quick());
    o.put(b"b", b"o").unwrap();
    assert!(matches!(o.put(b"a", b"o"), Err(Error::TimedOut(_))));
    o.commit().unwrap();
    // Nested save points: pop keeps the writes.
    t.set_save_point();
    t.put(b"c", b"3").unwrap();
    t.set_save_point();
    t.put(b"d", b"4").unwrap();
    t.pop_save_point().unwrap();
    t.rollback_to_save_point().unwrap();
    assert_eq!(t.get(&ro(), b"c").unwrap(), None);
    assert_eq!(t.get(&ro(), b"d").unwrap(), None);
    assert!(matches!(
        t.rollback_to_save_point(),
        Err(Error::NotFound(_))
    ));
    t.commit().unwrap();
    assert_eq!(db.get(&ro(), b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(&ro(), b"b").unwrap(), Some(b"o".to_vec()));
    assert_eq!(db.get(&ro(), b"c").unwrap(), None);
}

#[test]
fn deadlocks_are_detected_and_one_waiter_fails() {
    for n in [2usize, 3] {
        let fs = MemFileSystem::new();
        let db = tdb(&fs);
        let options = TransactionOptions {
            deadlock_detect: true,
            lock_timeout: 10_000,
            ..Default::default()
        };
        let busy = AtomicU64::new(0);
        let barrier = std::sync::Barrier::new(n);
        std::thread::scope(|s| {
            for i in 0..n {
                let (db, busy, barrier, options) = (&db, &busy, &barrier, options.clone());
                s.spawn(move || {
                    let mut t = db.begin_transaction(wo(), options);
                    t.put(format!("k{i}").as_bytes(), b"x").unwrap();
                    barrier.wait();
                    // Each wants the next one's key: a cycle of n.
                    match t.put(format!("k{}", (i + 1) % n).as_bytes(), b"y") {
                        Ok(()) => t.commit().unwrap(),
                        Err(e) => {
                            assert!(e.is_deadlock(), "{e}");
                            busy.fetch_add(1, Ordering::SeqCst);
                            t.rollback().unwrap();
                        }
                    }
                });
            }
        });
        assert_eq!(
            busy.load(Ordering::SeqCst),
            1,
            "exactly one of {n} gives up"
        );
        let info = db.deadlock_info_buffer();
        assert_eq!(info.len(), 1);
        assert_eq!(info[0].path.len(), n, "{info:?}");
        assert!(!info[0].limit_exceeded);
        assert_eq!(db.num_locks(), 0);
    }
}

#[test]
fn an_expired_transaction_loses_its_locks_and_cannot_commit() {
    let fs = MemFileSystem::new();
    let db = tdb(&fs);
    let mut old = db.begin_transaction(
        wo(),
        TransactionOptions {
            expiration: 20,
            ..Default::default()
        },
    );
    old.put(b"k", b"old").unwrap();
    std::thread::sleep(Duration::from_millis(40));
    let mut new = db.begin_transaction(wo(), quick());
    new.put(b"k", b"new").unwrap();
    new.commit().unwrap();
    assert!(matches!(old.commit(), Err(Error::Expired(_))));
    assert_eq!(db.get(&ro(), b"k").unwrap(), Some(b"new".to_vec()));
}

#[test]
fn max_num_locks_and_batch_size_limits_are_errors() {
    let fs = MemFileSystem::new();
    let db = TransactionDB::open(
        opts(&fs),
        TransactionDBOptions {
            max_num_locks: 2,
            ..Default::default()
        },
        "/db",
    )
    .unwrap();
    let mut t = db.begin_transaction(
        wo(),
        TransactionOptions {
            max_write_batch_size: 100,
            ..Default::default()
        },
    );
    t.put(b"a", b"1").unwrap();
    t.put(b"b", b"1").unwrap();
    assert!(matches!(t.put(b"c", b"1"), Err(Error::Busy(_))));
    assert!(matches!(t.put(b"a", &[0u8; 200]), Err(Error::Aborted(_))));
    t.commit().unwrap();
    assert!(matches!(
        TransactionDB::open(
            opts(&MemFileSystem::new()),
            TransactionDBOptions {
                // WritePrepared is supported (tests/write_prepared.rs).
                write_policy: strata::utilities::transactions::TxnDBWritePolicy::WriteUnprepared,
                ..Default::default()
            },
            "/db2",
        ),
        Err(Error::NotSupported(_))
    ));
}

#[test]
fn get_for_update_prevents_lost_updates_and_plain_reads_allow_write_skew() {
    let fs = MemFileSystem::new();
    let db = tdb(&fs);
    db.put(&wo(), b"x", b"0").unwrap();
    db.put(&wo(), b"y", b"0").unwrap();
    // Lost update: two read-modify-writes of x; with get_for_update the
    // second waits and then fails its lock (or sees the first's result).
    let mut a = db.begin_transaction(wo(), quick());
    let mut b = db.begin_transaction(wo(), quick());
    assert_eq!(
        a.get_for_update(&ro(), b"x", true).unwrap(),
        Some(b"0".to_vec())
    );
    assert!(b.get_for_update(&ro(), b"x", true).is_err());
    a.put(b"x", b"1").unwrap();
    a.commit().unwrap();
    assert_eq!(
        b.get_for_update(&ro(), b"x", true).unwrap(),
        Some(b"1".to_vec())
    );
    b.put(b"x", b"2").unwrap();
    b.commit().unwrap();
    assert_eq!(db.get(&ro(), b"x").unwrap(), Some(b"2".to_vec()));
    // Write skew: each reads both (plainly) and writes one. Both commit,
    // as in RocksDB (snapshot isolation); use get_for_update to prevent.
    let mut a = db.begin_transaction(wo(), quick());
    let mut b = db.begin_transaction(wo(), quick());
    let _ = (a.get(&ro(), b"x").unwrap(), a.get(&ro(), b"y").unwrap());
    let _ = (b.get(&ro(), b"x").unwrap(), b.get(&ro(), b"y").unwrap());
    a.put(b"x", b"a").unwrap();
    b.put(b"y", b"b").unwrap();
    a.commit().unwrap();
    b.commit().unwrap();
}

// ---------------------------------------------------------- optimistic

#[test]
fn optimistic_commits_fail_when_a_tracked_key_was_written() {
    for policy in [
        OccValidationPolicy::ValidateSerial,
        OccValidationPolicy::ValidateParallel,
    ] {
        let fs = MemFileSystem::new();
        let db = OptimisticTransactionDB::wrap(DB::open(opts(&fs), "/db").unwrap(), policy);
        db.db().put(&wo(), b"k", b"0").unwrap();
        // Written after the transaction wrote it: conflict at commit.
        let mut t = db.begin_transaction(wo(), OptimisticTransactionOptions::default());
        t.put(b"k", b"t").unwrap();
        db.db().put(&wo(), b"k", b"other").unwrap();
        let e = t.commit().unwrap_err();
        assert!(matches!(e, Error::Busy(_)), "{policy:?}: {e}");
        t.rollback().unwrap();
        assert_eq!(db.db().get(&ro(), b"k").unwrap(), Some(b"other".to_vec()));
        // Two transactions on one key: the first commit wins.
        let mut a = db.begin_transaction(wo(), OptimisticTransactionOptions::default());
        let mut b = db.begin_transaction(wo(), OptimisticTransactionOptions::default());
        a.get_for_update(&ro(), b"k", true).unwrap();
        b.get_for_update(&ro(), b"k", true).unwrap();
        a.put(b"k", b"a").unwrap();
        b.put(b"k", b"b").unwrap();
        a.commit().unwrap();
        assert!(matches!(b.commit(), Err(Error::Busy(_))));
        // Untouched keys and plain reads do not conflict.
        let mut c = db.begin_transaction(wo(), OptimisticTransactionOptions::default());
        c.get(&ro(), b"k").unwrap();
        c.put(b"z", b"c").unwrap();
        db.db().put(&wo(), b"k", b"later").unwrap();
        c.commit().unwrap();
        // With a snapshot, a write between snapshot and first touch counts.
        let mut d = db.begin_transaction(wo(), OptimisticTransactionOptions { set_snapshot: true });
        db.db().put(&wo(), b"z", b"x").unwrap();
        d.put(b"z", b"d").unwrap();
        assert!(matches!(d.commit(), Err(Error::Busy(_))));
        // A read-only transaction validates its reads for update too.
        let mut e = db.begin_transaction(wo(), OptimisticTransactionOptions::default());
        e.get_for_update(&ro(), b"z", true).unwrap();
        db.db().put(&wo(), b"z", b"y").unwrap();
        assert!(matches!(e.commit(), Err(Error::Busy(_))));
        // Validation sees tables as well as memtables.
        let mut f = db.begin_transaction(wo(), OptimisticTransactionOptions::default());
        f.put(b"q", b"f").unwrap();
        db.db().put(&wo(), b"q", b"db").unwrap();
        db.db().flush().unwrap();
        assert!(matches!(f.commit(), Err(Error::Busy(_))));
    }
}

/// Validation after a compaction to the bottom, which gives Puts every
/// snapshot sees sequence 0: the transaction's tracked sequence keeps the
/// later write's number, so the conflict is still seen.
#[test]
fn optimistic_conflicts_survive_a_bottommost_compaction() {
    for policy in [
        OccValidationPolicy::ValidateSerial,
        OccValidationPolicy::ValidateParallel,
    ] {
        let fs = MemFileSystem::new();
        let db = OptimisticTransactionDB::wrap(DB::open(opts(&fs), "/db").unwrap(), policy);
        db.db().put(&wo(), b"q", b"db1").unwrap();
        db.db().put(&wo(), b"r", b"db1").unwrap();
        db.db().flush().unwrap();
        db.db().compact_range(None, None).unwrap();
        let mut g = db.begin_transaction(wo(), OptimisticTransactionOptions::default());
        g.get_for_update(&ro(), b"q", true).unwrap();
        db.db().put(&wo(), b"q", b"db2").unwrap();
        db.db().flush().unwrap();
        db.db().compact_range(None, None).unwrap();
        let files = db.db().live_files_metadata();
        // One file: the second flush's merged into the first's.
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(
            files[0].level > 0 && files[0].smallest_seqno == 0,
            "{files:?}"
        );
        g.put(b"q", b"g").unwrap();
        assert!(matches!(g.commit(), Err(Error::Busy(_))), "{policy:?}");
        assert_eq!(db.db().get(&ro(), b"q").unwrap(), Some(b"db2".to_vec()));
        // Once the transaction is gone, the Put goes to 0.
        drop(g);
        let force = strata::db::CompactRangeOptions {
            bottommost_level_compaction: strata::db::BottommostLevelCompaction::Force,
            ..Default::default()
        };
        db.db()
            .compact_range_cf_opt(&db.db().default_cf(), None, None, &force)
            .unwrap();
        let files = db.db().live_files_metadata();
        assert!(files.iter().all(|f| f.largest_seqno == 0), "{files:?}");
    }
}

/// A full compaction gives the surviving Puts sequence number 0 when no
/// snapshot needs their numbers (RocksDB's zeroing), and keeps the numbers
/// a live snapshot needs; reads are the same either way.
#[test]
fn bottommost_compaction_zeroes_sequence_numbers_no_snapshot_needs() {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    for i in 0..200u32 {
        db.put(&wo(), format!("k{i:03}").as_bytes(), b"v1").unwrap();
    }
    let snap = db.snapshot();
    for i in 0..100u32 {
        db.put(&wo(), format!("k{i:03}").as_bytes(), b"v2").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let files = db.live_files_metadata();
    assert!(files.iter().all(|f| f.level > 0), "{files:?}");
    // The snapshot's versions keep their numbers (the newer v2 is above
    // the snapshot); the untouched keys' v1 go to 0.
    assert!(files.iter().any(|f| f.smallest_seqno == 0), "{files:?}");
    let mut ro_snap = ro();
    ro_snap.snapshot = Some(snap.sequence());
    assert_eq!(db.get(&ro_snap, b"k050").unwrap(), Some(b"v1".to_vec()));
    assert_eq!(db.get(&ro(), b"k050").unwrap(), Some(b"v2".to_vec()));
    drop(snap);
    let force = strata::db::CompactRangeOptions {
        bottommost_level_compaction: strata::db::BottommostLevelCompaction::Force,
        ..Default::default()
    };
    db.compact_range_cf_opt(&db.default_cf(), None, None, &force)
        .unwrap();
    let files = db.live_files_metadata();
    assert!(files.iter().all(|f| f.largest_seqno == 0), "{files:?}");
    for i in 0..200u32 {
        let want: &[u8] = if i < 100 { b"v2" } else { b"v1" };
        let got = db.get(&ro(), format!("k{i:03}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(want));
    }
}

// --------------------------------------------------------- bank invariant

use common::bank::{ACCOUNTS, START, account, parse};

/// Threads move money between accounts in transactions while a checker
/// reads every account at one snapshot: the total never changes. `run`
/// makes one transfer attempt (false: conflict, retried) and `total` reads
/// the sum.
fn bank<R, T>(threads: usize, transfers: u64, run: R, total: T)
where
    R: Fn(u64, usize, usize, u64) -> bool + Sync,
    T: Fn() -> u64 + Sync,
{
    let done = AtomicBool::new(false);
    let retries = AtomicU64::new(0);
    std::thread::scope(|s| {
        let checker = s.spawn(|| {
            let mut checks = 0;
            while !done.load(Ordering::Acquire) {
                assert_eq!(total(), ACCOUNTS as u64 * START, "check {checks}");
                checks += 1;
            }
            checks
        });
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (run, retries) = (&run, &retries);
                s.spawn(move || {
                    let mut rng = Rng(t as u64 * 7919 + 17);
                    for n in 0..transfers {
                        let from = rng.below(ACCOUNTS as u64) as usize;
                        let to = (from + 1 + rng.below(ACCOUNTS as u64 - 1) as usize) % ACCOUNTS;
                        let amount = rng.below(50);
                        while !run(n, from, to, amount) {
                            retries.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        assert!(checker.join().unwrap() > 0);
    });
    assert_eq!(total(), ACCOUNTS as u64 * START);
}

#[test]
fn bank_transfers_keep_the_total_with_pessimistic_transactions() {
    let fs = MemFileSystem::new();
    let db = tdb(&fs);
    for i in 0..ACCOUNTS {
        db.put(&wo(), &account(i), START.to_string().as_bytes())
            .unwrap();
    }
    let options = TransactionOptions {
        deadlock_detect: true,
        lock_timeout: 2000,
        ..Default::default()
    };
    bank(
        4,
        300,
        |_, from, to, amount| {
            let mut t = db.begin_transaction(wo(), options.clone());
            let r = (|| -> strata::Result<()> {
                let a = parse(t.get_for_update(&ro(), &account(from), true)?);
                let b = parse(t.get_for_update(&ro(), &account(to), true)?);
                let amount = amount.min(a);
                t.put(&account(from), (a - amount).to_string().as_bytes())?;
                t.put(&account(to), (b + amount).to_string().as_bytes())?;
                t.commit()
            })();
            match r {
                Ok(()) => true,
                Err(e) if e.is_deadlock() || matches!(e, Error::TimedOut(_)) => false,
                Err(e) => panic!("{e}"),
            }
        },
        || {
            let snap = db.db().snapshot();
            let r = ReadOptions {
                snapshot: Some(snap.sequence()),
                ..Default::default()
            };
            (0..ACCOUNTS)
                .map(|i| parse(db.get(&r, &account(i)).unwrap()))
                .sum()
        },
    );
}

#[test]
fn bank_transfers_keep_the_total_with_optimistic_transactions() {
    // Serial validation in each write mode (pipelined and unordered
    // writes publish inserts after the WAL stage: validation must still
    // see every earlier write), and parallel validation.
    for (policy, mode) in [
        (OccValidationPolicy::ValidateSerial, 0),
        (OccValidationPolicy::ValidateSerial, 1),
        (OccValidationPolicy::ValidateSerial, 2),
        (OccValidationPolicy::ValidateParallel, 0),
    ] {
        let fs = MemFileSystem::new();
        let mut o = opts(&fs);
        o.enable_pipelined_write = mode == 1;
        o.unordered_write = mode == 2;
        let db = OptimisticTransactionDB::wrap(DB::open(o, "/db").unwrap(), policy);
        for i in 0..ACCOUNTS {
            db.db()
                .put(&wo(), &account(i), START.to_string().as_bytes())
                .unwrap();
        }
        bank(
            4,
            300,
            |_, from, to, amount| {
                let mut t = db.begin_transaction(wo(), OptimisticTransactionOptions::default());
                let a = parse(t.get_for_update(&ro(), &account(from), true).unwrap());
                let b = parse(t.get_for_update(&ro(), &account(to), true).unwrap());
                let amount = amount.min(a);
                t.put(&account(from), (a - amount).to_string().as_bytes())
                    .unwrap();
                t.put(&account(to), (b + amount).to_string().as_bytes())
                    .unwrap();
                match t.commit() {
                    Ok(()) => true,
                    Err(Error::Busy(_)) => false,
                    Err(e) => panic!("{e}"),
                }
            },
            || {
                // The checker reads in a transaction at its snapshot.
                let mut t =
                    db.begin_transaction(wo(), OptimisticTransactionOptions { set_snapshot: true });
                let r = ReadOptions {
                    snapshot: t.snapshot(),
                    ..Default::default()
                };
                (0..ACCOUNTS)
                    .map(|i| parse(t.get(&r, &account(i)).unwrap()))
                    .sum()
            },
        );
    }
}

// ------------------------------------------------------ two-phase commit

fn wo_sync() -> WriteOptions {
    WriteOptions {
        sync: true,
        ..Default::default()
    }
}

/// Writes enough to switch memtables and WALs, then flushes.
fn churn(db: &TransactionDB, tag: &str) {
    for i in 0..200 {
        db.put(
            &wo(),
            format!("churn-{tag}-{i:03}").as_bytes(),
            &[b'x'; 100],
        )
        .unwrap();
    }
    db.db().flush().unwrap();
}

fn wal_count(fs: &MemFileSystem) -> usize {
    use strata::fs::FileSystem;
    fs.children(std::path::Path::new("/db"))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".log"))
        .count()
}

#[test]
fn prepared_transactions_survive_a_crash_and_are_committed_or_rolled_back() {
    let fs = MemFileSystem::new();
    {
        let db = tdb(&fs);
        db.put(&wo_sync(), b"base", b"0").unwrap();
        let mut a = db.begin_transaction(wo_sync(), TransactionOptions::default());
        a.set_name("a").unwrap();
        a.put(b"ka", b"1").unwrap();
        a.merge(b"base", b"a").unwrap();
        a.prepare().unwrap();
        let mut b = db.begin_transaction(wo_sync(), TransactionOptions::default());
        b.set_name("b").unwrap();
        b.put(b"kb", b"2").unwrap();
        b.prepare().unwrap();
        let mut c = db.begin_transaction(wo_sync(), TransactionOptions::default());
        c.set_name("c").unwrap();
        c.put(b"kc", b"3").unwrap();
        c.prepare().unwrap();
        c.rollback().unwrap();
        let mut d = db.begin_transaction(wo_sync(), TransactionOptions::default());
        d.set_name("d").unwrap();
        d.put(b"kd", b"4").unwrap();
        d.prepare().unwrap();
        d.commit().unwrap();
        // The WAL holding a and b's sections outlives switches and flushes.
        drop((a, b, c, d));
        churn(&db, "1");
        churn(&db, "2");
        assert!(wal_count(&fs) >= 2, "the prepared sections' WAL is kept");
        // Crash: a and b prepared, c rolled back, d committed.
    }
    fs.crash_drop_unsynced();
    let db = tdb(&fs);
    assert_eq!(db.get(&ro(), b"kd").unwrap(), Some(b"4".to_vec()));
    assert_eq!(db.get(&ro(), b"ka").unwrap(), None);
    assert_eq!(db.get(&ro(), b"kc").unwrap(), None);
    let mut txns = db.get_all_prepared_transactions().unwrap();
    txns.sort_by(|x, y| x.name().cmp(&y.name()));
    let names: Vec<_> = txns.iter().map(|t| t.name().unwrap().to_string()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(
        db.get_all_prepared_transactions().unwrap().is_empty(),
        "handed out once"
    );
    // Their keys are locked.
    let mut other = db.begin_transaction(wo(), quick());
    assert!(matches!(other.put(b"ka", b"x"), Err(Error::TimedOut(_))));
    drop(other);
    let mut b = txns.pop().unwrap();
    let mut a = txns.pop().unwrap();
    drop(txns);
    assert_eq!(
        a.get(&ro(), b"ka").unwrap(),
        Some(b"1".to_vec()),
        "writes rebuilt"
    );
    a.commit().unwrap();
    b.rollback().unwrap();
    assert_eq!(db.get(&ro(), b"ka").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(&ro(), b"base").unwrap(), Some(b"0,a".to_vec()));
    assert_eq!(db.get(&ro(), b"kb").unwrap(), None);
    // The decisions are durable: after another crash nothing is prepared
    // and the commit's data is rebuilt from the WAL (not yet flushed).
    drop((a, b));
    drop(db);
    fs.crash_drop_unsynced();
    let db = tdb(&fs);
    assert!(db.get_all_prepared_transactions().unwrap().is_empty());
    assert_eq!(db.get(&ro(), b"ka").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(&ro(), b"base").unwrap(), Some(b"0,a".to_vec()));
    assert_eq!(db.get(&ro(), b"kb").unwrap(), None);
    // With nothing outstanding, old WALs go.
    churn(&db, "3");
    assert_eq!(wal_count(&fs), 1);
}

#[test]
fn committed_data_is_rebuilt_from_a_prepared_section_in_an_older_wal() {
    // Prepared in one WAL, committed in a later one, crash before the
    // commit's memtable is flushed: the older WAL must still be there.
    let fs = MemFileSystem::new();
    {
        let db = tdb(&fs);
        let mut t = db.begin_transaction(wo_sync(), TransactionOptions::default());
        t.set_name("late").unwrap();
        t.put(b"late", b"v").unwrap();
        t.merge(b"late-m", b"once").unwrap();
        t.prepare().unwrap();
        churn(&db, "1");
        t.commit().unwrap();
        drop(t);
        // More writes switch the WAL but leave the commit's memtable.
        for i in 0..20 {
            db.put(&wo_sync(), format!("mem-{i}").as_bytes(), &[b'y'; 10])
                .unwrap();
        }
        assert!(wal_count(&fs) >= 2);
    }
    fs.crash_drop_unsynced();
    let db = tdb(&fs);
    assert_eq!(db.get(&ro(), b"late").unwrap(), Some(b"v".to_vec()));
    assert_eq!(
        db.get(&ro(), b"late-m").unwrap(),
        Some(b"once".to_vec()),
        "applied once"
    );
    assert!(db.get_all_prepared_transactions().unwrap().is_empty());
    drop(db);
    let db = tdb(&fs);
    assert_eq!(db.get(&ro(), b"late-m").unwrap(), Some(b"once".to_vec()));
}

#[test]
fn a_plain_open_refuses_a_wal_with_prepared_sections() {
    let fs = MemFileSystem::new();
    {
        let db = tdb(&fs);
        let mut t = db.begin_transaction(wo_sync(), TransactionOptions::default());
        t.set_name("t").unwrap();
        t.put(b"k", b"v").unwrap();
        t.prepare().unwrap();
    }
    match DB::open(opts(&fs), "/db") {
        Err(Error::NotSupported(m)) => assert!(m.contains("allow_2pc"), "{m}"),
        other => panic!("expected NotSupported, got {other:?}"),
    }
    {
        let db = tdb(&fs);
        let mut t = db.get_all_prepared_transactions().unwrap();
        t[0].rollback().unwrap();
        drop(t);
        churn(&db, "x");
    }
    // Rolled back and its WAL gone: a plain open works again.
    DB::open(opts(&fs), "/db").unwrap();
    // Optimistic transactions have no two-phase commit.
    let odb = OptimisticTransactionDB::open(opts(&MemFileSystem::new()), "/o").unwrap();
    let mut o = odb.begin_transaction(wo(), OptimisticTransactionOptions::default());
    assert!(matches!(o.set_name("n"), Err(Error::NotSupported(_))));
}

#[test]
fn rocksdb_ldb_prints_our_two_phase_markers_and_refuses_a_plain_open() {
    let Some(_) = common::rocksdb::ldb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let opts = Options {
            create_if_missing: true,
            ..Options::default()
        };
        let db = TransactionDB::open(opts, TransactionDBOptions::default(), &path).unwrap();
        let mut t = db.begin_transaction(wo_sync(), TransactionOptions::default());
        t.set_name("xid-commit").unwrap();
        t.put(b"kc", b"vc").unwrap();
        t.prepare().unwrap();
        t.commit().unwrap();
        let mut r = db.begin_transaction(wo_sync(), TransactionOptions::default());
        r.set_name("xid-rollback").unwrap();
        r.put(b"kr", b"vr").unwrap();
        r.prepare().unwrap();
        r.rollback().unwrap();
        let mut p = db.begin_transaction(wo_sync(), TransactionOptions::default());
        p.set_name("xid-open").unwrap();
        p.put(b"kp", b"vp").unwrap();
        p.prepare().unwrap();
        drop((t, r, p));
    }
    let (ok, text, err) = common::bank::ldb_dump_wal(&path).unwrap();
    assert!(ok, "ldb dump_wal: {text}{err}");
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02X}")).collect::<String>();
    for want in [
        "BEGIN_PREPARE".to_string(),
        format!("END_PREPARE(0x{})", hex("xid-commit")),
        format!("COMMIT(0x{})", hex("xid-commit")),
        format!("END_PREPARE(0x{})", hex("xid-rollback")),
        format!("ROLLBACK(0x{})", hex("xid-rollback")),
        format!("END_PREPARE(0x{})", hex("xid-open")),
    ] {
        assert!(text.contains(&want), "ldb dump_wal lacks {want:?}:\n{text}");
    }
    // ldb opens with our OPTIONS file, so with allow_2pc: it reads the
    // committed data and keeps the undecided section (and its WAL).
    let ldb_get = |extra: &[&str]| {
        let out = common::rocksdb::ldb()
            .unwrap()
            .arg(format!("--db={}", path.display()))
            .args(extra)
            .arg("get")
            .arg("kc")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (ok, text) = ldb_get(&[]);
    assert!(
        ok && text.trim() == "vc",
        "ldb get on a 2PC database: {text}"
    );
    // Without allow_2pc RocksDB refuses the prepared section (Debian's
    // assertion-enabled ldb aborts on that NotSupported), as Strata's plain
    // DB::open does.
    let (ok, text) = ldb_get(&["--try_load_options=false"]);
    assert!(
        !ok,
        "ldb without allow_2pc opened a WAL with a prepared section: {text}"
    );
    let err = DB::open(Options::default(), &path).unwrap_err();
    assert!(matches!(err, Error::NotSupported(_)), "{err}");
    // The transaction database recovers it.
    let db =
        TransactionDB::open(Options::default(), TransactionDBOptions::default(), &path).unwrap();
    let mut txns = db.get_all_prepared_transactions().unwrap();
    assert_eq!(txns.len(), 1);
    assert_eq!(txns[0].name(), Some("xid-open"));
    txns[0].rollback().unwrap();
    assert_eq!(db.get(&ro(), b"kc").unwrap(), Some(b"vc".to_vec()));
    assert_eq!(db.get(&ro(), b"kr").unwrap(), None);
    assert_eq!(db.get(&ro(), b"kp").unwrap(), None);
}
