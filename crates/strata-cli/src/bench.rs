//! `strata bench`: the first db_bench-compatible benchmarks, with
//! db_bench's flag names and report line shape, so the two can be run
//! with the same flags and compared line by line:
//!
//! `fillseq`, `fillrandom`, `overwrite`, `readrandom`, `readseq`,
//! `readreverse`, `flush` (flush the memtable, as db_bench's `flush`),
//! `compact` (a full CompactRange, bottommost level forced),
//! `waitforcompaction` (until no flush or compaction is due or running)
//! and `stats` (prints the `rocksdb.stats` property).
//!
//! The compaction flags are db_bench's, with its defaults (which are not
//! always the library's: `level_compaction_dynamic_level_bytes` is off,
//! `delayed_write_rate` is 8 MiB/s, the hard pending-compaction limit is
//! 128 GiB); see [`apply_compaction_flags`].
//!
//! After the last benchmark come the write-stall counters (after every
//! benchmark with `--statistics`) and `size on disk: N bytes`, the total
//! size of the files in the database directory.
//!
//! As in db_bench, `fillseq` and `fillrandom` start from an empty
//! database (`overwrite` does not).
//!
//! Keys are db_bench's: `key_size` bytes, the first 8 the big-endian key
//! number, the rest `'0'` padding. Values are `value_size` bytes, half
//! random and half repeated (db_bench's `compression_ratio=0.5`).

use std::io::Write;
use std::time::Instant;

use strata::db::{BottommostLevelCompaction, CompactRangeOptions, StallStats};
use strata::table::CompressionType;
use strata::{CompactionStyle, DB, Options, ReadOptions, WriteBatch, WriteOptions};

use crate::db_options::{sanitize, style_from_code};
use crate::flags::Flags;

/// A small, fast, seedable generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

struct Config {
    num: u64,
    reads: u64,
    key_size: usize,
    value_size: usize,
    batch_size: u64,
    write_opts: WriteOptions,
    seed: u64,
}

fn make_key(n: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    let be = n.to_be_bytes();
    out.extend_from_slice(&be[..key_size.min(8)]);
    out.resize(key_size, b'0');
}

/// `len` bytes, half random (printable) and half a repeat of it.
fn make_value(rng: &mut Rng, len: usize, out: &mut Vec<u8>) {
    out.clear();
    let random = len.div_ceil(2);
    while out.len() < random {
        out.push(b' ' + (rng.next() % 95) as u8);
    }
    let mut i = 0;
    while out.len() < len {
        out.push(out[i]);
        i += 1;
    }
}

struct Report {
    name: &'static str,
    ops: u64,
    bytes: u64,
    secs: f64,
    extra: String,
}

impl Report {
    /// db_bench's line: `name : x micros/op y ops/sec z seconds n operations; m MB/s`.
    fn print(&self, out: &mut impl Write) -> Result<(), String> {
        let ops = self.ops.max(1) as f64;
        let micros = self.secs * 1e6 / ops;
        let rate = ops / self.secs.max(1e-9);
        let mut line = format!(
            "{:<12} : {:>11.3} micros/op {:.0} ops/sec {:.3} seconds {} operations;",
            self.name, micros, rate, self.secs, self.ops
        );
        if self.bytes > 0 {
            let mb = self.bytes as f64 / 1048576.0 / self.secs.max(1e-9);
            line.push_str(&format!(" {mb:>6.1} MB/s"));
        }
        if !self.extra.is_empty() {
            line.push(' ');
            line.push_str(&self.extra);
        }
        writeln!(out, "{line}").map_err(|e| e.to_string())
    }
}

fn fill(db: &DB, c: &Config, random: bool, name: &'static str) -> Result<Report, String> {
    let mut rng = Rng(c.seed | 1);
    let mut key = Vec::with_capacity(c.key_size);
    let mut value = Vec::with_capacity(c.value_size);
    let start = Instant::now();
    let mut i = 0;
    while i < c.num {
        let mut batch = WriteBatch::new();
        for _ in 0..c.batch_size.min(c.num - i) {
            let n = if random { rng.next() % c.num } else { i };
            make_key(n, c.key_size, &mut key);
            make_value(&mut rng, c.value_size, &mut value);
            batch.put(&key, &value);
            i += 1;
        }
        db.write(&c.write_opts, batch).map_err(|e| e.to_string())?;
    }
    Ok(Report {
        name,
        ops: c.num,
        bytes: c.num * (c.key_size + c.value_size) as u64,
        secs: start.elapsed().as_secs_f64(),
        extra: String::new(),
    })
}

