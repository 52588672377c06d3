//! Round trips, RocksDB byte vectors, and damage tests (every bit flip and
//! every truncation) for the log reader and writer.

use super::*;
use crate::fs::buffer::{BufferFile, BytesFile};
use crate::wal::LogWriter;

fn write_log(records: &[Vec<u8>], recycle: bool, log_number: u64) -> Vec<u8> {
    let f = BufferFile::new();
    let mut w = LogWriter::new(Box::new(f.clone()), log_number, recycle);
    for r in records {
        w.add_record(r).unwrap();
    }
    f.contents()
}

/// Reads until the first error or EOF, like point-in-time recovery.
fn read_log(data: Vec<u8>, log_number: u64) -> (Vec<Vec<u8>>, Option<ReadError>) {
    let mut r = LogReader::new(
        Box::new(BytesFile::new(data).with_max_read(10_000)),
        log_number,
    );
    let mut out = Vec::new();
    loop {
        match r.read_record() {
            Ok(Some(rec)) => out.push(rec),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

fn sample_records() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    let mut x: u32 = 7;
    for len in [
        0usize,
        1,
        100,
        32_768 - 7,
        32_768 - 14,
        70_000,
        3,
        5000,
        32_761,
        0,
        9,
    ] {
        let rec: Vec<u8> = (0..len)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        v.push(rec);
    }
    v
}

#[test]
fn formats_md_vector() {
    let mut batch = vec![1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
    batch.extend_from_slice(&[1, 1, 0x61, 1, 0x31]);
    let log = write_log(&[batch.clone()], false, 1);
    let mut want = vec![0xE9, 0x9F, 0x78, 0x19, 0x11, 0x00, 0x01];
    want.extend_from_slice(&batch);
    assert_eq!(log, want);
}

#[test]
fn roundtrip_legacy_and_recyclable() {
    let recs = sample_records();
    for recycle in [false, true] {
        let log = write_log(&recs, recycle, 42);
        let (got, err) = read_log(log, 42);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(got, recs);
    }
}

#[test]
fn block_tail_padding() {
    // A record leaving fewer than 7 bytes in the block forces padding.
    let recs = vec![vec![1u8; 32_768 - 7 - 3], vec![2u8; 10]];
    let log = write_log(&recs, false, 1);
    assert_eq!(&log[32_765..32_768], &[0, 0, 0]);
    assert_eq!(read_log(log, 1).0, recs);
}

#[test]
fn recycled_log_leftovers_end_the_log() {
    // Leftovers starting at a record boundary carry the old log number.
    let old = write_log(&vec![b"stale".to_vec(); 50], true, 7);
    let mut new = write_log(&[b"fresh".to_vec()], true, 8);
    let len = new.len();
    new.extend_from_slice(&old[len..]);
    let (got, err) = read_log(new, 8);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got, vec![b"fresh".to_vec()]);
    // Leftovers cut mid-record are garbage: reported, never returned.
    let old = write_log(&sample_records(), true, 7);
    let mut new = write_log(&[b"fresh".to_vec()], true, 8);
    let len = new.len();
    new.extend_from_slice(&old[len..]);
    let (got, err) = read_log(new, 8);
    assert_eq!(got, vec![b"fresh".to_vec()]);
    assert!(matches!(err, Some(ReadError::Corruption { .. })), "{err:?}");
}

#[test]
fn every_truncation_yields_a_prefix() {
    let recs: Vec<Vec<u8>> = (0..6).map(|i| vec![i as u8; 300 * i + 1]).collect();
    let log = write_log(&recs, false, 1);
    for cut in 0..log.len() {
        let (got, err) = read_log(log[..cut].to_vec(), 1);
        assert!(got.len() <= recs.len());
        assert_eq!(got[..], recs[..got.len()], "cut {cut}");
        match err {
            None => {}
            Some(ReadError::TruncatedTail { .. }) => {}
            Some(e) => panic!("cut {cut}: unexpected {e:?}"),
        }
    }
    // A truncation inside a multi-block record.
    let big = vec![vec![9u8; 100_000], b"after".to_vec()];
    let log = write_log(&big, false, 1);
    for cut in [40_000, 32_768, 32_775, 65_536 + 3, 99_000] {
        let (got, err) = read_log(log[..cut].to_vec(), 1);
        assert!(got.is_empty());
        assert!(
            matches!(err, Some(ReadError::TruncatedTail { .. })),
            "{cut}"
        );
    }
}

#[test]
fn every_bit_flip_is_detected_and_never_skipped_past() {
    let recs: Vec<Vec<u8>> = (0..5).map(|i| vec![(i * 37) as u8; 40 * i + 3]).collect();
    let log = write_log(&recs, false, 1);
    for byte in 0..log.len() {
        for bit in 0..8 {
            let mut damaged = log.clone();
            damaged[byte] ^= 1 << bit;
            let (got, err) = read_log(damaged, 1);
            assert!(err.is_some(), "flip at {byte}:{bit} went unnoticed");
            assert!(got.len() < recs.len());
            assert_eq!(got[..], recs[..got.len()], "flip at {byte}:{bit}");
        }
    }
}

#[test]
fn bit_flips_in_multi_block_logs() {
    let recs = sample_records();
    let log = write_log(&recs, false, 3);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..400 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let byte = (x % log.len() as u64) as usize;
        let mut damaged = log.clone();
        damaged[byte] ^= 1 << (x % 8);
        let (got, err) = read_log(damaged, 3);
        assert_eq!(got[..], recs[..got.len()], "flip at {byte}");
        if got.len() == recs.len() {
            // Only padding bytes may change harmlessly.
            assert!(err.is_none());
        }
    }
}

#[test]
fn corruption_reports_offset() {
    let recs = vec![b"one".to_vec(), b"two".to_vec()];
    let mut log = write_log(&recs, false, 1);
    let second = 7 + 3;
    log[second + 7] ^= 0x01; // payload of the second record
    let (got, err) = read_log(log, 1);
    assert_eq!(got, vec![b"one".to_vec()]);
    let err = err.unwrap();
    assert_eq!(err.offset(), Some(second as u64));
    let e = err.into_error("000001.log");
    assert!(e.to_string().contains("000001.log"), "{e}");
}
