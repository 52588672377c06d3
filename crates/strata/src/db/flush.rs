//! Flushes: immutable memtables become level-0 tables on a background
//! thread; manual flushes (closing is `close.rs`).
//!
//! A flush writes one table from all immutable memtables of a column
//! family (merged), keeping every entry some snapshot can still see,
//! appends the version edit (new file, new log number) to the MANIFEST,
//! and only then drops the memtables and installs a new SuperVersion.
//!
//! Invariants: a table becomes part of a version only after it is synced
//! and its directory entry is synced, and stays a pending output
//! (`file_lifecycle.rs`) until then.

use std::sync::{Arc, PoisonError};

use super::commit_table::JobView;
use super::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::format::dbformat::is_empty_range_tombstone;
use crate::format::iterator::InternalIterator;
use crate::format::{SequenceNumber, ValueType, extract_user_key, parse_internal_key};
use crate::memtable::MemTable;
use crate::options::ColumnFamilyOptions;
use crate::table::TableBuilder;
use crate::version::{FileMetaData, VersionEdit};

/// Decides which versions of a key a flush keeps: an entry is dropped when
/// a newer entry of the same user key in the same snapshot stripe already
/// settles its value (a put or a deletion, not a merge operand).
/// With a snapshot checker (WritePrepared transactions), stripes follow
/// what it says each snapshot sees, and an entry not yet committed is kept
/// and settles nothing.
pub(crate) struct ShadowFilter<'a> {
    snapshots: &'a [SequenceNumber],
    checker: Option<&'a dyn crate::compaction::SnapshotChecker>,
    last_key: Option<Vec<u8>>,
    last_stripe: usize,
    settled: bool,
}

impl<'a> ShadowFilter<'a> {
    /// `snapshots` sorted ascending.
    pub(crate) fn new(
        snapshots: &'a [SequenceNumber],
        checker: Option<&'a dyn crate::compaction::SnapshotChecker>,
    ) -> Self {
        ShadowFilter {
            snapshots,
            checker,
            last_key: None,
            last_stripe: usize::MAX,
            settled: false,
        }
    }

    fn stripe(&self, seq: SequenceNumber) -> usize {
        crate::compaction::stripe_of(self.snapshots, self.checker, seq)
    }

    /// True if the entry must be kept. Entries come in internal-key order.
    pub(crate) fn keep(&mut self, user_key: &[u8], seq: SequenceNumber, t: ValueType) -> bool {
        let stripe = self.stripe(seq);
        let same_key = self.last_key.as_deref() == Some(user_key);
        if !same_key {
            self.last_key = Some(user_key.to_vec());
        }
        if stripe == crate::compaction::UNCOMMITTED {
            // Kept; the next entry starts a stripe of its own.
            self.last_stripe = stripe;
            self.settled = false;
            return true;
        }
        if same_key && stripe == self.last_stripe {
            if self.settled {
                return false;
            }
        } else {
            self.last_stripe = stripe;
            self.settled = false;
        }
        if t != ValueType::Merge {
            self.settled = true;
        }
        true
    }
}

