//! The WAL archive (RocksDB's `WalManager`): with `wal_ttl_seconds` or
//! `wal_size_limit_mb` set, a WAL no longer needed for recovery moves to
//! `<wal_dir>/archive/` instead of being deleted, so that
//! `DB::get_updates_since` can still read it; archived WALs older than the
//! TTL, or beyond the size limit (oldest first), are deleted by a purge
//! that runs at most every `min(ttl / 2, 600 s)` (every 600 s with a size
//! limit), as RocksDB's `PurgeObsoleteWALFiles`.
//!
//! Invariants: only a WAL that recovery no longer needs is archived (the
//! caller decides that); a WAL is listed once, alive or archived (one
//! that moved between the two listings counts as archived); the purge
//! never touches the WAL directory itself.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use super::DbInner;
use super::files::{WalFile, WalFileType};
use crate::error::{Error, Result};
use crate::filename::log_file_name;
use crate::format::SequenceNumber;
use crate::fs::unix_seconds_now;
use crate::version::{FileType, parse_file_name};

/// RocksDB's `kDefaultIntervalToDeleteObsoleteWAL`, seconds.
const PURGE_INTERVAL_SECONDS: u64 = 600;

/// Name of the archive directory inside the WAL directory.
pub const ARCHIVE_DIR_NAME: &str = "archive";

impl DbInner {
    /// Whether obsolete WALs are archived rather than deleted.
    pub(crate) fn archives_wals(&self) -> bool {
        self.options.wal_ttl_seconds > 0 || self.options.wal_size_limit_mb > 0
    }

    pub(crate) fn wal_archive_dir(&self) -> PathBuf {
        self.wal_dir.join(ARCHIVE_DIR_NAME)
    }

    /// Archives (or deletes) WAL `number`, which recovery no longer needs.
    /// Failures are ignored, as for every obsolete file: a WAL left behind
    /// is retired again at the next open.
    pub(crate) fn retire_wal(&self, number: u64) {
        let name = log_file_name(number);
        let path = self.wal_dir.join(&name);
        if self.archives_wals() {
            let dir = self.wal_archive_dir();
            if self.fs.create_dir_all(&dir).is_ok()
                && self.fs.rename_file(&path, &dir.join(&name)).is_ok()
            {
                return;
            }
        }
        let _ = self.fs.delete_file(&path);
    }

    /// Deletes archived WALs past the TTL or the size limit; at most once
    /// per interval unless `force`.
    pub(crate) fn purge_archived_wals(&self, force: bool) {
        let ttl = self.options.wal_ttl_seconds;
        let limit_mb = self.options.wal_size_limit_mb;
        if ttl == 0 && limit_mb == 0 {
            return;
        }
        let now = unix_seconds_now();
        let interval = if ttl > 0 && limit_mb == 0 {
            (ttl / 2).min(PURGE_INTERVAL_SECONDS)
        } else {
            PURGE_INTERVAL_SECONDS
        };
        let last = self.wal_purge_last_run.load(Ordering::Acquire);
        if !force && last.saturating_add(interval) > now {
            return;
        }
        self.wal_purge_last_run.store(now, Ordering::Release);
        let dir = self.wal_archive_dir();
        let Ok(children) = self.fs.children(&dir) else {
            return;
        };
        // Sizes of the archived WALs the TTL kept, by number.
        let mut kept: Vec<(u64, u64)> = Vec::new();
        for name in children {
            let Some((number, FileType::Wal)) = parse_file_name(&name) else {
                continue;
            };
            let path = dir.join(&name);
            if ttl > 0 {
                let Ok(modified) = self.fs.file_modification_time(&path) else {
                    continue;
                };
                if now.saturating_sub(modified) > ttl {
                    if self.fs.delete_file(&path).is_ok() {
                        self.info_log
                            .log(&format!("archived WAL {name} deleted: older than the TTL"));
                    }
                    continue;
                }
            }
            if limit_mb > 0 {
                match self.fs.file_size(&path) {
                    Ok(0) => {
                        let _ = self.fs.delete_file(&path);
                    }
                    Ok(size) => kept.push((number, size)),
                    Err(_) => return,
                }
            }
        }
        if limit_mb == 0 || kept.is_empty() {
            return;
        }
        // As RocksDB: keep as many files as the limit holds at the size of
        // the largest one.
        let largest = kept.iter().map(|&(_, s)| s).max().unwrap_or(1).max(1);
        let keep =
            usize::try_from(limit_mb.saturating_mul(1 << 20) / largest).unwrap_or(usize::MAX);
        if kept.len() <= keep {
            return;
        }
        kept.sort_unstable();
        for &(number, _) in &kept[..kept.len() - keep] {
            let name = log_file_name(number);
            if self.fs.delete_file(&dir.join(&name)).is_ok() {
                self.info_log
                    .log(&format!("archived WAL {name} deleted: over the size limit"));
            }
        }
    }

