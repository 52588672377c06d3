//! RocksDB's `VectorRep` (`--memtablerep=vector`): entries are appended
//! to a vector as they come and sorted only when read, which makes
//! unordered bulk loads cheap (no skiplist search per insert) and reads of
//! the active memtable expensive (each sorts a copy, as in RocksDB). Meant
//! for loads that read after a flush.
//!
//! Entries live in the memtable's arena; the vector holds their addresses.
//! A sorted copy is cached until the next insert, so an immutable
//! memtable (being flushed) is sorted once.
//!
//! Inserts take a mutex (RocksDB's rep takes a write lock too and does not
//! allow concurrent memtable writes: the DB refuses
//! `allow_concurrent_memtable_write` with it, as RocksDB does).
//!
//! Invariants: an address in `entries` points at `len` initialized bytes
//! of the arena this rep keeps alive, never written again; the DB never
//! adds two entries with equal internal keys (so `insert_with` does not
//! look for them).

use std::cmp::Ordering;
use std::ops::ControlFlow;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError};

use super::arena::Arena;
use super::rep::{EntryComparator, MemTableRep, MemTableRepIter};
use super::skiplist::KeyComparator;
use crate::format::InternalKeyComparator;

/// One entry's place in the arena.
#[derive(Clone, Copy, Debug)]
struct EntryRef {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: an `EntryRef` is an address of immutable arena bytes; sharing
// or sending it shares only reads of memory that stays valid while the
// owning rep (which holds the arena) lives. Exercised by
// `memtable::tests::vector_rep_*`.
unsafe impl Send for EntryRef {}
// SAFETY: as above.
unsafe impl Sync for EntryRef {}

impl EntryRef {
    /// The entry's bytes, borrowed for as long as the arena that holds
    /// them (which the caller passes to tie the lifetimes).
    #[inline]
    fn bytes(self, _arena: &Arena) -> &[u8] {
        // SAFETY: `ptr` is `len` bytes the arena handed out, fully written
        // by `fill` before the entry was pushed (under the mutex, which
        // orders the writes before any reader's lock), and never written
        // again; the arena (borrowed as long as the result) frees nothing
        // while alive. Every `EntryRef` comes from this rep's arena.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[derive(Debug, Default)]
struct State {
    entries: Vec<EntryRef>,
    /// `entries` sorted, cached until the next insert.
    sorted: Option<Arc<Vec<EntryRef>>>,
}

/// Entries in arrival order with a cached sorted copy: the vector rep's
/// index, and the hash rep's total order.
#[derive(Debug)]
pub(super) struct EntryLog {
    cmp: EntryComparator,
    state: Mutex<State>,
}

impl EntryLog {
    pub(super) fn new(icmp: InternalKeyComparator) -> Self {
        EntryLog {
            cmp: EntryComparator::new(icmp),
            state: Mutex::new(State::default()),
        }
    }

    /// Records the entry at `ptr`.
    ///
    /// # Safety
    /// `ptr` must point at `len` bytes of the arena the caller passes to
    /// this log's readers, fully written and never written again.
    pub(super) unsafe fn push(&self, ptr: NonNull<u8>, len: usize) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.entries.push(EntryRef { ptr, len });
        st.sorted = None;
    }

    /// The entries in order (sorted now, or the cached order). `arena`
    /// holds them.
    fn sorted(&self, arena: &Arena) -> Arc<Vec<EntryRef>> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = &st.sorted {
            return Arc::clone(s);
        }
        let mut v = st.entries.clone();
        v.sort_unstable_by(|a, b| self.cmp.compare(a.bytes(arena), b.bytes(arena)));
        let v = Arc::new(v);
        st.sorted = Some(Arc::clone(&v));
        v
    }

