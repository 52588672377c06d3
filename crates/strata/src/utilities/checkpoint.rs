//! Checkpoints (RocksDB's `Checkpoint::CreateCheckpoint`): an openable
//! copy of a live database in another directory, made while it serves
//! reads and writes.
//!
//! Owns: the layout of a checkpoint and the protocol that makes it
//! appear whole or not at all. Tables are hard-linked where the file
//! system allows (they are immutable) and copied otherwise; the MANIFEST
//! is copied up to its size at the moment the live files were listed;
//! CURRENT is written fresh; the OPTIONS file is copied; the WALs still
//! needed are copied, the last one up to its size when listed, so the
//! checkpoint holds a prefix of the writes (with `log_size_for_flush` 0,
//! the default, the memtables are flushed first and the WALs hold only
//! writes after the flush).
//!
//! Invariants: everything is written into `<dir>.tmp`, synced, and the
//! directory is renamed to `<dir>` last, so a checkpoint directory that
//! exists is complete (a crash leaves only `<dir>.tmp`, removed by the
//! next attempt); file deletions stay disabled from the listing until
//! the last copy, so every listed file still exists when it is copied.

use std::path::Path;

use crate::db::DB;
use crate::error::{Error, Result};
use crate::format::SequenceNumber;
use crate::fs::{FileSystem, copy_file};
use crate::version::{FileType, parse_file_name};

/// Makes checkpoints of one open database.
#[derive(Debug)]
pub struct Checkpoint<'a> {
    db: &'a DB,
}

impl<'a> Checkpoint<'a> {
    /// RocksDB's `Checkpoint::Create`. A read-only database cannot make
    /// checkpoints (RocksDB's read-only DB lacks the calls it needs).
    pub fn new(db: &'a DB) -> Result<Checkpoint<'a>> {
        if db.inner.read_only {
            return Err(Error::NotSupported(
                "checkpoint of a database opened read-only".into(),
            ));
        }
        Ok(Checkpoint { db })
    }

    /// Creates an openable copy of the database in `dir`, which must not
    /// exist. `log_size_for_flush`: 0 flushes the memtables first (the
    /// checkpoint's WALs then hold only later writes); `u64::MAX` never
    /// flushes; otherwise flushes only if the live WALs hold at least that
    /// many bytes. Returns the latest sequence number when the live files
    /// were listed: the checkpoint holds every write up to it (and maybe
    /// some later ones).
    pub fn create_checkpoint(&self, dir: &Path, log_size_for_flush: u64) -> Result<SequenceNumber> {
        let fs = &*self.db.inner.fs;
        // RocksDB's messages, word for word (ldb prints them).
        if fs.file_exists(dir) {
            return Err(Error::InvalidArgument("Directory exists".into()));
        }
        let Some(name) = dir.file_name() else {
            return Err(Error::InvalidArgument(
                "invalid checkpoint directory name".into(),
            ));
        };
        let mut tmp_name = name.to_os_string();
        tmp_name.push(".tmp");
        let tmp = dir.with_file_name(tmp_name);
        remove_staging_dir(fs, &tmp)?;
        fs.create_dir_all(&tmp)?;
        self.db.inner.info_log.log(&format!(
            "checkpoint: creating {} (staging in {})",
            dir.display(),
            tmp.display()
        ));
        self.db.disable_file_deletions()?;
        let made = self.fill(&tmp, log_size_for_flush);
        let enabled = self.db.enable_file_deletions(false);
        let seq = match (made, enabled) {
            (Ok(seq), Ok(())) => seq,
            (Err(e), _) | (Ok(_), Err(e)) => {
                let _ = remove_staging_dir(fs, &tmp);
                return Err(e);
            }
        };
        fs.rename_file(&tmp, dir)?;
        crate::crash_point!("checkpoint::after_rename");
        fs.sync_dir(dir)?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs.sync_dir(parent)?;
        }
        self.db.inner.info_log.log(&format!(
            "checkpoint: {} done at sequence {seq}",
            dir.display()
        ));
        Ok(seq)
    }