impl DbInner {
    /// Flushes all immutable memtables of `cf_id` into one level-0 table.
    pub(crate) fn flush_cf(
        &self,
        mut st: std::sync::MutexGuard<'_, DbState>,
        cf_id: u32,
    ) -> Result<()> {
        let Some(cf) = st.cfs.get(&cf_id) else {
            return Ok(());
        };
        let mems: Vec<Arc<MemTable>> = cf.imms.iter().map(|(m, _)| Arc::clone(m)).collect();
        let n = mems.len();
        // The WAL the first memtable left after the flushed ones came from.
        let next_log = cf.imms.get(n).map(|(_, w)| *w).unwrap_or(cf.mem_wal);
        let opts = cf.options.clone();
        let name = cf.name.clone();
        let mut view = self.begin_job_view(&mut st);
        let number = st.versions.new_file_number();
        st.files.add_pending_output(number);
        let below = st.versions.current(cf_id);
        drop(st);
        let started = std::time::Instant::now();
        let meta =
            self.write_level0_table(&mems, cf_id, &name, &opts, number, &view, below.as_deref());
        // Released before this flush's purge, which would keep its files.
        drop(below);
        let micros = started.elapsed().as_micros() as u64;
        // RocksDB's SyncClosedLogs: the WALs this flush makes obsolete for
        // this column family may still hold other column families' data,
        // and must be durable before the edit says this one is flushed.
        let synced = if meta.is_ok() {
            super::wal_set::sync_closed_below(&self.wal, next_log, &self.fs, &self.wal_dir)
        } else {
            Ok(())
        };
        let mut st = self.lock_state();
        self.end_job_view(&mut st, &mut view);
        st.files.release_pending_output(number);
        let meta = meta?;
        if let Err(e) = synced {
            st.bg_error.get_or_insert(e.duplicate());
            return Err(e);
        }
        if !st.cfs.contains_key(&cf_id) {
            return Ok(());
        }
        // The MANIFEST's last sequence covers every entry of the new table.
        st.versions.set_last_sequence(
            self.write_path
                .last_allocated
                .load(std::sync::atomic::Ordering::Acquire),
        );
        let mut edit = VersionEdit {
            log_number: Some(next_log),
            ..Default::default()
        };
        let written = meta.as_ref().map_or(0, |m| m.file_size);
        let line = meta.as_ref().map_or_else(
            || format!("[{name}] flush of {n} memtables: nothing to write"),
            |m| {
                format!(
                    "[{name}] flush of {n} memtables: table #{} {} bytes, seq {}..{}{}",
                    m.number,
                    m.file_size,
                    m.smallest_seqno,
                    m.largest_seqno,
                    if m.marked_for_compaction {
                        ", marked for compaction"
                    } else {
                        ""
                    }
                )
            },
        );
        if let Some(m) = meta {
            edit.new_files.push((0, m));
        }
        if let Err(e) = st.versions.log_and_apply(cf_id, edit) {
            // The MANIFEST may hold the edit anyway: see
            // `delete_obsolete_files`.
            st.bg_error.get_or_insert(e.duplicate());
            return Err(e);
        }
        crate::crash_point!("flush::after_install");
        if let Some(cf) = st.cfs.get_mut(&cf_id) {
            cf.imms.drain(..n);
        }
        let stats = st.stats.entry(cf_id).or_default();
        let l0 = stats.level_mut(0);
        l0.count += 1;
        l0.micros += micros;
        l0.bytes_written += written;
        crate::util::statistics::record(
            &self.options.statistics,
            crate::util::statistics::Ticker::FlushWriteBytes,
            written,
        );
        crate::util::statistics::measure(
            &self.options.statistics,
            crate::util::statistics::HistogramKind::FlushTime,
            micros,
        );
        l0.files_written += u64::from(written > 0);
        self.info_log.log(&line);
        self.install_super_versions(&mut st);
        self.delete_obsolete_files(&mut st);
        Ok(())
    }

