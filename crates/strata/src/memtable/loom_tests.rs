//! Loom model tests of the memtable's lock-free structures: loom runs each
//! model under every interleaving (up to a preemption bound) and every
//! outcome the C++11 memory model allows for the atomics in `sync`.
//!
//! Run (as scripts/test-all.sh does; a separate target dir keeps the normal
//! build cache, since `--cfg loom` changes every crate):
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p strata
//! --profile loom --lib memtable::loom`. The `loom` profile (workspace
//! Cargo.toml) is release with debug assertions and unoptimized
//! dependencies, for a short cold build; `--release` works too. Each model
//! has a preemption bound (below); `LOOM_MAX_PREEMPTIONS=N` overrides it for
//! all of them, e.g. to explore deeper (slower).
//!
//! What the models prove, besides the assertions in each test:
//! - the arena hands out disjoint, zeroed memory, including when threads race
//!   to install the first block or to replace a full one;
//! - a node's header and key are written before it is published: they are
//!   accessed through `sync::Published`, so loom fails any read that does
//!   not happen-after the write (a torn or uninitialized key);
//! - a node's tower links exist before the node is reachable: loom fails a
//!   load of an atomic whose construction does not happen-before it.
//!
//! Models are tiny (2-3 threads, 1-3 inserts each, 64/160-byte arena
//! blocks) so the whole file runs in seconds.

use std::cmp::Ordering as CmpOrdering;

use loom::sync::Arc;
use loom::thread;

use super::arena::{ALIGN, Arena};
use super::skiplist::SkipList;

/// Preemption bound of the two-thread models (loom's documentation: 2-3
/// finds nearly all bugs); `LOOM_MAX_PREEMPTIONS` overrides it.
const PREEMPTION_BOUND: usize = 3;

/// Runs `f` under loom with [`PREEMPTION_BOUND`]; see [`model_bounded`].
fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(PREEMPTION_BOUND, f);
}

/// Runs `f` under loom with preemption bound `bound` (unless
/// `LOOM_MAX_PREEMPTIONS` is set), and reports how many executions it took
/// (shown with `--nocapture`).
fn model_bounded(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(bound);
    }
    // A plain `std` counter outside the model: it only counts executions.
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&runs);
    b.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f();
    });
    let name = std::thread::current().name().unwrap_or("?").to_owned();
    eprintln!("{name}: {} executions", runs.load(Ordering::Relaxed));
}

type BytewiseFn = fn(&[u8], &[u8]) -> CmpOrdering;

fn bytewise(a: &[u8], b: &[u8]) -> CmpOrdering {
    a.cmp(b)
}

type List = SkipList<BytewiseFn>;

/// A list over an arena with 160-byte blocks (144 usable, 40-byte small
/// allocation limit). Under loom a node header is 16 bytes, so with 3-byte
/// keys a height-1 node takes 32 bytes and a height-2 node 40: both come
/// from the shared block (inserts race on its fill offset), four nodes fill
/// it and a fifth races to replace it. The head (112 bytes) gets a block of
/// its own.
fn new_list() -> Arc<List> {
    let arena = std::sync::Arc::new(Arena::with_tiny_blocks(160));
    Arc::new(SkipList::new(bytewise as BytewiseFn, arena))
}

/// A 3-byte key of one repeated byte, so a torn or mixed-up key (bytes from
/// two keys, or zeros) is recognisable.
fn key(b: u8) -> [u8; 3] {
    [b; 3]
}

fn insert(list: &List, height: usize, k: u8) -> bool {
    let k = key(k);
    list.insert_with_height(height, k.len(), |buf| buf.copy_from_slice(&k))
}

/// The keys a forward scan yields, checking each is a whole key from
/// `allowed` and that they are strictly increasing (sorted, no duplicates).
fn scan(list: &List, allowed: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut it = list.iter();
    it.seek_to_first();
    while it.valid() {
        let k = it.key();
        assert_eq!(k.len(), 3, "torn key {k:?}");
        assert!(k.iter().all(|&b| b == k[0]), "torn key {k:?}");
        assert!(allowed.contains(&k[0]), "unknown key {k:?}");
        if let Some(&last) = out.last() {
            assert!(last < k[0], "out of order or duplicate: {out:?} then {k:?}");
        }
        out.push(k[0]);
        it.next();
    }
    out
}