    /// RocksDB's `Checkpoint::ExportColumnFamily`: flushes `cf`, then
    /// hard-links (or copies) its live tables into `export_dir` (which must
    /// not exist; staged in `<export_dir>.tmp` and renamed last) and
    /// returns what [`DB::create_column_family_with_import`] needs to make
    /// them a column family of another database (or this one).
    pub fn export_column_family(
        &self,
        cf: &crate::db::ColumnFamilyHandle,
        export_dir: &Path,
    ) -> Result<crate::db::ExportImportFilesMetaData> {
        let db = self.db;
        let fs = &*db.inner.fs;
        if fs.file_exists(export_dir) {
            return Err(Error::InvalidArgument("Specified export_dir exists".into()));
        }
        let Some(name) = export_dir.file_name() else {
            return Err(Error::InvalidArgument(
                "Specified export_dir invalid".into(),
            ));
        };
        let mut tmp_name = name.to_os_string();
        tmp_name.push(".tmp");
        let tmp = export_dir.with_file_name(tmp_name);
        remove_staging_dir(fs, &tmp)?;
        fs.create_dir_all(&tmp)?;
        let exported = (|| {
            db.flush_cf(cf)?;
            db.disable_file_deletions()?;
            let files: Vec<crate::db::LiveFileMetaData> = db
                .live_files_metadata()
                .into_iter()
                .filter(|m| m.column_family_name == cf.name)
                .collect();
            let linked = (|| {
                let mut link = true;
                for m in &files {
                    let file = m.name.trim_start_matches('/');
                    let (src, dst) = (Path::new(&m.db_path).join(file), tmp.join(file));
                    if link {
                        match fs.link_file(&src, &dst) {
                            Ok(()) => continue,
                            Err(Error::NotSupported(_)) => link = false,
                            Err(e) => return Err(e),
                        }
                    }
                    copy_file(fs, &src, &dst, None)?;
                }
                fs.sync_dir(&tmp)
            })();
            let enabled = db.enable_file_deletions(false);
            linked?;
            enabled?;
            Ok(files)
        })();
        let files = match exported {
            Ok(files) => files,
            Err(e) => {
                let _ = remove_staging_dir(fs, &tmp);
                return Err(e);
            }
        };
        fs.rename_file(&tmp, export_dir)?;
        fs.sync_dir(export_dir)?;
        if let Some(parent) = export_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs.sync_dir(parent)?;
        }
        let comparator = db
            .inner
            .lock_state()
            .cfs
            .get(&cf.id)
            .map(|c| c.options.comparator.name().to_string())
            .ok_or_else(|| Error::InvalidArgument(format!("unknown column family {}", cf.name)))?;
        db.inner.info_log.log(&format!(
            "[{}] exported {} tables to {}",
            cf.name,
            files.len(),
            export_dir.display()
        ));
        Ok(crate::db::ExportImportFilesMetaData {
            db_comparator_name: comparator,
            files: files
                .into_iter()
                .map(|mut m| {
                    m.db_path = export_dir.to_string_lossy().into_owned();
                    m
                })
                .collect(),
        })
    }

    /// Writes the checkpoint's files into `tmp`. REQUIRES: file deletions
    /// are disabled.
    fn fill(&self, tmp: &Path, log_size_for_flush: u64) -> Result<SequenceNumber> {
        let db = self.db;
        let inner = &db.inner;
        let fs = &*inner.fs;
        let flush = match log_size_for_flush {
            0 => true,
            u64::MAX => false,
            limit => {
                db.sorted_wal_files()?
                    .iter()
                    .filter(|w| w.file_type == crate::db::WalFileType::Alive)
                    .map(|w| w.size)
                    .sum::<u64>()
                    >= limit
            }
        };
        let set = live_file_set(db, flush)?;
        let mut link = true;
        for name in &set.tables {
            let (src, dst) = (set.table_dir.join(name), tmp.join(name));
            if link {
                match fs.link_file(&src, &dst) {
                    Ok(()) => {}
                    Err(Error::NotSupported(_)) => {
                        link = false;
                        copy_file(fs, &src, &dst, None)?;
                    }
                    Err(e) => return Err(e),
                }
            } else {
                copy_file(fs, &src, &dst, None)?;
            }
            crate::crash_point!("checkpoint::after_file");
        }
        copy_file(
            fs,
            &inner.dbname.join(&set.manifest),
            &tmp.join(&set.manifest),
            Some(set.manifest_size),
        )?;
        write_current(fs, tmp, &set.manifest)?;
        crate::crash_point!("checkpoint::after_file");
        if let Some(o) = &set.options {
            copy_file(fs, &inner.dbname.join(o), &tmp.join(o), None)?;
            crate::crash_point!("checkpoint::after_file");
        }
        for (n, size) in &set.wals {
            copy_file(fs, &inner.wal_dir.join(n), &tmp.join(n), Some(*size))?;
            crate::crash_point!("checkpoint::after_file");
        }
        fs.sync_dir(tmp)?;
        Ok(set.sequence)
    }
}

