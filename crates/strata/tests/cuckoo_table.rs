//! CuckooTable column families through the public API, and both ways with
//! RocksDB 7.8.3 (`db_bench --use_cuckoo_table` writes, Strata reads;
//! Strata writes, `ldb` reads), down to identical hash-table bytes.

mod common;

use common::rocksdb::{hex, run_db_bench as db_bench};

use std::collections::BTreeMap;

use strata::tools::table::footer::{BLOCK_BASED_TABLE_MAGIC, CUCKOO_TABLE_MAGIC};
use strata::tools::table::{Table, TableBuilder, TableOptions};
use strata::{CuckooTableOptions, DB, Options, ReadOptions, TableFactory, WriteOptions};

fn cuckoo_options(c: CuckooTableOptions) -> Options {
    let mut o = Options {
        create_if_missing: true,
        ..Options::default()
    };
    o.cf.table_factory = TableFactory::Cuckoo(c);
    o.cf.write_buffer_size = 64 << 10;
    o.cf.level0_file_num_compaction_trigger = 2;
    o
}

/// 16-byte keys.
fn key(i: u32) -> Vec<u8> {
    format!("key{i:013}").into_bytes()
}

/// 20-byte values.
fn value(round: u32, i: u32) -> Vec<u8> {
    format!("v{round:03}-{i:015}").into_bytes()
}

fn scan(db: &DB) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn sst_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    v.sort();
    v
}

fn table_magics(dir: &std::path::Path) -> Vec<u64> {
    sst_files(dir)
        .iter()
        .map(|p| {
            let b = std::fs::read(p).unwrap();
            u64::from_le_bytes(b[b.len() - 8..].try_into().unwrap())
        })
        .collect()
}

fn log_text(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("LOG")).unwrap_or_default()
}

fn open_table(path: &std::path::Path) -> Table {
    let fs = strata::fs::default_fs();
    let file = fs.new_random_access_file(path).unwrap();
    let size = std::fs::metadata(path).unwrap().len();
    Table::open(
        file,
        &path.to_string_lossy(),
        size,
        &TableOptions::default(),
    )
    .unwrap()
}

/// Puts, deletes, flushes, compactions and a reopen: every read agrees
/// with a model and every table is a CuckooTable.
#[test]
fn cuckoo_column_family_serves_every_read() {
    for c in [
        CuckooTableOptions::default(),
        CuckooTableOptions {
            use_module_hash: false,
            cuckoo_block_size: 1,
            hash_table_ratio: 1.0,
            ..Default::default()
        },
        CuckooTableOptions {
            identity_as_first_hash: true,
            ..Default::default()
        },
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut model = BTreeMap::new();
        {
            let db = DB::open(cuckoo_options(c.clone()), dir.path()).unwrap();
            for round in 0..3u32 {
                for i in (round..2000).step_by(1 + round as usize) {
                    if i % 7 == 3 && round > 0 {
                        db.delete(&WriteOptions::default(), &key(i)).unwrap();
                        model.remove(&key(i));
                    } else {
                        db.put(&WriteOptions::default(), &key(i), &value(round, i))
                            .unwrap();
                        model.insert(key(i), value(round, i));
                    }
                }
                db.flush().unwrap();
                let want: Vec<_> = model.clone().into_iter().collect();
                assert_eq!(scan(&db), want, "after flush {round}");
            }
            for i in (0..2100).step_by(13) {
                assert_eq!(
                    db.get(&ReadOptions::default(), &key(i)).unwrap(),
                    model.get(&key(i)).cloned()
                );
            }
            db.compact_range(None, None).unwrap();
            assert_eq!(scan(&db), model.clone().into_iter().collect::<Vec<_>>());
        }
        assert!(
            table_magics(dir.path())
                .iter()
                .all(|&m| m == CUCKOO_TABLE_MAGIC),
            "{c:?}: {:x?}\n{}",
            table_magics(dir.path()),
            log_text(dir.path())
        );
        assert!(!log_text(dir.path()).contains("not CuckooTable"));
        // The compacted (sequence 0) file stores user keys only.
        let last = sst_files(dir.path());
        let Table::Cuckoo(t) = open_table(last.last().unwrap()) else {
            panic!("not a cuckoo table")
        };
        assert!(t.is_last_level());
        let db = DB::open(cuckoo_options(c), dir.path()).unwrap();
        assert_eq!(scan(&db), model.clone().into_iter().collect::<Vec<_>>());
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        it.seek_to_last();
        assert_eq!(it.key(), model.keys().next_back().unwrap().as_slice());
        it.seek(&key(1000));
        assert_eq!(
            it.key(),
            model.range(key(1000)..).next().unwrap().0.as_slice()
        );
        it.prev();
        assert_eq!(
            it.key(),
            model.range(..key(1000)).next_back().unwrap().0.as_slice()
        );
    }
}

