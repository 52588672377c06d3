//! The index block of a block-based table, written as RocksDB's
//! `ShortenedIndexBuilder` writes it (`kBinarySearch`): one entry per data
//! block, keyed by a separator between that block's last key and the next
//! block's first key, valued by the block's handle.
//!
//! Two forms depend on the table's format_version:
//! * format_version >= 3: keys are *user* keys (the separator's user key)
//!   unless two adjacent blocks split one user key's versions, in which
//!   case a user key cannot tell them apart and the whole index keeps
//!   internal keys (`rocksdb.index.key.is.user.key` says which). Both forms
//!   are built until that is known, as RocksDB does.
//! * format_version >= 4: values are delta-encoded
//!   (`rocksdb.index.value.is.delta.encoded`): no value length, and after a
//!   restart point only the signed size difference to the previous handle
//!   (the offset follows from the previous handle).
//!
//! Invariant: handles are added in file order, each block directly after
//! the previous one (what makes the offset implicit).

use super::block_builder::BlockBuilder;
use super::footer::{BLOCK_TRAILER_SIZE, BlockHandle};
use crate::format::dbformat::extract_user_key;
use crate::util::coding::{put_length_prefixed_slice, put_varsigned64};

/// Builds one index block.
#[derive(Debug)]
pub struct IndexBuilder {
    internal: BlockBuilder,
    /// The user-key form, until a boundary splits a user key (`None` then,
    /// and always before format_version 3).
    user: Option<BlockBuilder>,
    value_delta: bool,
    last_handle: Option<BlockHandle>,
    value_buf: Vec<u8>,
    delta_buf: Vec<u8>,
}

/// A finished index block and how its entries are encoded.
#[derive(Debug)]
pub struct FinishedIndex {
    pub block: Vec<u8>,
    pub key_is_user_key: bool,
    pub value_is_delta_encoded: bool,
}

impl IndexBuilder {
    /// An index for a table of `format_version`, with a restart point every
    /// `restart_interval` entries (RocksDB's `index_block_restart_interval`).
    pub fn new(format_version: u32, restart_interval: usize) -> Self {
        let value_delta = format_version >= 4;
        let block = || {
            if value_delta {
                BlockBuilder::with_value_delta(restart_interval)
            } else {
                BlockBuilder::new(restart_interval)
            }
        };
        IndexBuilder {
            internal: block(),
            user: (format_version >= 3).then(block),
            value_delta,
            last_handle: None,
            value_buf: Vec::new(),
            delta_buf: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.internal.is_empty()
    }

    /// Adds the entry of the data block at `handle`, whose keys are at or
    /// below the internal key `separator`. `splits_user_key`: the block's
    /// last key and the next block's first key have the same user key.
    pub fn add(&mut self, separator: &[u8], handle: BlockHandle, splits_user_key: bool) {
        self.add_with_first_key(separator, handle, splits_user_key, None);
    }

    /// As [`add`](Self::add); `first_key` (the block's first internal key,
    /// for `kBinarySearchWithFirstKey`) follows the handle or its delta,
    /// length-prefixed, as RocksDB's `IndexValue::EncodeTo` writes it.
    pub fn add_with_first_key(
        &mut self,
        separator: &[u8],
        handle: BlockHandle,
        splits_user_key: bool,
        first_key: Option<&[u8]>,
    ) {
        if splits_user_key {
            self.user = None;
        }
        self.value_buf.clear();
        handle.encode_to(&mut self.value_buf);
        self.delta_buf.clear();
        if let Some(prev) = self.last_handle {
            debug_assert_eq!(
                prev.offset + prev.size + BLOCK_TRAILER_SIZE as u64,
                handle.offset,
                "index handles are consecutive blocks"
            );
            put_varsigned64(&mut self.delta_buf, handle.size as i64 - prev.size as i64);
        }
        if let Some(k) = first_key {
            put_length_prefixed_slice(&mut self.value_buf, k);
            put_length_prefixed_slice(&mut self.delta_buf, k);
        }
        self.last_handle = Some(handle);
        if self.value_delta {
            self.internal
                .add_delta(separator, &self.value_buf, &self.delta_buf);
            if let Some(u) = &mut self.user {
                u.add_delta(
                    extract_user_key(separator),
                    &self.value_buf,
                    &self.delta_buf,
                );
            }
        } else {
            self.internal.add(separator, &self.value_buf);
            if let Some(u) = &mut self.user {
                u.add(extract_user_key(separator), &self.value_buf);
            }
        }
    }

    /// The finished block: the user-key form when it survived.
    pub fn finish(self) -> FinishedIndex {
        self.finish_with(false)
    }

    /// Size of the block so far, as RocksDB's flush policy measures it
    /// (the internal-key form).
    pub fn size_estimate(&self) -> usize {
        self.internal.current_size_estimate()
    }

    /// Size after one more entry of these sizes.
    pub fn estimate_size_after(&self, key_len: usize, value_len: usize) -> usize {
        self.internal.estimate_size_after(key_len, value_len)
    }

    /// Whether no boundary has split a user key so far.
    pub fn user_keys_possible(&self) -> bool {
        self.user.is_some()
    }

    /// The finished block, with internal keys when `force_internal` (a
    /// partitioned index decides the key form for all its blocks).
    pub fn finish_with(mut self, force_internal: bool) -> FinishedIndex {
        let (block, key_is_user_key) = match &mut self.user {
            Some(u) if !force_internal => (u.finish().to_vec(), true),
            _ => (self.internal.finish().to_vec(), false),
        };
        FinishedIndex {
            block,
            key_is_user_key,
            value_is_delta_encoded: self.value_delta,
        }
    }
}

/// A partitioned index (RocksDB's `PartitionedIndexBuilder`,
/// `kTwoLevelIndexSearch`): index entries go into partitions of about
/// `metadata_block_size` bytes, each an ordinary index block; the
/// top-level index (built by the caller once the partitions are written)
/// maps each partition's last separator to its handle. One key form holds
/// for every block: user keys only if no boundary anywhere split a user
/// key.
#[derive(Debug)]
pub struct PartitionedIndexBuilder {
    format_version: u32,
    restart_interval: usize,
    metadata_block_size: usize,
    deviation_limit: usize,
    done: Vec<(Vec<u8>, IndexBuilder)>,
    current: Option<IndexBuilder>,
    current_last_key: Vec<u8>,
    cut_requested: bool,
}

/// A finished partitioned index: each partition's block with its last
/// separator (an internal key), and the form of every block's keys.
#[derive(Debug)]
pub struct FinishedPartitions {
    pub partitions: Vec<(Vec<u8>, Vec<u8>)>,
    pub key_is_user_key: bool,
    pub value_is_delta_encoded: bool,
}

impl PartitionedIndexBuilder {
    pub fn new(format_version: u32, restart_interval: usize, metadata_block_size: usize) -> Self {
        let metadata_block_size = metadata_block_size.max(1);
        PartitionedIndexBuilder {
            format_version,
            restart_interval,
            metadata_block_size,
            // RocksDB's flush policy with block_size_deviation 10.
            deviation_limit: (metadata_block_size * 90).div_ceil(100),
            done: Vec::new(),
            current: None,
            current_last_key: Vec::new(),
            cut_requested: false,
        }
    }

