//! A cache prefetch hint (RocksDB's `PREFETCH`): start loading a cache
//! line that is about to be read, so that several independent misses
//! overlap instead of queuing (the skiplist's next nodes, the bloom lines
//! of every level-0 table a lookup will probe).

/// Hints the CPU to bring the cache line at `p` in; no effect on the
/// program's results (a prefetch never faults, whatever the address).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: `_mm_prefetch` only hints the cache and cannot fault, even
    // for null or dangling addresses; SSE is in the x86_64 baseline.
    // Exercised by every skiplist insert (`memtable::skiplist_tests`) and
    // every PlainTable lookup (`table::plain::tests`).
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = p;
}
