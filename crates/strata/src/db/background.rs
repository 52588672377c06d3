//! Background work: scheduling flushes on the high-priority pool and
//! compactions on the low-priority pool, running a picked compaction
//! (rewrite, trivial move or FIFO deletion) and installing its result,
//! and recomputing the write-stall condition after each version change.
//!
//! Invariants: a file is an input of at most one compaction at a time
//! (`being_compacted`); two compactions never write overlapping key
//! ranges of one level; a compaction's edit reaches the MANIFEST before
//! its outputs become visible and before its inputs may be deleted;
//! automatic compactions never start while a manual one waits or runs;
//! flushes never wait for compactions (separate pool).

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use super::flow_control::{StallCondition, StallInputs, condition};
use super::stats::LevelStats;
use super::{DbInner, DbState};
use crate::compaction::iterator::CompactionRules;
use crate::compaction::job::{self, JobContext};
use crate::compaction::leveled::PickerInput;
use crate::compaction::{Compaction, CompactionReason, fifo, leveled, score, universal};
use crate::compaction_filter::unix_now_seconds;
use crate::error::Result;
use crate::format::iterator::InternalIterator;
use crate::format::range_tombstones::FragmentedRangeTombstoneList;
use crate::iter::{FileOpener, LevelIterator};
use crate::options::CompactionStyle;
use crate::version::VersionEdit;

/// Which iterator [`DbInner::table_opener`] makes over each table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableIterKind {
    /// A user read.
    Plain,
    /// A prefix-confined user read (tables skipped by their prefix filter).
    Prefix,
    /// Compaction input: no block cache, checksums always verified.
    Compaction,
}

impl DbInner {
    fn arc(&self) -> Option<Arc<DbInner>> {
        self.self_ref.get().and_then(std::sync::Weak::upgrade)
    }

    /// Schedules the flushes and compactions that are due and fit the
    /// limits. REQUIRES: the state lock is held (the caller's guard).
    pub(crate) fn maybe_schedule_work(&self, st: &mut DbState) {
        if self.read_only || self.shutting_down.load(Ordering::Acquire) || st.bg_error.is_some() {
            return;
        }
        let Some(me) = self.arc() else {
            return;
        };
        let want_flush = st
            .cfs
            .values()
            .filter(|c| !c.imms.is_empty() && !c.flush_running)
            .count();
        while st.bg_work.may_schedule_flush(self.max_flushes, want_flush) {
            st.bg_work.flush_scheduled();
            let me = Arc::clone(&me);
            self.bg_jobs.spawn(
                |job| self.env.high_priority.schedule(job),
                move || me.background_flush(),
            );
        }
        while st.bg_work.may_schedule_compaction(self.max_compactions) {
            let Some((c, ucmp)) = self.pick_compaction(st) else {
                break;
            };
            st.bg_work.enqueue(c, &ucmp);
            let me = Arc::clone(&me);
            self.bg_jobs.spawn(
                |job| self.env.low_priority.schedule(job),
                move || me.background_compaction(),
            );
        }
    }

    /// The next automatic compaction of any column family, with that
    /// family's comparator.
    fn pick_compaction(
        &self,
        st: &DbState,
    ) -> Option<(Compaction, crate::util::comparator::ComparatorRef)> {
        let now = unix_now_seconds();
        for cf in st
            .cfs
            .values()
            .filter(|c| !c.dropped && !c.options.disable_auto_compactions)
        {
            let Some(version) = st.versions.current(cf.id) else {
                continue;
            };
            let p = PickerInput {
                cf_id: cf.id,
                version: &version,
                opts: &cf.options,
                being_compacted: st.bg_work.being_compacted(),
                now_seconds: now,
                reserved_last_level: self.options.allow_ingest_behind,
                oldest_snapshot: st.oldest_snapshot_released,
                rewritten_bottommost: &st.rewritten_bottommost,
            };
            let c = match cf.options.compaction_style {
                CompactionStyle::Level => leveled::pick(&p),
                CompactionStyle::Universal => universal::pick(&p),
                CompactionStyle::Fifo => fifo::pick(&p),
                CompactionStyle::None => None,
            };
            if let Some(c) = c
                && !st.bg_work.conflicts(&c, &cf.options.comparator)
                && !Self::straddles_memtables(cf, &c)
            {
                return Some((c, cf.options.comparator.clone()));
            }
        }
        None
    }

