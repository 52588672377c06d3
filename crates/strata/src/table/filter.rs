//! Full-filter blocks (`fullfilter.rocksdb.BuiltinBloomFilter`): RocksDB
//! 7.8.3's FastLocalBloom (format_version 5) and legacy Bloom (older
//! format versions) builders, and a reader for every filter kind RocksDB
//! can leave in a file, Standard128 Ribbon included (built in
//! `ribbon_builder.rs`). Bit-exact with
//! `table/block_based/filter_policy.cc` and `util/bloom_impl.h`
//! (docs/FORMATS.md §6.8). This module owns the filter bytes only; which keys go
//! in (user keys) and where the block lives are the table builder's concern.
//!
//! Block layout: `len` filter bytes (a multiple of 64: one 512-bit cache
//! line per bucket) then a 5-byte trailer `FF 00 num_probes 00 00`.
//! Keys are hashed with XXPH3 ([`xxph3_64`]); the lower 32 bits pick the
//! cache line and the upper 32 bits the probed bits within it.

use crate::util::hash::hash32;
use crate::util::xxph3::xxph3_64;
use std::sync::Arc;

/// Size of the metadata trailer of every built-in filter.
const METADATA_LEN: usize = 5;
/// Cache line (bucket) size of FastLocalBloom.
const LINE_BYTES: usize = 64;
/// Largest filter length (without trailer) FastLocalBloom supports.
const MAX_LEN: u64 = 0xffff_ffc0;
/// Seed of RocksDB's `BloomHash`, the 32-bit hash of legacy Bloom filters.
const LEGACY_BLOOM_SEED: u32 = 0xbc9f_1d34;

/// `FastLocalBloomImpl::ChooseNumProbes`: probes per key for a given
/// millibits/key (10 bits/key -> 6).
pub fn choose_num_probes(millibits_per_key: u32) -> u32 {
    match millibits_per_key {
        0..=2080 => 1,
        2081..=3580 => 2,
        3581..=5100 => 3,
        5101..=6640 => 4,
        6641..=8300 => 5,
        8301..=10070 => 6,
        10071..=11720 => 7,
        11721..=14001 => 8,
        14002..=16050 => 9,
        16051..=18300 => 10,
        18301..=22001 => 11,
        22002..=25501 => 12,
        50001.. => 24,
        m => (m - 1) / 2000 - 1,
    }
}

/// `BloomLikeFilterPolicy`'s sanitizing of bits/key: NaN and >= 100
/// become 100, values below 1 become 1 (RocksDB turns values below 0.5
/// into "no filter"; a caller that wants that should build no filter).
pub(super) fn sanitized_bits(bits_per_key: f64) -> f64 {
    if bits_per_key < 1.0 {
        1.0
    } else if bits_per_key.is_nan() || bits_per_key >= 100.0 {
        100.0
    } else {
        bits_per_key
    }
}

/// `BloomLikeFilterPolicy`'s bits/key -> millibits/key conversion.
fn millibits_for(bits_per_key: f64) -> u32 {
    // RocksDB: static_cast<int>(bits_per_key * 1000.0 + 0.500001).
    (sanitized_bits(bits_per_key) * 1000.0 + 0.500_001) as u32
}

/// FastRange32: maps `h` uniformly onto `0..n`.
#[inline(always)]
fn fast_range32(h: u32, n: u32) -> u32 {
    ((u64::from(h) * u64::from(n)) >> 32) as u32
}

/// The filters a table builder writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterFlavor {
    /// RocksDB's FastLocalBloom (format_version 5 and later).
    FastLocalBloom,
    /// RocksDB's legacy Bloom (`LegacyBloomBitsBuilder`, 32-bit
    /// `BloomHash` keys): tables of format_version < 5.
    LegacyBloom,
    /// Standard128 Ribbon (RocksDB's `ribbonfilter`): about 30% smaller
    /// than Bloom for the same false-positive rate; FastLocalBloom where
    /// RocksDB falls back to it.
    Ribbon,
}

/// Collects keys of one table and builds its full-filter block.
pub struct FilterBuilder {
    millibits_per_key: u32,
    num_probes: u32,
    hashes: Vec<u64>,
    /// Tables of format_version < 5: RocksDB's legacy Bloom
    /// (`LegacyBloomBitsBuilder`), 32-bit `BloomHash` keys.
    legacy: bool,
    /// Ribbon filters: their sizing (Bloom when RocksDB falls back).
    ribbon: Option<super::ribbon_builder::RibbonSizing>,
}

impl std::fmt::Debug for FilterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterBuilder")
            .field("millibits_per_key", &self.millibits_per_key)
            .field("num_probes", &self.num_probes)
            .field("num_added", &self.hashes.len())
            .finish()
    }
}

impl FilterBuilder {
    /// A builder for `bits_per_key` (e.g. 10.0). Millibits/key are
    /// `round(bits_per_key * 1000)` as RocksDB computes them.
    pub fn new(bits_per_key: f64) -> Self {
        let millibits_per_key = millibits_for(bits_per_key);
        FilterBuilder {
            millibits_per_key,
            num_probes: choose_num_probes(millibits_per_key),
            hashes: Vec::new(),
            legacy: false,
            ribbon: None,
        }
    }

