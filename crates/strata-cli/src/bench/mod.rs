//! `strata bench`: a db_bench-compatible benchmark. It takes db_bench's
//! flags (gflags style) and benchmark names, generates the same keys and
//! values (same generators and seeds, so `--seed=N` gives the same found
//! counts as RocksDB's `db_bench --seed=N`) and prints db_bench's result
//! lines, so the two can be run with the same flags and compared line by
//! line (`scripts/compare-rocksdb.sh` does).
//!
//! Benchmarks: fillseq, fillrandom, filluniquerandom, fillsync, fill100K,
//! overwrite, readseq, readreverse, readrandom, readmissing,
//! multireadrandom, seekrandom (`--seek_nexts`, `--reverse_iterator`),
//! readwhilewriting, readwhilemerging, readrandomwriterandom
//! (`--readwritepercent`), updaterandom, mergerandom (`--merge_operator`,
//! `--merge_keys`), deleteseq, deleterandom, compact, flush,
//! waitforcompaction and stats (the `rocksdb.stats` property).
//!
//! Also as db_bench: `--threads` (each thread does the full count),
//! `--duration` (seconds instead of a count for the random benchmarks),
//! `--histogram` (latency percentiles per operation type),
//! `--statistics` (the DB's tickers and histograms at the end),
//! `--report_interval_seconds` with `--report_file` (ops per interval as
//! CSV), `--stats_interval_seconds`, `--benchmark_write_rate_limit`
//! (bytes/s), `--use_existing_db`, `--cache_size`, `--row_cache_size`,
//! `--bloom_bits`, the
//! memtable, compression and compaction flags. `--writes_per_second`
//! (an older db_bench flag) paces writes in operations per second.
//!
//! Strata's own additions after the last benchmark: the write-stall
//! counters (`Stalls: ...`, after every benchmark with `--statistics`)
//! and `size on disk: N bytes` (the files in the database directory).
//!
//! Each fill benchmark, as in db_bench, starts from an empty database
//! (fillseq, fillrandom, filluniquerandom, fillsync, fill100K); the others
//! use what is there. Unknown flags are reported on stderr.

mod random;
mod stats;
pub mod transactions;
pub mod workloads;

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use strata::CompressionType;
use strata::db::StallStats;
use strata::merge_operator::{MergeOperatorRef, StringAppendOperator, UInt64AddOperator};
use strata::utilities::transactions::{
    OptimisticTransactionDB, TransactionDB, TransactionDBOptions, TxnDBWritePolicy,
};
use strata::{CompactionStyle, DB, Options, Statistics, WriteOptions};

use crate::db_options::{sanitize, style_from_code};
use crate::flags::Flags;

use self::stats::{Reporter, Stats, StatsConfig};

/// Sets the compaction options from db_bench's flags, with db_bench's
/// defaults (`db_bench --help` of RocksDB 7.8.3), then sanitizes them as
/// RocksDB does (FIFO gets one level and no L0 stalls; L0 triggers are
/// made ordered). As in db_bench, the `universal_*` flags change the
/// library's universal defaults only when not 0, and FIFO's size limit is
/// `fifo_compaction_max_table_files_size_mb` MiB (0 by default, which
/// makes FIFO keep nothing: set it with `--compaction_style=2`).
/// `max_background_compactions` / `max_background_flushes` (-1 = unset)
/// replace `max_background_jobs` with their sum when either is set.
/// Flags of the seeds' db_bench commands that RocksDB 7.8.3's db_bench
/// accepts and that change nothing here, each for the reason given; and
/// those 7.8.3 no longer accepts (it stops with "ERROR: unknown command
/// line flag"), which are named in a warning and ignored so that the
/// seeds' commands run as written.
fn seed_flags(f: &Flags) -> Result<(), String> {
    // Reads verify every block's checksum whatever --verify_checksum says.
    f.bool_or("verify_checksum", true)?;
    // Obsolete files are deleted as soon as nothing uses them: there is no
    // periodic full scan for --delete_obsolete_files_period_micros to pace.
    f.num::<u64>("delete_obsolete_files_period_micros", 0)?;
    // A no-op in RocksDB 7.8.3 too (seek compaction is gone).
    f.bool("disable_seek_compaction")?;
    // --perf_level 0 (uninitialized) and 1 (disabled) collect nothing;
    // there is no perf context to enable.
    let perf: i64 = f.num("perf_level", 0)?;
    if perf > 1 {
        eprintln!("warning: --perf_level={perf}: strata bench has no perf context; ignored");
    }
    for removed in [
        "disable_data_sync",
        "hard_rate_limit",
        "max_grandparent_overlap_factor",
        "source_compaction_factor",
    ] {
        if f.get(removed).is_some() {
            eprintln!(
                "warning: --{removed} is not a flag of RocksDB 7.8.3's db_bench, which stops \
                 at it (\"ERROR: unknown command line flag '{removed}'\"); ignored"
            );
        }
    }
    Ok(())
}

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
    c.optimize_filters_for_hits = f.bool("optimize_filters_for_hits")?;
    // Strata's own (not a db_bench flag).
    c.level_scaled_filters = f.bool("level_scaled_filters")?;
    // db_bench's defaults are RocksDB's "default" markers.
    c.ttl = f.num("ttl_seconds", strata::options::DEFAULT_COMPACTION_SECONDS)?;
    c.periodic_compaction_seconds = f.num(
        "periodic_compaction_seconds",
        strata::options::DEFAULT_COMPACTION_SECONDS,
    )?;
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
    o.db_write_buffer_size = f.num("db_write_buffer_size", 0)?;
    // 0 is RocksDB's "unset", sanitized to 16 MiB/s.
    let rate: u64 = f.num("delayed_write_rate", 8 << 20)?;
    o.delayed_write_rate = if rate == 0 { 16 << 20 } else { rate };
    Ok(())
}

