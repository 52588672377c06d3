//! `repair_db`: a database whose MANIFEST is lost or damaged is rebuilt
//! from its tables and WALs with every acknowledged write (flushed or only
//! in the WAL, every column family), including a compacted multi-level
//! tree (merged, since L0 could not hold its tables in order); unreadable
//! tables and the old MANIFESTs go to `lost/`. RocksDB's `ldb repair`
//! and Strata repair each other's databases.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use std::sync::Arc;

use strata::db::{repair_db, repair_db_cf};
use strata::fs::fault::{FailMode, FaultInjectionFileSystem};
use strata::fs::mem::MemFileSystem;
use strata::options::{ColumnFamilyOptions, Options, ReadOptions, WriteOptions};
use strata::{ColumnFamilyDescriptor, DB, Error};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts() -> Options {
    let mut o = Options {
        create_if_missing: true,
        create_missing_column_families: true,
        ..Options::default()
    };
    o.cf.write_buffer_size = 32 << 10;
    o.cf.target_file_size_base = 32 << 10;
    o.cf.max_bytes_for_level_base = 128 << 10;
    o
}

fn descs(o: &Options) -> Vec<ColumnFamilyDescriptor> {
    ["default", "other"]
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(*n, ColumnFamilyOptions { ..o.cf.clone() }))
        .collect()
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

fn lose_manifest(db: &Path) {
    for e in std::fs::read_dir(db).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        if n.starts_with("MANIFEST-") || n == "CURRENT" {
            std::fs::remove_file(p).unwrap();
        }
    }
}

/// Writes rounds of overwrites and deletions into both column families,
/// compacting between rounds; returns the expected contents.
fn workload(db: &DB, rounds: u64) -> (Model, Model) {
    workload_n(db, rounds, 2000)
}

/// [`workload`] with `n` writes a round.
fn workload_n(db: &DB, rounds: u64, n: u64) -> (Model, Model) {
    let other = db.cf_handle("other").unwrap();
    let (mut m0, mut m1) = (Model::new(), Model::new());
    for r in 0..rounds {
        for i in 0..n {
            let k = format!("key{:05}", (i * 7 + r * 13) % 3000).into_bytes();
            let v = format!("r{r}-{i}-{}", "x".repeat(50)).into_bytes();
            db.put(&WriteOptions::default(), &k, &v).unwrap();
            m0.insert(k.clone(), v.clone());
            if i % 4 == 0 {
                db.put_cf(&WriteOptions::default(), &other, &k, b"o")
                    .unwrap();
                m1.insert(k.clone(), b"o".to_vec());
            }
            if i % 9 == 0 {
                let d = format!("key{:05}", (i * 3 + r) % 3000).into_bytes();
                db.delete(&WriteOptions::default(), &d).unwrap();
                m0.remove(&d);
            }
        }
        if r + 1 < rounds {
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
        }
    }
    (m0, m1)
}

/// A tree whose bottom level went through full compactions has its old
/// entries at sequence 0: the tables' ranges are disjoint, repair keeps
/// them in L0 newest first, and every write reads back.
#[test]
fn a_lost_manifest_of_a_zeroed_tree_is_rebuilt_in_level_0() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let o = opts();
    let db = DB::open_cf(o.clone(), &path, descs(&o)).unwrap();
    let (m0, m1) = workload(&db, 3);
    assert!(
        db.live_files_metadata()
            .iter()
            .any(|f| f.column_family_name == "default" && f.largest_seqno == 0),
        "{:?}",
        db.live_files_metadata()
    );
    db.close().unwrap();
    lose_manifest(&path);
    repair_db_cf(&o, &path, descs(&o)).unwrap();
    let db = DB::open_cf(o.clone(), &path, descs(&o)).unwrap();
    assert_eq!(scan_cf(&db, "default"), m0);
    assert_eq!(scan_cf(&db, "other"), m1);
    db.verify_checksums().unwrap();
}