fn read_random(db: &DB, c: &Config) -> Result<Report, String> {
    let mut rng = Rng((c.seed ^ 0x5bd1_e995) | 1);
    let ro = ReadOptions::default();
    let mut key = Vec::with_capacity(c.key_size);
    let mut found = 0u64;
    let mut bytes = 0u64;
    let start = Instant::now();
    for _ in 0..c.reads {
        make_key(rng.next() % c.num, c.key_size, &mut key);
        if let Some(v) = db.get(&ro, &key).map_err(|e| e.to_string())? {
            found += 1;
            bytes += (key.len() + v.len()) as u64;
        }
    }
    Ok(Report {
        name: "readrandom",
        ops: c.reads,
        bytes,
        secs: start.elapsed().as_secs_f64(),
        extra: format!("({found} of {} found)", c.reads),
    })
}

fn read_seq(db: &DB, c: &Config, reverse: bool) -> Result<Report, String> {
    let mut it = db
        .iter(&ReadOptions::default())
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    if reverse {
        it.seek_to_last();
    }
    let (mut n, mut bytes) = (0u64, 0u64);
    while it.valid() && n < c.reads {
        bytes += (it.key().len() + it.value().len()) as u64;
        n += 1;
        if reverse { it.prev() } else { it.next() }
    }
    it.status().map_err(|e| e.to_string())?;
    Ok(Report {
        name: if reverse { "readreverse" } else { "readseq" },
        ops: n,
        bytes,
        secs: start.elapsed().as_secs_f64(),
        extra: String::new(),
    })
}

/// Sets the compaction options from db_bench's flags, with db_bench's
/// defaults (`db_bench --help` of RocksDB 7.8.3), then sanitizes them as
/// RocksDB does (FIFO gets one level and no L0 stalls; L0 triggers are
/// made ordered). As in db_bench, the `universal_*` flags change the
/// library's universal defaults only when not 0, and FIFO's size limit is
/// `fifo_compaction_max_table_files_size_mb` MiB (0 by default, which
/// makes FIFO keep nothing: set it with `--compaction_style=2`).
/// `max_background_compactions` / `max_background_flushes` (-1 = unset)
/// replace `max_background_jobs` with their sum when either is set.
pub fn apply_compaction_flags(f: &Flags, o: &mut Options) -> Result<(), String> {
    let style: i64 = f.num("compaction_style", 0)?;
    let c = &mut o.cf;
    c.compaction_style = style_from_code(style)
        .ok_or_else(|| format!("invalid value for --compaction_style: {style}"))?;
    let count = |name: &str, default: i64| -> Result<usize, String> {
        let v: i64 = f.num(name, default)?;
        usize::try_from(v).map_err(|_| format!("invalid value for --{name}: {v}"))
    };
    c.num_levels = count("num_levels", 7)?;
    c.level0_file_num_compaction_trigger = count("level0_file_num_compaction_trigger", 4)?;
    c.level0_slowdown_writes_trigger = count("level0_slowdown_writes_trigger", 20)?;
    c.level0_stop_writes_trigger = count("level0_stop_writes_trigger", 36)?;
    c.target_file_size_base = f.num("target_file_size_base", 64 << 20)?;
    c.target_file_size_multiplier = count("target_file_size_multiplier", 1)? as u64;
    c.max_bytes_for_level_base = f.num("max_bytes_for_level_base", 256 << 20)?;
    c.max_bytes_for_level_multiplier = f.num("max_bytes_for_level_multiplier", 10.0)?;
    c.level_compaction_dynamic_level_bytes = f.bool("level_compaction_dynamic_level_bytes")?;
    c.max_compaction_bytes = f.num("max_compaction_bytes", 0)?;
    c.soft_pending_compaction_bytes_limit =
        f.num("soft_pending_compaction_bytes_limit", 64 << 30)?;
    c.hard_pending_compaction_bytes_limit =
        f.num("hard_pending_compaction_bytes_limit", 128 << 30)?;
    c.disable_auto_compactions = f.bool("disable_auto_compactions")?;
    let size_ratio = count("universal_size_ratio", 0)?;
    if size_ratio != 0 {
        c.universal.size_ratio = size_ratio as u32;
    }
    let min_width = count("universal_min_merge_width", 0)?;
    if min_width != 0 {
        c.universal.min_merge_width = min_width;
    }
    let max_width = count("universal_max_merge_width", 0)?;
    if max_width != 0 {
        c.universal.max_merge_width = max_width;
    }
    let amp = count("universal_max_size_amplification_percent", 0)?;
    if amp != 0 {
        c.universal.max_size_amplification_percent = amp as u64;
    }
    let fifo_mb: u64 = f.num("fifo_compaction_max_table_files_size_mb", 0)?;
    c.fifo.max_table_files_size = fifo_mb.saturating_mul(1 << 20);
    c.fifo.ttl_seconds = f.num("fifo_compaction_ttl", 0)?;
    sanitize(c);

    let jobs: i64 = f.num("max_background_jobs", 2)?;
    let compactions: i64 = f.num("max_background_compactions", -1)?;
    let flushes: i64 = f.num("max_background_flushes", -1)?;
    o.max_background_jobs = if compactions == -1 && flushes == -1 {
        jobs.max(1) as usize
    } else {
        (compactions.max(1) + flushes.max(1)) as usize
    };
    o.max_subcompactions = f.num::<u64>("subcompactions", 1)?.max(1) as usize;
    // 0 is RocksDB's "unset", sanitized to 16 MiB/s.
    let rate: u64 = f.num("delayed_write_rate", 8 << 20)?;
    o.delayed_write_rate = if rate == 0 { 16 << 20 } else { rate };
    Ok(())
}

