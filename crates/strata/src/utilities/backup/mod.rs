//! Backups (RocksDB's `BackupEngine`), in RocksDB 7.8.3's backup
//! directory layout, so that `ldb restore` restores what Strata backed up
//! and Strata restores what `ldb backup` made:
//!
//! ```text
//! <backup_dir>/meta/<id>                 one meta file per backup (meta.rs)
//! <backup_dir>/private/<id>/             CURRENT, MANIFEST, OPTIONS, WALs
//! <backup_dir>/shared_checksum/<name>    tables, shared between backups:
//!     000012_s<db_session_id>_<size>.sst (tables that carry a session id)
//!     000012_<crc32c>_<size>.sst         (others: RocksDB's legacy naming)
//! <backup_dir>/shared/000012.sst         (share_files_with_checksum off)
//! ```
//!
//! Incremental: a table already in `shared_checksum` under the same name
//! (same session, number and size) is not copied again.
//!
//! Invariants (what makes an interrupted backup or restore harmless): a
//! backup exists exactly when its meta file does, and the meta file is
//! written (to `meta/.<id>.tmp`, synced, renamed) only after every file it
//! names is complete and durable; shared files are copied to a temporary
//! name and renamed; deleting a backup removes its meta file first; files
//! no meta file names are garbage, removed by `garbage_collect` (and
//! before a new backup reuses a private directory). A restore writes
//! `CURRENT` last (to `CURRENT.tmp`, renamed after every other file is
//! durable), so an interrupted restore leaves a directory that does not
//! open as a database.

mod copy;
pub mod meta;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use copy::{CopyOptions, Progress, RateLimiter, Source, copy_with_crc, file_crc32c, run_parallel};
use meta::{MetaEntry, MetaFile};

use crate::db::DB;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, FileSystemRef, default_fs};
use crate::version::{FileType, parse_file_name};

/// A backup's number (RocksDB's `BackupID`).
pub type BackupId = u32;

/// How shared tables are named (RocksDB's `ShareFilesNaming`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShareFilesNaming {
    /// `<number>_<crc32c>_<size>.sst` (reads every table to name it).
    LegacyCrc32cAndFileSize,
    /// `<number>_s<db_session_id>[_<size>].sst` for tables that record a
    /// session id (legacy naming for the others): RocksDB 7.8.3's default,
    /// with the size.
    UseDbSessionId { include_file_size: bool },
}

/// RocksDB 7.8.3's `BackupEngineOptions`, with its defaults.
#[derive(Clone)]
pub struct BackupEngineOptions {
    pub backup_dir: PathBuf,
    /// Where the backups live (RocksDB's `backup_env`); `None`: the real
    /// file system.
    pub backup_fs: Option<FileSystemRef>,
    /// Tables go to a directory shared by all backups (incremental).
    pub share_table_files: bool,
    /// Sync every file written (a backup survives a power loss).
    pub sync: bool,
    /// Delete every existing backup when the engine opens.
    pub destroy_old_data: bool,
    /// Back up the WALs too (otherwise flush first, or lose unflushed
    /// writes).
    pub backup_log_files: bool,
    /// Bytes per second while backing up (0: unlimited).
    pub backup_rate_limit: u64,
    /// Bytes per second while restoring (0: unlimited).
    pub restore_rate_limit: u64,
    /// Shared tables are named by content (`shared_checksum/`) rather
    /// than by number (`shared/`, unsafe across databases).
    pub share_files_with_checksum: bool,
    /// Threads that copy files.
    pub max_background_operations: usize,
    /// A backup's progress callback runs every this many bytes copied.
    pub callback_trigger_interval_size: u64,
    /// Only the newest this many valid backups are opened.
    pub max_valid_backups_to_open: usize,
    pub share_files_with_checksum_naming: ShareFilesNaming,
    /// The meta file schema written (1 or 2).
    pub schema_version: u32,
}

impl std::fmt::Debug for BackupEngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupEngineOptions")
            .field("backup_dir", &self.backup_dir)
            .field("share_table_files", &self.share_table_files)
            .finish()
    }
}

impl BackupEngineOptions {
    pub fn new(backup_dir: impl Into<PathBuf>) -> Self {
        BackupEngineOptions {
            backup_dir: backup_dir.into(),
            backup_fs: None,
            share_table_files: true,
            sync: true,
            destroy_old_data: false,
            backup_log_files: true,
            backup_rate_limit: 0,
            restore_rate_limit: 0,
            share_files_with_checksum: true,
            max_background_operations: 1,
            callback_trigger_interval_size: 4 << 20,
            max_valid_backups_to_open: usize::MAX,
            share_files_with_checksum_naming: ShareFilesNaming::UseDbSessionId {
                include_file_size: true,
            },
            schema_version: 1,
        }
    }
}

