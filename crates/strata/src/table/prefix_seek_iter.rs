//! A table iterator for prefix seeks: a `seek`/`seek_for_prev` whose
//! target's prefix the table's filter proves absent leaves the iterator
//! invalid without reading an index or data block (RocksDB's
//! `CheckPrefixMayMatch`).
//!
//! Only correct under a reader that confines iteration to the seek
//! target's prefix (`prefix_same_as_start`): entries of other prefixes
//! this table holds are then not wanted. Unbounded positioning
//! (`seek_to_first`/`seek_to_last`) is unaffected.

use std::sync::Arc;

use super::factory::{Table, TableIter};
use crate::error::Result;
use crate::format::dbformat::extract_user_key;
use crate::format::iterator::InternalIterator;

/// See the module comment.
pub struct PrefixSeekIter {
    table: Arc<Table>,
    inner: TableIter,
    /// True after a seek the filter ruled out; `inner` is then not used.
    filtered_out: bool,
}

impl std::fmt::Debug for PrefixSeekIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixSeekIter")
            .field("inner", &self.inner)
            .field("filtered_out", &self.filtered_out)
            .finish()
    }
}

impl PrefixSeekIter {
    pub fn new(table: Arc<Table>) -> PrefixSeekIter {
        let inner = table.prefix_iter();
        PrefixSeekIter {
            table,
            inner,
            filtered_out: false,
        }
    }

    fn may_match(&self, internal_target: &[u8]) -> bool {
        // Targets shorter than a trailer are not internal keys; never skip.
        internal_target.len() < crate::format::dbformat::TRAILER_LEN
            || self
                .table
                .prefix_of_key_may_match(extract_user_key(internal_target))
    }
}

impl InternalIterator for PrefixSeekIter {
    fn valid(&self) -> bool {
        !self.filtered_out && self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.filtered_out = false;
        self.inner.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.filtered_out = false;
        self.inner.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        self.filtered_out = !self.may_match(target);
        if !self.filtered_out {
            self.inner.seek(target);
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.filtered_out = !self.may_match(target);
        if !self.filtered_out {
            self.inner.seek_for_prev(target);
        }
    }
    fn next(&mut self) {
        debug_assert!(self.valid());
        self.inner.next();
    }
    fn prev(&mut self) {
        debug_assert!(self.valid());
        self.inner.prev();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        if self.filtered_out {
            return Ok(());
        }
        self.inner.status()
    }
}
