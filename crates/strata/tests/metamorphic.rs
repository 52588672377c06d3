//! Metamorphic test (Pebble's `metamorphic/` idea, issue 14 item 7): one
//! generated operation log runs against several option sets, each in its
//! own in-memory file system, and every operation's outcome (every read's
//! result, and any error) must be the same under all of them. There is no
//! model: the oracle is agreement.
//!
//! On the first difference the test saves the whole log (one `Op` per line,
//! as `Debug` prints it) under `std::env::temp_dir()`, tries to shrink it
//! (`STRATA_METAMORPHIC_MINIMIZE_SECS`, default 120; 0 skips), saves the
//! shrunk log next to it and panics with the seed, the two option sets, the
//! op and both outcomes.
//!
//! Knobs: `STRATA_SEED=<seed>` replays one seed; `STRATA_METAMORPHIC_SEEDS`
//! (default 16) and `STRATA_METAMORPHIC_OPS` (default 1000) size the run;
//! `STRATA_METAMORPHIC_LOG=<file>` replays a saved (or hand-edited) log;
//! `STRATA_METAMORPHIC_SETS=default,wal-off` runs some option sets only.
//!
//! Long run:
//! `STRATA_METAMORPHIC_SEEDS=2000 cargo test --release -p strata --features invariants,crash-points --test metamorphic`

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::CompressionType;
use strata::FixedPrefix;
use strata::IndexType;
use strata::WriteBatch;
use strata::db::{BottommostLevelCompaction, CompactRangeOptions, DB, Snapshot};
use strata::fs::mem::MemFileSystem;
use strata::merge_operator::StringAppendOperator;
use strata::options::{CompactionStyle, MemTableFactory, Options, ReadOptions, WriteOptions};
use strata::tools::util::rng::Rng;

const DEFAULT_SEEDS: u64 = 16;
const DEFAULT_OPS: u64 = 1000;

// ---------------------------------------------------------------------------
// The operation log.

/// One write, alone or inside a batch.
#[derive(Clone, Debug, PartialEq)]
enum W {
    Put {
        key: String,
        value: String,
    },
    Delete {
        key: String,
    },
    /// Only generated for a key put at most once (and never merged) since
    /// its last point deletion, as RocksDB's contract requires.
    SingleDelete {
        key: String,
    },
    DeleteRange {
        begin: String,
        end: String,
    },
    Merge {
        key: String,
        value: String,
    },
}

/// Where a scan's iterator starts.
#[derive(Clone, Debug, PartialEq)]
enum Start {
    First,
    Last,
    Seek(String),
    SeekForPrev(String),
}

#[derive(Clone, Debug, PartialEq)]
enum Op {
    Write(W),
    Batch(Vec<W>),
    Get {
        key: String,
        snap: Option<u32>,
    },
    MultiGet {
        keys: Vec<String>,
        snap: Option<u32>,
    },
    /// An iterator with optional bounds, positioned by `start`, then moved
    /// by `moves`: `n` next, `p` prev, `N` next until invalid, `P` prev
    /// until invalid. Every position is recorded.
    Scan {
        lower: Option<String>,
        upper: Option<String>,
        start: Start,
        moves: String,
        snap: Option<u32>,
    },
    NewSnapshot {
        id: u32,
    },
    ReleaseSnapshot {
        id: u32,
    },
    Flush,
    CompactRange {
        begin: Option<String>,
        end: Option<String>,
        force: bool,
    },
    WaitForCompactions,
    /// Close and open (releases every snapshot).
    Reopen,
    /// Make everything durable (`flush_wal(true)`, or a flush with the WAL
    /// off), lose power with the DB open, open again.
    CrashReopen,
}

/// What the log's validity depends on: which keys may take a
/// SingleDelete, and which snapshots are live.
#[derive(Default)]
struct Tracker {
    /// Puts since the last point deletion, and whether merged since then.
    keys: HashMap<String, (u32, bool)>,
    live: BTreeSet<u32>,
}

impl Tracker {
    fn single_delete_ok(&self, key: &str) -> bool {
        self.keys
            .get(key)
            .is_none_or(|&(puts, merged)| puts <= 1 && !merged)
    }

    /// Whether `w` is valid now; applies it if so.
    fn write(&mut self, w: &W) -> bool {
        match w {
            W::Put { key, .. } => self.keys.entry(key.clone()).or_default().0 += 1,
            W::Merge { key, .. } => self.keys.entry(key.clone()).or_default().1 = true,
            W::SingleDelete { key } if !self.single_delete_ok(key) => return false,
            W::Delete { key } | W::SingleDelete { key } => {
                self.keys.remove(key);
            }
            // Conservative: older puts stay under the range tombstone.
            W::DeleteRange { .. } => {}
        }
        true
    }

    fn snap_ok(&self, snap: &Option<u32>) -> bool {
        snap.is_none_or(|id| self.live.contains(&id))
    }

