//! Layer 2: internal keys, value types and the WriteBatch encoding.
