//! Interop with the newest RocksDB, 10.4.2 (format_version 6 by default),
//! through its own `ldb` and `sst_dump`, in both directions and for every
//! table variant: Strata writes a database with the variant, 10.4.2's
//! `sst_dump --command=verify` passes every table and its `ldb scan`
//! (loading the database's OPTIONS file) lists what `strata scan` lists,
//! and its `ldb get` (filter and index probes) finds the keys; then
//! 10.4.2's `ldb` writes more and compacts everything into tables of its
//! own, with the same options, and Strata reads them back, gets included.
//!
//! RocksDB 10.4.2's tools are not packaged: `./scripts/build-rocksdb.sh
//! 10.4.2 tools` builds them from the crates.io source of librocksdb-sys
//! (about 15 minutes on 2 cores) into `target/rocksdb/10.4.2/`, or
//! `STRATA_ROCKSDB10_TOOLS=DIR` names a directory holding them. Without
//! them these tests say so and pass (CI does not build them: it would
//! take most of CI's time); `STRATA_REQUIRE_ROCKSDB10=1` makes their
//! absence a failure. CI covers format_version 6 both ways through
//! rocksdict (which bundles RocksDB 10.4.2) in the Python tests.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// The directory holding RocksDB 10.4.2's `ldb` and `sst_dump`.
fn tools() -> Option<PathBuf> {
    let dir = match std::env::var_os("STRATA_ROCKSDB10_TOOLS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/rocksdb/10.4.2"),
    };
    if dir.join("ldb").is_file() && dir.join("sst_dump").is_file() {
        return Some(dir);
    }
    if std::env::var("STRATA_REQUIRE_ROCKSDB10").as_deref() == Ok("1") {
        panic!(
            "RocksDB 10.4.2's ldb and sst_dump are not in {}: run ./scripts/build-rocksdb.sh 10.4.2 tools",
            dir.display()
        );
    }
    eprintln!(
        "skipping: RocksDB 10.4.2's ldb and sst_dump are not built (./scripts/build-rocksdb.sh 10.4.2 tools)"
    );
    None
}

fn ldb10(tools: &Path, db: &Path) -> Command {
    let mut c = Command::new(tools.join("ldb"));
    c.arg(format!("--db={}", db.display()))
        .arg("--try_load_options");
    c
}

fn ours(db: &Path) -> Command {
    let mut c = strata();
    c.arg(format!("--db={}", db.display()));
    c
}

