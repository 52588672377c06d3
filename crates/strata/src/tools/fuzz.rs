//! Fuzzing entry points, one per decoder of on-disk bytes. Each consumes
//! arbitrary bytes and exercises every read path of its decoder.

use std::sync::Arc;

use crate::format::WriteBatch;
use crate::format::iterator::InternalIterator;
use crate::fs::buffer::BytesFile;
use crate::table::block::{Block, KeyOrder};
use crate::table::{Table, TableOptions};
use crate::wal::LogReader;

fn walk(it: &mut dyn InternalIterator, probe: &[u8]) {
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 100_000 {
        it.next();
        n += 1;
    }
    it.seek_to_last();
    n = 0;
    while it.valid() && n < 100_000 {
        it.prev();
        n += 1;
    }
    it.seek(probe);
    it.seek_for_prev(probe);
    let _ = it.status();
}

/// Decodes `data` as a block (all key orders, both value encodings).
pub fn block(data: &[u8]) {
    let probe: Vec<u8> = data.iter().take(12).copied().collect();
    if let Ok(b) = Block::from_vec(data.to_vec()) {
        let b = Arc::new(b);
        for delta in [false, true] {
            walk(&mut b.iter(KeyOrder::Bytewise, delta), &probe);
            let icmp =
                crate::format::InternalKeyComparator::new(crate::util::comparator::bytewise());
            walk(&mut b.iter(KeyOrder::Internal(icmp), delta), &probe);
        }
    }
}

/// Opens `data` as a table file, scans it both ways, looks up keys and
/// verifies checksums.
pub fn table(data: &[u8]) {
    let n = data.len() as u64;
    let probe: Vec<u8> = data.iter().take(16).copied().collect();
    for verify in [true, false] {
        let opts = TableOptions {
            verify_checksums: verify,
            ..TableOptions::default()
        };
        if let Ok(t) = Table::open(
            Arc::new(BytesFile::new(data.to_vec())),
            "fuzz.sst",
            n,
            &opts,
        ) {
            let t = Arc::new(t);
            walk(&mut t.iter(), &probe);
            let _ = t.get(&probe);
            let _ = t.verify_checksums();
            let _ = t.memory_usage();
            walk(&mut t.prefix_iter(), &probe);
            if let Some(b) = t.as_block_based() {
                let _ = b.index_partitions();
            }
        }
    }
}

/// Reads `data` as a WAL, continuing past corruption like the
/// skip-any-corrupted-records recovery mode, and decodes every batch.
pub fn wal(data: &[u8]) {
    let mut r = LogReader::new(Box::new(BytesFile::new(data.to_vec())), 1);
    for _ in 0..10_000 {
        match r.read_record() {
            Ok(Some(rec)) => write_batch(&rec),
            Ok(None) => break,
            Err(crate::wal::ReadError::Other(_)) => break,
            Err(_) => continue,
        }
    }
}

/// Decodes `data` as a WriteBatch.
pub fn write_batch(data: &[u8]) {
    if let Ok(b) = WriteBatch::from_bytes(data.to_vec()) {
        let _ = b.validate();
        for r in b.iter() {
            if r.is_err() {
                break;
            }
        }
    }
}

/// Parses `data` as a filter block and probes it.
pub fn filter(data: &[u8]) {
    let f = crate::table::filter::FilterReader::new(data.to_vec());
    for k in data.chunks(7).take(64) {
        let _ = f.key_may_match(k);
    }
}

/// Decodes `data` as a MANIFEST record (a VersionEdit), renders it as
/// `ldb manifest_dump` does, and checks that what it decodes re-encodes
/// stably (encode . decode is idempotent).
// A fuzz oracle: a violated property panics, which is what the fuzzer
// reports.
#[allow(clippy::panic)]
pub fn version_edit(data: &[u8]) {
    use crate::version::VersionEdit;
    if let Ok(e) = VersionEdit::decode(data) {
        let _ = e.debug_string(false);
        let _ = e.debug_string(true);
        let once = e.encode();
        match VersionEdit::decode(&once) {
            Ok(again) => assert_eq!(
                again.encode(),
                once,
                "re-encoding a decoded edit changed it"
            ),
            Err(err) => panic!("a decoded edit re-encodes to bytes that do not decode: {err}"),
        }
    }
}

/// Parses `data` as an OPTIONS file and applies it; for every column
/// family whose options apply and validate, the OPTIONS text Strata writes
/// for them must read back to the same options (render . parse . apply is
/// a fixed point).
// A fuzz oracle: a violated property panics.
#[allow(clippy::panic)]
pub fn options_file(data: &[u8]) {
    use crate::db::options_file::render;
    use crate::db::options_parser::{parse, sanitize};
    use crate::options::{ColumnFamilyOptions, Options};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = parse("OPTIONS-000001", text) else {
        return;
    };
    let mut opts = Options::default();
    if file.apply_db(&mut opts).is_err() || opts.validate().is_err() {
        return;
    }
    let reload = |text: &str, name: &str| -> (Options, ColumnFamilyOptions) {
        let f = parse("OPTIONS-000002", text)
            .unwrap_or_else(|e| panic!("our own OPTIONS text does not parse: {e}\n{text}"));
        let mut o = Options::default();
        let mut c = ColumnFamilyOptions::default();
        if let Err(e) = f.apply_db(&mut o).and_then(|()| f.apply_cf(name, &mut c)) {
            panic!("our own OPTIONS text does not apply: {e}\n{text}");
        }
        sanitize(&mut c);
        (o, c)
    };
    for name in file.column_families() {
        let mut c = ColumnFamilyOptions::default();
        if file.apply_cf(name, &mut c).is_err() {
            continue;
        }
        sanitize(&mut c);
        if c.validate(name).is_err() {
            continue;
        }
        let once = render(&opts, &[(0, name, &c)]);
        let (o2, c2) = reload(&once, name);
        let twice = render(&o2, &[(0, name, &c2)]);
        assert_eq!(once, twice, "options changed through their OPTIONS text");
    }
}

