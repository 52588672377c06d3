//! MANIFEST interop with RocksDB 7.8.3's `ldb`:
//! * a DB directory whose MANIFEST and CURRENT Strata's `VersionSet` wrote
//!   (tables built by `TableBuilder`) is accepted by `ldb scan`,
//!   `ldb checkconsistency` and `ldb manifest_dump`;
//! * the MANIFEST of a DB that `ldb load` + `ldb compact` wrote is recovered
//!   by `VersionSet::recover` with the files, levels and counters that
//!   `ldb manifest_dump` prints.
//!
//! Needs `ldb` on the PATH; fails with a clear message otherwise, unless
//! STRATA_SKIP_INTEROP=1.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use common::rocksdb::ldb;
use strata::fs::{FileSystemRef, default_fs};
use strata::tools::filename::table_file_name;
use strata::tools::format::{ValueType, make_internal_key};
use strata::tools::table::{TableBuilder, TableOptions};
use strata::tools::util::comparator::bytewise;
use strata::tools::version::{FileMetaData, VersionEdit, VersionSet};

/// Runs `ldb args...` with `stdin`; returns stdout, panicking with stderr
/// on failure.
fn run_ldb(args: &[String], stdin: &[u8]) -> String {
    let mut cmd = ldb().unwrap_or_else(|| unreachable!("checked by the caller"));
    cmd.args(args);
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
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn db_arg(dir: &Path) -> String {
    format!("--db={}", dir.display())
}

/// Writes table `number` in `dir` holding `keys` (value = key + "-v") at
/// sequences `first_seq..`, and returns its metadata.
fn write_table(
    fs: &FileSystemRef,
    dir: &Path,
    number: u64,
    keys: &[&str],
    first_seq: u64,
) -> FileMetaData {
    let file = fs
        .new_writable_file(&dir.join(table_file_name(number)))
        .unwrap();
    let mut b = TableBuilder::new(TableOptions::default(), file).unwrap();
    for (i, k) in keys.iter().enumerate() {
        let ikey = make_internal_key(k.as_bytes(), first_seq + i as u64, ValueType::Value);
        b.add(&ikey, format!("{k}-v").as_bytes()).unwrap();
    }
    let info = b.finish(true).unwrap();
    fs.sync_dir(dir).unwrap();
    FileMetaData::from_table(number, &info)
}

#[test]
fn rocksdb_reads_our_manifest() {
    if ldb().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let fs = default_fs();
    let mut vs = VersionSet::create_new(fs.clone(), &dir, bytewise()).unwrap();
    let n1 = vs.new_file_number();
    let f1 = write_table(&fs, &dir, n1, &["a1", "a2", "a3"], 1);
    let mut e = VersionEdit::new();
    e.add_file(0, f1);
    e.last_sequence = Some(3);
    vs.log_and_apply(0, e).unwrap();
    let scan = run_ldb(&[db_arg(&dir), "scan".into()], b"");
    assert_eq!(scan, "a1 : a1-v\na2 : a2-v\na3 : a3-v\n");
    let check = run_ldb(&[db_arg(&dir), "checkconsistency".into()], b"");
    assert!(check.contains("OK"), "{check}");
    drop(vs);

    // Reopen (our rollover snapshot is what RocksDB reads next), move the
    // first table to L1 and add an L0 table and a column family.
    let mut vs = VersionSet::recover(fs.clone(), &dir, bytewise(), false).unwrap();
    let n2 = vs.new_file_number();
    let f2 = write_table(&fs, &dir, n2, &["b1", "b2"], 4);
    let mut e = VersionEdit::new();
    e.delete_file(0, n1);
    let moved = vs.current(0).unwrap().files(0)[0].as_ref().clone();
    e.add_file(1, moved);
    e.add_file(0, f2);
    e.last_sequence = Some(5);
    vs.log_and_apply(0, e).unwrap();
    vs.create_column_family("cf1").unwrap();
    drop(vs);
    let vs = VersionSet::recover(fs.clone(), &dir, bytewise(), false).unwrap();
    let manifest = dir.join(format!("MANIFEST-{:06}", vs.manifest_file_number()));
    drop(vs);

    let scan = run_ldb(&[db_arg(&dir), "scan".into()], b"");
    assert_eq!(
        scan,
        "a1 : a1-v\na2 : a2-v\na3 : a3-v\nb1 : b1-v\nb2 : b2-v\n"
    );
    let check = run_ldb(&[db_arg(&dir), "checkconsistency".into()], b"");
    assert!(check.contains("OK"), "{check}");
    let dump = run_ldb(
        &[
            "manifest_dump".into(),
            format!("--path={}", manifest.display()),
        ],
        b"",
    );
    assert!(
        dump.contains("--------------- Column family \"cf1\"  (ID 1) --------------"),
        "{dump}"
    );
    assert!(dump.contains("last_sequence 5"), "{dump}");
    let level_of = |n: u64| {
        parse_manifest_dump(&dump)
            .files
            .iter()
            .find(|f| f.1 == n)
            .map(|f| f.0)
    };
    assert_eq!(level_of(n1), Some(1), "{dump}");
    assert_eq!(level_of(n2), Some(0), "{dump}");
}

/// What `ldb manifest_dump` prints for the default column family.
struct Dump {
    /// `(level, number, size, smallest_seqno, largest_seqno)`.
    files: Vec<(usize, u64, u64, u64, u64)>,
    next_file_number: u64,
    last_sequence: u64,
    log_number: u64,
}

fn parse_manifest_dump(text: &str) -> Dump {
    let mut d = Dump {
        files: Vec::new(),
        next_file_number: 0,
        last_sequence: 0,
        log_number: 0,
    };
    let mut level = 0;
    let mut in_default = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("--------------- Column family ") {
            in_default = rest.starts_with("\"default\"");
        } else if let Some(rest) = line.strip_prefix("--- level ") {
            level = rest.split(' ').next().unwrap().parse().unwrap();
        } else if let Some(rest) = line.strip_prefix("log number: ") {
            if in_default {
                d.log_number = rest.trim().parse().unwrap();
            }
        } else if let Some(rest) = line.strip_prefix("next_file_number ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            d.next_file_number = words[0].parse().unwrap();
            d.last_sequence = words[2].parse().unwrap();
        } else if in_default && line.starts_with(' ') && line.contains(':') {
            // " 18:1029[0 .. 0]['k1' seq:0, type:1 .. 'k4' seq:0, type:1]"
            let (num, rest) = line.trim_start().split_once(':').unwrap();
            let (size, rest) = rest.split_once('[').unwrap();
            let (seqs, _) = rest.split_once(']').unwrap();
            let (s, l) = seqs.split_once(" .. ").unwrap();
            d.files.push((
                level,
                num.parse().unwrap(),
                size.parse().unwrap(),
                s.parse().unwrap(),
                l.parse().unwrap(),
            ));
        }
    }
    d
}