/// The settings of a run, from the flags (db_bench's names and defaults).
#[derive(Clone)]
pub struct Config {
    pub num: u64,
    pub reads: i64,
    pub writes: i64,
    pub deletes: i64,
    pub key_size: usize,
    pub value_size: usize,
    pub batch_size: u64,
    pub threads: usize,
    pub duration: u64,
    pub compression_ratio: f64,
    pub seek_nexts: u64,
    pub reverse_iterator: bool,
    pub readwritepercent: u64,
    pub merge_keys: i64,
    pub write_opts: WriteOptions,
    pub write_rate_bytes: u64,
    pub writes_per_second: u64,
    pub has_merge_operator: bool,
    /// db_bench's `--backup_dir`, `--restore_dir` and their rate limits
    /// (bytes per second, 0: none) for the `backup` and `restore`
    /// benchmarks.
    pub backup_dir: String,
    pub restore_dir: String,
    pub backup_rate_limit: u64,
    pub restore_rate_limit: u64,
    /// `--prefix_size` and `--keys_per_prefix` (0: keys without prefixes).
    pub prefix_size: usize,
    pub keys_per_prefix: u64,
    /// db_bench's range-tombstone writes: after `writes_before_delete_range`
    /// writes, every `writes_per_range_tombstone`-th write (of fills and of
    /// the background writer) is followed by a `DeleteRange` of
    /// `range_tombstone_width` keys from a fresh key, at most
    /// `max_num_range_tombstones` of them; `expand_range_tombstones` writes
    /// point deletions instead.
    pub range_tombstones: RangeTombstoneWrites,
}

/// See [`Config::range_tombstones`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RangeTombstoneWrites {
    pub writes_before: i64,
    pub writes_per: i64,
    pub width: i64,
    pub max: i64,
    pub expand: bool,
}

impl RangeTombstoneWrites {
    /// Whether the `written`-th write (counted from 1) is followed by a
    /// range deletion (db_bench's condition, word for word).
    pub fn due(&self, written: i64) -> bool {
        self.writes_per > 0
            && written > self.writes_before
            && (written - self.writes_before) / self.writes_per <= self.max
            && (written - self.writes_before) % self.writes_per == 0
    }
}

impl Config {
    /// db_bench's `readwrites_`.
    pub fn readwrites(&self) -> u64 {
        if self.writes < 0 && self.reads < 0 {
            self.num
        } else {
            self.writes.max(self.reads).max(0) as u64
        }
    }
}

/// One benchmark's effective settings (db_bench adjusts `num_`, the value
/// size, the key size and sync per benchmark).
#[derive(Clone)]
pub struct RunConfig {
    pub cfg: Config,
    /// `num_`: the key range of fills (`FLAGS_num` for reads).
    pub num: u64,
    pub reads: u64,
    pub writes: u64,
    pub deletes: u64,
    pub key_size: usize,
    pub value_size: usize,
}

impl RunConfig {
    /// The key of number `n` (db_bench's `GenerateKeyFromInt`).
    #[inline]
    pub fn make_key(&self, n: u64, out: &mut Vec<u8>) {
        match self.cfg.num.checked_div(self.cfg.keys_per_prefix) {
            Some(num_prefix) => {
                random::make_prefixed_key(n, self.key_size, self.cfg.prefix_size, num_prefix, out)
            }
            None => random::make_key(n, self.key_size, out),
        }
    }

    fn new(cfg: &Config) -> Self {
        let or_num = |v: i64| if v < 0 { cfg.num } else { v as u64 };
        RunConfig {
            cfg: cfg.clone(),
            num: cfg.num,
            reads: or_num(cfg.reads),
            writes: or_num(cfg.writes),
            deletes: or_num(cfg.deletes),
            key_size: cfg.key_size,
            value_size: cfg.value_size,
        }
    }
}

/// db_bench's `Duration`: done after `max_ops` operations, or, with a time
/// limit, once `max_seconds` have passed (checked every 1000 ops).
pub struct OpBudget {
    max_seconds: u64,
    max_ops: u64,
    ops: u64,
    start: Instant,
}

impl OpBudget {
    pub fn new(max_seconds: u64, max_ops: u64) -> Self {
        OpBudget {
            max_seconds,
            max_ops,
            ops: 0,
            start: Instant::now(),
        }
    }

    #[inline]
    pub fn done(&mut self, increment: u64) -> bool {
        let increment = increment.max(1);
        self.ops += increment;
        if self.max_seconds > 0 {
            if self.ops / 1000 != (self.ops - increment) / 1000 {
                return self.start.elapsed().as_secs() >= self.max_seconds;
            }
            false
        } else {
            self.ops > self.max_ops
        }
    }
}

/// Paces callers to `rate` units per second (a shared token schedule).
pub struct Pacer {
    rate: f64,
    next: Mutex<Instant>,
}

impl Pacer {
    pub fn new(rate: u64) -> Self {
        Pacer {
            rate: rate as f64,
            next: Mutex::new(Instant::now()),
        }
    }

