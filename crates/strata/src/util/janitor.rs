//! A process-wide background thread for small memory chores that must not
//! run on a foreground write: unmapping a written WAL region, pre-faulting
//! a memtable arena block (see `fs::posix_mmap_write` and
//! `memtable::block_pool` for what each saves).
//!
//! Owns: one thread named `strata:janitor`, started on first use and idle
//! (blocked on its queue) when there is nothing to do, and the queue.
//! Chores run one at a time in the order given. If the thread cannot be
//! started, a chore runs on the caller's thread: slower, never lost.
//!
//! A chore must not wait for anything a foreground thread holds (it would
//! hold up every later chore): the ones here only unmap and touch memory.

use std::sync::OnceLock;
use std::sync::mpsc::{Sender, channel};

type Chore = Box<dyn FnOnce() + Send>;

/// Runs `chore` on the janitor thread (or here, if it cannot be started).
pub fn run_in_background(chore: impl FnOnce() + Send + 'static) {
    static QUEUE: OnceLock<Option<Sender<Chore>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = channel::<Chore>();
        std::thread::Builder::new()
            .name("strata:janitor".into())
            .spawn(move || {
                for chore in rx {
                    chore();
                }
            })
            .ok()
            .map(|_| tx)
    });
    let chore: Chore = Box::new(chore);
    match queue {
        Some(tx) => {
            // The thread never exits while the queue lives (a static), so a
            // send fails only if a chore panicked and took it down: run the
            // chore here then.
            if let Err(e) = tx.send(chore) {
                (e.0)();
            }
        }
        None => chore(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    #[test]
    fn chores_run_off_the_calling_thread_in_order() {
        let (tx, rx) = sync_channel(8);
        let me = std::thread::current().id();
        for i in 0..4 {
            let tx = tx.clone();
            run_in_background(move || {
                let _ = tx.send((i, std::thread::current().id() != me));
            });
        }
        let got: Vec<_> = (0..4).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, vec![(0, true), (1, true), (2, true), (3, true)]);
    }
}
