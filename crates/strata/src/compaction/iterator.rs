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
//! * At the bottom (`zero_bottom_seqnos`; compactions into level 1 or
//!   deeper), the surviving Put of a key in the oldest stripe gets
//!   sequence number 0, as RocksDB's `PrepareOutput` does: every reader
//!   sees it either way, and zeros compress (RocksDB's files of the same
//!   data are some 6% smaller for it). Not when an input tombstone older
//!   than the Put, or as old (an ingested file holds its tombstones and
//!   keys at one sequence number), covers the key: with sequence 0 the
//!   tombstone would cover it. Such tombstones elsewhere cannot exist: a
//!   tombstone older than a key it covers lives in the key's file or below
//!   it, and below it the key is not at the bottom.
//!
//! * With a snapshot checker (WritePrepared transactions), stripes follow
//!   what it says each snapshot sees, and an entry not yet committed is
//!   kept as it is and settles nothing (RocksDB's `CompactionIterator`
//!   with a `SnapshotChecker`): pending merge operands above it are kept
//!   unmerged, and no deletion below the bottom is dropped above it.
//!
//! Invariant: the output is in strictly increasing internal-key order and
//! every reader at any live snapshot (and at the latest sequence) resolves
//! every key to the same value as with the inputs.

use super::{BeyondOutputLevel, SnapshotCheckerRef, UNCOMMITTED, stripe_of};
use crate::compaction_filter::{CompactionFilterRef, Decision};
use crate::error::{Error, Result};
use crate::format::dbformat::pack_sequence_and_type;
use crate::format::iterator::InternalIterator;
use crate::format::range_tombstones::TombstoneCursor;
use crate::format::{SequenceNumber, ValueType, parse_internal_key};
use crate::merge_operator::MergeOperatorRef;
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
    /// Entries written with sequence number 0.
    pub zeroed_seqnos: u64,
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
        self.zeroed_seqnos += o.zeroed_seqnos;
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
    /// Give the bottom Put of a key in the oldest stripe sequence number 0
    /// (see the module comment). Only for outputs to level 1 or deeper:
    /// level 0's order is by sequence number.
    pub zero_bottom_seqnos: bool,
    /// Set while WritePrepared transactions have entries whose visibility
    /// sequence order does not give (see [`super::SnapshotChecker`]).
    pub snapshot_checker: Option<SnapshotCheckerRef>,
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
    /// The stripe of `seq`: how many snapshots cannot see it
    /// ([`UNCOMMITTED`] for a prepared entry not yet committed).
    pub fn stripe(&self, seq: SequenceNumber) -> usize {
        stripe_of(&self.snapshots, self.snapshot_checker.as_deref(), seq)
    }
}

/// One input entry of the current group; its value is `arena[start..end]`.
#[derive(Clone, Copy)]
struct Entry {
    seq: SequenceNumber,
    t: ValueType,
    start: usize,
    end: usize,
}

/// Where an output entry's value lives.
enum OutValue {
    /// `arena[start..end]` of the current group.
    Arena(usize, usize),
    /// Produced here (merge result, filter change).
    Owned(Vec<u8>),
}

