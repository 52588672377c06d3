//! Whole-table tests: build from a model, read back every way, and damage.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::error::Result;
use crate::format::iterator::InternalIterator;
use crate::format::iterator::testing::{collect_backward, collect_forward};
use crate::format::{ValueType, make_internal_key, parse_internal_key};
use crate::fs::buffer::{BufferFile, BytesFile};
use crate::util::checksum::ChecksumType;

type Model = BTreeMap<Vec<u8>, (u64, ValueType, Vec<u8>)>;

fn build(model: &Model, opts: &TableOptions) -> Vec<u8> {
    let f = BufferFile::new();
    let mut b = TableBuilder::new(opts.clone(), Box::new(f.clone())).unwrap();
    for (k, (seq, t, v)) in model {
        b.add(&make_internal_key(k, *seq, *t), v).unwrap();
    }
    b.finish(false).unwrap();
    f.contents()
}

fn open(bytes: Vec<u8>, opts: &TableOptions) -> Result<Arc<Table>> {
    let n = bytes.len() as u64;
    Table::open(Arc::new(BytesFile::new(bytes)), "test.sst", n, opts).map(Arc::new)
}

fn scan(t: &Arc<Table>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    collect_forward(&mut t.iter())
}

fn expected(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .iter()
        .map(|(k, (s, t, v))| (make_internal_key(k, *s, *t), v.clone()))
        .collect()
}

const CODECS: [CompressionType; 7] = [
    CompressionType::None,
    CompressionType::Snappy,
    CompressionType::Zlib,
    CompressionType::BZip2,
    CompressionType::Lz4,
    CompressionType::Lz4hc,
    CompressionType::Zstd,
];

fn model_strategy() -> impl Strategy<Value = Model> {
    let key = proptest::collection::vec(
        prop_oneof![Just(b'k'), Just(b'e'), Just(b'y'), any::<u8>()],
        0..14,
    );
    let t = prop_oneof![
        Just(ValueType::Value),
        Just(ValueType::Deletion),
        Just(ValueType::Merge),
        Just(ValueType::SingleDeletion)
    ];
    let v = proptest::collection::vec(prop_oneof![Just(b'v'), any::<u8>()], 0..120);
    proptest::collection::btree_map(key, (0u64..1000, t, v), 0..300)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn table_matches_btreemap(
        model in model_strategy(),
        codec in 0usize..7,
        interval in 1usize..20,
        block_size in 32usize..2048,
        checksum in 0u8..5,
        filter in 0u8..3,
        fv in prop_oneof![Just(2u32), Just(3), Just(4), Just(5), Just(6)],
        // 0: flat index, 1: partitioned, 2: partitioned with partitioned
        // filters, 3: flat with each block's first key.
        partitioned in 0u8..4,
        metadata_block_size in 64usize..1024,
        probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..6), 0..30),
        dict in 0u8..4,
        data_block_hash in any::<bool>(),
        held_limit in prop_oneof![Just(0u64), 64u64..4000],
    ) {
        // Compression dictionaries: none, raw samples, ZSTD-trained,
        // ZSTD-finalized; held blocks written at the end or mid-table.
        let compression_opts = CompressionOptions {
            max_dict_bytes: if dict > 0 { 1024 } else { 0 },
            zstd_max_train_bytes: if dict > 1 { 8192 } else { 0 },
            use_zstd_dict_trainer: dict == 2,
            max_dict_buffer_bytes: held_limit,
            ..CompressionOptions::default()
        };
        let opts = TableOptions {
            compression_opts,
            data_block_index_type: if data_block_hash {
                options::DataBlockIndexType::BinaryAndHash
            } else {
                options::DataBlockIndexType::BinarySearch
            },
            compression: CODECS[codec],
            block_restart_interval: interval,
            block_size,
            checksum: ChecksumType::from_u8(checksum).unwrap(),
            // No filter, Bloom, Ribbon.
            bloom_bits_per_key: (filter > 0).then_some(10.0),
            filter_policy: if filter == 2 {
                options::FilterPolicy::Ribbon { bloom_before_level: 0 }
            } else {
                options::FilterPolicy::Bloom
            },
            format_version: fv,
            index_type: match partitioned {
                1 | 2 => options::IndexType::TwoLevelIndexSearch,
                3 => options::IndexType::BinarySearchWithFirstKey,
                _ => options::IndexType::BinarySearch,
            },
            partition_filters: partitioned == 2,
            metadata_block_size,
            ..TableOptions::default()
        };
        let t = open(build(&model, &opts), &opts).unwrap();
        prop_assert_eq!(t.footer().format_version, opts.format_version);
        let want = expected(&model);
        prop_assert_eq!(scan(&t).unwrap(), want.clone());
        prop_assert_eq!(collect_backward(&mut t.iter()).unwrap(), want.clone());
        let mut it = t.iter();
        prop_assert_eq!(t.properties().num_entries, model.len() as u64);
        // Point lookups and seeks.
        let mut keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        keys.extend(probes);
        for k in &keys {
            let target = make_internal_key(k, crate::format::MAX_SEQUENCE_NUMBER, ValueType::WideColumnEntity);
            let got = t.get(&target).unwrap();
            match model.get(k) {
                Some((s, ty, v)) => prop_assert_eq!(got, Some((make_internal_key(k, *s, *ty), v.clone()))),
                None => prop_assert_eq!(got, None),
            }
            it.seek(&target);
            match model.range(k.clone()..).next() {
                Some((k2, _)) => {
                    prop_assert!(it.valid());
                    prop_assert_eq!(parse_internal_key(it.key()).unwrap().user_key, &k2[..]);
                }
                None => prop_assert!(!it.valid()),
            }
            let target_last = make_internal_key(k, 0, ValueType::Deletion);
            it.seek_for_prev(&target_last);
            match model.range(..=k.clone()).next_back() {
                Some((k2, _)) => {
                    prop_assert!(it.valid());
                    prop_assert_eq!(parse_internal_key(it.key()).unwrap().user_key, &k2[..]);
                }
                None => prop_assert!(!it.valid()),
            }
        }
        t.verify_checksums().unwrap();
    }
}

