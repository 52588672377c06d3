//! Importing exported tables as a new column family (RocksDB's
//! `CreateColumnFamilyWithImport` and `ImportColumnFamilyJob`): the
//! tables [`crate::utilities::checkpoint::Checkpoint::export_column_family`]
//! wrote (of this database or another) become a column family, each at
//! the level it had, its entries keeping their sequence numbers.
//!
//! Invariants: the comparator the export names is the new column
//! family's; the tables of one level above L0 do not overlap; a table is
//! linked or copied in under a fresh number before the MANIFEST names it,
//! and the database's last sequence number is raised to the largest one
//! imported before any write can follow (so newer writes shadow them).
//! On failure the column family is dropped and the copies deleted.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{ColumnFamilyHandle, DB, LiveFileMetaData};
use crate::error::{Error, Result};
use crate::format::dbformat::parse_internal_key;
use crate::fs::copy_file;
use crate::options::ColumnFamilyOptions;
use crate::table::{Table, TableOptions};
use crate::version::{FileMetaData, VersionEdit, version::sstable_key_compare};

/// What an export returns and an import takes (RocksDB's
/// `ExportImportFilesMetaData`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportImportFilesMetaData {
    /// The exported column family's comparator; the importing one's must
    /// have the same name.
    pub db_comparator_name: String,
    /// The tables, with the directory (`db_path`) and level of each.
    pub files: Vec<LiveFileMetaData>,
}

/// RocksDB's `ImportColumnFamilyOptions`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImportColumnFamilyOptions {
    /// Hard-link the tables in and delete the exported ones after (they
    /// are copied, and left, otherwise).
    pub move_files: bool,
}

/// One table being imported.
struct Imported {
    meta: FileMetaData,
    level: usize,
    source: PathBuf,
    /// Its path in the database once linked or copied.
    inside: Option<PathBuf>,
}

impl DB {
    /// Creates column family `name` holding the tables `metadata` lists
    /// (RocksDB's `CreateColumnFamilyWithImport`).
    pub fn create_column_family_with_import(
        &self,
        options: ColumnFamilyOptions,
        name: &str,
        import: &ImportColumnFamilyOptions,
        metadata: &ExportImportFilesMetaData,
    ) -> Result<ColumnFamilyHandle> {
        if metadata.db_comparator_name != options.comparator.name() {
            return Err(Error::InvalidArgument("Comparator name mismatch".into()));
        }
        let cf = self.create_column_family(name, options)?;
        let mut files = Vec::new();
        let result = self.import_tables(&cf, import, metadata, &mut files);
        match result {
            Ok(()) => {
                if import.move_files {
                    for f in &files {
                        let _ = self.inner.fs.delete_file(&f.source);
                    }
                }
                Ok(cf)
            }
            Err(e) => {
                for f in &files {
                    if let Some(p) = &f.inside {
                        let _ = self.inner.fs.delete_file(p);
                    }
                }
                let _ = self.drop_column_family(&cf);
                Err(e)
            }
        }
    }

    fn import_tables(
        &self,
        cf: &ColumnFamilyHandle,
        import: &ImportColumnFamilyOptions,
        metadata: &ExportImportFilesMetaData,
        files: &mut Vec<Imported>,
    ) -> Result<()> {
        let inner = &self.inner;
        if metadata.files.is_empty() {
            return Err(Error::InvalidArgument("The list of files is empty".into()));
        }
        let ucmp = inner
            .lock_state()
            .cfs
            .get(&cf.id)
            .map(|c| c.options.comparator.clone())
            .ok_or_else(|| Error::InvalidArgument(format!("unknown column family {}", cf.name)))?;
        for m in &metadata.files {
            let source = Path::new(&m.db_path).join(m.name.trim_start_matches('/'));
            let number = {
                let mut st = inner.lock_state();
                let n = st.versions.new_file_number();
                st.files.add_pending_output(n);
                n
            };
            let info = table_bounds(inner.fs.as_ref(), &source, &ucmp);
            let f = info.map(|(file_size, smallest, largest)| Imported {
                meta: FileMetaData::new(
                    number,
                    file_size,
                    smallest,
                    largest,
                    m.smallest_seqno,
                    m.largest_seqno,
                ),
                level: m.level,
                source,
                inside: None,
            });
            match f {
                Ok(f) => files.push(f),
                Err(e) => {
                    inner.lock_state().files.release_pending_output(number);
                    return Err(e);
                }
            }
        }
        let outcome = self.place_tables(cf, import, files, &ucmp);
        let mut st = inner.lock_state();
        for f in files.iter() {
            st.files.release_pending_output(f.meta.number);
        }
        drop(st);
        outcome
    }

