//! Opening an existing DB's version state: CURRENT -> MANIFEST -> replay of
//! every `VersionEdit` (RocksDB 7.8.3 `VersionSet::Recover` with
//! `VersionEditHandler`), and [`ManifestReader`] for tools that dump a
//! MANIFEST.
//!
//! Rules matched from RocksDB 7.8.3 (the MANIFEST is read with checksums
//! and `kTolerateCorruptedTailRecords`, and any reported corruption fails
//! the open):
//! * A torn tail (the file ends inside a record or a header, or in
//!   zero-filled space) is the end of the MANIFEST: the edits before it are
//!   recovered. Anything else (checksum mismatch, bad length or type, a
//!   record that does not decode) is `Error::Corruption` naming the MANIFEST
//!   and the offset of the damaged record. We are stricter in one case:
//!   readable data *after* a torn or zero-filled region is corruption here
//!   (RocksDB would skip the damaged block and go on, which can leave a
//!   hole).
//! * Atomic groups are applied only when complete; an incomplete group at
//!   the end is dropped; a group of the wrong size, or mixed with a normal
//!   edit, is "corrupted atomic group".
//! * After replay kLogNumber, kNextFileNumber and kLastSequence must each
//!   have appeared, else "no log_file_number, next_file_number,
//!   last_sequence entry in MANIFEST" (listing the missing ones).
//! * `next_file_number` becomes the MANIFEST's value + 1 (RocksDB reserves
//!   one number), raised past the log numbers, the MANIFEST number and
//!   every live file.
//! * A read-write recovery then writes a new MANIFEST (snapshot plus one
//!   edit with the counters) and points CURRENT at it, so nothing is ever
//!   appended after a torn tail. Nothing is deleted.

use std::collections::BTreeMap;
use std::path::Path;

use super::apply::{EditApplier, EditParams};
use super::edit::VersionEdit;
use super::version_set::{
    ColumnFamilyData, DEFAULT_COLUMN_FAMILY_NAME, VersionSet, VersionSetOptions,
};
use crate::error::{Error, Result};
use crate::filename::{FileType, parse_file_name, read_current_file};
use crate::fs::{FileSystem, FileSystemRef};
use crate::util::comparator::ComparatorRef;
use crate::wal::{LogReader, ReadError};

/// Reads the edits of a MANIFEST one by one, with recovery's rules for
/// damage (see the module comment).
pub struct ManifestReader {
    reader: LogReader,
    name: String,
    done: bool,
}

impl std::fmt::Debug for ManifestReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManifestReader")
            .field("name", &self.name)
            .field("reader", &self.reader)
            .finish()
    }
}

impl ManifestReader {
    /// Opens the MANIFEST at `path`.
    pub fn open(fs: &dyn FileSystem, path: &Path) -> Result<ManifestReader> {
        let file = fs.new_sequential_file(path)?;
        Ok(ManifestReader {
            reader: LogReader::new(file, 0),
            name: path.display().to_string(),
            done: false,
        })
    }

    /// The file name used in errors.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// File offset just past the last record read.
    pub fn end_offset(&self) -> u64 {
        self.reader.end_offset()
    }

    /// The next edit and the file offset of its record, or `None` at the end
    /// (a clean end or a torn tail).
    pub fn next_edit(&mut self) -> Result<Option<(u64, VersionEdit)>> {
        if self.done {
            return Ok(None);
        }
        match self.reader.read_record() {
            Ok(Some(rec)) => {
                let offset = self.reader.last_record_offset();
                let edit = VersionEdit::decode(&rec).map_err(|e| e.relocate(&self.name, offset))?;
                Ok(Some((offset, edit)))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(ReadError::TruncatedTail { offset, reason }) => {
                self.done = true;
                self.check_nothing_after(offset, &reason)?;
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                Err(e.into_error(&self.name))
            }
        }
    }

    /// After a torn region at `torn_at` only more torn or zero-filled space
    /// may follow.
    fn check_nothing_after(&mut self, torn_at: u64, reason: &str) -> Result<()> {
        loop {
            match self.reader.read_record() {
                Ok(None) => return Ok(()),
                Err(ReadError::TruncatedTail { .. }) => {}
                Err(ReadError::Other(e)) => return Err(e),
                Ok(Some(_)) | Err(ReadError::Corruption { .. }) => {
                    return Err(Error::corruption(
                        &self.name,
                        torn_at,
                        format!("{reason}, followed by more data"),
                    ));
                }
            }
        }
    }
}

impl VersionSet {
    /// Opens the version state of the DB in `dbname`, every column family
    /// ordered by `comparator`; see the module comment. `read_only` changes
    /// nothing on disk and refuses later edits.
    pub fn recover(
        fs: FileSystemRef,
        dbname: &Path,
        comparator: ComparatorRef,
        read_only: bool,
    ) -> Result<VersionSet> {
        Self::recover_with(fs, dbname, VersionSetOptions::new(comparator), read_only)
    }