#[test]
fn a_lost_manifest_is_rebuilt_with_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let o = opts();
    let db = DB::open_cf(o.clone(), &path, descs(&o)).unwrap();
    // Several compacted rounds (tables on several levels, overlapping
    // sequence ranges), then a last round only partly flushed. The
    // snapshot keeps every entry's sequence number: without it, full
    // compactions give the bottom level's entries sequence 0 (as RocksDB)
    // and the ranges no longer overlap (the next test covers that case).
    let snapshot = db.snapshot();
    let (m0, m1) = workload(&db, 3);
    // Released only once the database is closed: released before, it
    // could let a compaction give the bottom files sequence 0 first.
    db.close().unwrap();
    drop(snapshot);
    lose_manifest(&path);
    assert!(
        DB::open_cf(
            Options {
                create_if_missing: false,
                ..o.clone()
            },
            &path,
            descs(&o)
        )
        .is_err()
    );
    repair_db_cf(&o, &path, descs(&o)).unwrap();
    let db = DB::open_cf(o.clone(), &path, descs(&o)).unwrap();
    // The tables' sequence ranges overlapped: merged into the last level.
    assert!(
        db.live_files_metadata()
            .iter()
            .any(|f| f.column_family_name == "default" && f.level == 6),
        "{:?}",
        db.live_files_metadata()
    );
    assert_eq!(scan_cf(&db, "default"), m0);
    assert_eq!(scan_cf(&db, "other"), m1);
    // It keeps working: writes after repair win, and survive a reopen.
    db.put(&WriteOptions::default(), b"key00001", b"after")
        .unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    drop(db);
    let db = DB::open_cf(o.clone(), &path, descs(&o)).unwrap();
    assert_eq!(
        db.get(&ReadOptions::default(), b"key00001")
            .unwrap()
            .as_deref(),
        Some(&b"after"[..])
    );
    db.verify_checksums().unwrap();
    // The replayed WAL was set aside, not deleted.
    assert!(
        path.join("lost").read_dir().unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".log"))
    );
}

#[test]
fn a_damaged_manifest_and_an_unreadable_table_are_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let o = opts();
    let db = DB::open(o.clone(), &path).unwrap();
    for i in 0..500u64 {
        db.put(
            &WriteOptions::default(),
            format!("a{i:04}").as_bytes(),
            b"v",
        )
        .unwrap();
    }
    db.flush().unwrap();
    for i in 0..500u64 {
        db.put(
            &WriteOptions::default(),
            format!("b{i:04}").as_bytes(),
            b"v",
        )
        .unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    // Garbage over the MANIFEST, and a table cut in half.
    let mut tables = Vec::new();
    for e in std::fs::read_dir(&path).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        if n.starts_with("MANIFEST-") {
            std::fs::write(&p, b"not a manifest").unwrap();
        }
        if n.ends_with(".sst") {
            tables.push(p);
        }
    }
    tables.sort();
    let bad = tables.last().unwrap();
    let bytes = std::fs::read(bad).unwrap();
    std::fs::write(bad, &bytes[..bytes.len() / 2]).unwrap();
    repair_db(&o, &path).unwrap();
    let db = DB::open(o, &path).unwrap();
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    let mut n = 0;
    while it.valid() {
        assert!(it.key().starts_with(b"a"), "{:?}", it.key());
        n += 1;
        it.next();
    }
    assert_eq!(n, 500);
    assert!(path.join("lost").join(bad.file_name().unwrap()).exists());
}

#[test]
fn nothing_to_repair_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    match repair_db(&opts(), dir.path().join("empty")) {
        Err(Error::Corruption { msg, .. }) => {
            assert!(msg.contains("repair found no files"), "{msg}")
        }
        other => panic!("expected Corruption, got {other:?}"),
    }
}

#[test]
fn rocksdb_and_strata_repair_each_other_s_databases() {
    let Some(mut ldb) = common::rocksdb::ldb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Strata repairs a database RocksDB wrote.
    let theirs = dir.path().join("theirs");
    let input: String = (0..1000).map(|i| format!("k{i:04} ==> v{i}\n")).collect();
    let mut child = ldb
        .arg(format!("--db={}", theirs.display()))
        .arg("--create_if_missing")
        .arg("load")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    lose_manifest(&theirs);
    let o = Options {
        create_if_missing: false,
        ..Options::default()
    };
    repair_db(&o, &theirs).unwrap();
    let db = DB::open(o.clone(), &theirs).unwrap();
    assert_eq!(
        db.get(&ReadOptions::default(), b"k0999")
            .unwrap()
            .as_deref(),
        Some(&b"v999"[..])
    );
    drop(db);
    // RocksDB repairs one Strata wrote.
    let mine = dir.path().join("mine");
    let db = DB::open(opts(), &mine).unwrap();
    let (m0, _) = {
        for i in 0..1000u64 {
            db.put(
                &WriteOptions::default(),
                format!("k{i:04}").as_bytes(),
                format!("v{i}").as_bytes(),
            )
            .unwrap();
        }
        db.flush().unwrap();
        db.put(&WriteOptions::default(), b"zz", b"in wal").unwrap();
        let mut m = Model::new();
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        while it.valid() {
            m.insert(it.key().to_vec(), it.value().to_vec());
            it.next();
        }
        (m, ())
    };
    db.close().unwrap();
    lose_manifest(&mine);
    let out = common::rocksdb::ldb()
        .unwrap()
        .arg(format!("--db={}", mine.display()))
        .arg("repair")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let db = DB::open(o, &mine).unwrap();
    let mut got = Model::new();
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    assert_eq!(got, m0);
}

