//! The file-management API: manual compaction (`compact_range`,
//! `compact_files`), `delete_file`, `disable_file_deletions` /
//! `enable_file_deletions`, and what is live (`live_files`,
//! `live_files_metadata`, `sorted_wal_files`).
//!
//! Invariants: a manual compaction runs alone (automatic compactions and
//! other manual ones wait until it ends, and it waits for running ones to
//! finish first), so the
//! inputs it picks cannot change under it; while file deletions are
//! disabled no table or WAL file is deleted, so a copy of the live files
//! stays consistent.

use std::sync::Arc;
use std::sync::PoisonError;

use super::background::MANUAL;
use super::{ColumnFamilyHandle, DB, DbInner};
use crate::compaction::leveled::{PickerInput, setup_compaction};
use crate::compaction::{Compaction, CompactionReason, LevelInputs, score};
use crate::compaction_filter::unix_now_seconds;
use crate::error::{Error, Result};
use crate::format::{SequenceNumber, extract_user_key};
use crate::options::CompactionStyle;
use crate::version::VersionEdit;

/// Whether `compact_range` rewrites the last level too (RocksDB's
/// `BottommostLevelCompaction`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BottommostLevelCompaction {
    Skip,
    /// Only with a compaction filter (RocksDB's default).
    #[default]
    IfHaveCompactionFilter,
    /// Always: drops every deletion and shadowed version that no snapshot
    /// needs.
    Force,
}

/// Options of `compact_range` (RocksDB's `CompactRangeOptions`).
#[derive(Clone, Copy, Debug)]
pub struct CompactRangeOptions {
    pub bottommost_level_compaction: BottommostLevelCompaction,
    /// After compacting, move the files of the level the data ended in to
    /// `target_level` (or, when that is negative, to the smallest empty
    /// level above it that can hold them): RocksDB's `ReFitLevel`. Levels
    /// between must be empty.
    pub change_level: bool,
    /// See `change_level`; -1 (the default) picks the level.
    pub target_level: i32,
    /// The table path (index into `db_paths`) the outputs are written to
    /// (RocksDB's `target_path_id`; default 0). Files moved to another
    /// level without being rewritten keep their path.
    pub target_path_id: u32,
}

impl Default for CompactRangeOptions {
    fn default() -> Self {
        CompactRangeOptions {
            bottommost_level_compaction: BottommostLevelCompaction::default(),
            change_level: false,
            target_level: -1,
            target_path_id: 0,
        }
    }
}

/// One live table file (RocksDB's `LiveFileMetaData`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveFileMetaData {
    pub column_family_name: String,
    /// The directory holding the file (the database's, or an export's).
    pub db_path: String,
    pub level: usize,
    /// `/NNNNNN.sst`, as RocksDB names it.
    pub name: String,
    pub file_number: u64,
    pub size: u64,
    /// User keys.
    pub smallest_key: Vec<u8>,
    pub largest_key: Vec<u8>,
    pub smallest_seqno: SequenceNumber,
    pub largest_seqno: SequenceNumber,
    pub being_compacted: bool,
    pub marked_for_compaction: bool,
    /// Entries and deletions, from the table's properties (0 when the
    /// table cannot be read).
    pub num_entries: u64,
    pub num_deletions: u64,
}

/// A user-key range `(begin, end)`; `None` is unbounded (RocksDB's
/// `RangePtr`).
pub type KeyRange<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// One table's whole-file checksum (an entry of RocksDB's
/// `FileChecksumList`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChecksumInfo {
    pub file_number: u64,
    /// Raw bytes (crc32c: 4 bytes, big-endian); empty when unknown.
    pub checksum: Vec<u8>,
    pub checksum_func_name: String,
}

/// One WAL file that may still be needed (RocksDB's `LogFile`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalFile {
    pub log_number: u64,
    /// `/NNNNNN.log` (alive) or `/archive/NNNNNN.log`, relative to the WAL
    /// directory.
    pub path_name: String,
    pub size: u64,
    /// Sequence number of its first record (0 if empty).
    pub start_sequence: SequenceNumber,
    pub file_type: WalFileType,
}

/// Whether a WAL may still be needed for recovery (RocksDB's
/// `kAliveLogFile`) or was archived (`kArchivedLogFile`, see
/// `Options::wal_ttl_seconds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalFileType {
    Archived,
    Alive,
}

