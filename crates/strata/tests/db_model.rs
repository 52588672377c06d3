//! Model test: random operation sequences against a `BTreeMap`, on the
//! crashable in-memory file system, under several option sets. Every seed
//! is printed on failure and replays with `STRATA_SEED=<seed>`; the seed
//! count is `STRATA_MODEL_SEEDS` (default 200 per option set), and
//! `STRATA_OPTION_SET=<name>` runs one option set only.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use strata::CompressionType;
use strata::WriteBatch;
use strata::db::DB;
use strata::db::{BottommostLevelCompaction, CompactRangeOptions};
use strata::fs::FileSystem;
use strata::fs::mem::MemFileSystem;
use strata::merge_operator::StringAppendOperator;
use strata::options::{CompactionStyle, Options, ReadOptions, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

use strata::tools::util::rng::Rng;

/// The model test's key and value draws.
trait ModelDraws {
    fn key(&mut self) -> Vec<u8>;
    fn value(&mut self) -> Vec<u8>;
}

impl ModelDraws for Rng {
    fn key(&mut self) -> Vec<u8> {
        format!("k{:03}", self.below(120)).into_bytes()
    }
    fn value(&mut self) -> Vec<u8> {
        let n = self.below(40) as usize;
        let c = b'a' + self.below(26) as u8;
        let mut v = vec![c; n];
        v.extend_from_slice(format!("#{}", self.below(1000)).as_bytes());
        v
    }
}

#[derive(Clone, Copy, Debug)]
struct OptionSet {
    name: &'static str,
    write_buffer_size: usize,
    block_size: usize,
    compression: CompressionType,
    disable_wal: bool,
    /// Compaction shape: style, L0 trigger, target file size and level
    /// base (tiny, so that many compactions happen).
    style: CompactionStyle,
    l0_trigger: usize,
    target_file_size: u64,
    level_base: u64,
    dynamic_levels: bool,
    subcompactions: usize,
    /// Write path mode: 0 ordered, 1 ordered with the leader inserting
    /// for its group, 2 pipelined, 3 unordered, 4 ordered with
    /// `manual_wal_flush` (and `flush_wal` before each reopen).
    write_mode: u8,
    /// Operations per seed.
    steps: usize,
    /// Table layout: 0 RocksDB 7.8.3's default (format_version 5, one
    /// index block, full filter); 1 partitioned index and filters in
    /// 128-byte partitions; 2 format_version 6 with a partitioned index;
    /// 3 PlainTable (fixed 4-byte keys, 3-byte prefixes, kPrefix
    /// encoding, index and bloom in the file; range deletions are then
    /// refused with NotSupported, as in RocksDB); 4 the default tables
    /// with 3-byte prefixes and (with write_mode 1) the prefix-hash
    /// memtable; 5 the same with the hash-linked-list memtable.
    table_layout: u8,
}

const LEVELED: OptionSet = OptionSet {
    name: "",
    write_buffer_size: 1 << 20,
    block_size: 4096,
    compression: CompressionType::Snappy,
    disable_wal: false,
    style: CompactionStyle::Level,
    l0_trigger: 4,
    target_file_size: 64 << 20,
    level_base: 256 << 20,
    dynamic_levels: true,
    subcompactions: 1,
    write_mode: 0,
    steps: 300,
    table_layout: 0,
};

const OPTION_SETS: [OptionSet; 11] = [
    OptionSet {
        name: "default",
        write_buffer_size: 1 << 20,
        block_size: 4096,
        compression: CompressionType::Snappy,
        disable_wal: false,
        ..LEVELED
    },
    OptionSet {
        name: "tiny-memtable-pipelined",
        write_buffer_size: 2048,
        block_size: 256,
        compression: CompressionType::None,
        disable_wal: false,
        write_mode: 2,
        ..LEVELED
    },
    OptionSet {
        name: "tiny-blocks-zstd-manual-wal-flush",
        write_buffer_size: 8192,
        block_size: 64,
        compression: CompressionType::Zstd,
        disable_wal: false,
        write_mode: 4,
        table_layout: 1,
        ..LEVELED
    },
    OptionSet {
        name: "wal-off",
        write_buffer_size: 4096,
        block_size: 512,
        compression: CompressionType::Lz4,
        disable_wal: true,
        table_layout: 2,
        ..LEVELED
    },
    OptionSet {
        name: "leveled-tiny-files-serial-inserts",
        write_mode: 1,
        block_size: 256,
        compression: CompressionType::None,
        write_buffer_size: 1024,
        l0_trigger: 2,
        target_file_size: 1024,
        level_base: 4096,
        steps: 800,
        ..LEVELED
    },
    OptionSet {
        name: "leveled-static-subcompactions",
        write_buffer_size: 4096,
        block_size: 128,
        compression: CompressionType::Snappy,
        l0_trigger: 2,
        target_file_size: 512,
        level_base: 2048,
        dynamic_levels: false,
        subcompactions: 3,
        steps: 800,
        ..LEVELED
    },
    OptionSet {
        name: "universal-unordered",
        write_mode: 3,
        write_buffer_size: 2048,
        block_size: 256,
        style: CompactionStyle::Universal,
        l0_trigger: 3,
        target_file_size: 1024,
        steps: 800,
        ..LEVELED
    },
    OptionSet {
        name: "plain-table-prefix",
        write_buffer_size: 2048,
        l0_trigger: 2,
        target_file_size: 2048,
        level_base: 8192,
        table_layout: 3,
        ..LEVELED
    },
    OptionSet {
        name: "prefix-hash-memtable",
        write_mode: 1,
        write_buffer_size: 4096,
        block_size: 512,
        l0_trigger: 2,
        table_layout: 4,
        ..LEVELED
    },
    OptionSet {
        name: "hash-linklist-memtable",
        write_mode: 1,
        write_buffer_size: 4096,
        block_size: 512,
        l0_trigger: 3,
        table_layout: 5,
        ..LEVELED
    },
    OptionSet {
        name: "universal-wal-off",
        write_buffer_size: 4096,
        block_size: 512,
        disable_wal: true,
        style: CompactionStyle::Universal,
        l0_trigger: 2,
        ..LEVELED
    },
];

fn options(fs: &MemFileSystem, set: &OptionSet) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    o.cf.write_buffer_size = set.write_buffer_size;
    o.cf.block_size = set.block_size;
    o.cf.compression = set.compression;
    o.cf.max_write_buffer_number = 3;
    o.cf.compaction_style = set.style;
    o.cf.level0_file_num_compaction_trigger = set.l0_trigger;
    o.cf.target_file_size_base = set.target_file_size;
    o.cf.max_bytes_for_level_base = set.level_base;
    o.cf.level_compaction_dynamic_level_bytes = set.dynamic_levels;
    o.max_subcompactions = set.subcompactions;
    o.cf.merge_operator = Some(Arc::new(StringAppendOperator::default()));
    o.allow_concurrent_memtable_write = set.write_mode != 1;
    // The leader inserts for its group: the vector and hash memtables can
    // serve (3-byte prefixes, 5 buckets: several prefixes share each).
    if set.write_mode == 1 {
        o.cf.memtable_factory = match set.table_layout {
            4 => {
                o.cf.prefix_extractor = Some(Arc::new(strata::FixedPrefix(3)));
                strata::MemTableFactory::PrefixHash { bucket_count: 5 }
            }
            // Buckets past 4 entries index the rest like skiplists.
            5 => {
                o.cf.prefix_extractor = Some(Arc::new(strata::FixedPrefix(3)));
                strata::MemTableFactory::HashLinkList {
                    bucket_count: 5,
                    threshold_use_skiplist: 4,
                }
            }
            _ => strata::MemTableFactory::Vector,
        };
    }
    o.enable_pipelined_write = set.write_mode == 2;
    o.unordered_write = set.write_mode == 3;
    o.manual_wal_flush = set.write_mode == 4;
    // Memtable blooms over whole keys (tiny memtables: small filters, many
    // false positives and true negatives both).
    o.cf.memtable_whole_key_filtering = set.write_mode == 2;
    if set.write_mode == 2 {
        o.cf.memtable_prefix_bloom_size_ratio = 0.05;
    }
    if set.table_layout == 3 {
        // Memtable blooms over the prefixes.
        o.cf.memtable_prefix_bloom_size_ratio = 0.1;
        o.cf.prefix_extractor = Some(Arc::new(strata::FixedPrefix(3)));
        o.cf.table_factory = strata::TableFactory::Plain(strata::PlainTableOptions {
            user_key_len: 4,
            encoding_type: strata::EncodingType::Prefix,
            index_sparseness: 4,
            store_index_in_file: true,
            ..Default::default()
        });
    } else if matches!(set.table_layout, 1 | 2) {
        o.cf.index_type = strata::IndexType::TwoLevelIndexSearch;
        o.cf.metadata_block_size = 128;
        o.cf.partition_filters = set.table_layout == 1;
        o.cf.format_version = if set.table_layout == 2 { 6 } else { 5 };
    }
    // Index and filter blocks as entries of a small block cache (evicted
    // and read again): partitioned with the top levels cached too (1),
    // with level-0 readers holding theirs (2), flat (4), and first-key
    // indexes (5).
    if matches!(set.table_layout, 1 | 2 | 4 | 5) {
        o.cf.bloom_bits_per_key = Some(10.0);
        o.cf.block_cache =
            Some(strata::BlockCache::new(16 << 10) as Arc<dyn strata::BlockCacheApi>);
        o.cf.cache_index_and_filter_blocks = true;
        o.cf.pin_top_level_index_and_filter = set.table_layout != 1;
        o.cf.pin_l0_filter_and_index_blocks_in_cache = set.table_layout == 2;
    }
    if set.table_layout == 5 {
        o.cf.index_type = strata::IndexType::BinarySearchWithFirstKey;
    }
    o
}