fn small_model() -> Model {
    (0..40u32)
        .map(|i| {
            let t = if i % 7 == 3 {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            (
                format!("key{i:04}").into_bytes(),
                (u64::from(i) + 1, t, format!("value-{i}").into_bytes()),
            )
        })
        .collect()
}

/// G5: every single-bit flip in a small table is detected (open, scan or
/// checksum verification fails) or provably harmless (the table reads back
/// exactly the original entries).
#[test]
fn every_bit_flip_is_detected_or_harmless() {
    for (codec, format_version) in [
        (CompressionType::None, 5),
        (CompressionType::Snappy, 5),
        (CompressionType::Zstd, 5),
        (CompressionType::Snappy, 6),
    ] {
        let opts = TableOptions {
            compression: codec,
            block_size: 256,
            format_version,
            ..TableOptions::default()
        };
        let model = small_model();
        let bytes = build(&model, &opts);
        let want = expected(&model);
        let mut harmless = 0;
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[i] ^= 1 << bit;
                let outcome = open(damaged, &opts).and_then(|t| {
                    t.verify_checksums()?;
                    scan(&t)
                });
                match outcome {
                    Err(e) => assert!(
                        matches!(
                            e,
                            crate::Error::Corruption { .. }
                                | crate::Error::NotSupported(_)
                                | crate::Error::InvalidArgument(_)
                        ),
                        "flip {i}:{bit}: {e}"
                    ),
                    Ok(got) => {
                        assert_eq!(
                            got, want,
                            "flip at byte {i} bit {bit} ({codec:?}) changed the data silently"
                        );
                        harmless += 1;
                    }
                }
            }
        }
        // Only the footer's zero padding may be flipped harmlessly.
        assert!(harmless <= 8 * 40, "{harmless} harmless flips");
    }
}

