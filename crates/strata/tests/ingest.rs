//! External file ingestion (`DB::ingest_external_file`), checked through
//! the public API against RocksDB 7.8.3's rules: where each file goes (the
//! deepest level it fits), which sequence number it takes (0 when nothing
//! overlaps and no snapshot is live, the next number otherwise), memtable
//! flushes, refusals that leave nothing behind, `move_files`, range
//! deletions, atomic multi-column-family ingestion, and interop both ways
//! with RocksDB's `ldb` (`write_extern_sst`, `ingest_extern_sst`, `scan`).
//!
//! The `ldb` checks need `ldb` on the PATH; they fail with a clear message
//! otherwise, unless STRATA_SKIP_INTEROP=1.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use strata::db::IngestExternalFileArg;
use strata::options::{
    ColumnFamilyOptions, IngestExternalFileOptions, Options, ReadOptions, WriteOptions,
};
use strata::tools::table::{SstFileWriter, Table, TableOptions};
use strata::{ColumnFamilyDescriptor, DB, Error};

fn opts() -> Options {
    Options {
        create_if_missing: true,
        create_missing_column_families: true,
        ..Options::default()
    }
}

/// Writes an external file of `puts` (sorted here) at `path`.
fn write_sst(path: &Path, puts: &[(&str, &str)]) -> PathBuf {
    let mut sorted = puts.to_vec();
    sorted.sort();
    let mut w = SstFileWriter::create(path, TableOptions::default()).unwrap();
    for (k, v) in sorted {
        w.put(k.as_bytes(), v.as_bytes()).unwrap();
    }
    w.finish().unwrap();
    path.to_path_buf()
}

fn get(db: &DB, k: &str) -> Option<String> {
    db.get(&ReadOptions::default(), k.as_bytes())
        .unwrap()
        .map(|v| String::from_utf8(v).unwrap())
}

fn put(db: &DB, k: &str, v: &str) {
    db.put(&WriteOptions::default(), k.as_bytes(), v.as_bytes())
        .unwrap();
}

fn scan(db: &DB) -> Vec<(String, String)> {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
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

/// `(level, smallest_seqno, largest_seqno)` of the table holding user key
/// `k` at the smallest level.
fn placement(db: &DB, k: &str) -> (usize, u64, u64) {
    let mut files = db.live_files_metadata();
    files.sort_by_key(|f| f.level);
    let f = files
        .iter()
        .find(|f| {
            f.smallest_key.as_slice() <= k.as_bytes() && k.as_bytes() <= f.largest_key.as_slice()
        })
        .unwrap_or_else(|| panic!("no table holds {k}"));
    (f.level, f.smallest_seqno, f.largest_seqno)
}

fn table_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

#[test]
fn a_file_into_an_empty_database_goes_to_the_last_level_at_sequence_zero() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let f = write_sst(
        &dir.path().join("a.sst"),
        &[("b", "2"), ("a", "1"), ("c", "3")],
    );
    let db = DB::open(opts(), &db_path).unwrap();
    db.ingest_external_file(&[&f], &IngestExternalFileOptions::default())
        .unwrap();
    assert_eq!(placement(&db, "a"), (6, 0, 0));
    assert_eq!(db.latest_sequence_number(), 0);
    assert_eq!(
        scan(&db),
        [("a", "1"), ("b", "2"), ("c", "3")].map(|(k, v)| (k.into(), v.into()))
    );
    // The caller's file stays (copied, not moved).
    assert!(f.exists());
    drop(db);
    let db = DB::open(opts(), &db_path).unwrap();
    assert_eq!(get(&db, "b").as_deref(), Some("2"));
}

