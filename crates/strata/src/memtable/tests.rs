//! MemTable tests: a model test against a `BTreeMap` of internal keys,
//! concurrent inserts, readers racing writers, and memory accounting. Sizes
//! shrink under Miri so the same tests check the unsafe code there.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use super::*;
use crate::format::{extract_user_key, make_internal_key};
use crate::util::comparator::bytewise;

fn icmp() -> InternalKeyComparator {
    InternalKeyComparator::new(bytewise())
}

/// xorshift64*, deterministic per seed.
use crate::util::rng::Rng;

/// Model key: internal-key order for the bytewise comparator.
type ModelKey = (Vec<u8>, Reverse<u64>);

fn model_key(ikey: &[u8]) -> ModelKey {
    let p = parse_internal_key(ikey).unwrap();
    (
        p.user_key.to_vec(),
        Reverse(pack_sequence_and_type(p.sequence, p.value_type)),
    )
}

fn ikey_of(k: &ModelKey) -> Vec<u8> {
    let mut v = k.0.clone();
    v.extend_from_slice(&k.1.0.to_le_bytes());
    v
}

fn user_key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn scale(normal: usize, miri: usize) -> usize {
    if cfg!(miri) { miri } else { normal }
}

/// What `get` must return, computed from the model.
fn model_get(model: &BTreeMap<ModelKey, Vec<u8>>, uk: &[u8], snap: u64) -> MemTableGet {
    let start = (
        uk.to_vec(),
        Reverse(pack_sequence_and_type(snap, VALUE_TYPE_FOR_SEEK)),
    );
    let mut operands = Vec::new();
    for ((k, Reverse(trailer)), v) in model.range(start..) {
        if k.as_slice() != uk {
            break;
        }
        let (seq, t) = (trailer >> 8, ValueType::from_u8(*trailer as u8).unwrap());
        if t == ValueType::Merge {
            operands.push((seq, v.clone()));
            continue;
        }
        return if operands.is_empty() {
            MemTableGet::Found {
                value_type: t,
                seq,
                value: v.clone(),
            }
        } else {
            MemTableGet::Merge {
                operands,
                base: Some((t, seq, v.clone())),
            }
        };
    }
    if operands.is_empty() {
        MemTableGet::NotFound
    } else {
        MemTableGet::Merge {
            operands,
            base: None,
        }
    }
}

fn current(it: &MemTableIter) -> Option<(ModelKey, Vec<u8>)> {
    it.valid()
        .then(|| (model_key(it.key()), it.value().to_vec()))
}

#[test]
fn model_test() {
    model_test_with(MemTableFactory::SkipList);
}

#[test]
fn vector_rep_model_test() {
    model_test_with(MemTableFactory::Vector);
}

#[test]
fn prefix_hash_rep_model_test() {
    // Few buckets: several prefixes share each.
    model_test_with(MemTableFactory::PrefixHash { bucket_count: 7 });
}

#[test]
fn hash_link_list_rep_model_test() {
    // Buckets past the threshold index later entries like skiplists; with
    // 0 every entry does, with a large one every bucket stays a list.
    for threshold_use_skiplist in [0, 3, 1 << 20] {
        model_test_with(MemTableFactory::HashLinkList {
            bucket_count: 7,
            threshold_use_skiplist,
        });
    }
}

