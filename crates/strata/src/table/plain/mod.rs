//! RocksDB's PlainTable format (`table/plain/`), for data kept in RAM
//! (tmpfs): entries back to back with no blocks, compression or
//! checksums, found through a prefix hash index and a bloom filter, both
//! rebuilt at open or stored in the file (`store_index_in_file`).
//!
//! File layout: the data (entries, see `key_coding.rs`), then optionally
//! the bloom (`kBloomBlock`) and index (`PlainTableIndexBlock`) meta
//! blocks, the properties block and the meta-index, all without block
//! trailers, and a legacy 48-byte footer with the PlainTable magic.
//!
//! What Strata does beyond RocksDB's reader: reverse iteration
//! (`seek_to_last`, `prev`, `seek_for_prev`) and total-order seeks in
//! prefix mode work (RocksDB returns `NotSupported`/`InvalidArgument`),
//! through a sparse offset index built at open; a table whose prefix
//! extractor differs from the reader's is read in total order instead of
//! failing. Range deletions cannot be stored (as in RocksDB: writing one
//! into a PlainTable column family is `NotSupported`).

pub mod bloom;
pub mod builder;
pub mod index;
pub mod key_coding;
pub mod reader;

pub use builder::PlainTableBuilder;
pub use key_coding::EncodingType;
pub use reader::{PlainTable, PlainTableIter};

/// Meta-block name of a stored bloom filter.
pub const BLOOM_BLOCK: &str = "kBloomBlock";
/// User-collected properties PlainTable writes.
pub const ENCODING_TYPE_PROPERTY: &str = "rocksdb.plain.table.encoding.type";
pub const BLOOM_VERSION_PROPERTY: &str = "rocksdb.plain.table.bloom.version";
pub const NUM_BLOOM_BLOCKS_PROPERTY: &str = "rocksdb.plain.table.bloom.numblocks";
/// Largest PlainTable file (offsets are 31-bit).
pub const MAX_FILE_SIZE: u64 = (1 << 31) - 1;

/// RocksDB's `PlainTableOptions` (defaults as in RocksDB 7.8.3).
#[derive(Clone, Debug, PartialEq)]
pub struct PlainTableOptions {
    /// Fixed user-key length; 0 (`kPlainTableVariableLength`): keys vary.
    pub user_key_len: u32,
    /// Bloom bits per key (per prefix in prefix mode); 0: no bloom.
    pub bloom_bits_per_key: i32,
    /// Prefixes per hash bucket; 0 turns the prefix hash off.
    pub hash_table_ratio: f64,
    /// An index record every this many keys of a prefix.
    pub index_sparseness: usize,
    /// Accepted for compatibility; Strata does not use huge pages.
    pub huge_page_tlb_size: usize,
    pub encoding_type: EncodingType,
    /// Build no hash index or bloom at open (RocksDB then refuses point
    /// lookups and seeks; Strata serves them through its offset index).
    pub full_scan_mode: bool,
    /// Write the index and bloom into the file.
    pub store_index_in_file: bool,
}

impl Default for PlainTableOptions {
    fn default() -> Self {
        PlainTableOptions {
            user_key_len: 0,
            bloom_bits_per_key: 10,
            hash_table_ratio: 0.75,
            index_sparseness: 16,
            huge_page_tlb_size: 0,
            encoding_type: EncodingType::Plain,
            full_scan_mode: false,
            store_index_in_file: false,
        }
    }
}

#[cfg(test)]
mod tests;
