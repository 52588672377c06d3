//! In-order publication of sequence numbers for the pipelined and
//! unordered write modes, where groups insert into the memtables
//! concurrently and finish in any order.
//!
//! The WAL stage registers each group, in sequence order, with its last
//! sequence number; a group is marked done when its last member finished
//! inserting. The visible sequence (`DbInner::last_sequence`) advances to
//! the last sequence of the longest prefix of done groups, so a reader
//! never sees part of a batch, nor a later write without every earlier one.
//!
//! Invariants: registered groups have non-decreasing last sequences (a
//! group of log-data-only batches takes none); the
//! visible sequence only grows and never passes a group not yet done.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::write::Group;
use crate::format::SequenceNumber;
use crate::util::sync::lock;

struct Slot {
    group: Arc<Group>,
    done: bool,
}

#[derive(Default)]
struct Inner {
    /// Ticket of `slots[0]`.
    base: u64,
    slots: VecDeque<Slot>,
}

#[derive(Default)]
pub(crate) struct Publisher {
    inner: Mutex<Inner>,
}

impl Publisher {
    /// Registers `group` (the next in sequence order); returns its ticket.
    /// REQUIRES: called by the WAL stage, which orders the calls.
    pub(crate) fn register(&self, group: Arc<Group>) -> u64 {
        let mut g = lock(&self.inner);
        debug_assert!(
            g.slots
                .back()
                .is_none_or(|s| s.group.last_seq <= group.last_seq)
        );
        g.slots.push_back(Slot { group, done: false });
        g.base + g.slots.len() as u64 - 1
    }

    /// Marks `ticket` done and publishes every group now at the head of
    /// the line into `visible`, then calls `on_published` on each of them,
    /// oldest first (their writers may now be told their writes are
    /// visible).
    pub(crate) fn complete(
        &self,
        ticket: u64,
        visible: &AtomicU64,
        mut on_published: impl FnMut(&Group),
    ) {
        let mut published = {
            let mut g = lock(&self.inner);
            let i = (ticket - g.base) as usize;
            debug_assert!(!g.slots[i].done);
            g.slots[i].done = true;
            let n = g.slots.iter().take_while(|s| s.done).count();
            if n == 0 {
                return;
            }
            let seq: SequenceNumber = g.slots[n - 1].group.last_seq;
            debug_assert!(visible.load(Ordering::Relaxed) <= seq);
            visible.store(seq, Ordering::Release);
            g.base += n as u64;
            // The first published group is usually the only one: take it
            // without allocating; rarely several finish out of order.
            let first = g.slots.pop_front().map(|s| s.group);
            let rest: Vec<Arc<Group>> = g.slots.drain(..n - 1).map(|s| s.group).collect();
            (first, rest)
        };
        if let Some(f) = published.0.take() {
            on_published(&f);
        }
        for gr in &published.1 {
            on_published(gr);
        }
    }
}
