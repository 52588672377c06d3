//! WAL recovery modes with RocksDB's meaning, on damaged and torn WALs,
//! and a WAL directory apart from the database directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::fs::FileSystem;
use strata::fs::mem::MemFileSystem;
use strata::{DB, Error, Options, ReadOptions, WalRecoveryMode, WriteOptions};

const N: usize = 30;

fn opts(fs: &MemFileSystem, mode: WalRecoveryMode) -> Options {
    Options {
        create_if_missing: true,
        wal_recovery_mode: mode,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

/// A database whose N synced puts (4 KB each, so the WAL spans several
/// 32 KiB blocks) are only in its WAL; returns the WAL.
fn setup() -> (MemFileSystem, PathBuf) {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs, WalRecoveryMode::PointInTime), "/db").unwrap();
    let wo = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    for i in 0..N {
        db.put(&wo, &key(i), &[b'v'; 4000]).unwrap();
    }
    db.close().unwrap();
    let wals: Vec<PathBuf> = fs
        .file_names()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    assert_eq!(wals.len(), 1, "{wals:?}");
    (fs, wals[0].clone())
}

/// Which of the N keys the database holds.
fn present(db: &DB) -> Vec<bool> {
    (0..N)
        .map(|i| db.get(&ReadOptions::default(), &key(i)).unwrap().is_some())
        .collect()
}

fn wal_len(fs: &MemFileSystem, wal: &Path) -> u64 {
    fs.file_size(wal).unwrap()
}

#[test]
fn damage_in_the_middle() {
    // AbsoluteConsistency and TolerateCorruptedTailRecords refuse to open.
    for mode in [
        WalRecoveryMode::AbsoluteConsistency,
        WalRecoveryMode::TolerateCorruptedTailRecords,
    ] {
        let (fs, wal) = setup();
        let mid = wal_len(&fs, &wal) / 2;
        fs.corrupt_byte(&wal, mid, 0x10).unwrap();
        let e = DB::open(opts(&fs, mode), "/db").unwrap_err();
        assert!(
            matches!(&e, Error::Corruption { file, .. } if file.ends_with(".log")),
            "{mode:?}: {e}"
        );
        // ...and did not touch the WAL.
        assert!(fs.file_exists(&wal));
    }
    // PointInTime keeps exactly the records before the damage.
    let (fs, wal) = setup();
    let mid = wal_len(&fs, &wal) / 2;
    fs.corrupt_byte(&wal, mid, 0x10).unwrap();
    let db = DB::open(opts(&fs, WalRecoveryMode::PointInTime), "/db").unwrap();
    let p = present(&db);
    let kept = p.iter().take_while(|&&b| b).count();
    assert!(kept > 0 && kept < N, "{p:?}");
    assert!(
        p[kept..].iter().all(|&b| !b),
        "point-in-time skipped past damage: {p:?}"
    );
    // What it recovered is durable: it survives a reopen and a crash.
    db.close().unwrap();
    fs.crash_drop_unsynced();
    let db = DB::open(opts(&fs, WalRecoveryMode::PointInTime), "/db").unwrap();
    assert_eq!(present(&db), p);
    // New writes after a point-in-time recovery land and survive.
    db.put(
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
        &key(N - 1),
        b"new",
    )
    .unwrap();
    db.close().unwrap();
    fs.crash_drop_unsynced();
    let db = DB::open(opts(&fs, WalRecoveryMode::PointInTime), "/db").unwrap();
    assert!(present(&db)[N - 1]);

    // SkipAnyCorruptedRecords drops what the damage makes unreadable (as
    // RocksDB: the rest of the damaged 32 KiB block, whose lengths can no
    // longer be trusted) and goes on with the following blocks.
    let (fs, wal) = setup();
    let mid = wal_len(&fs, &wal) / 2;
    fs.corrupt_byte(&wal, mid, 0x10).unwrap();
    let db = DB::open(opts(&fs, WalRecoveryMode::SkipAnyCorruptedRecords), "/db").unwrap();
    let p = present(&db);
    let lost = p.iter().filter(|&&b| !b).count();
    assert!((1..=9).contains(&lost), "{p:?}");
    assert!(p[0] && p[N - 1], "{p:?}");
}

