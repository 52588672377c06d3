//! The memtable's bloom filter (RocksDB's `DynamicBloom` behind
//! `memtable_prefix_bloom_size_ratio`): lets a point lookup skip the
//! skiplist descent (a dozen cache misses) of a memtable that cannot hold
//! the key. Concurrent: inserts set bits with atomic `fetch_or`, lookups
//! read them without locks. Never stored, so its hashing is Strata's own
//! (XXH3, six probes in one 64-byte cache line).
//!
//! Invariant: a hash added before a reader's lookup starts (in the
//! happens-before sense: the memtable adds it before `add` returns, so
//! before the write's sequence number is published) is always found.

use super::sync::{AtomicU64, Ordering};

/// Words of one cache line.
const LINE_WORDS: usize = 8;
const NUM_PROBES: u32 = 6;

/// A concurrent bloom filter over 64-bit hashes.
pub struct MemTableBloom {
    words: Box<[AtomicU64]>,
    /// Cache lines (`words.len() / 8`).
    lines: u32,
}

impl std::fmt::Debug for MemTableBloom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTableBloom")
            .field("bytes", &self.size())
            .finish()
    }
}

impl MemTableBloom {
    /// A filter of about `bytes` bytes (at least one cache line; at most
    /// 4 GiB).
    pub fn new(bytes: usize) -> MemTableBloom {
        let lines = (bytes / (LINE_WORDS * 8)).clamp(1, u32::MAX as usize) as u32;
        MemTableBloom {
            words: (0..lines as usize * LINE_WORDS)
                .map(|_| AtomicU64::new(0))
                .collect(),
            lines,
        }
    }

    /// Bytes the filter takes.
    pub fn size(&self) -> usize {
        self.words.len() * 8
    }

    /// The hash of a key (or prefix) for [`add`](Self::add) and
    /// [`may_contain`](Self::may_contain).
    #[inline]
    pub fn hash(key: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64(key)
    }

    /// The first word of `h`'s cache line, and the probe bits' source.
    #[inline]
    fn line(&self, h: u64) -> (usize, u32) {
        let line = ((h >> 32) * u64::from(self.lines)) >> 32;
        (line as usize * LINE_WORDS, h as u32)
    }

    /// Probe `i`'s word (within the line) and bit.
    #[inline]
    fn probe(bits: u32, i: u32) -> (usize, u64) {
        // Nine bits per probe: three pick the word, six the bit.
        let x = bits.rotate_left(9 * i);
        ((x & 7) as usize, 1u64 << ((x >> 3) & 63))
    }

    /// Starts loading `h`'s cache line (for an `add` a little later).
    #[inline]
    pub fn prefetch(&self, h: u64) {
        let (base, _) = self.line(h);
        crate::util::prefetch::prefetch(self.words.as_ptr().wrapping_add(base));
    }

    pub fn add(&self, h: u64) {
        let (base, bits) = self.line(h);
        for i in 0..NUM_PROBES {
            let (w, mask) = Self::probe(bits, i);
            self.words[base + w].fetch_or(mask, Ordering::Relaxed);
        }
    }

    /// False only if `h` was never added.
    pub fn may_contain(&self, h: u64) -> bool {
        let (base, bits) = self.line(h);
        (0..NUM_PROBES).all(|i| {
            let (w, mask) = Self::probe(bits, i);
            self.words[base + w].load(Ordering::Relaxed) & mask != 0
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn added_hashes_are_found_and_others_mostly_not() {
        let n = 20_000u32;
        let b = MemTableBloom::new(n as usize * 10 / 8);
        for i in 0..n {
            b.add(MemTableBloom::hash(&i.to_le_bytes()));
        }
        assert!((0..n).all(|i| b.may_contain(MemTableBloom::hash(&i.to_le_bytes()))));
        let fp = (n..2 * n)
            .filter(|i| b.may_contain(MemTableBloom::hash(&i.to_le_bytes())))
            .count();
        assert!(fp < n as usize / 20, "{fp} false positives of {n}");
        assert_eq!(MemTableBloom::new(0).size(), 64);
    }
}