    /// Whether `c` writes L0 and takes an L0 file newer than data still in
    /// `cf`'s memtables (an ingested file takes a sequence number above
    /// memtable data it does not overlap). Its output would span that
    /// data's sequence numbers, and the flush after it would break L0's
    /// newest-first order; it waits for the flush (RocksDB's rule in
    /// `FindIntraL0Compaction`, applied to every compaction into L0).
    fn straddles_memtables(cf: &super::CfData, c: &Compaction) -> bool {
        if c.output_level != 0 {
            return false;
        }
        let earliest = std::iter::once(&cf.mem)
            .chain(cf.imms.iter().map(|(m, _)| m))
            .filter(|m| !m.is_empty())
            .map(|m| m.first_seqno())
            .min();
        let Some(earliest) = earliest else {
            return false;
        };
        c.input_files()
            .any(|(level, f)| level == 0 && f.largest_seqno > earliest)
    }

    fn background_flush(self: Arc<Self>) {
        let mut st = self.lock_state();
        let pick = st
            .cfs
            .values()
            .filter(|c| !c.imms.is_empty() && !c.flush_running)
            .min_by_key(|c| c.imms.first().map(|(_, w)| *w))
            .map(|c| c.id);
        if let Some(cf_id) = pick
            && !self.shutting_down.load(Ordering::Acquire)
            && st.bg_error.is_none()
        {
            if let Some(cf) = st.cfs.get_mut(&cf_id) {
                cf.flush_running = true;
            }
            let r = self.flush_cf(st, cf_id);
            st = self.lock_state();
            if let Some(cf) = st.cfs.get_mut(&cf_id) {
                cf.flush_running = false;
            }
            if let Err(e) = r {
                self.info_log.log(&format!("[{cf_id}] flush failed: {e}"));
                st.bg_error.get_or_insert(e);
            }
        }
        st.bg_work.flush_finished();
        self.maybe_schedule_work(&mut st);
        self.bg_cv.notify_all();
    }

    fn background_compaction(self: Arc<Self>) {
        let mut st = self.lock_state();
        let Some(c) = st.bg_work.next_queued() else {
            st.bg_work.compaction_finished();
            self.bg_cv.notify_all();
            return;
        };
        if !self.shutting_down.load(Ordering::Acquire) && st.bg_error.is_none() {
            let (guard, r) = self.run_compaction(st, &c);
            st = guard;
            if let Err(e) = r
                && !self.shutting_down.load(Ordering::Acquire)
            {
                // The inputs, so the LOG alone explains a failed install.
                let inputs: Vec<String> = c
                    .input_files()
                    .map(|(l, f)| {
                        format!(
                            "L{l} #{} [{} .. {}]",
                            f.number,
                            crate::version::internal_key_debug_string(&f.smallest, false),
                            crate::version::internal_key_debug_string(&f.largest, false)
                        )
                    })
                    .collect();
                self.info_log.log(&format!(
                    "[{}] compaction to L{} failed: {e}; inputs: {}",
                    c.cf_id,
                    c.output_level,
                    inputs.join(", ")
                ));
                st.bg_error.get_or_insert(e);
            }
        }
        st.bg_work.unregister(&c);
        // The compaction held the version it was picked from: its inputs
        // become deletable only now.
        drop(c);
        self.delete_obsolete_files(&mut st);
        st.bg_work.compaction_finished();
        self.maybe_schedule_work(&mut st);
        self.bg_cv.notify_all();
    }

