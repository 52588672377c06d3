//! db_bench's per-thread `Stats` (op counts, bytes, per-op-type latency
//! histograms, progress on stderr), their merge and the result line, and
//! the `--report_file` CSV reporter.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use strata::tools::util::histogram::Histogram;

/// The kinds of operation timed separately (`OperationType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpType {
    Read,
    Write,
    Delete,
    Seek,
    Merge,
    Update,
    /// db_bench's kOthers (transactions).
    Others,
}

impl OpType {
    fn name(self) -> &'static str {
        match self {
            OpType::Read => "read",
            OpType::Write => "write",
            OpType::Delete => "delete",
            OpType::Seek => "seek",
            OpType::Merge => "merge",
            OpType::Update => "update",
            OpType::Others => "op",
        }
    }
}

/// What every thread's `Stats` shares: settings and the run-wide counter
/// the CSV reporter reads.
pub struct StatsConfig {
    pub histogram: bool,
    pub progress: bool,
    /// Ops between `--stats_interval_seconds` checks (0: off).
    pub stats_interval: u64,
    pub stats_interval_seconds: u64,
    /// Run-wide op count for `--report_interval_seconds` (only then: a
    /// shared counter costs every op a contended atomic).
    pub total_ops: Option<Arc<AtomicU64>>,
}

/// One thread's measurements of one benchmark.
pub struct Stats {
    id: usize,
    start: Instant,
    finish: Instant,
    last_op_finish: Instant,
    last_report_finish: Instant,
    last_report_done: u64,
    next_report: u64,
    done: u64,
    bytes: u64,
    seconds: f64,
    message: String,
    exclude_from_merge: bool,
    hist: BTreeMap<OpType, Histogram>,
}

impl Stats {
    pub fn new(id: usize) -> Self {
        let now = Instant::now();
        Stats {
            id,
            start: now,
            finish: now,
            last_op_finish: now,
            last_report_finish: now,
            last_report_done: 0,
            next_report: 100,
            done: 0,
            bytes: 0,
            seconds: 0.0,
            message: String::new(),
            exclude_from_merge: false,
            hist: BTreeMap::new(),
        }
    }

    /// Resets the counters and starts the clock.
    pub fn start(&mut self, cfg: &StatsConfig) {
        let now = Instant::now();
        self.next_report = if cfg.stats_interval > 0 {
            cfg.stats_interval
        } else {
            100
        };
        self.last_op_finish = now;
        self.done = 0;
        self.bytes = 0;
        self.seconds = 0.0;
        self.start = now;
        self.finish = now;
        self.last_report_finish = now;
        self.last_report_done = 0;
        self.message.clear();
        self.hist.clear();
    }

    pub fn stop(&mut self) {
        self.finish = Instant::now();
        self.seconds = (self.finish - self.start).as_secs_f64();
    }

    pub fn add_bytes(&mut self, n: u64) {
        self.bytes += n;
    }

    pub fn add_message(&mut self, msg: &str) {
        if !self.message.is_empty() {
            self.message.push(' ');
        }
        self.message.push_str(msg);
    }

    /// Leaves out of the next latency sample the time since the last op
    /// (db_bench's `ResetLastOpTime`, after a rate limiter's wait).
    pub fn reset_last_op_time(&mut self) {
        self.last_op_finish = Instant::now();
    }

    /// The background writer of `readwhilewriting` is not in the result.
    pub fn exclude_from_merge(&mut self) {
        self.exclude_from_merge = true;
    }

    /// Counts `n` finished operations of kind `op`.
    #[inline]
    pub fn finished_ops(&mut self, cfg: &StatsConfig, n: u64, op: OpType) {
        if let Some(t) = &cfg.total_ops {
            t.fetch_add(n, Ordering::Relaxed);
        }
        if cfg.histogram {
            let now = Instant::now();
            let micros = (now - self.last_op_finish).as_micros() as u64;
            self.hist.entry(op).or_default().add(micros);
            if micros >= 1_000_000 && cfg.stats_interval == 0 {
                eprint!("long op: {micros} micros{:30}\r", "");
            }
            self.last_op_finish = now;
        }
        self.done += n;
        if self.done >= self.next_report && cfg.progress {
            self.report_progress(cfg);
        }
    }

