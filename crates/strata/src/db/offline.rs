//! Offline MANIFEST edits on a closed database (RocksDB's
//! `OfflineManifestWriter` users): `ldb unsafe_remove_sst_file` and
//! `ldb reduce_levels` (RocksDB's `VersionSet::ReduceNumberOfLevels`).
//!
//! Invariant: each takes the database's LOCK, recovers its versions as
//! an open would (changing nothing), and writes one MANIFEST edit; the
//! table files stay as they are.

use std::path::Path;
use std::sync::Arc;

use super::ColumnFamilyDescriptor;
use crate::error::{Error, Result};
use crate::fs::default_fs;
use crate::options::Options;
use crate::version::{VersionEdit, VersionSet};

/// Levels an offline tool recovers a MANIFEST with (ldb's
/// `ReduceDBLevelsCommand` starts from 1 << 7): more than any database
/// uses, so no file lies beyond them.
const OFFLINE_NUM_LEVELS: usize = 1 << 7;

/// A closed database's versions, recovered (changing nothing) under its
/// LOCK, which is held while this lives.
struct Offline {
    vs: VersionSet,
    fs: crate::fs::FileSystemRef,
    _lock: Box<dyn crate::fs::FileLock>,
}

/// Takes `path`'s LOCK and recovers its versions; `wide` recovers with
/// [`OFFLINE_NUM_LEVELS`] levels.
fn open_offline(
    opts: &Options,
    path: &Path,
    descs: &[ColumnFamilyDescriptor],
    wide: bool,
) -> Result<Offline> {
    let fs = opts.fs.clone().unwrap_or_else(default_fs);
    let lock = fs.lock_file(&path.join("LOCK"))?;
    let mut vopts = super::open::version_set_options(opts, descs);
    if wide {
        vopts.num_levels = OFFLINE_NUM_LEVELS;
        for n in vopts.cf_num_levels.values_mut() {
            *n = OFFLINE_NUM_LEVELS;
        }
    }
    let vs = VersionSet::recover_with(Arc::clone(&fs), path, vopts, false)?;
    Ok(Offline {
        vs,
        fs,
        _lock: lock,
    })
}

/// Removes table `number` from the MANIFEST of the closed database at
/// `path` (`ldb unsafe_remove_sst_file`): its keys are lost, and deeper
/// versions of them may show again. The file itself stays (the next
/// open deletes it as obsolete). For a database whose table is damaged
/// beyond use; never on an open database (the LOCK is taken).
pub fn unsafe_remove_sst_file(
    opts: &Options,
    path: impl AsRef<Path>,
    descs: &[ColumnFamilyDescriptor],
    number: u64,
) -> Result<()> {
    let mut offline = open_offline(opts, path.as_ref(), descs, false)?;
    let vs = &mut offline.vs;
    let found = vs.column_families().into_iter().find_map(|(id, _)| {
        let v = vs.current(id)?;
        let (level, _) = v.all_files().find(|(_, f)| f.number == number)?;
        Some((id, level))
    });
    let Some((id, level)) = found else {
        return Err(Error::NotFound(format!(
            "file {number} is not in any level"
        )));
    };
    let mut edit = VersionEdit::default();
    edit.delete_file(level as u32, number);
    vs.log_and_apply(id, edit)
}

/// The number of levels the default column family of the closed database
/// at `path` uses: one more than its deepest level holding a file (0 when
/// it has none), as ldb's `reduce_levels --print_old_levels` reports.
pub fn num_levels_in_use(
    opts: &Options,
    path: impl AsRef<Path>,
    descs: &[ColumnFamilyDescriptor],
) -> Result<usize> {
    let offline = open_offline(opts, path.as_ref(), descs, true)?;
    let vs = &offline.vs;
    let v = vs
        .current(0)
        .ok_or_else(|| Error::corruption("", 0, "no default column family"))?;
    Ok((0..v.num_levels())
        .rev()
        .find(|&l| v.num_files(l) > 0)
        .map_or(0, |l| l + 1))
}

/// Moves the default column family's files from levels `new_levels - 1`
/// and deeper (they must all be in one level) to level `new_levels - 1`,
/// so the closed database at `path` opens with `num_levels = new_levels`
/// (RocksDB's `VersionSet::ReduceNumberOfLevels`; `ldb reduce_levels`
/// compacts everything into one level first).
pub fn reduce_number_of_levels(
    opts: &Options,
    path: impl AsRef<Path>,
    descs: &[ColumnFamilyDescriptor],
    new_levels: usize,
) -> Result<()> {
    if new_levels <= 1 {
        return Err(Error::InvalidArgument(
            "Number of levels needs to be bigger than 1".into(),
        ));
    }
    let mut offline = open_offline(opts, path.as_ref(), descs, true)?;
    let vs = &mut offline.vs;
    let v = vs
        .current(0)
        .ok_or_else(|| Error::corruption("", 0, "no default column family"))?;
    let used: Vec<(usize, usize)> = (new_levels - 1..v.num_levels())
        .map(|l| (l, v.num_files(l)))
        .filter(|&(_, n)| n > 0)
        .collect();
    if let [(a, na), (b, nb), ..] = used[..] {
        return Err(Error::InvalidArgument(format!(
            "Found at least two levels containing files: [{a}:{na}],[{b}:{nb}].\n"
        )));
    }
    let Some(&(level, _)) = used.first() else {
        return Ok(());
    };
    if level == new_levels - 1 {
        return Ok(());
    }
    let mut edit = VersionEdit::default();
    for f in v.files(level) {
        edit.delete_file(level as u32, f.number);
        edit.add_file((new_levels - 1) as u32, (**f).clone());
    }
    vs.log_and_apply(0, edit)
}

/// `ldb update_manifest --update_temperatures` (RocksDB's
/// `experimental::UpdateManifestForFilesState`): checks that every table
/// the MANIFEST names can be opened, and records a table's temperature
/// where the file system reports one that differs. Strata's file systems
/// report none (every file is at the unknown temperature), so this edits
/// nothing; a missing or unreadable table fails it. Returns the number of
/// tables whose record changed.
pub fn update_manifest_for_files_state(
    opts: &Options,
    path: impl AsRef<Path>,
    descs: &[ColumnFamilyDescriptor],
) -> Result<usize> {
    let offline = open_offline(opts, path.as_ref(), descs, false)?;
    let (vs, fs) = (&offline.vs, &offline.fs);
    let paths = crate::filename::TablePaths::new(path.as_ref(), &opts.db_paths);
    for (id, _) in vs.column_families() {
        let Some(v) = vs.current(id) else { continue };
        for (_, f) in v.all_files() {
            paths.check(f.path_id, f.number)?;
            let table = paths.table_file(f.path_id, f.number);
            fs.new_sequential_file(&table)?;
        }
    }
    Ok(0)
}