#[test]
fn overlapping_memtable_is_flushed_and_the_file_wins() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let db = DB::open(opts(), &db_path).unwrap();
    put(&db, "k1", "old");
    put(&db, "k5", "old");
    let f = write_sst(&dir.path().join("f.sst"), &[("k1", "new"), ("k3", "new")]);

    // Without a blocking flush the ingestion is refused, and leaves no
    // table behind.
    let before = table_files(&db_path);
    let no_flush = IngestExternalFileOptions {
        allow_blocking_flush: false,
        ..Default::default()
    };
    match db.ingest_external_file(&[&f], &no_flush) {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains("External file requires flush"), "{m}")
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(table_files(&db_path), before);
    assert_eq!(get(&db, "k1").as_deref(), Some("old"));

    db.ingest_external_file(&[&f], &IngestExternalFileOptions::default())
        .unwrap();
    // The memtable was flushed to L0 (seq 1..2): the file overlaps it and
    // takes sequence 3 above it, in L0.
    assert_eq!(placement(&db, "k3"), (0, 3, 3));
    assert_eq!(db.latest_sequence_number(), 3);
    assert_eq!(get(&db, "k1").as_deref(), Some("new"));
    assert_eq!(get(&db, "k3").as_deref(), Some("new"));
    assert_eq!(get(&db, "k5").as_deref(), Some("old"));
    // Later writes win over the file, before and after a reopen and a
    // full compaction.
    put(&db, "k3", "newer");
    assert_eq!(get(&db, "k3").as_deref(), Some("newer"));
    drop(db);
    let db = DB::open(opts(), &db_path).unwrap();
    assert_eq!(db.latest_sequence_number(), 4);
    put(&db, "k1", "newest");
    db.compact_range(None, None).unwrap();
    assert_eq!(
        scan(&db),
        [("k1", "newest"), ("k3", "newer"), ("k5", "old")].map(|(k, v)| (k.into(), v.into()))
    );
}

#[test]
fn the_sequence_number_survives_reopen_written_into_the_file_or_not() {
    for write_global_seqno in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db_path = dir.path().join("db");
        let o = opts();
        let db = DB::open(o.clone(), &db_path).unwrap();
        put(&db, "k", "old");
        put(&db, "m", "old");
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let f = write_sst(&dir.path().join("f.sst"), &[("k", "new")]);
        let io = IngestExternalFileOptions {
            write_global_seqno,
            ..Default::default()
        };
        db.ingest_external_file(&[&f], &io).unwrap();
        // Overlaps the compacted keys in the base level (L6; levels above
        // it take no files yet): above them in L0, at sequence 3.
        assert_eq!(
            placement(&db, "k"),
            (0, 3, 3),
            "write_global_seqno={write_global_seqno}"
        );
        let ingested = db
            .live_files_metadata()
            .into_iter()
            .find(|f| f.level == 0)
            .unwrap();
        // The number is in the file's property only when written there.
        let path = db_path.join(ingested.name.trim_start_matches('/'));
        let file = strata::fs::default_fs()
            .new_random_access_file(&path)
            .unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let t = Table::open(
            file,
            &path.to_string_lossy(),
            size,
            &TableOptions::default(),
        )
        .unwrap();
        assert_eq!(t.global_seqno(), write_global_seqno.then_some(3));
        // The number written into the properties block after its checksum
        // passes checksum verification (as RocksDB checks it).
        db.verify_checksums().unwrap();
        drop(db);

        let db = DB::open(o.clone(), &db_path).unwrap();
        assert_eq!(get(&db, "k").as_deref(), Some("new"));
        assert_eq!(get(&db, "m").as_deref(), Some("old"));
        put(&db, "k", "after");
        assert_eq!(get(&db, "k").as_deref(), Some("after"));
        drop(db);
        let db = DB::open(o.clone(), &db_path).unwrap();
        assert_eq!(get(&db, "k").as_deref(), Some("after"));
        drop(db);
        // RocksDB reads the same: the WAL's write over the ingested file
        // over the old table.
        ldb_scan_is(&db_path, &[("k", "after"), ("m", "old")]);
    }
}