#[test]
fn arena_allocations_are_disjoint() {
    // 64-byte blocks: a 16-byte header and room for three 16-byte
    // allocations (the small-allocation limit). Three threads race on
    // installing the first block and on replacing the full one; one also
    // makes a big allocation (own block) meanwhile.
    model(|| {
        let arena = Arc::new(Arena::with_tiny_blocks(64));
        let spawn = |id: u8, sizes: &'static [usize]| {
            let arena = Arc::clone(&arena);
            thread::spawn(move || {
                let mut out = Vec::new();
                for &n in sizes {
                    let p = arena.allocate(n);
                    assert_eq!(p.as_ptr().addr() % ALIGN, 0);
                    // SAFETY: `p` points to `n` bytes that only this thread
                    // was given, valid while `arena` lives.
                    let s = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), n) };
                    assert!(s.iter().all(|&b| b == 0), "memory handed out twice");
                    s.fill(id);
                    out.push((p.as_ptr().addr(), n, id));
                }
                out
            })
        };
        let handles = [
            spawn(1, &[16, 16]),
            spawn(2, &[16, 16]),
            spawn(3, &[40, 16]),
        ];
        let mut all: Vec<(usize, usize, u8)> = Vec::new();
        for h in handles {
            all.extend(h.join().unwrap());
        }
        all.sort_unstable();
        for w in all.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlap: {w:?}");
        }
        for &(addr, n, id) in &all {
            // SAFETY: every allocation is live (the arena is) and no thread
            // writes to it any more.
            let s = unsafe { std::slice::from_raw_parts(addr as *const u8, n) };
            assert!(s.iter().all(|&b| b == id), "allocation overwritten");
        }
        // Five small allocations need two shared blocks (three fit in one):
        // a thread that lost the race to install or replace a block must not
        // install another. Plus the big allocation's own block.
        assert_eq!(arena.num_blocks(), 3);
    });
}

#[test]
fn concurrent_inserts_are_all_found() {
    // Two writers interleave keys (1, 3) and (2, 4, 5); nodes of height 2
    // race on the upper level and on `max_height`, the fifth node on
    // replacing the full arena block.
    model(|| {
        let list = new_list();
        let spawn = |ops: &'static [(usize, u8)]| {
            let list = Arc::clone(&list);
            thread::spawn(move || {
                for &(height, k) in ops {
                    assert!(insert(&list, height, k));
                }
            })
        };
        let a = spawn(&[(2, 3), (1, 1)]);
        let b = spawn(&[(1, 2), (2, 4), (1, 5)]);
        a.join().unwrap();
        b.join().unwrap();
        for k in 1..=5 {
            assert!(list.contains(&key(k)), "lost key {k}");
        }
        assert_eq!(scan(&list, &[1, 2, 3, 4, 5]), [1, 2, 3, 4, 5]);
        assert_eq!(list.arena().num_blocks(), 3, "head + two shared blocks");
    });
}

#[test]
fn batched_inserts_race_single_inserts() {
    // One writer inserts keys 4, 2 as a batch (searched together, linked
    // from the pairs found), the other 3 then 1 one at a time, and a key
    // both insert (5): the batch's pairs go stale under the other writer's
    // links; every key ends linked once, in order. Heights come from
    // loom's fixed per-thread seed.
    model(|| {
        let list = new_list();
        let batch = {
            let list = Arc::clone(&list);
            thread::spawn(move || {
                let keys = [key(4), key(2), key(5)];
                list.insert_many_with(&[3, 3, 3], |i, buf| buf.copy_from_slice(&keys[i]))
            })
        };
        let single = {
            let list = Arc::clone(&list);
            thread::spawn(move || {
                (
                    insert(&list, 2, 3),
                    insert(&list, 1, 1),
                    insert(&list, 1, 5),
                )
            })
        };
        let mask = batch.join().unwrap();
        let (three, one, five) = single.join().unwrap();
        assert!(three && one);
        assert_eq!(mask & 0b011, 0b011, "the batch's own keys are linked");
        assert!(
            (mask & 0b100 != 0) != five,
            "key 5 is linked by exactly one writer"
        );
        assert_eq!(scan(&list, &[1, 2, 3, 4, 5]), [1, 2, 3, 4, 5]);
    });
}

#[test]
fn concurrent_inserts_of_one_key_link_it_once() {
    // Both threads insert the same key (different heights): exactly one
    // wins, and the loser does not link a duplicate at any level.
    model(|| {
        let list = new_list();
        let spawn = |height: usize| {
            let list = Arc::clone(&list);
            thread::spawn(move || insert(&list, height, 5))
        };
        let a = spawn(2);
        let b = spawn(1);
        let won = [a.join().unwrap(), b.join().unwrap()];
        assert_eq!(won.iter().filter(|&&w| w).count(), 1, "{won:?}");
        assert!(list.contains(&key(5)));
        assert_eq!(scan(&list, &[5]), [5]);
        // Seeks agree at every level: nothing before it, nothing after it.
        let mut it = list.iter();
        it.seek(&key(4));
        assert!(it.valid() && it.key() == key(5));
        it.next();
        assert!(!it.valid());
    });
}

