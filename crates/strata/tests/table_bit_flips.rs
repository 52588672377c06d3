//! Bit flips in table files (docs/RELIABILITY.md G5): every single-bit flip of
//! a small table file, for several table variants (compression, bloom
//! filter, range tombstones), is either detected (opening fails, or
//! `verify_checksums` reports a Corruption naming the file) or harmless
//! (the file still reads back exactly the original entries). Never a
//! panic, never different data without an error.
//!
//! `STRATA_FLIP_STRIDE=N` tries every N-th bit (default 1: all).

mod common;

use std::sync::Arc;

use strata::Error;
use strata::fs::buffer::{BufferFile, BytesFile};
use strata::tools::format::iterator::InternalIterator;
use strata::tools::format::{ValueType, make_internal_key};
use strata::tools::table::{CompressionType, Table, TableBuilder, TableOptions};

fn build(opts: &TableOptions, tombstones: bool) -> Vec<u8> {
    let f = BufferFile::new();
    let mut b = TableBuilder::new(opts.clone(), Box::new(f.clone())).unwrap();
    for i in 0..60u64 {
        let t = if i % 9 == 4 {
            ValueType::Deletion
        } else {
            ValueType::Value
        };
        let k = make_internal_key(format!("key{i:04}").as_bytes(), 1000 - i, t);
        let v = format!("value-{i}-{}", "x".repeat((i % 13) as usize));
        b.add(&k, v.as_bytes()).unwrap();
    }
    if tombstones {
        b.add_range_tombstone(b"key0010", b"key0020", 5).unwrap();
    }
    b.finish(false).unwrap();
    f.contents()
}

/// Every entry (and range tombstone) the table yields, or an error.
fn read_all(bytes: &[u8], opts: &TableOptions) -> Result<Vec<Vec<u8>>, Error> {
    let t = Arc::new(Table::open(
        Arc::new(BytesFile::new(bytes.to_vec())),
        "flip.sst",
        bytes.len() as u64,
        opts,
    )?);
    t.verify_checksums()?;
    let mut out = Vec::new();
    let mut it = t.iter();
    it.seek_to_first();
    while it.valid() {
        let mut e = it.key().to_vec();
        e.extend_from_slice(b"=>");
        e.extend_from_slice(it.value());
        out.push(e);
        it.next();
    }
    it.status()?;
    for (b, e) in t.range_tombstones() {
        let mut r = b.clone();
        r.extend_from_slice(b"..");
        r.extend_from_slice(e);
        out.push(r);
    }
    Ok(out)
}

#[test]
fn every_bit_flip_in_a_table_is_detected_or_harmless() {
    let stride: usize = std::env::var("STRATA_FLIP_STRIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    let variants: Vec<(&str, TableOptions, bool)> = vec![
        (
            "plain",
            TableOptions {
                compression: CompressionType::None,
                block_size: 256,
                ..TableOptions::default()
            },
            false,
        ),
        (
            "snappy+bloom+tombstones",
            TableOptions {
                compression: CompressionType::Snappy,
                block_size: 512,
                bloom_bits_per_key: Some(10.0),
                ..TableOptions::default()
            },
            true,
        ),
        (
            "zstd",
            TableOptions {
                compression: CompressionType::Zstd,
                block_size: 1024,
                ..TableOptions::default()
            },
            false,
        ),
    ];
    let mut total = (0usize, 0usize, 0usize);
    for (name, opts, tombstones) in variants {
        let bytes = build(&opts, tombstones);
        let want = read_all(&bytes, &opts).unwrap();
        let (mut detected, mut harmless) = (0usize, 0usize);
        let bits = bytes.len() * 8;
        for bit in (0..bits).step_by(stride) {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            match read_all(&damaged, &opts) {
                Err(Error::Corruption { file, .. }) => {
                    assert_eq!(
                        file, "flip.sst",
                        "{name}: bit {bit}: corruption must name the file"
                    );
                    detected += 1;
                }
                Err(_) => detected += 1,
                Ok(got) => {
                    assert_eq!(
                        got,
                        want,
                        "{name}: bit {bit} (byte {} of {}) changed the data without an error",
                        bit / 8,
                        bytes.len()
                    );
                    harmless += 1;
                }
            }
        }
        eprintln!(
            "{name}: {} bytes, {} flips: {detected} detected, {harmless} harmless, 0 undetected",
            bytes.len(),
            detected + harmless
        );
        total.0 += detected + harmless;
        total.1 += detected;
        total.2 += harmless;
    }
    common::figures::record(
        "G5",
        "every bit flip of small tables (plain, snappy+bloom+range tombstones, zstd)",
        &format!(
            "{} flips, {} detected, {} harmless, 0 undetected",
            total.0, total.1, total.2
        ),
    );
}
