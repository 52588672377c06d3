//! The write path's modes (ordered, leader-inserts, pipelined, unordered,
//! manual WAL flush) under concurrent writers and readers, and the WAL
//! predecessor record that keeps recovery a prefix now that a memtable
//! switch no longer fsyncs the old WAL.
//!
//! What every mode guarantees, checked here while 4 writers and 2 readers
//! run: a reader never sees part of a batch (each batch rewrites all 8 keys
//! of its writer with one value); a snapshot never changes; every
//! acknowledged write is visible to a read that starts after the
//! acknowledgement (read-your-own-writes and across threads).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use strata::fs::default_fs;
use strata::options::WalRecoveryMode;
use strata::tools::wal::LogWriter;
use strata::{DB, Error, Options, ReadOptions, WriteBatch, WriteOptions};

const WRITERS: usize = 4;
const KEYS_PER_BATCH: usize = 8;
const BATCHES: u64 = 400;

#[derive(Clone, Copy, Debug)]
struct Mode {
    name: &'static str,
    concurrent: bool,
    pipelined: bool,
    unordered: bool,
    manual_flush: bool,
}

const MODES: [Mode; 5] = [
    Mode {
        name: "ordered",
        concurrent: true,
        pipelined: false,
        unordered: false,
        manual_flush: false,
    },
    Mode {
        name: "ordered-leader-inserts",
        concurrent: false,
        pipelined: false,
        unordered: false,
        manual_flush: false,
    },
    Mode {
        name: "pipelined",
        concurrent: true,
        pipelined: true,
        unordered: false,
        manual_flush: false,
    },
    Mode {
        name: "pipelined-leader-inserts-manual-flush",
        concurrent: false,
        pipelined: true,
        unordered: false,
        manual_flush: true,
    },
    Mode {
        name: "unordered",
        concurrent: true,
        pipelined: false,
        unordered: true,
        manual_flush: false,
    },
];

fn options(m: &Mode) -> Options {
    let mut o = Options {
        create_if_missing: true,
        allow_concurrent_memtable_write: m.concurrent,
        enable_pipelined_write: m.pipelined,
        unordered_write: m.unordered,
        manual_wal_flush: m.manual_flush,
        ..Options::default()
    };
    // Small memtables: many switches (new WALs) while writers run.
    o.cf.write_buffer_size = 32 << 10;
    o.cf.max_write_buffer_number = 4;
    o
}

fn key(writer: usize, i: usize) -> Vec<u8> {
    format!("w{writer}/k{i}").into_bytes()
}

fn value(v: u64) -> Vec<u8> {
    format!("{v:08}").into_bytes()
}

fn parse(v: &[u8]) -> u64 {
    std::str::from_utf8(v).unwrap().parse().unwrap()
}

/// The writer's 8 values at `ro`; all must be equal (or all absent).
fn batch_value(db: &DB, ro: &ReadOptions, writer: usize, ctx: &str) -> Option<u64> {
    let vals: Vec<Option<u64>> = (0..KEYS_PER_BATCH)
        .map(|i| db.get(ro, &key(writer, i)).unwrap().map(|v| parse(&v)))
        .collect();
    assert!(
        vals.iter().all(|v| *v == vals[0]),
        "{ctx}: writer {writer}: part of a batch is visible: {vals:?}"
    );
    vals[0]
}

