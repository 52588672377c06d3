//! PlainTable's prefix hash index (RocksDB's `PlainTableIndex` and
//! `PlainTableIndexBuilder`, `table/plain/plain_table_index.cc`).
//!
//! Layout (the `PlainTableIndexBlock` meta block when
//! `store_index_in_file`, else built in memory at open):
//! ```text
//! index_size: varint32 | num_prefixes: varint32
//! bucket[index_size]: fixed32   (1<<31 | sub-index offset, a file
//!                                offset, or 0x7fffffff: empty)
//! sub_index: per bucket with >1 records: count varint32, offsets fixed32
//! ```
//! A record is the file offset of a seekable entry: the first entry of
//! each prefix and then every `index_sparseness`-th entry of the prefix.
//! Records of one bucket are in file (key) order. Without a prefix
//! extractor every key has the empty prefix and there is one bucket: a
//! sparse binary-search index over the whole file.
//!
//! Invariant: every offset a decoded index returns is below the data
//! size it was checked against at open ([`PlainIndex::parse`]).

use crate::util::coding::{decode_fixed32, get_varint32, put_fixed32, put_varint32};
use crate::util::hash::hash32;

/// Meta-block name of a stored index.
pub const INDEX_BLOCK: &str = "PlainTableIndexBlock";
/// Bucket value of an empty bucket (RocksDB's `kMaxFileSize`).
const EMPTY_BUCKET: u32 = 0x7fff_ffff;
const SUB_INDEX_FLAG: u32 = 0x8000_0000;

/// RocksDB's `GetSliceHash` (the prefix or key hash of PlainTable).
pub fn slice_hash(s: &[u8]) -> u32 {
    hash32(s, 397)
}

/// Where a lookup continues after the bucket.
#[derive(Debug, PartialEq, Eq)]
pub enum Bucket<'a> {
    /// No record hashes here: the prefix is absent.
    Empty,
    /// Exactly one record, at this file offset.
    Offset(u32),
    /// Several records (file offsets, in key order; fixed32 each).
    Records(&'a [u8]),
}

/// A decoded index over a table's data.
#[derive(Clone, Debug)]
pub struct PlainIndex {
    raw: crate::util::huge_bytes::HugeBytes,
    index_size: u32,
    num_prefixes: u32,
    /// Where the bucket array starts in `raw`.
    buckets_at: usize,
    /// Where the sub-index starts in `raw`.
    sub_at: usize,
}

impl PlainIndex {
    /// Decodes `raw` and checks every offset it holds against
    /// `data_size`; `None` if anything is out of shape.
    pub fn parse(raw: Vec<u8>, data_size: u32) -> Option<PlainIndex> {
        let (index_size, n1) = get_varint32(&raw)?;
        let (num_prefixes, n2) = get_varint32(raw.get(n1..)?)?;
        let buckets_at = n1 + n2;
        let sub_at = buckets_at.checked_add((index_size as usize).checked_mul(4)?)?;
        if index_size == 0 || sub_at > raw.len() {
            return None;
        }
        let idx = PlainIndex {
            raw: crate::util::huge_bytes::HugeBytes::from_vec(raw),
            index_size,
            num_prefixes,
            buckets_at,
            sub_at,
        };
        for b in 0..index_size {
            match idx.bucket_at(b)? {
                Bucket::Empty => {}
                Bucket::Offset(o) if o < data_size => {}
                Bucket::Offset(_) => return None,
                Bucket::Records(r) => {
                    if r.chunks_exact(4)
                        .any(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) >= data_size)
                    {
                        return None;
                    }
                }
            }
        }
        Some(idx)
    }

    pub fn num_prefixes(&self) -> u32 {
        self.num_prefixes
    }

    /// Bytes this index holds.
    pub fn size(&self) -> usize {
        self.raw.len()
    }

    /// Starts loading the bucket `hash` falls into.
    pub fn prefetch(&self, hash: u32) {
        let at = self.buckets_at + 4 * (hash % self.index_size) as usize;
        crate::util::prefetch::prefetch(self.raw.as_ptr().wrapping_add(at));
    }

    /// The bucket `hash` falls into.
    pub fn bucket(&self, hash: u32) -> Bucket<'_> {
        // `parse` checked every bucket.
        self.bucket_at(hash % self.index_size)
            .unwrap_or(Bucket::Empty)
    }

    fn bucket_at(&self, b: u32) -> Option<Bucket<'_>> {
        let v = decode_fixed32(&self.raw, self.buckets_at + 4 * b as usize)?;
        if v & SUB_INDEX_FLAG != 0 {
            let at = self.sub_at.checked_add((v ^ SUB_INDEX_FLAG) as usize)?;
            let (count, n) = get_varint32(self.raw.get(at..)?)?;
            let start = at + n;
            let end = start.checked_add((count as usize).checked_mul(4)?)?;
            return Some(Bucket::Records(self.raw.get(start..end)?));
        }
        Some(if v >= EMPTY_BUCKET {
            Bucket::Empty
        } else {
            Bucket::Offset(v)
        })
    }
}