/// Entries added and read back every way against a `BTreeMap`, with the
/// point entries in `factory`'s rep.
fn model_test_with(factory: MemTableFactory) {
    let mut rng = Rng(0x5eed);
    let pe: crate::util::slice_transform::SliceTransformRef =
        Arc::new(crate::util::slice_transform::FixedPrefix(10));
    let mem = Arc::new(MemTable::with_factory(icmp(), 4096, factory, Some(pe)));
    let mut model: BTreeMap<ModelKey, Vec<u8>> = BTreeMap::new();
    let mut tombstones: BTreeMap<ModelKey, Vec<u8>> = BTreeMap::new();
    let n_keys = scale(300, 12) as u64;
    let n_ops = scale(5000, 80);
    let (mut deletes, mut range_deletes) = (0, 0);
    for seq in 1..=n_ops as u64 {
        let uk = user_key(rng.below(n_keys));
        let (t, value) = match rng.below(10) {
            0..=4 => (
                ValueType::Value,
                format!("v{seq}").repeat(1 + seq as usize % 5),
            ),
            5 | 6 => (ValueType::Merge, format!("m{seq}")),
            7 => (ValueType::Deletion, String::new()),
            8 => (ValueType::SingleDeletion, String::new()),
            _ => (
                ValueType::RangeDeletion,
                String::from_utf8(user_key(rng.below(n_keys))).unwrap(),
            ),
        };
        mem.add(seq, t, &uk, value.as_bytes());
        let k = model_key(&make_internal_key(&uk, seq, t));
        match t {
            ValueType::RangeDeletion => {
                range_deletes += 1;
                tombstones.insert(k, value.into_bytes());
            }
            _ => {
                deletes += u64::from(matches!(t, ValueType::Deletion | ValueType::SingleDeletion));
                model.insert(k, value.into_bytes());
            }
        }
    }
    assert_eq!(mem.num_entries(), n_ops as u64);
    assert_eq!(mem.num_deletes(), deletes);
    assert_eq!(mem.num_range_deletes(), range_deletes);
    assert_eq!(mem.first_seqno(), 1);
    assert_eq!(mem.largest_seqno(), n_ops as u64);
    assert!(!mem.is_empty());

    let entries: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    // Forward and backward scans.
    let mut it = mem.iter();
    it.seek_to_first();
    let mut fwd = Vec::new();
    while let Some(e) = current(&it) {
        fwd.push(e);
        it.next();
    }
    assert_eq!(fwd, entries);
    it.seek_to_last();
    let mut back = Vec::new();
    while let Some(e) = current(&it) {
        back.push(e);
        it.prev();
    }
    back.reverse();
    assert_eq!(back, entries);
    assert!(it.status().is_ok());

    // Seeks in both directions at random internal keys, then a few steps.
    for _ in 0..scale(2000, 40) {
        let uk = user_key(rng.below(n_keys + 1));
        let seq = rng.below(n_ops as u64 + 2);
        let t = [ValueType::Value, ValueType::Deletion, VALUE_TYPE_FOR_SEEK][rng.below(3) as usize];
        let target = make_internal_key(&uk, seq, t);
        let tk = model_key(&target);
        it.seek(&target);
        let mut want = model.range(tk.clone()..);
        for _ in 0..3 {
            assert_eq!(
                current(&it),
                want.next().map(|(k, v)| (k.clone(), v.clone()))
            );
            if !it.valid() {
                break;
            }
            it.next();
        }
        it.seek_for_prev(&target);
        let mut want = model.range((Bound::Unbounded, Bound::Included(tk))).rev();
        for _ in 0..3 {
            assert_eq!(
                current(&it),
                want.next().map(|(k, v)| (k.clone(), v.clone()))
            );
            if !it.valid() {
                break;
            }
            it.prev();
        }
    }

    // Point lookups at random snapshots, including before/after everything.
    for _ in 0..scale(3000, 40) {
        let uk = user_key(rng.below(n_keys + 1));
        let snap = rng.below(n_ops as u64 + 2);
        assert_eq!(
            mem.get(&uk, snap),
            model_get(&model, &uk, snap),
            "key {uk:?} @ {snap}"
        );
    }
    assert_eq!(
        mem.get(b"key0000", u64::MAX),
        model_get(&model, b"key0000", MAX_SEQUENCE_NUMBER)
    );

    // Range tombstones, in internal-key order.
    let want: Vec<_> = tombstones
        .iter()
        .map(|(k, v)| (ikey_of(k), v.clone()))
        .collect();
    assert_eq!(mem.range_tombstones(), want);
    let mut rit = mem.range_del_iter();
    rit.seek_to_first();
    for (k, v) in &want {
        assert!(rit.valid());
        assert_eq!((rit.key(), rit.value()), (k.as_slice(), v.as_slice()));
        rit.next();
    }
    assert!(!rit.valid());
}

#[test]
fn empty_memtable() {
    let mem = Arc::new(MemTable::new(icmp()));
    assert!(mem.is_empty());
    assert_eq!((mem.first_seqno(), mem.largest_seqno()), (0, 0));
    assert_eq!(mem.get(b"a", 10), MemTableGet::NotFound);
    assert!(mem.range_tombstones().is_empty());
    let mut it = mem.iter();
    it.seek_to_first();
    assert!(!it.valid());
    it.seek(&make_internal_key(b"a", 1, ValueType::Value));
    assert!(!it.valid());
    it.seek_for_prev(&make_internal_key(b"a", 1, ValueType::Value));
    assert!(!it.valid());
}