    /// Writes the merged contents of `mems` to table `number`. Returns
    /// `None` (and writes nothing) if nothing survives. `below`: the
    /// column family's version the table joins (its range tombstones are
    /// weighed against it for `marked_for_compaction`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_level0_table(
        &self,
        mems: &[Arc<MemTable>],
        cf_id: u32,
        cf_name: &str,
        opts: &ColumnFamilyOptions,
        number: u64,
        view: &JobView,
        below: Option<&crate::version::Version>,
    ) -> Result<Option<FileMetaData>> {
        let icmp = crate::format::InternalKeyComparator::new(opts.comparator.clone());
        let children: Vec<Box<dyn InternalIterator + Send>> = mems
            .iter()
            .map(|m| Box::new(m.iter()) as Box<dyn InternalIterator + Send>)
            .collect();
        let mut it = crate::iter::merging::merged(icmp.clone(), children);
        // An empty tombstone (`delete_range(k, k)`) deletes nothing and
        // would invert the file's bounds, hiding the file from overlap
        // checks; it is not written (RocksDB's fragmenter drops it too).
        let mut tombstones: Vec<(Vec<u8>, Vec<u8>)> = mems
            .iter()
            .flat_map(|m| m.range_tombstones())
            .filter(|(k, end)| !is_empty_range_tombstone(opts.comparator.as_ref(), k, end))
            .collect();
        tombstones.sort_by(|a, b| icmp.compare(&a.0, &b.0));
        it.seek_to_first();
        if !it.valid() && tombstones.is_empty() {
            it.status()?;
            return Ok(None);
        }
        // Flushes write to the first table path (RocksDB's path id 0).
        let path = self.table_paths.table_file(0, number);
        let file = crate::fs::new_table_output(
            &*self.fs,
            &path,
            self.options.table_write_mode(),
            self.options.bytes_per_sync,
        )?;
        let (file, checksum) = crate::fs::checksum_file::maybe_checksummed(
            file,
            self.options.file_checksum_gen_factory.as_ref(),
        );
        let mut table_options = opts.table_options(cf_id, cf_name);
        table_options.compression = opts.compression_for_flush();
        if let Some(p) = &mut table_options.plain
            && p.user_key_len != 0
            && mems.iter().any(|m| m.has_key_of_other_length())
        {
            self.info_log.log(&format!(
                "[{cf_name}] flush: keys of other lengths than user_key_len {}: \
                 table #{number} is a variable-length PlainTable",
                p.user_key_len
            ));
            p.user_key_len = 0;
        }
        // A flushed table is a new level-0 run of about the memtables'
        // bytes; it is never taken as bottommost (RocksDB's flushes keep
        // their filters under `optimize_filters_for_hits`).
        let run = mems
            .iter()
            .map(|m| m.used_bytes() as u64)
            .sum::<u64>()
            .max(1);
        let runs = below
            .filter(|_| opts.level_scaled_filters)
            .map_or_else(Vec::new, |v| {
                let mut r = crate::compaction::sorted_run_bytes(v);
                r.push(run);
                r
            });
        table_options.bloom_bits_per_key = opts.bloom_bits_for_output(run, &runs, false);
        // RocksDB's filter "levelish": flushes are level -1, except under
        // FIFO, whose files all count as the bottom.
        if opts.compaction_style != crate::options::CompactionStyle::Fifo {
            table_options.filter_levelish = -1;
        }
        let mut builder = TableBuilder::new(table_options, file)?;
        builder.set_identity(&self.table_identity(), number);
        let mut filter = ShadowFilter::new(&view.snapshots, view.checker.as_deref());
        while it.valid() {
            let p = parse_internal_key(it.key())
                .ok_or_else(|| Error::corruption("", 0, "bad internal key in memtable"))?;
            if filter.keep(p.user_key, p.sequence, p.value_type) {
                builder.add(it.key(), it.value())?;
            }
            it.next();
        }
        it.status()?;
        for (k, end) in &tombstones {
            let p = parse_internal_key(k)
                .ok_or_else(|| Error::corruption("", 0, "bad range tombstone in memtable"))?;
            builder.add_range_tombstone(p.user_key, end, p.sequence)?;
        }
        let info = builder.finish(true)?;
        if let Some(reason) = &info.block_based_fallback {
            self.info_log.log(&format!(
                "[{cf_name}] flush table #{number} is block-based, not CuckooTable: {reason}"
            ));
        }
        crate::crash_point!("flush::after_table_sync");
        self.fs.sync_dir(self.table_paths.dir(0))?;
        crate::crash_point!("flush::after_dir_sync");
        let now = crate::compaction_filter::unix_now_seconds();
        let mut meta = FileMetaData::from_table(number, &info);
        debug_assert!(
            meta.bounds_in_order(&icmp),
            "flush #{number}: inverted bounds"
        );
        if let Some(h) = &checksum {
            (meta.file_checksum, meta.file_checksum_func_name) = h.finish();
        }
        meta.file_creation_time = now;
        meta.oldest_ancester_time = now;
        // Range tombstones over much older data push the table down.
        let covered = below.map_or(0, |v| {
            crate::compaction::job::bytes_covered_below(
                v,
                0,
                tombstones
                    .iter()
                    .map(|(k, end)| (extract_user_key(k), end.as_slice())),
            )
        });
        meta.marked_for_compaction = crate::compaction::job::deletion_heavy(&info)
            || crate::compaction::job::range_deletions_heavy(covered, meta.file_size);
        Ok(Some(meta))
    }

    /// Switches the memtable of `cf_id` and waits until it is flushed.
    pub(crate) fn flush(&self, cf_id: u32) -> Result<()> {
        if self.read_only {
            return Err(Error::NotSupported("flush on a read-only database".into()));
        }
        let mut leader = self
            .write_mutex
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.wait_for_pending_writes();
        let mut st = self.lock_state();
        let Some(cf) = st.cfs.get(&cf_id) else {
            return Err(Error::InvalidArgument(format!(
                "unknown column family id {cf_id}"
            )));
        };
        if cf.mem.is_empty() && cf.imms.is_empty() {
            return Ok(());
        }
        if !cf.mem.is_empty() {
            self.switch_memtables(&mut leader, &mut st, &[cf_id])?;
        }
        drop(leader);
        self.maybe_schedule_work(&mut st);
        self.bg_cv.notify_all();
        loop {
            if let Some(e) = st.bg_error.get() {
                return Err(e.duplicate());
            }
            if st.cfs.get(&cf_id).is_none_or(|c| c.imms.is_empty()) {
                return Ok(());
            }
            st = self.bg_cv.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }
}
