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

#[test]
fn bench_reports_consistent_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut c = strata();
    c.arg("bench")
        .arg(format!("--db={}", db.display()))
        .arg("--num=3000")
        .arg("--write_buffer_size=65536")
        .arg("--bloom_bits=10")
        .arg("--benchmarks=fillrandom,readrandom,flush,readrandom,readseq,readreverse");
    let out = run(c, b"");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("ops/sec")).collect();
    assert_eq!(lines.len(), 6, "{out}");
    let found = |l: &str| -> u64 {
        let start = l.find('(').unwrap() + 1;
        l[start..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (before, after) = (found(lines[1]), found(lines[3]));
    assert!(before > 0 && before < 3000, "{out}");
    assert_eq!(before, after, "reads changed after flush:\n{out}");
    // readseq and readreverse count the distinct keys fillrandom wrote.
    let seq: u64 = field_after(lines[4], "operations;").parse().unwrap();
    let rev: u64 = field_after(lines[5], "operations;").parse().unwrap();
    assert_eq!(seq, rev);
    assert!(seq > 1500 && seq < 3000, "{out}");
    // The database persists; readseq on reopen sees the same keys.
    let mut c = strata();
    c.arg("bench")
        .arg(format!("--db={}", db.display()))
        .arg("--num=3000")
        .arg("--use_existing_db")
        .arg("--benchmarks=readseq");
    let out2 = run(c, b"");
    let line = out2.lines().find(|l| l.contains("ops/sec")).unwrap();
    assert_eq!(
        field_after(line, "operations;").parse::<u64>().unwrap(),
        seq
    );
}
