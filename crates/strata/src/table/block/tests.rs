//! Block round trips against a BTreeMap model, and damage handling.

use super::*;
use crate::table::block_builder::BlockBuilder;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn build(entries: &BTreeMap<Vec<u8>, Vec<u8>>, interval: usize) -> Arc<Block> {
    let mut b = BlockBuilder::new(interval);
    for (k, v) in entries {
        b.add(k, v);
    }
    Arc::new(Block::from_vec(b.finish().to_vec()).unwrap())
}

fn collect_forward(it: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

fn collect_backward(it: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    out.reverse();
    out
}

fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    // Small alphabet so keys share prefixes.
    proptest::collection::vec(
        prop_oneof![Just(b'a'), Just(b'b'), Just(0u8), Just(0xff)],
        0..12,
    )
}

proptest! {
    #[test]
    fn block_matches_btreemap(
        entries in proptest::collection::btree_map(key_strategy(), proptest::collection::vec(any::<u8>(), 0..20), 0..80),
        interval in 1usize..20,
        probes in proptest::collection::vec(key_strategy(), 0..20),
    ) {
        let block = build(&entries, interval);
        let mut it = block.iter(KeyOrder::Bytewise, false);
        let want: Vec<_> = entries.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        prop_assert_eq!(collect_forward(&mut it), want.clone());
        prop_assert_eq!(collect_backward(&mut it), want);
        for p in &probes {
            it.seek(p);
            match entries.range(p.clone()..).next() {
                Some((k, v)) => {
                    prop_assert!(it.valid());
                    prop_assert_eq!(it.key(), &k[..]);
                    prop_assert_eq!(it.value(), &v[..]);
                }
                None => prop_assert!(!it.valid()),
            }
            it.seek_for_prev(p);
            match entries.range(..=p.clone()).next_back() {
                Some((k, _)) => {
                    prop_assert!(it.valid());
                    prop_assert_eq!(it.key(), &k[..]);
                    // Step both ways from here.
                    it.next();
                    let after = entries.range((std::ops::Bound::Excluded(k.clone()), std::ops::Bound::Unbounded)).next();
                    prop_assert_eq!(it.valid(), after.is_some());
                }
                None => prop_assert!(!it.valid()),
            }
        }
        prop_assert!(it.status().is_ok());
    }

    #[test]
    fn damaged_blocks_never_panic(
        entries in proptest::collection::btree_map(key_strategy(), proptest::collection::vec(any::<u8>(), 0..8), 1..30),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        probe in key_strategy(),
    ) {
        let block = build(&entries, 4);
        let mut bytes = block.data().to_vec();
        for (pos, x) in flips {
            let n = bytes.len();
            bytes[pos % n] ^= x;
        }
        if let Ok(b) = Block::from_vec(bytes) {
            let b = Arc::new(b);
            for delta in [false, true] {
                let mut it = b.iter(KeyOrder::Bytewise, delta);
                let _ = collect_forward(&mut it);
                let _ = collect_backward(&mut it);
                it.seek(&probe);
                it.seek_for_prev(&probe);
                let _ = it.status();
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), probe in key_strategy()) {
        if let Ok(b) = Block::from_vec(bytes) {
            let b = Arc::new(b);
            let mut it = b.iter(KeyOrder::Bytewise, false);
            let _ = collect_forward(&mut it);
            let _ = collect_backward(&mut it);
            it.seek(&probe);
        }
    }
}

#[test]
fn empty_block_iterates_nothing() {
    let block = build(&BTreeMap::new(), 16);
    let mut it = block.iter(KeyOrder::Bytewise, false);
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
    it.seek(b"x");
    assert!(!it.valid());
    assert!(it.status().is_ok());
}

#[test]
fn truncated_block_is_corruption() {
    assert!(Block::from_vec(vec![1, 0]).unwrap_err().is_corruption());
    assert!(
        Block::from_vec(vec![9, 0, 0, 0])
            .unwrap_err()
            .is_corruption()
    );
}
