//! Bad input and misuse through the public API: each gets a clear, typed
//! error, never a panic, and leaves every file of the database unchanged.
//! Also: prefix seeks (`prefix_same_as_start`) against a model.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::FixedPrefix;
use strata::tools::util::comparator::Comparator;
use strata::{
    ColumnFamilyDescriptor, ColumnFamilyOptions, DB, Error, Options, ReadOptions, WriteBatch,
    WriteOptions,
};

fn opts() -> Options {
    Options {
        create_if_missing: true,
        ..Options::default()
    }
}

/// Every file under `dir` with its bytes, to prove nothing changed.
fn snapshot_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            let name = e.file_name().to_string_lossy().into_owned();
            out.insert(name, std::fs::read(e.path()).unwrap());
        }
    }
    out
}

/// A database with data in a table and in the WAL, closed.
fn make_db(dir: &Path) {
    let db = DB::open(opts(), dir).unwrap();
    let wo = WriteOptions::default();
    for i in 0..100u32 {
        db.put(&wo, format!("key{i:04}").as_bytes(), b"v").unwrap();
    }
    db.flush().unwrap();
    db.put(&wo, b"in-wal", b"w").unwrap();
}

struct Reverse;
impl Comparator for Reverse {
    fn name(&self) -> &str {
        "test.Reverse"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        b.cmp(a)
    }
}

#[test]
fn wrong_comparator_is_invalid_argument_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let before = snapshot_dir(dir.path());
    let mut o = opts();
    o.cf.comparator = Arc::new(Reverse);
    let e = DB::open(o, dir.path()).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("test.Reverse") && m.contains("leveldb.BytewiseComparator")),
        "{e}"
    );
    assert_eq!(snapshot_dir(dir.path()), before);
    // The right comparator still opens it, with all data.
    let db = DB::open(opts(), dir.path()).unwrap();
    assert_eq!(
        db.get(&ReadOptions::default(), b"in-wal")
            .unwrap()
            .as_deref(),
        Some(&b"w"[..])
    );
}

#[test]
fn custom_comparator_orders_and_is_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.cf.comparator = Arc::new(Reverse);
    {
        let db = DB::open(o.clone(), dir.path()).unwrap();
        for k in [b"a", b"c", b"b"] {
            db.put(&WriteOptions::default(), k, k).unwrap();
        }
        db.flush().unwrap();
        db.put(&WriteOptions::default(), b"d", b"d").unwrap();
    }
    let db = DB::open(o, dir.path()).unwrap();
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    let mut keys = Vec::new();
    while it.valid() {
        keys.push(it.key().to_vec());
        it.next();
    }
    assert_eq!(
        keys,
        vec![b"d".to_vec(), b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]
    );
    drop(it);
    drop(db);
    // Without it: refused.
    assert!(matches!(
        DB::open(opts(), dir.path()),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn missing_current_is_an_error_without_create_if_missing() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
    let before = snapshot_dir(dir.path());
    let o = Options {
        create_if_missing: false,
        ..Options::default()
    };
    let e = DB::open(o.clone(), dir.path()).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(_) | Error::NotFound(_)),
        "{e}"
    );
    assert_eq!(snapshot_dir(dir.path()), before);
    assert!(DB::open_read_only(o, dir.path()).is_err());
    assert_eq!(snapshot_dir(dir.path()), before);
}

#[test]
fn missing_directory_and_error_if_exists() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("nope");
    let o = Options {
        create_if_missing: false,
        ..Options::default()
    };
    assert!(DB::open(o, &absent).is_err());
    assert!(
        !absent.exists(),
        "a failed open must not create the directory"
    );
    make_db(dir.path());
    let before = snapshot_dir(dir.path());
    let o = Options {
        error_if_exists: true,
        ..opts()
    };
    let e = DB::open(o, dir.path()).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert_eq!(snapshot_dir(dir.path()), before);
}

#[test]
fn corrupt_manifest_is_corruption_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let current = std::fs::read_to_string(dir.path().join("CURRENT")).unwrap();
    let manifest = dir.path().join(current.trim());
    let mut bytes = std::fs::read(&manifest).unwrap();
    // Damage the middle of the first record (the payload, past the
    // 7-byte header): its checksum no longer matches.
    let at = 7 + (bytes.len() - 7) / 4;
    bytes[at] ^= 0x40;
    std::fs::write(&manifest, &bytes).unwrap();
    let before = snapshot_dir(dir.path());
    for read_only in [false, true] {
        let r = if read_only {
            DB::open_read_only(opts(), dir.path())
        } else {
            DB::open(opts(), dir.path())
        };
        let e = r.unwrap_err();
        assert!(
            matches!(&e, Error::Corruption { file, .. } if file.contains("MANIFEST")),
            "read_only={read_only}: {e}"
        );
        assert_eq!(snapshot_dir(dir.path()), before, "read_only={read_only}");
    }
}

