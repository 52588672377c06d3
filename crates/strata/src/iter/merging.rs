//! Merges several sorted internal iterators (memtables, level-0 files,
//! levels) into one sorted stream, in both directions.
//!
//! Invariant: when positioned going forward, every child is at its first
//! entry >= `key()` (the current child exactly at it); going backward,
//! every child is at its last entry <= `key()`. Switching direction
//! re-seeks the other children to restore this. Going forward, `heap` is
//! a binary min-heap of the valid children by (key, child index), so
//! `next` costs O(log n) comparisons (compactions merge many files);
//! going backward the largest child is found by a scan. Heap comparisons
//! use a copy of each child's current key taken when the child moved (as
//! RocksDB's `IteratorWrapper` caches it), so sifting makes no dynamic
//! calls into the children.

use std::cmp::Ordering;

use crate::error::Result;
use crate::format::InternalKeyComparator;
use crate::format::iterator::InternalIterator;

/// A sorted merge of child iterators.
pub struct MergingIterator {
    icmp: InternalKeyComparator,
    children: Vec<Box<dyn InternalIterator + Send>>,
    current: Option<usize>,
    forward: bool,
    /// Forward direction: valid children, a min-heap by (key, index).
    heap: Vec<usize>,
    /// Forward direction: `keys[i]` is child `i`'s current key, for every
    /// child in `heap`.
    keys: Vec<Vec<u8>>,
}

impl std::fmt::Debug for MergingIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergingIterator")
            .field("children", &self.children.len())
            .field("current", &self.current)
            .finish()
    }
}

/// The sorted merge of `children`: the child itself when there is only
/// one (RocksDB's `NewMergingIterator` does the same), so a database held
/// in one memtable iterates without a heap step and a key copy per entry.
pub fn merged(
    icmp: InternalKeyComparator,
    mut children: Vec<Box<dyn InternalIterator + Send>>,
) -> Box<dyn InternalIterator + Send> {
    match children.pop() {
        Some(only) if children.is_empty() => only,
        last => {
            children.extend(last);
            Box::new(MergingIterator::new(icmp, children))
        }
    }
}

impl MergingIterator {
    pub fn new(
        icmp: InternalKeyComparator,
        children: Vec<Box<dyn InternalIterator + Send>>,
    ) -> Self {
        let keys = vec![Vec::new(); children.len()];
        MergingIterator {
            icmp,
            children,
            current: None,
            forward: true,
            heap: Vec::new(),
            keys,
        }
    }

    /// Copies child `i`'s current key into `keys[i]`.
    #[inline]
    fn cache_key(&mut self, i: usize) {
        let k = &mut self.keys[i];
        k.clear();
        k.extend_from_slice(self.children[i].key());
    }

    /// True if child `a` orders before child `b` (both in the heap).
    #[inline]
    fn before(&self, a: usize, b: usize) -> bool {
        debug_assert!(self.keys[a] == self.children[a].key());
        debug_assert!(self.keys[b] == self.children[b].key());
        match self.icmp.compare(&self.keys[a], &self.keys[b]) {
            Ordering::Less => true,
            Ordering::Equal => a < b,
            Ordering::Greater => false,
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.before(self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < n && self.before(self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == i {
                return;
            }
            self.heap.swap(i, m);
            i = m;
        }
    }

    /// Builds the heap from the children's positions (forward).
    fn build_heap(&mut self) {
        self.heap.clear();
        for i in 0..self.children.len() {
            let c = &self.children[i];
            if c.valid() {
                self.heap.push(i);
                self.cache_key(i);
            } else if c.status().is_err() {
                // Never skip past a child that failed: stop here.
                self.heap.clear();
                self.current = None;
                return;
            }
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
        self.current = self.heap.first().copied();
        debug_assert!(
            self.current
                .is_none_or(|top| self.heap.iter().all(|&i| !self.before(i, top)))
        );
    }

    fn find_largest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate().rev() {
            if !c.valid() {
                if c.status().is_err() {
                    self.current = None;
                    return;
                }
                continue;
            }
            best = match best {
                Some(b)
                    if self.icmp.compare(c.key(), self.children[b].key()) != Ordering::Greater =>
                {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        self.current = best;
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.forward = true;
        self.build_heap();
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.forward = false;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek(target);
        }
        self.forward = true;
        self.build_heap();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.forward = false;
        self.find_largest();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if !self.forward {
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key);
                if c.valid() && self.icmp.compare(c.key(), &key) == Ordering::Equal {
                    c.next();
                }
            }
            self.forward = true;
            self.children[cur].next();
            self.build_heap();
            return;
        }
        debug_assert_eq!(self.heap.first(), Some(&cur));
        self.children[cur].next();
        if self.children[cur].valid() {
            self.cache_key(cur);
            self.sift_down(0);
        } else if self.children[cur].status().is_err() {
            self.heap.clear();
            self.current = None;
            return;
        } else {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
            self.sift_down(0);
        }
        self.current = self.heap.first().copied();
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.forward {
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek_for_prev(&key);
                if c.valid() && self.icmp.compare(c.key(), &key) == Ordering::Equal {
                    c.prev();
                }
            }
            self.forward = false;
        }
        self.children[cur].prev();
        self.find_largest();
    }

    fn key(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].value(),
            None => &[],
        }
    }

    fn status(&self) -> Result<()> {
        for c in &self.children {
            c.status()?;
        }
        Ok(())
    }
}
