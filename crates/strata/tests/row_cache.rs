//! `Options::row_cache` (RocksDB's `row_cache`): gets answered from cached
//! rows read no table, and every answer equals the one a database without
//! a row cache gives, through merges, deletions of every kind, range
//! deletions (which RocksDB refuses with a row cache), snapshots,
//! flushes and compactions.

use std::sync::Arc;

use strata::BlockCache;
use strata::DB;
use strata::fs::FileSystemRef;
use strata::fs::mem::MemFileSystem;
use strata::merge_operator::StringAppendOperator;
use strata::options::{Options, ReadOptions, WriteOptions};
use strata::tools::util::rng::Rng;
use strata::{Statistics, Ticker};

fn opts(fs: &FileSystemRef, row_cache: Option<Arc<BlockCache>>) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::clone(fs)),
        row_cache,
        statistics: Some(Arc::new(Statistics::new())),
        ..Options::default()
    };
    o.cf.merge_operator = Some(Arc::new(StringAppendOperator::default()));
    o.cf.compression = strata::CompressionType::None;
    o.cf.disable_auto_compactions = true;
    o
}

/// A database and its statistics.
fn open(
    fs: &FileSystemRef,
    name: &str,
    row_cache: Option<Arc<BlockCache>>,
) -> (DB, Arc<Statistics>) {
    let o = opts(fs, row_cache);
    let stats = Arc::clone(o.statistics.as_ref().unwrap());
    (DB::open(o, name).unwrap(), stats)
}

fn ticker(stats: &Statistics, t: Ticker) -> u64 {
    stats.ticker(t)
}

/// Block-cache and filter work done by table lookups so far.
fn table_work(db: &Statistics) -> u64 {
    [
        Ticker::BlockCacheHit,
        Ticker::BlockCacheMiss,
        Ticker::BloomFilterUseful,
        Ticker::BloomFilterFullPositive,
    ]
    .iter()
    .map(|&t| ticker(db, t))
    .sum()
}

#[test]
fn a_cached_row_answers_without_the_table() {
    let fs: FileSystemRef = Arc::new(MemFileSystem::new());
    let cache = BlockCache::new(1 << 20);
    let (db, st) = open(&fs, "/db", Some(Arc::clone(&cache)));
    let wo = WriteOptions::default();
    let ro = ReadOptions::default();
    for i in 0..500u32 {
        db.put(
            &wo,
            format!("key{i:04}").as_bytes(),
            format!("v{i}").as_bytes(),
        )
        .unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.get(&ro, b"key0042").unwrap(), Some(b"v42".to_vec()));
    assert_eq!(ticker(&st, Ticker::RowCacheMiss), 1);
    assert_eq!(ticker(&st, Ticker::RowCacheHit), 0);
    let work = table_work(&st);
    assert!(work > 0);
    // The same key again: from the row, with no block or filter probed.
    assert_eq!(db.get(&ro, b"key0042").unwrap(), Some(b"v42".to_vec()));
    assert_eq!(db.get_with(&ro, b"key0042", |v| v.len()).unwrap(), Some(3));
    assert_eq!(
        db.multi_get(&ro, &[b"key0042".as_slice()])[0]
            .as_ref()
            .unwrap(),
        &Some(b"v42".to_vec())
    );
    assert_eq!(ticker(&st, Ticker::RowCacheHit), 3);
    assert_eq!(table_work(&st), work);
    // A key the table lacks is not cached (RocksDB caches found rows only).
    assert_eq!(db.get(&ro, b"key0042x").unwrap(), None);
    assert_eq!(db.get(&ro, b"key0042x").unwrap(), None);
    assert_eq!(ticker(&st, Ticker::RowCacheMiss), 3);
    // A newer write in the memtable wins over the cached row.
    db.put(&wo, b"key0042", b"new").unwrap();
    assert_eq!(db.get(&ro, b"key0042").unwrap(), Some(b"new".to_vec()));
    // The rows live in the cache it was given, charged there.
    assert!(cache.usage() > 0);
    db.close().unwrap();
}

