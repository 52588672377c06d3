//! Fuzzing entry points, one per decoder of on-disk bytes. Each consumes
//! arbitrary bytes and exercises every read path of its decoder.

use std::sync::Arc;

use crate::env::buffer::BytesFile;
use crate::format::WriteBatch;
use crate::table::block::{Block, KeyOrder};
use crate::table::iterator::InternalIterator;
use crate::table::{Table, TableOptions};
use crate::wal::LogReader;

fn walk(it: &mut dyn InternalIterator, probe: &[u8]) {
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 100_000 {
        it.next();
        n += 1;
    }
    it.seek_to_last();
    n = 0;
    while it.valid() && n < 100_000 {
        it.prev();
        n += 1;
    }
    it.seek(probe);
    it.seek_for_prev(probe);
    let _ = it.status();
}

/// Decodes `data` as a block (all key orders, both value encodings).
pub fn block(data: &[u8]) {
    let probe: Vec<u8> = data.iter().take(12).copied().collect();
    if let Ok(b) = Block::from_vec(data.to_vec()) {
        let b = Arc::new(b);
        for delta in [false, true] {
            walk(&mut b.iter(KeyOrder::Bytewise, delta), &probe);
            let icmp =
                crate::format::InternalKeyComparator::new(crate::util::comparator::bytewise());
            walk(&mut b.iter(KeyOrder::Internal(icmp), delta), &probe);
        }
    }
}

/// Opens `data` as a table file, scans it both ways, looks up keys and
/// verifies checksums.
pub fn table(data: &[u8]) {
    let n = data.len() as u64;
    let probe: Vec<u8> = data.iter().take(16).copied().collect();
    for verify in [true, false] {
        let opts = TableOptions {
            verify_checksums: verify,
            ..TableOptions::default()
        };
        if let Ok(t) = Table::open(
            Arc::new(BytesFile::new(data.to_vec())),
            "fuzz.sst",
            n,
            &opts,
        ) {
            let t = Arc::new(t);
            walk(&mut t.iter(), &probe);
            let _ = t.get(&probe);
            let _ = t.verify_checksums();
        }
    }
}

/// Reads `data` as a WAL, continuing past corruption like the
/// skip-any-corrupted-records recovery mode, and decodes every batch.
pub fn wal(data: &[u8]) {
    let mut r = LogReader::new(Box::new(BytesFile::new(data.to_vec())), 1);
    for _ in 0..10_000 {
        match r.read_record() {
            Ok(Some(rec)) => write_batch(&rec),
            Ok(None) => break,
            Err(crate::wal::ReadError::Other(_)) => break,
            Err(_) => continue,
        }
    }
}

/// Decodes `data` as a WriteBatch.
pub fn write_batch(data: &[u8]) {
    if let Ok(b) = WriteBatch::from_bytes(data.to_vec()) {
        let _ = b.validate();
        for r in b.iter() {
            if r.is_err() {
                break;
            }
        }
    }
}

/// Parses `data` as a filter block and probes it.
pub fn filter(data: &[u8]) {
    let f = crate::table::filter::FilterReader::new(data.to_vec());
    for k in data.chunks(7).take(64) {
        let _ = f.key_may_match(k);
    }
}

/// A fuzz entry point.
pub type FuzzTarget = fn(&[u8]);

/// Every target by name, for the corpus replay.
pub const TARGETS: &[(&str, FuzzTarget)] = &[
    ("block", block),
    ("table", table),
    ("wal", wal),
    ("write_batch", write_batch),
    ("filter", filter),
];