    /// `op` made valid (invalid single deletions dropped from batches),
    /// applied; `None` when it cannot be.
    fn admit(&mut self, op: &Op) -> Option<Op> {
        match op {
            Op::Write(w) => self.write(w).then(|| op.clone()),
            Op::Batch(ws) => Some(Op::Batch(
                ws.iter().filter(|w| self.write(w)).cloned().collect(),
            )),
            Op::Get { snap, .. } | Op::MultiGet { snap, .. } | Op::Scan { snap, .. } => {
                self.snap_ok(snap).then(|| op.clone())
            }
            Op::NewSnapshot { id } => self.live.insert(*id).then(|| op.clone()),
            Op::ReleaseSnapshot { id } => self.live.remove(id).then(|| op.clone()),
            Op::Reopen | Op::CrashReopen => {
                self.live.clear();
                Some(op.clone())
            }
            Op::Flush | Op::CompactRange { .. } | Op::WaitForCompactions => Some(op.clone()),
        }
    }
}

/// `ops` with whatever removing other ops made invalid dropped.
fn sanitize(ops: &[Op]) -> Vec<Op> {
    let mut t = Tracker::default();
    ops.iter().filter_map(|op| t.admit(op)).collect()
}

struct Gen {
    rng: Rng,
    t: Tracker,
    next_snap: u32,
    ops: Vec<Op>,
    /// Keys put or merged so far.
    written: Vec<String>,
}

impl Gen {
    fn key(&mut self) -> String {
        // A few hot keys (overwrites, merges stacking up), a wider range,
        // and some longer keys between them.
        let n = match self.rng.below(100) {
            0..30 => 12,
            30..85 => 100,
            _ => 1000,
        };
        let i = self.rng.below(n);
        if self.rng.one_in(8) {
            format!("k{i:03}x{}", self.rng.below(5))
        } else {
            format!("k{i:03}")
        }
    }

    /// A key to read: often one written before (most random keys miss).
    fn read_key(&mut self) -> String {
        if self.written.is_empty() || self.rng.chance(40) {
            return self.key();
        }
        let i = self.rng.below(self.written.len() as u64) as usize;
        self.written[i].clone()
    }

    /// Two keys, the first below the second.
    fn range(&mut self) -> (String, String) {
        let (a, b) = (self.key(), self.key());
        match a.cmp(&b) {
            std::cmp::Ordering::Less => (a, b),
            std::cmp::Ordering::Greater => (b, a),
            std::cmp::Ordering::Equal => {
                let b = format!("{a}~");
                (a, b)
            }
        }
    }

    /// A value that names the op writing it.
    fn value(&mut self) -> String {
        let n = if self.rng.one_in(10) {
            100 + self.rng.below(400)
        } else {
            self.rng.below(60)
        };
        let c = char::from(b'a' + self.rng.below(26) as u8);
        format!("{}#{}", c.to_string().repeat(n as usize), self.ops.len())
    }

    fn snap(&mut self) -> Option<u32> {
        if self.t.live.is_empty() || !self.rng.chance(30) {
            return None;
        }
        let live: Vec<u32> = self.t.live.iter().copied().collect();
        Some(live[self.rng.below(live.len() as u64) as usize])
    }

    fn write(&mut self) -> W {
        let w = self.draw_write();
        if let W::Put { key, .. } | W::Merge { key, .. } = &w {
            self.written.push(key.clone());
        }
        w
    }

    fn draw_write(&mut self) -> W {
        match self.rng.below(100) {
            0..=54 => W::Put {
                key: self.key(),
                value: self.value(),
            },
            55..=66 => W::Delete { key: self.key() },
            67..=79 => {
                // Prefer keys put exactly once: the case SingleDelete is for.
                let once: Vec<&String> = self
                    .t
                    .keys
                    .iter()
                    .filter(|(_, s)| **s == (1, false))
                    .map(|(k, _)| k)
                    .collect();
                let key = if !once.is_empty() && self.rng.chance(80) {
                    let mut once: Vec<String> = once.into_iter().cloned().collect();
                    once.sort();
                    once.swap_remove(self.rng.below(once.len() as u64) as usize)
                } else {
                    self.key()
                };
                if self.t.single_delete_ok(&key) {
                    W::SingleDelete { key }
                } else {
                    W::Delete { key }
                }
            }
            80..=85 => {
                let (begin, end) = self.range();
                W::DeleteRange { begin, end }
            }
            _ => W::Merge {
                key: self.key(),
                value: format!("m{}", self.ops.len()),
            },
        }
    }

    fn bound(&mut self) -> (Option<String>, Option<String>) {
        match self.rng.below(4) {
            0 => (None, None),
            1 => (Some(self.key()), None),
            2 => (None, Some(self.key())),
            _ => {
                let (a, b) = self.range();
                (Some(a), Some(b))
            }
        }
    }

    fn scan(&mut self) -> Op {
        let (lower, upper) = self.bound();
        let start = match self.rng.below(4) {
            0 => Start::First,
            1 => Start::Last,
            2 => Start::Seek(self.read_key()),
            _ => Start::SeekForPrev(self.read_key()),
        };
        let moves = if self.rng.one_in(3) {
            if self.rng.one_in(2) { "N" } else { "P" }.to_string()
        } else {
            let mut forward = self.rng.one_in(2);
            (0..self.rng.below(12))
                .map(|_| {
                    if self.rng.one_in(4) {
                        forward = !forward;
                    }
                    if forward { 'n' } else { 'p' }
                })
                .collect()
        };
        Op::Scan {
            lower,
            upper,
            start,
            moves,
            snap: self.snap(),
        }
    }