#[test]
fn get_chains_and_snapshots() {
    let mem = MemTable::new(icmp());
    mem.add(1, ValueType::Value, b"k", b"base");
    mem.add(2, ValueType::Merge, b"k", b"+a");
    mem.add(3, ValueType::Merge, b"k", b"+b");
    mem.add(4, ValueType::Deletion, b"k", b"");
    mem.add(5, ValueType::Merge, b"k", b"+c");
    mem.add(6, ValueType::Value, b"j", b"other");
    mem.add(7, ValueType::Value, b"l", b"other");
    mem.add(9, ValueType::RangeDeletion, b"a", b"z");
    assert_eq!(mem.get(b"k", 0), MemTableGet::NotFound);
    assert_eq!(
        mem.get(b"k", 1),
        MemTableGet::Found {
            value_type: ValueType::Value,
            seq: 1,
            value: b"base".to_vec()
        }
    );
    assert_eq!(
        mem.get(b"k", 3),
        MemTableGet::Merge {
            operands: vec![(3, b"+b".to_vec()), (2, b"+a".to_vec())],
            base: Some((ValueType::Value, 1, b"base".to_vec())),
        }
    );
    assert_eq!(
        mem.get(b"k", 4),
        MemTableGet::Found {
            value_type: ValueType::Deletion,
            seq: 4,
            value: vec![]
        }
    );
    // Range tombstones are not applied by `get`.
    assert_eq!(
        mem.get(b"k", 100),
        MemTableGet::Merge {
            operands: vec![(5, b"+c".to_vec())],
            base: Some((ValueType::Deletion, 4, vec![])),
        }
    );
    assert_eq!(mem.get(b"kk", 100), MemTableGet::NotFound);
    let mut seen = Vec::new();
    mem.get_with(b"k", 100, |seq, t, _| {
        seen.push((seq, t));
        ControlFlow::Continue(())
    });
    assert_eq!(
        seen.iter().map(|s| s.0).collect::<Vec<_>>(),
        [5, 4, 3, 2, 1]
    );
    assert_eq!(mem.num_entries(), 8);
    assert_eq!(mem.num_deletes(), 1);
    assert_eq!(mem.num_range_deletes(), 1);
    assert_eq!(
        mem.range_tombstones(),
        vec![(
            make_internal_key(b"a", 9, ValueType::RangeDeletion),
            b"z".to_vec()
        )]
    );
}

#[test]
fn iterator_outlives_memtable_handle() {
    let mem = Arc::new(MemTable::new(icmp()));
    mem.add(1, ValueType::Value, b"a", b"1");
    let mut it = mem.iter();
    drop(mem);
    it.seek_to_first();
    assert_eq!(it.value(), b"1");
    assert_eq!(extract_user_key(it.key()), b"a");
}

/// Arena blocks come back from the pool holding an earlier memtable's
/// bytes (they are not cleared): a memtable built on them must still link
/// every node from null links and read back only what it wrote, for random
/// and sequential inserts (the latter map 4 KiB-page blocks once the pool
/// is empty) and for each rep that allocates from the arena.
#[test]
#[cfg(all(target_os = "linux", not(miri)))]
fn memtables_on_reused_dirty_arena_blocks_read_back_exactly() {
    use super::arena::HUGE_BLOCK_SIZE;
    let pool = Arc::new(block_pool::ArenaBlockPool::new(64 * HUGE_BLOCK_SIZE));
    let mut rng = Rng::seeded(7);
    for (round, factory) in [
        MemTableFactory::SkipList,
        MemTableFactory::SkipList,
        MemTableFactory::Vector,
        MemTableFactory::SkipList,
    ]
    .into_iter()
    .enumerate()
    {
        let mem = Arc::new(MemTable::with_factory_in(
            icmp(),
            64 << 20,
            factory,
            None,
            Some(Arc::clone(&pool)),
        ));
        let mut model = BTreeMap::new();
        // Odd rounds insert ascending keys (the sequential path), even
        // ones random keys; values of a byte that differs per round, so
        // stale bytes would show.
        for i in 0..30_000u64 {
            let k = if round % 2 == 1 {
                i
            } else {
                rng.next() % 1_000_000
            };
            let uk = user_key(k);
            let v = vec![round as u8 + 1; 100 + (k % 50) as usize];
            let seq = i + 1;
            mem.add(seq, ValueType::Value, &uk, &v);
            model.insert(
                (uk, Reverse(pack_sequence_and_type(seq, ValueType::Value))),
                v,
            );
        }
        let mut it = mem.iter();
        it.seek_to_first();
        for (k, v) in &model {
            assert_eq!(
                current(&it).as_ref(),
                Some(&(k.clone(), v.clone())),
                "round {round}"
            );
            it.next();
        }
        assert!(!it.valid(), "round {round}: entries beyond the model");
        drop(it);
        drop(mem);
        assert!(
            pool.pooled_bytes() > 0,
            "round {round}: blocks went back to the pool"
        );
    }
}

