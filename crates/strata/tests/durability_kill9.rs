//! A `sync: false` write survives a real `kill -9` of the writing process:
//! a child process writes keys and reports each acknowledged write on
//! stdout; the parent kills it with SIGKILL at a random moment, reopens the
//! database and checks every acknowledged key (and that what was recovered
//! is a prefix of what was written: no holes).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use strata::{DB, Options, ReadOptions, WriteOptions};

const CHILD_ENV: &str = "STRATA_KILL9_CHILD_DB";

/// The child process of `sync_false_writes_survive_kill9`, not a test of
/// its own: it writes until killed, printing each acknowledged index.
/// Ignored, so a normal run lists it as such instead of passing it
/// vacuously; the parent runs it with `--ignored`.
#[test]
#[ignore = "the child process of sync_false_writes_survive_kill9, run only by it"]
fn kill9_child_writer() {
    let path = std::env::var(CHILD_ENV)
        .expect("kill9_child_writer runs as the child of sync_false_writes_survive_kill9");
    let mut opts = Options {
        create_if_missing: true,
        ..Options::default()
    };
    opts.cf.write_buffer_size = 64 * 1024; // switch memtables and flush often
    let db = DB::open(opts, &path).unwrap();
    let wo = WriteOptions::default();
    let mut out = std::io::stdout().lock();
    for i in 0u64.. {
        let key = format!("key{i:010}");
        db.put(
            &wo,
            key.as_bytes(),
            format!("value-{i}-{}", "x".repeat((i % 200) as usize)).as_bytes(),
        )
        .unwrap();
        use std::io::Write;
        writeln!(out, "{i}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn sync_false_writes_survive_kill9() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for round in 0..5u64 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let mut child = Command::new(&exe)
            .args([
                "--ignored",
                "--exact",
                "kill9_child_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut acked: Option<u64> = None;
        let target = 2_000 + round * 3_000;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(i) = line.trim().parse::<u64>() {
                acked = Some(i);
                if i >= target {
                    break;
                }
            }
        }
        // SIGKILL: no destructors, no flush of anything still in user space.
        child.kill().unwrap();
        child.wait().unwrap();
        let acked = acked.expect("child acknowledged nothing");
        let db = DB::open(Options::default(), &path).unwrap();
        let ro = ReadOptions::default();
        let mut n = 0u64;
        let mut it = db.iter(&ro).unwrap();
        while it.valid() {
            assert_eq!(
                it.key(),
                format!("key{n:010}").as_bytes(),
                "round {round}: hole before key {n}"
            );
            n += 1;
            it.next();
        }
        it.status().unwrap();
        assert!(
            n > acked,
            "round {round}: {acked} acknowledged but only {n} keys recovered"
        );
    }
}