#[test]
fn rows_stay_exact_under_range_deletions_and_snapshots() {
    let fs: FileSystemRef = Arc::new(MemFileSystem::new());
    let (db, st) = open(&fs, "/db", Some(BlockCache::new(1 << 20)));
    let wo = WriteOptions::default();
    let ro = ReadOptions::default();
    // One table holding a merge over a value for "k".
    db.put(&wo, b"k", b"base").unwrap();
    db.merge(&wo, b"k", b"m1").unwrap();
    db.flush().unwrap();
    let before = db.snapshot();
    let at_before = ReadOptions {
        snapshot: Some(before.sequence()),
        ..ReadOptions::default()
    };
    assert_eq!(db.get(&ro, b"k").unwrap(), Some(b"base,m1".to_vec()));
    // A range deletion newer than the table: the merge operand alone
    // settles the read as deleted, and the row the read caches must still
    // hold the base value beneath it for the snapshot taken before the
    // deletion (which shares the row: it sees the whole table).
    db.delete_range(&wo, b"a", b"z").unwrap();
    db.flush().unwrap();
    let hits = ticker(&st, Ticker::RowCacheHit);
    assert_eq!(db.get(&ro, b"k").unwrap(), None);
    assert_eq!(db.get(&at_before, b"k").unwrap(), Some(b"base,m1".to_vec()));
    assert_eq!(db.get(&ro, b"k").unwrap(), None);
    assert!(ticker(&st, Ticker::RowCacheHit) > hits);
    drop(before);
    db.close().unwrap();
}

#[test]
fn old_snapshots_get_rows_of_their_own() {
    let fs: FileSystemRef = Arc::new(MemFileSystem::new());
    let (db, st) = open(&fs, "/db", Some(BlockCache::new(1 << 20)));
    let wo = WriteOptions::default();
    db.put(&wo, b"k", b"one").unwrap();
    let s1 = db.snapshot();
    db.put(&wo, b"k", b"two").unwrap();
    db.flush().unwrap();
    let at = |s: &strata::Snapshot| ReadOptions {
        snapshot: Some(s.sequence()),
        ..ReadOptions::default()
    };
    let latest = ReadOptions::default();
    for _ in 0..2 {
        assert_eq!(db.get(&latest, b"k").unwrap(), Some(b"two".to_vec()));
        assert_eq!(db.get(&at(&s1), b"k").unwrap(), Some(b"one".to_vec()));
    }
    assert_eq!(ticker(&st, Ticker::RowCacheHit), 2);
    drop(s1);
    db.close().unwrap();
}

