//! RocksDB's `PerfContext`: counters of what the calling thread's reads
//! did, kept per thread (RocksDB's default `PerfLevel::kEnableCount`
//! counts always; so does Strata). Counters Strata does not keep are not
//! fields here: a binding asked for one of RocksDB's other metrics answers
//! that it is not counted.

use std::cell::Cell;

/// The counters of one thread since its last [`reset`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfContext {
    /// Table filter probes that answered "may match" (RocksDB's
    /// `bloom_sst_hit_count`; true or false positives).
    pub bloom_sst_hit_count: u64,
    /// Table filter probes that ruled the key out (`bloom_sst_miss_count`).
    pub bloom_sst_miss_count: u64,
}

thread_local! {
    static CONTEXT: Cell<PerfContext> = const {
        Cell::new(PerfContext {
            bloom_sst_hit_count: 0,
            bloom_sst_miss_count: 0,
        })
    };
}

/// This thread's counters.
pub fn get() -> PerfContext {
    CONTEXT.with(Cell::get)
}

/// Zeroes this thread's counters.
pub fn reset() {
    CONTEXT.with(|c| c.set(PerfContext::default()));
}

/// Counts one table filter probe of this thread.
pub(crate) fn record_filter_probe(may_match: bool) {
    CONTEXT.with(|c| {
        let mut p = c.get();
        if may_match {
            p.bloom_sst_hit_count += 1;
        } else {
            p.bloom_sst_miss_count += 1;
        }
        c.set(p);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_thread_until_reset() {
        reset();
        record_filter_probe(true);
        record_filter_probe(false);
        record_filter_probe(false);
        let other = std::thread::spawn(|| {
            record_filter_probe(true);
            get()
        })
        .join()
        .unwrap();
        assert_eq!(other.bloom_sst_hit_count, 1);
        let p = get();
        assert_eq!((p.bloom_sst_hit_count, p.bloom_sst_miss_count), (1, 2));
        reset();
        assert_eq!(get(), PerfContext::default());
    }
}
