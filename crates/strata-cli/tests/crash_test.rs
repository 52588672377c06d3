//! G1 (docs/RELIABILITY.md): `strata crash_test` kills `strata stress` with
//! SIGKILL at random times and verifies every restart against the expected
//! state. `STRATA_CRASH_CYCLES` sets the cycle count (default 100);
//! `STRATA_SEED` the seed.

mod common;
#[path = "../../strata/tests/common/figures.rs"]
mod figures;

use std::os::unix::fs::FileExt;

use common::strata;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Runs `strata crash_test` for `cycles` cycles with `extra` flags, checks
/// that it passed with every cycle killed, and records its summary as
/// figure `id`.
fn crash_test(id: &str, what: &str, cycles: u64, extra: &[String]) {
    let dir = tempfile::tempdir().unwrap();
    let seed = env_u64("STRATA_SEED").unwrap_or(1);
    let out = strata()
        .args([
            "crash_test",
            &format!("--db={}", dir.path().join("ct").display()),
            &format!("--cycles={cycles}"),
            &format!("--seed={seed}"),
            "--kill_min_ms=50",
            "--kill_max_ms=400",
            "--threads=3",
        ])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "crash test failed (replay with STRATA_SEED={seed}):\n{stdout}\n{stderr}"
    );
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("crash_test: "))
        .unwrap_or_else(|| panic!("no summary in {stdout}"));
    assert!(
        summary.contains(&format!("{cycles} cycles ({cycles} killed")),
        "{summary}"
    );
    figures::record(id, what, summary.trim_start_matches("crash_test: "));
}

#[test]
fn crash_test_kills_stress_and_verifies_every_restart() {
    let cycles = env_u64("STRATA_CRASH_CYCLES").unwrap_or(100);
    crash_test(
        "G1",
        "strata stress killed with SIGKILL at random times (strata crash_test)",
        cycles,
        &["--max_key=2000".into(), "--fresh_every=25".into()],
    );
}

#[test]
fn crash_test_kills_transactions_and_keeps_the_bank_total() {
    // Three bank databases (WritePrepared, WriteCommitted, optimistic),
    // each killed 8 times mid-transfer: the total never changes, every
    // acknowledged commit survives, recovered prepared transactions end.
    let cycles = env_u64("STRATA_TXN_CRASH_CYCLES").unwrap_or(24);
    crash_test(
        "G1-txn",
        "strata stress --use_txn/--use_optimistic_txn killed with SIGKILL (strata crash_test --txn_every=1)",
        cycles,
        &[
            "--max_key=200".into(),
            format!("--fresh_every={}", cycles.div_ceil(3).max(1)),
            "--txn_every=1".into(),
        ],
    );
}

/// The verification is not a formality: a database that disagrees with its
/// expected state fails it, naming the key.
#[test]
fn stress_verification_catches_a_wrong_value() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let exp = dir.path().join("db.expected");
    let run = |extra: &[&str]| {
        strata()
            .args([
                "stress",
                &format!("--db={}", db.display()),
                "--max_key=300",
                "--threads=2",
                "--ops_per_thread=3000",
                "--write_buffer_size=16384",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("stress: done, verified"), "{stdout}");
    // Rewind key 7's slot to "absent, generation 0": the database has the
    // key (or a later generation), so the next verification must fail.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&exp)
        .unwrap();
    let slot = 16 + 8 * 7;
    let mut cur = [0u8; 8];
    f.read_exact_at(&mut cur, slot).unwrap();
    let state = u64::from_le_bytes(cur) as u32;
    // A state the key is not in: another generation, existing.
    let wrong = ((state & ((1 << 30) - 1)) + 5) | (1 << 30);
    f.write_all_at(&u64::from(wrong).to_le_bytes(), slot)
        .unwrap();
    let out = run(&["--verify_only"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("VERIFICATION FAILED: key 7:"), "{stderr}");
}

/// With the WAL off, a run killed mid-way leaves a trace; the next run
/// recovers the longest prefix of it that the database holds.
#[test]
fn wal_off_run_killed_then_settled_by_its_trace() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let args = [
        "stress".to_string(),
        format!("--db={}", db.display()),
        "--max_key=500".into(),
        "--threads=2".into(),
        "--write_buffer_size=16384".into(),
        "--disable_wal".into(),
        "--flush_one_in=200".into(),
    ];
    let mut child = strata()
        .args(&args)
        .arg("--ops_per_thread=100000000")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let trace = dir.path().join("db.expected.trace");
    let t0 = std::time::Instant::now();
    while std::fs::metadata(&trace).map_or(0, |m| m.len()) < 20_000 {
        assert!(t0.elapsed().as_secs() < 60, "no trace written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(trace.exists());
    let out = strata().args(&args).arg("--verify_only").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("WAL-off trace:"), "{stdout}");
    assert!(!trace.exists(), "a settled trace is removed");
    // A WAL-off run that ends normally must hold its whole trace (its end
    // flush writes a marker after the last write).
    let out = strata()
        .args(&args)
        .arg("--ops_per_thread=2000")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("stress: done, verified"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!trace.exists());
}
