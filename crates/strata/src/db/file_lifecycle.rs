//! File lifecycle: which table files and WALs are still needed, and the
//! deletion of those that are not (RocksDB's `FindObsoleteFiles` and
//! `PurgeObsoleteFiles`). This file decides when a file may go; what
//! happens to a retired WAL (deleted or archived) is `wal_archive.rs`, and
//! when a closed WAL is synced is `wal_set.rs`.
//!
//! A table file is live while any of these holds:
//! - it is being written (`pending_outputs`: flush, compaction and
//!   ingestion outputs not yet in a version);
//! - a version someone still holds names it (`live_versions`: iterators,
//!   SuperVersions, compactions keep their version alive);
//! - the current version of a column family names it.
//!
//! A WAL is alive (`alive_wals`) from its creation until every column
//! family has flushed what it holds and, with two-phase commit, no
//! prepared section in it is undecided.
//!
//! Invariants:
//! - nothing is deleted while file deletions are disabled, on a read-only
//!   database, or after a background error (the MANIFEST on disk may name
//!   files the in-memory state does not);
//! - a WAL is deleted only after the MANIFEST records log numbers past it
//!   for every column family (`persist_advanced_log_numbers`), so recovery
//!   never mistakes a deleted WAL for one a power loss cut short;
//! - `alive_wals` is ascending and ends with the current WAL.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use super::{DbInner, DbState};
use crate::version::version::ReleaseHook;
use crate::version::{FileType, Version, VersionEdit, parse_file_name};

/// What is needed, besides the current versions (a field of `DbState`,
/// changed under the state mutex).
#[derive(Default)]
pub(crate) struct FileLifecycle {
    /// WAL files that may still be needed, oldest first.
    alive_wals: Vec<u64>,
    /// Versions handed out, to know which tables are still in use.
    live_versions: Vec<Weak<Version>>,
    /// Table numbers being written by flushes, compactions and ingestion
    /// (not yet in any version).
    pending_outputs: BTreeSet<u64>,
    /// `disable_file_deletions` calls not yet matched by an enable.
    deletions_disabled: usize,
}

impl FileLifecycle {
    // ---- tables ----

    /// Table `number` is about to be written: it is not obsolete although
    /// no version names it yet.
    pub(crate) fn add_pending_output(&mut self, number: u64) {
        let fresh = self.pending_outputs.insert(number);
        debug_assert!(fresh, "file #{number} is already a pending output");
    }

    /// Table `number` is in a version now, or was abandoned.
    pub(crate) fn release_pending_output(&mut self, number: u64) {
        self.pending_outputs.remove(&number);
    }

    /// `version` was handed out (in a SuperVersion): its tables stay until
    /// the last holder lets it go.
    pub(crate) fn track_version(&mut self, version: &Arc<Version>) {
        self.live_versions.push(Arc::downgrade(version));
    }

    /// Forgets versions nobody holds any more.
    pub(crate) fn forget_dead_versions(&mut self) {
        self.live_versions.retain(|w| w.strong_count() > 0);
    }

    /// Every table number a pending output, a held version or one of
    /// `current` names, and whether a version no longer current is still
    /// held (its files may become obsolete when it is released).
    fn live_tables(&mut self, current: &[Arc<Version>]) -> (BTreeSet<u64>, bool) {
        self.forget_dead_versions();
        let mut live = self.pending_outputs.clone();
        let mut superseded_held = false;
        for v in self.live_versions.iter().filter_map(Weak::upgrade) {
            superseded_held |= !current.iter().any(|c| Arc::ptr_eq(c, &v));
            live.extend(v.all_files().map(|(_, f)| f.number));
        }
        for v in current {
            live.extend(v.all_files().map(|(_, f)| f.number));
        }
        (live, superseded_held)
    }

    // ---- WALs ----

    pub(crate) fn alive_wals(&self) -> &[u64] {
        &self.alive_wals
    }

