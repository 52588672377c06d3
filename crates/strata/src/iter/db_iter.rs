//! `DBIter`: turns a merged stream of internal entries into the user's view
//! at one snapshot: the newest visible version of each user key, with
//! deletions, range tombstones and merge operands resolved, within optional
//! bounds, in both directions.
//!
//! Invariants: while valid, `key`/`value` hold the user key and its
//! resolved value. Going forward, the inner iterator is at or after the
//! current key's newest visible entry; going backward, it is before the
//! current key's entries. An inner error stops iteration (never skipped).

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::format::dbformat::{VALUE_TYPE_FOR_SEEK, make_internal_key};
use crate::format::iterator::InternalIterator;
use crate::format::range_tombstones::RangeDelAggregator;
use crate::format::{MAX_SEQUENCE_NUMBER, SequenceNumber, ValueType, parse_internal_key};
use crate::merge_operator::MergeOperatorRef;
use crate::util::comparator::ComparatorRef;
use crate::util::slice_transform::SliceTransformRef;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// The user-facing cursor over one consistent view.
pub struct DBIter {
    inner: Box<dyn InternalIterator + Send>,
    ucmp: ComparatorRef,
    snapshot: SequenceNumber,
    merge: Option<MergeOperatorRef>,
    range_del: RangeDelAggregator,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    /// With `prefix_same_as_start`: the extractor, and the prefix of the
    /// last seek target, outside of which the iterator is not valid.
    prefix_extractor: Option<SliceTransformRef>,
    prefix: Option<Vec<u8>>,
    key: Vec<u8>,
    /// The entry's value when it is not the inner iterator's current
    /// value (a merge result, or found moving backward).
    value: Vec<u8>,
    /// Forward at a plain value: `value()` is the inner iterator's,
    /// uncopied (it stays where it found it until the next move).
    value_in_inner: bool,
    /// The previous key while `next` looks for the one after it (its
    /// buffer and `key`'s are swapped, so stepping allocates nothing).
    skip_key: Vec<u8>,
    valid: bool,
    direction: Direction,
    status: Option<Error>,
    /// Besides `seq <= snapshot`, whether an entry is visible (a
    /// WritePrepared reader's commit check; RocksDB's `ReadCallback`).
    visible: Option<VisibilityRef>,
}

/// Whether the entry at a sequence number is visible to a read.
pub type VisibilityRef = std::sync::Arc<dyn Fn(SequenceNumber) -> bool + Send + Sync>;

impl std::fmt::Debug for DBIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DBIter")
            .field("snapshot", &self.snapshot)
            .field("valid", &self.valid)
            .finish()
    }
}

/// How a DBIter reads.
#[derive(Clone, Debug, Default)]
pub struct DBIterOptions {
    pub lower_bound: Option<Vec<u8>>,
    pub upper_bound: Option<Vec<u8>>,
    /// Set (the column family's extractor) for `prefix_same_as_start`:
    /// after `seek`/`seek_for_prev` iteration stays within the target's
    /// prefix. `seek_to_first`/`seek_to_last` are not confined.
    pub prefix_same_as_start: Option<SliceTransformRef>,
}

impl DBIter {
    pub fn new(
        inner: Box<dyn InternalIterator + Send>,
        ucmp: ComparatorRef,
        snapshot: SequenceNumber,
        merge: Option<MergeOperatorRef>,
        range_del: RangeDelAggregator,
        opts: DBIterOptions,
    ) -> DBIter {
        DBIter {
            inner,
            ucmp,
            snapshot,
            merge,
            range_del,
            lower: opts.lower_bound,
            upper: opts.upper_bound,
            prefix_extractor: opts.prefix_same_as_start,
            prefix: None,
            key: Vec::new(),
            value: Vec::new(),
            value_in_inner: false,
            skip_key: Vec::new(),
            valid: false,
            direction: Direction::Forward,
            status: None,
            visible: None,
        }
    }

