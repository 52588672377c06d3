//! Backups (`strata::utilities::backup`): full and incremental backups
//! restored to equal databases, RocksDB 7.8.3's directory layout and meta
//! file, backup information, verification that catches damage, restores
//! that refuse damaged files, purge/delete/garbage collection, reopening
//! the engine, several copy threads with a rate limit and progress
//! callbacks, consistency under concurrent writers, and interop with
//! RocksDB's `ldb backup` / `ldb restore` both ways.
//!
//! The `ldb` checks need `ldb` on the PATH; they fail with a clear message
//! otherwise, unless STRATA_SKIP_INTEROP=1.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use strata::options::{ColumnFamilyOptions, Options, ReadOptions, WriteOptions};
use strata::utilities::backup::{
    BackupEngine, BackupEngineOptions, CreateBackupOptions, RestoreOptions,
};
use strata::{ColumnFamilyDescriptor, DB, Error};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts() -> Options {
    let mut o = Options {
        create_if_missing: true,
        create_missing_column_families: true,
        ..Options::default()
    };
    o.cf.write_buffer_size = 64 << 10;
    o.cf.target_file_size_base = 64 << 10;
    o
}

fn open_cfs(path: &Path) -> DB {
    let o = opts();
    let descs = ["default", "other"]
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(*n, ColumnFamilyOptions { ..o.cf.clone() }))
        .collect();
    DB::open_cf(o, path, descs).unwrap()
}

fn scan_cf(db: &DB, cf: &str) -> Model {
    let h = db.cf_handle(cf).unwrap();
    let mut it = db.iter_cf(&ReadOptions::default(), &h).unwrap();
    let mut out = Model::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}

fn fill(db: &DB, from: u64, n: u64, tag: &str) {
    let other = db.cf_handle("other").unwrap();
    for i in from..from + n {
        let k = format!("key{i:08}");
        let v = format!("{tag}-{i}-{}", "x".repeat(100));
        db.put(&WriteOptions::default(), k.as_bytes(), v.as_bytes())
            .unwrap();
        if i % 5 == 0 {
            db.put_cf(&WriteOptions::default(), &other, k.as_bytes(), b"o")
                .unwrap();
        }
    }
}

fn dir_bytes(dir: &Path) -> (usize, u64) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    rd.map(|e| e.unwrap().metadata().unwrap().len())
        .fold((0, 0), |(n, b), s| (n + 1, b + s))
}

