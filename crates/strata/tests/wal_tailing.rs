//! WAL tailing (`DB::get_updates_since`) and the WAL archive
//! (`wal_ttl_seconds`, `wal_size_limit_mb`): every batch comes back in
//! order with its sequence number and contents (log data included), from
//! the alive and archived WALs, across WAL switches and reopens; the
//! iterator tails new writes, says `TryAgain` when a newer WAL appeared,
//! and the archive is purged by age and by size. A follower that applies
//! the batches ends equal to its leader under concurrent writers and a
//! leader restart.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use strata::Error;
use strata::WriteBatch;
use strata::db::{DB, WalFileType};
use strata::fs::FileSystem;
use strata::fs::mem::MemFileSystem;
use strata::options::{Options, ReadOptions, WriteOptions};

fn mem_opts(fs: &MemFileSystem, ttl: u64) -> Options {
    Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        wal_ttl_seconds: ttl,
        ..Options::default()
    }
}

fn put(db: &DB, k: &str, v: &str) {
    db.put(&WriteOptions::default(), k.as_bytes(), v.as_bytes())
        .unwrap();
}

/// Every `(sequence, batch bytes without the header)` from `seq` on.
fn updates(db: &DB, seq: u64) -> Vec<(u64, Vec<u8>)> {
    let mut it = db.get_updates_since(seq).unwrap();
    let mut out = Vec::new();
    while it.valid() {
        let b = it.get_batch();
        assert_eq!(b.sequence, b.write_batch.sequence());
        out.push((b.sequence, b.write_batch.data()[12..].to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn body(b: &WriteBatch) -> Vec<u8> {
    b.data()[12..].to_vec()
}

#[test]
fn every_batch_comes_back_in_order_with_its_sequence() {
    let fs = MemFileSystem::new();
    let mut o = mem_opts(&fs, 0);
    o.cf.merge_operator = Some(Arc::new(
        strata::merge_operator::StringAppendOperator::default(),
    ));
    let db = DB::open(o, "/db").unwrap();
    let mut written: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut seq = 1;
    for i in 0..20u32 {
        let mut b = WriteBatch::new();
        match i % 4 {
            0 => b.put(format!("k{i}").as_bytes(), b"v"),
            1 => {
                b.put(b"a", b"1");
                b.delete(b"b");
                b.merge(b"c", b"x");
            }
            2 => b.delete_range(b"d", b"e"),
            _ => {
                b.put_log_data(format!("blob{i}").as_bytes());
                b.put(b"z", b"z");
            }
        }
        written.push((seq, body(&b)));
        seq += u64::from(b.count());
        db.write(&WriteOptions::default(), b).unwrap();
    }
    // A batch of log data only takes no number: it carries the next one.
    let mut blob = WriteBatch::new();
    blob.put_log_data(b"marker");
    written.push((seq, body(&blob)));
    db.write(&WriteOptions::default(), blob).unwrap();
    put(&db, "last", "1");
    written.push((
        seq,
        body(&{
            let mut b = WriteBatch::new();
            b.put(b"last", b"1");
            b
        }),
    ));
    assert_eq!(db.latest_sequence_number(), seq);

    assert_eq!(updates(&db, 1), written);
    // From inside a batch (the second holds 2..=4): that batch first.
    let second = written[1].0;
    let from_inside = updates(&db, second + 1);
    assert_eq!(from_inside[0].0, second);
    assert_eq!(from_inside, written[1..]);
    // Not yet written.
    match db.get_updates_since(seq + 1) {
        Err(Error::NotFound(m)) => assert!(m.contains("not yet written"), "{m}"),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

#[test]
fn tails_new_writes_and_says_try_again_after_a_wal_switch() {
    let fs = MemFileSystem::new();
    let db = DB::open(mem_opts(&fs, 3600), "/db").unwrap();
    put(&db, "a", "1");
    let mut it = db.get_updates_since(1).unwrap();
    assert!(it.valid());
    assert_eq!(it.get_batch().sequence, 1);
    it.next();
    assert!(!it.valid());
    it.status().unwrap();
    // New writes in the same WAL: the same iterator picks them up.
    put(&db, "b", "2");
    put(&db, "c", "3");
    it.next();
    assert!(it.valid());
    assert_eq!(it.get_batch().sequence, 2);
    it.next();
    assert_eq!(it.get_batch().sequence, 3);
    it.next();
    assert!(!it.valid());
    it.status().unwrap();
    // A flush starts a new WAL the iterator does not know: TryAgain, and
    // a new iterator continues where the old one stopped.
    db.flush().unwrap();
    put(&db, "d", "4");
    it.next();
    assert!(!it.valid());
    assert!(
        matches!(it.status(), Err(Error::TryAgain(_))),
        "{:?}",
        it.status()
    );
    let seqs: Vec<u64> = updates(&db, 4).into_iter().map(|(s, _)| s).collect();
    assert_eq!(seqs, [4]);
}

#[test]
fn archived_wals_keep_the_history_across_flushes_and_reopens() {
    let fs = MemFileSystem::new();
    let mut all = Vec::new();
    for round in 0..3 {
        let db = DB::open(mem_opts(&fs, 3600), "/db").unwrap();
        for i in 0..30 {
            put(&db, &format!("r{round}k{i:02}"), "v");
            if i % 10 == 9 {
                db.flush().unwrap();
            }
        }
        let got: Vec<u64> = updates(&db, 1).into_iter().map(|(s, _)| s).collect();
        all = (1..=db.latest_sequence_number()).collect();
        assert_eq!(got, all, "round {round}: every batch, contiguous");
        let files = db.sorted_wal_files().unwrap();
        assert!(files.iter().any(|f| f.file_type == WalFileType::Archived));
        assert_eq!(
            files
                .iter()
                .filter(|f| f.file_type == WalFileType::Alive)
                .count(),
            1
        );
        for f in &files {
            match f.file_type {
                WalFileType::Archived => assert!(f.path_name.starts_with("/archive/"), "{f:?}"),
                WalFileType::Alive => assert!(!f.path_name.contains("archive"), "{f:?}"),
            }
        }
        assert_eq!(
            db.get_current_wal_file().unwrap().log_number,
            files.last().unwrap().log_number
        );
        db.close().unwrap();
    }
    assert_eq!(all.len(), 90);

    // Without archiving, flushed WALs are gone: the history starts later.
    let fs = MemFileSystem::new();
    let db = DB::open(mem_opts(&fs, 0), "/db").unwrap();
    for i in 0..20 {
        put(&db, &format!("k{i}"), "v");
    }
    db.flush().unwrap();
    put(&db, "after", "v");
    let got = updates(&db, 1);
    assert_eq!(got.first().map(|(s, _)| *s), Some(21));
    assert!(!fs.file_exists(Path::new("/db/archive")));
}

#[test]
fn the_archive_is_purged_by_age_and_by_size() {
    // Age: files older than the TTL go at the next purge (forced at open).
    let fs = MemFileSystem::new();
    let db = DB::open(mem_opts(&fs, 60), "/db").unwrap();
    for i in 0..3 {
        put(&db, &format!("k{i}"), "v");
        db.flush().unwrap();
    }
    db.close().unwrap();
    let archived = |fs: &MemFileSystem| -> Vec<String> {
        fs.children(Path::new("/db/archive")).unwrap_or_default()
    };
    let names = archived(&fs);
    assert_eq!(names.len(), 3, "{names:?}");
    let old = Path::new("/db/archive").join(&names[0]);
    fs.set_modification_time(&old, 1).unwrap();
    let db = DB::open(mem_opts(&fs, 60), "/db").unwrap();
    let now = archived(&fs);
    assert!(!now.contains(&names[0]), "{now:?}");
    assert!(now.contains(&names[1]), "{now:?}");
    drop(db);

    // Size: beyond the limit, oldest first.
    let fs = MemFileSystem::new();
    let o = || Options {
        wal_size_limit_mb: 1,
        ..mem_opts(&fs, 0)
    };
    let db = DB::open(o(), "/db").unwrap();
    let big = vec![b'x'; 300 << 10];
    for i in 0..6 {
        db.put(&WriteOptions::default(), format!("k{i}").as_bytes(), &big)
            .unwrap();
        db.flush().unwrap();
    }
    db.close().unwrap();
    let before = archived(&fs);
    assert!(before.len() >= 6, "{before:?}");
    let db = DB::open(o(), "/db").unwrap();
    let after = archived(&fs);
    let total: u64 = after
        .iter()
        .map(|n| fs.file_size(&Path::new("/db/archive").join(n)).unwrap())
        .sum();
    assert!(total <= 1 << 20, "{total} bytes in {after:?}");
    assert!(!after.is_empty());
    // The newest stay.
    let mut sorted = before.clone();
    sorted.sort();
    assert!(after.contains(sorted.last().unwrap()));
    drop(db);
}

#[test]
fn a_follower_applying_the_batches_ends_equal_under_writers_and_a_restart() {
    // Each write mode: the iterator must not return a batch of the
    // pipelined or unordered modes before it is visible.
    for mode in ["ordered", "pipelined", "unordered"] {
        replicate(mode);
    }
}

fn replicate(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (lpath, fpath) = (dir.path().join("leader"), dir.path().join("follower"));
    let lopts = || Options {
        create_if_missing: true,
        wal_ttl_seconds: 3600,
        enable_pipelined_write: mode == "pipelined",
        unordered_write: mode == "unordered",
        ..Options::default()
    };
    let mut fo = Options {
        create_if_missing: true,
        ..Options::default()
    };
    fo.cf.write_buffer_size = 64 << 10;
    let follower = DB::open(fo, &fpath).unwrap();
    // Everything up to `applied` is in the follower.
    let mut applied = 0u64;
    let pull = |leader: &DB, follower: &DB, applied: &mut u64| {
        let latest = leader.latest_sequence_number();
        if latest <= *applied {
            return;
        }
        let mut it = leader.get_updates_since(*applied + 1).unwrap();
        while it.valid() {
            let b = it.get_batch();
            assert!(
                b.sequence <= *applied + 1,
                "a gap: asked for {}, got a batch at {}",
                *applied + 1,
                b.sequence
            );
            let n = u64::from(b.write_batch.count());
            let end = b.sequence + n;
            // Never a write readers cannot see yet.
            assert!(
                end <= leader.latest_sequence_number() + 1,
                "batch {}..{end} returned while {} is visible",
                b.sequence,
                leader.latest_sequence_number()
            );
            if end > *applied + 1 || n == 0 {
                // Batches apply whole: one that starts before `applied`
                // cannot (every batch it holds was applied whole).
                assert!(b.sequence == *applied + 1 || n == 0);
                follower
                    .write(&WriteOptions::default(), b.write_batch)
                    .unwrap();
                *applied = (end - 1).max(*applied);
            }
            it.next();
        }
        match it.status() {
            Ok(()) | Err(Error::TryAgain(_)) => {}
            Err(e) => panic!("tailing: {e}"),
        }
    };
    for round in 0..2 {
        let leader = Arc::new(DB::open(lopts(), &lpath).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let (leader, stop) = (Arc::clone(&leader), Arc::clone(&stop));
                std::thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) && i < 3000 {
                        let k = format!("t{t}k{:04}", i % 500);
                        let mut b = WriteBatch::new();
                        b.put(k.as_bytes(), format!("r{round}i{i}").as_bytes());
                        if i % 7 == 0 {
                            b.delete(format!("t{t}k{:04}", (i + 3) % 500).as_bytes());
                        }
                        if i % 50 == 0 {
                            b.put_log_data(b"checkpoint marker");
                        }
                        leader.write(&WriteOptions::default(), b).unwrap();
                        if i % 700 == 0 {
                            leader.flush().unwrap();
                        }
                        i += 1;
                    }
                })
            })
            .collect();
        for _ in 0..50 {
            pull(&leader, &follower, &mut applied);
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        pull(&leader, &follower, &mut applied);
        assert_eq!(applied, leader.latest_sequence_number());
        // The leader restarts; the follower goes on from where it was.
        Arc::try_unwrap(leader).ok().unwrap().close().unwrap();
    }
    let leader = DB::open(lopts(), &lpath).unwrap();
    pull(&leader, &follower, &mut applied);
    let scan = |db: &DB| {
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        let mut m = BTreeMap::new();
        while it.valid() {
            m.insert(it.key().to_vec(), it.value().to_vec());
            it.next();
        }
        it.status().unwrap();
        m
    };
    let (l, f) = (scan(&leader), scan(&follower));
    assert!(l.len() > 1000, "{}", l.len());
    assert_eq!(l, f, "{mode}: the follower differs from its leader");
    assert_eq!(applied, leader.latest_sequence_number());
}

#[test]
fn two_phase_commit_records_tail_without_false_gaps_under_both_policies() {
    use strata::utilities::transactions::{
        TransactionDB, TransactionDBOptions, TransactionOptions, TxnDBWritePolicy,
    };
    for policy in [
        TxnDBWritePolicy::WriteCommitted,
        TxnDBWritePolicy::WritePrepared,
    ] {
        let fs = MemFileSystem::new();
        let tdo = TransactionDBOptions {
            write_policy: policy,
            ..Default::default()
        };
        let db = TransactionDB::open(mem_opts(&fs, 0), tdo, "/db").unwrap();
        let wo = WriteOptions::default();
        // Each plain put's sequence, as the database numbered it.
        let mut plain = BTreeMap::new();
        let mut mark = |db: &TransactionDB, k: String| {
            db.put(&wo, k.as_bytes(), b"v").unwrap();
            plain.insert(k, db.db().latest_sequence_number());
        };
        for i in 0..6 {
            mark(&db, format!("p{i}a"));
            let mut t = db.begin_transaction(wo, TransactionOptions::default());
            t.set_name(&format!("t{i}")).unwrap();
            t.put(format!("t{i}x").as_bytes(), b"1").unwrap();
            t.put(format!("t{i}y").as_bytes(), b"2").unwrap();
            t.delete(format!("t{i}z").as_bytes()).unwrap();
            mark(&db, format!("p{i}b"));
            match i % 3 {
                0 => {
                    t.prepare().unwrap();
                    mark(&db, format!("p{i}c"));
                    t.commit().unwrap();
                }
                1 => {
                    t.prepare().unwrap();
                    t.rollback().unwrap();
                }
                _ => t.commit().unwrap(),
            }
        }
        mark(&db, "last".into());
        for start in [1, 5, 9] {
            let mut it = db.db().get_updates_since(start).unwrap();
            let mut seen = BTreeMap::new();
            let mut prev = 0;
            while it.valid() {
                let b = it.get_batch();
                assert!(b.sequence >= prev, "{policy:?}: batches in order");
                prev = b.sequence;
                for r in b.write_batch.iter() {
                    if let strata::BatchRecord::Put { key, .. } = r.unwrap()
                        && (key.starts_with(b"p") || key == b"last")
                    {
                        seen.insert(String::from_utf8(key.to_vec()).unwrap(), b.sequence);
                    }
                }
                it.next();
            }
            it.status()
                .unwrap_or_else(|e| panic!("{policy:?} from {start}: {e}"));
            let want: BTreeMap<_, _> = plain
                .iter()
                .filter(|(_, s)| **s >= start)
                .map(|(k, s)| (k.clone(), *s))
                .collect();
            assert_eq!(seen, want, "{policy:?} from {start}");
        }
    }
}

/// A record that fails its checksum in the last alive WAL may still be
/// being written, so the iterator stops there and reads it again later;
/// in an older alive WAL nothing is written any more, and the damage is
/// reported (never skipped, never waited on).
#[test]
fn damage_in_an_older_alive_wal_is_reported() {
    let fs = MemFileSystem::new();
    let db = DB::open(mem_opts(&fs, 0), "/db").unwrap();
    // A column family holding data in the first WAL keeps it alive after
    // the default column family's flush starts a second one.
    let other = db
        .create_column_family("other", strata::ColumnFamilyOptions::default())
        .unwrap();
    db.put_cf(&WriteOptions::default(), &other, b"pinned", b"v")
        .unwrap();
    for i in 0..5 {
        put(&db, &format!("old{i}"), &"x".repeat(100));
    }
    db.flush().unwrap();
    for i in 0..5 {
        put(&db, &format!("new{i}"), "y");
    }
    let alive: Vec<_> = db
        .sorted_wal_files()
        .unwrap()
        .into_iter()
        .filter(|f| f.file_type == WalFileType::Alive)
        .collect();
    assert_eq!(alive.len(), 2, "{alive:?}");
    let all: Vec<u64> = updates(&db, 1).into_iter().map(|(s, _)| s).collect();
    assert_eq!(all, (1..=11).collect::<Vec<_>>());
    // Damage the first WAL in the middle of a later record's payload.
    let first = format!("/db{}", alive[0].path_name);
    fs.corrupt_byte(Path::new(&first), alive[0].size - 50, 0x55)
        .unwrap();
    let mut it = db.get_updates_since(1).unwrap();
    let mut seen = Vec::new();
    while it.valid() {
        seen.push(it.get_batch().sequence);
        it.next();
    }
    let err = it.status().unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err:?}");
    assert!(seen.len() < 6, "read past the damage: {seen:?}");
    // Damage at the end of the last alive WAL is waited on, not reported:
    // the iterator ends cleanly before it.
    let last = db.sorted_wal_files().unwrap().pop().unwrap();
    let last_path = format!("/db{}", last.path_name);
    fs.corrupt_byte(Path::new(&last_path), last.size - 1, 0x55)
        .unwrap();
    let mut it = db.get_updates_since(7).unwrap();
    let mut tail = Vec::new();
    while it.valid() {
        tail.push(it.get_batch().sequence);
        it.next();
    }
    it.status().unwrap();
    assert_eq!(
        tail,
        [7, 8, 9, 10],
        "the damaged last record is left for later"
    );
}
