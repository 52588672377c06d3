//! `Env`: the background thread pools (high priority for flushes, low for
//! compactions) and the block cache, shareable by several DBs in one
//! process (RocksDB's `Env` thread pools plus a shared `Cache`).
//!
//! Invariants: a pool runs each scheduled job exactly once, on one of its
//! threads; dropping the last handle stops the threads after the jobs
//! already queued (a pool never joins itself: the last handle may be
//! dropped by one of its own jobs, and then that thread is left to end on
//! its own).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{JoinHandle, ThreadId};

use crate::table::options::BlockCacheApi;

type Job = Box<dyn FnOnce() + Send + 'static>;

struct PoolShared {
    queue: Mutex<VecDeque<Job>>,
    cv: Condvar,
    shutdown: AtomicBool,
}

/// A fixed set of worker threads running queued jobs in order.
pub struct ThreadPool {
    name: String,
    shared: Arc<PoolShared>,
    threads: Mutex<Vec<(ThreadId, JoinHandle<()>)>>,
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPool")
            .field("name", &self.name)
            .field("threads", &self.num_threads())
            .finish()
    }
}

impl ThreadPool {
    /// A pool of `threads` (at least one) threads named `strata:<name>`.
    pub fn new(name: &str, threads: usize) -> std::io::Result<ThreadPool> {
        let pool = ThreadPool {
            name: name.to_string(),
            shared: Arc::new(PoolShared {
                queue: Mutex::new(VecDeque::new()),
                cv: Condvar::new(),
                shutdown: AtomicBool::new(false),
            }),
            threads: Mutex::new(Vec::new()),
        };
        pool.set_background_threads(threads.max(1))?;
        Ok(pool)
    }

    pub fn num_threads(&self) -> usize {
        self.threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Grows the pool to `n` threads (it never shrinks).
    pub fn set_background_threads(&self, n: usize) -> std::io::Result<()> {
        let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        while threads.len() < n {
            let shared = Arc::clone(&self.shared);
            let h = std::thread::Builder::new()
                .name(format!("strata:{}", self.name))
                .spawn(move || worker(&shared))?;
            threads.push((h.thread().id(), h));
        }
        Ok(())
    }

    /// Queues `job`.
    pub fn schedule(&self, job: impl FnOnce() + Send + 'static) {
        let mut q = self
            .shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        q.push_back(Box::new(job));
        self.shared.cv.notify_one();
    }
}

fn worker(shared: &PoolShared) {
    loop {
        let job = {
            let mut q = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if let Some(j) = q.pop_front() {
                    break j;
                }
                if shared.shutdown.load(Ordering::Acquire) {
                    return;
                }
                q = shared.cv.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
        };
        job();
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        {
            let _q = self
                .shared
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            self.shared.cv.notify_all();
        }
        let me = std::thread::current().id();
        let threads =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for (id, h) in threads {
            if id != me {
                let _ = h.join();
            }
        }
    }
}

/// Background pools and block cache, shareable between DBs: pass the same
/// `Arc<Env>` in `Options::env` of each.
pub struct Env {
    /// Flushes.
    pub high_priority: ThreadPool,
    /// Compactions.
    pub low_priority: ThreadPool,
    /// The block cache of every column family that brings none of its own.
    pub block_cache: Arc<dyn BlockCacheApi>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("high_priority", &self.high_priority)
            .field("low_priority", &self.low_priority)
            .finish()
    }
}

impl Env {
    /// An Env with `flush_threads` and `compaction_threads` threads and a
    /// block cache of `block_cache_bytes`.
    pub fn new(
        flush_threads: usize,
        compaction_threads: usize,
        block_cache_bytes: usize,
    ) -> crate::Result<Arc<Env>> {
        let io = |e| crate::Error::io("starting background threads", e);
        Ok(Arc::new(Env {
            high_priority: ThreadPool::new("flush", flush_threads).map_err(io)?,
            low_priority: ThreadPool::new("compact", compaction_threads).map_err(io)?,
            block_cache: crate::cache::BlockCache::new(block_cache_bytes as u64),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn pool_runs_every_job_and_joins_on_drop() {
        let pool = ThreadPool::new("t", 2).unwrap();
        let n = Arc::new(AtomicUsize::new(0));
        for _ in 0..100 {
            let n = Arc::clone(&n);
            pool.schedule(move || {
                n.fetch_add(1, Ordering::SeqCst);
            });
        }
        drop(pool);
        assert_eq!(n.load(Ordering::SeqCst), 100);
    }

    #[test]
    fn pool_dropped_from_its_own_job_does_not_deadlock() {
        let pool = Arc::new(Mutex::new(Some(ThreadPool::new("t", 1).unwrap())));
        let (tx, rx) = std::sync::mpsc::channel();
        let p2 = Arc::clone(&pool);
        let job = move || {
            let taken = p2.lock().unwrap().take();
            drop(taken);
            tx.send(()).unwrap();
        };
        pool.lock().unwrap().as_ref().unwrap().schedule(job);
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
    }
}
