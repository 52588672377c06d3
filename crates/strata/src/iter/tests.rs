//! DBIter and MergingIterator against a model: random histories of puts,
//! deletes, merges and range deletions split over several sorted sources,
//! read at random snapshots in both directions, with bounds.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::error::Result;
use crate::format::iterator::InternalIterator;
use crate::format::range_tombstones::RangeDelAggregator;
use crate::format::{InternalKeyComparator, SequenceNumber, ValueType, make_internal_key};
use crate::merge_operator::StringAppendOperator;
use crate::util::comparator::bytewise;

/// A sorted vector as an internal iterator.
struct VecIter {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize, // == len means invalid
    icmp: InternalKeyComparator,
}

impl VecIter {
    fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>, icmp: InternalKeyComparator) -> Self {
        entries.sort_by(|a, b| icmp.compare(&a.0, &b.0));
        let pos = entries.len();
        VecIter { entries, pos, icmp }
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
        self.pos = if self.entries.is_empty() {
            0
        } else {
            self.entries.len() - 1
        };
    }
    fn seek(&mut self, t: &[u8]) {
        self.pos = self
            .entries
            .partition_point(|e| self.icmp.compare(&e.0, t).is_lt());
    }
    fn seek_for_prev(&mut self, t: &[u8]) {
        let n = self
            .entries
            .partition_point(|e| !self.icmp.compare(&e.0, t).is_gt());
        self.pos = if n == 0 { self.entries.len() } else { n - 1 };
    }
    fn next(&mut self) {
        self.pos += 1;
    }
    fn prev(&mut self) {
        self.pos = if self.pos == 0 {
            self.entries.len()
        } else {
            self.pos - 1
        };
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

#[derive(Clone, Debug)]
enum Op {
    Put(u8, u8),
    Delete(u8),
    Merge(u8, u8),
    DeleteRange(u8, u8),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..20, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        2 => (0u8..20).prop_map(Op::Delete),
        2 => (0u8..20, any::<u8>()).prop_map(|(k, v)| Op::Merge(k, v)),
        1 => (0u8..20, 0u8..20).prop_map(|(a, b)| Op::DeleteRange(a.min(b), a.max(b))),
    ]
}

fn key(k: u8) -> Vec<u8> {
    format!("key{k:02}").into_bytes()
}

/// The model state after the first `n` operations.
fn model_at(ops: &[Op], n: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for op in &ops[..n] {
        match op {
            Op::Put(k, v) => {
                m.insert(key(*k), vec![*v]);
            }
            Op::Delete(k) => {
                m.remove(&key(*k));
            }
            Op::Merge(k, v) => match m.get_mut(&key(*k)) {
                Some(e) => {
                    e.push(b',');
                    e.push(*v);
                }
                None => {
                    m.insert(key(*k), vec![*v]);
                }
            },
            Op::DeleteRange(a, b) => {
                let doomed: Vec<_> = m.range(key(*a)..key(*b)).map(|(k, _)| k.clone()).collect();
                for k in doomed {
                    m.remove(&k);
                }
            }
        }
    }
    m
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn db_iter_matches_model(
        ops in proptest::collection::vec(op_strategy(), 1..60),
        split in proptest::collection::vec(0usize..3, 60),
        snap_frac in 0.0f64..=1.0,
        bounds in (0u8..22, 0u8..22),
        use_bounds in any::<bool>(),
    ) {
        let icmp = InternalKeyComparator::new(bytewise());
        let mut sources: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); 3];
        let mut tombstones = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let seq = (i + 1) as SequenceNumber;
            let (k, t, v) = match op {
                Op::Put(k, v) => (key(*k), ValueType::Value, vec![*v]),
                Op::Delete(k) => (key(*k), ValueType::Deletion, vec![]),
                Op::Merge(k, v) => (key(*k), ValueType::Merge, vec![*v]),
                Op::DeleteRange(a, b) => {
                    tombstones.push((make_internal_key(&key(*a), seq, ValueType::RangeDeletion), key(*b)));
                    continue;
                }
            };
            sources[split[i]].push((make_internal_key(&k, seq, t), v));
        }
        let snapshot = ((ops.len() as f64) * snap_frac).round() as SequenceNumber;
        let model = model_at(&ops, snapshot as usize);
        let (lo, hi) = (key(bounds.0.min(bounds.1)), key(bounds.0.max(bounds.1)));
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .iter()
            .filter(|(k, _)| !use_bounds || (**k >= lo && **k < hi))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mk = || {
            let children: Vec<Box<dyn InternalIterator + Send>> = sources
                .iter()
                .map(|s| Box::new(VecIter::new(s.clone(), icmp.clone())) as Box<dyn InternalIterator + Send>)
                .collect();
            let mut agg = RangeDelAggregator::new(snapshot);
            agg.add(Arc::new(
                crate::format::range_tombstones::FragmentedRangeTombstoneList::from_encoded(
                    bytewise(),
                    &tombstones,
                ),
            ));
            DBIter::new(
                Box::new(MergingIterator::new(icmp.clone(), children)),
                bytewise(),
                snapshot,
                Some(Arc::new(StringAppendOperator::default())),
                agg,
                DBIterOptions {
                    lower_bound: use_bounds.then(|| lo.clone()),
                    upper_bound: use_bounds.then(|| hi.clone()),
                    prefix_same_as_start: None,
                },
            )
        };
        let mut it = mk();
        it.seek_to_first();
        let mut fwd = Vec::new();
        while it.valid() {
            fwd.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        prop_assert!(it.status().is_ok());
        prop_assert_eq!(&fwd, &want);
        it.seek_to_last();
        let mut back = Vec::new();
        while it.valid() {
            back.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        back.reverse();
        prop_assert_eq!(&back, &want);
        // Zig-zag: seek to each key, step back and forth.
        for probe in 0u8..21 {
            let target = key(probe);
            it.seek(&target);
            let exp = want.iter().position(|(k, _)| *k >= target);
            prop_assert_eq!(it.valid().then(|| it.key().to_vec()), exp.map(|i| want[i].0.clone()));
            if let Some(i) = exp {
                it.prev();
                prop_assert_eq!(it.valid().then(|| it.key().to_vec()), i.checked_sub(1).map(|j| want[j].0.clone()));
                if it.valid() {
                    it.next();
                    prop_assert_eq!(it.key(), &want[i].0[..]);
                }
            }
            it.seek_for_prev(&target);
            let exp = want.iter().rposition(|(k, _)| *k <= target);
            prop_assert_eq!(it.valid().then(|| it.key().to_vec()), exp.map(|i| want[i].0.clone()));
            if let Some(i) = exp {
                it.next();
                prop_assert_eq!(it.valid().then(|| it.key().to_vec()), want.get(i + 1).map(|e| e.0.clone()));
            }
        }
    }
}
