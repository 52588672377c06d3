//! `Options::statistics`: the tickers and histograms count what the public
//! API did (RocksDB's names, as `--statistics` prints them).

use std::sync::Arc;

use strata::fs::mem::MemFileSystem;
use strata::{
    DB, HistogramKind, Options, ReadOptions, Statistics, Ticker, WriteBatch, WriteOptions,
};

#[test]
fn statistics_count_reads_writes_cache_and_iterators() {
    let fs = MemFileSystem::new();
    let stats = Arc::new(Statistics::new());
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        statistics: Some(Arc::clone(&stats)),
        ..Options::default()
    };
    o.cf.bloom_bits_per_key = Some(10.0);
    let db = DB::open(o, "/db").unwrap();
    let wo = WriteOptions::default();
    let ro = ReadOptions::default();
    for i in 0..100u32 {
        db.put(&wo, format!("k{i:03}").as_bytes(), b"value")
            .unwrap();
    }
    let mut b = WriteBatch::new();
    b.put(b"k100", b"v");
    b.delete(b"k000");
    db.write(&wo, b).unwrap();
    assert_eq!(stats.ticker(Ticker::NumberKeysWritten), 102);
    assert_eq!(stats.ticker(Ticker::WriteDoneBySelf), 101);
    assert_eq!(stats.ticker(Ticker::WriteWithWal), 101);
    assert!(stats.ticker(Ticker::WalFileBytes) >= stats.ticker(Ticker::BytesWritten));
    assert_eq!(stats.histogram(HistogramKind::DbWrite).count(), 101);

    // From the memtable: hits, and one miss (a key never written).
    assert_eq!(
        db.get(&ro, b"k001").unwrap().as_deref(),
        Some(&b"value"[..])
    );
    assert_eq!(db.get(&ro, b"zzz").unwrap(), None);
    assert_eq!(stats.ticker(Ticker::MemtableHit), 1);
    assert_eq!(stats.ticker(Ticker::MemtableMiss), 1);
    assert_eq!(stats.ticker(Ticker::NumberKeysRead), 2);
    assert_eq!(stats.ticker(Ticker::BytesRead), 5);

    // From a table: the first read misses the block cache, the second hits;
    // an absent key is excluded by the bloom filter.
    db.flush().unwrap();
    assert!(stats.ticker(Ticker::FlushWriteBytes) > 0);
    db.get(&ro, b"k050").unwrap().unwrap();
    db.get(&ro, b"k050").unwrap().unwrap();
    assert_eq!(stats.ticker(Ticker::BlockCacheMiss), 1);
    assert_eq!(stats.ticker(Ticker::BlockCacheHit), 1);
    assert_eq!(stats.ticker(Ticker::BlockCacheAdd), 1);
    assert_eq!(db.get(&ro, b"k050x").unwrap(), None);
    assert!(stats.ticker(Ticker::BloomFilterUseful) >= 1);
    assert_eq!(stats.histogram(HistogramKind::DbGet).count(), 5);

    let mut it = db.iter(&ro).unwrap();
    it.seek(b"k010");
    it.next();
    it.prev();
    assert_eq!(stats.ticker(Ticker::NumberDbSeek), 1);
    assert_eq!(stats.ticker(Ticker::NumberDbSeekFound), 1);
    assert_eq!(stats.ticker(Ticker::NumberDbNext), 1);
    assert_eq!(stats.ticker(Ticker::NumberDbPrev), 1);

    let got = db.multi_get(&ro, &[b"k001", b"k002", b"nope"]);
    assert_eq!(got.len(), 3);
    assert_eq!(stats.ticker(Ticker::NumberMultigetCalls), 1);
    assert_eq!(stats.ticker(Ticker::NumberMultigetKeysRead), 3);
    assert_eq!(stats.ticker(Ticker::NumberMultigetBytesRead), 10);

    let report = stats.report();
    assert!(
        report.contains("rocksdb.number.keys.written COUNT : 102\n"),
        "{report}"
    );
    assert!(report.contains("rocksdb.db.get.micros P50 : "), "{report}");
}
