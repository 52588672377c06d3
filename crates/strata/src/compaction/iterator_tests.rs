//! Tests of the compaction iterator's keep/drop rules (snapshot stripes,
//! shadowing, deletions at the bottom, merge operands, range tombstones,
//! the compaction filter), and a randomized check that a whole compaction
//! job (iterator, tombstone selection, output cutting, subcompactions)
//! keeps every read at every live snapshot and at the latest sequence.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

use super::iterator::{CompactionIterator, CompactionRules};
use super::job::{self, JobContext};
use super::{BeyondOutputLevel, Compaction, CompactionReason, LevelInputs};
use crate::compaction_filter::{CompactionFilter, CompactionFilterRef, Decision};
use crate::error::Result;
use crate::format::dbformat::{InternalKeyComparator, ValueType, make_internal_key};
use crate::format::iterator::InternalIterator;
use crate::format::range_tombstones::{FragmentedRangeTombstoneList, TombstoneCursor};
use crate::format::{MAX_SEQUENCE_NUMBER, SequenceNumber, parse_internal_key};
use crate::fs::FileSystemRef;
use crate::fs::mem::MemFileSystem;
use crate::merge_operator::{MergeOperator, MergeOperatorRef, StringAppendOperator};
use crate::table::{CompressionType, Table, TableOptions};
use crate::util::comparator::bytewise;
use crate::version::{FileMetaData, Version, VersionBuilder, VersionEdit};

// ---------------------------------------------------------------------
// Inputs.

/// A sorted in-memory internal iterator.
struct VecIter {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
    icmp: InternalKeyComparator,
}

impl VecIter {
    fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecIter {
        let icmp = InternalKeyComparator::new(bytewise());
        entries.sort_by(|a, b| icmp.compare(&a.0, &b.0));
        VecIter {
            entries,
            pos: 0,
            icmp,
        }
    }
}

impl InternalIterator for VecIter {
    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        self.pos = self.entries.len().saturating_sub(1);
        if self.entries.is_empty() {
            self.pos = 0;
        }
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = self
            .entries
            .partition_point(|(k, _)| self.icmp.compare(k, target).is_lt());
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let p = self
            .entries
            .partition_point(|(k, _)| self.icmp.compare(k, target).is_le());
        self.pos = if p == 0 { self.entries.len() } else { p - 1 };
    }
    fn next(&mut self) {
        self.pos += 1;
    }
    fn prev(&mut self) {
        self.pos = self.pos.checked_sub(1).unwrap_or(self.entries.len());
    }
    fn key(&self) -> &[u8] {
        &self.entries[self.pos].0
    }
    fn value(&self) -> &[u8] {
        &self.entries[self.pos].1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// One point entry: `(user key, seq, type, value)`.
type Point = (String, SequenceNumber, ValueType, String);

fn put(k: &str, s: u64, v: &str) -> Point {
    (k.into(), s, ValueType::Value, v.into())
}
fn del(k: &str, s: u64) -> Point {
    (k.into(), s, ValueType::Deletion, String::new())
}
fn sdel(k: &str, s: u64) -> Point {
    (k.into(), s, ValueType::SingleDeletion, String::new())
}
fn merge(k: &str, s: u64, v: &str) -> Point {
    (k.into(), s, ValueType::Merge, v.into())
}

fn encode(points: &[Point]) -> Vec<(Vec<u8>, Vec<u8>)> {
    points
        .iter()
        .map(|(k, s, t, v)| {
            (
                make_internal_key(k.as_bytes(), *s, *t),
                v.as_bytes().to_vec(),
            )
        })
        .collect()
}

fn file(number: u64, lo: &str, hi: &str, size: u64) -> FileMetaData {
    FileMetaData::new(
        number,
        size,
        make_internal_key(lo.as_bytes(), 2, ValueType::Value),
        make_internal_key(hi.as_bytes(), 1, ValueType::Value),
        1,
        2,
    )
}

/// A version with `inputs` on L1 and `deeper` on L3, and a compaction of
/// the inputs into L2.
fn compaction(inputs: Vec<FileMetaData>, deeper: Vec<FileMetaData>) -> Compaction {
    let icmp = InternalKeyComparator::new(bytewise());
    let mut edit = VersionEdit::new();
    for f in &inputs {
        edit.add_file(1, f.clone());
    }
    for f in &deeper {
        edit.add_file(3, f.clone());
    }
    let mut b = VersionBuilder::new(Arc::new(Version::new(icmp, 4)));
    b.apply(&edit).unwrap();
    let version = Arc::new(b.finish(1).unwrap());
    Compaction {
        cf_id: 0,
        inputs: vec![
            LevelInputs {
                level: 1,
                files: version.files(1).to_vec(),
            },
            LevelInputs {
                level: 2,
                files: Vec::new(),
            },
        ],
        output_level: 2,
        target_file_size: 1 << 20,
        max_grandparent_overlap_bytes: u64::MAX,
        grandparents: version.files(3).to_vec(),
        reason: CompactionReason::ManualCompaction,
        score: 0.0,
        deletion_only: false,
        allow_trivial_move: false,
        version,
    }
}

// ---------------------------------------------------------------------
// Running the iterator alone.

struct Run<'a> {
    points: Vec<Point>,
    snapshots: Vec<SequenceNumber>,
    /// `(begin, end, seq)`.
    tombstones: Vec<(&'a str, &'a str, SequenceNumber)>,
    /// Key ranges a deeper level holds.
    deeper: Vec<(&'a str, &'a str)>,
    merge: bool,
    filter: Option<CompactionFilterRef>,
    end: Option<&'a str>,
    zero: bool,
}

