//! `VersionSet`: every column family's current `Version`, the DB-wide
//! counters, and the MANIFEST they are logged to (RocksDB's `VersionSet`
//! and `ColumnFamilySet`). Recovery from an existing MANIFEST lives in
//! `recovery.rs`.
//!
//! Invariants:
//! * Write-ahead: an edit reaches the MANIFEST, and the MANIFEST is synced,
//!   before the versions it produces are installed. On any error writing or
//!   syncing, nothing in memory changes and the set refuses every later
//!   edit with that error until the DB is reopened (RocksDB turns the DB
//!   read-only), because the MANIFEST tail is then unknown.
//! * A new MANIFEST (at open, or when the current one exceeds
//!   `max_manifest_file_size`) is written completely and synced, a snapshot
//!   of the state followed by the new edits, before CURRENT is switched to
//!   it by `set_current_file`. The previous MANIFEST is never deleted here.
//! * `next_file_number` is greater than every file number in use (the
//!   MANIFEST's own included); every edit logged carries the current
//!   `next_file_number`, `last_sequence` and `prev_log_number`, so any
//!   MANIFEST prefix that recovery accepts has them.
//! * Old versions: the set keeps `Weak` references to every version it
//!   replaced, so `live_files` also reports files of versions still held by
//!   readers (iterators hold an `Arc<Version>`), without keeping them alive.
//!
//! Thread-safety: mutating methods take `&mut self` (the DB layer holds the
//! set behind its mutex); the file-number and sequence counters are atomic.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::apply::{CfState, EditApplier, EditParams};
use super::edit::VersionEdit;
use super::manifest::write_manifest;
use super::version::{DEFAULT_NUM_LEVELS, Version};
use crate::error::{Error, Result};
use crate::filename::{current_file_path, set_current_file};
use crate::format::dbformat::{InternalKeyComparator, parse_internal_key};
use crate::fs::FileSystemRef;
use crate::util::comparator::{ComparatorRef, bytewise};
use crate::wal::LogWriter;

/// Name of the default column family.
pub const DEFAULT_COLUMN_FAMILY_NAME: &str = "default";

/// How a `VersionSet` is opened.
#[derive(Clone)]
pub struct VersionSetOptions {
    /// Comparator of every column family not named in `cf_comparators`.
    pub comparator: ComparatorRef,
    /// Comparators of particular column families, by name.
    pub cf_comparators: HashMap<String, ComparatorRef>,
    /// Levels of every column family not named in `cf_num_levels`
    /// (RocksDB `num_levels`).
    pub num_levels: usize,
    /// Levels of particular column families, by name.
    pub cf_num_levels: HashMap<String, usize>,
    /// MANIFEST size past which the next edit starts a new MANIFEST.
    pub max_manifest_file_size: u64,
    /// Where the WALs are, if not in the database directory: recovery
    /// counts their numbers as used.
    pub wal_dir: Option<std::path::PathBuf>,
    /// Given to every version built from edits: called when it is dropped.
    pub release_hook: Option<super::version::ReleaseHook>,
}

impl std::fmt::Debug for VersionSetOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionSetOptions")
            .field("comparator", &self.comparator.name())
            .field(
                "cf_comparators",
                &self.cf_comparators.keys().collect::<Vec<_>>(),
            )
            .field("num_levels", &self.num_levels)
            .field("max_manifest_file_size", &self.max_manifest_file_size)
            .finish()
    }
}

impl Default for VersionSetOptions {
    fn default() -> Self {
        VersionSetOptions::new(bytewise())
    }
}

impl VersionSetOptions {
    pub fn new(comparator: ComparatorRef) -> Self {
        VersionSetOptions {
            comparator,
            cf_comparators: HashMap::new(),
            num_levels: DEFAULT_NUM_LEVELS,
            cf_num_levels: HashMap::new(),
            max_manifest_file_size: 1 << 30,
            wal_dir: None,
            release_hook: None,
        }
    }

    /// The number of levels column family `name` has.
    pub fn num_levels_for(&self, name: &str) -> usize {
        self.cf_num_levels
            .get(name)
            .copied()
            .unwrap_or(self.num_levels)
    }

    /// The comparator column family `name` uses.
    pub fn comparator_for(&self, name: &str) -> ComparatorRef {
        self.cf_comparators
            .get(name)
            .cloned()
            .unwrap_or_else(|| self.comparator.clone())
    }
}

/// One column family: its identity, log number and current version.
#[derive(Clone)]
pub struct ColumnFamilyData {
    id: u32,
    name: String,
    comparator_name: String,
    icmp: InternalKeyComparator,
    log_number: u64,
    full_history_ts_low: Option<Vec<u8>>,
    current: Arc<Version>,
}

