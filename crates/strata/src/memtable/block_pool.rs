//! Huge-page arena blocks kept from one memtable to the next of the same
//! database (`ArenaBlockPool`).
//!
//! Why: a memtable arena of huge-page blocks (`memtable_huge_page_size`)
//! gets each 2 MiB block from the kernel, and the first store into it
//! faults in a huge page that the kernel must find and zero on the spot.
//! When that memory is fresh (on a virtual machine, memory the host has not
//! backed yet; on any machine, memory that needs compaction first) the one
//! fault takes 3 to 10 ms, and it happens on the thread of the write that
//! crossed into the block: the longest write latencies of a 10M-key
//! `fillrandom` were these faults. A flushed memtable's blocks go to the
//! pool instead of back to the kernel, as they are (not zeroed: the arena's
//! callers write every byte they read), and the next memtable's arena takes
//! them from it. When an arena takes one of the last [`LOW_WATER`] blocks
//! (or finds the pool empty), the janitor thread (`util::janitor`) maps
//! and faults in fresh blocks up to that mark, of the pages the arena
//! maps itself (`Arena::set_fresh_huge_pages`: a huge page, or 4 KiB
//! pages, which one `MADV_POPULATE_WRITE` faults in at about 1.6 times
//! the speed of page-by-page faults), so a database's first memtables,
//! before any was flushed, fault ahead of their writes too; unmapping the
//! blocks a full pool does not keep is its chore as well. Never a write's.
//! Blocks of either page size are pooled alike (a 2 MiB block is one
//! whatever its pages).
//!
//! The pool keeps at most `capacity` blocks (the database's largest write
//! buffer, so the mapped memory never exceeds what one more memtable would
//! hold); a block given to a full pool is unmapped. Everything left is
//! unmapped when the database closes (the pool drops with it).
//!
//! Invariants: every pooled map is exactly [`HUGE_BLOCK_SIZE`] bytes; the
//! pool holds at most `capacity` of them; a map handed out by
//! `take` is owned by one arena alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::arena::HUGE_BLOCK_SIZE;
use crate::util::huge_bytes::map_anon;
use crate::util::janitor::run_in_background;

/// Blocks the janitor keeps faulted in ahead of the arenas that draw on
/// the pool.
pub const LOW_WATER: usize = 2;

/// Idle huge-page blocks of one database's memtable arenas.
#[derive(Debug)]
pub struct ArenaBlockPool {
    blocks: Mutex<Vec<memmap2::MmapMut>>,
    capacity: usize,
    /// A refill chore is queued or running.
    refilling: AtomicBool,
    /// The pages the next refilled block is mapped with: huge (true) or
    /// 4 KiB, as the last arena to take a block maps its own.
    refill_huge: AtomicBool,
}