    fn full_scan() -> Op {
        Op::Scan {
            lower: None,
            upper: None,
            start: Start::First,
            moves: "N".into(),
            snap: None,
        }
    }

    /// The next op (or two: a reopen is followed by a full scan).
    fn ops(&mut self) -> Vec<Op> {
        let op = match self.rng.below(200) {
            0..=94 => {
                // Applied here (a batch's later writes depend on its
                // earlier ones), so pushed without admitting again.
                let w = self.write();
                let ok = self.t.write(&w);
                assert!(ok, "generated an invalid write {w:?}");
                self.ops.push(Op::Write(w));
                return Vec::new();
            }
            95..=110 => {
                let mut ws = Vec::new();
                for _ in 0..1 + self.rng.below(6) {
                    let w = self.write();
                    let ok = self.t.write(&w);
                    assert!(ok, "generated an invalid write {w:?}");
                    ws.push(w);
                }
                self.ops.push(Op::Batch(ws));
                return Vec::new();
            }
            111..=134 => Op::Get {
                key: self.read_key(),
                snap: self.snap(),
            },
            135..=144 => Op::MultiGet {
                keys: (0..1 + self.rng.below(6))
                    .map(|_| self.read_key())
                    .collect(),
                snap: self.snap(),
            },
            145..=170 => self.scan(),
            171..=176 => {
                self.next_snap += 1;
                Op::NewSnapshot { id: self.next_snap }
            }
            177..=180 => match self.t.live.iter().next() {
                Some(&id) if self.rng.one_in(2) => Op::ReleaseSnapshot { id },
                _ => match self.t.live.iter().next_back() {
                    Some(&id) => Op::ReleaseSnapshot { id },
                    None => Op::Flush,
                },
            },
            181..=185 => Op::Flush,
            186..=189 => {
                let (begin, end) = match self.rng.below(3) {
                    0 => (None, None),
                    _ => {
                        let (a, b) = self.range();
                        (Some(a), Some(b))
                    }
                };
                Op::CompactRange {
                    begin,
                    end,
                    force: self.rng.one_in(2),
                }
            }
            190..=192 => Op::WaitForCompactions,
            193..=196 => return vec![Op::Reopen, Self::full_scan()],
            _ => return vec![Op::CrashReopen, Self::full_scan()],
        };
        vec![op]
    }
}

fn generate(seed: u64, n: usize) -> Vec<Op> {
    let mut g = Gen {
        rng: Rng(seed),
        t: Tracker::default(),
        next_snap: 0,
        ops: Vec::new(),
        written: Vec::new(),
    };
    while g.ops.len() < n {
        for op in g.ops() {
            let op = g.t.admit(&op).expect("generated an invalid op");
            g.ops.push(op);
        }
    }
    g.ops.truncate(n);
    g.ops
}

// ---------------------------------------------------------------------------
// Option sets.

#[derive(Clone, Copy, Debug, PartialEq)]
enum WriteMode {
    Ordered,
    Pipelined,
    Unordered,
}

#[derive(Clone, Copy, Debug)]
struct OptionSet {
    name: &'static str,
    write_buffer_size: usize,
    block_size: usize,
    block_restart_interval: usize,
    compression: CompressionType,
    bloom: bool,
    /// `WriteOptions::disable_wal` on every write (a clean close flushes;
    /// a crash reopen flushes first).
    disable_wal: bool,
    style: CompactionStyle,
    l0_trigger: usize,
    target_file_size: u64,
    level_base: u64,
    dynamic_levels: bool,
    subcompactions: usize,
    memtable: MemTableFactory,
    format_version: u32,
    /// Two-level index (and partitioned filters with blooms) in 128-byte
    /// partitions.
    partitioned: bool,
    write_mode: WriteMode,
    /// Reopen and CrashReopen only release the snapshots when false.
    reopen: bool,
}

/// RocksDB's defaults (64 MiB memtables: no flush unless asked).
const BASE: OptionSet = OptionSet {
    name: "default",
    write_buffer_size: 64 << 20,
    block_size: 4096,
    block_restart_interval: 16,
    compression: CompressionType::Snappy,
    bloom: true,
    disable_wal: false,
    style: CompactionStyle::Level,
    l0_trigger: 4,
    target_file_size: 64 << 20,
    level_base: 256 << 20,
    dynamic_levels: true,
    subcompactions: 1,
    memtable: MemTableFactory::SkipList,
    format_version: 5,
    partitioned: false,
    write_mode: WriteMode::Ordered,
    reopen: true,
};

