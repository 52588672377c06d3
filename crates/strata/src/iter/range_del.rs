//! Range tombstones visible to a read: which point entries they cover.
//!
//! A tombstone `[begin, end) @ seq` deletes every entry of a user key in
//! the range whose sequence number is below `seq`, for readers whose
//! snapshot includes `seq`.
//!
//! Invariant: only tombstones with `seq <= snapshot` are kept. Lookups are
//! a linear scan, adequate for the few tombstones typical workloads hold;
//! RocksDB's fragmented tombstone list is the planned replacement.

use std::cmp::Ordering;

use crate::format::{SequenceNumber, parse_internal_key};
use crate::util::comparator::ComparatorRef;

/// One tombstone in user-key terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeTombstone {
    pub begin: Vec<u8>,
    pub end: Vec<u8>,
    pub seq: SequenceNumber,
}

/// The tombstones a reader at one snapshot must honour.
#[derive(Clone)]
pub struct RangeDelAggregator {
    ucmp: ComparatorRef,
    snapshot: SequenceNumber,
    tombstones: Vec<RangeTombstone>,
}

impl std::fmt::Debug for RangeDelAggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeDelAggregator")
            .field("snapshot", &self.snapshot)
            .field("tombstones", &self.tombstones.len())
            .finish()
    }
}

impl RangeDelAggregator {
    pub fn new(ucmp: ComparatorRef, snapshot: SequenceNumber) -> Self {
        RangeDelAggregator {
            ucmp,
            snapshot,
            tombstones: Vec::new(),
        }
    }

    /// Adds tombstones given as (internal begin key, end user key); those
    /// newer than the snapshot or malformed are ignored.
    pub fn add_encoded(&mut self, list: &[(Vec<u8>, Vec<u8>)]) {
        for (ikey, end) in list {
            if let Some(p) = parse_internal_key(ikey)
                && p.sequence <= self.snapshot
                && self.ucmp.compare(p.user_key, end) == Ordering::Less
            {
                self.tombstones.push(RangeTombstone {
                    begin: p.user_key.to_vec(),
                    end: end.clone(),
                    seq: p.sequence,
                });
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tombstones.is_empty()
    }

    /// The highest sequence of a visible tombstone covering `user_key` (0 if none).
    pub fn max_covering_seq(&self, user_key: &[u8]) -> SequenceNumber {
        let mut best = 0;
        for t in &self.tombstones {
            if t.seq > best
                && self.ucmp.compare(&t.begin, user_key) != Ordering::Greater
                && self.ucmp.compare(user_key, &t.end) == Ordering::Less
            {
                best = t.seq;
            }
        }
        best
    }

    /// True if an entry of `user_key` at `seq` is deleted by a tombstone.
    #[inline]
    pub fn covers(&self, user_key: &[u8], seq: SequenceNumber) -> bool {
        !self.tombstones.is_empty() && self.max_covering_seq(user_key) > seq
    }
}