#[test]
fn current_naming_a_missing_manifest_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    std::fs::write(dir.path().join("CURRENT"), "MANIFEST-999999\n").unwrap();
    let before = snapshot_dir(dir.path());
    assert!(DB::open(opts(), dir.path()).is_err());
    std::fs::write(dir.path().join("CURRENT"), "garbage").unwrap();
    let e = DB::open(opts(), dir.path()).unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    let mut after = snapshot_dir(dir.path());
    after.insert("CURRENT".into(), b"MANIFEST-999999\n".to_vec());
    assert_eq!(after, before);
}

#[test]
fn second_writer_is_busy_and_read_only_handles_coexist() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(opts(), dir.path()).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    let e = DB::open(opts(), dir.path()).unwrap_err();
    assert!(matches!(e, Error::Busy(_)), "{e}");
    // A read-only handle takes no lock and sees the WAL's data.
    let ro = DB::open_read_only(opts(), dir.path()).unwrap();
    assert_eq!(
        ro.get(&ReadOptions::default(), b"k").unwrap().as_deref(),
        Some(&b"v"[..])
    );
    drop(ro);
    drop(db);
    // The lock is released on close.
    DB::open(opts(), dir.path()).unwrap();
}

#[test]
fn read_only_handle_refuses_every_write_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let before = snapshot_dir(dir.path());
    let db = DB::open_read_only(opts(), dir.path()).unwrap();
    let wo = WriteOptions::default();
    let mut b = WriteBatch::new();
    b.put(b"x", b"y");
    let results = [
        db.put(&wo, b"a", b"b"),
        db.delete(&wo, b"a"),
        db.single_delete(&wo, b"a"),
        db.delete_range(&wo, b"a", b"b"),
        db.merge(&wo, b"a", b"b"),
        db.write(&wo, b),
        db.flush(),
        db.create_column_family("new", ColumnFamilyOptions::default())
            .map(|_| ()),
        db.drop_column_family(&db.default_cf()),
    ];
    for (i, r) in results.into_iter().enumerate() {
        let e = r.expect_err("a read-only handle accepted a write");
        assert!(
            matches!(e, Error::NotSupported(_) | Error::InvalidArgument(_)),
            "op {i}: {e}"
        );
    }
    assert_eq!(
        db.get(&ReadOptions::default(), b"key0005")
            .unwrap()
            .as_deref(),
        Some(&b"v"[..])
    );
    drop(db);
    assert_eq!(snapshot_dir(dir.path()), before);
}

