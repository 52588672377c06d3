//! `Statistics`: RocksDB's tickers (event counters) and histograms, with
//! RocksDB's names, enabled by `Options::statistics` and printed in the
//! shape of `Statistics::ToString` (`rocksdb.block.cache.miss COUNT : 12`,
//! `rocksdb.db.get.micros P50 : … COUNT : n SUM : s`), as db_bench's
//! `--statistics` shows them.
//!
//! Counters are relaxed atomics, striped over a few cache lines by thread
//! so that concurrent writers rarely share one; a reading sums the
//! stripes (a reading taken while others count may miss in-flight
//! increments, as in RocksDB).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::histogram::{AtomicHistogram, Histogram};

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $s:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($variant,)* }
        impl $name {
            /// Every value, in RocksDB's print order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];
            /// RocksDB's name.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $s,)* }
            }
        }
    };
}

named_enum! {
    /// Event counters.
    Ticker {
        BlockCacheMiss => "rocksdb.block.cache.miss",
        BlockCacheHit => "rocksdb.block.cache.hit",
        BlockCacheAdd => "rocksdb.block.cache.add",
        BlockCacheDataMiss => "rocksdb.block.cache.data.miss",
        BlockCacheDataHit => "rocksdb.block.cache.data.hit",
        BlockCacheDataAdd => "rocksdb.block.cache.data.add",
        BlockCacheBytesWrite => "rocksdb.block.cache.bytes.write",
        BloomFilterUseful => "rocksdb.bloom.filter.useful",
        BloomFilterFullPositive => "rocksdb.bloom.filter.full.positive",
        MemtableHit => "rocksdb.memtable.hit",
        MemtableMiss => "rocksdb.memtable.miss",
        NumberKeysWritten => "rocksdb.number.keys.written",
        NumberKeysRead => "rocksdb.number.keys.read",
        BytesWritten => "rocksdb.bytes.written",
        BytesRead => "rocksdb.bytes.read",
        NumberDbSeek => "rocksdb.number.db.seek",
        NumberDbNext => "rocksdb.number.db.next",
        NumberDbPrev => "rocksdb.number.db.prev",
        NumberDbSeekFound => "rocksdb.number.db.seek.found",
        IterBytesRead => "rocksdb.db.iter.bytes.read",
        StallMicros => "rocksdb.stall.micros",
        NumberMultigetCalls => "rocksdb.number.multiget.get",
        NumberMultigetKeysRead => "rocksdb.number.multiget.keys.read",
        NumberMultigetBytesRead => "rocksdb.number.multiget.bytes.read",
        WalFileSynced => "rocksdb.wal.synced",
        WalFileBytes => "rocksdb.wal.bytes",
        WriteDoneBySelf => "rocksdb.write.self",
        WriteDoneByOther => "rocksdb.write.other",
        WriteWithWal => "rocksdb.write.wal",
        CompactReadBytes => "rocksdb.compact.read.bytes",
        CompactWriteBytes => "rocksdb.compact.write.bytes",
        FlushWriteBytes => "rocksdb.flush.write.bytes",
        RowCacheHit => "rocksdb.row.cache.hit",
        RowCacheMiss => "rocksdb.row.cache.miss",
    }
}

named_enum! {
    /// Distributions.
    HistogramKind {
        DbGet => "rocksdb.db.get.micros",
        DbWrite => "rocksdb.db.write.micros",
        CompactionTime => "rocksdb.compaction.times.micros",
        FlushTime => "rocksdb.db.flush.micros",
        WalFileSyncMicros => "rocksdb.wal.file.sync.micros",
        DbMultiget => "rocksdb.db.multiget.micros",
        DbSeek => "rocksdb.db.seek.micros",
        BytesPerRead => "rocksdb.bytes.per.read",
        BytesPerWrite => "rocksdb.bytes.per.write",
        BytesPerMultiget => "rocksdb.bytes.per.multiget",
    }
}

const STRIPES: usize = 8;

/// One thread group's counters (a stripe; stripes are separate
/// allocations, so threads of different stripes rarely share a line).
struct Stripe {
    counts: Vec<AtomicU64>,
}

