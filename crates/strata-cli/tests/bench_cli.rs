//! `strata bench` runs db_bench's benchmarks on a real database and its
//! results are consistent: the same random reads find the same keys from
//! the memtable and after a flush, `readseq` visits every distinct key,
//! and a reopened database (`--use_existing_db`) still holds them.

mod common;

use common::*;

fn field_after<'a>(line: &'a str, word: &str) -> &'a str {
    let mut it = line.split_whitespace();
    let mut prev = "";
    for w in it.by_ref() {
        if w == word {
            return prev;
        }
        prev = w;
    }
    panic!("no {word} in {line}")
}

/// The `(X of Y found)` count of a report line.
fn found(l: &str) -> u64 {
    let start = l.find('(').unwrap() + 1;
    l[start..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Runs `strata bench` with `flags`; returns stdout.
fn bench_out(flags: &[String]) -> String {
    let mut c = strata();
    c.arg("bench").args(flags);
    run(c, b"")
}

fn report_lines(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.contains("ops/sec")).collect()
}

#[test]
fn bench_reports_consistent_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let flags = |more: &[&str]| -> Vec<String> {
        let mut v = vec![
            db.clone(),
            "--num=3000".into(),
            "--write_buffer_size=65536".into(),
        ];
        v.extend(more.iter().map(|s| s.to_string()));
        v
    };
    // Thread seeds are the seed base plus a counter of benchmark threads:
    // fillrandom draws with 6, readrandom with 7.
    let out = bench_out(&flags(&[
        "--seed=5",
        "--bloom_bits=10",
        "--benchmarks=fillrandom,readrandom,readseq,readreverse",
    ]));
    let lines = report_lines(&out);
    assert_eq!(lines.len(), 4, "{out}");
    let before = found(lines[1]);
    assert!(before > 0 && before < 3000, "{out}");
    // readseq and readreverse count the distinct keys fillrandom wrote.
    let seq: u64 = field_after(lines[2], "operations;").parse().unwrap();
    let rev: u64 = field_after(lines[3], "operations;").parse().unwrap();
    assert_eq!(seq, rev);
    assert!(seq > 1500 && seq < 3000, "{out}");
    // Reopened and flushed, the same draws (seed base 6: readrandom is
    // the first thread, 7) find the same keys in the table.
    let out2 = bench_out(&flags(&[
        "--seed=6",
        "--use_existing_db",
        "--benchmarks=flush,readrandom,readseq",
    ]));
    let lines2 = report_lines(&out2);
    assert_eq!(lines2.len(), 2, "{out2}");
    assert_eq!(
        found(lines2[0]),
        before,
        "reads changed after flush:\n{out}\n{out2}"
    );
    assert_eq!(
        field_after(lines2[1], "operations;")
            .parse::<u64>()
            .unwrap(),
        seq
    );
    // Every other benchmark runs, with several threads, and its counts add up.
    let out3 = bench_out(&flags(&[
        "--use_existing_db",
        "--threads=2",
        "--merge_operator=put",
        "--seek_nexts=3",
        "--batch_size=4",
        "--reads=500",
        "--histogram",
        "--benchmarks=readmissing,multireadrandom,seekrandom,readwhilewriting,readwhilemerging,readrandomwriterandom,updaterandom,mergerandom,deleterandom,overwrite,deleteseq,readseq",
    ]));
    let lines3 = report_lines(&out3);
    assert_eq!(lines3.len(), 12, "{out3}");
    assert!(lines3[0].starts_with("readmissing  : "), "{out3}");
    assert!(lines3[0].ends_with("(0 of 500 found)"), "{out3}");
    assert!(lines3[1].contains(" 1000 operations;"), "{out3}");
    assert!(lines3[2].starts_with("seekrandom   : "), "{out3}");
    // One reader thread's message, the writer's ops left out.
    assert!(lines3[3].ends_with("of 500 found)"), "{out3}");
    assert!(lines3[3].contains(" 1000 operations;"), "{out3}");
    assert!(lines3[5].contains("( reads:"), "{out3}");
    assert!(lines3[6].contains("( updates:"), "{out3}");
    assert!(lines3[7].ends_with("( updates:500)"), "{out3}");
    assert!(out3.contains("Microseconds per read:\nCount: "), "{out3}");
    assert!(out3.contains("Microseconds per seek:\nCount: "), "{out3}");
    assert!(out3.contains("Microseconds per delete:\nCount: "), "{out3}");
    assert!(out3.contains("Microseconds per merge:\nCount: "), "{out3}");
    assert!(out3.contains("Percentiles: P50: "), "{out3}");
    // deleteseq removed every key: nothing left to scan.
    assert!(lines3[11].contains(" 1 operations;"), "{out3}");
}

