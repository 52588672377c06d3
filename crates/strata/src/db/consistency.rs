//! Checking that the files the MANIFEST names are there, with the sizes it
//! recorded (RocksDB's `DBImpl::CheckConsistency`), at open and for
//! `verify_checksums`.

use crate::error::{Error, Result};
use crate::filename::TablePaths;
use crate::fs::FileSystem;
use crate::version::version_set::VersionSet;

/// Every table the MANIFEST names is in one of the table paths the DB was
/// opened with (run at every open: reads index the path list by it).
pub(super) fn check_table_paths(paths: &TablePaths, versions: &VersionSet) -> Result<()> {
    for (id, _) in versions.column_families() {
        if let Some(v) = versions.current(id) {
            for (_, f) in v.all_files() {
                paths.check(f.path_id, f.number)?;
            }
        }
    }
    Ok(())
}

/// RocksDB's `DBImpl::CheckConsistency`, run at open under
/// `paranoid_checks`: every table file the MANIFEST names exists with the
/// size it recorded. A missing or cut table is reported at open, naming the
/// file, not at the first read that reaches it.
pub(super) fn check_consistency(
    fs: &dyn FileSystem,
    paths: &TablePaths,
    versions: &VersionSet,
) -> Result<()> {
    let mut first: Option<String> = None;
    let mut problems = Vec::new();
    for (id, _) in versions.column_families() {
        let Some(v) = versions.current(id) else {
            continue;
        };
        for (_, f) in v.all_files() {
            let (file, msg) = match check_table_size(fs, paths, f) {
                Ok(_) => continue,
                Err(Error::Corruption { file, msg, .. }) => (file, msg),
                Err(e) => {
                    let name = crate::filename::table_file_name(f.number);
                    (
                        paths.table_file(f.path_id, f.number).display().to_string(),
                        format!("Can't access {name}: {e}"),
                    )
                }
            };
            first.get_or_insert(file);
            problems.push(msg);
        }
    }
    match first {
        None => Ok(()),
        Some(file) => Err(Error::corruption(file, 0, problems.join("; "))),
    }
}

/// The size of `f`'s table, which must be the size the MANIFEST recorded
/// (else a Corruption naming it); file-system errors pass through. Shared
/// by the open-time check and `verify_checksums`.
pub(super) fn check_table_size(
    fs: &dyn FileSystem,
    paths: &TablePaths,
    f: &crate::version::FileMetaData,
) -> Result<u64> {
    let name = crate::filename::table_file_name(f.number);
    let path = paths.table_file(f.path_id, f.number);
    let size = fs.file_size(&path)?;
    if size == f.file_size {
        return Ok(size);
    }
    Err(Error::corruption(
        path.display(),
        0,
        format!(
            "Sst file size mismatch: {name}. Size recorded in manifest {}, actual size {size}",
            f.file_size
        ),
    ))
}
