//! The table cache: open table readers by file number, bounded by
//! `max_open_files` with least-recently-used eviction.
//!
//! Invariant: an evicted reader stays usable by whoever still holds its
//! `Arc` (iterators); eviction only drops the cache's reference.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::Result;
use crate::filename::TablePaths;
use crate::fs::FileSystemRef;
use crate::table::{Table, TableOptions};
use crate::version::FileMetaData;

/// Memory charged to a block cache while a reader is open.
type Charge = Option<Box<dyn Send + Sync>>;

struct Inner {
    /// Open readers: the table, its last use, and its memory charged to
    /// the block cache (with `charge_to`).
    map: HashMap<u64, (Arc<Table>, u64, Charge)>,
    tick: u64,
}

/// Open table readers shared by all reads of one database.
pub struct TableCache {
    fs: FileSystemRef,
    /// Where each `path_id`'s tables are.
    paths: TablePaths,
    capacity: usize,
    inner: Mutex<Inner>,
    /// Open readers' memory is charged here (RocksDB's charging of
    /// `kBlockBasedTableReader` to the block cache), so it shares the
    /// cache's capacity with blocks.
    charge_to: Option<Arc<super::BlockCache>>,
}

impl std::fmt::Debug for TableCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCache")
            .field("paths", &self.paths)
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl TableCache {
    pub fn new(fs: FileSystemRef, paths: TablePaths, capacity: usize) -> Self {
        TableCache {
            fs,
            paths,
            capacity: capacity.max(16),
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                tick: 0,
            }),
            charge_to: None,
        }
    }

    /// Charges every reader's memory to `cache` while it is open.
    pub fn charging_readers_to(mut self, cache: Option<Arc<super::BlockCache>>) -> Self {
        self.charge_to = cache;
        self
    }

    /// The reader of table `number` if it is open, else `Incomplete` (a
    /// read that may do no I/O; RocksDB's `no_io` table cache lookup).
    pub fn get_open(&self, number: u64) -> Result<Arc<Table>> {
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        g.tick += 1;
        let tick = g.tick;
        match g.map.get_mut(&number) {
            Some(e) => {
                e.1 = tick;
                Ok(Arc::clone(&e.0))
            }
            None => Err(crate::Error::Incomplete(format!(
                "table #{number} not found in the table cache, no_io is set"
            ))),
        }
    }

    /// The reader of table `f` (its number, directory, size, and largest
    /// sequence number in the MANIFEST: an ingested file's global sequence
    /// number), opening it if needed; `level0`: the file is in level 0,
    /// whose readers hold their index and filter under
    /// `pin_l0_filter_and_index_blocks_in_cache` (decided when the reader
    /// opens, as in RocksDB).
    pub fn get(&self, f: &FileMetaData, opts: &TableOptions, level0: bool) -> Result<Arc<Table>> {
        let (number, file_size, largest_seqno) = (f.number, f.file_size, f.largest_seqno);
        {
            let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            g.tick += 1;
            let tick = g.tick;
            if let Some(e) = g.map.get_mut(&number) {
                e.1 = tick;
                return Ok(Arc::clone(&e.0));
            }
        }
        let pinned;
        let opts = if level0
            && opts.cache_index_and_filter_blocks
            && opts.pin_l0_filter_and_index_blocks_in_cache
        {
            pinned = TableOptions {
                pin_index_and_filter: true,
                ..opts.clone()
            };
            &pinned
        } else {
            opts
        };
        let path = self.paths.table_file(f.path_id, number);
        let file = if opts.allow_mmap_reads {
            self.fs.new_mmap_file(&path)?
        } else if opts.use_direct_reads {
            self.fs.new_direct_random_access_file(&path)?
        } else {
            self.fs.new_random_access_file(&path)?
        };
        let table = Arc::new(Table::open_in_db(
            file,
            &path.to_string_lossy(),
            file_size,
            opts,
            Some(largest_seqno),
        )?);
        // The memory budget's cache, or the column family's with
        // cache_index_and_filter_blocks.
        let mem = table.memory_usage();
        let charge: Charge = match (&self.charge_to, &opts.block_cache) {
            (Some(c), _) => c
                .reserve_over_limit(mem)
                .map(|r| Box::new(r) as Box<dyn Send + Sync>),
            (None, Some(c)) if opts.cache_index_and_filter_blocks => c.charge(mem),
            _ => None,
        };
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        g.tick += 1;
        let tick = g.tick;
        g.map.insert(number, (Arc::clone(&table), tick, charge));
        let victim = (g.map.len() > self.capacity)
            .then(|| {
                g.map
                    .iter()
                    .min_by_key(|(_, (_, t, _))| *t)
                    .map(|(&n, _)| n)
            })
            .flatten()
            .and_then(|n| g.map.remove(&n));
        drop(g);
        // The evicted reader (and its charge) go outside the lock.
        drop(victim);
        Ok(table)
    }

    /// Bytes the open table readers hold in memory (index, filters,
    /// dictionaries, range tombstones): RocksDB's
    /// `rocksdb.estimate-table-readers-mem`.
    pub fn readers_memory(&self) -> u64 {
        let g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        g.map.values().map(|(t, _, _)| t.memory_usage()).sum()
    }

    /// Forgets table `number` (its file is being deleted).
    pub fn evict(&self, number: u64) {
        let gone = self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map
            .remove(&number);
        drop(gone);
    }
}