#[test]
fn unknown_and_dropped_column_families() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = DB::open(opts(), dir.path()).unwrap();
        db.create_column_family("one", ColumnFamilyOptions::default())
            .unwrap();
        let e = db
            .create_column_family("one", ColumnFamilyOptions::default())
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
    // Opening without listing every column family is refused, as in RocksDB.
    let e = DB::open(opts(), dir.path()).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    // Naming a column family that does not exist, without create_missing.
    let cfs = vec![
        ColumnFamilyDescriptor::new("default", ColumnFamilyOptions::default()),
        ColumnFamilyDescriptor::new("one", ColumnFamilyOptions::default()),
        ColumnFamilyDescriptor::new("two", ColumnFamilyOptions::default()),
    ];
    let e = DB::open_cf(opts(), dir.path(), cfs).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");

    let cfs = vec![
        ColumnFamilyDescriptor::new("default", ColumnFamilyOptions::default()),
        ColumnFamilyDescriptor::new("one", ColumnFamilyOptions::default()),
    ];
    let db = DB::open_cf(opts(), dir.path(), cfs).unwrap();
    let one = db.cf_handle("one").unwrap();
    assert!(db.cf_handle("two").is_none());
    db.put_cf(&WriteOptions::default(), &one, b"k", b"v")
        .unwrap();
    db.drop_column_family(&one).unwrap();
    let wo = WriteOptions::default();
    assert!(matches!(
        db.put_cf(&wo, &one, b"k", b"v"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(db.get_cf(&ReadOptions::default(), &one, b"k").is_err());
    assert!(db.iter_cf(&ReadOptions::default(), &one).is_err());
    // A batch naming a column family id that does not exist.
    let mut b = WriteBatch::new();
    b.put(b"fine", b"x");
    b.put_cf(77, b"k", b"v");
    assert!(matches!(db.write(&wo, b), Err(Error::InvalidArgument(_))));
    // ...is atomic: the valid record did not land either.
    assert_eq!(db.get(&ReadOptions::default(), b"fine").unwrap(), None);
    assert!(db.drop_column_family(&db.default_cf()).is_err());
    drop(db);
    assert_eq!(
        DB::list_column_families(&opts(), dir.path()).unwrap(),
        vec!["default".to_string()]
    );
}

#[test]
fn bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(opts(), dir.path()).unwrap();
    let wo = WriteOptions::default();
    // Reversed range: RocksDB rejects begin > end.
    assert!(matches!(
        db.delete_range(&wo, b"z", b"a"),
        Err(Error::InvalidArgument(_))
    ));
    // sync with WAL disabled is contradictory.
    let contradictory = WriteOptions {
        sync: true,
        disable_wal: true,
        ..WriteOptions::default()
    };
    assert!(matches!(
        db.put(&contradictory, b"a", b"b"),
        Err(Error::InvalidArgument(_))
    ));
    // A merge without a merge operator is refused at write time (RocksDB:
    // NotSupported), also inside a batch, which then writes nothing.
    assert!(matches!(
        db.merge(&wo, b"a", b"b"),
        Err(Error::NotSupported(_))
    ));
    let mut b = WriteBatch::new();
    b.put(b"p", b"q");
    b.merge(b"a", b"b");
    assert!(matches!(db.write(&wo, b), Err(Error::NotSupported(_))));
    assert_eq!(db.get(&ReadOptions::default(), b"p").unwrap(), None);
    // An empty range is fine (and deletes nothing).
    db.delete_range(&wo, b"m", b"m").unwrap();
    // Bad options are refused at open.
    let dir2 = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.cf.write_buffer_size = 0;
    assert!(matches!(
        DB::open(o, dir2.path()),
        Err(Error::InvalidArgument(_))
    ));
    let mut o = opts();
    o.cf.block_restart_interval = 0;
    assert!(matches!(
        DB::open(o, dir2.path()),
        Err(Error::InvalidArgument(_))
    ));
    let cfo = ColumnFamilyOptions {
        bloom_bits_per_key: Some(f64::NAN),
        ..ColumnFamilyOptions::default()
    };
    assert!(matches!(
        db.create_column_family("bad", cfo),
        Err(Error::InvalidArgument(_))
    ));
    assert!(db.cf_handle("bad").is_none());
}

#[test]
fn prefix_seek_matches_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.cf.prefix_extractor = Some(Arc::new(FixedPrefix(3)));
    o.cf.write_buffer_size = 4096;
    let db = DB::open(o, dir.path()).unwrap();
    let wo = WriteOptions::default();
    let mut model = BTreeMap::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for round in 0..6 {
        for _ in 0..300 {
            // Prefixes "p00".."p19"; some keys shorter than a prefix.
            let k = if rnd(20) == 0 {
                format!("p{}", rnd(10))
            } else {
                format!("p{:02}-{:03}", rnd(20), rnd(200))
            };
            if rnd(5) == 0 {
                db.delete(&wo, k.as_bytes()).unwrap();
                model.remove(&k);
            } else {
                db.put(&wo, k.as_bytes(), format!("v{round}").as_bytes())
                    .unwrap();
                model.insert(k, format!("v{round}"));
            }
        }
        if round % 2 == 0 {
            db.flush().unwrap();
        }
    }
    let ro = ReadOptions {
        prefix_same_as_start: true,
        ..ReadOptions::default()
    };
    let mut it = db.iter(&ro).unwrap();
    for p in 0..25 {
        let prefix = format!("p{p:02}");
        for target in [
            prefix.clone(),
            format!("{prefix}-100"),
            format!("{prefix}-~"),
        ] {
            let want: Vec<_> = model
                .range(target.clone()..)
                .take_while(|(k, _)| k.starts_with(&prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            it.seek(target.as_bytes());
            let mut got = Vec::new();
            while it.valid() {
                got.push((
                    String::from_utf8(it.key().to_vec()).unwrap(),
                    String::from_utf8(it.value().to_vec()).unwrap(),
                ));
                it.next();
            }
            it.status().unwrap();
            assert_eq!(got, want, "seek {target}");

            let want: Vec<_> = model
                .range(..=target.clone())
                .rev()
                .take_while(|(k, _)| k.starts_with(&prefix))
                .map(|(k, _)| k.clone())
                .collect();
            it.seek_for_prev(target.as_bytes());
            let mut got = Vec::new();
            while it.valid() {
                got.push(String::from_utf8(it.key().to_vec()).unwrap());
                it.prev();
            }
            assert_eq!(got, want, "seek_for_prev {target}");
        }
    }
    // Without prefix_same_as_start a seek crosses prefixes (total order).
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek(b"p05-~");
    let want = model
        .range("p05-~".to_string()..)
        .next()
        .map(|(k, _)| k.clone());
    assert_eq!(
        it.valid()
            .then(|| String::from_utf8(it.key().to_vec()).unwrap()),
        want
    );
}
