//! WAL damage sweep (docs/RELIABILITY.md G6): a database whose synced writes
//! are only in its WAL is recovered after every sampled single-bit flip
//! and after every sampled truncation of that WAL. Recovery (point in
//! time, the default) may stop at the damage but never skips past it:
//! what it recovers is a prefix of the writes, each with its exact value;
//! it never panics, and it never invents data.
//!
//! `STRATA_WAL_SWEEP_STRIDE=N` sets the sampling (default 7: every 7th
//! bit, every 7th length; 1 tries them all).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::fs::FileSystem;
use strata::fs::mem::MemFileSystem;
use strata::{DB, Options, ReadOptions, WriteOptions};

const N: usize = 60;

fn key(i: usize) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    vec![b'a' + (i % 26) as u8; 20 + (i * 37) % 160]
}

fn opts(fs: &MemFileSystem) -> Options {
    Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    }
}

/// Every file of `fs` with its bytes.
fn snapshot(fs: &MemFileSystem) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for p in fs.file_names() {
        let mut f = fs.new_sequential_file(&p).unwrap();
        let mut data = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = f.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            data.extend_from_slice(&buf[..n]);
        }
        out.insert(p, data);
    }
    out
}

fn restore(files: &BTreeMap<PathBuf, Vec<u8>>) -> MemFileSystem {
    let fs = MemFileSystem::new();
    for (p, data) in files {
        if let Some(dir) = p.parent() {
            fs.create_dir_all(dir).unwrap();
        }
        let mut f = fs.new_writable_file(p).unwrap();
        f.append(data).unwrap();
        f.sync().unwrap();
        f.close().unwrap();
    }
    if let Some(dir) = files.keys().next().and_then(|p| p.parent()) {
        fs.sync_dir(dir).unwrap();
    }
    fs
}

/// Recovers `files` and checks the prefix property; returns how many
/// writes came back (None if the open failed cleanly).
fn recover(files: &BTreeMap<PathBuf, Vec<u8>>, what: &str) -> Option<usize> {
    let fs = restore(files);
    let db = DB::open(opts(&fs), "/db").ok()?;
    let ro = ReadOptions::default();
    let got: Vec<Option<Vec<u8>>> = (0..N)
        .map(|i| {
            db.get(&ro, &key(i))
                .unwrap_or_else(|e| panic!("{what}: get after recovery failed: {e}"))
        })
        .collect();
    let m = got.iter().take_while(|v| v.is_some()).count();
    for (i, v) in got.iter().enumerate() {
        if i < m {
            assert_eq!(
                v.as_deref(),
                Some(&value(i)[..]),
                "{what}: write {i} has a wrong value"
            );
        } else {
            assert!(
                v.is_none(),
                "{what}: write {i} recovered after a hole at {m}"
            );
        }
    }
    Some(m)
}

#[test]
fn wal_flips_and_truncations_recover_a_prefix() {
    let stride: usize = std::env::var("STRATA_WAL_SWEEP_STRIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7)
        .max(1);
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let wo = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    for i in 0..N {
        db.put(&wo, &key(i), &value(i)).unwrap();
    }
    db.close().unwrap();
    let base = snapshot(&fs);
    let wal: PathBuf = base
        .keys()
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .cloned()
        .expect("a WAL");
    assert_eq!(recover(&base, "undamaged"), Some(N));
    let len = base[&wal].len();
    assert!(len > 1000, "{len}");

    let (mut flips, mut full, mut failed) = (0, 0, 0);
    for bit in (0..len * 8).step_by(stride) {
        let mut files = base.clone();
        files.get_mut(&wal).unwrap()[bit / 8] ^= 1 << (bit % 8);
        match recover(&files, &format!("bit {bit} of {}", wal_name(&wal))) {
            Some(m) if m == N => full += 1,
            Some(_) => {}
            None => failed += 1,
        }
        flips += 1;
    }
    let mut cuts = 0;
    for cut in (0..len).step_by(stride) {
        let mut files = base.clone();
        files.get_mut(&wal).unwrap().truncate(cut);
        let m = recover(&files, &format!("truncated to {cut} bytes"))
            .unwrap_or_else(|| panic!("a torn WAL tail (cut at {cut}) must recover cleanly"));
        assert!(
            m < N || cut == len,
            "cut at {cut}: all {N} writes back from a truncated WAL"
        );
        cuts += 1;
    }
    common::figures::record(
        "G6-wal",
        "WAL bit flips and truncations",
        &format!(
            "{len}-byte WAL, {flips} flips ({full} harmless, {failed} refused at open, the rest recovered a prefix), {cuts} truncations, 0 holes"
        ),
    );
}

fn wal_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// MANIFEST damage: after any sampled bit flip of the MANIFEST of a
/// database with several tables, opening either fails with an error or
/// yields exactly the original data (never a panic, never different
/// data). Truncations of the MANIFEST are checked for panics only: a
/// crash cannot cut a synced MANIFEST, so losing its torn last edit is
/// not a real-world state.
#[test]
fn manifest_flips_are_refused_or_harmless() {
    let stride: usize = std::env::var("STRATA_WAL_SWEEP_STRIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let fs = MemFileSystem::new();
    let db = DB::open(opts(&fs), "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..N {
        db.put(&wo, &key(i), &value(i)).unwrap();
        if i % 20 == 19 {
            db.flush().unwrap();
        }
    }
    db.close().unwrap();
    let base = snapshot(&fs);
    let manifest: PathBuf = base
        .keys()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"))
        })
        .cloned()
        .expect("a MANIFEST");
    assert_eq!(recover(&base, "undamaged"), Some(N));
    let len = base[&manifest].len();
    let (mut flips, mut refused) = (0, 0);
    for bit in (0..len * 8).step_by(stride) {
        let mut files = base.clone();
        files.get_mut(&manifest).unwrap()[bit / 8] ^= 1 << (bit % 8);
        match recover(&files, &format!("MANIFEST bit {bit}")) {
            None => refused += 1,
            Some(m) => assert_eq!(m, N, "MANIFEST bit {bit}: opened with writes missing"),
        }
        flips += 1;
    }
    for cut in 0..len {
        let mut files = base.clone();
        files.get_mut(&manifest).unwrap().truncate(cut);
        let fs = restore(&files);
        if let Ok(db) = DB::open(opts(&fs), "/db") {
            for i in 0..N {
                let _ = db.get(&ReadOptions::default(), &key(i));
            }
        }
    }
    common::figures::record(
        "G6-manifest",
        "MANIFEST bit flips and truncations",
        &format!(
            "{len}-byte MANIFEST, {flips} flips ({refused} refused at open, the rest harmless), {len} truncations without a panic"
        ),
    );
}