#[test]
fn snapshots_do_not_see_ingested_keys_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(opts(), dir.path().join("db")).unwrap();
    put(&db, "a", "1");
    let snap = db.snapshot();
    let at_snap = ReadOptions {
        snapshot: Some(snap.sequence()),
        ..Default::default()
    };
    let f = write_sst(&dir.path().join("b.sst"), &[("b", "2")]);
    db.ingest_external_file(&[&f], &IngestExternalFileOptions::default())
        .unwrap();
    // Nothing overlaps, but a snapshot is live: a new sequence number.
    assert_eq!(placement(&db, "b"), (6, 2, 2));
    assert_eq!(db.get(&at_snap, b"b").unwrap(), None);
    assert_eq!(get(&db, "b").as_deref(), Some("2"));

    let f = write_sst(&dir.path().join("c.sst"), &[("c", "3")]);
    let o = IngestExternalFileOptions {
        snapshot_consistency: false,
        ..Default::default()
    };
    db.ingest_external_file(&[&f], &o).unwrap();
    assert_eq!(placement(&db, "c"), (6, 0, 0));
    assert_eq!(db.get(&at_snap, b"c").unwrap().as_deref(), Some(&b"3"[..]));
    drop(snap);
}

#[test]
fn several_files_at_once_and_overlapping_files_in_list_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(opts(), dir.path().join("db")).unwrap();
    let a = write_sst(&dir.path().join("a.sst"), &[("a1", "x"), ("a2", "x")]);
    let b = write_sst(&dir.path().join("b.sst"), &[("b1", "x"), ("b2", "x")]);
    db.ingest_external_file(&[&b, &a], &IngestExternalFileOptions::default())
        .unwrap();
    assert_eq!(placement(&db, "a1"), (6, 0, 0));
    assert_eq!(placement(&db, "b1"), (6, 0, 0));

    // Overlapping files: all in L0 with increasing numbers; the later in
    // the list wins.
    let p = write_sst(&dir.path().join("p.sst"), &[("k", "first"), ("z", "p")]);
    let q = write_sst(&dir.path().join("q.sst"), &[("k", "second")]);
    db.ingest_external_file(&[&p, &q], &IngestExternalFileOptions::default())
        .unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("second"));
    assert_eq!(get(&db, "z").as_deref(), Some("p"));
    let mut l0: Vec<(u64, u64)> = db
        .live_files_metadata()
        .into_iter()
        .filter(|f| f.level == 0)
        .map(|f| (f.smallest_seqno, f.largest_seqno))
        .collect();
    l0.sort();
    assert_eq!(l0, [(1, 1), (2, 2)]);
    assert_eq!(db.latest_sequence_number(), 2);
}

#[test]
fn refusals_change_nothing_and_leave_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let db = DB::open(opts(), &db_path).unwrap();
    put(&db, "k", "old");
    db.flush().unwrap();
    let before = table_files(&db_path);
    let f = write_sst(&dir.path().join("f.sst"), &[("k", "new")]);
    let expect = |r: strata::Result<()>, what: &str| match r {
        Err(e) => assert!(e.to_string().contains(what), "{e} lacks {what}"),
        Ok(()) => panic!("ingestion succeeded, expected {what}"),
    };
    expect(
        db.ingest_external_file(
            &[&f],
            &IngestExternalFileOptions {
                allow_global_seqno: false,
                ..Default::default()
            },
        ),
        "Global seqno is required, but disabled",
    );
    expect(
        db.ingest_external_file(
            &[&f],
            &IngestExternalFileOptions {
                fail_if_not_bottommost_level: true,
                ..Default::default()
            },
        ),
        "Files cannot be ingested to Lmax",
    );
    expect(
        db.ingest_external_file(
            &[&f],
            &IngestExternalFileOptions {
                ingest_behind: true,
                ..Default::default()
            },
        ),
        "allow_ingest_behind=false",
    );
    // A table a flush wrote is not an external file.
    let own = db_path.join(before.iter().next().unwrap());
    expect(
        db.ingest_external_file(&[&own], &IngestExternalFileOptions::default()),
        "External file version not found",
    );
    // One good file and one missing: neither is added.
    let g = write_sst(&dir.path().join("g.sst"), &[("g", "1")]);
    assert!(
        db.ingest_external_file(
            &[g.clone(), dir.path().join("missing.sst")],
            &IngestExternalFileOptions::default()
        )
        .is_err()
    );
    expect(
        db.ingest_external_file::<PathBuf>(&[], &IngestExternalFileOptions::default()),
        "external_files[0] is empty",
    );
    let cf = db.default_cf();
    let arg = IngestExternalFileArg {
        column_family: cf,
        external_files: vec![g.clone()],
        options: IngestExternalFileOptions::default(),
    };
    expect(
        db.ingest_external_files(&[arg.clone(), arg]),
        "duplicate column families",
    );
    assert_eq!(table_files(&db_path), before);
    assert_eq!(get(&db, "k").as_deref(), Some("old"));
    assert_eq!(get(&db, "g"), None);
    assert_eq!(db.latest_sequence_number(), 1);
}