    /// [`VersionSet::recover`] with all options.
    pub fn recover_with(
        fs: FileSystemRef,
        dbname: &Path,
        opts: VersionSetOptions,
        read_only: bool,
    ) -> Result<VersionSet> {
        let name = read_current_file(&*fs, dbname)?;
        let Some((manifest_number, FileType::Descriptor)) = parse_file_name(&name) else {
            return Err(Error::corruption(
                dbname.join("CURRENT").display(),
                0,
                "CURRENT file corrupted",
            ));
        };
        let path = dbname.join(&name);
        let mut reader = match ManifestReader::open(&*fs, &path) {
            Err(e) if e.is_not_found() => {
                return Err(Error::corruption(
                    dbname.join("CURRENT").display(),
                    0,
                    format!("CURRENT names {name}, which does not exist"),
                ));
            }
            r => r?,
        };
        let shown = reader.name().to_string();

        let mut cfs = BTreeMap::new();
        cfs.insert(0, EditApplier::new_cf(&opts, 0, DEFAULT_COLUMN_FAMILY_NAME));
        let mut applier = EditApplier::new(&opts, cfs, EditParams::default());
        replay_edits(&mut reader, &mut applier, |_| {})?;
        // An incomplete group at the end was never committed: dropped.
        let end = reader.end_offset();
        let p = applier.params.clone();
        let mut missing = Vec::new();
        if !p.has_log_number {
            missing.push("log_file_number");
        }
        if p.next_file_number.is_none() {
            missing.push("next_file_number");
        }
        if p.last_sequence.is_none() {
            missing.push("last_sequence");
        }
        if !missing.is_empty() {
            return Err(Error::corruption(
                &shown,
                end,
                format!("no {} entry in MANIFEST", missing.join(", ")),
            ));
        }
        if let Some(n) = p.live_blob_file() {
            // Values in blob files (RocksDB's integrated BlobDB): valid, and
            // not readable here yet.
            return Err(Error::NotSupported(format!(
                "{}: BlobDB: the MANIFEST {shown} lists blob file {n:06}.blob; Strata does not \
                 read blob files yet",
                dbname.display()
            )));
        }
        let mut version_number = 0;
        let finished = applier
            .finish(&mut version_number)
            .map_err(|e| e.relocate(&shown, end))?;

        let mut next_file = p.next_file_number.unwrap_or(0).saturating_add(1);
        let mut used = vec![manifest_number, p.prev_log_number.unwrap_or(0)];
        for cf in finished.cfs.values() {
            used.push(cf.log_number);
            used.extend(cf.base.all_files().map(|(_, f)| f.number));
        }
        for n in used {
            next_file = next_file.max(n.saturating_add(1));
        }
        // Files the MANIFEST does not know can still hold numbers past its
        // next_file_number: a WAL started after the last edit (a memtable
        // switch writes no edit), or a table of a job a crash cut short.
        // New files must not take their numbers (RocksDB marks the WALs it
        // finds as used): a new WAL named like an old one made a crash
        // right after recovery replay the old one's data a second time.
        // (A read-only open creates nothing: it reports the MANIFEST's
        // number, as RocksDB's does.)
        let dirs: Vec<&Path> = std::iter::once(dbname)
            .chain(opts.wal_dir.as_deref().filter(|w| *w != dbname))
            .filter(|_| !read_only)
            .collect();
        for dir in dirs {
            for child in fs.children(dir).unwrap_or_default() {
                // (An info log's number is a timestamp, not a file number.)
                if let Some((n, t)) = parse_file_name(&child)
                    && t != FileType::InfoLog
                {
                    next_file = next_file.max(n.saturating_add(1));
                }
            }
        }
        let cfs = finished
            .cfs
            .into_iter()
            .map(|(id, s)| (id, ColumnFamilyData::from_state(s)))
            .collect();
        let mut vs = VersionSet::from_parts(fs, dbname, opts, cfs, &p, next_file);
        vs.manifest_file_number = manifest_number;
        vs.version_number = version_number;
        if read_only {
            vs.read_only = true;
        } else {
            // A new MANIFEST: never append after a possibly torn tail.
            vs.log_and_apply(0, VersionEdit::new())?;
        }
        Ok(vs)
    }
}

/// Applies every edit of `reader` to `applier`, atomic groups whole (an
/// incomplete group at the end was never committed: dropped), calling
/// `on_edit` on each edit read (RocksDB's `VersionEditHandler::Iterate`).
pub(crate) fn replay_edits(
    reader: &mut ManifestReader,
    applier: &mut EditApplier<'_>,
    mut on_edit: impl FnMut(&VersionEdit),
) -> Result<()> {
    let shown = reader.name().to_string();
    let mut group: Vec<(u64, VersionEdit)> = Vec::new();
    let mut group_size = 0u64;
    while let Some((offset, edit)) = reader.next_edit()? {
        on_edit(&edit);
        let bad_group = || Error::corruption(&shown, offset, "corrupted atomic group");
        let Some(remaining) = edit.remaining_entries else {
            if !group.is_empty() {
                return Err(bad_group());
            }
            applier
                .apply(&edit)
                .map_err(|e| e.relocate(&shown, offset))?;
            continue;
        };
        if group.is_empty() {
            group_size = u64::from(remaining) + 1;
        }
        group.push((offset, edit));
        if group.len() as u64 + u64::from(remaining) != group_size {
            return Err(bad_group());
        }
        if group.len() as u64 == group_size {
            for (off, e) in group.drain(..) {
                applier.apply(&e).map_err(|err| err.relocate(&shown, off))?;
            }
        }
    }
    Ok(())
}
