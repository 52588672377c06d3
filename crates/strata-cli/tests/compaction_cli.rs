//! The compaction side of the ldb-style commands, checked against RocksDB
//! 7.8.3's `ldb`:
//! * `compact` turns a database of many L0 files into files on deeper
//!   levels, prints nothing (as ldb), honours `--from/--to` (hex too) and
//!   `--column_family`, and RocksDB still reads the result identically
//!   (`ldb scan`, `ldb checkconsistency`);
//! * `list_live_files_metadata` (both layouts) is byte for byte ldb's, on
//!   databases written by either tool, with several column families and
//!   with relative and slash-doubled `--db` paths;
//! * `stats`, `get_property` and `dump --stats` print the properties in
//!   ldb's shapes;
//! * the commands open a database with the options of its OPTIONS file,
//!   so universal and FIFO databases keep their style and shape.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

fn ldb(db: &Path) -> Command {
    let mut c = rocksdb_tool("ldb").unwrap();
    c.arg(format!("--db={}", db.display()));
    c
}

fn ours(db: &Path) -> Command {
    let mut c = strata();
    c.arg(format!("--db={}", db.display()));
    c
}

fn cmd(mut c: Command, args: &[&str]) -> Command {
    c.args(args);
    c
}

/// Runs a command that must fail; returns its stderr.
fn run_fail(mut c: Command) -> String {
    let out = c
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert!(
        !out.status.success(),
        "{c:?} succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn load_input(seed: u64, n: usize) -> String {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let k = format!("key{:05}", rng.next() % 20_000);
            let v = format!("value-{}", rng.next() % 1_000_000_000);
            format!("{k} ==> {v}\n")
        })
        .collect()
}

/// `(level, path)` of each file in a `list_live_files_metadata
/// --sort_by_filename` listing.
fn files_by_level(listing: &str) -> Vec<(usize, String)> {
    listing
        .lines()
        .filter_map(|l| {
            let (path, rest) = l.split_once(" : level ")?;
            let level = rest.split(',').next()?.parse().ok()?;
            Some((level, path.to_string()))
        })
        .collect()
}

/// Both layouts of `list_live_files_metadata` from both tools, checked
/// equal; returns the sorted one.
fn listings_agree(db: &Path) -> String {
    let mine = run(cmd(ours(db), &["list_live_files_metadata"]), b"");
    let theirs = run(cmd(ldb(db), &["list_live_files_metadata"]), b"");
    assert_eq!(mine, theirs, "list_live_files_metadata differs from ldb's");
    let mine = run(
        cmd(
            ours(db),
            &["list_live_files_metadata", "--sort_by_filename"],
        ),
        b"",
    );
    let theirs = run(
        cmd(ldb(db), &["list_live_files_metadata", "--sort_by_filename"]),
        b"",
    );
    assert_eq!(
        mine, theirs,
        "list_live_files_metadata --sort_by_filename differs from ldb's"
    );
    mine
}

fn scans_agree(db: &Path, extra: &[&str]) -> String {
    let mut args = extra.to_vec();
    args.extend(["--hex", "scan"]);
    let mine = run(cmd(ours(db), &args), b"");
    let theirs = run(cmd(ldb(db), &args), b"");
    assert_eq!(mine, theirs, "ldb scan differs from strata scan");
    mine
}

/// Writes at least `rounds` L0 files into `cf` with automatic compaction
/// off (the setting persists in the OPTIONS file, as with ldb), with
/// overlapping keys, deletions and range deletions. (Each read-write open
/// also flushes what the previous command left in the WAL.)
fn make_l0_files(db: &Path, cf: &str, rounds: u64) {
    let cf_flag = format!("--column_family={cf}");
    for r in 0..rounds {
        run(
            cmd(
                ours(db),
                &[
                    "--create_if_missing",
                    "--auto_compaction=false",
                    &cf_flag,
                    "load",
                ],
            ),
            load_input(r + 1, 400).as_bytes(),
        );
        let victim = run(cmd(ours(db), &[&cf_flag, "scan", "--max_keys=1"]), b"");
        let victim = victim.split(" : ").next().unwrap().to_string();
        run(cmd(ours(db), &[&cf_flag, "delete", &victim]), b"");
        let (b, e) = (
            format!("key{:05}", r * 1000),
            format!("key{:05}", r * 1000 + 300),
        );
        run(cmd(ours(db), &[&cf_flag, "deleterange", &b, &e]), b"");
        run(cmd(ours(db), &[&cf_flag, "flush"]), b"");
    }
}

