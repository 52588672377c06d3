//! Opening a database: lock, create or recover the version set from
//! CURRENT -> MANIFEST, replay the WALs the MANIFEST does not cover (by the
//! WAL recovery mode), flush what was replayed to level-0 tables, start a
//! fresh WAL and the flush thread.
//!
//! Invariants: a read-only open takes no lock and changes no file; replay
//! never skips past damage except in `SkipAnyCorruptedRecords` mode; the
//! recovered state is a prefix of the acknowledged writes.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use arc_swap::ArcSwap;

use super::column_family::ColumnFamilyDescriptor;
use super::consistency::check_consistency;
use super::two_phase::{self, RecoveredPrepared};
use super::{CfData, DB, DEFAULT_COLUMN_FAMILY_NAME, DbInner, DbState};
use crate::cache::TableCache;
use crate::error::{Error, Result};
use crate::format::{InternalKeyComparator, WriteBatch};
use crate::fs::{FileSystemRef, default_fs};
use crate::options::{ColumnFamilyOptions, Options, WalRecoveryMode};
use crate::version::VersionEdit;
use crate::version::version_set::{VersionSet, VersionSetOptions};
use crate::wal::{LogReader, LogWriter, ReadError};

pub(crate) fn version_set_options(
    opts: &Options,
    descs: &[ColumnFamilyDescriptor],
) -> VersionSetOptions {
    let mut v = VersionSetOptions::new(opts.cf.comparator.clone());
    // Each column family is checked against (and created with) its own
    // comparator.
    for d in descs {
        v.cf_comparators
            .insert(d.name.clone(), d.options.comparator.clone());
        v.cf_num_levels.insert(d.name.clone(), d.options.num_levels);
    }
    v.num_levels = opts.cf.num_levels;
    v.max_manifest_file_size = opts.max_manifest_file_size;
    v.wal_dir = opts.wal_dir.clone();
    v
}

fn parse_wal_number(name: &str) -> Option<u64> {
    match crate::filename::parse_file_name(name)? {
        (n, crate::filename::FileType::Wal) => Some(n),
        _ => None,
    }
}

impl DB {
    /// Opens the database at `path` with only the default column family.
    pub fn open(opts: Options, path: impl AsRef<Path>) -> Result<DB> {
        let cf = opts.cf.clone();
        Self::open_cf(opts, path, vec![ColumnFamilyDescriptor::new("default", cf)])
    }

    /// Opens with the given column families (which must include every
    /// column family the database has, as RocksDB requires).
    pub fn open_cf(
        opts: Options,
        path: impl AsRef<Path>,
        cfs: Vec<ColumnFamilyDescriptor>,
    ) -> Result<DB> {
        Self::open_impl(opts, path.as_ref(), cfs, false)
    }

    /// Opens without taking the lock and without changing any file. WAL
    /// contents are replayed into memory only.
    pub fn open_read_only(opts: Options, path: impl AsRef<Path>) -> Result<DB> {
        let cf = opts.cf.clone();
        Self::open_impl(
            opts,
            path.as_ref(),
            vec![ColumnFamilyDescriptor::new("default", cf)],
            true,
        )
    }

    /// Read-only open with the given column families; column families not
    /// listed are opened with default options.
    pub fn open_cf_read_only(
        opts: Options,
        path: impl AsRef<Path>,
        cfs: Vec<ColumnFamilyDescriptor>,
    ) -> Result<DB> {
        Self::open_impl(opts, path.as_ref(), cfs, true)
    }

    /// Names of the column families of the database at `path`.
    pub fn list_column_families(opts: &Options, path: impl AsRef<Path>) -> Result<Vec<String>> {
        let fs = opts.fs.clone().unwrap_or_else(default_fs);
        // Names only: read the MANIFEST's column family records without
        // building versions (so no comparator needs to be known).
        let fs = fs.as_ref();
        let manifest = path
            .as_ref()
            .join(crate::version::read_current_file(fs, path.as_ref())?);
        let mut reader = crate::version::ManifestReader::open(fs, &manifest)?;
        let mut names: BTreeMap<u32, String> = BTreeMap::new();
        names.insert(0, DEFAULT_COLUMN_FAMILY_NAME.to_string());
        while let Some((_, edit)) = reader.next_edit()? {
            if let Some(name) = edit.column_family_add {
                names.insert(edit.column_family, name);
            } else if edit.column_family_drop {
                names.remove(&edit.column_family);
            }
        }
        Ok(names.into_values().collect())
    }

