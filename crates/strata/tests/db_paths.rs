//! Table files in several directories (RocksDB's `db_paths`): flushes
//! write to the first path, compactions place their outputs by the paths'
//! target sizes, every path is read, cleaned of obsolete tables, repaired
//! and destroyed, and what RocksDB refuses is refused.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use strata::fs::FileSystem;
use strata::fs::mem::MemFileSystem;
use strata::utilities::checkpoint::Checkpoint;
use strata::{CompactionStyle, DB, DbPath, Error, Options, WriteOptions};

fn opts(fs: &MemFileSystem, paths: &[(&str, u64)]) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        db_paths: paths.iter().map(|(p, s)| DbPath::new(p, *s)).collect(),
        ..Options::default()
    };
    o.cf.write_buffer_size = 64 << 10;
    o.cf.target_file_size_base = 32 << 10;
    o.cf.max_bytes_for_level_base = 128 << 10;
    o.cf.level0_file_num_compaction_trigger = 2;
    o
}

/// Table numbers in `dir`.
fn tables_in(fs: &MemFileSystem, dir: &str) -> BTreeSet<u64> {
    fs.children(Path::new(dir))
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.strip_suffix(".sst")?.parse().ok())
        .collect()
}

/// Live tables by directory, from the live files' metadata.
fn live_by_dir(db: &DB) -> BTreeMap<String, BTreeSet<u64>> {
    let mut out: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for m in db.live_files_metadata() {
        out.entry(m.db_path).or_default().insert(m.file_number);
    }
    out
}

fn fill(db: &DB, rounds: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    let w = WriteOptions::default();
    for r in 0..rounds {
        for i in 0..2000u64 {
            let k = format!("key{:06}", (i * 7919 + r * 31) % 20000).into_bytes();
            let v = format!("r{r}-{i}-{}", "v".repeat(60)).into_bytes();
            db.put(&w, &k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
    }
    db.wait_for_compactions().unwrap();
    model
}

#[test]
fn leveled_outputs_go_to_the_path_whose_target_holds_their_level() {
    let fs = MemFileSystem::new();
    // Path 0 holds L0 and L1 (128 KiB each), the rest goes to path 1.
    let o = opts(&fs, &[("/fast", 300 << 10), ("/slow", 1 << 40)]);
    let db = DB::open(o.clone(), "/db").unwrap();
    // Automatic compactions only (a manual one writes to its
    // `target_path_id`, 0 by default, as in RocksDB).
    let model = fill(&db, 20);
    common::assert_holds(&db, &model, 97);
    let by_dir = live_by_dir(&db);
    assert!(
        !by_dir.contains_key("/db"),
        "no table in the DB directory: {by_dir:?}"
    );
    let deep: Vec<_> = db
        .live_files_metadata()
        .into_iter()
        .filter(|m| m.level >= 2)
        .collect();
    assert!(!deep.is_empty(), "the data reaches L2 or deeper");
    assert!(deep.iter().all(|m| m.db_path == "/slow"), "{deep:?}");
    let shallow: Vec<_> = db
        .live_files_metadata()
        .into_iter()
        .filter(|m| m.level < 2)
        .collect();
    assert!(shallow.iter().all(|m| m.db_path == "/fast"), "{shallow:?}");
    // Obsolete tables left neither directory: what is there is live.
    assert_eq!(
        tables_in(&fs, "/fast"),
        by_dir.get("/fast").cloned().unwrap_or_default()
    );
    assert_eq!(tables_in(&fs, "/slow"), by_dir["/slow"]);
    assert!(tables_in(&fs, "/db").is_empty());
    db.close().unwrap();

    // Reopened with the same paths, every table is found again.
    let db = DB::open(o.clone(), "/db").unwrap();
    common::assert_holds(&db, &model, 89);
    db.close().unwrap();

    // Without the second path, the MANIFEST names a path that is not
    // there: refused at open, naming the setting.
    let short = opts(&fs, &[("/fast", 300 << 10)]);
    let Err(e) = DB::open(short, "/db") else {
        panic!("a missing table path is refused");
    };
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("db_paths[1]")),
        "{e}"
    );

    // destroy_db removes the tables of every path, and the paths.
    strata::db::destroy_db(&o, "/db").unwrap();
    for d in ["/db", "/fast", "/slow"] {
        assert!(!fs.file_exists(Path::new(d)), "{d} removed");
    }
}

