//! Copying for backups and restores: whole-file crc32c computed while
//! copying (RocksDB's `CopyOrCreateFile`), an optional rate limit shared
//! by the copying threads, progress callbacks every so many bytes, and a
//! small pool that runs copies on `max_background_operations` threads.
//!
//! Invariant: a copy returns the size and crc32c of exactly the bytes it
//! wrote, and (with `sync`) returns only once they are durable.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::fs::FileSystem;
use crate::util::checksum::crc32c_extend;

/// Bytes read per step of a copy (RocksDB's `kDefaultCopyFileBufferSize`
/// is 5 MiB; 1 MiB keeps the rate limiter's steps fine).
const CHUNK: usize = 1 << 20;

/// Keeps the bytes copied by every thread under `bytes_per_second`.
#[derive(Debug)]
pub struct RateLimiter {
    bytes_per_second: u64,
    /// When the limiter started and the bytes granted since.
    state: Mutex<(Instant, u64)>,
}

impl RateLimiter {
    pub fn new(bytes_per_second: u64) -> Self {
        RateLimiter {
            bytes_per_second: bytes_per_second.max(1),
            state: Mutex::new((Instant::now(), 0)),
        }
    }

    /// Accounts `n` bytes, sleeping while the average rate is above the
    /// limit.
    pub fn request(&self, n: u64) {
        let wait = {
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            s.1 += n;
            let due = Duration::from_secs_f64(s.1 as f64 / self.bytes_per_second as f64);
            due.saturating_sub(s.0.elapsed())
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

/// Calls `callback` each time another `interval` bytes were copied.
pub struct Progress {
    interval: u64,
    pending: AtomicU64,
    callback: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("interval", &self.interval)
            .finish()
    }
}

impl Progress {
    pub fn new(interval: u64, callback: Option<Arc<dyn Fn() + Send + Sync>>) -> Self {
        Progress {
            interval: interval.max(1),
            pending: AtomicU64::new(0),
            callback,
        }
    }

    fn add(&self, n: u64) {
        let Some(cb) = &self.callback else { return };
        let mut total = self.pending.fetch_add(n, Ordering::AcqRel) + n;
        while total >= self.interval {
            match self.pending.compare_exchange(
                total,
                total - self.interval,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    cb();
                    total -= self.interval;
                }
                Err(now) => total = now,
            }
        }
    }
}

/// Where a copy's bytes come from.
pub enum Source<'a> {
    /// A file, at most `limit` bytes of it (all when `None`; an error if
    /// shorter than `limit`).
    File {
        fs: &'a dyn FileSystem,
        path: &'a Path,
        limit: Option<u64>,
    },
    /// Literal contents (a backup's CURRENT).
    Bytes(&'a [u8]),
}

/// How a copy is made.
#[derive(Clone, Copy)]
pub struct CopyOptions<'a> {
    pub sync: bool,
    pub rate: Option<&'a RateLimiter>,
    pub progress: Option<&'a Progress>,
}

/// Copies `src` to `dst` on `dst_fs`; returns the size and crc32c of what
/// was written.
pub fn copy_with_crc(
    src: Source<'_>,
    dst_fs: &dyn FileSystem,
    dst: &Path,
    o: CopyOptions<'_>,
) -> Result<(u64, u32)> {
    let mut crc = 0u32;
    let mut on_chunk = |b: &[u8]| {
        if let Some(r) = o.rate {
            r.request(b.len() as u64);
        }
        crc = crc32c_extend(crc, b);
        if let Some(p) = o.progress {
            p.add(b.len() as u64);
        }
    };
    let size = match src {
        Source::Bytes(b) => {
            let mut out = dst_fs.new_writable_file(dst)?;
            out.append(b)?;
            on_chunk(b);
            if o.sync {
                out.sync()?;
            }
            out.close()?;
            b.len() as u64
        }
        Source::File { fs, path, limit } => {
            crate::fs::copy_file_between(fs, path, dst_fs, dst, limit, o.sync, &mut on_chunk)?
        }
    };
    Ok((size, crc))
}

/// The size and crc32c of `path` (at most `limit` bytes).
pub fn file_crc32c(fs: &dyn FileSystem, path: &Path, limit: Option<u64>) -> Result<(u64, u32)> {
    let mut input = fs.new_sequential_file(path)?;
    let mut left = limit.unwrap_or(u64::MAX);
    let mut buf = vec![0u8; CHUNK];
    let (mut size, mut crc) = (0u64, 0u32);
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = input.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        crc = crc32c_extend(crc, &buf[..n]);
        size += n as u64;
        left -= n as u64;
    }
    Ok((size, crc))
}

/// Runs `jobs` on up to `threads` threads; returns their results in
/// order.
pub fn run_parallel<T: Send, R: Send>(
    jobs: Vec<T>,
    threads: usize,
    work: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let n = jobs.len();
    if threads <= 1 || n <= 1 {
        return jobs.into_iter().map(work).collect();
    }
    let queue = Mutex::new(jobs.into_iter().enumerate().collect::<Vec<_>>());
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.min(n) {
            s.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(PoisonError::into_inner).pop();
                    let Some((i, job)) = next else { break };
                    let r = work(job);
                    results.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(r);
                }
            });
        }
    });
    // Every job ran: a worker that panicked re-panicked at the end of the
    // scope, so no slot is empty.
    let out: Vec<R> = results
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .into_iter()
        .flatten()
        .collect();
    debug_assert_eq!(out.len(), n);
    out
}
