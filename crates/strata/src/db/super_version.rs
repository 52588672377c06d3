//! The SuperVersion: what one read sees of a column family, swapped
//! atomically as a whole: the active memtable, the immutable memtables
//! waiting for flush (newest first), the current Version of files, and the
//! column family's options.
//!
//! Invariant: a SuperVersion is immutable (its lazily computed caches
//! derive only from its immutable parts); readers load an `Arc` of the
//! current one without locks and keep it (and so every file and memtable it
//! names) alive until they finish.

use std::sync::{Arc, OnceLock};

use crate::memtable::MemTable;
use crate::options::ColumnFamilyOptions;
use crate::table::TableOptions;
use crate::version::Version;

/// The range tombstones of a SuperVersion's frozen sources, merged.
pub(crate) type FrozenRangeDels =
    Arc<crate::format::range_tombstones::FragmentedRangeTombstoneList>;

/// One consistent view of a column family.
pub struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub imms: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
    pub options: Arc<ColumnFamilyOptions>,
    /// What table readers of this column family are opened with.
    pub table_options: Arc<TableOptions>,
    /// Range tombstones of the immutable memtables and every table file,
    /// merged on first use (they cannot change for this SuperVersion).
    pub(crate) frozen_range_dels: OnceLock<FrozenRangeDels>,
    /// Readers of the level-0 tables (in `version.files(0)` order), opened
    /// on first use: point lookups probe every one and so skip the table
    /// cache's lock.
    pub(crate) l0_tables: Box<[OnceLock<Arc<crate::table::Table>>]>,
}

impl std::fmt::Debug for SuperVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SuperVersion")
            .field("imms", &self.imms.len())
            .finish()
    }
}