    /// Asks for a cut at the next entry whatever the partition's size (a
    /// filter partition is full).
    pub fn request_cut(&mut self) {
        self.cut_requested = true;
    }

    /// Adds a data block's entry, first closing the current partition if
    /// it is full or a cut was requested (never for the table's `last`
    /// block). Returns true if a partition was closed.
    pub fn add(
        &mut self,
        separator: &[u8],
        handle: BlockHandle,
        splits_user_key: bool,
        last: bool,
    ) -> bool {
        let mut cut = false;
        if !last && let Some(cur) = &self.current {
            let size = cur.size_estimate();
            let full = size >= self.metadata_block_size
                || (size > self.deviation_limit
                    && cur.estimate_size_after(separator.len(), handle.encode().len())
                        > self.metadata_block_size);
            if full || self.cut_requested {
                if let Some(cur) = self.current.take() {
                    self.done
                        .push((std::mem::take(&mut self.current_last_key), cur));
                }
                self.cut_requested = false;
                cut = true;
            }
        }
        let (fv, ri) = (self.format_version, self.restart_interval);
        self.current
            .get_or_insert_with(|| IndexBuilder::new(fv, ri))
            .add(separator, handle, splits_user_key);
        self.current_last_key.clear();
        self.current_last_key.extend_from_slice(separator);
        cut
    }

    /// The last separator added (the key of the partition being built).
    pub fn partition_key(&self) -> &[u8] {
        &self.current_last_key
    }

