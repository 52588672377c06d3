//! `strata stress`, in the spirit of RocksDB's `db_stress`: threads doing
//! random puts, merges, deletes, range deletes, batches, gets, multi-gets,
//! iterator scans and snapshot reads over `--max_key` keys, checked against
//! an expected-state file that survives a crash (see [`expected`]).
//!
//! A run first verifies the database against the expected state (every key
//! by get, by multi-get, by a forward and a reverse scan, then the checksum
//! scrub), settling the writes a dead process left in flight; then it runs
//! the operations; `--verify_only` stops after the verification. A
//! verification failure prints `VERIFICATION FAILED` and exits with 2.
//! `strata crash_test` ([`crash_test`]) kills runs with SIGKILL and lets the
//! next run verify. With `--use_txn` (and `--txn_write_policy`) or
//! `--use_optimistic_txn` the workload is bank transfers in transactions
//! instead ([`bank`]).

mod bank;
pub mod crash_test;
mod expected;
mod ops;
mod verify;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::CompressionType;
use strata::{DB, Options};

use crate::bench::workloads::PutOperator;
use crate::flags::Flags;
use expected::ExpectedState;

/// What a stress run does, from its flags.
#[derive(Debug, Clone)]
pub struct Config {
    pub db: PathBuf,
    pub expected: PathBuf,
    pub threads: usize,
    pub max_key: u64,
    pub ops_per_thread: u64,
    pub duration: Option<Duration>,
    pub seed: u64,
    /// One write in this many is synced (0: none).
    pub sync_one_in: u64,
    pub disable_wal: bool,
    /// Values are 8 to 8 + this many bytes.
    pub value_extra: u64,
    pub flush_one_in: u64,
    pub compact_one_in: u64,
    pub verify_only: bool,
    /// PlainTable files (`--use_plain_table`): range deletions become
    /// single deletes, as PlainTable column families refuse them.
    pub use_plain_table: bool,
}

/// The stress tools' seeded generator.
pub(crate) use strata::tools::util::rng::Rng;

/// The prefix of every verification failure (the crash test greps for it).
pub const VERIFICATION_FAILED: &str = "VERIFICATION FAILED";

fn config(f: &Flags) -> Result<Config, String> {
    let db = PathBuf::from(f.get("db").ok_or("stress needs --db=DIR")?);
    let expected = match f.get("expected_state") {
        Some(p) => PathBuf::from(p),
        None => {
            let mut s = db.as_os_str().to_os_string();
            s.push(".expected");
            PathBuf::from(s)
        }
    };
    let duration: u64 = f.num("duration", 0)?;
    let c = Config {
        db,
        expected,
        threads: f.num("threads", 4)?,
        max_key: f.num("max_key", 10_000)?,
        ops_per_thread: f.num("ops_per_thread", 100_000)?,
        duration: (duration > 0).then(|| Duration::from_secs(duration)),
        seed: f.num("seed", 2026)?,
        sync_one_in: f.num("sync_one_in", 0)?,
        disable_wal: f.bool("disable_wal")?,
        value_extra: f.num("value_size_extra", 60)?,
        flush_one_in: f.num("flush_one_in", 2000)?,
        compact_one_in: f.num("compact_one_in", 20_000)?,
        verify_only: f.bool("verify_only")?,
        use_plain_table: f.bool("use_plain_table")?,
    };
    if c.threads == 0 || c.max_key == 0 {
        return Err("--threads and --max_key must be at least 1".into());
    }
    if c.max_key > 1 << 24 {
        return Err("--max_key is at most 16777216".into());
    }
    if c.disable_wal && c.sync_one_in > 0 {
        return Err("--sync_one_in needs the WAL (not with --disable_wal)".into());
    }
    Ok(c)
}