    /// Waits until `units` more may go.
    pub fn request(&self, units: u64) {
        let wait = {
            let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            // Idle time is not banked beyond one second.
            if *next + Duration::from_secs(1) < now {
                *next = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
            }
            let at = *next;
            *next += Duration::from_secs_f64(units as f64 / self.rate);
            at.saturating_duration_since(now)
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

/// A benchmark thread's state: its id, its generator (seeded as
/// db_bench's: seed base + a run-wide thread counter) and its stats.
pub struct ThreadState {
    pub tid: usize,
    pub rand: random::Random64,
    pub stats: Stats,
}

/// What the threads of one benchmark share.
pub struct Shared<'a> {
    pub db: &'a DB,
    /// The transaction database over `db`, if the run opened one.
    pub txn: transactions::TxnEngine<'a>,
    pub txn_cfg: transactions::TxnConfig,
    pub run: RunConfig,
    pub stats_cfg: &'a StatsConfig,
    /// Threads that finished (the background writer stops when all
    /// readers have).
    pub num_done: AtomicUsize,
    pub num_threads: usize,
    /// Range deletions the writers issued (db_bench prints the count).
    pub range_deletions: std::sync::atomic::AtomicU64,
    /// `--benchmark_write_rate_limit` / `--writes_per_second` for fills.
    pub byte_pacer: Option<Pacer>,
    pub op_pacer: Option<Pacer>,
}

impl Shared<'_> {
    /// Applies the write pacing for one batch of `ops` writes of `bytes`;
    /// true if a pacer is on (latency samples then leave its wait out).
    pub fn pace_writes(&self, ops: u64, bytes: u64) -> bool {
        if let Some(p) = &self.op_pacer {
            p.request(ops);
        }
        if let Some(p) = &self.byte_pacer {
            p.request(bytes);
        }
        self.op_pacer.is_some() || self.byte_pacer.is_some()
    }
}

type Method = fn(&Shared, &mut ThreadState) -> Result<(), String>;

/// The database a run opened: plain, or under db_bench's
/// `--transaction_db` (a TransactionDB) or `--optimistic_transaction_db`.
enum Engine {
    Plain(DB),
    Pessimistic(Box<TransactionDB>),
    Optimistic(OptimisticTransactionDB),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EngineKind {
    Plain,
    Pessimistic,
    Optimistic,
}

impl Engine {
    fn open(opts: &Options, path: &std::path::Path, kind: EngineKind) -> Result<Engine, String> {
        let e = |e: strata::Error| e.to_string();
        Ok(match kind {
            EngineKind::Plain => Engine::Plain(DB::open(opts.clone(), path).map_err(e)?),
            EngineKind::Pessimistic => {
                // As db_bench: WritePrepared with unordered writes.
                let topts = TransactionDBOptions {
                    write_policy: if opts.unordered_write {
                        TxnDBWritePolicy::WritePrepared
                    } else {
                        TxnDBWritePolicy::WriteCommitted
                    },
                    ..Default::default()
                };
                Engine::Pessimistic(Box::new(
                    TransactionDB::open(opts.clone(), topts, path).map_err(e)?,
                ))
            }
            EngineKind::Optimistic => {
                Engine::Optimistic(OptimisticTransactionDB::open(opts.clone(), path).map_err(e)?)
            }
        })
    }

    fn db(&self) -> &DB {
        match self {
            Engine::Plain(db) => db,
            Engine::Pessimistic(t) => t.db(),
            Engine::Optimistic(o) => o.db(),
        }
    }

    fn txn(&self) -> transactions::TxnEngine<'_> {
        match self {
            Engine::Plain(_) => transactions::TxnEngine::Plain,
            Engine::Pessimistic(t) => transactions::TxnEngine::Pessimistic(t),
            Engine::Optimistic(o) => transactions::TxnEngine::Optimistic(o),
        }
    }

