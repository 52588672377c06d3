//! The WriteBatch encoding: the payload of every WAL record, RocksDB's
//! `db/write_batch.cc` layout.
//!
//! ```text
//! WriteBatch := sequence: fixed64 | count: fixed32 | record*
//! ```
//! Invariants: `rep` always holds at least the 12-byte header; `count`
//! equals the number of key-carrying records (put, delete, single delete,
//! range delete, merge, blob index, entity), which take consecutive
//! sequence numbers starting at `sequence`.

use crate::error::{Error, Result};
use crate::format::dbformat::{SequenceNumber, ValueType};
use crate::util::coding::{
    Decoder, decode_fixed32, decode_fixed64, put_length_prefixed_slice, put_varint32,
};

/// Size of the batch header (sequence + count).
pub const HEADER_LEN: usize = 12;

/// Column-family id of the default column family.
pub const DEFAULT_CF: u32 = 0;

/// An atomic group of updates, in RocksDB's serialized form.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("sequence", &self.sequence())
            .field("count", &self.count())
            .field("bytes", &self.rep.len())
            .finish()
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

/// One decoded record of a batch. `cf` is the column-family id (0 for the
/// records without one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchRecord<'a> {
    Put {
        cf: u32,
        key: &'a [u8],
        value: &'a [u8],
    },
    Delete {
        cf: u32,
        key: &'a [u8],
    },
    SingleDelete {
        cf: u32,
        key: &'a [u8],
    },
    DeleteRange {
        cf: u32,
        begin: &'a [u8],
        end: &'a [u8],
    },
    Merge {
        cf: u32,
        key: &'a [u8],
        value: &'a [u8],
    },
    BlobIndex {
        cf: u32,
        key: &'a [u8],
        value: &'a [u8],
    },
    PutEntity {
        cf: u32,
        key: &'a [u8],
        value: &'a [u8],
    },
    LogData(&'a [u8]),
    /// The start of a prepared section: `BeginPrepareXID` (WriteCommitted),
    /// `BeginPersistedPrepareXID` (`persisted`: WritePrepared) or
    /// `BeginUnprepareXID` (`unprepared`: WriteUnprepared).
    BeginPrepare {
        persisted: bool,
        unprepared: bool,
    },
    EndPrepare(&'a [u8]),
    Commit(&'a [u8]),
    CommitWithTimestamp {
        ts: &'a [u8],
        xid: &'a [u8],
    },
    Rollback(&'a [u8]),
    Noop,
}

impl BatchRecord<'_> {
    /// True for records that consume a sequence number and count.
    pub fn is_counted(&self) -> bool {
        matches!(
            self,
            BatchRecord::Put { .. }
                | BatchRecord::Delete { .. }
                | BatchRecord::SingleDelete { .. }
                | BatchRecord::DeleteRange { .. }
                | BatchRecord::Merge { .. }
                | BatchRecord::BlobIndex { .. }
                | BatchRecord::PutEntity { .. }
        )
    }
}

impl WriteBatch {
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
        }
    }

    /// An empty batch with room for `reserved_bytes` of records besides
    /// its header, so filling it does not reallocate (RocksDB's
    /// `WriteBatch(reserved_bytes)`).
    pub fn with_capacity(reserved_bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_LEN + reserved_bytes);
        rep.resize(HEADER_LEN, 0);
        WriteBatch { rep }
    }

    /// Bytes of one record holding `fields` in a non-default column family
    /// (tag, column family varint, length-prefixed fields): an upper bound
    /// for [`WriteBatch::with_capacity`].
    pub fn record_size_bound(fields: &[&[u8]]) -> usize {
        1 + 5 + fields.iter().map(|f| 5 + f.len()).sum::<usize>()
    }

    /// Takes a serialized batch (a WAL record). Only the header is checked
    /// here; [`WriteBatch::validate`] or [`WriteBatch::iter`] check the rest.
    pub fn from_bytes(rep: Vec<u8>) -> Result<Self> {
        if rep.len() < HEADER_LEN {
            return Err(Error::corruption(
                "",
                0,
                format!("log record too small: {} bytes", rep.len()),
            ));
        }
        Ok(WriteBatch { rep })
    }

    /// The serialized bytes.
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.rep
    }

    /// Size of the serialized form.
    pub fn byte_size(&self) -> usize {
        self.rep.len()
    }

    pub fn sequence(&self) -> SequenceNumber {
        decode_fixed64(&self.rep, 0).unwrap_or(0)
    }

    pub fn set_sequence(&mut self, seq: SequenceNumber) {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
    }

    /// Number of key-carrying records.
    pub fn count(&self) -> u32 {
        decode_fixed32(&self.rep, 8).unwrap_or(0)
    }

    fn set_count(&mut self, n: u32) {
        self.rep[8..12].copy_from_slice(&n.to_le_bytes());
    }

    pub fn is_empty(&self) -> bool {
        self.rep.len() == HEADER_LEN
    }

    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
    }

    fn add_record(&mut self, cf: u32, plain: ValueType, with_cf: ValueType, fields: &[&[u8]]) {
        if cf == DEFAULT_CF {
            self.rep.push(plain as u8);
        } else {
            self.rep.push(with_cf as u8);
            put_varint32(&mut self.rep, cf);
        }
        for f in fields {
            put_length_prefixed_slice(&mut self.rep, f);
        }
        let n = self.count() + 1;
        self.set_count(n);
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.put_cf(DEFAULT_CF, key, value);
    }

    pub fn put_cf(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        self.add_record(
            cf,
            ValueType::Value,
            ValueType::ColumnFamilyValue,
            &[key, value],
        );
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.delete_cf(DEFAULT_CF, key);
    }

    pub fn delete_cf(&mut self, cf: u32, key: &[u8]) {
        self.add_record(
            cf,
            ValueType::Deletion,
            ValueType::ColumnFamilyDeletion,
            &[key],
        );
    }

    pub fn single_delete(&mut self, key: &[u8]) {
        self.single_delete_cf(DEFAULT_CF, key);
    }

    pub fn single_delete_cf(&mut self, cf: u32, key: &[u8]) {
        self.add_record(
            cf,
            ValueType::SingleDeletion,
            ValueType::ColumnFamilySingleDeletion,
            &[key],
        );
    }

    /// Deletes the user keys in `[begin, end)`.
    pub fn delete_range(&mut self, begin: &[u8], end: &[u8]) {
        self.delete_range_cf(DEFAULT_CF, begin, end);
    }

    pub fn delete_range_cf(&mut self, cf: u32, begin: &[u8], end: &[u8]) {
        self.add_record(
            cf,
            ValueType::RangeDeletion,
            ValueType::ColumnFamilyRangeDeletion,
            &[begin, end],
        );
    }

    pub fn merge(&mut self, key: &[u8], value: &[u8]) {
        self.merge_cf(DEFAULT_CF, key, value);
    }

    pub fn merge_cf(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        self.add_record(
            cf,
            ValueType::Merge,
            ValueType::ColumnFamilyMerge,
            &[key, value],
        );
    }

    /// Attaches a blob to the WAL record that is not applied to the DB.
    pub fn put_log_data(&mut self, blob: &[u8]) {
        self.rep.push(ValueType::LogData as u8);
        put_length_prefixed_slice(&mut self.rep, blob);
    }

    /// Appends all records of `other` (sequence of `self` is kept).
    pub fn append(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
        let n = self.count() + other.count();
        self.set_count(n);
    }

    /// Iterates over the records. Decoding errors are Corruption errors
    /// whose offset is relative to the start of the batch.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            d: Decoder::new(&self.rep[HEADER_LEN..]),
            failed: false,
        }
    }

    /// The record starting `offset` bytes into `data()` (an offset that
    /// [`BatchIter::offset`] gave, or `data().len()` before the record
    /// was added).
    pub fn record_at(&self, offset: usize) -> Result<BatchRecord<'_>> {
        let bad = || Error::corruption("", offset as u64, "no WriteBatch record at this offset");
        if offset < HEADER_LEN || offset >= self.rep.len() {
            return Err(bad());
        }
        let mut it = BatchIter {
            d: Decoder::new(&self.rep[offset..]),
            failed: false,
        };
        it.decode().ok_or_else(bad)
    }

    /// Cuts the batch back to its first `len` bytes holding `count`
    /// counted records (a save point: `data().len()` and `count()` taken
    /// earlier).
    pub fn truncate(&mut self, len: usize, count: u32) {
        debug_assert!(len >= HEADER_LEN && len <= self.rep.len());
        self.rep.truncate(len.max(HEADER_LEN));
        self.set_count(count);
    }

    /// Decodes every record and checks the header count.
    pub fn validate(&self) -> Result<()> {
        let mut found: u64 = 0;
        for r in self.iter() {
            if r?.is_counted() {
                found += 1;
            }
        }
        if found != u64::from(self.count()) {
            return Err(Error::corruption(
                "",
                8,
                format!(
                    "WriteBatch has wrong count: header {} records {found}",
                    self.count()
                ),
            ));
        }
        Ok(())
    }
}

