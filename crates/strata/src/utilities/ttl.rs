//! `DBWithTTL` (RocksDB's `utilities/ttl`): every value written through
//! it carries a 4-byte little-endian Unix-seconds timestamp suffix, the
//! layout RocksDB uses, so `ldb --ttl` reads Strata's TTL databases and
//! Strata reads RocksDB's. Compactions drop values older than their
//! column family's TTL (a wrapping compaction filter, "Delete By TTL"),
//! and merges strip and re-stamp timestamps (a wrapping merge operator,
//! "Merge By TTL").
//!
//! As in RocksDB, reads do not check expiry: an expired value is returned
//! until a compaction removes it. A TTL of zero or less means forever.
//!
//! Invariants: every put and merge operand reaching the database through
//! this type ends with a timestamp; reads strip exactly those 4 bytes and
//! report a shorter or pre-2013 suffix as corruption (RocksDB's
//! `SanityCheckTimestamp`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use crate::compaction_filter::{CompactionFilter, CompactionFilterRef, Decision, unix_now_seconds};
use crate::db::{ColumnFamilyDescriptor, ColumnFamilyHandle, DB, DbIterator};
use crate::error::{Error, Result};
use crate::format::WriteBatch;
use crate::format::write_batch::BatchRecord;
use crate::merge_operator::{MergeOperator, MergeOperatorRef};
use crate::options::{ColumnFamilyOptions, Options, ReadOptions, WriteOptions};

/// Bytes of the timestamp suffix.
pub const TS_LENGTH: usize = 4;
/// RocksDB's `kMinTimestamp`: the TTL feature's release (2013-05-10);
/// older suffixes are not timestamps.
pub const MIN_TIMESTAMP: u32 = 1_368_146_402;

/// The clock, in Unix seconds.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// `value` with `now` appended.
pub fn append_ts(value: &[u8], now: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(value.len() + TS_LENGTH);
    v.extend_from_slice(value);
    push_ts(&mut v, now);
    v
}

/// Appends the timestamp suffix for `now` to the value in `out`.
pub fn push_ts(out: &mut Vec<u8>, now: u64) {
    out.extend_from_slice(&(now as u32).to_le_bytes());
}

/// `batch` with every put and merge value stamped `now` (what
/// [`DBWithTTL::write`] writes; bindings that keep their own handle on a
/// TTL database's [`DB`] use it too).
pub fn stamp_batch(batch: &WriteBatch, now: u64) -> Result<WriteBatch> {
    let mut out = WriteBatch::with_capacity(batch.data().len() + 5 * batch.count() as usize);
    for r in batch.iter() {
        match r? {
            BatchRecord::Put { cf, key, value } => out.put_cf(cf, key, &append_ts(value, now)),
            BatchRecord::Merge { cf, key, value } => out.merge_cf(cf, key, &append_ts(value, now)),
            BatchRecord::Delete { cf, key } => out.delete_cf(cf, key),
            BatchRecord::SingleDelete { cf, key } => out.single_delete_cf(cf, key),
            BatchRecord::DeleteRange { cf, begin, end } => out.delete_range_cf(cf, begin, end),
            BatchRecord::LogData(blob) => out.put_log_data(blob),
            other => {
                return Err(Error::NotSupported(format!(
                    "DBWithTTL::write: record {other:?}"
                )));
            }
        }
    }
    Ok(out)
}

/// The value without its timestamp, after RocksDB's sanity check.
pub fn strip_ts(value: &[u8]) -> Result<&[u8]> {
    let Some(cut) = value.len().checked_sub(TS_LENGTH) else {
        return Err(Error::corruption(
            "",
            0,
            "Error: value's length less than timestamp's",
        ));
    };
    if timestamp_of(value) < MIN_TIMESTAMP {
        return Err(Error::corruption(
            "",
            0,
            "Error: Timestamp < ttl feature release time!",
        ));
    }
    Ok(&value[..cut])
}

fn timestamp_of(value: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&value[value.len() - TS_LENGTH..]);
    u32::from_le_bytes(b)
}

/// Whether `value` (with its suffix) is older than `ttl` seconds.
fn is_stale(value: &[u8], ttl: i32, now: u64) -> bool {
    if ttl <= 0 || value.len() < TS_LENGTH {
        return false;
    }
    u64::from(timestamp_of(value)) + u64::from(ttl.unsigned_abs()) < now
}

/// Drops stale values, then asks the user's filter about the rest
/// (without the suffix; a changed value is stamped again).
struct TtlCompactionFilter {
    ttl: Arc<RwLock<i32>>,
    clock: Clock,
    user: Option<CompactionFilterRef>,
}

