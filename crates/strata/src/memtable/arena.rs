//! A concurrent bump allocator for memtable nodes and entries (RocksDB's
//! `ConcurrentArena`, simplified).
//!
//! Owns: blocks of memory obtained (zeroed) from the global allocator, or
//! for arenas of [`HUGE_BLOCK_SIZE`] blocks (large write buffers) mapped
//! from the kernel and advised to be transparent huge pages (or, while
//! inserts are sequential, not: [`Arena::set_fresh_huge_pages`]). A
//! huge-page arena may draw its blocks from, and return them to, its
//! database's [`ArenaBlockPool`] (see there for why). Small
//! allocations are carved from the current block; an allocation larger than
//! a quarter of the block size gets a block of its own so the current block
//! is not wasted. Nothing is freed individually: every block is returned to
//! the allocator (or unmapped, or pooled) when the arena drops.
//!
//! Why huge pages: a skiplist insert or lookup in a 64 MiB memtable visits
//! a few dozen nodes scattered over the arena, and with 4 KiB pages nearly
//! every visit misses the TLB as well as the cache; 2 MiB pages make the
//! page walks disappear (RocksDB has this as `memtable_huge_page_size`,
//! off by default; here it is on where the kernel allows it).
//!
//! Thread-safety: `Arena` is `Send + Sync`. The fast path is lock-free: one
//! acquire load of the current block and one `fetch_add` on its fill offset.
//! Only switching to a new block (or making a big allocation) takes the
//! mutex that guards the block list.
//!
//! Invariants:
//! - every returned pointer is aligned to [`ALIGN`], points to initialized
//!   memory (zero in a fresh block, an earlier arena's bytes in a pooled one)
//!   of at least the requested size, and stays valid (and is never handed out
//!   again) until the arena drops;
//! - a block's fill offset only grows; bytes `[offset, offset + size)` belong
//!   to the one caller whose `fetch_add` returned `offset`, and only if
//!   `offset + size <= capacity`;
//! - `memory_usage()` only grows and equals, exactly, the bytes requested from
//!   the allocator for blocks plus the capacity of the block list itself.

use std::alloc::{self, Layout};
use std::mem::size_of;
use std::ptr::{self, NonNull};
use std::sync::PoisonError;
// A hint, not a modeled atomic: `std`'s even under loom.
use std::sync::atomic::AtomicBool;

use super::block_pool::ArenaBlockPool;
use super::sync::{AtomicPtr, AtomicUsize, Mutex, MutexGuard, Ordering};

/// Alignment of every allocation (enough for pointers and `u64`s).
pub const ALIGN: usize = 8;
/// Smallest block size the arena uses.
pub const MIN_BLOCK_SIZE: usize = 4 << 10;
/// Largest block size of an arena of ordinary blocks.
pub const MAX_BLOCK_SIZE: usize = 1 << 20;
/// Size of an arena's blocks when they are huge pages: a transparent huge
/// page on x86-64 and most arm64 kernels. `Arena::new` with at least this
/// block size makes such an arena.
pub const HUGE_BLOCK_SIZE: usize = 2 << 20;

/// Header at the start of every shared block; the data follows it.
#[repr(C)]
struct BlockHeader {
    /// Bytes handed out from the start of the block, header included. May
    /// exceed `capacity` after a failed fast-path attempt (the block is then
    /// full).
    used: AtomicUsize,
    /// Size of the whole block in bytes.
    capacity: usize,
}

const HEADER_SIZE: usize = size_of::<BlockHeader>();
const _: () = assert!(HEADER_SIZE % ALIGN == 0);
const _: () = assert!(std::mem::align_of::<BlockHeader>() <= ALIGN);

/// One block, freed (or unmapped) on drop of the arena.
struct Block {
    ptr: NonNull<u8>,
    size: usize,
    backing: Backing,
}

enum Backing {
    /// From the global allocator, with this layout.
    Heap(Layout),
    /// An anonymous mapping (zero-filled by the kernel), unmapped (or
    /// pooled) on drop.
    Mapped(memmap2::MmapMut),
}

