//! The compaction iterator: reads the merged, sorted entries of a
//! compaction's inputs and yields what must survive (RocksDB's
//! `CompactionIterator` and `MergeHelper`).
//!
//! Entries are taken one user key at a time, newest first. Snapshots cut
//! the sequence space into *stripes*: entries in the same stripe are seen
//! by exactly the same readers. For each key:
//! * In a stripe, only the newest Put or Delete is kept; older entries of
//!   that stripe are shadowed and dropped.
//! * An entry covered by a range tombstone in its own stripe is dropped.
//! * Merge operands above a Put/Delete of the same stripe are folded into
//!   one Put (at the newest operand's sequence); with nothing older
//!   anywhere (the key's bottom), they fold onto an absent value. Operands
//!   cut by a stripe boundary are kept as they are.
//! * A Delete in the oldest stripe is dropped when no file beyond the
//!   output level may hold the key.
//! * The compaction filter sees the newest Put of a key when no snapshot
//!   can see it; `Remove` turns it into a Delete at the same sequence.
//!
//! Sequence numbers are never rewritten (no zeroing at the bottom), so a
//! range tombstone means the same thing wherever a fragment of it lives.
//!
//! Invariant: the output is in strictly increasing internal-key order and
//! every reader at any live snapshot (and at the latest sequence) resolves
//! every key to the same value as with the inputs.

use super::BeyondOutputLevel;
use super::fragments::Fragments;
use crate::compaction_filter::{CompactionFilterRef, Decision};
use crate::error::{Error, Result};
use crate::format::{SequenceNumber, ValueType, make_internal_key, parse_internal_key};
use crate::merge_operator::MergeOperatorRef;
use crate::table::iterator::InternalIterator;
use crate::util::comparator::ComparatorRef;

/// Counters of what the iterator did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactionIterStats {
    pub input_records: u64,
    pub output_records: u64,
    pub dropped_shadowed: u64,
    pub dropped_covered: u64,
    pub dropped_deletions: u64,
    pub merged_operands: u64,
    pub filtered: u64,
}

impl CompactionIterStats {
    pub fn add(&mut self, o: &CompactionIterStats) {
        self.input_records += o.input_records;
        self.output_records += o.output_records;
        self.dropped_shadowed += o.dropped_shadowed;
        self.dropped_covered += o.dropped_covered;
        self.dropped_deletions += o.dropped_deletions;
        self.merged_operands += o.merged_operands;
        self.filtered += o.filtered;
    }
}

/// The rules' parameters.
#[derive(Clone)]
pub struct CompactionRules {
    pub ucmp: ComparatorRef,
    /// Live snapshots, ascending.
    pub snapshots: Vec<SequenceNumber>,
    pub merge_operator: Option<MergeOperatorRef>,
    pub filter: Option<CompactionFilterRef>,
    pub output_level: usize,
}

impl std::fmt::Debug for CompactionRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionRules")
            .field("snapshots", &self.snapshots)
            .field("output_level", &self.output_level)
            .finish()
    }
}

impl CompactionRules {
    /// The stripe of `seq`: how many snapshots cannot see it.
    pub fn stripe(&self, seq: SequenceNumber) -> usize {
        self.snapshots.partition_point(|&s| s < seq)
    }
}

struct Entry {
    seq: SequenceNumber,
    t: ValueType,
    value: Vec<u8>,
}

/// Yields the surviving entries of a sorted input, key by key.
pub struct CompactionIterator<'a> {
    input: Box<dyn InternalIterator + Send + 'a>,
    /// Stop before this user key (exclusive; subcompaction bound).
    end: Option<Vec<u8>>,
    rules: CompactionRules,
    /// All input tombstones (for coverage; dropped ones still cover).
    tombstones: Fragments,
    beyond: BeyondOutputLevel,
    out: std::collections::VecDeque<(Vec<u8>, Vec<u8>)>,
    pub stats: CompactionIterStats,
    /// The user key of the group last produced.
    current_user_key: Vec<u8>,
}

impl std::fmt::Debug for CompactionIterator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionIterator")
            .field("rules", &self.rules)
            .field("stats", &self.stats)
            .finish()
    }
}

impl<'a> CompactionIterator<'a> {
    /// REQUIRES: `input` is positioned at the first entry to consider.
    pub fn new(
        input: Box<dyn InternalIterator + Send + 'a>,
        end: Option<Vec<u8>>,
        rules: CompactionRules,
        tombstones: Fragments,
        beyond: BeyondOutputLevel,
    ) -> Self {
        CompactionIterator {
            input,
            end,
            rules,
            tombstones,
            beyond,
            out: std::collections::VecDeque::new(),
            stats: CompactionIterStats::default(),
            current_user_key: Vec::new(),
        }
    }