    /// Runs `c` (registered by the caller) and installs its result. The
    /// state lock is released while files are written and re-taken to
    /// install; the guard is handed back.
    pub(crate) fn run_compaction<'a>(
        &'a self,
        mut st: MutexGuard<'a, DbState>,
        c: &Compaction,
    ) -> (MutexGuard<'a, DbState>, Result<()>) {
        let Some(cf) = st.cfs.get(&c.cf_id) else {
            return (st, Ok(()));
        };
        let opts = cf.options.clone();
        let cf_name = cf.name.clone();
        let mut edit = VersionEdit::default();
        for (level, f) in c.input_files() {
            edit.delete_file(level as u32, f.number);
        }
        let mut subcompactions = 0;
        let mut level_stats = LevelStats {
            count: 1,
            files_read: c.num_input_files() as u64,
            ..LevelStats::default()
        };
        let kind;
        if c.deletion_only {
            kind = "deletion";
        } else if c.is_trivial_move() && {
            // A moved file keeps its path: only into the output's path.
            let out = self.output_path_id(c, &opts);
            c.input_files().all(|(_, f)| f.path_id == out)
        } {
            kind = "trivial move";
            for (_, f) in c.input_files() {
                edit.add_file(c.output_level as u32, (**f).clone());
                level_stats.bytes_moved += f.file_size;
            }
        } else {
            kind = "compaction";
            let mut view = self.begin_job_view(&mut st);
            let mut table_options = opts.table_options(c.cf_id, &cf_name);
            // RocksDB's bottom for compression: no level below the output
            // holds data in the input version.
            let bottommost = opts.compression_depends_on_bottommost()
                && c.output_level
                    >= crate::compaction::file_triggers::last_non_empty_level(&c.version);
            (table_options.compression, table_options.compression_opts) = opts
                .compression_for_output(c.output_level, bottommost, || {
                    if opts.compaction_style == crate::options::CompactionStyle::Universal {
                        1
                    } else {
                        crate::compaction::score::compute(&c.version, &opts, &Default::default())
                            .base_level
                    }
                });
            // The dictionary buffer's limit: the output size, or for
            // compactions that do not cut outputs (universal into L0, FIFO)
            // the base target size, as RocksDB's max_output_file_size.
            table_options.target_file_size = if c.target_file_size == u64::MAX {
                opts.target_file_size_base
            } else {
                c.target_file_size
            };
            if opts.compaction_style != crate::options::CompactionStyle::Fifo {
                table_options.filter_levelish = c.output_level as i32;
            }
            table_options.verify_checksums = self.options.paranoid_checks;
            table_options.allow_mmap_reads = self.options.allow_mmap_reads;
            table_options.use_direct_reads = self.options.use_direct_reads;
            table_options.statistics = self.options.statistics.clone();
            if opts.optimize_filters_for_hits || opts.level_scaled_filters {
                let bottommost =
                    crate::compaction::BeyondOutputLevel::new(c, opts.comparator.clone())
                        .is_empty();
                let (run, runs) = c.runs_after();
                table_options.bloom_bits_per_key =
                    opts.bloom_bits_for_output(run, &runs, bottommost);
            }
            drop(st);
            // Inputs are opened (through the shared table cache) with the
            // options user reads use; compaction iterators bypass the block
            // cache and verify checksums per read.
            let r = self.write_compaction_outputs(c, &opts, table_options, &view);
            st = self.lock_state();
            self.end_job_view(&mut st, &mut view);
            let out = match r {
                Ok(out) => out,
                Err(e) => {
                    for n in &e.created {
                        st.files.release_pending_output(*n);
                    }
                    self.delete_obsolete_files(&mut st);
                    return (st, Err(e.error));
                }
            };
            for f in &out.files {
                edit.add_file(c.output_level as u32, f.clone());
            }
            if c.reason == CompactionReason::BottommostFiles {
                let versions: Vec<_> = st
                    .cfs
                    .keys()
                    .filter_map(|id| st.versions.current(*id))
                    .collect();
                crate::compaction::file_triggers::retain_live(
                    &mut st.rewritten_bottommost,
                    &versions,
                );
                st.rewritten_bottommost.extend(
                    out.files
                        .iter()
                        .filter(|f| f.largest_seqno != 0)
                        .map(|f| f.number),
                );
            }
            level_stats.micros = out.micros;
            subcompactions = out.subcompactions;
            level_stats.bytes_read_start =
                out.bytes_read - c.input_bytes_at(c.output_level).min(out.bytes_read);
            level_stats.bytes_read_output = c.input_bytes_at(c.output_level);
            level_stats.bytes_written = out.bytes_written;
            level_stats.files_written = out.files.len() as u64;
            level_stats.keys_in = out.iter_stats.input_records;
            level_stats.keys_dropped = out.iter_stats.input_records - out.iter_stats.output_records;
            for f in &out.files {
                st.files.release_pending_output(f.number);
            }
            if !st.cfs.contains_key(&c.cf_id) {
                // Dropped meanwhile: the outputs are garbage.
                self.delete_obsolete_files(&mut st);
                return (st, Ok(()));
            }
        }
        if let Err(e) = st.versions.log_and_apply(c.cf_id, edit) {
            // The MANIFEST may hold the edit anyway: keep the outputs (see
            // `delete_obsolete_files`).
            st.bg_error.get_or_insert(e.duplicate());
            return (st, Err(e));
        }
        crate::crash_point!("compaction::after_install");
        let stats = st.stats.entry(c.cf_id).or_default();
        stats.level_mut(c.output_level).add(&level_stats);
        if let Some(s) = &self.options.statistics {
            use crate::util::statistics::{HistogramKind, Ticker};
            s.record(
                Ticker::CompactReadBytes,
                level_stats.bytes_read_start + level_stats.bytes_read_output,
            );
            s.record(Ticker::CompactWriteBytes, level_stats.bytes_written);
            s.measure(HistogramKind::CompactionTime, level_stats.micros);
        }
        let shape: String = st
            .versions
            .current(c.cf_id)
            .map(|v| {
                (0..v.num_levels())
                    .map(|l| v.num_files(l).to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        self.info_log.log(&format!(
            "[{cf_name}] {kind} ({}, score {:.2}, {subcompactions} subcompactions) L{} -> L{}: {} files, {} bytes in; {} files, {} bytes out; {} keys in, {} dropped; {:.3} s; files[{shape}]",
            c.reason.name(),
            c.score,
            c.start_level(),
            c.output_level,
            c.num_input_files(),
            c.input_bytes(),
            level_stats.files_written,
            level_stats.bytes_written,
            level_stats.keys_in,
            level_stats.keys_dropped,
            level_stats.micros as f64 / 1e6
        ));
        self.install_super_versions(&mut st);
        self.delete_obsolete_files(&mut st);
        (st, Ok(()))
    }

    /// The I/O part of a compaction, without the state lock.
    /// The table path `c` writes to: the manual compaction's target, else
    /// by size (see [`crate::compaction::placement`]).
    fn output_path_id(&self, c: &Compaction, opts: &crate::options::ColumnFamilyOptions) -> u32 {
        c.output_path_id.unwrap_or_else(|| {
            crate::compaction::placement::output_path_id(c, &self.table_paths, opts)
        })
    }

    fn write_compaction_outputs(
        &self,
        c: &Compaction,
        opts: &crate::options::ColumnFamilyOptions,
        mut table_options: crate::table::TableOptions,
        view: &super::commit_table::JobView,
    ) -> std::result::Result<job::JobOutput, job::JobError> {
        let fail = |error| job::JobError {
            error,
            created: Vec::new(),
        };
        let icmp = crate::format::InternalKeyComparator::new(opts.comparator.clone());
        let read_options = Arc::new(table_options.clone());
        let mut parts = Vec::new();
        for (level, f) in c.input_files() {
            let t = self
                .table_cache
                .get(f, &read_options, level == 0)
                .map_err(fail)?;
            if let Some(l) = t.fragmented_range_tombstones() {
                parts.push(Arc::clone(l));
            }
            // Keys of other lengths (an input written variable-length, or
            // not a PlainTable): so is the output.
            if let Some(p) = &mut table_options.plain
                && u64::from(p.user_key_len) != t.properties().fixed_key_len
            {
                p.user_key_len = 0;
            }
        }
        let tombstones = FragmentedRangeTombstoneList::merge_shared(opts.comparator.clone(), parts);
        let cache = &self.table_cache;
        let make_input = || -> Result<Box<dyn InternalIterator + Send + '_>> {
            let mut children: Vec<Box<dyn InternalIterator + Send>> = Vec::new();
            for l in &c.inputs {
                if l.files.is_empty() {
                    continue;
                }
                if l.level == 0 {
                    for f in &l.files {
                        let t = cache.get(f, &read_options, true)?;
                        children.push(Box::new(t.compaction_iter()));
                    }
                } else {
                    children.push(Box::new(LevelIterator::new(
                        icmp.clone(),
                        l.files.clone(),
                        self.table_opener(&read_options, TableIterKind::Compaction),
                    )));
                }
            }
            Ok(crate::iter::merging::merged(icmp.clone(), children))
        };
        let new_file_number = || {
            let mut st = self.lock_state();
            let n = st.versions.new_file_number();
            st.files.add_pending_output(n);
            n
        };
        let log = |line: &str| self.info_log.log(line);
        let path_id = self.output_path_id(c, opts);
        let ctx = JobContext {
            fs: Arc::clone(&self.fs),
            dir: self.table_paths.dir(path_id),
            path_id,
            table_options,
            rules: CompactionRules {
                ucmp: opts.comparator.clone(),
                snapshots: view.snapshots.clone(),
                merge_operator: opts.merge_operator.clone(),
                filter: opts.compaction_filter.clone().or_else(|| {
                    let f = opts.compaction_filter_factory.as_ref()?;
                    let all_files = c.version.all_files().count() == c.num_input_files();
                    f.create_compaction_filter(&crate::compaction_filter::CompactionFilterContext {
                        is_full_compaction: all_files,
                        is_manual_compaction: c.reason == CompactionReason::ManualCompaction,
                        column_family_id: c.cf_id,
                    })
                }),
                output_level: c.output_level,
                // RocksDB's iterator is never bottommost under
                // allow_ingest_behind: entries ingested behind take 0.
                zero_bottom_seqnos: c.output_level >= 1 && !self.options.allow_ingest_behind,
                snapshot_checker: view.checker.clone(),
            },
            input_tombstones: tombstones,
            new_file_number: &new_file_number,
            make_input: &make_input,
            max_subcompactions: self.options.max_subcompactions,
            now_seconds: unix_now_seconds(),
            cancel: Some(&self.shutting_down),
            identity: self.table_identity(),
            checksum_factory: self.options.file_checksum_gen_factory.clone(),
            write_mode: self.options.table_write_mode(),
            bytes_per_sync: self.options.bytes_per_sync,
            log: Some(&log),
        };
        job::run(c, &ctx)
    }

    /// Opens table iterators through the table cache (prefix-confined
    /// ones, which skip tables by their prefix filter, with `prefix_mode`).
    pub(crate) fn table_opener(
        &self,
        topts: &Arc<crate::table::TableOptions>,
        kind: TableIterKind,
    ) -> FileOpener {
        let cache = self.table_cache.clone();
        let topts = Arc::clone(topts);
        Arc::new(move |f| {
            // Level iterators serve levels below 0.
            let t = cache.get(f, &topts, false)?;
            Ok(match kind {
                TableIterKind::Prefix => Box::new(crate::table::PrefixSeekIter::new(t))
                    as Box<dyn InternalIterator + Send>,
                TableIterKind::Plain => Box::new(t.iter()),
                TableIterKind::Compaction => Box::new(t.compaction_iter()),
            })
        })
    }

    /// Recomputes the write-stall condition from the current versions.
    /// REQUIRES: the state lock is held.
    pub(crate) fn recalculate_write_stall(&self, st: &mut DbState) {
        let mut worst = StallCondition::Normal;
        let mut debt = (0usize, 0u64);
        for cf in st.cfs.values().filter(|c| !c.dropped) {
            let Some(v) = st.versions.current(cf.id) else {
                continue;
            };
            let o = &cf.options;
            let pending = if o.compaction_style == CompactionStyle::Level {
                score::compute(&v, o, &Default::default()).pending_compaction_bytes
            } else {
                0
            };
            let l0 = if o.compaction_style == CompactionStyle::Universal {
                crate::compaction::universal::sorted_runs(&PickerInput {
                    cf_id: cf.id,
                    version: &v,
                    opts: o,
                    being_compacted: &Default::default(),
                    now_seconds: 0,
                    reserved_last_level: self.options.allow_ingest_behind,
                    oldest_snapshot: 0,
                    rewritten_bottommost: &Default::default(),
                })
                .len()
            } else {
                v.num_files(0)
            };
            let c = condition(&StallInputs {
                l0_files: l0,
                pending_bytes: pending,
                imms: cf.imms.len(),
                max_write_buffer_number: o.max_write_buffer_number,
                slowdown_trigger: o.level0_slowdown_writes_trigger,
                stop_trigger: o.level0_stop_writes_trigger,
                soft_limit: o.soft_pending_compaction_bytes_limit,
                hard_limit: o.hard_pending_compaction_bytes_limit,
                auto_compactions: !o.disable_auto_compactions
                    && o.compaction_style != CompactionStyle::None
                    && o.compaction_style != CompactionStyle::Fifo,
            });
            debt = debt.max((l0, pending));
            worst = match (worst, c) {
                (StallCondition::Stopped { .. }, _) => worst,
                (_, StallCondition::Stopped { .. }) => c,
                (
                    StallCondition::Delayed { fraction: a, .. },
                    StallCondition::Delayed { fraction: b, .. },
                ) => {
                    if b < a {
                        c
                    } else {
                        worst
                    }
                }
                (StallCondition::Normal, _) => c,
                (_, StallCondition::Normal) => worst,
            };
        }
        if worst != st.write_stall {
            if let StallCondition::Stopped { cause } | StallCondition::Delayed { cause, .. } = worst
            {
                self.info_log.log(&format!(
                    "write stall: {worst:?} ({cause}); L0 {} files, {} pending compaction bytes",
                    debt.0, debt.1
                ));
            } else {
                self.info_log.log("write stall cleared");
            }
        }
        match worst {
            StallCondition::Delayed { fraction, .. } => {
                st.write_controller.update(Some(fraction), debt)
            }
            _ => st.write_controller.update(None, debt),
        }
        st.write_signals
            .set_stalled(worst != StallCondition::Normal);
        st.write_stall = worst;
    }
}

/// A manual compaction's reason, for the LOG.
pub(crate) const MANUAL: CompactionReason = CompactionReason::ManualCompaction;

impl super::DB {
    /// Waits until no flush or compaction is queued or running and none is
    /// due (for tests and benchmarks).
    pub fn wait_for_compactions(&self) -> crate::Result<()> {
        let inner = &self.inner;
        let mut st = inner.lock_state();
        loop {
            if let Some(e) = st.bg_error.get() {
                return Err(e.duplicate());
            }
            inner.maybe_schedule_work(&mut st);
            let idle = st.bg_work.is_idle() && st.cfs.values().all(|c| c.imms.is_empty());
            if idle || inner.shutting_down.load(Ordering::Acquire) {
                return Ok(());
            }
            st = inner
                .bg_cv
                .wait_timeout(st, std::time::Duration::from_millis(100))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }
}
