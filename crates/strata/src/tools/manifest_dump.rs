//! `ldb manifest_dump`: the MANIFEST `CURRENT` names (or another) as
//! RocksDB's ldb prints it (see [`crate::version::dump_manifest`]).

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::fs::{FileSystem, default_fs};
use crate::version::{dump_manifest, read_current_file};

/// Dumps the MANIFEST at `manifest` or, when `None`, the one `CURRENT` in
/// `db_path` names, as `ldb manifest_dump [--verbose] [--hex]` prints it
/// (bytes: user keys as they are). Damage is reported as an error naming
/// file and offset.
pub fn manifest_dump(
    db_path: &str,
    manifest: Option<&str>,
    verbose: bool,
    hex: bool,
) -> Result<Vec<u8>> {
    let fs = default_fs();
    manifest_dump_with(
        fs.as_ref(),
        Path::new(db_path),
        manifest.map(Path::new),
        verbose,
        hex,
    )
}

/// [`manifest_dump`] on any file system.
pub fn manifest_dump_with(
    fs: &dyn FileSystem,
    db_path: &Path,
    manifest: Option<&Path>,
    verbose: bool,
    hex: bool,
) -> Result<Vec<u8>> {
    let path: PathBuf = match manifest {
        Some(p) => p.to_path_buf(),
        // read_current_file accepts only a MANIFEST-NNNNNN name.
        None => db_path.join(read_current_file(fs, db_path)?),
    };
    dump_manifest(fs, &path, verbose, hex)
}