/// Yields the surviving entries of a sorted input, key by key.
pub struct CompactionIterator<'a> {
    input: Box<dyn InternalIterator + Send + 'a>,
    /// Stop before this user key (exclusive; subcompaction bound).
    end: Option<Vec<u8>>,
    rules: CompactionRules,
    /// All input tombstones (for coverage; dropped ones still cover).
    tombstones: TombstoneCursor,
    beyond: BeyondOutputLevel,
    pub stats: CompactionIterStats,
    /// The user key of the current group.
    current_user_key: Vec<u8>,
    /// The current group's input values, back to back (reused).
    arena: Vec<u8>,
    entries: Vec<Entry>,
    covering: Vec<SequenceNumber>,
    /// The current group's surviving entries in output order, and how
    /// many were handed out.
    out: Vec<(SequenceNumber, ValueType, OutValue)>,
    out_pos: usize,
    /// The internal key of the entry handed out last.
    ikey: Vec<u8>,
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
        tombstones: TombstoneCursor,
        beyond: BeyondOutputLevel,
    ) -> Self {
        CompactionIterator {
            input,
            end,
            rules,
            tombstones,
            beyond,
            stats: CompactionIterStats::default(),
            current_user_key: Vec::new(),
            arena: Vec::new(),
            entries: Vec::new(),
            covering: Vec::new(),
            out: Vec::new(),
            out_pos: 0,
            ikey: Vec::new(),
        }
    }

    /// The next surviving `(internal key, value)`, or `None` at the end.
    #[cfg(test)]
    pub fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.next_ref()?.map(|(k, v)| (k.to_vec(), v.to_vec())))
    }

    /// [`CompactionIterator::next_entry`] without copies: the slices live
    /// until the next call.
    pub fn next_ref(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        while self.out_pos >= self.out.len() {
            if !self.next_group()? {
                return Ok(None);
            }
        }
        let (seq, t) = (self.out[self.out_pos].0, self.out[self.out_pos].1);
        self.out_pos += 1;
        self.stats.output_records += 1;
        self.ikey.clear();
        self.ikey.extend_from_slice(&self.current_user_key);
        self.ikey
            .extend_from_slice(&pack_sequence_and_type(seq, t).to_le_bytes());
        let value = self.value_of(&self.out[self.out_pos - 1].2);
        Ok(Some((&self.ikey, value)))
    }

    /// The user key of the entry handed out last.
    #[cfg(test)]
    pub fn current_user_key(&self) -> &[u8] {
        &self.current_user_key
    }

    fn value_of<'b>(&'b self, v: &'b OutValue) -> &'b [u8] {
        match v {
            OutValue::Arena(a, b) => &self.arena[*a..*b],
            OutValue::Owned(o) => o,
        }
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
        if let Some(end) = &self.end
            && self.rules.ucmp.compare(first.user_key, end) != std::cmp::Ordering::Less
        {
            return Ok(false);
        }
        self.current_user_key.clear();
        self.current_user_key.extend_from_slice(first.user_key);
        self.arena.clear();
        self.entries.clear();
        while self.input.valid() {
            let p = parse_internal_key(self.input.key())
                .ok_or_else(|| Error::corruption("", 0, "compaction input: bad internal key"))?;
            if p.user_key != self.current_user_key.as_slice() {
                break;
            }
            let start = self.arena.len();
            self.arena.extend_from_slice(self.input.value());
            self.entries.push(Entry {
                seq: p.sequence,
                t: p.value_type,
                start,
                end: self.arena.len(),
            });
            self.input.next();
        }
        self.input.status()?;
        self.stats.input_records += self.entries.len() as u64;
        self.covering.clear();
        let covering = self.tombstones.covering(&self.current_user_key);
        self.covering.extend_from_slice(covering);
        self.out.clear();
        self.out_pos = 0;
        self.resolve()?;
        Ok(true)
    }

    fn full_merge(
        &self,
        base: Option<&[u8]>,
        ops: &[(SequenceNumber, OutValue)],
    ) -> Result<Vec<u8>> {
        let op = self.rules.merge_operator.as_ref().ok_or_else(|| {
            Error::InvalidArgument("merge operands without a merge operator".into())
        })?;
        // `ops` is newest first; the operator wants oldest first.
        let refs: Vec<&[u8]> = ops.iter().rev().map(|(_, v)| self.value_of(v)).collect();
        op.full_merge(&self.current_user_key, base, &refs)
            .ok_or_else(|| Error::corruption("", 0, format!("merge operator {} failed", op.name())))
    }

    /// True if no file beyond the output level may hold the current key
    /// (asked at most once per key).
    fn at_bottom(&mut self, cached: &mut Option<bool>) -> bool {
        if let Some(b) = cached {
            return *b;
        }
        let b = !self.beyond.may_contain(&self.current_user_key);
        *cached = Some(b);
        b
    }

    /// Applies the module's rules to the current group (newest first),
    /// filling `out`.
    fn resolve(&mut self) -> Result<()> {
        let mut stripe_cur: Option<usize> = None;
        let mut settled = false;
        // Merge operands waiting for a base, newest first.
        let mut pending: Vec<(SequenceNumber, OutValue)> = Vec::new();
        let mut bottom: Option<bool> = None;
        let unseen = self.rules.snapshots.len();
        let can_merge = self.rules.merge_operator.is_some();
        let entries = std::mem::take(&mut self.entries);
        let mut out = std::mem::take(&mut self.out);
        let r = (|| -> Result<()> {
            for (i, e) in entries.iter().enumerate() {
                let s = self.rules.stripe(e.seq);
                if s == UNCOMMITTED {
                    for (seq, v) in pending.drain(..) {
                        out.push((seq, ValueType::Merge, v));
                    }
                    out.push((e.seq, e.t, OutValue::Arena(e.start, e.end)));
                    stripe_cur = None;
                    settled = false;
                    continue;
                }
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
                if let Some(&t) = self.covering.iter().rev().find(|&&t| t > e.seq)
                    && self.rules.stripe(t) == s
                {
                    self.stats.dropped_covered += 1;
                    continue;
                }
                let mut t = e.t;
                let mut value = OutValue::Arena(e.start, e.end);
                if i == 0
                    && t == ValueType::Value
                    && s == unseen
                    && let Some(f) = &self.rules.filter
                {
                    match f.filter(
                        self.rules.output_level,
                        &self.current_user_key,
                        &self.arena[e.start..e.end],
                    ) {
                        Decision::Keep => {}
                        Decision::Remove => {
                            self.stats.filtered += 1;
                            t = ValueType::Deletion;
                            value = OutValue::Owned(Vec::new());
                        }
                        Decision::ChangeValue(v) => {
                            self.stats.filtered += 1;
                            value = OutValue::Owned(v);
                        }
                    }
                }
                match t {
                    ValueType::Merge if can_merge => pending.push((e.seq, value)),
                    ValueType::Merge => out.push((e.seq, t, value)),
                    ValueType::Value if !pending.is_empty() => {
                        let base = self.value_of(&value).to_vec();
                        let merged = self.full_merge(Some(&base), &pending)?;
                        self.stats.merged_operands += pending.len() as u64;
                        out.push((pending[0].0, ValueType::Value, OutValue::Owned(merged)));
                        pending.clear();
                        settled = true;
                    }
                    ValueType::Deletion | ValueType::SingleDeletion if !pending.is_empty() => {
                        let merged = self.full_merge(None, &pending)?;
                        self.stats.merged_operands += pending.len() as u64;
                        out.push((pending[0].0, ValueType::Value, OutValue::Owned(merged)));
                        pending.clear();
                        settled = true;
                    }
                    ValueType::Deletion | ValueType::SingleDeletion => {
                        settled = true;
                        let uncommitted_below = self.rules.snapshot_checker.is_some()
                            && entries[i + 1..]
                                .iter()
                                .any(|o| self.rules.stripe(o.seq) == UNCOMMITTED);
                        if s == 0 && !uncommitted_below && self.at_bottom(&mut bottom) {
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
                if self.at_bottom(&mut bottom) {
                    let merged = self.full_merge(None, &pending)?;
                    self.stats.merged_operands += pending.len() as u64;
                    out.push((pending[0].0, ValueType::Value, OutValue::Owned(merged)));
                } else {
                    for (seq, v) in pending.drain(..) {
                        out.push((seq, ValueType::Merge, v));
                    }
                }
            }
            // The oldest output entry is the only one of the oldest stripe
            // that can be a Put.
            if self.rules.zero_bottom_seqnos
                && let Some(last) = out.last_mut()
                && matches!(last.1, ValueType::Value | ValueType::WideColumnEntity)
                && last.0 > 0
                && self.rules.stripe(last.0) == 0
                && !self.covering.iter().any(|&t| t <= last.0)
                && self.at_bottom(&mut bottom)
            {
                last.0 = 0;
                self.stats.zeroed_seqnos += 1;
            }
            Ok(())
        })();
        self.entries = entries;
        self.out = out;
        r
    }
}
