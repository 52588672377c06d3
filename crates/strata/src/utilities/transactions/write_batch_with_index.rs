//! `WriteBatchWithIndex` (RocksDB's `utilities/write_batch_with_index`): a
//! [`WriteBatch`] plus a per-column-family index of its entries ordered by
//! the column family's comparator, so the batch can be read before it is
//! written: point lookups alone or on top of the database, and iterators
//! merging the batch with a database iterator
//! ([`super::base_delta_iterator`]).
//!
//! Invariants: every indexed offset is the start of a point record (put,
//! delete, single delete, merge) of `batch` for that column family and
//! key; a key's offsets are in batch order; with `overwrite_key`, a key's
//! list starts at its latest put or delete (older entries cannot matter).
//! Range deletions are refused (as RocksDB 7.8.3's WBWI does): a range
//! could not be answered from a point index.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use crate::db::ColumnFamilyHandle;
use crate::error::{Error, Result};
use crate::format::WriteBatch;
use crate::format::write_batch::BatchRecord;
use crate::merge_operator::MergeOperator;
use crate::util::comparator::{ComparatorRef, bytewise};

/// What an indexed entry does to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteType {
    Put,
    Merge,
    Delete,
    SingleDelete,
}

/// One indexed entry, as the batch holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteEntry<'a> {
    pub kind: WriteType,
    pub key: &'a [u8],
    /// Empty for deletions.
    pub value: &'a [u8],
}

/// What the batch alone says about a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchLookup {
    /// The batch does not touch the key.
    NotFound,
    /// The batch sets the key (merges on a put or delete in the batch
    /// applied).
    Found(Vec<u8>),
    /// The batch deletes the key.
    Deleted,
    /// Only merge operands, oldest first: the base is in the database.
    MergeInProgress(Vec<Vec<u8>>),
}

/// A key ordered by its column family's comparator.
#[derive(Clone)]
pub(crate) struct IndexKey {
    pub(crate) key: Vec<u8>,
    cmp: ComparatorRef,
}

impl IndexKey {
    pub(crate) fn new(key: &[u8], cmp: &ComparatorRef) -> IndexKey {
        IndexKey {
            key: key.to_vec(),
            cmp: cmp.clone(),
        }
    }
}

impl PartialEq for IndexKey {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for IndexKey {}
impl PartialOrd for IndexKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for IndexKey {
    fn cmp(&self, o: &Self) -> Ordering {
        self.cmp.compare(&self.key, &o.key)
    }
}

/// The index of one column family: key -> offsets of its records.
pub(crate) type CfIndex = BTreeMap<IndexKey, Vec<usize>>;

/// A write batch that can be searched.
#[derive(Clone)]
pub struct WriteBatchWithIndex {
    batch: WriteBatch,
    overwrite_key: bool,
    /// Comparator of column families without their own.
    default_cmp: ComparatorRef,
    cmps: HashMap<u32, ComparatorRef>,
    index: HashMap<u32, CfIndex>,
    /// `(data().len(), count())` at each save point.
    save_points: Vec<(usize, u32)>,
}

impl Default for WriteBatchWithIndex {
    fn default() -> Self {
        Self::new(bytewise(), false)
    }
}

impl std::fmt::Debug for WriteBatchWithIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatchWithIndex")
            .field("count", &self.batch.count())
            .field("overwrite_key", &self.overwrite_key)
            .finish()
    }
}

impl WriteBatchWithIndex {
    /// RocksDB's `NewIteratorWithBase`: `base`, an iterator of column
    /// family `cf`, overlaid with this batch's writes to `cf` as they are
    /// now (the batch is copied: later writes to it are not seen). Merges
    /// in the batch apply `merge` (none: such an entry is an error).
    pub fn iter_with_base(
        &self,
        base: crate::db::DbIterator,
        cf: u32,
        merge: Option<crate::merge_operator::MergeOperatorRef>,
    ) -> super::BaseDeltaIterator<'static> {
        super::BaseDeltaIterator::new(
            base,
            std::borrow::Cow::Owned(self.clone()),
            cf,
            merge,
            None,
            None,
        )
    }
}