#[test]
fn a_database_without_its_manifest_is_not_replaced_by_a_new_one() {
    // Opening with create_if_missing where tables lie without CURRENT
    // would make a new database that deletes them as obsolete: refused,
    // with what to do; repair then brings the data back.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let o = opts();
    let db = DB::open(o.clone(), &path).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    lose_manifest(&path);
    match DB::open(o.clone(), &path) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("repair"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    repair_db(&o, &path).unwrap();
    let db = DB::open(o, &path).unwrap();
    assert_eq!(
        db.get(&ReadOptions::default(), b"k").unwrap().as_deref(),
        Some(&b"v"[..])
    );
}

#[test]
fn empty_range_deletions_in_a_wal_do_not_become_tables() {
    // `delete_range(k, k)` deletes nothing: a WAL of nothing else gives
    // no table, and next to a put it does not widen (invert) the table's
    // bounds.
    let dir = tempfile::tempdir().unwrap();
    let o = opts();
    for (name, with_put) in [("only", false), ("mixed", true)] {
        let path = dir.path().join(name);
        let db = DB::open(o.clone(), &path).unwrap();
        let wo = WriteOptions::default();
        db.delete_range(&wo, b"k2", b"k2").unwrap();
        if with_put {
            db.put(&wo, b"k5", b"v").unwrap();
        }
        drop(db);
        lose_manifest(&path);
        repair_db(&o, &path).unwrap();
        let db = DB::open(o.clone(), &path).unwrap();
        let files = db.live_files_metadata();
        if with_put {
            assert_eq!(files.len(), 1, "{files:?}");
            assert_eq!(
                (
                    files[0].smallest_key.as_slice(),
                    files[0].largest_key.as_slice()
                ),
                (&b"k5"[..], &b"k5"[..])
            );
            assert_eq!(scan_cf(&db, "default").len(), 1);
        } else {
            assert!(files.is_empty(), "{files:?}");
        }
    }
}

#[test]
fn a_table_the_manifest_deleted_is_not_resurrected() {
    // A crash can undo the deletion of a table a compaction replaced (the
    // deletion is not synced): the file is back, the MANIFEST says it is
    // gone. Repair must not take its superseded versions back (RocksDB's
    // repair would: it takes every table file); it sets it aside in lost/.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let o = opts();
    let db = DB::open(o.clone(), &path).unwrap();
    let w = WriteOptions::default();
    for i in 0..200u32 {
        db.put(&w, format!("k{i:04}").as_bytes(), b"old").unwrap();
    }
    db.flush().unwrap();
    // Keep a copy of the first table, as a crash would keep it.
    let first = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    let saved = std::fs::read(&first).unwrap();
    for i in 0..200u32 {
        db.put(&w, format!("k{i:04}").as_bytes(), b"new").unwrap();
    }
    db.delete(&w, b"k0007").unwrap();
    db.compact_range(None, None).unwrap();
    let want = scan_cf(&db, "default");
    db.close().unwrap();
    assert!(!first.exists(), "the compaction deleted it");
    std::fs::write(&first, saved).unwrap();
    repair_db(&o, &path).unwrap();
    assert!(
        path.join("lost").join(first.file_name().unwrap()).exists(),
        "set aside"
    );
    let db = DB::open(o, &path).unwrap();
    assert_eq!(scan_cf(&db, "default"), want);
    assert_eq!(db.get(&ReadOptions::default(), b"k0007").unwrap(), None);
}

#[test]
fn an_ingested_table_keeps_the_sequence_number_only_the_manifest_records() {
    // With write_global_seqno off, an ingested file's keys carry 0 and
    // only the MANIFEST knows its global sequence number; repair reads it
    // there while the MANIFEST is readable, so the ingested values still
    // win over the older puts below them.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let o = opts();
    let db = DB::open(o.clone(), &path).unwrap();
    let w = WriteOptions::default();
    for i in 0..100u32 {
        db.put(&w, format!("k{i:03}").as_bytes(), b"old").unwrap();
    }
    db.flush().unwrap();
    let ext = dir.path().join("ext.sst");
    let mut sst = strata::SstFileWriter::create(&ext, strata::TableOptions::default()).unwrap();
    for i in (0..100u32).step_by(2) {
        sst.put(format!("k{i:03}").as_bytes(), b"ingested").unwrap();
    }
    sst.finish().unwrap();
    let io = strata::options::IngestExternalFileOptions {
        write_global_seqno: false,
        ..Default::default()
    };
    db.ingest_external_file(&[&ext], &io).unwrap();
    db.put(&w, b"k001", b"newest").unwrap();
    let want = scan_cf(&db, "default");
    assert_eq!(want[b"k000".as_slice()], b"ingested");
    db.close().unwrap();
    repair_db(&o, &path).unwrap();
    let db = DB::open(o, &path).unwrap();
    assert_eq!(scan_cf(&db, "default"), want);
}

/// A copy of every file of `fs` on a new in-memory file system.
fn copy_fs(fs: &MemFileSystem) -> MemFileSystem {
    use strata::fs::FileSystem;
    let out = MemFileSystem::new();
    for p in fs.file_names() {
        out.create_dir_all(p.parent().unwrap()).unwrap();
        let mut w = out.new_writable_file(&p).unwrap();
        w.append(&fs.read_file(&p).unwrap()).unwrap();
        w.sync().unwrap();
    }
    out
}

#[test]
fn a_repair_failing_at_any_operation_leaves_a_database_with_every_write() {
    // An I/O error at each operation of a repair (once, and for good):
    // the database then opens as it was or as repaired, with every write
    // (the old MANIFEST, CURRENT and WALs stay until CURRENT names the
    // complete new MANIFEST; RocksDB installs an empty database first),
    // and a second repair completes it.
    let base = MemFileSystem::new();
    let mut o = opts();
    o.fs = Some(Arc::new(base.clone()));
    let db = DB::open_cf(o.clone(), "/db", descs(&o)).unwrap();
    // Overlapping sequence ranges (the merge path) and an unflushed WAL.
    let snapshot = db.snapshot();
    let (m0, m1) = workload_n(&db, 2, 600);
    // Released after the close (see a_lost_manifest_is_rebuilt_...).
    db.close().unwrap();
    drop(snapshot);
    let with = |fs: &FaultInjectionFileSystem| {
        let mut o = o.clone();
        o.fs = Some(Arc::new(fs.clone()));
        o
    };
    let clean = FaultInjectionFileSystem::new(Arc::new(copy_fs(&base)));
    repair_db_cf(&with(&clean), "/db", descs(&o)).unwrap();
    let total = clean.op_count();
    assert!(total > 20, "{total}");
    let mut failed = 0;
    for mode in [FailMode::Once, FailMode::Persistent] {
        for k in 0..total {
            let fs = FaultInjectionFileSystem::new(Arc::new(copy_fs(&base)));
            fs.fail_after(k, mode);
            let what = format!("fault at operation {k} ({mode:?})");
            let r = repair_db_cf(&with(&fs), "/db", descs(&o));
            failed += usize::from(r.is_err());
            let what = format!("{what} {:?}: {r:?}", fs.last_injected());
            fs.clear_faults();
            let db = DB::open_cf(with(&fs), "/db", descs(&o))
                .unwrap_or_else(|e| panic!("{what}: open: {e}"));
            assert!(scan_cf(&db, "default") == m0, "{what}: default differs");
            assert!(scan_cf(&db, "other") == m1, "{what}: other differs");
            db.close().unwrap();
            repair_db_cf(&with(&fs), "/db", descs(&o))
                .unwrap_or_else(|e| panic!("{what}: repair again: {e}"));
            let db = DB::open_cf(with(&fs), "/db", descs(&o)).unwrap();
            assert!(
                scan_cf(&db, "default") == m0,
                "{what}: default differs after a second repair"
            );
            assert!(
                scan_cf(&db, "other") == m1,
                "{what}: other differs after a second repair"
            );
            db.close().unwrap();
        }
    }
    assert!(failed > 0);
}
