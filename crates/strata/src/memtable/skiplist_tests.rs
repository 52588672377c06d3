//! Skiplist tests: ordering and navigation against a `BTreeSet`, height
//! distribution, concurrent inserts of overlapping keys, owned cursors.
//! Sizes shrink under Miri.

use super::*;
use std::collections::BTreeSet;

fn bytewise(a: &[u8], b: &[u8]) -> CmpOrdering {
    a.cmp(b)
}

type BytewiseFn = fn(&[u8], &[u8]) -> CmpOrdering;

fn new_list() -> SkipList<BytewiseFn> {
    SkipList::new(bytewise as BytewiseFn, Arc::new(Arena::new(4096)))
}

fn collect_forward<L: Deref<Target = SkipList<C>>, C: KeyComparator>(
    it: &mut Iter<L>,
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push(it.key().to_vec());
        it.next();
    }
    out
}

#[test]
fn empty() {
    let l = new_list();
    let mut it = l.iter();
    assert!(!it.valid());
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
    it.seek(b"a");
    assert!(!it.valid());
    it.seek_for_prev(b"a");
    assert!(!it.valid());
    assert!(!l.contains(b"a"));
}

#[test]
fn insert_and_navigate() {
    let l = new_list();
    let n = if cfg!(miri) { 60 } else { 2000 };
    let mut model = BTreeSet::new();
    let mut x: u64 = 1;
    for _ in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = ((x >> 33) % 5000).to_be_bytes().to_vec();
        let fresh = model.insert(k.clone());
        assert_eq!(l.insert(&k), fresh);
    }
    let mut it = l.iter();
    let fwd = collect_forward(&mut it);
    assert_eq!(fwd, model.iter().cloned().collect::<Vec<_>>());
    let mut back = Vec::new();
    it.seek_to_last();
    while it.valid() {
        back.push(it.key().to_vec());
        it.prev();
    }
    back.reverse();
    assert_eq!(back, fwd);
    for probe in (0..5100u64).step_by(if cfg!(miri) { 397 } else { 7 }) {
        let k = probe.to_be_bytes();
        assert_eq!(l.contains(&k), model.contains(&k[..]));
        it.seek(&k);
        let want = model.range(k.to_vec()..).next();
        assert_eq!(it.valid().then(|| it.key().to_vec()).as_ref(), want);
        it.seek_for_prev(&k);
        let want = model.range(..=k.to_vec()).next_back();
        assert_eq!(it.valid().then(|| it.key().to_vec()).as_ref(), want);
    }
}

#[test]
fn heights_are_bounded_and_geometric() {
    let n = if cfg!(miri) { 200 } else { 100_000 };
    let mut counts = [0usize; MAX_HEIGHT + 1];
    for _ in 0..n {
        let h = random_height();
        assert!((1..=MAX_HEIGHT).contains(&h));
        counts[h] += 1;
    }
    if !cfg!(miri) {
        // About 3/4 of the nodes have height 1.
        assert!(
            counts[1] > n * 70 / 100 && counts[1] < n * 80 / 100,
            "{counts:?}"
        );
    }
}

#[test]
fn concurrent_inserts_of_the_same_keys() {
    // Every thread inserts every key, each in its own order: exactly one
    // insert per key may succeed, and the list ends sorted and complete.
    let threads = 4u64;
    let n: u64 = if cfg!(miri) { 41 } else { 20_011 }; // prime: i * m % n permutes
    let l = Arc::new(new_list());
    let barrier = Arc::new(std::sync::Barrier::new(threads as usize));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (l, barrier) = (Arc::clone(&l), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                let m = 2 * t + 1;
                (0..n)
                    .filter(|i| l.insert(&(i * m % n).to_be_bytes()))
                    .count()
            })
        })
        .collect();
    let inserted: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(inserted as u64, n);
    let keys = collect_forward(&mut l.iter());
    let want: Vec<Vec<u8>> = (0..n).map(|i| i.to_be_bytes().to_vec()).collect();
    assert_eq!(keys, want);
}

#[test]
fn owned_cursor_outlives_borrow() {
    let l = Arc::new(new_list());
    for k in [b"b", b"a", b"c"] {
        assert!(l.insert(k));
    }
    let mut it = Iter::new(Arc::clone(&l));
    drop(l);
    assert_eq!(
        collect_forward(&mut it),
        vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
    );
}

#[test]
fn splice_follows_runs_jumps_and_duplicates() {
    // Ascending runs (the splice's fast case), descending runs, jumps back
    // into the middle and repeated keys, checked against a BTreeSet after
    // every step.
    let l = new_list();
    let mut model = BTreeSet::new();
    let n: u32 = if cfg!(miri) { 60 } else { 3_000 };
    let mut keys: Vec<u32> = Vec::new();
    keys.extend(1000..1000 + n); // ascending run
    keys.extend((0..n / 2).rev().map(|i| i * 2)); // descending, interleaved below
    keys.extend((500..500 + n / 3).map(|i| i * 3)); // jump back, ascending again
    keys.extend(1000..1010); // duplicates of the first run
    keys.extend((0..n).map(|i| i.wrapping_mul(2_654_435_761) % (4 * n))); // scattered
    for (i, k) in keys.iter().enumerate() {
        let key = k.to_be_bytes();
        assert_eq!(
            l.insert(&key),
            model.insert(key.to_vec()),
            "insert #{i} of {k}"
        );
    }
    let want: Vec<Vec<u8>> = model.into_iter().collect();
    assert_eq!(collect_forward(&mut l.iter()), want);
}