    /// Visits the entries from the first >= `target`, in order.
    pub(super) fn visit_from(
        &self,
        arena: &Arena,
        target: &[u8],
        visit: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) {
        let sorted = self.sorted(arena);
        let start =
            sorted.partition_point(|e| self.cmp.compare(e.bytes(arena), target) == Ordering::Less);
        for e in &sorted[start..] {
            if visit(e.bytes(arena)).is_break() {
                return;
            }
        }
    }
}

/// A rep whose total order is an [`EntryLog`] over its arena.
pub(super) trait LoggedRep: Send + Sync + std::fmt::Debug {
    fn log(&self) -> &EntryLog;
    fn arena(&self) -> &Arena;
}

/// A cursor over the entries of a [`LoggedRep`], in a sorted copy taken
/// at each positioning (later inserts are seen by the next `seek*`, as
/// RocksDB's iterator over a mutable vector sees a copy).
#[derive(Debug)]
pub(super) struct SortedIter<R: LoggedRep> {
    rep: Arc<R>,
    sorted: Option<Arc<Vec<EntryRef>>>,
    /// `sorted.len()` when invalid.
    pos: usize,
}

impl<R: LoggedRep> SortedIter<R> {
    pub(super) fn new(rep: Arc<R>) -> Self {
        SortedIter {
            rep,
            sorted: None,
            pos: 0,
        }
    }

    fn position(&mut self, f: impl FnOnce(&EntryComparator, &Arena, &[EntryRef]) -> usize) {
        let sorted = self.rep.log().sorted(self.rep.arena());
        self.pos = f(&self.rep.log().cmp, self.rep.arena(), &sorted);
        self.sorted = Some(sorted);
    }
}

impl<R: LoggedRep> MemTableRepIter for SortedIter<R> {
    fn valid(&self) -> bool {
        self.sorted.as_ref().is_some_and(|s| self.pos < s.len())
    }
    fn entry(&self) -> &[u8] {
        match &self.sorted {
            Some(s) if self.pos < s.len() => s[self.pos].bytes(self.rep.arena()),
            _ => {
                debug_assert!(false, "entry() on an invalid cursor");
                &[]
            }
        }
    }
    fn next(&mut self) {
        debug_assert!(self.valid());
        self.pos += 1;
    }
    fn prev(&mut self) {
        debug_assert!(self.valid());
        self.pos = match self.pos.checked_sub(1) {
            Some(p) => p,
            None => self.sorted.as_ref().map_or(0, |s| s.len()),
        };
    }
    fn seek(&mut self, target: &[u8]) {
        self.position(|cmp, arena, s| {
            s.partition_point(|e| cmp.compare(e.bytes(arena), target) == Ordering::Less)
        });
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.position(|cmp, arena, s| {
            let n = s.partition_point(|e| cmp.compare(e.bytes(arena), target) != Ordering::Greater);
            n.checked_sub(1).unwrap_or(s.len())
        });
    }
    fn seek_to_first(&mut self) {
        self.position(|_, _, _| 0);
    }
    fn seek_to_last(&mut self) {
        self.position(|_, _, s| s.len().checked_sub(1).unwrap_or(s.len()));
    }
}

/// See the module comment.
#[derive(Debug)]
pub struct VectorRep {
    arena: Arc<Arena>,
    log: EntryLog,
}

impl VectorRep {
    /// An empty rep whose entries are allocated from `arena`.
    pub fn new(icmp: InternalKeyComparator, arena: Arc<Arena>) -> Self {
        VectorRep {
            arena,
            log: EntryLog::new(icmp),
        }
    }
}

impl LoggedRep for VectorRep {
    fn log(&self) -> &EntryLog {
        &self.log
    }
    fn arena(&self) -> &Arena {
        &self.arena
    }
}

impl MemTableRep for VectorRep {
    fn insert_with(&self, _user_key: &[u8], len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let ptr = self.arena.allocate(len);
        // SAFETY: the arena handed out `len` fresh bytes to this call only.
        let buf = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), len) };
        fill(buf);
        // SAFETY: `ptr` is `len` bytes of `self.arena`, written above and
        // never again.
        unsafe { self.log.push(ptr, len) };
        true
    }

    fn visit_from(&self, target: &[u8], visit: &mut dyn FnMut(&[u8]) -> ControlFlow<()>) {
        self.log.visit_from(&self.arena, target, visit);
    }

    fn iter(self: Arc<Self>) -> Box<dyn MemTableRepIter> {
        Box::new(SortedIter::new(self))
    }
}