impl std::fmt::Debug for ColumnFamilyData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnFamilyData")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("log_number", &self.log_number)
            .field("current", &self.current)
            .finish()
    }
}

impl ColumnFamilyData {
    pub fn id(&self) -> u32 {
        self.id
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn comparator_name(&self) -> &str {
        &self.comparator_name
    }
    pub fn icmp(&self) -> &InternalKeyComparator {
        &self.icmp
    }
    /// WALs numbered below this hold nothing unflushed for this family.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }
    pub fn full_history_ts_low(&self) -> Option<&[u8]> {
        self.full_history_ts_low.as_deref()
    }
    pub fn current(&self) -> &Arc<Version> {
        &self.current
    }

    pub(crate) fn to_state(&self) -> CfState {
        CfState {
            id: self.id,
            name: self.name.clone(),
            comparator_name: self.comparator_name.clone(),
            icmp: self.icmp.clone(),
            log_number: self.log_number,
            full_history_ts_low: self.full_history_ts_low.clone(),
            base: self.current.clone(),
            builder: None,
        }
    }

    pub(crate) fn from_state(s: CfState) -> ColumnFamilyData {
        ColumnFamilyData {
            id: s.id,
            name: s.name,
            comparator_name: s.comparator_name,
            icmp: s.icmp,
            log_number: s.log_number,
            full_history_ts_low: s.full_history_ts_low,
            current: s.base,
        }
    }
}

/// All column families of a DB and the MANIFEST recording them.
pub struct VersionSet {
    pub(crate) fs: FileSystemRef,
    pub(crate) dbname: PathBuf,
    pub(crate) opts: VersionSetOptions,
    /// The MANIFEST size that triggers a new MANIFEST (default 1 GiB).
    pub max_manifest_file_size: u64,
    pub(crate) cfs: BTreeMap<u32, ColumnFamilyData>,
    pub(crate) next_file_number: AtomicU64,
    pub(crate) last_sequence: AtomicU64,
    pub(crate) manifest_file_number: u64,
    /// The open MANIFEST (`None` when read-only, or before the first write).
    pub(crate) manifest: Option<LogWriter>,
    pub(crate) min_log_number_to_keep: u64,
    pub(crate) prev_log_number: u64,
    pub(crate) max_column_family: u32,
    pub(crate) db_id: Option<String>,
    pub(crate) read_only: bool,
    pub(crate) bg_error: Option<Error>,
    pub(crate) old_versions: Mutex<Vec<Weak<Version>>>,
    pub(crate) version_number: u64,
}

impl std::fmt::Debug for VersionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionSet")
            .field("dbname", &self.dbname)
            .field("manifest_file_number", &self.manifest_file_number)
            .field("next_file_number", &self.next_file_number())
            .field("last_sequence", &self.last_sequence())
            .field("column_families", &self.cfs)
            .finish()
    }
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

impl VersionSet {
    /// The NewDB step: creates `dbname` if needed, writes `MANIFEST-000001`
    /// holding `{comparator, log_number 0, next_file 2, last_sequence 0}`,
    /// syncs it and points CURRENT at it (syncing the directory). Fails with
    /// InvalidArgument if CURRENT already exists.
    pub fn create_new(
        fs: FileSystemRef,
        dbname: &Path,
        comparator: ComparatorRef,
    ) -> Result<VersionSet> {
        Self::create_new_with(fs, dbname, VersionSetOptions::new(comparator))
    }

    /// [`VersionSet::create_new`] with all options.
    pub fn create_new_with(
        fs: FileSystemRef,
        dbname: &Path,
        opts: VersionSetOptions,
    ) -> Result<VersionSet> {
        let vs = Self::create_new_uninstalled(fs, dbname, opts)?;
        vs.install_current()?;
        Ok(vs)
    }

    /// [`VersionSet::create_new_with`] without CURRENT: the MANIFEST can be
    /// filled (repair) before [`VersionSet::install_current`] makes it the
    /// database's, so a crash meanwhile leaves no half-built database
    /// that opens. REQUIRES (until installed): no MANIFEST rollover, which
    /// would install itself (`opts.max_manifest_file_size` = `u64::MAX`).
    pub fn create_new_uninstalled(
        fs: FileSystemRef,
        dbname: &Path,
        opts: VersionSetOptions,
    ) -> Result<VersionSet> {
        fs.create_dir_all(dbname)?;
        if fs.file_exists(&current_file_path(dbname)) {
            return Err(invalid(format!(
                "{}: exists (CURRENT is present)",
                dbname.display()
            )));
        }
        Self::create_uninstalled_at(fs, dbname, opts, 1)
    }

