//! G2 (docs/RELIABILITY.md): simulated power loss on the crashable in-memory file
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
//! 8 x 500 x 3 = 12,000 crashes); `STRATA_SEED=<seed>` replays one seed.
//! The fifth option set also fails file-system operations at random before
//! each crash: a failed write may survive or not, and no write may be
//! acknowledged after it.

mod common;

use common::history::{Op, Rng, matching_prefixes, random_batch, scan, to_write_batch};

use std::sync::Arc;

use strata::CompressionType;
use strata::DB;
use strata::fs::FileSystemRef;
use strata::fs::fault::{FaultInjectionFileSystem, OpKind};
use strata::fs::mem::MemFileSystem;
use strata::merge_operator::StringAppendOperator;
use strata::options::{CompactionStyle, Options, WriteOptions};

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
    /// Before the crash, each file-system write, sync, rename, directory
    /// sync or read fails with probability 1/this (0: never).
    fault_one_in: u64,
    /// Write path: 0 ordered, 1 pipelined, 2 unordered, 3 ordered with the
    /// leader inserting for its group and `manual_wal_flush`, and each of
    /// the memtable kinds in turn, with block-based or PlainTable files
    /// (see [`options`]).
    write_mode: u8,
}

const CONFIGS: [Config; 8] = [
    Config {
        name: "leveled",
        write_buffer_size: 4096,
        style: CompactionStyle::Level,
        compression: CompressionType::Snappy,
        disable_wal: false,
        sync_one_in: 6,
        flush_one_in: 40,
        compact_one_in: 120,
        fault_one_in: 0,
        write_mode: 0,
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
        fault_one_in: 0,
        write_mode: 0,
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
        fault_one_in: 0,
        write_mode: 0,
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
        fault_one_in: 0,
        write_mode: 0,
    },
    // I/O errors at random before the power fails (docs/RELIABILITY.md G4's long
    // run): a failed write may or may not survive, nothing after it may be
    // acknowledged, and every write acknowledged before it obeys the
    // contract as usual.
    Config {
        name: "random-io-errors",
        write_buffer_size: 4096,
        style: CompactionStyle::Level,
        compression: CompressionType::Snappy,
        disable_wal: false,
        sync_one_in: 5,
        flush_one_in: 40,
        compact_one_in: 120,
        fault_one_in: 150,
        write_mode: 0,
    },
    // The write path's other modes, each with synced writes and frequent
    // WAL switches (tiny memtables).
    Config {
        name: "pipelined",
        write_buffer_size: 4096,
        style: CompactionStyle::Level,
        compression: CompressionType::Snappy,
        disable_wal: false,
        sync_one_in: 6,
        flush_one_in: 40,
        compact_one_in: 120,
        fault_one_in: 0,
        write_mode: 1,
    },
    Config {
        name: "unordered",
        write_buffer_size: 2048,
        style: CompactionStyle::Universal,
        compression: CompressionType::None,
        disable_wal: false,
        sync_one_in: 8,
        flush_one_in: 0,
        compact_one_in: 200,
        fault_one_in: 0,
        write_mode: 2,
    },
    Config {
        name: "serial-inserts-manual-wal-flush",
        write_buffer_size: 4096,
        style: CompactionStyle::Level,
        compression: CompressionType::Lz4,
        disable_wal: false,
        sync_one_in: 10,
        flush_one_in: 60,
        compact_one_in: 0,
        fault_one_in: 0,
        write_mode: 3,
    },
];

const FAULT_KINDS: [OpKind; 8] = [
    OpKind::NewWritable,
    OpKind::Append,
    OpKind::Flush,
    OpKind::Sync,
    OpKind::Close,
    OpKind::Rename,
    OpKind::SyncDir,
    OpKind::Read,
];