#[test]
fn full_and_incremental_backups_restore_equal_databases() {
    let dir = tempfile::tempdir().unwrap();
    let (db_path, bk) = (dir.path().join("db"), dir.path().join("backups"));
    let db = open_cfs(&db_path);
    fill(&db, 0, 20_000, "a");
    db.flush().unwrap();
    // Unflushed writes too: they reach the backup through its WALs.
    fill(&db, 20_000, 500, "wal");
    let mut engine = BackupEngine::open(BackupEngineOptions::new(&bk)).unwrap();
    let id1 = engine.create_new_backup(&db, false).unwrap();
    assert_eq!(id1, 1);
    let want1 = (scan_cf(&db, "default"), scan_cf(&db, "other"));
    let (shared_files, shared_bytes) = dir_bytes(&bk.join("shared_checksum"));
    assert!(shared_files > 0);

    // Overwrite 1% of the keys: the second backup copies only new tables.
    fill(&db, 0, 200, "b");
    db.flush().unwrap();
    let id2 = engine
        .create_new_backup_with_metadata(
            &CreateBackupOptions {
                flush_before_backup: true,
                ..Default::default()
            },
            &db,
            b"second \x01",
        )
        .unwrap();
    assert_eq!(id2, 2);
    let want2 = (scan_cf(&db, "default"), scan_cf(&db, "other"));
    let (files_after, bytes_after) = dir_bytes(&bk.join("shared_checksum"));
    let added = bytes_after - shared_bytes;
    assert!(files_after > shared_files);
    // Only tables written since the first backup were copied (its own
    // shared files were reused, not copied again).
    let meta1 = std::fs::read_to_string(bk.join("meta/1")).unwrap();
    let meta2 = std::fs::read_to_string(bk.join("meta/2")).unwrap();
    let tables = |m: &str| -> Vec<String> {
        m.lines()
            .filter(|l| l.starts_with("shared_checksum/"))
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect()
    };
    let (t1, t2) = (tables(&meta1), tables(&meta2));
    let max1 = t1
        .iter()
        .map(|t| t[16..22].parse::<u64>().unwrap())
        .max()
        .unwrap();
    for t in t2.iter().filter(|t| !t1.contains(t)) {
        assert!(t[16..22].parse::<u64>().unwrap() > max1, "{t} copied again");
    }
    assert_eq!(
        files_after,
        t1.len() + t2.iter().filter(|t| !t1.contains(t)).count()
    );
    assert!(
        added * 100 <= bytes_after * 10,
        "incremental backup copied {added} of {bytes_after} bytes"
    );

    let infos = engine.get_backup_info(true);
    assert_eq!(
        infos.iter().map(|i| i.backup_id).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(infos[1].app_metadata, b"second \x01");
    assert_eq!(infos[0].number_files as usize, infos[0].file_details.len());
    assert_eq!(
        infos[0].size,
        infos[0].file_details.iter().map(|f| f.size).sum::<u64>()
    );
    assert!(
        infos[0]
            .file_details
            .iter()
            .any(|f| f.relative_filename == "private/1/CURRENT")
    );
    assert_eq!(engine.get_latest_backup_info(false).unwrap().backup_id, 2);
    engine.verify_backup(1, true).unwrap();
    engine.verify_backup(2, true).unwrap();
    drop(db);

    // The meta file, as RocksDB writes it (schema 1).
    let meta = std::fs::read_to_string(bk.join("meta/1")).unwrap();
    let lines: Vec<&str> = meta.lines().collect();
    assert!(
        lines[0].parse::<u64>().is_ok() && lines[1].parse::<u64>().is_ok(),
        "{meta}"
    );
    let n: usize = lines[2].parse().unwrap();
    assert_eq!(lines.len(), 3 + n);
    for l in &lines[3..] {
        let p: Vec<&str> = l.split(' ').collect();
        assert_eq!(p.len(), 3, "{l}");
        assert_eq!(p[1], "crc32");
        assert!(p[2].parse::<u32>().is_ok());
        assert!(bk.join(p[0]).exists(), "{l}");
    }
    // Tables named by session id and size (RocksDB 7.8.3's default).
    assert!(
        lines[3..]
            .iter()
            .any(|l| l.starts_with("shared_checksum/") && l.contains("_s")),
        "{meta}"
    );

    // Each backup restores to exactly its state, by a freshly opened
    // engine.
    let engine = BackupEngine::open_read_only(BackupEngineOptions::new(&bk)).unwrap();
    for (id, want) in [(1, &want1), (2, &want2)] {
        let to = dir.path().join(format!("restored{id}"));
        engine
            .restore_db_from_backup(&RestoreOptions::default(), id, &to, &to)
            .unwrap();
        let r = open_cfs(&to);
        assert_eq!(scan_cf(&r, "default"), want.0, "backup {id}");
        assert_eq!(scan_cf(&r, "other"), want.1, "backup {id}");
    }
    // Restoring over an existing database replaces it.
    let to = dir.path().join("restored1");
    engine
        .restore_db_from_latest_backup(&RestoreOptions::default(), &to, &to)
        .unwrap();
    let r = open_cfs(&to);
    assert_eq!(scan_cf(&r, "default"), want2.0);
}

#[test]
fn damage_is_found_by_verify_and_refused_by_restore() {
    let dir = tempfile::tempdir().unwrap();
    let (db_path, bk) = (dir.path().join("db"), dir.path().join("backups"));
    let db = open_cfs(&db_path);
    fill(&db, 0, 3000, "a");
    db.flush().unwrap();
    let mut engine = BackupEngine::open(BackupEngineOptions::new(&bk)).unwrap();
    engine.create_new_backup(&db, true).unwrap();
    drop(db);
    let table = std::fs::read_dir(bk.join("shared_checksum"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[100] ^= 0x55;
    std::fs::write(&table, &bytes).unwrap();
    // Same size: only the checksum sees it.
    engine.verify_backup(1, false).unwrap();
    match engine.verify_backup(1, true) {
        Err(Error::Corruption { msg, .. }) => assert!(msg.contains("checksum"), "{msg}"),
        other => panic!("expected Corruption, got {other:?}"),
    }
    let to = dir.path().join("restored");
    match engine.restore_db_from_backup(&RestoreOptions::default(), 1, &to, &to) {
        Err(Error::Corruption { msg, .. }) => {
            assert!(msg.contains("expected checksum is"), "{msg}")
        }
        other => panic!("expected Corruption, got {other:?}"),
    }
    // The failed restore left no CURRENT: nothing opens there.
    assert!(!to.join("CURRENT").exists());
    // A shorter file: the size check sees it.
    std::fs::write(&table, &bytes[..bytes.len() - 1]).unwrap();
    assert!(engine.verify_backup(1, false).is_err());
    // Reopened, the engine reports the backup as corrupt only if a file
    // is missing; remove one.
    std::fs::remove_file(&table).unwrap();
    let engine = BackupEngine::open(BackupEngineOptions::new(&bk)).unwrap();
    assert_eq!(engine.get_corrupted_backups(), [1]);
    assert!(engine.get_backup_info(false).is_empty());
    assert!(engine.get_backup_info_by_id(1, false).is_err());
}

#[test]
fn purge_delete_and_garbage_collection_keep_exactly_what_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (db_path, bk) = (dir.path().join("db"), dir.path().join("backups"));
    let db = open_cfs(&db_path);
    let mut engine = BackupEngine::open(BackupEngineOptions::new(&bk)).unwrap();
    for round in 0..4u64 {
        fill(&db, round * 1000, 1000, "r");
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        engine.create_new_backup(&db, false).unwrap();
    }
    let want = scan_cf(&db, "default");
    // Leftovers of a backup that died: garbage.
    std::fs::write(bk.join("shared_checksum/.000999_1_1.sst.tmp"), b"x").unwrap();
    std::fs::create_dir_all(bk.join("private/77")).unwrap();
    std::fs::write(bk.join("private/77/CURRENT"), b"x").unwrap();
    std::fs::write(bk.join("meta/.77.tmp"), b"x").unwrap();
    engine.purge_old_backups(1).unwrap();
    assert_eq!(
        engine
            .get_backup_info(false)
            .iter()
            .map(|i| i.backup_id)
            .collect::<Vec<_>>(),
        [4]
    );
    assert!(!bk.join("private/77").exists());
    assert!(!bk.join("meta/.77.tmp").exists());
    assert!(!bk.join("private/1").exists());
    assert!(!bk.join("meta/1").exists());
    // Every shared file left is named by backup 4's meta file.
    let meta = std::fs::read_to_string(bk.join("meta/4")).unwrap();
    for e in std::fs::read_dir(bk.join("shared_checksum")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            meta.contains(&format!("shared_checksum/{name} ")),
            "{name} is garbage"
        );
    }
    let to = dir.path().join("restored");
    engine
        .restore_db_from_backup(&RestoreOptions::default(), 4, &to, &to)
        .unwrap();
    assert_eq!(scan_cf(&open_cfs(&to), "default"), want);
    engine.delete_backup(4).unwrap();
    assert!(engine.get_backup_info(false).is_empty());
    assert_eq!(dir_bytes(&bk.join("shared_checksum")).0, 0);
    assert!(matches!(engine.delete_backup(4), Err(Error::NotFound(_))));
    // Backup numbers keep growing after deletions.
    assert_eq!(engine.create_new_backup(&db, false).unwrap(), 5);
}

#[test]
fn several_threads_a_rate_limit_and_progress_callbacks() {
    let dir = tempfile::tempdir().unwrap();
    let (db_path, bk) = (dir.path().join("db"), dir.path().join("backups"));
    let db = open_cfs(&db_path);
    fill(&db, 0, 20_000, "a");
    db.flush().unwrap();
    let mut o = BackupEngineOptions::new(&bk);
    o.max_background_operations = 4;
    o.callback_trigger_interval_size = 64 << 10;
    o.backup_rate_limit = 4 << 20;
    let mut engine = BackupEngine::open(o).unwrap();
    let calls = Arc::new(AtomicU64::new(0));
    let c = Arc::clone(&calls);
    let started = std::time::Instant::now();
    engine
        .create_new_backup_with_metadata(
            &CreateBackupOptions {
                flush_before_backup: false,
                progress_callback: Some(Arc::new(move || {
                    c.fetch_add(1, Ordering::Relaxed);
                })),
            },
            &db,
            b"",
        )
        .unwrap();
    let took = started.elapsed().as_secs_f64();
    let size = engine.get_latest_backup_info(false).unwrap().size;
    // The limit holds (with a tenth of slack for the first chunk).
    let floor = size as f64 / (4 << 20) as f64 * 0.9 - 0.3;
    assert!(took >= floor, "{size} bytes in {took:.2} s at 4 MiB/s");
    let expected_calls = size / (64 << 10);
    let got = calls.load(Ordering::Relaxed);
    assert!(
        got + 2 >= expected_calls && got <= expected_calls + 1,
        "{got} callbacks for {size} bytes"
    );
    let to = dir.path().join("restored");
    engine
        .restore_db_from_latest_backup(&RestoreOptions::default(), &to, &to)
        .unwrap();
    assert_eq!(scan_cf(&open_cfs(&to), "default"), scan_cf(&db, "default"));
}

#[test]
fn a_backup_under_concurrent_writers_holds_a_prefix_of_each() {
    let dir = tempfile::tempdir().unwrap();
    let (db_path, bk) = (dir.path().join("db"), dir.path().join("backups"));
    let db = Arc::new(open_cfs(&db_path));
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..4).map(|_| AtomicU64::new(0)).collect());
    let writers: Vec<_> = (0..4u64)
        .map(|t| {
            let (db, stop, acked) = (Arc::clone(&db), Arc::clone(&stop), Arc::clone(&acked));
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let k = format!("t{t}-{i:08}");
                    db.put(&WriteOptions::default(), k.as_bytes(), &[b'v'; 200])
                        .unwrap();
                    i += 1;
                    acked[t as usize].store(i, Ordering::Release);
                }
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut engine = BackupEngine::open(BackupEngineOptions::new(&bk)).unwrap();
    let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
    engine.create_new_backup(&db, false).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let to = dir.path().join("restored");
    engine
        .restore_db_from_latest_backup(&RestoreOptions::default(), &to, &to)
        .unwrap();
    let got = scan_cf(&open_cfs(&to), "default");
    for t in 0..4u64 {
        let keys: Vec<u64> = got
            .keys()
            .filter_map(|k| {
                std::str::from_utf8(k)
                    .ok()?
                    .strip_prefix(&format!("t{t}-"))?
                    .parse()
                    .ok()
            })
            .collect();
        let n = keys.len() as u64;
        assert_eq!(keys, (0..n).collect::<Vec<_>>(), "writer {t}: not a prefix");
        assert!(
            n >= before[t as usize],
            "writer {t}: {n} < {} acknowledged before",
            before[t as usize]
        );
    }
}

