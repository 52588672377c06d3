//! Layer 2: internal keys, value types and the WriteBatch encoding.

pub mod dbformat;
pub mod iterator;
pub mod range_tombstones;
pub mod write_batch;

pub use dbformat::{
    InternalKeyComparator, MAX_SEQUENCE_NUMBER, ParsedInternalKey, SequenceNumber, ValueType,
    append_internal_key, extract_user_key, make_internal_key, parse_internal_key,
};
pub use write_batch::{BatchRecord, WriteBatch};
