//! Standard128 Ribbon filter construction, as RocksDB 7.8.3's
//! `Standard128RibbonBitsBuilder` (`table/block_based/filter_policy.cc`,
//! `util/ribbon_impl.h`, `util/ribbon_alg.h`, `util/ribbon_config.cc`).
//!
//! A Ribbon filter stores, for every key hash, one linear equation over
//! GF(2): a 128-bit coefficient row starting at a hashed slot, and a
//! result row of up to 32 bits. Construction bands the equations
//! (Gaussian elimination keeping each row's first coefficient on its
//! diagonal), retrying with another of 256 hash seeds when they are
//! inconsistent, then back-substitutes a solution column by column into
//! RocksDB's interleaved layout, which [`super::filter`] queries.
//!
//! Sizes, seeds and solution bits are RocksDB's: the same keys give the
//! same filter block, byte for byte. Where RocksDB falls back to a
//! FastLocalBloom filter (small filters that Bloom stores in less space,
//! more than 950M keys, or no seed solving), the caller builds that
//! instead.

use super::filter::choose_num_probes;

/// Slots covered by one coefficient row (RocksDB's `kCoeffBits`).
const COEFF_BITS: u32 = 128;
/// The filter trailer: marker, seed, 24-bit block count.
pub const METADATA_LEN: usize = 5;
/// Above this many keys RocksDB builds a Bloom filter instead.
const MAX_RIBBON_ENTRIES: usize = 950_000_000;

// StandardHasher's constants (schema-critical).
pub(super) const REHASH_FACTOR: u64 = 0x6193_d459_236a_3a0d;
pub(super) const COEFF_AND_RESULT_FACTOR: u64 = 0xc28f_8282_2b65_0bed;
pub(super) const COEFF_XOR64: u64 = 0xc367_844a_6e52_731d;
pub(super) const TO_RAW_SEED_FACTOR: u64 = 0xc782_19a2_3eea_dd03;
pub(super) const SEED_MIX_MASK: u64 = 0xf0f0_f0f0_f0f0_f0f0;

/// `StandardHasher::SetOrdinalSeed`: the raw seed mixed into key hashes.
pub(super) fn raw_seed(ordinal: u32) -> u32 {
    let mut tmp = u64::from(ordinal).wrapping_mul(TO_RAW_SEED_FACTOR);
    tmp ^= (tmp & SEED_MIX_MASK) >> 4;
    tmp as u32
}

/// One key's equation: start slot, coefficient row, result row
/// (`GetStart`, `GetCoeffRow`, `GetResultRowFromHash` without smash).
pub(super) fn equation(h: u64, raw_seed: u32, num_starts: u32) -> (u32, u128, u32) {
    let hash = (h ^ u64::from(raw_seed)).wrapping_mul(REHASH_FACTOR);
    let start = ((u128::from(hash) * u128::from(num_starts)) >> 64) as u32;
    let a = hash.wrapping_mul(COEFF_AND_RESULT_FACTOR);
    let cr = ((u128::from(a) << 64) ^ u128::from(a ^ COEFF_XOR64)) | 1;
    (start, cr, a.swap_bytes() as u32)
}

/// `BloomMath::StandardFpRate`.
fn standard_fp_rate(bits_per_key: f64, num_probes: u32) -> f64 {
    let k = f64::from(num_probes);
    (1.0 - (-k / bits_per_key).exp()).powf(k)
}

/// `BloomMath::CacheLocalFpRate`.
fn cache_local_fp_rate(bits_per_key: f64, num_probes: u32, cache_line_bits: f64) -> f64 {
    if bits_per_key <= 0.0 {
        return 1.0;
    }
    let keys_per_line = cache_line_bits / bits_per_key;
    let stddev = keys_per_line.sqrt();
    let crowded = standard_fp_rate(cache_line_bits / (keys_per_line + stddev), num_probes);
    let uncrowded = standard_fp_rate(cache_line_bits / (keys_per_line - stddev), num_probes);
    (crowded + uncrowded) / 2.0
}