/// The (key, value) pairs of a `scan --hex`: RocksDB 7.8.3's ldb (and
/// strata) print `key : value`, 10.4.2's `key ==> value`.
fn pairs(out: &str) -> Vec<(String, String)> {
    out.lines()
        .map(|l| {
            let (k, v) = l
                .split_once(" ==> ")
                .or_else(|| l.split_once(" : "))
                .unwrap_or_else(|| panic!("not a scan line: {l:?}"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// `scan --hex` by 10.4.2's ldb and by strata, which must list the same
/// entries; those entries.
fn scans_agree(tools: &Path, db: &Path, what: &str) -> Vec<(String, String)> {
    let mut a = ldb10(tools, db);
    a.arg("--hex").arg("scan");
    let theirs = pairs(&run(a, b""));
    let mut b = ours(db);
    b.arg("--hex").arg("scan");
    let mine = pairs(&run(b, b""));
    if let Some(i) = (0..theirs.len().max(mine.len())).find(|&i| theirs.get(i) != mine.get(i)) {
        panic!(
            "{what}: ldb 10.4.2 and strata scan differently: {} vs {} entries, first difference at {i}: {:?} vs {:?}",
            theirs.len(),
            mine.len(),
            theirs.get(i),
            mine.get(i)
        );
    }
    assert!(mine.len() > 1000, "{what}: {} keys", mine.len());
    mine
}

/// Every 97th scanned key, read back with `get` by `tool`.
fn gets_find(tool: impl Fn() -> Command, entries: &[(String, String)], what: &str) {
    for (k, v) in entries.iter().step_by(97) {
        let mut g = tool();
        g.arg("--hex").arg("get").arg(k);
        let out = run(g, b"");
        assert_eq!(out.trim(), v, "{what}: get {k}");
    }
    // A key that is not there (filters say no, or the blocks do).
    let mut g = tool();
    g.arg("--hex").arg("get").arg("0x6E6F742D7468657265");
    let out = g.output().unwrap();
    assert!(
        !out.status.success() || String::from_utf8_lossy(&out.stdout).contains("not found"),
        "{what}: a missing key was found: {out:?}"
    );
}

fn verify_tables(sst_dump: impl Fn() -> Command, db: &Path, what: &str) -> usize {
    let tables = sst_files(db);
    for t in &tables {
        let mut v = sst_dump();
        v.arg(format!("--file={}", t.display()))
            .arg("--command=verify");
        let out = run(v, b"");
        assert!(
            out.contains("The file is ok"),
            "{what} {}: {out}",
            t.display()
        );
    }
    tables.len()
}

/// Table properties as `strata sst_dump --show_properties` prints them,
/// for every table of `db`.
fn properties(db: &Path) -> String {
    sst_files(db)
        .iter()
        .map(|t| {
            let mut p = strata();
            p.arg("sst_dump")
                .arg(format!("--file={}", t.display()))
                .arg("--show_properties")
                .arg("--command=none");
            run(p, b"")
        })
        .collect()
}

/// Input for `ldb load`: `n` keys of the same shape as db_bench's (16
/// bytes, so fixed 8-byte prefixes work) that db_bench's keys never are.
fn load_input(seed: u64, n: usize) -> String {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let k = format!("zz{:014}", rng.next() % 10_000_000);
            format!("{k} ==> loaded-{i}-{}\n", "x".repeat((i % 50) + 10))
        })
        .collect()
}

/// The format_version in each table's footer (the 53-byte footer of
/// format_version 1 and later ends with it and the magic number).
fn format_versions(db: &Path) -> Vec<u32> {
    sst_files(db)
        .iter()
        .map(|t| {
            let b = std::fs::read(t).unwrap();
            u32::from_le_bytes(b[b.len() - 12..b.len() - 8].try_into().unwrap())
        })
        .collect()
}

/// A table variant: strata bench's flags, what every table written with
/// them shows among its properties, and its format_version.
struct Variant {
    name: &'static str,
    flags: &'static [&'static str],
    properties: &'static [&'static str],
    format_version: u32,
}

const VARIANTS: &[Variant] = &[
    Variant {
        name: "format_version 6",
        flags: &["--format_version=6", "--bloom_bits=10"],
        properties: &["filter policy name: bloomfilter"],
        format_version: 6,
    },
    Variant {
        name: "partitioned index and filters",
        flags: &[
            "--partition_index_and_filters=1",
            "--metadata_block_size=1024",
            "--bloom_bits=10",
        ],
        properties: &["rocksdb.block.based.table.index.type: 0x02000000"],
        format_version: 5,
    },
    Variant {
        name: "ribbon filters",
        flags: &["--bloom_bits=10", "--use_ribbon_filter=1"],
        properties: &["filter policy name: ribbonfilter"],
        format_version: 5,
    },
    Variant {
        name: "zstd with a trained dictionary",
        flags: &[
            "--compression_type=zstd",
            "--compression_max_dict_bytes=16384",
            "--compression_zstd_max_train_bytes=65536",
        ],
        properties: &["SST file compression algo: ZSTD", "max_dict_bytes=16384"],
        format_version: 5,
    },
    Variant {
        name: "hash-search index",
        flags: &["--use_hash_search=1", "--prefix_size=8", "--bloom_bits=10"],
        properties: &[
            "rocksdb.block.based.table.index.type: 0x01000000",
            "prefix extractor name: rocksdb.FixedPrefix.8",
        ],
        format_version: 5,
    },
    Variant {
        // No property records a data block hash index: this only shows
        // that the options were loaded.
        name: "data-block hash index",
        flags: &["--use_data_block_hash_index=1", "--bloom_bits=10"],
        properties: &["filter policy name: bloomfilter"],
        format_version: 5,
    },
    Variant {
        // Uncompressed index blocks, short restart intervals, unshortened
        // index keys: no property records them either.
        name: "block layout options",
        flags: &[
            "--compression_type=snappy",
            "--enable_index_compression=0",
            "--block_restart_interval=4",
            "--index_block_restart_interval=8",
            "--index_shortening_mode=0",
            "--bloom_bits=10",
        ],
        properties: &["SST file compression algo: Snappy"],
        format_version: 5,
    },
    Variant {
        name: "first-key index",
        flags: &["--index_with_first_key=1", "--bloom_bits=10"],
        properties: &["rocksdb.block.based.table.index.type: 0x03000000"],
        format_version: 5,
    },
    Variant {
        name: "prefix-only filters",
        flags: &[
            "--prefix_size=8",
            "--whole_key_filtering=0",
            "--bloom_bits=10",
        ],
        properties: &[
            "rocksdb.block.based.table.whole.key.filtering: 0x30",
            "rocksdb.block.based.table.prefix.filtering: 0x31",
        ],
        format_version: 5,
    },
];

fn check_variant(v: &Variant, db: &Path, who: &str) {
    let props = properties(db);
    for p in v.properties {
        assert!(
            props.contains(p),
            "{}: {who}'s tables lack {p:?}:\n{props}",
            v.name
        );
    }
    let fvs = format_versions(db);
    assert!(
        fvs.iter().all(|&f| f == v.format_version),
        "{}: {who}'s tables have format versions {fvs:?}",
        v.name
    );
}

#[test]
fn rocksdb10_and_strata_read_each_others_tables_for_every_variant() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (i, v) in VARIANTS.iter().enumerate() {
        let name = v.name;
        let db = dir.path().join(format!("db{i}"));
        let mut b = strata();
        b.arg("bench")
            .arg(format!("--db={}", db.display()))
            .arg("--benchmarks=fillrandom,compact")
            .arg("--num=20000")
            .arg("--write_buffer_size=262144")
            .arg("--target_file_size_base=262144")
            .args(v.flags);
        run(b, b"");
        // Strata's tables, read by RocksDB 10.4.2.
        check_variant(v, &db, "Strata");
        let n = verify_tables(
            || {
                let mut c = Command::new(tools.join("sst_dump"));
                c.arg("--verify_checksum");
                c
            },
            &db,
            name,
        );
        assert!(n > 1, "{name}: {n} tables");
        let lines = scans_agree(&tools, &db, name);
        gets_find(|| ldb10(&tools, &db), &lines, name);
        // RocksDB 10.4.2 writes more with the same options and compacts
        // everything into tables of its own.
        let before = sst_files(&db);
        let mut load = ldb10(&tools, &db);
        load.arg("load");
        run(load, load_input(i as u64, 3000).as_bytes());
        let mut compact = ldb10(&tools, &db);
        compact.arg("compact");
        run(compact, b"");
        let after = sst_files(&db);
        assert!(
            after.iter().all(|t| !before.contains(t)),
            "{name}: RocksDB 10.4.2 left tables of Strata's"
        );
        check_variant(v, &db, "RocksDB 10.4.2");
        verify_tables(
            || {
                let mut c = strata();
                c.arg("sst_dump");
                c
            },
            &db,
            name,
        );
        let lines = scans_agree(&tools, &db, name);
        assert!(lines.len() > 2000, "{name}");
        gets_find(|| ours(&db), &lines, name);
        // And Strata keeps writing a database RocksDB 10.4.2 last wrote.
        let mut put = ours(&db);
        put.arg("put").arg("zz-after").arg("strata");
        run(put, b"");
        let mut get = ldb10(&tools, &db);
        get.arg("get").arg("zz-after");
        assert_eq!(run(get, b"").trim(), "strata", "{name}");
    }
}

