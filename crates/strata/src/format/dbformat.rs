//! Internal keys: `user_key ‖ fixed64((sequence << 8) | value_type)`, their
//! order, and the value types of RocksDB's `db/dbformat.h`.
//!
//! Invariants: a sequence number fits in 56 bits; internal keys order by
//! user key ascending (user comparator), then by the 64-bit trailer
//! descending, so the newest entry for a user key comes first.

use std::cmp::Ordering;

use crate::util::coding::decode_fixed64;
use crate::util::comparator::{ComparatorRef, bytewise_compare};

/// A write's position in the history of the database.
pub type SequenceNumber = u64;

/// The largest sequence number (56 bits).
pub const MAX_SEQUENCE_NUMBER: SequenceNumber = (1 << 56) - 1;

/// Size of the internal-key trailer.
pub const TRAILER_LEN: usize = 8;

/// Value types, with their on-disk byte codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ValueType {
    Deletion = 0x00,
    Value = 0x01,
    Merge = 0x02,
    LogData = 0x03,
    ColumnFamilyDeletion = 0x04,
    ColumnFamilyValue = 0x05,
    ColumnFamilyMerge = 0x06,
    SingleDeletion = 0x07,
    ColumnFamilySingleDeletion = 0x08,
    BeginPrepareXid = 0x09,
    EndPrepareXid = 0x0A,
    CommitXid = 0x0B,
    RollbackXid = 0x0C,
    Noop = 0x0D,
    ColumnFamilyRangeDeletion = 0x0E,
    RangeDeletion = 0x0F,
    ColumnFamilyBlobIndex = 0x10,
    BlobIndex = 0x11,
    BeginPersistedPrepareXid = 0x12,
    BeginUnprepareXid = 0x13,
    DeletionWithTimestamp = 0x14,
    CommitXidAndTimestamp = 0x15,
    WideColumnEntity = 0x16,
    ColumnFamilyWideColumnEntity = 0x17,
}

/// The type used in seek keys: the highest type, so a seek key sorts before
/// every entry with the same user key and sequence.
pub const VALUE_TYPE_FOR_SEEK: ValueType = ValueType::WideColumnEntity;

impl ValueType {
    /// Decodes a type byte; `None` for codes RocksDB 7.8.3 does not define.
    pub fn from_u8(v: u8) -> Option<ValueType> {
        use ValueType::*;
        Some(match v {
            0x00 => Deletion,
            0x01 => Value,
            0x02 => Merge,
            0x03 => LogData,
            0x04 => ColumnFamilyDeletion,
            0x05 => ColumnFamilyValue,
            0x06 => ColumnFamilyMerge,
            0x07 => SingleDeletion,
            0x08 => ColumnFamilySingleDeletion,
            0x09 => BeginPrepareXid,
            0x0A => EndPrepareXid,
            0x0B => CommitXid,
            0x0C => RollbackXid,
            0x0D => Noop,
            0x0E => ColumnFamilyRangeDeletion,
            0x0F => RangeDeletion,
            0x10 => ColumnFamilyBlobIndex,
            0x11 => BlobIndex,
            0x12 => BeginPersistedPrepareXid,
            0x13 => BeginUnprepareXid,
            0x14 => DeletionWithTimestamp,
            0x15 => CommitXidAndTimestamp,
            0x16 => WideColumnEntity,
            0x17 => ColumnFamilyWideColumnEntity,
            _ => return None,
        })
    }

    /// Types that may appear in table data blocks (RocksDB `IsValueType`).
    pub fn is_value_type(self) -> bool {
        use ValueType::*;
        matches!(
            self,
            Deletion
                | Value
                | Merge
                | SingleDeletion
                | BlobIndex
                | DeletionWithTimestamp
                | WideColumnEntity
        )
    }

    /// Types a valid internal key may carry (`IsExtendedValueType`).
    pub fn is_extended_value_type(self) -> bool {
        self.is_value_type() || self == ValueType::RangeDeletion
    }
}

/// Packs a sequence number and a type into the 8-byte trailer value.
#[inline]
pub fn pack_sequence_and_type(seq: SequenceNumber, t: ValueType) -> u64 {
    debug_assert!(seq <= MAX_SEQUENCE_NUMBER);
    (seq << 8) | t as u64
}

/// Appends `user_key ‖ trailer` to `dst`.
#[inline]
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seq: SequenceNumber, t: ValueType) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_sequence_and_type(seq, t).to_le_bytes());
}

/// Builds an internal key.
pub fn make_internal_key(user_key: &[u8], seq: SequenceNumber, t: ValueType) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut k, user_key, seq, t);
    k
}

/// An internal key split into its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedInternalKey<'a> {
    pub user_key: &'a [u8],
    pub sequence: SequenceNumber,
    pub value_type: ValueType,
}

/// Whether the range tombstone `(start_ikey, end)` (as tables and
/// memtables store it) deletes nothing: `[k, k)` or backwards. Such a
/// tombstone must not reach a table the engine writes, whose bounds it
/// would invert (its start `k@seq` sorts after its end sentinel `k@max`).
/// A malformed start key is not empty: its reader reports it.
pub fn is_empty_range_tombstone(
    ucmp: &dyn crate::util::comparator::Comparator,
    start_ikey: &[u8],
    end: &[u8],
) -> bool {
    parse_internal_key(start_ikey).is_some_and(|p| ucmp.compare(p.user_key, end) != Ordering::Less)
}