#[test]
fn compact_moves_l0_files_down_and_rocksdb_still_reads_them() {
    let Some(_) = rocksdb_tool("ldb") else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    make_l0_files(&db, "default", 6);
    let before = listings_agree(&db);
    let files = files_by_level(&before);
    let l0_files = files.len();
    assert!(l0_files >= 6, "{before}");
    assert!(files.iter().all(|(l, _)| *l == 0), "{before}");
    let data = scans_agree(&db, &[]);
    assert!(data.lines().count() > 1000);

    // As ldb's `compact`: nothing on stdout.
    assert_eq!(run(cmd(ours(&db), &["compact"]), b""), "");

    let after = listings_agree(&db);
    let files = files_by_level(&after);
    assert!(!files.is_empty(), "{after}");
    assert!(
        files.iter().all(|(l, _)| *l > 0),
        "L0 files left after compact:\n{after}"
    );
    assert!(files.len() < l0_files, "{after}");
    for (_, path) in &files {
        assert!(Path::new(path).exists(), "{path} listed but missing");
    }
    assert_eq!(scans_agree(&db, &[]), data, "compact changed the data");
    let cc = run(cmd(ldb(&db), &["checkconsistency"]), b"");
    assert_eq!(cc, "OK\n");
    assert_eq!(run(cmd(ours(&db), &["checkconsistency"]), b""), "OK\n");
    // The table files on disk are exactly the live ones.
    assert_eq!(sst_files(&db).len(), files.len());
}

#[test]
fn compact_honours_range_hex_and_column_family() {
    let Some(_) = rocksdb_tool("ldb") else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    make_l0_files(&db, "default", 2);
    run(cmd(ours(&db), &["create_column_family", "two"]), b"");
    make_l0_files(&db, "two", 4);
    let before = files_by_level(&listings_agree(&db));
    assert!(before.len() >= 6);
    let data_default = scans_agree(&db, &[]);
    let data_two = scans_agree(&db, &["--column_family=two"]);

    // `key` .. `keyz` in hex covers every key of "two".
    let out = run(
        cmd(
            ours(&db),
            &[
                "--column_family=two",
                "--hex",
                "compact",
                "--from=0x6B6579",
                "--to=0x6B65797A",
            ],
        ),
        b"",
    );
    assert_eq!(out, "");
    let listing = listings_agree(&db);
    let mut by_cf = (Vec::new(), Vec::new());
    for l in listing.lines().filter(|l| l.contains(" : level ")) {
        let level: usize = files_by_level(l)[0].0;
        if l.ends_with("column family 'two'") {
            by_cf.1.push(level);
        } else {
            by_cf.0.push(level);
        }
    }
    assert!(
        by_cf.0.len() >= 2 && by_cf.0.iter().all(|l| *l == 0),
        "default was compacted too:\n{listing}"
    );
    assert!(
        !by_cf.1.is_empty() && by_cf.1.iter().all(|l| *l > 0),
        "{listing}"
    );
    assert_eq!(scans_agree(&db, &[]), data_default);
    assert_eq!(scans_agree(&db, &["--column_family=two"]), data_two);
    assert_eq!(run(cmd(ldb(&db), &["checkconsistency"]), b""), "OK\n");

    // Errors as ldb reports them (`Failed: ...`, exit status 1).
    let e = run_fail(cmd(ours(&db), &["--column_family=nope", "compact"]));
    assert!(e.starts_with("Failed: "), "{e}");
    let e = run_fail(cmd(ours(&db), &["compact", "--from=z", "--to=a"]));
    assert!(e.starts_with("Failed: Compaction failed: "), "{e}");
}

