//! I/O error sweep (docs/RELIABILITY.md G4): a canonical workload (open, puts
//! some of them synced, flush, compaction, iteration, close, reopen,
//! reads) runs on the fault-injecting file system with its k-th
//! operation failing, once and persistently, for every k. Each run must
//! return errors rather than panic or hang; once a write failed, later
//! writes fail too (nothing is acknowledged after a failed WAL write or
//! sync); and after the fault is cleared a reopen finds every
//! acknowledged write. The same with a byte quota (disk full) at several
//! sizes.
//!
//! `STRATA_IO_SWEEP_STRIDE=N` sweeps every N-th k (default 1: all).

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use strata::fs::fault::{FailMode, FaultInjectionFileSystem};
use strata::fs::mem::MemFileSystem;
use strata::{DB, Options, ReadOptions, WriteOptions};

fn options(fs: &Arc<FaultInjectionFileSystem>) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs: Some(fs.clone()),
        ..Options::default()
    };
    o.cf.write_buffer_size = 8 << 10;
    o.cf.target_file_size_base = 8 << 10;
    o.cf.max_bytes_for_level_base = 32 << 10;
    o.cf.level0_file_num_compaction_trigger = 2;
    o
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    vec![b'a' + (i % 26) as u8; 60 + i % 90]
}

const WRITES: usize = 400;

/// What a run of the workload saw.
#[derive(Debug, Default)]
struct Outcome {
    /// Keys whose put returned Ok.
    acked: Vec<usize>,
    /// A put failed and a later put was acknowledged anyway.
    acked_after_failed_write: bool,
    /// Any call returned an error.
    saw_error: bool,
    /// The ingestion of the external file (keys `INGESTED`) returned Ok.
    ingested: bool,
}

/// Keys of the external file the workload ingests after its flush.
const INGESTED: std::ops::Range<usize> = WRITES + 10..WRITES + 30;

/// Writes the external file with keys `INGESTED` to `path` on `fs`.
fn write_external_file(fs: &FaultInjectionFileSystem, path: &Path) -> strata::Result<()> {
    let mut w = strata::SstFileWriter::create_in(fs, path, strata::TableOptions::default())?;
    for i in INGESTED {
        w.put(&key(i), &value(i))?;
    }
    w.finish().map(|_| ())
}

/// The canonical workload; stops at the first failed step (except that
/// after a failed put it tries one more, which must fail too).
fn workload(fs: Arc<FaultInjectionFileSystem>) -> Outcome {
    let mut out = Outcome::default();
    let Ok(db) = DB::open(options(&fs), "/db") else {
        out.saw_error = true;
        return out;
    };
    let wo = WriteOptions::default();
    let synced = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    for i in 0..WRITES {
        let opts = if i % 10 == 9 { &synced } else { &wo };
        if db.put(opts, &key(i), &value(i)).is_ok() {
            out.acked.push(i);
        } else {
            out.saw_error = true;
            // The DB must refuse writes from now on.
            if db.put(&wo, &key(WRITES + 1), b"after").is_ok() {
                out.acked_after_failed_write = true;
            }
            return out;
        }
        if i == WRITES / 2 && db.flush().is_err() {
            out.saw_error = true;
            return out;
        }
        if i == WRITES / 2 + 10 {
            // An ingestion: the file written, then copied in, the WAL
            // synced, the MANIFEST written.
            let path = Path::new("/ext.sst");
            let io = strata::options::IngestExternalFileOptions::default();
            if write_external_file(&fs, path)
                .and_then(|()| db.ingest_external_file(&[path], &io))
                .is_err()
            {
                out.saw_error = true;
                return out;
            }
            out.ingested = true;
        }
    }
    if db.compact_range(None, None).is_err() {
        out.saw_error = true;
        return out;
    }
    let ro = ReadOptions::default();
    match db.iter(&ro) {
        Ok(mut it) => {
            while it.valid() {
                it.next();
            }
            if it.status().is_err() {
                out.saw_error = true;
            }
        }
        Err(_) => out.saw_error = true,
    }
    if db.close().is_err() {
        out.saw_error = true;
        return out;
    }
    match DB::open(options(&fs), "/db") {
        Ok(db) => {
            for i in (0..WRITES).step_by(37) {
                if db.get(&ro, &key(i)).is_err() {
                    out.saw_error = true;
                }
            }
        }
        Err(_) => out.saw_error = true,
    }
    out
}