#[test]
fn reader_racing_inserts_sees_whole_nodes_in_order() {
    // The writer inserts 7 (height 2) then 6 (height 1). A lock-free reader
    // meanwhile looks both up and scans. Whatever it sees must be whole,
    // sorted keys, and visibility must follow the writer's order: the link
    // that makes 6 reachable is published after 7's, so seeing 6 implies
    // seeing 7. (The acquire load that returned 6 synchronizes with that
    // release CAS, so 7's earlier links are visible too.)
    model(|| {
        let list = new_list();
        let writer = {
            let list = Arc::clone(&list);
            thread::spawn(move || {
                assert!(insert(&list, 2, 7));
                assert!(insert(&list, 1, 6));
            })
        };
        let reader = {
            let list = Arc::clone(&list);
            thread::spawn(move || {
                let saw6 = list.contains(&key(6));
                let saw7 = list.contains(&key(7));
                assert!(!saw6 || saw7, "6 visible before 7");
                let seen = scan(&list, &[6, 7]);
                // A later scan never loses what an earlier lookup saw.
                assert!(!saw6 || seen == [6, 7], "{seen:?}");
                assert!(!saw7 || seen.contains(&7), "{seen:?}");
                // Backwards (searches from the head): the last key is at
                // least the scan's last, and `prev` moves strictly down.
                let mut it = list.iter();
                it.seek_to_last();
                assert!(it.valid() || seen.is_empty());
                if it.valid() {
                    let last = it.key()[0];
                    assert!(seen.last().is_none_or(|&l| l <= last), "{seen:?} {last}");
                    it.prev();
                    assert!(!it.valid() || it.key() == key(6), "{:?}", it.key());
                }
            })
        };
        writer.join().unwrap();
        reader.join().unwrap();
        assert_eq!(scan(&list, &[6, 7]), [6, 7]);
    });
}

#[test]
fn reader_racing_two_writers() {
    // Two writers and a reader: the reader's scans and seeks stay sorted
    // and whole while both writers race to link next to each other. Three
    // threads: bound 2 (about 25k executions; 3 takes 170k).
    model_bounded(2, || {
        let list = new_list();
        let writers: Vec<_> = [(2, 8), (1, 9)]
            .into_iter()
            .map(|(height, k)| {
                let list = Arc::clone(&list);
                thread::spawn(move || assert!(insert(&list, height, k)))
            })
            .collect();
        let reader = {
            let list = Arc::clone(&list);
            thread::spawn(move || {
                let first = scan(&list, &[8, 9]);
                // A second look never loses what the first saw.
                let mut it = list.iter();
                it.seek(&key(8));
                assert!(it.valid() || first.is_empty());
                let second = scan(&list, &[8, 9]);
                assert!(
                    first.iter().all(|k| second.contains(k)),
                    "{first:?} {second:?}"
                );
            })
        };
        for w in writers {
            w.join().unwrap();
        }
        reader.join().unwrap();
        assert_eq!(scan(&list, &[8, 9]), [8, 9]);
    });
}

#[test]
fn memtable_concurrent_adds() {
    // The whole memtable path: entry encoding into the arena, random
    // heights (deterministic under loom), and the counters in `sync`.
    use super::{MemTable, MemTableGet};
    use crate::format::InternalKeyComparator;
    use crate::format::dbformat::ValueType;
    use crate::util::comparator::bytewise;

    model(|| {
        let mem = Arc::new(MemTable::new(InternalKeyComparator::new(bytewise())));
        let spawn = |seq: u64, k: &'static [u8]| {
            let mem = Arc::clone(&mem);
            thread::spawn(move || mem.add(seq, ValueType::Value, k, b"v"))
        };
        let a = spawn(1, b"a");
        let b = spawn(2, b"b");
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(mem.num_entries(), 2);
        assert_eq!((mem.first_seqno(), mem.largest_seqno()), (1, 2));
        for (k, seq) in [(b"a", 1), (b"b", 2)] {
            let want = MemTableGet::Found {
                value_type: ValueType::Value,
                seq,
                value: b"v".to_vec(),
            };
            assert_eq!(mem.get(k, 10), want);
        }
    });
}