/// Collects index records while a table is written or scanned.
#[derive(Debug)]
pub struct PlainIndexBuilder {
    /// 0: one bucket (total order).
    hash_table_ratio: f64,
    prefix_mode: bool,
    index_sparseness: usize,
    records: Vec<(u32, u32)>,
    num_prefixes: u32,
    keys_in_prefix: usize,
    prev_prefix: Vec<u8>,
    prev_hash: u32,
    due: bool,
}

impl PlainIndexBuilder {
    /// `prefix_mode`: keys are hashed by a prefix extractor's prefix
    /// (otherwise all share the empty prefix and one bucket is built).
    pub fn new(prefix_mode: bool, hash_table_ratio: f64, index_sparseness: usize) -> Self {
        PlainIndexBuilder {
            hash_table_ratio,
            prefix_mode,
            index_sparseness,
            records: Vec::new(),
            num_prefixes: 0,
            keys_in_prefix: 0,
            prev_prefix: Vec::new(),
            prev_hash: 0,
            due: false,
        }
    }

    /// Adds the entry at `offset` whose key has `prefix`. `seekable`:
    /// the entry can be decoded on its own (a full key); a record that
    /// falls due on an entry that is not waits for the next one that is
    /// (a writer's entries are always aligned, as RocksDB's encoder
    /// aligns them).
    pub fn add(&mut self, prefix: &[u8], offset: u32, seekable: bool) {
        if self.num_prefixes == 0 || self.prev_prefix != prefix {
            self.num_prefixes += 1;
            self.keys_in_prefix = 0;
            self.prev_prefix.clear();
            self.prev_prefix.extend_from_slice(prefix);
            self.prev_hash = slice_hash(prefix);
            self.due = true;
        }
        if self.due && seekable {
            self.records.push((self.prev_hash, offset));
            self.due = false;
        }
        self.keys_in_prefix += 1;
        if self.index_sparseness == 0 || self.keys_in_prefix % self.index_sparseness == 0 {
            self.due = true;
        }
    }

    pub fn num_prefixes(&self) -> u32 {
        self.num_prefixes
    }

    /// The encoded index (RocksDB's `Finish`).
    pub fn finish(self) -> Vec<u8> {
        let index_size = if !self.prefix_mode || self.hash_table_ratio <= 0.0 {
            1
        } else {
            // RocksDB multiplies by the inverse (same rounding).
            (f64::from(self.num_prefixes) * (1.0 / self.hash_table_ratio)) as u32 + 1
        };
        let mut per_bucket: Vec<Vec<u32>> = vec![Vec::new(); index_size as usize];
        for &(hash, offset) in &self.records {
            per_bucket[(hash % index_size) as usize].push(offset);
        }
        let mut out = Vec::new();
        put_varint32(&mut out, index_size);
        put_varint32(&mut out, self.num_prefixes);
        let mut sub = Vec::new();
        for offsets in &per_bucket {
            match offsets.len() {
                0 => put_fixed32(&mut out, EMPTY_BUCKET),
                1 => put_fixed32(&mut out, offsets[0]),
                n => {
                    put_fixed32(&mut out, sub.len() as u32 | SUB_INDEX_FLAG);
                    put_varint32(&mut sub, n as u32);
                    for &o in offsets {
                        put_fixed32(&mut sub, o);
                    }
                }
            }
        }
        out.extend_from_slice(&sub);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_the_first_key_of_each_prefix_and_every_nth() {
        let mut b = PlainIndexBuilder::new(true, 0.75, 2);
        // Prefixes a (3 keys), b (1 key), c (2 keys) at offsets 0, 10, ...
        let keys = [b"a", b"a", b"a", b"b", b"c", b"c"];
        for (i, p) in keys.iter().enumerate() {
            b.add(*p, 10 * i as u32, true);
        }
        assert_eq!(b.num_prefixes(), 3);
        let idx = PlainIndex::parse(b.finish(), 100).unwrap();
        let offsets = |p: &[u8]| match idx.bucket(slice_hash(p)) {
            Bucket::Empty => vec![],
            Bucket::Offset(o) => vec![o],
            Bucket::Records(r) => r
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        };
        assert!(offsets(b"a").contains(&0) && offsets(b"a").contains(&20));
        assert!(offsets(b"b").contains(&30));
        assert!(offsets(b"c").contains(&40));
        // Offsets past the data are refused.
        let mut b = PlainIndexBuilder::new(false, 0.0, 16);
        b.add(b"", 500, true);
        assert!(PlainIndex::parse(b.finish(), 100).is_none());
        assert!(PlainIndex::parse(vec![0x80], 100).is_none());
    }

    #[test]
    fn total_order_has_one_bucket() {
        let mut b = PlainIndexBuilder::new(false, 0.75, 16);
        for i in 0..40u32 {
            b.add(b"", i * 7, true);
        }
        let idx = PlainIndex::parse(b.finish(), 1000).unwrap();
        match idx.bucket(12345) {
            Bucket::Records(r) => assert_eq!(r.len(), 3 * 4), // entries 0, 16, 32
            other => panic!("{other:?}"),
        }
    }
}