impl DbInner {
    /// Waits until no automatic compaction and no other manual one runs,
    /// and registers this manual one; automatic ones stay paused until
    /// `end_manual`. Manual compactions run one at a time: two picking the
    /// same version would both rewrite (and delete) the same inputs.
    /// Fails (as RocksDB's `Incomplete: manual compaction paused`) if the
    /// database shuts down meanwhile.
    /// The state lock and the current version of `cf`, for a user call
    /// (`what`) that edits its table files.
    fn current_for_file_edit(
        &self,
        what: &str,
        cf: &ColumnFamilyHandle,
    ) -> Result<(Guard<'_>, Arc<crate::version::Version>)> {
        if self.read_only {
            return Err(Error::NotSupported(format!(
                "{what} on a read-only database"
            )));
        }
        let st = self.lock_state();
        let Some(v) = st.versions.current(cf.id) else {
            return Err(Error::InvalidArgument(format!(
                "unknown column family {}",
                cf.name
            )));
        };
        Ok((st, v))
    }

    /// Logs a user call's file edit and installs the new version. A
    /// MANIFEST that could not be written stops writes (a background
    /// error); an edit the version set rejects does not.
    fn apply_file_edit(&self, st: &mut Guard<'_>, cf_id: u32, edit: VersionEdit) -> Result<()> {
        if let Err(e) = st.versions.log_and_apply(cf_id, edit) {
            if st.versions.background_error().is_some() {
                st.bg_error.get_or_insert(e.duplicate());
            }
            return Err(e);
        }
        self.install_super_versions(st);
        Ok(())
    }

    /// `Incomplete` while `disable_manual_compaction` holds (RocksDB's
    /// `Status::Incomplete(kManualCompactionPaused)`).
    fn check_manual_not_paused(&self) -> Result<()> {
        if self
            .manual_compaction_paused
            .load(std::sync::atomic::Ordering::Acquire)
            > 0
        {
            return Err(Error::Incomplete("Manual compaction paused".into()));
        }
        Ok(())
    }

    fn begin_manual(&self) -> Result<std::sync::MutexGuard<'_, super::DbState>> {
        self.check_manual_not_paused()?;
        let mut st = self.lock_state();
        st.bg_work.manual_wait();
        while !st.bg_work.manual_may_start() {
            if self
                .shutting_down
                .load(std::sync::atomic::Ordering::Acquire)
            {
                st.bg_work.manual_abandon();
                self.bg_cv.notify_all();
                return Err(Error::Incomplete(
                    "manual compaction: the database is shutting down".into(),
                ));
            }
            st = self.bg_cv.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        st.bg_work.manual_start();
        Ok(st)
    }

    fn end_manual(&self, mut st: std::sync::MutexGuard<'_, super::DbState>) {
        st.bg_work.manual_finish();
        // The compactions' versions are gone: their inputs may go too.
        self.delete_obsolete_files(&mut st);
        self.maybe_schedule_work(&mut st);
        self.bg_cv.notify_all();
    }