#[test]
fn universal_outputs_too_big_for_the_first_path_go_to_the_next() {
    let fs = MemFileSystem::new();
    let mut o = opts(&fs, &[("/p0", 200 << 10), ("/p1", 1 << 40)]);
    o.cf.compaction_style = CompactionStyle::Universal;
    let db = DB::open(o.clone(), "/db").unwrap();
    let model = fill(&db, 10);
    common::assert_holds(&db, &model, 101);
    // Runs bigger than path 0's 200 KiB went to path 1, smaller ones
    // stayed; what is in each directory is live.
    let by_dir = live_by_dir(&db);
    let sizes: BTreeMap<u64, (u64, String)> = db
        .live_files_metadata()
        .into_iter()
        .map(|m| (m.file_number, (m.size, m.db_path)))
        .collect();
    assert!(by_dir.contains_key("/p1"), "{by_dir:?}");
    for (n, (size, dir)) in &sizes {
        if *size > 200 << 10 {
            assert_eq!(dir, "/p1", "table {n} of {size} bytes");
        }
    }
    assert_eq!(tables_in(&fs, "/p1"), by_dir["/p1"]);
    assert_eq!(
        tables_in(&fs, "/p0"),
        by_dir.get("/p0").cloned().unwrap_or_default()
    );
    // Small flushes still land in path 0. Without automatic compactions
    // while this is checked: with the trigger at 2 sorted runs, the flush
    // may start a compaction of the runs the fill left (how many depends
    // on how its compactions interleaved), which would change the count.
    db.close().unwrap();
    let mut quiet = o.clone();
    quiet.cf.disable_auto_compactions = true;
    let db = DB::open(quiet, "/db").unwrap();
    let before = live_by_dir(&db).get("/p0").map_or(0, |s| s.len());
    let w = WriteOptions::default();
    db.put(&w, b"late", b"write").unwrap();
    db.flush().unwrap();
    let by_dir = live_by_dir(&db);
    assert_eq!(by_dir["/p0"].len(), before + 1, "{by_dir:?}");
    db.close().unwrap();
    let db = DB::open(o, "/db").unwrap();
    let mut model = model;
    model.insert(b"late".to_vec(), b"write".to_vec());
    common::assert_holds(&db, &model, 101);
}

#[test]
fn manual_compaction_writes_to_its_target_path() {
    let fs = MemFileSystem::new();
    let o = opts(&fs, &[("/a", 1 << 40), ("/b", 1 << 40)]);
    let db = DB::open(o, "/db").unwrap();
    let model = fill(&db, 3);
    // Everything fits path 0, so automatic compactions stay there.
    assert_eq!(live_by_dir(&db).keys().collect::<Vec<_>>(), vec!["/a"]);
    let cf = db.default_cf();
    let to_b = strata::db::CompactRangeOptions {
        target_path_id: 1,
        bottommost_level_compaction: strata::db::BottommostLevelCompaction::Force,
        ..Default::default()
    };
    db.compact_range_cf_opt(&cf, None, None, &to_b).unwrap();
    assert_eq!(live_by_dir(&db).keys().collect::<Vec<_>>(), vec!["/b"]);
    assert!(tables_in(&fs, "/a").is_empty());
    common::assert_holds(&db, &model, 53);
    let bad = strata::db::CompactRangeOptions {
        target_path_id: 2,
        ..Default::default()
    };
    let e = db.compact_range_cf_opt(&cf, None, None, &bad).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m == "Invalid target path ID"),
        "{e}"
    );
}

