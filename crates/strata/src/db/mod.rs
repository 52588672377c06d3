//! Layer 6: the database. `DB` ties the layers together: the write path
//! (group commit into the WAL and memtables), background flushes to
//! level-0 tables recorded in the MANIFEST, recovery at open, and reads
//! against lock-free SuperVersions.
//!
//! Locking: `state` (one mutex) guards the version set, the column
//! families' memtable lists and the snapshot list; `wal` guards the WAL
//! writers. Only the write-group leader appends to the WAL (without
//! `state`); writers insert into memtables without locks; reads take no
//! lock (they load the column family's SuperVersion).
//!
//! Invariants: `last_sequence` is published only after every entry up to it
//! is in a memtable; a memtable leaves the immutable list only after its
//! table is recorded in the MANIFEST; a WAL is deleted only when every
//! column family's unflushed data lives in newer WALs.

mod api;
mod background;
mod close;
mod column_family;
pub(crate) mod commit_table;
mod compaction_timer;
mod consistency;
mod destroy;
mod file_lifecycle;
mod files;
mod flow_control;
mod flush;
mod get_context;
mod import;
mod info_log;
mod ingest;
mod offline;
mod open;
pub(crate) mod options_file;
pub mod options_parser;
mod properties;
mod publisher;
mod read;
mod refit_level;
mod repair;
mod row_cache;
mod scheduler;
mod secondary;
mod stats;
mod super_version;
mod transaction_log;
pub(crate) mod two_phase;
mod wal_archive;
mod wal_set;
mod write;
mod write_signals;
mod write_thread;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use arc_swap::ArcSwap;

use crate::cache::TableCache;
use crate::error::{Error, Result};
use crate::format::{InternalKeyComparator, SequenceNumber};
use crate::fs::{FileLock, FileSystemRef};
use crate::memtable::MemTable;
use crate::options::{ColumnFamilyOptions, Options};
use crate::version::VersionSet;

use crate::env::Env;
pub use column_family::ColumnFamilyDescriptor;
pub use destroy::destroy_db;
pub use files::{
    BottommostLevelCompaction, CompactRangeOptions, FileChecksumInfo, KeyRange, LiveFileMetaData,
    WalFile, WalFileType,
};
pub use import::{ExportImportFilesMetaData, ImportColumnFamilyOptions};
pub use ingest::IngestExternalFileArg;
pub use offline::{
    num_levels_in_use, reduce_number_of_levels, unsafe_remove_sst_file,
    update_manifest_for_files_state,
};
pub use read::{DbIterator, KeyVersion, Snapshot};
pub use repair::{repair_db, repair_db_cf};
pub use secondary::SecondaryDB;
pub use stats::{LevelStats, StallStats};
pub use super_version::SuperVersion;
pub use transaction_log::{BatchResult, TransactionLogIterator};
pub use wal_archive::ARCHIVE_DIR_NAME as WAL_ARCHIVE_DIR_NAME;

/// Identifies a column family in calls that take one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ColumnFamilyHandle {
    pub id: u32,
    pub name: String,
}

/// The name of the default column family.
pub const DEFAULT_COLUMN_FAMILY_NAME: &str = "default";

/// A column family's in-memory state.
pub(crate) struct CfData {
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) options: ColumnFamilyOptions,
    pub(crate) icmp: InternalKeyComparator,
    pub(crate) mem: Arc<MemTable>,
    /// WAL that was current when `mem` was created.
    pub(crate) mem_wal: u64,
    /// Immutable memtables, oldest first, with their WAL numbers.
    pub(crate) imms: Vec<(Arc<MemTable>, u64)>,
    pub(crate) dropped: bool,
    /// A background flush of this column family is running.
    pub(crate) flush_running: bool,
}

/// Whether active memtable `mem` has used a `write_buffer_size` budget
/// and holds data (an empty one is never full, whatever the budget:
/// switching it would make no room). The write path's lock-free check and
/// `CfData::mem_full` both ask this.
pub(crate) fn memtable_full(mem: &MemTable, write_buffer_size: usize) -> bool {
    !mem.is_empty() && mem.should_flush(write_buffer_size)
}