    /// Runs `c` in this thread (inside a manual section).
    fn run_manual<'a>(
        &'a self,
        mut st: std::sync::MutexGuard<'a, super::DbState>,
        c: &Compaction,
    ) -> (std::sync::MutexGuard<'a, super::DbState>, Result<()>) {
        if let Some(e) = st.bg_error.get() {
            let e = e.duplicate();
            return (st, Err(e));
        }
        let Some(ucmp) = st.cfs.get(&c.cf_id).map(|cf| cf.options.comparator.clone()) else {
            return (st, Ok(()));
        };
        st.bg_work.register(c, &ucmp);
        let (mut st, r) = self.run_compaction(st, c);
        st.bg_work.unregister(c);
        if let Err(e) = &r {
            st.bg_error.get_or_insert(e.duplicate());
        }
        (st, r)
    }

    pub(crate) fn compact_range(
        &self,
        cf_id: u32,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        o: &CompactRangeOptions,
    ) -> Result<()> {
        if self.read_only {
            return Err(Error::NotSupported(
                "compaction on a read-only database".into(),
            ));
        }
        if o.target_path_id as usize >= self.table_paths.len() {
            // RocksDB's text.
            return Err(Error::InvalidArgument("Invalid target path ID".into()));
        }
        if o.change_level
            && self
                .lock_state()
                .cfs
                .get(&cf_id)
                .is_some_and(|cf| cf.options.compaction_style == CompactionStyle::Fifo)
        {
            return Err(Error::InvalidArgument(
                "FIFO compaction does not support change_level.".into(),
            ));
        }
        self.check_manual_not_paused()?;
        self.flush(cf_id)?;
        let st = self.begin_manual()?;
        let (mut st, result) = self.compact_range_locked(st, cf_id, begin, end, o);
        // Still alone (manual mode): no compaction runs while files move.
        let result = match result {
            Ok(Some(level)) if o.change_level => {
                self.refit_level(&mut st, cf_id, level, o.target_level)
            }
            r => r.map(|_| ()),
        };
        self.end_manual(st);
        result
    }

    /// Returns the level the range's data ended in (`None`: no file
    /// overlaps it).
    fn compact_range_locked<'a>(
        &'a self,
        mut st: Guard<'a>,
        cf_id: u32,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        o: &CompactRangeOptions,
    ) -> (Guard<'a>, Result<Option<usize>>) {
        let Some(cf) = st.cfs.get(&cf_id) else {
            return (
                st,
                Err(Error::InvalidArgument(format!(
                    "unknown column family id {cf_id}"
                ))),
            );
        };
        let opts = cf.options.clone();
        if let (Some(b), Some(e)) = (begin, end)
            && opts.comparator.compare(b, e).is_gt()
        {
            return (
                st,
                Err(Error::InvalidArgument(
                    "compact_range: begin is after end".into(),
                )),
            );
        }
        let style = opts.compaction_style;
        if style == CompactionStyle::Fifo {
            return (st, Ok(None));
        }
        let n = opts.num_levels;
        let bottom_rewrite = match o.bottommost_level_compaction {
            BottommostLevelCompaction::Skip => false,
            BottommostLevelCompaction::IfHaveCompactionFilter => opts.has_compaction_filter(),
            BottommostLevelCompaction::Force => true,
        };
        if style == CompactionStyle::Universal {
            // Everything into the last level, as RocksDB does.
            let Some(v) = st.versions.current(cf_id) else {
                return (st, Ok(None));
            };
            // The last level stays out when reserved for files ingested
            // behind (RocksDB writes to the one above it).
            let last = n - 1 - usize::from(self.options.allow_ingest_behind && n > 2);
            let inputs: Vec<LevelInputs> = (0..=last)
                .filter(|&l| v.num_files(l) > 0)
                .map(|l| LevelInputs {
                    level: l,
                    files: v.files(l).to_vec(),
                })
                .collect();
            if inputs.is_empty() {
                return (st, Ok(None));
            }
            let c = Compaction {
                cf_id,
                inputs,
                output_level: last,
                target_file_size: opts.target_file_size(last),
                max_grandparent_overlap_bytes: u64::MAX,
                grandparents: Vec::new(),
                reason: MANUAL,
                score: 0.0,
                deletion_only: false,
                allow_trivial_move: false,
                output_path_id: Some(o.target_path_id),
                version: v,
            };
            let (st, r) = self.run_manual(st, &c);
            return (st, r.map(|()| Some(last)));
        }
        // Leveled: each level's overlapping files into the next one, L0
        // into the base level, then (if asked) the last level in place.
        let mut level = 0;
        // Where the data is once the loop ends: the deepest level holding
        // some of the range, or the last output.
        let mut last = None;
        loop {
            let Some(v) = st.versions.current(cf_id) else {
                return (st, Ok(last));
            };
            let deepest = (0..n)
                .rev()
                .find(|&l| !v.overlapping_files(l, begin, end).is_empty());
            let Some(deepest) = deepest else {
                return (st, Ok(last));
            };
            last = Some(last.unwrap_or(0).max(deepest));
            if level > deepest {
                return (st, Ok(last));
            }
            // With a single level, all of L0 (a subset could break L0's
            // sequence order).
            let files = if n == 1 {
                v.files(0).to_vec()
            } else {
                v.overlapping_files(level, begin, end)
            };
            let (base_level, _) = score::level_targets(&v, &opts);
            let base_level = base_level.clamp(1, n.saturating_sub(1).max(1));
            if files.is_empty() {
                level = if level == 0 { base_level } else { level + 1 };
                continue;
            }
            // L0 always moves to the base level (an in-place L0 output
            // could break L0's sequence order with the files it skips).
            let output = if level == 0 && n > 1 {
                base_level
            } else if level == deepest || n == 1 {
                if !bottom_rewrite && n > 1 {
                    return (st, Ok(last));
                }
                level
            } else {
                level + 1
            };
            let Some(mut c) = manual_compaction(cf_id, &v, &opts, level, files, output, MANUAL)
            else {
                return (st, Ok(last));
            };
            c.allow_trivial_move = output != level;
            c.output_path_id = Some(o.target_path_id);
            let (g, r) = self.run_manual(st, &c);
            st = g;
            if let Err(e) = r {
                return (st, Err(e));
            }
            last = Some(output.max(last.unwrap_or(0)));
            if output == level {
                return (st, Ok(last));
            }
            level = output;
        }
    }

    pub(crate) fn compact_files(
        &self,
        cf_id: u32,
        numbers: &[u64],
        output_level: usize,
    ) -> Result<()> {
        if self.read_only {
            return Err(Error::NotSupported(
                "compaction on a read-only database".into(),
            ));
        }
        let st = self.begin_manual()?;
        let (st, result) = self.compact_files_locked(st, cf_id, numbers, output_level);
        self.end_manual(st);
        result
    }

    fn compact_files_locked<'a>(
        &'a self,
        st: Guard<'a>,
        cf_id: u32,
        numbers: &[u64],
        output_level: usize,
    ) -> (Guard<'a>, Result<()>) {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        let Some(cf) = st.cfs.get(&cf_id) else {
            return (st, bad(format!("unknown column family id {cf_id}")));
        };
        let opts = cf.options.clone();
        let Some(v) = st.versions.current(cf_id) else {
            return (st, bad("no version".into()));
        };
        if output_level >= v.num_levels() {
            let m = format!(
                "output level {output_level} is beyond the last level {}",
                v.num_levels() - 1
            );
            return (st, bad(m));
        }
        if numbers.is_empty() {
            return (st, bad("compact_files: no input files".into()));
        }
        let mut files = Vec::new();
        let mut min_level = usize::MAX;
        let mut max_level = 0;
        for &n in numbers {
            let Some((level, f)) = v.all_files().find(|(_, f)| f.number == n) else {
                return (
                    st,
                    bad(format!(
                        "compact_files: file #{n} is not a live file of this column family"
                    )),
                );
            };
            min_level = min_level.min(level);
            max_level = max_level.max(level);
            files.push(Arc::clone(f));
        }
        if output_level < max_level {
            return (
                st,
                bad(format!(
                    "compact_files: output level {output_level} is above input level {max_level}"
                )),
            );
        }
        if output_level == 0 && v.num_levels() > 1 {
            return (
                st,
                bad(
                    "compact_files: output level 0 is not supported; pick level 1 or deeper".into(),
                ),
            );
        }
        let Some(mut c) = manual_compaction(
            cf_id,
            &v,
            &opts,
            min_level,
            files,
            output_level,
            CompactionReason::CompactFiles,
        ) else {
            return (st, bad("compact_files: inputs cannot be compacted".into()));
        };
        c.allow_trivial_move = false;
        self.run_manual(st, &c)
    }
}