/// format_version 6 binds each block's checksum to its file and offset: a
/// block that is intact but was written for another file (same offset,
/// same bytes otherwise) fails verification, where format_version 5 cannot
/// tell.
#[test]
fn format_version_6_detects_blocks_from_another_file() {
    let opts = TableOptions {
        compression: CompressionType::None,
        block_size: 256,
        format_version: 6,
        ..TableOptions::default()
    };
    let model = small_model();
    let a = build(&model, &opts);
    let b = build(&model, &opts);
    assert_eq!(a.len(), b.len());
    // Properties differ by creation time at most; the first data block is
    // identical except for its trailer's context.
    let t = open(a.clone(), &opts).unwrap();
    let mut idx = t.as_block_based().unwrap().index_iter();
    idx.seek_to_first();
    let h = footer::BlockHandle::decode(idx.value()).unwrap();
    let (s, e) = (
        h.offset as usize,
        (h.offset + h.size) as usize + footer::BLOCK_TRAILER_SIZE,
    );
    assert_eq!(a[s..e - 4], b[s..e - 4]);
    assert_ne!(a[e - 4..e], b[e - 4..e], "contexts differ per file");
    let mut spliced = a.clone();
    spliced[s..e].copy_from_slice(&b[s..e]);
    let e = open(spliced, &opts)
        .unwrap()
        .verify_checksums()
        .unwrap_err();
    assert!(e.to_string().contains("context removed"), "{e}");
    // format_version 5: the same splice is indistinguishable.
    let opts5 = TableOptions {
        format_version: 5,
        ..opts
    };
    let a = build(&model, &opts5);
    let b = build(&model, &opts5);
    assert_eq!(a[s..e_of(&a, &opts5)], b[s..e_of(&b, &opts5)]);
}

/// The end (trailer included) of `bytes`' first data block.
fn e_of(bytes: &[u8], opts: &TableOptions) -> usize {
    let t = open(bytes.to_vec(), opts).unwrap();
    let mut idx = t.as_block_based().unwrap().index_iter();
    idx.seek_to_first();
    let h = footer::BlockHandle::decode(idx.value()).unwrap();
    (h.offset + h.size) as usize + footer::BLOCK_TRAILER_SIZE
}

#[test]
fn every_truncation_is_an_error() {
    let opts = TableOptions::default();
    let bytes = build(&small_model(), &opts);
    for cut in 0..bytes.len() {
        let r = open(bytes[..cut].to_vec(), &opts).and_then(|t| {
            t.verify_checksums()?;
            scan(&t)
        });
        assert!(r.is_err(), "truncation to {cut} bytes went unnoticed");
    }
}

#[test]
fn tables_open_under_another_comparator_name_as_in_rocksdb() {
    // RocksDB's table readers do not compare the writer's comparator name
    // with theirs (a database's comparator is checked against its
    // MANIFEST; ingestion checks the order of a foreign file's keys): the
    // name stays in the properties.
    let opts = TableOptions::default();
    let bytes = build(&small_model(), &opts);
    let other = TableOptions {
        comparator: Arc::new(crate::util::comparator::ReverseBytewiseComparator),
        ..TableOptions::default()
    };
    let t = open(bytes, &other).unwrap();
    assert_eq!(
        t.properties().comparator_name,
        b"leveldb.BytewiseComparator".to_vec()
    );
}

#[test]
fn filter_skips_absent_keys() {
    let opts = TableOptions::default();
    let t = open(build(&small_model(), &opts), &opts).unwrap();
    let absent = (0..1000)
        .filter(|i| !t.key_may_match(format!("nokey{i}").as_bytes()))
        .count();
    assert!(absent > 950, "{absent}");
    assert!(t.key_may_match(b"key0005"));
}

#[test]
fn range_tombstones_roundtrip() {
    let f = BufferFile::new();
    let opts = TableOptions::default();
    let mut b = TableBuilder::new(opts.clone(), Box::new(f.clone())).unwrap();
    b.add(&make_internal_key(b"a", 5, ValueType::Value), b"1")
        .unwrap();
    b.add_range_tombstone(b"b", b"d", 7).unwrap();
    let info = b.finish(false).unwrap();
    assert_eq!(
        parse_internal_key(&info.largest_key).unwrap().user_key,
        b"d"
    );
    assert_eq!(info.largest_seqno, 7);
    let bytes = f.contents();
    let t = open(bytes, &opts).unwrap();
    assert_eq!(t.range_tombstones().len(), 1);
    assert_eq!(t.range_tombstones()[0].1, b"d");
    assert_eq!(t.properties().num_range_deletions, 1);
}