/// A fresh memtable for a column family with `options`, its arena sized
/// as RocksDB sizes it for the write buffer.
/// Its memory is charged to `wbm`, the database's memtable budget; its
/// arena blocks are then at most an eighth of that budget too, so that a
/// few column families' first blocks never use it up by themselves.
/// Huge-page arena blocks come from and go back to `pool`.
pub(crate) fn new_memtable(
    icmp: &InternalKeyComparator,
    options: &ColumnFamilyOptions,
    wbm: Option<&Arc<crate::memtable::WriteBufferManager>>,
    pool: Option<&Arc<crate::memtable::block_pool::ArenaBlockPool>>,
) -> Arc<MemTable> {
    let huge = options.memtable_huge_page_size > 0;
    let mut block = crate::memtable::arena_block_size_for(options.write_buffer_size, huge);
    if let Some(w) = wbm.filter(|w| w.enabled()) {
        block = block.min(crate::memtable::arena_block_size_for(w.buffer_size(), huge));
    }
    Arc::new(
        MemTable::with_factory_in(
            icmp.clone(),
            block,
            options.memtable_factory,
            options.prefix_extractor.clone(),
            pool.cloned(),
        )
        .with_bloom(
            options.memtable_bloom_bytes(),
            options.prefix_extractor.clone(),
            options.memtable_whole_key_filtering,
        )
        .charged_to(wbm.cloned())
        .with_inplace_updates(options.inplace_update_support)
        .expect_key_len(match &options.table_factory {
            crate::options::TableFactory::Plain(p) if p.user_key_len != 0 => {
                Some(p.user_key_len as usize)
            }
            _ => None,
        }),
    )
}

impl CfData {
    /// Whether the mutable memtable holds data and has used its budget.
    /// An empty memtable is never full, whatever the budget: switching it
    /// would make no room.
    pub(crate) fn mem_full(&self) -> bool {
        memtable_full(&self.mem, self.options.write_buffer_size)
    }

    /// The smallest WAL number that may still hold unflushed data of this
    /// column family.
    pub(crate) fn min_wal_needed(&self, current_wal: u64) -> u64 {
        if let Some((_, w)) = self.imms.first() {
            *w
        } else if !self.mem.is_empty() {
            self.mem_wal
        } else {
            current_wal
        }
    }
}

pub(crate) struct DbState {
    pub(crate) versions: VersionSet,
    pub(crate) cfs: BTreeMap<u32, CfData>,
    /// Number of the current WAL.
    pub(crate) wal_number: u64,
    /// Live snapshots: sequence -> count.
    pub(crate) snapshots: BTreeMap<SequenceNumber, usize>,
    /// A failed write or sync: further writes are refused.
    pub(crate) bg_error: write_signals::BgError,
    /// Which tables and WALs are still needed.
    pub(crate) files: file_lifecycle::FileLifecycle,
    /// Flushes and compactions queued or running, and what they hold.
    pub(crate) bg_work: scheduler::BackgroundWork,
    pub(crate) stats: BTreeMap<u32, stats::CfStats>,
    pub(crate) stall_stats: stats::StallStats,
    /// The worst write-stall condition over the column families.
    pub(crate) write_stall: flow_control::StallCondition,
    pub(crate) write_controller: flow_control::WriteController,
    /// Every column family's active memtable by id, as the write path
    /// inserts into them; `None` after a memtable switch or a column
    /// family change (rebuilt by [`DbState::memtables`]).
    mems_cache: Option<Arc<MemTables>>,
    /// Shared with the write path (`DbInner::write_signals`).
    pub(crate) write_signals: Arc<write_signals::WriteSignals>,
    /// The oldest snapshot when one was last released (the last sequence
    /// number if none was left), 0 before: bottommost files wholly older
    /// are rewritten (RocksDB's `oldest_snapshot_seqnum_`; monotonic).
    pub(crate) oldest_snapshot_released: SequenceNumber,
    /// The smallest non-zero largest sequence number of any bottommost
    /// file: a release that moves the oldest snapshot to it schedules
    /// compactions (RocksDB's `bottommost_files_mark_threshold_`).
    pub(crate) bottommost_threshold: SequenceNumber,
    /// Files written by bottommost-file rewrites (not rewritten again).
    pub(crate) rewritten_bottommost: std::collections::HashSet<u64>,
}

impl DbState {
    /// Registers a snapshot at `seq` (counted: several may share it).
    pub(crate) fn add_snapshot(&mut self, seq: SequenceNumber) {
        *self.snapshots.entry(seq).or_insert(0) += 1;
    }

