//! Merge operators: user-defined read-modify-write applied lazily. A merge
//! operand is stored as an entry of type Merge; reads and compactions
//! combine the operands (oldest first) with the newest base value below
//! them. The operator's name is recorded in table properties.
//!
//! Invariant: `full_merge` is deterministic; returning `None` reports a
//! merge failure, which reads surface as `Error::Corruption`.

use std::sync::Arc;

/// Combines merge operands with an existing value.
pub trait MergeOperator: Send + Sync {
    /// Stored in `rocksdb.merge.operator`.
    fn name(&self) -> &str;

    /// `existing` is the base value (`None` if the key is absent or
    /// deleted); `operands` are oldest first. `None` means failure.
    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>>;
}

/// Shared handle to a merge operator.
pub type MergeOperatorRef = Arc<dyn MergeOperator>;

/// RocksDB's `UInt64AddOperator`: values are fixed64 little-endian
/// counters; operands are added (wrapping). A malformed value counts as 0,
/// as in RocksDB (which logs it).
#[derive(Clone, Copy, Debug, Default)]
pub struct UInt64AddOperator;

fn decode_u64(v: &[u8]) -> u64 {
    <[u8; 8]>::try_from(v).map(u64::from_le_bytes).unwrap_or(0)
}

impl MergeOperator for UInt64AddOperator {
    fn name(&self) -> &str {
        "UInt64AddOperator"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let mut sum = existing.map(decode_u64).unwrap_or(0);
        for op in operands {
            sum = sum.wrapping_add(decode_u64(op));
        }
        Some(sum.to_le_bytes().to_vec())
    }
}

/// RocksDB's `StringAppendOperator`: joins the base value and operands
/// with a delimiter (default `,`).
#[derive(Clone, Copy, Debug)]
pub struct StringAppendOperator {
    pub delimiter: u8,
}

impl Default for StringAppendOperator {
    fn default() -> Self {
        StringAppendOperator { delimiter: b',' }
    }
}

impl MergeOperator for StringAppendOperator {
    fn name(&self) -> &str {
        "StringAppendOperator"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let mut out = existing.map(|e| e.to_vec()).unwrap_or_default();
        let mut first = existing.is_none();
        for op in operands {
            if !first {
                out.push(self.delimiter);
            }
            out.extend_from_slice(op);
            first = false;
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uint64add_and_string_append() {
        let one = 1u64.to_le_bytes();
        let five = 5u64.to_le_bytes();
        let r = UInt64AddOperator
            .full_merge(b"k", Some(&five), &[&one, &one])
            .unwrap();
        assert_eq!(r, 7u64.to_le_bytes());
        let s = StringAppendOperator::default();
        assert_eq!(s.full_merge(b"k", None, &[b"a", b"b"]).unwrap(), b"a,b");
        assert_eq!(s.full_merge(b"k", Some(b"x"), &[b"a"]).unwrap(), b"x,a");
    }
}