use crate::util::huge_bytes::map_anon;

/// A concurrent, insert-only bump allocator. See the module comment.
pub struct Arena {
    block_size: usize,
    /// The block small allocations come from; null until the first one.
    current: AtomicPtr<BlockHeader>,
    blocks: Mutex<Vec<Block>>,
    memory_usage: AtomicUsize,
    /// Where huge-page blocks come from first and go back to.
    pool: Option<std::sync::Arc<ArenaBlockPool>>,
    /// A huge-page arena maps fresh huge pages when the pool has none
    /// (else a block of 4 KiB pages). See [`Arena::set_fresh_huge_pages`].
    fresh_huge: AtomicBool,
}

// SAFETY: the raw pointers in `current` and `blocks` point to heap blocks the
// arena owns exclusively; they are shared between threads only through
// atomics (`current`, `used`) or under the `blocks` mutex, and the memory
// they hand out is used by callers under their own synchronization.
unsafe impl Send for Arena {}
// SAFETY: see `Send`; every `&self` method is safe to call concurrently.
unsafe impl Sync for Arena {}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("block_size", &self.block_size)
            .field("memory_usage", &self.memory_usage())
            .finish()
    }
}

#[inline]
fn round_up(n: usize) -> Option<usize> {
    Some(n.checked_add(ALIGN - 1)? & !(ALIGN - 1))
}

impl Arena {
    /// An arena whose shared blocks are `block_size` bytes, clamped to
    /// `[MIN_BLOCK_SIZE, MAX_BLOCK_SIZE]` and rounded to [`ALIGN`], or
    /// huge-page blocks of [`HUGE_BLOCK_SIZE`] if `block_size` is at least
    /// that. No memory is allocated until the first allocation.
    pub fn new(block_size: usize) -> Arena {
        Arena::with_pool(block_size, None)
    }

    /// As [`Arena::new`]; a huge-page arena takes its blocks from `pool`
    /// while it has some, and gives them back to it when it drops.
    pub fn with_pool(block_size: usize, pool: Option<std::sync::Arc<ArenaBlockPool>>) -> Arena {
        let block_size = if block_size >= HUGE_BLOCK_SIZE {
            HUGE_BLOCK_SIZE
        } else {
            block_size.clamp(MIN_BLOCK_SIZE, MAX_BLOCK_SIZE) & !(ALIGN - 1)
        };
        Arena {
            block_size,
            current: AtomicPtr::new(ptr::null_mut()),
            blocks: Mutex::new(Vec::new()),
            memory_usage: AtomicUsize::new(0),
            pool: pool.filter(|_| block_size == HUGE_BLOCK_SIZE),
            fresh_huge: AtomicBool::new(true),
        }
    }

    /// An arena with exactly `block_size`-byte shared blocks, below
    /// [`MIN_BLOCK_SIZE`], so tiny loom models fill blocks and race to
    /// replace them. REQUIRES: `block_size` is a multiple of [`ALIGN`] and
    /// at least `4 * HEADER_SIZE` (so `HEADER_SIZE + block_size / 4` fits).
    #[cfg(loom)]
    pub(crate) fn with_tiny_blocks(block_size: usize) -> Arena {
        assert!(block_size % ALIGN == 0 && block_size >= 4 * HEADER_SIZE);
        Arena {
            block_size,
            current: AtomicPtr::new(ptr::null_mut()),
            blocks: Mutex::new(Vec::new()),
            memory_usage: AtomicUsize::new(0),
            pool: None,
            fresh_huge: AtomicBool::new(true),
        }
    }

    /// Whether a huge-page arena whose pool is empty maps its next shared
    /// block as a fresh huge page (`true`, the default) or in 4 KiB pages
    /// (pooled blocks are always taken first, and every mapped block goes
    /// back to the pool, so a later memtable reuses it either way).
    ///
    /// The skiplist turns this off while its inserts are sequential: a
    /// sequential insert walks no nodes, so huge pages save it no TLB
    /// misses, while a fresh huge page is expensive to fault in where a
    /// virtual machine's balloon hands freed huge pages back to the host
    /// (here: about 6 ms a 2 MiB page, against 1.4 ms for the same bytes
    /// in 4 KiB pages, which the kernel recycles; a 500K-key load of
    /// 800-byte values spent a quarter of its CPU time faulting huge pages
    /// in).
    /// Random inserts keep huge pages (about 10% faster for them).
    pub fn set_fresh_huge_pages(&self, on: bool) {
        self.fresh_huge.store(on, Ordering::Relaxed);
    }

