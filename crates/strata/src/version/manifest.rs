//! Writing the MANIFEST: stamping edits with the counters, appending them,
//! and starting a new MANIFEST (a snapshot of the state, then the edits)
//! that CURRENT is switched to (RocksDB's `ProcessManifestWrites`,
//! `LogAndApplyHelper` and `WriteCurrentStateToManifest`).
//!
//! Invariants:
//! * Order of a switch: new MANIFEST written, synced, its directory synced;
//!   only then CURRENT replaced (`set_current_file`). A failure before
//!   CURRENT is touched deletes the new file; a failure after leaves it
//!   (CURRENT may name it).
//! * A snapshot replays to exactly the in-memory state it was taken from:
//!   per column family one edit with name and comparator, one with files,
//!   compaction cursors, log number and last sequence, plus (default family)
//!   `min_log_number_to_keep`.

use std::path::Path;

use super::apply::EditParams;
use super::edit::VersionEdit;
use super::version_set::VersionSet;
use crate::error::{Error, Result};
use crate::filename::{descriptor_file_name, set_current_file};
use crate::wal::LogWriter;

impl VersionSet {
    /// RocksDB's `LogAndApplyHelper` for each edit, plus group markers.
    pub(crate) fn fill_counters(&self, edits: &mut [VersionEdit], roll: bool, params: &EditParams) {
        let n = edits.len();
        let next_file = self.next_file_number();
        let mut max_seq = self.last_sequence();
        for (i, e) in edits.iter_mut().enumerate() {
            e.prev_log_number.get_or_insert(self.prev_log_number);
            e.next_file_number = Some(next_file);
            match e.last_sequence {
                Some(s) if s > max_seq => max_seq = s,
                _ => e.last_sequence = Some(max_seq),
            }
            if e.column_family_add.is_some() {
                e.max_column_family = Some(params.max_column_family);
            }
            if n > 1 {
                e.remaining_entries = Some((n - 1 - i) as u32);
            }
        }
        let max_cf = self.max_column_family.max(params.max_column_family);
        if roll && max_cf > 0 {
            if let Some(first) = edits.first_mut() {
                first.max_column_family = Some(max_cf);
            }
        }
    }

    /// Appends `records` to the MANIFEST and syncs it; with `new_manifest`,
    /// writes a new MANIFEST (snapshot, then the records), syncs it and
    /// switches CURRENT to it.
    pub(crate) fn write_records(
        &mut self,
        new_manifest: Option<u64>,
        records: &[Vec<u8>],
    ) -> Result<()> {
        let Some(number) = new_manifest else {
            let Some(m) = self.manifest.as_mut() else {
                return Err(Error::NotSupported("no MANIFEST open".into()));
            };
            for r in records {
                m.add_record(r)?;
            }
            crate::crash_point!("manifest::after_append");
            return m.sync();
        };
        let mut all = self.snapshot_records();
        all.extend_from_slice(records);
        let writer = write_manifest(&*self.fs, &self.dbname, number, &all)?;
        set_current_file(&*self.fs, &self.dbname, number)?;
        if let Some(mut old) = self.manifest.take() {
            let _ = old.close();
        }
        self.manifest = Some(writer);
        self.manifest_file_number = number;
        Ok(())
    }

    /// The current state as MANIFEST records (RocksDB's
    /// `WriteCurrentStateToManifest`): per column family one edit with its
    /// name and comparator, then one with its files, log number and the
    /// last sequence.
    pub(crate) fn snapshot_records(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if let Some(id) = &self.db_id {
            let e = VersionEdit {
                db_id: Some(id.clone()),
                ..VersionEdit::default()
            };
            out.push(e.encode());
        }
        for cf in self.cfs.values() {
            let mut head = VersionEdit {
                comparator: Some(cf.comparator_name().to_string()),
                column_family: cf.id(),
                ..VersionEdit::default()
            };
            if cf.id() != 0 {
                head.column_family_add = Some(cf.name().to_string());
            }
            out.push(head.encode());
            let mut files = VersionEdit {
                column_family: cf.id(),
                log_number: Some(cf.log_number()),
                last_sequence: Some(self.last_sequence()),
                full_history_ts_low: cf.full_history_ts_low().map(<[u8]>::to_vec),
                ..VersionEdit::default()
            };
            for (level, f) in cf.current().all_files() {
                files.add_file(level as u32, (**f).clone());
            }
            for (level, c) in cf.current().compact_cursors().iter().enumerate() {
                if let Some(k) = c {
                    files.compact_cursors.push((level as u32, k.clone()));
                }
            }
            if cf.id() == 0 && self.min_log_number_to_keep != 0 {
                files.min_log_number_to_keep = Some(self.min_log_number_to_keep);
            }
            out.push(files.encode());
        }
        out
    }
}

/// Writes a new MANIFEST `number` holding `records`, syncs it and then its
/// directory (so its entry is durable before any CURRENT naming it can be:
/// file systems need not persist directory operations in order). The
/// half-written file is removed on failure (CURRENT does not name it yet).
pub(crate) fn write_manifest(
    fs: &dyn crate::fs::FileSystem,
    dbname: &Path,
    number: u64,
    records: &[Vec<u8>],
) -> Result<LogWriter> {
    let path = dbname.join(descriptor_file_name(number));
    let written = (|| {
        let file = fs.new_writable_file(&path)?;
        let mut w = LogWriter::new(file, 0, false);
        for r in records {
            w.add_record(r)?;
        }
        w.sync()?;
        fs.sync_dir(dbname)?;
        crate::crash_point!("manifest::new_after_sync");
        Ok(w)
    })();
    if written.is_err() {
        let _ = fs.delete_file(&path);
    }
    written
}
