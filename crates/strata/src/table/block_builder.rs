//! Builds one block: prefix-compressed entries, then the restart array and
//! its count (RocksDB `table/block_based/block_builder.cc`).
//!
//! ```text
//! entry := shared: varint32 | non_shared: varint32 | value_len: varint32
//!          | key_delta | value
//! block := entry* | restart: fixed32 * num_restarts | num_restarts: fixed32
//! ```
//! With value delta encoding (index blocks of format_version >= 4) an
//! entry has no `value_len`: a restart entry (`shared == 0`) holds the
//! whole encoded block handle, the others only the signed size delta.
//!
//! A data block may end with a hash index (RocksDB's
//! `DataBlockHashIndexBuilder`): one byte per bucket naming the restart
//! interval of the user keys hashed there (255 none, 254 several), then the
//! bucket count (fixed16), and the top bit of the footer set.
//!
//! Invariants: keys are added in strictly increasing order (checked by the
//! caller's comparator in debug builds); every `restart_interval`-th entry
//! stores its whole key (`shared == 0`) and is listed in the restart array;
//! the first entry is always a restart point.

use crate::util::coding::{put_fixed32, put_varint32};

fn varint_len(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Accumulates entries of one block.
#[derive(Debug, Clone)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    num_entries: usize,
    finished: bool,
    /// Entries carry no value length; non-restart entries store the
    /// delta value (RocksDB's `use_value_delta_encoding`).
    value_delta: bool,
    /// The data block hash index being built, if any.
    hash_index: Option<HashIndexBuilder>,
}

/// RocksDB's `DataBlockHashIndexBuilder`.
#[derive(Debug, Clone)]
struct HashIndexBuilder {
    buckets_per_key: f64,
    estimated_buckets: f64,
    /// (hash of a user key, its restart interval).
    entries: Vec<(u32, u8)>,
    /// False once a restart index is past what a bucket holds.
    valid: bool,
}

/// Bucket values: no key, keys of several restart intervals.
const NO_ENTRY: u8 = 255;
const COLLISION: u8 = 254;
/// The largest restart index a bucket holds.
const MAX_RESTART_FOR_HASH_INDEX: usize = 253;
/// Blocks past this size get no hash index.
const MAX_BLOCK_SIZE_FOR_HASH_INDEX: usize = 1 << 16;
/// `GetSliceHash`'s seed.
const HASH_INDEX_SEED: u32 = 397;

impl HashIndexBuilder {
    fn new(util_ratio: f64) -> Self {
        let ratio = if util_ratio > 0.0 { util_ratio } else { 0.75 };
        HashIndexBuilder {
            buckets_per_key: 1.0 / ratio,
            estimated_buckets: 0.0,
            entries: Vec::new(),
            valid: true,
        }
    }

    fn num_buckets(&self) -> u16 {
        (self.estimated_buckets as u16) | 1
    }

    /// Bytes the index would add (`EstimateSize`).
    fn estimate_size(&self) -> usize {
        if self.valid {
            2 + usize::from(self.num_buckets())
        } else {
            0
        }
    }

    fn add(&mut self, user_key: &[u8], restart_index: usize) {
        if !self.valid {
            return;
        }
        if restart_index > MAX_RESTART_FOR_HASH_INDEX {
            self.valid = false;
            return;
        }
        self.entries.push((
            crate::util::hash::hash32(user_key, HASH_INDEX_SEED),
            restart_index as u8,
        ));
        self.estimated_buckets += self.buckets_per_key;
    }

    fn finish(&self, buf: &mut Vec<u8>) {
        let n = self.num_buckets().max(1);
        let mut buckets = vec![NO_ENTRY; usize::from(n)];
        for &(h, restart) in &self.entries {
            let b = &mut buckets[(h % u32::from(n)) as usize];
            if *b == NO_ENTRY {
                *b = restart;
            } else if *b != restart {
                *b = COLLISION;
            }
        }
        buf.extend_from_slice(&buckets);
        buf.extend_from_slice(&n.to_le_bytes());
    }

    fn reset(&mut self) {
        self.estimated_buckets = 0.0;
        self.entries.clear();
        self.valid = true;
    }
}