/// The small model's table (256-byte blocks) behind a 1 MiB block cache.
fn cached_small_table() -> (Arc<crate::cache::BlockCache>, Model, Arc<Table>) {
    let cache = crate::cache::BlockCache::new(1 << 20);
    let opts = TableOptions {
        block_cache: Some(cache.clone()),
        block_size: 256,
        ..TableOptions::default()
    };
    let model = small_model();
    let t = open(build(&model, &opts), &opts).unwrap();
    (cache, model, t)
}

#[test]
fn block_cache_serves_repeated_reads() {
    let (cache, model, t) = cached_small_table();
    assert_eq!(cache.usage(), 0);
    assert_eq!(scan(&t).unwrap(), expected(&model));
    let after_first = cache.usage();
    assert!(after_first > 0);
    assert_eq!(scan(&t).unwrap(), expected(&model));
    assert_eq!(
        cache.usage(),
        after_first,
        "second scan should hit the cache only"
    );
}

/// Counts the reads that reach the file.
struct CountingFile {
    inner: BytesFile,
    reads: std::sync::atomic::AtomicUsize,
}

impl crate::fs::RandomAccessFile for CountingFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_at(offset, buf)
    }
    fn size(&self) -> Result<u64> {
        self.inner.size()
    }
}

#[test]
fn forward_scans_read_ahead_and_stay_exact() {
    let opts = TableOptions {
        block_size: 256,
        ..TableOptions::default()
    };
    let model: Model = (0..3000u32)
        .map(|i| {
            (
                format!("key{i:06}").into_bytes(),
                (u64::from(i) + 1, ValueType::Value, vec![b'v'; 40]),
            )
        })
        .collect();
    let bytes = build(&model, &opts);
    let n = bytes.len() as u64;
    let file = Arc::new(CountingFile {
        inner: BytesFile::new(bytes),
        reads: Default::default(),
    });
    let t = Arc::new(Table::open(file.clone(), "test.sst", n, &opts).unwrap());
    let opened = file.reads.load(std::sync::atomic::Ordering::Relaxed);
    let blocks = {
        let mut idx = t.as_block_based().unwrap().index_iter();
        idx.seek_to_first();
        let mut c = 0;
        while idx.valid() {
            c += 1;
            idx.next();
        }
        c
    };
    assert!(blocks > 400, "{blocks}");
    // A full forward scan: exact, and far fewer reads than blocks.
    assert_eq!(scan(&t).unwrap(), expected(&model));
    let scan_reads = file.reads.load(std::sync::atomic::Ordering::Relaxed) - opened;
    assert!(
        scan_reads < blocks / 10,
        "{scan_reads} reads for {blocks} blocks"
    );
    // Backward, and seeks that jump around, stay exact (no readahead).
    let mut it = t.iter();
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push(it.key().to_vec());
        it.prev();
    }
    it.status().unwrap();
    back.reverse();
    let want: Vec<Vec<u8>> = expected(&model).into_iter().map(|(k, _)| k).collect();
    assert_eq!(back, want);
    for i in [2500u32, 10, 1700, 1701, 1702, 1703, 2999, 0] {
        let target = make_internal_key(
            format!("key{i:06}").as_bytes(),
            u64::MAX >> 8,
            ValueType::Value,
        );
        it.seek(&target);
        assert!(it.valid());
        assert_eq!(
            crate::format::extract_user_key(it.key()),
            format!("key{i:06}").as_bytes()
        );
        it.next();
    }
}

#[test]
fn compaction_iterators_bypass_the_block_cache() {
    let (cache, model, t) = cached_small_table();
    // A compaction scan sees everything and leaves the cache alone.
    let mut it = t.compaction_iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, model.len());
    assert_eq!(cache.usage(), 0);
    // User reads of the same open table fill it.
    assert_eq!(scan(&t).unwrap(), expected(&model));
    assert!(cache.usage() > 0);
}