/// RocksDB's `CreateBackupOptions`.
#[derive(Clone, Default)]
pub struct CreateBackupOptions {
    /// Flush the memtables first (needed when writes skip the WAL).
    pub flush_before_backup: bool,
    /// Called every `callback_trigger_interval_size` bytes copied.
    pub progress_callback: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for CreateBackupOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateBackupOptions")
            .field("flush_before_backup", &self.flush_before_backup)
            .finish()
    }
}

/// RocksDB's `RestoreOptions`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RestoreOptions {
    /// Keep the WALs already in the WAL directory (and move archived ones
    /// back into it); with `backup_log_files` off, for in-memory databases
    /// persisted by backups.
    pub keep_log_files: bool,
}

/// One file of a backup (RocksDB's `BackupFileInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupFileInfo {
    /// Relative to the backup directory.
    pub relative_filename: String,
    pub size: u64,
}

/// RocksDB's `BackupInfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackupInfo {
    pub backup_id: BackupId,
    /// Seconds since the Unix epoch.
    pub timestamp: i64,
    /// Bytes of all its files (shared ones included).
    pub size: u64,
    pub number_files: u32,
    pub app_metadata: Vec<u8>,
    /// With `include_file_details`.
    pub file_details: Vec<BackupFileInfo>,
    /// The backup's latest sequence number when it was taken.
    pub sequence_number: u64,
}

/// Application metadata larger than this is refused (RocksDB's
/// `kMaxAppMetaSize`).
const MAX_APP_METADATA: usize = 1 << 20;

const META_DIR: &str = "meta";
const PRIVATE_DIR: &str = "private";
const SHARED_DIR: &str = "shared";
const SHARED_CHECKSUM_DIR: &str = "shared_checksum";

/// A file that one or more backups name.
#[derive(Clone, Debug)]
struct FileRecord {
    size: u64,
    crc32c: Option<u32>,
    refs: usize,
}

/// A loaded backup.
#[derive(Clone, Debug)]
struct Backup {
    meta: MetaFile,
    size: u64,
}

/// A set of backups in one directory (RocksDB's `BackupEngine`). Calls
/// that change it take `&mut self`: share one engine between threads
/// behind a lock.
pub struct BackupEngine {
    opts: BackupEngineOptions,
    backup_fs: FileSystemRef,
    /// Where restores write.
    db_fs: FileSystemRef,
    read_only: bool,
    backups: BTreeMap<BackupId, Backup>,
    corrupt: BTreeMap<BackupId, String>,
    files: HashMap<String, FileRecord>,
    latest_backup_id: BackupId,
    /// Every backup in the directory was opened (garbage collection
    /// needs to know every reference).
    all_opened: bool,
}