/// A database made by RocksDB 10.4.2 with its defaults (format_version 6
/// tables, its MANIFEST and OPTIONS file, data left in the WAL) opens in
/// Strata, which reads it, writes to it, and hands it back.
#[test]
fn strata_opens_a_database_rocksdb10_made_with_its_defaults() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut load = Command::new(tools.join("ldb"));
    load.arg(format!("--db={}", db.display()))
        .arg("--create_if_missing")
        .arg("load");
    run(load, load_input(7, 5000).as_bytes());
    let mut compact = Command::new(tools.join("ldb"));
    compact.arg(format!("--db={}", db.display())).arg("compact");
    run(compact, b"");
    for k in ["zz-wal-1", "zz-wal-2"] {
        let mut put = Command::new(tools.join("ldb"));
        put.arg(format!("--db={}", db.display()))
            .arg("put")
            .arg(k)
            .arg("in the WAL");
        run(put, b"");
    }
    let fvs = format_versions(&db);
    assert!(!fvs.is_empty() && fvs.iter().all(|&f| f == 6), "{fvs:?}");
    let lines = scans_agree(&tools, &db, "defaults");
    assert!(lines.len() > 2000);
    gets_find(|| ours(&db), &lines, "defaults");
    let mut get = ours(&db);
    get.arg("get").arg("zz-wal-2");
    assert_eq!(run(get, b"").trim(), "in the WAL");
    // Strata's writes and compaction, read back by RocksDB 10.4.2.
    let mut load = ours(&db);
    load.arg("load");
    run(load, load_input(8, 2000).as_bytes());
    let mut compact = ours(&db);
    compact.arg("compact");
    run(compact, b"");
    let mut check = Command::new(tools.join("ldb"));
    check
        .arg(format!("--db={}", db.display()))
        .arg("checkconsistency");
    assert!(run(check, b"").contains("OK"));
    verify_tables(|| Command::new(tools.join("sst_dump")), &db, "after Strata");
    scans_agree(&tools, &db, "after Strata");
}
