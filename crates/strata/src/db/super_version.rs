//! The SuperVersion: what one read sees of a column family, swapped
//! atomically as a whole: the active memtable, the immutable memtables
//! waiting for flush (newest first), and the current Version of files.
//!
//! Invariant: a SuperVersion is immutable; readers load an `Arc` of the
//! current one without locks and keep it (and so every file and memtable it
//! names) alive until they finish.

use std::sync::Arc;

use crate::memtable::MemTable;
use crate::version::Version;

/// One consistent view of a column family.
pub struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub imms: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
}

impl std::fmt::Debug for SuperVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SuperVersion")
            .field("imms", &self.imms.len())
            .finish()
    }
}
