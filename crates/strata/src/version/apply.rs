//! `EditApplier`: the state machine that applies `VersionEdit`s to the
//! column-family set, shared by MANIFEST replay and `log_and_apply`
//! (RocksDB's `VersionEditHandler::ApplyVersionEdit` and
//! `ExtractInfoFromVersionEdit`).
//!
//! Invariants:
//! * An edit either adds a column family, drops one, or changes the files
//!   of one existing column family; file changes inside an add or drop edit
//!   are ignored, as RocksDB ignores them.
//! * Column-family ids and names are unique among live column families; the
//!   default column family (id 0) always exists.
//! * A column family's log number never decreases (a smaller one is ignored,
//!   as RocksDB does with a warning); `min_log_number_to_keep` and
//!   `max_column_family` only grow.
//! * Applying never touches the base versions: results exist only in the
//!   builders until `finish`, so a failed apply leaves the caller's state
//!   as it was.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::builder::VersionBuilder;
use super::edit::VersionEdit;
use super::version::Version;
use super::version_set::VersionSetOptions;
use crate::error::{Error, Result};
use crate::format::dbformat::InternalKeyComparator;

/// One column family while edits are applied.
pub(crate) struct CfState {
    pub id: u32,
    pub name: String,
    pub comparator_name: String,
    pub icmp: InternalKeyComparator,
    pub log_number: u64,
    pub full_history_ts_low: Option<Vec<u8>>,
    pub base: Arc<Version>,
    /// Created at the first file change.
    pub builder: Option<VersionBuilder>,
}

/// The DB-wide values found in the edits applied so far.
#[derive(Debug, Default, Clone)]
pub(crate) struct EditParams {
    pub has_log_number: bool,
    pub next_file_number: Option<u64>,
    pub last_sequence: Option<u64>,
    pub prev_log_number: Option<u64>,
    pub max_column_family: u32,
    pub min_log_number_to_keep: u64,
    pub db_id: Option<String>,
    /// BlobDB files the edits added: number -> (blobs, garbage blobs). A
    /// file whose every blob is garbage is gone (RocksDB deletes it).
    pub blob_files: BTreeMap<u64, (u64, u64)>,
}

impl EditParams {
    /// A blob file the database still uses, if any.
    pub fn live_blob_file(&self) -> Option<u64> {
        self.blob_files
            .iter()
            .find(|(_, (total, garbage))| garbage < total)
            .map(|(&n, _)| n)
    }
}

pub(crate) struct EditApplier<'a> {
    opts: &'a VersionSetOptions,
    pub cfs: BTreeMap<u32, CfState>,
    /// Current versions of column families dropped by the edits.
    pub dropped: Vec<Arc<Version>>,
    pub params: EditParams,
}

fn corrupt(msg: impl Into<String>) -> Error {
    Error::corruption("", 0, msg)
}

impl<'a> EditApplier<'a> {
    pub fn new(
        opts: &'a VersionSetOptions,
        cfs: BTreeMap<u32, CfState>,
        params: EditParams,
    ) -> Self {
        EditApplier {
            opts,
            cfs,
            dropped: Vec::new(),
            params,
        }
    }

    /// A new, empty column family state.
    pub fn new_cf(opts: &VersionSetOptions, id: u32, name: &str) -> CfState {
        let cmp = opts.comparator_for(name);
        let icmp = InternalKeyComparator::new(cmp.clone());
        CfState {
            id,
            name: name.to_string(),
            comparator_name: cmp.name().to_string(),
            base: Arc::new(Version::new(icmp.clone(), opts.num_levels_for(name))),
            icmp,
            log_number: 0,
            full_history_ts_low: None,
            builder: None,
        }
    }

