//! The memtable's synchronization primitives: `std`'s in normal builds,
//! loom's model-checked ones under `--cfg loom` (see `loom_tests.rs`).
//!
//! Owns: nothing; it only chooses the types. Every atomic and lock in the
//! arena, the skiplist and the memtable comes from here, so a loom build
//! checks all of them.
//!
//! Invariants (what code using this module must respect so both builds
//! behave the same):
//! - an atomic is always constructed with `new` (or written with `ptr::write`
//!   of a `new` value). Loom atomics are model objects, not plain memory, so
//!   zeroed bytes are not a valid loom atomic even where they are a valid
//!   `std` one; code relying on zeroed memory must construct the atomics
//!   explicitly under `cfg(loom)`;
//! - loom types only work inside `loom::model`, so loom builds run only the
//!   loom tests; `static` atomics (which loom cannot const-construct) stay
//!   `std` and must not take part in the behaviour being checked.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// Marks the plain (non-atomic) bytes of an object that one thread writes
/// before publishing it with a release store and others read after an
/// acquire load of the pointer: a skiplist node's header and key.
///
/// In normal builds it is zero-sized and its methods just call the closure.
/// Under loom it is a `loom::cell::UnsafeCell<()>`, so loom reports any read
/// that does not happen-after the write (a torn or unpublished key).
#[derive(Debug)]
pub(crate) struct Published {
    #[cfg(loom)]
    cell: loom::cell::UnsafeCell<()>,
}

impl Published {
    #[inline(always)]
    pub(crate) fn new() -> Published {
        Published {
            #[cfg(loom)]
            cell: loom::cell::UnsafeCell::new(()),
        }
    }

    /// Runs `f`, which writes the marked bytes, as one tracked write.
    #[inline(always)]
    pub(crate) fn write<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(loom)]
        {
            self.cell.with_mut(|_| f())
        }
        #[cfg(not(loom))]
        {
            f()
        }
    }

    /// Runs `f`, which reads the marked bytes, as one tracked read.
    #[inline(always)]
    pub(crate) fn read<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(loom)]
        {
            self.cell.with(|_| f())
        }
        #[cfg(not(loom))]
        {
            f()
        }
    }
}