/// Runs the workload on its own thread; fails the test on a panic or if
/// it does not finish in time (a hang).
fn run_guarded(fs: Arc<FaultInjectionFileSystem>, what: &str) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let out = workload(fs);
        let _ = tx.send(());
        out
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: the workload hung"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {}
    }
    match handle.join() {
        Ok(out) => out,
        Err(_) => panic!("{what}: the workload panicked"),
    }
}

/// After the fault is cleared, a reopen finds every acknowledged write.
fn check_recovery(fs: &Arc<FaultInjectionFileSystem>, out: &Outcome, what: &str) {
    let what = &format!("{what} (injected: {:?})", fs.last_injected());
    fs.clear_faults();
    fs.set_space_quota(None);
    let db = DB::open(options(fs), "/db")
        .unwrap_or_else(|e| panic!("{what}: reopen after the fault cleared failed: {e}"));
    let ro = ReadOptions::default();
    for &i in &out.acked {
        let got = db
            .get(&ro, &key(i))
            .unwrap_or_else(|e| panic!("{what}: get after recovery failed: {e}"));
        assert_eq!(
            got.as_deref(),
            Some(&value(i)[..]),
            "{what}: acknowledged write {i} lost"
        );
    }
    // An acknowledged ingestion is all there; a failed one all or nothing.
    let present: Vec<bool> = INGESTED
        .map(|i| {
            db.get(&ro, &key(i))
                .unwrap_or_else(|e| panic!("{what}: get after recovery failed: {e}"))
                .is_some_and(|v| v == value(i))
        })
        .collect();
    let all = present.iter().all(|&p| p);
    assert!(
        all || (!out.ingested && present.iter().all(|&p| !p)),
        "{what}: ingested keys after recovery {present:?} (ingestion acknowledged: {})",
        out.ingested
    );
    db.verify_checksums()
        .unwrap_or_else(|e| panic!("{what}: checksums after recovery: {e}"));
}

fn fresh() -> Arc<FaultInjectionFileSystem> {
    Arc::new(FaultInjectionFileSystem::new(
        Arc::new(MemFileSystem::new()),
    ))
}

