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
//! Sizes: `STRATA_POWER_LOSS_SEEDS` seeds per option set (default 500, so
//! 4 x 500 x 3 = 6,000 crashes); `STRATA_SEED=<seed>` replays one seed.

mod common;

use common::history::{Op, Rng, matching_prefixes, random_batch, scan, to_write_batch};

use std::sync::Arc;

use strata::DB;
use strata::env::mem::MemFileSystem;
use strata::merge_operator::StringAppendOperator;
use strata::options::{CompactionStyle, Options, WriteOptions};
use strata::table::CompressionType;

const EPOCHS: usize = 3;

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
