//! RocksDB 7.8.3's tools for interop checks.

use std::process::{Command, Stdio};

/// A command for RocksDB's `ldb`; `None` (test skipped, said so) only
/// when it is missing and STRATA_SKIP_INTEROP=1, else a missing `ldb`
/// fails the test with what to install.
pub fn ldb() -> Option<Command> {
    let found = Command::new("which")
        .arg("ldb")
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if found {
        return Some(Command::new("ldb"));
    }
    if std::env::var("STRATA_SKIP_INTEROP").as_deref() == Ok("1") {
        eprintln!("skipping: RocksDB tool ldb not installed (STRATA_SKIP_INTEROP=1)");
        return None;
    }
    panic!(
        "RocksDB tool `ldb` is not installed: run ./scripts/test-all.sh (apt-get install -y rocksdb-tools) or set STRATA_SKIP_INTEROP=1"
    );
}
