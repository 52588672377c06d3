//! Range tombstones cut into fragments: non-overlapping user-key ranges,
//! each with the sequence numbers of every tombstone covering all of it
//! (RocksDB's `FragmentedRangeTombstoneList`). Compactions use them to ask
//! which tombstones cover a key, to drop the ones no reader needs, and to
//! split tombstones exactly at output-file boundaries.
//!
//! Invariants: fragments are sorted by start, `start < end`, consecutive
//! fragments do not overlap, and each fragment's `seqs` are descending
//! without duplicates. A set of fragments deletes exactly what the
//! tombstones it was built from delete.

use std::cmp::Ordering;

use crate::format::{SequenceNumber, parse_internal_key};
use crate::util::comparator::ComparatorRef;

/// One fragment `[start, end)` and its covering sequence numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    /// Descending.
    pub seqs: Vec<SequenceNumber>,
}

/// Fragments of a set of tombstones, with a cursor for ascending lookups.
pub struct Fragments {
    ucmp: ComparatorRef,
    pub list: Vec<Fragment>,
    cursor: usize,
}

impl std::fmt::Debug for Fragments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fragments")
            .field("list", &self.list)
            .finish()
    }
}

impl Fragments {
    /// Fragments of tombstones given as `(internal begin key, end user
    /// key)`, as tables and memtables store them. Malformed or empty
    /// tombstones are skipped.
    pub fn from_encoded(ucmp: ComparatorRef, encoded: &[(Vec<u8>, Vec<u8>)]) -> Fragments {
        let list: Vec<(Vec<u8>, Vec<u8>, SequenceNumber)> = encoded
            .iter()
            .filter_map(|(k, end)| {
                let p = parse_internal_key(k)?;
                Some((p.user_key.to_vec(), end.clone(), p.sequence))
            })
            .collect();
        Fragments::new(ucmp, &list)
    }

    /// Fragments of `(begin, end, seq)` tombstones.
    pub fn new(
        ucmp: ComparatorRef,
        tombstones: &[(Vec<u8>, Vec<u8>, SequenceNumber)],
    ) -> Fragments {
        let mut bounds: Vec<&[u8]> = Vec::new();
        for (b, e, _) in tombstones {
            if ucmp.compare(b, e) == Ordering::Less {
                bounds.push(b);
                bounds.push(e);
            }
        }
        bounds.sort_by(|a, b| ucmp.compare(a, b));
        bounds.dedup_by(|a, b| ucmp.compare(a, b) == Ordering::Equal);
        let mut seqs: Vec<Vec<SequenceNumber>> = vec![Vec::new(); bounds.len().saturating_sub(1)];
        for (b, e, s) in tombstones {
            if ucmp.compare(b, e) != Ordering::Less {
                continue;
            }
            let i = bounds.partition_point(|x| ucmp.compare(x, b) == Ordering::Less);
            let j = bounds.partition_point(|x| ucmp.compare(x, e) == Ordering::Less);
            for v in &mut seqs[i..j] {
                v.push(*s);
            }
        }
        let mut list = Vec::new();
        for (i, mut s) in seqs.into_iter().enumerate() {
            if s.is_empty() {
                continue;
            }
            s.sort_unstable_by(|a, b| b.cmp(a));
            s.dedup();
            list.push(Fragment {
                start: bounds[i].to_vec(),
                end: bounds[i + 1].to_vec(),
                seqs: s,
            });
        }
        debug_assert!(
            list.windows(2)
                .all(|w| ucmp.compare(&w[0].end, &w[1].start) != Ordering::Greater)
        );
        Fragments {
            ucmp,
            list,
            cursor: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The user-key comparator the fragments are ordered by.
    pub fn comparator(&self) -> ComparatorRef {
        self.ucmp.clone()
    }

    /// A copy with its own cursor.
    pub fn duplicate(&self) -> Fragments {
        Fragments {
            ucmp: self.ucmp.clone(),
            list: self.list.clone(),
            cursor: 0,
        }
    }

    /// The sequence numbers covering `user_key`, descending (empty if
    /// none). REQUIRES: successive calls ask ascending keys (a cursor
    /// moves forward); `reset` starts over.
    pub fn covering(&mut self, user_key: &[u8]) -> &[SequenceNumber] {
        let ucmp = &self.ucmp;
        while self.cursor < self.list.len()
            && ucmp.compare(&self.list[self.cursor].end, user_key) != Ordering::Greater
        {
            self.cursor += 1;
        }
        match self.list.get(self.cursor) {
            Some(f) if ucmp.compare(&f.start, user_key) != Ordering::Greater => &f.seqs,
            _ => &[],
        }
    }

    pub fn reset(&mut self) {
        self.cursor = 0;
    }

    /// Keeps in each fragment only the sequence numbers `keep` accepts
    /// (called with the fragment and each seq) and drops fragments left
    /// empty.
    pub fn retain(&mut self, mut keep: impl FnMut(&Fragment, SequenceNumber) -> bool) {
        for i in 0..self.list.len() {
            let f = self.list[i].clone();
            self.list[i].seqs.retain(|&s| keep(&f, s));
        }
        self.list.retain(|f| !f.seqs.is_empty());
        self.cursor = 0;
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
        for f in &self.list {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::comparator::bytewise;

    fn t(b: &str, e: &str, s: u64) -> (Vec<u8>, Vec<u8>, u64) {
        (b.as_bytes().to_vec(), e.as_bytes().to_vec(), s)
    }

    #[test]
    fn fragments_cover_exactly_the_tombstones() {
        let mut f = Fragments::new(
            bytewise(),
            &[t("b", "f", 10), t("d", "h", 20), t("x", "x", 5)],
        );
        let shape: Vec<(String, String, Vec<u64>)> = f
            .list
            .iter()
            .map(|x| {
                (
                    String::from_utf8(x.start.clone()).unwrap(),
                    String::from_utf8(x.end.clone()).unwrap(),
                    x.seqs.clone(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                ("b".into(), "d".into(), vec![10]),
                ("d".into(), "f".into(), vec![20, 10]),
                ("f".into(), "h".into(), vec![20]),
            ]
        );
        assert_eq!(f.covering(b"a"), &[] as &[u64]);
        assert_eq!(f.covering(b"c"), &[10]);
        assert_eq!(f.covering(b"d"), &[20, 10]);
        assert_eq!(f.covering(b"g"), &[20]);
        assert_eq!(f.covering(b"h"), &[] as &[u64]);
        let c = f.clipped(Some(b"c"), Some(b"e"));
        assert_eq!(c, vec![t("c", "d", 10), t("d", "e", 20), t("d", "e", 10)]);
        f.retain(|_, s| s > 15);
        assert_eq!(f.list.len(), 2);
        assert_eq!(f.covering(b"c"), &[] as &[u64]);
    }
}