    /// Releases one snapshot registered at `seq`; `last_sequence` is the
    /// last visible sequence number. Returns whether the oldest snapshot
    /// reached a bottommost file's newest entry, so compactions should
    /// be scheduled (RocksDB's `ReleaseSnapshot`).
    pub(crate) fn release_snapshot(
        &mut self,
        seq: SequenceNumber,
        last_sequence: SequenceNumber,
    ) -> bool {
        if let Some(n) = self.snapshots.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                self.snapshots.remove(&seq);
            }
        }
        let oldest = self
            .snapshots
            .keys()
            .next()
            .copied()
            .unwrap_or(last_sequence);
        if oldest > self.oldest_snapshot_released {
            self.oldest_snapshot_released = oldest;
        }
        self.oldest_snapshot_released >= self.bottommost_threshold
    }

    /// Forgets the memtable map after an active memtable was replaced or a
    /// column family created or dropped, and tells the write path.
    /// REQUIRES: `write_mutex` is held (or the DB is still opening).
    pub(crate) fn memtables_changed(&mut self) {
        self.mems_cache = None;
        self.write_signals.memtables_changed();
    }

    /// The active memtables by column family id (cached between switches).
    pub(crate) fn memtables(&mut self) -> Arc<MemTables> {
        let cfs = &self.cfs;
        let m = self.mems_cache.get_or_insert_with(|| {
            Arc::new(
                cfs.iter()
                    .map(|(id, c)| (*id, Arc::clone(&c.mem)))
                    .collect(),
            )
        });
        debug_assert!(m.len() == self.cfs.len());
        Arc::clone(m)
    }
}

/// The mutable memtable of every column family, by column family id.
pub(crate) type MemTables = crate::util::id_map::IdMap<Arc<MemTable>>;

pub(crate) struct DbInner {
    pub(crate) dbname: PathBuf,
    pub(crate) wal_dir: PathBuf,
    /// The directories of table files (`db_paths`, or `dbname` alone).
    pub(crate) table_paths: crate::filename::TablePaths,
    pub(crate) fs: FileSystemRef,
    pub(crate) options: Options,
    pub(crate) read_only: bool,
    pub(crate) state: Mutex<DbState>,
    /// Signalled when a flush finishes or is requested.
    pub(crate) bg_cv: Condvar,
    /// Sequence number of the last write visible to readers.
    pub(crate) last_sequence: AtomicU64,
    pub(crate) shutting_down: AtomicBool,
    /// Set by `close` (after `cancel_all_background_work`, which sets
    /// `shutting_down` alone).
    pub(crate) closed: AtomicBool,
    /// `disable_manual_compaction` calls not yet undone: manual
    /// compactions answer `Incomplete` while above 0.
    pub(crate) manual_compaction_paused: std::sync::atomic::AtomicUsize,
    /// Set once a write skipped the WAL: its data lives only in memtables
    /// until flushed, so close flushes (as RocksDB does).
    pub(crate) has_unpersisted_data: AtomicBool,
    /// Bytes of write batches users wrote (for write amplification).
    pub(crate) user_bytes_written: AtomicU64,
    pub(crate) table_cache: Arc<TableCache>,
    /// Huge-page memtable arena blocks between memtables.
    pub(crate) arena_pool: Arc<crate::memtable::block_pool::ArenaBlockPool>,
    /// The writer queue (group commit).
    pub(crate) write_thread: write_thread::WriteThread,
    /// Sequence allocation and publication of the write path.
    pub(crate) write_path: write::WritePath,
    pub(crate) write_mode: write::WriteMode,
    /// The WAL stage: held by a group's leader while it makes room,
    /// allocates sequence numbers and writes the WAL, and by manual
    /// flushes and column-family changes (which then wait for inserts in
    /// flight, `wait_for_pending_writes`). It guards what the WAL stage
    /// remembers of the column families between groups.
    pub(crate) write_mutex: Mutex<write::WriteStage>,
    /// Facts about the state the WAL stage reads without the state lock.
    pub(crate) write_signals: Arc<write_signals::WriteSignals>,
    /// The current WAL and closed WALs not yet synced. Lock order: `state`,
    /// then `wal`; the WAL stage locks it without `state`.
    pub(crate) wal: Mutex<wal_set::WalSet>,
    pub(crate) lock: Mutex<Option<Box<dyn FileLock>>>,
    /// Thread pools (and the default block cache).
    pub(crate) env: Arc<Env>,
    /// Background job closures still running (close waits for them).
    pub(crate) bg_jobs: Arc<scheduler::JobsInFlight>,
    /// Background flushes and compactions this DB runs at once.
    pub(crate) max_flushes: usize,
    pub(crate) max_compactions: usize,
    pub(crate) info_log: info_log::InfoLog,
    pub(crate) started: std::time::Instant,
    /// The database's IDENTITY (empty if it has none) and this open's
    /// session id (RocksDB's `db_session_id`: 20 base-36 characters), both
    /// recorded in every table written (backups name shared tables by
    /// them).
    pub(crate) db_id: String,
    pub(crate) db_session_id: String,
    /// `Options::db_host_id` resolved (the host name by default).
    pub(crate) db_host_id: String,
    /// When archived WALs were last purged (Unix seconds; `wal_archive`).
    pub(crate) wal_purge_last_run: AtomicU64,
    /// This DB, for scheduling background jobs from `&self` methods.
    pub(crate) self_ref: std::sync::OnceLock<std::sync::Weak<DbInner>>,
    /// The current SuperVersion of every column family, swapped as a whole
    /// so reads never lock.
    pub(crate) super_versions: ArcSwap<crate::util::id_map::IdMap<Arc<SuperVersion>>>,
    /// Prepared sections of two-phase commits (`allow_2pc`).
    pub(crate) two_phase: two_phase::TwoPhase,
    /// Prepared and recently committed ranges of WritePrepared
    /// transactions (empty otherwise).
    pub(crate) commit_table: Arc<commit_table::CommitTable>,
    /// Schedules compactions that come due by age alone.
    pub(crate) compaction_timer: compaction_timer::CompactionTimer,
    /// `Options::row_cache`, with this database's id in it.
    pub(crate) row_cache: Option<row_cache::RowCache>,
    /// Wakes a purge when a superseded version is released.
    pub(crate) released_versions: Arc<file_lifecycle::ReleasedVersions>,
}