    /// See [`Arena::set_fresh_huge_pages`].
    pub fn fresh_huge_pages(&self) -> bool {
        self.fresh_huge.load(Ordering::Relaxed)
    }

    /// The size of the shared blocks.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Bytes obtained from the allocator so far: the blocks (headers and
    /// unused tails included) plus the block list. Only grows.
    pub fn memory_usage(&self) -> usize {
        self.memory_usage.load(Ordering::Relaxed)
    }

    /// Bytes left in the current shared block (approximate while other
    /// threads allocate). RocksDB's `AllocatedAndUnused`.
    pub fn allocated_and_unused(&self) -> usize {
        let cur = self.current.load(Ordering::Acquire);
        if cur.is_null() {
            return 0;
        }
        // SAFETY: a non-null `current` points to the header of a block that
        // lives until the arena drops; the header was initialized before it
        // was published with a release store, which our acquire load saw.
        let hdr = unsafe { &*cur };
        hdr.capacity
            .saturating_sub(hdr.used.load(Ordering::Relaxed))
    }

    /// Allocates `size` bytes (rounded up to [`ALIGN`]), aligned to
    /// [`ALIGN`], valid until the arena drops. The bytes are initialized but
    /// not necessarily zero (a block from the pool holds an earlier arena's
    /// bytes): callers write what they read. Aborts the process if the
    /// allocator fails, as `Vec` does.
    pub fn allocate(&self, size: usize) -> NonNull<u8> {
        let Some(size) = round_up(size.max(1)) else {
            std::process::abort();
        };
        if size > self.block_size / 4 {
            return self.allocate_own_block(size);
        }
        // Each round either succeeds or observes that another thread
        // installed a new block since our load, so it makes progress.
        loop {
            let cur = self.current.load(Ordering::Acquire);
            if let Some(p) = Self::try_bump(cur, size) {
                return p;
            }
            if let Some(p) = self.allocate_new_current(cur, size) {
                return p;
            }
        }
    }

    /// The fast path: carve `size` bytes from the block at `cur`, if it fits.
    #[inline]
    fn try_bump(cur: *mut BlockHeader, size: usize) -> Option<NonNull<u8>> {
        if cur.is_null() {
            return None;
        }
        // SAFETY: as in `allocated_and_unused`: `cur` came from an acquire
        // load of `current` and points to a live, initialized header.
        let hdr = unsafe { &*cur };
        let offset = hdr.used.fetch_add(size, Ordering::Relaxed);
        let end = offset.checked_add(size)?;
        if end > hdr.capacity {
            return None;
        }
        debug_assert!(offset >= HEADER_SIZE && offset % ALIGN == 0);
        // SAFETY: `offset + size <= capacity`, so the result stays inside the
        // block that `cur` heads; the `fetch_add` gave this range to us only.
        Some(unsafe { NonNull::new_unchecked(cur.cast::<u8>().add(offset)) })
    }

    /// The slow path: under the lock, if `seen` is still the current block,
    /// install a fresh block with `size` bytes already taken for the caller.
    /// Returns `None` if another thread replaced the block first.
    #[cold]
    fn allocate_new_current(&self, seen: *mut BlockHeader, size: usize) -> Option<NonNull<u8>> {
        let mut blocks = self.lock_blocks();
        if self.current.load(Ordering::Acquire) != seen {
            return None;
        }
        let block = self.push_block(&mut blocks, self.block_size);
        let hdr = block.cast::<BlockHeader>();
        // SAFETY: the block is fresh, `block_size >= HEADER_SIZE`, aligned to
        // ALIGN (enough for the header) and not yet visible to other threads.
        unsafe {
            hdr.as_ptr().write(BlockHeader {
                used: AtomicUsize::new(HEADER_SIZE + size),
                capacity: self.block_size,
            });
        }
        self.current.store(hdr.as_ptr(), Ordering::Release);
        drop(blocks);
        // SAFETY: `HEADER_SIZE + size <= block_size` because
        // `size <= block_size / 4`; those bytes were reserved above.
        Some(unsafe { NonNull::new_unchecked(block.as_ptr().add(HEADER_SIZE)) })
    }

