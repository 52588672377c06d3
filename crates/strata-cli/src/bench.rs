//! `strata bench`: the first db_bench-compatible benchmarks, with
//! db_bench's flag names and report line shape, so the two can be run
//! with the same flags and compared line by line:
//!
//! `fillseq`, `fillrandom`, `overwrite`, `readrandom`, `readseq`,
//! `readreverse`, `flush` (flush the memtable, as db_bench's `flush`).
//!
//! As in db_bench, `fillseq` and `fillrandom` start from an empty
//! database (`overwrite` does not).
//!
//! Keys are db_bench's: `key_size` bytes, the first 8 the big-endian key
//! number, the rest `'0'` padding. Values are `value_size` bytes, half
//! random and half repeated (db_bench's `compression_ratio=0.5`).

use std::io::Write;
use std::time::Instant;

use strata::table::CompressionType;
use strata::{DB, Options, ReadOptions, WriteBatch, WriteOptions};

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
    for name in benchmarks.split(',').filter(|b| !b.is_empty()) {
        // As db_bench: the fill benchmarks start from an empty database,
        // and are skipped on an existing one.
        if FRESH_DB.contains(&name) {
            if use_existing {
                writeln!(out, "{name:<12} : skipped (--use_existing_db is true)")
                    .map_err(|e| e.to_string())?;
                continue;
            }
            db.close().map_err(|e| e.to_string())?;
            std::fs::remove_dir_all(&db_path).map_err(|e| e.to_string())?;
            db = DB::open(opts.clone(), &db_path).map_err(|e| e.to_string())?;
        }
        let report = match name {
            "fillseq" => fill(&db, &c, false, "fillseq")?,
            "fillrandom" => fill(&db, &c, true, "fillrandom")?,
            "overwrite" => fill(&db, &c, true, "overwrite")?,
            "readrandom" => read_random(&db, &c)?,
            "readseq" => read_seq(&db, &c, false)?,
            "readreverse" => read_seq(&db, &c, true)?,
            "flush" => {
                let start = Instant::now();
                db.flush().map_err(|e| e.to_string())?;
                Report {
                    name: "flush",
                    ops: 1,
                    bytes: 0,
                    secs: start.elapsed().as_secs_f64(),
                    extra: String::new(),
                }
            }
            other => return Err(format!("unknown benchmark: {other}")),
        };
        report.print(&mut out)?;
    }
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