impl DbInner {
    /// Who this database's tables say wrote them.
    pub(crate) fn table_identity(&self) -> crate::table::factory::TableIdentity<'_> {
        crate::table::factory::TableIdentity {
            db_id: &self.db_id,
            session_id: &self.db_session_id,
            host_id: &self.db_host_id,
        }
    }

    pub(crate) fn lock_state(&self) -> MutexGuard<'_, DbState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes new SuperVersions for every column family from `st`.
    /// REQUIRES: the state lock is held (the caller passes its guard).
    pub(crate) fn install_super_versions(&self, st: &mut DbState) {
        let mut map = crate::util::id_map::IdMap::default();
        for cf in st.cfs.values().filter(|c| !c.dropped) {
            let Some(version) = st.versions.current(cf.id) else {
                continue;
            };
            st.files.track_version(&version);
            let mut table_options = cf.options.table_options(cf.id, &cf.name);
            table_options.verify_checksums = self.options.paranoid_checks;
            table_options.allow_mmap_reads = self.options.allow_mmap_reads;
            table_options.use_direct_reads = self.options.use_direct_reads;
            table_options.statistics = self.options.statistics.clone();
            let l0 = version.files(0).len();
            map.insert(
                cf.id,
                Arc::new(SuperVersion {
                    l0_tables: (0..l0).map(|_| std::sync::OnceLock::new()).collect(),
                    mem: Arc::clone(&cf.mem),
                    imms: cf.imms.iter().rev().map(|(m, _)| Arc::clone(m)).collect(),
                    version,
                    options: Arc::new(cf.options.clone()),
                    table_options: Arc::new(table_options),
                    frozen_range_dels: std::sync::OnceLock::new(),
                }),
            );
        }
        st.files.forget_dead_versions();
        self.super_versions.store(Arc::new(map));
        self.recalculate_write_stall(st);
        self.recompute_bottommost_threshold(st);
        self.compaction_timer.version_changed();
    }

    /// Recomputes `st.bottommost_threshold` over the column families whose
    /// bottommost files a snapshot release can make due: leveled, with
    /// automatic compactions, not reserving a level for files ingested
    /// behind.
    pub(crate) fn recompute_bottommost_threshold(&self, st: &mut DbState) {
        st.bottommost_threshold = if self.options.allow_ingest_behind {
            SequenceNumber::MAX
        } else {
            st.cfs
                .values()
                .filter(|c| {
                    !c.dropped
                        && !c.options.disable_auto_compactions
                        && c.options.compaction_style == crate::options::CompactionStyle::Level
                })
                .filter_map(|c| st.versions.current(c.id))
                .map(|v| {
                    crate::compaction::file_triggers::bottommost_threshold(
                        &v,
                        st.oldest_snapshot_released,
                        &st.rewritten_bottommost,
                    )
                })
                .min()
                .unwrap_or(SequenceNumber::MAX)
        };
    }

    /// The earliest Unix second at which a file of a column family with
    /// automatic compactions comes due by age (`ttl`,
    /// `periodic_compaction_seconds`, FIFO's TTL), if any will.
    pub(crate) fn next_age_deadline(&self, st: &DbState) -> Option<u64> {
        // Nothing is scheduled after a background error.
        if st.bg_error.is_some() {
            return None;
        }
        st.cfs
            .values()
            .filter(|c| !c.dropped && !c.options.disable_auto_compactions)
            .filter_map(|c| {
                let v = st.versions.current(c.id)?;
                crate::compaction::file_triggers::next_deadline(
                    &v,
                    &c.options,
                    self.options.allow_ingest_behind,
                )
            })
            .min()
    }

    /// Writes a new OPTIONS file for the live column families.
    /// REQUIRES: the state lock is held (the caller passes its guard).
    pub(crate) fn write_options_file(&self, st: &mut DbState) -> Result<()> {
        let cfs: Vec<(u32, &str, &ColumnFamilyOptions)> = st
            .cfs
            .values()
            .filter(|c| !c.dropped)
            .map(|c| (c.id, c.name.as_str(), &c.options))
            .collect();
        let text = options_file::render(&self.options, &cfs);
        let number = st.versions.new_file_number();
        options_file::persist(self.fs.as_ref(), &self.dbname, number, &text)
    }

    /// The current SuperVersion of column family `cf`.
    pub(crate) fn super_version(&self, cf: u32) -> Result<Arc<SuperVersion>> {
        self.super_versions
            .load()
            .get(&cf)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument(format!("unknown column family id {cf}")))
    }
}