const OPTION_SETS: [OptionSet; 9] = [
    BASE,
    OptionSet {
        name: "tiny-memtable-tiny-blocks",
        write_buffer_size: 4096,
        block_size: 256,
        block_restart_interval: 1,
        compression: CompressionType::None,
        l0_trigger: 2,
        target_file_size: 2048,
        level_base: 8192,
        ..BASE
    },
    OptionSet {
        name: "universal-zstd",
        write_buffer_size: 4096,
        block_size: 1024,
        compression: CompressionType::Zstd,
        style: CompactionStyle::Universal,
        l0_trigger: 2,
        target_file_size: 2048,
        ..BASE
    },
    OptionSet {
        name: "wal-off",
        write_buffer_size: 8192,
        block_size: 512,
        compression: CompressionType::Lz4,
        disable_wal: true,
        l0_trigger: 3,
        target_file_size: 4096,
        level_base: 16384,
        ..BASE
    },
    OptionSet {
        name: "vector-memtable-format6-partitioned",
        write_buffer_size: 4096,
        block_size: 256,
        memtable: MemTableFactory::Vector,
        format_version: 6,
        partitioned: true,
        l0_trigger: 2,
        target_file_size: 2048,
        level_base: 8192,
        ..BASE
    },
    OptionSet {
        name: "prefix-hash-memtable",
        write_buffer_size: 4096,
        block_size: 512,
        memtable: MemTableFactory::PrefixHash { bucket_count: 7 },
        l0_trigger: 2,
        ..BASE
    },
    OptionSet {
        name: "static-levels-subcompactions",
        write_buffer_size: 2048,
        block_size: 256,
        compression: CompressionType::None,
        bloom: false,
        l0_trigger: 2,
        target_file_size: 1024,
        level_base: 4096,
        dynamic_levels: false,
        subcompactions: 4,
        ..BASE
    },
    OptionSet {
        name: "pipelined-no-reopen",
        write_buffer_size: 16384,
        bloom: false,
        write_mode: WriteMode::Pipelined,
        reopen: false,
        ..BASE
    },
    OptionSet {
        name: "unordered-universal-tiny",
        write_buffer_size: 2048,
        block_size: 256,
        style: CompactionStyle::Universal,
        l0_trigger: 3,
        target_file_size: 1024,
        write_mode: WriteMode::Unordered,
        ..BASE
    },
];

fn options(fs: &MemFileSystem, set: &OptionSet) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.clone())),
        ..Options::default()
    };
    o.max_subcompactions = set.subcompactions;
    o.enable_pipelined_write = set.write_mode == WriteMode::Pipelined;
    o.unordered_write = set.write_mode == WriteMode::Unordered;
    // The vector and hash memtables take no concurrent inserts.
    o.allow_concurrent_memtable_write = set.memtable == MemTableFactory::SkipList;
    let cf = &mut o.cf;
    cf.merge_operator = Some(Arc::new(StringAppendOperator::default()));
    cf.write_buffer_size = set.write_buffer_size;
    cf.max_write_buffer_number = 3;
    cf.block_size = set.block_size;
    cf.block_restart_interval = set.block_restart_interval;
    cf.compression = set.compression;
    cf.bloom_bits_per_key = set.bloom.then_some(10.0);
    cf.compaction_style = set.style;
    cf.level0_file_num_compaction_trigger = set.l0_trigger;
    cf.target_file_size_base = set.target_file_size;
    cf.max_bytes_for_level_base = set.level_base;
    cf.level_compaction_dynamic_level_bytes = set.dynamic_levels;
    cf.memtable_factory = set.memtable;
    cf.format_version = set.format_version;
    if set.partitioned {
        cf.index_type = IndexType::TwoLevelIndexSearch;
        cf.metadata_block_size = 128;
        cf.partition_filters = set.bloom;
    }
    if matches!(set.memtable, MemTableFactory::PrefixHash { .. }) {
        // "k01", "k02", ...: several keys per prefix, several prefixes
        // per bucket.
        cf.prefix_extractor = Some(Arc::new(FixedPrefix(3)));
    }
    o
}

// ---------------------------------------------------------------------------
// Running a log.

struct Run<'a> {
    set: &'a OptionSet,
    fs: MemFileSystem,
    db: Option<DB>,
    snaps: HashMap<u32, Snapshot>,
}

fn outcome(r: strata::Result<()>) -> String {
    match r {
        Ok(()) => String::new(),
        Err(e) => format!("error: {e}"),
    }
}

fn text(v: &[u8]) -> String {
    String::from_utf8_lossy(v).into_owned()
}

fn value_text(r: strata::Result<Option<Vec<u8>>>) -> String {
    match r {
        Ok(Some(v)) => text(&v),
        Ok(None) => "-".into(),
        Err(e) => format!("error: {e}"),
    }
}