/// Options for a new process on `fs` (it dies with the next crash),
/// through `faults` when given.
///
/// With the leader inserting for its group (write mode 3) the memtable
/// kind turns with the seed: skiplist, vector, prefix hash, hash linked
/// list (2-byte prefixes: ten prefixes over the keys).
fn options(
    fs: &MemFileSystem,
    c: &Config,
    faults: Option<&FaultInjectionFileSystem>,
    seed: u64,
) -> Options {
    let process: FileSystemRef = match faults {
        Some(f) => Arc::new(f.clone()),
        None => Arc::new(fs.process()),
    };
    let mut o = Options {
        create_if_missing: true,
        fs: Some(process),
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
    o.enable_pipelined_write = c.write_mode == 1;
    o.unordered_write = c.write_mode == 2;
    o.allow_concurrent_memtable_write = c.write_mode != 3;
    o.manual_wal_flush = c.write_mode == 3;
    if c.write_mode == 3 {
        use strata::MemTableFactory;
        o.cf.memtable_factory = match seed % 4 {
            0 => MemTableFactory::SkipList,
            1 => MemTableFactory::Vector,
            2 => MemTableFactory::PrefixHash { bucket_count: 3 },
            _ => MemTableFactory::HashLinkList {
                bucket_count: 3,
                threshold_use_skiplist: 8,
            },
        };
        if seed % 4 >= 2 {
            o.cf.prefix_extractor = Some(Arc::new(strata::FixedPrefix(2)));
        }
        if plain_tables(c, seed) {
            // PlainTable files (the keys are 4 bytes): flushes and
            // compactions write them, recovery reads them.
            o.cf.prefix_extractor = Some(Arc::new(strata::FixedPrefix(2)));
            o.cf.table_factory = strata::TableFactory::Plain(strata::PlainTableOptions {
                user_key_len: 4,
                encoding_type: if seed % 2 == 0 {
                    strata::EncodingType::Plain
                } else {
                    strata::EncodingType::Prefix
                },
                store_index_in_file: seed % 3 == 0,
                ..Default::default()
            });
        }
    }
    o
}

/// Whether `seed` of option set `c` writes PlainTable files (half the
/// seeds of the serial-inserts set). PlainTable column families refuse
/// range deletions, so their batches have none.
fn plain_tables(c: &Config, seed: u64) -> bool {
    c.write_mode == 3 && (seed / 4) % 2 == 1
}

#[derive(Default, Debug, Clone, Copy)]
struct Figures {
    seeds: u64,
    crashes: u64,
    batches: u64,
    synced: u64,
    /// Batches acknowledged but lost in a crash (allowed: never synced).
    lost_unsynced: u64,
    /// Writes failed by an injected I/O error.
    failed_writes: u64,
}

fn run_seed(c: &Config, seed: u64, f: &mut Figures) -> Result<(), String> {
    let fs = MemFileSystem::new();
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5eed);
    let mut history: Vec<Vec<Op>> = Vec::new();
    // Every prefix shorter than this must not be the recovered state.
    let mut floor = 0usize;
    // The process of each epoch: faults (if any) armed once it is open.
    let new_process = |rng: &mut Rng| -> Result<(DB, Option<FaultInjectionFileSystem>), String> {
        let faults =
            (c.fault_one_in > 0).then(|| FaultInjectionFileSystem::new(Arc::new(fs.process())));
        let db = DB::open(options(&fs, c, faults.as_ref(), seed), "/db")
            .map_err(|e| format!("open: {e}"))?;
        if let Some(f) = &faults {
            f.fail_randomly(&FAULT_KINDS, c.fault_one_in, rng.next());
        }
        Ok((db, faults))
    };
    let (mut db, mut faults) = new_process(&mut rng)?;
    for epoch in 0..EPOCHS {
        let steps = 1 + rng.below(120);
        for _ in 0..steps {
            let mut batch = random_batch(&mut rng, history.len());
            if plain_tables(c, seed) {
                for op in &mut batch {
                    if let Op::DeleteRange(a, _) = op {
                        *op = Op::Delete(std::mem::take(a));
                    }
                }
            }
            let sync = !c.disable_wal && rng.one_in(c.sync_one_in);
            let wo = WriteOptions {
                sync,
                disable_wal: c.disable_wal,
                ..WriteOptions::default()
            };
            let written = db.write(&wo, to_write_batch(&batch));
            // A failed write may or may not survive: the history's optional
            // last batch.
            history.push(batch);
            f.batches += 1;
            if let Err(e) = written {
                if faults.is_none() {
                    return Err(format!("epoch {epoch}: write before the crash: {e}"));
                }
                f.failed_writes += 1;
                // Contract 5: the database takes no write after a failed one.
                let probe = db.put(&wo, b"probe", b"after a failed write");
                if probe.is_ok() {
                    return Err(format!(
                        "epoch {epoch}: a write was acknowledged after a failed write ({e})"
                    ));
                }
                break;
            }
            if sync {
                f.synced += 1;
                floor = history.len();
            }
            if rng.one_in(c.flush_one_in) {
                match db.flush() {
                    Ok(()) => floor = history.len(),
                    Err(e) if faults.is_none() => {
                        return Err(format!("epoch {epoch}: flush: {e}"));
                    }
                    Err(_) => {}
                }
            }
            if rng.one_in(c.compact_one_in) {
                if let Err(e) = db.compact_range(None, None) {
                    if faults.is_none() {
                        return Err(format!("epoch {epoch}: compact_range: {e}"));
                    }
                }
            }
        }
        // Power fails with the database open, background work maybe
        // running. The dead database's close fails or not; either is fine.
        fs.crash(rng.next());
        f.crashes += 1;
        drop(db);
        // Recovery itself runs without faults: what it finds is checked.
        let clean = DB::open(options(&fs, c, None, seed), "/db")
            .map_err(|e| format!("epoch {epoch}: reopen after the crash: {e}"))?;
        let recovered = scan(&clean).map_err(|e| format!("epoch {epoch}: {e}"))?;
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
        db = clean;
        if c.fault_one_in > 0 && epoch + 1 < EPOCHS {
            // The next epoch is a new process with faults again.
            db.close()
                .map_err(|e| format!("epoch {epoch}: close after recovery: {e}"))?;
            (db, faults) = new_process(&mut rng)?;
        } else {
            faults = None;
        }
    }
    let _ = faults;
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
        total.failed_writes += f.failed_writes;
        failures.extend(fails);
    }
    common::figures::record(
        "G2",
        "simulated power loss, prefix check by trace replay",
        &format!(
            "{} crashes over {} option sets ({} batches, {} synced; {} unsynced lost as allowed; \
             {} writes failed by random I/O errors, none acknowledged after), {} failures, {:.1} s",
            total.crashes,
            CONFIGS.len(),
            total.batches,
            total.synced,
            total.lost_unsynced,
            total.failed_writes,
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