/// An open database.
pub struct DB {
    pub(crate) inner: Arc<DbInner>,
}

impl std::fmt::Debug for DB {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DB")
            .field("path", &self.inner.dbname)
            .finish()
    }
}

impl DB {
    /// The database directory.
    pub fn path(&self) -> &std::path::Path {
        &self.inner.dbname
    }

    /// The handle of the default column family.
    pub fn default_cf(&self) -> ColumnFamilyHandle {
        ColumnFamilyHandle {
            id: 0,
            name: DEFAULT_COLUMN_FAMILY_NAME.into(),
        }
    }

    /// The handle of column family `name`.
    pub fn cf_handle(&self, name: &str) -> Option<ColumnFamilyHandle> {
        let st = self.inner.lock_state();
        st.cfs
            .values()
            .find(|c| c.name == name && !c.dropped)
            .map(|c| ColumnFamilyHandle {
                id: c.id,
                name: c.name.clone(),
            })
    }

    /// Names of the live column families, in creation (id) order: the
    /// default first.
    pub fn column_families(&self) -> Vec<String> {
        let st = self.inner.lock_state();
        let mut cfs: Vec<(u32, String)> = st
            .cfs
            .values()
            .filter(|c| !c.dropped)
            .map(|c| (c.id, c.name.clone()))
            .collect();
        cfs.sort_unstable();
        cfs.into_iter().map(|(_, n)| n).collect()
    }

    /// The number of levels of a column family (RocksDB's `NumberLevels`).
    pub fn number_levels(&self, cf: &ColumnFamilyHandle) -> Result<usize> {
        Ok(self.inner.super_version(cf.id)?.version.num_levels())
    }

    /// The latest sequence number visible to reads.
    pub fn latest_sequence_number(&self) -> SequenceNumber {
        self.inner
            .last_sequence
            .load(std::sync::atomic::Ordering::Acquire)
    }
}

impl DB {
    /// Closes the database, reporting what dropping it would ignore: a
    /// failure to flush data written with `disable_wal`, or a background
    /// error that stopped writes.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

impl Drop for DB {
    fn drop(&mut self) {
        let _ = self.inner.close();
    }
}
