//! Layer 3: table files (RocksDB SST files) in RocksDB's block-based
//! format, its PlainTable format (`plain/`) and its CuckooTable format
//! (`cuckoo/`), behind one interface
//! (`factory.rs`).
//!
//! A block-based table is a sequence of blocks followed by a footer: data
//! blocks of internal keys, an optional full bloom filter, an index block
//! with one separator per data block, an optional range-deletion block,
//! the properties block and the meta-index block naming the meta blocks.

pub mod block;
pub mod block_builder;
pub mod compression;
pub mod compression_dict;
pub mod cuckoo;
pub mod factory;
pub mod filter;
pub mod footer;
pub mod index_builder;
pub mod options;
pub mod partitioned;
pub mod plain;
pub mod prefix_seek_iter;
pub mod ribbon_builder;
pub mod sst_file_writer;
pub mod table_builder;
pub mod table_properties;
pub mod table_reader;
pub mod unique_id;

pub use compression::CompressionType;
pub use compression_dict::CompressionOptions;
pub use cuckoo::CuckooTableOptions;
pub use factory::{Table, TableBuilder, TableIter};
pub use options::TableOptions;
pub use plain::PlainTableOptions;
pub use prefix_seek_iter::PrefixSeekIter;
pub use sst_file_writer::SstFileWriter;
pub use table_builder::{BlockBasedTableBuilder, TableInfo};
pub use table_reader::{BlockBasedTable, BlockBasedTableIter};

#[cfg(test)]
mod tests;