#[test]
fn torn_tail() {
    // A torn last record (a crash mid-append) is tolerated by every mode
    // but AbsoluteConsistency; the records before it are all kept.
    for mode in [
        WalRecoveryMode::PointInTime,
        WalRecoveryMode::TolerateCorruptedTailRecords,
        WalRecoveryMode::SkipAnyCorruptedRecords,
        WalRecoveryMode::AbsoluteConsistency,
    ] {
        let (fs, wal) = setup();
        let len = wal_len(&fs, &wal);
        fs.truncate(&wal, len - 20).unwrap();
        let r = DB::open(opts(&fs, mode), "/db");
        if mode == WalRecoveryMode::AbsoluteConsistency {
            assert!(matches!(r, Err(Error::Corruption { .. })), "{mode:?}");
            continue;
        }
        let p = present(&r.unwrap());
        let mut want = vec![true; N];
        want[N - 1] = false;
        assert_eq!(p, want, "{mode:?}");
    }
}

#[test]
fn wal_dir_apart_from_the_db() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs, WalRecoveryMode::PointInTime);
    o.wal_dir = Some(PathBuf::from("/wal"));
    let db = DB::open(o.clone(), "/db").unwrap();
    let wo = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    for i in 0..N {
        db.put(&wo, &key(i), b"v").unwrap();
    }
    drop(db);
    fs.crash_drop_unsynced();
    let names = fs.file_names();
    let in_dir = |dir: &str| {
        names
            .iter()
            .filter(|p| p.starts_with(dir) && p.extension().is_some_and(|e| e == "log"))
            .count()
    };
    assert!(in_dir("/wal") > 0 && in_dir("/db") == 0, "{names:?}");
    let db = DB::open(o.clone(), "/db").unwrap();
    assert!(present(&db).iter().all(|&b| b));
    // A flush makes the old WALs obsolete: they are deleted from /wal.
    db.flush().unwrap();
    db.put(&wo, b"after", b"x").unwrap();
    drop(db);
    let db = DB::open(o, "/db").unwrap();
    assert!(present(&db).iter().all(|&b| b));
    assert_eq!(
        db.get(&ReadOptions::default(), b"after")
            .unwrap()
            .as_deref(),
        Some(&b"x"[..])
    );
}

