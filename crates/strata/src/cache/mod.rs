//! Layer 4: caches shared by reads: open table readers, and the
//! byte-weighted block cache (shareable between DB instances).

pub mod block_cache;
pub mod table_cache;

pub use block_cache::BlockCache;
pub use block_cache::CacheReservation;
pub use table_cache::TableCache;
