//! db_bench's generators, reproduced exactly so that the same flags and
//! `--seed` draw the same keys and write the same values as RocksDB's
//! `db_bench` (7.x): the found counts of the read benchmarks match.
//!
//! - [`Random`]: LevelDB's Lehmer generator (`util/random.h`).
//! - [`Random64`]: `std::mt19937_64` (db_bench's per-thread `rand`).
//! - [`ValueGenerator`]: db_bench's `RandomGenerator`, a 1 MiB buffer of
//!   100-byte pieces compressible to `compression_ratio`, handed out in
//!   consecutive slices.
//! - [`make_key`]: `GenerateKeyFromInt` without prefixes.

/// LevelDB's `Random`: `seed = seed * 16807 mod (2^31 - 1)`.
pub struct Random {
    seed: u32,
}

impl Random {
    const M: u32 = 2_147_483_647;
    const A: u64 = 16807;

    pub fn new(s: u32) -> Self {
        let seed = s & Self::M;
        Random {
            seed: if seed == 0 { 1 } else { seed },
        }
    }

    pub fn next(&mut self) -> u32 {
        let product = u64::from(self.seed) * Self::A;
        let mut seed = ((product >> 31) + (product & u64::from(Self::M))) as u32;
        if seed > Self::M {
            seed -= Self::M;
        }
        self.seed = seed;
        seed
    }

    pub fn uniform(&mut self, n: u32) -> u32 {
        self.next() % n
    }
}

/// The 64-bit Mersenne Twister, seeded as `std::mt19937_64(seed)`.
pub struct Random64 {
    mt: Box<[u64; Self::N]>,
    index: usize,
}

impl Random64 {
    const N: usize = 312;
    const M: usize = 156;
    const MATRIX_A: u64 = 0xB502_6F5A_A966_19E9;
    const UPPER: u64 = 0xFFFF_FFFF_8000_0000;
    const LOWER: u64 = 0x7FFF_FFFF;

    pub fn new(seed: u64) -> Self {
        let mut mt = Box::new([0u64; Self::N]);
        mt[0] = seed;
        for i in 1..Self::N {
            mt[i] = 6_364_136_223_846_793_005u64
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 62))
                .wrapping_add(i as u64);
        }
        Random64 { mt, index: Self::N }
    }

    fn twist(&mut self) {
        for i in 0..Self::N {
            let x = (self.mt[i] & Self::UPPER) | (self.mt[(i + 1) % Self::N] & Self::LOWER);
            let mut xa = x >> 1;
            if x & 1 != 0 {
                xa ^= Self::MATRIX_A;
            }
            self.mt[i] = self.mt[(i + Self::M) % Self::N] ^ xa;
        }
        self.index = 0;
    }

    #[inline]
    pub fn next(&mut self) -> u64 {
        if self.index >= Self::N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= (y >> 29) & 0x5555_5555_5555_5555;
        y ^= (y << 17) & 0x71D6_7FFF_EDA6_0000;
        y ^= (y << 37) & 0xFFF7_EEE0_0000_0000;
        y ^= y >> 43;
        y
    }
}

/// db_bench's `RandomGenerator` (one per benchmark thread).
pub struct ValueGenerator {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGenerator {
    pub fn new(compression_ratio: f64, max_value_size: usize) -> Self {
        let mut rnd = Random::new(301);
        let mut data = Vec::new();
        let mut piece = Vec::new();
        while data.len() < max_value_size.max(1_048_576) {
            compressible_string(&mut rnd, compression_ratio, 100, &mut piece);
            data.extend_from_slice(&piece);
        }
        ValueGenerator { data, pos: 0 }
    }