/// `BandingConfigHelperData<kOneIn20, 128, no smash>::kKnownToAddByPow2`:
/// keys that 2^i slots take with a 1-in-20 chance of construction failure
/// per seed (0: too few slots).
const KNOWN_TO_ADD_BY_POW2: [f64; 18] = [
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 248.851, 499.532, 1001.26, 2003.97, 4005.59, 8000.39,
    15966.6, 31828.1, 63447.3, 126506.0,
];
const FACTOR_PER_POW2: f64 = 0.0038;

/// `GetFactorForLarge`: slots per key above the known table.
fn factor_for_large(log2_num_slots: f64) -> f64 {
    let known = KNOWN_TO_ADD_BY_POW2.len() as u32 - 1;
    let final_known = f64::from(1u32 << known) / KNOWN_TO_ADD_BY_POW2[known as usize];
    let base = final_known - f64::from(known) * FACTOR_PER_POW2;
    base + log2_num_slots * FACTOR_PER_POW2
}

/// `GetNumToAddForPow2`.
fn num_to_add_for_pow2(log2: u32) -> f64 {
    match KNOWN_TO_ADD_BY_POW2.get(log2 as usize) {
        Some(&n) => n,
        None => (1u64 << log2) as f64 / factor_for_large(f64::from(log2)),
    }
}

/// RocksDB's `log(x) * 1.4426950409`: its truncated constant, not
/// `LOG2_E`, since slot counts must round exactly as RocksDB's do.
#[allow(clippy::approx_constant)]
fn approx_log2(x: f64) -> f64 {
    x.ln() * 1.442_695_040_9
}

/// `BandingConfigHelper1::GetNumSlots`: slots for `num_to_add` keys.
fn num_slots_for(num_to_add: u32) -> u32 {
    if num_to_add == 0 {
        return 0;
    }
    let n = f64::from(num_to_add);
    let mut log2 = (approx_log2(n) + 0.5) as u32;
    let mut lower = num_to_add_for_pow2(log2);
    let upper;
    if log2 == 0 || lower == 0.0 {
        return 2 * COEFF_BITS;
    } else if n < lower {
        upper = lower;
        log2 -= 1;
        lower = num_to_add_for_pow2(log2);
    } else {
        upper = num_to_add_for_pow2(log2 + 1);
    }
    let upper_portion = (n - lower) / (upper - lower);
    let lower_slots = (1u64 << log2) as f64;
    (upper_portion * lower_slots + lower_slots + 0.999_999_999) as u32
}

/// `BandingConfigHelper1::GetNumToAdd`: keys that `num_slots` slots take.
fn num_to_add_for(num_slots: u32) -> u32 {
    if num_slots == 0 {
        return 0;
    }
    let log2 = approx_log2(f64::from(num_slots));
    let floor_log2 = log2 as u32;
    if (floor_log2 as usize) + 1 < KNOWN_TO_ADD_BY_POW2.len() {
        let ceil_portion = f64::from(num_slots) / f64::from(1u32 << floor_log2) - 1.0;
        (ceil_portion * KNOWN_TO_ADD_BY_POW2[floor_log2 as usize + 1]
            + (1.0 - ceil_portion) * KNOWN_TO_ADD_BY_POW2[floor_log2 as usize]) as u32
    } else {
        (f64::from(num_slots) / factor_for_large(log2)) as u32
    }
}

/// `SerializableInterleavedSolution::RoundUpNumSlots`.
fn round_up_num_slots(num_slots: u32) -> u32 {
    let corrected = num_slots.div_ceil(COEFF_BITS) * COEFF_BITS;
    if corrected == COEFF_BITS {
        corrected + COEFF_BITS
    } else {
        corrected
    }
}

/// `SerializableInterleavedSolution::RoundDownNumSlots`.
fn round_down_num_slots(num_slots: u32) -> u32 {
    let corrected = num_slots / COEFF_BITS * COEFF_BITS;
    if corrected == COEFF_BITS {
        0
    } else {
        corrected
    }
}