#[test]
fn insert_order_tells_the_arena_whether_fresh_huge_pages_pay_off() {
    // Ascending keys follow the splice: after a run of them the arena
    // stops mapping fresh huge pages; scattered keys search, and turn them
    // back on. A short run of the other kind does not flip it.
    let l = new_list();
    let arena = Arc::clone(l.arena());
    assert!(arena.fresh_huge_pages(), "on by default");
    let ascending = |from: u32, n: u32| {
        for k in from..from + n {
            l.insert(&k.to_be_bytes());
        }
    };
    let scattered = |from: u32, n: u32| {
        for i in from..from + n {
            l.insert(&i.wrapping_mul(2_654_435_761).to_be_bytes());
        }
    };
    ascending(0, 40);
    assert!(!arena.fresh_huge_pages(), "sequential inserts turn it off");
    scattered(1, 3);
    ascending(100, 3);
    assert!(!arena.fresh_huge_pages(), "a few searches do not flip it");
    scattered(10, 40);
    assert!(arena.fresh_huge_pages(), "random inserts turn it back on");
}

#[test]
fn splice_stays_correct_when_other_inserts_go_between() {
    // Each thread inserts an ascending stride (t, t + T, t + 2T, ...), so
    // almost every insert lands right after another thread's last one:
    // the shared splice is nearly always stale (not tight) when used.
    let threads = 4u32;
    let n: u32 = if cfg!(miri) { 50 } else { 20_000 };
    let l = Arc::new(new_list());
    let barrier = Arc::new(std::sync::Barrier::new(threads as usize));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (l, barrier) = (Arc::clone(&l), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                (0..n).all(|i| l.insert(&(i * threads + t).to_be_bytes()))
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap(), "a fresh key was refused");
    }
    let want: Vec<Vec<u8>> = (0..n * threads).map(|i| i.to_be_bytes().to_vec()).collect();
    assert_eq!(collect_forward(&mut l.iter()), want);
}

#[test]
fn batched_inserts_from_threads_find_every_place() {
    // Threads insert overlapping random keys in batches of 1..=BATCH
    // (searched together, then linked), mixed with single inserts and
    // runs of sequential keys (the cached-splice path): each key is
    // linked exactly once, the masks say which, and the list ends sorted
    // and complete.
    let threads = 4u64;
    let per_thread: u64 = if cfg!(miri) { 60 } else { 20_000 };
    let l = Arc::new(new_list());
    let barrier = Arc::new(std::sync::Barrier::new(threads as usize));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (l, barrier) = (Arc::clone(&l), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (t + 1);
                let mut next = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                let mut mine = Vec::new();
                let mut done = 0;
                while done < per_thread {
                    let size = (next() % BATCH as u64 + 1) as usize;
                    let keys: Vec<[u8; 8]> = if next() % 4 == 0 {
                        // A sequential run.
                        let start = next() % 1_000_000;
                        (0..size as u64)
                            .map(|i| (start + i).to_be_bytes())
                            .collect()
                    } else {
                        // Random keys, some repeated within the batch.
                        (0..size)
                            .map(|_| (next() % 1_000_000).to_be_bytes())
                            .collect()
                    };
                    let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
                    let mask = l.insert_many_with(&lens, |i, buf| buf.copy_from_slice(&keys[i]));
                    assert_eq!(mask >> size, 0, "bits only for the batch's keys");
                    for (i, k) in keys.iter().enumerate() {
                        if mask & (1 << i) != 0 {
                            mine.push(*k);
                        }
                    }
                    done += size as u64;
                }
                mine
            })
        })
        .collect();
    let mut inserted: Vec<[u8; 8]> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let set: BTreeSet<[u8; 8]> = inserted.iter().copied().collect();
    inserted.sort();
    assert_eq!(inserted.len(), set.len(), "a key was inserted twice");
    let keys = collect_forward(&mut l.iter());
    let want: Vec<Vec<u8>> = set.iter().map(|k| k.to_vec()).collect();
    assert_eq!(keys, want);
    for k in set.iter().step_by(97) {
        assert!(l.contains(k));
    }
}

#[test]
fn ascending_batches_stay_on_the_cached_splice() {
    // A run of ascending keys loaded in batches links each key from the
    // splice the previous batch left (a couple of comparisons a key), not
    // from a search from the top, including after a batch that had to be
    // searched (the first, and one of random keys).
    use std::sync::atomic::AtomicUsize;
    static COMPARISONS: AtomicUsize = AtomicUsize::new(0);
    fn counting(a: &[u8], b: &[u8]) -> CmpOrdering {
        COMPARISONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        a.cmp(b)
    }
    let l = SkipList::new(counting as BytewiseFn, Arc::new(Arena::new(4096)));
    let batch = |keys: &[u64]| {
        let keys: Vec<[u8; 8]> = keys.iter().map(|k| k.to_be_bytes()).collect();
        let lens = vec![8; keys.len()];
        let mask = l.insert_many_with(&lens, |i, buf| buf.copy_from_slice(&keys[i]));
        assert_eq!(mask, (1 << keys.len()) - 1);
    };
    for start in (0..4000u64).step_by(8) {
        batch(&(start..start + 8).collect::<Vec<_>>());
    }
    batch(&[
        10_007, 20_011, 5_003, 30_011, 1_000_003, 4_007, 40_009, 4_015,
    ]);
    batch(&(1_000_004..1_000_012).collect::<Vec<_>>());
    COMPARISONS.store(0, std::sync::atomic::Ordering::Relaxed);
    batch(&(1_000_012..1_000_020).collect::<Vec<_>>());
    let per_key = COMPARISONS.load(std::sync::atomic::Ordering::Relaxed) / 8;
    assert!(per_key <= 4, "{per_key} comparisons a key");
    assert_eq!(collect_forward(&mut l.iter()).len(), 4000 + 8 + 16);
}