#[test]
fn move_files_links_the_file_and_removes_the_callers_name() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let db = DB::open(opts(), &db_path).unwrap();
    let f = write_sst(&dir.path().join("f.sst"), &[("a", "1"), ("b", "2")]);
    let ino = std::fs::metadata(&f).unwrap().ino();
    let o = IngestExternalFileOptions {
        move_files: true,
        ..Default::default()
    };
    db.ingest_external_file(&[&f], &o).unwrap();
    assert!(!f.exists(), "the caller's name is removed");
    let live = db.live_files_metadata();
    let inside = db_path.join(live[0].name.trim_start_matches('/'));
    assert_eq!(
        std::fs::metadata(inside).unwrap().ino(),
        ino,
        "linked, not copied"
    );
    assert_eq!(get(&db, "b").as_deref(), Some("2"));
}

#[test]
fn range_deletions_in_an_ingested_file_hide_older_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let db = DB::open(opts(), &db_path).unwrap();
    for k in ["a", "c", "d", "e", "f", "h"] {
        put(&db, k, "old");
    }
    db.flush().unwrap();
    let path = dir.path().join("rd.sst");
    let mut w = SstFileWriter::create(&path, TableOptions::default()).unwrap();
    w.put(b"x", b"new").unwrap();
    w.delete_range(b"c", b"f").unwrap();
    w.finish().unwrap();
    db.ingest_external_file(&[&path], &IngestExternalFileOptions::default())
        .unwrap();
    let expect: Vec<(String, String)> = [("a", "old"), ("f", "old"), ("h", "old"), ("x", "new")]
        .map(|(k, v)| (k.into(), v.into()))
        .to_vec();
    assert_eq!(scan(&db), expect);
    assert_eq!(get(&db, "d"), None);
    drop(db);
    let db = DB::open(opts(), &db_path).unwrap();
    assert_eq!(scan(&db), expect);
    db.compact_range(None, None).unwrap();
    assert_eq!(scan(&db), expect);
}

#[test]
fn column_families_ingest_together_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let o = opts();
    let descs = ["default", "other"]
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(*n, ColumnFamilyOptions { ..o.cf.clone() }))
        .collect();
    let db = DB::open_cf(o.clone(), &db_path, descs).unwrap();
    let other = db.cf_handle("other").unwrap();
    db.put_cf(&WriteOptions::default(), &other, b"k", b"old")
        .unwrap();
    let a = write_sst(&dir.path().join("a.sst"), &[("k", "default")]);
    let b = write_sst(&dir.path().join("b.sst"), &[("k", "other")]);
    let arg = |cf: &strata::ColumnFamilyHandle, f: Vec<PathBuf>| IngestExternalFileArg {
        column_family: cf.clone(),
        external_files: f,
        options: IngestExternalFileOptions::default(),
    };
    // A missing file in the second family's list: neither family changes.
    let bad = [
        arg(&db.default_cf(), vec![a.clone()]),
        arg(&other, vec![b.clone(), dir.path().join("nope.sst")]),
    ];
    assert!(db.ingest_external_files(&bad).is_err());
    assert_eq!(get(&db, "k"), None);
    assert_eq!(table_files(&db_path), BTreeSet::new());

    db.ingest_external_files(&[arg(&db.default_cf(), vec![a]), arg(&other, vec![b])])
        .unwrap();
    let read_other = |db: &DB| {
        let h = db.cf_handle("other").unwrap();
        db.get_cf(&ReadOptions::default(), &h, b"k").unwrap()
    };
    assert_eq!(get(&db, "k").as_deref(), Some("default"));
    assert_eq!(read_other(&db).as_deref(), Some(&b"other"[..]));
    drop(db);
    let descs = ["default", "other"]
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(*n, ColumnFamilyOptions { ..o.cf.clone() }))
        .collect();
    let db = DB::open_cf(o, &db_path, descs).unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("default"));
    assert_eq!(read_other(&db).as_deref(), Some(&b"other"[..]));
}