    #[cold]
    fn allocate_own_block(&self, size: usize) -> NonNull<u8> {
        let mut blocks = self.lock_blocks();
        self.push_block(&mut blocks, size)
    }

    /// Allocates a block of `size` bytes (a huge page for the shared
    /// blocks of a huge-page arena), records it, and updates the memory
    /// accounting. REQUIRES: the caller holds the `blocks` lock.
    fn push_block(&self, blocks: &mut MutexGuard<'_, Vec<Block>>, size: usize) -> NonNull<u8> {
        let huge = self.block_size == HUGE_BLOCK_SIZE && size == HUGE_BLOCK_SIZE;
        let fresh = self.fresh_huge_pages();
        let mapped = huge
            .then(|| {
                self.pool
                    .as_ref()
                    .and_then(|p| p.take(fresh))
                    .or_else(|| map_anon(size, fresh))
            })
            .flatten()
            .and_then(|mut m| Some((NonNull::new(m.as_mut_ptr())?, m)));
        let block = match mapped {
            Some((ptr, m)) => Block {
                ptr,
                size,
                backing: Backing::Mapped(m),
            },
            None => {
                let Ok(layout) = Layout::from_size_align(size, ALIGN) else {
                    std::process::abort();
                };
                // SAFETY: `size > 0` (every caller passes a rounded,
                // non-zero size).
                let raw = unsafe { alloc::alloc_zeroed(layout) };
                let Some(ptr) = NonNull::new(raw) else {
                    alloc::handle_alloc_error(layout);
                };
                Block {
                    ptr,
                    size,
                    backing: Backing::Heap(layout),
                }
            }
        };
        let ptr = block.ptr;
        blocks.push(block);
        let block_bytes: usize = blocks.iter().map(|b| b.size).sum();
        let usage = block_bytes + blocks.capacity() * size_of::<Block>();
        debug_assert!(usage >= self.memory_usage.load(Ordering::Relaxed));
        self.memory_usage.store(usage, Ordering::Relaxed);
        ptr
    }

    fn lock_blocks(&self) -> MutexGuard<'_, Vec<Block>> {
        // A panic while the lock is held cannot leave the list inconsistent
        // (pushes are the only mutation), so poisoning is ignored.
        self.blocks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Number of blocks obtained from the allocator (tests and statistics).
    pub fn num_blocks(&self) -> usize {
        self.lock_blocks().len()
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let blocks = self
            .blocks
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let mut mapped = Vec::new();
        for b in blocks.drain(..) {
            match b.backing {
                Backing::Heap(layout) => {
                    // SAFETY: the block was allocated with exactly this
                    // layout by `push_block` and is freed once; `&mut self`
                    // proves no pointer into the arena is still in use by a
                    // borrower.
                    unsafe { alloc::dealloc(b.ptr.as_ptr(), layout) };
                }
                Backing::Mapped(m) => mapped.push(m),
            }
        }
        // Mapped blocks go back to the pool (which unmaps what it does not
        // keep), or are unmapped as they drop here.
        if let Some(pool) = &self.pool {
            pool.give(mapped);
        }
    }
}