fn run_mode(m: &Mode) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(DB::open(options(m), dir.path()).unwrap());
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(WRITERS + 2));
    let mut writers = Vec::new();
    for t in 0..WRITERS {
        let (db, acked, start) = (Arc::clone(&db), Arc::clone(&acked), Arc::clone(&start));
        let name = m.name;
        writers.push(std::thread::spawn(move || {
            start.wait();
            for v in 1..=BATCHES {
                let mut b = WriteBatch::new();
                for i in 0..KEYS_PER_BATCH {
                    b.put(&key(t, i), &value(v));
                }
                let wo = WriteOptions {
                    sync: v % 50 == 0,
                    disable_wal: false,
                    ..WriteOptions::default()
                };
                db.write(&wo, b).unwrap();
                acked[t].store(v, Ordering::Release);
                if v % 7 == 0 {
                    // Log data alone: into the WAL, no sequence number.
                    let mut l = WriteBatch::new();
                    l.put_log_data(format!("log {t} {v}").as_bytes());
                    db.write(&wo, l).unwrap();
                }
                // Read-your-own-writes.
                let got = db.get(
                    &ReadOptions::default(),
                    &key(t, v as usize % KEYS_PER_BATCH),
                );
                assert_eq!(
                    got.unwrap(),
                    Some(value(v)),
                    "{name}: own write not visible"
                );
            }
        }));
    }
    let mut readers = Vec::new();
    for r in 0..2 {
        let (db, acked, start, done) = (
            Arc::clone(&db),
            Arc::clone(&acked),
            Arc::clone(&start),
            Arc::clone(&done),
        );
        let name = m.name;
        readers.push(std::thread::spawn(move || {
            start.wait();
            let mut rounds = 0u64;
            while !done.load(Ordering::Acquire) || rounds < 10 {
                rounds += 1;
                let t = (rounds as usize + r) % WRITERS;
                // Acknowledged, then read: visible.
                let a = acked[t].load(Ordering::Acquire);
                let now_snap = db.snapshot();
                let now_ro = ReadOptions {
                    snapshot: Some(now_snap.sequence()),
                    ..ReadOptions::default()
                };
                let now = batch_value(&db, &now_ro, t, name).unwrap_or(0);
                // A plain get (no snapshot) started after the ack, too.
                let plain = db.get(&ReadOptions::default(), &key(t, 0)).unwrap();
                assert!(
                    plain.map_or(0, |v| parse(&v)) >= a,
                    "{name}: get missed an ack"
                );
                assert!(
                    now >= a,
                    "{name}: writer {t} acked {a} but a later read saw {now}"
                );
                // A snapshot shows whole batches and never changes.
                let snap = db.snapshot();
                let ro = ReadOptions {
                    snapshot: Some(snap.sequence()),
                    ..ReadOptions::default()
                };
                let first: Vec<Option<u64>> = (0..WRITERS)
                    .map(|w| batch_value(&db, &ro, w, name))
                    .collect();
                let mut it = db.iter(&ro).unwrap();
                let mut scanned = std::collections::BTreeMap::new();
                while it.valid() {
                    scanned.insert(it.key().to_vec(), parse(it.value()));
                    it.next();
                }
                for (w, f) in first.iter().enumerate() {
                    for i in 0..KEYS_PER_BATCH {
                        assert_eq!(
                            scanned.get(&key(w, i)).copied(),
                            *f,
                            "{name}: snapshot scan disagrees with snapshot gets"
                        );
                    }
                }
                std::thread::yield_now();
                let again: Vec<Option<u64>> = (0..WRITERS)
                    .map(|w| batch_value(&db, &ro, w, name))
                    .collect();
                assert_eq!(first, again, "{name}: a snapshot changed");
            }
        }));
    }
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Release);
    for r in readers {
        r.join().unwrap();
    }
    for t in 0..WRITERS {
        assert_eq!(
            batch_value(&db, &ReadOptions::default(), t, m.name),
            Some(BATCHES)
        );
    }
    // Only the puts took sequence numbers.
    assert_eq!(
        db.latest_sequence_number(),
        WRITERS as u64 * BATCHES * KEYS_PER_BATCH as u64,
        "{}",
        m.name
    );
    let db = Arc::into_inner(db).unwrap();
    db.close().unwrap();
    let db = DB::open(options(m), dir.path()).unwrap();
    for t in 0..WRITERS {
        assert_eq!(
            batch_value(&db, &ReadOptions::default(), t, m.name),
            Some(BATCHES),
            "{}: after reopen",
            m.name
        );
    }
}

#[test]
fn every_mode_keeps_batches_whole_snapshots_fixed_and_acks_visible() {
    for m in &MODES {
        run_mode(m);
    }
}

#[test]
fn incompatible_write_modes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        create_if_missing: true,
        unordered_write: true,
        enable_pipelined_write: true,
        ..Options::default()
    };
    let e = DB::open(o, dir.path()).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("enable_pipelined_write"), "{e}");
    let o = Options {
        create_if_missing: true,
        unordered_write: true,
        allow_concurrent_memtable_write: false,
        ..Options::default()
    };
    let e = DB::open(o, dir.path()).unwrap_err();
    assert!(
        e.to_string().contains("allow_concurrent_memtable_write"),
        "{e}"
    );
}

