//! PlainTable against a model: every configuration written, read back in
//! both directions, sought in total order and through the hash index,
//! looked up, and damaged.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::error::Result;
use crate::format::iterator::InternalIterator;
use crate::format::{ValueType, make_internal_key};
use crate::fs::buffer::{BufferFile, BytesFile};
use crate::table::footer::TableKind;
use crate::table::{Table, TableBuilder, TableOptions};
use crate::util::slice_transform::{FixedPrefix, SliceTransformRef};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// A small deterministic generator (no dependency on test order).
use crate::util::rng::Rng;

/// Sorted internal keys (prefix "pNN", several keys per prefix, some at
/// sequence 0) and values.
fn entries(seed: u64, n: usize, fixed_len: Option<usize>) -> Entries {
    let mut rng = Rng::seeded(seed);
    let mut m = BTreeMap::new();
    while m.len() < n {
        let p = rng.next() % (n as u64 / 3 + 1);
        let mut k = format!("p{p:04}-").into_bytes();
        let extra = fixed_len.map_or((rng.next() % 12) as usize, |f| f - k.len());
        for _ in 0..extra {
            k.push(b'a' + (rng.next() % 26) as u8);
        }
        let seq = if rng.next() % 3 == 0 {
            0
        } else {
            rng.next() % 1000
        };
        let t = match rng.next() % 5 {
            0 => ValueType::Deletion,
            1 => ValueType::Merge,
            _ => ValueType::Value,
        };
        let v = vec![b'v'; (rng.next() % 90) as usize];
        m.insert(k, (seq, t, v));
    }
    m.into_iter()
        .map(|(k, (s, t, v))| (make_internal_key(&k, s, t), v))
        .collect()
}

fn build(e: &Entries, opts: &TableOptions) -> Vec<u8> {
    let f = BufferFile::new();
    let mut b = TableBuilder::new(opts.clone(), Box::new(f.clone())).unwrap();
    for (k, v) in e {
        b.add(k, v).unwrap();
    }
    let info = b.finish(false).unwrap();
    assert_eq!(info.num_entries, e.len() as u64);
    f.contents()
}

fn open(bytes: Vec<u8>, opts: &TableOptions) -> Result<Table> {
    let n = bytes.len() as u64;
    Table::open(Arc::new(BytesFile::new(bytes)), "t.sst", n, opts)
}

fn options(pe: Option<usize>, popts: PlainTableOptions, locality: u32) -> TableOptions {
    TableOptions {
        prefix_extractor: pe.map(|n| Arc::new(FixedPrefix(n)) as SliceTransformRef),
        plain: Some(popts),
        bloom_locality: locality,
        ..TableOptions::default()
    }
}

/// Checks every way of reading `t` against `e`.
fn check(t: &Table, e: &Entries, seed: u64) {
    let icmp =
        crate::format::dbformat::InternalKeyComparator::new(crate::util::comparator::bytewise());
    use crate::format::iterator::testing::{collect_backward, collect_forward};
    assert_eq!(&collect_forward(&mut t.iter()).unwrap(), e, "forward scan");
    assert_eq!(&collect_backward(&mut t.iter()).unwrap(), e, "reverse scan");
    let mut it = t.iter();
    let mut rng = Rng(seed ^ 0x9e37);
    for _ in 0..200 {
        // A present key, or one between/around them.
        let i = (rng.next() % e.len() as u64) as usize;
        let present = rng.next() % 2 == 0;
        let target = if present {
            e[i].0.clone()
        } else {
            let mut k = crate::format::dbformat::extract_user_key(&e[i].0).to_vec();
            k.push(b'!' + (rng.next() % 90) as u8);
            make_internal_key(&k, 500, ValueType::Value)
        };
        let want = e.partition_point(|(k, _)| icmp.compare(k, &target).is_lt());
        it.seek(&target);
        it.status().unwrap();
        assert_eq!(
            it.valid().then(|| it.key().to_vec()),
            e.get(want).map(|x| x.0.clone()),
            "seek"
        );
        let want_prev = e.partition_point(|(k, _)| icmp.compare(k, &target).is_le());
        it.seek_for_prev(&target);
        it.status().unwrap();
        assert_eq!(
            it.valid().then(|| it.key().to_vec()),
            want_prev.checked_sub(1).map(|j| e[j].0.clone()),
            "seek_for_prev"
        );
        // Point lookups find the first entry of the user key at or below
        // the target's sequence, or nothing.
        let got = t.get(&target).unwrap();
        let expect = e.get(want).filter(|(k, _)| {
            crate::format::dbformat::extract_user_key(k)
                == crate::format::dbformat::extract_user_key(&target)
        });
        assert_eq!(got.as_ref().map(|g| &g.0), expect.map(|x| &x.0), "get");
        // The hash iterator agrees whenever it lands.
        let mut p = t.prefix_iter();
        p.seek(&target);
        p.status().unwrap();
        if present {
            assert!(p.valid(), "prefix seek to a present key");
        }
        if p.valid() {
            assert_eq!(
                Some(p.key().to_vec()),
                e.get(want).map(|x| x.0.clone()),
                "prefix seek"
            );
        }
    }
}