    /// A builder of a Standard128 Ribbon filter as accurate as a
    /// FastLocalBloom filter of `bits_per_key` (RocksDB's
    /// `NewRibbonFilterPolicy(bloom_equivalent_bits_per_key)`).
    pub fn new_ribbon(bits_per_key: f64) -> Self {
        let mut b = FilterBuilder::new(bits_per_key);
        b.ribbon = Some(super::ribbon_builder::RibbonSizing::new(
            bits_per_key,
            b.millibits_per_key,
        ));
        b
    }

    /// A builder of `flavor` for `bits_per_key`.
    pub fn of(flavor: FilterFlavor, bits_per_key: f64) -> Self {
        match flavor {
            FilterFlavor::FastLocalBloom => FilterBuilder::new(bits_per_key),
            FilterFlavor::LegacyBloom => FilterBuilder::new_legacy(bits_per_key),
            FilterFlavor::Ribbon => FilterBuilder::new_ribbon(bits_per_key),
        }
    }

    /// A builder of the legacy Bloom filter RocksDB writes into tables of
    /// format_version < 5: whole bits per key (rounded), `bits * 0.69`
    /// probes (1 to 30), an odd number of 64-byte lines.
    pub fn new_legacy(bits_per_key: f64) -> Self {
        let millibits_per_key = millibits_for(bits_per_key);
        let whole_bits = (millibits_per_key + 500) / 1000;
        let num_probes = ((f64::from(whole_bits) * 0.69) as u32).clamp(1, 30);
        FilterBuilder {
            millibits_per_key: whole_bits * 1000,
            num_probes,
            hashes: Vec::new(),
            legacy: true,
            ribbon: None,
        }
    }

    /// Adds a key (a user key). An adjacent duplicate hash is collapsed, as
    /// RocksDB does.
    pub fn add_key(&mut self, key: &[u8]) {
        if self.legacy {
            self.add_hash(u64::from(hash32(key, LEGACY_BLOOM_SEED)));
        } else {
            self.add_hash(xxph3_64(key));
        }
    }

    /// Adds an already computed [`xxph3_64`] hash of a key.
    pub fn add_hash(&mut self, h: u64) {
        if self.hashes.last() != Some(&h) {
            self.hashes.push(h);
        }
    }

    /// Number of distinct (non-adjacent-duplicate) hashes collected.
    pub fn num_added(&self) -> usize {
        self.hashes.len()
    }

    /// Keys a filter of `bytes` bytes holds at this builder's bits/key
    /// (RocksDB's `ApproximateNumEntries`, which sizes filter partitions).
    pub fn entries_for_bytes(&self, bytes: usize) -> usize {
        if let Some(r) = &self.ribbon {
            return r.entries_for_bytes(bytes);
        }
        let usable = bytes.saturating_sub(METADATA_LEN) / LINE_BYTES * LINE_BYTES;
        (8000 * usable as u64 / u64::from(self.millibits_per_key.max(1))) as usize
    }

    /// Number of probes per key this builder writes.
    pub fn num_probes(&self) -> u32 {
        self.num_probes
    }

    /// Filter bytes (without trailer) RocksDB allocates for `num_keys`:
    /// `ceil(n * millibits / 8000)` capped at 0xFFFFFFC0, rounded up to 64.
    fn filter_len(&self, num_keys: usize) -> usize {
        let raw = (num_keys as u64)
            .saturating_mul(u64::from(self.millibits_per_key))
            .saturating_add(7999)
            / 8000;
        let raw = raw.min(MAX_LEN);
        ((raw + 63) & !63) as usize
    }

    /// Builds the whole filter block (filter bytes + 5-byte trailer) and
    /// resets the builder. With no keys added it returns an empty vector,
    /// which is what RocksDB's `FullFilterBlockBuilder::Finish` returns (the
    /// table then has no filter block); readers treat it as "matches nothing".
    pub fn finish(&mut self) -> Vec<u8> {
        let hashes = std::mem::take(&mut self.hashes);
        if hashes.is_empty() {
            return Vec::new();
        }
        if self.legacy {
            return self.finish_legacy(&hashes);
        }
        if let Some(block) = self.ribbon.and_then(|r| r.build(&hashes)) {
            return block;
        }
        let len = self.filter_len(hashes.len());
        let mut block = vec![0u8; len + METADATA_LEN];
        let num_lines = (len / LINE_BYTES) as u32;
        if let Some(data) = block.get_mut(..len) {
            for h in hashes {
                let line = fast_range32(h as u32, num_lines) as usize * LINE_BYTES;
                if let Some(line) = data.get_mut(line..line + LINE_BYTES) {
                    add_to_line(line, (h >> 32) as u32, self.num_probes);
                }
            }
        }
        if let Some(trailer) = block.get_mut(len..) {
            // -1: new Bloom marker; 0: FastLocalBloom; probes with 0 in the
            // top 3 bits (64-byte lines); two reserved zero bytes.
            trailer.copy_from_slice(&[0xff, 0x00, self.num_probes as u8, 0x00, 0x00]);
        }
        block
    }
}