    #[cold]
    fn report_progress(&mut self, cfg: &StatsConfig) {
        if cfg.stats_interval == 0 {
            self.next_report += match self.next_report {
                0..1000 => 100,
                1000..5000 => 500,
                5000..10000 => 1000,
                10000..50000 => 5000,
                50000..100000 => 10000,
                100000..500000 => 50000,
                _ => 100000,
            };
            // Progress only for runs longer than a couple of seconds.
            if self.start.elapsed() >= Duration::from_secs(2) {
                eprint!("... finished {} ops{:30}\r", self.done, "");
            }
            return;
        }
        let now = Instant::now();
        let since_last = now - self.last_report_finish;
        if cfg.stats_interval_seconds > 0
            && since_last < Duration::from_secs(cfg.stats_interval_seconds)
        {
            self.next_report += cfg.stats_interval;
            return;
        }
        let interval_ops = self.done - self.last_report_done;
        let total_secs = (now - self.start).as_secs_f64();
        eprintln!(
            "... thread {}: ({},{}) ops and ({:.1},{:.1}) ops/second in ({:.6},{:.6}) seconds",
            self.id,
            interval_ops,
            self.done,
            interval_ops as f64 / since_last.as_secs_f64().max(1e-9),
            self.done as f64 / total_secs.max(1e-9),
            since_last.as_secs_f64(),
            total_secs
        );
        self.next_report += cfg.stats_interval;
        self.last_report_finish = now;
        self.last_report_done = self.done;
    }

    /// Adds `other` (another thread's stats of the same benchmark).
    pub fn merge(&mut self, other: &Stats) {
        if other.exclude_from_merge {
            return;
        }
        for (op, h) in &other.hist {
            self.hist.entry(*op).or_default().merge(h);
        }
        self.done += other.done;
        self.bytes += other.bytes;
        self.seconds += other.seconds;
        self.start = self.start.min(other.start);
        self.finish = self.finish.max(other.finish);
        if self.message.is_empty() {
            self.message = other.message.clone();
        }
    }

    /// An empty accumulator for [`Stats::merge`], started "in the future"
    /// so the first merge sets the start.
    pub fn merged_of(threads: &[Stats]) -> Stats {
        let mut m = Stats::new(0);
        m.start = Instant::now();
        m.finish = m.start;
        for t in threads {
            if !t.exclude_from_merge {
                m.start = m.start.min(t.start);
            }
        }
        for t in threads {
            m.merge(t);
        }
        m
    }

    /// db_bench's result line (and histograms with `--histogram`).
    pub fn report(&mut self, name: &str, out: &mut impl Write) -> std::io::Result<()> {
        self.done = self.done.max(1);
        let elapsed = (self.finish - self.start).as_secs_f64().max(1e-9);
        let mut extra = String::new();
        if self.bytes > 0 {
            extra = format!("{:6.1} MB/s", self.bytes as f64 / 1048576.0 / elapsed);
        }
        if !self.message.is_empty() {
            if !extra.is_empty() {
                extra.push(' ');
            }
            extra.push_str(&self.message);
        }
        writeln!(
            out,
            "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations;{}{}",
            name,
            self.seconds * 1e6 / self.done as f64,
            (self.done as f64 / elapsed) as i64,
            elapsed,
            self.done,
            if extra.is_empty() { "" } else { " " },
            extra
        )?;
        for (op, h) in &self.hist {
            writeln!(out, "Microseconds per {}:\n{}", op.name(), h.report())?;
        }
        out.flush()
    }
}

/// `--report_interval_seconds`: appends `secs_elapsed,interval_qps` to
/// the report file every interval (`interval_qps` is the number of ops
/// finished in the interval, as in db_bench).
pub struct Reporter {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
    failed: Arc<AtomicBool>,
}