/// RocksDB 7.8.3's `ldb scan` of `db` prints exactly `expect`.
fn ldb_scan_is(db: &Path, expect: &[(&str, &str)]) {
    let Some(out) = common::rocksdb::ldb_scan(db, false) else {
        return;
    };
    let want: String = expect.iter().map(|(k, v)| format!("{k} : {v}\n")).collect();
    assert_eq!(out, want);
}

/// Runs `ldb --db=<db> <args>` with `stdin`, asserting success.
fn ldb_run(db: &Path, args: &[&str], stdin: &str) -> Option<String> {
    use std::io::Write;
    let mut ldb = common::rocksdb::ldb()?;
    let mut child = ldb
        .arg(format!("--db={}", db.display()))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "ldb {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn strata_reads_what_rocksdb_ingested_and_ingests_what_rocksdb_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let rdb = dir.path().join("rocks");
    // RocksDB: old values, flushed by a reopen, then an external file that
    // overlaps them, ingested with its global sequence number written into
    // the file (7.8.3's default), which changes the properties block after
    // its checksum was computed.
    if ldb_run(&rdb, &["put", "k", "old", "--create_if_missing"], "").is_none() {
        return;
    }
    ldb_run(&rdb, &["put", "m", "old"], "").unwrap();
    ldb_run(&rdb, &["compact"], "").unwrap();
    let ext = dir.path().join("rocks_ext.sst");
    ldb_run(
        &rdb,
        &["write_extern_sst", &ext.to_string_lossy()],
        "k ==> new\nz ==> 1\n",
    )
    .unwrap();
    let ext2 = dir.path().join("rocks_ext2.sst");
    std::fs::copy(&ext, &ext2).unwrap();
    ldb_run(&rdb, &["ingest_extern_sst", &ext.to_string_lossy()], "").unwrap();
    let db = DB::open(opts(), &rdb).unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("new"));
    assert_eq!(get(&db, "m").as_deref(), Some("old"));
    assert_eq!(get(&db, "z").as_deref(), Some("1"));
    drop(db);

    // Strata ingests the file RocksDB's SstFileWriter wrote (for column
    // family 0) into a database of its own.
    let sdb = dir.path().join("strata");
    let db = DB::open(opts(), &sdb).unwrap();
    put(&db, "k", "mine");
    db.ingest_external_file(&[&ext2], &IngestExternalFileOptions::default())
        .unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("new"));
    drop(db);
    ldb_scan_is(&sdb, &[("k", "new"), ("z", "1")]);

    // RocksDB ingests Strata's SstFileWriter output.
    let ours = write_sst(&dir.path().join("ours.sst"), &[("m", "strata"), ("q", "2")]);
    ldb_run(&rdb, &["ingest_extern_sst", &ours.to_string_lossy()], "").unwrap();
    ldb_scan_is(
        &rdb,
        &[("k", "new"), ("m", "strata"), ("q", "2"), ("z", "1")],
    );
}

