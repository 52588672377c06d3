//! In-place memtable updates (RocksDB's `inplace_update_support`): same-
//! or-shorter values overwrite the newest `Put` of a key in the memtable,
//! keeping its sequence number (older snapshots see the new value, as in
//! RocksDB); everything else is added as usual. Readers never see a torn
//! value while a writer rewrites it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use strata::fs::mem::MemFileSystem;
use strata::{DB, Error, MemTableFactory, Options, ReadOptions, WriteOptions};

fn opts(fs: &MemFileSystem) -> Options {
    let mut o = Options {
        create_if_missing: true,
        allow_concurrent_memtable_write: false,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    o.cf.inplace_update_support = true;
    o
}

fn get(db: &DB, ro: &ReadOptions, k: &[u8]) -> Option<Vec<u8>> {
    db.get(ro, k).unwrap()
}

#[test]
fn updates_overwrite_in_place_and_older_snapshots_see_them() {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let w = WriteOptions::default();
    let entries = |db: &DB| db.property("rocksdb.num-entries-active-mem-table").unwrap();
    // RocksDB's GetSnapshot gives no snapshot in this mode (its C API
    // then reads the latest data); Strata's snapshots stay, and see
    // in-place updates.
    assert!(!db.snapshots_supported());
    db.put(&w, b"foo_snap", b"hello_s1").unwrap();
    let snap = db.snapshot();
    db.put(&w, b"foo_snap", b"hello_s2").unwrap();
    // RocksDB's c_test.c: the snapshot sees the in-place update.
    let at_snap = ReadOptions {
        snapshot: Some(snap.sequence()),
        ..ReadOptions::default()
    };
    assert_eq!(
        get(&db, &at_snap, b"foo_snap").as_deref(),
        Some(&b"hello_s2"[..])
    );
    assert_eq!(entries(&db), "1");
    // Shorter values fit too; a longer one is a new entry, which older
    // snapshots do not see.
    db.put(&w, b"foo_snap", b"s3").unwrap();
    assert_eq!(entries(&db), "1");
    assert_eq!(get(&db, &at_snap, b"foo_snap").as_deref(), Some(&b"s3"[..]));
    db.put(&w, b"foo_snap", b"a longer value").unwrap();
    assert_eq!(entries(&db), "2");
    assert_eq!(get(&db, &at_snap, b"foo_snap").as_deref(), Some(&b"s3"[..]));
    let ro = ReadOptions::default();
    assert_eq!(
        get(&db, &ro, b"foo_snap").as_deref(),
        Some(&b"a longer value"[..])
    );
    // After a deletion the next put is an entry of its own.
    db.delete(&w, b"foo_snap").unwrap();
    assert_eq!(get(&db, &ro, b"foo_snap"), None);
    db.put(&w, b"foo_snap", b"back").unwrap();
    assert_eq!(entries(&db), "4");
    // Iterators read the rewritten values.
    db.put(&w, b"foo_snap", b"bock").unwrap();
    let mut it = db.iter(&ro).unwrap();
    it.seek_to_first();
    assert_eq!((it.key(), it.value()), (&b"foo_snap"[..], &b"bock"[..]));
    drop(it);
    drop(snap);
    // The WAL holds every write: recovery replays them into the same
    // final value; a flush writes it.
    drop(db);
    let db = DB::open(opts(&fs), "/db").unwrap();
    assert_eq!(get(&db, &ro, b"foo_snap").as_deref(), Some(&b"bock"[..]));
    db.flush().unwrap();
    assert_eq!(get(&db, &ro, b"foo_snap").as_deref(), Some(&b"bock"[..]));
}

#[test]
fn readers_never_see_a_torn_value() {
    // One writer rewrites fixed-size values in place while readers get and
    // iterate: every value read is one that was written whole.
    let fs = MemFileSystem::new();
    let db = Arc::new(DB::open(opts(&fs), "/db").unwrap());
    let w = WriteOptions::default();
    fn value(round: u64) -> String {
        format!("{:016}", round * 1_111_111_111_111_111 % 10u64.pow(16))
    }
    for k in 0..64u64 {
        db.put(&w, format!("k{k:02}").as_bytes(), value(0).as_bytes())
            .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    fn check(v: &[u8]) {
        let s = std::str::from_utf8(v).unwrap();
        assert_eq!(s.len(), 16, "{s}");
        let n: u64 = s.parse().unwrap();
        assert!(
            (0..2000).any(|r| value(r).parse::<u64>().unwrap() == n),
            "torn value {s}"
        );
    }
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
            std::thread::spawn(move || {
                let ro = ReadOptions::default();
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if r == 0 {
                        for k in 0..64u64 {
                            check(&db.get(&ro, format!("k{k:02}").as_bytes()).unwrap().unwrap());
                            reads += 1;
                        }
                    } else {
                        let mut it = db.iter(&ro).unwrap();
                        it.seek_to_first();
                        while it.valid() {
                            check(it.value());
                            reads += 1;
                            it.next();
                        }
                    }
                }
                reads
            })
        })
        .collect();
    for round in 1..2000u64 {
        for k in 0..64u64 {
            db.put(&w, format!("k{k:02}").as_bytes(), value(round).as_bytes())
                .unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    // Every update was in place: one entry per key.
    assert_eq!(
        db.property("rocksdb.num-entries-active-mem-table")
            .as_deref(),
        Some("64")
    );
}

#[test]
fn concurrent_memtable_writes_and_other_memtables_are_refused() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs);
    o.allow_concurrent_memtable_write = true;
    let e = DB::open(o, "/db").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("inplace_update_support"), "{e}");
    let mut o = opts(&fs);
    o.cf.memtable_factory = MemTableFactory::Vector;
    let e = DB::open(o, "/db").unwrap_err();
    assert!(matches!(e, Error::NotSupported(_)), "{e}");
}
