//! Helpers for tests that run the `strata` binary and RocksDB 7.8.3's tools.

#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Path of the `strata` binary under test.
pub fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

/// Requires RocksDB's tool `name` (`ldb`, `sst_dump`, `db_bench`). Interop
/// tests fail without them unless STRATA_SKIP_INTEROP=1 says otherwise, so
/// a machine without rocksdb-tools cannot pass them silently.
pub fn rocksdb_tool(name: &str) -> Option<Command> {
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

/// Runs a command, feeding `stdin`, and returns stdout; panics with stderr
/// on failure.
pub fn run(cmd: Command, stdin: &[u8]) -> String {
    String::from_utf8_lossy(&run_bytes(cmd, stdin)).into_owned()
}

/// [`run`], returning stdout's bytes as they are.
pub fn run_bytes(mut cmd: Command, stdin: &[u8]) -> Vec<u8> {
    let desc = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {desc}: {e}"));
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "{desc} failed: {}\nstdout: {}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out.stdout
}

/// Entry lines (`'k' seq:N, type:T => v`) of an sst_dump scan.
pub fn entry_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with('\''))
        .map(|l| l.to_string())
        .collect()
}

/// The .sst files of a directory, sorted.
pub fn sst_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    v.sort();
    v
}

/// Uppercase hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// A deterministic pseudo-random generator for test data.
pub use strata::tools::util::rng::Rng;

/// Up to `max_len` random bytes.
pub fn random_bytes(r: &mut Rng, max_len: usize) -> Vec<u8> {
    let n = (r.next() % (max_len as u64 + 1)) as usize;
    (0..n).map(|_| r.next() as u8).collect()
}