#[test]
fn each_file_goes_to_the_deepest_level_above_what_it_overlaps() {
    let dir = tempfile::tempdir().unwrap();
    // Static level targets (RocksDB 7.8.3's default): every level takes
    // files.
    let mut o = opts();
    o.cf.level_compaction_dynamic_level_bytes = false;
    let db = DB::open(o, dir.path().join("db")).unwrap();
    put(&db, "a", "1");
    put(&db, "c", "1");
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(placement(&db, "a").0, 1);
    let x = write_sst(&dir.path().join("x.sst"), &[("x", "1")]);
    db.ingest_external_file(&[&x], &IngestExternalFileOptions::default())
        .unwrap();
    assert_eq!(placement(&db, "x"), (6, 0, 0));
    // Overlaps L6's "x": the deepest level above it that has room, with a
    // sequence number above every key.
    let x2 = write_sst(&dir.path().join("x2.sst"), &[("w", "2"), ("x", "2")]);
    db.ingest_external_file(&[&x2], &IngestExternalFileOptions::default())
        .unwrap();
    assert_eq!(placement(&db, "w"), (5, 3, 3));
    assert_eq!(get(&db, "x").as_deref(), Some("2"));
    // Inside L1's range ["a", "c"] but none of its keys: the keys decide
    // that no number is needed, the ranges that it cannot go to L1; it
    // goes under it, to L6.
    let b = write_sst(&dir.path().join("b.sst"), &[("b", "3")]);
    db.ingest_external_file(&[&b], &IngestExternalFileOptions::default())
        .unwrap();
    let f = db
        .live_files_metadata()
        .into_iter()
        .find(|f| f.smallest_key == b"b")
        .unwrap();
    assert_eq!((f.level, f.smallest_seqno, f.largest_seqno), (6, 0, 0));
    assert_eq!(get(&db, "b").as_deref(), Some("3"));
    assert_eq!(get(&db, "a").as_deref(), Some("1"));
}

#[test]
fn compactions_into_l0_wait_for_older_memtable_data_below_an_ingested_file() {
    // Universal compaction with one level writes its outputs to L0. An
    // ingested file takes a sequence number above a memtable's data that
    // it does not overlap; merging it with older L0 files before that
    // memtable is flushed would leave an L0 file whose sequence range
    // straddles the memtable's, and the flush (or WAL replay) after it
    // would break L0's order: recovery refused to open.
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let mut o = opts();
    o.cf.compaction_style = strata::CompactionStyle::Universal;
    o.cf.num_levels = 1;
    o.cf.level0_file_num_compaction_trigger = 3;
    // Every run qualifies for one merge.
    o.cf.universal.size_ratio = 100_000;
    let db = DB::open(o.clone(), &db_path).unwrap();
    put(&db, "a", "old");
    put(&db, "b", "old");
    db.flush().unwrap();
    put(&db, "c", "old");
    db.flush().unwrap();
    put(&db, "x", "in the memtable");
    put(&db, "y", "in the memtable");
    let f = write_sst(&dir.path().join("a.sst"), &[("a", "new")]);
    db.ingest_external_file(&[&f], &IngestExternalFileOptions::default())
        .unwrap();
    db.wait_for_compactions().unwrap();
    drop(db);
    let db = DB::open(o, &db_path).unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("new"));
    assert_eq!(get(&db, "x").as_deref(), Some("in the memtable"));
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("new"));
}