impl Default for Run<'_> {
    fn default() -> Self {
        Run {
            points: Vec::new(),
            snapshots: Vec::new(),
            tombstones: Vec::new(),
            deeper: Vec::new(),
            merge: true,
            filter: None,
            end: None,
            zero: false,
        }
    }
}

fn rules(snapshots: Vec<u64>, merge: bool, filter: Option<CompactionFilterRef>) -> CompactionRules {
    CompactionRules {
        ucmp: bytewise(),
        snapshots,
        merge_operator: merge
            .then(|| Arc::new(StringAppendOperator::default()) as MergeOperatorRef),
        filter,
        output_level: 2,
        zero_bottom_seqnos: false,
    }
}

impl Run<'_> {
    fn go(&self) -> (Vec<Point>, super::iterator::CompactionIterStats) {
        let deeper: Vec<FileMetaData> = self
            .deeper
            .iter()
            .enumerate()
            .map(|(i, (lo, hi))| file(100 + i as u64, lo, hi, 100))
            .collect();
        let c = compaction(vec![file(1, "a", "z", 100)], deeper);
        let tombs: Vec<(Vec<u8>, Vec<u8>, u64)> = self
            .tombstones
            .iter()
            .map(|(b, e, s)| (b.as_bytes().to_vec(), e.as_bytes().to_vec(), *s))
            .collect();
        let mut input = VecIter::new(encode(&self.points));
        input.seek_to_first();
        let mut it = CompactionIterator::new(
            Box::new(input),
            self.end.map(|e| e.as_bytes().to_vec()),
            CompactionRules {
                zero_bottom_seqnos: self.zero,
                ..rules(self.snapshots.clone(), self.merge, self.filter.clone())
            },
            TombstoneCursor::new(std::sync::Arc::new(FragmentedRangeTombstoneList::new(
                bytewise(),
                &tombs,
            ))),
            BeyondOutputLevel::new(&c, bytewise()),
        );
        let mut out: Vec<Point> = Vec::new();
        let mut last: Option<Vec<u8>> = None;
        while let Some((k, v)) = it.next_entry().unwrap() {
            if let Some(l) = &last {
                assert!(
                    c.version.icmp().compare(l, &k).is_lt(),
                    "output out of order"
                );
            }
            let p = parse_internal_key(&k).unwrap();
            assert_eq!(it.current_user_key(), p.user_key);
            out.push((
                String::from_utf8(p.user_key.to_vec()).unwrap(),
                p.sequence,
                p.value_type,
                String::from_utf8(v).unwrap(),
            ));
            last = Some(k);
        }
        (out, it.stats)
    }

    fn out(&self) -> Vec<Point> {
        self.go().0
    }
}

// ---------------------------------------------------------------------
// Shadowing and snapshot stripes.

#[test]
fn shadowed_versions_dropped_within_a_stripe() {
    let points = vec![
        put("a", 10, "a10"),
        put("a", 8, "a8"),
        put("a", 5, "a5"),
        put("a", 3, "a3"),
        put("b", 4, "b4"),
    ];
    let (out, stats) = Run {
        points: points.clone(),
        ..Run::default()
    }
    .go();
    assert_eq!(out, vec![put("a", 10, "a10"), put("b", 4, "b4")]);
    assert_eq!(stats.input_records, 5);
    assert_eq!(stats.output_records, 2);
    assert_eq!(stats.dropped_shadowed, 3);
    // A snapshot at 6 sees a5: stripes {10, 8} and {5, 3}.
    let out = Run {
        points: points.clone(),
        snapshots: vec![6],
        ..Run::default()
    }
    .out();
    assert_eq!(
        out,
        vec![put("a", 10, "a10"), put("a", 5, "a5"), put("b", 4, "b4")]
    );
    // A snapshot equal to a sequence sees that entry: 8 is kept, 5 and 3
    // (stripe 0) collapse to 5; 9 and 10 are one stripe with 10.
    let out = Run {
        points,
        snapshots: vec![5, 8],
        ..Run::default()
    }
    .out();
    assert_eq!(
        out,
        vec![
            put("a", 10, "a10"),
            put("a", 8, "a8"),
            put("a", 5, "a5"),
            put("b", 4, "b4")
        ]
    );
}