impl ArenaBlockPool {
    /// A pool that keeps up to `max_bytes` of blocks (rounded down to whole
    /// blocks; 0 keeps none).
    pub fn new(max_bytes: usize) -> ArenaBlockPool {
        ArenaBlockPool {
            blocks: Mutex::new(Vec::new()),
            capacity: max_bytes / HUGE_BLOCK_SIZE,
            refilling: AtomicBool::new(false),
            refill_huge: AtomicBool::new(true),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<memmap2::MmapMut>> {
        // Pushes and pops leave the list consistent at every step.
        self.blocks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A pooled block, or `None` if the pool is empty. Either way, a pool
    /// left below [`LOW_WATER`] is refilled in the background with blocks
    /// of huge pages (`huge`) or of 4 KiB pages: those the caller would
    /// map itself.
    pub(crate) fn take(self: &Arc<Self>, huge: bool) -> Option<memmap2::MmapMut> {
        let (block, left) = {
            let mut blocks = self.lock();
            let b = blocks.pop();
            (b, blocks.len())
        };
        self.refill_huge.store(huge, Ordering::Relaxed);
        if left < LOW_WATER {
            self.request_refill();
        }
        debug_assert!(block.as_ref().is_none_or(|m| m.len() == HUGE_BLOCK_SIZE));
        block
    }

    /// Keeps `blocks` for later arenas as they are (their bytes are not
    /// cleared: the arena's callers write what they read), and unmaps those
    /// that do not fit (or are not whole blocks) on the janitor thread.
    pub(crate) fn give(&self, blocks: Vec<memmap2::MmapMut>) {
        let mut extra = Vec::new();
        {
            let mut pooled = self.lock();
            for b in blocks {
                if b.len() == HUGE_BLOCK_SIZE && pooled.len() < self.capacity {
                    pooled.push(b);
                } else {
                    extra.push(b);
                }
            }
        }
        if !extra.is_empty() {
            run_in_background(move || drop(extra));
        }
    }

    fn request_refill(self: &Arc<Self>) {
        if self.capacity == 0 || self.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        let pool: Weak<Self> = Arc::downgrade(self);
        run_in_background(move || {
            let Some(pool) = pool.upgrade() else {
                return;
            };
            let low = || pool.lock().len() < LOW_WATER.min(pool.capacity);
            loop {
                while low() {
                    let huge = pool.refill_huge.load(Ordering::Relaxed);
                    let Some(mut b) = map_anon(HUGE_BLOCK_SIZE, huge) else {
                        pool.refilling.store(false, Ordering::Release);
                        return;
                    };
                    fault_in(&mut b, huge);
                    pool.give(vec![b]);
                }
                pool.refilling.store(false, Ordering::Release);
                // A take between the last check and the store above found
                // the chore still running and queued none: look again.
                if !low() || pool.refilling.swap(true, Ordering::AcqRel) {
                    return;
                }
            }
        });
    }

    /// Bytes of blocks in the pool now.
    pub fn pooled_bytes(&self) -> usize {
        self.lock().len() * HUGE_BLOCK_SIZE
    }

    /// The most blocks the pool keeps.
    pub fn capacity_blocks(&self) -> usize {
        self.capacity
    }
}

/// Faults in every page of a fresh block (its bytes stay zero): 4 KiB
/// pages with one `MADV_POPULATE_WRITE` where the kernel has it (5.14 on),
/// otherwise (and for a huge page, whole at its first store) one store
/// per page.
fn fault_in(b: &mut memmap2::MmapMut, huge: bool) {
    #[cfg(target_os = "linux")]
    if !huge && b.advise(memmap2::Advice::PopulateWrite).is_ok() {
        return;
    }
    let _ = huge;
    for i in (0..b.len()).step_by(4096) {
        b[i] = 0;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn block() -> memmap2::MmapMut {
        memmap2::MmapOptions::new()
            .len(HUGE_BLOCK_SIZE)
            .map_anon()
            .expect("anonymous map")
    }

    /// Waits (up to 10 s) for the janitor to bring the pool to `bytes`.
    fn wait_for(pool: &ArenaBlockPool, bytes: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while pool.pooled_bytes() != bytes {
            assert!(
                std::time::Instant::now() < deadline,
                "pool stuck at {}",
                pool.pooled_bytes()
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn given_blocks_are_kept_as_they_are_up_to_capacity() {
        let pool = Arc::new(ArenaBlockPool::new(4 * HUGE_BLOCK_SIZE + 1));
        assert_eq!(pool.capacity_blocks(), 4);
        let dirty: Vec<_> = (0..5)
            .map(|_| {
                let mut b = block();
                b.fill(0xab);
                b
            })
            .collect();
        // Pooled on the spot (the fifth is unmapped by the janitor).
        pool.give(dirty);
        assert_eq!(pool.pooled_bytes(), 4 * HUGE_BLOCK_SIZE);
        // Down to the low-water mark nothing new is mapped; the third
        // take leaves the pool below it, and it is refilled (after that
        // take) up to the mark with a fresh block, zeroed.
        let mut taken = Vec::new();
        for _ in 0..3 {
            let b = pool.take(true).expect("pooled");
            assert!(
                b.iter().all(|&x| x == 0xab),
                "a pooled block is not cleared"
            );
            taken.push(b);
        }
        // The pool now holds the last given block under the fresh one.
        wait_for(&pool, LOW_WATER * HUGE_BLOCK_SIZE);
        let fresh = pool.take(false).expect("refilled");
        assert!(fresh.iter().all(|&x| x == 0), "a fresh block is zeroed");
        taken.push(fresh);
        wait_for(&pool, LOW_WATER * HUGE_BLOCK_SIZE);
        // A block of another size is never pooled.
        pool.give(vec![
            memmap2::MmapOptions::new()
                .len(4096)
                .map_anon()
                .expect("anonymous map"),
        ]);
        assert_eq!(pool.pooled_bytes(), LOW_WATER * HUGE_BLOCK_SIZE);
        pool.give(taken);
        assert_eq!(pool.pooled_bytes(), 4 * HUGE_BLOCK_SIZE);
    }

    #[test]
    fn an_empty_pool_is_refilled_ahead_of_its_arenas() {
        // With blocks of huge pages and of 4 KiB pages (faulted in with
        // MADV_POPULATE_WRITE), whichever the arena taking asks for.
        for huge in [true, false] {
            let pool = Arc::new(ArenaBlockPool::new(8 * HUGE_BLOCK_SIZE));
            assert!(pool.take(huge).is_none());
            wait_for(&pool, LOW_WATER * HUGE_BLOCK_SIZE);
            let b = pool.take(huge).expect("refilled");
            assert_eq!(b.len(), HUGE_BLOCK_SIZE);
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn a_zero_capacity_pool_keeps_nothing() {
        let pool = Arc::new(ArenaBlockPool::new(HUGE_BLOCK_SIZE - 1));
        pool.give(vec![block()]);
        assert!(pool.take(true).is_none());
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(pool.pooled_bytes(), 0);
    }
}