#[test]
fn open_checks_every_table_the_manifest_names() {
    // RocksDB's CheckConsistency under paranoid_checks: a missing or cut
    // table fails the open and is named, instead of failing a later read.
    let fs = MemFileSystem::new();
    let o = opts(&fs, WalRecoveryMode::PointInTime);
    let db = DB::open(o.clone(), "/db").unwrap();
    for i in 0..N {
        db.put(&WriteOptions::default(), &key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let table = fs
        .file_names()
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    let name = table.file_name().unwrap().to_string_lossy().into_owned();
    let len = fs.file_size(&table).unwrap();
    let bytes = fs.read_file(&table).unwrap();

    fs.truncate(&table, len - 1).unwrap();
    match DB::open(o.clone(), "/db") {
        Err(Error::Corruption {
            file, msg: message, ..
        }) => {
            assert!(file.ends_with(&name), "{file}");
            assert!(
                message.contains("size mismatch") && message.contains(&name),
                "{message}"
            );
        }
        other => panic!("expected a size mismatch, got {:?}", other.err()),
    }
    fs.delete_file(&table).unwrap();
    match DB::open(o.clone(), "/db") {
        Err(Error::Corruption {
            file, msg: message, ..
        }) => {
            assert!(file.ends_with(&name), "{file}");
            assert!(message.contains(&name), "{message}");
        }
        other => panic!("expected a missing table, got {:?}", other.err()),
    }
    // With paranoid_checks off the open goes through (as in RocksDB).
    let lax = Options {
        paranoid_checks: false,
        ..o.clone()
    };
    drop(DB::open(lax, "/db").unwrap());
    // Put back, the table opens again.
    fs.write_file(&table, &bytes, true).unwrap();
    let db = DB::open(o, "/db").unwrap();
    assert!(present(&db).iter().all(|&b| b));
}

#[test]
fn writes_after_flushing_column_families_one_by_one_survive_reopen() {
    // Regression: flushing one column family, then another, left the
    // first one's MANIFEST log number on a WAL that was then deleted as
    // unneeded (its memtable was empty). Recovery took the missing WAL for
    // one a power loss cut short and stopped replay before the later
    // writes: acknowledged writes were lost on a plain reopen.
    use strata::{ColumnFamilyDescriptor, ColumnFamilyOptions};
    let fs = MemFileSystem::new();
    let open = |fs: &MemFileSystem| {
        let mut o = opts(fs, WalRecoveryMode::PointInTime);
        o.create_missing_column_families = true;
        let descs = ["default", "a", "b"]
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(*n, ColumnFamilyOptions::default()))
            .collect();
        DB::open_cf(o, "/db", descs).unwrap()
    };
    let db = open(&fs);
    let wo = WriteOptions::default();
    let (a, b) = (db.cf_handle("a").unwrap(), db.cf_handle("b").unwrap());
    db.put(&wo, b"d0", b"1").unwrap();
    db.put_cf(&wo, &a, b"a0", b"1").unwrap();
    db.put_cf(&wo, &b, b"b0", b"1").unwrap();
    db.flush_cf(&db.default_cf()).unwrap();
    db.flush_cf(&a).unwrap();
    db.put_cf(&wo, &b, b"b1", b"1").unwrap();
    db.flush_cf(&b).unwrap();
    db.put(&wo, b"d1", b"after the flushes").unwrap();
    db.put_cf(&wo, &a, b"a1", b"after the flushes").unwrap();
    drop(db);
    let db = open(&fs);
    let ro = ReadOptions::default();
    let a = db.cf_handle("a").unwrap();
    assert_eq!(
        db.get(&ro, b"d1").unwrap().as_deref(),
        Some(&b"after the flushes"[..])
    );
    assert_eq!(
        db.get_cf(&ro, &a, b"a1").unwrap().as_deref(),
        Some(&b"after the flushes"[..])
    );
    for (cf, k) in [("default", "d0"), ("a", "a0"), ("b", "b0"), ("b", "b1")] {
        let h = db.cf_handle(cf).unwrap();
        assert!(
            db.get_cf(&ro, &h, k.as_bytes()).unwrap().is_some(),
            "{cf}/{k}"
        );
    }
}

#[test]
fn each_open_leaves_one_manifest_and_a_rolled_one_goes_too() {
    // Every open writes a new MANIFEST; the one CURRENT named before is
    // deleted (as RocksDB's PurgeObsoleteFiles does), and so is one that a
    // roll past max_manifest_file_size replaced.
    let fs = MemFileSystem::new();
    let mut o = opts(&fs, WalRecoveryMode::PointInTime);
    let manifests = || {
        fs.file_names()
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("MANIFEST-"))
            .count()
    };
    for round in 0..3 {
        let db = DB::open(o.clone(), "/db").unwrap();
        db.put(&WriteOptions::default(), &key(round), b"v").unwrap();
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        assert_eq!(manifests(), 1, "round {round}: {:?}", fs.file_names());
        db.close().unwrap();
    }
    o.max_manifest_file_size = 1;
    let db = DB::open(o.clone(), "/db").unwrap();
    for i in 0..5 {
        db.put(&WriteOptions::default(), &key(i), b"w").unwrap();
        db.flush().unwrap();
        // A compaction the flush scheduled may be rolling the MANIFEST
        // right now (the new one written, the old one not yet deleted):
        // count once the background is idle.
        db.wait_for_compactions().unwrap();
        assert_eq!(manifests(), 1, "after roll {i}: {:?}", fs.file_names());
    }
    drop(db);
    let db = DB::open(o, "/db").unwrap();
    for i in 0..5 {
        assert_eq!(
            db.get(&ReadOptions::default(), &key(i)).unwrap().as_deref(),
            Some(&b"w"[..])
        );
    }
}

#[test]
fn replay_writes_a_table_each_time_a_memtable_fills() {
    // A WAL many write buffers long (written with a large buffer, then
    // reopened with a small one): recovery holds one buffer at a time,
    // writing level-0 tables as RocksDB's recovery does, and loses nothing.
    let fs = MemFileSystem::new();
    let mut o = opts(&fs, WalRecoveryMode::PointInTime);
    o.cf.write_buffer_size = 16 << 20;
    {
        let db = DB::open(o.clone(), "/db").unwrap();
        let wo = WriteOptions {
            sync: true,
            ..WriteOptions::default()
        };
        for i in 0..2000 {
            db.put(&wo, &key(i), &[b'v'; 500]).unwrap();
        }
    }
    fs.crash_drop_unsynced();
    o.cf.write_buffer_size = 64 << 10;
    o.cf.disable_auto_compactions = true;
    let db = DB::open(o, "/db").unwrap();
    let l0: usize = db
        .property("rocksdb.num-files-at-level0")
        .unwrap()
        .parse()
        .unwrap();
    assert!(l0 >= 10, "{l0} tables");
    for i in 0..2000 {
        assert_eq!(
            db.get(&ReadOptions::default(), &key(i)).unwrap().as_deref(),
            Some(&[b'v'; 500][..])
        );
    }
}