    /// The oldest WAL recovery may still need.
    pub(crate) fn oldest_alive_wal(&self) -> Option<u64> {
        self.alive_wals.first().copied()
    }

    /// The alive WALs after recovery (ascending).
    pub(crate) fn set_alive_wals(&mut self, wals: Vec<u64>) {
        debug_assert!(
            wals.windows(2).all(|w| w[0] < w[1]),
            "alive WALs out of order"
        );
        self.alive_wals = wals;
    }

    /// A memtable switch created WAL `number`, the new current one.
    pub(crate) fn wal_created(&mut self, number: u64) {
        debug_assert!(self.alive_wals.last().is_none_or(|&w| w < number));
        self.alive_wals.push(number);
    }

    /// Takes the alive WALs below `min_wal` out of the alive list, oldest
    /// first, for the caller to retire.
    fn take_wals_below(&mut self, min_wal: u64) -> Vec<u64> {
        let keep_from = self.alive_wals.partition_point(|&w| w < min_wal);
        self.alive_wals.drain(..keep_from).collect()
    }

    // ---- deletion switch ----

    /// `DB::disable_file_deletions` (calls nest).
    pub(crate) fn disable_deletions(&mut self) {
        self.deletions_disabled += 1;
    }

    /// `DB::enable_file_deletions`: undoes one disable, or all with
    /// `force`. Returns whether deletions are enabled now.
    pub(crate) fn enable_deletions(&mut self, force: bool) -> bool {
        self.deletions_disabled = if force {
            0
        } else {
            self.deletions_disabled.saturating_sub(1)
        };
        self.deletions_disabled == 0
    }
}

impl DbInner {
    /// Deletes WALs, tables and MANIFESTs nothing needs any more (unless
    /// file deletions are disabled).
    pub(crate) fn delete_obsolete_files(&self, st: &mut DbState) {
        // Under a background error nothing is deleted: after a failed
        // MANIFEST write or sync the file on disk may still hold the edit
        // (and name the job's outputs), so only recovery at the next open
        // may decide what is obsolete (RocksDB disables file deletions on
        // a MANIFEST write error for the same reason).
        if st.files.deletions_disabled > 0 || self.read_only || st.bg_error.is_some() {
            return;
        }
        let current = st.wal_number;
        let min_wal = st
            .cfs
            .values()
            .filter(|c| !c.dropped)
            .map(|c| c.min_wal_needed(current))
            .min()
            .unwrap_or(current);
        if !self.persist_advanced_log_numbers(st, current, min_wal) {
            return;
        }
        // Two-phase commit may need older WALs (`two_phase`); the MANIFEST
        // records the oldest one kept, where recovery starts reading.
        let min_wal = match self.min_wal_for_2pc(st) {
            Some(prep) => prep.min(min_wal),
            None => min_wal,
        };
        if self.options.allow_2pc && min_wal > st.versions.min_log_number_to_keep() {
            let edit = VersionEdit {
                min_log_number_to_keep: Some(min_wal),
                ..VersionEdit::default()
            };
            if let Err(e) = st.versions.log_and_apply(0, edit) {
                st.bg_error.get_or_insert(e);
                return;
            }
        }
        let old = st.files.take_wals_below(min_wal);
        crate::util::sync::lock(&self.wal).forget_below(min_wal);
        for w in old {
            crate::crash_point!("obsolete::before_delete_wal");
            self.retire_wal(w);
        }
        self.purge_archived_wals(false);
        let current_versions: Vec<Arc<Version>> = st
            .cfs
            .keys()
            .filter_map(|id| st.versions.current(*id))
            .collect();
        // Set before the held versions are looked at: a version released
        // from here on wakes another purge (see `ReleasedVersions`).
        self.released_versions.expect_release();
        let (live, superseded_held) = st.files.live_tables(&current_versions);
        self.released_versions.purged(superseded_held);
        let manifest = st.versions.manifest_file_number();
        // Tables are looked for in the table paths only (as RocksDB's full
        // scan of `db_paths`), MANIFESTs in the DB directory.
        let table_dirs = self.table_paths.distinct_dirs();
        let mut dirs = table_dirs.clone();
        if !dirs.contains(&self.dbname.as_path()) {
            dirs.push(&self.dbname);
        }
        for dir in dirs {
            let Ok(children) = self.fs.children(dir) else {
                continue;
            };
            let tables_here = table_dirs.contains(&dir);
            for name in children {
                match parse_file_name(&name) {
                    Some((num, FileType::Table)) if tables_here && !live.contains(&num) => {
                        self.table_cache.evict(num);
                        crate::crash_point!("obsolete::before_delete_table");
                        let _ = self.fs.delete_file(&dir.join(&name));
                    }
                    // MANIFESTs CURRENT no longer names (CURRENT's switch
                    // is durable: its directory was synced), as RocksDB's
                    // PurgeObsoleteFiles keeps only the current one and
                    // newer.
                    Some((num, FileType::Descriptor)) if num < manifest && dir == self.dbname => {
                        crate::crash_point!("obsolete::before_delete_manifest");
                        let _ = self.fs.delete_file(&dir.join(&name));
                    }
                    _ => {}
                }
            }
        }
    }