impl Run<'_> {
    fn open(&mut self) -> String {
        match DB::open(options(&self.fs, self.set), "/db") {
            Ok(db) => {
                self.db = Some(db);
                String::new()
            }
            Err(e) => format!("error: open: {e}"),
        }
    }

    fn read_options(&self, snap: &Option<u32>) -> Option<ReadOptions> {
        match snap {
            None => Some(ReadOptions::default()),
            Some(id) => self.snaps.get(id).map(|s| ReadOptions {
                snapshot: Some(s.sequence()),
                ..Default::default()
            }),
        }
    }

    fn write(&self, db: &DB, w: &W) -> String {
        let wo = WriteOptions {
            sync: false,
            disable_wal: self.set.disable_wal,
            ..WriteOptions::default()
        };
        outcome(match w {
            W::Put { key, value } => db.put(&wo, key.as_bytes(), value.as_bytes()),
            W::Delete { key } => db.delete(&wo, key.as_bytes()),
            W::SingleDelete { key } => db.single_delete(&wo, key.as_bytes()),
            W::DeleteRange { begin, end } => db.delete_range(&wo, begin.as_bytes(), end.as_bytes()),
            W::Merge { key, value } => db.merge(&wo, key.as_bytes(), value.as_bytes()),
        })
    }

    fn batch(&self, db: &DB, ws: &[W]) -> String {
        let mut b = WriteBatch::new();
        for w in ws {
            match w {
                W::Put { key, value } => b.put(key.as_bytes(), value.as_bytes()),
                W::Delete { key } => b.delete(key.as_bytes()),
                W::SingleDelete { key } => b.single_delete(key.as_bytes()),
                W::DeleteRange { begin, end } => b.delete_range(begin.as_bytes(), end.as_bytes()),
                W::Merge { key, value } => b.merge(key.as_bytes(), value.as_bytes()),
            }
        }
        let wo = WriteOptions {
            sync: false,
            disable_wal: self.set.disable_wal,
            ..WriteOptions::default()
        };
        outcome(db.write(&wo, b))
    }

    fn scan(db: &DB, mut ro: ReadOptions, op: &Op) -> String {
        let Op::Scan {
            lower,
            upper,
            start,
            moves,
            ..
        } = op
        else {
            unreachable!()
        };
        ro.iterate_lower_bound = lower.as_ref().map(|k| k.clone().into_bytes());
        ro.iterate_upper_bound = upper.as_ref().map(|k| k.clone().into_bytes());
        let mut it = match db.new_iterator(&ro) {
            Ok(it) => it,
            Err(e) => return format!("error: {e}"),
        };
        match start {
            Start::First => it.seek_to_first(),
            Start::Last => it.seek_to_last(),
            Start::Seek(k) => it.seek(k.as_bytes()),
            Start::SeekForPrev(k) => it.seek_for_prev(k.as_bytes()),
        }
        let mut out = Vec::new();
        let mut record = |it: &strata::DbIterator| {
            if it.valid() {
                out.push(format!("{}={}", text(it.key()), text(it.value())));
                true
            } else {
                out.push("|".into());
                false
            }
        };
        let mut valid = record(&it);
        for m in moves.chars() {
            while valid {
                match m {
                    'n' | 'N' => it.next(),
                    _ => it.prev(),
                }
                valid = record(&it);
                if m.is_ascii_lowercase() {
                    break;
                }
            }
        }
        if let Err(e) = it.status() {
            out.push(format!("error: {e}"));
        }
        out.join(" ")
    }

    /// Runs one op: its outcome ("" for a write that succeeded).
    fn step(&mut self, op: &Op) -> String {
        let Some(db) = self.db.as_ref() else {
            return match op {
                Op::Reopen | Op::CrashReopen => self.open(),
                _ => "error: not open".into(),
            };
        };
        match op {
            Op::Write(w) => self.write(db, w),
            Op::Batch(ws) => self.batch(db, ws),
            Op::Get { key, snap } => match self.read_options(snap) {
                Some(ro) => value_text(db.get(&ro, key.as_bytes())),
                None => "error: no such snapshot".into(),
            },
            Op::MultiGet { keys, snap } => match self.read_options(snap) {
                Some(ro) => {
                    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
                    let got = db.multi_get(&ro, &refs);
                    got.into_iter()
                        .map(value_text)
                        .collect::<Vec<_>>()
                        .join(" ")
                }
                None => "error: no such snapshot".into(),
            },
            Op::Scan { snap, .. } => match self.read_options(snap) {
                Some(ro) => Self::scan(db, ro, op),
                None => "error: no such snapshot".into(),
            },
            Op::NewSnapshot { id } => {
                let s = db.snapshot();
                self.snaps.insert(*id, s);
                String::new()
            }
            Op::ReleaseSnapshot { id } => {
                self.snaps.remove(id);
                String::new()
            }
            Op::Flush => outcome(db.flush()),
            Op::CompactRange { begin, end, force } => {
                let o = CompactRangeOptions {
                    bottommost_level_compaction: if *force {
                        BottommostLevelCompaction::Force
                    } else {
                        BottommostLevelCompaction::IfHaveCompactionFilter
                    },
                    ..Default::default()
                };
                outcome(db.compact_range_cf_opt(
                    &db.default_cf(),
                    begin.as_ref().map(|k| k.as_bytes()),
                    end.as_ref().map(|k| k.as_bytes()),
                    &o,
                ))
            }
            Op::WaitForCompactions => outcome(db.wait_for_compactions()),
            Op::Reopen => {
                self.snaps.clear();
                if !self.set.reopen {
                    return String::new();
                }
                let r = outcome(self.db.take().unwrap().close());
                r + &self.open()
            }
            Op::CrashReopen => {
                self.snaps.clear();
                if !self.set.reopen {
                    return String::new();
                }
                let db = self.db.take().unwrap();
                // Everything acknowledged becomes durable, so every option
                // set must come back with all of it.
                let r = outcome(if self.set.disable_wal {
                    db.flush()
                } else {
                    db.flush_wal(true)
                });
                // Power fails with the DB open (background work in flight
                // loses its unsynced files), then the process goes.
                self.fs.crash_drop_unsynced();
                drop(db);
                r + &self.open()
            }
        }
    }
}

