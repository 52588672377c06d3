//! `ldb manifest_dump`: the edits of a MANIFEST as text, in the shape of
//! RocksDB's `--verbose` output (one `VersionEdit {...}` block per record).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::fs::{FileSystem, default_fs};
use crate::version::{ManifestReader, read_current_file};

/// Dumps the MANIFEST at `manifest` or, when `None`, the one `CURRENT` in
/// `db_path` names. Damage is reported as an error naming file and offset.
pub fn manifest_dump(db_path: &str, manifest: Option<&str>) -> Result<String> {
    let fs = default_fs();
    manifest_dump_with(fs.as_ref(), Path::new(db_path), manifest.map(Path::new))
}

/// [`manifest_dump`] on any file system.
pub fn manifest_dump_with(
    fs: &dyn FileSystem,
    db_path: &Path,
    manifest: Option<&Path>,
) -> Result<String> {
    let path: PathBuf = match manifest {
        Some(p) => p.to_path_buf(),
        // read_current_file accepts only a MANIFEST-NNNNNN name.
        None => db_path.join(read_current_file(fs, db_path)?),
    };
    let mut reader = ManifestReader::open(fs, &path)?;
    let mut out = String::new();
    let _ = writeln!(out, "Processing Manifest file {}", path.display());
    let mut edits = 0u64;
    while let Some((_, edit)) = reader.next_edit()? {
        out.push_str(&edit.debug_string(false));
        edits += 1;
    }
    let _ = writeln!(out, "{edits} edits, {} bytes", reader.end_offset());
    Ok(out)
}
