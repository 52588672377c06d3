//! The public operations of [`DB`], in RocksDB's vocabulary: put, delete,
//! single_delete, delete_range, merge, write, get, multi_get, iterators,
//! snapshots and flush, each with a `_cf` form taking a column family.

use super::{ColumnFamilyHandle, DB, DbIterator, Snapshot};
use crate::error::Result;
use crate::format::WriteBatch;
use crate::options::{ReadOptions, WriteOptions};

impl DB {
    pub fn put(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_cf(opts, &self.default_cf(), key, value)
    }

    pub fn put_cf(
        &self,
        opts: &WriteOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let mut b = WriteBatch::with_capacity(WriteBatch::record_size_bound(&[key, value]));
        b.put_cf(cf.id, key, value);
        self.write(opts, b)
    }

    pub fn delete(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        self.delete_cf(opts, &self.default_cf(), key)
    }

    pub fn delete_cf(
        &self,
        opts: &WriteOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
    ) -> Result<()> {
        let mut b = WriteBatch::with_capacity(WriteBatch::record_size_bound(&[key]));
        b.delete_cf(cf.id, key);
        self.write(opts, b)
    }

    /// Deletes a key written at most once since its last deletion
    /// (RocksDB's SingleDelete); behaves as `delete` here.
    pub fn single_delete(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        self.single_delete_cf(opts, &self.default_cf(), key)
    }

    pub fn single_delete_cf(
        &self,
        opts: &WriteOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
    ) -> Result<()> {
        let mut b = WriteBatch::with_capacity(WriteBatch::record_size_bound(&[key]));
        b.single_delete_cf(cf.id, key);
        self.write(opts, b)
    }

    /// Deletes every key in `[begin, end)`.
    pub fn delete_range(&self, opts: &WriteOptions, begin: &[u8], end: &[u8]) -> Result<()> {
        self.delete_range_cf(opts, &self.default_cf(), begin, end)
    }

    pub fn delete_range_cf(
        &self,
        opts: &WriteOptions,
        cf: &ColumnFamilyHandle,
        begin: &[u8],
        end: &[u8],
    ) -> Result<()> {
        let mut b = WriteBatch::with_capacity(WriteBatch::record_size_bound(&[begin, end]));
        b.delete_range_cf(cf.id, begin, end);
        self.write(opts, b)
    }

    /// Adds a merge operand (needs a merge operator on the column family).
    pub fn merge(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        self.merge_cf(opts, &self.default_cf(), key, value)
    }

    pub fn merge_cf(
        &self,
        opts: &WriteOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let mut b = WriteBatch::with_capacity(WriteBatch::record_size_bound(&[key, value]));
        b.merge_cf(cf.id, key, value);
        self.write(opts, b)
    }

