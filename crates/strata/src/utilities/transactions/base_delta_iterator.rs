//! An iterator over a database iterator (the base) overlaid with a
//! [`WriteBatchWithIndex`] (the delta), as RocksDB's `BaseDeltaIterator`:
//! the batch's puts replace or add keys, its deletes hide them, its merges
//! apply to the base's value (or to nothing). Both directions, with the
//! read options' bounds applied to the delta too.
//!
//! Invariants: moving forward, the base stands at its first key >= the
//! current key and the delta cursor at the batch's first key >= it;
//! moving backward, both stand at their last key <= it. A direction
//! change re-seeks the base (as RocksDB's DBIter does internally). Where
//! both hold a key, the delta decides.

use std::cmp::Ordering;
use std::ops::Bound;

use std::borrow::Cow;

use super::write_batch_with_index::{BatchLookup, WriteBatchWithIndex, full_merge};
use crate::db::DbIterator;
use crate::error::{Error, Result};
use crate::merge_operator::MergeOperatorRef;
use crate::util::comparator::ComparatorRef;

pub struct BaseDeltaIterator<'a> {
    base: DbIterator,
    /// Borrowed from a transaction, or a copy of its batch (a detached
    /// iterator, for bindings that cannot express the borrow).
    delta: Cow<'a, WriteBatchWithIndex>,
    cf: u32,
    cmp: ComparatorRef,
    merge: Option<MergeOperatorRef>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    forward: bool,
    /// The delta cursor: a batch key within the bounds, with its offsets.
    cursor: Option<(Vec<u8>, Vec<usize>)>,
    valid: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    error: Option<Error>,
}

impl std::fmt::Debug for BaseDeltaIterator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaseDeltaIterator")
            .field("cf", &self.cf)
            .field("valid", &self.valid)
            .finish()
    }
}

impl<'a> BaseDeltaIterator<'a> {
    /// `base` must read the same column family `cf` with the bounds
    /// `lower`/`upper` (the delta applies them itself).
    pub(crate) fn new(
        base: DbIterator,
        delta: Cow<'a, WriteBatchWithIndex>,
        cf: u32,
        merge: Option<MergeOperatorRef>,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> Self {
        BaseDeltaIterator {
            base,
            cmp: delta.comparator(cf).clone(),
            delta,
            cf,
            merge,
            lower,
            upper,
            forward: true,
            cursor: None,
            valid: false,
            key: Vec::new(),
            value: Vec::new(),
            error: None,
        }
    }

    pub fn valid(&self) -> bool {
        self.valid
    }

    pub fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.key
    }

