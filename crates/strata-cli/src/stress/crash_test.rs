//! `strata crash_test`: the supervisor of RocksDB's crash test. Each cycle
//! starts `strata stress` on the same database with options drawn at random
//! (memtable size, compression, sync ratio, WAL on or off, file sizes), waits
//! until the run has verified what the previous one left, lets it work for
//! a random time, and kills it with SIGKILL. The next cycle's verification
//! is the check: every acknowledged write present (or, with the WAL off, a
//! prefix of the traced writes reaching the last flush). Every
//! `--fresh_every` cycles the database starts over with the other
//! compaction style; every `--txn_every`-th database (default 4th; 0:
//! none) runs the bank workload in transactions instead, WritePrepared,
//! WriteCommitted and optimistic in turn (the total preserved, every
//! acknowledged commit kept, prepared transactions recovered and ended).
//! A last `--verify_only` run closes the test.
//!
//! On a failure the supervisor stops, keeps the directory, and prints the
//! cycle's command line and log.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{Rng, VERIFICATION_FAILED};
use crate::flags::Flags;

/// Picks one of `xs`.
fn pick<'a>(rng: &mut Rng, xs: &[&'a str]) -> &'a str {
    xs[rng.below(xs.len() as u64) as usize]
}

/// Totals of a crash test.
#[derive(Debug, Default)]
struct Totals {
    cycles: u64,
    killed: u64,
    wal_off: u64,
    databases: u64,
    /// Databases that ran transactions.
    txn_databases: u64,
    settled: u64,
}

/// The stress flags of one cycle.
fn cycle_flags(
    rng: &mut Rng,
    base: &[String],
    style: u64,
    plain: bool,
    wal_off: bool,
) -> Vec<String> {
    let mut a: Vec<String> = base.to_vec();
    let mut set = |k: &str, v: String| a.push(format!("--{k}={v}"));
    set("compaction_style", style.to_string());
    if plain {
        set("use_plain_table", "true".into());
    }
    set(
        "write_buffer_size",
        pick(rng, &["65536", "262144", "1048576"]).into(),
    );
    set(
        "compression_type",
        pick(rng, &["none", "snappy", "lz4", "zstd"]).into(),
    );
    set(
        "target_file_size_base",
        pick(rng, &["65536", "262144"]).into(),
    );
    set(
        "max_bytes_for_level_base",
        pick(rng, &["524288", "1048576"]).into(),
    );
    set(
        "level0_file_num_compaction_trigger",
        (2 + rng.below(3)).to_string(),
    );
    set("seed", rng.next().to_string());
    // The write path's modes: ordered (RocksDB's default), pipelined,
    // unordered; the leader inserts for its group one cycle in four.
    let mode = rng.below(3);
    match mode {
        1 => set("enable_pipelined_write", "true".into()),
        2 => set("unordered_write", "true".into()),
        _ => {}
    }
    // (Unordered writes require concurrent inserts.)
    if mode != 2 && rng.below(4) == 0 {
        set("allow_concurrent_memtable_write", "false".into());
        // The vector and hash memtables take no concurrent inserts: now
        // they may serve.
        match rng.below(4) {
            0 => set("memtablerep", "vector".into()),
            1 => set("memtablerep", "prefix_hash".into()),
            2 => set("memtablerep", "hash_linkedlist".into()),
            _ => {}
        }
    }
    // Tables written through memory maps one cycle in four (a kill leaves
    // an unfinished output with a zero tail, which recovery must drop).
    if rng.below(4) == 0 {
        set("mmap_write", "true".into());
    }
    if wal_off {
        set("disable_wal", "true".into());
    } else {
        set("sync_one_in", pick(rng, &["0", "20", "200"]).into());
    }
    a
}

