//! Statistics: per-level compaction counters, write-stall counters, and
//! the `rocksdb.stats` text laid out like RocksDB's compaction stats table
//! (`db/internal_stats.cc`).
//!
//! Invariant: counters only grow; they are updated under the DB state
//! lock, after the work they count is installed.

use std::fmt::Write as _;

/// Counters of the compactions (and flushes) whose output went to a level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Compactions (flushes, on L0) that wrote this level.
    pub count: u64,
    pub micros: u64,
    /// Bytes read from the start level (Rn) and the output level (Rnp1).
    pub bytes_read_start: u64,
    pub bytes_read_output: u64,
    pub bytes_written: u64,
    /// Bytes moved here by trivial moves.
    pub bytes_moved: u64,
    pub files_read: u64,
    pub files_written: u64,
    pub keys_in: u64,
    pub keys_dropped: u64,
}

impl LevelStats {
    pub fn add(&mut self, o: &LevelStats) {
        self.count += o.count;
        self.micros += o.micros;
        self.bytes_read_start += o.bytes_read_start;
        self.bytes_read_output += o.bytes_read_output;
        self.bytes_written += o.bytes_written;
        self.bytes_moved += o.bytes_moved;
        self.files_read += o.files_read;
        self.files_written += o.files_written;
        self.keys_in += o.keys_in;
        self.keys_dropped += o.keys_dropped;
    }

    /// Write amplification of this level: bytes written per byte read
    /// from the level above.
    pub fn write_amp(&self) -> f64 {
        if self.bytes_read_start == 0 {
            0.0
        } else {
            self.bytes_written as f64 / self.bytes_read_start as f64
        }
    }
}

/// Write-stall counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StallStats {
    /// Times writes stopped, and for how long in all and at most once.
    pub stops: u64,
    pub stop_micros: u64,
    /// Write groups paced by the delayed write rate, and their pauses.
    pub delays: u64,
    pub delay_micros: u64,
    /// The longest single wait of a write group (stop or pause).
    pub max_stall_micros: u64,
}

/// Statistics of one column family.
#[derive(Clone, Debug, Default)]
pub struct CfStats {
    pub levels: Vec<LevelStats>,
}

impl CfStats {
    pub fn level_mut(&mut self, level: usize) -> &mut LevelStats {
        if self.levels.len() <= level {
            self.levels.resize(level + 1, LevelStats::default());
        }
        &mut self.levels[level]
    }

    pub fn total(&self) -> LevelStats {
        let mut t = LevelStats::default();
        for l in &self.levels {
            t.add(l);
        }
        t
    }
}

/// What the table shows of one level.
#[derive(Clone, Copy, Debug, Default)]
pub struct LevelShape {
    pub files: usize,
    pub being_compacted: usize,
    pub bytes: u64,
    pub score: f64,
}

fn gb(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

fn size_str(b: u64) -> String {
    let b = b as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.2} MB", b / (1u64 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.2} KB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

fn row(out: &mut String, name: &str, shape: &LevelShape, s: &LevelStats) {
    let secs = s.micros as f64 / 1e6;
    let read = s.bytes_read_start + s.bytes_read_output;
    let rate = |b: u64| {
        if secs > 0.0 {
            b as f64 / (1u64 << 20) as f64 / secs
        } else {
            0.0
        }
    };
    let _ = writeln!(
        out,
        "{name:>5} {:>6}/{:<3} {:>10} {:>5.1} {:>8.1} {:>7.1} {:>8.1} {:>9.1} {:>8.1} {:>9.1} {:>5.1} {:>8.1} {:>8.1} {:>9.2} {:>9} {:>8.3} {:>8} {:>8}",
        shape.files,
        shape.being_compacted,
        size_str(shape.bytes),
        shape.score,
        gb(read),
        gb(s.bytes_read_start),
        gb(s.bytes_read_output),
        gb(s.bytes_written),
        gb(s.bytes_written.saturating_sub(s.bytes_read_output)),
        gb(s.bytes_moved),
        s.write_amp(),
        rate(read),
        rate(s.bytes_written),
        secs,
        s.count,
        if s.count > 0 {
            secs / s.count as f64
        } else {
            0.0
        },
        s.keys_in,
        s.keys_dropped,
    );
}

/// The compaction stats table of column family `name`; `user_bytes` (the
/// bytes users wrote) is the base of the write amplification.
pub fn render_cf(
    name: &str,
    shapes: &[LevelShape],
    stats: &CfStats,
    user_bytes: u64,
    uptime_secs: f64,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n** Compaction Stats [{name}] **");
    let _ = writeln!(
        out,
        "Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s) Wr(MB/s) Comp(sec) Comp(cnt) Avg(sec)    KeyIn  KeyDrop"
    );
    let _ = writeln!(out, "{}", "-".repeat(150));
    let mut sum_shape = LevelShape::default();
    for (l, shape) in shapes.iter().enumerate() {
        let s = stats.levels.get(l).copied().unwrap_or_default();
        if shape.files == 0 && s.count == 0 {
            continue;
        }
        row(&mut out, &format!("L{l}"), shape, &s);
        sum_shape.files += shape.files;
        sum_shape.being_compacted += shape.being_compacted;
        sum_shape.bytes += shape.bytes;
    }
    let total = stats.total();
    // The table's W-Amp of the sum is against bytes the user wrote.
    let mut sum = stats.total();
    sum.bytes_read_start = user_bytes;
    row(&mut out, "Sum", &sum_shape, &sum);
    let written = stats.total().bytes_written;
    let _ = writeln!(
        out,
        "\nUptime(secs): {uptime_secs:.1} total\nFlush(GB): cumulative {:.3}\nCumulative compaction: {:.2} GB write, {:.2} GB read, {:.1} seconds\nWrite amplification (bytes written to tables / user bytes): {:.2}",
        gb(stats.levels.first().map_or(0, |l| l.bytes_written)),
        gb(written),
        gb(total.bytes_read_output + stats.total().bytes_read_start),
        total.micros as f64 / 1e6,
        if user_bytes > 0 {
            written as f64 / user_bytes as f64
        } else {
            0.0
        },
    );
    out
}

/// The `Stalls:` line of `rocksdb.stats`.
impl std::fmt::Display for StallStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Stalls: {} stops ({:.3} s), {} delayed write groups ({:.3} s), longest single wait {:.3} s",
            self.stops,
            self.stop_micros as f64 / 1e6,
            self.delays,
            self.delay_micros as f64 / 1e6,
            self.max_stall_micros as f64 / 1e6
        )
    }
}

/// The DB-wide stall lines.
pub fn render_stalls(s: &StallStats) -> String {
    format!("{s}\n")
}