#[test]
fn every_configuration_reads_back() {
    let variants: Vec<(&str, Option<usize>, PlainTableOptions, u32)> = vec![
        ("total order", None, PlainTableOptions::default(), 0),
        (
            "total order, index in file",
            None,
            PlainTableOptions {
                store_index_in_file: true,
                hash_table_ratio: 0.0,
                ..Default::default()
            },
            0,
        ),
        ("prefix", Some(5), PlainTableOptions::default(), 0),
        ("prefix, locality", Some(5), PlainTableOptions::default(), 1),
        (
            "prefix encoding",
            Some(5),
            PlainTableOptions {
                encoding_type: EncodingType::Prefix,
                index_sparseness: 3,
                ..Default::default()
            },
            0,
        ),
        (
            "prefix encoding, index in file",
            Some(5),
            PlainTableOptions {
                encoding_type: EncodingType::Prefix,
                store_index_in_file: true,
                ..Default::default()
            },
            1,
        ),
        (
            "index in file, sparse 0, no bloom",
            Some(5),
            PlainTableOptions {
                store_index_in_file: true,
                index_sparseness: 0,
                bloom_bits_per_key: 0,
                ..Default::default()
            },
            0,
        ),
        (
            "full scan mode",
            Some(5),
            PlainTableOptions {
                full_scan_mode: true,
                ..Default::default()
            },
            0,
        ),
    ];
    for (seed, n) in [(1u64, 1usize), (2, 7), (3, 300), (4, 2000)] {
        let e = entries(seed, n, None);
        for (what, pe, popts, loc) in &variants {
            let opts = options(*pe, popts.clone(), *loc);
            let t = open(build(&e, &opts), &opts).unwrap_or_else(|err| panic!("{what}: {err}"));
            assert_eq!(t.kind(), TableKind::Plain);
            check(&t, &e, seed);
            t.verify_checksums().unwrap();
            // A reader without the writer's prefix extractor (or with
            // another) reads the same data in total order.
            let other = options(Some(3), PlainTableOptions::default(), 0);
            check(&open(build(&e, &opts), &other).unwrap(), &e, seed);
            check(
                &open(build(&e, &opts), &options(None, Default::default(), 0)).unwrap(),
                &e,
                seed,
            );
        }
        // Fixed-length keys.
        let e = entries(seed, n, Some(14));
        let popts = PlainTableOptions {
            user_key_len: 14,
            ..Default::default()
        };
        let opts = options(Some(6), popts, 0);
        check(&open(build(&e, &opts), &opts).unwrap(), &e, seed);
    }
}

#[test]
fn writer_refuses_what_the_format_cannot_hold() {
    let opts = options(
        None,
        PlainTableOptions {
            user_key_len: 4,
            ..Default::default()
        },
        0,
    );
    let mut b = TableBuilder::new(opts, Box::new(BufferFile::new())).unwrap();
    let e = b
        .add(&make_internal_key(b"toolong", 1, ValueType::Value), b"")
        .unwrap_err();
    assert!(e.to_string().contains("user_key_len"), "{e}");
    let mut b = TableBuilder::new(
        options(None, Default::default(), 0),
        Box::new(BufferFile::new()),
    )
    .unwrap();
    let e = b.add_range_tombstone(b"a", b"b", 1).unwrap_err();
    assert!(matches!(e, crate::Error::NotSupported(_)), "{e}");
}

#[test]
fn damaged_files_fail_cleanly() {
    let e = entries(9, 200, None);
    for popts in [
        PlainTableOptions::default(),
        PlainTableOptions {
            encoding_type: EncodingType::Prefix,
            store_index_in_file: true,
            ..Default::default()
        },
    ] {
        let opts = options(Some(5), popts, 0);
        let good = build(&e, &opts);
        let mut rng = Rng(77);
        for i in 0..400 {
            let mut bad = good.clone();
            if i % 4 == 0 {
                bad.truncate((rng.next() % good.len() as u64) as usize);
            } else {
                let at = (rng.next() % bad.len() as u64) as usize;
                bad[at] ^= 1 << (rng.next() % 8);
            }
            // Open may fail or succeed; reading must not panic.
            if let Ok(t) = open(bad, &opts) {
                let mut it = t.iter();
                it.seek_to_first();
                while it.valid() {
                    it.next();
                }
                it.seek_to_last();
                if it.valid() {
                    it.prev();
                }
                let _ = t.get(&e[i % e.len()].0);
                let mut p = t.prefix_iter();
                p.seek(&e[(i * 7) % e.len()].0);
            }
        }
    }
}