#[test]
fn we_recover_a_rocksdb_manifest() {
    if ldb().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rdb");
    let db = db_arg(&dir);
    let batch: String = (0..50)
        .map(|i| format!("key{i:03} ==> value{i}\n"))
        .collect();
    run_ldb(
        &[db.clone(), "--create_if_missing".into(), "load".into()],
        batch.as_bytes(),
    );
    run_ldb(&[db.clone(), "compact".into()], b"");
    run_ldb(
        &[db.clone(), "load".into()],
        b"zz1 ==> late\nkey007 ==> newer\n",
    );
    // Flush the second load into an L0 file.
    run_ldb(&[db.clone(), "put".into(), "zz2".into(), "v".into()], b"");

    let fs = default_fs();
    let current = String::from_utf8(fs.read_file(&dir.join("CURRENT")).unwrap()).unwrap();
    let manifest = dir.join(current.trim_end());
    let dump = run_ldb(
        &[
            "manifest_dump".into(),
            format!("--path={}", manifest.display()),
        ],
        b"",
    );
    let want = parse_manifest_dump(&dump);
    assert!(want.files.len() >= 2, "{dump}");
    assert!(want.files.iter().any(|f| f.0 == 0), "an L0 file: {dump}");
    assert!(
        want.files.iter().any(|f| f.0 > 0),
        "a compacted file: {dump}"
    );

    let vs = VersionSet::recover(fs.clone(), &dir, bytewise(), true).unwrap();
    assert_eq!(vs.next_file_number(), want.next_file_number, "{dump}");
    assert_eq!(vs.last_sequence(), want.last_sequence, "{dump}");
    assert_eq!(vs.column_family(0).unwrap().log_number(), want.log_number);
    let v = vs.current(0).unwrap();
    let ours: Vec<(usize, u64, u64, u64, u64)> = v
        .all_files()
        .map(|(l, f)| (l, f.number, f.file_size, f.smallest_seqno, f.largest_seqno))
        .collect();
    assert_eq!(ours, want.files, "{dump}");
    // Sizes match the files on disk, as RocksDB's paranoid check requires.
    for (_, n, size, _, _) in &ours {
        assert_eq!(fs.file_size(&dir.join(table_file_name(*n))).unwrap(), *size);
    }
    drop(vs);

    // Our read-write recovery writes a MANIFEST RocksDB then opens.
    let fs2: FileSystemRef = Arc::new(strata::fs::posix::PosixFileSystem::new());
    let vs = VersionSet::recover(fs2, &dir, bytewise(), false).unwrap();
    assert!(vs.manifest_file_number() >= want.next_file_number);
    drop(vs);
    let scan = run_ldb(&[db.clone(), "scan".into()], b"");
    assert!(scan.starts_with("key000 : value0\n"), "{scan}");
    assert!(scan.contains("key007 : newer\n"), "{scan}");
    assert!(scan.ends_with("zz1 : late\nzz2 : v\n"), "{scan}");
    let check = run_ldb(&[db, "checkconsistency".into()], b"");
    assert!(check.contains("OK"), "{check}");
}