/// The same random history applied to a database with a small row cache
/// and to one without: every get, at the latest state and at snapshots,
/// gives the same answer.
#[test]
fn gets_match_a_database_without_a_row_cache() {
    for seed in 0..24u64 {
        let fs: FileSystemRef = Arc::new(MemFileSystem::new());
        // Small enough that rows are evicted along the way.
        let (cached, st) = open(&fs, "/cached", Some(BlockCache::new(16 << 10)));
        let (plain, _) = open(&fs, "/plain", None);
        let dbs = [&cached, &plain];
        let wo = WriteOptions::default();
        let mut rng = Rng::seeded(seed);
        let mut snapshots: Vec<(strata::Snapshot, strata::Snapshot)> = Vec::new();
        let key = |i: u64| format!("k{i:03}").into_bytes();
        for step in 0..600 {
            let k = key(rng.below(40));
            match rng.below(20) {
                0..=4 => {
                    let v = format!("v{step}");
                    dbs.iter()
                        .for_each(|d| d.put(&wo, &k, v.as_bytes()).unwrap());
                }
                5..=7 => {
                    let v = format!("m{step}");
                    dbs.iter()
                        .for_each(|d| d.merge(&wo, &k, v.as_bytes()).unwrap());
                }
                8 => dbs.iter().for_each(|d| d.delete(&wo, &k).unwrap()),
                9 => {
                    let end = key(rng.below(40)).max(k.clone());
                    dbs.iter()
                        .for_each(|d| d.delete_range(&wo, &k, &end).unwrap());
                }
                10 => dbs.iter().for_each(|d| d.flush().unwrap()),
                11 if rng.below(4) == 0 => dbs
                    .iter()
                    .for_each(|d| d.compact_range(None, None).unwrap()),
                12 => snapshots.push((cached.snapshot(), plain.snapshot())),
                13 if !snapshots.is_empty() => {
                    let i = rng.below(snapshots.len() as u64) as usize;
                    snapshots.swap_remove(i);
                }
                _ => {
                    // Reads: latest, and at a snapshot.
                    let ro = ReadOptions::default();
                    assert_eq!(
                        cached.get(&ro, &k).unwrap(),
                        plain.get(&ro, &k).unwrap(),
                        "seed {seed} step {step} key {k:?}"
                    );
                    if let Some((a, b)) = snapshots.last() {
                        let ra = ReadOptions {
                            snapshot: Some(a.sequence()),
                            ..ReadOptions::default()
                        };
                        let rb = ReadOptions {
                            snapshot: Some(b.sequence()),
                            ..ReadOptions::default()
                        };
                        assert_eq!(
                            cached.get(&ra, &k).unwrap(),
                            plain.get(&rb, &k).unwrap(),
                            "seed {seed} step {step} key {k:?} at a snapshot"
                        );
                    }
                }
            }
        }
        // Everything, once more, twice (the second pass from rows).
        for _ in 0..2 {
            for i in 0..40 {
                let ro = ReadOptions::default();
                assert_eq!(
                    cached.get(&ro, &key(i)).unwrap(),
                    plain.get(&ro, &key(i)).unwrap()
                );
            }
        }
        assert!(ticker(&st, Ticker::RowCacheHit) > 0, "seed {seed}");
        drop(snapshots);
        cached.close().unwrap();
        plain.close().unwrap();
    }
}

/// A non-blocking get that a range tombstone settles at a merge operand
/// answers as it would without a row cache, even though recording the
/// row would read a block that is not in memory: the row is left out.
#[test]
fn a_row_that_cannot_be_read_whole_is_not_cached_and_the_get_still_answers() {
    let fs: FileSystemRef = Arc::new(MemFileSystem::new());
    let answers: Vec<_> = [Some(BlockCache::new(1 << 20)), None]
        .into_iter()
        .enumerate()
        .map(|(i, rows)| {
            let name = format!("/db{i}");
            let mut o = opts(&fs, rows);
            // Blocks of about two entries, so "k"'s entries span several.
            o.cf.block_size = 256;
            let db = DB::open(o.clone(), &name).unwrap();
            let wo = WriteOptions::default();
            db.put(&wo, b"j", b"first").unwrap();
            db.put(&wo, b"k", &[b'b'; 100]).unwrap();
            for n in 0..10u8 {
                db.merge(&wo, b"k", &[b'0' + n; 100]).unwrap();
            }
            db.flush().unwrap();
            db.close().unwrap();
            let db = DB::open(o, &name).unwrap();
            // Opens the table and caches the block holding "j" (and the
            // newest of "k"'s operands), nothing else.
            assert_eq!(
                db.get(&ReadOptions::default(), b"j").unwrap(),
                Some(b"first".to_vec())
            );
            db.delete_range(&wo, b"a", b"z").unwrap();
            let no_io = ReadOptions {
                read_tier: strata::options::ReadTier::BlockCache,
                ..ReadOptions::default()
            };
            let answer = db.get(&no_io, b"k").map_err(|e| e.to_string());
            db.close().unwrap();
            answer
        })
        .collect();
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[1], Ok(None));
}