impl WriteBatchWithIndex {
    /// An empty batch whose column families order keys with `cmp` unless
    /// [`Self::set_comparator`] says otherwise. With `overwrite_key`, a put
    /// or delete hides the key's earlier entries from the index (and from
    /// [`Self::entries_cf`]); the batch itself keeps every record.
    pub fn new(cmp: ComparatorRef, overwrite_key: bool) -> Self {
        WriteBatchWithIndex {
            batch: WriteBatch::new(),
            overwrite_key,
            default_cmp: cmp,
            cmps: HashMap::new(),
            index: HashMap::new(),
            save_points: Vec::new(),
        }
    }

    /// Orders column family `cf`'s keys with `cmp` (its comparator in the
    /// database). REQUIRES: nothing was added to `cf` yet.
    pub fn set_comparator(&mut self, cf: u32, cmp: ComparatorRef) {
        debug_assert!(self.index.get(&cf).is_none_or(|i| i.is_empty()));
        self.cmps.insert(cf, cmp);
    }

    pub(crate) fn has_comparator(&self, cf: u32) -> bool {
        self.cmps.contains_key(&cf)
    }

    pub(crate) fn comparator(&self, cf: u32) -> &ComparatorRef {
        self.cmps.get(&cf).unwrap_or(&self.default_cmp)
    }

    pub fn overwrite_key(&self) -> bool {
        self.overwrite_key
    }

    /// The batch, to write it.
    pub fn write_batch(&self) -> &WriteBatch {
        &self.batch
    }

    pub fn into_write_batch(self) -> WriteBatch {
        self.batch
    }

    /// Counted records in the batch.
    pub fn count(&self) -> u32 {
        self.batch.count()
    }

    pub fn is_empty(&self) -> bool {
        self.batch.count() == 0
    }

    /// Empties the batch, its index and its save points.
    pub fn clear(&mut self) {
        self.batch.clear();
        self.index.clear();
        self.save_points.clear();
    }

    fn add(&mut self, cf: u32, key: &[u8], kind: WriteType, write: impl FnOnce(&mut WriteBatch)) {
        let offset = self.batch.data().len();
        write(&mut self.batch);
        let cmp = self.comparator(cf).clone();
        let overwrite = self.overwrite_key && kind != WriteType::Merge;
        let list = self
            .index
            .entry(cf)
            .or_default()
            .entry(IndexKey::new(key, &cmp))
            .or_default();
        if overwrite {
            list.clear();
        }
        list.push(offset);
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.put_cf_id(0, key, value)
    }

    pub fn put_cf(&mut self, cf: &ColumnFamilyHandle, key: &[u8], value: &[u8]) {
        self.put_cf_id(cf.id, key, value)
    }

    pub fn put_cf_id(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        self.add(cf, key, WriteType::Put, |b| b.put_cf(cf, key, value))
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.delete_cf_id(0, key)
    }

    pub fn delete_cf(&mut self, cf: &ColumnFamilyHandle, key: &[u8]) {
        self.delete_cf_id(cf.id, key)
    }

    pub fn delete_cf_id(&mut self, cf: u32, key: &[u8]) {
        self.add(cf, key, WriteType::Delete, |b| b.delete_cf(cf, key))
    }

    pub fn single_delete(&mut self, key: &[u8]) {
        self.single_delete_cf_id(0, key)
    }

    pub fn single_delete_cf(&mut self, cf: &ColumnFamilyHandle, key: &[u8]) {
        self.single_delete_cf_id(cf.id, key)
    }

    pub fn single_delete_cf_id(&mut self, cf: u32, key: &[u8]) {
        self.add(cf, key, WriteType::SingleDelete, |b| {
            b.single_delete_cf(cf, key)
        })
    }

    pub fn merge(&mut self, key: &[u8], value: &[u8]) {
        self.merge_cf_id(0, key, value)
    }

    pub fn merge_cf(&mut self, cf: &ColumnFamilyHandle, key: &[u8], value: &[u8]) {
        self.merge_cf_id(cf.id, key, value)
    }

    pub fn merge_cf_id(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        self.add(cf, key, WriteType::Merge, |b| b.merge_cf(cf, key, value))
    }