/// The same flags and seed draw the same keys as RocksDB's db_bench:
/// `db_bench --benchmarks=fillrandom,readrandom,seekrandom --num=20000
/// --seed=1` (RocksDB 7.8.3) finds 12409 and 12546 keys.
#[test]
fn bench_draws_db_benchs_keys() {
    let dir = tempfile::tempdir().unwrap();
    let out = bench_out(&[
        format!("--db={}", dir.path().join("db").display()),
        "--num=20000".into(),
        "--seed=1".into(),
        "--benchmarks=fillrandom,readrandom,seekrandom".into(),
    ]);
    let lines = report_lines(&out);
    assert!(lines[1].ends_with("(12409 of 20000 found)"), "{out}");
    assert!(lines[2].ends_with("(12546 of 20000 found)"), "{out}");
}

#[test]
fn bench_writes_report_file_and_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("report.csv");
    let out = bench_out(&[
        format!("--db={}", dir.path().join("db").display()),
        "--num=2000".into(),
        "--duration=2".into(),
        "--statistics".into(),
        "--report_interval_seconds=1".into(),
        format!("--report_file={}", csv.display()),
        "--benchmarks=fillrandom".into(),
    ]);
    let line = report_lines(&out)[0];
    // --duration: runs for the time, not the count (how many operations
    // fit in it depends on the machine).
    let ops: u64 = field_after(line, "operations;").parse().unwrap();
    let secs: f64 = field_after(line, "seconds").parse().unwrap();
    assert!(secs >= 2.0, "{out}");
    let report = std::fs::read_to_string(&csv).unwrap();
    let mut rows = report.lines();
    assert_eq!(rows.next(), Some("secs_elapsed,interval_qps"));
    let rows: Vec<(u64, u64)> = rows
        .map(|r| {
            let (a, b) = r.split_once(',').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    // One row per elapsed interval; which second the first lands in
    // depends on scheduling.
    assert!(!rows.is_empty(), "{report}");
    assert!(rows[0].0 >= 1, "{report}");
    assert!(rows.windows(2).all(|w| w[0].0 < w[1].0), "{report}");
    assert!(rows.iter().map(|r| r.1).sum::<u64>() <= ops);
    assert!(out.contains("STATISTICS:\n"), "{out}");
    assert!(
        out.contains(&format!("rocksdb.number.keys.written COUNT : {ops}\n")),
        "{out}"
    );
    assert!(out.contains("rocksdb.db.write.micros P50 : "), "{out}");
}

/// Runs `strata bench --db=DB FLAGS...`; returns stdout and the LOG.
fn bench(db: &std::path::Path, flags: &[&str]) -> (String, String) {
    let mut c = strata();
    c.arg("bench")
        .arg(format!("--db={}", db.display()))
        .args(flags);
    let out = run(c, b"");
    let log = std::fs::read_to_string(db.join("LOG")).unwrap();
    (out, log)
}

fn assert_logged(log: &str, lines: &[&str]) {
    for l in lines {
        assert!(
            log.lines().any(|x| x.ends_with(l)),
            "LOG has no line ending in {l:?}:\n{log}"
        );
    }
}

/// The `size on disk: N bytes` line, which must be the last one.
fn size_on_disk(out: &str) -> u64 {
    let last = out.lines().last().unwrap();
    last.strip_prefix("size on disk: ")
        .and_then(|r| r.strip_suffix(" bytes"))
        .unwrap_or_else(|| panic!("last line is not the size: {out}"))
        .parse()
        .unwrap()
}

fn stall_lines(out: &str) -> usize {
    out.lines()
        .filter(|l| {
            l.starts_with("Stalls: ")
                && l.contains(" stops (")
                && l.contains(" delayed write groups (")
                && l.contains(", longest single wait ")
        })
        .count()
}

#[test]
fn bench_takes_db_bench_compaction_flags_and_benchmarks() {
    let dir = tempfile::tempdir().unwrap();
    // Leveled, with every level flag and the background/stall flags.
    let db = dir.path().join("level");
    let (out, log) = bench(
        &db,
        &[
            "--num=5000",
            "--write_buffer_size=32768",
            "--compaction_style=0",
            "--num_levels=5",
            "--level0_file_num_compaction_trigger=3",
            "--level0_slowdown_writes_trigger=9",
            "--level0_stop_writes_trigger=15",
            "--target_file_size_base=65536",
            "--target_file_size_multiplier=2",
            "--max_bytes_for_level_base=262144",
            "--max_bytes_for_level_multiplier=8",
            "--level_compaction_dynamic_level_bytes=true",
            "--max_compaction_bytes=1048576",
            "--soft_pending_compaction_bytes_limit=10000000",
            "--hard_pending_compaction_bytes_limit=20000000",
            "--max_background_compactions=3",
            "--max_background_flushes=1",
            "--subcompactions=2",
            "--delayed_write_rate=4194304",
            "--statistics",
            // Thread seeds 11 (fillrandom), 12 (readrandom), 13 (compact), 14.
            "--seed=10",
            "--benchmarks=fillrandom,readrandom,waitforcompaction,compact,readrandom,stats",
        ],
    );
    assert_logged(
        &log,
        &[
            "Options.compaction_style: kCompactionStyleLevel",
            "Options.num_levels: 5",
            "Options.level0_file_num_compaction_trigger: 3",
            "Options.level0_slowdown_writes_trigger: 9",
            "Options.level0_stop_writes_trigger: 15",
            "Options.target_file_size_base: 65536",
            "Options.target_file_size_multiplier: 2",
            "Options.max_bytes_for_level_base: 262144",
            "Options.max_bytes_for_level_multiplier: 8",
            "Options.level_compaction_dynamic_level_bytes: true",
            "Options.max_compaction_bytes: 1048576",
            "Options.soft_pending_compaction_bytes_limit: 10000000",
            "Options.hard_pending_compaction_bytes_limit: 20000000",
            "Options.disable_auto_compactions: false",
            // max_background_compactions + max_background_flushes.
            "Options.max_background_jobs: 4",
            "Options.max_subcompactions: 2",
            "Options.delayed_write_rate: 4194304",
        ],
    );
    let reports: Vec<&str> = out.lines().filter(|l| l.contains("ops/sec")).collect();
    assert_eq!(reports.len(), 4, "{out}");
    assert!(reports[2].starts_with("compact      : "), "{out}");
    assert!(reports[2].ends_with(" 1 operations;"), "{out}");
    let path = db.display().to_string();
    assert!(out.contains(&format!(
        "waitforcompaction({path}): started\nwaitforcompaction({path}): finished\n"
    )));
    assert!(
        out.contains("\n\n\n** Compaction Stats [default] **\n"),
        "{out}"
    );
    // --statistics: the stall counters after each of the 6 benchmarks.
    assert!(stall_lines(&out) >= 6, "{out}");
    assert!(size_on_disk(&out) > 50_000, "{out}");
    // The CLI opens the result with its options: 5 levels, no L0 left
    // after `compact`.
    let mut c = strata();
    c.arg(format!("--db={}", db.display()))
        .arg("list_live_files_metadata");
    let listing = run(c, b"");
    assert!(
        listing.contains("---------- level 4 ----------\n"),
        "{listing}"
    );
    assert!(!listing.contains("level 5"), "{listing}");
    assert!(
        listing.contains("---------- level 0 ----------\n---------- level 1 ----------\n"),
        "{listing}"
    );

    // The same draws after the compaction (seed 11 + 1, the first
    // readrandom's seed) find the same keys.
    let (again, _) = bench(
        &db,
        &[
            "--num=5000",
            "--seed=11",
            "--use_existing_db",
            "--benchmarks=readrandom",
        ],
    );
    let again: Vec<&str> = again.lines().filter(|l| l.contains("ops/sec")).collect();
    assert_eq!(
        found(reports[1]),
        found(again[0]),
        "compact changed what reads find:\n{out}"
    );

    // Universal, automatic compactions off: many L0 files until
    // `compact` puts one sorted run on the last level.
    let db = dir.path().join("universal");
    let (out, log) = bench(
        &db,
        &[
            "--num=3000",
            "--write_buffer_size=32768",
            "--compaction_style=1",
            "--universal_size_ratio=5",
            "--universal_min_merge_width=3",
            "--universal_max_merge_width=6",
            "--universal_max_size_amplification_percent=120",
            "--disable_auto_compactions",
            "--benchmarks=fillseq,compact",
        ],
    );
    assert_logged(
        &log,
        &[
            "Options.compaction_style: kCompactionStyleUniversal",
            "Options.disable_auto_compactions: true",
            "Options.compaction_options_universal: UniversalCompactionOptions { size_ratio: 5, min_merge_width: 3, max_merge_width: 6, max_size_amplification_percent: 120 }",
        ],
    );
    // Without --statistics: one stall line, after the last benchmark.
    assert_eq!(stall_lines(&out), 1, "{out}");
    size_on_disk(&out);
    let mut c = strata();
    c.arg(format!("--db={}", db.display()))
        .arg("list_live_files_metadata")
        .arg("--sort_by_filename");
    let listing = run(c, b"");
    let levels: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split(" : level ").nth(1))
        .collect();
    assert!(!levels.is_empty());
    assert!(levels.iter().all(|l| l.starts_with("6,")), "{listing}");

    // FIFO: one level (as RocksDB sanitizes it), the size limit in MiB.
    let db = dir.path().join("fifo");
    let (_, log) = bench(
        &db,
        &[
            "--num=2000",
            "--compaction_style=2",
            "--fifo_compaction_max_table_files_size_mb=3",
            "--fifo_compaction_ttl=600",
            "--benchmarks=fillseq",
        ],
    );
    assert_logged(
        &log,
        &[
            "Options.compaction_style: kCompactionStyleFIFO",
            "Options.num_levels: 1",
            "Options.compaction_options_fifo: FifoCompactionOptions { max_table_files_size: 3145728, ttl_seconds: 600 }",
        ],
    );

    // db_bench's defaults, where they differ from the library's.
    let db = dir.path().join("defaults");
    let (_, log) = bench(&db, &["--num=100", "--benchmarks=fillseq"]);
    assert_logged(
        &log,
        &[
            "Options.compaction_style: kCompactionStyleLevel",
            "Options.num_levels: 7",
            "Options.level_compaction_dynamic_level_bytes: false",
            "Options.hard_pending_compaction_bytes_limit: 137438953472",
            "Options.soft_pending_compaction_bytes_limit: 68719476736",
            "Options.delayed_write_rate: 8388608",
            "Options.max_background_jobs: 2",
            "Options.max_subcompactions: 1",
            "Options.target_file_size_base: 67108864",
            "Options.max_bytes_for_level_base: 268435456",
        ],
    );

    // Bad values are refused, naming the flag.
    for bad in [
        "--compaction_style=4",
        "--num_levels=-1",
        "--max_bytes_for_level_multiplier=x",
        "--universal_size_ratio=-5",
        "--level_compaction_dynamic_level_bytes=maybe",
    ] {
        let mut c = strata();
        c.arg("bench")
            .arg(format!("--db={}", dir.path().join("bad").display()))
            .args(["--num=10", "--benchmarks=fillseq", bad]);
        let o = c.output().unwrap();
        assert!(!o.status.success(), "{bad} accepted");
        let name = bad.trim_start_matches("--").split('=').next().unwrap();
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(name),
            "{bad}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// db_bench's `randomtransaction` under each database kind: every set's
/// sum stays equal (the verification after the run), with transactions
/// prepared, committed and rolled back from several threads and the
/// memtable flushed along the way (small write buffer).
#[test]
fn bench_runs_randomtransaction_and_verifies_the_sets() {
    for kind in [
        &["--transaction_db"][..],
        &[
            "--transaction_db",
            "--unordered_write=1",
            "--enable_pipelined_write=false",
        ],
        &[
            "--transaction_db",
            "--transaction_set_snapshot=1",
            "--transaction_sets=5",
        ],
        // Without a snapshot, optimistic transactions may lose updates
        // (plain gets are not validated), as RocksDB's do.
        &[
            "--optimistic_transaction_db",
            "--transaction_set_snapshot=1",
        ],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut flags = vec![
            "--benchmarks=randomtransaction".to_string(),
            "--num=500".into(),
            "--threads=3".into(),
            "--write_buffer_size=16384".into(),
            "--seed=3".into(),
            format!("--db={}", dir.path().join("db").display()),
        ];
        flags.extend(kind.iter().map(|s| s.to_string()));
        let out = bench_out(&flags);
        let line = report_lines(&out)
            .into_iter()
            .find(|l| l.starts_with("randomtransaction"))
            .unwrap_or_else(|| panic!("no report line for {kind:?}:\n{out}"));
        assert!(
            line.contains("transactions:500 aborts:"),
            "{kind:?}: {line}"
        );
        assert!(
            out.contains("RandomTransactionVerify Success."),
            "{kind:?}:\n{out}"
        );
    }
}