#[test]
fn large_entries_and_long_keys() {
    let mem = Arc::new(MemTable::with_arena_block_size(icmp(), 4096));
    let big = vec![7u8; 20_000];
    let long_key = vec![b'x'; 300]; // a heap-built lookup key in `get`
    mem.add(1, ValueType::Value, &long_key, &big);
    mem.add(2, ValueType::Value, b"small", b"v");
    assert!(mem.approximate_memory_usage() >= 20_000 + 4096);
    match mem.get(&long_key, 5) {
        MemTableGet::Found { value, .. } => assert_eq!(value, big),
        other => panic!("{other:?}"),
    }
    let mut it = mem.iter();
    it.seek(&make_internal_key(&long_key, 9, ValueType::Value));
    assert_eq!(it.value().len(), 20_000);
}

#[test]
fn memory_accounting_grows_and_covers_inserts() {
    let mem = MemTable::with_arena_block_size(icmp(), 4096);
    let mut last = mem.approximate_memory_usage();
    let mut inserted = 0usize;
    let mut rng = Rng(7);
    for seq in 1..=scale(3000, 50) as u64 {
        let key = user_key(rng.below(1000));
        let value = vec![b'v'; rng.below(3000) as usize];
        mem.add(seq, ValueType::Value, &key, &value);
        inserted += key.len() + TRAILER_LEN + value.len();
        let now = mem.approximate_memory_usage();
        assert!(now >= last, "memory usage went down");
        assert!(now >= inserted, "{now} < {inserted} bytes inserted");
        last = now;
    }
}

#[test]
fn should_flush_follows_rocksdb_rule() {
    let block = 4096;
    let budget = 64 << 10;
    let mem = MemTable::with_arena_block_size(icmp(), block);
    assert!(!mem.should_flush(budget));
    let mut seq = 0;
    while !mem.should_flush(budget) {
        seq += 1;
        mem.add(seq, ValueType::Value, &seq.to_be_bytes(), &[0u8; 100]);
        assert!(seq < 10_000);
    }
    let usage = mem.approximate_memory_usage();
    assert!(usage + block >= budget, "flushed too early at {usage}");
    assert!(
        usage <= budget + block * 6 / 10 + block,
        "flushed too late at {usage}"
    );
    assert_eq!(arena_block_size_for(64 << 20, true), arena::HUGE_BLOCK_SIZE);
    assert_eq!(arena_block_size_for(15 << 20, true), 1 << 20);
    assert_eq!(arena_block_size_for(64 << 20, false), 1 << 20);
    assert_eq!(arena_block_size_for(64 << 10, true), 8 << 10);
    assert_eq!(arena_block_size_for(1000, true), 4 << 10);
}

