//! The reliability figures each suite records for the docs/RELIABILITY.md table.
//!
//! A suite calls [`record`] with its row; `scripts/test-all.sh` prints the
//! rows of the run as one table after the tests. Rows live under cargo's
//! per-target temporary directory, one file per row id, so reruns replace
//! them.

use std::path::PathBuf;

/// Where the rows are kept: `target/tmp/reliability/`.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("reliability")
}

/// Records one row: `id` orders the table (`G2`, `G5-table`, ...), `suite`
/// names what ran, `figures` says how much ran and how much failed.
pub fn record(id: &str, suite: &str, figures: &str) {
    let dir = dir();
    // Best effort: a test must not fail because the table could not be written.
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(
            dir.join(format!("{id}.row")),
            format!("| {id} | {suite} | {figures} |\n"),
        );
    }
    eprintln!("reliability {id}: {suite}: {figures}");
}
