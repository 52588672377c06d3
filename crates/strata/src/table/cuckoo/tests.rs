//! CuckooTable against a model: written with every option, read back in
//! both directions, sought, looked up, written block-based when the
//! entries do not fit, and damaged.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::error::{Error, Result};
use crate::format::iterator::InternalIterator;
use crate::format::{ValueType, make_internal_key};
use crate::fs::buffer::{BufferFile, BytesFile};
use crate::table::footer::TableKind;
use crate::table::{Table, TableBuilder, TableInfo, TableOptions};
use crate::util::rng::Rng;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// `n` sorted entries with user keys of `klen` bytes and values of
/// `vlen` bytes; sequence numbers from 1 (or all 0 with `seq0`), about
/// one in five a deletion (never with `seq0`).
fn entries(seed: u64, n: usize, klen: usize, vlen: usize, seq0: bool) -> Entries {
    let mut rng = Rng::seeded(seed);
    let mut m = BTreeMap::new();
    while m.len() < n {
        let k: Vec<u8> = (0..klen).map(|_| b'a' + rng.below(26) as u8).collect();
        let seq = if seq0 { 0 } else { 1 + rng.below(1000) };
        let t = if !seq0 && rng.below(5) == 0 {
            ValueType::Deletion
        } else {
            ValueType::Value
        };
        let v: Vec<u8> = if t == ValueType::Value {
            (0..vlen).map(|_| rng.below(256) as u8).collect()
        } else {
            Vec::new()
        };
        m.insert(k, (seq, t, v));
    }
    m.into_iter()
        .map(|(k, (s, t, v))| (make_internal_key(&k, s, t), v))
        .collect()
}

fn opts(c: CuckooTableOptions) -> TableOptions {
    TableOptions {
        cuckoo: Some(c),
        ..TableOptions::default()
    }
}

fn build(e: &Entries, o: &TableOptions) -> (Vec<u8>, TableInfo) {
    let f = BufferFile::new();
    let mut b = TableBuilder::new(o.clone(), Box::new(f.clone())).unwrap();
    for (k, v) in e {
        b.add(k, v).unwrap();
    }
    let info = b.finish(false).unwrap();
    assert_eq!(info.num_entries, e.len() as u64);
    (f.contents(), info)
}

fn open(bytes: Vec<u8>, o: &TableOptions) -> Result<Table> {
    let n = bytes.len() as u64;
    Table::open(Arc::new(BytesFile::new(bytes)), "t.sst", n, o)
}

/// What a reader returns for `e`: the same entries, but a deletion's
/// value is the filler RocksDB writes (`'a'` times the value size).
fn as_read(e: &Entries, vlen: usize) -> Entries {
    let puts = e.iter().any(|(k, _)| {
        crate::format::parse_internal_key(k).is_some_and(|p| p.value_type == ValueType::Value)
    });
    // Without puts the value size is 0.
    let vlen = if puts { vlen } else { 0 };
    e.iter()
        .map(|(k, v)| {
            let del = crate::format::parse_internal_key(k)
                .is_some_and(|p| p.value_type == ValueType::Deletion);
            (k.clone(), if del { vec![b'a'; vlen] } else { v.clone() })
        })
        .collect()
}

