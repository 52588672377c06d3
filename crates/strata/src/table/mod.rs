//! Layer 3: the block-based table format (RocksDB SST files).