// Plain-thread tests; loom builds run only `loom_tests` (loom atomics
// panic outside `loom::model`).
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Arc;

    #[test]
    fn small_allocations_share_blocks() {
        let a = Arena::new(4096);
        assert_eq!(a.memory_usage(), 0);
        assert_eq!(a.allocated_and_unused(), 0);
        let p = a.allocate(10);
        assert_eq!(p.as_ptr().addr() % ALIGN, 0);
        let q = a.allocate(10);
        assert_eq!(q.as_ptr().addr() - p.as_ptr().addr(), 16);
        assert_eq!(a.num_blocks(), 1);
        assert!(a.memory_usage() >= 4096);
        assert_eq!(a.allocated_and_unused(), 4096 - HEADER_SIZE - 32);
    }

    #[test]
    fn big_allocations_get_own_blocks() {
        let a = Arena::new(4096);
        let _ = a.allocate(8);
        let before = a.memory_usage();
        let big = a.allocate(5000);
        assert_eq!(a.num_blocks(), 2);
        assert!(a.memory_usage() >= before + 5000);
        // The current block is still used for small allocations.
        let unused = a.allocated_and_unused();
        let _ = a.allocate(8);
        assert_eq!(a.allocated_and_unused(), unused - 8);
        // SAFETY: `big` points to 5000 writable bytes owned by this test.
        let s = unsafe { std::slice::from_raw_parts_mut(big.as_ptr(), 5000) };
        assert!(s.iter().all(|&b| b == 0));
        s.fill(0xAB);
    }

    #[test]
    fn accounting_is_exact_and_monotonic() {
        let a = Arena::new(0); // clamped to MIN_BLOCK_SIZE
        assert_eq!(a.block_size(), MIN_BLOCK_SIZE);
        let mut last = 0;
        let mut requested = 0;
        for i in 0..2000usize {
            let n = 1 + (i * 7919) % 1500;
            let p = a.allocate(n);
            // SAFETY: `p` points to `n` writable bytes handed out to us only.
            unsafe { ptr::write_bytes(p.as_ptr(), 0xCD, n) };
            requested += n;
            let u = a.memory_usage();
            assert!(u >= last);
            assert!(u >= requested);
            last = u;
        }
        let blocks = a.lock_blocks();
        let exact: usize =
            blocks.iter().map(|b| b.size).sum::<usize>() + blocks.capacity() * size_of::<Block>();
        drop(blocks);
        assert_eq!(a.memory_usage(), exact);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_pooled_arena_reuses_its_predecessors_blocks() {
        use std::sync::Arc;
        let pool = Arc::new(ArenaBlockPool::new(8 * HUGE_BLOCK_SIZE));
        // Fills three shared blocks' worth of 1 KiB allocations with
        // `byte`; returns the blocks used and whether every allocation
        // came zeroed.
        let fill = |a: &Arena, byte: u8| {
            let mut ptrs = Vec::new();
            let mut zeroed = true;
            for _ in 0..3 * (HUGE_BLOCK_SIZE >> 10) {
                let p = a.allocate(1024);
                // SAFETY: `p` points to 1024 bytes handed out to us only.
                let s = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), 1024) };
                zeroed &= s.iter().all(|&b| b == 0);
                s.fill(byte);
                ptrs.push(p.as_ptr() as usize & !(HUGE_BLOCK_SIZE - 1));
            }
            ptrs.dedup();
            (ptrs, zeroed)
        };
        let first = Arena::with_pool(64 << 20, Some(Arc::clone(&pool)));
        let (first_blocks, zeroed) = fill(&first, 0x5a);
        assert!(zeroed, "fresh blocks are zeroed");
        drop(first);
        // The blocks are pooled as they are (not zeroed again).
        assert!(pool.pooled_bytes() >= first_blocks.len() * HUGE_BLOCK_SIZE);
        // A sequential arena (no fresh huge pages) takes pooled blocks too,
        // and maps blocks of 4 KiB pages once the pool is out of them,
        // which also go back to the pool.
        let second = Arena::with_pool(64 << 20, Some(Arc::clone(&pool)));
        second.set_fresh_huge_pages(false);
        let (second_blocks, zeroed) = fill(&second, 0xa5);
        assert!(!zeroed, "pooled blocks keep the earlier arena's bytes");
        assert!(
            second_blocks.iter().any(|b| first_blocks.contains(b)),
            "the second arena reused a pooled block"
        );
        let third = Arena::with_pool(64 << 20, Some(Arc::clone(&pool)));
        third.set_fresh_huge_pages(false);
        let (third_blocks, _) = fill(&third, 0x3c);
        let in_pool = pool.pooled_bytes() / HUGE_BLOCK_SIZE;
        drop(second);
        drop(third);
        let pooled = pool.pooled_bytes() / HUGE_BLOCK_SIZE;
        assert_eq!(
            pooled,
            (in_pool + second_blocks.len() + third_blocks.len()).min(pool.capacity_blocks()),
            "every mapped block goes back to the pool (up to its capacity)"
        );
    }

    #[test]
    fn huge_page_blocks_are_zeroed_and_accounted() {
        let a = Arena::new(64 << 20);
        assert_eq!(a.block_size(), HUGE_BLOCK_SIZE);
        let mut got = Vec::new();
        // About 3 MB: two shared huge blocks or more, and then one
        // allocation of its own (from the heap).
        for i in 0..30_000usize {
            let n = 1 + (i * 7919) % 200;
            let p = a.allocate(n);
            // SAFETY: `p` points to `n` bytes handed out to us only.
            let s = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), n) };
            assert!(s.iter().all(|&b| b == 0), "arena memory is zeroed");
            s.fill(i as u8);
            got.push((p, n, i as u8));
        }
        let big = a.allocate(HUGE_BLOCK_SIZE / 2);
        // SAFETY: as above.
        let s = unsafe { std::slice::from_raw_parts_mut(big.as_ptr(), HUGE_BLOCK_SIZE / 2) };
        assert!(s.iter().all(|&b| b == 0));
        s.fill(0xEE);
        for &(p, n, v) in &got {
            // SAFETY: still live: the arena is alive.
            let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), n) };
            assert!(s.iter().all(|&b| b == v), "an allocation was overwritten");
        }
        let blocks = a.lock_blocks();
        assert!(blocks.len() >= 3);
        if cfg!(target_os = "linux") {
            let mapped = blocks
                .iter()
                .filter(|b| matches!(b.backing, Backing::Mapped(_)))
                .count();
            assert_eq!(mapped, blocks.len() - 1, "shared blocks are mapped");
        }
        let exact: usize =
            blocks.iter().map(|b| b.size).sum::<usize>() + blocks.capacity() * size_of::<Block>();
        drop(blocks);
        assert_eq!(a.memory_usage(), exact);
    }

    /// An allocation handed back from a test thread.
    struct Alloc(NonNull<u8>, usize, u8);
    // SAFETY: the pointer is only dereferenced after the owning thread
    // joined, while the arena is alive.
    unsafe impl Send for Alloc {}

    #[test]
    fn concurrent_allocations_are_disjoint() {
        let threads = 4;
        let per_thread = if cfg!(miri) { 40 } else { 5000 };
        let a = Arc::new(Arena::new(4096));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let a = Arc::clone(&a);
                std::thread::spawn(move || {
                    let mut out = Vec::with_capacity(per_thread);
                    for i in 0..per_thread {
                        let n = 1 + (i * 31 + t * 7) % 200;
                        let p = a.allocate(n);
                        // SAFETY: `p` points to `n` writable bytes that only
                        // this thread was given.
                        unsafe { ptr::write_bytes(p.as_ptr(), t as u8, n) };
                        out.push(Alloc(p, n, t as u8));
                    }
                    out
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.join().unwrap());
        }
        let starts: HashSet<usize> = all.iter().map(|x| x.0.as_ptr().addr()).collect();
        assert_eq!(starts.len(), all.len());
        all.sort_unstable_by_key(|x| x.0.as_ptr().addr());
        for w in all.windows(2) {
            let (a, b) = (w[0].0.as_ptr().addr(), w[1].0.as_ptr().addr());
            assert!(a + w[0].1 <= b, "overlapping allocations");
        }
        for &Alloc(p, n, t) in &all {
            // SAFETY: every allocation is still live (the arena is alive) and
            // no thread writes to it any more.
            let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), n) };
            assert!(s.iter().all(|&b| b == t));
        }
    }
}