/// Checks every way of reading `t` against `e`.
fn check(t: &Table, e: &Entries, seed: u64) {
    use crate::format::iterator::testing::{collect_backward, collect_forward};
    assert_eq!(&collect_forward(&mut t.iter()).unwrap(), e, "forward scan");
    assert_eq!(&collect_backward(&mut t.iter()).unwrap(), e, "reverse scan");
    let mut it = t.iter();
    let ucmp = crate::util::comparator::bytewise();
    let mut rng = Rng::seeded(seed ^ 0x9e37);
    for (i, (k, v)) in e.iter().enumerate() {
        let user = crate::format::dbformat::extract_user_key(k);
        // Lookups at the newest sequence number find the entry.
        let target = make_internal_key(
            user,
            crate::format::dbformat::MAX_SEQUENCE_NUMBER,
            ValueType::Value,
        );
        assert_eq!(
            t.get(&target).unwrap(),
            Some((k.clone(), v.clone())),
            "get #{i}"
        );
        let mut seen = Vec::new();
        t.lookup(&target, &ucmp, false, |k, v| {
            seen.push((k.to_vec(), v.to_vec()));
            true
        })
        .unwrap();
        assert_eq!(seen, vec![(k.clone(), v.clone())]);
        // Seeks land on the entry, and just past it.
        it.seek(&target);
        assert!(it.valid() && it.key() == k.as_slice());
        it.seek_for_prev(k);
        assert!(it.valid() && it.key() == k.as_slice());
        let p = crate::format::parse_internal_key(k).unwrap();
        if p.sequence > 0 {
            // Older than the entry: not visible.
            let older = make_internal_key(user, p.sequence - 1, ValueType::Value);
            assert_eq!(t.get(&older).unwrap(), None);
            it.seek(&older);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                e.get(i + 1).map(|x| x.0.clone())
            );
        }
        // A missing key of the same length.
        if rng.below(4) == 0 {
            let mut m = user.to_vec();
            m[0] = b'0';
            let target = make_internal_key(&m, 1 << 40, ValueType::Value);
            assert_eq!(t.get(&target).unwrap(), None);
        }
    }
    // Keys of another length are absent.
    assert_eq!(
        t.get(&make_internal_key(b"x", 5, ValueType::Value))
            .unwrap(),
        None
    );
    t.verify_checksums().unwrap();
}

fn round_trip(seed: u64, n: usize, klen: usize, vlen: usize, seq0: bool, c: CuckooTableOptions) {
    let e = entries(seed, n, klen, vlen, seq0);
    let o = opts(c);
    let (bytes, info) = build(&e, &o);
    assert_eq!(info.block_based_fallback, None, "{n} entries");
    let t = open(bytes, &o).unwrap();
    assert_eq!(t.kind(), TableKind::Cuckoo);
    let Table::Cuckoo(ct) = &t else {
        unreachable!()
    };
    assert_eq!(ct.is_last_level(), seq0 && n > 0);
    assert_eq!(t.properties().num_entries, n as u64);
    check(&t, &as_read(&e, vlen), seed);
}

#[test]
fn round_trips_with_every_option() {
    let d = CuckooTableOptions::default;
    for seed in 0..4 {
        for n in [1, 2, 7, 100, 1000] {
            round_trip(seed, n, 16, 10, false, d());
            round_trip(seed, n, 12, 0, false, d());
            round_trip(seed, n, 9, 33, true, d());
            round_trip(
                seed,
                n,
                16,
                8,
                false,
                CuckooTableOptions {
                    use_module_hash: false,
                    ..d()
                },
            );
            round_trip(
                seed,
                n,
                8,
                8,
                true,
                CuckooTableOptions {
                    identity_as_first_hash: true,
                    ..d()
                },
            );
            round_trip(
                seed,
                n,
                20,
                4,
                false,
                CuckooTableOptions {
                    identity_as_first_hash: true,
                    use_module_hash: false,
                    ..d()
                },
            );
            round_trip(
                seed,
                n,
                16,
                4,
                false,
                CuckooTableOptions {
                    cuckoo_block_size: 1,
                    ..d()
                },
            );
        }
    }
}

/// A full table with one-bucket blocks: keys collide and are displaced,
/// and more hash functions are added; every key is still found.
#[test]
fn collisions_displace_keys_and_add_hash_functions() {
    let mut most = 0;
    for seed in 0..6 {
        for depth in [1, 3, 100] {
            let c = CuckooTableOptions {
                hash_table_ratio: 1.0,
                cuckoo_block_size: 1,
                max_search_depth: depth,
                ..Default::default()
            };
            let e = entries(seed, 500, 10, 6, false);
            let o = opts(c);
            let (bytes, info) = build(&e, &o);
            assert_eq!(info.block_based_fallback, None);
            let t = open(bytes, &o).unwrap();
            let Table::Cuckoo(ct) = &t else {
                unreachable!()
            };
            most = most.max(ct.num_hash_func());
            check(&t, &as_read(&e, 6), seed);
        }
    }
    assert!(most > 2, "no table needed a third hash function");
}

