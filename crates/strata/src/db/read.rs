//! The read path: point lookups, consistent multi-gets, iterators and
//! snapshots, all against a SuperVersion loaded without locks.
//!
//! Invariants: a read uses one SuperVersion and one sequence number
//! throughout; sources are consulted newest first (active memtable,
//! immutable memtables newest first, level-0 files newest first, then each
//! deeper level), and a lookup stops at the first entry that settles it.

use crate::util::statistics::{HistogramKind, StopWatch, Ticker, record};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::get_context::GetContext;
use super::super_version::FrozenRangeDels;
use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::format::dbformat::{VALUE_TYPE_FOR_SEEK, make_internal_key};
use crate::format::iterator::InternalIterator;
use crate::format::range_tombstones::{FragmentedRangeTombstoneList, RangeDelAggregator};
use crate::format::{SequenceNumber, parse_internal_key};
use crate::iter::{DBIter, DBIterOptions, MergingIterator};
use crate::options::{ReadOptions, ReadTier};
use crate::table::{PrefixSeekIter, Table};

/// A point-in-time view; reads given its sequence see the database as it
/// was when it was taken. Released when dropped.
pub struct Snapshot {
    pub(crate) seq: SequenceNumber,
    pub(crate) db: Weak<DbInner>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("seq", &self.seq).finish()
    }
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SequenceNumber {
        self.seq
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if let Some(db) = self.db.upgrade() {
            db.release_snapshot(self.seq);
        }
    }
}

/// An iterator over a column family at one snapshot. It keeps the files and
/// memtables it reads alive until dropped.
pub struct DbIterator {
    pub(crate) iter: DBIter,
    pub(crate) _sv: Arc<SuperVersion>,
    pub(crate) stats: Option<Arc<crate::util::statistics::Statistics>>,
    /// A snapshot the iterator took for itself (WritePrepared reads).
    pub(crate) _snapshot: Option<Snapshot>,
}

impl std::fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIterator")
            .field("iter", &self.iter)
            .finish()
    }
}

/// One version of a key (RocksDB's `KeyVersion`, from
/// [`crate::DB::get_all_key_versions`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyVersion {
    pub user_key: Vec<u8>,
    pub value: Vec<u8>,
    pub sequence: SequenceNumber,
    /// RocksDB's value type byte (1 value, 0 deletion, 2 merge, 7 single
    /// deletion, ...).
    pub value_type: u8,
}

impl DbIterator {
    pub fn valid(&self) -> bool {
        self.iter.valid()
    }
    pub fn key(&self) -> &[u8] {
        self.iter.key()
    }
    pub fn value(&self) -> &[u8] {
        self.iter.value()
    }
    pub fn seek_to_first(&mut self) {
        self.iter.seek_to_first();
        self.count_seek();
    }
    pub fn seek_to_last(&mut self) {
        self.iter.seek_to_last();
        self.count_seek();
    }
    pub fn seek(&mut self, key: &[u8]) {
        let _t = StopWatch::new(&self.stats, HistogramKind::DbSeek);
        self.iter.seek(key);
        self.count_seek();
    }
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        let _t = StopWatch::new(&self.stats, HistogramKind::DbSeek);
        self.iter.seek_for_prev(key);
        self.count_seek();
    }
    pub fn next(&mut self) {
        self.iter.next();
        self.count_step(Ticker::NumberDbNext);
    }
    pub fn prev(&mut self) {
        self.iter.prev();
        self.count_step(Ticker::NumberDbPrev);
    }

    fn count_seek(&self) {
        if let Some(s) = &self.stats {
            s.record(Ticker::NumberDbSeek, 1);
            if self.iter.valid() {
                s.record(Ticker::NumberDbSeekFound, 1);
                s.record(
                    Ticker::IterBytesRead,
                    (self.iter.key().len() + self.iter.value().len()) as u64,
                );
            }
        }
    }

    fn count_step(&self, t: Ticker) {
        if let Some(s) = &self.stats {
            s.record(t, 1);
            if self.iter.valid() {
                s.record(
                    Ticker::IterBytesRead,
                    (self.iter.key().len() + self.iter.value().len()) as u64,
                );
            }
        }
    }
    /// The first error met; check it when `valid()` turns false.
    pub fn status(&self) -> Result<()> {
        self.iter.status()
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    /// Yields the entry at the cursor and advances (call a seek first;
    /// a fresh iterator from `DB::iter` is already at the first entry).
    fn next(&mut self) -> Option<Self::Item> {
        if !self.iter.valid() {
            return self.iter.status().err().map(Err);
        }
        let item = (self.iter.key().to_vec(), self.iter.value().to_vec());
        self.iter.next();
        Some(Ok(item))
    }
}

