//! G3 (docs/RELIABILITY.md): a power loss at every named crash point of the file
//! lifecycle (`strata::tools::util::crash_point::POINTS`), then recovery and the
//! prefix check of the power-loss suite.
//!
//! For each point and seed, a database on the crashable in-memory file
//! system runs up to three sessions (open, random batches with flushes and
//! compactions, close) with the point armed to crash the file system at its
//! n-th hit (n in 1..=3); between sessions it may repair the database.
//! Once the point fires (after a crash inside a repair, maybe repairing
//! again, as an operator would), the dead database is dropped
//! and a new process opens: the open must succeed and the contents must be
//! a prefix of the acknowledged batches holding every synced or flushed
//! one. Each point must fire at least `STRATA_CRASH_POINT_FIRES` times
//! (default 20) within 200 seeds per fire. Needs `--features crash-points`.
#![cfg(feature = "crash-points")]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::history::{KEYS, Op, Rng, key, matching_prefixes, random_batch, scan, to_write_batch};
use strata::DB;
use strata::fs::mem::MemFileSystem;
use strata::merge_operator::StringAppendOperator;
use strata::options::{IngestExternalFileOptions, Options, WriteOptions};
use strata::tools::table::{SstFileWriter, TableOptions};
use strata::tools::util::crash_point;
use strata::utilities::backup::{BackupEngine, BackupEngineOptions, RestoreOptions};
use strata::utilities::checkpoint::Checkpoint;

fn options(fs: &MemFileSystem) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(Arc::new(fs.process())),
        ..Options::default()
    };
    o.cf.write_buffer_size = 4096;
    o.cf.max_write_buffer_number = 3;
    o.cf.block_size = 512;
    o.cf.level0_file_num_compaction_trigger = 2;
    o.cf.target_file_size_base = 4096;
    o.cf.max_bytes_for_level_base = 16384;
    o.cf.merge_operator = Some(Arc::new(StringAppendOperator::default()));
    o
}

/// The operations of an external file: distinct keys in order (puts,
/// deletes, merges), maybe a range deletion first.
fn external_file_ops(rng: &mut Rng, index: usize) -> Vec<Op> {
    let mut ops = Vec::new();
    if rng.one_in(4) {
        let a = rng.below(KEYS);
        ops.push(Op::DeleteRange(key(a), key(a + 1 + rng.below(8))));
    }
    let mut ks: Vec<u64> = (0..1 + rng.below(5)).map(|_| rng.below(KEYS)).collect();
    ks.sort_unstable();
    ks.dedup();
    for (j, k) in ks.into_iter().enumerate() {
        let v = format!("e{index}.{j}").into_bytes();
        ops.push(match rng.below(4) {
            0 => Op::Delete(key(k)),
            1 => Op::Merge(key(k), v),
            _ => Op::Put(key(k), v),
        });
    }
    ops
}

/// Writes `ops` (as [`external_file_ops`] makes them) to an external file.
fn write_external_file(fs: &MemFileSystem, path: &str, ops: &[Op]) -> strata::Result<()> {
    use strata::fs::FileSystem;
    fs.create_dir_all(std::path::Path::new("/ext"))?;
    let mut w = SstFileWriter::create_in(fs, std::path::Path::new(path), TableOptions::default())?;
    for op in ops {
        match op {
            Op::Put(k, v) => w.put(k, v)?,
            Op::Delete(k) => w.delete(k)?,
            Op::Merge(k, v) => w.merge(k, v)?,
            Op::DeleteRange(a, b) => w.delete_range(a, b)?,
        }
    }
    w.finish().map(|_| ())
}