/// `GetBytesForOneInFpRate`: solution bytes for `num_slots` at the wanted
/// accuracy, a mix of `b` and `b + 1` columns; `rounding_bias32` picks
/// where the mix is rounded.
fn bytes_for_one_in_fp_rate(num_slots: u32, one_in: f64, rounding_bias32: u32) -> usize {
    let fp = 1.0 / one_in;
    if one_in.is_nan() || one_in <= 1.0 || fp >= 1.0 {
        return 16;
    }
    if one_in > f64::from(u32::MAX) {
        return num_slots as usize * 4;
    }
    let rounded = one_in as u32;
    let lower_columns = 31 - rounded.leading_zeros();
    let lower_fp = 2f64.powf(-f64::from(lower_columns));
    let upper_fp = 2f64.powf(-f64::from(lower_columns + 1));
    let lower_portion = (fp - upper_fp) / (lower_fp - upper_fp);
    let rounding_bias = (f64::from(rounding_bias32) + 0.5) / 4_294_967_296.0;
    let num_starts = num_slots - COEFF_BITS + 1;
    let upper_start_block =
        ((lower_portion * f64::from(num_starts) + rounding_bias) / f64::from(COEFF_BITS)) as u32;
    let num_blocks = num_slots / COEFF_BITS;
    debug_assert!(upper_start_block < num_blocks);
    let num_segments = num_blocks * lower_columns + (num_blocks - upper_start_block);
    num_segments as usize * 16
}

/// What a Ribbon filter of a given bits/key needs to know.
#[derive(Debug, Clone, Copy)]
pub struct RibbonSizing {
    /// RocksDB's `desired_one_in_fp_rate_`: the FP rate of a
    /// FastLocalBloom filter of the same bits/key.
    one_in_fp_rate: f64,
    /// The Bloom fallback's millibits/key.
    millibits_per_key: u32,
}

impl RibbonSizing {
    /// For `bits_per_key` (sanitized as RocksDB's `BloomLikeFilterPolicy`:
    /// at least 1, below 100) and its millibits.
    pub fn new(bits_per_key: f64, millibits_per_key: u32) -> RibbonSizing {
        let bits = super::filter::sanitized_bits(bits_per_key);
        let probes = choose_num_probes(millibits_per_key);
        RibbonSizing {
            one_in_fp_rate: 1.0 / cache_local_fp_rate(bits, probes, 512.0),
            millibits_per_key,
        }
    }

    /// The FastLocalBloom fallback's size for `n` keys, trailer included.
    fn bloom_bytes(&self, n: usize) -> usize {
        let raw = ((n as u64)
            .saturating_mul(u64::from(self.millibits_per_key))
            .saturating_add(7999)
            / 8000)
            .min(0xffff_ffc0);
        ((raw + 63) & !63) as usize + METADATA_LEN
    }

    /// `CalculateSpaceAndSlots`: the block length and slot count for
    /// `n` keys whose first hash is `first`; `None` when RocksDB builds a
    /// Bloom filter instead.
    fn space_and_slots(&self, n: usize, first: u64) -> Option<(usize, u32)> {
        if n > MAX_RIBBON_ENTRIES {
            return None;
        }
        let num_slots = round_up_num_slots(num_slots_for(n as u32));
        let len = bytes_for_one_in_fp_rate(num_slots, self.one_in_fp_rate, (first >> 32) as u32)
            + METADATA_LEN;
        if num_slots < 1024 && self.bloom_bytes(n) < len {
            return None;
        }
        Some((len, num_slots))
    }

