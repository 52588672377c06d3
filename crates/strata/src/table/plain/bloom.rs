//! PlainTable's bloom filter (RocksDB's `PlainTableBloomV1`,
//! `table/plain/plain_table_bloom.cc` over `util/bloom_impl.h`): 32-bit
//! hashes (`GetSliceHash`) of whole user keys (total order) or of
//! prefixes, probed either across the whole bit array
//! (`LegacyNoLocalityBloomImpl`, `bloom_locality` 0) or inside one 64-byte
//! cache line (`LegacyLocalityBloomImpl<ExtraRotates=true>`).
//!
//! Stored in the file as the raw bit array (the `kBloomBlock` meta block);
//! the number of cache-line blocks is the `rocksdb.plain.table.bloom.
//! numblocks` property (0: no locality).
//!
//! Invariant: `bits.len() * 8 == total_bits`, and with locality
//! `total_bits == num_blocks * 512`.

/// RocksDB's `CACHE_LINE_SIZE` on x86-64 and aarch64, in bytes.
const CACHE_LINE: u32 = 64;
const LOG2_CACHE_LINE_BITS: u32 = 9;

/// RocksDB's probe count for PlainTable filters (the factory passes 6).
pub const NUM_PROBES: u32 = 6;

/// A PlainTable bloom filter being built or read.
#[derive(Clone, Debug)]
pub struct PlainBloom {
    bits: crate::util::huge_bytes::HugeBytes,
    num_blocks: u32,
    num_probes: u32,
}

impl PlainBloom {
    /// An empty filter for `total_bits` bits (RocksDB's `SetTotalBits`):
    /// with `locality > 0`, rounded up to an odd number of cache lines;
    /// otherwise to a whole byte.
    pub fn with_total_bits(total_bits: u32, locality: u32) -> PlainBloom {
        let line_bits = CACHE_LINE * 8;
        let (total, blocks) = if locality > 0 {
            let mut blocks = total_bits.div_ceil(line_bits).max(1);
            if blocks % 2 == 0 {
                blocks += 1;
            }
            (blocks * line_bits, blocks)
        } else {
            (total_bits.div_ceil(8).max(1) * 8, 0)
        };
        PlainBloom {
            bits: crate::util::huge_bytes::HugeBytes::zeroed((total / 8) as usize),
            num_blocks: blocks,
            num_probes: NUM_PROBES,
        }
    }

    /// A filter read from a file: `bits` as stored, `num_blocks` from the
    /// properties. `None` if the two disagree (a damaged file): the
    /// caller then rebuilds the filter or goes without.
    pub fn from_raw(bits: Vec<u8>, num_blocks: u32) -> Option<PlainBloom> {
        if bits.is_empty() || bits.len() > (u32::MAX / 8) as usize {
            return None;
        }
        if num_blocks > 0 && bits.len() != (num_blocks * CACHE_LINE) as usize {
            return None;
        }
        Some(PlainBloom {
            bits: crate::util::huge_bytes::HugeBytes::from_vec(bits),
            num_blocks,
            num_probes: NUM_PROBES,
        })
    }

    /// The raw bit array (what the file stores).
    pub fn data(&self) -> &[u8] {
        &self.bits
    }

    /// Cache-line blocks (0: no locality).
    pub fn num_blocks(&self) -> u32 {
        self.num_blocks
    }

    fn total_bits(&self) -> u32 {
        (self.bits.len() * 8) as u32
    }

    fn line_offset(&self, h: u32) -> usize {
        // ExtraRotates: the line comes from the hash rotated right by 11.
        let rotated = h.rotate_right(11);
        ((rotated % self.num_blocks) * CACHE_LINE) as usize
    }

    /// Starts loading the cache line `h` probes first (all of them, with
    /// locality).
    pub fn prefetch(&self, h: u32) {
        let at = if self.num_blocks > 0 {
            self.line_offset(h)
        } else {
            (h % self.total_bits() / 8) as usize
        };
        crate::util::prefetch::prefetch(self.bits.as_ptr().wrapping_add(at));
    }

    pub fn add_hash(&mut self, mut h: u32) {
        let delta = h.rotate_right(17);
        if self.num_blocks > 0 {
            let base = self.line_offset(h);
            for _ in 0..self.num_probes {
                let bitpos = h & ((1 << LOG2_CACHE_LINE_BITS) - 1);
                self.bits[base + (bitpos / 8) as usize] |= 1 << (bitpos % 8);
                h = h.rotate_right(LOG2_CACHE_LINE_BITS);
                h = h.wrapping_add(delta);
            }
        } else {
            let total = self.total_bits();
            for _ in 0..self.num_probes {
                let bitpos = h % total;
                self.bits[(bitpos / 8) as usize] |= 1 << (bitpos % 8);
                h = h.wrapping_add(delta);
            }
        }
    }

    /// False only if no added hash equals `h`.
    pub fn may_contain_hash(&self, mut h: u32) -> bool {
        let delta = h.rotate_right(17);
        if self.num_blocks > 0 {
            let base = self.line_offset(h);
            for _ in 0..self.num_probes {
                let bitpos = h & ((1 << LOG2_CACHE_LINE_BITS) - 1);
                if self.bits[base + (bitpos / 8) as usize] & (1 << (bitpos % 8)) == 0 {
                    return false;
                }
                h = h.rotate_right(LOG2_CACHE_LINE_BITS);
                h = h.wrapping_add(delta);
            }
        } else {
            let total = self.total_bits();
            for _ in 0..self.num_probes {
                let bitpos = h % total;
                if self.bits[(bitpos / 8) as usize] & (1 << (bitpos % 8)) == 0 {
                    return false;
                }
                h = h.wrapping_add(delta);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        for locality in [0, 1] {
            let n = 10_000u32;
            let mut b = PlainBloom::with_total_bits(n * 10, locality);
            let h = |i: u32| crate::util::hash::hash32(&i.to_le_bytes(), 397);
            for i in 0..n {
                b.add_hash(h(i));
            }
            assert!((0..n).all(|i| b.may_contain_hash(h(i))));
            let fp = (n..2 * n).filter(|&i| b.may_contain_hash(h(i))).count();
            assert!(
                fp < (n / 25) as usize,
                "locality {locality}: {fp} false positives"
            );
            let again = PlainBloom::from_raw(b.data().to_vec(), b.num_blocks()).unwrap();
            assert!((0..n).all(|i| again.may_contain_hash(h(i))));
        }
    }

    #[test]
    fn sizes_follow_rocksdb() {
        // 1000 bits: 2 cache lines rounded to an odd 3 with locality.
        let b = PlainBloom::with_total_bits(1000, 1);
        assert_eq!((b.num_blocks(), b.data().len()), (3, 192));
        let b = PlainBloom::with_total_bits(1001, 0);
        assert_eq!((b.num_blocks(), b.data().len()), (0, 126));
        assert!(PlainBloom::from_raw(vec![0; 100], 3).is_none());
    }
}