impl std::fmt::Debug for BackupEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupEngine")
            .field("backup_dir", &self.opts.backup_dir)
            .field("backups", &self.backups.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// One file to put into a backup.
struct Item {
    /// Source name in the database (`000012.sst`, `MANIFEST-000005`).
    name: String,
    kind: ItemKind,
    /// Copy at most this many bytes (MANIFEST, last WAL).
    limit: Option<u64>,
}

enum ItemKind {
    /// A table, in this directory.
    Table(PathBuf),
    /// A file of the database directory other than a table.
    DbFile,
    Wal,
    /// CURRENT, written fresh.
    Contents(Vec<u8>),
}

/// What copying an item produced.
struct Done {
    rel: String,
    size: u64,
    crc32c: u32,
    /// A shared file copied under its temporary name, to rename.
    tmp: Option<String>,
}

impl BackupEngine {
    /// Opens (creating if needed) the backups in `opts.backup_dir`;
    /// restores write through the real file system.
    pub fn open(opts: BackupEngineOptions) -> Result<BackupEngine> {
        Self::open_with_db_fs(opts, default_fs(), false)
    }

    /// Opens for reading and restoring only (RocksDB's
    /// `BackupEngineReadOnly`): nothing in the backup directory changes.
    pub fn open_read_only(opts: BackupEngineOptions) -> Result<BackupEngine> {
        Self::open_with_db_fs(opts, default_fs(), true)
    }

    /// [`BackupEngine::open`] with the file system restores write to.
    pub fn open_with_db_fs(
        opts: BackupEngineOptions,
        db_fs: FileSystemRef,
        read_only: bool,
    ) -> Result<BackupEngine> {
        if read_only && opts.destroy_old_data {
            return Err(Error::InvalidArgument(
                "Can't destroy old data with ReadOnly BackupEngine".into(),
            ));
        }
        let backup_fs = opts.backup_fs.clone().unwrap_or_else(default_fs);
        let mut e = BackupEngine {
            opts,
            backup_fs,
            db_fs,
            read_only,
            backups: BTreeMap::new(),
            corrupt: BTreeMap::new(),
            files: HashMap::new(),
            latest_backup_id: 0,
            all_opened: true,
        };
        if !read_only {
            let fs = &*e.backup_fs;
            fs.create_dir_all(&e.opts.backup_dir)?;
            fs.create_dir_all(&e.path(META_DIR))?;
            fs.create_dir_all(&e.path(PRIVATE_DIR))?;
            if e.opts.share_table_files {
                fs.create_dir_all(&e.path(e.shared_dir()))?;
            }
        }
        let ids = e.meta_ids()?;
        if e.opts.destroy_old_data {
            for &id in &ids {
                e.backup_fs.delete_file(&e.meta_path(id))?;
            }
            e.garbage_collect()?;
            return Ok(e);
        }
        e.latest_backup_id = ids.iter().copied().max().unwrap_or(0);
        let sizes = e.file_sizes(&ids)?;
        let mut opened = 0;
        for &id in ids.iter().rev() {
            if opened >= e.opts.max_valid_backups_to_open {
                e.all_opened = false;
                continue;
            }
            match e.load(id, &sizes) {
                Ok(b) => {
                    e.add_refs(&b.meta);
                    e.backups.insert(id, b);
                    opened += 1;
                }
                Err(err) => {
                    e.corrupt.insert(id, err.to_string());
                }
            }
        }
        Ok(e)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.opts.backup_dir.join(rel)
    }

    fn meta_path(&self, id: BackupId) -> PathBuf {
        self.path(&format!("{META_DIR}/{id}"))
    }

    fn private_rel(id: BackupId) -> String {
        format!("{PRIVATE_DIR}/{id}")
    }

    fn shared_dir(&self) -> &'static str {
        if self.opts.share_files_with_checksum {
            SHARED_CHECKSUM_DIR
        } else {
            SHARED_DIR
        }
    }

    /// Ids of the meta files present (temporary ones excluded).
    fn meta_ids(&self) -> Result<Vec<BackupId>> {
        let names = match self.backup_fs.children(&self.path(META_DIR)) {
            Ok(n) => n,
            // RocksDB's message (a read-only engine creates nothing).
            Err(Error::NotFound(_)) => {
                return Err(Error::NotFound(format!(
                    "{}/{META_DIR} is missing",
                    self.opts.backup_dir.display()
                )));
            }
            Err(e) => return Err(e),
        };
        let mut ids: Vec<BackupId> = names
            .iter()
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .filter_map(|n| n.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Sizes of the files in the shared directories and the private
    /// directories of `ids`, by path relative to the backup directory.
    fn file_sizes(&self, ids: &[BackupId]) -> Result<HashMap<String, u64>> {
        let mut out = HashMap::new();
        let mut dirs: Vec<String> = vec![SHARED_DIR.into(), SHARED_CHECKSUM_DIR.into()];
        dirs.extend(ids.iter().map(|&id| Self::private_rel(id)));
        for d in dirs {
            let names = match self.backup_fs.children(&self.path(&d)) {
                Ok(n) => n,
                Err(Error::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            for n in names {
                let rel = format!("{d}/{n}");
                if let Ok(size) = self.backup_fs.file_size(&self.path(&rel)) {
                    out.insert(rel, size);
                }
            }
        }
        Ok(out)
    }

    /// Reads backup `id`'s meta file and checks its files are there.
    fn load(&self, id: BackupId, sizes: &HashMap<String, u64>) -> Result<Backup> {
        let path = self.meta_path(id);
        let name = path.display().to_string();
        let bytes = self.backup_fs.read_file(&path)?;
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::corruption(&name, 0, "meta file is not text"))?;
        let mut meta = MetaFile::parse(&text, &name).map_err(|e| match e {
            Error::Corruption { msg, .. } => Error::corruption(&name, 0, msg),
            e => e,
        })?;
        let mut size = 0;
        for f in &mut meta.files {
            let Some(&actual) = sizes.get(&f.path) else {
                return Err(Error::corruption(
                    &name,
                    0,
                    format!(
                        "Pathname in meta file not found on disk: {}",
                        self.path(&f.path).display()
                    ),
                ));
            };
            if let Some(expected) = f.size
                && expected != actual
            {
                return Err(Error::corruption(
                    &name,
                    0,
                    format!(
                        "For file {} expected size {expected} but found size{actual}",
                        f.path
                    ),
                ));
            }
            if let Some(known) = self.files.get(&f.path)
                && (known.size != actual
                    || (known.crc32c.is_some() && f.crc32c.is_some() && known.crc32c != f.crc32c))
            {
                return Err(Error::corruption(
                    &name,
                    0,
                    format!(
                        "Checksum or size mismatch for existing backup file: {}",
                        f.path
                    ),
                ));
            }
            f.size = Some(actual);
            size += actual;
        }
        Ok(Backup { meta, size })
    }

    fn add_refs(&mut self, meta: &MetaFile) {
        for f in &meta.files {
            let r = self.files.entry(f.path.clone()).or_insert(FileRecord {
                size: f.size.unwrap_or(0),
                crc32c: f.crc32c,
                refs: 0,
            });
            r.refs += 1;
            if r.crc32c.is_none() {
                r.crc32c = f.crc32c;
            }
        }
    }

    fn drop_refs(&mut self, meta: &MetaFile) {
        for f in &meta.files {
            if let Some(r) = self.files.get_mut(&f.path) {
                r.refs = r.refs.saturating_sub(1);
                if r.refs == 0 {
                    self.files.remove(&f.path);
                }
            }
        }
    }

    fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::NotSupported(
                "changing backups through a read-only backup engine".into(),
            ));
        }
        Ok(())
    }

    /// Backs up `db` (RocksDB's `CreateNewBackup`); returns the new id.
    pub fn create_new_backup(&mut self, db: &DB, flush_before_backup: bool) -> Result<BackupId> {
        let o = CreateBackupOptions {
            flush_before_backup,
            ..Default::default()
        };
        self.create_new_backup_with_metadata(&o, db, &[])
    }

    /// Backs up `db` with application metadata kept in the meta file
    /// (RocksDB's `CreateNewBackupWithMetadata`).
    pub fn create_new_backup_with_metadata(
        &mut self,
        o: &CreateBackupOptions,
        db: &DB,
        app_metadata: &[u8],
    ) -> Result<BackupId> {
        self.check_writable()?;
        if app_metadata.len() > MAX_APP_METADATA {
            return Err(Error::InvalidArgument("App metadata too large".into()));
        }
        let id = self.latest_backup_id + 1;
        let private = Self::private_rel(id);
        if self.backup_fs.file_exists(&self.path(&private)) {
            // A backup that failed left its private directory behind.
            self.garbage_collect()?;
        }
        self.backup_fs.create_dir_all(&self.path(&private))?;
        let started = std::time::Instant::now();
        db.disable_file_deletions()?;
        let made = self.copy_backup_files(o, db, id);
        let enabled = db.enable_file_deletions(false);
        let result = made.and_then(|(files, sequence)| {
            enabled?;
            let meta = MetaFile {
                timestamp: crate::fs::unix_seconds_now() as i64,
                sequence,
                app_metadata: app_metadata.to_vec(),
                files,
            };
            self.store_meta(id, &meta)?;
            Ok(meta)
        });
        match result {
            Ok(meta) => {
                let size = meta.files.iter().filter_map(|f| f.size).sum();
                self.add_refs(&meta);
                self.backups.insert(id, Backup { meta, size });
                self.latest_backup_id = id;
                db.inner.info_log.log(&format!(
                    "backup {id} to {} done: {size} bytes in {:.3} s",
                    self.opts.backup_dir.display(),
                    started.elapsed().as_secs_f64()
                ));
                Ok(id)
            }
            Err(e) => {
                // Remove what the failed attempt wrote (it has no meta
                // file, so nothing names it).
                let _ = self.garbage_collect();
                Err(e)
            }
        }
    }

    /// Copies the files of a backup of `db` as backup `id`; returns the
    /// meta entries and the sequence number. REQUIRES: file deletions
    /// are disabled.
    fn copy_backup_files(
        &self,
        o: &CreateBackupOptions,
        db: &DB,
        id: BackupId,
    ) -> Result<(Vec<MetaEntry>, u64)> {
        let set = crate::utilities::checkpoint::live_file_set(db, o.flush_before_backup)?;
        let mut items: Vec<Item> = set
            .tables
            .iter()
            .map(|n| Item {
                name: n.clone(),
                kind: ItemKind::Table(set.table_dir.clone()),
                limit: None,
            })
            .collect();
        items.push(Item {
            name: set.manifest.clone(),
            kind: ItemKind::DbFile,
            limit: Some(set.manifest_size),
        });
        items.push(Item {
            name: "CURRENT".into(),
            kind: ItemKind::Contents(format!("{}\n", set.manifest).into_bytes()),
            limit: None,
        });
        if let Some(opt) = &set.options {
            items.push(Item {
                name: opt.clone(),
                kind: ItemKind::DbFile,
                limit: None,
            });
        }
        if self.opts.backup_log_files {
            for (n, size) in &set.wals {
                items.push(Item {
                    name: n.clone(),
                    kind: ItemKind::Wal,
                    limit: Some(*size),
                });
            }
        }
        let rate = (self.opts.backup_rate_limit > 0)
            .then(|| RateLimiter::new(self.opts.backup_rate_limit));
        let progress = Progress::new(
            self.opts.callback_trigger_interval_size,
            o.progress_callback.clone(),
        );
        let copy_opts = CopyOptions {
            sync: self.opts.sync,
            rate: rate.as_ref(),
            progress: Some(&progress),
        };
        let inner = &db.inner;
        let results = run_parallel(items, self.opts.max_background_operations, |item| {
            self.backup_one(inner, id, item, copy_opts)
        });
        let mut entries = Vec::with_capacity(results.len());
        let mut first_err = None;
        let mut seen = std::collections::HashSet::new();
        for r in results {
            match r {
                Ok(done) => {
                    if let Some(tmp) = &done.tmp {
                        self.backup_fs
                            .rename_file(&self.path(tmp), &self.path(&done.rel))?;
                    }
                    crate::crash_point!("backup::after_file");
                    if seen.insert(done.rel.clone()) {
                        entries.push(MetaEntry {
                            path: done.rel,
                            crc32c: Some(done.crc32c),
                            size: Some(done.size),
                        });
                    }
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        if self.opts.sync {
            self.backup_fs
                .sync_dir(&self.path(&Self::private_rel(id)))?;
            if self.opts.share_table_files {
                self.backup_fs.sync_dir(&self.path(self.shared_dir()))?;
            }
        }
        Ok((entries, set.sequence))
    }

    /// Puts one file into backup `id` (RocksDB's `AddBackupFileWorkItem`).
    fn backup_one(
        &self,
        inner: &crate::db::DbInner,
        id: BackupId,
        item: Item,
        o: CopyOptions<'_>,
    ) -> Result<Done> {
        let db_fs = &*inner.fs;
        let private = |name: &str| format!("{}/{name}", Self::private_rel(id));
        let src_dir = match &item.kind {
            ItemKind::Wal => &inner.wal_dir,
            ItemKind::Table(dir) => dir,
            _ => &inner.dbname,
        };
        let src = src_dir.join(&item.name);
        match item.kind {
            ItemKind::Contents(bytes) => {
                let rel = private(&item.name);
                let (size, crc32c) =
                    copy_with_crc(Source::Bytes(&bytes), &*self.backup_fs, &self.path(&rel), o)?;
                Ok(Done {
                    rel,
                    size,
                    crc32c,
                    tmp: None,
                })
            }
            ItemKind::Table(_) if self.opts.share_table_files => {
                let size = db_fs.file_size(&src)?;
                let mut known_crc = None;
                let shared_name = if self.opts.share_files_with_checksum {
                    let session = match self.opts.share_files_with_checksum_naming {
                        ShareFilesNaming::UseDbSessionId { .. } => {
                            table_session_id(db_fs, &src, size)
                        }
                        ShareFilesNaming::LegacyCrc32cAndFileSize => None,
                    };
                    let (stem, ext) = item.name.rsplit_once('.').unwrap_or((&item.name, ""));
                    match (session, self.opts.share_files_with_checksum_naming) {
                        (Some(sid), ShareFilesNaming::UseDbSessionId { include_file_size }) => {
                            if include_file_size {
                                format!("{stem}_s{sid}_{size}.{ext}")
                            } else {
                                format!("{stem}_s{sid}.{ext}")
                            }
                        }
                        _ => {
                            let (_, crc) = file_crc32c(db_fs, &src, None)?;
                            known_crc = Some(crc);
                            format!("{stem}_{crc}_{size}.{ext}")
                        }
                    }
                } else {
                    item.name.clone()
                };
                let rel = format!("{}/{shared_name}", self.shared_dir());
                let final_path = self.path(&rel);
                if self.backup_fs.file_exists(&final_path) {
                    match self.files.get(&rel) {
                        Some(r) => {
                            // Already backed up: nothing to copy.
                            let crc32c = match (r.crc32c, known_crc) {
                                (Some(c), _) | (None, Some(c)) => c,
                                (None, None) => file_crc32c(db_fs, &src, None)?.1,
                            };
                            return Ok(Done {
                                rel,
                                size: r.size,
                                crc32c,
                                tmp: None,
                            });
                        }
                        // Left by a failed backup: copy it again.
                        None => self.backup_fs.delete_file(&final_path)?,
                    }
                }
                let tmp = format!("{}/.{shared_name}.tmp", self.shared_dir());
                let (size, crc32c) = copy_with_crc(
                    Source::File {
                        fs: db_fs,
                        path: &src,
                        limit: None,
                    },
                    &*self.backup_fs,
                    &self.path(&tmp),
                    o,
                )?;
                Ok(Done {
                    rel,
                    size,
                    crc32c,
                    tmp: Some(tmp),
                })
            }
            _ => {
                let rel = private(&item.name);
                let (size, crc32c) = copy_with_crc(
                    Source::File {
                        fs: db_fs,
                        path: &src,
                        limit: item.limit,
                    },
                    &*self.backup_fs,
                    &self.path(&rel),
                    o,
                )?;
                Ok(Done {
                    rel,
                    size,
                    crc32c,
                    tmp: None,
                })
            }
        }
    }

    /// Writes backup `id`'s meta file: temporary name, sync, rename.
    fn store_meta(&self, id: BackupId, meta: &MetaFile) -> Result<()> {
        let text = meta.render(self.opts.schema_version)?;
        let tmp = self.path(&format!("{META_DIR}/.{id}.tmp"));
        self.backup_fs
            .write_file(&tmp, text.as_bytes(), self.opts.sync)?;
        crate::crash_point!("backup::before_meta_rename");
        self.backup_fs.rename_file(&tmp, &self.meta_path(id))?;
        if self.opts.sync {
            self.backup_fs.sync_dir(&self.path(META_DIR))?;
        }
        Ok(())
    }

    fn info(&self, id: BackupId, b: &Backup, details: bool) -> BackupInfo {
        BackupInfo {
            backup_id: id,
            timestamp: b.meta.timestamp,
            size: b.size,
            number_files: b.meta.files.len() as u32,
            app_metadata: b.meta.app_metadata.clone(),
            file_details: if details {
                b.meta
                    .files
                    .iter()
                    .map(|f| BackupFileInfo {
                        relative_filename: f.path.clone(),
                        size: f.size.unwrap_or(0),
                    })
                    .collect()
            } else {
                Vec::new()
            },
            sequence_number: b.meta.sequence,
        }
    }

    /// Every valid backup, oldest first (RocksDB's `GetBackupInfo`).
    pub fn get_backup_info(&self, include_file_details: bool) -> Vec<BackupInfo> {
        self.backups
            .iter()
            .map(|(&id, b)| self.info(id, b, include_file_details))
            .collect()
    }

    /// Backup `id`: `NotFound`, or its error if it is corrupt.
    pub fn get_backup_info_by_id(
        &self,
        id: BackupId,
        include_file_details: bool,
    ) -> Result<BackupInfo> {
        if let Some(e) = self.corrupt.get(&id) {
            return Err(Error::corruption("", 0, e.clone()));
        }
        self.backups
            .get(&id)
            .map(|b| self.info(id, b, include_file_details))
            .ok_or_else(|| Error::NotFound("Backup not found".into()))
    }

    /// The newest valid backup, or `NotFound`.
    pub fn get_latest_backup_info(&self, include_file_details: bool) -> Result<BackupInfo> {
        let (&id, b) = self
            .backups
            .iter()
            .next_back()
            .ok_or_else(|| Error::NotFound("No backup".into()))?;
        Ok(self.info(id, b, include_file_details))
    }

    /// Ids of backups whose meta file or files are damaged.
    pub fn get_corrupted_backups(&self) -> Vec<BackupId> {
        self.corrupt.keys().copied().collect()
    }

    /// Checks backup `id`'s files are there with their sizes and, with
    /// `verify_with_checksum`, their crc32c (RocksDB's `VerifyBackup`).
    pub fn verify_backup(&self, id: BackupId, verify_with_checksum: bool) -> Result<()> {
        if let Some(e) = self.corrupt.get(&id) {
            return Err(Error::corruption("", 0, e.clone()));
        }
        let b = self
            .backups
            .get(&id)
            .ok_or_else(|| Error::NotFound(format!("backup {id}")))?;
        for f in &b.meta.files {
            let path = self.path(&f.path);
            let size = match self.backup_fs.file_size(&path) {
                Ok(s) => s,
                Err(Error::NotFound(_)) => {
                    return Err(Error::NotFound(format!("{} missing", path.display())));
                }
                Err(e) => return Err(e),
            };
            let expected = f.size.unwrap_or(size);
            if size != expected {
                return Err(Error::corruption(
                    path.display(),
                    0,
                    format!(
                        "File corrupted: File size mismatch for {}: read {size} bytes, expected {expected} bytes",
                        f.path
                    ),
                ));
            }
            if verify_with_checksum && let Some(want) = f.crc32c {
                let (_, got) = file_crc32c(&*self.backup_fs, &path, None)?;
                if got != want {
                    return Err(Error::corruption(
                        path.display(),
                        0,
                        format!(
                            "File corrupted: Expected checksum {} while computed checksum is {}",
                            crc_hex(want),
                            crc_hex(got)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Restores the newest valid backup into `db_dir` (WALs into
    /// `wal_dir`).
    pub fn restore_db_from_latest_backup(
        &self,
        o: &RestoreOptions,
        db_dir: &Path,
        wal_dir: &Path,
    ) -> Result<()> {
        let id = self
            .backups
            .keys()
            .next_back()
            .copied()
            .ok_or_else(|| Error::NotFound("Backup not found".into()))?;
        self.restore_db_from_backup(o, id, db_dir, wal_dir)
    }

    /// Restores backup `id` into `db_dir` (WALs into `wal_dir`), replacing
    /// what is there (RocksDB's `RestoreDBFromBackup`; see the module
    /// comment for interruptions). Every file's crc32c is checked.
    pub fn restore_db_from_backup(
        &self,
        o: &RestoreOptions,
        id: BackupId,
        db_dir: &Path,
        wal_dir: &Path,
    ) -> Result<()> {
        if let Some(e) = self.corrupt.get(&id) {
            return Err(Error::corruption("", 0, e.clone()));
        }
        let b = self
            .backups
            .get(&id)
            .ok_or_else(|| Error::NotFound("Backup not found".into()))?;
        let fs = &*self.db_fs;
        let _ = fs.create_dir_all(db_dir);
        let _ = fs.create_dir_all(wal_dir);
        let archive = wal_dir.join(crate::db::WAL_ARCHIVE_DIR_NAME);
        if o.keep_log_files {
            delete_children(fs, db_dir, true)?;
            if let Ok(names) = fs.children(&archive) {
                for n in names {
                    if matches!(parse_file_name(&n), Some((_, FileType::Wal))) {
                        fs.rename_file(&archive.join(&n), &wal_dir.join(&n))?;
                    }
                }
            }
        } else {
            delete_children(fs, wal_dir, false)?;
            delete_children(fs, &archive, false)?;
            delete_children(fs, db_dir, false)?;
        }
        let rate = (self.opts.restore_rate_limit > 0)
            .then(|| RateLimiter::new(self.opts.restore_rate_limit));
        let copy_opts = CopyOptions {
            sync: self.opts.sync,
            rate: rate.as_ref(),
            progress: None,
        };
        let mut current: Option<(PathBuf, PathBuf)> = None;
        let mut jobs = Vec::new();
        for f in &b.meta.files {
            let db_name = db_file_name(&f.path);
            let Some((_, kind)) = parse_file_name(&db_name) else {
                return Err(Error::corruption(
                    self.path(&f.path).display(),
                    0,
                    format!("Backup corrupted: Fail to parse filename {db_name}"),
                ));
            };
            let mut dst = match kind {
                FileType::Wal => wal_dir.join(&db_name),
                _ => db_dir.join(&db_name),
            };
            if kind == FileType::Current {
                let tmp = db_dir.join("CURRENT.tmp");
                current = Some((tmp.clone(), dst));
                dst = tmp;
            }
            jobs.push((f.clone(), dst));
        }
        let results = run_parallel(jobs, self.opts.max_background_operations, |(f, dst)| {
            let src = self.path(&f.path);
            let (_, crc) = copy_with_crc(
                Source::File {
                    fs: &*self.backup_fs,
                    path: &src,
                    limit: f.size,
                },
                fs,
                &dst,
                copy_opts,
            )?;
            crate::crash_point!("restore::after_file");
            match f.crc32c {
                Some(want) if want != crc => Err(Error::corruption(
                    src.display(),
                    0,
                    format!(
                        "While restoring {} -> {}: expected checksum is {} while computed checksum is {}",
                        f.path,
                        dst.display(),
                        crc_hex(want),
                        crc_hex(crc)
                    ),
                )),
                _ => Ok(()),
            }
        });
        results.into_iter().collect::<Result<Vec<()>>>()?;
        if self.opts.sync {
            fs.sync_dir(db_dir)?;
            fs.sync_dir(wal_dir)?;
        }
        if let Some((tmp, final_path)) = current {
            fs.rename_file(&tmp, &final_path)?;
            if self.opts.sync {
                fs.sync_dir(db_dir)?;
            }
        }
        Ok(())
    }

    /// Deletes all but the newest `num_backups_to_keep` backups.
    pub fn purge_old_backups(&mut self, num_backups_to_keep: usize) -> Result<()> {
        self.check_writable()?;
        let total = self.backups.len() + self.corrupt.len();
        let mut ids: Vec<BackupId> = self
            .backups
            .keys()
            .chain(self.corrupt.keys())
            .copied()
            .collect();
        ids.sort_unstable();
        let doomed: Vec<BackupId> = ids
            .into_iter()
            .take(total.saturating_sub(num_backups_to_keep))
            .collect();
        for id in &doomed {
            self.delete_backup_no_gc(*id)?;
        }
        if !doomed.is_empty() {
            self.garbage_collect()?;
        }
        Ok(())
    }

    /// Deletes backup `id` and the files only it named.
    pub fn delete_backup(&mut self, id: BackupId) -> Result<()> {
        self.check_writable()?;
        self.delete_backup_no_gc(id)?;
        self.garbage_collect()
    }

    fn delete_backup_no_gc(&mut self, id: BackupId) -> Result<()> {
        let known = self.backups.contains_key(&id) || self.corrupt.contains_key(&id);
        if !known {
            return Err(Error::NotFound(format!("Backup not found: {id}")));
        }
        // The meta file first: from then on the backup does not exist.
        match self.backup_fs.delete_file(&self.meta_path(id)) {
            Ok(()) | Err(Error::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        self.corrupt.remove(&id);
        if let Some(b) = self.backups.remove(&id) {
            self.drop_refs(&b.meta);
        }
        Ok(())
    }

    /// Removes every file and private directory no backup names, and
    /// every temporary file (RocksDB's `GarbageCollect`). Skipped for the
    /// shared directories when not every backup was opened
    /// (`max_valid_backups_to_open`).
    pub fn garbage_collect(&mut self) -> Result<()> {
        self.check_writable()?;
        let fs = &*self.backup_fs;
        let mut first_err: Option<Error> = None;
        let mut note = |r: Result<()>| {
            if let Err(e) = r
                && !matches!(e, Error::NotFound(_))
            {
                first_err.get_or_insert(e);
            }
        };
        // Temporary meta files.
        if let Ok(names) = fs.children(&self.path(META_DIR)) {
            for n in names
                .iter()
                .filter(|n| n.starts_with('.') && n.ends_with(".tmp"))
            {
                note(fs.delete_file(&self.path(&format!("{META_DIR}/{n}"))));
            }
        }
        if self.all_opened {
            for dir in [SHARED_DIR, SHARED_CHECKSUM_DIR] {
                let Ok(names) = fs.children(&self.path(dir)) else {
                    continue;
                };
                for n in names {
                    let rel = format!("{dir}/{n}");
                    if !self.files.contains_key(&rel) {
                        note(fs.delete_file(&self.path(&rel)));
                    }
                }
            }
        }
        // Private directories of backups that do not exist.
        if let Ok(names) = fs.children(&self.path(PRIVATE_DIR)) {
            for n in names {
                let id = n.parse::<BackupId>().ok();
                let live = id.is_some_and(|id| {
                    self.backups.contains_key(&id)
                        || self.corrupt.contains_key(&id)
                        || (!self.all_opened && id <= self.latest_backup_id)
                });
                if live {
                    continue;
                }
                let dir = self.path(&format!("{PRIVATE_DIR}/{n}"));
                note(delete_children(fs, &dir, false));
                note(fs.delete_dir(&dir));
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The database file a backup file restores to: `private/1/MANIFEST-5` ->
/// `MANIFEST-5`; `shared_checksum/000012_s<sid>_<size>.sst` and
/// `shared_checksum/000012_<crc>_<size>.sst` -> `000012.sst` (RocksDB's
/// `GetFileFromChecksumFile`: from the first `_` to the last `.`).
fn db_file_name(rel: &str) -> String {
    let base = rel.rsplit('/').next().unwrap_or(rel);
    if rel.starts_with(&format!("{SHARED_CHECKSUM_DIR}/"))
        && let (Some(u), Some(dot)) = (base.find('_'), base.rfind('.'))
        && u < dot
    {
        return format!("{}{}", &base[..u], &base[dot..]);
    }
    base.to_string()
}

/// A table's `db_session_id` property, when it has one.
fn table_session_id(fs: &dyn FileSystem, path: &Path, size: u64) -> Option<String> {
    let file = fs.new_random_access_file(path).ok()?;
    let props =
        crate::table::table_reader::read_table_properties(&*file, &path.to_string_lossy(), size)
            .ok()?;
    let sid = String::from_utf8(props.db_session_id).ok()?;
    (!sid.is_empty() && sid.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(sid)
}

/// RocksDB's checksum hex (`ChecksumInt32ToHex`: the big-endian bytes).
fn crc_hex(c: u32) -> String {
    c.to_be_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// Deletes the files in `dir` (not subdirectories); `keep_wals` spares
/// WALs. A missing directory is fine.
fn delete_children(fs: &dyn FileSystem, dir: &Path, keep_wals: bool) -> Result<()> {
    let names = match fs.children(dir) {
        Ok(n) => n,
        Err(Error::NotFound(_)) => return Ok(()),
        Err(e) => return Err(e),
    };
    for n in names {
        if keep_wals && matches!(parse_file_name(&n), Some((_, FileType::Wal))) {
            continue;
        }
        let p = dir.join(&n);
        match fs.delete_file(&p) {
            Ok(()) | Err(Error::NotFound(_)) => {}
            // A directory (e.g. archive/): left alone, as RocksDB's
            // DeleteChildren does.
            Err(_) if fs.file_size(&p).is_err() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_names_map_back_to_database_names() {
        assert_eq!(db_file_name("private/3/MANIFEST-000005"), "MANIFEST-000005");
        assert_eq!(db_file_name("private/3/000009.log"), "000009.log");
        assert_eq!(
            db_file_name("shared_checksum/000012_sABCDEF0123456789ABCD_4096.sst"),
            "000012.sst"
        );
        assert_eq!(
            db_file_name("shared_checksum/000012_123456_4096.sst"),
            "000012.sst"
        );
        assert_eq!(db_file_name("shared/000012.sst"), "000012.sst");
        assert_eq!(crc_hex(0x0102_0a0b), "01020a0b");
    }
}