/// One seed with `point` armed; returns whether the point fired.
fn run(point: &'static str, seed: u64) -> Result<bool, String> {
    let fs = MemFileSystem::new();
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0xC0FFEE);
    let crashed = Arc::new(AtomicBool::new(false));
    {
        let (fs, crashed, crash_seed) = (fs.clone(), Arc::clone(&crashed), rng.next());
        crash_point::arm(point, 1 + rng.below(3), move || {
            // First the flag: an error seen after the crash must find it.
            crashed.store(true, Ordering::SeqCst);
            fs.crash(crash_seed);
        });
    }
    let dead = || crashed.load(Ordering::SeqCst);
    // An error is expected once the power is gone, and a failure before.
    let check = |r: strata::Result<()>, what: &str| -> Result<bool, String> {
        match r {
            Ok(()) => Ok(true),
            Err(_) if dead() => Ok(false),
            Err(e) => Err(format!("{what} failed before the crash: {e}")),
        }
    };
    let mut history: Vec<Vec<Op>> = Vec::new();
    let mut floor = 0usize;
    // Checkpoints started: directory and batches acknowledged before.
    let mut checkpoints: Vec<(String, usize)> = Vec::new();
    // Backups started: id, batches acknowledged before, completed.
    let mut backups: Vec<(u32, usize, bool)> = Vec::new();
    // Restores started: directory, the backup's entry, completed.
    let mut restores: Vec<(String, usize, bool)> = Vec::new();
    // Whether the crash came inside a repair.
    let mut in_repair = false;
    'sessions: for _ in 0..3 {
        let db = match DB::open(options(&fs), "/db") {
            Ok(db) => db,
            Err(_) if dead() => break,
            Err(e) => return Err(format!("open before the crash: {e}")),
        };
        for _ in 0..1 + rng.below(80) {
            let batch = random_batch(&mut rng, history.len());
            let sync = rng.one_in(5);
            let wo = WriteOptions {
                sync,
                ..WriteOptions::default()
            };
            let acked = check(db.write(&wo, to_write_batch(&batch)), "write")?;
            // A write cut by the crash may or may not survive: it is the
            // history's optional last batch (above the floor).
            history.push(batch);
            if !acked {
                break 'sessions;
            }
            // A synced write acknowledged is durable, even if the power
            // failed right after; then the run stops (what follows a crash
            // is a new history).
            if sync {
                floor = history.len();
            }
            if dead() {
                break 'sessions;
            }
            if rng.one_in(25) {
                if !check(db.flush(), "flush")? {
                    break 'sessions;
                }
                floor = history.len();
            }
            if rng.one_in(60) && !check(db.compact_range(None, None), "compact_range")? {
                break 'sessions;
            }
            if rng.one_in(30) {
                // A checkpoint (it flushes first): it must hold at least
                // every batch acknowledged before it started.
                let dir = format!("/cp{}", checkpoints.len());
                checkpoints.push((dir.clone(), history.len()));
                let made = Checkpoint::new(&db).and_then(|c| {
                    c.create_checkpoint(std::path::Path::new(&dir), 0)
                        .map(|_| ())
                });
                if !check(made, "checkpoint")? {
                    break 'sessions;
                }
                floor = history.len();
            }
            if rng.one_in(30) {
                // A backup (WALs included, no flush), then maybe a restore
                // of it into a fresh directory.
                let mut engine = match backup_engine(&fs) {
                    Ok(e) => e,
                    Err(_) if dead() => break 'sessions,
                    Err(e) => return Err(format!("open backup engine: {e}")),
                };
                let id = backups.last().map_or(1, |b| b.0 + 1);
                backups.push((id, history.len(), false));
                match engine.create_new_backup(&db, false) {
                    Ok(got) if got == id => backups.last_mut().unwrap().2 = true,
                    Ok(got) => return Err(format!("backup id {got}, expected {id}")),
                    Err(_) if dead() => break 'sessions,
                    Err(e) => return Err(format!("backup failed before the crash: {e}")),
                }
                if rng.one_in(2) {
                    let dir = format!("/restore{}", restores.len());
                    restores.push((dir.clone(), backups.len() - 1, false));
                    let p = std::path::Path::new(&dir);
                    match engine.restore_db_from_backup(&RestoreOptions::default(), id, p, p) {
                        Ok(()) => restores.last_mut().unwrap().2 = true,
                        Err(_) if dead() => break 'sessions,
                        Err(e) => return Err(format!("restore failed before the crash: {e}")),
                    }
                }
            }
            if rng.one_in(25) {
                // An external file ingested: in the history it is a batch
                // (its range deletion first, then its keys), newer than
                // everything before; durable on return with every batch
                // acknowledged before it.
                let ops = external_file_ops(&mut rng, history.len());
                let path = format!("/ext/{}.sst", history.len());
                match write_external_file(&fs, &path, &ops) {
                    Ok(()) => {}
                    // A background job may crash the file system meanwhile.
                    Err(_) if dead() => break 'sessions,
                    Err(e) => return Err(format!("write external file: {e}")),
                }
                history.push(ops);
                let io = IngestExternalFileOptions {
                    move_files: rng.one_in(2),
                    write_global_seqno: rng.one_in(2),
                    ..Default::default()
                };
                if !check(db.ingest_external_file(&[&path], &io), "ingest")? {
                    break 'sessions;
                }
                floor = history.len();
            }
            if dead() {
                break 'sessions;
            }
        }
        // A crash during a close that still returned Ok (a background job
        // hit the point) ends the run too.
        if !check(db.close(), "close")? || dead() {
            break;
        }
        if rng.one_in(3) {
            // A repair between sessions (its MANIFEST rebuilt from the
            // tables and WALs): it keeps every batch, and makes them all
            // durable. A crash inside it is finished by repairing again.
            in_repair = true;
            if !check(strata::db::repair_db(&options(&fs), "/db"), "repair")? || dead() {
                break;
            }
            in_repair = false;
            floor = history.len();
        }
    }
    let fired = crash_point::disarm() && dead();
    if !fired {
        return Ok(false);
    }
    // STRATA_CRASH_DIAG=1: failures carry the files, MANIFEST and LOG the
    // crash left.
    let diag = if std::env::var("STRATA_CRASH_DIAG").is_ok() {
        use strata::fs::FileSystem;
        let mut d = format!("\nfiles after the crash: {:?}\n", fs.file_names());
        d.push_str(
            &strata::tools::manifest_dump_with(&fs, std::path::Path::new("/db"), None, true, false)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_else(|e| format!("manifest_dump: {e}")),
        );
        for p in fs.file_names() {
            if p.to_string_lossy().contains("LOG") {
                d.push_str(&String::from_utf8_lossy(
                    &fs.read_file(&p).unwrap_or_default(),
                ));
            }
        }
        d
    } else {
        String::new()
    };
    // A crash inside a repair leaves either the database as it was or the
    // repaired one, so it opens as is; or the operator repairs again.
    if in_repair && rng.one_in(2) {
        strata::db::repair_db(&options(&fs), "/db")
            .map_err(|e| format!("repair after a crash inside repair: {e}{diag}"))?;
    }
    let db =
        DB::open(options(&fs), "/db").map_err(|e| format!("reopen after the crash: {e}{diag}"))?;
    let recovered = scan(&db).map_err(|e| format!("{e}{diag}"))?;
    let prefixes = matching_prefixes(&history, &recovered);
    if !prefixes.iter().any(|&p| p >= floor) {
        return Err(format!(
            "the recovered state is not the state after any prefix of at least {floor} of \
             the {} batches; it matches prefixes {prefixes:?}{diag}",
            history.len()
        ));
    }
    db.verify_checksums()
        .map_err(|e| format!("verify_checksums after recovery: {e}"))?;
    db.close()
        .map_err(|e| format!("close after recovery: {e}"))?;
    // A checkpoint directory the crash left is complete: it opens and holds
    // a prefix with every batch acknowledged before the checkpoint began
    // (one the crash interrupted may not exist at all).
    for (dir, before) in &checkpoints {
        use strata::fs::FileSystem;
        if !fs.file_exists(std::path::Path::new(dir)) {
            continue;
        }
        let cp = DB::open(options(&fs), dir).map_err(|e| format!("open checkpoint {dir}: {e}"))?;
        let got = scan(&cp).map_err(|e| format!("checkpoint {dir}: {e}"))?;
        if !matching_prefixes(&history, &got)
            .iter()
            .any(|p| p >= before)
        {
            return Err(format!(
                "checkpoint {dir} is not the state after a prefix of at least {before} batches"
            ));
        }
        cp.close()
            .map_err(|e| format!("close checkpoint {dir}: {e}"))?;
    }
    // Every completed backup survives, and every backup listed restores
    // to a prefix with every batch acknowledged before it began (one the
    // crash interrupted may not exist); its files pass verification.
    let mut engine = backup_engine(&fs).map_err(|e| format!("reopen backup engine: {e}"))?;
    let listed: Vec<u32> = engine
        .get_backup_info(false)
        .iter()
        .map(|b| b.backup_id)
        .collect();
    for (id, before, completed) in &backups {
        if !listed.contains(id) {
            if *completed {
                return Err(format!("completed backup {id} lost{diag}"));
            }
            continue;
        }
        engine
            .verify_backup(*id, true)
            .map_err(|e| format!("verify backup {id}: {e}"))?;
        let dir = format!("/verify{id}");
        let p = std::path::Path::new(&dir);
        engine
            .restore_db_from_backup(&RestoreOptions::default(), *id, p, p)
            .map_err(|e| format!("restore backup {id}: {e}"))?;
        check_prefix(&fs, &dir, &history, *before)?;
    }
    // A restore the crash interrupted leaves no database (no CURRENT);
    // one that has CURRENT holds the backup's state.
    for (dir, b, completed) in &restores {
        use strata::fs::FileSystem;
        let current = std::path::Path::new(dir).join("CURRENT");
        if !fs.file_exists(&current) {
            if *completed {
                return Err(format!("completed restore {dir} lost its CURRENT"));
            }
            continue;
        }
        check_prefix(&fs, dir, &history, backups[*b].1)
            .map_err(|e| format!("restore {dir}: {e}"))?;
    }
    engine
        .garbage_collect()
        .map_err(|e| format!("backup gc: {e}"))?;
    Ok(true)
}