    /// Before WALs below `min_wal` are deleted: a column family whose
    /// memtables are empty needs no WAL before the current one, but its
    /// MANIFEST log number may still name an older WAL (RocksDB advances
    /// it in memory only). Recovery must not mistake such a deleted WAL
    /// for one a power loss cut short (the predecessor check in
    /// `recover_wals` stops replay there), so the advanced log numbers are
    /// recorded first, in one atomic MANIFEST group. Returns false (delete
    /// nothing) if that fails.
    fn persist_advanced_log_numbers(&self, st: &mut DbState, current: u64, min_wal: u64) -> bool {
        let edits: Vec<(u32, VersionEdit)> = st
            .cfs
            .values()
            .filter(|c| !c.dropped)
            .filter_map(|c| {
                let recorded = st.versions.column_family(c.id)?.log_number();
                let needed = c.min_wal_needed(current);
                // Only when a WAL about to be deleted is one the recorded
                // number still covers.
                let advance = recorded < min_wal && needed > recorded;
                advance.then(|| {
                    let edit = VersionEdit {
                        log_number: Some(needed),
                        ..VersionEdit::default()
                    };
                    (c.id, edit)
                })
            })
            .collect();
        if edits.is_empty() {
            return true;
        }
        match st.versions.log_and_apply_group(edits) {
            Ok(()) => true,
            Err(e) => {
                st.bg_error.get_or_insert(e);
                false
            }
        }
    }
}

/// Purges obsolete files when the last holder of a superseded version (an
/// iterator, a get, a job) lets it go, as RocksDB does when a SuperVersion's
/// last reference goes: a purge that found such a version held kept its
/// files, and without this they would stay until the next flush or
/// compaction, which may never come.
///
/// Every version built from the MANIFEST's edits calls [`Self::hook`] when
/// dropped, perhaps with the state lock held; the hook only schedules a
/// purge job, and only when the last purge was held back.
#[derive(Default)]
pub(crate) struct ReleasedVersions {
    /// The last purge found a superseded version held (or one is running).
    /// Invariant: set before a purge upgrades its weak references, so a
    /// version dropped after that (the hook runs after its last strong
    /// reference is gone) sees it set.
    held_back: AtomicBool,
    /// A purge job is scheduled and has not started.
    scheduled: AtomicBool,
    db: OnceLock<Weak<DbInner>>,
}

impl ReleasedVersions {
    /// What versions call when dropped.
    pub(crate) fn hook(self: &Arc<Self>) -> ReleaseHook {
        let me = Arc::clone(self);
        Arc::new(move || me.version_released())
    }

    /// The database whose purges the hook schedules (versions dropped
    /// before, during recovery, schedule nothing).
    pub(crate) fn bind(&self, db: Weak<DbInner>) {
        let _ = self.db.set(db);
    }