impl CompactionFilter for TtlCompactionFilter {
    fn name(&self) -> &str {
        "Delete By TTL"
    }

    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> Decision {
        let ttl = *self
            .ttl
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = (self.clock)();
        if is_stale(value, ttl, now) {
            return Decision::Remove;
        }
        let Some(user) = &self.user else {
            return Decision::Keep;
        };
        let Ok(plain) = strip_ts(value) else {
            return Decision::Keep;
        };
        match user.filter(level, key, plain) {
            Decision::ChangeValue(v) => Decision::ChangeValue(append_ts(&v, now)),
            d => d,
        }
    }
}

/// Runs the user's merge on values and operands without their suffixes
/// and stamps the result with the current time.
struct TtlMergeOperator {
    user: MergeOperatorRef,
    clock: Clock,
}

impl MergeOperator for TtlMergeOperator {
    fn name(&self) -> &str {
        "Merge By TTL"
    }

    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let existing = match existing {
            Some(e) => Some(strip_ts(e).ok()?),
            None => None,
        };
        let ops: Option<Vec<&[u8]>> = operands.iter().map(|o| strip_ts(o).ok()).collect();
        let merged = self.user.full_merge(key, existing, &ops?)?;
        Some(append_ts(&merged, (self.clock)()))
    }
}

/// A database whose values expire.
pub struct DBWithTTL {
    db: DB,
    ttls: HashMap<u32, Arc<RwLock<i32>>>,
    clock: Clock,
}

impl std::fmt::Debug for DBWithTTL {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DBWithTTL").field("db", &self.db).finish()
    }
}

impl DBWithTTL {
    /// Opens `path` with one TTL (seconds) for the default column family.
    pub fn open(opts: Options, path: impl AsRef<Path>, ttl: i32) -> Result<Self> {
        let cf = opts.cf.clone();
        Self::open_cf(
            opts,
            path,
            vec![ColumnFamilyDescriptor::new("default", cf)],
            &[ttl],
            false,
        )
    }

    /// Opens with a TTL per column family (`ttls[i]` for `cfs[i]`).
    pub fn open_cf(
        opts: Options,
        path: impl AsRef<Path>,
        cfs: Vec<ColumnFamilyDescriptor>,
        ttls: &[i32],
        read_only: bool,
    ) -> Result<Self> {
        Self::open_cf_with_clock(opts, path, cfs, ttls, read_only, Arc::new(unix_now_seconds))
    }

    /// [`Self::open_cf`] with a clock of the caller's (tests).
    pub fn open_cf_with_clock(
        opts: Options,
        path: impl AsRef<Path>,
        cfs: Vec<ColumnFamilyDescriptor>,
        ttls: &[i32],
        read_only: bool,
        clock: Clock,
    ) -> Result<Self> {
        if ttls.len() != cfs.len() {
            return Err(Error::InvalidArgument(
                "ttls size has to be the same as number of column families".into(),
            ));
        }
        let mut cells = Vec::new();
        let cfs: Vec<ColumnFamilyDescriptor> = cfs
            .into_iter()
            .zip(ttls)
            .map(|(d, &ttl)| {
                let cell = Arc::new(RwLock::new(ttl));
                cells.push((d.name.clone(), cell.clone()));
                ColumnFamilyDescriptor::new(d.name, wrap_options(d.options, cell, &clock))
            })
            .collect();
        let db = if read_only {
            DB::open_cf_read_only(opts, path, cfs)?
        } else {
            DB::open_cf(opts, path, cfs)?
        };
        let mut ttls = HashMap::new();
        for (name, cell) in cells {
            if let Some(h) = db.cf_handle(&name) {
                ttls.insert(h.id, cell);
            }
        }
        Ok(DBWithTTL { db, ttls, clock })
    }

    /// The database underneath: values read through it keep their
    /// timestamp suffix.
    pub fn db(&self) -> &DB {
        &self.db
    }

    pub fn into_db(self) -> DB {
        self.db
    }

    /// Creates a column family whose values live `ttl` seconds.
    pub fn create_column_family_with_ttl(
        &mut self,
        name: &str,
        options: ColumnFamilyOptions,
        ttl: i32,
    ) -> Result<ColumnFamilyHandle> {
        let cell = Arc::new(RwLock::new(ttl));
        let h = self
            .db
            .create_column_family(name, wrap_options(options, cell.clone(), &self.clock))?;
        self.ttls.insert(h.id, cell);
        Ok(h)
    }