/// The files that make an openable copy of a database, as RocksDB's
/// `GetLiveFilesStorageInfo` lists them for checkpoints and backups.
#[derive(Debug)]
pub(crate) struct LiveFileSet {
    /// Table file names (`000012.sst`), all in `table_dir`.
    pub tables: Vec<String>,
    /// The one directory holding every listed table (the first table
    /// path when there are none).
    pub table_dir: std::path::PathBuf,
    /// The MANIFEST's name and the size that covers the listed state.
    pub manifest: String,
    pub manifest_size: u64,
    /// The newest OPTIONS file's name, if any.
    pub options: Option<String>,
    /// WAL names (in the WAL directory) with the size to copy: every WAL
    /// the MANIFEST may need, the last one as long as it was when listed.
    pub wals: Vec<(String, u64)>,
    /// The latest sequence number when listed: a copy holds every write
    /// up to it.
    pub sequence: SequenceNumber,
}

/// Lists the live files of `db`, flushing the memtables first when
/// `flush`. REQUIRES: file deletions are disabled (so every listed file
/// still exists when copied).
pub(crate) fn live_file_set(db: &DB, flush: bool) -> Result<LiveFileSet> {
    let inner = &db.inner;
    let fs = &*inner.fs;
    // Buffered WAL records (manual_wal_flush) must reach the files that
    // are copied.
    db.flush_wal(false)?;
    // WALs from the oldest one live before the listing on: the MANIFEST
    // copied may need any of them (a flush between the two moments only
    // makes some unnecessary; replay skips what the MANIFEST says is
    // flushed).
    if flush {
        db.live_files(true)?;
    }
    let oldest_wal = inner.lock_state().files.oldest_alive_wal();
    let (names, manifest_size, dirs) = db.live_files_in(false)?;
    let sequence = db.latest_sequence_number();
    // As RocksDB: a copy is one directory, so tables in several table
    // paths cannot be copied (RocksDB's text).
    if dirs.len() > 1 {
        return Err(Error::NotSupported(format!(
            "db_paths / cf_paths not supported for Checkpoint nor BackupEngine (live tables \
             are in {})",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let table_dir = dirs
        .into_iter()
        .next()
        .unwrap_or_else(|| inner.table_paths.dir(0).to_path_buf());
    let mut set = LiveFileSet {
        tables: Vec::new(),
        table_dir,
        manifest: String::new(),
        manifest_size,
        options: None,
        wals: Vec::new(),
        sequence,
    };
    for name in &names {
        let name = name.trim_start_matches('/');
        match parse_file_name(name) {
            Some((_, FileType::Descriptor)) => set.manifest = name.to_string(),
            Some((_, FileType::Options)) => set.options = Some(name.to_string()),
            Some((_, FileType::Table)) => set.tables.push(name.to_string()),
            // CURRENT is written fresh.
            _ => {}
        }
    }
    // Every WAL file still there from `oldest_wal` on; the newest may
    // still grow, so it is copied up to its size now.
    let mut wals: Vec<(u64, String)> = fs
        .children(&inner.wal_dir)?
        .into_iter()
        .filter_map(|n| match parse_file_name(&n) {
            Some((num, FileType::Wal)) => Some((num, n)),
            _ => None,
        })
        .filter(|(num, _)| oldest_wal.is_some_and(|o| *num >= o))
        .collect();
    wals.sort_unstable();
    for (num, n) in wals {
        let size = inner.wal_size(num, &inner.wal_dir.join(&n))?;
        set.wals.push((n, size));
    }
    Ok(set)
}

/// Writes `CURRENT` naming `manifest` into `dir`, synced.
fn write_current(fs: &dyn FileSystem, dir: &Path, manifest: &str) -> Result<()> {
    fs.write_file(
        &dir.join("CURRENT"),
        format!("{manifest}\n").as_bytes(),
        true,
    )
}

/// Removes a staging directory a failed or interrupted attempt left.
fn remove_staging_dir(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    if !fs.file_exists(dir) {
        return Ok(());
    }
    for name in fs.children(dir)? {
        fs.delete_file(&dir.join(&name))?;
    }
    fs.delete_dir(dir)
}