/// Runs `strata crash_test`.
pub fn run(f: &Flags) -> Result<(), String> {
    let dir = PathBuf::from(f.get("db").ok_or("crash_test needs --db=DIR")?);
    let cycles: u64 = f.num("cycles", 100)?;
    let seed: u64 = f.num("seed", 2026)?;
    let kill_min: u64 = f.num("kill_min_ms", 200)?;
    let kill_max: u64 = f.num::<u64>("kill_max_ms", 1500)?.max(kill_min);
    let fresh_every: u64 = f.num("fresh_every", 25)?;
    let wal_off_one_in: u64 = f.num("wal_off_one_in", 5)?;
    let txn_every: u64 = f.num("txn_every", 4)?;
    let base = vec![
        format!("--threads={}", f.num::<u64>("threads", 4)?),
        format!("--max_key={}", f.num::<u64>("max_key", 5000)?),
        // Runs until killed.
        "--ops_per_thread=1000000000000".to_string(),
    ];
    for u in f.unknown() {
        eprintln!("crash_test: warning: unknown flag --{u}");
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut rng = Rng(seed);
    let mut t = Totals::default();
    let started = Instant::now();
    let mut db = PathBuf::new();
    let mut style = 0;
    let mut plain = false;
    // The transaction flags of a bank database (empty: the key-value
    // workload).
    let mut txn: Vec<String> = Vec::new();
    let last_flags = |style: u64, plain: bool, txn: &[String]| {
        let mut last = vec![format!("--compaction_style={style}")];
        if plain {
            last.push("--use_plain_table=true".into());
        }
        last.extend_from_slice(txn);
        [base.clone(), last].concat()
    };
    for cycle in 0..cycles {
        if cycle % fresh_every.max(1) == 0 {
            if t.databases > 0 {
                // Close the finished database with a full verification.
                verify_only(&exe, &db, &last_flags(style, plain, &txn), &dir)?;
            }
            db = dir.join(format!("db{}", t.databases));
            style = t.databases % 2;
            txn = if txn_every > 0 && t.databases % txn_every == txn_every - 1 {
                let kind = (t.databases / txn_every) % 3;
                t.txn_databases += 1;
                match kind {
                    0 => vec!["--use_txn".into(), "--txn_write_policy=1".into()],
                    1 => vec!["--use_txn".into(), "--txn_write_policy=0".into()],
                    _ => vec!["--use_optimistic_txn".into()],
                }
            } else {
                Vec::new()
            };
            // Every third key-value database writes PlainTable files (no
            // range deletions then; fixed-size keys, which the bank's
            // are not).
            plain = txn.is_empty() && t.databases % 3 == 2;
            t.databases += 1;
        }
        // Transactions need the WAL.
        let wal_off = txn.is_empty() && wal_off_one_in > 0 && rng.below(wal_off_one_in) == 0;
        let mut args = cycle_flags(&mut rng, &base, style, plain, wal_off);
        args.extend_from_slice(&txn);
        args.push(format!("--db={}", db.display()));
        let kill_after = Duration::from_millis(kill_min + rng.below(kill_max - kill_min + 1));
        let log = dir.join(format!("cycle-{cycle}.log"));
        let outcome = run_cycle(&exe, &args, kill_after, &log)?;
        match outcome {
            Cycle::Killed { settled } => {
                t.killed += 1;
                t.settled += settled;
                let _ = std::fs::remove_file(&log);
            }
            Cycle::Failed(why) => {
                return Err(format!(
                    "crash_test: cycle {cycle} failed: {why}\n  replay: {} stress {}\n  log: {}\n  \
                     database and expected state kept in {}",
                    exe.display(),
                    args.join(" "),
                    log.display(),
                    dir.display()
                ));
            }
        }
        t.cycles += 1;
        t.wal_off += u64::from(wal_off);
    }
    if t.databases > 0 {
        verify_only(&exe, &db, &last_flags(style, plain, &txn), &dir)?;
    }
    println!(
        "crash_test: {} cycles ({} killed with SIGKILL, {} with the WAL off) over {} databases \
         ({} with transactions), {} in-flight writes settled, 0 failures, {:.1} s",
        t.cycles,
        t.killed,
        t.wal_off,
        t.databases,
        t.txn_databases,
        t.settled,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

enum Cycle {
    Killed { settled: u64 },
    Failed(String),
}

/// One stress run: wait for its verification, let it run `kill_after`,
/// then SIGKILL. Its stdout and stderr go to `log`.
fn run_cycle(
    exe: &Path,
    args: &[String],
    kill_after: Duration,
    log: &Path,
) -> Result<Cycle, String> {
    let err_file =
        std::fs::File::create(log).map_err(|e| format!("create {}: {e}", log.display()))?;
    let mut child = Command::new(exe)
        .arg("stress")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err_file))
        .spawn()
        .map_err(|e| format!("start stress: {e}"))?;
    let Some(out) = child.stdout.take() else {
        return Err("stress: no stdout".into());
    };
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The verification of what the last run left must finish first.
    let mut verified = None;
    let deadline = Instant::now() + Duration::from_secs(300);
    while verified.is_none() {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line.starts_with("stress: verified") => verified = Some(line),
            Ok(_) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Ok(Cycle::Failed("no verification within 300 s".into()));
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let Some(verified) = verified else {
        let status = child.wait().map_err(|e| format!("wait: {e}"))?;
        let _ = reader.join();
        return Ok(Cycle::Failed(format!(
            "stress exited ({status}) before it verified: {}",
            log_excerpt(log)
        )));
    };
    // "stress: verified N keys (P present; S in-flight writes settled...".
    let settled = verified
        .split_once(" in-flight writes settled")
        .and_then(|(head, _)| head.rsplit(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    std::thread::sleep(kill_after);
    if let Some(status) = child.try_wait().map_err(|e| format!("wait: {e}"))? {
        let _ = reader.join();
        return Ok(Cycle::Failed(format!(
            "stress exited ({status}) before the kill: {}",
            log_excerpt(log)
        )));
    }
    child.kill().map_err(|e| format!("kill: {e}"))?;
    let _ = child.wait();
    let _ = reader.join();
    // A failure found during the run (before the kill) is in the log.
    let text = std::fs::read_to_string(log).unwrap_or_default();
    if text.contains(VERIFICATION_FAILED) {
        return Ok(Cycle::Failed(log_excerpt(log)));
    }
    Ok(Cycle::Killed { settled })
}

fn log_excerpt(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

fn verify_only(exe: &Path, db: &Path, args: &[String], dir: &Path) -> Result<(), String> {
    let out = Command::new(exe)
        .arg("stress")
        .args(args)
        .arg(format!("--db={}", db.display()))
        .arg("--verify_only")
        .output()
        .map_err(|e| format!("start stress --verify_only: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "crash_test: the final verification of {} failed ({}):\n{}{}\n  kept in {}",
            db.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            dir.display()
        ))
    }
}