    fn open_impl(
        mut opts: Options,
        dbname: &Path,
        mut descs: Vec<ColumnFamilyDescriptor>,
        read_only: bool,
    ) -> Result<DB> {
        opts.cf = opts.cf.sanitized_for(&opts);
        for d in &mut descs {
            d.options = d.options.sanitized_for(&opts);
        }
        // Options::memory_budget: one cache holding blocks, the memtables'
        // charge and the open table readers' charge. Not strict: unpinned
        // blocks always give way, and a block refused by a strict cache
        // would be allocated for its read all the same (while the strict
        // check costs every insert a walk over the shards: readrandom with
        // 8 threads ran 30% slower).
        let budget_cache = opts
            .memory_budget
            .map(|b| crate::cache::BlockCache::with_options(b, -1, false));
        if opts.memory_budget.is_some() {
            // Freed blocks must come back to the budget, not stay in the
            // reading threads' malloc arenas (util/malloc.rs).
            crate::util::malloc::limit_arenas(crate::util::malloc::BUDGET_ARENAS);
        }
        if let (Some(cache), Some(b)) = (&budget_cache, opts.memory_budget)
            && opts.write_buffer_manager.is_none()
        {
            let quarter = (b / 4) as usize;
            let share = match opts.db_write_buffer_size {
                0 => quarter,
                n => n.min(b as usize),
            };
            opts.write_buffer_manager = Some(crate::memtable::WriteBufferManager::with_cache(
                share.max(1),
                Arc::clone(cache) as Arc<dyn crate::memtable::MemoryCharger>,
                true,
            ));
        }
        // The memtable budget: a shared manager, or one of this database's
        // own for `db_write_buffer_size` (RocksDB's SanitizeOptions).
        if opts.write_buffer_manager.is_none() && opts.db_write_buffer_size > 0 {
            opts.write_buffer_manager = Some(crate::memtable::WriteBufferManager::new(
                opts.db_write_buffer_size,
                false,
            ));
        }
        let wbm = opts.write_buffer_manager.clone();
        // Room for one write buffer of huge-page blocks, the largest of the
        // column families that use them (none pooled if none does).
        let arena_pool = Arc::new(crate::memtable::block_pool::ArenaBlockPool::new(
            descs
                .iter()
                .filter(|d| d.options.memtable_huge_page_size > 0)
                .map(|d| d.options.write_buffer_size)
                .max()
                .unwrap_or(0),
        ));
        let fs: FileSystemRef = opts.fs.clone().unwrap_or_else(default_fs);
        let dbname = dbname.to_path_buf();
        let wal_dir: PathBuf = opts.wal_dir.clone().unwrap_or_else(|| dbname.clone());
        let table_paths = crate::filename::TablePaths::new(&dbname, &opts.db_paths);
        let mut lock = None;
        opts.validate()?;
        for d in &descs {
            d.options.validate(&d.name)?;
            check_cf_supported(&opts, &d.options)?;
        }
        let exists = fs.file_exists(&dbname.join("CURRENT"));
        if !exists && (read_only || !opts.create_if_missing) {
            // Refused before anything (directory, LOCK) is created.
            return Err(Error::InvalidArgument(format!(
                "{}: does not exist (create_if_missing is false)",
                dbname.display()
            )));
        }
        if !read_only {
            fs.create_dir_all(&dbname)?;
            if wal_dir != dbname {
                fs.create_dir_all(&wal_dir)?;
            }
            for dir in table_paths.distinct_dirs() {
                fs.create_dir_all(dir)?;
            }
            lock = Some(fs.lock_file(&dbname.join("LOCK")).map_err(|e| match e {
                Error::Busy(m) => Error::Busy(format!(
                    "While lock file: {}/LOCK: Resource temporarily unavailable ({m})",
                    dbname.display()
                )),
                other => other,
            })?);
        }
        // Versions tell the database when their last holder lets them go.
        let released_versions = Arc::new(super::file_lifecycle::ReleasedVersions::default());
        let mut vs_options = version_set_options(&opts, &descs);
        vs_options.release_hook = Some(released_versions.hook());
        let mut versions = if exists {
            if opts.error_if_exists {
                return Err(Error::InvalidArgument(format!(
                    "{}: exists (error_if_exists is true)",
                    dbname.display()
                )));
            }
            VersionSet::recover_with(Arc::clone(&fs), &dbname, vs_options.clone(), read_only)?
        } else {
            // (A missing database without create_if_missing was refused
            // above.) Tables without CURRENT are a database that lost its
            // MANIFEST (or a repair or restore a crash interrupted): a new
            // database here would delete them as obsolete. Stricter than
            // RocksDB, which creates it. (A MANIFEST alone is a creation
            // that a crash cut short: starting again is right.)
            let leftovers: Vec<String> = fs
                .children(&dbname)?
                .into_iter()
                .filter(|n| {
                    matches!(
                        crate::version::parse_file_name(n),
                        Some((_, crate::version::FileType::Table))
                    )
                })
                .collect();
            if let Some(first) = leftovers.first() {
                return Err(Error::InvalidArgument(format!(
                    "{}: no CURRENT file, but {} table files ({first}, ...) are there: a \
                     database whose MANIFEST is lost; run repair_db (strata repair), or remove \
                     them to start a new database",
                    dbname.display(),
                    leftovers.len()
                )));
            }
            let vs = VersionSet::create_new_with(Arc::clone(&fs), &dbname, vs_options.clone())?;
            if !fs.file_exists(&dbname.join("IDENTITY")) {
                let id = make_db_id();
                fs.write_file(&dbname.join("IDENTITY"), id.as_bytes(), true)?;
                fs.sync_dir(&dbname)?;
            }
            vs
        };
        // Column families: every existing one must be listed (read-only
        // opens fill in defaults), missing ones are created on request.
        let existing = versions.column_families();
        let mut by_name: HashMap<String, ColumnFamilyOptions> = descs
            .iter()
            .map(|d| (d.name.clone(), d.options.clone()))
            .collect();
        for (_, name) in &existing {
            if !by_name.contains_key(name) {
                if read_only {
                    by_name.insert(name.clone(), opts.cf.clone());
                } else {
                    return Err(Error::InvalidArgument(format!(
                        "Column families not opened: {name}"
                    )));
                }
            }
        }
        for d in &descs {
            if !existing.iter().any(|(_, n)| n == &d.name) {
                if read_only || !opts.create_missing_column_families {
                    return Err(Error::InvalidArgument(format!(
                        "Column family not found: {}",
                        d.name
                    )));
                }
                versions.create_column_family(&d.name)?;
            }
        }
        super::consistency::check_table_paths(&table_paths, &versions)?;
        if opts.paranoid_checks {
            check_consistency(fs.as_ref(), &table_paths, &versions)?;
        }
        // Background pools and the default block cache: the shared Env's,
        // or this DB's own (an 8 MiB cache, RocksDB's default).
        let max_flushes = (opts.max_background_jobs / 4).max(1);
        let max_compactions = opts.max_background_jobs.saturating_sub(max_flushes).max(1);
        let env = match &opts.env {
            Some(e) => Arc::clone(e),
            None => crate::env::Env::new(max_flushes, max_compactions, 8 << 20)?,
        };
        let default_cache: Arc<dyn crate::table::options::BlockCacheApi> = match &budget_cache {
            Some(c) => Arc::clone(c) as Arc<dyn crate::table::options::BlockCacheApi>,
            None => Arc::clone(&env.block_cache),
        };
        let mut cfs = BTreeMap::new();
        for (id, name) in versions.column_families() {
            let mut options = by_name
                .get(&name)
                .cloned()
                .unwrap_or_else(|| opts.cf.clone());
            if options.block_cache.is_none() {
                options.block_cache = Some(Arc::clone(&default_cache));
            }
            let icmp = InternalKeyComparator::new(options.comparator.clone());
            cfs.insert(
                id,
                CfData {
                    id,
                    name,
                    mem: super::new_memtable(&icmp, &options, wbm.as_ref(), Some(&arena_pool)),
                    icmp,
                    options,
                    mem_wal: 0,
                    imms: Vec::new(),
                    dropped: false,
                    flush_running: false,
                },
            );
        }
        let table_cache = Arc::new(
            TableCache::new(Arc::clone(&fs), table_paths.clone(), opts.max_open_files)
                .charging_readers_to(budget_cache.clone()),
        );
        let write_signals = Arc::new(super::write_signals::WriteSignals::default());
        let inner = Arc::new(DbInner {
            arena_pool,
            dbname: dbname.clone(),
            wal_dir: wal_dir.clone(),
            table_paths: table_paths.clone(),
            fs: Arc::clone(&fs),
            read_only,
            state: Mutex::new(DbState {
                versions,
                cfs,
                wal_number: 0,
                snapshots: BTreeMap::new(),
                bg_error: super::write_signals::BgError::new(Arc::clone(&write_signals)),
                write_signals: Arc::clone(&write_signals),
                files: Default::default(),
                bg_work: Default::default(),
                stats: BTreeMap::new(),
                stall_stats: Default::default(),
                write_stall: super::flow_control::StallCondition::Normal,
                write_controller: super::flow_control::WriteController::new(
                    opts.delayed_write_rate,
                ),
                mems_cache: None,
                oldest_snapshot_released: 0,
                bottommost_threshold: crate::format::SequenceNumber::MAX,
                rewritten_bottommost: Default::default(),
            }),
            bg_cv: Condvar::new(),
            last_sequence: AtomicU64::new(0),
            wal_purge_last_run: AtomicU64::new(0),
            db_id: fs
                .read_file(&dbname.join("IDENTITY"))
                .map(|b| String::from_utf8_lossy(&b).trim().to_string())
                .unwrap_or_default(),
            db_session_id: make_db_session_id(),
            db_host_id: crate::util::host_name::resolve_db_host_id(&opts.db_host_id).to_string(),
            shutting_down: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            manual_compaction_paused: std::sync::atomic::AtomicUsize::new(0),
            has_unpersisted_data: AtomicBool::new(false),
            user_bytes_written: AtomicU64::new(0),
            table_cache,
            write_thread: Default::default(),
            write_path: Default::default(),
            write_mode: if opts.unordered_write {
                super::write::WriteMode::Unordered
            } else if opts.enable_pipelined_write {
                super::write::WriteMode::Pipelined
            } else {
                super::write::WriteMode::Ordered
            },
            write_mutex: Mutex::new(Default::default()),
            write_signals,
            wal: Mutex::new(Default::default()),
            lock: Mutex::new(lock),
            info_log: if read_only {
                super::info_log::InfoLog::disabled(Arc::clone(&fs), &dbname)
            } else {
                super::info_log::InfoLog::open(
                    Arc::clone(&fs),
                    &dbname,
                    opts.max_log_file_size,
                    opts.log_file_time_to_roll,
                    opts.keep_log_file_num,
                )
            },
            env,
            bg_jobs: Default::default(),
            max_flushes,
            max_compactions,
            started: std::time::Instant::now(),
            self_ref: std::sync::OnceLock::new(),
            released_versions,
            super_versions: ArcSwap::from_pointee(Default::default()),
            two_phase: Default::default(),
            commit_table: Default::default(),
            compaction_timer: Default::default(),
            row_cache: opts.row_cache.clone().map(super::row_cache::RowCache::new),
            options: opts,
        });
        let _ = inner.self_ref.set(Arc::downgrade(&inner));
        inner.released_versions.bind(Arc::downgrade(&inner));
        if !read_only {
            inner.log_options();
            // Options the newest OPTIONS file holds that Strata does not
            // know (a newer RocksDB wrote them): reported once, ignored.
            if let Ok(Some(f)) = super::options_parser::load_latest_in(&*inner.fs, &inner.dbname) {
                let unknown = f.unknown_options();
                if !unknown.is_empty() {
                    inner.info_log.log(&format!(
                        "{}: options Strata does not know, ignored: {}",
                        f.name,
                        unknown.join(", ")
                    ));
                }
            }
        }
        inner.recover_wals()?;
        if !read_only {
            let mut st = inner.lock_state();
            inner.write_options_file(&mut st)?;
            inner.maybe_schedule_work(&mut st);
            drop(st);
            inner.compaction_timer.start(&inner);
        }
        inner.load_table_handlers();
        Ok(DB { inner })
    }
}