/// A partitioned index and filter (RocksDB's kTwoLevelIndexSearch with
/// partition_filters): many partitions, the properties RocksDB writes,
/// every key found, and absent keys mostly stopped by the filter
/// partitions.
#[test]
fn partitioned_index_and_filters_roundtrip() {
    let model: Model = (0..5000u32)
        .map(|i| {
            (
                format!("key{i:06}").into_bytes(),
                (
                    u64::from(i) + 1,
                    ValueType::Value,
                    format!("v{i}").into_bytes(),
                ),
            )
        })
        .collect();
    for fv in [2, 5, 6] {
        let opts = TableOptions {
            block_size: 256,
            index_type: options::IndexType::TwoLevelIndexSearch,
            partition_filters: true,
            metadata_block_size: 256,
            format_version: fv,
            ..TableOptions::default()
        };
        let t = open(build(&model, &opts), &opts).unwrap();
        let p = t.properties();
        assert_eq!(p.index_type(), 2);
        assert!(p.index_partitions > 10, "{} partitions", p.index_partitions);
        assert!(
            t.meta_blocks()
                .contains_key(table_properties::PARTITIONED_FILTER_BLOCK)
        );
        assert_eq!(scan(&t).unwrap(), expected(&model));
        for (k, (s, ty, v)) in model.iter().step_by(7) {
            let target = make_internal_key(k, crate::format::MAX_SEQUENCE_NUMBER, ValueType::Value);
            assert_eq!(
                t.get(&target).unwrap(),
                Some((make_internal_key(k, *s, *ty), v.clone()))
            );
        }
        let stopped = (0..2000u32)
            .filter(|i| !t.key_may_match(format!("key{i:06}x").as_bytes()))
            .count();
        assert!(stopped > 1900, "fv {fv}: filter stopped {stopped} of 2000");
        t.verify_checksums().unwrap();
    }
}

/// The bytes of meta block `name` as stored (uncompressed meta blocks).
fn meta_block_bytes(bytes: &[u8], t: &Table, name: &str) -> Option<Vec<u8>> {
    let h = t.meta_blocks().get(name)?;
    Some(bytes[h.offset as usize..(h.offset + h.size) as usize].to_vec())
}

fn dictionary_model() -> Model {
    (0..6000u32)
        .map(|i| {
            let v = format!(
                "value-{}-{}-{}",
                i % 17,
                "abcdefgh".repeat(1 + (i % 5) as usize),
                i % 101
            );
            (
                format!("user{:08}", i * 7).into_bytes(),
                (u64::from(i) + 1, ValueType::Value, v.into_bytes()),
            )
        })
        .collect()
}