#[test]
fn deletions_dropped_at_the_bottom_of_the_oldest_stripe_only() {
    let points = vec![del("a", 10), put("a", 5, "a5"), put("b", 4, "b4")];
    // Nothing deeper: the deletion and what it shadows go.
    let (out, stats) = Run {
        points: points.clone(),
        ..Run::default()
    }
    .go();
    assert_eq!(out, vec![put("b", 4, "b4")]);
    assert_eq!(stats.dropped_deletions, 1);
    assert_eq!(stats.dropped_shadowed, 1);
    // A deeper file holding "a": the deletion must stay.
    let out = Run {
        points: points.clone(),
        deeper: vec![("a", "a")],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![del("a", 10), put("b", 4, "b4")]);
    // A deeper file elsewhere does not matter.
    let out = Run {
        points: points.clone(),
        deeper: vec![("m", "z")],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![put("b", 4, "b4")]);
    // A snapshot under the deletion: it is not in the oldest stripe, and
    // the snapshot still reads a5.
    let out = Run {
        points: points.clone(),
        snapshots: vec![7],
        ..Run::default()
    }
    .out();
    assert_eq!(
        out,
        vec![del("a", 10), put("a", 5, "a5"), put("b", 4, "b4")]
    );
    // A snapshot above the deletion: it is in the oldest stripe.
    let out = Run {
        points,
        snapshots: vec![12],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![put("b", 4, "b4")]);
    // SingleDelete behaves as Delete.
    let out = Run {
        points: vec![sdel("a", 10), put("a", 5, "a5")],
        deeper: vec![("a", "b")],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![sdel("a", 10)]);
}

/// RocksDB's sequence-number zeroing at the bottom: only the surviving Put
/// of the oldest stripe, only where nothing deeper holds the key, and not
/// under an older tombstone that would then cover it.
#[test]
fn bottom_puts_of_the_oldest_stripe_get_sequence_zero() {
    let run = |points: Vec<Point>, snapshots: Vec<u64>, deeper, tombstones| {
        Run {
            points,
            snapshots,
            deeper,
            tombstones,
            zero: true,
            ..Run::default()
        }
        .go()
    };
    let (out, stats) = run(
        vec![put("a", 10, "a10"), put("a", 5, "a5"), put("b", 4, "b4")],
        vec![],
        vec![],
        vec![],
    );
    assert_eq!(out, vec![put("a", 0, "a10"), put("b", 0, "b4")]);
    assert_eq!(stats.zeroed_seqnos, 2);
    // A snapshot at 7: a10 is newer than it and keeps its number; a5 is
    // the oldest stripe's Put.
    let (out, _) = run(
        vec![put("a", 10, "a10"), put("a", 5, "a5"), put("b", 9, "b9")],
        vec![7],
        vec![],
        vec![],
    );
    assert_eq!(
        out,
        vec![put("a", 10, "a10"), put("a", 0, "a5"), put("b", 9, "b9")]
    );
    // A deeper file holding "a": not the bottom for "a".
    let (out, _) = run(
        vec![put("a", 10, "a10"), put("b", 4, "b4")],
        vec![],
        vec![("a", "a")],
        vec![],
    );
    assert_eq!(out, vec![put("a", 10, "a10"), put("b", 0, "b4")]);
    // Merges fold into a Put at the bottom, which is zeroed; deletions and
    // operands that stay are never zeroed.
    let (out, _) = run(
        vec![merge("m", 8, "x"), merge("m", 6, "y"), del("d", 3)],
        vec![],
        vec![("d", "d")],
        vec![],
    );
    assert_eq!(out, vec![del("d", 3), put("m", 0, "y,x")]);
    let (out, _) = run(vec![merge("m", 8, "x")], vec![], vec![("m", "m")], vec![]);
    assert_eq!(out, vec![merge("m", 8, "x")]);
    // An older tombstone over the key (kept for a deeper file elsewhere in
    // its range): zeroing b12 would put it under [b, c)@10.
    let (out, _) = run(
        vec![put("b", 12, "b12")],
        vec![],
        vec![("bz", "bz")],
        vec![("b", "c", 10)],
    );
    assert_eq!(out, vec![put("b", 12, "b12")]);
    // As old as the Put (an ingested file's tombstone and keys share one
    // number): the tombstone does not cover it, and must not after.
    let (out, _) = run(
        vec![put("b", 12, "b12")],
        vec![],
        vec![("bz", "bz")],
        vec![("b", "c", 12)],
    );
    assert_eq!(out, vec![put("b", 12, "b12")]);
    // A newer tombstone over it is fine (it covers the key either way,
    // here the Put is dropped).
    let (out, _) = run(
        vec![put("b", 8, "b8"), put("c", 8, "c8")],
        vec![],
        vec![],
        vec![("b", "c", 10)],
    );
    assert_eq!(out, vec![put("c", 0, "c8")]);
}