fn apply_merge(model: &mut Model, k: &[u8], v: &[u8]) {
    let new = match model.get(k) {
        Some(old) => {
            let mut x = old.clone();
            x.push(b',');
            x.extend_from_slice(v);
            x
        }
        None => v.to_vec(),
    };
    model.insert(k.to_vec(), new);
}

/// The LOG files' text (older ones hold only what was synced before a
/// crash).
fn info_logs(fs: &MemFileSystem) -> String {
    let dir = std::path::Path::new("/db");
    let mut names = fs.children(dir).unwrap_or_default();
    names.sort();
    let mut all = String::new();
    for n in names.iter().filter(|n| n.starts_with("LOG")) {
        let log = fs.read_file(&dir.join(n)).unwrap_or_default();
        all += &format!("==== {n}\n{}", String::from_utf8_lossy(&log));
    }
    all
}

fn scan(db: &DB, ro: &ReadOptions) -> Model {
    let mut it = db.iter(ro).unwrap();
    let mut out = Model::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}

fn scan_reverse(db: &DB, ro: &ReadOptions) -> Model {
    let mut it = db.iter(ro).unwrap();
    it.seek_to_last();
    let mut out = Model::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.prev();
    }
    it.status().unwrap();
    out
}

fn run_seed(seed: u64, set: &OptionSet) {
    let mut rng = Rng(seed);
    let fs = MemFileSystem::new();
    let path = "/db";
    let mut db = Some(DB::open(options(&fs, set), path).unwrap());
    let mut model = Model::new();
    // States after each acknowledged write since the last durable point.
    let mut history: Vec<Model> = vec![model.clone()];
    let mut snapshots: Vec<(strata::db::Snapshot, Model)> = Vec::new();
    let wo = |sync: bool| WriteOptions {
        sync: sync && !set.disable_wal,
        disable_wal: set.disable_wal,
        ..WriteOptions::default()
    };
    for step in 0..set.steps {
        let d = db.as_ref().unwrap();
        let op = rng.below(100);
        let ctx = format!("seed {seed} set {} step {step} op {op}", set.name);
        match op {
            0..=34 => {
                let (k, v) = (rng.key(), rng.value());
                let sync = rng.below(10) == 0;
                if let Err(e) = d.put(&wo(sync), &k, &v) {
                    // Usually a background error: the LOG says which.
                    panic!("{ctx}: put: {e}\n{}", info_logs(&fs));
                }
                model.insert(k, v);
                // A synced write is a durable point only through the WAL.
                if sync && !set.disable_wal {
                    history.clear();
                }
                history.push(model.clone());
            }
            35..=44 => {
                let k = rng.key();
                if rng.below(2) == 0 {
                    d.delete(&wo(false), &k).unwrap()
                } else {
                    d.single_delete(&wo(false), &k).unwrap()
                }
                model.remove(&k);
                history.push(model.clone());
            }
            45..=48 => {
                let (a, b) = (rng.key(), rng.key());
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                if set.table_layout == 3 {
                    let e = d.delete_range(&wo(false), &a, &b).unwrap_err();
                    assert!(matches!(e, strata::Error::NotSupported(_)), "{ctx}: {e}");
                    continue;
                }
                d.delete_range(&wo(false), &a, &b).unwrap();
                let doomed: Vec<_> = model
                    .range(a.clone()..b.clone())
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in doomed {
                    model.remove(&k);
                }
                history.push(model.clone());
            }
            49..=56 => {
                let (k, v) = (rng.key(), rng.value());
                d.merge(&wo(false), &k, &v).unwrap();
                apply_merge(&mut model, &k, &v);
                history.push(model.clone());
            }
            57..=62 => {
                let mut b = WriteBatch::new();
                for _ in 0..rng.below(6) + 1 {
                    let k = rng.key();
                    match rng.below(3) {
                        0 => {
                            let v = rng.value();
                            b.put(&k, &v);
                            model.insert(k, v);
                        }
                        1 => {
                            b.delete(&k);
                            model.remove(&k);
                        }
                        _ => {
                            let v = rng.value();
                            b.merge(&k, &v);
                            apply_merge(&mut model, &k, &v);
                        }
                    }
                }
                d.write(&wo(false), b).unwrap();
                history.push(model.clone());
            }
            63..=67 => {
                snapshots.push((d.snapshot(), model.clone()));
            }
            69 => {
                // An external file: puts, merges and deletes of distinct
                // keys, maybe a range deletion, at one sequence number
                // above (or, with nothing overlapping, below) every key.
                // Writes that skipped the WAL must be flushed first to
                // stay a prefix of what a crash keeps.
                if set.disable_wal {
                    d.flush().unwrap();
                }
                let mut keys: Vec<Vec<u8>> = (0..rng.below(4) + 1).map(|_| rng.key()).collect();
                keys.sort();
                keys.dedup();
                let path = std::path::PathBuf::from(format!("/ext/{step}.sst"));
                fs.create_dir_all(std::path::Path::new("/ext")).unwrap();
                let mut w =
                    strata::SstFileWriter::create_in(&fs, &path, strata::TableOptions::default())
                        .unwrap();
                let range = (rng.below(4) == 0 && set.table_layout != 3).then(|| {
                    let (a, b) = (rng.key(), rng.key());
                    if a <= b { (a, b) } else { (b, a) }
                });
                if let Some((a, b)) = &range {
                    w.delete_range(a, b).unwrap();
                    let doomed: Vec<_> = model
                        .range(a.clone()..b.clone())
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in doomed {
                        model.remove(&k);
                    }
                }
                for k in keys {
                    match rng.below(4) {
                        0 => {
                            w.delete(&k).unwrap();
                            model.remove(&k);
                        }
                        1 => {
                            let v = rng.value();
                            w.merge(&k, &v).unwrap();
                            apply_merge(&mut model, &k, &v);
                        }
                        _ => {
                            let v = rng.value();
                            w.put(&k, &v).unwrap();
                            model.insert(k, v);
                        }
                    }
                }
                w.finish().unwrap();
                let io = strata::options::IngestExternalFileOptions {
                    move_files: rng.below(2) == 0,
                    write_global_seqno: rng.below(2) == 0,
                    ..Default::default()
                };
                d.ingest_external_file(&[&path], &io)
                    .unwrap_or_else(|e| panic!("{ctx}: ingest: {e}"));
                // Durable on return, with everything acknowledged before.
                history.clear();
                history.push(model.clone());
            }
            68 => {
                if !snapshots.is_empty() {
                    let i = rng.below(snapshots.len() as u64) as usize;
                    snapshots.remove(i);
                }
            }
            70..=79 => {
                let k = rng.key();
                let ro = ReadOptions::default();
                assert_eq!(
                    d.get(&ro, &k).unwrap(),
                    model.get(&k).cloned(),
                    "{ctx}: get {:?}",
                    String::from_utf8_lossy(&k)
                );
                if let Some((s, m)) = snapshots.last() {
                    let ro = ReadOptions {
                        snapshot: Some(s.sequence()),
                        ..Default::default()
                    };
                    assert_eq!(
                        d.get(&ro, &k).unwrap(),
                        m.get(&k).cloned(),
                        "{ctx}: snapshot get"
                    );
                }
            }
            80..=82 => {
                let keys: Vec<Vec<u8>> = (0..5).map(|_| rng.key()).collect();
                let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
                let got = d.multi_get(&ReadOptions::default(), &refs);
                for (k, g) in keys.iter().zip(got) {
                    assert_eq!(g.unwrap(), model.get(k).cloned(), "{ctx}: multi_get");
                }
            }
            83..=86 => {
                let ro = ReadOptions::default();
                assert_eq!(scan(d, &ro), model, "{ctx}: forward scan");
                assert_eq!(scan_reverse(d, &ro), model, "{ctx}: reverse scan");
                if let Some((s, m)) = snapshots.first() {
                    let ro = ReadOptions {
                        snapshot: Some(s.sequence()),
                        ..Default::default()
                    };
                    assert_eq!(&scan(d, &ro), m, "{ctx}: snapshot scan");
                }
                // Bounded scan and seeks.
                let (a, b) = (rng.key(), rng.key());
                let ro = ReadOptions {
                    iterate_lower_bound: Some(a.clone()),
                    iterate_upper_bound: Some(b.clone()),
                    ..Default::default()
                };
                let want: Model = if a < b {
                    model
                        .range(a.clone()..b.clone())
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                } else {
                    Model::new()
                };
                assert_eq!(scan(d, &ro), want, "{ctx}: bounded scan");
                assert_eq!(scan_reverse(d, &ro), want, "{ctx}: bounded reverse scan");
                let mut it = d.iter(&ReadOptions::default()).unwrap();
                let t = rng.key();
                it.seek(&t);
                assert_eq!(
                    it.valid().then(|| it.key().to_vec()),
                    model.range(t.clone()..).next().map(|(k, _)| k.clone()),
                    "{ctx}: seek"
                );
                it.seek_for_prev(&t);
                assert_eq!(
                    it.valid().then(|| it.key().to_vec()),
                    model
                        .range(..=t.clone())
                        .next_back()
                        .map(|(k, _)| k.clone()),
                    "{ctx}: seek_for_prev"
                );
                if it.valid() {
                    it.next();
                    let after = model
                        .range((
                            std::ops::Bound::Excluded(t.clone()),
                            std::ops::Bound::Unbounded,
                        ))
                        .next()
                        .map(|(k, _)| k.clone());
                    assert_eq!(
                        it.valid().then(|| it.key().to_vec()),
                        after,
                        "{ctx}: next after seek_for_prev"
                    );
                }
            }
            87 => {
                d.flush().unwrap();
                history.clear();
                history.push(model.clone());
            }
            88 => {
                // A manual compaction of a random range (flushes first).
                let (a, b) = (rng.key(), rng.key());
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                let force = rng.below(2) == 0;
                let o = CompactRangeOptions {
                    bottommost_level_compaction: if force {
                        BottommostLevelCompaction::Force
                    } else {
                        BottommostLevelCompaction::IfHaveCompactionFilter
                    },
                    ..Default::default()
                };
                d.compact_range_cf_opt(&d.default_cf(), Some(&a), Some(&b), &o)
                    .unwrap();
                history.clear();
                history.push(model.clone());
            }
            89 => {
                // Let background compactions catch up.
                d.wait_for_compactions().unwrap();
                check_shape(d, &ctx);
            }
            90..=94 => {
                snapshots.clear();
                db.take().unwrap().close().unwrap();
                let d2 = DB::open(options(&fs, set), path).unwrap();
                let got = scan(&d2, &ReadOptions::default());
                // A clean close keeps everything, with or without a WAL
                // (close flushes what skipped the WAL).
                assert_eq!(got, model, "{ctx}: reopen");
                history.clear();
                history.push(model.clone());
                db = Some(d2);
            }
            _ => {
                snapshots.clear();
                // flush_wal(true) makes every acknowledged write durable
                // (with or without manual_wal_flush).
                let synced_all = !set.disable_wal && set.write_mode == 4 && step % 2 == 0;
                if synced_all {
                    db.as_ref().unwrap().flush_wal(true).unwrap();
                }
                drop(db.take());
                fs.crash_drop_unsynced();
                let d2 = DB::open(options(&fs, set), path).unwrap();
                let got = scan(&d2, &ReadOptions::default());
                if synced_all {
                    assert_eq!(got, model, "{ctx}: crash after flush_wal(true)");
                }
                assert!(
                    history.contains(&got),
                    "{ctx}: after a crash the state is not a prefix of the acknowledged history since the last durable point\n got {got:?}"
                );
                model = got;
                history.clear();
                history.push(model.clone());
                db = Some(d2);
            }
        }
    }
    let d = db.as_ref().unwrap();
    d.wait_for_compactions().unwrap();
    check_shape(d, &format!("seed {seed} set {}: final", set.name));
    assert_eq!(
        scan(d, &ReadOptions::default()),
        model,
        "seed {seed} set {}: final scan",
        set.name
    );
    if set.table_layout == 3 {
        // Flushes and compactions wrote PlainTable files (ingested files
        // stay block-based).
        let plain = d
            .live_files_metadata()
            .iter()
            .filter(|f| {
                let bytes = fs.read_file(std::path::Path::new(&format!(
                    "/db/{:06}.sst",
                    f.file_number
                )));
                bytes.unwrap_or_default().ends_with(
                    &strata::tools::table::footer::LEGACY_PLAIN_TABLE_MAGIC.to_le_bytes(),
                )
            })
            .count();
        assert!(
            plain > 0 || d.live_files_metadata().is_empty(),
            "seed {seed}: no PlainTable among the live files"
        );
    }
    let compactions: u64 = d.level_stats().iter().skip(1).map(|l| l.count).sum();
    COMPACTIONS.fetch_add(compactions, std::sync::atomic::Ordering::Relaxed);
}

