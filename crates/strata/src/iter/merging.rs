//! Merges several sorted internal iterators (memtables, level-0 files,
//! levels) into one sorted stream, in both directions.
//!
//! Invariant: when positioned going forward, every child is at its first
//! entry >= `key()` (the current child exactly at it); going backward,
//! every child is at its last entry <= `key()`. Switching direction
//! re-seeks the other children to restore this.

use std::cmp::Ordering;

use crate::error::Result;
use crate::format::InternalKeyComparator;
use crate::table::iterator::InternalIterator;

/// A sorted merge of child iterators.
pub struct MergingIterator {
    icmp: InternalKeyComparator,
    children: Vec<Box<dyn InternalIterator + Send>>,
    current: Option<usize>,
    forward: bool,
}

impl std::fmt::Debug for MergingIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergingIterator")
            .field("children", &self.children.len())
            .field("current", &self.current)
            .finish()
    }
}

impl MergingIterator {
    pub fn new(
        icmp: InternalKeyComparator,
        children: Vec<Box<dyn InternalIterator + Send>>,
    ) -> Self {
        MergingIterator {
            icmp,
            children,
            current: None,
            forward: true,
        }
    }

    fn find_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                if c.status().is_err() {
                    // Never skip past a child that failed: stop here.
                    self.current = None;
                    return;
                }
                continue;
            }
            best = match best {
                Some(b) if self.icmp.compare(c.key(), self.children[b].key()) != Ordering::Less => {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        self.current = best;
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
        self.find_smallest();
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
        self.find_smallest();
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
        }
        self.children[cur].next();
        self.find_smallest();
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