impl FilterBuilder {
    /// `LegacyBloomBitsBuilder::Finish`: `total_bits` rounded up to whole
    /// 64-byte lines, made odd; then `num_probes: u8`, `num_lines: fixed32`.
    fn finish_legacy(&self, hashes: &[u64]) -> Vec<u8> {
        const LINE_BITS: u64 = LINE_BYTES as u64 * 8;
        let bits =
            (hashes.len() as u64 * u64::from(self.millibits_per_key / 1000)).min(0xffff_0000);
        let mut num_lines = bits.div_ceil(LINE_BITS);
        if num_lines % 2 == 0 {
            num_lines += 1;
        }
        let len = (num_lines * LINE_BITS / 8) as usize;
        let mut block = vec![0u8; len + METADATA_LEN];
        let lines = num_lines as u32;
        for &h in hashes {
            let h = h as u32;
            let off = ((h % lines) as usize) * LINE_BYTES;
            let delta = h.rotate_right(17);
            let mut p = h;
            for _ in 0..self.num_probes {
                let bitpos = (p & (LINE_BITS as u32 - 1)) as usize;
                if let Some(b) = block.get_mut(off + bitpos / 8) {
                    *b |= 1 << (bitpos % 8);
                }
                p = p.wrapping_add(delta);
            }
        }
        block[len] = self.num_probes as u8;
        block[len + 1..].copy_from_slice(&lines.to_le_bytes());
        block
    }
}

/// A partitioned filter's partitions (RocksDB's
/// `PartitionedFilterBlockBuilder`): each a full filter of about
/// `metadata_block_size` bytes, keyed by the index separator after its last
/// data block. The table builder cuts a partition when the index closes
/// one, and asks the index for a cut when this partition is full.
#[derive(Debug)]
pub struct PartitionedFilterBuilder {
    current: FilterBuilder,
    bits_per_key: f64,
    flavor: FilterFlavor,
    keys_per_partition: usize,
    done: Vec<KeyedPartition>,
    total_added: usize,
}

/// A finished partition: its key (an internal-key separator) and block.
pub type KeyedPartition = (Vec<u8>, Vec<u8>);

impl PartitionedFilterBuilder {
    pub fn new(bits_per_key: f64, flavor: FilterFlavor, metadata_block_size: usize) -> Self {
        let current = FilterBuilder::of(flavor, bits_per_key);
        let keys_per_partition = current.entries_for_bytes(metadata_block_size).max(1);
        PartitionedFilterBuilder {
            current,
            bits_per_key,
            flavor,
            keys_per_partition,
            done: Vec::new(),
            total_added: 0,
        }
    }

    pub fn add_key(&mut self, key: &[u8]) {
        self.current.add_key(key);
    }

    /// The current partition holds its share of keys.
    pub fn wants_cut(&self) -> bool {
        self.current.num_added() >= self.keys_per_partition
    }

    /// Closes the current partition under `key` (an internal-key index
    /// separator at or after every key in it).
    pub fn cut(&mut self, key: &[u8]) {
        self.total_added += self.current.num_added();
        let block = self.current.finish();
        self.done.push((key.to_vec(), block));
        self.current = FilterBuilder::of(self.flavor, self.bits_per_key);
    }

    /// Every partition, the last closed under `last_key`, and the number
    /// of keys added in all.
    pub fn finish(mut self, last_key: &[u8]) -> (Vec<KeyedPartition>, usize) {
        if self.current.num_added() > 0 || self.done.is_empty() {
            self.cut(last_key);
        }
        (self.done, self.total_added)
    }
}

/// `FastLocalBloomImpl::AddHashPrepared` on one 64-byte line.
#[inline(always)]
fn add_to_line(line: &mut [u8], h2: u32, num_probes: u32) {
    let mut h = h2;
    for _ in 0..num_probes {
        let bitpos = (h >> 23) as usize; // 9-bit address within 512 bits
        if let Some(b) = line.get_mut(bitpos >> 3) {
            *b |= 1 << (bitpos & 7);
        }
        h = h.wrapping_mul(0x9e37_79b9);
    }
}

/// `FastLocalBloomImpl::HashMayMatchPrepared` on one 64-byte line.
#[inline(always)]
fn line_may_match(line: &[u8], h2: u32, num_probes: u32) -> bool {
    let mut h = h2;
    for _ in 0..num_probes {
        let bitpos = (h >> 23) as usize;
        match line.get(bitpos >> 3) {
            Some(b) if b & (1 << (bitpos & 7)) != 0 => {}
            _ => return false,
        }
        h = h.wrapping_mul(0x9e37_79b9);
    }
    true
}

/// What the trailer of a filter block says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Empty or shorter than the trailer: built from zero keys.
    AlwaysFalse,
    /// Zero probes, Ribbon, reserved or invalid metadata: no filtering.
    AlwaysTrue,
    /// format_version >= 5 Bloom.
    FastLocalBloom { num_probes: u32, num_lines: u32 },
    /// Standard128 Ribbon (`ribbon_impl.h`'s interleaved solution).
    Ribbon(Ribbon),
    /// format_version < 5 Bloom (`LegacyLocalityBloomImpl<false>`), keyed
    /// by the 32-bit `BloomHash`.
    LegacyBloom {
        num_probes: u32,
        num_lines: u32,
        log2_line_bytes: u32,
    },
}