/// Tables opened at DB open when `max_open_files` is limited (RocksDB's
/// `kInitialLoadLimit`).
const INITIAL_LOAD_LIMIT: usize = 16;

impl DbInner {
    /// Opens table readers before any read needs them (RocksDB's
    /// `VersionBuilder::LoadTableHandlers` at recovery): every table when
    /// `max_open_files` keeps every table open (-1), otherwise up to 16
    /// and a quarter of the table cache, newest levels first. Reads then
    /// do not pay for opening (a PlainTable rebuilds its index from the
    /// whole file). A table that fails to open is left for the read that
    /// needs it to report, as it would be without this.
    fn load_table_handlers(&self) {
        let max = self.options.max_open_files;
        let limit = if max >= i32::MAX as usize {
            usize::MAX
        } else {
            INITIAL_LOAD_LIMIT.min(max / 4)
        };
        let svs = self.super_versions.load();
        let mut opened = 0;
        for sv in svs.values() {
            for level in 0..sv.version.num_levels() {
                for (i, f) in sv.version.files(level).iter().enumerate() {
                    if opened >= limit || self.shutting_down.load(Ordering::Acquire) {
                        return;
                    }
                    let _ = if level == 0 {
                        self.sv_l0_table(sv, i, false).map(|_| ())
                    } else {
                        self.sv_table(sv, f).map(|_| ())
                    };
                    opened += 1;
                }
            }
        }
    }
}