    fn close(self) -> Result<(), String> {
        let db = match self {
            Engine::Plain(db) => db,
            Engine::Pessimistic(t) => t.into_db(),
            Engine::Optimistic(o) => o.into_db(),
        };
        db.close().map_err(|e| e.to_string())
    }
}

/// Benchmarks db_bench runs on a fresh database.
const FRESH_DB: &[&str] = &[
    "fillseq",
    "fillrandom",
    "filluniquerandom",
    "fillsync",
    "fill100K",
];

/// The write-stall counters of `db` plus those of closed databases.
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

/// db_bench's prefix, memtable and table-format flags: `--prefix_size`
/// (a fixed-prefix extractor), `--memtablerep`, `--use_plain_table`
/// (PlainTable with `user_key_len = --key_size`, `--bloom_bits` or 10,
/// hash_table_ratio 0.75, as db_bench sets it), `--bloom_locality` and the
/// memtable bloom (`--memtable_bloom_size_ratio`,
/// `--memtable_whole_key_filtering`).
fn apply_table_format_flags(f: &Flags, cfg: &Config, o: &mut Options) -> Result<(), String> {
    if cfg.prefix_size > cfg.key_size {
        return Err("prefix size is larger than key size".into());
    }
    if cfg.prefix_size > 0 {
        o.cf.prefix_extractor = Some(Arc::new(strata::FixedPrefix(cfg.prefix_size)));
    }
    let rep = f
        .get("memtablerep")
        .unwrap_or("skip_list")
        .to_ascii_lowercase();
    match rep.as_str() {
        "skip_list" | "skiplist" => {}
        "vector" => o.cf.memtable_factory = strata::MemTableFactory::Vector,
        "prefix_hash" | "hash_linkedlist" if cfg.prefix_size == 0 => {
            return Err(
                "prefix_size should be non-zero if PrefixHash or HashLinkedList memtablerep is used"
                    .into(),
            );
        }
        "prefix_hash" => {
            o.cf.memtable_factory = strata::MemTableFactory::PrefixHash {
                bucket_count: f.num("hash_bucket_count", 1 << 20)?,
            };
        }
        "hash_linkedlist" => {
            o.cf.memtable_factory = strata::MemTableFactory::HashLinkList {
                bucket_count: f.num("hash_bucket_count", 1 << 20)?,
                threshold_use_skiplist: 256,
            };
        }
        other => {
            return Err(format!(
                "Could not create memtable factory: Not implemented: memtablerep {other} (Strata \
                 has skip_list, vector, prefix_hash and hash_linkedlist)"
            ));
        }
    }
    o.cf.bloom_locality = f.num("bloom_locality", 0)?;
    o.allow_mmap_reads = f.bool("mmap_read")?;
    o.allow_mmap_writes = f.bool("mmap_write")?;
    o.use_direct_reads = f.bool("use_direct_reads")?;
    o.use_direct_io_for_flush_and_compaction = f.bool("use_direct_io_for_flush_and_compaction")?;
    // Strata's default (1 MiB) unless given; RocksDB's is 0.
    if f.get("bytes_per_sync").is_some() {
        o.bytes_per_sync = f.num("bytes_per_sync", 0)?;
    }
    // Strata's defaults (a small whole-key memtable bloom) unless asked.
    if f.get("memtable_bloom_size_ratio").is_some() {
        o.cf.memtable_prefix_bloom_size_ratio = f.num("memtable_bloom_size_ratio", 0.0)?;
    }
    // db_bench's --memtable_use_huge_page (2 MiB pages, or none); Strata's
    // default (huge pages) unless given.
    if f.get("memtable_use_huge_page").is_some() || f.get("nomemtable_use_huge_page").is_some() {
        o.cf.memtable_huge_page_size = if f.bool("memtable_use_huge_page")? {
            2 << 20
        } else {
            0
        };
    }
    if f.get("memtable_whole_key_filtering").is_some()
        || f.get("nomemtable_whole_key_filtering").is_some()
    {
        o.cf.memtable_whole_key_filtering = f.bool("memtable_whole_key_filtering")?;
    }
    if f.bool("use_plain_table")? {
        eprintln!("Warning: plain table is used with SkipListFactory");
        let bits: i32 = f.num("bloom_bits", -1)?;
        o.cf.table_factory = strata::TableFactory::Plain(strata::PlainTableOptions {
            user_key_len: u32::try_from(cfg.key_size).map_err(|e| e.to_string())?,
            bloom_bits_per_key: if bits < 0 { 10 } else { bits },
            hash_table_ratio: 0.75,
            ..Default::default()
        });
    }
    Ok(())
}

/// db_bench's `--merge_operator` names.
fn merge_operator(name: &str) -> Result<MergeOperatorRef, String> {
    match name {
        "uint64add" | "UInt64AddOperator" => Ok(Arc::new(UInt64AddOperator)),
        "stringappend" | "StringAppendOperator" => Ok(Arc::new(StringAppendOperator::default())),
        "put" | "put_v1" | "PutOperator" => Ok(Arc::new(workloads::PutOperator)),
        other => Err(format!(
            "unknown --merge_operator={other} (uint64add, stringappend, put)"
        )),
    }
}

/// Runs the benchmarks the flags name.
pub fn run(f: &Flags) -> Result<(), String> {
    let db_path = match f.get("db") {
        Some(p) => std::path::PathBuf::from(p),
        None => std::env::temp_dir().join(format!("strata-bench-{}", std::process::id())),
    };
    let benchmarks = f
        .get("benchmarks")
        .unwrap_or("fillseq,fillrandom,overwrite,readrandom,readseq")
        .to_string();
    let sync = f.bool("sync")?;
    let disable_wal = f.bool("disable_wal")?;
    let mut opts = Options {
        create_if_missing: true,
        // db_bench's defaults (its enable_pipelined_write is true).
        allow_concurrent_memtable_write: f.bool_or("allow_concurrent_memtable_write", true)?,
        enable_pipelined_write: f.bool_or("enable_pipelined_write", true)?,
        unordered_write: f.bool("unordered_write")?,
        manual_wal_flush: f.bool("manual_wal_flush")?,
        // Strata's own (db_bench has no such flag): the WAL through a
        // shared memory map, on by default.
        mmap_wal_writes: f.bool_or("mmap_wal_writes", true)?,
        // db_bench's --file_checksum: FileChecksumGenCrc32cFactory.
        file_checksum_gen_factory: f.bool("file_checksum")?.then(|| {
            Arc::new(strata::tools::util::file_checksum::FileChecksumGenCrc32cFactory)
                as strata::tools::util::file_checksum::FileChecksumGenFactoryRef
        }),
        // db_bench's WAL archive flags.
        wal_ttl_seconds: f.num("wal_ttl_seconds", 0)?,
        wal_size_limit_mb: f.num("wal_size_limit_MB", 0)?,
        ..Options::default()
    };
    let merge_name = f.get("merge_operator").unwrap_or("").to_string();
    if !merge_name.is_empty() {
        opts.cf.merge_operator = Some(merge_operator(&merge_name)?);
    }
    let cfg = Config {
        num: f.num::<u64>("num", 1_000_000)?.max(1),
        reads: f.num("reads", -1)?,
        writes: f.num("writes", -1)?,
        deletes: f.num("deletes", -1)?,
        key_size: f.num("key_size", 16)?,
        value_size: f.num("value_size", 100)?,
        batch_size: f.num::<u64>("batch_size", 1)?.max(1),
        threads: f.num::<usize>("threads", 1)?.max(1),
        duration: f.num("duration", 0)?,
        compression_ratio: f.num("compression_ratio", 0.5)?,
        seek_nexts: f.num("seek_nexts", 0)?,
        reverse_iterator: f.bool("reverse_iterator")?,
        readwritepercent: f.num::<u64>("readwritepercent", 90)?.min(100),
        merge_keys: f.num("merge_keys", -1)?,
        write_opts: WriteOptions {
            sync,
            disable_wal,
            ..WriteOptions::default()
        },
        write_rate_bytes: f.num("benchmark_write_rate_limit", 0)?,
        writes_per_second: f.num("writes_per_second", 0)?,
        has_merge_operator: !merge_name.is_empty(),
        backup_dir: f.get("backup_dir").unwrap_or("").to_string(),
        restore_dir: f.get("restore_dir").unwrap_or("").to_string(),
        backup_rate_limit: f.num("backup_rate_limit", 0)?,
        restore_rate_limit: f.num("restore_rate_limit", 0)?,
        prefix_size: f.num("prefix_size", 0)?,
        keys_per_prefix: f.num("keys_per_prefix", 0)?,
        range_tombstones: RangeTombstoneWrites {
            writes_before: f.num("writes_before_delete_range", 0)?,
            writes_per: f.num("writes_per_range_tombstone", 0)?,
            width: f.num("range_tombstone_width", 100)?,
            max: f.num("max_num_range_tombstones", 0)?,
            expand: f.bool("expand_range_tombstones")?,
        },
    };
    if cfg.key_size == 0 {
        return Err("--key_size must be at least 1".into());
    }
    let seed_flag: u64 = f.num("seed", 0)?;
    let seed_base = if seed_flag == 0 {
        let s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(1);
        println!("Set seed to {s} because --seed was 0");
        s
    } else {
        seed_flag
    };
    opts.cf.write_buffer_size = f.num("write_buffer_size", 64 << 20)?;
    opts.cf.max_write_buffer_number = f.num("max_write_buffer_number", 2)?;
    opts.cf.block_size = f.num("block_size", 4096)?;
    opts.cf.compression = match f.get("compression_type") {
        Some(c) => {
            CompressionType::parse(c).ok_or_else(|| format!("unknown --compression_type={c}"))?
        }
        // db_bench's default.
        None => CompressionType::Snappy,
    };
    // db_bench's compression_opts flags.
    let co = &mut opts.cf.compression_opts;
    co.level = f.num("compression_level", co.level)?;
    co.max_dict_bytes = f.num("compression_max_dict_bytes", 0)?;
    co.zstd_max_train_bytes = f.num("compression_zstd_max_train_bytes", 0)?;
    co.parallel_threads = f.num("compression_parallel_threads", 1)?;
    co.max_dict_buffer_bytes = f.num("compression_max_dict_buffer_bytes", 0)?;
    co.use_zstd_dict_trainer = f.bool_or("compression_use_zstd_dict_trainer", true)?;
    let bloom_bits: f64 = f.num("bloom_bits", -1.0)?;
    opts.cf.bloom_bits_per_key = (bloom_bits >= 0.0).then_some(bloom_bits);
    // db_bench's NewRibbonFilterPolicy(bloom_bits): bloom_before_level 0.
    if f.bool("use_ribbon_filter")? {
        opts.cf.filter_policy = strata::FilterPolicy::Ribbon {
            bloom_before_level: 0,
        };
    }
    opts.cf.whole_key_filtering = f.bool_or("whole_key_filtering", true)?;
    opts.cf.cache_index_and_filter_blocks = f.bool("cache_index_and_filter_blocks")?;
    opts.cf.pin_l0_filter_and_index_blocks_in_cache =
        f.bool("pin_l0_filter_and_index_blocks_in_cache")?;
    // db_bench's default (false), not RocksDB's options default (true).
    opts.cf.pin_top_level_index_and_filter = f.bool("pin_top_level_index_and_filter")?;
    opts.cf.format_version = f.num("format_version", 5)?;
    opts.cf.enable_index_compression = f.bool_or("enable_index_compression", true)?;
    opts.cf.index_block_restart_interval = f.num("index_block_restart_interval", 1)?;
    let partition_all = f.bool("partition_index_and_filters")?;
    if partition_all || f.bool("partition_index")? {
        opts.cf.index_type = strata::IndexType::TwoLevelIndexSearch;
    }
    opts.cf.partition_filters = partition_all;
    // db_bench: --use_hash_search (with a prefix extractor) unless the
    // index is partitioned.
    let partitioned = partition_all || f.bool("partition_index")?;
    if f.bool("use_hash_search")? && !partitioned {
        opts.cf.index_type = strata::IndexType::HashSearch;
    }
    // db_bench: --index_with_first_key wins over --use_hash_search and
    // yields to a partitioned index (with a warning).
    if f.bool("index_with_first_key")? {
        if partitioned {
            eprintln!("--index_with_first_key is not compatible with partition index.");
        } else {
            opts.cf.index_type = strata::IndexType::BinarySearchWithFirstKey;
        }
    }
    if f.bool("use_data_block_hash_index")? {
        opts.cf.data_block_index_type = strata::DataBlockIndexType::BinaryAndHash;
    }
    opts.cf.data_block_hash_table_util_ratio = f.num("data_block_hash_table_util_ratio", 0.75)?;
    opts.cf.metadata_block_size = f.num("metadata_block_size", 4096)?;
    // db_bench's default is 2 (separators and successor).
    let mode: i64 = f.num("index_shortening_mode", 2)?;
    opts.cf.index_shortening = strata::tools::table::options::IndexShorteningMode::from_code(mode)
        .ok_or_else(|| format!("unknown --index_shortening_mode={mode}"))?;
    opts.cf.block_restart_interval = f.num("block_restart_interval", 16)?;
    // db_bench's default checksum is 4 (kXXH3).
    let checksum: u8 = f.num("checksum_type", 4)?;
    opts.cf.checksum = strata::tools::util::checksum::ChecksumType::from_u8(checksum)
        .ok_or_else(|| format!("unknown --checksum_type={checksum}"))?;
    let cache_size: i64 = f.num("cache_size", 8 << 20)?;
    // db_bench's --cache_numshardbits (-1: the cache chooses).
    let shard_bits: i32 = f.num("cache_numshardbits", -1)?;
    // Strata's own --memory_budget=BYTES (Options::memory_budget): the
    // budget's cache replaces --cache_size's.
    let budget: u64 = f.num("memory_budget", 0)?;
    if budget > 0 {
        opts.memory_budget = Some(budget);
    } else if cache_size > 0 {
        opts.cf.block_cache = Some(strata::BlockCache::with_shard_bits(
            cache_size as u64,
            shard_bits,
        ));
    }
    // db_bench's --row_cache_size (bytes; 0: no row cache), sharded as
    // the block cache is.
    let row_cache_size: u64 = f.num("row_cache_size", 0)?;
    if row_cache_size > 0 {
        opts.row_cache = Some(strata::BlockCache::with_shard_bits(
            row_cache_size,
            shard_bits,
        ));
    }
    // --open_files: max_open_files (-1: keep every table open).
    let open_files: i64 = f.num("open_files", -1)?;
    if f.get("open_files").is_some() {
        opts.max_open_files = if open_files < 0 {
            i32::MAX as usize
        } else {
            (open_files as usize).max(20)
        };
    }
    seed_flags(f)?;
    if let Some(dir) = f.get("wal_dir").filter(|d| !d.is_empty()) {
        opts.wal_dir = Some(dir.into());
    }
    apply_table_format_flags(f, &cfg, &mut opts)?;
    apply_compaction_flags(f, &mut opts)?;
    // db_bench's --min_level_to_compress: levels below it uncompressed,
    // the rest with --compression_type (compression_per_level).
    let min_level: i64 = f.num("min_level_to_compress", -1)?;
    if min_level >= 0 {
        let n = opts.cf.num_levels;
        if min_level as usize > n {
            return Err(format!(
                "--min_level_to_compress={min_level} exceeds --num_levels={n}"
            ));
        }
        opts.cf.set_min_level_to_compress(min_level as usize);
    }
    if opts.cf.compaction_style == CompactionStyle::Fifo && opts.cf.fifo.max_table_files_size == 0 {
        eprintln!(
            "warning: --compaction_style=2 with --fifo_compaction_max_table_files_size_mb=0 keeps no table files (as in db_bench)"
        );
    }
    let statistics = f.bool("statistics")?;
    if statistics {
        opts.statistics = Some(Arc::new(Statistics::new()));
    }
    let use_existing = f.bool("use_existing_db")?;
    let report_interval: u64 = f.num("report_interval_seconds", 0)?;
    let report_file = f.get("report_file").unwrap_or("report.csv").to_string();
    let stats_interval_seconds: u64 = f.num("stats_interval_seconds", 0)?;
    // --stats_per_interval with --stats_interval=N: the DB's stats
    // (rocksdb.stats) on stderr every N operations (db_bench prints them
    // at each thread's interval report; here every N of all threads').
    let stats_per_interval = f.num::<i64>("stats_per_interval", 0)? > 0
        && f.num::<u64>("stats_interval", 0)? > 0
        && stats_interval_seconds == 0;
    let stats_cfg = StatsConfig {
        histogram: f.bool("histogram")?,
        progress: f.get("progress_reports").is_none() || f.bool("progress_reports")?,
        stats_interval: if stats_interval_seconds > 0 {
            1000
        } else {
            f.num("stats_interval", 0)?
        },
        stats_interval_seconds,
        total_ops: (report_interval > 0 || stats_per_interval).then(|| Arc::new(AtomicU64::new(0))),
    };
    let kind = match (
        f.bool("transaction_db")?,
        f.bool("optimistic_transaction_db")?,
    ) {
        (true, true) => {
            return Err(
                "--transaction_db and --optimistic_transaction_db exclude each other".into(),
            );
        }
        (true, false) => EngineKind::Pessimistic,
        (false, true) => EngineKind::Optimistic,
        (false, false) => EngineKind::Plain,
    };
    let txn_sets: u64 = f.num("transaction_sets", 2)?;
    if txn_sets == 0 || txn_sets > 9999 {
        return Err("invalid value for transaction_sets".into());
    }
    let txn_cfg = transactions::TxnConfig {
        sets: txn_sets as u16,
        set_snapshot: f.bool("transaction_set_snapshot")?,
        sleep_micros: f.num("transaction_sleep", 0)?,
        lock_timeout_ms: f.num("transaction_lock_timeout", 100)?,
    };
    let unknown = f.unknown();
    if !unknown.is_empty() {
        eprintln!(
            "warning: flags strata bench does not use: --{}",
            unknown.join(", --")
        );
    }
    if !use_existing {
        let _ = std::fs::remove_dir_all(&db_path);
    }
    let mut engine = Engine::open(&opts, &db_path, kind)?;
    let mut out = std::io::stdout().lock();
    let w = |e: std::io::Error| e.to_string();
    let raw = (cfg.key_size + cfg.value_size) as f64 * cfg.num as f64;
    let compressed_value = (cfg.value_size as f64 * cfg.compression_ratio) as usize;
    writeln!(
        out,
        "Keys:       {} bytes each\nValues:     {} bytes each ({} bytes after compression)\nEntries:    {}\nRawSize:    {:.1} MB (estimated)\nFileSize:   {:.1} MB (estimated)\nCompression: {:?}\n------------------------------------------------",
        cfg.key_size,
        cfg.value_size,
        compressed_value,
        cfg.num,
        raw / 1048576.0,
        (cfg.key_size + compressed_value) as f64 * cfg.num as f64 / 1048576.0,
        opts.cf.compression,
    )
    .map_err(w)?;
    // Stall counters of the databases closed for a fresh one.
    let mut stalls_before = StallStats::default();
    // Whether the stall line was just printed (after the last benchmark).
    let mut stalls_printed = false;
    let mut total_thread_count = 0u64;
    for name in benchmarks.split(',').filter(|b| !b.is_empty()) {
        stalls_printed = false;
        let mut run = RunConfig::new(&cfg);
        let mut threads = cfg.threads;
        let method: Option<Method> = match name {
            "fillseq" => Some(workloads::fill_seq),
            "fillrandom" | "overwrite" => Some(workloads::fill_random),
            "filluniquerandom" => {
                if threads != 1 {
                    eprint!(
                        "filluniquerandom and fillanddeleteuniquerandom multithreaded not supported, use 1 thread"
                    );
                    threads = 1;
                }
                Some(workloads::fill_unique_random)
            }
            "fillsync" => {
                run.num /= 1000;
                run.cfg.write_opts.sync = true;
                Some(workloads::fill_random)
            }
            "fill100K" => {
                run.num /= 1000;
                run.value_size = 100 * 1000;
                Some(workloads::fill_random)
            }
            "readseq" => Some(workloads::read_seq),
            "readreverse" => Some(workloads::read_reverse),
            "readrandom" => Some(workloads::read_random),
            "readmissing" => {
                run.key_size += 1;
                Some(workloads::read_random)
            }
            "multireadrandom" => {
                eprintln!("entries_per_batch = {}", cfg.batch_size);
                Some(workloads::multi_read_random)
            }
            "seekrandom" => Some(workloads::seek_random),
            "readwhilewriting" => {
                threads += 1;
                Some(workloads::read_while_writing)
            }
            "readwhilemerging" => {
                threads += 1;
                Some(workloads::read_while_merging)
            }
            "readrandomwriterandom" => Some(workloads::read_random_write_random),
            "updaterandom" => Some(workloads::update_random),
            "mergerandom" => {
                if !cfg.has_merge_operator {
                    writeln!(out, "{name:<15} : skipped (--merge_operator is unknown)")
                        .map_err(w)?;
                    return Err("mergerandom needs --merge_operator".into());
                }
                Some(workloads::merge_random)
            }
            "deleteseq" => Some(workloads::delete_seq),
            "deleterandom" => Some(workloads::delete_random),
            "compact" => Some(workloads::compact),
            "backup" => Some(workloads::backup),
            "randomtransaction" => Some(transactions::random_transaction),
            "restore" => Some(workloads::restore),
            "flush" | "waitforcompaction" | "stats" => None,
            other => return Err(format!("unknown benchmark: {other}")),
        };
        if FRESH_DB.contains(&name) {
            if use_existing {
                writeln!(out, "{name:<12} : skipped (--use_existing_db is true)").map_err(w)?;
                continue;
            }
            add_stalls(&mut stalls_before, &engine.db().stall_stats());
            engine.close()?;
            std::fs::remove_dir_all(&db_path).map_err(|e| e.to_string())?;
            if let Some(dir) = &opts.wal_dir {
                let _ = std::fs::remove_dir_all(dir);
            }
            engine = Engine::open(&opts, &db_path, kind)?;
        }
        let db = engine.db();
        match (name, method) {
            (_, Some(method)) => {
                writeln!(out, "DB path: [{}]", db_path.display()).map_err(w)?;
                let seeds: Vec<u64> = (0..threads)
                    .map(|_| {
                        total_thread_count += 1;
                        seed_base.wrapping_add(total_thread_count)
                    })
                    .collect();
                let reporter = match stats_cfg.total_ops.as_ref().filter(|_| report_interval > 0) {
                    Some(total) => Some(Reporter::start(
                        &report_file,
                        report_interval,
                        Arc::clone(total),
                    )?),
                    None => None,
                };
                let shared = Shared {
                    db,
                    txn: engine.txn(),
                    txn_cfg,
                    run,
                    stats_cfg: &stats_cfg,
                    num_done: AtomicUsize::new(0),
                    num_threads: threads,
                    range_deletions: Default::default(),
                    byte_pacer: (cfg.write_rate_bytes > 0)
                        .then(|| Pacer::new(cfg.write_rate_bytes)),
                    op_pacer: (cfg.writes_per_second > 0)
                        .then(|| Pacer::new(cfg.writes_per_second)),
                };
                let running = std::sync::atomic::AtomicBool::new(true);
                let mut merged = std::thread::scope(|s| {
                    if let (true, Some(total)) = (stats_per_interval, &stats_cfg.total_ops) {
                        let (running, every) = (&running, stats_cfg.stats_interval);
                        s.spawn(move || {
                            let mut next = every;
                            while running.load(Ordering::Acquire) {
                                if total.load(Ordering::Relaxed) >= next {
                                    next += every;
                                    if let Some(st) = db.property("rocksdb.stats") {
                                        eprintln!("{st}");
                                    }
                                }
                                std::thread::sleep(std::time::Duration::from_millis(5));
                            }
                        });
                    }
                    let r = run_threads(&shared, &seeds, method);
                    running.store(false, Ordering::Release);
                    r
                })?;
                let range_deletions = shared.range_deletions.load(Ordering::Acquire);
                if range_deletions > 0 {
                    writeln!(out, "Number of range deletions: {range_deletions}").map_err(w)?;
                }
                merged.report(name, &mut out).map_err(w)?;
                if name == "randomtransaction" && kind != EngineKind::Plain {
                    // db_bench's RandomTransactionVerify.
                    match transactions::verify(db, txn_cfg.sets) {
                        Ok(()) => writeln!(out, "RandomTransactionVerify Success.").map_err(w)?,
                        Err(e) => {
                            writeln!(out, "RandomTransactionVerify FAILED!!").map_err(w)?;
                            // Optimistic transactions without a snapshot
                            // may lose updates here, as RocksDB's do: a
                            // plain get is not validated, and a write is
                            // checked only from when it was made. Anywhere
                            // else a failure is the engine's.
                            if kind != EngineKind::Optimistic || txn_cfg.set_snapshot {
                                return Err(format!("randomtransaction verification: {e}"));
                            }
                            eprintln!("randomtransaction verification: {e}");
                        }
                    }
                }
                if let Some(r) = reporter {
                    r.finish()?;
                }
            }
            ("flush", None) => db.flush().map_err(|e| e.to_string())?,
            ("waitforcompaction", None) => {
                let p = db_path.display();
                writeln!(out, "waitforcompaction({p}): started").map_err(w)?;
                db.wait_for_compactions().map_err(|e| e.to_string())?;
                writeln!(out, "waitforcompaction({p}): finished").map_err(w)?;
            }
            (_, None) => {
                // db_bench's PrintStats: a blank line, the property, a newline.
                let s = db
                    .property("rocksdb.stats")
                    .unwrap_or_else(|| "(failed)".into());
                writeln!(out, "\n{s}").map_err(w)?;
            }
        }
        if statistics {
            let mut stalls = stalls_before;
            add_stalls(&mut stalls, &db.stall_stats());
            writeln!(out, "{stalls}").map_err(w)?;
            stalls_printed = true;
        }
    }
    if let Some(s) = &opts.statistics {
        writeln!(out, "STATISTICS:\n{}", s.report()).map_err(w)?;
    }
    if !stalls_printed {
        add_stalls(&mut stalls_before, &engine.db().stall_stats());
        writeln!(out, "{stalls_before}").map_err(w)?;
    }
    writeln!(out, "size on disk: {} bytes", dir_size(&db_path)?).map_err(w)?;
    drop(engine);
    if f.get("db").is_none() {
        let _ = std::fs::remove_dir_all(&db_path);
    }
    Ok(())
}

/// Runs `method` on one thread per seed, started together; returns the
/// merged stats.
fn run_threads(shared: &Shared, seeds: &[u64], method: Method) -> Result<Stats, String> {
    let barrier = Barrier::new(seeds.len());
    let results: Vec<Result<Stats, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = seeds
            .iter()
            .enumerate()
            .map(|(tid, &seed)| {
                let barrier = &barrier;
                s.spawn(move || {
                    let mut ts = ThreadState {
                        tid,
                        rand: random::Random64::new(seed),
                        stats: Stats::new(tid),
                    };
                    // Counted done even if the method panics, so a
                    // background writer waiting on the others stops.
                    struct Done<'a>(&'a AtomicUsize);
                    impl Drop for Done<'_> {
                        fn drop(&mut self) {
                            self.0.fetch_add(1, Ordering::AcqRel);
                        }
                    }
                    let done = Done(&shared.num_done);
                    barrier.wait();
                    ts.stats.start(shared.stats_cfg);
                    let r = method(shared, &mut ts);
                    ts.stats.stop();
                    drop(done);
                    r.map(|()| ts.stats)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a benchmark thread panicked".into()))
            })
            .collect()
    });
    let all: Vec<Stats> = results.into_iter().collect::<Result<_, _>>()?;
    Ok(Stats::merged_of(&all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_budget_counts_ops_and_batches() {
        let mut d = OpBudget::new(0, 10);
        let mut n = 0;
        while !d.done(1) {
            n += 1;
        }
        assert_eq!(n, 10);
        let mut d = OpBudget::new(0, 10);
        let mut batches = 0;
        while !d.done(4) {
            batches += 1;
        }
        assert_eq!(batches, 2);
        let mut d = OpBudget::new(1, 0);
        let start = Instant::now();
        while !d.done(1) {}
        assert!(start.elapsed() >= Duration::from_secs(1));
    }

    #[test]
    fn pacer_paces() {
        let p = Pacer::new(1000);
        let start = Instant::now();
        for _ in 0..200 {
            p.request(1);
        }
        // 200 units at 1000/s take about 200 ms.
        assert!(
            start.elapsed() >= Duration::from_millis(150),
            "{:?}",
            start.elapsed()
        );
    }
}