/// Compactions (and trivial moves) seen at the end of each seed's run.
static COMPACTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Levels >= 1 are sorted and disjoint, and every live file exists with
/// its recorded size.
fn check_shape(d: &DB, ctx: &str) {
    let files = d.live_files_metadata();
    type Ranges = Vec<(Vec<u8>, Vec<u8>)>;
    let mut by_level: BTreeMap<usize, Ranges> = BTreeMap::new();
    for f in &files {
        by_level
            .entry(f.level)
            .or_default()
            .push((f.smallest_key.clone(), f.largest_key.clone()));
    }
    for (level, mut ranges) in by_level {
        if level == 0 {
            continue;
        }
        ranges.sort();
        for w in ranges.windows(2) {
            assert!(w[0].1 <= w[1].0, "{ctx}: L{level} files overlap: {w:?}");
        }
    }
    let (names, _) = d.live_files(false).unwrap();
    assert!(names.iter().any(|n| n.starts_with("/MANIFEST-")), "{ctx}");
}

#[test]
fn model_random_sequences() {
    let seeds: u64 = std::env::var("STRATA_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let only: Option<u64> = std::env::var("STRATA_SEED")
        .ok()
        .and_then(|s| s.parse().ok());
    let only_set = std::env::var("STRATA_OPTION_SET").ok();
    let mut jobs = Vec::new();
    for set in &OPTION_SETS {
        if only_set.as_deref().is_some_and(|n| n != set.name) {
            continue;
        }
        let list: Vec<u64> = match only {
            Some(s) => vec![s],
            None => (1..=seeds).collect(),
        };
        jobs.extend(list.into_iter().map(|seed| (seed, set)));
    }
    // Seeds are independent (each has its own in-memory file system):
    // they run on every core, and the first failure is reported.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(seed, set)) = jobs.get(i) else {
                        break;
                    };
                    if failed.lock().unwrap().is_some() {
                        break;
                    }
                    if std::panic::catch_unwind(|| run_seed(seed, set)).is_err() {
                        failed.lock().unwrap().get_or_insert(format!(
                            "model test failed: replay with STRATA_SEED={seed} (option set {})",
                            set.name
                        ));
                    }
                }
            });
        }
    });
    if let Some(m) = failed.into_inner().unwrap() {
        panic!("{m}");
    }
    common::figures::record(
        "G8",
        "model test against a BTreeMap",
        &format!(
            "{} seeds x {} option sets, {} compactions in the final sessions, 0 divergences",
            if only.is_some() { 1 } else { seeds },
            OPTION_SETS.len(),
            COMPACTIONS.load(std::sync::atomic::Ordering::Relaxed)
        ),
    );
}

