//! The WAL written through a shared memory map (`Options::mmap_wal_writes`,
//! on by default on ext4, xfs and tmpfs): the newest WAL ends in reserved
//! zeros while it is written, reported sizes are the records', a crash
//! image (the files as they are while the database runs) recovers every
//! acknowledged write, and closing cuts the WAL to its records.

mod common;

use std::path::Path;

use strata::{DB, Options, ReadOptions, WalRecoveryMode, WriteOptions};

fn wal_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    v
}

/// Copies the database's files as they are now (a crash image: what a
/// `kill -9` would leave, the page cache included).
fn crash_image(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() && p.file_name().is_some_and(|n| n != "LOCK") {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

fn opts() -> Options {
    Options {
        create_if_missing: true,
        ..Options::default()
    }
}

#[test]
fn a_mapped_wal_recovers_from_a_crash_image_and_is_cut_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let db = DB::open(opts(), &db_dir).unwrap();
    let w = WriteOptions::default();
    for i in 0..2000u32 {
        db.put(&w, format!("k{i:05}").as_bytes(), &[b'v'; 100])
            .unwrap();
    }
    let wals = wal_files(&db_dir);
    assert_eq!(wals.len(), 1);
    let on_disk = std::fs::metadata(&wals[0]).unwrap().len();
    let listed = db.sorted_wal_files().unwrap();
    let logical = listed[0].size;
    assert!(logical > 2000 * 100, "{logical}");
    // Mapped: the file is longer than its records (the reserved region).
    assert!(on_disk > logical, "on disk {on_disk}, records {logical}");
    let bytes = std::fs::read(&wals[0]).unwrap();
    assert!(bytes[logical as usize..].iter().all(|&b| b == 0));

    // The files as a crash would leave them: every write is there, and
    // the zero tail reads as the end of the log.
    let image = dir.path().join("image");
    crash_image(&db_dir, &image);
    // RocksDB's ldb reads the zero-tailed WAL to its last record, no error.
    if let Some(mut ldb) = common::rocksdb::ldb() {
        let image_wal = image.join(wals[0].file_name().unwrap());
        let out = ldb
            .arg("dump_wal")
            .arg(format!("--walfile={}", image_wal.display()))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}{stderr}");
        assert_eq!(
            text.lines().filter(|l| l.contains("PUT(0)")).count(),
            2000,
            "{stderr}"
        );
        assert!(
            !text.contains("rror") && !stderr.contains("orrupt"),
            "{text}{stderr}"
        );
    }
    let copy = DB::open(opts(), &image).unwrap();
    let ro = ReadOptions::default();
    for i in (0..2000u32).step_by(7) {
        assert!(
            copy.get(&ro, format!("k{i:05}").as_bytes())
                .unwrap()
                .is_some()
        );
    }
    drop(copy);

    // A synced write keeps the map (msync + fdatasync) and is readable
    // from the file at once.
    let sync = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    db.put(&sync, b"synced", b"yes").unwrap();
    let logical = db.sorted_wal_files().unwrap()[0].size;
    db.close().unwrap();
    // Closing cut the WAL to its records.
    assert_eq!(std::fs::metadata(&wals[0]).unwrap().len(), logical);

    let db = DB::open(opts(), &db_dir).unwrap();
    assert_eq!(
        db.get(&ro, b"synced").unwrap().as_deref(),
        Some(&b"yes"[..])
    );
    assert!(db.get(&ro, b"k01999").unwrap().is_some());
}

#[test]
fn a_switched_away_wal_is_cut_before_the_next_one_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    // WALs kept in the archive, so the switched-away one can be looked at.
    let mut o = opts();
    o.wal_ttl_seconds = 3600;
    let db = DB::open(o, &db_dir).unwrap();
    let w = WriteOptions::default();
    for i in 0..500u32 {
        db.put(&w, format!("a{i:05}").as_bytes(), &[b'x'; 50])
            .unwrap();
    }
    let first = db.sorted_wal_files().unwrap()[0].clone();
    db.flush().unwrap();
    db.put(&w, b"after", b"switch").unwrap();
    let files = db.sorted_wal_files().unwrap();
    let old = files
        .iter()
        .find(|f| f.log_number == first.log_number)
        .expect("the old WAL is archived");
    let path = db_dir.join(old.path_name.trim_start_matches('/'));
    // Exactly its records: no zero tail in front of the newer WAL.
    assert_eq!(std::fs::metadata(&path).unwrap().len(), old.size);
    assert!(old.size >= first.size);
}

#[test]
fn absolute_consistency_and_manual_wal_flush_write_with_write_calls() {
    for mode in [0, 1] {
        let dir = tempfile::tempdir().unwrap();
        let db_dir = dir.path().join("db");
        let mut o = opts();
        if mode == 0 {
            o.wal_recovery_mode = WalRecoveryMode::AbsoluteConsistency;
        } else {
            o.manual_wal_flush = true;
        }
        let db = DB::open(o, &db_dir).unwrap();
        db.put(&WriteOptions::default(), b"k", b"v").unwrap();
        db.flush_wal(false).unwrap();
        let wals = wal_files(&db_dir);
        let logical = db.sorted_wal_files().unwrap()[0].size;
        // Not mapped: the file is exactly its records.
        assert_eq!(std::fs::metadata(&wals[0]).unwrap().len(), logical);
    }
}
