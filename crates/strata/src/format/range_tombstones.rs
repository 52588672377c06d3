//! Range tombstone coverage: the one model of range deletions that reads
//! and compactions share (RocksDB's `FragmentedRangeTombstoneList`, its
//! `FragmentedRangeTombstoneIterator` and the read side of its
//! `RangeDelAggregator`).
//!
//! A tombstone `[begin, end) @ seq` deletes every entry of a user key in
//! the range whose sequence number is below `seq`, for readers whose
//! snapshot includes `seq`. A [`FragmentedRangeTombstoneList`] cuts a set
//! of tombstones into fragments: disjoint user-key ranges, each with the
//! sequence numbers of every tombstone covering all of it. It is built
//! once and never changes, so it is shared through an `Arc`: every table
//! reader and every immutable memtable caches its own, a SuperVersion
//! caches the merge of its frozen sources, and a compaction merges its
//! inputs' lists. Which key a list covers is a binary search.
//!
//! Invariants (debug-checked at construction): fragments are sorted by
//! start, `start < end`, consecutive fragments do not overlap, and each
//! fragment's `seqs` are non-empty, descending and without duplicates. A
//! list deletes exactly what the tombstones it was built from delete.

use std::cmp::Ordering;
use std::sync::Arc;

use super::{SequenceNumber, parse_internal_key};
use crate::util::comparator::ComparatorRef;

/// One fragment `[start, end)` and its covering sequence numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    /// Descending, without duplicates, never empty.
    pub seqs: Vec<SequenceNumber>,
}

impl Fragment {
    /// The newest covering sequence number at or below `snapshot` (0 if
    /// none): `seqs` is descending.
    fn newest_visible(&self, snapshot: SequenceNumber) -> SequenceNumber {
        let i = self.seqs.partition_point(|&s| s > snapshot);
        self.seqs.get(i).copied().unwrap_or(0)
    }
}

/// Tombstones cut into disjoint fragments; immutable once built.
pub struct FragmentedRangeTombstoneList {
    ucmp: ComparatorRef,
    fragments: Vec<Fragment>,
    /// Tombstones (fragment × sequence number pairs) held.
    num_tombstones: usize,
}

impl std::fmt::Debug for FragmentedRangeTombstoneList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FragmentedRangeTombstoneList")
            .field("fragments", &self.fragments)
            .finish()
    }
}

impl FragmentedRangeTombstoneList {
    /// The list of no tombstones.
    pub fn empty(ucmp: ComparatorRef) -> Self {
        FragmentedRangeTombstoneList {
            ucmp,
            fragments: Vec::new(),
            num_tombstones: 0,
        }
    }

    /// Fragments of tombstones given as `(internal begin key, end user
    /// key)`, as tables and memtables store them. Malformed and empty
    /// tombstones are skipped.
    pub fn from_encoded(ucmp: ComparatorRef, encoded: &[(Vec<u8>, Vec<u8>)]) -> Self {
        let list: Vec<(&[u8], &[u8], SequenceNumber)> = encoded
            .iter()
            .filter_map(|(k, end)| {
                let p = parse_internal_key(k)?;
                Some((p.user_key, end.as_slice(), p.sequence))
            })
            .collect();
        Self::new(ucmp, &list)
    }

    /// The union of several lists (each fragment's tombstones are
    /// tombstones of the union).
    pub fn merge<L: std::borrow::Borrow<Self>>(ucmp: ComparatorRef, lists: &[L]) -> Self {
        let list: Vec<(&[u8], &[u8], SequenceNumber)> =
            lists.iter().flat_map(|l| l.borrow().tombstones()).collect();
        Self::new(ucmp, &list)
    }

    /// The union of shared lists, shared: a single list is handed back as
    /// it is, not rebuilt.
    pub fn merge_shared(ucmp: ComparatorRef, mut lists: Vec<Arc<Self>>) -> Arc<Self> {
        if lists.len() == 1 {
            return lists.swap_remove(0);
        }
        Arc::new(Self::merge(ucmp, &lists))
    }