    /// `ApproximateNumEntries`: keys a filter of `bytes` holds (sizes
    /// filter partitions).
    pub fn entries_for_bytes(&self, bytes: usize) -> usize {
        let usable = (bytes.max(METADATA_LEN) - METADATA_LEN) & !15;
        if self.one_in_fp_rate.is_nan() || self.one_in_fp_rate <= 1.0 {
            return MAX_RIBBON_ENTRIES;
        }
        let min_bits_per_slot = if self.one_in_fp_rate >= 1.0 + f64::from(u32::MAX) {
            32.0
        } else {
            let rounded = self.one_in_fp_rate as u32;
            let upper_bits = 1 + (31 - rounded.leading_zeros());
            let fp_upper = 2f64.powf(-f64::from(upper_bits));
            let portion_lower = (1.0 / self.one_in_fp_rate - fp_upper) / fp_upper;
            f64::from(upper_bits) - portion_lower
        };
        let max_slots = usable as f64 * 8.0 / min_bits_per_slot;
        if max_slots.is_nan() || max_slots >= f64::from(num_slots_for(MAX_RIBBON_ENTRIES as u32)) {
            return MAX_RIBBON_ENTRIES;
        }
        let mut slots = round_up_num_slots(max_slots as u32);
        for i in 0.. {
            if slots == 0 || bytes_for_one_in_fp_rate(slots, self.one_in_fp_rate, 0) <= usable {
                break;
            }
            if i >= 2 {
                break;
            }
            slots = round_down_num_slots(slots - 1);
        }
        let n = num_to_add_for(slots) as usize;
        if slots < 1024 {
            // The Bloom fallback's count, if more.
            let bloom_usable = bytes.saturating_sub(METADATA_LEN) / 64 * 64;
            let bloom =
                (8000 * bloom_usable as u64 / u64::from(self.millibits_per_key.max(1))) as usize;
            bloom.max(n)
        } else {
            n.min(MAX_RIBBON_ENTRIES)
        }
    }

    /// Builds the filter block for `hashes` (XXPH3 hashes of the keys, in
    /// order, adjacent duplicates removed; not empty); `None` when RocksDB
    /// would build a Bloom filter instead.
    pub fn build(&self, hashes: &[u64]) -> Option<Vec<u8>> {
        let first = *hashes.first()?;
        let (len, num_slots) = self.space_and_slots(hashes.len(), first)?;
        let num_starts = num_slots - COEFF_BITS + 1;
        let start_seed = first as u32 & 255;
        let mut banding = Banding::new(num_slots);
        let mut seed = start_seed;
        loop {
            banding.reset();
            if banding.add_all(hashes, raw_seed(seed), num_starts) {
                break;
            }
            seed = (seed + 1) & 255;
            if seed == start_seed {
                return None;
            }
        }
        let mut block = vec![0u8; len];
        let num_blocks = num_slots / COEFF_BITS;
        back_substitute(&banding, &mut block, num_blocks);
        debug_assert!(num_blocks < 1 << 24);
        let meta = &mut block[len - METADATA_LEN..];
        meta[0] = 0xfe; // -2: Standard128 Ribbon
        meta[1] = seed as u8;
        meta[2..].copy_from_slice(&num_blocks.to_le_bytes()[..3]);
        Some(block)
    }
}

/// RocksDB's `StandardBanding`: one coefficient and result row per slot.
struct Banding {
    coeff_rows: Vec<u128>,
    result_rows: Vec<u32>,
}

impl Banding {
    fn new(num_slots: u32) -> Banding {
        Banding {
            coeff_rows: vec![0; num_slots as usize],
            result_rows: vec![0; num_slots as usize],
        }
    }

    fn reset(&mut self) {
        self.coeff_rows.fill(0);
        self.result_rows.fill(0);
    }

    /// `BandingAddRange` without backtracking: false when the equations
    /// are inconsistent under this seed.
    fn add_all(&mut self, hashes: &[u64], raw_seed: u32, num_starts: u32) -> bool {
        hashes.iter().all(|&h| {
            let (start, cr, rr) = equation(h, raw_seed, num_starts);
            self.add(start as usize, cr, rr)
        })
    }

    /// `BandingAdd` (first coefficient always one).
    fn add(&mut self, mut i: usize, mut cr: u128, mut rr: u32) -> bool {
        loop {
            debug_assert_eq!(cr & 1, 1);
            let Some(&at) = self.coeff_rows.get(i) else {
                return false;
            };
            if at == 0 {
                self.coeff_rows[i] = cr;
                self.result_rows[i] = rr;
                return true;
            }
            cr ^= at;
            rr ^= self.result_rows[i];
            if cr == 0 {
                // Redundant (a duplicate hash) unless inconsistent.
                return rr == 0;
            }
            let tz = cr.trailing_zeros();
            i += tz as usize;
            cr >>= tz;
        }
    }
}