    pub fn finish(mut self) -> FinishedPartitions {
        if let Some(cur) = self.current.take() {
            self.done.push((self.current_last_key, cur));
        }
        let user =
            self.format_version >= 3 && self.done.iter().all(|(_, b)| b.user_keys_possible());
        let value_is_delta_encoded = self.format_version >= 4;
        let partitions = self
            .done
            .into_iter()
            .map(|(k, b)| (k, b.finish_with(!user).block))
            .collect();
        FinishedPartitions {
            partitions,
            key_is_user_key: user,
            value_is_delta_encoded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::iterator::InternalIterator;
    use crate::format::{ValueType, make_internal_key};
    use crate::table::block::{Block, KeyOrder};
    use crate::util::comparator::bytewise;

    fn entries(f: &FinishedIndex) -> Vec<(Vec<u8>, BlockHandle)> {
        let b = std::sync::Arc::new(Block::from_vec(f.block.clone()).unwrap());
        let order = if f.key_is_user_key {
            KeyOrder::user(&bytewise())
        } else {
            KeyOrder::Internal(crate::format::dbformat::InternalKeyComparator::new(
                bytewise(),
            ))
        };
        let mut it = b.iter(order, f.value_is_delta_encoded);
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push((it.key().to_vec(), BlockHandle::decode(it.value()).unwrap()));
            it.next();
        }
        it.status().unwrap();
        out
    }

    #[test]
    fn forms_by_format_version_and_split_user_keys() {
        let h = [
            BlockHandle::new(0, 4000),
            BlockHandle::new(4005, 3900),
            BlockHandle::new(7910, 4100),
        ];
        let k = |u: &str, s| make_internal_key(u.as_bytes(), s, ValueType::Value);
        for (fv, interval) in [(2, 1), (3, 1), (4, 1), (5, 1), (5, 4), (6, 16)] {
            let mut b = IndexBuilder::new(fv, interval);
            b.add(&k("b", 9), h[0], false);
            b.add(&k("d", 9), h[1], false);
            b.add(&k("f", 9), h[2], false);
            let f = b.finish();
            assert_eq!(f.key_is_user_key, fv >= 3);
            assert_eq!(f.value_is_delta_encoded, fv >= 4);
            let got = entries(&f);
            let keys: Vec<Vec<u8>> = if fv >= 3 {
                vec![b"b".to_vec(), b"d".to_vec(), b"f".to_vec()]
            } else {
                vec![k("b", 9), k("d", 9), k("f", 9)]
            };
            assert_eq!(got, keys.into_iter().zip(h).collect::<Vec<_>>(), "fv {fv}");
            // A boundary inside one user key's versions forces internal keys.
            let mut b = IndexBuilder::new(fv, interval);
            b.add(&k("b", 9), h[0], false);
            b.add(&k("b", 5), h[1], true);
            b.add(&k("f", 9), h[2], false);
            let f = b.finish();
            assert!(!f.key_is_user_key);
            assert_eq!(entries(&f).len(), 3);
        }
    }

    #[test]
    fn user_key_delta_block_is_rocksdb_bytes() {
        // format_version 5, restart interval 1: shared 0, non_shared, key,
        // whole handle; no value length.
        let mut b = IndexBuilder::new(5, 1);
        b.add(
            &make_internal_key(b"ab", 3, ValueType::Value),
            BlockHandle::new(0, 100),
            false,
        );
        b.add(
            &make_internal_key(b"c", 3, ValueType::Value),
            BlockHandle::new(105, 300),
            false,
        );
        let f = b.finish();
        let want = [
            0, 2, b'a', b'b', 0, 100, // entry 1
            0, 1, b'c', 105, 0xAC, 0x02, // entry 2
            0, 0, 0, 0, 6, 0, 0, 0, 2, 0, 0, 0, // restarts, count
        ];
        assert_eq!(f.block, want);
    }
}

/// The prefix part of a hash-search index (RocksDB's `HashIndexBuilder`):
/// for each run of keys sharing a prefix, the prefix (in
/// `rocksdb.hashindex.prefixes`) and its length, first data block and
/// number of blocks (three varint32s in `rocksdb.hashindex.metadata`).
#[derive(Debug, Default)]
pub struct HashIndexPrefixes {
    prefixes: Vec<u8>,
    metadata: Vec<u8>,
    /// The current run: prefix, first block, blocks.
    pending: Option<(Vec<u8>, u32, u32)>,
}

impl HashIndexPrefixes {
    /// A key with `prefix` was added to data block `block` (the number of
    /// index entries written before it).
    pub fn on_key_added(&mut self, prefix: &[u8], block: u32) {
        match &mut self.pending {
            Some((p, first, n)) if p.as_slice() == prefix => {
                if *first + *n - 1 != block {
                    *n += 1;
                }
            }
            _ => {
                self.flush_pending();
                self.pending = Some((prefix.to_vec(), block, 1));
            }
        }
    }

    fn flush_pending(&mut self) {
        if let Some((p, first, n)) = self.pending.take() {
            self.prefixes.extend_from_slice(&p);
            crate::util::coding::put_varint32(&mut self.metadata, p.len() as u32);
            crate::util::coding::put_varint32(&mut self.metadata, first);
            crate::util::coding::put_varint32(&mut self.metadata, n);
        }
    }

    /// The two meta blocks: prefixes, then metadata.
    pub fn finish(mut self) -> (Vec<u8>, Vec<u8>) {
        self.flush_pending();
        (self.prefixes, self.metadata)
    }
}
