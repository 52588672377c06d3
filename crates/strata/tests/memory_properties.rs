//! Memory properties with RocksDB's names: the block cache's capacity and
//! usage, and what open table readers keep outside it
//! (`rocksdb.estimate-table-readers-mem`), which a partitioned index and
//! filter keep small.

use std::sync::Arc;

use strata::BlockCache;
use strata::DB;
use strata::IndexType;
use strata::fs::mem::MemFileSystem;
use strata::options::{Options, ReadOptions, WriteOptions};

fn prop(db: &DB, name: &str) -> u64 {
    db.property(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("property {name} missing"))
}

/// Writes 20,000 keys, flushes, reads a few, and returns the readers'
/// memory estimate.
fn readers_mem(partitioned: bool) -> (u64, u64) {
    let fs = MemFileSystem::new();
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs)),
        ..Options::default()
    };
    o.cf.block_cache = Some(BlockCache::new(1 << 20));
    o.cf.bloom_bits_per_key = Some(10.0);
    if partitioned {
        o.cf.index_type = IndexType::TwoLevelIndexSearch;
        o.cf.partition_filters = true;
        o.cf.metadata_block_size = 1024;
    }
    let db = DB::open(o, "/db").unwrap();
    assert_eq!(prop(&db, "rocksdb.block-cache-capacity"), 1 << 20);
    let wo = WriteOptions::default();
    for i in 0..20_000u32 {
        db.put(&wo, format!("key{i:08}").as_bytes(), &[b'v'; 64])
            .unwrap();
    }
    db.flush().unwrap();
    let ro = ReadOptions::default();
    for i in (0..20_000u32).step_by(4001) {
        assert!(
            db.get(&ro, format!("key{i:08}").as_bytes())
                .unwrap()
                .is_some()
        );
    }
    assert!(prop(&db, "rocksdb.block-cache-usage") > 0);
    (
        prop(&db, "rocksdb.estimate-table-readers-mem"),
        prop(&db, "rocksdb.block-cache-usage"),
    )
}

#[test]
fn table_readers_memory_and_block_cache_usage() {
    let (flat, _) = readers_mem(false);
    let (partitioned, cache) = readers_mem(true);
    // The flat table keeps its whole index and filter (about 25 KB for
    // 20,000 keys); the partitioned one its top levels and the few
    // partitions five reads touched (index partitions go to the cache).
    assert!(flat > 20_000, "{flat}");
    assert!(
        partitioned * 4 < flat,
        "partitioned {partitioned} vs flat {flat}"
    );
    assert!(cache > 0);
}