#[test]
fn io_error_sweep() {
    let stride: u64 = std::env::var("STRATA_IO_SWEEP_STRIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    // The clean run: how many file-system operations the workload makes.
    let fs = fresh();
    let clean = run_guarded(fs.clone(), "clean run");
    assert!(!clean.saw_error, "the workload fails without faults");
    assert_eq!(clean.acked.len(), WRITES);
    assert!(clean.ingested);
    let total = fs.op_count();
    assert!(total > 100, "{total}");
    let mut sites = 0;
    let mut failed_runs = 0;
    for mode in [FailMode::Once, FailMode::Persistent] {
        let mut k = 0;
        while k < total {
            let fs = fresh();
            fs.fail_after(k, mode);
            let what = format!("fault at operation {k} ({mode:?})");
            let out = run_guarded(fs.clone(), &what);
            assert!(
                !out.acked_after_failed_write,
                "{what}: a write was acknowledged after a failed write (injected: {:?})",
                fs.last_injected()
            );
            if fs.injected_count() > 0 {
                sites += 1;
                failed_runs += usize::from(out.saw_error);
            }
            check_recovery(&fs, &out, &what);
            k += stride;
        }
    }
    common::figures::record(
        "G4",
        "I/O error sweep (k-th operation fails, once and persistently)",
        &format!(
            "{total} operations, {sites} injected faults ({failed_runs} surfaced as errors), 0 failures"
        ),
    );
    assert!(sites > 0);
}

#[test]
fn disk_full_sweep() {
    // Bytes the clean workload appends.
    let fs = fresh();
    let clean = run_guarded(fs.clone(), "clean run");
    assert!(!clean.saw_error);
    let total = fs.bytes_appended();
    let mut full = 0;
    for step in 1..=20u64 {
        let quota = total * step / 21;
        let fs = fresh();
        fs.set_space_quota(Some(quota));
        let what = format!("quota {quota} of {total} bytes");
        let out = run_guarded(fs.clone(), &what);
        assert!(
            !out.acked_after_failed_write,
            "{what}: a write was acknowledged after a failed write"
        );
        full += usize::from(out.saw_error);
        check_recovery(&fs, &out, &what);
    }
    common::figures::record(
        "G9",
        "disk full (byte quota sweep)",
        &format!("20 quotas, {full} hit the limit, 0 failures"),
    );
    assert!(full > 0);
    let _ = Path::new("/db");
}

/// The contents of the database at `path` on `fs` (opened read-only).
fn contents(
    fs: &Arc<FaultInjectionFileSystem>,
    path: &str,
) -> strata::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let db = DB::open_read_only(options(fs), path)?;
    let mut it = db.iter(&ReadOptions::default())?;
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    Ok(out)
}

#[test]
fn backup_and_restore_io_error_sweep() {
    // Two backups (with WALs, then flushed first: the second shares the
    // first one's tables) and a restore of the latest, on a file system
    // whose k-th operation after the database's setup fails, once and
    // persistently. Each run returns errors rather than panic or hang;
    // after the fault is cleared, every backup a fresh engine lists
    // verifies with checksums and restores to exactly the database's
    // contents, a backup reported created is listed, and a restore
    // reported done opens with those contents.
    use strata::utilities::backup::{BackupEngine, BackupEngineOptions, RestoreOptions};
    let setup = || {
        let fs = fresh();
        let db = DB::open(options(&fs), "/db").unwrap();
        let synced = WriteOptions {
            sync: true,
            ..WriteOptions::default()
        };
        for i in 0..120 {
            db.put(&synced, &key(i), &value(i)).unwrap();
        }
        db.flush().unwrap();
        for i in 120..160 {
            db.put(&synced, &key(i), &value(i)).unwrap();
        }
        (fs, db)
    };
    let engine_opts = |fs: &Arc<FaultInjectionFileSystem>| BackupEngineOptions {
        backup_fs: Some(fs.clone() as strata::fs::FileSystemRef),
        ..BackupEngineOptions::new("/backup")
    };
    // What each run did: (backups reported created, restore reported done).
    let run = move |fs: &Arc<FaultInjectionFileSystem>, db: &DB| -> (usize, bool) {
        let Ok(mut engine) = BackupEngine::open_with_db_fs(engine_opts(fs), fs.clone(), false)
        else {
            return (0, false);
        };
        let mut created = 0;
        for flush in [false, true] {
            if engine.create_new_backup(db, flush).is_err() {
                return (created, false);
            }
            created += 1;
        }
        let restored = engine
            .restore_db_from_latest_backup(
                &RestoreOptions::default(),
                Path::new("/restored"),
                Path::new("/restored"),
            )
            .is_ok();
        (created, restored)
    };
    let (fs, db) = setup();
    let want = contents_of(&db);
    let before = fs.op_count();
    assert_eq!(run(&fs, &db), (2, true), "the clean run");
    let total = fs.op_count() - before;
    assert!(total > 20, "{total}");
    drop(db);
    let mut sites = 0;
    for mode in [FailMode::Once, FailMode::Persistent] {
        for k in 0..total {
            let (fs, db) = setup();
            fs.fail_after(k, mode);
            let what = format!("fault at backup operation {k} ({mode:?})");
            let (tx, rx) = mpsc::channel();
            let (fs2, db2) = (fs.clone(), db);
            let worker = std::thread::spawn(move || {
                let r = run(&fs2, &db2);
                let _ = tx.send(());
                r
            });
            if rx.recv_timeout(Duration::from_secs(60)).is_err() {
                panic!("{what}: hung or panicked");
            }
            let (created, restored) = worker.join().unwrap_or_else(|_| panic!("{what}: panicked"));
            sites += usize::from(fs.injected_count() > 0);
            let what = format!("{what} (injected: {:?})", fs.last_injected());
            fs.clear_faults();
            let engine = match BackupEngine::open_with_db_fs(engine_opts(&fs), fs.clone(), true) {
                Ok(e) => e,
                // The fault stopped the engine before its directory was
                // made: there is nothing to list.
                Err(e) if created == 0 && e.is_not_found() => {
                    assert!(!restored, "{what}");
                    continue;
                }
                Err(e) => panic!("{what}: reopening the backups: {e}"),
            };
            let infos = engine.get_backup_info(false);
            assert!(
                infos.len() >= created,
                "{what}: {created} created, {} listed",
                infos.len()
            );
            for info in infos {
                engine
                    .verify_backup(info.backup_id, true)
                    .unwrap_or_else(|e| {
                        panic!("{what}: backup {} listed but bad: {e}", info.backup_id)
                    });
                let to = format!("/check{}", info.backup_id);
                engine
                    .restore_db_from_backup(
                        &RestoreOptions::default(),
                        info.backup_id,
                        Path::new(&to),
                        Path::new(&to),
                    )
                    .unwrap_or_else(|e| panic!("{what}: restoring backup {}: {e}", info.backup_id));
                assert_eq!(
                    contents(&fs, &to).unwrap(),
                    want,
                    "{what}: backup {}",
                    info.backup_id
                );
            }
            if restored {
                assert_eq!(
                    contents(&fs, "/restored").unwrap(),
                    want,
                    "{what}: the restore"
                );
            }
        }
    }
    common::figures::record(
        "G4-backup",
        "I/O error sweep over backups and restores",
        &format!("{total} operations, {sites} injected faults, 0 failures"),
    );
    assert!(sites > 0);
}

