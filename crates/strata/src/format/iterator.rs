//! The cursor interface shared by block, table, memtable, merging and
//! compaction-input iterators (a base trait, so that each of those layers
//! depends on it downward): positioned on an entry or invalid, with seeks
//! in both directions. Keys are whatever the source stores (internal keys for data
//! blocks and tables, names for meta blocks).
//!
//! Invariant: `key()`/`value()` may only be called while `valid()`; after an
//! error `valid()` is false and `status()` returns it.

use crate::error::Result;

/// A seekable cursor over sorted key/value entries.
pub trait InternalIterator {
    fn valid(&self) -> bool;
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    /// Positions at the first entry with key >= `target`.
    fn seek(&mut self, target: &[u8]);
    /// Positions at the last entry with key <= `target`.
    fn seek_for_prev(&mut self, target: &[u8]);
    /// REQUIRES: `valid()`.
    fn next(&mut self);
    /// REQUIRES: `valid()`.
    fn prev(&mut self);
    /// REQUIRES: `valid()`.
    fn key(&self) -> &[u8];
    /// REQUIRES: `valid()`.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}

/// Test helpers over any [`InternalIterator`].
#[cfg(test)]
pub(crate) mod testing {
    use super::InternalIterator;
    use crate::error::Result;

    /// Every `(key, value)` from the first entry on, or the iterator's
    /// error.
    pub(crate) fn collect_forward(
        it: &mut dyn InternalIterator,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Every `(key, value)` walking back from the last entry, returned in
    /// forward order, or the iterator's error.
    pub(crate) fn collect_backward(
        it: &mut dyn InternalIterator,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        it.seek_to_last();
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        it.status()?;
        out.reverse();
        Ok(out)
    }
}