impl BlockBuilder {
    /// REQUIRES: `restart_interval >= 1`.
    pub fn new(restart_interval: usize) -> Self {
        debug_assert!(restart_interval >= 1);
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            num_entries: 0,
            finished: false,
            value_delta: false,
            hash_index: None,
        }
    }

    /// A data block builder that ends blocks with a hash index of user
    /// keys at `util_ratio` keys per bucket (RocksDB's
    /// kDataBlockBinaryAndHash).
    pub fn with_hash_index(restart_interval: usize, util_ratio: f64) -> Self {
        BlockBuilder {
            hash_index: Some(HashIndexBuilder::new(util_ratio)),
            ..Self::new(restart_interval)
        }
    }

    /// A builder whose entries use value delta encoding (index blocks of
    /// format_version >= 4): add entries with [`BlockBuilder::add_delta`].
    pub fn with_value_delta(restart_interval: usize) -> Self {
        BlockBuilder {
            value_delta: true,
            ..Self::new(restart_interval)
        }
    }

    /// Forgets all entries, keeping allocations.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.num_entries = 0;
        self.finished = false;
        // As RocksDB: once a block had too many restarts for a hash index,
        // the rest of the table has none (its size estimates included).
        if let Some(h) = self.hash_index.as_mut().filter(|h| h.valid) {
            h.reset();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    pub fn num_entries(&self) -> usize {
        self.num_entries
    }

    /// The last key added.
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Size the block would have if finished now.
    pub fn current_size_estimate(&self) -> usize {
        self.buf.len()
            + self.restarts.len() * 4
            + 4
            + self
                .hash_index
                .as_ref()
                .map_or(0, HashIndexBuilder::estimate_size)
    }

    /// Size estimate after adding an entry of these sizes, computed as
    /// RocksDB's `EstimateSizeAfterKV` (whole key, 4 bytes for the shared
    /// length, varints for the lengths) so blocks are cut where RocksDB
    /// cuts them.
    pub fn estimate_size_after(&self, key_len: usize, value_len: usize) -> usize {
        let restart = self.counter >= self.restart_interval;
        let mut est = self.current_size_estimate() + key_len + 4 + varint_len(key_len);
        if !self.value_delta || restart {
            est += value_len + varint_len(value_len);
        } else {
            est += value_len / 2;
        }
        if restart {
            est += 4;
        }
        est
    }

    /// Appends an entry. REQUIRES: not finished; `key` sorts after the last
    /// key; the builder does not use value delta encoding.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(!self.value_delta);
        self.add_entry(key, value, value);
    }

    /// Appends an entry of a value-delta-encoded block: `value` is stored
    /// at restart points, `delta` elsewhere.
    pub fn add_delta(&mut self, key: &[u8], value: &[u8], delta: &[u8]) {
        debug_assert!(self.value_delta);
        self.add_entry(key, value, delta);
    }

    fn add_entry(&mut self, key: &[u8], value: &[u8], delta: &[u8]) {
        debug_assert!(!self.finished);
        let shared = if self.counter >= self.restart_interval {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        } else {
            self.last_key
                .iter()
                .zip(key.iter())
                .take_while(|(a, b)| a == b)
                .count()
        };
        let non_shared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, non_shared as u32);
        if !self.value_delta {
            put_varint32(&mut self.buf, value.len() as u32);
        }
        self.buf.extend_from_slice(&key[shared..]);
        // RocksDB stores the delta only after a shared key prefix, so a
        // reader tells the forms apart by `shared`.
        if self.value_delta && shared != 0 {
            self.buf.extend_from_slice(delta);
        } else {
            self.buf.extend_from_slice(value);
        }
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        if let Some(h) = &mut self.hash_index {
            h.add(
                crate::format::dbformat::extract_user_key(key),
                self.restarts.len() - 1,
            );
        }
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Appends the restart array and returns the finished block.
    pub fn finish(&mut self) -> &[u8] {
        if !self.finished {
            let with_hash = self.hash_index.as_ref().is_some_and(|h| h.valid)
                && self.current_size_estimate() <= MAX_BLOCK_SIZE_FOR_HASH_INDEX;
            for &r in &self.restarts {
                put_fixed32(&mut self.buf, r);
            }
            let mut footer = self.restarts.len() as u32;
            if with_hash && let Some(h) = &self.hash_index {
                h.finish(&mut self.buf);
                footer |= 1 << 31;
            }
            put_fixed32(&mut self.buf, footer);
            self.finished = true;
        }
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_md_one_entry_block() {
        let mut b = BlockBuilder::new(16);
        let key = crate::format::make_internal_key(b"a", 1, crate::format::ValueType::Value);
        b.add(&key, b"1");
        let want = [
            0x00, 0x09, 0x01, 0x61, 0x01, 0x01, 0, 0, 0, 0, 0, 0, 0x31, 0, 0, 0, 0, 0x01, 0, 0, 0,
        ];
        assert_eq!(b.finish(), want);
    }

    /// A data block hash index: every user key's bucket names its restart
    /// interval (or a collision), the bucket count is odd, the footer's top
    /// bit is set, and readers still parse the block.
    #[test]
    fn data_block_hash_index_layout() {
        let mut b = BlockBuilder::with_hash_index(4, 0.75);
        let keys: Vec<Vec<u8>> = (0..40u32)
            .map(|i| {
                crate::format::make_internal_key(
                    format!("key{i:03}").as_bytes(),
                    7,
                    crate::format::ValueType::Value,
                )
            })
            .collect();
        for k in &keys {
            b.add(k, b"value");
        }
        let est = b.current_size_estimate();
        let block = b.finish().to_vec();
        assert_eq!(block.len(), est);
        let footer = u32::from_le_bytes(block[block.len() - 4..].try_into().unwrap());
        assert_eq!(footer, (1 << 31) | 10, "10 restarts, hash index bit");
        let n = u16::from_le_bytes(block[block.len() - 6..block.len() - 4].try_into().unwrap());
        assert_eq!(n, (40.0f64 / 0.75) as u16 | 1);
        let buckets = &block[block.len() - 6 - usize::from(n)..block.len() - 6];
        for (i, k) in keys.iter().enumerate() {
            let h = crate::util::hash::hash32(&k[..k.len() - 8], HASH_INDEX_SEED);
            let got = buckets[(h % u32::from(n)) as usize];
            assert!(
                got == (i / 4) as u8 || got == COLLISION,
                "key {i}: bucket {got}"
            );
        }
        let parsed = std::sync::Arc::new(super::super::block::Block::from_vec(block).unwrap());
        assert_eq!(parsed.num_restarts(), 10);
        // More restart intervals than a bucket names: no hash index.
        let mut b = BlockBuilder::with_hash_index(1, 0.75);
        for i in 0..300u32 {
            b.add(format!("k{i:05}").as_bytes(), b"");
        }
        let block = b.finish();
        let footer = u32::from_le_bytes(block[block.len() - 4..].try_into().unwrap());
        assert_eq!(footer, 300);
    }

    #[test]
    fn empty_block() {
        let mut b = BlockBuilder::new(1);
        assert_eq!(b.finish(), [0, 0, 0, 0, 1, 0, 0, 0]);
    }
}