/// A fresh session id in RocksDB's form (`DBImpl::GenerateDbSessionId`):
/// 20 characters of base 36 (`0-9A-Z`) from 104 random bits.
fn make_db_session_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    let a = h.finish();
    h.write_u64(a);
    let b = h.finish();
    let mut x = (u128::from(a) << 64 | u128::from(b)) & ((1u128 << 104) - 1);
    const DIGITS: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut out = [b'0'; 20];
    for c in out.iter_mut().rev() {
        *c = DIGITS[(x % 36) as usize];
        x /= 36;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn make_db_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut x = (now as u64) ^ (u64::from(std::process::id()) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (a, b) = (next(), next());
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// Enters the WritePrepared sections recovery found undecided (their data
/// is in the memtables at the sections' sequence numbers) as prepared.
fn enter_undecided(
    table: &super::commit_table::CommitTable,
    prepared: &BTreeMap<String, RecoveredPrepared>,
) {
    for p in prepared.values().filter(|p| p.persisted) {
        let count = u64::from(p.batch.count());
        if count > 0 {
            let first = p.batch.sequence();
            table.add_prepared(first, first + count - 1);
        }
    }
}

impl DbInner {
    /// During WAL replay: writes each column family's memtable that filled
    /// its write buffer to a level-0 table (kept in `tables` for the final
    /// edit) and gives it a fresh one, so replay holds at most a write
    /// buffer per column family, as RocksDB's recovery does. Entries of
    /// WritePrepared sections not yet decided in the WALs read so far
    /// (`prepared`) are kept as uncommitted: a rollback later in the WALs
    /// must still find what they hide.
    fn flush_full_recovery_memtables(
        &self,
        st: &mut super::DbState,
        mems: &mut super::MemTables,
        prepared: &BTreeMap<String, RecoveredPrepared>,
        tables: &mut HashMap<u32, Vec<crate::version::FileMetaData>>,
    ) -> Result<()> {
        let full: Vec<u32> = st
            .cfs
            .iter()
            .filter(|(_, cf)| super::memtable_full(&cf.mem, cf.options.write_buffer_size))
            .map(|(&id, _)| id)
            .collect();
        if full.is_empty() {
            return Ok(());
        }
        let undecided = Arc::new(super::commit_table::CommitTable::default());
        enter_undecided(&undecided, prepared);
        let view = super::commit_table::JobView::quiescent(&undecided);
        for id in full {
            let Some(cf) = st.cfs.get_mut(&id) else {
                continue;
            };
            let number = st.versions.new_file_number();
            let old = std::mem::replace(
                &mut cf.mem,
                super::new_memtable(
                    &cf.icmp,
                    &cf.options,
                    self.options.write_buffer_manager.as_ref(),
                    Some(&self.arena_pool),
                ),
            );
            mems.insert(id, Arc::clone(&cf.mem));
            let (name, opts) = (cf.name.clone(), cf.options.clone());
            if let Some(meta) =
                self.write_level0_table(&[old], id, &name, &opts, number, &view, None)?
            {
                tables.entry(id).or_default().push(meta);
            }
        }
        st.memtables_changed();
        Ok(())
    }

    /// Replays the WALs newer than what the MANIFEST covers, then (read-write)
    /// flushes the result and starts a new WAL.
    fn recover_wals(self: &Arc<Self>) -> Result<()> {
        let mut st = self.lock_state();
        let min_log = st
            .cfs
            .keys()
            .map(|&id| st.versions.column_family(id).map_or(0, |c| c.log_number()))
            .min()
            .unwrap_or(0);
        // With two-phase commit, older WALs may hold prepared sections
        // (`two_phase`): read from the MANIFEST's min_log_number_to_keep.
        let first_wal = if self.options.allow_2pc {
            min_log.min(st.versions.min_log_number_to_keep())
        } else {
            min_log
        };
        let mut wals: Vec<u64> = self
            .fs
            .children(&self.wal_dir)?
            .iter()
            .filter_map(|n| parse_wal_number(n))
            .filter(|&n| n >= first_wal)
            .collect();
        wals.sort_unstable();
        let mode = self.options.wal_recovery_mode;
        let mut max_seq = st.versions.last_sequence();
        let mut mems: super::MemTables = st
            .cfs
            .iter()
            .map(|(id, c)| (*id, Arc::clone(&c.mem)))
            .collect();
        // Tables written while replaying (a memtable filled up, as
        // RocksDB's WriteLevel0TableForRecovery): recorded with the final
        // edit, so a crash before it leaves only obsolete files.
        let mut replayed_tables: HashMap<u32, Vec<crate::version::FileMetaData>> = HashMap::new();
        let log_numbers: HashMap<u32, u64> = st
            .cfs
            .keys()
            .map(|&id| {
                (
                    id,
                    st.versions.column_family(id).map_or(0, |c| c.log_number()),
                )
            })
            .collect();
        let mut stop = false;
        let mut prepared: BTreeMap<String, RecoveredPrepared> = BTreeMap::new();
        // WAL number -> its length, for WALs read to a clean end.
        let mut complete: HashMap<u64, u64> = HashMap::new();
        for &w in &wals {
            if stop {
                break;
            }
            let path = self.wal_dir.join(crate::filename::log_file_name(w));
            let name = path.to_string_lossy().into_owned();
            let mut reader = LogReader::new(self.fs.new_sequential_file(&path)?, w);
            let skip = |cf: u32| log_numbers.get(&cf).is_some_and(|&l| w < l);
            let mut first = true;
            loop {
                let rec = match reader.read_record() {
                    Ok(Some(r)) => r,
                    Ok(None) => {
                        complete.insert(w, reader.end_offset());
                        break;
                    }
                    Err(ReadError::Other(e)) => return Err(e),
                    Err(e @ ReadError::TruncatedTail { .. }) => match mode {
                        WalRecoveryMode::AbsoluteConsistency => return Err(e.into_error(&name)),
                        WalRecoveryMode::SkipAnyCorruptedRecords => break,
                        _ => {
                            stop = true;
                            break;
                        }
                    },
                    Err(e @ ReadError::Corruption { .. }) => match mode {
                        WalRecoveryMode::PointInTime => {
                            stop = true;
                            break;
                        }
                        WalRecoveryMode::SkipAnyCorruptedRecords => continue,
                        _ => return Err(e.into_error(&name)),
                    },
                };
                let offset = reader.last_record_offset();
                let batch = match WriteBatch::from_bytes(rec).and_then(|b| b.validate().map(|()| b))
                {
                    Ok(b) => b,
                    Err(e) => match mode {
                        WalRecoveryMode::PointInTime => {
                            stop = true;
                            break;
                        }
                        WalRecoveryMode::SkipAnyCorruptedRecords => continue,
                        _ => return Err(e.relocate(&name, offset)),
                    },
                };
                if std::mem::take(&mut first)
                    && let Some((pred, size)) = super::wal_set::parse_predecessor(&batch)
                    && pred >= min_log
                    && complete.get(&pred).is_none_or(|&len| len < size)
                {
                    // The WAL before this one lost bytes it had when this
                    // one started (a power loss kept this WAL's writes but
                    // not all of the older one's): replaying this WAL
                    // would leave a hole.
                    match mode {
                        WalRecoveryMode::PointInTime => {
                            stop = true;
                            break;
                        }
                        WalRecoveryMode::SkipAnyCorruptedRecords => {}
                        _ => {
                            return Err(Error::corruption(
                                &name,
                                offset,
                                format!(
                                    "WAL #{pred} is shorter than the {size} bytes it had when \
                                     WAL #{w} started"
                                ),
                            ));
                        }
                    }
                }
                let end = match two_phase::replay_record(
                    &batch,
                    w,
                    &mems,
                    &skip,
                    self.options.allow_2pc,
                    &mut prepared,
                ) {
                    Ok(end) => end,
                    Err(e @ Error::Corruption { .. }) => match mode {
                        WalRecoveryMode::PointInTime => {
                            stop = true;
                            break;
                        }
                        WalRecoveryMode::SkipAnyCorruptedRecords => continue,
                        _ => return Err(e.relocate(&name, offset)),
                    },
                    Err(e) => return Err(e),
                };
                max_seq = max_seq.max(end.saturating_sub(1));
                if !self.read_only {
                    self.flush_full_recovery_memtables(
                        &mut st,
                        &mut mems,
                        &prepared,
                        &mut replayed_tables,
                    )?;
                }
            }
        }
        // WritePrepared sections still undecided stay invisible (and are
        // kept as they are by the flush below).
        enter_undecided(&self.commit_table, &prepared);
        self.two_phase.set_recovered(prepared);
        st.versions.set_last_sequence(max_seq);
        self.last_sequence
            .store(max_seq, std::sync::atomic::Ordering::Release);
        self.write_path
            .last_allocated
            .store(max_seq, std::sync::atomic::Ordering::Release);
        if self.read_only {
            for cf in st.cfs.values_mut() {
                cf.mem_wal = wals.last().copied().unwrap_or(0);
            }
            // The replayed WALs stay as they are: they are the live ones
            // (`sorted_wal_files`, the C API's error_if_wal_file_exists).
            st.files.set_alive_wals(wals.to_vec());
            self.install_super_versions(&mut st);
            return Ok(());
        }
        // Flush what was replayed, then start a fresh WAL. Nothing commits
        // meanwhile: the commit table stands still.
        let view = super::commit_table::JobView::quiescent(&self.commit_table);
        let new_wal = st.versions.new_file_number();
        let ids: Vec<u32> = st.cfs.keys().copied().collect();
        for id in ids {
            let Some(cf) = st.cfs.get(&id) else { continue };
            let mut edit = VersionEdit {
                log_number: Some(new_wal),
                ..Default::default()
            };
            for meta in replayed_tables.remove(&id).unwrap_or_default() {
                edit.new_files.push((0, meta));
            }
            if !cf.mem.is_empty() {
                let number = st.versions.new_file_number();
                let mem = Arc::clone(&cf.mem);
                let (name, opts) = (cf.name.clone(), cf.options.clone());
                if let Some(meta) =
                    self.write_level0_table(&[mem], id, &name, &opts, number, &view, None)?
                {
                    edit.new_files.push((0, meta));
                }
            }
            crate::crash_point!("open::after_wal_replay");
            st.versions.log_and_apply(id, edit)?;
            if let Some(cf) = st.cfs.get_mut(&id) {
                cf.mem = super::new_memtable(
                    &cf.icmp,
                    &cf.options,
                    self.options.write_buffer_manager.as_ref(),
                    Some(&self.arena_pool),
                );
                cf.mem_wal = new_wal;
            }
            st.memtables_changed();
        }
        let path = self.wal_dir.join(crate::filename::log_file_name(new_wal));
        let file = self.new_wal_file(&path)?;
        st.wal_number = new_wal;
        st.files.set_alive_wals(vec![new_wal]);
        self.fs.sync_dir(&self.wal_dir)?;
        {
            let mut wal = crate::util::sync::lock(&self.wal);
            wal.current = Some(LogWriter::new(file, new_wal, false));
            wal.current_written = false;
            wal.dir_synced = true;
        }
        // As RocksDB, the archive directory exists once archiving is on.
        if self.archives_wals() {
            self.fs.create_dir_all(&self.wal_archive_dir())?;
        }
        // Every older WAL is now covered by the MANIFEST (or was cut off by
        // point-in-time recovery): retire them all (archived or deleted),
        // except those holding prepared sections still outstanding.
        let keep_from = self.min_wal_for_2pc(&st).unwrap_or(new_wal).min(new_wal);
        let mut kept = Vec::new();
        for name in self.fs.children(&self.wal_dir)? {
            match parse_wal_number(&name).filter(|&n| n < new_wal) {
                Some(n) if n < keep_from => self.retire_wal(n),
                Some(n) => kept.push(n),
                None => {}
            }
        }
        kept.sort_unstable();
        kept.push(new_wal);
        st.files.set_alive_wals(kept);
        self.purge_archived_wals(true);
        self.install_super_versions(&mut st);
        self.delete_obsolete_files(&mut st);
        Ok(())
    }
}

/// What RocksDB refuses of a column family's options given the DB's: a
/// memtable that cannot take concurrent inserts when
/// `allow_concurrent_memtable_write` is set, in-place updates with
/// concurrent inserts, and several table paths under FIFO compaction; so
/// does Strata.
pub(super) fn check_cf_supported(
    db: &crate::options::Options,
    cf: &crate::options::ColumnFamilyOptions,
) -> Result<()> {
    if db.db_paths.len() > 1
        && !matches!(
            cf.compaction_style,
            crate::options::CompactionStyle::Level | crate::options::CompactionStyle::Universal
        )
    {
        // RocksDB's CheckCFPathsSupported text.
        return Err(Error::NotSupported(
            "More than one DB paths are only supported in universal and level compaction styles. "
                .into(),
        ));
    }
    if db.allow_concurrent_memtable_write && !cf.memtable_factory.supports_concurrent_insert() {
        return Err(Error::InvalidArgument(format!(
            "Memtable doesn't concurrent writes (allow_concurrent_memtable_write): {}",
            cf.memtable_factory.name()
        )));
    }
    if cf.inplace_update_support {
        // RocksDB's ValidateOptions text.
        if db.allow_concurrent_memtable_write {
            return Err(Error::InvalidArgument(
                "In-place memtable updates (inplace_update_support) is not compatible with \
                 concurrent writes (allow_concurrent_memtable_write)"
                    .into(),
            ));
        }
        if cf.memtable_factory != crate::options::MemTableFactory::SkipList {
            return Err(Error::NotSupported(format!(
                "inplace_update_support with the {} memtable (Strata rewrites entries of the \
                 skiplist memtable only)",
                cf.memtable_factory.name()
            )));
        }
    }
    Ok(())
}
