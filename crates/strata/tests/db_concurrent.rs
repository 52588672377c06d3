//! Group commit under concurrency: several writer threads (single puts,
//! batches, some synced) and reader threads at once, with a write buffer
//! small enough that memtables switch and flush throughout. Every
//! acknowledged write is visible to every thread afterwards, batches are
//! atomic, sequence numbers are dense, and everything survives a reopen.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use strata::{DB, Options, ReadOptions, WriteBatch, WriteOptions};

const WRITERS: usize = 4;
const OPS: usize = 1500;

fn key(t: usize, i: usize) -> Vec<u8> {
    format!("w{t}-{i:06}").into_bytes()
}

#[test]
fn writers_and_readers_agree() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options {
        create_if_missing: true,
        ..Options::default()
    };
    o.cf.write_buffer_size = 32 << 10;
    o.cf.max_write_buffer_number = 3;
    let db = Arc::new(DB::open(o.clone(), dir.path()).unwrap());
    // progress[t]: writer t's writes below this index are acknowledged.
    let progress: Arc<Vec<AtomicUsize>> =
        Arc::new((0..WRITERS).map(|_| AtomicUsize::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let mut entries = 0u64;
    let mut writers = Vec::new();
    for t in 0..WRITERS {
        let (db, progress) = (Arc::clone(&db), Arc::clone(&progress));
        writers.push(std::thread::spawn(move || {
            let mut i = 0;
            while i < OPS {
                let sync = i % 97 == 0;
                let wo = WriteOptions {
                    sync,
                    ..WriteOptions::default()
                };
                if i % 5 == 0 && i + 3 <= OPS {
                    // A batch: its keys and a marker appear together.
                    let mut b = WriteBatch::new();
                    for j in i..i + 3 {
                        b.put(&key(t, j), format!("v{j}").as_bytes());
                    }
                    db.write(&wo, b).unwrap();
                    i += 3;
                } else {
                    db.put(&wo, &key(t, i), format!("v{i}").as_bytes()).unwrap();
                    i += 1;
                }
                progress[t].store(i, Ordering::Release);
            }
        }));
        entries += OPS as u64;
    }
    let mut readers = Vec::new();
    for r in 0..2 {
        let (db, progress, done) = (Arc::clone(&db), Arc::clone(&progress), Arc::clone(&done));
        readers.push(std::thread::spawn(move || {
            let ro = ReadOptions::default();
            let mut x = r as u64 + 1;
            let mut checked = 0u64;
            // Until the writers are done, and at least 100 reads in any
            // case: a reader the scheduler starts late still checks.
            while !done.load(Ordering::Acquire) || checked < 100 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let t = (x >> 33) as usize % WRITERS;
                let upto = progress[t].load(Ordering::Acquire);
                if upto == 0 {
                    continue;
                }
                let i = (x >> 40) as usize % upto;
                let got = db.get(&ro, &key(t, i)).unwrap();
                assert_eq!(
                    got,
                    Some(format!("v{i}").into_bytes()),
                    "reader lost w{t}-{i}"
                );
                checked += 1;
            }
            checked
        }));
    }
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() >= 100);
    }
    // Dense sequence numbers: one per entry.
    assert_eq!(db.latest_sequence_number(), entries);
    let check = |db: &DB| {
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        it.status().unwrap();
        assert_eq!(n, WRITERS * OPS);
        for t in 0..WRITERS {
            for i in 0..OPS {
                assert_eq!(
                    db.get(&ReadOptions::default(), &key(t, i)).unwrap(),
                    Some(format!("v{i}").into_bytes())
                );
            }
        }
    };
    check(&db);
    let db = Arc::try_unwrap(db).unwrap_or_else(|_| panic!("db still shared"));
    db.close().unwrap();
    let db = DB::open(o, dir.path()).unwrap();
    check(&db);
    assert_eq!(db.latest_sequence_number(), entries);
}