/// Tables with compression dictionaries (RocksDB's
/// `compression_opts.max_dict_bytes`): every codec and dictionary kind,
/// blocks held to the end or written mid-table, flat and partitioned
/// indexes, read back whole; the held blocks' filter and index entries
/// are exactly those of a table written without holding back.
#[test]
fn compression_dictionary_tables_roundtrip() {
    let model = dictionary_model();
    let want = expected(&model);
    for codec in [
        CompressionType::Zstd,
        CompressionType::Lz4,
        CompressionType::Zlib,
        CompressionType::Snappy,
        CompressionType::None,
    ] {
        for (mode, train, trainer) in [
            ("raw", 0, true),
            ("trained", 64 << 10, true),
            ("finalized", 64 << 10, false),
        ] {
            if train > 0 && codec != CompressionType::Zstd {
                continue;
            }
            for limit in [0u64, 30_000] {
                for partitioned in [false, true] {
                    let base = TableOptions {
                        compression: codec,
                        block_size: 1024,
                        index_type: if partitioned {
                            options::IndexType::TwoLevelIndexSearch
                        } else {
                            options::IndexType::BinarySearch
                        },
                        partition_filters: partitioned,
                        metadata_block_size: 512,
                        ..TableOptions::default()
                    };
                    let opts = TableOptions {
                        compression_opts: CompressionOptions {
                            max_dict_bytes: 8192,
                            zstd_max_train_bytes: train,
                            use_zstd_dict_trainer: trainer,
                            max_dict_buffer_bytes: limit,
                            ..CompressionOptions::default()
                        },
                        ..base.clone()
                    };
                    let what = format!("{codec:?} {mode} limit {limit} partitioned {partitioned}");
                    let bytes = build(&model, &opts);
                    let t = open(bytes.clone(), &opts).unwrap();
                    assert_eq!(scan(&t).unwrap(), want, "{what}");
                    for (k, (s, ty, v)) in model.iter().step_by(13) {
                        let target = make_internal_key(
                            k,
                            crate::format::MAX_SEQUENCE_NUMBER,
                            ValueType::Value,
                        );
                        assert_eq!(
                            t.get(&target).unwrap(),
                            Some((make_internal_key(k, *s, *ty), v.clone())),
                            "{what}"
                        );
                    }
                    t.verify_checksums().unwrap();
                    let dict =
                        meta_block_bytes(&bytes, &t, table_properties::COMPRESSION_DICT_BLOCK)
                            .unwrap_or_else(|| panic!("{what}: no dictionary block"));
                    assert!(
                        !dict.is_empty() && dict.len() <= 8192,
                        "{what}: {} bytes",
                        dict.len()
                    );
                    let props =
                        String::from_utf8_lossy(&t.properties().compression_options).to_string();
                    assert!(props.contains("max_dict_bytes=8192;"), "{what}: {props}");
                    // The same table without a dictionary: same filter,
                    // same number of blocks; with no codec, the same data
                    // and index blocks too.
                    let plain_bytes = build(&model, &base);
                    let plain = open(plain_bytes.clone(), &base).unwrap();
                    assert!(
                        plain
                            .meta_blocks()
                            .get(table_properties::COMPRESSION_DICT_BLOCK)
                            .is_none()
                    );
                    assert_eq!(
                        t.properties().num_data_blocks,
                        plain.properties().num_data_blocks,
                        "{what}"
                    );
                    for name in [
                        table_properties::FULL_FILTER_BLOCK,
                        table_properties::PARTITIONED_FILTER_BLOCK,
                    ] {
                        if codec == CompressionType::None
                            || name == table_properties::FULL_FILTER_BLOCK
                        {
                            assert_eq!(
                                meta_block_bytes(&bytes, &t, name),
                                meta_block_bytes(&plain_bytes, &plain, name),
                                "{what}: {name}"
                            );
                        }
                    }
                    if codec == CompressionType::None {
                        let data_end = t.properties().data_size as usize;
                        assert_eq!(bytes[..data_end], plain_bytes[..data_end], "{what}");
                    }
                    // A dictionary pays on ZSTD's small blocks.
                    if codec == CompressionType::Zstd && mode == "raw" {
                        assert!(
                            t.properties().data_size < plain.properties().data_size,
                            "{what}: {} with a dictionary, {} without",
                            t.properties().data_size,
                            plain.properties().data_size
                        );
                    }
                }
            }
        }
    }
}

/// A table that ends while its blocks are held, and one with no data
/// block at all, are written whole.
#[test]
fn compression_dictionary_edge_tables() {
    let opts = TableOptions {
        compression: CompressionType::Zstd,
        compression_opts: CompressionOptions {
            max_dict_bytes: 4096,
            ..CompressionOptions::default()
        },
        ..TableOptions::default()
    };
    let one: Model = [(b"k".to_vec(), (1, ValueType::Value, b"v".to_vec()))]
        .into_iter()
        .collect();
    let t = open(build(&one, &opts), &opts).unwrap();
    assert_eq!(scan(&t).unwrap(), expected(&one));
    let f = BufferFile::new();
    let mut b = TableBuilder::new(opts.clone(), Box::new(f.clone())).unwrap();
    b.add_range_tombstone(b"a", b"z", 5).unwrap();
    b.finish(false).unwrap();
    let t = open(f.contents(), &opts).unwrap();
    assert!(scan(&t).unwrap().is_empty());
    assert!(
        t.meta_blocks()
            .get(table_properties::COMPRESSION_DICT_BLOCK)
            .is_none()
    );
}

