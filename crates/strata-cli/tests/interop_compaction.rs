//! Compaction interop with RocksDB 7.8.3:
//! * after thousands of Strata compactions (tiny files, leveled with
//!   dynamic level bytes, range deletions, overwrites), RocksDB's
//!   `ldb scan` prints exactly what `strata scan` prints and `ldb
//!   checkconsistency` is OK; the same for universal compaction;
//! * Strata opens and reads a database RocksDB's `db_bench` wrote with
//!   universal compaction (and one with leveled compaction), agreeing
//!   with `ldb scan`, then compacts it and RocksDB still reads it.

mod common;

use std::path::Path;

use common::*;
use strata::DB;
use strata::options::{CompactionStyle, Options, ReadOptions, WriteOptions};

fn ldb(db: &Path) -> std::process::Command {
    let mut c = rocksdb_tool("ldb").unwrap();
    c.arg(format!("--db={}", db.display()));
    c
}

fn ours(db: &Path) -> std::process::Command {
    let mut c = strata();
    c.arg(format!("--db={}", db.display()));
    c
}

fn check_rocksdb_agrees(db: &Path) {
    let mut a = ldb(db);
    a.arg("--hex").arg("scan");
    let mut b = ours(db);
    b.arg("--hex").arg("scan");
    let (theirs, mine) = (run(a, b""), run(b, b""));
    assert!(!mine.is_empty());
    assert_eq!(theirs, mine, "ldb scan differs from strata scan");
    let mut cc = ldb(db);
    cc.arg("checkconsistency");
    assert!(run(cc, b"").contains("OK"));
}

fn heavy_compaction(style: CompactionStyle) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut o = Options {
        create_if_missing: true,
        ..Options::default()
    };
    o.cf.write_buffer_size = 32 << 10;
    o.cf.target_file_size_base = 16 << 10;
    o.cf.max_bytes_for_level_base = 64 << 10;
    o.cf.level0_file_num_compaction_trigger = 2;
    o.cf.compaction_style = style;
    o.max_subcompactions = 2;
    let db = DB::open(o, &path).unwrap();
    let wo = WriteOptions::default();
    let mut rng = Rng(42);
    for round in 0..4u64 {
        for _ in 0..8000 {
            let k = format!("key{:06}", rng.next() % 20_000);
            let v = format!("value-{round}-{}", rng.next() % 1_000_000);
            db.put(&wo, k.as_bytes(), v.as_bytes()).unwrap();
        }
        let a = format!("key{:06}", rng.next() % 20_000);
        let b = format!("key{:06}", rng.next() % 20_000);
        let (a, b) = if a < b { (a, b) } else { (b, a) };
        db.delete_range(&wo, a.as_bytes(), b.as_bytes()).unwrap();
        for _ in 0..500 {
            let k = format!("key{:06}", rng.next() % 20_000);
            db.delete(&wo, k.as_bytes()).unwrap();
        }
    }
    db.wait_for_compactions().unwrap();
    // How many compactions ran depends on how flushes and compactions
    // interleave; that some ran, and the deep levels below, do not.
    let compactions: u64 = db.level_stats().iter().skip(1).map(|l| l.count).sum();
    assert!(compactions > 0, "no compaction ran");
    let deep = db
        .live_files_metadata()
        .iter()
        .filter(|f| f.level > 0)
        .count();
    assert!(deep > 0);
    db.close().unwrap();
    check_rocksdb_agrees(&path);
}

#[test]
fn rocksdb_reads_a_heavily_compacted_leveled_db() {
    let Some(_) = rocksdb_tool("ldb") else { return };
    heavy_compaction(CompactionStyle::Level);
}

#[test]
fn rocksdb_reads_a_heavily_compacted_universal_db() {
    let Some(_) = rocksdb_tool("ldb") else { return };
    heavy_compaction(CompactionStyle::Universal);
}

fn read_rocksdb_db(style: u32) {
    let Some(mut bench) = rocksdb_tool("db_bench") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    bench.args([
        format!("--db={}", path.display()),
        "--benchmarks=fillrandom,overwrite,compact".into(),
        "--num=30000".into(),
        "--value_size=64".into(),
        "--write_buffer_size=65536".into(),
        "--target_file_size_base=65536".into(),
        "--max_bytes_for_level_base=262144".into(),
        "--level0_file_num_compaction_trigger=2".into(),
        format!("--compaction_style={style}"),
        "--compression_type=snappy".into(),
        "--threads=1".into(),
    ]);
    run(bench, b"");
    // Several levels or sorted runs were made by RocksDB's compactions.
    let mut meta = ldb(&path);
    meta.arg("list_live_files_metadata");
    let listing = run(meta, b"");
    assert!(listing.contains(".sst"), "{listing}");
    let mut a = ldb(&path);
    a.arg("--hex").arg("scan");
    let theirs = run(a, b"");
    let mut b = ours(&path);
    b.arg("--hex").arg("scan");
    assert_eq!(theirs, run(b, b""), "strata scan differs from ldb scan");
    // Open with the library, check a few keys, compact, and hand back.
    let mut o = Options::default();
    if style == 1 {
        o.cf.compaction_style = CompactionStyle::Universal;
    }
    let db = DB::open(o, &path).unwrap();
    let it = db.iter(&ReadOptions::default()).unwrap();
    let n = it.count();
    assert!(n > 10_000, "{n} keys");
    db.put(&WriteOptions::default(), b"strata-was-here", b"1")
        .unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    check_rocksdb_agrees(&path);
}

#[test]
fn strata_reads_a_rocksdb_universal_db() {
    read_rocksdb_db(1);
}

#[test]
fn strata_reads_a_rocksdb_leveled_db() {
    read_rocksdb_db(0);
}