/// A database whose newest OPTIONS file holds options Strata does not know
/// (a newer RocksDB wrote them) opens, and the LOG names them once; a
/// database whose OPTIONS file Strata wrote gets no such line.
#[test]
fn options_strata_does_not_know_are_reported_once_in_the_log() {
    let fs = MemFileSystem::new();
    let o = opts(&fs, WalRecoveryMode::PointInTime);
    let db = DB::open(o.clone(), "/db").unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    db.close().unwrap();
    let reported = |fs: &MemFileSystem| {
        let log = String::from_utf8(fs.read_file(Path::new("/db/LOG")).unwrap()).unwrap();
        log.lines()
            .filter(|l| l.contains("options Strata does not know"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let db = DB::open(o.clone(), "/db").unwrap();
    db.close().unwrap();
    assert_eq!(reported(&fs), Vec::<String>::new());
    // A newer RocksDB's options, appended to the newest OPTIONS file.
    let newest = fs
        .children(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("OPTIONS-"))
        .max()
        .unwrap();
    let path = PathBuf::from("/db").join(&newest);
    let mut text = String::from_utf8(fs.read_file(&path).unwrap()).unwrap();
    text.push_str("\n[DBOptions]\n  follower_refresh_catchup_period_ms=10000\n");
    text.push_str("[CFOptions \"default\"]\n  uncache_aggressiveness=0\n");
    fs.write_file(&path, text.as_bytes(), true).unwrap();
    let db = DB::open(o, "/db").unwrap();
    assert_eq!(
        db.get(&ReadOptions::default(), b"k").unwrap().as_deref(),
        Some(&b"v"[..])
    );
    db.close().unwrap();
    let lines = reported(&fs);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("DBOptions.follower_refresh_catchup_period_ms")
            && lines[0].contains("CFOptions.uncache_aggressiveness")
            && lines[0].contains(&newest),
        "{}",
        lines[0]
    );
}

/// A memtable switch keeps a WAL that no write reached (writes with the
/// WAL disabled), as RocksDB does (`log_empty_`): a flush starts no new
/// WAL file then. A logged write after the switch lands in the kept WAL
/// and is recovered after a power loss, beside the flushed data; once a
/// write reached the WAL, the next switch starts a new one.
#[test]
fn a_switch_keeps_a_wal_no_write_reached() {
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs, WalRecoveryMode::PointInTime), "/db").unwrap();
    let first = db.get_current_wal_file().unwrap().log_number;
    let unlogged = WriteOptions {
        disable_wal: true,
        ..WriteOptions::default()
    };
    let synced = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    for round in 0..3u8 {
        db.put(&unlogged, &[b'u', round], b"flushed").unwrap();
        db.flush().unwrap();
        assert_eq!(db.get_current_wal_file().unwrap().log_number, first);
        let alive: Vec<u64> = db
            .sorted_wal_files()
            .unwrap()
            .iter()
            .map(|w| w.log_number)
            .collect();
        assert_eq!(alive, [first], "round {round}");
    }
    db.put(&synced, b"logged", b"after the switches").unwrap();
    drop(db);
    fs.crash_drop_unsynced();
    let db = DB::open(opts(&fs, WalRecoveryMode::PointInTime), "/db").unwrap();
    let ro = ReadOptions::default();
    for round in 0..3u8 {
        assert_eq!(
            db.get(&ro, &[b'u', round]).unwrap().as_deref(),
            Some(&b"flushed"[..])
        );
    }
    assert_eq!(
        db.get(&ro, b"logged").unwrap().as_deref(),
        Some(&b"after the switches"[..])
    );
    // A write that reached the WAL: the next switch starts a new one.
    let reopened = db.get_current_wal_file().unwrap().log_number;
    db.put(&synced, b"x", b"y").unwrap();
    db.flush().unwrap();
    assert!(db.get_current_wal_file().unwrap().log_number > reopened);
}