    /// Fragments of `(begin, end, seq)` tombstones; empty ones are skipped.
    pub fn new<B: AsRef<[u8]>, E: AsRef<[u8]>>(
        ucmp: ComparatorRef,
        tombstones: &[(B, E, SequenceNumber)],
    ) -> Self {
        let live = |b: &B, e: &E| ucmp.compare(b.as_ref(), e.as_ref()) == Ordering::Less;
        let mut bounds: Vec<&[u8]> = Vec::with_capacity(tombstones.len() * 2);
        for (b, e, _) in tombstones {
            if live(b, e) {
                bounds.push(b.as_ref());
                bounds.push(e.as_ref());
            }
        }
        bounds.sort_by(|a, b| ucmp.compare(a, b));
        bounds.dedup_by(|a, b| ucmp.compare(a, b) == Ordering::Equal);
        // The tombstones starting at each bound, then a sweep that keeps
        // the set of open ones: each fragment gets the open set.
        let n = bounds.len();
        let mut starts: Vec<Vec<(usize, SequenceNumber)>> = vec![Vec::new(); n];
        for (b, e, s) in tombstones {
            if !live(b, e) {
                continue;
            }
            let i = bounds.partition_point(|x| ucmp.compare(x, b.as_ref()) == Ordering::Less);
            let j = bounds.partition_point(|x| ucmp.compare(x, e.as_ref()) == Ordering::Less);
            debug_assert!(i < j && j < n);
            starts[i].push((j, *s));
        }
        // Open tombstones as (end bound index, seq).
        let mut open: Vec<(usize, SequenceNumber)> = Vec::new();
        let mut fragments = Vec::new();
        let mut num_tombstones = 0;
        for (i, begun) in starts.into_iter().enumerate().take(n.saturating_sub(1)) {
            open.retain(|&(j, _)| j > i);
            open.extend(begun);
            if open.is_empty() {
                continue;
            }
            let mut seqs: Vec<SequenceNumber> = open.iter().map(|&(_, s)| s).collect();
            seqs.sort_unstable_by(|a, b| b.cmp(a));
            seqs.dedup();
            num_tombstones += seqs.len();
            fragments.push(Fragment {
                start: bounds[i].to_vec(),
                end: bounds[i + 1].to_vec(),
                seqs,
            });
        }
        let list = FragmentedRangeTombstoneList {
            ucmp,
            fragments,
            num_tombstones,
        };
        debug_assert!(list.check_invariants());
        list
    }

    fn check_invariants(&self) -> bool {
        let ucmp = &self.ucmp;
        self.fragments.iter().all(|f| {
            ucmp.compare(&f.start, &f.end) == Ordering::Less
                && !f.seqs.is_empty()
                && f.seqs.windows(2).all(|w| w[0] > w[1])
        }) && self
            .fragments
            .windows(2)
            .all(|w| ucmp.compare(&w[0].end, &w[1].start) != Ordering::Greater)
    }

    pub fn is_empty(&self) -> bool {
        self.fragments.is_empty()
    }

    /// Fragment × sequence number pairs held.
    pub fn num_tombstones(&self) -> usize {
        self.num_tombstones
    }

    pub fn fragments(&self) -> &[Fragment] {
        &self.fragments
    }

    /// The user-key comparator the fragments are ordered by.
    pub fn comparator(&self) -> &ComparatorRef {
        &self.ucmp
    }