/// Keys of different lengths and values of different sizes (as RocksDB's
/// c_test.c writes): RocksDB 7.8.3 drops such entries from a cuckoo flush
/// and reports success; Strata writes the file block-based, says why in
/// the LOG, and loses nothing.
#[test]
fn entries_of_mixed_sizes_are_flushed_block_based_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    // Two flushed tables side by side: a compaction (the second flush
    // reaches the trigger of 2) would merge them into one block-based
    // table, and while it runs its output file is still empty.
    let mut o = cuckoo_options(Default::default());
    o.cf.disable_auto_compactions = true;
    let db = DB::open(o.clone(), dir.path()).unwrap();
    let w = WriteOptions::default();
    db.put(&w, b"foo", b"hello").unwrap();
    db.put(&w, b"box", b"c").unwrap();
    db.put(&w, b"bar", b"b").unwrap();
    db.put(&w, b"quux", b"a longer value").unwrap();
    db.delete(&w, b"bar").unwrap();
    db.flush().unwrap();
    assert_eq!(
        scan(&db),
        vec![
            (b"box".to_vec(), b"c".to_vec()),
            (b"foo".to_vec(), b"hello".to_vec()),
            (b"quux".to_vec(), b"a longer value".to_vec()),
        ]
    );
    assert_eq!(
        db.get(&ReadOptions::default(), b"quux").unwrap().as_deref(),
        Some(&b"a longer value"[..])
    );
    assert_eq!(table_magics(dir.path()), vec![BLOCK_BASED_TABLE_MAGIC]);
    let log = log_text(dir.path());
    let lines: Vec<_> = log
        .lines()
        .filter(|l| l.contains("is block-based, not CuckooTable"))
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(lines[0].contains("different sizes"), "{}", lines[0]);
    // Uniform data later in the same column family is cuckoo again; both
    // formats read together.
    for i in 0..100 {
        db.put(&w, &key(i), &value(0, i)).unwrap();
    }
    db.flush().unwrap();
    let mut magics = table_magics(dir.path());
    magics.sort();
    assert!(magics.contains(&CUCKOO_TABLE_MAGIC), "{magics:x?}");
    assert_eq!(scan(&db).len(), 103);
    drop(db);
    let db = DB::open(o, dir.path()).unwrap();
    assert_eq!(scan(&db).len(), 103);
}

/// The OPTIONS file names the CuckooTable factory with RocksDB's option
/// names, and reads back.
#[test]
fn options_file_round_trips_cuckoo_options() {
    let dir = tempfile::tempdir().unwrap();
    let c = CuckooTableOptions {
        hash_table_ratio: 0.75,
        max_search_depth: 7,
        cuckoo_block_size: 3,
        identity_as_first_hash: true,
        use_module_hash: false,
    };
    drop(DB::open(cuckoo_options(c.clone()), dir.path()).unwrap());
    let file = strata::db::options_parser::load_latest(dir.path())
        .unwrap()
        .expect("an OPTIONS file");
    let mut o = Options::default();
    file.apply_cf("default", &mut o.cf).unwrap();
    assert_eq!(o.cf.table_factory, TableFactory::Cuckoo(c));
    assert!(file.unknown_options().is_empty());
    let text = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("OPTIONS-")
        })
        .map(|p| std::fs::read_to_string(p).unwrap())
        .unwrap();
    assert!(
        text.contains("[TableOptions/CuckooTable \"default\"]"),
        "{text}"
    );
}