    /// The next `len` bytes of the buffer (wrapping to its start).
    #[inline]
    pub fn generate(&mut self, len: usize) -> &[u8] {
        debug_assert!(len <= self.data.len());
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        self.pos += len;
        &self.data[self.pos - len..self.pos]
    }
}

/// RocksDB's `test::CompressibleString`: `len * fraction` random printable
/// bytes, repeated up to `len`.
fn compressible_string(rnd: &mut Random, fraction: f64, len: usize, dst: &mut Vec<u8>) {
    let raw = ((len as f64 * fraction) as usize).max(1);
    let raw_data: Vec<u8> = (0..raw).map(|_| b' ' + rnd.uniform(95) as u8).collect();
    dst.clear();
    while dst.len() < len {
        dst.extend_from_slice(&raw_data);
    }
    dst.truncate(len);
}

/// db_bench's key for number `n`: its low `min(key_size, 8)` bytes
/// big-endian, padded with `'0'` to `key_size`.
#[inline]
pub fn make_key(n: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    let fill = key_size.min(8);
    out.extend_from_slice(&n.to_be_bytes()[8 - fill..]);
    out.resize(key_size, b'0');
}

/// db_bench's key with `--keys_per_prefix`: first the prefix number
/// `n % num_prefix` in `min(prefix_size, 8)` big-endian bytes (then `'0'`
/// up to `prefix_size`), then `n` as [`make_key`] writes it in the rest.
#[inline]
pub fn make_prefixed_key(
    n: u64,
    key_size: usize,
    prefix_size: usize,
    num_prefix: u64,
    out: &mut Vec<u8>,
) {
    out.clear();
    let prefix = n % num_prefix.max(1);
    let fill = prefix_size.min(8);
    out.extend_from_slice(&prefix.to_be_bytes()[8 - fill..]);
    out.resize(prefix_size, b'0');
    let fill = key_size.saturating_sub(prefix_size).min(8);
    out.extend_from_slice(&n.to_be_bytes()[8 - fill..]);
    out.resize(key_size.max(prefix_size), b'0');
}

/// The order a fill benchmark writes keys in.
pub enum KeyOrder {
    Sequential {
        next: u64,
    },
    Random {
        num: u64,
    },
    /// A shuffled permutation of `0..num` (the same distribution as
    /// db_bench's; not its exact permutation, which depends on
    /// libstdc++'s `std::shuffle`).
    Unique {
        values: Vec<u64>,
        next: usize,
    },
}

impl KeyOrder {
    pub fn unique(num: u64, seed: u64) -> KeyOrder {
        let mut values: Vec<u64> = (0..num).collect();
        let mut rng = Random64::new(seed);
        for i in (1..values.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            values.swap(i, j);
        }
        KeyOrder::Unique { values, next: 0 }
    }

    #[inline]
    pub fn next(&mut self, rand: &mut Random64) -> u64 {
        match self {
            KeyOrder::Sequential { next } => {
                *next += 1;
                *next - 1
            }
            KeyOrder::Random { num } => rand.next() % *num,
            KeyOrder::Unique { values, next } => {
                let v = values.get(*next).copied().unwrap_or(0);
                *next += 1;
                v
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_64_matches_the_standard() {
        // The C++ standard's check: the 10000th output of a
        // default-seeded (5489) mt19937_64.
        let mut r = Random64::new(5489);
        let mut v = 0;
        for _ in 0..10000 {
            v = r.next();
        }
        assert_eq!(v, 9_981_545_732_273_789_042);
    }

    #[test]
    fn lehmer_and_values_match_leveldb() {
        let mut r = Random::new(301);
        // 301 * 16807 = 5058907 < 2^31 - 1.
        assert_eq!(r.next(), 5_058_907);
        let mut g = ValueGenerator::new(0.5, 100);
        assert_eq!(g.data.len(), 1_048_600);
        let v = g.generate(100).to_vec();
        assert_eq!(v[..50], v[50..]);
        assert!(v.iter().all(|b| (b' '..=b'~').contains(b)));
        assert_ne!(g.generate(100), &v[..]);
    }

    #[test]
    fn keys_are_db_bench_keys() {
        let mut k = Vec::new();
        make_key(0x0102, 16, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\x01\x0200000000");
        make_key(0x0102, 4, &mut k);
        assert_eq!(k, b"\0\0\x01\x02");
        let mut u = KeyOrder::unique(1000, 7);
        let mut r = Random64::new(1);
        let mut seen: Vec<u64> = (0..1000).map(|_| u.next(&mut r)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    }
}