#[test]
fn list_live_files_metadata_is_ldbs_on_rocksdb_databases() {
    let Some(_) = rocksdb_tool("ldb") else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rdb");
    // ldb 7.8.3 has no `flush`: each open flushes what the previous
    // command left in the WAL into an L0 file.
    for r in 0..3 {
        run(
            cmd(ldb(&db), &["--create_if_missing", "load"]),
            load_input(r + 10, 200).as_bytes(),
        );
    }
    run(cmd(ldb(&db), &["create_column_family", "two"]), b"");
    run(
        cmd(ldb(&db), &["--column_family=two", "load"]),
        load_input(20, 100).as_bytes(),
    );
    // (ldb's `compact` flushes first: a file on L1 of "two".)
    run(cmd(ldb(&db), &["--column_family=two", "compact"]), b"");
    run(cmd(ldb(&db), &["create_column_family", "empty"]), b"");
    let listing = listings_agree(&db);
    assert!(files_by_level(&listing).len() >= 3, "{listing}");
    assert!(listing.contains("column family 'two'"), "{listing}");
    let full = run(cmd(ours(&db), &["list_live_files_metadata"]), b"");
    assert!(full.starts_with(
        "===== Column Family: default =====\nLive SST Files:\n---------- level 0 ----------\n"
    ));
    assert!(full.contains("===== Column Family: empty =====\nLive SST Files:\n---------- level 0 ----------\n---------- level 1 ----------\n"));
    assert!(full.ends_with(
        "---------- level 6 ----------\nLive Blob Files:\n------------------------------\n"
    ));

    // Paths are the --db argument as given, with repeated '/' collapsed.
    for arg in ["rdb", "./rdb/", "rdb//"] {
        let flag = format!("--db={arg}");
        for sort in [false, true] {
            let mut args = vec![flag.as_str(), "list_live_files_metadata"];
            if sort {
                args.push("--sort_by_filename");
            }
            let mut m = strata();
            m.current_dir(dir.path()).args(&args);
            let mut t = rocksdb_tool("ldb").unwrap();
            t.current_dir(dir.path()).args(&args);
            let (mine, theirs) = (run(m, b""), run(t, b""));
            assert_eq!(mine, theirs, "--db={arg} sort={sort}");
            assert!(mine.contains(arg.trim_end_matches('/')), "{mine}");
        }
    }

    // Compacting a RocksDB database: where RocksDB 7.8.3 itself would put
    // the files (its OPTIONS say level_compaction_dynamic_level_bytes=false,
    // so L0 goes to L1), and RocksDB reads the result.
    let data = scans_agree(&db, &[]);
    run(cmd(ours(&db), &["compact"]), b"");
    let listing = listings_agree(&db);
    let default_levels: Vec<usize> = listing
        .lines()
        .filter(|l| l.ends_with("column family 'default'"))
        .map(|l| files_by_level(l)[0].0)
        .collect();
    assert!(
        !default_levels.is_empty() && default_levels.iter().all(|l| *l == 1),
        "{listing}"
    );
    assert_eq!(scans_agree(&db, &[]), data);
    assert_eq!(run(cmd(ldb(&db), &["checkconsistency"]), b""), "OK\n");
}

#[test]
fn stats_get_property_and_dump_stats_output() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    make_l0_files(&db, "default", 2);
    let p = run(
        cmd(ours(&db), &["get_property", "rocksdb.num-files-at-level0"]),
        b"",
    );
    let l0: usize = p
        .strip_prefix("rocksdb.num-files-at-level0: ")
        .unwrap()
        .trim_end()
        .parse()
        .unwrap();
    assert!(l0 >= 2, "{p}");
    assert_eq!(p, format!("rocksdb.num-files-at-level0: {l0}\n"));
    let l0_row = format!("\n   L0 {l0:>6}/0 ");
    let stats = run(cmd(ours(&db), &["stats"]), b"");
    assert!(
        stats.starts_with("\n** Compaction Stats [default] **\nLevel    Files"),
        "{stats}"
    );
    assert!(stats.contains(&l0_row), "{stats}");
    assert!(stats.contains("\nStalls: 0 stops"), "{stats}");
    assert!(stats.ends_with('\n'));

    let e = run_fail(cmd(ours(&db), &["get_property", "rocksdb.no-such-thing"]));
    assert_eq!(e, "Failed: failed to get property: rocksdb.no-such-thing\n");
    let e = run_fail(cmd(ours(&db), &["get_property"]));
    assert_eq!(e, "Failed: property name must be specified\n");

    // `dump --stats`: the stats text first, then the dump.
    let dump = run(cmd(ours(&db), &["dump", "--stats"]), b"");
    assert!(
        dump.starts_with("\n** Compaction Stats [default] **\n"),
        "{dump}"
    );
    let keys = dump.find(" ==> ").unwrap();
    assert!(dump.find("Stalls:").unwrap() < keys);
    assert!(
        dump.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("Keys in range: ")
    );
    let plain = run(cmd(ours(&db), &["dump"]), b"");
    assert!(dump.ends_with(&plain));

    // After a compaction the table shows the compaction's output level.
    run(cmd(ours(&db), &["compact"]), b"");
    let stats = run(cmd(ours(&db), &["stats"]), b"");
    assert!(!stats.contains(&l0_row), "{stats}");
    let p = run(
        cmd(ours(&db), &["get_property", "rocksdb.num-files-at-level0"]),
        b"",
    );
    assert_eq!(p, "rocksdb.num-files-at-level0: 0\n");
}

