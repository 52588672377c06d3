//! RocksDB's CuckooTable format (`table/cuckoo/`): a hash table of
//! fixed-size buckets for point lookups of fixed-size keys and values,
//! read from memory (RocksDB requires `allow_mmap_reads`; Strata reads the
//! whole file or maps it).
//!
//! File layout (bit-compatible with RocksDB 7.8.3's `CuckooTableBuilder`):
//! `table_size + cuckoo_block_size - 1` buckets of `key_len + value_len`
//! bytes (empty buckets hold an "unused key" absent from the file, padded
//! with `'a'`), then the properties block (the `rocksdb.cuckoo.*` user
//! properties describe the table), the meta-index, and a format_version 1
//! footer with the CuckooTable magic and no checksums. Meta blocks carry no
//! trailers. Keys are internal keys, or user keys only when the first key
//! has sequence number 0 (a "last level" file).
//!
//! A key is found by probing, for each of the file's hash functions
//! (MurmurHash64A with seed `816922183 * i`, or the key's first 8 bytes
//! for function 0 with `identity_as_first_hash`; reduced modulo the table
//! size or masked to a power of two), the `cuckoo_block_size` buckets from
//! the hashed one (`hash.rs`). The builder places keys by breadth-first
//! displacement (`layout.rs`).
//!
//! **What Strata does differently (never losing a write).** RocksDB's
//! builder holds only Put and Delete entries whose keys all have one size
//! and whose values all have one size; RocksDB 7.8.3 silently drops an
//! entry that does not fit (its `Finish` overwrites the `Add` error), so a
//! flush "succeeds" without those keys. Strata's builder buffers every
//! entry (as RocksDB's does) and at finish writes a cuckoo file when they
//! fit the format: only Put and Delete, one user key per entry, uniform
//! key and value sizes, no range tombstones, at most one sequence number
//! (0) in a last-level file with no deletions, keys of 8+ bytes under
//! `identity_as_first_hash`, and a hash table built within
//! `max_search_depth` and 64 hash functions. Otherwise it writes the same
//! entries as a block-based table (the column family's block-based
//! settings) into the same file and says why in
//! [`crate::table::TableInfo::block_based_fallback`]; flushes and
//! compactions write that reason as one LOG line. Files are opened by their
//! magic, so a column family may hold both formats.
//!
//! The reader sorts the occupied buckets once at open (RocksDB sorts per
//! iterator) and so serves ordered iteration in both directions and
//! seeks; point lookups probe the hash table as RocksDB's do.

pub mod builder;
pub mod hash;
pub mod layout;
pub mod reader;

pub use builder::CuckooTableBuilder;
pub use reader::{CuckooTable, CuckooTableIter};

/// User-collected properties a CuckooTable records (RocksDB's
/// `CuckooTablePropertyNames`).
pub const EMPTY_KEY_PROPERTY: &str = "rocksdb.cuckoo.bucket.empty.key";
pub const VALUE_LENGTH_PROPERTY: &str = "rocksdb.cuckoo.value.length";
pub const NUM_HASH_FUNC_PROPERTY: &str = "rocksdb.cuckoo.hash.num";
pub const HASH_TABLE_SIZE_PROPERTY: &str = "rocksdb.cuckoo.hash.size";
pub const IS_LAST_LEVEL_PROPERTY: &str = "rocksdb.cuckoo.file.islastlevel";
pub const IDENTITY_AS_FIRST_HASH_PROPERTY: &str = "rocksdb.cuckoo.hash.identityfirst";
pub const USE_MODULE_HASH_PROPERTY: &str = "rocksdb.cuckoo.hash.usemodule";
pub const CUCKOO_BLOCK_SIZE_PROPERTY: &str = "rocksdb.cuckoo.hash.cuckooblocksize";
pub const USER_KEY_LENGTH_PROPERTY: &str = "rocksdb.cuckoo.hash.userkeylength";

/// Most hash functions a table may use (what RocksDB's factory passes).
pub const MAX_NUM_HASH_FUNC: u32 = 64;

/// RocksDB's `CuckooTableOptions` (defaults as in RocksDB 7.8.3).
#[derive(Clone, Debug, PartialEq)]
pub struct CuckooTableOptions {
    /// Utilization of the hash table: entries / buckets, in (0, 1].
    pub hash_table_ratio: f64,
    /// Depth of the breadth-first search for a displacement path when a
    /// key collides.
    pub max_search_depth: u32,
    /// Consecutive buckets tried per hash function (at least 1).
    pub cuckoo_block_size: u32,
    /// Use the user key's first 8 bytes (little-endian) as the first hash.
    /// Readers follow the file's property, not this option.
    pub identity_as_first_hash: bool,
    /// Reduce hashes modulo the table size (true) or mask them to a power
    /// of two table (false).
    pub use_module_hash: bool,
}

impl Default for CuckooTableOptions {
    fn default() -> Self {
        CuckooTableOptions {
            hash_table_ratio: 0.9,
            max_search_depth: 100,
            cuckoo_block_size: 5,
            identity_as_first_hash: false,
            use_module_hash: true,
        }
    }
}

impl CuckooTableOptions {
    /// Checks the ranges RocksDB's builder relies on: `hash_table_ratio` in
    /// (0, 1], `cuckoo_block_size` >= 1.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.hash_table_ratio > 0.0 && self.hash_table_ratio <= 1.0) {
            return Err(format!(
                "CuckooTable hash_table_ratio {} must be in (0, 1]",
                self.hash_table_ratio
            ));
        }
        if self.cuckoo_block_size == 0 {
            return Err("CuckooTable cuckoo_block_size must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