    /// A fresh version set whose MANIFEST is file `manifest_number` of
    /// `dbname`, not named by CURRENT (which may name another MANIFEST
    /// until [`VersionSet::install_current`]): how repair rebuilds a
    /// database while its old MANIFEST stays in place. The same
    /// REQUIRES as [`VersionSet::create_new_uninstalled`].
    pub fn create_uninstalled_at(
        fs: FileSystemRef,
        dbname: &Path,
        opts: VersionSetOptions,
        manifest_number: u64,
    ) -> Result<VersionSet> {
        debug_assert!(manifest_number > 0);
        let edit = VersionEdit {
            comparator: Some(opts.comparator.name().to_string()),
            log_number: Some(0),
            next_file_number: Some(manifest_number + 1),
            last_sequence: Some(0),
            ..VersionEdit::default()
        };
        let writer = write_manifest(&*fs, dbname, manifest_number, &[edit.encode()])?;
        let mut cfs = BTreeMap::new();
        let default = EditApplier::new_cf(&opts, 0, DEFAULT_COLUMN_FAMILY_NAME);
        cfs.insert(0, ColumnFamilyData::from_state(default));
        let mut vs = VersionSet::from_parts(
            fs,
            dbname,
            opts,
            cfs,
            &EditParams::default(),
            manifest_number + 1,
        );
        vs.manifest_file_number = manifest_number;
        vs.manifest = Some(writer);
        Ok(vs)
    }

    /// Points CURRENT at this version set's MANIFEST (synced, with the
    /// directory).
    pub fn install_current(&self) -> Result<()> {
        set_current_file(&*self.fs, &self.dbname, self.manifest_file_number)
    }

    pub(crate) fn from_parts(
        fs: FileSystemRef,
        dbname: &Path,
        opts: VersionSetOptions,
        cfs: BTreeMap<u32, ColumnFamilyData>,
        params: &EditParams,
        next_file_number: u64,
    ) -> VersionSet {
        VersionSet {
            fs,
            dbname: dbname.to_path_buf(),
            max_manifest_file_size: opts.max_manifest_file_size,
            opts,
            cfs,
            next_file_number: AtomicU64::new(next_file_number),
            last_sequence: AtomicU64::new(params.last_sequence.unwrap_or(0)),
            manifest_file_number: 0,
            manifest: None,
            min_log_number_to_keep: params.min_log_number_to_keep,
            prev_log_number: params.prev_log_number.unwrap_or(0),
            max_column_family: params.max_column_family,
            db_id: params.db_id.clone(),
            read_only: false,
            bg_error: None,
            old_versions: Mutex::new(Vec::new()),
            version_number: 0,
        }
    }

    pub fn dbname(&self) -> &Path {
        &self.dbname
    }

    pub fn options(&self) -> &VersionSetOptions {
        &self.opts
    }