fn unhex(s: &str) -> Vec<u8> {
    let s = s.trim().trim_start_matches("0x");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// db_bench's cuckoo database: fixed key and value sizes, reads mapped
/// (RocksDB's cuckoo reader requires mmap).
fn rocksdb_cuckoo_db(dir: &std::path::Path, compact: bool, extra: &[&str]) -> bool {
    let mut args = vec![
        if compact {
            "--benchmarks=fillrandom,compact"
        } else {
            "--benchmarks=fillrandom"
        },
        "--num=4000",
        "--use_cuckoo_table=1",
        "--mmap_read=1",
        "--compression_type=none",
        "--key_size=16",
        "--value_size=24",
        "--write_buffer_size=65536",
        "--disable_auto_compactions=1",
    ];
    args.extend_from_slice(extra);
    db_bench(dir, &args)
}

/// Strata reads RocksDB's cuckoo tables (internal-key level-0 files and
/// a compacted user-key file) key by key, with its own options and with
/// the ones RocksDB's OPTIONS file gives.
#[test]
fn strata_reads_rocksdb_cuckoo_tables() {
    for (compact, extra) in [
        (false, &[][..]),
        (true, &[][..]),
        (true, &["--cuckoo_hash_ratio=0.6"][..]),
        (false, &["--key_size=8", "--identity_as_first_hash=1"][..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        if !rocksdb_cuckoo_db(dir.path(), compact, extra) {
            return;
        }
        let magics = table_magics(dir.path());
        assert!(
            !magics.is_empty() && magics.iter().all(|&m| m == CUCKOO_TABLE_MAGIC),
            "{magics:x?}"
        );
        let want: Vec<String> = common::rocksdb::ldb_scan(dir.path(), true)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert!(want.len() > 1000);
        let file = strata::db::options_parser::load_latest(dir.path())
            .unwrap()
            .expect("an OPTIONS file");
        let mut o = Options::default();
        file.apply_db(&mut o).unwrap();
        file.apply_cf("default", &mut o.cf).unwrap();
        assert!(matches!(o.cf.table_factory, TableFactory::Cuckoo(_)));
        for opts in [o, Options::default()] {
            let db = DB::open(opts, dir.path()).unwrap();
            let got: Vec<String> = scan(&db)
                .iter()
                .map(|(k, v)| format!("0x{} : 0x{}", hex(k), hex(v)))
                .collect();
            assert_eq!(got, want);
            for line in &want {
                let (k, v) = line.split_once(" : ").unwrap();
                assert_eq!(
                    db.get(&ReadOptions::default(), &unhex(k)).unwrap(),
                    Some(unhex(v))
                );
            }
            let mut missing = unhex(want[0].split(" : ").next().unwrap());
            missing[0] ^= 0x80;
            assert_eq!(db.get(&ReadOptions::default(), &missing).unwrap(), None);
        }
        for path in sst_files(dir.path()) {
            open_table(&path).verify_checksums().unwrap();
        }
    }
}

/// Rebuilding each of RocksDB's cuckoo files from its entries with
/// Strata's builder gives the same hash table, byte for byte.
#[test]
fn strata_builds_the_hash_tables_rocksdb_builds() {
    use strata::tools::format::iterator::InternalIterator;
    let mut compared = 0;
    for (compact, extra, c) in [
        (false, &[][..], CuckooTableOptions::default()),
        (true, &[][..], CuckooTableOptions::default()),
        (
            true,
            &["--cuckoo_hash_ratio=1.0"][..],
            CuckooTableOptions {
                hash_table_ratio: 1.0,
                ..Default::default()
            },
        ),
        (
            false,
            &["--key_size=8", "--identity_as_first_hash=1"][..],
            CuckooTableOptions {
                identity_as_first_hash: true,
                ..Default::default()
            },
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        if !rocksdb_cuckoo_db(dir.path(), compact, extra) {
            return;
        }
        for path in sst_files(dir.path()) {
            let t = open_table(&path);
            let Table::Cuckoo(ct) = &t else {
                panic!("{path:?} is not a cuckoo table")
            };
            let mut entries = Vec::new();
            let mut it = t.iter();
            it.seek_to_first();
            while it.valid() {
                entries.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
            }
            let out = strata::fs::buffer::BufferFile::new();
            let mut b = TableBuilder::new(
                TableOptions {
                    cuckoo: Some(c.clone()),
                    ..TableOptions::default()
                },
                Box::new(out.clone()),
            )
            .unwrap();
            for (k, v) in &entries {
                b.add(k, v).unwrap();
            }
            let info = b.finish(false).unwrap();
            assert_eq!(info.block_based_fallback, None);
            let ours = out.contents();
            let theirs_props = t.properties();
            assert_eq!(
                &ours[..info.properties.data_size as usize],
                ct.data(),
                "{path:?}: hash tables differ ({} entries, {} hash functions)",
                entries.len(),
                ct.num_hash_func()
            );
            for name in [
                "rocksdb.cuckoo.hash.num",
                "rocksdb.cuckoo.hash.size",
                "rocksdb.cuckoo.bucket.empty.key",
                "rocksdb.cuckoo.value.length",
                "rocksdb.cuckoo.file.islastlevel",
                "rocksdb.cuckoo.hash.userkeylength",
            ] {
                assert_eq!(
                    info.properties.user_property(name),
                    theirs_props.user_property(name),
                    "{name}"
                );
            }
            compared += 1;
        }
    }
    assert!(compared >= 4);
}

/// RocksDB's `ldb` reads the cuckoo tables Strata writes (through the
/// OPTIONS file Strata wrote, which asks for mapped reads as RocksDB's
/// cuckoo reader requires): scans, and point lookups through RocksDB's
/// hash probe.
#[test]
fn rocksdb_ldb_reads_strata_cuckoo_tables() {
    for (c, compact) in [
        (CuckooTableOptions::default(), false),
        (CuckooTableOptions::default(), true),
        (
            CuckooTableOptions {
                use_module_hash: false,
                cuckoo_block_size: 2,
                ..Default::default()
            },
            true,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = cuckoo_options(c);
        o.allow_mmap_reads = true;
        let db = DB::open(o, dir.path()).unwrap();
        let mut model = BTreeMap::new();
        for round in 0..2u32 {
            for i in (round..3000u32).step_by(1 + round as usize) {
                db.put(&WriteOptions::default(), &key(i), &value(round, i))
                    .unwrap();
                model.insert(key(i), value(round, i));
            }
            db.flush().unwrap();
        }
        if compact {
            db.compact_range(None, None).unwrap();
        }
        drop(db);
        assert!(
            table_magics(dir.path())
                .iter()
                .all(|&m| m == CUCKOO_TABLE_MAGIC)
        );
        let Some(got) = common::rocksdb::ldb_scan(dir.path(), true) else {
            return;
        };
        let want: Vec<String> = model
            .iter()
            .map(|(k, v)| format!("0x{} : 0x{}", hex(k), hex(v)))
            .collect();
        assert_eq!(got.lines().collect::<Vec<_>>(), want);
        for i in [0u32, 1, 1234, 2999] {
            let out = common::rocksdb::ldb()
                .unwrap()
                .arg(format!("--db={}", dir.path().display()))
                .args(["--hex", "get"])
                .arg(format!("0x{}", hex(&key(i))))
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                format!("0x{}", hex(&model[&key(i)])),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