    /// Entries are visible only where `visible` also says so.
    pub fn set_visibility(&mut self, visible: VisibilityRef) {
        self.visible = Some(visible);
    }

    #[inline]
    fn sees(&self, seq: SequenceNumber) -> bool {
        seq <= self.snapshot && self.visible.as_ref().is_none_or(|f| f(seq))
    }

    pub fn valid(&self) -> bool {
        self.valid
    }

    /// REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// REQUIRES: `valid()`.
    pub fn value(&self) -> &[u8] {
        if self.value_in_inner {
            self.inner.value()
        } else {
            &self.value
        }
    }

    /// The first error met (corruption, I/O, merge failure).
    pub fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.duplicate()),
            None => self.inner.status(),
        }
    }

    fn fail(&mut self, e: Error) {
        self.valid = false;
        if self.status.is_none() {
            self.status = Some(e);
        }
    }

    fn at_or_past_upper(&self, user_key: &[u8]) -> bool {
        self.upper
            .as_deref()
            .is_some_and(|u| self.ucmp.compare(user_key, u) != Ordering::Less)
            || self.outside_prefix(user_key)
    }

    fn below_lower(&self, user_key: &[u8]) -> bool {
        self.lower
            .as_deref()
            .is_some_and(|l| self.ucmp.compare(user_key, l) == Ordering::Less)
            || self.outside_prefix(user_key)
    }

    /// Keys sharing a prefix are contiguous, so leaving the seek prefix in
    /// either direction ends the iteration.
    fn outside_prefix(&self, user_key: &[u8]) -> bool {
        match (&self.prefix, &self.prefix_extractor) {
            (Some(p), Some(pe)) => {
                !pe.in_domain(user_key) || pe.transform(user_key) != p.as_slice()
            }
            _ => false,
        }
    }

    /// The prefix a seek to `target` confines iteration to.
    fn set_prefix(&mut self, target: Option<&[u8]>) {
        self.prefix = match (target, &self.prefix_extractor) {
            (Some(t), Some(pe)) if pe.in_domain(t) => Some(pe.transform(t).to_vec()),
            _ => None,
        };
    }

    fn merge(&mut self, key: &[u8], base: Option<&[u8]>, operands: &[Vec<u8>]) -> Option<Vec<u8>> {
        let Some(op) = &self.merge else {
            self.fail(Error::InvalidArgument(
                "merge operands found but no merge operator is configured".into(),
            ));
            return None;
        };
        let refs: Vec<&[u8]> = operands.iter().map(|v| v.as_slice()).collect();
        match op.full_merge(key, base, &refs) {
            Some(v) => Some(v),
            None => {
                let name = op.name().to_string();
                self.fail(Error::corruption(
                    "",
                    0,
                    format!("merge operator {name} failed"),
                ));
                None
            }
        }
    }

    pub fn seek_to_first(&mut self) {
        self.status = None;
        self.set_prefix(None);
        self.direction = Direction::Forward;
        match self.lower.clone() {
            Some(l) => self
                .inner
                .seek(&make_internal_key(&l, self.snapshot, VALUE_TYPE_FOR_SEEK)),
            None => self.inner.seek_to_first(),
        }
        self.find_next_user_entry(false);
    }

    pub fn seek(&mut self, target: &[u8]) {
        self.status = None;
        self.set_prefix(Some(target));
        self.direction = Direction::Forward;
        let t = match &self.lower {
            Some(l) if self.ucmp.compare(target, l) == Ordering::Less => l.clone(),
            _ => target.to_vec(),
        };
        self.inner
            .seek(&make_internal_key(&t, self.snapshot, VALUE_TYPE_FOR_SEEK));
        self.find_next_user_entry(false);
    }

    pub fn seek_to_last(&mut self) {
        self.status = None;
        self.set_prefix(None);
        self.last_within_bounds();
    }

    /// The last visible entry below the upper bound (and, if one is set,
    /// within the seek prefix).
    fn last_within_bounds(&mut self) {
        self.direction = Direction::Reverse;
        match self.upper.clone() {
            Some(u) => self.inner.seek_for_prev(&make_internal_key(
                &u,
                MAX_SEQUENCE_NUMBER,
                VALUE_TYPE_FOR_SEEK,
            )),
            None => self.inner.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.status = None;
        self.direction = Direction::Reverse;
        self.set_prefix(Some(target));
        if self
            .upper
            .as_deref()
            .is_some_and(|u| self.ucmp.compare(target, u) != Ordering::Less)
        {
            self.last_within_bounds();
            return;
        }
        self.inner
            .seek_for_prev(&make_internal_key(target, 0, ValueType::Deletion));
        self.find_prev_user_entry();
    }

    /// REQUIRES: `valid()`.
    pub fn next(&mut self) {
        debug_assert!(self.valid);
        std::mem::swap(&mut self.key, &mut self.skip_key);
        if self.direction == Direction::Reverse {
            self.inner.seek(&make_internal_key(
                &self.skip_key,
                MAX_SEQUENCE_NUMBER,
                VALUE_TYPE_FOR_SEEK,
            ));
            self.direction = Direction::Forward;
        }
        self.find_next_user_entry(true);
    }

    /// REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        debug_assert!(self.valid);
        if self.direction == Direction::Forward {
            let k = make_internal_key(&self.key, MAX_SEQUENCE_NUMBER, VALUE_TYPE_FOR_SEEK);
            self.inner.seek_for_prev(&k);
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    /// Moves forward to the newest visible entry of the next user key
    /// (with `skip`: strictly after `skip_key`).
    fn find_next_user_entry(&mut self, mut skip: bool) {
        self.valid = false;
        self.value_in_inner = false;
        loop {
            if !self.inner.valid() {
                if let Err(e) = self.inner.status() {
                    self.fail(e);
                }
                return;
            }
            let Some(p) = parse_internal_key(self.inner.key()) else {
                self.fail(Error::corruption(
                    "",
                    0,
                    "corrupted internal key in iteration",
                ));
                return;
            };
            if self.at_or_past_upper(p.user_key) {
                return;
            }
            if !self.sees(p.sequence)
                || (skip && self.ucmp.compare(p.user_key, &self.skip_key) != Ordering::Greater)
            {
                self.inner.next();
                continue;
            }
            let covered = self.range_del.covers(p.user_key, p.sequence);
            match p.value_type {
                ValueType::Deletion | ValueType::SingleDeletion => {
                    self.skip_key.clear();
                    self.skip_key.extend_from_slice(p.user_key);
                    skip = true;
                    self.inner.next();
                }
                ValueType::Value if covered => {
                    self.skip_key.clear();
                    self.skip_key.extend_from_slice(p.user_key);
                    skip = true;
                    self.inner.next();
                }
                ValueType::Value => {
                    self.key.clear();
                    self.key.extend_from_slice(p.user_key);
                    self.value_in_inner = true;
                    self.valid = true;
                    return;
                }
                ValueType::Merge if covered => {
                    self.skip_key.clear();
                    self.skip_key.extend_from_slice(p.user_key);
                    skip = true;
                    self.inner.next();
                }
                ValueType::Merge => {
                    self.merge_forward();
                    return;
                }
                other => {
                    self.fail(Error::NotSupported(format!(
                        "value type {other:?} in iteration"
                    )));
                    return;
                }
            }
        }
    }

    /// The inner iterator is at a visible merge operand: collects operands
    /// down to a base value or deletion and resolves them.
    fn merge_forward(&mut self) {
        let key = parse_internal_key(self.inner.key())
            .map(|p| p.user_key.to_vec())
            .unwrap_or_default();
        let mut operands = vec![self.inner.value().to_vec()];
        let mut base: Option<Vec<u8>> = None;
        self.inner.next();
        while self.inner.valid() {
            let Some(p) = parse_internal_key(self.inner.key()) else {
                self.fail(Error::corruption(
                    "",
                    0,
                    "corrupted internal key in iteration",
                ));
                return;
            };
            if self.ucmp.compare(p.user_key, &key) != Ordering::Equal {
                break;
            }
            if !self.sees(p.sequence) {
                self.inner.next();
                continue;
            }
            if self.range_del.covers(p.user_key, p.sequence) {
                break;
            }
            match p.value_type {
                ValueType::Merge => {
                    operands.push(self.inner.value().to_vec());
                    self.inner.next();
                }
                ValueType::Value => {
                    base = Some(self.inner.value().to_vec());
                    break;
                }
                _ => break,
            }
        }
        if let Err(e) = self.inner.status() {
            self.fail(e);
            return;
        }
        operands.reverse();
        if let Some(v) = self.merge(&key, base.as_deref(), &operands) {
            self.key = key;
            self.value = v;
            self.valid = true;
        }
    }

    /// Moves backward to the previous user key that has a visible value.
    fn find_prev_user_entry(&mut self) {
        self.valid = false;
        self.value_in_inner = false;
        // The key and value buffers are reused from entry to entry (no
        // allocation per step back); their contents mean nothing while
        // `valid` is false.
        let mut user_key = std::mem::take(&mut self.key);
        let mut base = std::mem::take(&mut self.value);
        loop {
            if !self.inner.valid() {
                if let Err(e) = self.inner.status() {
                    self.fail(e);
                }
                return;
            }
            let Some(p) = parse_internal_key(self.inner.key()) else {
                self.fail(Error::corruption(
                    "",
                    0,
                    "corrupted internal key in iteration",
                ));
                return;
            };
            user_key.clear();
            user_key.extend_from_slice(p.user_key);
            if self.below_lower(&user_key) {
                return;
            }
            // Walk this user key's entries, oldest first; `base` holds the
            // newest visible value when `has_base`.
            let mut has_base = false;
            let mut operands: Vec<Vec<u8>> = Vec::new();
            let mut deleted = true;
            while self.inner.valid() {
                let Some(p) = parse_internal_key(self.inner.key()) else {
                    self.fail(Error::corruption(
                        "",
                        0,
                        "corrupted internal key in iteration",
                    ));
                    return;
                };
                if self.ucmp.compare(p.user_key, &user_key) != Ordering::Equal {
                    break;
                }
                if self.sees(p.sequence) {
                    let t = if self.range_del.covers(p.user_key, p.sequence) {
                        ValueType::Deletion
                    } else {
                        p.value_type
                    };
                    match t {
                        ValueType::Value => {
                            base.clear();
                            base.extend_from_slice(self.inner.value());
                            has_base = true;
                            operands.clear();
                            deleted = false;
                        }
                        ValueType::Deletion | ValueType::SingleDeletion => {
                            has_base = false;
                            operands.clear();
                            deleted = true;
                        }
                        ValueType::Merge => {
                            operands.push(self.inner.value().to_vec());
                            deleted = false;
                        }
                        other => {
                            self.fail(Error::NotSupported(format!(
                                "value type {other:?} in iteration"
                            )));
                            return;
                        }
                    }
                }
                self.inner.prev();
            }
            if let Err(e) = self.inner.status() {
                self.fail(e);
                return;
            }
            if deleted {
                continue;
            }
            let value = if operands.is_empty() {
                if !has_base {
                    base.clear();
                }
                base
            } else {
                let b = has_base.then_some(&base[..]);
                match self.merge(&user_key, b, &operands) {
                    Some(v) => v,
                    None => return,
                }
            };
            self.key = user_key;
            self.value = value;
            self.valid = true;
            return;
        }
    }
}
