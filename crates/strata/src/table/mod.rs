//! Layer 3: the block-based table format (RocksDB SST files).
//!
//! A table is a sequence of blocks followed by a footer: data blocks of
//! internal keys, an optional full bloom filter, an index block with one
//! separator per data block, an optional range-deletion block, the
//! properties block and the meta-index block naming the meta blocks.

pub mod block;
pub mod block_builder;
pub mod compression;
pub mod filter;
pub mod format;
pub mod iterator;
