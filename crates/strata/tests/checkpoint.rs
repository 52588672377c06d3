//! Checkpoints (`strata::utilities::checkpoint`): an openable copy of a
//! live database with exactly its contents (flushed or not, every column
//! family), a prefix of the writes when writers run meanwhile, hard links
//! for tables on a real file system, RocksDB's rules for the target
//! directory, and RocksDB 7.8.3's `ldb` reading a checkpoint.
//!
//! The `ldb` check needs `ldb` on the PATH; it fails with a clear message
//! otherwise, unless STRATA_SKIP_INTEROP=1.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use strata::fs::FileSystem;
use strata::fs::mem::MemFileSystem;
use strata::options::{ColumnFamilyOptions, Options, ReadOptions, WriteOptions};
use strata::utilities::checkpoint::Checkpoint;
use strata::{ColumnFamilyDescriptor, DB, Error};

fn mem_opts(fs: &MemFileSystem) -> Options {
    let mut o = Options {
        create_if_missing: true,
        create_missing_column_families: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    o.cf.write_buffer_size = 32 << 10;
    o.cf.target_file_size_base = 32 << 10;
    o.cf.max_bytes_for_level_base = 128 << 10;
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn scan_cf(db: &DB, cf: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let h = db.cf_handle(cf).unwrap();
    let mut it = db.iter_cf(&ReadOptions::default(), &h).unwrap();
    let mut out = BTreeMap::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}

fn open_cfs(o: Options, path: &str) -> DB {
    let descs = ["default", "other"]
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(*n, ColumnFamilyOptions { ..o.cf.clone() }))
        .collect();
    DB::open_cf(o, path, descs).unwrap()
}

#[test]
fn checkpoint_holds_exactly_the_data_flushed_or_not() {
    for log_size_for_flush in [0, u64::MAX] {
        let fs = MemFileSystem::new();
        let db = open_cfs(mem_opts(&fs), "/db");
        let other = db.cf_handle("other").unwrap();
        let wo = WriteOptions::default();
        let mut model: BTreeMap<&str, BTreeMap<Vec<u8>, Vec<u8>>> = BTreeMap::new();
        for i in 0..3000u64 {
            let (k, v) = (
                key(i * 7 % 3000),
                format!("v{i}-{}", "x".repeat(40)).into_bytes(),
            );
            if i % 3 == 0 {
                db.put_cf(&wo, &other, &k, &v).unwrap();
                model.entry("other").or_default().insert(k, v);
            } else {
                db.put(&wo, &k, &v).unwrap();
                model.entry("default").or_default().insert(k, v);
            }
            if i % 500 == 0 {
                db.delete(&wo, &key(i / 2)).unwrap();
                model.entry("default").or_default().remove(&key(i / 2));
            }
        }
        // Some data only in the memtables (and the WAL).
        db.put(&wo, b"last", b"unflushed").unwrap();
        model
            .entry("default")
            .or_default()
            .insert(b"last".to_vec(), b"unflushed".to_vec());

        let seq = Checkpoint::new(&db)
            .unwrap()
            .create_checkpoint(Path::new("/snap"), log_size_for_flush)
            .unwrap();
        assert_eq!(seq, db.latest_sequence_number());
        assert!(
            !fs.file_exists(Path::new("/snap.tmp")),
            "staging directory left"
        );
        // Later writes do not reach the checkpoint.
        db.put(&wo, b"after", b"1").unwrap();
        let names = fs.children(Path::new("/snap")).unwrap();
        assert!(
            names.iter().any(|n| n.starts_with("MANIFEST-")),
            "{names:?}"
        );
        assert!(names.iter().any(|n| n.starts_with("OPTIONS-")), "{names:?}");
        if log_size_for_flush == u64::MAX {
            assert!(
                names.iter().any(|n| n.ends_with(".log")),
                "no WAL copied: {names:?}"
            );
        }
        drop(db);

        let cp = open_cfs(mem_opts(&fs), "/snap");
        for cf in ["default", "other"] {
            assert_eq!(
                scan_cf(&cp, cf),
                model[cf],
                "column family {cf}, flush={log_size_for_flush}"
            );
        }
        // The checkpoint is a database of its own.
        cp.put(&wo, b"cp-only", b"1").unwrap();
        drop(cp);
        let db = open_cfs(mem_opts(&fs), "/db");
        assert!(
            db.get(&ReadOptions::default(), b"cp-only")
                .unwrap()
                .is_none()
        );
        assert_eq!(
            db.get(&ReadOptions::default(), b"after")
                .unwrap()
                .as_deref(),
            Some(&b"1"[..]),
            "flush={log_size_for_flush}: {:?}",
            fs.children(Path::new("/db")).unwrap()
        );
    }
}

#[test]
fn target_must_not_exist_and_staging_leftovers_are_removed() {
    let fs = MemFileSystem::new();
    let db = DB::open(mem_opts(&fs), "/db").unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    let cp = Checkpoint::new(&db).unwrap();
    fs.create_dir_all(Path::new("/exists")).unwrap();
    let e = cp.create_checkpoint(Path::new("/exists"), 0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("Directory exists"), "{e}");
    // A previous attempt that died half-way left a staging directory.
    fs.create_dir_all(Path::new("/snap.tmp")).unwrap();
    fs.write_file(Path::new("/snap.tmp/000009.sst"), b"junk", true)
        .unwrap();
    cp.create_checkpoint(Path::new("/snap"), 0).unwrap();
    assert!(!fs.file_exists(Path::new("/snap.tmp")));
    assert!(!fs.file_exists(Path::new("/snap/000009.sst")));
    drop(db);
    let snap = DB::open(mem_opts(&fs), "/snap").unwrap();
    assert_eq!(
        snap.get(&ReadOptions::default(), b"k").unwrap().as_deref(),
        Some(&b"v"[..])
    );
}

#[test]
fn checkpoint_under_concurrent_writers_holds_a_prefix_of_each() {
    // Four writers each write their own ascending keys; the checkpoint must
    // hold, for each writer, keys 0..n for some n (a prefix), whatever
    // flushes and compactions run meanwhile.
    let fs = MemFileSystem::new();
    let db = Arc::new(DB::open(mem_opts(&fs), "/db").unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u64)
        .map(|t| {
            let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) || i < 500 {
                    let k = format!("w{t}-{i:08}");
                    db.put(&WriteOptions::default(), k.as_bytes(), &[b'x'; 100])
                        .unwrap();
                    i += 1;
                }
                i
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    for (n, flush) in [(0, 0), (1, u64::MAX), (2, 1 << 20)] {
        Checkpoint::new(&db)
            .unwrap()
            .create_checkpoint(Path::new(&format!("/snap{n}")), flush)
            .unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        assert!(w.join().unwrap() >= 500);
    }
    for n in 0..3 {
        let snap = DB::open(mem_opts(&fs), format!("/snap{n}")).unwrap();
        let mut per: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        let mut it = snap.iter(&ReadOptions::default()).unwrap();
        while it.valid() {
            let k = String::from_utf8(it.key().to_vec()).unwrap();
            let (t, i) = k[1..].split_once('-').unwrap();
            per.entry(t.parse().unwrap())
                .or_default()
                .push(i.parse().unwrap());
            it.next();
        }
        it.status().unwrap();
        for (t, keys) in &per {
            let want: Vec<u64> = (0..keys.len() as u64).collect();
            assert_eq!(keys, &want, "checkpoint {n}: writer {t} is not a prefix");
        }
    }
}

#[test]
fn tables_are_hard_linked_on_a_real_file_system() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let (db_path, snap) = (dir.path().join("db"), dir.path().join("snap"));
    let o = Options {
        create_if_missing: true,
        ..Options::default()
    };
    let db = DB::open(o.clone(), &db_path).unwrap();
    for i in 0..1000u64 {
        db.put(&WriteOptions::default(), &key(i), b"value").unwrap();
    }
    db.flush().unwrap();
    Checkpoint::new(&db)
        .unwrap()
        .create_checkpoint(&snap, 0)
        .unwrap();
    let tables: Vec<_> = std::fs::read_dir(&snap)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    assert!(!tables.is_empty());
    for t in &tables {
        let a = std::fs::metadata(t).unwrap();
        let b = std::fs::metadata(db_path.join(t.file_name().unwrap())).unwrap();
        assert_eq!(a.ino(), b.ino(), "{} is a copy, not a link", t.display());
    }
    drop(db);
    let cp = DB::open(o, &snap).unwrap();
    assert_eq!(
        cp.get(&ReadOptions::default(), &key(999))
            .unwrap()
            .as_deref(),
        Some(&b"value"[..])
    );
    drop(cp);
    rocksdb_ldb_reads(&snap, 1000);
}

/// RocksDB 7.8.3's `ldb scan` reads the checkpoint (`n` keys).
fn rocksdb_ldb_reads(path: &Path, n: usize) {
    let Some(out) = common::rocksdb::ldb_scan(path, false) else {
        return;
    };
    assert_eq!(out.lines().count(), n, "ldb scan of the checkpoint");
}

#[test]
fn a_failed_checkpoint_leaves_no_checkpoint_and_a_working_database() {
    // Every file-system operation of a checkpoint fails in turn (once):
    // either the checkpoint is complete and opens with every key, or its
    // directory does not exist; the database keeps working either way,
    // and a retry succeeds.
    use strata::fs::fault::{FailMode, FaultInjectionFileSystem};
    let setup = || {
        let mem = MemFileSystem::new();
        let fs = Arc::new(FaultInjectionFileSystem::new(Arc::new(mem.clone())));
        let mut o = mem_opts(&mem);
        o.fs = Some(fs.clone());
        let db = DB::open(o, "/db").unwrap();
        for i in 0..300u64 {
            db.put(&WriteOptions::default(), &key(i), b"v").unwrap();
        }
        db.flush().unwrap();
        db.put(&WriteOptions::default(), b"unflushed", b"v")
            .unwrap();
        (mem, fs, db)
    };
    let (_, fs, db) = setup();
    let before = fs.op_count();
    Checkpoint::new(&db)
        .unwrap()
        .create_checkpoint(Path::new("/snap"), u64::MAX)
        .unwrap();
    let ops = fs.op_count() - before;
    drop(db);
    assert!(ops > 10, "{ops}");
    let (mut failed, mut made) = (0, 0);
    for k in 0..ops {
        let (mem, fs, db) = setup();
        fs.fail_after(k, FailMode::Once);
        let r = Checkpoint::new(&db)
            .unwrap()
            .create_checkpoint(Path::new("/snap"), u64::MAX);
        fs.clear_faults();
        match r {
            Ok(_) => made += 1,
            Err(_) if mem.file_exists(Path::new("/snap")) => {
                // Only the directory syncs after the final rename can fail
                // once the checkpoint exists (RocksDB reports them too):
                // it must then be complete (checked below).
                failed += 1;
                assert!(!mem.file_exists(Path::new("/snap.tmp")), "fault {k}");
            }
            Err(_) => {
                failed += 1;
                // A retry works (unless the fault hit the WAL flush the
                // checkpoint starts with, which stops writes as any failed
                // WAL write does: then the database stays readable).
                match Checkpoint::new(&db)
                    .unwrap()
                    .create_checkpoint(Path::new("/snap"), u64::MAX)
                {
                    Ok(_) => {}
                    Err(e) => {
                        assert!(
                            db.put(&WriteOptions::default(), b"later", b"v").is_err(),
                            "fault {k}: retry failed with {e} on a writable database"
                        );
                        assert_eq!(scan_cf(&db, "default").len(), 301);
                        continue;
                    }
                }
            }
        }
        drop(db);
        let snap = DB::open(mem_opts(&mem), "/snap").unwrap();
        assert_eq!(scan_cf(&snap, "default").len(), 301, "fault {k}");
    }
    assert!(failed > 0, "no fault surfaced ({made} made)");
}

#[test]
fn an_exported_column_family_imports_into_another_database_and_back() {
    // RocksDB's ExportColumnFamily / CreateColumnFamilyWithImport: the
    // exported tables (flushed first, several levels, range deletions,
    // overwrites) become a column family of another database with the
    // same contents; sequence numbers carry over (the importer's last
    // sequence rises to them, so its later writes win); imported data
    // survives a reopen and compactions; comparator mismatch, an empty
    // list, an existing directory and overlapping tables are refused and
    // leave no column family behind; move_files removes the export.
    let fs = MemFileSystem::new();
    let src = open_cfs(mem_opts(&fs), "/src");
    let other = src.cf_handle("other").unwrap();
    let w = WriteOptions::default();
    for round in 0..3u64 {
        for i in 0..1500 {
            src.put_cf(&w, &other, &key(i), format!("v{round}-{i}").as_bytes())
                .unwrap();
        }
    }
    src.delete_range_cf(&w, &other, &key(100), &key(200))
        .unwrap();
    src.delete_cf(&w, &other, &key(300)).unwrap();
    src.compact_range_cf_opt(&other, None, None, &Default::default())
        .unwrap();
    for i in 0..50 {
        // Unflushed: the export flushes first.
        src.put_cf(&w, &other, &key(5000 + i), b"tail").unwrap();
    }
    let want = scan_cf(&src, "other");
    let cp = Checkpoint::new(&src).unwrap();
    let meta = cp
        .export_column_family(&other, Path::new("/export"))
        .unwrap();
    assert_eq!(meta.db_comparator_name, "leveldb.BytewiseComparator");
    assert!(meta.files.len() > 1, "{:?}", meta.files);
    assert!(meta.files.iter().all(|m| m.db_path == "/export"));
    assert!(fs.file_exists(Path::new("/export")) && !fs.file_exists(Path::new("/export.tmp")));
    assert!(matches!(
        cp.export_column_family(&other, Path::new("/export")),
        Err(Error::InvalidArgument(_))
    ));

    let dst = DB::open(mem_opts(&fs), "/dst").unwrap();
    dst.put(&w, b"before", b"1").unwrap();
    let cf = dst
        .create_column_family_with_import(
            ColumnFamilyOptions::default(),
            "imported",
            &Default::default(),
            &meta,
        )
        .unwrap();
    assert_eq!(scan_cf(&dst, "imported"), want);
    assert!(dst.latest_sequence_number() >= src.latest_sequence_number() - 1);
    // A later write shadows an imported value.
    dst.put_cf(&w, &cf, &key(7), b"newer").unwrap();
    let mut want2 = want.clone();
    want2.insert(key(7), b"newer".to_vec());
    assert_eq!(scan_cf(&dst, "imported"), want2);
    dst.compact_range_cf_opt(&cf, None, None, &Default::default())
        .unwrap();
    assert_eq!(scan_cf(&dst, "imported"), want2);
    drop(dst);
    let descs = ["default", "imported"]
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(*n, ColumnFamilyOptions::default()))
        .collect();
    let mut o = mem_opts(&fs);
    o.create_if_missing = false;
    let dst = DB::open_cf(o, "/dst", descs).unwrap();
    assert_eq!(scan_cf(&dst, "imported"), want2);

    // Refusals leave no column family.
    let rev = ColumnFamilyOptions {
        comparator: Arc::new(strata::ReverseBytewiseComparator),
        ..Default::default()
    };
    let err = dst
        .create_column_family_with_import(rev, "rev", &Default::default(), &meta)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let mut empty = meta.clone();
    empty.files.clear();
    let err = dst
        .create_column_family_with_import(Default::default(), "empty", &Default::default(), &empty)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let mut overlapping = meta.clone();
    for m in &mut overlapping.files {
        m.level = 1;
    }
    overlapping.files.push(overlapping.files[0].clone());
    let err = dst
        .create_column_family_with_import(
            Default::default(),
            "overlap",
            &Default::default(),
            &overlapping,
        )
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(dst.column_families(), ["default", "imported"]);

    // Into the source itself, moving the files.
    let moved = strata::db::ImportColumnFamilyOptions { move_files: true };
    src.create_column_family_with_import(Default::default(), "copy", &moved, &meta)
        .unwrap();
    assert_eq!(scan_cf(&src, "copy"), want);
    assert!(fs.children(Path::new("/export")).unwrap().is_empty());
    src.compact_range_cf_opt(
        &src.cf_handle("copy").unwrap(),
        None,
        None,
        &Default::default(),
    )
    .unwrap();
    assert_eq!(scan_cf(&src, "copy"), want);
    assert_eq!(scan_cf(&src, "other"), want);
}