#[test]
fn concurrent_inserts_of_disjoint_keys() {
    let threads = 4u64;
    let per_thread = scale(25_000, 30) as u64;
    let mem = Arc::new(MemTable::with_arena_block_size(icmp(), 4096));
    let barrier = Arc::new(Barrier::new(threads as usize));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (mem, barrier) = (Arc::clone(&mem), Arc::clone(&barrier));
            thread::spawn(move || {
                barrier.wait();
                for i in 0..per_thread {
                    // Interleaved keys so threads contend for the same links.
                    let k = user_key(i * threads + t);
                    let seq = 1 + t * per_thread + i;
                    mem.add(seq, ValueType::Value, &k, &seq.to_le_bytes());
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let total = threads * per_thread;
    assert_eq!(mem.num_entries(), total);
    assert_eq!((mem.first_seqno(), mem.largest_seqno()), (1, total));
    let mut it = mem.iter();
    it.seek_to_first();
    let mut n = 0u64;
    while it.valid() {
        let i = n;
        let (t, j) = (i % threads, i / threads);
        assert_eq!(extract_user_key(it.key()), user_key(i).as_slice());
        let seq = 1 + t * per_thread + j;
        assert_eq!(it.value(), seq.to_le_bytes());
        n += 1;
        it.next();
    }
    assert_eq!(n, total);
    for i in (0..total).step_by(scale(37, 7)) {
        assert!(matches!(
            mem.get(&user_key(i), MAX_SEQUENCE_NUMBER),
            MemTableGet::Found { .. }
        ));
    }
}

#[test]
fn readers_see_sorted_entries_while_writers_insert() {
    let writers = 2u64;
    let per_writer = scale(30_000, 25) as u64;
    let mem = Arc::new(MemTable::with_arena_block_size(icmp(), 4096));
    // Per writer: how many of its keys are fully added.
    let progress: Arc<Vec<AtomicU64>> = Arc::new((0..writers).map(|_| AtomicU64::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    // Scattered keys so inserts land all over the list.
    let key_of = move |w: u64, i: u64| -> Vec<u8> {
        user_key((i.wrapping_mul(7919) % per_writer) * writers + w)
    };
    let writer_handles: Vec<_> = (0..writers)
        .map(|w| {
            let (mem, progress) = (Arc::clone(&mem), Arc::clone(&progress));
            thread::spawn(move || {
                for i in 0..per_writer {
                    let seq = 1 + i * writers + w;
                    mem.add(seq, ValueType::Value, &key_of(w, i), b"v");
                    progress[w as usize].store(i + 1, Ordering::Release);
                }
            })
        })
        .collect();
    let reader_handles: Vec<_> = (0..2)
        .map(|r| {
            let (mem, progress, done) =
                (Arc::clone(&mem), Arc::clone(&progress), Arc::clone(&done));
            thread::spawn(move || {
                let icmp = icmp();
                let mut rounds_during_writes = 0u32;
                let mut rng = Rng(r + 1);
                loop {
                    let finished = done.load(Ordering::Acquire);
                    // Every key a writer reported as added must be visible.
                    let w = rng.below(writers);
                    let added = progress[w as usize].load(Ordering::Acquire);
                    if added > 0 {
                        let i = rng.below(added);
                        let got = mem.get(&key_of(w, i), MAX_SEQUENCE_NUMBER);
                        assert!(matches!(got, MemTableGet::Found { .. }), "lost {w}/{i}");
                    }
                    // Scans in both directions are strictly ordered and
                    // contain at least what was reported before they began.
                    let floor: u64 = progress.iter().map(|p| p.load(Ordering::Acquire)).sum();
                    let mut it = mem.iter();
                    let mut prev_key: Option<Vec<u8>> = None;
                    let mut n = 0u64;
                    if r == 0 {
                        it.seek_to_first();
                    } else {
                        it.seek_to_last();
                    }
                    while it.valid() {
                        if let Some(p) = &prev_key {
                            let want = if r == 0 {
                                std::cmp::Ordering::Less
                            } else {
                                std::cmp::Ordering::Greater
                            };
                            assert_eq!(icmp.compare(p, it.key()), want);
                        }
                        prev_key = Some(it.key().to_vec());
                        n += 1;
                        if r == 0 { it.next() } else { it.prev() }
                    }
                    assert!(n >= floor, "scan saw {n} < {floor} entries");
                    if finished {
                        assert_eq!(n, writers * per_writer);
                        return rounds_during_writes;
                    }
                    rounds_during_writes += 1;
                }
            })
        })
        .collect();
    for h in writer_handles {
        h.join().unwrap();
    }
    done.store(true, Ordering::Release);
    let overlapping: u32 = reader_handles.into_iter().map(|h| h.join().unwrap()).sum();
    // Not asserted (scheduling decides), but printed to judge the test.
    println!("reader scans overlapping writes: {overlapping}");
    assert_eq!(mem.num_entries(), writers * per_writer);
}

#[test]
fn concurrent_range_deletions_and_points() {
    let mem = Arc::new(MemTable::new(icmp()));
    let per_thread = scale(500, 10) as u64;
    let handles: Vec<_> = (0..2u64)
        .map(|t| {
            let mem = Arc::clone(&mem);
            thread::spawn(move || {
                for i in 0..per_thread {
                    let seq = 1 + i * 2 + t;
                    let k = user_key(i);
                    if t == 0 {
                        mem.add(seq, ValueType::RangeDeletion, &k, &user_key(i + 1));
                    } else {
                        mem.add(seq, ValueType::Deletion, &k, b"");
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(mem.num_range_deletes(), per_thread);
    assert_eq!(mem.num_deletes(), per_thread);
    let ts = mem.range_tombstones();
    assert_eq!(ts.len() as u64, per_thread);
    assert!(
        ts.windows(2)
            .all(|w| icmp().compare(&w[0].0, &w[1].0).is_lt())
    );
}

#[test]
fn bloom_is_skipped_while_lookups_find_their_keys_and_used_again_when_they_miss() {
    let m = MemTable::new(InternalKeyComparator::new(
        crate::util::comparator::bytewise(),
    ))
    .with_bloom(64 << 10, None, true);
    let n = 4000u32;
    for i in 0..n {
        m.add(
            u64::from(i) + 1,
            ValueType::Value,
            format!("k{i:06}").as_bytes(),
            b"v",
        );
    }
    let worth = |m: &MemTable| m.bloom.as_ref().is_some_and(|b| b.worth_probing());
    assert!(worth(&m), "a fresh memtable probes its bloom");
    // Hits only: about 1 in 32 lookups is sampled; none is ruled out.
    for round in 0..3 {
        for i in 0..n {
            assert!(
                matches!(
                    m.get(format!("k{i:06}").as_bytes(), u64::MAX >> 8),
                    MemTableGet::Found { .. }
                ),
                "round {round} key {i}"
            );
        }
    }
    assert!(!worth(&m), "hits only: the bloom is skipped");
    // Misses: the sampled probes rule them out, and the bloom is used
    // again; every answer stays right throughout.
    for i in n..8 * n {
        assert_eq!(
            m.get(format!("k{i:06}").as_bytes(), u64::MAX >> 8),
            MemTableGet::NotFound
        );
    }
    assert!(worth(&m), "misses: the bloom is probed again");
}

#[test]
fn bloom_never_hides_an_entry_and_skips_absent_keys() {
    use crate::util::slice_transform::FixedPrefix;
    for (whole, prefix) in [(true, None), (false, Some(3)), (true, Some(2))] {
        let pe = prefix
            .map(|n| Arc::new(FixedPrefix(n)) as crate::util::slice_transform::SliceTransformRef);
        let m = MemTable::new(InternalKeyComparator::new(
            crate::util::comparator::bytewise(),
        ))
        .with_bloom(4096, pe, whole);
        assert_eq!(m.bloom_size(), 4096);
        for i in 0..500u32 {
            m.add(
                u64::from(i) + 1,
                ValueType::Value,
                format!("k{i:04}").as_bytes(),
                b"v",
            );
        }
        for i in 0..500u32 {
            let k = format!("k{i:04}");
            assert_eq!(
                m.get(k.as_bytes(), 1000),
                MemTableGet::Found {
                    value_type: ValueType::Value,
                    seq: u64::from(i) + 1,
                    value: b"v".to_vec()
                },
                "{k}"
            );
        }
        for i in 500..600u32 {
            assert_eq!(
                m.get(format!("k{i:04}").as_bytes(), 1000),
                MemTableGet::NotFound
            );
        }
        // Keys outside the prefix extractor's domain are never filtered.
        m.add(9999, ValueType::Value, b"k", b"short");
        assert!(matches!(m.get(b"k", 10_000), MemTableGet::Found { .. }));
    }
    // No filter when there is nothing to put in it.
    let m = MemTable::new(InternalKeyComparator::new(
        crate::util::comparator::bytewise(),
    ))
    .with_bloom(4096, None, false);
    assert_eq!(m.bloom_size(), 0);
}

#[test]
fn vector_rep_iterators_see_a_snapshot_and_later_seeks_see_more() {
    let mem = Arc::new(MemTable::with_factory(
        icmp(),
        4096,
        MemTableFactory::Vector,
        None,
    ));
    for i in (0..100u64).rev() {
        mem.add(i + 1, ValueType::Value, &user_key(i), b"v");
    }
    let mut it = mem.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    assert_eq!(n, 100);
    mem.add(500, ValueType::Value, &user_key(1000), b"late");
    it.seek_to_last();
    assert!(it.valid());
    assert_eq!(extract_user_key(it.key()), user_key(1000).as_slice());
    it.prev();
    assert_eq!(extract_user_key(it.key()), user_key(99).as_slice());
    it.seek_to_first();
    it.prev();
    assert!(!it.valid());
    // Readers on other threads while one writer appends.
    let mem2 = Arc::clone(&mem);
    let reader = std::thread::spawn(move || {
        for _ in 0..200 {
            assert!(matches!(
                mem2.get(&user_key(7), u64::MAX >> 8),
                MemTableGet::Found { .. }
            ));
        }
    });
    for i in 2000..2300u64 {
        mem.add(i, ValueType::Value, &user_key(i), b"w");
    }
    reader.join().unwrap();
}

#[test]
fn add_many_matches_one_at_a_time() {
    // The same entries (puts, deletes, merges, range deletions, repeated
    // user keys, runs of sequential keys) added one at a time and in
    // batches of 1..=BATCH give the same entries, counts and sequence
    // bounds, for the skiplist and for a rep without a batched insert.
    for factory in [MemTableFactory::SkipList, MemTableFactory::Vector] {
        let one = Arc::new(MemTable::with_factory(icmp(), 4096, factory, None));
        let many = Arc::new(MemTable::with_factory(icmp(), 4096, factory, None));
        let mut rng = Rng::seeded(7);
        let n = scale(5000, 200) as u64;
        let mut entries: Vec<(u64, ValueType, Vec<u8>, Vec<u8>)> = Vec::new();
        for seq in 1..=n {
            let t = match rng.next() % 10 {
                0 => ValueType::Deletion,
                1 => ValueType::Merge,
                2 => ValueType::RangeDeletion,
                3 => ValueType::SingleDeletion,
                _ => ValueType::Value,
            };
            let k = if rng.next() % 3 == 0 {
                seq
            } else {
                rng.next() % 500
            };
            let value = match t {
                ValueType::RangeDeletion => user_key(k + 3),
                ValueType::Deletion | ValueType::SingleDeletion => Vec::new(),
                _ => format!("v{seq}").into_bytes(),
            };
            entries.push((seq, t, user_key(k), value));
        }
        for (seq, t, k, v) in &entries {
            one.add(*seq, *t, k, v);
        }
        let mut i = 0;
        while i < entries.len() {
            let size = (rng.next() % skiplist::BATCH as u64 + 1) as usize;
            let chunk: Vec<(u64, ValueType, &[u8], &[u8])> = entries
                [i..(i + size).min(entries.len())]
                .iter()
                .map(|(s, t, k, v)| (*s, *t, k.as_slice(), v.as_slice()))
                .collect();
            many.add_many(&chunk);
            i += size;
        }
        let dump = |m: &Arc<MemTable>| {
            let mut it = m.iter();
            it.seek_to_first();
            let mut out = Vec::new();
            while it.valid() {
                out.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
            }
            out
        };
        assert_eq!(dump(&one), dump(&many), "{factory:?}");
        assert_eq!(one.num_entries(), many.num_entries());
        assert_eq!(one.num_deletes(), many.num_deletes());
        assert_eq!(one.num_range_deletes(), many.num_range_deletes());
        assert_eq!(one.first_seqno(), many.first_seqno());
        assert_eq!(one.largest_seqno(), many.largest_seqno());
        assert_eq!(one.range_tombstones(), many.range_tombstones());
        for k in (0..600).step_by(7) {
            assert_eq!(
                one.get(&user_key(k), n),
                many.get(&user_key(k), n),
                "key {k}"
            );
        }
    }
}
