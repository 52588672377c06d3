//! A small deterministic generator (SplitMix64) for randomized tests,
//! stress runs and fault schedules: a seed replays the same draws on every
//! machine. Not for cryptography, and not db_bench's key generator (that
//! is RocksDB's `Random64`, in the benchmark).

/// SplitMix64: the state is the seed; every seed, zero included, gives a
/// full-period stream.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// A generator for test seed `seed`: distinct seeds give unrelated
    /// streams. (`Rng(seed * 0x9E37_79B9_7F4A_7C15)` does not: that
    /// constant is SplitMix64's increment, so seed `s + 1`'s stream is
    /// seed `s`'s shifted by one draw.)
    pub fn seeded(seed: u64) -> Rng {
        Rng(Rng(seed ^ 0x5851_F42D_4C95_7F2D).next())
    }

    /// The next draw. Named as the generators it replaced across the
    /// tests; it never ends, so it is not an `Iterator`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (modulo bias is irrelevant at test sizes);
    /// 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Uniform-ish in `0..=max`.
    pub fn up_to(&mut self, max: u64) -> u64 {
        match max.checked_add(1) {
            Some(n) => self.next() % n,
            None => self.next(),
        }
    }

    /// True with probability `1 / n` (never for `n == 0`).
    pub fn one_in(&mut self, n: u64) -> bool {
        n > 0 && self.below(n) == 0
    }

    /// True with probability `percent / 100`.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_streams_are_not_shifted_copies() {
        let a: Vec<u64> = {
            let mut r = Rng::seeded(1);
            (0..64).map(|_| r.next()).collect()
        };
        for seed in [0, 2, 3, 4] {
            let mut r = Rng::seeded(seed);
            let b: Vec<u64> = (0..64).map(|_| r.next()).collect();
            assert!(!b.iter().any(|x| a.contains(x)), "seed {seed}");
        }
    }

    #[test]
    fn a_seed_replays_the_same_stream() {
        // SplitMix64's published first outputs for seed 0.
        let mut r = Rng(0);
        assert_eq!(r.next(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next(), 0x6E78_9E6A_A1B9_65F4);
        let (mut a, mut b) = (Rng(42), Rng(42));
        for _ in 0..100 {
            assert_eq!(a.below(7), b.below(7));
        }
        assert!(!Rng(1).one_in(0));
    }
}