    /// Checks the levels, links or copies the tables in, and records them.
    fn place_tables(
        &self,
        cf: &ColumnFamilyHandle,
        import: &ImportColumnFamilyOptions,
        files: &mut [Imported],
        ucmp: &crate::util::comparator::ComparatorRef,
    ) -> Result<()> {
        let inner = &self.inner;
        let fs = &*inner.fs;
        let max_level = files.iter().map(|f| f.level).max().unwrap_or(0);
        for level in 1..=max_level {
            let mut at: Vec<&Imported> = files.iter().filter(|f| f.level == level).collect();
            at.sort_by(|a, b| sstable_key_compare(ucmp, &a.meta.smallest, &b.meta.smallest));
            if at
                .windows(2)
                .any(|w| sstable_key_compare(ucmp, &w[0].meta.largest, &w[1].meta.smallest).is_ge())
            {
                return Err(Error::InvalidArgument(
                    "Files have overlapping ranges".into(),
                ));
            }
        }
        let mut link = import.move_files;
        for f in files.iter_mut() {
            let inside = inner.table_paths.table_file(0, f.meta.number);
            if link {
                match fs.link_file(&f.source, &inside) {
                    Ok(()) => {
                        f.inside = Some(inside);
                        continue;
                    }
                    Err(Error::NotSupported(_)) => link = false,
                    Err(e) => return Err(e),
                }
            }
            f.inside = Some(inside.clone());
            copy_file(fs, &f.source, &inside, None)?;
        }
        fs.sync_dir(inner.table_paths.dir(0))?;
        let now = crate::compaction_filter::unix_now_seconds();
        let mut edit = VersionEdit::default();
        let mut largest_seqno = 0;
        for f in files.iter() {
            let mut meta = f.meta.clone();
            meta.oldest_ancester_time = now;
            meta.file_creation_time = now;
            largest_seqno = largest_seqno.max(meta.largest_seqno);
            edit.new_files.push((f.level as u32, meta));
        }
        // No write may take a number the imported entries hold.
        let _writers = inner
            .write_mutex
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.wait_for_pending_writes();
        let mut st = inner.lock_state();
        if st.cfs.get(&cf.id).is_none_or(|c| c.dropped) {
            return Err(Error::InvalidArgument(format!(
                "column family {} was dropped during the import",
                cf.name
            )));
        }
        let last = inner.last_sequence.load(Ordering::Acquire);
        if largest_seqno > last {
            st.versions.set_last_sequence(largest_seqno);
        }
        st.versions.log_and_apply(cf.id, edit)?;
        if largest_seqno > last {
            inner
                .write_path
                .last_allocated
                .fetch_max(largest_seqno, Ordering::AcqRel);
            inner
                .write_path
                .acked
                .fetch_max(largest_seqno, Ordering::AcqRel);
            inner
                .last_sequence
                .fetch_max(largest_seqno, Ordering::AcqRel);
        }
        inner
            .info_log
            .log(&format!("[{}] imported {} tables", cf.name, files.len()));
        inner.install_super_versions(&mut st);
        inner.maybe_schedule_work(&mut st);
        Ok(())
    }
}

/// The size and the smallest and largest internal keys (range
/// tombstones included) of the table at `path`.
fn table_bounds(
    fs: &dyn crate::fs::FileSystem,
    path: &Path,
    ucmp: &crate::util::comparator::ComparatorRef,
) -> Result<(u64, Vec<u8>, Vec<u8>)> {
    let name = path.to_string_lossy();
    let file_size = fs.file_size(path)?;
    let file = fs.new_random_access_file(path)?;
    let table = Arc::new(Table::open(
        file,
        &name,
        file_size,
        &TableOptions::default(),
    )?);
    let corrupt = |msg: &str| Error::corruption(&name, 0, msg);
    let mut bounds = super::ingest::point_key_bounds(&table)?;
    if let Some((first, last)) = &bounds
        && (parse_internal_key(first).is_none() || parse_internal_key(last).is_none())
    {
        return Err(corrupt("File has corrupted keys"));
    }
    let tombstones = super::ingest::range_tombstone_bounds(&table, ucmp)
        .map_err(|()| corrupt("File has corrupted keys"))?;
    bounds = super::ingest::union_bounds(ucmp, bounds, tombstones);
    let (smallest, largest) =
        bounds.ok_or_else(|| Error::InvalidArgument(format!("File contain no entries: {name}")))?;
    Ok((file_size, smallest, largest))
}