/// How [`DbInner::visit_key`] may read.
#[derive(Clone, Copy, Debug)]
struct Visit {
    /// Read nothing that is not in memory (`Incomplete` instead).
    no_io: bool,
    /// Tables may be read (else reaching them is `Incomplete`).
    tables: bool,
    /// Answer from and fill the row cache: only for a callback that takes
    /// every entry it is given until it is resolved (a user's `get`); one
    /// that skips entries (uncommitted ones) could need entries past the
    /// end of a cached row.
    rows: bool,
}

impl Visit {
    /// Every entry, reading what it must, no row cache.
    const FILTERED: Visit = Visit {
        no_io: false,
        tables: true,
        rows: false,
    };

    fn get(no_io: bool, tables: bool) -> Visit {
        Visit {
            no_io,
            tables,
            rows: true,
        }
    }
}

impl DbInner {
    /// The reader of table `f` of the column family `sv` views.
    pub(crate) fn sv_table(
        &self,
        sv: &SuperVersion,
        f: &crate::version::FileMetaData,
    ) -> Result<Arc<Table>> {
        let opts = &sv.table_options;
        // Whether `f` is a level-0 file matters only to a reader that will
        // pin its index and filter there: asked only then.
        let level0 = opts.cache_index_and_filter_blocks
            && opts.pin_l0_filter_and_index_blocks_in_cache
            && sv.version.files(0).iter().any(|g| g.number == f.number);
        self.table_cache.get(f, opts, level0)
    }

    /// [`DbInner::sv_table`]; with `no_io`, only a reader already open
    /// (else `Incomplete`).
    fn sv_table_io(
        &self,
        sv: &SuperVersion,
        f: &crate::version::FileMetaData,
        no_io: bool,
    ) -> Result<Arc<Table>> {
        if no_io {
            self.table_cache.get_open(f.number)
        } else {
            self.sv_table(sv, f)
        }
    }

