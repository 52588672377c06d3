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
        self.buf.len() + self.restarts.len() * 4 + 4
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
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Appends the restart array and returns the finished block.
    pub fn finish(&mut self) -> &[u8] {
        if !self.finished {
            for &r in &self.restarts {
                put_fixed32(&mut self.buf, r);
            }
            put_fixed32(&mut self.buf, self.restarts.len() as u32);
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

    #[test]
    fn empty_block() {
        let mut b = BlockBuilder::new(1);
        assert_eq!(b.finish(), [0, 0, 0, 0, 1, 0, 0, 0]);
    }
}
