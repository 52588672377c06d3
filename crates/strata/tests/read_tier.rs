//! `ReadOptions::read_tier = BlockCache` (RocksDB's `kBlockCacheTier`,
//! seed 000's non-blocking reads): gets and multi-gets answer from the
//! memtables, open table readers and the block cache, and say
//! `Incomplete` where a file would have to be read; `key_may_exist` is
//! built on it. A fault armed on every table open and read proves the
//! no-I/O reads touch no file (it would fail them with an I/O error).

use std::sync::Arc;

use strata::fs::FileSystemRef;
use strata::fs::fault::{FailMode, FaultInjectionFileSystem, OpKind};
use strata::fs::mem::MemFileSystem;
use strata::options::{Options, ReadOptions, ReadTier, WriteOptions};
use strata::{DB, Error};

fn opts(fs: &FileSystemRef) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::clone(fs)),
        ..Options::default()
    };
    o.cf.compression = strata::CompressionType::None;
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "v".repeat(100)).into_bytes()
}

fn cached() -> ReadOptions {
    ReadOptions {
        read_tier: ReadTier::BlockCache,
        ..ReadOptions::default()
    }
}

fn incomplete(r: &strata::Result<Option<Vec<u8>>>) -> bool {
    matches!(r, Err(Error::Incomplete(_)))
}