/// A parsed filter block. Owns its bytes; queries are cheap.
pub struct FilterReader {
    data: Arc<[u8]>,
    kind: Kind,
}

impl std::fmt::Debug for FilterReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterReader")
            .field("len", &self.data.len())
            .field("kind", &self.kind)
            .finish()
    }
}

impl FilterReader {
    /// Parses a filter block the way `GetBuiltinFilterBitsReader` does.
    /// Never panics: anything it cannot read safely becomes "always true".
    pub fn new(block: Vec<u8>) -> Self {
        Self::from_shared(block.into())
    }

    /// [`FilterReader::new`] over bytes shared with others (a filter block
    /// in the block cache): no copy.
    pub fn from_shared(block: Arc<[u8]>) -> Self {
        let kind = parse_kind(&block);
        FilterReader { data: block, kind }
    }

    /// Bytes of the filter block.
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// True if `key` may be in the table; false means it is certainly absent.
    pub fn key_may_match(&self, key: &[u8]) -> bool {
        match self.kind {
            Kind::AlwaysFalse => false,
            Kind::AlwaysTrue => true,
            Kind::FastLocalBloom { .. } | Kind::Ribbon(_) => self.hash_may_match(xxph3_64(key)),
            Kind::LegacyBloom {
                num_probes,
                num_lines,
                log2_line_bytes,
            } => self.legacy_may_match(
                hash32(key, LEGACY_BLOOM_SEED),
                num_probes,
                num_lines,
                log2_line_bytes,
            ),
        }
    }

    /// Like [`Self::key_may_match`] for a key whose [`xxph3_64`] hash the
    /// caller already has. Legacy Bloom filters use a different hash, so for
    /// them this conservatively answers true.
    pub fn hash_may_match(&self, h: u64) -> bool {
        match self.kind {
            Kind::AlwaysFalse => false,
            Kind::AlwaysTrue | Kind::LegacyBloom { .. } => true,
            Kind::Ribbon(r) => r.may_match(&self.data, h),
            Kind::FastLocalBloom {
                num_probes,
                num_lines,
            } => {
                let off = fast_range32(h as u32, num_lines) as usize * LINE_BYTES;
                match self.data.get(off..off + LINE_BYTES) {
                    Some(line) => line_may_match(line, (h >> 32) as u32, num_probes),
                    None => true,
                }
            }
        }
    }

    fn legacy_may_match(&self, h: u32, num_probes: u32, num_lines: u32, log2: u32) -> bool {
        let line_bytes = 1usize << log2;
        let off = ((h % num_lines) as usize) << log2;
        let Some(line) = self.data.get(off..off.saturating_add(line_bytes)) else {
            return true;
        };
        let mask = ((1u64 << (log2 + 3)) - 1) as u32;
        let delta = h.rotate_right(17);
        let mut h = h;
        for _ in 0..num_probes {
            let bitpos = (h & mask) as usize;
            match line.get(bitpos / 8) {
                Some(b) if b & (1 << (bitpos % 8)) != 0 => {}
                _ => return false,
            }
            h = h.wrapping_add(delta);
        }
        true
    }
}

/// `BuiltinFilterPolicy::GetBuiltinFilterBitsReader` and
/// `GetBloomBitsReader` dispatch on the trailer.
fn parse_kind(block: &[u8]) -> Kind {
    let Some((body, trailer)) = block.split_last_chunk::<METADATA_LEN>() else {
        return Kind::AlwaysFalse;
    };
    if body.is_empty() {
        return Kind::AlwaysFalse;
    }
    let Ok(len) = u32::try_from(body.len()) else {
        return Kind::AlwaysTrue; // > 4 GiB: RocksDB would truncate; don't guess
    };
    let [marker, b1, b2, b3, b4] = *trailer;
    match marker as i8 {
        0 => Kind::AlwaysTrue,
        -1 => {
            // New Bloom: sub-implementation, block size + probes, reserved.
            let num_probes = u32::from(b2 & 31);
            let log2_block_bytes = u32::from((b2 >> 5) & 7) + 6;
            let num_lines = len / LINE_BYTES as u32;
            if !(1..=30).contains(&num_probes)
                || b3 != 0
                || b4 != 0
                || b1 != 0
                || log2_block_bytes != 6
                || num_lines == 0
            {
                // num_lines == 0 (1..63 filter bytes) would make RocksDB read
                // past the data; treat as unreadable.
                Kind::AlwaysTrue
            } else {
                // RocksDB uses floor(len / 64) lines if len is not a multiple
                // of 64; so do we.
                Kind::FastLocalBloom {
                    num_probes,
                    num_lines,
                }
            }
        }
        -2 => {
            // Standard128 Ribbon: seed byte, 24-bit block count.
            let num_blocks = u32::from_le_bytes([b2, b3, b4, 0]);
            match Ribbon::new(len, num_blocks, u32::from(b1)) {
                Some(r) => Kind::Ribbon(r),
                None => Kind::AlwaysTrue,
            }
        }
        // Other negatives are reserved.
        p if p < 0 => Kind::AlwaysTrue,
        p => legacy_kind(p as u32, len, u32::from_le_bytes([b1, b2, b3, b4])),
    }
}