    /// Refused, as in RocksDB 7.8.3: a range deletion cannot be answered
    /// from a point index.
    pub fn delete_range(&mut self, _begin: &[u8], _end: &[u8]) -> Result<()> {
        Err(Error::NotSupported(
            "DeleteRange unsupported in WriteBatchWithIndex".into(),
        ))
    }

    /// A blob for the WAL only (not indexed, no sequence number).
    pub fn put_log_data(&mut self, blob: &[u8]) {
        self.batch.put_log_data(blob);
    }

    /// Remembers the current state for [`Self::rollback_to_save_point`].
    pub fn set_save_point(&mut self) {
        self.save_points
            .push((self.batch.data().len(), self.batch.count()));
    }

    /// Undoes everything added since the last save point (and forgets
    /// it); `NotFound` without one.
    pub fn rollback_to_save_point(&mut self) -> Result<()> {
        let (len, count) = self
            .save_points
            .pop()
            .ok_or_else(|| Error::NotFound("No savepoint".into()))?;
        self.batch.truncate(len, count);
        self.rebuild_index()
    }

    /// Forgets the last save point; `NotFound` without one.
    pub fn pop_save_point(&mut self) -> Result<()> {
        self.save_points
            .pop()
            .map(|_| ())
            .ok_or_else(|| Error::NotFound("No savepoint".into()))
    }

    fn rebuild_index(&mut self) -> Result<()> {
        self.index.clear();
        let mut it = self.batch.iter();
        let mut found = Vec::new();
        loop {
            let offset = it.offset();
            let Some(r) = it.next() else { break };
            if let Some((cf, kind, key, _)) = point_record(r?) {
                found.push((cf, kind, key.to_vec(), offset));
            }
        }
        for (cf, kind, key, offset) in found {
            let cmp = self.comparator(cf).clone();
            let list = self
                .index
                .entry(cf)
                .or_default()
                .entry(IndexKey::new(&key, &cmp))
                .or_default();
            if self.overwrite_key && kind != WriteType::Merge {
                list.clear();
            }
            list.push(offset);
        }
        Ok(())
    }