fn options_file_text(db: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(db)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("OPTIONS-") && !n.ends_with(".dbtmp"))
        .collect();
    names.sort();
    std::fs::read_to_string(db.join(names.last().unwrap())).unwrap()
}

#[test]
fn commands_keep_the_databases_compaction_options() {
    let Some(_) = rocksdb_tool("ldb") else { return };
    let dir = tempfile::tempdir().unwrap();
    let bench = |db: &Path, flags: &[&str]| {
        let mut c = strata();
        c.arg("bench")
            .arg(format!("--db={}", db.display()))
            .args([
                "--num=4000",
                "--write_buffer_size=32768",
                "--benchmarks=fillrandom,waitforcompaction",
            ])
            .args(flags);
        run(c, b"");
    };

    // Universal: a write and a compact through the CLI keep it universal
    // (the OPTIONS file the opens rewrite says so), and compact leaves one
    // sorted run on the last level, as RocksDB's universal CompactRange.
    let db = dir.path().join("universal");
    bench(&db, &["--compaction_style=1", "--universal_size_ratio=7"]);
    assert!(options_file_text(&db).contains("compaction_style=kCompactionStyleUniversal"));
    run(cmd(ours(&db), &["put", "extra", "1"]), b"");
    run(cmd(ours(&db), &["compact"]), b"");
    let text = options_file_text(&db);
    assert!(
        text.contains("compaction_style=kCompactionStyleUniversal"),
        "{text}"
    );
    assert!(text.contains("size_ratio=7;"), "{text}");
    let files = files_by_level(&listings_agree(&db));
    assert!(
        !files.is_empty() && files.iter().all(|(l, _)| *l == 6),
        "{files:?}"
    );
    scans_agree(&db, &[]);
    assert_eq!(run(cmd(ldb(&db), &["checkconsistency"]), b""), "OK\n");

    // FIFO: one level, which the CLI keeps (opened with the default seven
    // levels and leveled compaction, it would move files below L0).
    let db = dir.path().join("fifo");
    bench(
        &db,
        &[
            "--compaction_style=2",
            "--fifo_compaction_max_table_files_size_mb=64",
        ],
    );
    run(cmd(ours(&db), &["put", "extra", "1"]), b"");
    run(cmd(ours(&db), &["flush"]), b"");
    run(cmd(ours(&db), &["compact"]), b"");
    let text = options_file_text(&db);
    assert!(
        text.contains("compaction_style=kCompactionStyleFIFO"),
        "{text}"
    );
    assert!(text.contains("num_levels=1\n"), "{text}");
    let listing = run(cmd(ours(&db), &["list_live_files_metadata"]), b"");
    assert!(listing.contains("---------- level 0 ----------\n"));
    assert!(!listing.contains("level 1"), "{listing}");
    listings_agree(&db);
    scans_agree(&db, &[]);
    // Without the OPTIONS file (`--try_load_options=false`) a read-only
    // command sees the default seven levels.
    let listing = run(
        cmd(
            ours(&db),
            &["--try_load_options=false", "list_live_files_metadata"],
        ),
        b"",
    );
    assert!(
        listing.contains("---------- level 6 ----------\n"),
        "{listing}"
    );
    assert!(options_file_text(&db).contains("num_levels=1\n"));
}
