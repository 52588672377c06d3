//! Tests of the compaction iterator's keep/drop rules (snapshot stripes,
//! shadowing, deletions at the bottom, sequence zeroing, merge operands,
//! range tombstones, the compaction filter, the end bound) as data-driven
//! cases in `testdata/compaction_iterator.txt`, and a randomized check
//! that a whole compaction job (iterator, tombstone selection, output
//! cutting, subcompactions) keeps every read at every live snapshot and at
//! the latest sequence.

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
use crate::util::datadriven::Case;
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
        output_path_id: None,
        version,
    }
}

// ---------------------------------------------------------------------
// Running the iterator alone.

/// One run of the iterator over in-memory inputs: a compaction of one L1
/// file over a-z into L2, with `deeper` files on L3.
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
    checker: Option<Arc<TestChecker>>,
}

/// WritePrepared visibility for the cases: prepared ranges
/// `(first, last, commit)`, `None` while uncommitted; every other
/// sequence is committed at itself.
#[derive(Default)]
struct TestChecker {
    ranges: Vec<(SequenceNumber, SequenceNumber, Option<SequenceNumber>)>,
}

impl super::SnapshotChecker for TestChecker {
    fn is_in_snapshot(&self, seq: SequenceNumber, snapshot: SequenceNumber) -> bool {
        if seq > snapshot {
            return false;
        }
        match self.ranges.iter().find(|r| r.0 <= seq && seq <= r.1) {
            Some(r) => r.2.is_some_and(|c| c <= snapshot),
            None => true,
        }
    }
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
            checker: None,
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
        snapshot_checker: None,
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
                snapshot_checker: self.checker.clone().map(|c| c as super::SnapshotCheckerRef),
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

// ---------------------------------------------------------------------
// The keep/drop rules, data-driven: `testdata/compaction_iterator.txt`
// holds the cases, each a `compact` line of options (`snapshots=6,8
// deeper=a-a,m-z tombstones=b-c@10,a-z@6 merge=false zero=true
// filter=test end=b`, all optional), one input point per line (`a@10 put
// a10`, `a@8 del`, `a@7 sdel`, `a@6 merge x`), `----`, and the output
// points in the same notation followed by a `stats:` line with every
// counter of the iterator's stats and, with `filter=test`, a `filter
// saw:` line with the filter's calls. The file's header documents the
// options. Run with `STRATA_REWRITE=1` to rewrite the expected outputs.

const TESTDATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/compaction/testdata/compaction_iterator.txt"
);

/// `a@10 put a10`, `a@8 del`, `a@7 sdel`, `a@6 merge x`.
fn parse_point(s: &str) -> std::result::Result<Point, String> {
    let mut parts = s.splitn(3, ' ');
    let (Some(at), Some(kind)) = (parts.next(), parts.next()) else {
        return Err(format!("point {s:?}: want key@seq kind [value]"));
    };
    let value = parts.next().unwrap_or("");
    let (k, seq) = at
        .split_once('@')
        .ok_or_else(|| format!("point {s:?}: want key@seq"))?;
    let seq = seq
        .parse()
        .map_err(|e| format!("point {s:?}: sequence: {e}"))?;
    Ok(match kind {
        "put" => put(k, seq, value),
        "merge" => merge(k, seq, value),
        "del" if value.is_empty() => del(k, seq),
        "sdel" if value.is_empty() => sdel(k, seq),
        _ => return Err(format!("point {s:?}: want put, merge, del or sdel")),
    })
}

fn format_point((k, s, t, v): &Point) -> String {
    let kind = match t {
        ValueType::Value => "put".to_string(),
        ValueType::Merge => "merge".to_string(),
        ValueType::Deletion => "del".to_string(),
        ValueType::SingleDeletion => "sdel".to_string(),
        t => format!("{t:?}"),
    };
    if v.is_empty() {
        format!("{k}@{s} {kind}")
    } else {
        format!("{k}@{s} {kind} {v}")
    }
}

/// `x,y,z` (empty items ignored).
fn list(v: &str) -> Vec<&str> {
    v.split(',').filter(|x| !x.is_empty()).collect()
}

fn parse_bool(v: &str) -> std::result::Result<bool, String> {
    v.parse().map_err(|_| format!("{v:?}: want true or false"))
}