fn wal_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    v.sort();
    v
}

#[test]
fn manual_wal_flush_keeps_records_until_flush_wal() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        create_if_missing: true,
        manual_wal_flush: true,
        ..Options::default()
    };
    let db = DB::open(o, dir.path()).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    let wal = wal_files(dir.path()).pop().unwrap();
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        0,
        "the record must stay in the WAL buffer"
    );
    db.flush_wal(false).unwrap();
    let len = std::fs::metadata(&wal).unwrap().len();
    assert!(len > 0, "flush_wal hands the record to the OS");
    // A synced write flushes the buffer too.
    db.put(&WriteOptions::default(), b"k2", b"v2").unwrap();
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), len);
    db.put(
        &WriteOptions {
            sync: true,
            disable_wal: false,
            ..WriteOptions::default()
        },
        b"k3",
        b"v3",
    )
    .unwrap();
    assert!(std::fs::metadata(&wal).unwrap().len() > len);
    db.sync_wal().unwrap();
    // Without manual_wal_flush every group reaches the OS at once.
    drop(db);
    let db = DB::open(Options::default(), dir.path()).unwrap();
    assert_eq!(
        db.get(&ReadOptions::default(), b"k2").unwrap(),
        Some(b"v2".to_vec())
    );
    db.put(&WriteOptions::default(), b"k4", b"v4").unwrap();
    let wal = wal_files(dir.path()).pop().unwrap();
    assert!(std::fs::metadata(&wal).unwrap().len() > 0);
}

/// The blob of the first record of a new WAL (db/wal_set.rs): the tag,
/// then the predecessor's number and length, little-endian.
fn predecessor(seq: u64, number: u64, size: u64) -> WriteBatch {
    let mut blob = b"strata.predecessor_wal:".to_vec();
    blob.extend_from_slice(&number.to_le_bytes());
    blob.extend_from_slice(&size.to_le_bytes());
    let mut b = WriteBatch::new();
    b.put_log_data(&blob);
    b.set_sequence(seq);
    b
}

fn put_batch(seq: u64, k: &[u8]) -> WriteBatch {
    let mut b = WriteBatch::new();
    b.put(k, b"v");
    b.set_sequence(seq);
    b
}

/// Writes WAL 1000 (a at seq 1, b at seq 2) and WAL 1001 (predecessor
/// record, then c at seq 3) into an existing empty DB; returns the length
/// of WAL 1000 after its first record.
fn craft_wals(dir: &std::path::Path) -> u64 {
    let fs = default_fs();
    let mut w = LogWriter::new(
        fs.new_writable_file(&dir.join("001000.log")).unwrap(),
        1000,
        false,
    );
    w.add_record(put_batch(1, b"a").data()).unwrap();
    w.flush().unwrap();
    let after_a = w.file_size();
    w.add_record(put_batch(2, b"b").data()).unwrap();
    w.flush().unwrap();
    let full = w.file_size();
    w.close().unwrap();
    let mut w = LogWriter::new(
        fs.new_writable_file(&dir.join("001001.log")).unwrap(),
        1001,
        false,
    );
    w.add_record(predecessor(3, 1000, full).data()).unwrap();
    w.add_record(put_batch(3, b"c").data()).unwrap();
    w.close().unwrap();
    after_a
}

/// Crafts the WALs, then cuts WAL 1000 cleanly after its first record (a
/// power loss that kept the newer WAL's bytes, not the older one's tail).
fn cut_first_wal(dir: &std::path::Path) {
    let after_a = craft_wals(dir);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("001000.log"))
        .unwrap();
    f.set_len(after_a).unwrap();
}

fn keys(db: &DB) -> Vec<Vec<u8>> {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    let mut out = Vec::new();
    while it.valid() {
        out.push(it.key().to_vec());
        it.next();
    }
    out
}

fn fresh_db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        create_if_missing: true,
        ..Options::default()
    };
    DB::open(o, dir.path()).unwrap().close().unwrap();
    dir
}