fn options(f: &Flags) -> Result<Options, String> {
    let mut o = Options {
        create_if_missing: true,
        // db_stress's defaults.
        allow_concurrent_memtable_write: f.bool_or("allow_concurrent_memtable_write", true)?,
        enable_pipelined_write: f.bool("enable_pipelined_write")?,
        unordered_write: f.bool("unordered_write")?,
        allow_mmap_writes: f.bool("mmap_write")?,
        ..Options::default()
    };
    crate::bench::apply_compaction_flags(f, &mut o)?;
    o.cf.write_buffer_size = f.num("write_buffer_size", 256 << 10)?;
    o.cf.max_write_buffer_number = f.num("max_write_buffer_number", 3)?;
    o.cf.compression = match f.get("compression_type") {
        None => CompressionType::Snappy,
        Some(c) => {
            CompressionType::parse(c).ok_or_else(|| format!("unknown --compression_type={c}"))?
        }
    };
    o.cf.merge_operator = Some(Arc::new(PutOperator));
    match f.get("memtablerep").unwrap_or("skip_list") {
        "skip_list" | "skiplist" => {}
        "vector" => o.cf.memtable_factory = strata::MemTableFactory::Vector,
        "prefix_hash" => {
            o.cf.memtable_factory = strata::MemTableFactory::PrefixHash {
                bucket_count: f.num("hash_bucket_count", 4096)?,
            };
            o.cf.prefix_extractor = Some(Arc::new(strata::FixedPrefix(8)));
        }
        "hash_linkedlist" => {
            // A small threshold: buckets pass it and index their later
            // entries too.
            o.cf.memtable_factory = strata::MemTableFactory::HashLinkList {
                bucket_count: f.num("hash_bucket_count", 4096)?,
                threshold_use_skiplist: 16,
            };
            o.cf.prefix_extractor = Some(Arc::new(strata::FixedPrefix(8)));
        }
        other => {
            return Err(format!(
                "unknown --memtablerep={other} (skip_list, vector, prefix_hash, hash_linkedlist)"
            ));
        }
    }
    if f.bool("use_plain_table")? {
        // Keys are 16 bytes (`expected::key_bytes`); their first 8 are a
        // prefix (hash index and bloom over prefixes).
        o.cf.prefix_extractor = Some(Arc::new(strata::FixedPrefix(8)));
        o.cf.table_factory = strata::TableFactory::Plain(strata::PlainTableOptions {
            user_key_len: 16,
            ..Default::default()
        });
    }
    o.validate().map_err(|e| e.to_string())?;
    Ok(o)
}

/// Runs `strata stress` with the given flags.
pub fn run(f: &Flags) -> Result<(), String> {
    let cfg = config(f)?;
    let opts = options(f)?;
    let txn = if f.bool("use_optimistic_txn")? {
        Some(bank::TxnKind::Optimistic)
    } else if f.bool("use_txn")? {
        Some(bank::TxnKind::Pessimistic(
            match f.num::<u32>("txn_write_policy", 0)? {
                0 => strata::utilities::transactions::TxnDBWritePolicy::WriteCommitted,
                1 => strata::utilities::transactions::TxnDBWritePolicy::WritePrepared,
                p => {
                    return Err(format!(
                        "--txn_write_policy={p}: 0 (WriteCommitted) or 1 (WritePrepared)"
                    ));
                }
            },
        ))
    } else {
        None
    };
    for u in f.unknown() {
        eprintln!("stress: warning: unknown flag --{u}");
    }
    if let Some(kind) = txn {
        if cfg.disable_wal {
            return Err("transactions need the WAL (not with --disable_wal)".into());
        }
        return bank::run(&cfg, opts, kind);
    }
    let exp = ExpectedState::open(&cfg.expected, cfg.max_key)?;
    let started = Instant::now();
    let db = DB::open(opts, &cfg.db).map_err(|e| format!("open {}: {e}", cfg.db.display()))?;
    let report = verify::verify_all(&db, &exp, &cfg)?;
    println!(
        "stress: verified {} keys ({} present; {} in-flight writes settled{}) in {:.2} s",
        cfg.max_key,
        report.present,
        report.settled,
        report.trace.map_or(String::new(), |(used, total)| format!(
            "; WAL-off trace: {used} of {total} writes recovered"
        )),
        started.elapsed().as_secs_f64()
    );
    if cfg.verify_only {
        return db.close().map_err(|e| format!("close: {e}"));
    }
    let ran = ops::run_ops(&db, &exp, &cfg)?;
    println!(
        "stress: {} operations ({} writes acknowledged) in {:.2} s",
        ran.ops,
        ran.writes,
        started.elapsed().as_secs_f64()
    );
    // The run ended normally: verify once more before closing (with the
    // WAL off, after a flush, as the writes are in the memtable only).
    if cfg.disable_wal {
        db.flush().map_err(|e| format!("flush: {e}"))?;
        // Every traced write is now in a table: the marker makes the
        // verification demand the whole trace.
        expected::TraceWriter::open_append(&exp.trace_path())?
            .append(&expected::TraceRecord::Flush)?;
    }
    verify::verify_all(&db, &exp, &cfg)?;
    db.close().map_err(|e| format!("close: {e}"))?;
    println!("stress: done, verified");
    Ok(())
}