/// Every op's outcome under `set`; an engine panic ends the list with
/// `PANIC: ...` at the op that panicked.
fn run_log(ops: &[Op], set: &OptionSet) -> Vec<String> {
    let done = Cell::new(0usize);
    let mut out = Vec::with_capacity(ops.len());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut run = Run {
            set,
            fs: MemFileSystem::new(),
            db: None,
            snaps: HashMap::new(),
        };
        let opened = run.open();
        assert!(opened.is_empty(), "{}: {opened}", set.name);
        for op in ops {
            out.push(run.step(op));
            done.set(done.get() + 1);
        }
        run.snaps.clear();
        if let Some(db) = run.db.take() {
            let files = db.live_files_metadata();
            let compactions: u64 = db.level_stats().iter().skip(1).map(|l| l.count).sum();
            let mut c = COVERAGE.lock().unwrap();
            let e = c.entry(set.name).or_default();
            e[0] += 1;
            e[1] += files.len() as u64;
            e[2] = e[2].max(files.iter().map(|f| f.level as u64).max().unwrap_or(0));
            e[3] += compactions;
            let r = outcome(db.close());
            assert!(r.is_empty(), "{}: final close: {r}", set.name);
        }
    }));
    if let Err(p) = r {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        out.truncate(done.get());
        out.push(format!("PANIC: {msg}"));
    }
    out
}

/// Per option set: runs, live table files at the end of each run, the
/// deepest level reached, compactions in the final sessions.
static COVERAGE: std::sync::Mutex<std::collections::BTreeMap<&str, [u64; 4]>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// The first op whose outcome differs between two option sets.
#[derive(Debug)]
struct Disagreement {
    /// Indexes into the option sets compared.
    a: usize,
    b: usize,
    op: usize,
    got_a: String,
    got_b: String,
}

fn compare(ops: &[Op], sets: &[OptionSet]) -> Option<Disagreement> {
    let reference = run_log(ops, &sets[0]);
    let mut first: Option<Disagreement> = None;
    for (b, set) in sets.iter().enumerate().skip(1) {
        let got = run_log(ops, set);
        let n = reference.len().max(got.len());
        let missing = String::from("<not run>");
        for i in 0..n {
            let ra = reference.get(i).unwrap_or(&missing);
            let rb = got.get(i).unwrap_or(&missing);
            if ra != rb {
                if first.as_ref().is_none_or(|d| i < d.op) {
                    first = Some(Disagreement {
                        a: 0,
                        b,
                        op: i,
                        got_a: ra.clone(),
                        got_b: rb.clone(),
                    });
                }
                break;
            }
        }
    }
    first
}

// ---------------------------------------------------------------------------
// Saving, shrinking and replaying logs.

fn save_log(name: &str, header: &str, ops: &[Op]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("strata-metamorphic-{name}.log"));
    let mut s = String::new();
    for line in header.lines() {
        s += &format!("# {line}\n");
    }
    for op in ops {
        s += &format!("{op:?}\n");
    }
    std::fs::write(&path, s).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// Removes chunks of the log, then single writes from batches (and
/// whatever that made invalid) while the two option sets still disagree,
/// within `budget`.
fn minimize(ops: &[Op], pair: [OptionSet; 2], budget: Duration) -> Vec<Op> {
    let deadline = Instant::now() + budget;
    let fails = |candidate: &[Op]| Instant::now() < deadline && compare(candidate, &pair).is_some();
    let mut ops = ops.to_vec();
    loop {
        let before = ops.clone();
        let mut chunk = ops.len().div_ceil(2).max(1);
        loop {
            let mut changed = false;
            let mut i = 0;
            while i < ops.len() {
                let mut candidate = ops[..i].to_vec();
                candidate.extend_from_slice(&ops[(i + chunk).min(ops.len())..]);
                let candidate = sanitize(&candidate);
                if fails(&candidate) {
                    ops = candidate;
                    changed = true;
                } else {
                    i += chunk;
                }
            }
            if chunk == 1 && !changed {
                break;
            }
            chunk = (chunk / 2).max(1);
        }
        // Validity depends on the ops before only: op j keeps its index.
        for j in 0..ops.len() {
            let mut k = 0;
            while let Some(Op::Batch(ws)) = ops.get(j)
                && k < ws.len()
            {
                let mut ws = ws.clone();
                ws.remove(k);
                let mut candidate = ops.clone();
                candidate[j] = Op::Batch(ws);
                let candidate = sanitize(&candidate);
                if fails(&candidate) {
                    ops = candidate;
                } else {
                    k += 1;
                }
            }
        }
        if ops == before || Instant::now() >= deadline {
            return ops;
        }
    }
}

/// An outcome for a report ("" is a write that succeeded).
fn shown(outcome: &str) -> &str {
    if outcome.is_empty() { "(ok)" } else { outcome }
}