    /// Every fragment as `(start, end, seq)` tombstones, start ascending,
    /// then seq descending.
    pub fn tombstones(&self) -> impl Iterator<Item = (&[u8], &[u8], SequenceNumber)> + '_ {
        self.fragments.iter().flat_map(|f| {
            f.seqs
                .iter()
                .map(move |&s| (f.start.as_slice(), f.end.as_slice(), s))
        })
    }

    /// The fragment holding `user_key`, if any.
    fn fragment_of(&self, user_key: &[u8]) -> Option<&Fragment> {
        let ucmp = &self.ucmp;
        let i = self
            .fragments
            .partition_point(|f| ucmp.compare(&f.end, user_key) != Ordering::Greater);
        self.fragment_at(i, user_key)
    }

    /// Fragment `i` if it holds `user_key` (`i` is the first fragment
    /// ending after the key).
    fn fragment_at(&self, i: usize, user_key: &[u8]) -> Option<&Fragment> {
        self.fragments
            .get(i)
            .filter(|f| self.ucmp.compare(&f.start, user_key) != Ordering::Greater)
    }

    /// Whether `i` is the first fragment ending after `user_key` (the
    /// partition point of the binary search).
    fn is_position_of(&self, i: usize, user_key: &[u8]) -> bool {
        let ucmp = &self.ucmp;
        let n = self.fragments.len();
        i <= n
            && (i == 0 || ucmp.compare(&self.fragments[i - 1].end, user_key) != Ordering::Greater)
            && (i == n || ucmp.compare(&self.fragments[i].end, user_key) == Ordering::Greater)
    }

    /// As [`max_covering_seq`](Self::max_covering_seq), starting from the
    /// position `hint` left by the previous key: an iterator's keys are
    /// near each other, so the position is usually the same or a neighbour
    /// (two comparisons instead of a binary search).
    pub fn max_covering_seq_near(
        &self,
        user_key: &[u8],
        snapshot: SequenceNumber,
        hint: &mut usize,
    ) -> SequenceNumber {
        let h = *hint;
        let i = if self.is_position_of(h, user_key) {
            h
        } else if self.is_position_of(h + 1, user_key) {
            h + 1
        } else if h > 0 && self.is_position_of(h - 1, user_key) {
            h - 1
        } else {
            let ucmp = &self.ucmp;
            self.fragments
                .partition_point(|f| ucmp.compare(&f.end, user_key) != Ordering::Greater)
        };
        debug_assert!(self.is_position_of(i, user_key));
        *hint = i;
        self.fragment_at(i, user_key)
            .map_or(0, |f| f.newest_visible(snapshot))
    }

    /// The highest sequence number at or below `snapshot` of a tombstone
    /// covering `user_key` (0 if none).
    pub fn max_covering_seq(&self, user_key: &[u8], snapshot: SequenceNumber) -> SequenceNumber {
        self.fragment_of(user_key)
            .map_or(0, |f| f.newest_visible(snapshot))
    }

    /// A list with each fragment's sequence numbers replaced by what
    /// `choose` keeps of them (in the same descending order); fragments
    /// left with none are dropped.
    pub fn select(&self, mut choose: impl FnMut(&[SequenceNumber]) -> Vec<SequenceNumber>) -> Self {
        let mut num_tombstones = 0;
        let fragments: Vec<Fragment> = self
            .fragments
            .iter()
            .filter_map(|f| {
                let seqs = choose(&f.seqs);
                debug_assert!(seqs.windows(2).all(|w| w[0] > w[1]));
                num_tombstones += seqs.len();
                (!seqs.is_empty()).then(|| Fragment {
                    start: f.start.clone(),
                    end: f.end.clone(),
                    seqs,
                })
            })
            .collect();
        FragmentedRangeTombstoneList {
            ucmp: self.ucmp.clone(),
            fragments,
            num_tombstones,
        }
    }

    /// The fragments clipped to `[lo, hi)` (`None` = unbounded), as
    /// `(begin, end, seq)` in the order a table builder takes them (begin
    /// ascending, then seq descending).
    pub fn clipped(
        &self,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<(Vec<u8>, Vec<u8>, SequenceNumber)> {
        let ucmp = &self.ucmp;
        let mut out = Vec::new();
        for f in &self.fragments {
            let start = match lo {
                Some(l) if ucmp.compare(&f.start, l) == Ordering::Less => l,
                _ => f.start.as_slice(),
            };
            let end = match hi {
                Some(h) if ucmp.compare(&f.end, h) == Ordering::Greater => h,
                _ => f.end.as_slice(),
            };
            if ucmp.compare(start, end) != Ordering::Less {
                continue;
            }
            for &s in &f.seqs {
                out.push((start.to_vec(), end.to_vec(), s));
            }
        }
        out
    }
}

/// A forward cursor over a shared list, for callers that ask about keys in
/// ascending order (a compaction's input): each question costs amortized
/// O(1) instead of a binary search.
#[derive(Debug, Clone)]
pub struct TombstoneCursor {
    list: Arc<FragmentedRangeTombstoneList>,
    pos: usize,
}

impl TombstoneCursor {
    pub fn new(list: Arc<FragmentedRangeTombstoneList>) -> Self {
        TombstoneCursor { list, pos: 0 }
    }

    /// The sequence numbers covering `user_key`, descending (empty if
    /// none). REQUIRES: successive calls ask ascending keys; `reset`
    /// starts over.
    pub fn covering(&mut self, user_key: &[u8]) -> &[SequenceNumber] {
        let list = &*self.list;
        let ucmp = &list.ucmp;
        while self.pos < list.fragments.len()
            && ucmp.compare(&list.fragments[self.pos].end, user_key) != Ordering::Greater
        {
            self.pos += 1;
        }
        match list.fragments.get(self.pos) {
            Some(f) if ucmp.compare(&f.start, user_key) != Ordering::Greater => &f.seqs,
            _ => &[],
        }
    }

    pub fn reset(&mut self) {
        self.pos = 0;
    }
}

