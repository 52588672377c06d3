//! Secondary instances (RocksDB's `DB::OpenAsSecondary` and
//! `TryCatchUpWithPrimary`): a read-only view of a database another
//! process (the primary) keeps writing, refreshed on request.
//!
//! A view is a read-only open of the primary's directory (its MANIFEST,
//! tables and WALs, nothing written there, no lock taken) that opens every
//! table at once and keeps it open (RocksDB requires `max_open_files = -1`
//! of a secondary for the same reason): when the primary's compactions
//! delete files the view still reads, as an open file outlives its name.
//! Catching up opens a fresh view of what the primary holds now (its
//! WALs included) and makes it current; readers of the previous view
//! (iterators, snapshots) keep it until they are done. An open during
//! which the primary changed its MANIFEST (a flush retires WALs the open
//! may have missed) or deleted a file the open needed is retried.
//!
//! The secondary directory is created, as RocksDB keeps the secondary's
//! LOG there; Strata's views write nothing.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{ColumnFamilyDescriptor, DB};
use crate::error::Result;
use crate::fs::default_fs;
use crate::options::Options;
use crate::util::sync::lock;

/// Attempts at opening a view while the primary changes its tree.
const OPEN_ATTEMPTS: usize = 100;

/// See the module documentation.
pub struct SecondaryDB {
    opts: Options,
    primary: PathBuf,
    secondary: PathBuf,
    descs: Vec<ColumnFamilyDescriptor>,
    current: Mutex<Arc<DB>>,
}

impl std::fmt::Debug for SecondaryDB {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecondaryDB")
            .field("primary", &self.primary)
            .field("secondary", &self.secondary)
            .finish()
    }
}

impl SecondaryDB {
    /// Opens a secondary of the database at `primary` (its default column
    /// family, and the others with default options), keeping its own files
    /// in `secondary`.
    pub fn open(
        opts: Options,
        primary: impl AsRef<Path>,
        secondary: impl AsRef<Path>,
    ) -> Result<SecondaryDB> {
        let cf = opts.cf.clone();
        Self::open_cf(
            opts,
            primary,
            secondary,
            vec![ColumnFamilyDescriptor::new(
                super::DEFAULT_COLUMN_FAMILY_NAME,
                cf,
            )],
        )
    }

    /// [`SecondaryDB::open`] with options for the listed column families.
    pub fn open_cf(
        mut opts: Options,
        primary: impl AsRef<Path>,
        secondary: impl AsRef<Path>,
        descs: Vec<ColumnFamilyDescriptor>,
    ) -> Result<SecondaryDB> {
        let fs = opts.fs.clone().unwrap_or_else(default_fs);
        fs.create_dir_all(secondary.as_ref())?;
        // Every table stays open (RocksDB: max_open_files = -1).
        opts.max_open_files = i32::MAX as usize;
        let view = open_view(&opts, primary.as_ref(), &descs)?;
        Ok(SecondaryDB {
            opts,
            primary: primary.as_ref().to_path_buf(),
            secondary: secondary.as_ref().to_path_buf(),
            descs,
            current: Mutex::new(Arc::new(view)),
        })
    }

    /// The current view: a read-only database (writes fail).
    pub fn db(&self) -> Arc<DB> {
        Arc::clone(&lock(&self.current))
    }

    /// Makes what the primary holds now the current view.
    pub fn try_catch_up_with_primary(&self) -> Result<()> {
        let view = open_view(&self.opts, &self.primary, &self.descs)?;
        *lock(&self.current) = Arc::new(view);
        Ok(())
    }

    /// Where the secondary keeps its own files.
    pub fn secondary_path(&self) -> &Path {
        &self.secondary
    }
}

/// CURRENT's MANIFEST and its size: every change of the primary's tree
/// (a flush, a compaction, a WAL retired) appends to the MANIFEST or
/// rolls it over first.
fn manifest_state(opts: &Options, primary: &Path) -> Result<(String, u64)> {
    let fs = opts.fs.clone().unwrap_or_else(default_fs);
    let current = crate::version::read_current_file(&*fs, primary)?;
    let size = fs.file_size(&primary.join(&current))?;
    Ok((current, size))
}

/// A read-only open of `primary` with every table open. The open reads
/// the MANIFEST, then the WALs it does not cover: a flush of the primary
/// in between would retire a WAL whose data the MANIFEST read did not
/// name yet, so a view is kept only if the MANIFEST did not change while
/// it was opened (retried otherwise, and when the primary deleted a file
/// the open was about to read).
fn open_view(opts: &Options, primary: &Path, descs: &[ColumnFamilyDescriptor]) -> Result<DB> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let before = manifest_state(opts, primary);
        let r = DB::open_cf_read_only(opts.clone(), primary, descs.to_vec())
            .and_then(|db| pin_tables(&db).map(|()| db));
        let stable = before.is_ok() && manifest_state(opts, primary).ok() == before.ok();
        match r {
            Ok(db) if stable => return Ok(db),
            Err(e) if !e.is_not_found() && stable => return Err(e),
            _ if attempt >= OPEN_ATTEMPTS => {
                return Err(crate::error::Error::TryAgain(format!(
                    "{}: the primary changed its MANIFEST during each of {OPEN_ATTEMPTS} \
                     attempts to open a view of it",
                    primary.display()
                )));
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(attempt.min(20) as u64)),
        }
    }
}

/// Opens every table of every column family through the table cache
/// (which `max_open_files` keeps from closing them).
fn pin_tables(db: &DB) -> Result<()> {
    let inner = &db.inner;
    let ids: Vec<u32> = {
        let st = inner.lock_state();
        st.cfs
            .values()
            .filter(|c| !c.dropped)
            .map(|c| c.id)
            .collect()
    };
    for id in ids {
        let sv = inner.super_version(id)?;
        for level in 0..sv.version.num_levels() {
            for f in sv.version.files(level) {
                inner.table_cache.get(f, &sv.table_options, level == 0)?;
            }
        }
    }
    Ok(())
}