/// Column families against a model each: writes (single and batches
/// across families), flushes of one family at a time, and reopens after a
/// plain drop (every acknowledged write must be back: the in-memory file
/// system keeps unsynced bytes without a crash), after a close, and after
/// a crash following synced writes (every synced write must be back).
/// Flushing families one by one moves each one's WAL needs on its own,
/// which single-family tests never exercise.
#[test]
fn model_column_families() {
    use strata::{ColumnFamilyDescriptor, ColumnFamilyOptions};
    const CFS: [&str; 3] = ["default", "one", "two"];
    let seeds: u64 = std::env::var("STRATA_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
        .min(100);
    for seed in 0..seeds {
        let fs = MemFileSystem::new();
        let open = || {
            let mut o = Options {
                create_if_missing: true,
                create_missing_column_families: true,
                fs: Some(Arc::new(fs.clone())),
                ..Options::default()
            };
            o.cf.write_buffer_size = 2048;
            let descs = CFS
                .iter()
                .map(|n| ColumnFamilyDescriptor::new(*n, ColumnFamilyOptions { ..o.cf.clone() }))
                .collect();
            DB::open_cf(o, "/db", descs).unwrap()
        };
        let wo = |sync: bool| WriteOptions {
            sync,
            ..WriteOptions::default()
        };
        let mut rng = Rng::seeded(seed);
        let mut models: Vec<Model> = vec![Model::new(); CFS.len()];
        let mut db = open();
        for step in 0..400 {
            let ctx = format!("seed {seed} step {step}");
            let c = rng.below(CFS.len() as u64) as usize;
            let h = db.cf_handle(CFS[c]).unwrap();
            match rng.below(100) {
                0..=49 => {
                    let (k, v) = (rng.key(), rng.value());
                    let sync = rng.below(10) == 0;
                    db.put_cf(&wo(sync), &h, &k, &v).unwrap();
                    models[c].insert(k, v);
                }
                50..=59 => {
                    let k = rng.key();
                    db.delete_cf(&wo(false), &h, &k).unwrap();
                    models[c].remove(&k);
                }
                60..=69 => {
                    // One batch across every family.
                    let mut b = WriteBatch::new();
                    for (i, name) in CFS.iter().enumerate() {
                        let (k, v) = (rng.key(), rng.value());
                        b.put_cf(db.cf_handle(name).unwrap().id, &k, &v);
                        models[i].insert(k, v);
                    }
                    db.write(&wo(false), b).unwrap();
                }
                70..=84 => db.flush_cf(&h).unwrap(),
                85..=89 => {
                    db.close().unwrap();
                    db = open();
                }
                90..=96 => {
                    drop(db);
                    db = open();
                }
                _ => {
                    // Make everything durable, then lose power.
                    db.flush_wal(true).unwrap();
                    drop(db);
                    fs.crash_drop_unsynced();
                    db = open();
                }
            }
            if step % 20 == 19 || rng.below(10) == 0 {
                for (i, name) in CFS.iter().enumerate() {
                    let h = db.cf_handle(name).unwrap();
                    let mut it = db.iter_cf(&ReadOptions::default(), &h).unwrap();
                    let mut got = Model::new();
                    while it.valid() {
                        got.insert(it.key().to_vec(), it.value().to_vec());
                        it.next();
                    }
                    it.status().unwrap();
                    assert_eq!(got, models[i], "{ctx}: column family {name}");
                }
            }
        }
    }
}
