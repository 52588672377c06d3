//! G2 (RELIABILITY.md): simulated power loss on the crashable in-memory file
//! system, then recovery and the prefix check by trace replay.
//!
//! Each seed opens a database on a fresh [`MemFileSystem`] and runs three
//! epochs. An epoch writes random batches (puts, deletes, range deletes,
//! merges; some synced), with explicit flushes and compactions, while the
//! background threads flush and compact on their own; then the power fails
//! ([`MemFileSystem::crash`]: synced bytes and synced directory entries
//! survive, plus a random part of the rest) with the database still open.
//! The dead database is dropped (its file-system view is dead, so its
//! threads cannot touch the recovered state) and a new one opens.
//!
//! The check: the recovered contents must equal the state after some prefix
//! of the write history (no holes, no reordering, batches all or nothing),
//! and that prefix must hold every batch acknowledged before the last synced
//! write or the last completed flush, and everything a previous recovery
//! showed. The prefix is found by replaying the history once while counting
//! the keys on which the replayed state and the recovered one differ.
//!
//! Sizes: `STRATA_POWER_LOSS_SEEDS` seeds per option set (default 180, so
//! 4 x 180 x 3 = 2,160 crashes); `STRATA_SEED=<seed>` replays one seed.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use strata::env::mem::MemFileSystem;
use strata::merge_operator::StringAppendOperator;
use strata::options::{CompactionStyle, Options, ReadOptions, WriteOptions};
use strata::table::CompressionType;
use strata::{DB, WriteBatch};

type State = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u64 = 48;
const EPOCHS: usize = 3;

#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    DeleteRange(Vec<u8>, Vec<u8>),
    Merge(Vec<u8>, Vec<u8>),
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn one_in(&mut self, n: u64) -> bool {
        n > 0 && self.below(n) == 0
    }
}

#[derive(Clone, Copy, Debug)]
struct Config {
    name: &'static str,
    write_buffer_size: usize,
    style: CompactionStyle,
    compression: CompressionType,
    disable_wal: bool,
    sync_one_in: u64,
    flush_one_in: u64,
    compact_one_in: u64,
}

const CONFIGS: [Config; 4] = [
    Config {
        name: "leveled",
        write_buffer_size: 4096,
        style: CompactionStyle::Level,
        compression: CompressionType::Snappy,
        disable_wal: false,
        sync_one_in: 6,
        flush_one_in: 40,
        compact_one_in: 120,
    },
    Config {
        name: "universal",
        write_buffer_size: 4096,
        style: CompactionStyle::Universal,
        compression: CompressionType::None,
        disable_wal: false,
        sync_one_in: 8,
        flush_one_in: 60,
        compact_one_in: 150,
    },
    // Nothing flushes: recovery is WAL replay, across several epochs of
    // WALs (old logs must not be misread as new data).
    Config {
        name: "wal-only",
        write_buffer_size: 1 << 20,
        style: CompactionStyle::Level,
        compression: CompressionType::None,
        disable_wal: false,
        sync_one_in: 4,
        flush_one_in: 0,
        compact_one_in: 0,
    },
    // No WAL: only flushed data survives, still as a prefix.
    Config {
        name: "wal-off",
        write_buffer_size: 4096,
        style: CompactionStyle::Level,
        compression: CompressionType::Lz4,
        disable_wal: true,
        sync_one_in: 0,
        flush_one_in: 15,
        compact_one_in: 100,
    },
];