    fn expect_release(&self) {
        self.held_back.store(true, Ordering::SeqCst);
    }

    fn purged(&self, superseded_held: bool) {
        self.held_back.store(superseded_held, Ordering::SeqCst);
    }

    fn version_released(&self) {
        if !self.held_back.load(Ordering::SeqCst) || self.scheduled.swap(true, Ordering::SeqCst) {
            return;
        }
        let db = self.db.get().and_then(Weak::upgrade);
        match db {
            Some(db) if !db.shutting_down.load(Ordering::Acquire) => {
                let job = Arc::clone(&db);
                db.bg_jobs.spawn(
                    |j| db.env.high_priority.schedule(j),
                    move || job.background_purge(),
                );
            }
            _ => self.scheduled.store(false, Ordering::SeqCst),
        }
    }
}

impl DbInner {
    /// A purge job (scheduled by [`ReleasedVersions`]).
    fn background_purge(&self) {
        self.released_versions
            .scheduled
            .store(false, Ordering::SeqCst);
        if self.shutting_down.load(Ordering::Acquire) {
            return;
        }
        let mut st = self.lock_state();
        self.delete_obsolete_files(&mut st);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{InternalKeyComparator, ValueType, make_internal_key};
    use crate::util::comparator::bytewise;
    use crate::version::{FileMetaData, VersionBuilder};

    fn version(numbers: &[u64]) -> Arc<Version> {
        let icmp = InternalKeyComparator::new(bytewise());
        let mut edit = VersionEdit::default();
        for (i, &n) in numbers.iter().enumerate() {
            let k = format!("k{i:03}");
            edit.add_file(
                1,
                FileMetaData::new(
                    n,
                    100,
                    make_internal_key(k.as_bytes(), 1, ValueType::Value),
                    make_internal_key(k.as_bytes(), 1, ValueType::Value),
                    1,
                    1,
                ),
            );
        }
        let mut b = VersionBuilder::new(Arc::new(Version::new(icmp.clone(), 7)));
        b.apply(&edit).expect("apply");
        Arc::new(b.finish(1).expect("valid version"))
    }

    #[test]
    fn a_table_lives_while_pending_held_or_current() {
        let mut f = FileLifecycle::default();
        f.add_pending_output(9);
        let held = version(&[3, 4]);
        f.track_version(&held);
        let current = version(&[5]);
        f.track_version(&current);
        let (live, superseded_held) = f.live_tables(std::slice::from_ref(&current));
        assert_eq!(live.into_iter().collect::<Vec<_>>(), vec![3, 4, 5, 9]);
        assert!(superseded_held);
        // The holder lets the version go and the output is installed.
        drop(held);
        f.release_pending_output(9);
        let (live, superseded_held) = f.live_tables(std::slice::from_ref(&current));
        assert_eq!(live.into_iter().collect::<Vec<_>>(), vec![5]);
        assert!(!superseded_held, "the current version is not superseded");
        assert_eq!(f.live_versions.len(), 1, "dead versions are forgotten");
    }

    #[test]
    fn wals_below_the_minimum_leave_in_order() {
        let mut f = FileLifecycle::default();
        f.set_alive_wals(vec![4, 7]);
        f.wal_created(9);
        f.wal_created(12);
        assert_eq!(f.oldest_alive_wal(), Some(4));
        assert_eq!(f.take_wals_below(9), vec![4, 7]);
        assert_eq!(f.alive_wals(), &[9, 12]);
        assert_eq!(f.take_wals_below(9), Vec::<u64>::new());
    }

    #[test]
    fn deletions_stay_disabled_until_every_disable_is_undone() {
        let mut f = FileLifecycle::default();
        f.disable_deletions();
        f.disable_deletions();
        assert!(!f.enable_deletions(false));
        assert!(f.enable_deletions(false));
        f.disable_deletions();
        f.disable_deletions();
        assert!(f.enable_deletions(true), "force undoes them all");
    }
}