fn contents_of(db: &DB) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

/// `bytes_per_sync` asks a flush's output for range syncs as it grows
/// (none with 0), and a failed range sync, a hint with no durability
/// promise, fails nothing: the flush, the writes and a reopen go on.
#[test]
fn range_syncs_are_hints_that_cannot_fail_a_flush() {
    use strata::fs::fault::OpKind;
    for bytes_per_sync in [0u64, 16 << 10] {
        let fs = Arc::new(FaultInjectionFileSystem::new(
            Arc::new(MemFileSystem::new()),
        ));
        fs.fail_op(&[OpKind::RangeSync], None, 0, FailMode::Persistent);
        let mut o = options(&fs);
        o.cf.write_buffer_size = 1 << 20;
        o.cf.compression = strata::CompressionType::None;
        o.bytes_per_sync = bytes_per_sync;
        let db = DB::open(o.clone(), "/db").unwrap();
        let wo = WriteOptions::default();
        for i in 0..2000 {
            db.put(&wo, &key(i), &value(i)).unwrap();
        }
        db.flush().unwrap();
        let asked = fs.injected_count();
        if bytes_per_sync == 0 {
            assert_eq!(asked, 0, "no range sync without bytes_per_sync");
        } else {
            // About 230 KB of table: a range sync every 16 KiB.
            assert!(asked >= 5, "{asked} range syncs");
        }
        db.close().unwrap();
        let db = DB::open(o, "/db").unwrap();
        for i in 0..2000 {
            assert_eq!(
                db.get(&ReadOptions::default(), &key(i)).unwrap(),
                Some(value(i)),
                "key {i}"
            );
        }
    }
}