/// Runs `ops` under every set; on a difference saves and shrinks the log
/// and panics with everything needed to replay it.
fn check(name: &str, replay: &str, ops: &[Op], sets: &[OptionSet]) {
    let Some(d) = compare(ops, sets) else {
        return;
    };
    let (a, b) = (&sets[d.a], &sets[d.b]);
    let header = format!(
        "{name}: option sets {} and {} disagree at op {} of {}\nreplay: {replay}",
        a.name,
        b.name,
        d.op,
        ops.len()
    );
    let path = save_log(name, &header, ops);
    let secs: u64 = env_u64("STRATA_METAMORPHIC_MINIMIZE_SECS", 120);
    let mut shrunk = String::new();
    if secs > 0 {
        let min = minimize(ops, [*a, *b], Duration::from_secs(secs));
        let dm = compare(&min, &[*a, *b]);
        let min_path = save_log(&format!("{name}-min"), &header, &min);
        shrunk = format!(
            "\nshrunk to {} ops ({}; replay with STRATA_METAMORPHIC_LOG={}), first difference {}",
            min.len(),
            min_path.display(),
            min_path.display(),
            match &dm {
                Some(dm) => format!(
                    "at op {} {:?}:\n  {}: {}\n  {}: {}",
                    dm.op,
                    min.get(dm.op),
                    a.name,
                    shown(&dm.got_a),
                    b.name,
                    shown(&dm.got_b)
                ),
                None => "gone (flaky?)".into(),
            }
        );
        if min.len() <= 80 {
            for op in &min {
                shrunk += &format!("\n    {op:?}");
            }
        }
    }
    panic!(
        "metamorphic {name}: option sets {} and {} disagree at op {} {:?}\n  {}: {}\n  {}: {}\nlog ({} ops): {}\nreplay: {replay}{shrunk}",
        a.name,
        b.name,
        d.op,
        ops.get(d.op),
        a.name,
        shown(&d.got_a),
        b.name,
        shown(&d.got_b),
        ops.len(),
        path.display(),
    );
}

/// A value as `Debug` prints the log's types.
#[derive(Debug)]
enum V {
    /// A name with its named fields or positional items (unit: neither).
    Named(String, Vec<(String, V)>, Vec<V>),
    Str(String),
    Num(u64),
    List(Vec<V>),
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> u8 {
        self.skip_ws();
        self.s.get(self.i).copied().unwrap_or(0)
    }

    fn eat(&mut self, c: u8) {
        assert_eq!(self.peek() as char, c as char, "at byte {}", self.i);
        self.i += 1;
    }

    fn word(&mut self) -> String {
        self.skip_ws();
        let from = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[from..self.i]).into_owned()
    }

    /// `items` separated by commas up to `close` (a trailing comma allowed).
    fn list<T>(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> T) -> Vec<T> {
        let mut out = Vec::new();
        while self.peek() != close {
            out.push(item(self));
            if self.peek() == b',' {
                self.i += 1;
            }
        }
        self.i += 1;
        out
    }

    fn value(&mut self) -> V {
        match self.peek() {
            b'"' => {
                self.i += 1;
                let mut v = Vec::new();
                while self.s[self.i] != b'"' {
                    if self.s[self.i] == b'\\' {
                        self.i += 1;
                    }
                    v.push(self.s[self.i]);
                    self.i += 1;
                }
                self.i += 1;
                V::Str(String::from_utf8_lossy(&v).into_owned())
            }
            b'[' => {
                self.i += 1;
                V::List(self.list(b']', |p| p.value()))
            }
            c if c.is_ascii_digit() => V::Num(self.word().parse().unwrap()),
            _ => {
                let name = self.word();
                assert!(!name.is_empty(), "unexpected byte at {}", self.i);
                match self.peek() {
                    b'{' => {
                        self.i += 1;
                        let fields = self.list(b'}', |p| {
                            let f = p.word();
                            p.eat(b':');
                            (f, p.value())
                        });
                        V::Named(name, fields, Vec::new())
                    }
                    b'(' => {
                        self.i += 1;
                        let items = self.list(b')', |p| p.value());
                        V::Named(name, Vec::new(), items)
                    }
                    _ => V::Named(name, Vec::new(), Vec::new()),
                }
            }
        }
    }
}