/// A Standard128 Ribbon filter's shape (RocksDB's
/// `Standard128RibbonBitsReader`: `SerializableInterleavedSolution` queried
/// through `StandardRehasher`). Bit-exact with `util/ribbon_impl.h` and
/// `util/ribbon_alg.h`: the data is `num_segments` 128-bit little-endian
/// words, interleaved by column; a key matches when, for each of its
/// block's columns, the parity of (solution & coefficient row) equals the
/// key's result bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ribbon {
    num_starts: u32,
    num_segments: u32,
    upper_num_columns: u32,
    upper_start_block: u32,
    raw_seed: u32,
}

impl Ribbon {
    const COEFF_BITS: u32 = 128;

    /// `None` for shapes RocksDB reads as "always true" (fewer than two
    /// blocks) or that could not have been written.
    fn new(len: u32, num_blocks: u32, seed: u32) -> Option<Ribbon> {
        if num_blocks < 2 {
            return None;
        }
        let num_segments = len / 16;
        // ResultRow is 32 bits wide: at most 32 columns.
        let mut upper_num_columns = num_segments.div_ceil(num_blocks);
        let mut upper_start_block = (upper_num_columns * num_blocks).checked_sub(num_segments)?;
        if upper_num_columns > 32 {
            upper_num_columns = 32;
            upper_start_block = 0;
        }
        if upper_num_columns == 0 {
            return None;
        }
        Some(Ribbon {
            num_starts: num_blocks.checked_mul(Self::COEFF_BITS)? - Self::COEFF_BITS + 1,
            num_segments: num_blocks.checked_mul(upper_num_columns)? - upper_start_block,
            upper_num_columns,
            upper_start_block,
            raw_seed: super::ribbon_builder::raw_seed(seed),
        })
    }

    fn segment(data: &[u8], i: u32) -> Option<u128> {
        let at = i as usize * 16;
        let b: [u8; 16] = data.get(at..at + 16)?.try_into().ok()?;
        Some(u128::from_le_bytes(b))
    }

    /// `InterleavedPrepareQuery` + `InterleavedFilterQuery` for the key
    /// whose XXPH3 hash is `h`.
    fn may_match(&self, data: &[u8], h: u64) -> bool {
        let (start_slot, cr, expected) =
            super::ribbon_builder::equation(h, self.raw_seed, self.num_starts);
        let start_block = start_slot / Self::COEFF_BITS;
        let segment =
            start_block * self.upper_num_columns - start_block.min(self.upper_start_block);
        let num_columns = self.upper_num_columns - u32::from(start_block < self.upper_start_block);
        let start_bit = start_slot % Self::COEFF_BITS;
        for i in 0..num_columns {
            let soln = if start_bit == 0 {
                Self::segment(data, segment + i).map(|s| s & cr)
            } else {
                let left = Self::segment(data, segment + i).map(|s| s & (cr << start_bit));
                let right = Self::segment(data, segment + num_columns + i)
                    .map(|s| s & (cr >> (Self::COEFF_BITS - start_bit)));
                left.zip(right).map(|(l, r)| l ^ r)
            };
            let Some(soln) = soln else {
                return true; // out of the data: cannot say
            };
            if (soln.count_ones() & 1) != (expected >> i) & 1 {
                return false;
            }
        }
        true
    }
}