/// The write-stall counters (stops, total stop time, pacing delays,
/// longest single wait), in the shape of the `Stalls:` line of
/// `rocksdb.stats`.
fn stall_line(s: &StallStats) -> String {
    s.to_string()
}

fn add_stalls(a: &mut StallStats, b: &StallStats) {
    a.stops += b.stops;
    a.stop_micros += b.stop_micros;
    a.delays += b.delays;
    a.delay_micros += b.delay_micros;
    a.max_stall_micros = a.max_stall_micros.max(b.max_stall_micros);
}

/// Total size of the files in `dir` (not recursive).
fn dir_size(dir: &std::path::Path) -> Result<u64, String> {
    let mut total = 0;
    for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        // A file deleted while listing (an obsolete one) counts as gone.
        if let Ok(m) = e.metadata()
            && m.is_file()
        {
            total += m.len();
        }
    }
    Ok(total)
}

/// Benchmarks db_bench runs on a fresh database.
const FRESH_DB: &[&str] = &["fillseq", "fillrandom"];

pub fn run(f: &Flags) -> Result<(), String> {
    let db_path = match f.get("db") {
        Some(p) => std::path::PathBuf::from(p),
        None => std::env::temp_dir().join(format!("strata-bench-{}", std::process::id())),
    };
    let benchmarks = f
        .get("benchmarks")
        .unwrap_or("fillrandom,readrandom")
        .to_string();
    let num: u64 = f.num("num", 1_000_000)?;
    let reads: i64 = f.num("reads", -1)?;
    let sync = f.bool("sync")?;
    let disable_wal = f.bool("disable_wal")?;
    let c = Config {
        num: num.max(1),
        reads: if reads < 0 { num.max(1) } else { reads as u64 },
        key_size: f.num("key_size", 16)?,
        value_size: f.num("value_size", 100)?,
        batch_size: f.num::<u64>("batch_size", 1)?.max(1),
        write_opts: WriteOptions { sync, disable_wal },
        seed: f.num("seed", 0x1234_5678)?,
    };
    let mut opts = Options {
        create_if_missing: true,
        ..Options::default()
    };
    opts.cf.write_buffer_size = f.num("write_buffer_size", 64 << 20)?;
    opts.cf.max_write_buffer_number = f.num("max_write_buffer_number", 2)?;
    opts.cf.block_size = f.num("block_size", 4096)?;
    if let Some(c) = f.get("compression_type") {
        opts.cf.compression =
            CompressionType::parse(c).ok_or_else(|| format!("unknown --compression_type={c}"))?;
    }
    let bloom_bits: f64 = f.num("bloom_bits", -1.0)?;
    opts.cf.bloom_bits_per_key = (bloom_bits >= 0.0).then_some(bloom_bits);
    apply_compaction_flags(f, &mut opts)?;
    if opts.cf.compaction_style == CompactionStyle::Fifo && opts.cf.fifo.max_table_files_size == 0 {
        eprintln!(
            "warning: --compaction_style=2 with --fifo_compaction_max_table_files_size_mb=0 keeps no table files (as in db_bench)"
        );
    }
    let statistics = f.bool("statistics")?;
    let use_existing = f.bool("use_existing_db")?;
    if !use_existing {
        let _ = std::fs::remove_dir_all(&db_path);
    }
    let mut db = DB::open(opts.clone(), &db_path).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Keys:       {} bytes each\nValues:     {} bytes each\nEntries:    {}\nDB path:    [{}]",
        c.key_size,
        c.value_size,
        c.num,
        db_path.display()
    )
    .map_err(|e| e.to_string())?;
    // Stall counters of the databases closed for a fresh one.
    let mut stalls_before = StallStats::default();
    // Whether the stall line was just printed (after the last benchmark).
    let mut stalls_printed = false;
    for name in benchmarks.split(',').filter(|b| !b.is_empty()) {
        stalls_printed = false;
        // As db_bench: the fill benchmarks start from an empty database,
        // and are skipped on an existing one.
        if FRESH_DB.contains(&name) {
            if use_existing {
                writeln!(out, "{name:<12} : skipped (--use_existing_db is true)")
                    .map_err(|e| e.to_string())?;
                continue;
            }
            add_stalls(&mut stalls_before, &db.stall_stats());
            db.close().map_err(|e| e.to_string())?;
            std::fs::remove_dir_all(&db_path).map_err(|e| e.to_string())?;
            db = DB::open(opts.clone(), &db_path).map_err(|e| e.to_string())?;
        }
        let report = match name {
            "compact" => {
                let start = Instant::now();
                let cro = CompactRangeOptions {
                    bottommost_level_compaction: BottommostLevelCompaction::Force,
                };
                db.compact_range_cf_opt(&db.default_cf(), None, None, &cro)
                    .map_err(|e| e.to_string())?;
                Some(Report {
                    name: "compact",
                    ops: 1,
                    bytes: 0,
                    secs: start.elapsed().as_secs_f64(),
                    extra: String::new(),
                })
            }
            "waitforcompaction" => {
                let p = db_path.display();
                writeln!(out, "waitforcompaction({p}): started").map_err(|e| e.to_string())?;
                db.wait_for_compactions().map_err(|e| e.to_string())?;
                writeln!(out, "waitforcompaction({p}): finished").map_err(|e| e.to_string())?;
                None
            }
            "stats" => {
                // db_bench's PrintStats: a blank line, the property, a newline.
                let s = db
                    .property("rocksdb.stats")
                    .unwrap_or_else(|| "(failed)".into());
                writeln!(out, "\n{s}").map_err(|e| e.to_string())?;
                None
            }
            "fillseq" => Some(fill(&db, &c, false, "fillseq")?),
            "fillrandom" => Some(fill(&db, &c, true, "fillrandom")?),
            "overwrite" => Some(fill(&db, &c, true, "overwrite")?),
            "readrandom" => Some(read_random(&db, &c)?),
            "readseq" => Some(read_seq(&db, &c, false)?),
            "readreverse" => Some(read_seq(&db, &c, true)?),
            "flush" => {
                let start = Instant::now();
                db.flush().map_err(|e| e.to_string())?;
                Some(Report {
                    name: "flush",
                    ops: 1,
                    bytes: 0,
                    secs: start.elapsed().as_secs_f64(),
                    extra: String::new(),
                })
            }
            other => return Err(format!("unknown benchmark: {other}")),
        };
        if let Some(report) = report {
            report.print(&mut out)?;
        }
        if statistics {
            let mut stalls = stalls_before;
            add_stalls(&mut stalls, &db.stall_stats());
            writeln!(out, "{}", stall_line(&stalls)).map_err(|e| e.to_string())?;
            stalls_printed = true;
        }
    }
    if !stalls_printed {
        add_stalls(&mut stalls_before, &db.stall_stats());
        writeln!(out, "{}", stall_line(&stalls_before)).map_err(|e| e.to_string())?;
    }
    writeln!(out, "size on disk: {} bytes", dir_size(&db_path)?).map_err(|e| e.to_string())?;
    drop(db);
    if f.get("db").is_none() {
        let _ = std::fs::remove_dir_all(&db_path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_db_bench_keys() {
        let mut k = Vec::new();
        make_key(0x0102, 16, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\x01\x0200000000");
        make_key(7, 4, &mut k);
        assert_eq!(k, b"\0\0\0\0");
        let mut v = Vec::new();
        make_value(&mut Rng(3), 100, &mut v);
        assert_eq!(v.len(), 100);
        assert_eq!(v[..50], v[50..]);
    }
}
