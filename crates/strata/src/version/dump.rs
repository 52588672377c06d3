//! `ldb manifest_dump` (RocksDB 7.8.3's `VersionSet::DumpManifest` with
//! its `DumpManifestHandler`): with `verbose`, every edit's
//! `DebugString`; then, for each column family, its log number,
//! comparator and current version over 64 levels (ldb's dump options),
//! and the DB-wide numbers.
//!
//! As ldb, the dump compares with the bytewise comparator: a column
//! family whose MANIFEST names another prints `comparator: <name>, but
//! the comparator object is not available.` (its files are ordered
//! bytewise in the dump).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::apply::{EditApplier, EditParams};
use super::recovery::{ManifestReader, replay_edits};
use super::version_set::VersionSetOptions;
use crate::error::Result;
use crate::fs::FileSystem;
use crate::util::comparator::{Comparator, bytewise, bytewise_compare};

/// Levels ldb's `DumpManifestFile` opens the MANIFEST with.
const DUMP_NUM_LEVELS: usize = 64;

/// Bytewise order under a comparator name the dump cannot load.
struct Unavailable(String);

impl Comparator for Unavailable {
    fn name(&self) -> &str {
        &self.0
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        bytewise_compare(a, b)
    }
}

/// The output of `ldb manifest_dump [--verbose] [--hex]` for the
/// MANIFEST at `path` (bytes: user keys print raw, as RocksDB's do).
/// Damage is an error naming the file and offset.
pub fn dump_manifest(
    fs: &dyn FileSystem,
    path: &Path,
    verbose: bool,
    hex: bool,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    // First pass: the comparator each column family's edits name.
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut cf_names: HashMap<u32, String> = HashMap::new();
    cf_names.insert(
        0,
        super::version_set::DEFAULT_COLUMN_FAMILY_NAME.to_string(),
    );
    let mut reader = ManifestReader::open(fs, path)?;
    while let Some((_, edit)) = reader.next_edit()? {
        if let Some(n) = &edit.column_family_add {
            cf_names.insert(edit.column_family, n.clone());
        }
        if let Some(c) = &edit.comparator {
            names.insert(edit.column_family, c.clone());
        }
    }
    let base = bytewise();
    let mut opts = VersionSetOptions::new(base.clone());
    opts.num_levels = DUMP_NUM_LEVELS;
    let mut unavailable: HashMap<String, String> = HashMap::new();
    for (id, c) in &names {
        if c != base.name()
            && let Some(cf) = cf_names.get(id)
        {
            opts.cf_comparators
                .insert(cf.clone(), Arc::new(Unavailable(c.clone())));
            unavailable.insert(cf.clone(), c.clone());
        }
    }
    let mut reader = ManifestReader::open(fs, path)?;
    let mut applier = EditApplier::new(
        &opts,
        [(
            0,
            EditApplier::new_cf(&opts, 0, super::version_set::DEFAULT_COLUMN_FAMILY_NAME),
        )]
        .into_iter()
        .collect(),
        EditParams::default(),
    );
    replay_edits(&mut reader, &mut applier, |edit| {
        if verbose {
            out.extend_from_slice(&edit.debug_bytes(hex));
        }
    })?;
    let mut version_number = 0;
    let end = reader.end_offset();
    let finished = applier
        .finish(&mut version_number)
        .map_err(|e| e.relocate(reader.name(), end))?;
    // RocksDB numbers a version for each live column family as recovery
    // creates it, then the recovered ones in the same order.
    let live = finished.cfs.len() as u64;
    for (i, cf) in finished.cfs.values().enumerate() {
        let _ = writeln!(
            out,
            "--------------- Column family \"{}\"  (ID {}) --------------",
            cf.name, cf.id
        );
        let _ = writeln!(out, "log number: {}", cf.log_number);
        match unavailable.get(&cf.name) {
            Some(c) => {
                let _ = writeln!(
                    out,
                    "comparator: <{c}>, but the comparator object is not available."
                );
            }
            None => {
                let _ = writeln!(out, "comparator: {}", cf.comparator_name);
            }
        }
        out.extend_from_slice(&cf.base.debug_bytes_numbered(hex, live + i as u64));
    }
    let p = &finished.params;
    let _ = writeln!(
        out,
        "next_file_number {} last_sequence {}  prev_log_number {} max_column_family {} \
         min_log_number_to_keep {}",
        p.next_file_number.unwrap_or(0) + 1,
        p.last_sequence.unwrap_or(0),
        p.prev_log_number.unwrap_or(0),
        p.max_column_family,
        p.min_log_number_to_keep
    );
    Ok(out)
}