/// The tombstones one reader honours: a few shared lists (the active
/// memtable's, and the merged one of the immutable memtables and tables)
/// seen at one snapshot.
#[derive(Clone)]
pub struct RangeDelAggregator {
    snapshot: SequenceNumber,
    lists: Vec<Arc<FragmentedRangeTombstoneList>>,
    /// Per list, the position the last `covers` found (iterators ask
    /// about neighbouring keys).
    hints: Vec<usize>,
}

impl std::fmt::Debug for RangeDelAggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeDelAggregator")
            .field("snapshot", &self.snapshot)
            .field("lists", &self.lists.len())
            .finish()
    }
}

impl RangeDelAggregator {
    pub fn new(snapshot: SequenceNumber) -> Self {
        RangeDelAggregator {
            snapshot,
            lists: Vec::new(),
            hints: Vec::new(),
        }
    }

    /// Adds a list (empty ones are not kept).
    pub fn add(&mut self, list: Arc<FragmentedRangeTombstoneList>) {
        if !list.is_empty() {
            self.lists.push(list);
            self.hints.push(0);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }

    /// The highest sequence number of a visible tombstone covering
    /// `user_key` (0 if none).
    pub fn max_covering_seq(&self, user_key: &[u8]) -> SequenceNumber {
        self.lists
            .iter()
            .map(|l| l.max_covering_seq(user_key, self.snapshot))
            .max()
            .unwrap_or(0)
    }

    /// True if an entry of `user_key` at `seq` is deleted by a tombstone.
    /// Cheapest when successive calls ask about neighbouring keys.
    #[inline]
    pub fn covers(&mut self, user_key: &[u8], seq: SequenceNumber) -> bool {
        let snapshot = self.snapshot;
        self.lists
            .iter()
            .zip(self.hints.iter_mut())
            .any(|(l, h)| l.max_covering_seq_near(user_key, snapshot, h) > seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::comparator::bytewise;
    use crate::util::datadriven::Case;

    /// `b-e@seq` tokens.
    fn parse_tombstones(tokens: &[&str]) -> Vec<(Vec<u8>, Vec<u8>, u64)> {
        tokens
            .iter()
            .map(|t| {
                let (range, seq) = t.split_once('@').expect("b-e@seq");
                let (b, e) = range.split_once('-').expect("b-e@seq");
                (
                    b.as_bytes().to_vec(),
                    e.as_bytes().to_vec(),
                    seq.parse().expect("seq"),
                )
            })
            .collect()
    }

    fn show(l: &FragmentedRangeTombstoneList) -> Vec<String> {
        l.fragments()
            .iter()
            .map(|f| {
                format!(
                    "[{}, {}) {:?}",
                    String::from_utf8_lossy(&f.start),
                    String::from_utf8_lossy(&f.end),
                    f.seqs
                )
            })
            .collect()
    }

    fn bound(t: &str) -> Option<&[u8]> {
        (t != "-").then_some(t.as_bytes())
    }

    /// `testdata/range_tombstones.txt`: each case starts with
    /// `tombstones b-e@seq ...` (one list; `merge` lines add more lists
    /// merged into it) and then commands, each printing its lines:
    /// `fragments`; `covering k@snap ...` (max_covering_seq, and the
    /// hinted and cursor lookups must agree with it); `clipped lo hi`
    /// (`-` unbounded); `select above=N` (fragments keeping seqs > N);
    /// `aggregate snap k@seq ...` (whether an entry is covered).
    fn run_case(case: &Case) -> Vec<String> {
        let mut list = FragmentedRangeTombstoneList::empty(bytewise());
        let mut out = Vec::new();
        for line in &case.input {
            let tokens: Vec<&str> = line.split_whitespace().collect();
            match tokens[0] {
                "tombstones" => {
                    list = FragmentedRangeTombstoneList::new(
                        bytewise(),
                        &parse_tombstones(&tokens[1..]),
                    )
                }
                "merge" => {
                    let other = FragmentedRangeTombstoneList::new(
                        bytewise(),
                        &parse_tombstones(&tokens[1..]),
                    );
                    list = FragmentedRangeTombstoneList::merge(bytewise(), &[&list, &other]);
                }
                "fragments" => {
                    out.push(format!("fragments ({} tombstones):", list.num_tombstones()));
                    out.extend(show(&list).into_iter().map(|l| format!("  {l}")));
                }
                "covering" => {
                    let shared = Arc::new(FragmentedRangeTombstoneList::new(
                        bytewise(),
                        &list
                            .tombstones()
                            .map(|(b, e, s)| (b.to_vec(), e.to_vec(), s))
                            .collect::<Vec<_>>(),
                    ));
                    let mut hint = 0;
                    let mut cursor = TombstoneCursor::new(Arc::clone(&shared));
                    let mut last: Option<Vec<u8>> = None;
                    for t in &tokens[1..] {
                        let (k, snap) = t.split_once('@').expect("k@snap");
                        let snap: u64 = snap.parse().expect("snapshot");
                        let got = list.max_covering_seq(k.as_bytes(), snap);
                        assert_eq!(
                            shared.max_covering_seq_near(k.as_bytes(), snap, &mut hint),
                            got,
                            "{t}"
                        );
                        if last.as_deref().is_some_and(|l| l > k.as_bytes()) {
                            cursor.reset();
                        }
                        let all = cursor.covering(k.as_bytes());
                        let via_cursor = all.iter().copied().find(|&s| s <= snap).unwrap_or(0);
                        assert_eq!(via_cursor, got, "{t} through the cursor");
                        last = Some(k.as_bytes().to_vec());
                        out.push(format!("covering {t}: {got}"));
                    }
                }
                "clipped" => {
                    for (b, e, s) in list.clipped(bound(tokens[1]), bound(tokens[2])) {
                        out.push(format!(
                            "clipped [{}, {}) @{s}",
                            String::from_utf8_lossy(&b),
                            String::from_utf8_lossy(&e)
                        ));
                    }
                }
                "select" => {
                    let above: u64 = tokens[1]
                        .strip_prefix("above=")
                        .expect("above=N")
                        .parse()
                        .expect("N");
                    let kept =
                        list.select(|seqs| seqs.iter().copied().filter(|&s| s > above).collect());
                    out.push(format!(
                        "select above={above} ({} tombstones):",
                        kept.num_tombstones()
                    ));
                    out.extend(show(&kept).into_iter().map(|l| format!("  {l}")));
                }
                "aggregate" => {
                    let snap: u64 = tokens[1].parse().expect("snapshot");
                    let mut agg = RangeDelAggregator::new(snap);
                    agg.add(Arc::new(FragmentedRangeTombstoneList::new(
                        bytewise(),
                        &list
                            .tombstones()
                            .map(|(b, e, s)| (b.to_vec(), e.to_vec(), s))
                            .collect::<Vec<_>>(),
                    )));
                    agg.add(Arc::new(FragmentedRangeTombstoneList::empty(bytewise())));
                    for t in &tokens[2..] {
                        let (k, seq) = t.split_once('@').expect("k@seq");
                        let covered = agg.covers(k.as_bytes(), seq.parse().expect("seq"));
                        out.push(format!(
                            "aggregate {snap} {t}: {}",
                            if covered { "covered" } else { "visible" }
                        ));
                    }
                }
                c => panic!("range_tombstones.txt:{}: unknown command {c:?}", case.line),
            }
        }
        out
    }

    #[test]
    fn range_tombstones_golden() {
        crate::util::datadriven::run_file(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/src/format/testdata/range_tombstones.txt"
            ),
            run_case,
        );
    }

    /// Against a brute-force model: random tombstones, every key and
    /// snapshot.
    #[test]
    fn coverage_matches_a_linear_scan() {
        let mut rng = crate::util::rng::Rng(7);
        let mut next = move |m: u64| rng.below(m);
        for _ in 0..200 {
            let n = next(12) as usize;
            let ts: Vec<(Vec<u8>, Vec<u8>, u64)> = (0..n)
                .map(|_| {
                    let b = next(20) as u8;
                    let e = b + next(8) as u8;
                    (vec![b], vec![e], 1 + next(30))
                })
                .collect();
            let l = FragmentedRangeTombstoneList::new(bytewise(), &ts);
            // Hinted lookups, forward, backward and jumping, agree too.
            let mut hint = 0;
            let keys: Vec<u8> = (0..30)
                .chain((0..30).rev())
                .chain((0..30).map(|_| next(30) as u8))
                .collect();
            for &k in &keys {
                let snap = next(32);
                assert_eq!(
                    l.max_covering_seq_near(&[k], snap, &mut hint),
                    l.max_covering_seq(&[k], snap)
                );
            }
            for k in 0..30u8 {
                for snap in 0..32 {
                    let want = ts
                        .iter()
                        .filter(|(b, e, s)| b[0] <= k && k < e[0] && *s <= snap)
                        .map(|t| t.2)
                        .max()
                        .unwrap_or(0);
                    assert_eq!(
                        l.max_covering_seq(&[k], snap),
                        want,
                        "{ts:?} key {k} snap {snap}"
                    );
                }
            }
        }
    }
}
