//! The process allocator's arenas, for `Options::memory_budget`.
//!
//! glibc's malloc gives threads arenas of their own (up to 8 per core), and
//! memory freed into an arena stays there for that arena's next
//! allocations instead of going back to the system or to other threads.
//! Blocks read by many threads and evicted from the block cache are freed
//! into the reading threads' arenas, so the process holds the cache's
//! capacity plus what every arena keeps: measured, 8 reader threads under a
//! 128 MiB budget peaked at 177 MiB resident with glibc's defaults and at
//! 137 MiB with one arena. [`limit_arenas`] caps the arena count
//! (`mallopt(M_ARENA_MAX)`), which bounds that overhead. It changes the
//! whole process's allocator and is never undone, so only `memory_budget`
//! asks for it, and an explicit `MALLOC_ARENA_MAX` in the environment wins.
//! It limits arenas created from then on: threads that already have an
//! arena of their own (created before the database opened) keep it.

/// Arenas kept under a memory budget: one, so every freed byte is
/// reusable by every thread. Measured (10M keys, readrandom with 8
/// threads, 128 MiB budget, 2 cores): peak RSS 138 MiB with one arena
/// (266K and 259K reads/s), 146-149 MiB with two (280K, 271K), 168-229 MiB
/// with glibc's default (211K, 312K): one arena costs about 5% here; a
/// many-core host that prefers throughput sets `MALLOC_ARENA_MAX` itself.
pub const BUDGET_ARENAS: i32 = 1;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe extern "C" {
    fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
}

/// glibc's `M_ARENA_MAX` parameter number.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const M_ARENA_MAX: std::ffi::c_int = -8;

/// Caps the allocator's arenas at `n` unless `MALLOC_ARENA_MAX` is set.
/// Returns whether a cap was set (false elsewhere than glibc).
pub fn limit_arenas(n: i32) -> bool {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return false;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only reads its two integer arguments and updates
        // glibc's allocator parameters under the allocator's own lock; it
        // is safe to call from any thread at any time. Exercised by this
        // module's test and by every test opening a database with
        // memory_budget (tests/write_buffer_manager.rs).
        unsafe { mallopt(M_ARENA_MAX, n) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = n;
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn arenas_can_be_capped_on_glibc() {
        let set = super::limit_arenas(super::BUDGET_ARENAS);
        if cfg!(all(target_os = "linux", target_env = "gnu"))
            && std::env::var_os("MALLOC_ARENA_MAX").is_none()
        {
            assert!(set, "mallopt(M_ARENA_MAX) refused");
        } else {
            assert!(!set);
        }
        // Allocation still works across threads afterwards.
        let v: Vec<Vec<u8>> = (0..8)
            .map(|i| std::thread::spawn(move || vec![i as u8; 4096]))
            .map(|t| t.join().unwrap())
            .collect();
        assert_eq!(v[7][4095], 7);
    }
}