/// Hash-search indexes (RocksDB's kHashSearch): the prefixes of each data
/// block's keys in the `rocksdb.hashindex.*` blocks, one run per prefix
/// (its first block and block count), over a binary-search index every
/// reader reads; a prefix extractor is required.
#[test]
fn hash_search_index_tables() {
    let prefix: crate::util::slice_transform::SliceTransformRef =
        Arc::new(crate::util::slice_transform::FixedPrefix(4));
    let model: Model = (0..3000u32)
        .map(|i| {
            let k = format!("{:04}-{:05}", i / 7, i).into_bytes();
            (k, (u64::from(i) + 1, ValueType::Value, vec![b'v'; 50]))
        })
        .collect();
    let opts = TableOptions {
        index_type: options::IndexType::HashSearch,
        prefix_extractor: Some(prefix),
        block_size: 512,
        compression: CompressionType::None,
        ..TableOptions::default()
    };
    let bytes = build(&model, &opts);
    let t = open(bytes.clone(), &opts).unwrap();
    assert_eq!(t.properties().index_type(), 1);
    assert_eq!(scan(&t).unwrap(), expected(&model));
    let prefixes =
        meta_block_bytes(&bytes, &t, table_properties::HASH_INDEX_PREFIXES_BLOCK).unwrap();
    let meta = meta_block_bytes(&bytes, &t, table_properties::HASH_INDEX_METADATA_BLOCK).unwrap();
    // 3000 / 7 prefixes of 4 bytes, in order, each once.
    let n = 3000usize.div_ceil(7);
    assert_eq!(prefixes.len(), n * 4);
    assert_eq!(&prefixes[..8], b"00000001");
    // (length, first block, blocks) per prefix; the runs cover the data
    // blocks in order.
    let mut at = 0;
    let mut runs = Vec::new();
    while at < meta.len() {
        let mut triple = [0u32; 3];
        for v in &mut triple {
            let (x, used) = crate::util::coding::get_varint32(&meta[at..]).unwrap();
            at += used;
            *v = x;
        }
        runs.push(triple);
    }
    assert_eq!(runs.len(), n);
    assert!(runs.iter().all(|r| r[0] == 4 && r[2] >= 1));
    assert!(
        runs.windows(2)
            .all(|w| w[1][1] >= w[0][1] && w[1][1] <= w[0][1] + w[0][2])
    );
    let blocks = t.properties().num_data_blocks as u32;
    let last = runs.last().unwrap();
    assert_eq!(last[1] + last[2], blocks);
    // No prefix extractor: refused, as RocksDB refuses it.
    let bad = TableOptions {
        prefix_extractor: None,
        ..opts
    };
    let err = TableBuilder::new(bad, Box::new(BufferFile::new()))
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("prefix_extractor is not given"),
        "{err}"
    );
}

/// As RocksDB: no data block hash index under a comparator whose equal
/// keys may differ in bytes (every custom one), and Ribbon's policy writes
/// FastLocalBloom below `bloom_before_level` even for format_version < 5.
#[test]
fn hash_index_and_filter_choices_follow_rocksdb() {
    struct Custom;
    impl crate::util::comparator::Comparator for Custom {
        fn name(&self) -> &str {
            "test.Custom"
        }
        fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
            a.cmp(b)
        }
    }
    let model = small_model();
    // Hash indexes make data blocks larger: compare the data sizes.
    let data_size = |opts: &TableOptions| -> u64 {
        open(build(&model, opts), opts)
            .unwrap()
            .properties()
            .data_size
    };
    let plain = TableOptions {
        compression: CompressionType::None,
        ..TableOptions::default()
    };
    let hashed = TableOptions {
        data_block_index_type: options::DataBlockIndexType::BinaryAndHash,
        ..plain.clone()
    };
    assert!(data_size(&hashed) > data_size(&plain));
    let custom = |o: &TableOptions| TableOptions {
        comparator: Arc::new(Custom),
        ..o.clone()
    };
    assert_eq!(data_size(&custom(&hashed)), data_size(&custom(&plain)));
    // Ribbon policy, a flush (level -1) under bloom_before_level 0, and
    // format_version 4: FastLocalBloom (trailer marker -1), not legacy.
    let opts = TableOptions {
        format_version: 4,
        filter_policy: options::FilterPolicy::Ribbon {
            bloom_before_level: 0,
        },
        filter_levelish: -1,
        ..TableOptions::default()
    };
    let bytes = build(&model, &opts);
    let t = open(bytes.clone(), &opts).unwrap();
    let h = t.meta_blocks()[table_properties::FULL_FILTER_BLOCK];
    assert_eq!(bytes[(h.offset + h.size) as usize - 5], 0xff);
}