#[test]
fn an_empty_range_deletion_in_an_external_file_does_not_invert_its_bounds() {
    // A file with a point key and an empty tombstone [k, k) (RocksDB's
    // SstFileWriter writes those; ours skips them): the file's range is
    // its point key's, so later compactions find it in its level.
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(opts(), dir.path().join("db")).unwrap();
    let path = dir.path().join("e.sst");
    let mut w = SstFileWriter::create(&path, TableOptions::default()).unwrap();
    w.put(b"k5", b"v").unwrap();
    w.delete_range(b"k2", b"k2").unwrap();
    let info = w.finish().unwrap();
    assert_eq!(info.num_entries, 1);
    db.ingest_external_file(&[&path], &IngestExternalFileOptions::default())
        .unwrap();
    let f = &db.live_files_metadata()[0];
    assert_eq!(
        (f.smallest_key.as_slice(), f.largest_key.as_slice()),
        (&b"k5"[..], &b"k5"[..])
    );
    for i in 0..10 {
        put(&db, &format!("k{i}"), "x");
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(get(&db, "k5").as_deref(), Some("x"));
}

/// Writes `path` as RocksDB 7.8.3's SstFileWriter does, keeping empty
/// range deletions (ours drops them).
fn write_sst_like_rocksdb(path: &Path, puts: &[&str], ranges: &[(&str, &str)]) {
    let file = strata::fs::default_fs().new_writable_file(path).unwrap();
    let topts = TableOptions {
        column_family_id: strata::tools::table::table_properties::UNKNOWN_COLUMN_FAMILY,
        column_family_name: String::new(),
        ..TableOptions::default()
    };
    let mut b = strata::tools::table::TableBuilder::new(topts, file).unwrap();
    b.add_user_property(
        "rocksdb.external_sst_file.version",
        2u32.to_le_bytes().to_vec(),
    );
    b.add_user_property(
        "rocksdb.external_sst_file.global_seqno",
        0u64.to_le_bytes().to_vec(),
    );
    for k in puts {
        let ikey = strata::tools::format::dbformat::make_internal_key(
            k.as_bytes(),
            0,
            strata::tools::format::dbformat::ValueType::Value,
        );
        b.add(&ikey, b"v").unwrap();
    }
    for (s, e) in ranges {
        b.add_range_tombstone(s.as_bytes(), e.as_bytes(), 0)
            .unwrap();
    }
    b.finish(true).unwrap();
}

#[test]
fn an_empty_range_deletion_written_by_rocksdb_is_ignored_at_ingestion() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(opts(), dir.path().join("db")).unwrap();
    let path = dir.path().join("r.sst");
    write_sst_like_rocksdb(&path, &["k5"], &[("k2", "k2")]);
    db.ingest_external_file(&[&path], &IngestExternalFileOptions::default())
        .unwrap();
    let f = &db.live_files_metadata()[0];
    assert_eq!(
        (f.smallest_key.as_slice(), f.largest_key.as_slice()),
        (&b"k5"[..], &b"k5"[..])
    );
    // A file of nothing but empty tombstones changes nothing: refused as
    // empty, not called corrupt.
    let path = dir.path().join("only-empty.sst");
    write_sst_like_rocksdb(&path, &[], &[("k2", "k2")]);
    let e = db
        .ingest_external_file(&[&path], &IngestExternalFileOptions::default())
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("no entries"), "{e}");
    // Compactions place later files around it correctly.
    for i in 0..10 {
        put(&db, &format!("k{i}"), "x");
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(get(&db, "k5").as_deref(), Some("x"));
    assert_eq!(get(&db, "k2").as_deref(), Some("x"));
}

#[test]
fn files_ingested_behind_never_make_periodic_compactions_due() {
    // The reserved level is never compacted: its files, however old,
    // must not make universal compaction's periodic pick (which leaves
    // that level out) rewrite everything above it again and again.
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.allow_ingest_behind = true;
    o.cf.compaction_style = strata::options::CompactionStyle::Universal;
    o.cf.periodic_compaction_seconds = 1;
    let db = DB::open(o, dir.path().join("db")).unwrap();
    let f = write_sst(&dir.path().join("old.sst"), &[("a", "old")]);
    db.ingest_external_file(
        &[&f],
        &IngestExternalFileOptions {
            ingest_behind: true,
            ..Default::default()
        },
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2200));
    for round in 0..2 {
        put(&db, "b", &format!("new{round}"));
        db.flush().unwrap();
    }
    db.wait_for_compactions().unwrap();
    let log = std::fs::read_to_string(dir.path().join("db/LOG")).unwrap();
    assert!(!log.contains("(PeriodicCompaction,"), "{log}");
    assert_eq!(get(&db, "a").as_deref(), Some("old"));
}