    /// Changes a column family's TTL for the compactions that start
    /// after (RocksDB's `SetTtl`).
    pub fn set_ttl(&self, cf: &ColumnFamilyHandle, ttl: i32) -> Result<()> {
        let cell = self
            .ttls
            .get(&cf.id)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown column family {}", cf.name)))?;
        *cell
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = ttl;
        Ok(())
    }

    pub fn get_ttl(&self, cf: &ColumnFamilyHandle) -> Option<i32> {
        self.ttls
            .get(&cf.id)
            .map(|c| *c.read().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    pub fn put(&self, wo: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_cf(wo, &self.db.default_cf(), key, value)
    }

    pub fn put_cf(
        &self,
        wo: &WriteOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        self.db
            .put_cf(wo, cf, key, &append_ts(value, (self.clock)()))
    }

    pub fn merge(&self, wo: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        self.merge_cf(wo, &self.db.default_cf(), key, value)
    }

    pub fn merge_cf(
        &self,
        wo: &WriteOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        self.db
            .merge_cf(wo, cf, key, &append_ts(value, (self.clock)()))
    }

    pub fn delete(&self, wo: &WriteOptions, key: &[u8]) -> Result<()> {
        self.db.delete(wo, key)
    }

    pub fn delete_cf(&self, wo: &WriteOptions, cf: &ColumnFamilyHandle, key: &[u8]) -> Result<()> {
        self.db.delete_cf(wo, cf, key)
    }

    /// Writes `batch` with every put and merge value stamped.
    pub fn write(&self, wo: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.db.write(wo, stamp_batch(&batch, (self.clock)())?)
    }

    /// The value without its timestamp (an expired value not yet
    /// compacted away is still returned, as in RocksDB).
    pub fn get(&self, ro: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_cf(ro, &self.db.default_cf(), key)
    }

    pub fn get_cf(
        &self,
        ro: &ReadOptions,
        cf: &ColumnFamilyHandle,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        match self.db.get_cf(ro, cf, key)? {
            Some(v) => Ok(Some(strip_ts(&v)?.to_vec())),
            None => Ok(None),
        }
    }

    pub fn multi_get(&self, ro: &ReadOptions, keys: &[&[u8]]) -> Vec<Result<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.get(ro, k)).collect()
    }

    pub fn iter(&self, ro: &ReadOptions) -> Result<TtlIterator> {
        self.iter_cf(ro, &self.db.default_cf())
    }

    pub fn iter_cf(&self, ro: &ReadOptions, cf: &ColumnFamilyHandle) -> Result<TtlIterator> {
        Ok(TtlIterator {
            inner: self.db.iter_cf(ro, cf)?,
        })
    }
}

/// Column-family options with the TTL filter and merge operator wrapped
/// around the user's.
fn wrap_options(
    mut o: ColumnFamilyOptions,
    ttl: Arc<RwLock<i32>>,
    clock: &Clock,
) -> ColumnFamilyOptions {
    o.compaction_filter = Some(Arc::new(TtlCompactionFilter {
        ttl,
        clock: clock.clone(),
        user: o.compaction_filter.take(),
    }));
    if let Some(user) = o.merge_operator.take() {
        o.merge_operator = Some(Arc::new(TtlMergeOperator {
            user,
            clock: clock.clone(),
        }));
    }
    o
}

/// A database iterator whose values come without their timestamps.
pub struct TtlIterator {
    inner: DbIterator,
}

impl std::fmt::Debug for TtlIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlIterator").finish()
    }
}

impl TtlIterator {
    pub fn valid(&self) -> bool {
        self.inner.valid()
    }
    pub fn key(&self) -> &[u8] {
        self.inner.key()
    }
    /// The value without its suffix (a value too short for one is
    /// returned empty).
    pub fn value(&self) -> &[u8] {
        let v = self.inner.value();
        &v[..v.len().saturating_sub(TS_LENGTH)]
    }
    /// The value's timestamp (Unix seconds), if it has one.
    pub fn timestamp(&self) -> Option<u32> {
        let v = self.inner.value();
        (v.len() >= TS_LENGTH).then(|| timestamp_of(v))
    }
    pub fn seek_to_first(&mut self) {
        self.inner.seek_to_first()
    }
    pub fn seek_to_last(&mut self) {
        self.inner.seek_to_last()
    }
    pub fn seek(&mut self, k: &[u8]) {
        self.inner.seek(k)
    }
    pub fn seek_for_prev(&mut self, k: &[u8]) {
        self.inner.seek_for_prev(k)
    }
    pub fn next(&mut self) {
        self.inner.next()
    }
    pub fn prev(&mut self) {
        self.inner.prev()
    }
    pub fn status(&self) -> Result<()> {
        self.inner.status()
    }
}
