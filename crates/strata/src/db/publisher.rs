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
//! Invariants: registered groups have increasing last sequences; the
//! visible sequence only grows and never passes a group not yet done.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::write::Group;
use super::write_thread::lock;
use crate::format::SequenceNumber;

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
                .is_none_or(|s| s.group.last_seq < group.last_seq)
        );
        g.slots.push_back(Slot { group, done: false });
        g.base + g.slots.len() as u64 - 1
    }

    /// Marks `ticket` done and publishes every group now at the head of
    /// the line into `visible`; returns them, oldest first (their writers
    /// may now be told their writes are visible).
    pub(crate) fn complete(&self, ticket: u64, visible: &AtomicU64) -> Vec<Arc<Group>> {
        let mut g = lock(&self.inner);
        let i = (ticket - g.base) as usize;
        debug_assert!(!g.slots[i].done);
        g.slots[i].done = true;
        let mut published = Vec::new();
        while g.slots.front().is_some_and(|s| s.done) {
            let Some(s) = g.slots.pop_front() else { break };
            g.base += 1;
            published.push(s.group);
        }
        if let Some(last) = published.last() {
            let seq: SequenceNumber = last.last_seq;
            debug_assert!(visible.load(Ordering::Relaxed) <= seq);
            visible.store(seq, Ordering::Release);
        }
        published
    }
}
