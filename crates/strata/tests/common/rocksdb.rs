//! RocksDB 7.8.3's tools for interop checks.

use std::process::{Command, Stdio};

/// A command for RocksDB's `ldb`; `None` (test skipped, said so) only
/// when it is missing and STRATA_SKIP_INTEROP=1, else a missing `ldb`
/// fails the test with what to install.
pub fn ldb() -> Option<Command> {
    tool("ldb")
}

/// What RocksDB's `ldb scan` (with `--hex` if `hex`) prints for the
/// database at `db` (one `key : value` line per entry); `None` as [`ldb`].
/// A failing scan fails the test.
#[allow(dead_code)]
pub fn ldb_scan(db: &std::path::Path, hex: bool) -> Option<String> {
    let mut c = ldb()?;
    c.arg(format!("--db={}", db.display()));
    if hex {
        c.arg("--hex");
    }
    let out = c.arg("scan").output().unwrap();
    assert!(
        out.status.success(),
        "ldb scan: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A command for RocksDB's `db_bench`, as [`ldb`].
#[allow(dead_code)]
pub fn db_bench() -> Option<Command> {
    tool("db_bench")
}

/// Runs RocksDB's db_bench on `dir` with `args`; false (the caller skips
/// its test) when db_bench is missing.
#[allow(dead_code)]
pub fn run_db_bench(dir: &std::path::Path, args: &[&str]) -> bool {
    let Some(mut bench) = db_bench() else {
        return false;
    };
    let out = bench
        .arg(format!("--db={}", dir.display()))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "db_bench {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

/// `b` as upper-case hex (ldb's `--hex` form, without `0x`).
#[allow(dead_code)]
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|c| format!("{c:02X}")).collect()
}

fn tool(name: &str) -> Option<Command> {
    let found = Command::new("which")
        .arg(name)
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if found {
        return Some(Command::new(name));
    }
    if std::env::var("STRATA_SKIP_INTEROP").as_deref() == Ok("1") {
        eprintln!("skipping: RocksDB tool {name} not installed (STRATA_SKIP_INTEROP=1)");
        return None;
    }
    panic!(
        "RocksDB tool `{name}` is not installed: run ./scripts/test-all.sh (apt-get install -y rocksdb-tools) or set STRATA_SKIP_INTEROP=1"
    );
}