    /// The alive WALs (`alive`, oldest first) and the archived ones, sorted
    /// by number, each with its first sequence number (RocksDB's
    /// `GetSortedWalFiles`).
    pub(crate) fn list_wal_files(&self, alive: &[u64]) -> Result<Vec<WalFile>> {
        let mut out = Vec::new();
        if self.archives_wals() || self.fs.file_exists(&self.wal_archive_dir()) {
            let dir = self.wal_archive_dir();
            let children = match self.fs.children(&dir) {
                Ok(c) => c,
                Err(Error::NotFound(_)) => Vec::new(),
                Err(e) => return Err(e),
            };
            for name in children {
                if let Some((number, FileType::Wal)) = parse_file_name(&name)
                    && let Some(f) = self.wal_file(number, WalFileType::Archived)?
                {
                    out.push(f);
                }
            }
        }
        for &number in alive {
            if out.iter().any(|f| f.log_number == number) {
                continue;
            }
            // Moved to the archive since the list was taken?
            if let Some(f) = self.wal_file(number, WalFileType::Alive)? {
                out.push(f);
            } else if let Some(f) = self.wal_file(number, WalFileType::Archived)? {
                out.push(f);
            }
        }
        out.sort_by_key(|f| f.log_number);
        Ok(out)
    }

    /// Where WAL `number` of `kind` lives.
    pub(crate) fn wal_path(&self, number: u64, kind: WalFileType) -> PathBuf {
        match kind {
            WalFileType::Alive => self.wal_dir.join(log_file_name(number)),
            WalFileType::Archived => self.wal_archive_dir().join(log_file_name(number)),
        }
    }

    /// The size of WAL `number` at `path`: the records written, for the
    /// current WAL (a mapped one is longer on disk while it is written).
    pub(crate) fn wal_size(&self, number: u64, path: &std::path::Path) -> Result<u64> {
        {
            let wal = self
                .wal
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(w) = wal.current.as_ref().filter(|w| w.log_number() == number) {
                return Ok(w.file_size());
            }
        }
        self.fs.file_size(path)
    }

    /// WAL `number` of `kind` with its size and first sequence number;
    /// `None` if it is not there.
    fn wal_file(&self, number: u64, kind: WalFileType) -> Result<Option<WalFile>> {
        let path = self.wal_path(number, kind);
        let size = match self.wal_size(number, &path) {
            Ok(size) => size,
            Err(Error::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let start_sequence = if size > 0 {
            self.first_sequence(&path, number).unwrap_or(0)
        } else {
            0
        };
        let name = log_file_name(number);
        Ok(Some(WalFile {
            log_number: number,
            path_name: match kind {
                WalFileType::Alive => format!("/{name}"),
                WalFileType::Archived => format!("/{ARCHIVE_DIR_NAME}/{name}"),
            },
            size,
            start_sequence,
            file_type: kind,
        }))
    }

    /// The sequence number of the first record of the WAL at `path`.
    fn first_sequence(&self, path: &std::path::Path, number: u64) -> Option<SequenceNumber> {
        let file = self.fs.new_sequential_file(path).ok()?;
        let mut r = crate::wal::LogReader::new(file, number);
        let rec = r.read_record().ok()??;
        crate::format::WriteBatch::from_bytes(rec)
            .ok()
            .map(|b| b.sequence())
    }
}