    /// The reader of level-0 file `i` of `sv`, kept in `sv` once opened
    /// (with `no_io`, only if open already).
    pub(crate) fn sv_l0_table<'a>(
        &self,
        sv: &'a SuperVersion,
        i: usize,
        no_io: bool,
    ) -> Result<&'a Arc<Table>> {
        let slot = &sv.l0_tables[i];
        if let Some(t) = slot.get() {
            return Ok(t);
        }
        let t = self.sv_table_io(sv, &sv.version.files(0)[i], no_io)?;
        // Another reader may have set it first: the same table.
        Ok(slot.get_or_init(|| t))
    }

    fn snapshot_seq(&self, ro: &ReadOptions) -> SequenceNumber {
        ro.snapshot.unwrap_or_else(|| self.visible_sequence())
    }

    /// The range tombstones of `sv`'s immutable memtables and tables,
    /// merged into one fragmented list once per SuperVersion (they cannot
    /// change for it) from the lists each memtable and table reader
    /// caches. With `no_io`, `Incomplete` if that needs a table not open.
    fn frozen_range_dels<'a>(
        &self,
        sv: &'a SuperVersion,
        no_io: bool,
    ) -> Result<&'a FrozenRangeDels> {
        if let Some(f) = sv.frozen_range_dels.get() {
            return Ok(f);
        }
        let mut parts: Vec<FrozenRangeDels> = Vec::new();
        parts.extend(
            sv.imms
                .iter()
                .filter_map(|m| m.fragmented_range_tombstones()),
        );
        for level in 0..sv.version.num_levels() {
            for f in sv.version.files(level) {
                if let Some(l) = self
                    .sv_table_io(sv, f, no_io)?
                    .fragmented_range_tombstones()
                {
                    parts.push(Arc::clone(l));
                }
            }
        }
        let merged =
            FragmentedRangeTombstoneList::merge_shared(sv.options.comparator.clone(), parts);
        // Another reader may have set it first: same contents.
        Ok(sv.frozen_range_dels.get_or_init(|| merged))
    }

    /// Range tombstones visible at `seq` from every source of `sv`: the
    /// active memtable's list and the frozen one, shared, not copied.
    fn range_dels(&self, sv: &SuperVersion, seq: SequenceNumber) -> Result<RangeDelAggregator> {
        let mut agg = RangeDelAggregator::new(seq);
        if let Some(l) = sv.mem.fragmented_range_tombstones() {
            agg.add(l);
        }
        agg.add(Arc::clone(self.frozen_range_dels(sv, false)?));
        Ok(agg)
    }

    /// The newest range tombstone visible at `seq` that covers `key` (0:
    /// none): two binary searches at most, nothing allocated.
    fn max_covering_tombstone_seq(
        &self,
        sv: &SuperVersion,
        seq: SequenceNumber,
        key: &[u8],
        no_io: bool,
    ) -> Result<SequenceNumber> {
        let frozen = self
            .frozen_range_dels(sv, no_io)?
            .max_covering_seq(key, seq);
        if sv.mem.num_range_deletes() == 0 {
            return Ok(frozen);
        }
        let mem = sv
            .mem
            .fragmented_range_tombstones()
            .map_or(0, |l| l.max_covering_seq(key, seq));
        Ok(frozen.max(mem))
    }

    /// [`DbInner::max_covering_tombstone_seq`] for a point read, and
    /// whether tables may be visited: with `no_io` and a table not open
    /// (its tombstones unknown), the memtables' tombstones alone (no table
    /// tombstone covers a memtable entry: tables hold older data) and no.
    fn covering_for_get(
        &self,
        sv: &SuperVersion,
        seq: SequenceNumber,
        key: &[u8],
        no_io: bool,
    ) -> Result<(SequenceNumber, bool)> {
        match self.max_covering_tombstone_seq(sv, seq, key, no_io) {
            Ok(s) => Ok((s, true)),
            Err(crate::Error::Incomplete(_)) if no_io => {
                let covering =
                    |l: Option<&FrozenRangeDels>| l.map_or(0, |l| l.max_covering_seq(key, seq));
                let mems = std::iter::once(&sv.mem).chain(sv.imms.iter());
                Ok((
                    mems.map(|m| covering(m.fragmented_range_tombstones().as_ref()))
                        .max()
                        .unwrap_or(0),
                    false,
                ))
            }
            Err(e) => Err(e),
        }
    }

    pub(crate) fn get(&self, ro: &ReadOptions, cf: u32, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(ro, cf, key, <[u8]>::to_vec)
    }

    /// [`DbInner::get`] that hands the value to `f` where it lies (a
    /// memtable's arena, a table's block or mapped file) when it needs no
    /// merge: no copy (RocksDB's Get into a `PinnableSlice`).
    pub(crate) fn get_with<R>(
        &self,
        ro: &ReadOptions,
        cf: u32,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let stats = &self.options.statistics;
        let _timer = StopWatch::new(stats, HistogramKind::DbGet);
        // Borrowed from the current map (no reference count touched: with
        // several reader threads that count is a contended cache line).
        let svs = self.super_versions.load();
        let sv = svs.get(&cf).ok_or_else(|| {
            crate::Error::InvalidArgument(format!("unknown column family id {cf}"))
        })?;
        let no_io = no_io(ro)?;
        let seq = self.snapshot_seq(ro);
        let (covering, tables) = self.covering_for_get(sv, seq, key, no_io)?;
        let mut ctx = GetContext::new(covering);
        let mut f = Some(f);
        let mut out = None;
        let mut size = 0;
        let in_memtables = self.visit_key(sv, seq, key, Visit::get(no_io, tables), |s, t, v| {
            if ctx.settles_as_plain_value(s, t) {
                size = v.len();
                out = f.take().map(|f| f(v));
                return true;
            }
            ctx.add(s, t, v)
        })?;
        let ticker = if in_memtables {
            Ticker::MemtableHit
        } else {
            Ticker::MemtableMiss
        };
        record(stats, ticker, 1);
        let r = match out {
            Some(r) => Some(r),
            None => ctx
                .finish(key, sv.options.merge_operator.as_ref())?
                .and_then(|v| {
                    size = v.len();
                    f.take().map(|f| f(&v))
                }),
        };
        if let Some(s) = stats {
            s.record(Ticker::NumberKeysRead, 1);
            s.record(Ticker::BytesRead, size as u64);
            s.measure(HistogramKind::BytesPerRead, size as u64);
        }
        Ok(r)
    }

    fn get_in(
        &self,
        sv: &SuperVersion,
        seq: SequenceNumber,
        key: &[u8],
        no_io: bool,
    ) -> Result<Option<Vec<u8>>> {
        let (covering, tables) = self.covering_for_get(sv, seq, key, no_io)?;
        let mut ctx = GetContext::new(covering);
        let in_memtables = self.visit_key(sv, seq, key, Visit::get(no_io, tables), |s, t, v| {
            ctx.add(s, t, v)
        })?;
        let ticker = if in_memtables {
            Ticker::MemtableHit
        } else {
            Ticker::MemtableMiss
        };
        record(&self.options.statistics, ticker, 1);
        ctx.finish(key, sv.options.merge_operator.as_ref())
    }

    /// [`DbInner::get`] as a WritePrepared transaction's reader: an entry
    /// of a prepared range counts only once committed at or below the
    /// read's sequence number (the commit table; RocksDB's
    /// `WritePreparedTxnReadCallback`). A read without a snapshot reads
    /// again if an eviction of the commit table passed its sequence
    /// meanwhile (RocksDB's `ValidateSnapshot`).
    pub(crate) fn get_committed(
        &self,
        ro: &ReadOptions,
        cf: u32,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let sv = self.super_version(cf)?;
        let table = &self.commit_table;
        loop {
            let seq = self.snapshot_seq(ro);
            let mut ctx = GetContext::new(self.max_covering_tombstone_seq(&sv, seq, key, false)?);
            self.visit_key(&sv, seq, key, Visit::FILTERED, |s, t, v| {
                table.is_in_snapshot(s, seq) && ctx.add(s, t, v)
            })?;
            if ro.snapshot.is_some() || table.max_evicted() <= seq {
                record(&self.options.statistics, Ticker::NumberKeysRead, 1);
                return ctx.finish(key, sv.options.merge_operator.as_ref());
            }
        }
    }

    /// [`DbInner::new_iterator`] as a WritePrepared transaction's reader
    /// (see [`DbInner::get_committed`]). Without a snapshot in `ro` the
    /// iterator takes one for its lifetime, so the commit table keeps
    /// what it reads at.
    pub(crate) fn new_iterator_committed(
        self: &Arc<Self>,
        ro: &ReadOptions,
        cf: u32,
    ) -> Result<DbIterator> {
        let own = ro.snapshot.is_none().then(|| self.snapshot());
        let ro = ReadOptions {
            snapshot: ro.snapshot.or(own.as_ref().map(Snapshot::sequence)),
            ..ro.clone()
        };
        let seq = self.snapshot_seq(&ro);
        let mut it = self.new_iterator(&ro, cf)?;
        let table = Arc::clone(&self.commit_table);
        it.iter
            .set_visibility(Arc::new(move |s| table.is_in_snapshot(s, seq)));
        it._snapshot = own;
        Ok(it)
    }

    /// The sequence number of the newest write to `key` in column family
    /// `cf`: an entry or a range tombstone covering it (RocksDB's
    /// `GetLatestSequenceForKey`, reading tables too); `None` if nothing
    /// ever wrote it. Transactions check write conflicts with it.
    ///
    /// The caller only asks whether `key` was written after `above`: when
    /// no table holds a sequence above it and no WritePrepared range is
    /// tracked (every entry's sequence is its commit), the memtables answer
    /// alone and no table is read (RocksDB reads only memtables here, and
    /// answers TryAgain when they do not reach back far enough). The
    /// answer may then be `None` for a key last written at or below
    /// `above`.
    pub(crate) fn latest_sequence_for_key_above(
        &self,
        cf: u32,
        key: &[u8],
        above: SequenceNumber,
    ) -> Result<Option<SequenceNumber>> {
        let sv = self.super_version(cf)?;
        let seq = crate::format::MAX_SEQUENCE_NUMBER;
        let mut newest = None;
        let note = |s, _, _: &[u8]| {
            newest = Some(s);
            true
        };
        if sv.version.max_seqno() <= above && self.commit_table.is_empty() {
            visit_memtables(&sv, seq, key, note);
        } else {
            self.visit_key(&sv, seq, key, Visit::FILTERED, note)?;
        }
        let tombstone = self.max_covering_tombstone_seq(&sv, seq, key, false)?;
        Ok(match (newest, tombstone) {
            (Some(s), t) => Some(s.max(t)),
            (None, 0) => None,
            (None, t) => Some(t),
        })
    }

    /// Feeds `f` the entries of `key` visible at `seq`, newest first:
    /// memtables, then level-0 files newest first, then deeper levels,
    /// until `f` returns true (resolved). Returns whether the memtables
    /// resolved it. With `no_io`, a table not open or a block not in the
    /// block cache ends the visit with `Incomplete`, and so does reaching
    /// the tables when `tables` is false.
    fn visit_key(
        &self,
        sv: &SuperVersion,
        seq: SequenceNumber,
        key: &[u8],
        how: Visit,
        mut f: impl FnMut(SequenceNumber, crate::format::ValueType, &[u8]) -> bool,
    ) -> Result<bool> {
        let Visit {
            no_io,
            tables,
            rows,
        } = how;
        let row_cache = self.row_cache.as_ref().filter(|_| rows);
        let stats = &self.options.statistics;
        if visit_memtables(sv, seq, key, &mut f) {
            return Ok(true);
        }
        if !tables {
            return Err(crate::Error::Incomplete(
                "no blocking io: the range tombstones of a table not open are unknown".into(),
            ));
        }
        let mut done = false;
        let lookup = make_internal_key(key, seq, VALUE_TYPE_FOR_SEEK);
        let ucmp = &sv.options.comparator;
        let covers = |file: &crate::version::FileMetaData| {
            ucmp.compare(key, crate::format::extract_user_key(&file.smallest))
                .is_ge()
                && ucmp
                    .compare(key, crate::format::extract_user_key(&file.largest))
                    .is_le()
        };
        // Level 0: every table that may hold the key starts loading its
        // filter before any is probed (RocksDB's `Prepare`).
        let l0 = sv.version.files(0);
        if l0.len() > 1 {
            for (i, f) in l0.iter().enumerate() {
                if covers(f) {
                    self.sv_l0_table(sv, i, no_io)?.prepare(key);
                }
            }
        }
        for level in 0..sv.version.num_levels() {
            let files = sv.version.files(level);
            // L0 files may overlap: try each. Deeper levels are sorted and
            // disjoint: only the (at most two, when a range tombstone's
            // end meets the next file's first key) files around `key`.
            let candidates = if level == 0 {
                files
            } else {
                let start = files.partition_point(|f| {
                    ucmp.compare(crate::format::extract_user_key(&f.largest), key)
                        .is_lt()
                });
                &files[start..]
            };
            for (i, file) in candidates.iter().enumerate() {
                if done {
                    return Ok(false);
                }
                let smallest = crate::format::extract_user_key(&file.smallest);
                let largest = crate::format::extract_user_key(&file.largest);
                if ucmp.compare(key, smallest).is_lt() {
                    if level == 0 {
                        continue;
                    }
                    break;
                }
                if ucmp.compare(key, largest).is_gt() {
                    continue;
                }
                // The row cache answers for the file when it can: `f`
                // sees the entries the file holds, as the file would give
                // them.
                let row_key = row_cache.map(|rc| (rc, rc.key(file, seq, key)));
                if let Some((rc, rk)) = &row_key {
                    if let Some(row) = rc.lookup(rk) {
                        record(stats, Ticker::RowCacheHit, 1);
                        match super::row_cache::replay(row.value(), &mut f) {
                            Some(d) => done = d,
                            None => {
                                return Err(crate::Error::corruption(
                                    "row cache",
                                    0,
                                    "unparsable row",
                                ));
                            }
                        }
                        continue;
                    }
                    record(stats, Ticker::RowCacheMiss, 1);
                }
                let opened;
                let t: &Table = if level == 0 {
                    // Level 0's candidates are all its files, in order.
                    debug_assert_eq!(candidates.len(), files.len());
                    self.sv_l0_table(sv, i, no_io)?
                } else {
                    opened = self.sv_table_io(sv, file, no_io)?;
                    &opened
                };
                if !t.key_may_match_with(key, no_io) {
                    continue;
                }
                // With a row cache, the entries are recorded up to the
                // one that ends the lookup whatever came before (past `f`'s
                // answer when a range tombstone ended it earlier), so that
                // the row serves every read keyed to it. Past `f`'s
                // answer, a failure only leaves the row uncached.
                let mut row = row_key
                    .as_ref()
                    .map(|_| super::row_cache::RowBuilder::default());
                let mut bad_key = false;
                let r = t.lookup(&lookup, ucmp, no_io, |ikey, value| {
                    let Some(p) = parse_internal_key(ikey) else {
                        bad_key = !done;
                        if let Some(row) = &mut row {
                            row.abandon();
                        }
                        return true;
                    };
                    if !done {
                        done = f(p.sequence, p.value_type, value);
                    }
                    match &mut row {
                        Some(row) => {
                            row.push(p.sequence, p.value_type, value);
                            super::row_cache::ends_lookup(p.value_type)
                        }
                        None => done,
                    }
                });
                match (r, row_key, row) {
                    (Ok(()), Some((rc, rk)), Some(row)) => rc.insert(&rk, row),
                    (Ok(()), _, _) => {}
                    (Err(_), _, _) if done => {}
                    (Err(e), _, _) => return Err(e),
                }
                if bad_key {
                    return Err(crate::Error::corruption(
                        t.name(),
                        0,
                        "corrupted internal key",
                    ));
                }
            }
        }
        Ok(false)
    }

    /// Reads several keys from one consistent view.
    pub(crate) fn multi_get(
        &self,
        ro: &ReadOptions,
        cf: u32,
        keys: &[&[u8]],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let sv = match self.super_version(cf) {
            Ok(sv) => sv,
            Err(e) => return keys.iter().map(|_| Err(e.duplicate())).collect(),
        };
        let no_io = match no_io(ro) {
            Ok(n) => n,
            Err(e) => return keys.iter().map(|_| Err(e.duplicate())).collect(),
        };
        let seq = self.snapshot_seq(ro);
        let stats = &self.options.statistics;
        let _timer = StopWatch::new(stats, HistogramKind::DbMultiget);
        let out: Vec<_> = keys
            .iter()
            .map(|k| self.get_in(&sv, seq, k, no_io))
            .collect();
        if let Some(s) = stats {
            let bytes: u64 = out
                .iter()
                .map(|r| match r {
                    Ok(Some(v)) => v.len() as u64,
                    _ => 0,
                })
                .sum();
            s.record(Ticker::NumberMultigetCalls, 1);
            s.record(Ticker::NumberMultigetKeysRead, keys.len() as u64);
            s.record(Ticker::NumberMultigetBytesRead, bytes);
            s.measure(HistogramKind::BytesPerMultiget, bytes);
        }
        out
    }

    pub(crate) fn iter(&self, ro: &ReadOptions, cf: u32) -> Result<DbIterator> {
        let mut it = self.new_iterator(ro, cf)?;
        it.iter.seek_to_first();
        Ok(it)
    }

    /// An iterator not yet positioned (RocksDB's `NewIterator`).
    pub(crate) fn new_iterator(&self, ro: &ReadOptions, cf: u32) -> Result<DbIterator> {
        if ro.read_tier != ReadTier::ReadAll {
            return Err(crate::Error::NotSupported(format!(
                "read_tier {:?} for iterators (gets and multi-gets take BlockCache)",
                ro.read_tier
            )));
        }
        let sv = self.super_version(cf)?;
        let opts = Arc::clone(&sv.options);
        let seq = self.snapshot_seq(ro);
        let icmp = crate::format::InternalKeyComparator::new(opts.comparator.clone());
        // Prefix seeks may skip whole tables by their prefix filter: only
        // when iteration is confined to the seek prefix (then exact).
        let prefix_mode = ro.prefix_same_as_start && opts.prefix_extractor.is_some();
        let children = self.internal_children(&sv, &icmp, prefix_mode)?;
        let agg = self.range_dels(&sv, seq)?;
        let inner = crate::iter::merging::merged(icmp, children);
        let iter = DBIter::new(
            inner,
            opts.comparator.clone(),
            seq,
            opts.merge_operator.clone(),
            agg,
            DBIterOptions {
                lower_bound: ro.iterate_lower_bound.clone(),
                upper_bound: ro.iterate_upper_bound.clone(),
                prefix_same_as_start: opts
                    .prefix_extractor
                    .clone()
                    .filter(|_| ro.prefix_same_as_start),
            },
        );
        Ok(DbIterator {
            iter,
            _sv: sv,
            stats: self.options.statistics.clone(),
            _snapshot: None,
        })
    }

    /// Every point entry of `cf` (all versions, except those a range
    /// tombstone covers) from user key `begin` through `end` (both inclusive,
    /// `None` unbounded), at most `max` of them (0: no limit): RocksDB's
    /// `GetAllKeyVersions`.
    pub(crate) fn all_key_versions(
        &self,
        cf: u32,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        max: usize,
    ) -> Result<Vec<KeyVersion>> {
        let sv = self.super_version(cf)?;
        let ucmp = sv.options.comparator.clone();
        let icmp = crate::format::InternalKeyComparator::new(ucmp.clone());
        let children = self.internal_children(&sv, &icmp, false)?;
        // Entries a range tombstone covers are skipped, as RocksDB 7.x's
        // merging iterator skips them.
        let mut agg = self.range_dels(&sv, crate::format::MAX_SEQUENCE_NUMBER)?;
        let mut it = MergingIterator::new(icmp, children);
        match begin {
            Some(b) => it.seek(&crate::format::make_internal_key(
                b,
                crate::format::MAX_SEQUENCE_NUMBER,
                crate::format::dbformat::VALUE_TYPE_FOR_SEEK,
            )),
            None => it.seek_to_first(),
        }
        let mut out = Vec::new();
        while it.valid() && (max == 0 || out.len() < max) {
            let Some(p) = crate::format::parse_internal_key(it.key()) else {
                return Err(crate::Error::corruption("", 0, "unparsable internal key"));
            };
            if end.is_some_and(|e| ucmp.compare(p.user_key, e).is_gt()) {
                break;
            }
            if agg.covers(p.user_key, p.sequence) {
                it.next();
                continue;
            }
            out.push(KeyVersion {
                user_key: p.user_key.to_vec(),
                value: it.value().to_vec(),
                sequence: p.sequence,
                value_type: p.value_type as u8,
            });
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Iterators over every source of `sv`: memtables, L0 tables, one
    /// lazily opening iterator per deeper level.
    fn internal_children(
        &self,
        sv: &Arc<SuperVersion>,
        icmp: &crate::format::InternalKeyComparator,
        prefix_mode: bool,
    ) -> Result<Vec<Box<dyn InternalIterator + Send>>> {
        let mut children: Vec<Box<dyn InternalIterator + Send>> = Vec::new();
        children.push(Box::new(sv.mem.iter()));
        for m in &sv.imms {
            children.push(Box::new(m.iter()));
        }
        for f in sv.version.files(0) {
            let table = self.sv_table(sv, f)?;
            if prefix_mode {
                children.push(Box::new(PrefixSeekIter::new(table)));
            } else {
                children.push(Box::new(table.iter()));
            }
        }
        // Deeper levels: one lazily opening iterator each.
        let kind = if prefix_mode {
            super::background::TableIterKind::Prefix
        } else {
            super::background::TableIterKind::Plain
        };
        let opener = self.table_opener(&sv.table_options, kind);
        for level in 1..sv.version.num_levels() {
            let files = sv.version.files(level);
            if !files.is_empty() {
                children.push(Box::new(crate::iter::LevelIterator::new(
                    icmp.clone(),
                    files.to_vec(),
                    Arc::clone(&opener),
                )));
            }
        }
        Ok(children)
    }

    /// Releases a snapshot registered at `seq`; schedules the bottommost
    /// rewrites it made due.
    pub(crate) fn release_snapshot(&self, seq: SequenceNumber) {
        let mut st = self.lock_state();
        let last = self.last_sequence.load(Ordering::Acquire);
        if st.release_snapshot(seq, last) {
            self.maybe_schedule_work(&mut st);
            // What could not be picked now is picked when a running job
            // ends; later releases need not try again.
            self.recompute_bottommost_threshold(&mut st);
        }
    }

    pub(crate) fn snapshot(self: &Arc<Self>) -> Snapshot {
        // Unordered writes: wait (without the state lock, which a failing
        // insert takes) until every acknowledged write is visible; then
        // read the sequence under the lock, as a compaction reads the
        // snapshot list under it.
        let _ = self.visible_sequence();
        let mut st = self.lock_state();
        let seq = self.last_sequence.load(Ordering::Acquire);
        st.add_snapshot(seq);
        Snapshot {
            seq,
            db: Arc::downgrade(self),
        }
    }
}

/// Whether a point read with `ro` may do no I/O (`ReadTier::BlockCache`);
/// the tiers not supported are refused.
fn no_io(ro: &ReadOptions) -> Result<bool> {
    match ro.read_tier {
        ReadTier::ReadAll => Ok(false),
        ReadTier::BlockCache => Ok(true),
        t => Err(crate::Error::NotSupported(format!("read_tier {t:?}"))),
    }
}

/// Feeds `f` the memtable entries of `key` visible at `seq`, newest first
/// (the active memtable, then the immutable ones), until `f` returns true
/// (resolved); returns whether it did.
fn visit_memtables(
    sv: &SuperVersion,
    seq: SequenceNumber,
    key: &[u8],
    mut f: impl FnMut(SequenceNumber, crate::format::ValueType, &[u8]) -> bool,
) -> bool {
    let mut done = false;
    for m in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        m.get_with(key, seq, |s, t, v| {
            done = f(s, t, v);
            if done {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        });
        if done {
            break;
        }
    }
    done
}
