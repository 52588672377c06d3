//! Layer 3: the write-ahead log (and MANIFEST) record format.