/// Entries a CuckooTable cannot hold are written block-based, all of
/// them, with the reason.
#[test]
fn entries_that_do_not_fit_are_written_block_based() {
    let k = |s: &[u8], seq, t| make_internal_key(s, seq, t);
    let cases: Vec<(Entries, &str)> = vec![
        (
            vec![
                (k(b"a", 5, ValueType::Value), b"1".to_vec()),
                (k(b"bb", 5, ValueType::Value), b"2".to_vec()),
            ],
            "different sizes",
        ),
        (
            vec![
                (k(b"a", 5, ValueType::Value), b"1".to_vec()),
                (k(b"b", 5, ValueType::Value), b"22".to_vec()),
            ],
            "different sizes",
        ),
        (vec![(k(b"a", 5, ValueType::Merge), b"1".to_vec())], "Merge"),
        (
            vec![(k(b"a", 5, ValueType::SingleDeletion), vec![])],
            "SingleDeletion",
        ),
        (
            vec![
                (k(b"a", 6, ValueType::Value), b"1".to_vec()),
                (k(b"a", 5, ValueType::Value), b"2".to_vec()),
            ],
            "several entries",
        ),
        (
            vec![
                (k(b"a", 0, ValueType::Value), b"1".to_vec()),
                (k(b"b", 4, ValueType::Value), b"2".to_vec()),
            ],
            "sequence number",
        ),
        (
            vec![
                (k(b"a", 0, ValueType::Value), b"1".to_vec()),
                (k(b"b", 0, ValueType::Deletion), vec![]),
            ],
            "deletion",
        ),
        (
            vec![
                (k(b"\x00", 3, ValueType::Value), b"1".to_vec()),
                (k(b"\xff", 3, ValueType::Value), b"2".to_vec()),
            ],
            "unused key",
        ),
    ];
    for (e, why) in cases {
        let o = opts(CuckooTableOptions::default());
        let (bytes, info) = build(&e, &o);
        let reason = info.block_based_fallback.clone().unwrap_or_default();
        assert!(reason.contains(why), "{why}: {reason}");
        let t = open(bytes, &o).unwrap();
        assert_eq!(t.kind(), TableKind::BlockBased);
        let mut it = t.iter();
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        assert_eq!(got, e, "{why}");
    }
    // Short keys under identity_as_first_hash.
    let o = opts(CuckooTableOptions {
        identity_as_first_hash: true,
        ..Default::default()
    });
    let (_, info) = build(&entries(1, 10, 4, 4, false), &o);
    assert!(
        info.block_based_fallback
            .unwrap()
            .contains("identity_as_first_hash")
    );
    // A range tombstone.
    let f = BufferFile::new();
    let mut b = TableBuilder::new(o.clone(), Box::new(f.clone())).unwrap();
    b.add(&k(b"abcdefgh", 9, ValueType::Value), b"v").unwrap();
    b.add_range_tombstone(b"b", b"c", 4).unwrap();
    let info = b.finish(false).unwrap();
    assert!(
        info.block_based_fallback
            .unwrap()
            .contains("range tombstones")
    );
    let t = open(f.contents(), &o).unwrap();
    assert_eq!(t.range_tombstones().len(), 1);
}

#[test]
fn an_empty_table_opens() {
    for module in [true, false] {
        let o = opts(CuckooTableOptions {
            use_module_hash: module,
            ..Default::default()
        });
        let (bytes, info) = build(&Vec::new(), &o);
        assert_eq!(info.block_based_fallback, None);
        let t = open(bytes, &o).unwrap();
        assert_eq!(t.kind(), TableKind::Cuckoo);
        let mut it = t.iter();
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        assert_eq!(
            t.get(&make_internal_key(b"k", 1, ValueType::Value))
                .unwrap(),
            None
        );
        t.verify_checksums().unwrap();
    }
}