#[test]
fn ingest_behind_puts_files_under_all_data_in_the_reserved_last_level() {
    // RocksDB's allow_ingest_behind with universal compaction: the last
    // level is reserved; ingest_behind files go there at sequence 0, so
    // every existing version of a key wins over theirs; compactions keep
    // sequence numbers (no zeros above) and never touch the reserved
    // level; files that would not fit there, overlapping lists and
    // databases without the option are refused.
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let mut o = opts();
    o.allow_ingest_behind = true;
    o.cf.compaction_style = strata::options::CompactionStyle::Universal;
    o.cf.num_levels = 2; // raised to 3: a level above the reserved one
    let db = DB::open(o.clone(), &db_path).unwrap();
    assert_eq!(db.number_levels(&db.default_cf()).unwrap(), 3);
    for round in 0..3 {
        for k in ["b", "d", "f"] {
            put(&db, k, &format!("new{round}"));
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    // Universal compaction wrote to the level above the reserved one,
    // keeping sequence numbers.
    let (level, smallest, _) = placement(&db, "b");
    assert_eq!(level, 1);
    assert!(smallest > 0);
    let behind = |name: &str, puts: &[(&str, &str)]| {
        let f = write_sst(&dir.path().join(name), puts);
        db.ingest_external_file(
            &[&f],
            &IngestExternalFileOptions {
                ingest_behind: true,
                ..Default::default()
            },
        )
    };
    behind("a.sst", &[("a", "old"), ("b", "old"), ("c", "old")]).unwrap();
    assert_eq!(placement(&db, "a"), (2, 0, 0));
    let want = vec![
        ("a".to_string(), "old".to_string()),
        ("b".into(), "new2".into()),
        ("c".into(), "old".into()),
        ("d".into(), "new2".into()),
        ("f".into(), "new2".into()),
    ];
    assert_eq!(scan(&db), want);
    // More writes and compactions leave the reserved level alone.
    for round in 0..6 {
        put(&db, "c", &format!("c{round}"));
        put(&db, "e", &format!("e{round}"));
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(placement(&db, "a"), (2, 0, 0));
    assert_eq!(get(&db, "c").as_deref(), Some("c5"));
    assert_eq!(get(&db, "a").as_deref(), Some("old"));
    // Another file fits beside the first one; one overlapping it does not.
    behind("x.sst", &[("x", "old"), ("y", "old")]).unwrap();
    assert_eq!(placement(&db, "x"), (2, 0, 0));
    let e = behind("o.sst", &[("b", "o"), ("z", "o")]).unwrap_err();
    assert!(
        e.to_string()
            .contains("doesn't fit at the bottommost level"),
        "{e}"
    );
    let f1 = write_sst(&dir.path().join("p.sst"), &[("p", "1"), ("r", "1")]);
    let f2 = write_sst(&dir.path().join("q.sst"), &[("q", "1")]);
    let e = db
        .ingest_external_file(
            &[&f1, &f2],
            &IngestExternalFileOptions {
                ingest_behind: true,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(matches!(e, Error::NotSupported(_)), "{e}");
    drop(db);
    // Reopened (the option read back from the OPTIONS file too).
    let db = DB::open(o, &db_path).unwrap();
    assert_eq!(get(&db, "x").as_deref(), Some("old"));
    assert_eq!(get(&db, "b").as_deref(), Some("new2"));
    let file = strata::db::options_parser::load_latest(&db_path)
        .unwrap()
        .unwrap();
    let mut read = Options::default();
    file.apply_db(&mut read).unwrap();
    assert!(read.allow_ingest_behind);
}

/// Bytewise order under another name (as RocksDB's c_test.c's "foo").
struct BytewiseNamedFoo;

impl strata::Comparator for BytewiseNamedFoo {
    fn name(&self) -> &str {
        "foo"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }
}

#[test]
fn a_file_of_another_comparator_is_ingested_only_if_ordered_as_the_column_family() {
    let dir = tempfile::tempdir().unwrap();
    // Written under the bytewise comparator's name.
    let sst = write_sst(
        &dir.path().join("bytewise.sst"),
        &[("a", "1"), ("b", "2"), ("c", "3")],
    );
    let foo = |name: &str| {
        let mut o = opts();
        o.cf.comparator = std::sync::Arc::new(BytewiseNamedFoo);
        DB::open(o, dir.path().join(name)).unwrap()
    };
    // Same order, other name: ingested and read, before and after a reopen
    // (as RocksDB, which does not compare the names).
    let db = foo("foo_db");
    db.ingest_external_file(&[&sst], &IngestExternalFileOptions::default())
        .unwrap();
    assert_eq!(get(&db, "b").as_deref(), Some("2"));
    drop(db);
    let db = foo("foo_db");
    assert_eq!(scan(&db).len(), 3);
    drop(db);
    // Reverse order: the file's keys are out of order here, refused.
    let mut o = opts();
    o.cf.comparator = std::sync::Arc::new(strata::ReverseBytewiseComparator);
    let db = DB::open(o, dir.path().join("reverse_db")).unwrap();
    let err = db
        .ingest_external_file(&[&sst], &IngestExternalFileOptions::default())
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("not ordered"), "{err}");
    assert!(scan(&db).is_empty());
}