// ---------------------------------------------------------------------
// Merge operands.

#[test]
fn merge_operands_fold_onto_a_put_or_delete_of_their_stripe() {
    // Onto a Put: base first, then operands oldest first; the result
    // takes the newest operand's sequence.
    let out = Run {
        points: vec![
            merge("a", 10, "x"),
            merge("a", 8, "y"),
            put("a", 5, "b"),
            put("a", 2, "old"),
        ],
        deeper: vec![("a", "z")],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![put("a", 10, "b,y,x")]);
    // Onto a Delete: onto nothing; the Delete goes.
    let out = Run {
        points: vec![merge("a", 10, "x"), del("a", 8), put("a", 5, "b")],
        deeper: vec![("a", "z")],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![put("a", 10, "x")]);
}

#[test]
fn merge_operands_at_the_bottom_fold_onto_nothing() {
    let points = vec![merge("a", 10, "x"), merge("a", 8, "y")];
    let (out, stats) = Run {
        points: points.clone(),
        ..Run::default()
    }
    .go();
    assert_eq!(out, vec![put("a", 10, "y,x")]);
    assert_eq!(stats.merged_operands, 2);
    // Not the bottom: a deeper file may hold a base value.
    let out = Run {
        points: points.clone(),
        deeper: vec![("a", "a")],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![merge("a", 10, "x"), merge("a", 8, "y")]);
    // No merge operator: operands stay as they are.
    let out = Run {
        points,
        merge: false,
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![merge("a", 10, "x"), merge("a", 8, "y")]);
}

#[test]
fn merge_operands_cut_by_a_snapshot_stay() {
    // Snapshot 9 separates x from y and b: x stays an operand, y folds
    // onto b.
    let out = Run {
        points: vec![merge("a", 10, "x"), merge("a", 8, "y"), put("a", 5, "b")],
        snapshots: vec![9],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![merge("a", 10, "x"), put("a", 8, "b,y")]);
    // Snapshot 6 separates both operands from b: they stay; b stays.
    let out = Run {
        points: vec![merge("a", 10, "x"), merge("a", 8, "y"), put("a", 5, "b")],
        snapshots: vec![6],
        ..Run::default()
    }
    .out();
    assert_eq!(
        out,
        vec![merge("a", 10, "x"), merge("a", 8, "y"), put("a", 5, "b")]
    );
}

// ---------------------------------------------------------------------
// Range tombstones.

#[test]
fn range_tombstones_drop_what_they_cover_in_their_stripe() {
    let points = vec![
        put("a", 5, "a5"),
        put("b", 12, "b12"),
        put("b", 5, "b5"),
        put("c", 5, "c5"),
    ];
    // [b, c)@10 covers b5 (same stripe), not b12 (newer), not c (end is
    // exclusive), not a.
    let (out, stats) = Run {
        points: points.clone(),
        tombstones: vec![("b", "c", 10)],
        deeper: vec![("a", "z")],
        ..Run::default()
    }
    .go();
    assert_eq!(
        out,
        vec![put("a", 5, "a5"), put("b", 12, "b12"), put("c", 5, "c5")]
    );
    assert_eq!(stats.dropped_covered, 0);
    assert_eq!(stats.dropped_shadowed, 1);
    let (out, stats) = Run {
        points: vec![put("b", 5, "b5"), put("b", 3, "b3")],
        tombstones: vec![("b", "c", 10)],
        deeper: vec![("a", "z")],
        ..Run::default()
    }
    .go();
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(stats.dropped_covered, 2);
    // A snapshot between the tombstone and b5 reads b5: kept.
    let out = Run {
        points: vec![put("b", 5, "b5"), put("b", 3, "b3")],
        tombstones: vec![("b", "c", 10)],
        snapshots: vec![7],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![put("b", 5, "b5")]);
    // Of two tombstones, the oldest newer than the entry decides: [a, z)@6
    // is in b5's stripe although [a, z)@10 is not.
    let out = Run {
        points: vec![put("b", 5, "b5"), put("b", 3, "b3")],
        tombstones: vec![("a", "z", 10), ("a", "z", 6)],
        snapshots: vec![7],
        ..Run::default()
    }
    .out();
    assert!(out.is_empty(), "{out:?}");
    // A covered Put under merge operands of the same stripe: the operands
    // fold onto nothing at the bottom.
    let out = Run {
        points: vec![merge("b", 12, "x"), put("b", 5, "b5")],
        tombstones: vec![("b", "c", 10)],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![put("b", 12, "x")]);
}

// ---------------------------------------------------------------------
// The compaction filter.

