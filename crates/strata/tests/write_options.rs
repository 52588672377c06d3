//! Per-write options that change how a write meets a busy or changed
//! database: `no_slowdown` (fail instead of waiting in a write stall),
//! `low_pri` (paced, or refused with `no_slowdown`, while writes stall)
//! and `ignore_missing_column_families` (records of missing column
//! families skipped), as RocksDB's `WriteOptions` define them.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use strata::fs::mem::MemFileSystem;
use strata::options::{Options, ReadOptions, WriteOptions};
use strata::{DB, Env, Error, WriteBatch};

fn opts(fs: &MemFileSystem) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    o.cf.write_buffer_size = 4 << 10;
    o.cf.compression = strata::CompressionType::None;
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(200)).into_bytes()
}

fn no_slowdown() -> WriteOptions {
    WriteOptions {
        no_slowdown: true,
        ..WriteOptions::default()
    }
}

fn is_write_stall(r: &strata::Result<()>, what: &str) -> bool {
    matches!(r, Err(Error::Incomplete(m)) if m == what)
}

/// An Env whose single flush (or compaction) thread is held until the
/// returned sender sends or is dropped.
fn held_env(hold_flushes: bool) -> (Arc<Env>, mpsc::Sender<()>) {
    let env = Env::new(1, 1, 1 << 20).unwrap();
    let (release, held) = mpsc::channel::<()>();
    let pool = if hold_flushes {
        &env.high_priority
    } else {
        &env.low_priority
    };
    pool.schedule(move || {
        let _ = held.recv();
    });
    (env, release)
}

