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
pub mod index_builder;
pub mod iterator;
pub mod options;
pub mod partitioned;
pub mod prefix_seek_iter;
pub mod properties;
pub mod sst_file_writer;
pub mod table_builder;
pub mod table_reader;

pub use compression::CompressionType;
pub use options::TableOptions;
pub use prefix_seek_iter::PrefixSeekIter;
pub use sst_file_writer::SstFileWriter;
pub use table_builder::{TableBuilder, TableInfo};
pub use table_reader::{Table, TableIter};

#[cfg(test)]
mod tests;