impl V {
    fn name(&self) -> &str {
        match self {
            V::Named(n, ..) => n,
            _ => panic!("expected a name, got {self:?}"),
        }
    }
    fn field(&self, f: &str) -> &V {
        match self {
            V::Named(_, fields, _) => {
                &fields
                    .iter()
                    .find(|(n, _)| n == f)
                    .unwrap_or_else(|| panic!("no field {f} in {self:?}"))
                    .1
            }
            _ => panic!("expected fields, got {self:?}"),
        }
    }
    fn item(&self) -> &V {
        match self {
            V::Named(_, _, items) if items.len() == 1 => &items[0],
            _ => panic!("expected one item, got {self:?}"),
        }
    }
    fn str(&self) -> String {
        match self {
            V::Str(s) => s.clone(),
            _ => panic!("expected a string, got {self:?}"),
        }
    }
    fn num(&self) -> u32 {
        match self {
            V::Num(n) => *n as u32,
            _ => panic!("expected a number, got {self:?}"),
        }
    }
    fn list(&self) -> &[V] {
        match self {
            V::List(l) => l,
            _ => panic!("expected a list, got {self:?}"),
        }
    }
    fn opt(&self) -> Option<&V> {
        match self.name() {
            "None" => None,
            "Some" => Some(self.item()),
            _ => panic!("expected an option, got {self:?}"),
        }
    }
    fn opt_str(&self) -> Option<String> {
        self.opt().map(V::str)
    }
    fn write(&self) -> W {
        let s = |f| self.field(f).str();
        match self.name() {
            "Put" => W::Put {
                key: s("key"),
                value: s("value"),
            },
            "Delete" => W::Delete { key: s("key") },
            "SingleDelete" => W::SingleDelete { key: s("key") },
            "DeleteRange" => W::DeleteRange {
                begin: s("begin"),
                end: s("end"),
            },
            "Merge" => W::Merge {
                key: s("key"),
                value: s("value"),
            },
            n => panic!("unknown write {n}"),
        }
    }
    fn op(&self) -> Op {
        let snap = || self.field("snap").opt().map(V::num);
        match self.name() {
            "Write" => Op::Write(self.item().write()),
            "Batch" => Op::Batch(self.item().list().iter().map(V::write).collect()),
            "Get" => Op::Get {
                key: self.field("key").str(),
                snap: snap(),
            },
            "MultiGet" => Op::MultiGet {
                keys: self.field("keys").list().iter().map(V::str).collect(),
                snap: snap(),
            },
            "Scan" => {
                let st = self.field("start");
                Op::Scan {
                    lower: self.field("lower").opt_str(),
                    upper: self.field("upper").opt_str(),
                    start: match st.name() {
                        "First" => Start::First,
                        "Last" => Start::Last,
                        "Seek" => Start::Seek(st.item().str()),
                        "SeekForPrev" => Start::SeekForPrev(st.item().str()),
                        n => panic!("unknown start {n}"),
                    },
                    moves: self.field("moves").str(),
                    snap: snap(),
                }
            }
            "NewSnapshot" => Op::NewSnapshot {
                id: self.field("id").num(),
            },
            "ReleaseSnapshot" => Op::ReleaseSnapshot {
                id: self.field("id").num(),
            },
            "Flush" => Op::Flush,
            "CompactRange" => Op::CompactRange {
                begin: self.field("begin").opt_str(),
                end: self.field("end").opt_str(),
                force: self.field("force").name() == "true",
            },
            "WaitForCompactions" => Op::WaitForCompactions,
            "Reopen" => Op::Reopen,
            "CrashReopen" => Op::CrashReopen,
            n => panic!("unknown op {n}"),
        }
    }
}

/// A log saved by `save_log` (lines starting with `#` are comments).
fn parse_log(text: &str) -> Vec<Op> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut p = Parser {
                s: l.as_bytes(),
                i: 0,
            };
            let op = p.value().op();
            assert_eq!(p.peek(), 0, "trailing text in {l:?}");
            op
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The tests.

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn selected_sets() -> Vec<OptionSet> {
    match std::env::var("STRATA_METAMORPHIC_SETS") {
        Ok(names) => {
            let names: Vec<&str> = names.split(',').map(str::trim).collect();
            let sets: Vec<OptionSet> = OPTION_SETS
                .iter()
                .filter(|s| names.contains(&s.name))
                .copied()
                .collect();
            assert!(
                sets.len() >= 2,
                "STRATA_METAMORPHIC_SETS must name at least two of {:?}",
                OPTION_SETS.map(|s| s.name)
            );
            sets
        }
        Err(_) => OPTION_SETS.to_vec(),
    }
}

#[test]
fn option_sets_agree() {
    let sets = selected_sets();
    if let Ok(path) = std::env::var("STRATA_METAMORPHIC_LOG") {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let ops = sanitize(&parse_log(&text));
        check(
            "replay",
            &format!("STRATA_METAMORPHIC_LOG={path}"),
            &ops,
            &sets,
        );
        return;
    }
    let n = env_u64("STRATA_METAMORPHIC_OPS", DEFAULT_OPS) as usize;
    let seeds: Vec<u64> = match std::env::var("STRATA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(s) => vec![s],
        None => (1..=env_u64("STRATA_METAMORPHIC_SEEDS", DEFAULT_SEEDS)).collect(),
    };
    for seed in seeds {
        let ops = generate(seed, n);
        check(
            &format!("seed-{seed}"),
            &format!("STRATA_SEED={seed} STRATA_METAMORPHIC_OPS={n}"),
            &ops,
            &sets,
        );
    }
    for (name, [runs, files, deepest, compactions]) in COVERAGE.lock().unwrap().iter() {
        eprintln!(
            "{name}: {runs} runs, {files} live files at the ends, deepest level {deepest}, \
             {compactions} compactions in the last sessions"
        );
    }
}

/// A saved log parses back into the same ops, and generated logs are valid.
#[test]
fn logs_round_trip() {
    for seed in 0..20 {
        let ops = generate(seed, 400);
        assert_eq!(sanitize(&ops), ops, "seed {seed}: generated an invalid op");
        let text: String = ops.iter().map(|op| format!("{op:?}\n")).collect();
        assert_eq!(parse_log(&text), ops, "seed {seed}");
    }
}