/// A backup engine on `fs` (backups in `/bk`, restores on `fs` too).
fn backup_engine(fs: &MemFileSystem) -> strata::Result<BackupEngine> {
    let mut o = BackupEngineOptions::new("/bk");
    let handle: strata::fs::FileSystemRef = Arc::new(fs.process());
    o.backup_fs = Some(Arc::clone(&handle));
    BackupEngine::open_with_db_fs(o, handle, false)
}

/// The database in `dir` opens and holds the state after a prefix of at
/// least `before` batches of `history`.
fn check_prefix(
    fs: &MemFileSystem,
    dir: &str,
    history: &[Vec<Op>],
    before: usize,
) -> Result<(), String> {
    let db = DB::open(options(fs), dir).map_err(|e| format!("open {dir}: {e}"))?;
    let got = scan(&db).map_err(|e| format!("{dir}: {e}"))?;
    if !matching_prefixes(history, &got)
        .iter()
        .any(|&p| p >= before)
    {
        return Err(format!(
            "{dir} is not the state after a prefix of at least {before} batches"
        ));
    }
    db.close().map_err(|e| format!("close {dir}: {e}"))
}

#[test]
fn every_crash_point_recovers_a_prefix() {
    let want: u64 = std::env::var("STRATA_CRASH_POINT_FIRES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let only: Option<u64> = std::env::var("STRATA_SEED")
        .ok()
        .and_then(|v| v.parse().ok());
    let started = std::time::Instant::now();
    let mut fires: BTreeMap<&str, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    let only_point = std::env::var("STRATA_CRASH_POINT").ok();
    for &point in crash_point::POINTS {
        if only_point.as_deref().is_some_and(|p| p != point) {
            continue;
        }
        let seeds: Vec<u64> = match only {
            Some(s) => vec![s],
            None => (0..200 * want).collect(),
        };
        let mut n = 0;
        for seed in seeds {
            if only.is_none() && n >= want {
                break;
            }
            match run(point, seed) {
                Ok(fired) => n += u64::from(fired),
                Err(e) => failures.push(format!("{point} STRATA_SEED={seed}: {e}")),
            }
        }
        fires.insert(point, n);
    }
    crash_point::disarm();
    let never: Vec<&&str> = fires
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(p, _)| p)
        .collect();
    let total: u64 = fires.values().sum();
    common::figures::record(
        "G3",
        "power loss at every named crash point",
        &format!(
            "{} of {} points fired ({total} crashes, at least {} each), {} failures, {:.1} s",
            fires.len() - never.len(),
            crash_point::POINTS.len(),
            fires.values().min().copied().unwrap_or(0),
            failures.len(),
            started.elapsed().as_secs_f64()
        ),
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
    if only.is_none() && only_point.is_none() {
        assert!(never.is_empty(), "crash points never reached: {never:?}");
        let short: Vec<_> = fires.iter().filter(|(_, n)| **n < want).collect();
        assert!(
            short.is_empty(),
            "crash points fired fewer than {want} times: {short:?}"
        );
    }
}