    /// Allocates a file number (for a WAL, table, MANIFEST or OPTIONS file).
    pub fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::SeqCst)
    }

    /// The number the next `new_file_number` returns.
    pub fn next_file_number(&self) -> u64 {
        self.next_file_number.load(Ordering::SeqCst)
    }

    /// Makes sure `number` is never handed out again.
    pub fn mark_file_number_used(&self, number: u64) {
        self.next_file_number
            .fetch_max(number.saturating_add(1), Ordering::SeqCst);
    }

    pub fn last_sequence(&self) -> u64 {
        self.last_sequence.load(Ordering::SeqCst)
    }

    /// Publishes `seq` as the last sequence used (never moves backwards).
    pub fn set_last_sequence(&self, seq: u64) {
        self.last_sequence.fetch_max(seq, Ordering::SeqCst);
    }

    pub fn manifest_file_number(&self) -> u64 {
        self.manifest_file_number
    }

    /// Bytes written to the current MANIFEST (0 when read-only).
    pub fn manifest_file_size(&self) -> u64 {
        self.manifest.as_ref().map_or(0, LogWriter::file_size)
    }

    pub fn min_log_number_to_keep(&self) -> u64 {
        self.min_log_number_to_keep
    }

    pub fn prev_log_number(&self) -> u64 {
        self.prev_log_number
    }

    pub fn max_column_family(&self) -> u32 {
        self.max_column_family
    }

    pub fn db_id(&self) -> Option<&str> {
        self.db_id.as_deref()
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The error that stopped this set from accepting edits, if any.
    pub fn background_error(&self) -> Option<&Error> {
        self.bg_error.as_ref()
    }

    /// `(id, name)` of every live column family, by id.
    pub fn column_families(&self) -> Vec<(u32, String)> {
        self.cfs.values().map(|c| (c.id, c.name.clone())).collect()
    }

    pub fn column_family(&self, id: u32) -> Option<&ColumnFamilyData> {
        self.cfs.get(&id)
    }

    pub fn column_family_by_name(&self, name: &str) -> Option<&ColumnFamilyData> {
        self.cfs.values().find(|c| c.name == name)
    }

    /// The current version of column family `cf_id`.
    pub fn current(&self, cf_id: u32) -> Option<Arc<Version>> {
        self.cfs.get(&cf_id).map(|c| c.current.clone())
    }

    /// Numbers of the table files of every current version and of every
    /// replaced version still referenced elsewhere, sorted, without
    /// duplicates. Files not listed may be deleted by the DB layer.
    pub fn live_files(&self) -> Vec<u64> {
        let mut out: Vec<u64> = Vec::new();
        let mut push = |v: &Version| out.extend(v.all_files().map(|(_, f)| f.number));
        for cf in self.cfs.values() {
            push(&cf.current);
        }
        let mut old = self.old_versions.lock().unwrap_or_else(|e| e.into_inner());
        old.retain(|w| match w.upgrade() {
            Some(v) => {
                push(&v);
                true
            }
            None => false,
        });
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Logs `edit` for column family `cf_id` and installs the result; see
    /// the module comment for the write-ahead and failure rules.
    pub fn log_and_apply(&mut self, cf_id: u32, edit: VersionEdit) -> Result<()> {
        self.log_and_apply_group(vec![(cf_id, edit)])
    }

    /// Logs several edits as one atomic group (kInAtomicGroup markers when
    /// there are two or more: recovery applies all or none) and installs
    /// them together.
    pub fn log_and_apply_group(&mut self, edits: Vec<(u32, VersionEdit)>) -> Result<()> {
        if let Some(e) = &self.bg_error {
            return Err(e.duplicate());
        }
        if self.read_only {
            return Err(Error::NotSupported(
                "edits to a read-only version set".into(),
            ));
        }
        if edits.is_empty() {
            return Ok(());
        }
        let mut edits = self.validate(edits)?;
        // Apply to copies first: a bad edit changes nothing.
        let mut applier = self.applier();
        for e in &edits {
            applier.apply(e)?;
        }
        let mut version_number = self.version_number;
        let finished = applier.finish(&mut version_number)?;

        let roll = self
            .manifest
            .as_ref()
            .is_none_or(|m| m.file_size() > self.max_manifest_file_size);
        let new_manifest = roll.then(|| self.new_file_number());
        self.fill_counters(&mut edits, roll, &finished.params);
        let records: Vec<Vec<u8>> = edits.iter().map(VersionEdit::encode).collect();
        if let Err(e) = self.write_records(new_manifest, &records) {
            self.bg_error = Some(e.duplicate());
            return Err(e);
        }
        // Durable: install.
        self.version_number = version_number;
        let mut old = self.old_versions.lock().unwrap_or_else(|e| e.into_inner());
        for v in &finished.superseded {
            old.push(Arc::downgrade(v));
        }
        drop(old);
        self.cfs = finished
            .cfs
            .into_iter()
            .map(|(id, s)| (id, ColumnFamilyData::from_state(s)))
            .collect();
        let p = &finished.params;
        self.max_column_family = self.max_column_family.max(p.max_column_family);
        self.min_log_number_to_keep = self.min_log_number_to_keep.max(p.min_log_number_to_keep);
        if let Some(first) = edits.first() {
            self.prev_log_number = first.prev_log_number.unwrap_or(self.prev_log_number);
        }
        if p.db_id.is_some() {
            self.db_id = p.db_id.clone();
        }
        for e in &edits {
            if let Some(s) = e.last_sequence {
                self.set_last_sequence(s);
            }
            for (_, f) in &e.new_files {
                self.mark_file_number_used(f.number);
            }
        }
        Ok(())
    }

    /// Checks edits from the caller and stamps their column family.
    fn validate(&self, edits: Vec<(u32, VersionEdit)>) -> Result<Vec<VersionEdit>> {
        let n = edits.len();
        let mut out = Vec::with_capacity(n);
        for (cf_id, mut e) in edits {
            e.column_family = cf_id;
            if e.is_column_family_manipulation() {
                if n > 1 {
                    return Err(invalid("a column family add or drop must be logged alone"));
                }
                if !e.new_files.is_empty() || !e.deleted_files.is_empty() {
                    return Err(invalid("a column family add or drop cannot change files"));
                }
                if let Some(name) = &e.column_family_add {
                    if self.cfs.contains_key(&cf_id) || self.column_family_by_name(name).is_some() {
                        return Err(invalid(format!("column family already exists: {name}")));
                    }
                } else if cf_id == 0 {
                    return Err(invalid("Can't drop default column family"));
                }
            }
            if e.column_family_add.is_none() && !self.cfs.contains_key(&cf_id) {
                return Err(invalid(format!("column family {cf_id} does not exist")));
            }
            for (_, f) in &e.new_files {
                if parse_internal_key(&f.smallest).is_none()
                    || parse_internal_key(&f.largest).is_none()
                {
                    return Err(invalid(format!(
                        "file #{}: smallest and largest must be internal keys",
                        f.number
                    )));
                }
            }
            for (_, k) in &e.compact_cursors {
                if parse_internal_key(k).is_none() {
                    return Err(invalid("compact cursor must be an internal key"));
                }
            }
            if e.full_history_ts_low.as_ref().is_some_and(Vec::is_empty) {
                return Err(invalid("full_history_ts_low must not be empty"));
            }
            e.remaining_entries = None;
            out.push(e);
        }
        Ok(out)
    }

    pub(crate) fn applier(&self) -> EditApplier<'_> {
        let cfs = self.cfs.iter().map(|(id, c)| (*id, c.to_state())).collect();
        let params = EditParams {
            max_column_family: self.max_column_family,
            min_log_number_to_keep: self.min_log_number_to_keep,
            ..EditParams::default()
        };
        EditApplier::new(&self.opts, cfs, params)
    }

    /// Creates column family `name` with the default comparator (or the one
    /// named for it in the options); returns its id.
    pub fn create_column_family(&mut self, name: &str) -> Result<u32> {
        let cmp = self.opts.comparator_for(name);
        let log_number = self.cfs.values().map(|c| c.log_number).max().unwrap_or(0);
        self.create_column_family_with(name, cmp, log_number)
    }

    /// Creates column family `name` ordered by `comparator`, whose WALs
    /// numbered below `log_number` hold nothing for it; returns its id.
    pub fn create_column_family_with(
        &mut self,
        name: &str,
        comparator: ComparatorRef,
        log_number: u64,
    ) -> Result<u32> {
        if self.column_family_by_name(name).is_some() {
            return Err(invalid(format!("column family already exists: {name}")));
        }
        let id = self
            .max_column_family
            .checked_add(1)
            .ok_or_else(|| invalid("too many column families"))?;
        let edit = VersionEdit {
            column_family_add: Some(name.to_string()),
            comparator: Some(comparator.name().to_string()),
            log_number: Some(log_number),
            ..VersionEdit::default()
        };
        let previous = self
            .opts
            .cf_comparators
            .insert(name.to_string(), comparator);
        let r = self.log_and_apply(id, edit);
        if r.is_err() {
            match previous {
                Some(p) => self.opts.cf_comparators.insert(name.to_string(), p),
                None => self.opts.cf_comparators.remove(name),
            };
        }
        r.map(|()| id)
    }

    /// [`VersionSet::create_column_family_with`] under id `id` (repair
    /// keeps the ids tables record).
    pub fn create_column_family_with_id(
        &mut self,
        name: &str,
        comparator: ComparatorRef,
        log_number: u64,
        id: u32,
    ) -> Result<()> {
        if self.column_family_by_name(name).is_some() || self.cfs.contains_key(&id) {
            return Err(invalid(format!(
                "column family already exists: {name} ({id})"
            )));
        }
        let edit = VersionEdit {
            column_family_add: Some(name.to_string()),
            comparator: Some(comparator.name().to_string()),
            log_number: Some(log_number),
            max_column_family: Some(self.max_column_family.max(id)),
            ..VersionEdit::default()
        };
        self.opts
            .cf_comparators
            .insert(name.to_string(), comparator);
        self.log_and_apply(id, edit)
    }

    /// Sets the number of levels column family `name` gets when created.
    pub fn set_num_levels_for(&mut self, name: &str, num_levels: usize) {
        self.opts.cf_num_levels.insert(name.to_string(), num_levels);
    }

    /// Drops column family `id` (not the default one).
    pub fn drop_column_family(&mut self, id: u32) -> Result<()> {
        let edit = VersionEdit {
            column_family_drop: true,
            ..VersionEdit::default()
        };
        self.log_and_apply(id, edit)
    }
}