    /// The next surviving `(internal key, value)`, or `None` at the end.
    pub fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            if let Some(e) = self.out.pop_front() {
                self.stats.output_records += 1;
                return Ok(Some(e));
            }
            if !self.next_group()? {
                return Ok(None);
            }
        }
    }

    /// True if the entry `next_entry` returned last began a new user key
    /// group (output files are only cut there).
    pub fn current_user_key(&self) -> &[u8] {
        &self.current_user_key
    }

    /// Reads one user key's entries and resolves them into `out`. False
    /// at the end of the input.
    fn next_group(&mut self) -> Result<bool> {
        if !self.input.valid() {
            self.input.status()?;
            return Ok(false);
        }
        let first = parse_internal_key(self.input.key())
            .ok_or_else(|| Error::corruption("", 0, "compaction input: bad internal key"))?;
        let user_key = first.user_key.to_vec();
        if let Some(end) = &self.end
            && self.rules.ucmp.compare(&user_key, end) != std::cmp::Ordering::Less
        {
            return Ok(false);
        }
        let mut entries = Vec::new();
        while self.input.valid() {
            let p = parse_internal_key(self.input.key())
                .ok_or_else(|| Error::corruption("", 0, "compaction input: bad internal key"))?;
            if p.user_key != user_key.as_slice() {
                break;
            }
            entries.push(Entry {
                seq: p.sequence,
                t: p.value_type,
                value: self.input.value().to_vec(),
            });
            self.input.next();
        }
        self.input.status()?;
        self.stats.input_records += entries.len() as u64;
        let covering = self.tombstones.covering(&user_key).to_vec();
        let resolved = self.resolve(&user_key, entries, &covering)?;
        for (seq, t, v) in resolved {
            self.out
                .push_back((make_internal_key(&user_key, seq, t), v));
        }
        self.current_user_key = user_key;
        Ok(true)
    }

    fn full_merge(
        &self,
        key: &[u8],
        base: Option<&[u8]>,
        ops: &[(SequenceNumber, Vec<u8>)],
    ) -> Result<Vec<u8>> {
        let op = self.rules.merge_operator.as_ref().ok_or_else(|| {
            Error::InvalidArgument("merge operands without a merge operator".into())
        })?;
        // `ops` is newest first; the operator wants oldest first.
        let refs: Vec<&[u8]> = ops.iter().rev().map(|(_, v)| v.as_slice()).collect();
        op.full_merge(key, base, &refs)
            .ok_or_else(|| Error::corruption("", 0, format!("merge operator {} failed", op.name())))
    }

    /// Applies the module's rules to one key's entries (newest first).
    fn resolve(
        &mut self,
        key: &[u8],
        entries: Vec<Entry>,
        covering: &[SequenceNumber],
    ) -> Result<Vec<(SequenceNumber, ValueType, Vec<u8>)>> {
        let mut out = Vec::new();
        let mut stripe_cur: Option<usize> = None;
        let mut settled = false;
        let mut pending: Vec<(SequenceNumber, Vec<u8>)> = Vec::new();
        let mut bottom: Option<bool> = None;
        let newest_snapshot = self.rules.snapshots.last().copied();
        let can_merge = self.rules.merge_operator.is_some();
        for (i, e) in entries.into_iter().enumerate() {
            let s = self.rules.stripe(e.seq);
            if stripe_cur != Some(s) {
                for (seq, v) in pending.drain(..) {
                    out.push((seq, ValueType::Merge, v));
                }
                stripe_cur = Some(s);
                settled = false;
            }
            if settled {
                self.stats.dropped_shadowed += 1;
                continue;
            }
            // The oldest tombstone newer than the entry decides coverage.
            if let Some(&t) = covering.iter().rev().find(|&&t| t > e.seq)
                && self.rules.stripe(t) == s
            {
                self.stats.dropped_covered += 1;
                continue;
            }
            let mut t = e.t;
            let mut value = e.value;
            if i == 0
                && t == ValueType::Value
                && newest_snapshot.is_none_or(|n| e.seq > n)
                && let Some(f) = &self.rules.filter
            {
                match f.filter(self.rules.output_level, key, &value) {
                    Decision::Keep => {}
                    Decision::Remove => {
                        self.stats.filtered += 1;
                        t = ValueType::Deletion;
                        value = Vec::new();
                    }
                    Decision::ChangeValue(v) => {
                        self.stats.filtered += 1;
                        value = v;
                    }
                }
            }
            match t {
                ValueType::Merge if can_merge => pending.push((e.seq, value)),
                ValueType::Merge => out.push((e.seq, t, value)),
                ValueType::Value if !pending.is_empty() => {
                    let merged = self.full_merge(key, Some(&value), &pending)?;
                    self.stats.merged_operands += pending.len() as u64;
                    out.push((pending[0].0, ValueType::Value, merged));
                    pending.clear();
                    settled = true;
                }
                ValueType::Deletion | ValueType::SingleDeletion if !pending.is_empty() => {
                    let merged = self.full_merge(key, None, &pending)?;
                    self.stats.merged_operands += pending.len() as u64;
                    out.push((pending[0].0, ValueType::Value, merged));
                    pending.clear();
                    settled = true;
                }
                ValueType::Deletion | ValueType::SingleDeletion => {
                    settled = true;
                    let at_bottom =
                        s == 0 && *bottom.get_or_insert_with(|| !self.beyond.may_contain(key));
                    if at_bottom {
                        self.stats.dropped_deletions += 1;
                    } else {
                        out.push((e.seq, t, value));
                    }
                }
                _ => {
                    out.push((e.seq, t, value));
                    settled = true;
                }
            }
        }
        if !pending.is_empty() {
            if *bottom.get_or_insert_with(|| !self.beyond.may_contain(key)) {
                let merged = self.full_merge(key, None, &pending)?;
                self.stats.merged_operands += pending.len() as u64;
                out.push((pending[0].0, ValueType::Value, merged));
            } else {
                for (seq, v) in pending.drain(..) {
                    out.push((seq, ValueType::Merge, v));
                }
            }
        }
        Ok(out)
    }
}