    /// Applies a batch atomically (it may span column families).
    pub fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.inner.write(opts, batch)
    }

    pub fn get(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(opts, 0, key)
    }

    pub fn get_cf(
        &self,
        opts: &ReadOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.inner.get(opts, cf.id, key)
    }

    /// Reads `key` and calls `f` with its value where it lies (a
    /// memtable's memory, a cached block, a memory-mapped table), without
    /// copying it; `None` if the key is absent (`f` is then not called).
    /// A value assembled from merge operands is built first, as `get`
    /// builds it. RocksDB's `Get` into a `PinnableSlice`.
    pub fn get_with<R>(
        &self,
        opts: &ReadOptions,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.inner.get_with(opts, 0, key, f)
    }

    /// [`DB::get_with`] in column family `cf`.
    pub fn get_with_cf<R>(
        &self,
        opts: &ReadOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.inner.get_with(opts, cf.id, key, f)
    }

    /// Reads several keys from one consistent view.
    /// Whether `key` may exist, without I/O (RocksDB's `KeyMayExist`):
    /// `(false, None)` only if it surely does not (memtables, open table
    /// readers' filters and cached blocks say so), `(true, Some(value))`
    /// when the value was found that way, `(true, None)` when finding out
    /// would need a read.
    pub fn key_may_exist(&self, opts: &ReadOptions, key: &[u8]) -> (bool, Option<Vec<u8>>) {
        self.key_may_exist_in(opts, 0, key)
    }

    pub fn key_may_exist_cf(
        &self,
        opts: &ReadOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
    ) -> (bool, Option<Vec<u8>>) {
        self.key_may_exist_in(opts, cf.id, key)
    }

    fn key_may_exist_in(&self, opts: &ReadOptions, cf: u32, key: &[u8]) -> (bool, Option<Vec<u8>>) {
        let ro = ReadOptions {
            read_tier: crate::options::ReadTier::BlockCache,
            ..opts.clone()
        };
        match self.inner.get(&ro, cf, key) {
            Ok(Some(v)) => (true, Some(v)),
            Ok(None) => (false, None),
            // Incomplete (or any error) cannot rule the key out.
            Err(_) => (true, None),
        }
    }

    pub fn multi_get(&self, opts: &ReadOptions, keys: &[&[u8]]) -> Vec<Result<Option<Vec<u8>>>> {
        self.inner.multi_get(opts, 0, keys)
    }

    pub fn multi_get_cf(
        &self,
        opts: &ReadOptions,
        cf: &ColumnFamilyHandle,
        keys: &[&[u8]],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        self.inner.multi_get(opts, cf.id, keys)
    }

    /// An iterator positioned at the first key (in bounds).
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        self.inner.iter(opts, 0)
    }

    pub fn iter_cf(&self, opts: &ReadOptions, cf: &ColumnFamilyHandle) -> Result<DbIterator> {
        self.inner.iter(opts, cf.id)
    }

    /// An iterator that is not positioned yet (RocksDB's `NewIterator`):
    /// call a seek before reading. Cheaper than [`DB::iter`] when the
    /// first thing done is a seek.
    pub fn new_iterator(&self, opts: &ReadOptions) -> Result<DbIterator> {
        self.inner.new_iterator(opts, 0)
    }

    pub fn new_iterator_cf(
        &self,
        opts: &ReadOptions,
        cf: &ColumnFamilyHandle,
    ) -> Result<DbIterator> {
        self.inner.new_iterator(opts, cf.id)
    }

    /// Every stored version of the keys of `cf` in `[begin, end]` (both
    /// inclusive, `None` unbounded) that no range tombstone covers, in
    /// internal-key order, at most `max` (0: all): RocksDB's
    /// `GetAllKeyVersions`, for debugging (`strata idump`).
    pub fn get_all_key_versions(
        &self,
        cf: &ColumnFamilyHandle,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        max: usize,
    ) -> Result<Vec<super::KeyVersion>> {
        self.inner.all_key_versions(cf.id, begin, end, max)
    }

    /// A snapshot of the current state; pass `snapshot.sequence()` in
    /// `ReadOptions::snapshot` to read at it. With in-place updates (see
    /// [`DB::snapshots_supported`]) a later in-place update of a key is
    /// seen at it.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshot()
    }

    /// False when a column family has `inplace_update_support`: RocksDB's
    /// `GetSnapshot` then returns no snapshot (reads see the latest data),
    /// as the C API does here.
    pub fn snapshots_supported(&self) -> bool {
        !self
            .inner
            .lock_state()
            .cfs
            .values()
            .any(|c| !c.dropped && c.options.inplace_update_support)
    }

    /// The memtable budget this database charges its memtables to (its
    /// own for `db_write_buffer_size`, or the shared one it was given).
    pub fn write_buffer_manager(
        &self,
    ) -> Option<std::sync::Arc<crate::memtable::WriteBufferManager>> {
        self.inner.options.write_buffer_manager.clone()
    }

    /// Flushes the default column family's memtable to a table and waits.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush(0)
    }

    pub fn flush_cf(&self, cf: &ColumnFamilyHandle) -> Result<()> {
        self.inner.flush(cf.id)
    }

    /// Hands the WAL's buffered records to the OS (they then survive a
    /// process crash) and, with `sync`, makes every WAL durable (they then
    /// survive a power loss): RocksDB's `FlushWAL`. Needed with
    /// `Options::manual_wal_flush`; harmless without it.
    pub fn flush_wal(&self, sync: bool) -> Result<()> {
        self.inner.flush_wal(sync)
    }

    /// `flush_wal(true)`: RocksDB's `SyncWAL`.
    pub fn sync_wal(&self) -> Result<()> {
        self.inner.flush_wal(true)
    }
}

impl DB {
    /// Reads every block of every live table and checks its checksum, as
    /// `ldb checkconsistency` does; the error names the file and offset.
    pub fn verify_checksums(&self) -> Result<()> {
        let inner = &self.inner;
        let cfs: Vec<u32> = inner.super_versions.load().keys().copied().collect();
        for cf in cfs {
            let sv = inner.super_version(cf)?;
            let mut topts = (*sv.table_options).clone();
            topts.verify_checksums = true;
            for level in 0..sv.version.num_levels() {
                for f in sv.version.files(level) {
                    let path = inner.table_paths.table_file(f.path_id, f.number);
                    let size = super::consistency::check_table_size(
                        inner.fs.as_ref(),
                        &inner.table_paths,
                        f,
                    )?;
                    let file = inner.fs.new_random_access_file(&path)?;
                    let t = std::sync::Arc::new(crate::table::Table::open(
                        file,
                        &path.to_string_lossy(),
                        size,
                        &topts,
                    )?);
                    t.verify_checksums()?;
                }
            }
        }
        Ok(())
    }

    /// Approximate bytes on disk of the keys in `[from, to)` of `cf`.
    pub fn approximate_size(&self, cf: &ColumnFamilyHandle, from: &[u8], to: &[u8]) -> Result<u64> {
        let inner = &self.inner;
        let sv = inner.super_version(cf.id)?;
        let lo = crate::format::make_internal_key(
            from,
            crate::format::MAX_SEQUENCE_NUMBER,
            crate::format::ValueType::WideColumnEntity,
        );
        let hi = crate::format::make_internal_key(
            to,
            crate::format::MAX_SEQUENCE_NUMBER,
            crate::format::ValueType::WideColumnEntity,
        );
        let mut total = 0;
        for level in 0..sv.version.num_levels() {
            for f in sv.version.files(level) {
                let t = inner.sv_table(&sv, f)?;
                let (a, b) = (t.approximate_offset_of(&lo), t.approximate_offset_of(&hi));
                total += b.saturating_sub(a);
            }
        }
        Ok(total)
    }
}
