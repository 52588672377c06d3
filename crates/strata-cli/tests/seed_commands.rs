//! Every db_bench command of the project's seed documents
//! (`tests/data/seed_db_bench_commands.txt`, copied from them as written)
//! runs in `strata bench`: each line's shell variables are expanded, the
//! scale brought down (`--num`, `--duration`, `--threads`, sizes of
//! gigabytes), paths moved to a temporary directory, and the command run
//! in the order the document gives (a later `--use_existing_db=1` reads
//! what an earlier one wrote). Every benchmark must print its result line;
//! the only warnings allowed are those naming flags RocksDB 7.8.3's
//! db_bench no longer accepts. Commands with `--memtablerep=prefix_hash`
//! (seed 002) or `vector` (seeds 000, 001), written before concurrent
//! memtable inserts became the default, run with
//! `--allow_concurrent_memtable_write=false` added, as RocksDB 7.8.3
//! requires ("Memtable doesn't concurrent writes").

mod common;

use std::collections::HashMap;

use common::strata;

/// Flags RocksDB 7.8.3's db_bench refuses ("ERROR: unknown command line
/// flag"); `strata bench` names them in a warning and runs.
const REMOVED: &[&str] = &[
    "disable_data_sync",
    "hard_rate_limit",
    "max_grandparent_overlap_factor",
    "source_compaction_factor",
];

/// `name=value;` assignments before `./db_bench`, then its arguments with
/// `$name` expanded (`defaults` for names the line does not set).
fn expand(line: &str, defaults: &HashMap<&str, String>) -> Vec<String> {
    let (vars, cmd) = line.split_once("./db_bench").expect("a db_bench line");
    let mut env: HashMap<String, String> = defaults
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    for a in vars.split(';') {
        if let Some((k, v)) = a.trim().split_once('=') {
            env.insert(k.to_string(), v.to_string());
        }
    }
    cmd.split_whitespace()
        .map(|arg| {
            let mut out = String::new();
            let mut rest = arg;
            while let Some(i) = rest.find('$') {
                out.push_str(&rest[..i]);
                let name: String = rest[i + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.push_str(env.get(&name).map_or("", String::as_str));
                rest = &rest[i + 1 + name.len()..];
            }
            out.push_str(rest);
            out.replace('"', "")
        })
        .collect()
}

/// The command at this machine's scale: small counts and sizes, paths
/// under `tmp` (one database per path the document names).
fn scaled(args: Vec<String>, tmp: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut has_num = false;
    let mut no_concurrent_inserts = false;
    for a in args {
        let Some((name, value)) = a.trim_start_matches("--").split_once('=') else {
            out.push(a);
            continue;
        };
        let value = match name {
            "num" => {
                has_num = true;
                "3000".to_string()
            }
            "duration" => "1".to_string(),
            "threads" => value.parse::<u64>().unwrap_or(1).min(3).to_string(),
            "write_buffer_size" | "target_file_size_base" | "max_bytes_for_level_base" => {
                value.parse::<u64>().unwrap_or(0).min(1 << 20).to_string()
            }
            "writes_per_second" => value.parse::<u64>().unwrap_or(0).min(2000).to_string(),
            "db" | "wal_dir" => {
                let tail = value.trim_matches('/').replace('/', "_");
                tmp.join(if tail.is_empty() { "db".into() } else { tail })
                    .display()
                    .to_string()
            }
            "memtablerep" => {
                no_concurrent_inserts = value == "prefix_hash" || value == "vector";
                value.to_string()
            }
            _ => value.to_string(),
        };
        out.push(format!("--{name}={value}"));
    }
    if !has_num {
        out.push("--num=3000".into());
    }
    if !out.iter().any(|a| a.starts_with("--db=")) {
        out.push(format!("--db={}", tmp.join("default").display()));
    }
    if no_concurrent_inserts {
        out.push("--allow_concurrent_memtable_write=false".into());
    }
    out
}

#[test]
fn every_seed_db_bench_command_runs() {
    let text = include_str!("data/seed_db_bench_commands.txt");
    let tmp = tempfile::tempdir().unwrap();
    let mut defaults = HashMap::new();
    defaults.insert("dir", tmp.path().join("dir").display().to_string());
    defaults.insert("t", "2".to_string());
    let mut ran = 0;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (seed, cmd) = line.split_once('\t').unwrap();
        let args = scaled(expand(cmd, &defaults), tmp.path());
        let out = strata().arg("bench").args(&args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let what = format!("seed {seed}: strata bench {}", args.join(" "));
        assert!(out.status.success(), "{what}\n{stdout}\n{stderr}");
        for l in stderr.lines() {
            let l = l.to_lowercase();
            if l.contains("flag") {
                assert!(
                    REMOVED.iter().any(|f| l.contains(f)) && l.contains("7.8.3"),
                    "{what}: {l}"
                );
            }
        }
        let benchmarks = args
            .iter()
            .find_map(|a| a.strip_prefix("--benchmarks="))
            .unwrap();
        for b in benchmarks.split(',').filter(|b| *b != "stats") {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.starts_with(b) && l.contains(" micros/op ")),
                "{what}: no result line for {b}\n{stdout}"
            );
        }
        for f in REMOVED {
            if args.iter().any(|a| a.starts_with(&format!("--{f}="))) {
                assert!(stderr.contains(f), "{what}: --{f} not named\n{stderr}");
            }
        }
        ran += 1;
    }
    assert_eq!(ran, 39);
}
