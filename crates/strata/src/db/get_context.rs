//! Point-lookup state: entries of one user key are fed newest first from
//! each source in turn (memtables, then level-0 files newest first, then
//! deeper levels) until a value, a deletion, or the end resolves it.
//!
//! Invariant: entries are fed in decreasing sequence order; once `done`,
//! further entries are ignored.

use crate::error::{Error, Result};
use crate::format::{SequenceNumber, ValueType};
use crate::merge_operator::MergeOperatorRef;

/// Resolution state of one `get`.
#[derive(Debug, Default)]
pub struct GetContext {
    /// Highest visible range-tombstone sequence covering the key.
    pub tombstone_seq: SequenceNumber,
    operands: Vec<Vec<u8>>,
    result: Option<Option<Vec<u8>>>,
    unsupported: Option<ValueType>,
}

impl GetContext {
    pub fn new(tombstone_seq: SequenceNumber) -> Self {
        GetContext {
            tombstone_seq,
            ..Default::default()
        }
    }

    pub fn done(&self) -> bool {
        self.result.is_some() || self.unsupported.is_some()
    }

    /// Whether the entry (`seq`, `t`) settles the lookup as that very
    /// value, unmerged and not deleted by a range tombstone: its bytes can
    /// then be handed out in place instead of through [`GetContext::add`].
    /// Marks the lookup resolved when it does.
    pub fn settles_as_plain_value(&mut self, seq: SequenceNumber, t: ValueType) -> bool {
        let plain = !self.done()
            && t == ValueType::Value
            && seq >= self.tombstone_seq
            && self.operands.is_empty();
        if plain {
            self.result = Some(None);
        }
        plain
    }

    /// Feeds one visible entry. Returns true when the lookup is resolved.
    pub fn add(&mut self, seq: SequenceNumber, t: ValueType, value: &[u8]) -> bool {
        if self.done() {
            return true;
        }
        let t = if seq < self.tombstone_seq {
            ValueType::Deletion
        } else {
            t
        };
        match t {
            ValueType::Value => {
                self.result = Some(Some(value.to_vec()));
            }
            ValueType::Deletion | ValueType::SingleDeletion => {
                self.result = Some(None);
            }
            ValueType::Merge => {
                self.operands.push(value.to_vec());
            }
            other => self.unsupported = Some(other),
        }
        self.done()
    }

    /// The answer once every source was consulted.
    pub fn finish(
        mut self,
        key: &[u8],
        merge: Option<&MergeOperatorRef>,
    ) -> Result<Option<Vec<u8>>> {
        if let Some(t) = self.unsupported {
            return Err(Error::NotSupported(format!("value type {t:?}")));
        }
        let base = self.result.take().unwrap_or(None);
        if self.operands.is_empty() {
            return Ok(base);
        }
        let op = merge.ok_or_else(|| {
            Error::InvalidArgument(
                "merge operands found but no merge operator is configured".into(),
            )
        })?;
        self.operands.reverse();
        let refs: Vec<&[u8]> = self.operands.iter().map(|v| v.as_slice()).collect();
        op.full_merge(key, base.as_deref(), &refs)
            .map(Some)
            .ok_or_else(|| Error::corruption("", 0, format!("merge operator {} failed", op.name())))
    }
}