/// Runs RocksDB's `ldb` with `args`, asserting success; `None` when
/// skipped.
fn ldb(args: &[String]) -> Option<String> {
    let mut c = common::rocksdb::ldb()?;
    let out = c.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ldb {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn rocksdb_restores_our_backups_and_we_restore_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let (db_path, bk) = (dir.path().join("db"), dir.path().join("backups"));
    let db = DB::open(opts(), &db_path).unwrap();
    for i in 0..2000u64 {
        db.put(
            &WriteOptions::default(),
            format!("k{i:05}").as_bytes(),
            format!("v{i}").as_bytes(),
        )
        .unwrap();
    }
    db.flush().unwrap();
    db.put(&WriteOptions::default(), b"zz-in-wal", b"1")
        .unwrap();
    let mut engine = BackupEngine::open(BackupEngineOptions::new(&bk)).unwrap();
    engine.create_new_backup(&db, false).unwrap();
    let want: Vec<String> = {
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        let mut v = Vec::new();
        while it.valid() {
            v.push(format!(
                "{} : {}",
                String::from_utf8_lossy(it.key()),
                String::from_utf8_lossy(it.value())
            ));
            it.next();
        }
        v
    };
    drop(db);
    // RocksDB restores Strata's backup.
    let by_rocks = dir.path().join("by_rocks");
    let Some(out) = ldb(&[
        format!("--db={}", by_rocks.display()),
        format!("--backup_dir={}", bk.display()),
        "restore".into(),
    ]) else {
        return;
    };
    assert!(out.contains("restore from backup OK"), "{out}");
    let scan = ldb(&[format!("--db={}", by_rocks.display()), "scan".into()]).unwrap();
    assert_eq!(scan.lines().collect::<Vec<_>>(), want);

    // RocksDB backs up (its own copy of the database) into the same
    // directory: backup 2, sharing our tables where names match.
    let out = ldb(&[
        format!("--db={}", by_rocks.display()),
        format!("--backup_dir={}", bk.display()),
        "backup".into(),
    ])
    .unwrap();
    assert!(out.contains("create new backup OK"), "{out}");
    let engine = BackupEngine::open(BackupEngineOptions::new(&bk)).unwrap();
    assert_eq!(
        engine
            .get_backup_info(false)
            .iter()
            .map(|i| i.backup_id)
            .collect::<Vec<_>>(),
        [1, 2]
    );
    engine.verify_backup(2, true).unwrap();
    let to = dir.path().join("ours_from_theirs");
    engine
        .restore_db_from_backup(&RestoreOptions::default(), 2, &to, &to)
        .unwrap();
    let r = DB::open(opts(), &to).unwrap();
    let mut it = r.iter(&ReadOptions::default()).unwrap();
    let mut got = Vec::new();
    while it.valid() {
        got.push(format!(
            "{} : {}",
            String::from_utf8_lossy(it.key()),
            String::from_utf8_lossy(it.value())
        ));
        it.next();
    }
    assert_eq!(got, want);
}