/// Parses one case's input into a `Run` and the test filter, if any.
fn parse_case(case: &Case) -> std::result::Result<(Run<'_>, Option<Arc<TestFilter>>), String> {
    let (head, points) = case.input.split_first().ok_or("empty case")?;
    let mut words = head.split_whitespace();
    if words.next() != Some("compact") {
        return Err(format!("{head:?}: want `compact [options]`"));
    }
    let mut run = Run::default();
    let mut test = None;
    for w in words {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| format!("option {w:?}: want name=value"))?;
        match k {
            "snapshots" => {
                run.snapshots = list(v)
                    .iter()
                    .map(|s| s.parse().map_err(|e| format!("snapshot {s:?}: {e}")))
                    .collect::<std::result::Result<_, _>>()?;
                if !run.snapshots.is_sorted() {
                    return Err(format!("snapshots {v:?}: want ascending"));
                }
            }
            "deeper" => {
                run.deeper = list(v)
                    .iter()
                    .map(|r| r.split_once('-').ok_or(format!("deeper {r:?}: want lo-hi")))
                    .collect::<std::result::Result<_, _>>()?;
            }
            "tombstones" => {
                run.tombstones = list(v)
                    .iter()
                    .map(|t| {
                        let (range, seq) = t.split_once('@').ok_or(format!("{t:?}: want b-e@s"))?;
                        let (b, e) = range.split_once('-').ok_or(format!("{t:?}: want b-e@s"))?;
                        let seq = seq.parse().map_err(|e| format!("{t:?}: {e}"))?;
                        Ok((b, e, seq))
                    })
                    .collect::<std::result::Result<_, String>>()?;
            }
            "merge" => run.merge = parse_bool(v)?,
            "zero" => run.zero = parse_bool(v)?,
            "filter" if v == "test" => {
                let f = test_filter();
                run.filter = Some(f.clone() as CompactionFilterRef);
                test = Some(f);
            }
            "end" => run.end = Some(v),
            "prepared" => {
                // first-last (uncommitted) or first-last@commit, ...
                let checker = run.checker.get_or_insert_with(Default::default);
                let c = Arc::get_mut(checker).ok_or("one checker per case")?;
                for r in list(v) {
                    let (range, commit) = match r.split_once('@') {
                        Some((range, c)) => {
                            (range, Some(c.parse().map_err(|e| format!("{r:?}: {e}"))?))
                        }
                        None => (r, None),
                    };
                    let (f, l) = range
                        .split_once('-')
                        .ok_or(format!("{r:?}: want f-l[@c]"))?;
                    let f = f.parse().map_err(|e| format!("{r:?}: {e}"))?;
                    let l = l.parse().map_err(|e| format!("{r:?}: {e}"))?;
                    c.ranges.push((f, l, commit));
                }
            }
            _ => return Err(format!("unknown option {w:?}")),
        }
    }
    run.points = points
        .iter()
        .map(|p| parse_point(p))
        .collect::<std::result::Result<_, _>>()?;
    Ok((run, test))
}

fn run_case(case: &Case) -> Vec<String> {
    let (run, filter) =
        parse_case(case).unwrap_or_else(|e| panic!("compaction_iterator.txt:{}: {e}", case.line));
    let (out, s) = run.go();
    let mut lines: Vec<String> = out.iter().map(format_point).collect();
    lines.push(format!(
        "stats: input={} output={} shadowed={} covered={} deletions={} merged={} \
         filtered={} zeroed={}",
        s.input_records,
        s.output_records,
        s.dropped_shadowed,
        s.dropped_covered,
        s.dropped_deletions,
        s.merged_operands,
        s.filtered,
        s.zeroed_seqnos
    ));
    if let Some(f) = filter {
        let seen = f.seen.lock().unwrap();
        let calls: Vec<String> = seen
            .iter()
            .map(|(level, k, v)| format!("L{level} {k}={v}"))
            .collect();
        lines.push(if calls.is_empty() {
            "filter saw: nothing".to_string()
        } else {
            format!("filter saw: {}", calls.join(", "))
        });
    }
    lines
}

#[test]
fn compaction_iterator_golden() {
    crate::util::datadriven::run_file(TESTDATA, run_case);
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
            output_path_id: None,
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
        identity: crate::table::factory::TableIdentity {
            db_id: "",
            session_id: "",
            host_id: "",
        },
        checksum_factory: None,
        write_mode: crate::fs::TableWriteMode::Buffered,
        bytes_per_sync: 0,
        log: None,
        fs: Arc::clone(&fs),
        dir,
        path_id: 0,
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
        output_path_id: None,
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
        identity: crate::table::factory::TableIdentity {
            db_id: "",
            session_id: "",
            host_id: "",
        },
        checksum_factory: None,
        write_mode: crate::fs::TableWriteMode::Buffered,
        bytes_per_sync: 0,
        log: None,
        fs: Arc::clone(&fs),
        dir,
        path_id: 0,
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