fn options(fs: &MemFileSystem, c: &Config) -> Options {
    let mut o = Options {
        create_if_missing: true,
        // A new process: it dies with the next crash.
        fs: Some(Arc::new(fs.process())),
        ..Options::default()
    };
    o.cf.write_buffer_size = c.write_buffer_size;
    o.cf.max_write_buffer_number = 3;
    o.cf.compaction_style = c.style;
    o.cf.compression = c.compression;
    o.cf.block_size = 512;
    o.cf.level0_file_num_compaction_trigger = 2;
    o.cf.target_file_size_base = 4096;
    o.cf.max_bytes_for_level_base = 16384;
    o.cf.merge_operator = Some(Arc::new(StringAppendOperator::default()));
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

/// A random batch; every value names its batch and position, so values are
/// unique across the history.
fn random_batch(rng: &mut Rng, index: usize) -> Vec<Op> {
    let n = 1 + rng.below(4) as usize;
    (0..n)
        .map(|j| {
            let k = key(rng.below(KEYS));
            let pad = "x".repeat(rng.below(60) as usize);
            let v = format!("b{index}.{j}{pad}").into_bytes();
            match rng.below(20) {
                0..=10 => Op::Put(k, v),
                11..=13 => Op::Delete(k),
                14 => {
                    let a = rng.below(KEYS);
                    let b = a + 1 + rng.below(8);
                    Op::DeleteRange(key(a), key(b))
                }
                _ => Op::Merge(k, v),
            }
        })
        .collect()
}

fn to_write_batch(ops: &[Op]) -> WriteBatch {
    let mut wb = WriteBatch::new();
    for op in ops {
        match op {
            Op::Put(k, v) => wb.put(k, v),
            Op::Delete(k) => wb.delete(k),
            Op::DeleteRange(a, b) => wb.delete_range(a, b),
            Op::Merge(k, v) => wb.merge(k, v),
        }
    }
    wb
}

/// Replays the history while tracking how many keys differ from
/// `recovered`; returns every prefix length at which none does.
fn matching_prefixes(history: &[Vec<Op>], recovered: &State) -> Vec<usize> {
    let mut model = State::new();
    let mut differ = recovered.len();
    let mut out = Vec::new();
    if differ == 0 {
        out.push(0);
    }
    // Sets `k` to `new` in the model, keeping `differ` exact.
    let set = |model: &mut State, k: &[u8], new: Option<Vec<u8>>, differ: &mut usize| {
        let want = recovered.get(k);
        let was = model.get(k) == want;
        match new {
            Some(v) => model.insert(k.to_vec(), v),
            None => model.remove(k),
        };
        let is = model.get(k) == want;
        match (was, is) {
            (true, false) => *differ += 1,
            (false, true) => *differ -= 1,
            _ => {}
        }
    };
    for (i, batch) in history.iter().enumerate() {
        for op in batch {
            match op {
                Op::Put(k, v) => set(&mut model, k, Some(v.clone()), &mut differ),
                Op::Delete(k) => set(&mut model, k, None, &mut differ),
                Op::DeleteRange(a, b) => {
                    let doomed: Vec<Vec<u8>> = model
                        .range(a.clone()..b.clone())
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in doomed {
                        set(&mut model, &k, None, &mut differ);
                    }
                }
                Op::Merge(k, v) => {
                    let new = match model.get(k) {
                        Some(old) => [old.as_slice(), b",", v].concat(),
                        None => v.clone(),
                    };
                    set(&mut model, k, Some(new), &mut differ);
                }
            }
        }
        if differ == 0 {
            out.push(i + 1);
        }
    }
    out
}

fn scan(db: &DB) -> Result<State, String> {
    let ro = ReadOptions::default();
    let mut it = db.iter(&ro).map_err(|e| format!("iterator: {e}"))?;
    let mut out = State::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().map_err(|e| format!("scan: {e}"))?;
    for i in 0..KEYS {
        let k = key(i);
        let got = db.get(&ro, &k).map_err(|e| format!("get: {e}"))?;
        if got.as_ref() != out.get(&k) {
            return Err(format!(
                "get({}) = {got:?} but the scan has {:?}",
                String::from_utf8_lossy(&k),
                out.get(&k)
            ));
        }
    }
    Ok(out)
}

#[derive(Default, Debug, Clone, Copy)]
struct Figures {
    seeds: u64,
    crashes: u64,
    batches: u64,
    synced: u64,
    /// Batches acknowledged but lost in a crash (allowed: never synced).
    lost_unsynced: u64,
}

fn run_seed(c: &Config, seed: u64, f: &mut Figures) -> Result<(), String> {
    let fs = MemFileSystem::new();
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5eed);
    let mut history: Vec<Vec<Op>> = Vec::new();
    // Every prefix shorter than this must not be the recovered state.
    let mut floor = 0usize;
    let mut db = DB::open(options(&fs, c), "/db").map_err(|e| format!("first open: {e}"))?;
    for epoch in 0..EPOCHS {
        let steps = 1 + rng.below(120);
        for _ in 0..steps {
            let batch = random_batch(&mut rng, history.len());
            let sync = !c.disable_wal && rng.one_in(c.sync_one_in);
            let wo = WriteOptions {
                sync,
                disable_wal: c.disable_wal,
            };
            db.write(&wo, to_write_batch(&batch))
                .map_err(|e| format!("epoch {epoch}: write before the crash: {e}"))?;
            history.push(batch);
            f.batches += 1;
            if sync {
                f.synced += 1;
                floor = history.len();
            }
            if rng.one_in(c.flush_one_in) {
                db.flush()
                    .map_err(|e| format!("epoch {epoch}: flush: {e}"))?;
                floor = history.len();
            }
            if rng.one_in(c.compact_one_in) {
                db.compact_range(None, None)
                    .map_err(|e| format!("epoch {epoch}: compact_range: {e}"))?;
            }
        }
        // Power fails with the database open, background work maybe
        // running. The dead database's close fails or not; either is fine.
        fs.crash(rng.next());
        f.crashes += 1;
        drop(db);
        db = DB::open(options(&fs, c), "/db")
            .map_err(|e| format!("epoch {epoch}: reopen after the crash: {e}"))?;
        let recovered = scan(&db).map_err(|e| format!("epoch {epoch}: {e}"))?;
        let prefixes = matching_prefixes(&history, &recovered);
        let Some(&p) = prefixes.iter().rev().find(|&&p| p >= floor) else {
            return Err(format!(
                "epoch {epoch}: the recovered state ({} keys) is not the state after any \
                 prefix of at least {floor} of the {} batches; it matches prefixes {prefixes:?}",
                recovered.len(),
                history.len()
            ));
        };
        f.lost_unsynced += (history.len() - p) as u64;
        history.truncate(p);
        // What a recovery showed must survive the next crash too.
        floor = p;
    }
    db.verify_checksums()
        .map_err(|e| format!("verify_checksums at the end: {e}"))?;
    db.close().map_err(|e| format!("close at the end: {e}"))?;
    f.seeds += 1;
    Ok(())
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn power_loss_recovers_a_prefix_with_every_synced_write() {
    let seeds: Vec<u64> = match env_u64("STRATA_SEED") {
        Some(s) => vec![s],
        None => (0..env_u64("STRATA_POWER_LOSS_SEEDS").unwrap_or(500)).collect(),
    };
    let started = std::time::Instant::now();
    let results: Vec<(Figures, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = CONFIGS
            .iter()
            .map(|c| {
                let seeds = &seeds;
                s.spawn(move || {
                    let mut f = Figures::default();
                    let mut failures = Vec::new();
                    for &seed in seeds {
                        if let Err(e) = run_seed(c, seed, &mut f) {
                            failures
                                .push(format!("STRATA_SEED={seed} (option set {}): {e}", c.name));
                        }
                    }
                    (f, failures)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| (Figures::default(), vec!["panicked".into()]))
            })
            .collect()
    });
    let mut total = Figures::default();
    let mut failures = Vec::new();
    for (f, fails) in results {
        total.seeds += f.seeds;
        total.crashes += f.crashes;
        total.batches += f.batches;
        total.synced += f.synced;
        total.lost_unsynced += f.lost_unsynced;
        failures.extend(fails);
    }
    common::figures::record(
        "G2",
        "simulated power loss, prefix check by trace replay",
        &format!(
            "{} crashes over {} option sets ({} batches, {} synced; {} unsynced lost as allowed), \
             {} failures, {:.1} s",
            total.crashes,
            CONFIGS.len(),
            total.batches,
            total.synced,
            total.lost_unsynced,
            failures.len(),
            started.elapsed().as_secs_f64()
        ),
    );
    assert!(
        failures.is_empty(),
        "{} failing seeds, first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(8)].join("\n")
    );
}
