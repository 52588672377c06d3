//! Maps keyed by small integer ids (column family ids) on the hot paths:
//! every write looks its column family up to check and insert the batch,
//! every read its SuperVersion. The std SipHash costs more than the lookup
//! itself there; ids are not attacker-chosen, so a multiplicative hash
//! (Fibonacci hashing) is enough.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` keyed by column family id with [`IdHasher`].
pub type IdMap<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;

/// Hashes one integer by a multiply with 2^64 / phi (high bits well mixed,
/// which is what hashbrown's control bytes use).
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used for u32 keys; kept correct for any other use.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_map_like_a_hash_map() {
        let mut m: IdMap<u32> = IdMap::default();
        for i in 0..10_000u32 {
            m.insert(i * 7, i);
        }
        for i in 0..10_000u32 {
            assert_eq!(m.get(&(i * 7)), Some(&i));
            assert_eq!(m.get(&(i * 7 + 1)), None);
        }
        let mut h = IdHasher::default();
        h.write(b"ab");
        assert_ne!(h.finish(), 0);
    }
}
