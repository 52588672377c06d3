//! The hash functions of a CuckooTable (RocksDB's `CuckooHash` over
//! `MurmurHash64A`, the `MurmurHash` of 64-bit builds).

/// Seed of hash function `i` is `i * CUCKOO_MURMUR_SEED_MULTIPLIER`
/// (32-bit wrapping, as in RocksDB).
pub const CUCKOO_MURMUR_SEED_MULTIPLIER: u32 = 816_922_183;

/// MurmurHash64A (Austin Appleby), as RocksDB's `util/murmurhash.cc`
/// computes it on x86-64 (little-endian 8-byte words).
pub fn murmur_hash64a(key: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = u64::from(seed) ^ (key.len() as u64).wrapping_mul(M);
    let mut words = key.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let mut k = u64::from_le_bytes(b);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// How a table's hash functions map keys to buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CuckooHasher {
    /// Buckets the hash ranges over (a power of two without module hash).
    /// REQUIRES: nonzero.
    pub table_size: u64,
    pub use_module_hash: bool,
    pub identity_as_first_hash: bool,
}

impl CuckooHasher {
    /// The first bucket of hash function `hash_cnt`'s cuckoo block for
    /// `user_key`, below `table_size`. With `identity_as_first_hash`,
    /// function 0 reads the key's first 8 bytes as a little-endian
    /// integer; REQUIRES then `user_key.len() >= 8` (RocksDB reads past a
    /// shorter key; Strata never writes such a file and reads such files
    /// through its sorted index instead).
    #[inline]
    pub fn hash(&self, user_key: &[u8], hash_cnt: u32) -> u64 {
        debug_assert!(self.table_size > 0);
        let value = if hash_cnt == 0 && self.identity_as_first_hash {
            debug_assert!(user_key.len() >= 8);
            let mut b = [0u8; 8];
            let n = user_key.len().min(8);
            b[..n].copy_from_slice(&user_key[..n]);
            u64::from_le_bytes(b)
        } else {
            murmur_hash64a(
                user_key,
                CUCKOO_MURMUR_SEED_MULTIPLIER.wrapping_mul(hash_cnt),
            )
        };
        if self.use_module_hash {
            value % self.table_size.max(1)
        } else {
            value & self.table_size.wrapping_sub(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of RocksDB's MurmurHash64A (x86-64), from the reference
    /// implementation.
    #[test]
    fn murmur_matches_reference_structure() {
        // Empty key: h = seed ^ 0, then the final mix.
        let mix = |mut h: u64| {
            const M: u64 = 0xc6a4_a793_5bd1_e995;
            h ^= h >> 47;
            h = h.wrapping_mul(M);
            h ^= h >> 47;
            h
        };
        assert_eq!(murmur_hash64a(b"", 0), mix(0));
        assert_eq!(murmur_hash64a(b"", 7), mix(7));
        // Distinct seeds and lengths differ.
        assert_ne!(
            murmur_hash64a(b"abcdefgh", 0),
            murmur_hash64a(b"abcdefgh", 1)
        );
        assert_ne!(
            murmur_hash64a(b"abcdefg", 0),
            murmur_hash64a(b"abcdefgh", 0)
        );
    }

    #[test]
    fn mask_and_module_stay_in_range() {
        for (size, module) in [(7u64, true), (8, false), (1, true), (1, false)] {
            let h = CuckooHasher {
                table_size: size,
                use_module_hash: module,
                identity_as_first_hash: false,
            };
            for i in 0..100u32 {
                for f in 0..4 {
                    assert!(h.hash(&i.to_le_bytes(), f) < size);
                }
            }
        }
        let id = CuckooHasher {
            table_size: 1 << 20,
            use_module_hash: false,
            identity_as_first_hash: true,
        };
        assert_eq!(id.hash(&[5, 0, 0, 0, 0, 0, 0, 1, 9], 0), 5);
    }
}