/// Decides by value: "keep", "drop" (Remove), anything else is changed
/// to "changed". Records what it saw.
struct TestFilter {
    seen: Mutex<Vec<(usize, String, String)>>,
}

impl CompactionFilter for TestFilter {
    fn name(&self) -> &str {
        "TestFilter"
    }
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> Decision {
        let (k, v) = (
            String::from_utf8_lossy(key).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        );
        self.seen.lock().unwrap().push((level, k, v.clone()));
        match v.as_str() {
            "keep" => Decision::Keep,
            "drop" => Decision::Remove,
            _ => Decision::ChangeValue(b"changed".to_vec()),
        }
    }
}

fn test_filter() -> Arc<TestFilter> {
    Arc::new(TestFilter {
        seen: Mutex::new(Vec::new()),
    })
}

#[test]
fn compaction_filter_sees_only_the_newest_value_no_snapshot_sees() {
    let f = test_filter();
    let (out, stats) = Run {
        points: vec![
            put("a", 10, "keep"),
            put("a", 5, "old"),
            put("b", 10, "drop"),
            put("b", 5, "old"),
            put("c", 10, "x"),
            merge("d", 10, "m"),
            put("d", 5, "drop"),
        ],
        filter: Some(f.clone() as CompactionFilterRef),
        ..Run::default()
    }
    .go();
    // a: kept as is; b: removed (a deletion at the bottom, gone with what
    // it shadows); c: changed; d: the newest entry is an operand, so the
    // filter is not called and the operand folds onto "drop".
    assert_eq!(
        out,
        vec![
            put("a", 10, "keep"),
            put("c", 10, "changed"),
            put("d", 10, "drop,m")
        ]
    );
    assert_eq!(stats.filtered, 2);
    assert_eq!(
        *f.seen.lock().unwrap(),
        vec![
            (2, "a".into(), "keep".into()),
            (2, "b".into(), "drop".into()),
            (2, "c".into(), "x".into())
        ]
    );

    // Not at the bottom: Remove leaves a deletion at the same sequence.
    let out = Run {
        points: vec![put("b", 10, "drop"), put("b", 5, "old")],
        filter: Some(test_filter() as CompactionFilterRef),
        deeper: vec![("a", "z")],
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![del("b", 10)]);

    // A snapshot under the newest value: the filter still sees it (no
    // snapshot sees it) but not the older value the snapshot reads.
    let f = test_filter();
    let out = Run {
        points: vec![put("b", 10, "drop"), put("b", 5, "old")],
        snapshots: vec![7],
        filter: Some(f.clone() as CompactionFilterRef),
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![del("b", 10), put("b", 5, "old")]);
    assert_eq!(f.seen.lock().unwrap().len(), 1);

    // A snapshot sees the newest value: no filter.
    let f = test_filter();
    let out = Run {
        points: vec![put("b", 10, "drop"), put("c", 11, "x")],
        snapshots: vec![10],
        filter: Some(f.clone() as CompactionFilterRef),
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![put("b", 10, "drop"), put("c", 11, "changed")]);
    assert_eq!(*f.seen.lock().unwrap(), vec![(2, "c".into(), "x".into())]);
}

#[test]
fn end_bound_stops_before_the_key() {
    let points = vec![put("a", 5, "a"), put("b", 5, "b"), put("c", 5, "c")];
    let out = Run {
        points,
        end: Some("b"),
        ..Run::default()
    }
    .out();
    assert_eq!(out, vec![put("a", 5, "a")]);
}

// ---------------------------------------------------------------------
// Randomized: a whole job keeps every read.

use crate::util::rng::Rng;

const NUM_KEYS: u64 = 24;

fn key(i: u64) -> String {
    format!("k{i:02}")
}

/// What a reader at `snap` reads for `k`: the newest entry at or below
/// `snap` unless a tombstone at or below `snap` and newer covers it;
/// merge operands fold onto what is under them.
fn read(
    points: &[Point],
    tombs: &[(String, String, u64)],
    k: &str,
    snap: u64,
    op: &dyn MergeOperator,
) -> Option<String> {
    let covered_below = tombs
        .iter()
        .filter(|(b, e, s)| *s <= snap && b.as_str() <= k && k < e.as_str())
        .map(|t| t.2)
        .max()
        .unwrap_or(0);
    let mut es: Vec<&Point> = points.iter().filter(|p| p.0 == k && p.1 <= snap).collect();
    es.sort_by_key(|p| std::cmp::Reverse(p.1));
    let mut ops: Vec<&[u8]> = Vec::new();
    let mut base: Option<&str> = None;
    for e in es {
        if e.1 < covered_below {
            break;
        }
        match e.2 {
            ValueType::Value => {
                base = Some(&e.3);
                break;
            }
            ValueType::Merge => ops.push(e.3.as_bytes()),
            _ => break,
        }
    }
    if ops.is_empty() {
        return base.map(str::to_string);
    }
    ops.reverse();
    let v = op
        .full_merge(k.as_bytes(), base.map(str::as_bytes), &ops)
        .unwrap();
    Some(String::from_utf8(v).unwrap())
}