/// Legacy Bloom metadata: `num_probes` then fixed32 `num_lines`; the cache
/// line size is whatever makes `num_lines * line == len` (a power of two).
fn legacy_kind(num_probes: u32, len: u32, num_lines: u32) -> Kind {
    let (lines, len64) = (u64::from(num_lines), u64::from(len));
    let log2_line_bytes = if num_lines.wrapping_mul(LINE_BYTES as u32) == len {
        if lines * LINE_BYTES as u64 != len64 {
            // Only "matches" through u32 wrap-around: RocksDB would read out
            // of bounds. Refuse.
            return Kind::AlwaysTrue;
        }
        6
    } else if num_lines == 0 || len % num_lines != 0 {
        return Kind::AlwaysTrue;
    } else {
        let mut log2 = 0u32;
        while (lines << log2) < len64 {
            log2 += 1;
        }
        if (lines << log2) != len64 {
            return Kind::AlwaysTrue;
        }
        log2
    };
    Kind::LegacyBloom {
        num_probes,
        num_lines,
        log2_line_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// bloom_test.cc `Key(i)`: fixed32 little-endian.
    fn key(i: u32) -> [u8; 4] {
        i.to_le_bytes()
    }

    fn build(bits: f64, keys: std::ops::Range<u32>) -> Vec<u8> {
        let mut b = FilterBuilder::new(bits);
        for i in keys {
            b.add_key(&key(i));
        }
        b.finish()
    }

    /// bloom_test.cc `FirstFPs(count)`.
    fn first_fps(r: &FilterReader, count: usize) -> String {
        let fps: Vec<String> = (0..1_000_000u32)
            .filter(|i| r.key_may_match(&key(i + 1_000_000)))
            .take(count)
            .map(|i| i.to_string())
            .collect();
        fps.join(",")
    }

    /// bloom_test.cc `PackedMatches()`.
    fn packed_matches(r: &FilterReader) -> u64 {
        (0..64u32).fold(0, |acc, i| {
            acc | (u64::from(r.key_may_match(&key(i + 12345))) << i)
        })
    }

    #[test]
    fn num_probes_table() {
        let millibits = [
            1000, 2080, 2081, 3580, 5000, 5100, 6640, 8000, 8300, 10000, 10070, 10499, 11720,
            14000, 14001, 16000, 18300, 22001, 25501, 28000, 28001, 50000, 50001, 100000,
        ];
        let probes = [
            1, 1, 2, 2, 3, 3, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 10, 11, 12, 12, 13, 23, 24, 24,
        ];
        for (m, p) in millibits.into_iter().zip(probes) {
            assert_eq!(choose_num_probes(m), p, "{m}");
        }
        let (nan, ninf) = (f64::NAN, f64::NEG_INFINITY);
        let bits = [10.0, 9.5, 10.499, 1.234, 99.999, 1234.0, nan, ninf];
        let want = [10000, 9500, 10499, 1234, 99999, 100000, 100000, 1000];
        for (b, w) in bits.into_iter().zip(want) {
            assert_eq!(millibits_for(b), w, "{b}");
        }
    }

    /// docs/FORMATS.md §10.3 / bloom_test.cc `FullBloomTest.Schema`, 87 keys.
    #[test]
    fn golden_87_keys() {
        let block = build(5.0, 0..87);
        assert_eq!(block.len(), 69);
        assert_eq!(&block[64..], &[0xff, 0x00, 0x03, 0x00, 0x00]);
        assert_eq!(
            &block[..16],
            &[
                0x12, 0x21, 0x25, 0x38, 0xbe, 0xb4, 0x3c, 0x70, 0xc6, 0xe9, 0x22, 0xc8, 0x04, 0xd7,
                0x41, 0x14
            ]
        );
        assert_eq!(hash32(&block, 0xbc9f_1d34), 4130687756);
        let r = FilterReader::new(block);
        assert_eq!(first_fps(&r, 10), "31,38,40,43,61,83,86,112,125,131");
    }

    /// bloom_test.cc `FullBloomTest.Schema`, 2087-key cases (FastLocalBloom).
    #[test]
    fn golden_2087_keys() {
        type Case = (f64, std::ops::Range<u32>, u32, u32, usize, &'static str);
        #[rustfmt::skip]
        let cases: &[Case] = &[
            (2.0, 0..2087, 1, 3817481309, 10, "11,13,17,25,29,30,35,37,45,53"),
            (3.0, 0..2087, 2, 2807269961, 10, "4,15,17,24,27,28,29,53,63,70"),
            (5.0, 0..2087, 3, 204628445, 10, "15,24,29,39,53,87,89,100,103,104"),
            (8.0, 0..2087, 5, 355564975, 10, "16,60,66,126,220,238,244,256,265,287"),
            (9.0, 0..2087, 6, 2137566013, 9, "156,367,791,872,945,1015,1139,1159,1265"),
            (11.0, 0..2087, 7, 2561502687, 10, "34,74,130,236,643,882,962,1015,1035,1110"),
            (14.0, 0..2087, 8, 3709876890, 9, "130,240,522,565,989,2002,2526,3147,3543"),
            (16.0, 0..2087, 9, 1087138490, 8, "3299,3611,3916,6620,7822,8079,8482,8942"),
            (10.0, 0..2087, 6, 2498541272, 9, "16,126,133,422,466,472,813,1002,1035"),
            (10.0, 1..2087, 6, 2058382345, 9, "16,126,133,422,466,472,813,1002,1035"),
            (10.0, 1..2088, 6, 23699164, 9, "16,126,133,422,466,472,813,1002,1035"),
            (9.5, 1..2088, 6, 3166884174, 9, "126,156,367,444,458,791,813,976,1015"),
            (10.499, 1..2088, 7, 4098502778, 9, "16,236,240,472,1015,1045,1111,1409,1465"),
        ];
        for (bits, keys, probes, h, n, fps) in cases {
            let block = build(*bits, keys.clone());
            assert_eq!(block[block.len() - 3], *probes as u8, "{bits}");
            assert_eq!(hash32(&block, 0xbc9f_1d34), *h, "{bits} {keys:?}");
            let r = FilterReader::new(block);
            assert_eq!(first_fps(&r, *n), *fps, "{bits} {keys:?}");
            for i in keys.clone() {
                assert!(r.key_may_match(&key(i)));
            }
        }
    }

    /// bloom_test.cc `RawFilterTester::ResetWeirdFill` (the block is the tail
    /// of a 3000-byte buffer).
    fn weird_fill(len: usize, num_lines: u32, marker: u8) -> Vec<u8> {
        let mut buf: Vec<u8> = (0..3000u32)
            .map(|i| (0x7b7b_u32 >> (i % 7)) as u8)
            .collect();
        buf[2995] = marker;
        buf[2996..].copy_from_slice(&num_lines.to_le_bytes());
        buf.split_off(3000 - 5 - len)
    }

    /// bloom_test.cc `FullBloomTest.RawSchema` (legacy and FastLocalBloom).
    #[test]
    fn raw_schema() {
        let cases = [
            (256, 1, 2, 11384799501900898790u64), // legacy, one 256-byte line
            (256, 2, 2, 10157853359773492589),    // legacy, two 128-byte lines
            (256, 4, 2, 7123594913907464682),     // legacy, four 64-byte lines
            (256, 2 << 8, 255, 9957045189927952471), // FastLocalBloom, 2 probes
        ];
        for (len, lines, marker, want) in cases {
            let r = FilterReader::new(weird_fill(len, lines, marker));
            assert_eq!(packed_matches(&r), want, "{len} {lines} {marker}");
        }
    }

    /// bloom_test.cc `FullBloomTest.CorruptFilters` (Bloom parts).
    #[test]
    fn corrupt_filters() {
        let raw = |len: usize, lines: u32, probes: u8, fill: bool| {
            let mut v = vec![if fill { 0xff } else { 0 }; len];
            v.push(probes);
            v.extend_from_slice(&lines.to_le_bytes());
            FilterReader::new(v)
        };
        let check = |r: &FilterReader, want: bool| {
            assert_eq!(r.key_may_match(b"hello"), want, "{r:?}");
            assert_eq!(r.key_may_match(b"world"), want, "{r:?}");
        };
        for fill in [false, true] {
            check(&raw(64, 1, 6, fill), fill);
            check(&raw(64 * 3, 3, 6, fill), fill);
            check(&raw(256 * 3, 3, 6, fill), fill);
            check(&raw(64, 1, 30, fill), fill);
            check(&raw(64, 1, 1, fill), fill);
            check(&raw(64, 1, 0, fill), true);
            check(&raw(0, 0, 6, fill), false);
            check(&raw(0, 37, 6, fill), false);
            check(&raw(0, 0, 0, fill), false);
            check(&raw(64, 0, 6, fill), true);
            check(&raw(4, 3, 6, fill), true);
            check(&raw(97 * 3, 3, 6, fill), true);
            check(&raw(65 * 3, 3, 6, fill), true);
            check(&raw(64, 1, 31, fill), fill);
            check(&raw(64, 1, 127, fill), fill);
            check(&raw(64, 1, 128, fill), true);
            check(&raw(64, 1, 253, fill), true);
            check(&raw(64, 6 << 8, 255, fill), fill);
            check(&raw(64, (6 << 8) | 1, 255, fill), true);
            check(&raw(64, (6 << 8) | (1 << 16), 255, fill), true);
            check(&raw(64, (6 << 8) | (1 << 24), 255, fill), true);
            check(&raw(64, 30 << 8, 255, fill), fill);
            for p in [31, 33, 66, 130] {
                check(&raw(64, p << 8, 255, fill), true);
            }
            // Ribbon with fewer than two blocks: RocksDB answers true.
            check(&raw(128, (1 << 8) + 123, 254, fill), true);
            check(&raw(128, 123, 254, fill), true);
            assert!(matches!(
                raw(128, (2 << 8) + 123, 254, fill).kind,
                Kind::Ribbon(_)
            ));
        }
        for short in [&[][..], &[0xff], &[0xff, 0, 6, 0, 0]] {
            check(&FilterReader::new(short.to_vec()), false);
        }
    }

    /// A Ribbon filter RocksDB 7.8.3 built (`db_bench --benchmarks=fillseq
    /// --num=1500 --use_ribbon_filter=1 --bloom_bits=10`, the filter block
    /// of its table, kept in the fuzz corpus): every key it was built from
    /// matches (bit-exact queries), and about 1% of others do.
    #[test]
    fn rocksdb_ribbon_filter_test_vector() {
        let block = include_bytes!("../../../../fuzz/corpus/filter/rocksdb-ribbon.bin");
        let r = FilterReader::new(block.to_vec());
        assert!(matches!(r.kind, Kind::Ribbon(_)), "{r:?}");
        let key = |i: u64| {
            let mut k = i.to_be_bytes().to_vec();
            k.extend_from_slice(b"00000000");
            k
        };
        assert!((0..1500).all(|i| r.key_may_match(&key(i))));
        // Strata's builder makes the same block from the same keys: same
        // size, seed and solution bits.
        let mut b = FilterBuilder::new_ribbon(10.0);
        for i in 0..1500 {
            b.add_key(&key(i));
        }
        assert_eq!(b.finish(), block.to_vec());
        let fp = (10_000..30_000)
            .filter(|&i| r.key_may_match(&key(i)))
            .count();
        assert!(fp > 20 && fp < 600, "{fp} false positives in 20000");
    }

    /// The legacy Bloom writer (format_version < 5): every added key
    /// matches, the false-positive rate is what 10 bits/key give, and the
    /// layout is RocksDB's (odd line count, probes and lines in the
    /// trailer).
    #[test]
    fn legacy_builder_roundtrip() {
        let mut b = FilterBuilder::new_legacy(10.0);
        for i in 0..5000u32 {
            b.add_key(&key(i));
        }
        let block = b.finish();
        let len = block.len() - METADATA_LEN;
        let lines = u32::from_le_bytes(block[len + 1..].try_into().unwrap());
        assert_eq!(block[len], 6, "10 bits/key: 6 probes");
        assert_eq!(lines % 2, 1);
        assert_eq!(len, lines as usize * 64);
        assert_eq!(lines, (5000u32 * 10).div_ceil(512) | 1);
        let r = FilterReader::new(block);
        assert!(matches!(r.kind, Kind::LegacyBloom { .. }), "{r:?}");
        assert!((0..5000).all(|i| r.key_may_match(&key(i))));
        let fp = (100_000..110_000u32)
            .filter(|&i| r.key_may_match(&key(i)))
            .count();
        assert!(fp < 300, "{fp} false positives in 10000");
    }

    #[test]
    fn empty_builder_and_reset() {
        let mut b = FilterBuilder::new(10.0);
        assert!(b.finish().is_empty());
        assert!(!FilterReader::new(Vec::new()).key_may_match(b"x"));
        b.add_key(b"a");
        b.add_key(b"a");
        b.add_key(b"b");
        b.add_key(b"a");
        assert_eq!(b.num_added(), 3);
        let block = b.finish();
        assert_eq!(block.len(), 64 + 5);
        assert_eq!(b.num_added(), 0);
        assert!(b.finish().is_empty());
        let r = FilterReader::new(block);
        assert!(r.key_may_match(b"a") && r.key_may_match(b"b"));
        assert!(r.hash_may_match(xxph3_64(b"a")));
    }

    #[test]
    fn sizes() {
        let b = FilterBuilder::new(10.0);
        assert_eq!(b.filter_len(1), 64);
        assert_eq!(b.filter_len(51), 64);
        assert_eq!(b.filter_len(52), 128);
        assert_eq!(b.filter_len(10_000), 12_544);
        assert_eq!(b.filter_len(usize::MAX), MAX_LEN as usize);
    }

    #[test]
    fn fp_rate_near_one_percent() {
        let mut b = FilterBuilder::new(10.0);
        for i in 0..10_000u32 {
            b.add_key(format!("key{i:08}").as_bytes());
        }
        let r = FilterReader::new(b.finish());
        for i in 0..10_000u32 {
            assert!(r.key_may_match(format!("key{i:08}").as_bytes()));
        }
        let fps = (0..100_000u32)
            .filter(|i| r.key_may_match(format!("other{i:08}").as_bytes()))
            .count();
        let rate = fps as f64 / 100_000.0;
        assert!((0.005..0.015).contains(&rate), "fp rate {rate}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn no_false_negatives(
            keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 1..300),
            bits in 1.0f64..30.0,
        ) {
            let mut b = FilterBuilder::new(bits);
            for k in &keys {
                b.add_key(k);
            }
            let r = FilterReader::new(b.finish());
            for k in &keys {
                prop_assert!(r.key_may_match(k));
            }
        }

        #[test]
        fn reader_never_panics(block in proptest::collection::vec(any::<u8>(), 0..600),
                               tail in proptest::collection::vec(any::<u8>(), 5),
                               key in proptest::collection::vec(any::<u8>(), 0..40)) {
            for data in [block.clone(), [block, tail].concat()] {
                let r = FilterReader::new(data);
                let _ = r.key_may_match(&key);
                let _ = r.hash_may_match(xxph3_64(&key));
            }
        }

        #[test]
        fn reader_never_panics_on_bloom_trailers(len in 0usize..300, probes in any::<u8>(),
                                                 b1 in 0u8..2, lines in any::<u32>(),
                                                 key in any::<u32>()) {
            let mut v = vec![0x5a; len];
            v.extend_from_slice(&[0xff, b1, probes, 0, 0]);
            let _ = FilterReader::new(v.clone()).key_may_match(&key.to_le_bytes());
            v.truncate(len);
            v.push(probes & 0x7f);
            v.extend_from_slice(&lines.to_le_bytes());
            let _ = FilterReader::new(v).key_may_match(&key.to_le_bytes());
        }

        #[test]
        fn reader_never_panics_on_ribbon_trailers(len in 0usize..3000, seed in any::<u8>(),
                                                  blocks in 0u32..(1 << 24), fill in any::<u8>(),
                                                  key in any::<u32>()) {
            let mut v = vec![fill; len];
            v.push(0xfe);
            v.push(seed);
            v.extend_from_slice(&blocks.to_le_bytes()[..3]);
            let r = FilterReader::new(v);
            let _ = r.key_may_match(&key.to_le_bytes());
            let _ = r.hash_may_match(u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
    }
}