/// RocksDB's unused-key search: decrements kept from the last byte on.
#[test]
fn unused_key_follows_rocksdb() {
    use super::builder::unused_user_key;
    assert_eq!(unused_user_key(b"b", b"c").unwrap(), b"a");
    assert_eq!(unused_user_key(b"a\x00", b"b").unwrap(), b"`\xff");
    assert_eq!(
        unused_user_key(b"\x00\x00", b"\x00\x05").unwrap(),
        b"\x00\x06"
    );
    assert_eq!(unused_user_key(b"\x00", b"\xff"), None);
}

#[test]
fn options_are_validated() {
    assert!(CuckooTableOptions::default().validate().is_ok());
    for bad in [
        CuckooTableOptions {
            hash_table_ratio: 0.0,
            ..Default::default()
        },
        CuckooTableOptions {
            hash_table_ratio: 1.5,
            ..Default::default()
        },
        CuckooTableOptions {
            hash_table_ratio: f64::NAN,
            ..Default::default()
        },
        CuckooTableOptions {
            cuckoo_block_size: 0,
            ..Default::default()
        },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
        let cf = crate::options::ColumnFamilyOptions {
            table_factory: crate::options::TableFactory::Cuckoo(bad),
            ..Default::default()
        };
        assert!(matches!(cf.validate("x"), Err(Error::InvalidArgument(_))));
    }
}

/// Truncated and bit-flipped files fail with an error or read without
/// panicking or looping.
#[test]
fn damaged_files_fail_cleanly() {
    let mut rng = Rng::seeded(7);
    for (seq0, c) in [
        (false, CuckooTableOptions::default()),
        (
            true,
            CuckooTableOptions {
                use_module_hash: false,
                cuckoo_block_size: 2,
                ..Default::default()
            },
        ),
    ] {
        let e = entries(3, 60, 10, 5, seq0);
        let o = opts(c);
        let (good, _) = build(&e, &o);
        for round in 0..600 {
            let mut bad = good.clone();
            if round % 3 == 0 {
                bad.truncate(rng.below(good.len() as u64) as usize);
            } else {
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(bad.len() as u64) as usize;
                    bad[at] ^= 1 << rng.below(8);
                }
            }
            let Ok(t) = open(bad, &o) else { continue };
            let mut it = t.iter();
            it.seek_to_first();
            let mut n = 0;
            while it.valid() && n <= e.len() {
                let _ = (it.key(), it.value());
                it.next();
                n += 1;
            }
            assert!(n <= e.len());
            it.seek_to_last();
            if it.valid() {
                it.prev();
            }
            for (k, _) in &e {
                let _ = t.get(k);
                it.seek(k);
            }
            let _ = t.verify_checksums();
            let _ = t.approximate_offset_of(&e[e.len() / 2].0);
        }
    }
}

/// A bit flipped in a stored key is found by `verify` (the key no longer
/// sits where its hash leads).
#[test]
fn verify_finds_a_moved_key() {
    let e = entries(5, 200, 16, 8, false);
    let o = opts(CuckooTableOptions::default());
    let (mut bytes, _) = build(&e, &o);
    let t = open(bytes.clone(), &o).unwrap();
    let Table::Cuckoo(ct) = &t else {
        unreachable!()
    };
    // The first occupied bucket's first key byte.
    let empty = ct
        .properties()
        .user_property(EMPTY_KEY_PROPERTY)
        .unwrap()
        .to_vec();
    let bucket = 16 + 8 + 8;
    let b = (0..)
        .find(|b| bytes[b * bucket..b * bucket + empty.len()] != empty[..])
        .unwrap();
    bytes[b * bucket] ^= 0x40;
    let t = open(bytes, &o).unwrap();
    assert!(matches!(
        t.verify_checksums(),
        Err(Error::Corruption { .. })
    ));
}