    pub fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.value
    }

    /// This iterator holding its own copy of the delta (positioned as it
    /// is).
    pub fn into_owned(self) -> BaseDeltaIterator<'static> {
        BaseDeltaIterator {
            base: self.base,
            delta: Cow::Owned(self.delta.into_owned()),
            cf: self.cf,
            cmp: self.cmp,
            merge: self.merge,
            lower: self.lower,
            upper: self.upper,
            forward: self.forward,
            cursor: self.cursor,
            valid: self.valid,
            key: self.key,
            value: self.value,
            error: self.error,
        }
    }

    /// The first error met (the base's or a failed merge).
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.base.status(),
        }
    }

    fn in_bounds(&self, k: &[u8]) -> bool {
        self.lower
            .as_deref()
            .is_none_or(|l| self.cmp.compare(k, l) != Ordering::Less)
            && self
                .upper
                .as_deref()
                .is_none_or(|u| self.cmp.compare(k, u) == Ordering::Less)
    }

    fn move_cursor(&mut self, from: Bound<&[u8]>, forward: bool) {
        self.cursor = self
            .delta
            .range_after(self.cf, from, forward)
            .filter(|(k, _)| self.in_bounds(&k.key))
            .map(|(k, o)| (k.key.clone(), o.clone()));
    }

    pub fn seek_to_first(&mut self) {
        self.forward = true;
        self.base.seek_to_first();
        let lower = self.lower.clone();
        self.move_cursor(bound_incl(lower.as_deref()), true);
        self.settle();
    }

    pub fn seek_to_last(&mut self) {
        self.forward = false;
        self.base.seek_to_last();
        let upper = self.upper.clone();
        self.move_cursor(
            upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
            false,
        );
        self.settle();
    }

    pub fn seek(&mut self, target: &[u8]) {
        self.forward = true;
        self.base.seek(target);
        let below = self
            .lower
            .as_deref()
            .is_some_and(|l| self.cmp.compare(target, l) == Ordering::Less);
        let from = if below {
            self.lower.clone().unwrap_or_default()
        } else {
            target.to_vec()
        };
        self.move_cursor(Bound::Included(&from), true);
        self.settle();
    }

    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.forward = false;
        self.base.seek_for_prev(target);
        let above = self
            .upper
            .as_deref()
            .is_some_and(|u| self.cmp.compare(target, u) != Ordering::Less);
        if above {
            let upper = self.upper.clone().unwrap_or_default();
            self.move_cursor(Bound::Excluded(&upper), false);
        } else {
            self.move_cursor(Bound::Included(target), false);
        }
        self.settle();
    }

    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        let cur = std::mem::take(&mut self.key);
        if self.forward {
            if self.base_is(&cur) {
                self.base.next();
            }
        } else {
            self.forward = true;
            self.base.seek(&cur);
            if self.base_is(&cur) {
                self.base.next();
            }
        }
        self.move_cursor(Bound::Excluded(&cur), true);
        self.settle();
    }

    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        let cur = std::mem::take(&mut self.key);
        if !self.forward {
            if self.base_is(&cur) {
                self.base.prev();
            }
        } else {
            self.forward = false;
            self.base.seek_for_prev(&cur);
            if self.base_is(&cur) {
                self.base.prev();
            }
        }
        self.move_cursor(Bound::Excluded(&cur), false);
        self.settle();
    }

    fn base_is(&self, k: &[u8]) -> bool {
        self.base.valid() && self.cmp.compare(self.base.key(), k) == Ordering::Equal
    }

    /// Positions on the nearest key (in the current direction) that the
    /// delta does not delete.
    fn settle(&mut self) {
        self.valid = false;
        loop {
            if self.error.is_some() || self.base.status().is_err() {
                return;
            }
            let base_key = self.base.valid().then(|| self.base.key());
            let Some((dkey, offsets)) = &self.cursor else {
                if let Some(b) = base_key {
                    self.key = b.to_vec();
                    self.value = self.base.value().to_vec();
                    self.valid = true;
                }
                return;
            };
            let order = base_key.map(|b| {
                let o = self.cmp.compare(dkey, b);
                if self.forward { o } else { o.reverse() }
            });
            if order == Some(Ordering::Greater) {
                // The base comes first.
                self.key = base_key.unwrap_or_default().to_vec();
                self.value = self.base.value().to_vec();
                self.valid = true;
                return;
            }
            let same = order == Some(Ordering::Equal);
            let dkey = dkey.clone();
            let resolved = self.delta.resolve_with(
                &dkey,
                offsets,
                self.merge
                    .as_deref()
                    .map(|m| m as &dyn crate::merge_operator::MergeOperator),
            );
            let value = match resolved {
                Err(e) => {
                    self.error = Some(e);
                    return;
                }
                Ok(BatchLookup::Found(v)) => Some(v),
                Ok(BatchLookup::Deleted | BatchLookup::NotFound) => None,
                Ok(BatchLookup::MergeInProgress(ops)) => {
                    let base = same.then(|| self.base.value().to_vec());
                    let m = self
                        .merge
                        .as_deref()
                        .map(|m| m as &dyn crate::merge_operator::MergeOperator);
                    match full_merge(m, &dkey, base.as_deref(), &ops) {
                        Ok(v) => Some(v),
                        Err(e) => {
                            self.error = Some(e);
                            return;
                        }
                    }
                }
            };
            if let Some(v) = value {
                self.key = dkey;
                self.value = v;
                self.valid = true;
                return;
            }
            // Deleted by the batch: step past it in both.
            if same {
                if self.forward {
                    self.base.next();
                } else {
                    self.base.prev();
                }
            }
            let forward = self.forward;
            self.move_cursor(Bound::Excluded(&dkey), forward);
        }
    }
}

fn bound_incl(k: Option<&[u8]>) -> Bound<&[u8]> {
    k.map_or(Bound::Unbounded, Bound::Included)
}