#[test]
fn a_wal_whose_predecessor_came_back_short_is_not_replayed() {
    // Intact: all three writes.
    let dir = fresh_db();
    craft_wals(dir.path());
    let db = DB::open(Options::default(), dir.path()).unwrap();
    assert_eq!(keys(&db), vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    drop(db);

    // WAL 1000 cut after its first record: replaying WAL 1001 would
    // recover c without b, a hole. Point-in-time recovery stops.
    let dir = fresh_db();
    cut_first_wal(dir.path());
    let db = DB::open(Options::default(), dir.path()).unwrap();
    assert_eq!(keys(&db), vec![b"a".to_vec()]);
    drop(db);

    // The predecessor missing altogether: nothing of WAL 1001 either.
    let dir = fresh_db();
    craft_wals(dir.path());
    std::fs::remove_file(dir.path().join("001000.log")).unwrap();
    let db = DB::open(Options::default(), dir.path()).unwrap();
    assert!(keys(&db).is_empty());
    drop(db);

    // Stricter recovery modes refuse to open, naming the WAL.
    for mode in [
        WalRecoveryMode::AbsoluteConsistency,
        WalRecoveryMode::TolerateCorruptedTailRecords,
    ] {
        let dir = fresh_db();
        cut_first_wal(dir.path());
        let o = Options {
            wal_recovery_mode: mode,
            ..Options::default()
        };
        let e = DB::open(o, dir.path()).unwrap_err();
        assert!(matches!(e, Error::Corruption { .. }), "{mode:?}: {e}");
        assert!(e.to_string().contains("001001.log"), "{mode:?}: {e}");
    }
}

#[test]
fn memtable_switches_chain_wals_and_recover_everything() {
    // Many switches without a flush finishing in between must still
    // recover every write after a clean close and after a drop.
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options {
        create_if_missing: true,
        ..Options::default()
    };
    o.cf.write_buffer_size = 4096;
    o.cf.max_write_buffer_number = 6;
    let db = DB::open(o.clone(), dir.path()).unwrap();
    for i in 0..3000u32 {
        db.put(
            &WriteOptions::default(),
            format!("k{i:05}").as_bytes(),
            &[b'x'; 40],
        )
        .unwrap();
    }
    drop(db);
    let db = DB::open(o, dir.path()).unwrap();
    assert_eq!(keys(&db).len(), 3000);
}

#[test]
fn log_data_alone_reaches_the_wal_without_a_sequence_number() {
    // RocksDB writes a batch holding only `put_log_data` blobs to the WAL
    // (replication readers see it) and gives it no sequence number.
    let dir = fresh_db();
    let o = Options {
        create_if_missing: true,
        ..Options::default()
    };
    let db = DB::open(o.clone(), dir.path()).unwrap();
    let wo = WriteOptions::default();
    db.put(&wo, b"a", b"1").unwrap();
    let mut l = WriteBatch::new();
    l.put_log_data(b"replication marker");
    db.write(&wo, l).unwrap();
    assert_eq!(db.latest_sequence_number(), 1);
    db.put(&wo, b"b", b"2").unwrap();
    assert_eq!(db.latest_sequence_number(), 2);
    // With the WAL off it has nowhere to go, and an empty batch is nothing.
    let mut l = WriteBatch::new();
    l.put_log_data(b"dropped");
    db.write(
        &WriteOptions {
            disable_wal: true,
            ..WriteOptions::default()
        },
        l,
    )
    .unwrap();
    db.write(&wo, WriteBatch::new()).unwrap();
    let mut blobs = Vec::new();
    for wal in wal_files(dir.path()) {
        let file = default_fs().new_sequential_file(&wal).unwrap();
        let mut r = strata::tools::wal::LogReader::new(file, 0);
        while let Ok(Some(rec)) = r.read_record() {
            let b = WriteBatch::from_bytes(rec).unwrap();
            for rec in b.iter() {
                if let strata::tools::format::write_batch::BatchRecord::LogData(blob) = rec.unwrap()
                {
                    blobs.push((b.sequence(), blob.to_vec()));
                }
            }
        }
    }
    assert!(
        blobs
            .iter()
            .any(|(seq, blob)| *seq == 2 && blob == b"replication marker"),
        "{blobs:?}"
    );
    assert!(!blobs.iter().any(|(_, blob)| blob == b"dropped"));
    drop(db);
    let db = DB::open(o, dir.path()).unwrap();
    assert_eq!(db.latest_sequence_number(), 2);
    assert_eq!(
        db.get(&ReadOptions::default(), b"b").unwrap().as_deref(),
        Some(&b"2"[..])
    );
}