type Guard<'a> = std::sync::MutexGuard<'a, super::DbState>;

/// A manual compaction of `files` (on `start_level`, or several levels)
/// into `output_level`, with the overlapping files correctness needs.
/// REQUIRES: no automatic compaction runs (a manual section).
fn manual_compaction(
    cf_id: u32,
    version: &Arc<crate::version::Version>,
    opts: &crate::options::ColumnFamilyOptions,
    start_level: usize,
    files: Vec<Arc<crate::version::FileMetaData>>,
    output_level: usize,
    reason: CompactionReason,
) -> Option<Compaction> {
    let nothing_running = Default::default();
    let p = PickerInput {
        cf_id,
        version,
        opts,
        being_compacted: &nothing_running,
        now_seconds: unix_now_seconds(),
        reserved_last_level: false,
        oldest_snapshot: 0,
        rewritten_bottommost: &nothing_running,
    };
    setup_compaction(&p, start_level, files, output_level, reason, 0.0)
}

impl DB {
    /// Compacts the keys in `[begin, end]` (`None` = unbounded) of the
    /// default column family down the tree, waiting until done.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner
            .compact_range(0, begin, end, &CompactRangeOptions::default())
    }

    /// [`DB::compact_range`] with options and a column family.
    pub fn compact_range_cf_opt(
        &self,
        cf: &ColumnFamilyHandle,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        opts: &CompactRangeOptions,
    ) -> Result<()> {
        self.inner.compact_range(cf.id, begin, end, opts)
    }

    /// Makes manual compactions (`compact_range*`, `compact_files`) answer
    /// `Incomplete: Manual compaction paused` until as many
    /// [`DB::enable_manual_compaction`] calls undo it (RocksDB's
    /// `DisableManualCompaction`). One already running finishes.
    pub fn disable_manual_compaction(&self) {
        self.inner
            .manual_compaction_paused
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// Undoes one [`DB::disable_manual_compaction`] (none: no effect).
    pub fn enable_manual_compaction(&self) {
        let _ = self.inner.manual_compaction_paused.fetch_update(
            std::sync::atomic::Ordering::AcqRel,
            std::sync::atomic::Ordering::Acquire,
            |n| n.checked_sub(1),
        );
    }

    /// RocksDB's `CancelAllBackgroundWork`: flushes writes that skipped
    /// the WAL, then stops flushes and compactions for good (running
    /// compactions stop at their next check); with `wait`, returns once
    /// none runs. Reads still work; call it before closing.
    pub fn cancel_all_background_work(&self, wait: bool) -> Result<()> {
        self.inner.cancel_all_background_work(wait)
    }

    /// Marks the table files of column family `cf` that overlap
    /// `[begin, end]` (`None` unbounded) for compaction, except on the last
    /// non-empty level, and schedules the compactions (RocksDB's
    /// `SuggestCompactRange`). The mark is recorded in the MANIFEST, so
    /// it outlives a reopen.
    pub fn suggest_compact_range_cf(
        &self,
        cf: &ColumnFamilyHandle,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        let inner = &self.inner;
        let (mut st, v) = inner.current_for_file_edit("suggest_compact_range", cf)?;
        let last_non_empty = (0..v.num_levels()).rev().find(|&l| v.num_files(l) > 0);
        let mut edit = VersionEdit::default();
        for level in 0..last_non_empty.unwrap_or(0) {
            for f in v.overlapping_files(level, begin, end) {
                if f.marked_for_compaction || st.bg_work.is_being_compacted(f.number) {
                    continue;
                }
                let mut marked = (*f).clone();
                marked.marked_for_compaction = true;
                edit.delete_file(level as u32, f.number);
                edit.add_file(level as u32, marked);
            }
        }
        if edit.new_files.is_empty() {
            return Ok(());
        }
        inner.apply_file_edit(&mut st, cf.id, edit)?;
        inner.maybe_schedule_work(&mut st);
        Ok(())
    }

    /// Compacts the given table files (by number) into `output_level`,
    /// adding whatever overlapping files correctness requires: the hook
    /// for compaction strategies outside the engine.
    pub fn compact_files(
        &self,
        cf: &ColumnFamilyHandle,
        file_numbers: &[u64],
        output_level: usize,
    ) -> Result<()> {
        self.inner.compact_files(cf.id, file_numbers, output_level)
    }

    /// Deletes a table file (`000012.sst` or `/000012.sst`) and its data.
    /// Only a file with no files on deeper levels (on L0, only the oldest),
    /// not being compacted, may go (RocksDB's rules).
    pub fn delete_file(&self, name: &str) -> Result<()> {
        let inner = &self.inner;
        if inner.read_only {
            return Err(Error::NotSupported(
                "delete_file on a read-only database".into(),
            ));
        }
        let number = match crate::filename::parse_file_name(name) {
            Some((n, crate::filename::FileType::Table)) => Some(n),
            _ => None,
        }
        .ok_or_else(|| {
            Error::InvalidArgument(format!("delete_file: {name} is not a table file name"))
        })?;
        let mut st = inner.lock_state();
        let found = st.cfs.keys().find_map(|&id| {
            let v = st.versions.current(id)?;
            let (level, _) = v.all_files().find(|(_, f)| f.number == number)?;
            Some((id, v, level))
        });
        let Some((cf_id, v, level)) = found else {
            return Err(Error::InvalidArgument(format!(
                "delete_file: {name} is not a live table file"
            )));
        };
        if st.bg_work.is_being_compacted(number) {
            return Err(Error::Busy(format!(
                "delete_file: {name} is being compacted"
            )));
        }
        if (level + 1..v.num_levels()).any(|l| v.num_files(l) > 0) {
            return Err(Error::InvalidArgument("File not in last level".into()));
        }
        if level == 0 && v.files(0).last().map(|f| f.number) != Some(number) {
            return Err(Error::InvalidArgument(
                "File in level 0, but not the oldest".into(),
            ));
        }
        let mut edit = VersionEdit::default();
        edit.delete_file(level as u32, number);
        if let Err(e) = st.versions.log_and_apply(cf_id, edit) {
            st.bg_error.get_or_insert(e.duplicate());
            return Err(e);
        }
        inner.info_log.log(&format!(
            "delete_file: removed table #{number} from L{level}"
        ));
        inner.install_super_versions(&mut st);
        inner.delete_obsolete_files(&mut st);
        Ok(())
    }

    /// Deletes the table files of levels 1 and deeper whose keys all lie
    /// in `[begin, end]` (`None` unbounded; `end` excluded unless
    /// `include_end`), RocksDB's `DeleteFilesInRange`: a fast way to drop
    /// a key range, file by file. Files that share a user key with a
    /// neighbour outside the range, L0 files and files being compacted
    /// stay; older versions of the deleted keys in deeper files become
    /// visible again, as in RocksDB.
    pub fn delete_files_in_range(
        &self,
        cf: &ColumnFamilyHandle,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        include_end: bool,
    ) -> Result<()> {
        self.delete_files_in_ranges(cf, &[(begin, end)], include_end)
    }

    /// [`DB::delete_files_in_range`] for several ranges in one MANIFEST
    /// edit.
    pub fn delete_files_in_ranges(
        &self,
        cf: &ColumnFamilyHandle,
        ranges: &[KeyRange<'_>],
        include_end: bool,
    ) -> Result<()> {
        let inner = &self.inner;
        let (mut st, v) = inner.current_for_file_edit("delete_files_in_range", cf)?;
        let ucmp = v.icmp().user_comparator().clone();
        let mut edit = VersionEdit::default();
        let mut doomed = std::collections::BTreeSet::new();
        for &(begin, end) in ranges {
            for level in 1..v.num_levels() {
                for f in clean_files_within(&v, &ucmp, level, begin, end) {
                    if st.bg_work.is_being_compacted(f.number) || doomed.contains(&f.number) {
                        continue;
                    }
                    if !include_end
                        && let Some(e) = end
                        && ucmp
                            .compare(crate::format::dbformat::extract_user_key(&f.largest), e)
                            .is_eq()
                    {
                        continue;
                    }
                    edit.delete_file(level as u32, f.number);
                    doomed.insert(f.number);
                }
            }
        }
        if doomed.is_empty() {
            return Ok(());
        }
        inner.apply_file_edit(&mut st, cf.id, edit)?;
        inner.info_log.log(&format!(
            "[{}] delete_files_in_range: removed tables {doomed:?}",
            cf.name
        ));
        inner.recalculate_write_stall(&mut st);
        inner.delete_obsolete_files(&mut st);
        inner.maybe_schedule_work(&mut st);
        Ok(())
    }

    /// Stops deleting obsolete files (calls nest) until
    /// `enable_file_deletions`.
    pub fn disable_file_deletions(&self) -> Result<()> {
        self.inner.lock_state().files.disable_deletions();
        Ok(())
    }

    /// Undoes one `disable_file_deletions` (all of them with `force`);
    /// deletes what became obsolete meanwhile once none remain.
    pub fn enable_file_deletions(&self, force: bool) -> Result<()> {
        let mut st = self.inner.lock_state();
        if st.files.enable_deletions(force) {
            self.inner.delete_obsolete_files(&mut st);
        }
        Ok(())
    }

    /// Names (relative, `/`-prefixed, as RocksDB's `GetLiveFiles`) of the
    /// files a copy of the database needs, and the MANIFEST's current
    /// size. Flushes the memtables first when asked.
    pub fn live_files(&self, flush_memtable: bool) -> Result<(Vec<String>, u64)> {
        self.live_files_in(flush_memtable)
            .map(|(names, size, _)| (names, size))
    }

    /// [`DB::live_files`], plus the distinct directories (table paths)
    /// that hold the listed tables.
    pub(crate) fn live_files_in(
        &self,
        flush_memtable: bool,
    ) -> Result<(Vec<String>, u64, Vec<std::path::PathBuf>)> {
        if flush_memtable {
            let ids: Vec<u32> = self.inner.lock_state().cfs.keys().copied().collect();
            for id in ids {
                self.inner.flush(id)?;
            }
        }
        let st = self.inner.lock_state();
        let mut names = vec!["/CURRENT".to_string()];
        names.push(format!(
            "/{}",
            crate::filename::descriptor_file_name(st.versions.manifest_file_number())
        ));
        let newest_options = self
            .inner
            .fs
            .children(&self.inner.dbname)?
            .iter()
            .filter_map(|n| match crate::filename::parse_file_name(n) {
                Some((number, crate::filename::FileType::Options)) => Some(number),
                _ => None,
            })
            .max();
        if let Some(o) = newest_options {
            names.push(format!("/{}", crate::filename::options_file_name(o)));
        }
        let mut tables: Vec<u64> = Vec::new();
        let mut dirs: Vec<std::path::PathBuf> = Vec::new();
        for &id in st.cfs.keys() {
            if let Some(v) = st.versions.current(id) {
                for (_, f) in v.all_files() {
                    tables.push(f.number);
                    let d = self.inner.table_paths.dir(f.path_id);
                    if !dirs.iter().any(|x| x == d) {
                        dirs.push(d.to_path_buf());
                    }
                }
            }
        }
        tables.sort_unstable();
        names.extend(
            tables
                .iter()
                .map(|n| format!("/{}", crate::filename::table_file_name(*n))),
        );
        Ok((names, st.versions.manifest_file_size(), dirs))
    }

    /// Every live table file's whole-file checksum as the MANIFEST
    /// records it (RocksDB's `GetLiveFilesChecksumInfo`), by file number;
    /// tables written without `file_checksum_gen_factory` have an empty
    /// checksum and the function name `Unknown`.
    pub fn get_live_files_checksum_info(&self) -> Vec<FileChecksumInfo> {
        let st = self.inner.lock_state();
        let mut out: Vec<FileChecksumInfo> = st
            .cfs
            .values()
            .filter(|c| !c.dropped)
            .filter_map(|c| st.versions.current(c.id))
            .flat_map(|v| {
                v.all_files()
                    .map(|(_, f)| FileChecksumInfo {
                        file_number: f.number,
                        checksum: f.file_checksum.clone(),
                        checksum_func_name: f.file_checksum_func_name.clone(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort_by_key(|f| f.file_number);
        out.dedup_by_key(|f| f.file_number);
        out
    }

    /// The range tombstones of `cf`'s tables, fragmented, level by level
    /// (RocksDB's `TablesRangeTombstoneSummary`, which `ldb
    /// list_file_range_deletes` prints): for each table `=== file : PATH
    /// ===`, then up to `max_entries` lines in all of `start: HEX end: HEX
    /// seq: N`.
    pub fn range_tombstone_summary(
        &self,
        cf: &ColumnFamilyHandle,
        max_entries: usize,
    ) -> Result<String> {
        use std::fmt::Write;
        let mut out = String::new();
        if max_entries == 0 {
            return Ok(out);
        }
        let sv = self.inner.super_version(cf.id)?;
        let mut left = max_entries;
        'levels: for level in 0..sv.version.num_levels() {
            for f in sv.version.files(level) {
                let _ = writeln!(
                    out,
                    "=== file : {} ===",
                    self.inner
                        .table_paths
                        .table_file(f.path_id, f.number)
                        .display()
                );
                let t = self.inner.sv_table(&sv, f)?;
                let Some(frags) = t.fragmented_range_tombstones() else {
                    continue;
                };
                for fr in frags.fragments() {
                    for seq in &fr.seqs {
                        if left == 0 {
                            break 'levels;
                        }
                        let _ = writeln!(
                            out,
                            "start: {} end: {} seq: {seq}",
                            crate::version::hex(&fr.start),
                            crate::version::hex(&fr.end)
                        );
                        left -= 1;
                    }
                }
                if left == 0 {
                    break 'levels;
                }
            }
        }
        if left == 0 {
            out.push_str("(results may not be complete)\n");
        }
        Ok(out)
    }

    /// Every live table file with its level, key and sequence ranges, and
    /// its entry counts (read from the tables, outside the DB lock).
    pub fn live_files_metadata(&self) -> Vec<LiveFileMetaData> {
        let mut out = Vec::new();
        let mut files = Vec::new();
        {
            let st = self.inner.lock_state();
            for cf in st.cfs.values().filter(|c| !c.dropped) {
                let Some(v) = st.versions.current(cf.id) else {
                    continue;
                };
                for (level, f) in v.all_files() {
                    out.push(LiveFileMetaData {
                        column_family_name: cf.name.clone(),
                        db_path: self
                            .inner
                            .table_paths
                            .dir(f.path_id)
                            .to_string_lossy()
                            .into_owned(),
                        level,
                        name: format!("/{}", crate::filename::table_file_name(f.number)),
                        file_number: f.number,
                        size: f.file_size,
                        smallest_key: extract_user_key(&f.smallest).to_vec(),
                        largest_key: extract_user_key(&f.largest).to_vec(),
                        smallest_seqno: f.smallest_seqno,
                        largest_seqno: f.largest_seqno,
                        being_compacted: st.bg_work.is_being_compacted(f.number),
                        marked_for_compaction: f.marked_for_compaction,
                        num_entries: 0,
                        num_deletions: 0,
                    });
                    files.push((cf.id, Arc::clone(f)));
                }
            }
        }
        for (meta, (cf_id, f)) in out.iter_mut().zip(files) {
            let Ok(sv) = self.inner.super_version(cf_id) else {
                continue;
            };
            if let Ok(t) = self.inner.sv_table(&sv, &f) {
                let p = t.properties();
                meta.num_entries = p.num_entries;
                meta.num_deletions = p.num_deletions;
            }
        }
        out
    }

    /// The WAL files, oldest first: those that may still be needed for
    /// recovery and, when WALs are archived, the archived ones (RocksDB's
    /// `GetSortedWalFiles`).
    pub fn sorted_wal_files(&self) -> Result<Vec<WalFile>> {
        let alive = self.inner.lock_state().files.alive_wals().to_vec();
        self.inner.list_wal_files(&alive)
    }
}

/// The files of `level` (>= 1) wholly inside `[begin, end]` (user keys,
/// `None` unbounded) that share no user key with a file outside them
/// (RocksDB's `GetCleanInputsWithinInterval`).
fn clean_files_within(
    v: &crate::version::Version,
    ucmp: &crate::util::comparator::ComparatorRef,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Vec<std::sync::Arc<crate::version::FileMetaData>> {
    use crate::format::dbformat::extract_user_key;
    use crate::version::version::sstable_key_compare;
    let files = v.files(level);
    let n = files.len();
    let mut start = match begin {
        None => 0,
        Some(b) => {
            files.partition_point(|f| ucmp.compare(extract_user_key(&f.smallest), b).is_lt())
        }
    };
    if begin.is_some() {
        while start > 0
            && start < n
            && sstable_key_compare(ucmp, &files[start - 1].largest, &files[start].smallest).is_eq()
        {
            start += 1;
        }
    }
    let mut stop = match end {
        None => n,
        Some(e) => {
            start
                + files[start..]
                    .partition_point(|f| ucmp.compare(extract_user_key(&f.largest), e).is_le())
        }
    };
    if end.is_some() {
        while stop < n
            && stop > start
            && sstable_key_compare(ucmp, &files[stop - 1].largest, &files[stop].smallest).is_eq()
        {
            stop -= 1;
        }
    }
    files[start..stop.max(start)].to_vec()
}