    /// Applies one edit; errors are Corruption (file "", offset 0: callers
    /// relocate them) or InvalidArgument for a comparator mismatch.
    pub fn apply(&mut self, edit: &VersionEdit) -> Result<()> {
        let id = edit.column_family;
        if let Some(name) = &edit.column_family_add {
            if self.cfs.contains_key(&id) || self.cfs.values().any(|c| &c.name == name) {
                return Err(corrupt(format!(
                    "MANIFEST adding the same column family twice: {name}"
                )));
            }
            self.cfs.insert(id, Self::new_cf(self.opts, id, name));
            self.params.max_column_family = self.params.max_column_family.max(id);
        } else if edit.column_family_drop {
            if id == 0 {
                return Err(corrupt("MANIFEST - dropping the default column family"));
            }
            match self.cfs.remove(&id) {
                Some(cf) => self.dropped.push(cf.base),
                None => {
                    return Err(corrupt("MANIFEST - dropping non-existing column family"));
                }
            }
        } else {
            let Some(cf) = self.cfs.get_mut(&id) else {
                return Err(corrupt("MANIFEST record referencing unknown column family"));
            };
            cf.builder
                .get_or_insert_with(|| VersionBuilder::new(cf.base.clone()))
                .apply(edit)?;
        }
        self.extract_info(edit)
    }

    fn extract_info(&mut self, edit: &VersionEdit) -> Result<()> {
        if let Some(db_id) = &edit.db_id {
            self.params.db_id = Some(db_id.clone());
        }
        if let Some(cf) = self.cfs.get_mut(&edit.column_family) {
            if let Some(ln) = edit.log_number {
                // RocksDB ignores (with a warning) a log number going back.
                cf.log_number = cf.log_number.max(ln);
                self.params.has_log_number = true;
            }
            if let Some(c) = &edit.comparator {
                if *c != cf.comparator_name {
                    return Err(Error::InvalidArgument(format!(
                        "{}: does not match existing comparator {c}",
                        cf.comparator_name
                    )));
                }
            }
            if let Some(ts) = &edit.full_history_ts_low {
                cf.full_history_ts_low = Some(ts.clone());
            }
        }
        let p = &mut self.params;
        if edit.prev_log_number.is_some() {
            p.prev_log_number = edit.prev_log_number;
        }
        if edit.next_file_number.is_some() {
            p.next_file_number = edit.next_file_number;
        }
        if let Some(m) = edit.max_column_family {
            p.max_column_family = p.max_column_family.max(m);
        }
        if let Some(m) = edit.min_log_number_to_keep {
            p.min_log_number_to_keep = p.min_log_number_to_keep.max(m);
        }
        if edit.last_sequence.is_some() {
            p.last_sequence = edit.last_sequence;
        }
        for b in &edit.blob_file_additions {
            p.blob_files
                .insert(b.blob_file_number, (b.total_blob_count, 0));
        }
        for g in &edit.blob_file_garbages {
            if let Some(f) = p.blob_files.get_mut(&g.blob_file_number) {
                f.1 = f.1.saturating_add(g.garbage_blob_count);
            }
        }
        Ok(())
    }

    /// Builds the new version of every column family that changed,
    /// numbering them from `*version_number`. Returns the states with `base`
    /// replaced by the result and the superseded versions.
    pub fn finish(mut self, version_number: &mut u64) -> Result<Finished> {
        let mut superseded = std::mem::take(&mut self.dropped);
        for cf in self.cfs.values_mut() {
            if let Some(b) = cf.builder.take() {
                *version_number += 1;
                let mut v = b.finish(*version_number)?;
                v.set_release_hook(self.opts.release_hook.clone());
                let v = Arc::new(v);
                superseded.push(std::mem::replace(&mut cf.base, v));
            }
        }
        Ok(Finished {
            cfs: self.cfs,
            params: self.params,
            superseded,
        })
    }
}

/// What a finished applier hands back.
pub(crate) struct Finished {
    pub cfs: BTreeMap<u32, CfState>,
    pub params: EditParams,
    pub superseded: Vec<Arc<Version>>,
}