/// Tickers and histograms of one or more DBs (share one `Arc` to pool them).
pub struct Statistics {
    stripes: Vec<Stripe>,
    histograms: Vec<AtomicHistogram>,
}

impl std::fmt::Debug for Statistics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Statistics")
    }
}

impl Default for Statistics {
    fn default() -> Self {
        Statistics {
            stripes: (0..STRIPES)
                .map(|_| Stripe {
                    counts: (0..Ticker::ALL.len()).map(|_| AtomicU64::new(0)).collect(),
                })
                .collect(),
            histograms: (0..HistogramKind::ALL.len())
                .map(|_| AtomicHistogram::default())
                .collect(),
        }
    }
}

fn stripe_index() -> usize {
    thread_local! {
        static STRIPE: usize = {
            use std::sync::atomic::AtomicUsize;
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES
        };
    }
    STRIPE.with(|s| *s)
}

impl Statistics {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn record(&self, t: Ticker, n: u64) {
        self.stripes[stripe_index()].counts[t as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub fn ticker(&self, t: Ticker) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.counts[t as usize].load(Ordering::Relaxed))
            .sum()
    }

    #[inline]
    pub fn measure(&self, h: HistogramKind, value: u64) {
        self.histograms[h as usize].add(value);
    }

    pub fn histogram(&self, h: HistogramKind) -> Histogram {
        self.histograms[h as usize].snapshot()
    }

    /// RocksDB's `Statistics::ToString` shape: every ticker, then every
    /// histogram.
    pub fn report(&self) -> String {
        let mut r = String::new();
        for &t in Ticker::ALL {
            let _ = writeln!(r, "{} COUNT : {}", t.name(), self.ticker(t));
        }
        for &h in HistogramKind::ALL {
            let _ = writeln!(r, "{} {}", h.name(), self.histogram(h).short_report());
        }
        r
    }
}

/// Records ticker `t` if statistics are on.
#[inline]
pub fn record(stats: &Option<std::sync::Arc<Statistics>>, t: Ticker, n: u64) {
    if let Some(s) = stats {
        s.record(t, n);
    }
}

/// Adds `value` to histogram `h` if statistics are on.
#[inline]
pub fn measure(stats: &Option<std::sync::Arc<Statistics>>, h: HistogramKind, value: u64) {
    if let Some(s) = stats {
        s.measure(h, value);
    }
}

/// Times a scope into a histogram when statistics are on (no clock read
/// when they are off).
#[derive(Debug)]
pub struct StopWatch<'a> {
    target: Option<(&'a Statistics, HistogramKind, Instant)>,
}

impl<'a> StopWatch<'a> {
    #[inline]
    pub fn new(stats: &'a Option<std::sync::Arc<Statistics>>, h: HistogramKind) -> Self {
        StopWatch {
            target: stats.as_deref().map(|s| (s, h, Instant::now())),
        }
    }
}

impl Drop for StopWatch<'_> {
    fn drop(&mut self) {
        if let Some((s, h, start)) = self.target {
            s.measure(h, start.elapsed().as_micros() as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counts_across_threads_and_reports_rocksdb_names() {
        let s = Arc::new(Statistics::new());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let s = Arc::clone(&s);
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        s.record(Ticker::NumberKeysRead, 2);
                        s.measure(HistogramKind::DbGet, 3);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(s.ticker(Ticker::NumberKeysRead), 8000);
        assert_eq!(s.histogram(HistogramKind::DbGet).count(), 4000);
        let r = s.report();
        assert!(r.contains("rocksdb.number.keys.read COUNT : 8000\n"), "{r}");
        assert!(r.contains("rocksdb.block.cache.miss COUNT : 0\n"), "{r}");
        assert!(
            r.contains(
                "rocksdb.db.get.micros P50 : 3.000000 P95 : 3.000000 P99 : 3.000000 P100 : 3.000000 COUNT : 4000 SUM : 12000\n"
            ),
            "{r}"
        );
        let opt = Some(Arc::clone(&s));
        {
            let _w = StopWatch::new(&opt, HistogramKind::DbWrite);
        }
        assert_eq!(s.histogram(HistogramKind::DbWrite).count(), 1);
    }
}