#[test]
fn no_slowdown_writes_fail_at_once_where_others_wait_for_a_flush() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.max_write_buffer_number = 2;
    let (env, release) = held_env(true);
    o.env = Some(env);
    let db = Arc::new(DB::open(o, "/db").unwrap());
    // Flushes cannot run: once one memtable is immutable and the active
    // one is full, a write has to wait. A no_slowdown write refuses.
    let mut written = 0u64;
    let refused = loop {
        assert!(written < 1000, "no write stall after {written} writes");
        let r = db.put(&no_slowdown(), &key(written), &value(written));
        if r.is_err() {
            break r;
        }
        written += 1;
    };
    assert!(is_write_stall(&refused, "Write stall"), "{refused:?}");
    assert!(written > 0);
    // A normal write waits for the flush; while it waits, no_slowdown
    // writes (which would queue behind it) fail without waiting.
    let (done_tx, done_rx) = mpsc::channel();
    let waiter = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            let r = db.put(&WriteOptions::default(), b"waited", b"1");
            done_tx.send(()).unwrap();
            r
        })
    };
    assert!(done_rx.recv_timeout(Duration::from_millis(200)).is_err());
    for i in 0..20 {
        let start = Instant::now();
        let r = db.put(&no_slowdown(), b"refused", &[i]);
        assert!(is_write_stall(&r, "Write stall"), "{r:?}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }
    assert!(
        done_rx.try_recv().is_err(),
        "the waiting write went through"
    );
    // Flushes run again: the waiting write completes, and no_slowdown
    // writes are accepted again once there is room.
    release.send(()).unwrap();
    done_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    waiter.join().unwrap().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.put(&no_slowdown(), b"later", b"2").is_err() {
        assert!(
            Instant::now() < deadline,
            "no_slowdown writes still refused"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let ro = ReadOptions::default();
    for i in 0..written {
        assert_eq!(db.get(&ro, &key(i)).unwrap(), Some(value(i)));
    }
    assert_eq!(
        db.get(&ro, &key(written)).unwrap(),
        None,
        "a refused write applied"
    );
    assert_eq!(
        db.get(&ro, b"refused").unwrap(),
        None,
        "a refused write applied"
    );
    assert_eq!(db.get(&ro, b"waited").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(&ro, b"later").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn delayed_writes_refuse_no_slowdown_and_low_priority_writes() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.cf.level0_file_num_compaction_trigger = 2;
    o.cf.level0_slowdown_writes_trigger = 2;
    o.cf.level0_stop_writes_trigger = 1000;
    // The slowest pace: a 200-byte write is paid for in about 12 ms.
    o.delayed_write_rate = 1;
    let (env, release) = held_env(false);
    o.env = Some(env);
    let db = DB::open(o, "/db").unwrap();
    let low_pri = |no_slowdown| WriteOptions {
        low_pri: true,
        no_slowdown,
        ..WriteOptions::default()
    };
    // Not stalled: low-priority writes go, with or without no_slowdown.
    db.put(&low_pri(true), b"low-before", b"1").unwrap();
    db.put(&low_pri(false), b"low-before-2", b"1").unwrap();
    // Compaction cannot run: two flushes put level 0 at the slowdown
    // trigger.
    let wo = WriteOptions::default();
    let mut i = 0;
    let delayed =
        |db: &DB| db.property("rocksdb.actual-delayed-write-rate").as_deref() != Some("0");
    while !delayed(&db) {
        assert!(i < 1000, "writes never delayed");
        db.put(&wo, &key(i), &value(i)).unwrap();
        i += 1;
        if i % 50 == 0 {
            db.flush().unwrap();
        }
    }
    // A low-priority write is refused at once with no_slowdown, and
    // paced (but applied) without it.
    let r = db.put(&low_pri(true), b"low", b"x");
    assert!(is_write_stall(&r, "Low priority write stall"), "{r:?}");
    db.put(&low_pri(false), b"low", b"y").unwrap();
    // Back-to-back no_slowdown writes outrun the delayed pace: one that
    // would have to wait is refused, and nothing of it is applied.
    let mut refused = Vec::new();
    for j in 0..50u64 {
        let k = format!("ns{j:03}").into_bytes();
        match db.put(&no_slowdown(), &k, &value(j)) {
            Ok(()) => {}
            Err(e) => {
                assert!(is_write_stall(&Err(e), "Write stall"));
                refused.push(k);
            }
        }
    }
    assert!(
        !refused.is_empty(),
        "every no_slowdown write went at the delayed pace"
    );
    release.send(()).unwrap();
    db.wait_for_compactions().unwrap();
    let ro = ReadOptions::default();
    for k in &refused {
        assert_eq!(db.get(&ro, k).unwrap(), None);
    }
    assert_eq!(db.get(&ro, b"low").unwrap(), Some(b"y".to_vec()));
    assert_eq!(db.get(&ro, b"low-before").unwrap(), Some(b"1".to_vec()));
    // The stall is over: a low-priority no_slowdown write goes again.
    assert!(!delayed(&db));
    db.put(&low_pri(true), b"low-after", b"1").unwrap();
}

#[test]
fn records_of_missing_column_families_fail_the_write_unless_ignored() {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let gone = db
        .create_column_family("gone", strata::ColumnFamilyOptions::default())
        .unwrap();
    db.drop_column_family(&gone).unwrap();
    let batch = || {
        let mut b = WriteBatch::new();
        b.put(b"before", b"1");
        b.put_cf(gone.id, b"lost", b"2");
        b.put(b"after", b"3");
        b
    };
    let seq = db.latest_sequence_number();
    let r = db.write(&WriteOptions::default(), batch());
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("Invalid column family")),
        "{r:?}"
    );
    let ro = ReadOptions::default();
    assert_eq!(db.get(&ro, b"before").unwrap(), None);
    assert_eq!(db.latest_sequence_number(), seq);
    let ignore = WriteOptions {
        ignore_missing_column_families: true,
        ..WriteOptions::default()
    };
    db.write(&ignore, batch()).unwrap();
    // The skipped record still took its sequence number, as in RocksDB.
    assert_eq!(db.latest_sequence_number(), seq + 3);
    assert_eq!(db.get(&ro, b"before").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(&ro, b"after").unwrap(), Some(b"3".to_vec()));
    // Concurrent writers mixing both choices: each gets its own outcome.
    let db = Arc::new(db);
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let db = Arc::clone(&db);
            let gone = gone.id;
            std::thread::spawn(move || {
                for n in 0..200u32 {
                    let mut b = WriteBatch::new();
                    b.put(format!("t{t}-{n}").as_bytes(), b"v");
                    b.put_cf(gone, b"lost", b"v");
                    let wo = WriteOptions {
                        ignore_missing_column_families: t % 2 == 0,
                        ..WriteOptions::default()
                    };
                    let r = db.write(&wo, b);
                    assert_eq!(r.is_ok(), t % 2 == 0, "{r:?}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for t in 0..4u8 {
        let present = db
            .get(&ro, format!("t{t}-199").as_bytes())
            .unwrap()
            .is_some();
        assert_eq!(present, t % 2 == 0);
    }
    // The WAL holds the skipped records; recovery skips them too.
    let seq = db.latest_sequence_number();
    drop(db);
    let db = DB::open(opts(&fs), "/db").unwrap();
    assert_eq!(db.get(&ro, b"before").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(&ro, b"t0-199").unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get(&ro, b"t1-0").unwrap(), None);
    assert_eq!(db.latest_sequence_number(), seq);
    // Repair replays the WALs the same way: the skipped records do not
    // cost the rest of their batch (nor of their group's WAL record).
    let wo = WriteOptions::default();
    db.put(&wo, b"unflushed", b"4").unwrap();
    let mut b = WriteBatch::new();
    b.put(b"x1", b"5");
    b.put_cf(gone.id, b"lost", b"6");
    b.put(b"x2", b"7");
    db.write(&ignore, b).unwrap();
    drop(db);
    strata::db::repair_db(&opts(&fs), "/db").unwrap();
    let db = DB::open(opts(&fs), "/db").unwrap();
    assert_eq!(db.get(&ro, b"unflushed").unwrap(), Some(b"4".to_vec()));
    assert_eq!(db.get(&ro, b"x1").unwrap(), Some(b"5".to_vec()));
    assert_eq!(db.get(&ro, b"x2").unwrap(), Some(b"7".to_vec()));
    assert_eq!(db.get(&ro, b"t0-199").unwrap(), Some(b"v".to_vec()));
}