    /// The entry recorded at `offset`.
    pub(crate) fn entry_at(&self, offset: usize) -> Result<WriteEntry<'_>> {
        match point_record(self.batch.record_at(offset)?) {
            Some((_, kind, key, value)) => Ok(WriteEntry { kind, key, value }),
            None => Err(Error::corruption(
                "",
                offset as u64,
                "WriteBatchWithIndex: index names a record that is not a point entry",
            )),
        }
    }

    /// The indexed entries of column family `cf`, in key order and, for
    /// one key, in batch order (RocksDB's `WBWIIterator`).
    pub fn entries_cf(&self, cf: u32) -> Result<Vec<WriteEntry<'_>>> {
        let mut out = Vec::new();
        if let Some(idx) = self.index.get(&cf) {
            for offsets in idx.values() {
                for &o in offsets {
                    out.push(self.entry_at(o)?);
                }
            }
        }
        Ok(out)
    }

    /// The batch's value of `key` in `cf`, merging with `merge` where the
    /// batch holds both the base and its operands (RocksDB's
    /// `GetFromBatch`): `None` if the batch does not set it or deletes it
    /// (the two are told apart by [`Self::lookup`]); `MergeInProgress`
    /// when the base is not in the batch.
    pub fn get_from_batch(
        &self,
        cf: u32,
        key: &[u8],
        merge: Option<&dyn MergeOperator>,
    ) -> Result<Option<Vec<u8>>> {
        match self.lookup(cf, key, merge)? {
            BatchLookup::Found(v) => Ok(Some(v)),
            BatchLookup::Deleted | BatchLookup::NotFound => Ok(None),
            BatchLookup::MergeInProgress(_) => Err(Error::MergeInProgress(String::new())),
        }
    }

    /// `key` read through the batch, then from `db` as `ro` says (RocksDB's
    /// `GetFromBatchAndDB`): the batch's merges apply to the database's
    /// value; `cf` `None` is the default column family.
    pub fn get_from_batch_and_db(
        &self,
        db: &crate::DB,
        ro: &crate::ReadOptions,
        cf: Option<&ColumnFamilyHandle>,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        super::transaction::get_from_batch_and_db(self, db, ro, cf.map_or(0, |c| c.id), key)
    }

    /// What the batch alone says about `key` in column family `cf`, with
    /// merges on a base in the batch applied by `merge`.
    pub fn lookup(
        &self,
        cf: u32,
        key: &[u8],
        merge: Option<&dyn MergeOperator>,
    ) -> Result<BatchLookup> {
        let Some(idx) = self.index.get(&cf) else {
            return Ok(BatchLookup::NotFound);
        };
        match idx.get(&IndexKey::new(key, self.comparator(cf))) {
            None => Ok(BatchLookup::NotFound),
            Some(offsets) => self.resolve_with(key, offsets, merge),
        }
    }

    /// Folds a key's entries, applying merges that sit on a batch base.
    pub(crate) fn resolve_with(
        &self,
        key: &[u8],
        offsets: &[usize],
        merge: Option<&dyn MergeOperator>,
    ) -> Result<BatchLookup> {
        let mut base: Option<Option<Vec<u8>>> = None;
        let mut operands: Vec<Vec<u8>> = Vec::new();
        for &o in offsets {
            let e = self.entry_at(o)?;
            match e.kind {
                WriteType::Put => {
                    base = Some(Some(e.value.to_vec()));
                    operands.clear();
                }
                WriteType::Delete | WriteType::SingleDelete => {
                    base = Some(None);
                    operands.clear();
                }
                WriteType::Merge => operands.push(e.value.to_vec()),
            }
        }
        match base {
            None if operands.is_empty() => Ok(BatchLookup::NotFound),
            None => Ok(BatchLookup::MergeInProgress(operands)),
            Some(b) if operands.is_empty() => Ok(match b {
                Some(v) => BatchLookup::Found(v),
                None => BatchLookup::Deleted,
            }),
            Some(b) => full_merge(merge, key, b.as_deref(), &operands).map(BatchLookup::Found),
        }
    }

    /// The first key of `cf` after `from` (forward) or the last before it
    /// (backward), with its offsets: an iterator's cursor step.
    pub(crate) fn range_after(
        &self,
        cf: u32,
        from: Bound<&[u8]>,
        forward: bool,
    ) -> Option<(&IndexKey, &Vec<usize>)> {
        let idx = self.index.get(&cf)?;
        let cmp = self.comparator(cf);
        let b = match from {
            Bound::Included(k) => Bound::Included(IndexKey::new(k, cmp)),
            Bound::Excluded(k) => Bound::Excluded(IndexKey::new(k, cmp)),
            Bound::Unbounded => Bound::Unbounded,
        };
        if forward {
            idx.range((b, Bound::Unbounded)).next()
        } else {
            idx.range((Bound::Unbounded, b)).next_back()
        }
    }
}

/// Applies `operands` to `base` with `merge`.
pub(crate) fn full_merge(
    merge: Option<&dyn MergeOperator>,
    key: &[u8],
    base: Option<&[u8]>,
    operands: &[Vec<u8>],
) -> Result<Vec<u8>> {
    let op = merge.ok_or_else(|| {
        Error::InvalidArgument("Merge_operator must be set for column_family".into())
    })?;
    let refs: Vec<&[u8]> = operands.iter().map(|v| v.as_slice()).collect();
    op.full_merge(key, base, &refs)
        .ok_or_else(|| Error::corruption("", 0, "Error: Could not perform merge."))
}

/// A point record's column family, kind, key and value.
fn point_record(r: BatchRecord<'_>) -> Option<(u32, WriteType, &[u8], &[u8])> {
    match r {
        BatchRecord::Put { cf, key, value } => Some((cf, WriteType::Put, key, value)),
        BatchRecord::Merge { cf, key, value } => Some((cf, WriteType::Merge, key, value)),
        BatchRecord::Delete { cf, key } => Some((cf, WriteType::Delete, key, &[])),
        BatchRecord::SingleDelete { cf, key } => Some((cf, WriteType::SingleDelete, key, &[])),
        _ => None,
    }
}