/// One random compaction: returns a description on failure.
fn random_case(seed: u64) -> std::result::Result<(), String> {
    let mut rng = Rng(seed);
    let op = StringAppendOperator::default();
    // Older entries in a deeper level (sequences 1..), maybe none.
    let mut seq = 0u64;
    let mut deeper_points: Vec<Point> = Vec::new();
    if rng.chance(60) {
        for _ in 0..rng.below(12) {
            seq += 1;
            let k = key(rng.below(NUM_KEYS));
            let p = match rng.below(3) {
                0 => put(&k, seq, &format!("d{seq}")),
                1 => merge(&k, seq, &format!("d{seq}")),
                _ => del(&k, seq),
            };
            deeper_points.push(p);
        }
    }
    // The compaction's inputs: points and tombstones interleaved.
    let mut points: Vec<Point> = Vec::new();
    let mut tombs: Vec<(String, String, u64)> = Vec::new();
    let n = 1 + rng.below(80);
    for _ in 0..n {
        seq += 1;
        if rng.chance(6) {
            let a = rng.below(NUM_KEYS);
            let b = a + 1 + rng.below(6);
            tombs.push((key(a), key(b), seq));
            continue;
        }
        // Few keys, so keys get many versions.
        let k = key(rng.below(NUM_KEYS));
        let v = format!("v{seq}");
        let p = match rng.below(100) {
            0..=39 => put(&k, seq, &v),
            40..=54 => del(&k, seq),
            55..=59 => sdel(&k, seq),
            _ => merge(&k, seq, &v),
        };
        points.push(p);
    }
    let last_seq = seq;
    let mut snapshots: Vec<u64> = (0..rng.below(5)).map(|_| 1 + rng.below(last_seq)).collect();
    snapshots.sort_unstable();
    snapshots.dedup();

    // The version: three input files on L1 splitting the key space (their
    // boundaries are the subcompaction split points), the deeper file on
    // L3 covering the deeper entries' keys.
    let inputs = vec![
        file(1, &key(0), &key(7), 1 << 20),
        file(2, &key(8), &key(15), 1 << 20),
        file(3, &key(16), &key(NUM_KEYS - 1), 1 << 20),
    ];
    let deeper = if deeper_points.is_empty() {
        Vec::new()
    } else {
        let lo = deeper_points.iter().map(|p| p.0.clone()).min().unwrap();
        let hi = deeper_points.iter().map(|p| p.0.clone()).max().unwrap();
        vec![file(10, &lo, &hi, 1 + rng.below(2000))]
    };
    let deeper_seqs = deeper_points.len() as u64;
    let c = if rng.chance(25) {
        // Into L0 (universal): one input L0 file over everything newer
        // than the deeper entries, which sit in an older L0 file left out.
        let icmp = InternalKeyComparator::new(bytewise());
        let mut edit = VersionEdit::new();
        let mut input = file(1, &key(0), &key(NUM_KEYS - 1), 1 << 20);
        (input.smallest_seqno, input.largest_seqno) = (deeper_seqs + 1, last_seq);
        edit.add_file(0, input);
        for mut f in deeper {
            (f.smallest_seqno, f.largest_seqno) = (1, deeper_seqs);
            edit.add_file(0, f);
        }
        let mut b = VersionBuilder::new(Arc::new(Version::new(icmp, 4)));
        b.apply(&edit).map_err(|e| e.to_string())?;
        let version = Arc::new(b.finish(1).map_err(|e| e.to_string())?);
        Compaction {
            cf_id: 0,
            inputs: vec![LevelInputs {
                level: 0,
                files: version.files(0)[..1].to_vec(),
            }],
            output_level: 0,
            target_file_size: 64 + rng.below(600),
            max_grandparent_overlap_bytes: rng.below(1500),
            grandparents: Vec::new(),
            reason: CompactionReason::UniversalSizeRatio,
            score: 1.0,
            deletion_only: false,
            allow_trivial_move: false,
            version,
        }
    } else {
        let mut c = compaction(inputs, deeper);
        c.target_file_size = 64 + rng.below(600);
        c.max_grandparent_overlap_bytes = rng.below(1500);
        c
    };

    let fs_impl = MemFileSystem::new();
    let fs: FileSystemRef = Arc::new(fs_impl);
    let dir = Path::new("/db");
    fs.create_dir_all(dir).map_err(|e| e.to_string())?;
    let table_options = TableOptions {
        block_size: 64,
        compression: CompressionType::None,
        merge_operator_name: Some(op.name().to_string()),
        ..TableOptions::default()
    };
    let next_number = AtomicU64::new(100);
    let new_file_number = || next_number.fetch_add(1, AtomicOrdering::SeqCst);
    let encoded = encode(&points);
    let make_input = || -> Result<Box<dyn InternalIterator + Send + '_>> {
        let mut it = VecIter::new(encoded.clone());
        it.seek_to_first();
        Ok(Box::new(it))
    };
    let input_tombstones: Vec<(Vec<u8>, Vec<u8>)> = tombs
        .iter()
        .map(|(b, e, s)| {
            (
                make_internal_key(b.as_bytes(), *s, ValueType::RangeDeletion),
                e.as_bytes().to_vec(),
            )
        })
        .collect();
    let input_tombstones = Arc::new(FragmentedRangeTombstoneList::from_encoded(
        bytewise(),
        &input_tombstones,
    ));
    let ctx = JobContext {
        identity: ("", ""),
        checksum_factory: None,
        fs: Arc::clone(&fs),
        dir,
        table_options: table_options.clone(),
        rules: CompactionRules {
            // As the engine sets it: zeros below level 0 only.
            zero_bottom_seqnos: c.output_level >= 1,
            ..rules(snapshots.clone(), true, None)
        },
        input_tombstones,
        new_file_number: &new_file_number,
        make_input: &make_input,
        max_subcompactions: 1 + rng.below(3) as usize,
        now_seconds: 1000,
        cancel: None,
    };
    let out = job::run(&c, &ctx).map_err(|e| format!("job failed: {}", e.error))?;

    // Read the outputs back.
    let icmp = InternalKeyComparator::new(bytewise());
    let mut out_points: Vec<Point> = Vec::new();
    let mut out_tombs: Vec<(String, String, u64)> = Vec::new();
    let mut last_key: Option<Vec<u8>> = None;
    for f in &out.files {
        let path = dir.join(crate::filename::table_file_name(f.number));
        let file = fs
            .new_random_access_file(&path)
            .map_err(|e| e.to_string())?;
        let size = fs.file_size(&path).map_err(|e| e.to_string())?;
        if size != f.file_size {
            return Err(format!(
                "file #{} size {} != meta {}",
                f.number, size, f.file_size
            ));
        }
        let t = Arc::new(
            Table::open(file, &path.to_string_lossy(), size, &table_options)
                .map_err(|e| e.to_string())?,
        );
        let mut it = t.iter();
        it.seek_to_first();
        while it.valid() {
            if let Some(l) = &last_key
                && !icmp.compare(l, it.key()).is_lt()
            {
                return Err("outputs not in increasing internal-key order".into());
            }
            let p = parse_internal_key(it.key()).unwrap();
            out_points.push((
                String::from_utf8(p.user_key.to_vec()).unwrap(),
                p.sequence,
                p.value_type,
                String::from_utf8(it.value().to_vec()).unwrap(),
            ));
            last_key = Some(it.key().to_vec());
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        for (b, e) in t.range_tombstones() {
            let p = parse_internal_key(b).unwrap();
            out_tombs.push((
                String::from_utf8(p.user_key.to_vec()).unwrap(),
                String::from_utf8(e.clone()).unwrap(),
                p.sequence,
            ));
        }
    }
    // The outputs replace the inputs in a valid version.
    let mut edit = VersionEdit::new();
    for (level, f) in c.input_files() {
        if level == c.output_level {
            edit.delete_file(level as u32, f.number);
        }
    }
    for f in &out.files {
        edit.add_file(c.output_level as u32, f.clone());
    }
    let mut b = VersionBuilder::new(Arc::clone(&c.version));
    b.apply(&edit).map_err(|e| e.to_string())?;
    b.finish(2)
        .map_err(|e| format!("outputs break the level: {e}"))?;
    if out.iter_stats.input_records != points.len() as u64 {
        return Err(format!(
            "read {} input records of {}",
            out.iter_stats.input_records,
            points.len()
        ));
    }
    if out.iter_stats.output_records != out_points.len() as u64 {
        return Err("output record count mismatch".into());
    }

    // Every read at every snapshot and at the latest sequence agrees.
    let before: Vec<Point> = deeper_points
        .iter()
        .cloned()
        .chain(points.iter().cloned())
        .collect();
    let after: Vec<Point> = deeper_points
        .iter()
        .cloned()
        .chain(out_points.iter().cloned())
        .collect();
    let readers: Vec<u64> = snapshots
        .iter()
        .copied()
        .chain(std::iter::once(MAX_SEQUENCE_NUMBER))
        .collect();
    for &snap in &readers {
        for i in 0..=NUM_KEYS + 6 {
            let k = key(i);
            let want = read(&before, &tombs, &k, snap, &op);
            let got = read(&after, &out_tombs, &k, snap, &op);
            if want != got {
                return Err(format!(
                    "key {k} at snapshot {snap}: input reads {want:?}, output {got:?}\n\
                     snapshots {snapshots:?}\ndeeper {deeper_points:?}\ninput {points:?}\n\
                     tombstones {tombs:?}\noutput {out_points:?}\noutput tombstones {out_tombs:?}"
                ));
            }
        }
    }
    // Sequence numbers are not rewritten, except a Put's to 0 below
    // level 0: every other output entry's sequence is an input sequence.
    let seqs: HashSet<u64> = points.iter().map(|p| p.1).collect();
    let zeroed = |p: &Point| p.1 == 0 && p.2 == ValueType::Value && c.output_level >= 1;
    if let Some(p) = out_points
        .iter()
        .find(|p| !seqs.contains(&p.1) && !zeroed(p))
    {
        return Err(format!("output {p:?} has a sequence no input had"));
    }
    Ok(())
}

