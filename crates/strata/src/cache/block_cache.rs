//! The block cache: uncompressed, parsed blocks keyed by (table cache id,
//! block offset), weighted by their size in bytes, shareable between
//! tables and between DB instances in one process. Eviction is quick_cache's
//! sharded CLOCK-Pro behind this small interface.
//!
//! Invariant: a table's cache id is unique in the process, so two files
//! (or two opens of one file) never share entries.

use std::sync::Arc;

use crate::table::block::Block;
use crate::table::options::BlockCacheApi;

#[derive(Clone, Copy, Debug)]
struct BlockWeighter;

impl quick_cache::Weighter<(u64, u64), Arc<Block>> for BlockWeighter {
    fn weight(&self, _key: &(u64, u64), block: &Arc<Block>) -> u64 {
        // Bytes of the block plus bookkeeping, so empty blocks still count.
        block.size() as u64 + 64
    }
}

/// A byte-bounded cache of blocks.
pub struct BlockCache {
    cache: quick_cache::sync::Cache<(u64, u64), Arc<Block>, BlockWeighter>,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity_bytes", &self.cache.capacity())
            .field("usage_bytes", &self.cache.weight())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding about `capacity_bytes` of blocks.
    pub fn new(capacity_bytes: u64) -> Arc<BlockCache> {
        let items = (capacity_bytes / 4096).max(16) as usize;
        Arc::new(BlockCache {
            cache: quick_cache::sync::Cache::with_weighter(
                items,
                capacity_bytes.max(1),
                BlockWeighter,
            ),
        })
    }

    /// [`BlockCache::new`] split into `2^shard_bits` shards (RocksDB's
    /// `NewLRUCache(capacity, num_shard_bits)`; each shard evicts on its
    /// own, so a small cache with many shards holds less of a hot set).
    /// `shard_bits` is capped at 10, as quick_cache wants shards of some
    /// size; a negative value (RocksDB: choose) is `new`'s choice.
    pub fn with_shard_bits(capacity_bytes: u64, shard_bits: i32) -> Arc<BlockCache> {
        let Ok(bits) = u32::try_from(shard_bits) else {
            return BlockCache::new(capacity_bytes);
        };
        let items = (capacity_bytes / 4096).max(16) as usize;
        let options = quick_cache::OptionsBuilder::new()
            .estimated_items_capacity(items)
            .weight_capacity(capacity_bytes.max(1))
            .shards(1usize << bits.min(10))
            .build();
        match options {
            Ok(o) => Arc::new(BlockCache {
                cache: quick_cache::sync::Cache::with_options(
                    o,
                    BlockWeighter,
                    Default::default(),
                    Default::default(),
                ),
            }),
            Err(_) => BlockCache::new(capacity_bytes),
        }
    }

    /// Bytes currently charged.
    pub fn usage(&self) -> u64 {
        self.cache.weight()
    }

    pub fn capacity(&self) -> u64 {
        self.cache.capacity()
    }
}

impl BlockCacheApi for BlockCache {
    fn lookup(&self, cache_id: u64, offset: u64) -> Option<Arc<Block>> {
        self.cache.get(&(cache_id, offset))
    }

    fn insert(&self, cache_id: u64, offset: u64, block: Arc<Block>) {
        self.cache.insert((cache_id, offset), block);
    }

    fn usage(&self) -> u64 {
        BlockCache::usage(self)
    }

    fn capacity(&self) -> u64 {
        BlockCache::capacity(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_by_bytes() {
        let c = BlockCache::new(64 * 1024);
        for i in 0..200u64 {
            let b = Arc::new(
                Block::from_vec(
                    vec![0u8; 1024 + 8]
                        .into_iter()
                        .chain([0, 0, 0, 0, 1, 0, 0, 0])
                        .collect(),
                )
                .unwrap(),
            );
            c.insert(1, i, b);
        }
        assert!(c.usage() <= 64 * 1024, "{}", c.usage());
        assert!(c.lookup(1, 199).is_some());
    }
}
