//! Layer 4: caches shared by reads: open table readers (and, next, the
//! sharded byte-weighted block cache).

pub mod table_cache;

pub use table_cache::TableCache;