/// Iterator over the records of a [`WriteBatch`].
#[derive(Debug)]
pub struct BatchIter<'a> {
    d: Decoder<'a>,
    failed: bool,
}

impl<'a> BatchIter<'a> {
    /// Offset in the batch's `data()` of the record `next` returns.
    pub fn offset(&self) -> usize {
        HEADER_LEN + self.d.position()
    }

    fn decode(&mut self) -> Option<BatchRecord<'a>> {
        let d = &mut self.d;
        let tag = d.u8()?;
        let t = ValueType::from_u8(tag)?;
        use ValueType as V;
        let cf = match t {
            V::ColumnFamilyValue
            | V::ColumnFamilyDeletion
            | V::ColumnFamilySingleDeletion
            | V::ColumnFamilyRangeDeletion
            | V::ColumnFamilyMerge
            | V::ColumnFamilyBlobIndex
            | V::ColumnFamilyWideColumnEntity => d.varint32()?,
            _ => DEFAULT_CF,
        };
        Some(match t {
            V::Value | V::ColumnFamilyValue => BatchRecord::Put {
                cf,
                key: d.length_prefixed()?,
                value: d.length_prefixed()?,
            },
            V::Deletion | V::ColumnFamilyDeletion => BatchRecord::Delete {
                cf,
                key: d.length_prefixed()?,
            },
            V::SingleDeletion | V::ColumnFamilySingleDeletion => BatchRecord::SingleDelete {
                cf,
                key: d.length_prefixed()?,
            },
            V::RangeDeletion | V::ColumnFamilyRangeDeletion => BatchRecord::DeleteRange {
                cf,
                begin: d.length_prefixed()?,
                end: d.length_prefixed()?,
            },
            V::Merge | V::ColumnFamilyMerge => BatchRecord::Merge {
                cf,
                key: d.length_prefixed()?,
                value: d.length_prefixed()?,
            },
            V::BlobIndex | V::ColumnFamilyBlobIndex => BatchRecord::BlobIndex {
                cf,
                key: d.length_prefixed()?,
                value: d.length_prefixed()?,
            },
            V::WideColumnEntity | V::ColumnFamilyWideColumnEntity => BatchRecord::PutEntity {
                cf,
                key: d.length_prefixed()?,
                value: d.length_prefixed()?,
            },
            V::LogData => BatchRecord::LogData(d.length_prefixed()?),
            V::BeginPrepareXid => BatchRecord::BeginPrepare {
                persisted: false,
                unprepared: false,
            },
            V::BeginPersistedPrepareXid => BatchRecord::BeginPrepare {
                persisted: true,
                unprepared: false,
            },
            V::BeginUnprepareXid => BatchRecord::BeginPrepare {
                persisted: true,
                unprepared: true,
            },
            V::EndPrepareXid => BatchRecord::EndPrepare(d.length_prefixed()?),
            V::CommitXid => BatchRecord::Commit(d.length_prefixed()?),
            V::CommitXidAndTimestamp => BatchRecord::CommitWithTimestamp {
                ts: d.length_prefixed()?,
                xid: d.length_prefixed()?,
            },
            V::RollbackXid => BatchRecord::Rollback(d.length_prefixed()?),
            V::Noop => BatchRecord::Noop,
            V::DeletionWithTimestamp => return None,
        })
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<BatchRecord<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.d.is_empty() {
            return None;
        }
        let start = self.d.position();
        match self.decode() {
            Some(r) => Some(Ok(r)),
            None => {
                self.failed = true;
                Some(Err(Error::corruption(
                    "",
                    (HEADER_LEN + start) as u64,
                    "bad WriteBatch record (unknown tag or truncated field)",
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout_matches_formats_md() {
        let mut b = WriteBatch::new();
        b.set_sequence(1);
        b.put(b"a", b"1");
        assert_eq!(
            b.data(),
            [1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0x61, 1, 0x31]
        );
        b.validate().unwrap();
    }

    #[test]
    fn all_record_kinds_roundtrip() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        b.put_cf(3, b"k3", b"v3");
        b.delete(b"d");
        b.delete_cf(2, b"d2");
        b.single_delete(b"s");
        b.single_delete_cf(9, b"s9");
        b.delete_range(b"a", b"z");
        b.delete_range_cf(1, b"b", b"c");
        b.merge(b"m", b"+1");
        b.merge_cf(300, b"m", b"+2");
        b.put_log_data(b"blob");
        assert_eq!(b.count(), 10);
        b.validate().unwrap();
        let recs: Vec<_> = b.iter().map(|r| r.unwrap()).collect();
        assert_eq!(recs.len(), 11);
        assert_eq!(
            recs[1],
            BatchRecord::Put {
                cf: 3,
                key: b"k3",
                value: b"v3"
            }
        );
        assert_eq!(
            recs[9],
            BatchRecord::Merge {
                cf: 300,
                key: b"m",
                value: b"+2"
            }
        );
        assert_eq!(recs[10], BatchRecord::LogData(b"blob"));
    }

    #[test]
    fn bad_batches_are_corruption() {
        assert!(WriteBatch::from_bytes(vec![0; 11]).is_err());
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        let mut bytes = b.clone().into_bytes();
        bytes[8] = 2; // wrong count
        let wb = WriteBatch::from_bytes(bytes).unwrap();
        assert!(wb.validate().unwrap_err().is_corruption());
        let mut bytes = b.into_bytes();
        bytes.pop(); // truncated value
        let wb = WriteBatch::from_bytes(bytes).unwrap();
        assert!(wb.validate().unwrap_err().is_corruption());
        let mut bytes = WriteBatch::new().into_bytes();
        bytes.push(0x7e); // unknown tag
        let wb = WriteBatch::from_bytes(bytes).unwrap();
        assert!(wb.validate().is_err());
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 12..64)) {
            if let Ok(b) = WriteBatch::from_bytes(bytes) {
                let _ = b.validate();
                for r in b.iter() { let _ = r; }
            }
        }
    }
}
