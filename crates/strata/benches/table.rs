//! Micro-benchmarks of the file formats (issue 2's speed figures): block
//! seek, point lookup in a table through the filter, filter probe, and WAL
//! append throughput for 100-byte and 4 KiB records with and without sync.
//! Run with `./scripts/bench.sh` (release build, temporary directory).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata::fs::default_fs;
use strata::tools::format::iterator::InternalIterator;
use strata::tools::format::{MAX_SEQUENCE_NUMBER, ValueType, make_internal_key};
use strata::tools::table::block::{Block, KeyOrder};
use strata::tools::table::block_builder::BlockBuilder;
use strata::tools::table::filter::{FilterBuilder, FilterReader};
use strata::tools::table::{Table, TableBuilder, TableOptions};
use strata::tools::util::comparator::bytewise;
use strata::tools::wal::LogWriter;

fn key(i: u64) -> Vec<u8> {
    // db_bench's key: 8-byte big-endian number padded to 16 bytes.
    let mut k = i.to_be_bytes().to_vec();
    k.resize(16, b'0');
    k
}

fn bench_block_seek(c: &mut Criterion) {
    let mut b = BlockBuilder::new(16);
    let n = 40u64;
    for i in 0..n {
        b.add(
            &make_internal_key(&key(i * 2), 1, ValueType::Value),
            &[b'v'; 100],
        );
    }
    let block = Arc::new(Block::from_vec(b.finish().to_vec()).unwrap());
    let order = KeyOrder::Internal(strata::tools::format::InternalKeyComparator::new(bytewise()));
    let mut it = block.iter(order, false);
    let targets: Vec<Vec<u8>> = (0..n * 2)
        .map(|i| make_internal_key(&key(i), MAX_SEQUENCE_NUMBER, ValueType::WideColumnEntity))
        .collect();
    let mut i = 0;
    c.bench_function("block_seek_4KiB", |bch| {
        bch.iter(|| {
            it.seek(&targets[i % targets.len()]);
            i += 7;
            black_box(it.valid())
        })
    });
}

fn bench_filter_probe(c: &mut Criterion) {
    let mut fb = FilterBuilder::new(10.0);
    for i in 0..100_000 {
        fb.add_key(&key(i));
    }
    let f = FilterReader::new(fb.finish());
    let probes: Vec<Vec<u8>> = (0..4096).map(|i| key(i * 37 + 1_000_000)).collect();
    let mut i = 0;
    c.bench_function("filter_probe_100k_keys", |b| {
        b.iter(|| {
            i += 1;
            black_box(f.key_may_match(&probes[i % probes.len()]))
        })
    });
}

fn bench_table_get(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let fs = default_fs();
    let path = dir.path().join("bench.sst");
    let opts = TableOptions::default();
    let mut tb = TableBuilder::new(opts.clone(), fs.new_writable_file(&path).unwrap()).unwrap();
    let n = 200_000u64;
    for i in 0..n {
        tb.add(
            &make_internal_key(&key(i * 2), i + 1, ValueType::Value),
            &[b'x'; 100],
        )
        .unwrap();
    }
    let info = tb.finish(true).unwrap();
    let file = fs.new_random_access_file(&path).unwrap();
    let table = Arc::new(Table::open(file, "bench.sst", info.file_size, &opts).unwrap());
    let mut i = 0u64;
    c.bench_function("table_get_hit", |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            let t = make_internal_key(
                &key(i * 2),
                MAX_SEQUENCE_NUMBER,
                ValueType::WideColumnEntity,
            );
            black_box(table.get(&t).unwrap())
        })
    });
    let mut cached_opts = opts.clone();
    cached_opts.block_cache = Some(strata::BlockCache::new(64 << 20));
    let file = fs.new_random_access_file(&path).unwrap();
    let cached = Arc::new(Table::open(file, "bench.sst", info.file_size, &cached_opts).unwrap());
    c.bench_function("table_get_hit_block_cache", |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            let t = make_internal_key(
                &key(i * 2),
                MAX_SEQUENCE_NUMBER,
                ValueType::WideColumnEntity,
            );
            black_box(cached.get(&t).unwrap())
        })
    });
    c.bench_function("table_get_miss_filtered", |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            let t = make_internal_key(
                &key(i * 2 + 1),
                MAX_SEQUENCE_NUMBER,
                ValueType::WideColumnEntity,
            );
            black_box(table.get(&t).unwrap())
        })
    });
}

fn bench_wal_append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let fs = default_fs();
    let mut g = c.benchmark_group("wal_append");
    for (size, sync) in [(100usize, false), (4096, false), (100, true), (4096, true)] {
        let path = dir.path().join(format!("wal-{size}-{sync}.log"));
        let mut w = LogWriter::new(fs.new_writable_file(&path).unwrap(), 1, false);
        let rec = vec![b'r'; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_function(
            format!("{size}B{}", if sync { "_fdatasync" } else { "" }),
            |b| {
                b.iter(|| {
                    w.add_record(&rec).unwrap();
                    if sync {
                        w.sync().unwrap();
                    } else {
                        w.flush().unwrap();
                    }
                })
            },
        );
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench_block_seek, bench_filter_probe, bench_table_get, bench_wal_append
}
criterion_main!(benches);
