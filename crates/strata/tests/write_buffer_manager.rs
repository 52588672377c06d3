//! One memtable budget across column families and databases (RocksDB's
//! `db_write_buffer_size` and `WriteBufferManager`): the budget makes
//! flushes happen that the column families' own `write_buffer_size` would
//! not, the accounting matches the memtables' sizes and returns to zero,
//! and with `allow_stall` writers wait (never fail) so memtable memory
//! stays near the budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use strata::DB;
use strata::WriteBufferManager;
use strata::fs::mem::MemFileSystem;
use strata::options::{Options, ReadOptions, WriteOptions};

fn options(fs: &MemFileSystem) -> Options {
    let mut o = Options {
        create_if_missing: true,
        create_missing_column_families: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    // Alone, these memtables would never fill in these tests.
    o.cf.write_buffer_size = 64 << 20;
    o.cf.max_write_buffer_number = 4;
    o
}

/// Waits (up to 5 s) until `wbm` has nothing charged: a closed database's
/// last references may be released by its background threads.
fn wait_until_released(wbm: &WriteBufferManager) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while wbm.memory_usage() != 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Writes `key000000`..`key019999` (50-byte values) and flushes them.
fn fill_keys_and_flush(db: &DB) {
    let wo = WriteOptions::default();
    for i in 0..20_000u32 {
        db.put(&wo, format!("key{i:06}").as_bytes(), &[b'v'; 50])
            .unwrap();
    }
    db.flush().unwrap();
}

fn sst_count(db: &DB) -> usize {
    db.live_files_metadata().len()
}

/// Every column family's memtables, as `rocksdb.size-all-mem-tables`
/// reports them.
fn mem_bytes(db: &DB) -> usize {
    db.column_families()
        .iter()
        .filter_map(|n| db.cf_handle(n))
        .filter_map(|h| db.property_cf(&h, "rocksdb.size-all-mem-tables"))
        .filter_map(|v| v.parse::<usize>().ok())
        .sum()
}

#[test]
fn db_write_buffer_size_flushes_the_oldest_memtable_across_column_families() {
    let fs = MemFileSystem::new();
    let mut o = options(&fs);
    o.db_write_buffer_size = 512 << 10;
    let cfs = ["default", "a", "b"]
        .iter()
        .map(|n| strata::db::ColumnFamilyDescriptor::new(*n, o.cf.clone()))
        .collect();
    let db = DB::open_cf(o, "/db", cfs).unwrap();
    let wbm = db.write_buffer_manager().expect("a budget of its own");
    assert_eq!(wbm.buffer_size(), 512 << 10);
    let (a, b) = (db.cf_handle("a").unwrap(), db.cf_handle("b").unwrap());
    let wo = WriteOptions::default();
    let value = vec![b'v'; 200];
    for i in 0..20_000u32 {
        let k = format!("key{i:08}");
        let cf = if i % 2 == 0 { &a } else { &b };
        db.put_cf(&wo, cf, k.as_bytes(), &value).unwrap();
    }
    db.wait_for_compactions().unwrap();
    // About 4.4 MB written against a 512 KiB budget: several flushes of
    // both column families, where 64 MiB buffers alone would flush none.
    assert!(sst_count(&db) >= 4, "{} tables", sst_count(&db));
    for cf in [&a, &b] {
        assert!(
            db.live_files_metadata()
                .iter()
                .any(|f| f.column_family_name == cf.name)
        );
    }
    assert!(wbm.memory_usage() <= 512 << 10, "{}", wbm.memory_usage());
    assert!(wbm.memory_usage() >= mem_bytes(&db));
    let ro = ReadOptions::default();
    for i in (0..20_000u32).step_by(997) {
        let cf = if i % 2 == 0 { &a } else { &b };
        let got = db.get_cf(&ro, cf, format!("key{i:08}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(&value[..]));
    }
    drop(db);
    wait_until_released(&wbm);
    assert_eq!(wbm.memory_usage(), 0, "every memtable returned its bytes");
    assert_eq!(wbm.mutable_memory_usage(), 0);
}

#[test]
fn one_budget_shared_by_two_databases() {
    let fs = MemFileSystem::new();
    let wbm = WriteBufferManager::new(1 << 20, false);
    let mut o = options(&fs);
    o.write_buffer_manager = Some(Arc::clone(&wbm));
    let d1 = DB::open(o.clone(), "/d1").unwrap();
    let d2 = DB::open(o, "/d2").unwrap();
    let wo = WriteOptions::default();
    for i in 0..2_000u32 {
        d1.put(&wo, format!("k{i}").as_bytes(), &[1u8; 100])
            .unwrap();
    }
    assert_eq!(wbm.memory_usage(), mem_bytes(&d1) + mem_bytes(&d2));
    assert_eq!(sst_count(&d2), 0);
    // d2 alone writes past the shared budget d1 already half fills: d2
    // flushes its own memtable (a database flushes only its own).
    for i in 0..20_000u32 {
        d2.put(&wo, format!("k{i}").as_bytes(), &[2u8; 100])
            .unwrap();
    }
    d2.wait_for_compactions().unwrap();
    assert!(sst_count(&d2) >= 1);
    assert!(wbm.memory_usage() <= 1 << 20, "{}", wbm.memory_usage());
    // Flushed memtables a reader or the flush job still holds stay charged
    // until released (RocksDB's "pinned" memtables).
    assert!(wbm.memory_usage() >= mem_bytes(&d1) + mem_bytes(&d2));
    drop(d1);
    drop(d2);
    wait_until_released(&wbm);
    assert_eq!(wbm.memory_usage(), 0);
}

#[test]
fn a_stalling_budget_bounds_memtable_memory_and_writes_never_fail() {
    let fs = MemFileSystem::new();
    let budget = 256 << 10;
    let wbm = WriteBufferManager::new(budget, true);
    let mut o = options(&fs);
    o.write_buffer_manager = Some(Arc::clone(&wbm));
    let db = Arc::new(DB::open(o, "/db").unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (wbm, done, peak) = (Arc::clone(&wbm), Arc::clone(&done), Arc::clone(&peak));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(wbm.memory_usage(), Ordering::Relaxed);
                std::thread::yield_now();
            }
        })
    };
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let wo = WriteOptions::default();
                for i in 0..5_000u32 {
                    db.put(&wo, format!("t{t}-{i:06}").as_bytes(), &[t as u8; 200])
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    db.wait_for_compactions().unwrap();
    // 4 MB written through a 256 KiB budget. Memory may pass the budget by
    // what is in flight when it is reached (a memtable's last arena block
    // and the writes already admitted); the bound states that slack.
    let peak = peak.load(Ordering::Relaxed);
    assert!(
        peak <= budget * 2,
        "peak {peak} against a budget of {budget}"
    );
    let ro = ReadOptions::default();
    for t in 0..4u8 {
        let got = db.get(&ro, format!("t{t}-004999").as_bytes()).unwrap();
        assert_eq!(got, Some(vec![t; 200]));
    }
}

/// Groups of concurrent writers must not keep their memtables alive once
/// done (a group and its followers once referenced each other, so every
/// group with followers, its batches and the memtable it wrote were never
/// freed). A tracking-only manager (budget 0) sees every byte: after a
/// flush, only the live memtables remain charged.
#[test]
fn concurrent_write_groups_release_their_memtables() {
    let fs = MemFileSystem::new();
    let wbm = WriteBufferManager::new(0, false);
    let mut o = options(&fs);
    o.cf.write_buffer_size = 64 << 10;
    o.write_buffer_manager = Some(Arc::clone(&wbm));
    let db = Arc::new(DB::open(o, "/db").unwrap());
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let wo = WriteOptions::default();
                for i in 0..3_000u32 {
                    db.put(&wo, format!("t{t}-{i:06}").as_bytes(), &[7u8; 100])
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert!(sst_count(&db) >= 1);
    assert_eq!(
        wbm.memory_usage(),
        mem_bytes(&db),
        "flushed memtables still charged: something keeps them alive"
    );
}

/// Memtables charged to a block cache (RocksDB's `WriteBufferManager(size,
/// cache)`): the cache's usage includes them, in 256 KiB units, blocks
/// give way to them, and the charge goes when the memtables do.
#[test]
fn memtables_charged_to_a_block_cache_take_its_room() {
    let fs = MemFileSystem::new();
    let cache = strata::BlockCache::with_options(8 << 20, 0, true);
    let wbm = WriteBufferManager::with_cache(
        4 << 20,
        Arc::clone(&cache) as Arc<dyn strata::MemoryCharger>,
        false,
    );
    let mut o = options(&fs);
    o.write_buffer_manager = Some(Arc::clone(&wbm));
    o.cf.block_cache = Some(Arc::clone(&cache) as Arc<dyn strata::BlockCacheApi>);
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    for i in 0..5000u32 {
        db.put(&wo, format!("key{i:06}").as_bytes(), &[b'v'; 200])
            .unwrap();
    }
    let charged = wbm.charged_to_cache();
    assert!(charged >= wbm.memory_usage() && charged > 0, "{charged}");
    assert_eq!(charged % (256 << 10), 0);
    assert!(cache.usage() >= charged as u64);
    assert!(cache.pinned_usage() >= charged as u64);
    // Reads fill the rest of the cache, never past it (strict).
    db.flush().unwrap();
    for i in 0..5000u32 {
        db.get(&ReadOptions::default(), format!("key{i:06}").as_bytes())
            .unwrap()
            .unwrap();
    }
    assert!(cache.usage() <= cache.capacity(), "{:?}", cache);
    drop(db);
    wait_until_released(&wbm);
    assert_eq!(wbm.charged_to_cache(), 0);
}

/// `Options::memory_budget`: one cache holds blocks, the memtables'
/// charge and the open table readers' charge; writes far past the budget
/// never fail (they wait for flushes), and everything reads back.
#[test]
fn memory_budget_holds_blocks_memtables_and_table_readers() {
    let fs = MemFileSystem::new();
    let budget = 4u64 << 20;
    let mut o = options(&fs);
    o.memory_budget = Some(budget);
    o.cf.bloom_bits_per_key = Some(10.0);
    let db = DB::open(o, "/db").unwrap();
    let prop = |name: &str| -> u64 { db.property(name).unwrap().parse().unwrap() };
    assert_eq!(prop("rocksdb.block-cache-capacity"), budget);
    let wo = WriteOptions::default();
    let (mut peak, mut peak_mem) = (0, 0);
    // About 30 MiB of data through a 4 MiB budget (1 MiB of memtables,
    // where the column family's own write_buffer_size is 64 MiB).
    for i in 0..120_000u32 {
        let k = format!("key{:08}", (i as u64 * 7919) % 120_000);
        db.put(&wo, k.as_bytes(), &[b'x'; 240]).unwrap();
        if i % 2000 == 0 {
            peak = peak.max(prop("rocksdb.block-cache-usage"));
            peak_mem = peak_mem.max(prop("rocksdb.cur-size-all-mem-tables"));
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert!(
        peak_mem <= budget / 4 + budget / 8,
        "memtables held {peak_mem} bytes"
    );
    // Reads through a pinning iterator and point lookups.
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 1000 {
        n += 1;
        it.next();
    }
    assert!(prop("rocksdb.block-cache-pinned-usage") > 0);
    for i in (0..120_000u64).step_by(97) {
        let k = format!("key{i:08}");
        assert_eq!(
            db.get(&ReadOptions::default(), k.as_bytes()).unwrap(),
            Some(vec![b'x'; 240]),
            "{k}"
        );
        peak = peak.max(prop("rocksdb.block-cache-usage"));
    }
    drop(it);
    // The table readers' indexes and filters are in the cache's usage.
    let readers = prop("rocksdb.estimate-table-readers-mem");
    assert!(readers > 0);
    assert!(prop("rocksdb.block-cache-pinned-usage") >= readers);
    assert!(
        peak <= budget,
        "peak usage {peak} of a {budget}-byte budget"
    );
    assert!(peak > budget / 2, "the budget was used: {peak}");
}

/// `cache_index_and_filter_blocks` (RocksDB's): index and filter blocks
/// are block-cache entries, not held by the readers, and are read again
/// after eviction; `pin_l0_filter_and_index_blocks_in_cache` makes level-0
/// readers hold theirs. Counted through the file system: gets of absent
/// keys, which the filter answers, read no file when the readers hold
/// their filters or the cache keeps them, and read one (the filter) per
/// get when the cache keeps nothing.
#[test]
fn cache_index_and_filter_blocks_are_cache_entries() {
    use strata::fs::fault::FaultInjectionFileSystem;
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Mode {
        Held,
        Cached,
        CachedPinnedL0,
        CachedTinyCache,
    }
    let mut held_readers = 0;
    for mode in [
        Mode::Held,
        Mode::Cached,
        Mode::CachedPinnedL0,
        Mode::CachedTinyCache,
    ] {
        let mem = MemFileSystem::new();
        let fs = Arc::new(FaultInjectionFileSystem::new(Arc::new(mem.clone())));
        let capacity = if mode == Mode::CachedTinyCache {
            1
        } else {
            64 << 20
        };
        // The tiny cache is strict: it keeps nothing.
        let cache = strata::BlockCache::with_options(capacity, 0, mode == Mode::CachedTinyCache);
        let mut o = options(&mem);
        o.fs = Some(fs.clone());
        o.cf.block_cache = Some(Arc::clone(&cache) as Arc<dyn strata::BlockCacheApi>);
        o.cf.bloom_bits_per_key = Some(10.0);
        o.cf.cache_index_and_filter_blocks = mode != Mode::Held;
        o.cf.pin_l0_filter_and_index_blocks_in_cache = mode == Mode::CachedPinnedL0;
        o.cf.write_buffer_size = 256 << 10;
        // Every table stays in level 0.
        o.cf.disable_auto_compactions = true;
        let db = DB::open(o, "/db").unwrap();
        fill_keys_and_flush(&db);
        let tables = sst_count(&db) as u64;
        assert!(tables > 2, "{tables} tables");
        let ro = ReadOptions::default();
        // Absent keys inside every table's key range: each get asks each
        // table's filter. The first round opens the tables.
        let absent = |i: u32| format!("key{:06}+", i * 199 % 20_000);
        for i in 0..100u32 {
            assert_eq!(db.get(&ro, absent(i).as_bytes()).unwrap(), None);
        }
        let ops = fs.op_count();
        for i in 0..100u32 {
            assert_eq!(db.get(&ro, absent(i).as_bytes()).unwrap(), None);
        }
        let reads = fs.op_count() - ops;
        // Present keys read correctly whatever the cache keeps.
        for i in (0..20_000u32).step_by(397) {
            assert_eq!(
                db.get(&ro, format!("key{i:06}").as_bytes()).unwrap(),
                Some(vec![b'v'; 50]),
                "{mode:?}"
            );
        }
        let mut it = db.iter(&ro).unwrap();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        it.status().unwrap();
        assert_eq!(n, 20_000, "{mode:?}");
        drop(it);
        let readers: u64 = db
            .property("rocksdb.estimate-table-readers-mem")
            .unwrap()
            .parse()
            .unwrap();
        match mode {
            Mode::Held => {
                assert_eq!(reads, 0, "held filters answer without I/O");
                assert!(readers > 20_000, "{readers}");
                held_readers = readers;
            }
            Mode::Cached => {
                assert_eq!(reads, 0, "cached filters answer without I/O");
                assert!(readers < held_readers / 10, "{readers} vs {held_readers}");
                assert!(
                    cache.usage() >= held_readers,
                    "the cache holds the indexes and filters: {} < {held_readers}",
                    cache.usage()
                );
            }
            Mode::CachedPinnedL0 => {
                assert_eq!(reads, 0);
                // (Flushes may cut tables a few keys apart in each run.)
                assert!(
                    readers > held_readers * 9 / 10,
                    "level-0 readers hold theirs: {readers} vs {held_readers}"
                );
            }
            Mode::CachedTinyCache => {
                // Each get asks the one table whose range holds the key.
                assert!(
                    reads >= 100,
                    "each get reads its table's filter again: {reads} reads"
                );
                assert!(readers < held_readers / 10, "{readers} vs {held_readers}");
            }
        }
    }
}

/// Partitioned indexes and filters with `cache_index_and_filter_blocks`:
/// partitions are cache entries; `pin_top_level_index_and_filter` (the
/// default) keeps the top levels in the readers, and without it they are
/// cache entries too. Reads stay correct with a cache that keeps nothing.
#[test]
fn partitioned_top_levels_are_pinned_or_cached() {
    let mut sizes = Vec::new();
    for (cached, pin_top, capacity) in [
        (false, true, 64u64 << 20),
        (true, true, 64 << 20),
        (true, false, 64 << 20),
        (true, false, 1),
    ] {
        let mem = MemFileSystem::new();
        let cache = strata::BlockCache::with_options(capacity, 0, capacity == 1);
        let mut o = options(&mem);
        o.cf.block_cache = Some(Arc::clone(&cache) as Arc<dyn strata::BlockCacheApi>);
        o.cf.bloom_bits_per_key = Some(10.0);
        o.cf.index_type = strata::IndexType::TwoLevelIndexSearch;
        o.cf.partition_filters = true;
        o.cf.metadata_block_size = 512;
        o.cf.cache_index_and_filter_blocks = cached;
        o.cf.pin_top_level_index_and_filter = pin_top;
        o.cf.write_buffer_size = 256 << 10;
        o.cf.disable_auto_compactions = true;
        let db = DB::open(o, "/db").unwrap();
        fill_keys_and_flush(&db);
        let ro = ReadOptions::default();
        for i in (0..20_000u32).step_by(97) {
            assert_eq!(
                db.get(&ro, format!("key{i:06}").as_bytes()).unwrap(),
                Some(vec![b'v'; 50])
            );
            assert_eq!(db.get(&ro, format!("key{i:06}+").as_bytes()).unwrap(), None);
        }
        let readers: u64 = db
            .property("rocksdb.estimate-table-readers-mem")
            .unwrap()
            .parse()
            .unwrap();
        sizes.push(readers);
    }
    let [held, pinned_top, none, none_tiny] = sizes[..] else {
        unreachable!()
    };
    assert!(held > pinned_top, "{sizes:?}");
    assert!(pinned_top > none, "{sizes:?}");
    assert_eq!(none, none_tiny, "{sizes:?}");
}