#[test]
fn random_compactions_keep_every_read() {
    for seed in 0..2000 {
        if let Err(e) = random_case(seed) {
            panic!("seed {seed}: {e}");
        }
    }
}

/// A compaction into L0 writes one file whatever its size and
/// subcompaction settings: L0 files must have disjoint, ordered sequence
/// ranges, which outputs of one compaction never have (RocksDB: "files
/// output to Level 0 won't be split", no subcompactions into L0).
#[test]
fn output_to_level_0_is_never_split() {
    let icmp = InternalKeyComparator::new(bytewise());
    let l0 = |n: u64, lo: u64, hi: u64, first: u64, last: u64| {
        let mut f = file(n, &key(first), &key(last), 1 << 30);
        f.smallest_seqno = lo;
        f.largest_seqno = hi;
        f
    };
    let mut edit = VersionEdit::new();
    // Two newer inputs and an older L0 file left out (universal L0 -> L0).
    edit.add_file(0, l0(3, 201, 300, 0, 11));
    edit.add_file(0, l0(2, 101, 200, 12, NUM_KEYS - 1));
    edit.add_file(0, l0(1, 1, 100, 0, NUM_KEYS - 1));
    let mut b = VersionBuilder::new(Arc::new(Version::new(icmp, 1)));
    b.apply(&edit).unwrap();
    let version = Arc::new(b.finish(1).unwrap());
    let c = Compaction {
        cf_id: 0,
        inputs: vec![LevelInputs {
            level: 0,
            files: version.files(0)[..2].to_vec(),
        }],
        output_level: 0,
        target_file_size: 100,
        max_grandparent_overlap_bytes: 0,
        grandparents: Vec::new(),
        reason: CompactionReason::UniversalSizeRatio,
        score: 1.0,
        deletion_only: false,
        allow_trivial_move: false,
        version: Arc::clone(&version),
    };
    let points: Vec<Point> = (0..NUM_KEYS)
        .flat_map(|i| {
            let k = key(i);
            // Sequences interleaved across keys: any split of the output
            // by key gives files with overlapping sequence ranges.
            let s = (i * 37) % 100;
            [put(&k, 201 + s, "newer"), put(&k, 101 + s, "older")]
        })
        .collect();
    let fs: FileSystemRef = Arc::new(MemFileSystem::new());
    let dir = Path::new("/db");
    fs.create_dir_all(dir).unwrap();
    let next_number = AtomicU64::new(100);
    let new_file_number = || next_number.fetch_add(1, AtomicOrdering::SeqCst);
    let encoded = encode(&points);
    let make_input = || -> Result<Box<dyn InternalIterator + Send + '_>> {
        let mut it = VecIter::new(encoded.clone());
        it.seek_to_first();
        Ok(Box::new(it))
    };
    let ctx = JobContext {
        identity: ("", ""),
        checksum_factory: None,
        fs: Arc::clone(&fs),
        dir,
        table_options: TableOptions {
            block_size: 64,
            compression: CompressionType::None,
            ..TableOptions::default()
        },
        rules: rules(Vec::new(), false, None),
        input_tombstones: Arc::new(FragmentedRangeTombstoneList::empty(bytewise())),
        new_file_number: &new_file_number,
        make_input: &make_input,
        max_subcompactions: 4,
        now_seconds: 1000,
        cancel: None,
    };
    let out = job::run(&c, &ctx).map_err(|e| e.error).unwrap();
    assert_eq!(out.subcompactions, 1);
    assert_eq!(out.files.len(), 1, "{:?}", out.files);
    assert_eq!(out.iter_stats.output_records, NUM_KEYS);
    // The result installs: inputs out, the output in L0 above file #1.
    let mut edit = VersionEdit::new();
    edit.delete_file(0, 3);
    edit.delete_file(0, 2);
    edit.add_file(0, out.files[0].clone());
    let mut b = VersionBuilder::new(version);
    b.apply(&edit).unwrap();
    let v = b.finish(2).unwrap();
    assert_eq!(v.num_files(0), 2);
}