/// `InterleavedBackSubst` into `block` (the solution's segments, then room
/// for the trailer): blocks from the last to the first, each solved slot by
/// slot from its end with the solution of the following 127 slots.
fn back_substitute(b: &Banding, block: &mut [u8], num_blocks: u32) {
    let mut num_segments = (block.len() / 16) as u32;
    let mut upper_columns = num_segments.div_ceil(num_blocks);
    let mut upper_start_block = upper_columns * num_blocks - num_segments;
    if upper_columns > 32 {
        upper_columns = 32;
        upper_start_block = 0;
        num_segments = num_blocks * 32;
    }
    let mut state = vec![0u128; upper_columns as usize];
    let mut segment = num_segments;
    let mut columns = upper_columns;
    for blk in (0..num_blocks).rev() {
        if blk < upper_start_block {
            columns = upper_columns - 1;
        }
        let start = (blk * COEFF_BITS) as usize;
        for i in (start..start + COEFF_BITS as usize).rev() {
            let (cr, rr) = (b.coeff_rows[i], b.result_rows[i]);
            for (j, s) in state.iter_mut().enumerate().take(columns as usize) {
                let tmp = *s << 1;
                let bit = ((tmp & cr).count_ones() & 1) ^ ((rr >> j) & 1);
                *s = tmp | u128::from(bit);
            }
        }
        segment -= columns;
        for (j, s) in state.iter().enumerate().take(columns as usize) {
            let at = (segment as usize + j) * 16;
            block[at..at + 16].copy_from_slice(&s.to_le_bytes());
        }
    }
    debug_assert_eq!(segment, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_config_matches_rocksdbs_tables() {
        // Known points and their interpolation (ribbon_config.cc).
        assert_eq!(num_slots_for(0), 0);
        assert_eq!(num_slots_for(1), 256);
        assert_eq!(round_up_num_slots(num_slots_for(1500)), 1536);
        assert!(num_to_add_for(1 << 12) == 4005);
        for n in [300u32, 1000, 5000, 70_000, 1_000_000, 50_000_000] {
            let s = num_slots_for(n);
            assert!(
                s > n && f64::from(s) < f64::from(n) * 1.2,
                "{n} keys: {s} slots"
            );
            assert!(
                num_to_add_for(s) + 2 >= n,
                "{n}: {s} slots take {}",
                num_to_add_for(s)
            );
        }
        assert_eq!(round_up_num_slots(100), 256);
        assert_eq!(round_down_num_slots(200), 0);
        assert_eq!(round_down_num_slots(300), 256);
    }

    #[test]
    fn every_added_hash_matches_and_few_others() {
        let sizing = RibbonSizing::new(10.0, 10_000);
        for n in [50usize, 1200, 20_000] {
            let hashes: Vec<u64> = (0..n as u64)
                .map(|i| crate::util::xxph3::xxph3_64(&i.to_le_bytes()))
                .collect();
            let Some(block) = sizing.build(&hashes) else {
                assert!(n < 200, "{n} keys fell back to Bloom");
                continue;
            };
            let r = super::super::filter::FilterReader::new(block.clone());
            for i in 0..n as u64 {
                assert!(r.key_may_match(&i.to_le_bytes()), "{n}: key {i}");
            }
            let fp = (1_000_000..1_100_000u64)
                .filter(|i| r.key_may_match(&i.to_le_bytes()))
                .count();
            // 10 Bloom-equivalent bits: about 1% false positives, in ~30%
            // less space than Bloom.
            assert!(fp > 500 && fp < 1600, "{n} keys: {fp} of 100000");
            assert!(block.len() < n * 10 / 8, "{n} keys: {} bytes", block.len());
        }
    }

    #[test]
    fn partition_sizing_inverts_space() {
        let sizing = RibbonSizing::new(10.0, 10_000);
        for bytes in [4096usize, 16 << 10, 1 << 20] {
            let n = sizing.entries_for_bytes(bytes);
            let (len, _) = sizing.space_and_slots(n, 0).unwrap();
            // RocksDB's approximation: a little over, or a few percent
            // under (slots are rounded down to whole blocks).
            assert!(
                len <= bytes + bytes / 100 && len + bytes / 33 >= bytes,
                "{bytes}: {n} keys take {len}"
            );
        }
    }
}