/// A database with 2,000 keys in one table (many blocks), reopened so
/// nothing is open or cached, and `k` in its memtable.
fn reopened(fs: &FileSystemRef) -> DB {
    let db = DB::open(opts(fs), "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..2000 {
        db.put(&wo, &key(i), &value(i)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let db = DB::open(opts(fs), "/db").unwrap();
    db.put(&WriteOptions::default(), b"k", b"in memtable")
        .unwrap();
    db
}

/// Fails every open or read of a table file until `allow_io`.
fn forbid_io(fs: &FaultInjectionFileSystem) {
    fs.fail_op(
        &[OpKind::NewRandomAccess, OpKind::Read],
        Some(".sst"),
        0,
        FailMode::Persistent,
    );
}

fn allow_io(fs: &FaultInjectionFileSystem) {
    fs.clear_faults();
}

#[test]
fn block_cache_tier_reads_never_touch_a_file() {
    let fault = FaultInjectionFileSystem::new(Arc::new(MemFileSystem::new()));
    let fs: FileSystemRef = Arc::new(fault.clone());
    let db = reopened(&fs);
    forbid_io(&fault);
    // The memtable answers without any table.
    assert_eq!(
        db.get(&cached(), b"k").unwrap(),
        Some(b"in memtable".to_vec())
    );
    // The table is not open: Incomplete, and no file opened for it.
    let r = db.get(&cached(), &key(10));
    assert!(incomplete(&r), "{r:?}");
    assert_eq!(fault.injected_count(), 0, "a no-I/O read opened a file");
    // A normal read opens the table and caches key 10's block.
    allow_io(&fault);
    assert_eq!(
        db.get(&ReadOptions::default(), &key(10)).unwrap(),
        Some(value(10))
    );
    forbid_io(&fault);
    assert_eq!(db.get(&cached(), &key(10)).unwrap(), Some(value(10)));
    assert_eq!(db.get(&cached(), &key(11)).unwrap(), Some(value(11)));
    // Another block is not cached: Incomplete, with no read.
    assert!(incomplete(&db.get(&cached(), &key(1900))));
    // Absent keys the filter rules out need no block.
    assert_eq!(db.get(&cached(), b"nokey").unwrap(), None);
    assert_eq!(fault.injected_count(), 0, "a no-I/O read read a file");
    // Multi-get: one answer per key, the same rules.
    let (k10, k1900) = (key(10), key(1900));
    let keys: Vec<&[u8]> = vec![b"k", &k10, &k1900, b"nokey"];
    let got = db.multi_get(&cached(), &keys);
    assert_eq!(
        got[0].as_ref().unwrap().as_deref(),
        Some(&b"in memtable"[..])
    );
    assert_eq!(got[1].as_ref().unwrap().as_deref(), Some(&value(10)[..]));
    assert!(matches!(got[2], Err(Error::Incomplete(_))), "{:?}", got[2]);
    assert_eq!(got[3].as_ref().unwrap(), &None);
    // key_may_exist: no I/O, never a false "absent".
    let ro = ReadOptions::default();
    assert_eq!(db.key_may_exist(&ro, &key(10)), (true, Some(value(10))));
    assert_eq!(db.key_may_exist(&ro, &key(1900)), (true, None));
    assert_eq!(db.key_may_exist(&ro, b"nokey"), (false, None));
    assert_eq!(fault.injected_count(), 0, "a no-I/O read read a file");
    // Once read normally, the block answers from the cache too.
    allow_io(&fault);
    assert_eq!(db.get(&ro, &key(1900)).unwrap(), Some(value(1900)));
    forbid_io(&fault);
    assert_eq!(db.get(&cached(), &key(1900)).unwrap(), Some(value(1900)));
    assert_eq!(fault.injected_count(), 0);
    allow_io(&fault);
}

#[test]
fn other_tiers_and_iterators_are_refused_by_name() {
    let fs: FileSystemRef = Arc::new(MemFileSystem::new());
    let db = reopened(&fs);
    for tier in [ReadTier::Persisted, ReadTier::Memtable] {
        let ro = ReadOptions {
            read_tier: tier,
            ..ReadOptions::default()
        };
        let e = db.get(&ro, b"k").unwrap_err();
        assert!(
            matches!(e, Error::NotSupported(_)) && e.to_string().contains("read_tier"),
            "{e}"
        );
    }
    let e = db.iter(&cached()).unwrap_err();
    assert!(matches!(e, Error::NotSupported(_)), "{e}");
}

/// With `cache_index_and_filter_blocks`, an open table's index and filter
/// are cache entries: once the cache has lost them (a strict cache too
/// small to keep anything), a no-I/O get says `Incomplete` instead of
/// reading them, and touches no file; a normal get reads them again.
#[test]
fn block_cache_tier_does_not_read_evicted_index_or_filter_blocks() {
    let mem: FileSystemRef = Arc::new(MemFileSystem::new());
    let fault = Arc::new(FaultInjectionFileSystem::new(Arc::clone(&mem)));
    let fs: FileSystemRef = fault.clone();
    let mut o = opts(&fs);
    o.cf.bloom_bits_per_key = Some(10.0);
    o.cf.cache_index_and_filter_blocks = true;
    o.cf.block_cache =
        Some(strata::BlockCache::with_options(1, 0, true) as Arc<dyn strata::BlockCacheApi>);
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..2000 {
        db.put(&wo, &key(i), &value(i)).unwrap();
    }
    db.flush().unwrap();
    // Opens the table (its reader stays open in the table cache).
    assert_eq!(
        db.get(&ReadOptions::default(), &key(7)).unwrap(),
        Some(value(7))
    );
    forbid_io(&fault);
    for i in [7, 700, 1999] {
        let r = db.get(&cached(), &key(i));
        assert!(incomplete(&r), "{:?}", r.map(|v| v.map(|v| v.len())));
    }
    allow_io(&fault);
    assert_eq!(
        db.get(&ReadOptions::default(), &key(700)).unwrap(),
        Some(value(700))
    );
}

/// Table readers are opened at `DB::open` (RocksDB's `LoadTableHandlers`):
/// every table with `max_open_files` unlimited, otherwise a quarter of
/// the table cache up to 16; reads find them open.
#[test]
fn tables_are_opened_when_the_database_opens() {
    let mem: FileSystemRef = Arc::new(MemFileSystem::new());
    let db = DB::open(opts(&mem), "/db").unwrap();
    let wo = WriteOptions::default();
    for t in 0..8u64 {
        for i in 0..10 {
            db.put(&wo, &key(t * 100 + i), &value(i)).unwrap();
        }
        db.flush().unwrap();
    }
    let tables = db.live_files_metadata().len();
    assert!(tables >= 4, "{tables}");
    drop(db);
    let readers_memory = |o: Options| {
        let db = DB::open(o, "/db").unwrap();
        let m: u64 = db
            .property("rocksdb.estimate-table-readers-mem")
            .unwrap()
            .parse()
            .unwrap();
        (db, m)
    };
    let mut unlimited = opts(&mem);
    unlimited.max_open_files = i32::MAX as usize;
    let (db, all) = readers_memory(unlimited);
    assert!(all > 0, "no table open after DB::open");
    drop(db);
    // 20 open files: a quarter (5) of the tables are opened first.
    let mut limited = opts(&mem);
    limited.max_open_files = 20;
    let (_db, some) = readers_memory(limited);
    assert!(some > 0 && some < all, "{some} of {all}");
}