#[test]
fn checkpoints_take_one_table_directory_and_refuse_two() {
    let fs = MemFileSystem::new();
    // One path other than the DB directory: a checkpoint copies from it.
    let o = opts(&fs, &[("/tables", 1 << 40)]);
    let db = DB::open(o, "/db").unwrap();
    let model = fill(&db, 3);
    Checkpoint::new(&db)
        .unwrap()
        .create_checkpoint(Path::new("/ckpt"), 0)
        .unwrap();
    assert!(!tables_in(&fs, "/ckpt").is_empty());
    let copy = DB::open(opts(&fs, &[]), "/ckpt").unwrap();
    common::assert_holds(&copy, &model, 41);
    drop(copy);
    drop(db);

    // Live tables in two directories: RocksDB's NotSupported.
    let o = opts(&fs, &[("/x", 1 << 40), ("/y", 1 << 40)]);
    let db = DB::open(o, "/db2").unwrap();
    fill(&db, 2);
    let cf = db.default_cf();
    let to_y = strata::db::CompactRangeOptions {
        target_path_id: 1,
        bottommost_level_compaction: strata::db::BottommostLevelCompaction::Force,
        ..Default::default()
    };
    db.compact_range_cf_opt(&cf, None, None, &to_y).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    db.flush().unwrap();
    assert_eq!(live_by_dir(&db).len(), 2);
    let e = Checkpoint::new(&db)
        .unwrap()
        .create_checkpoint(Path::new("/ckpt2"), 0)
        .unwrap_err();
    assert!(
        matches!(&e, Error::NotSupported(m) if m.contains("db_paths / cf_paths not supported")),
        "{e}"
    );
    assert!(!fs.file_exists(Path::new("/ckpt2")));
}

#[test]
fn repair_finds_tables_in_every_path() {
    let fs = MemFileSystem::new();
    let o = opts(&fs, &[("/fast", 300 << 10), ("/slow", 1 << 40)]);
    let db = DB::open(o.clone(), "/db").unwrap();
    let model = fill(&db, 12);
    let to_slow = strata::db::CompactRangeOptions {
        target_path_id: 1,
        ..Default::default()
    };
    db.compact_range_cf_opt(&db.default_cf(), None, None, &to_slow)
        .unwrap();
    assert_eq!(live_by_dir(&db).keys().collect::<Vec<_>>(), vec!["/slow"]);
    db.put(&WriteOptions::default(), b"key999999", b"top")
        .unwrap();
    db.flush().unwrap();
    assert_eq!(live_by_dir(&db).len(), 2);
    db.close().unwrap();
    let mut model = model;
    model.insert(b"key999999".to_vec(), b"top".to_vec());
    // The MANIFEST is lost; repair rebuilds it from both paths.
    for n in fs.children(Path::new("/db")).unwrap() {
        if n.starts_with("MANIFEST") || n == "CURRENT" {
            fs.delete_file(&Path::new("/db").join(n)).unwrap();
        }
    }
    strata::db::repair_db(&o, "/db").unwrap();
    // The bulk of the data was only in the slow path.
    let db = DB::open(o, "/db").unwrap();
    common::assert_holds(&db, &model, 61);
}

#[test]
fn what_rocksdb_refuses_is_refused() {
    let fs = MemFileSystem::new();
    let five: Vec<(&str, u64)> = vec![("/1", 1), ("/2", 1), ("/3", 1), ("/4", 1), ("/5", 1)];
    let e = DB::open(opts(&fs, &five), "/db").err().unwrap();
    assert!(
        matches!(&e, Error::NotSupported(m) if m.starts_with("More than four DB paths")),
        "{e}"
    );
    let mut fifo = opts(&fs, &[("/1", 1 << 30), ("/2", 1 << 30)]);
    fifo.cf.compaction_style = CompactionStyle::Fifo;
    let e = DB::open(fifo, "/db").err().unwrap();
    assert!(
        matches!(&e, Error::NotSupported(m) if m.contains("only supported in universal and level")),
        "{e}"
    );
    // Nothing was created by the refused opens.
    assert!(!fs.file_exists(Path::new("/db/CURRENT")));
}