/// Writes `path` with `data` on `fs`.
fn put_file(fs: &crate::fs::mem::MemFileSystem, path: &str, data: &[u8]) {
    use crate::fs::FileSystem;
    let path = std::path::Path::new(path);
    if let Some(dir) = path.parent() {
        let _ = fs.create_dir_all(dir);
    }
    if let Ok(mut f) = fs.new_writable_file(path) {
        let _ = f.append(data);
        let _ = f.sync();
        let _ = f.close();
    }
}

/// Recovers a database whose MANIFEST is `data` (CURRENT names it) on the
/// in-memory file system, read-only: recovery fails with an error or
/// gives a database whose reads fail cleanly (its tables do not exist).
/// Also walks the MANIFEST record by record.
pub fn manifest(data: &[u8]) {
    use crate::fs::mem::MemFileSystem;
    use crate::version::ManifestReader;
    let fs = MemFileSystem::new();
    put_file(&fs, "/db/CURRENT", b"MANIFEST-000001\n");
    put_file(&fs, "/db/MANIFEST-000001", data);
    if let Ok(mut r) = ManifestReader::open(&fs, std::path::Path::new("/db/MANIFEST-000001")) {
        for _ in 0..10_000 {
            match r.next_edit() {
                Ok(Some((_, e))) => {
                    let _ = e.debug_string(false);
                }
                _ => break,
            }
        }
    }
    let opts = crate::Options {
        fs: Some(Arc::new(fs.clone())),
        ..crate::Options::default()
    };
    if let Ok(db) = crate::DB::open_read_only(opts, "/db") {
        let ro = crate::ReadOptions::default();
        let _ = db.get(&ro, b"k");
        if let Ok(mut it) = db.iter(&ro) {
            let mut n = 0;
            while it.valid() && n < 1000 {
                it.next();
                n += 1;
            }
            let _ = it.status();
        }
        let _ = db.property("rocksdb.stats");
    }
}

/// Applies the operations `data` encodes to a database on the in-memory
/// file system (tiny memtables and files, so flushes and compactions
/// happen) and to a `BTreeMap`; every read must match the model, before
/// and after reopening. Each operation is one byte (kind) plus arguments
/// taken from the following bytes.
// A fuzz oracle: any failure or divergence from the model panics, which is
// what the fuzzer reports.
#[allow(clippy::panic, clippy::expect_used)]
pub fn db_ops(data: &[u8]) {
    use crate::fs::mem::MemFileSystem;
    use std::collections::BTreeMap;
    let fs = MemFileSystem::new();
    let mut opts = crate::Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        ..crate::Options::default()
    };
    opts.cf.write_buffer_size = 4 << 10;
    opts.cf.target_file_size_base = 4 << 10;
    opts.cf.max_bytes_for_level_base = 16 << 10;
    opts.cf.level0_file_num_compaction_trigger = 2;
    let Ok(mut db) = crate::DB::open(opts.clone(), "/db") else {
        panic!("opening an empty in-memory database failed");
    };
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let wo = crate::WriteOptions::default();
    let ro = crate::ReadOptions::default();
    let key = |b: u8| format!("key{:03}", b % 64).into_bytes();
    let mut bytes = data.iter().copied();
    let mut next = move || bytes.next();
    let mut ops = 0;
    while let Some(op) = next() {
        ops += 1;
        if ops > 2000 {
            break;
        }
        let a = next().unwrap_or(0);
        match op % 9 {
            0..=2 => {
                let len = usize::from(next().unwrap_or(0) % 200);
                let value = vec![a ^ op; len];
                db.put(&wo, &key(a), &value).expect("put");
                model.insert(key(a), value);
            }
            3 => {
                db.delete(&wo, &key(a)).expect("delete");
                model.remove(&key(a));
            }
            4 => {
                let (a, b) = (a % 64, next().unwrap_or(0) % 64);
                let (lo, hi) = (key(a.min(b)), key(a.max(b)));
                db.delete_range(&wo, &lo, &hi).expect("delete_range");
                let doomed: Vec<Vec<u8>> = model.range(lo..hi).map(|(k, _)| k.clone()).collect();
                for k in doomed {
                    model.remove(&k);
                }
            }
            5 => {
                let got = db.get(&ro, &key(a)).expect("get");
                assert_eq!(got.as_ref(), model.get(&key(a)), "get {:?}", key(a));
            }
            6 => db.flush().expect("flush"),
            7 => db.compact_range(None, None).expect("compact_range"),
            _ => {
                db.close().expect("close");
                db = crate::DB::open(opts.clone(), "/db").expect("reopen");
            }
        }
    }
    let mut it = db.iter(&ro).expect("iterator");
    let mut seen = Vec::new();
    while it.valid() {
        seen.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().expect("scan");
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    assert_eq!(seen, want, "scan differs from the model");
}

/// A fuzz entry point.
pub type FuzzTarget = fn(&[u8]);

/// Every target by name, for the corpus replay.
pub const TARGETS: &[(&str, FuzzTarget)] = &[
    ("block", block),
    ("table", table),
    ("wal", wal),
    ("write_batch", write_batch),
    ("filter", filter),
    ("version_edit", version_edit),
    ("manifest", manifest),
    ("db_ops", db_ops),
    ("options_file", options_file),
];