/// Parses an internal key; `None` if shorter than 8 bytes or its type is not
/// a valid extended value type ("Corrupted Key" in RocksDB).
pub fn parse_internal_key(ikey: &[u8]) -> Option<ParsedInternalKey<'_>> {
    let n = ikey.len().checked_sub(TRAILER_LEN)?;
    let trailer = decode_fixed64(ikey, n)?;
    let value_type = ValueType::from_u8((trailer & 0xff) as u8)?;
    if !value_type.is_extended_value_type() {
        return None;
    }
    Some(ParsedInternalKey {
        user_key: &ikey[..n],
        sequence: trailer >> 8,
        value_type,
    })
}

/// The user-key part of an internal key (the whole slice if it is too short
/// to have a trailer, so a corrupt key never panics).
#[inline]
pub fn extract_user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

/// The trailer of an internal key (0 if it is too short).
#[inline]
pub fn extract_trailer(ikey: &[u8]) -> u64 {
    match ikey.len().checked_sub(TRAILER_LEN) {
        Some(n) => decode_fixed64(ikey, n).unwrap_or(0),
        None => 0,
    }
}

/// Orders internal keys: user key ascending, then trailer descending.
#[derive(Clone)]
pub struct InternalKeyComparator {
    user: ComparatorRef,
    /// `user.is_bytewise()`, cached: compares then inline.
    bytewise: bool,
}

impl std::fmt::Debug for InternalKeyComparator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InternalKeyComparator({})", self.user.name())
    }
}

impl InternalKeyComparator {
    pub fn new(user: ComparatorRef) -> Self {
        let bytewise = user.is_bytewise();
        InternalKeyComparator { user, bytewise }
    }

    pub fn user_comparator(&self) -> &ComparatorRef {
        &self.user
    }

    #[inline]
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let (ua, ub) = (extract_user_key(a), extract_user_key(b));
        let order = if self.bytewise {
            bytewise_compare(ua, ub)
        } else {
            self.user.compare(ua, ub)
        };
        match order {
            Ordering::Equal => extract_trailer(b).cmp(&extract_trailer(a)),
            o => o,
        }
    }

    /// RocksDB's `InternalKeyComparator::FindShortestSeparator`: shortens
    /// `start` to a key in `[start, limit)`, giving a shortened user key the
    /// trailer `(MAX_SEQUENCE_NUMBER, VALUE_TYPE_FOR_SEEK)`.
    pub fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        let user_start = extract_user_key(start);
        let user_limit = extract_user_key(limit);
        let mut tmp = user_start.to_vec();
        self.user.find_shortest_separator(&mut tmp, user_limit);
        if tmp.len() <= user_start.len() && self.user.compare(user_start, &tmp) == Ordering::Less {
            tmp.extend_from_slice(
                &pack_sequence_and_type(MAX_SEQUENCE_NUMBER, VALUE_TYPE_FOR_SEEK).to_le_bytes(),
            );
            debug_assert!(self.compare(start, &tmp) == Ordering::Less);
            debug_assert!(self.compare(&tmp, limit) == Ordering::Less);
            *start = tmp;
        }
    }

    /// RocksDB's `FindShortSuccessor` for the last index entry of a table.
    pub fn find_short_successor(&self, key: &mut Vec<u8>) {
        let user_key = extract_user_key(key);
        let mut tmp = user_key.to_vec();
        self.user.find_short_successor(&mut tmp);
        if tmp.len() <= user_key.len() && self.user.compare(user_key, &tmp) == Ordering::Less {
            tmp.extend_from_slice(
                &pack_sequence_and_type(MAX_SEQUENCE_NUMBER, VALUE_TYPE_FOR_SEEK).to_le_bytes(),
            );
            debug_assert!(self.compare(key, &tmp) == Ordering::Less);
            *key = tmp;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::comparator::bytewise;

    #[test]
    fn trailer_layout() {
        let k = make_internal_key(b"a", 1, ValueType::Value);
        assert_eq!(k, [0x61, 0x01, 0x01, 0, 0, 0, 0, 0, 0]);
        let p = parse_internal_key(&k).unwrap();
        assert_eq!(p.user_key, b"a");
        assert_eq!(p.sequence, 1);
        assert_eq!(p.value_type, ValueType::Value);
        assert!(parse_internal_key(b"short").is_none());
        let bad = make_internal_key(b"a", 1, ValueType::LogData);
        assert!(parse_internal_key(&bad).is_none());
        let seek = pack_sequence_and_type(MAX_SEQUENCE_NUMBER, VALUE_TYPE_FOR_SEEK);
        assert_eq!(seek, 0xFFFF_FFFF_FFFF_FF16);
    }

    #[test]
    fn ordering() {
        let c = InternalKeyComparator::new(bytewise());
        let a1 = make_internal_key(b"a", 1, ValueType::Value);
        let a2 = make_internal_key(b"a", 2, ValueType::Value);
        let b1 = make_internal_key(b"b", 1, ValueType::Value);
        assert_eq!(c.compare(&a2, &a1), Ordering::Less);
        assert_eq!(c.compare(&a1, &b1), Ordering::Less);
        let mut s = make_internal_key(b"abcdef", 5, ValueType::Value);
        c.find_shortest_separator(&mut s, &make_internal_key(b"abzz", 1, ValueType::Value));
        assert_eq!(extract_user_key(&s), b"abd");
        let mut s2 = make_internal_key(b"abc", 5, ValueType::Value);
        let before = s2.clone();
        c.find_shortest_separator(&mut s2, &make_internal_key(b"abc", 1, ValueType::Value));
        assert_eq!(s2, before);
    }
}