impl Reporter {
    pub fn start(
        path: &str,
        interval_secs: u64,
        total_ops: Arc<AtomicU64>,
    ) -> Result<Self, String> {
        let mut file = std::fs::File::create(path).map_err(|e| format!("{path}: {e}"))?;
        file.write_all(b"secs_elapsed,interval_qps\n")
            .map_err(|e| format!("{path}: {e}"))?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let failed = Arc::new(AtomicBool::new(false));
        let (stop2, failed2) = (Arc::clone(&stop), Arc::clone(&failed));
        let mut last = total_ops.load(Ordering::Relaxed);
        let started = Instant::now();
        let thread = std::thread::spawn(move || {
            let interval = Duration::from_secs(interval_secs.max(1));
            let mut next = started + interval;
            loop {
                let (m, cv) = &*stop2;
                let mut stopped = m.lock().unwrap_or_else(|e| e.into_inner());
                while !*stopped && Instant::now() < next {
                    let wait = next.saturating_duration_since(Instant::now());
                    stopped = cv
                        .wait_timeout(stopped, wait)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                if *stopped {
                    return;
                }
                drop(stopped);
                next += interval;
                let now_ops = total_ops.load(Ordering::Relaxed);
                let secs = (started.elapsed().as_micros() as u64 + 500_000) / 1_000_000;
                if writeln!(file, "{secs},{}", now_ops - last)
                    .and_then(|()| file.flush())
                    .is_err()
                {
                    failed2.store(true, Ordering::Relaxed);
                    return;
                }
                last = now_ops;
            }
        });
        Ok(Reporter {
            stop,
            thread: Some(thread),
            failed,
        })
    }

    pub fn finish(mut self) -> Result<(), String> {
        self.stop_thread();
        if self.failed.load(Ordering::Relaxed) {
            return Err("writing the report file failed".into());
        }
        Ok(())
    }

    fn stop_thread(&mut self) {
        let (m, cv) = &*self.stop;
        *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(histogram: bool) -> StatsConfig {
        StatsConfig {
            histogram,
            progress: false,
            stats_interval: 0,
            stats_interval_seconds: 0,
            total_ops: Some(Arc::new(AtomicU64::new(0))),
        }
    }

    #[test]
    fn result_line_has_db_benchs_shape() {
        let c = cfg(true);
        let mut a = Stats::new(0);
        let mut b = Stats::new(1);
        a.start(&c);
        b.start(&c);
        for _ in 0..10 {
            a.finished_ops(&c, 1, OpType::Read);
            b.finished_ops(&c, 1, OpType::Read);
        }
        a.add_bytes(1160);
        a.add_message("(7 of 10 found)\n");
        a.stop();
        b.stop();
        let mut m = Stats::merged_of(&[a, b]);
        assert_eq!(c.total_ops.as_ref().unwrap().load(Ordering::Relaxed), 20);
        let mut out = Vec::new();
        m.report("readrandom", &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        let first = s.lines().next().unwrap();
        assert!(first.starts_with("readrandom   : "), "{s}");
        assert!(first.contains(" micros/op "), "{s}");
        assert!(first.contains(" ops/sec "), "{s}");
        assert!(first.contains(" seconds 20 operations; "), "{s}");
        assert!(first.ends_with(" MB/s (7 of 10 found)"), "{s}");
        assert!(
            s.contains("\n\nMicroseconds per read:\nCount: 20 Average: "),
            "{s}"
        );
        assert!(s.contains("Percentiles: P50: "), "{s}");
    }

    #[test]
    fn excluded_threads_stay_out_of_the_result() {
        let c = cfg(false);
        let mut w = Stats::new(0);
        w.start(&c);
        w.exclude_from_merge();
        w.finished_ops(&c, 5, OpType::Write);
        w.stop();
        let mut r = Stats::new(1);
        r.start(&c);
        r.finished_ops(&c, 3, OpType::Read);
        r.stop();
        let m = Stats::merged_of(&[w, r]);
        assert_eq!(m.done, 3);
        assert_eq!(c.total_ops.as_ref().unwrap().load(Ordering::Relaxed), 8);
    }

    #[test]
    fn reporter_writes_csv() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.csv");
        let total = Arc::new(AtomicU64::new(0));
        let r = Reporter::start(path.to_str().unwrap(), 1, Arc::clone(&total)).unwrap();
        total.fetch_add(42, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(1300));
        r.finish().unwrap();
        let s = std::fs::read_to_string(&path).unwrap();
        assert_eq!(s, "secs_elapsed,interval_qps\n1,42\n");
    }
}
