//! PlainTable column families through the public API, and both ways with
//! RocksDB 7.8.3 (`db_bench --use_plain_table` writes, Strata reads;
//! Strata writes, `ldb` reads).

mod common;

use common::rocksdb::{hex, run_db_bench as db_bench};

use std::collections::BTreeMap;
use std::sync::Arc;

use strata::FixedPrefix;
use strata::{
    DB, EncodingType, Options, PlainTableOptions, ReadOptions, TableFactory, WriteOptions,
};

fn plain_options(popts: PlainTableOptions, prefix: Option<usize>) -> Options {
    let mut o = Options {
        create_if_missing: true,
        ..Options::default()
    };
    o.cf.table_factory = TableFactory::Plain(popts);
    o.cf.prefix_extractor = prefix.map(|n| Arc::new(FixedPrefix(n)) as _);
    o.cf.write_buffer_size = 64 << 10;
    o.cf.level0_file_num_compaction_trigger = 2;
    o.cf.target_file_size_base = 256 << 10;
    o
}

fn key(i: u32) -> Vec<u8> {
    // 16-byte keys, 8-byte prefixes holding 4 keys each.
    format!("{:08}{:08}", i / 4, i % 4 * 7).into_bytes()
}

fn scan(db: &DB, ro: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(ro).unwrap();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn table_magics(dir: &std::path::Path) -> Vec<u64> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sst") {
            let b = std::fs::read(&p).unwrap();
            out.push(u64::from_le_bytes(b[b.len() - 8..].try_into().unwrap()));
        }
    }
    out
}

#[test]
fn plain_table_column_family_serves_every_read() {
    for (popts, prefix) in [
        (PlainTableOptions::default(), Some(8)),
        (
            PlainTableOptions {
                user_key_len: 16,
                encoding_type: EncodingType::Prefix,
                store_index_in_file: true,
                ..Default::default()
            },
            Some(8),
        ),
        (
            PlainTableOptions {
                hash_table_ratio: 0.0,
                ..Default::default()
            },
            None,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = plain_options(popts.clone(), prefix);
        // Tables read in place through memory maps for one configuration.
        opts.allow_mmap_reads = popts.store_index_in_file;
        let db = DB::open(opts.clone(), dir.path()).unwrap();
        let wo = WriteOptions::default();
        let mut model = BTreeMap::new();
        for round in 0..3u32 {
            for i in 0..4000u32 {
                let i = (i * 7919 + round * 13) % 4000;
                let v = format!("value-{round}-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes();
                db.put(&wo, &key(i), &v).unwrap();
                model.insert(key(i), v);
            }
            for i in (0..4000u32).step_by(17 + round as usize) {
                db.delete(&wo, &key(i)).unwrap();
                model.remove(&key(i));
            }
            db.flush().unwrap();
        }
        db.compact_range(None, None).unwrap();
        let magics = table_magics(dir.path());
        assert!(!magics.is_empty());
        assert!(
            magics
                .iter()
                .all(|&m| m == strata::tools::table::footer::LEGACY_PLAIN_TABLE_MAGIC),
            "every table is a PlainTable: {magics:x?}"
        );
        let check = |db: &DB| {
            let ro = ReadOptions::default();
            let want: Vec<_> = model.clone().into_iter().collect();
            assert_eq!(scan(db, &ro), want);
            // Backwards, which RocksDB's PlainTable cannot do.
            let mut it = db.iter(&ro).unwrap();
            it.seek_to_last();
            let mut back = Vec::new();
            while it.valid() {
                back.push(it.key().to_vec());
                it.prev();
            }
            it.status().unwrap();
            back.reverse();
            assert_eq!(
                back,
                want.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>()
            );
            for i in (0..4100u32).step_by(3) {
                assert_eq!(
                    db.get(&ro, &key(i)).unwrap(),
                    model.get(&key(i)).cloned(),
                    "get {i}"
                );
            }
            // Prefix-confined iteration.
            if prefix.is_some() {
                let pro = ReadOptions {
                    prefix_same_as_start: true,
                    ..ReadOptions::default()
                };
                for p in (0..1000u32).step_by(37) {
                    let start = key(p * 4);
                    let mut it = db.iter(&pro).unwrap();
                    it.seek(&start[..8]);
                    let mut got = Vec::new();
                    while it.valid() {
                        got.push(it.key().to_vec());
                        it.next();
                    }
                    let want: Vec<_> = model
                        .keys()
                        .filter(|k| k[..8] == start[..8])
                        .cloned()
                        .collect();
                    assert_eq!(got, want, "prefix {p}");
                }
            }
        };
        check(&db);
        // RocksDB's limits, with RocksDB's message.
        let e = db.delete_range(&wo, &key(1), &key(9)).unwrap_err();
        assert!(matches!(e, strata::Error::NotSupported(_)), "{e}");
        assert!(
            e.to_string()
                .contains("DeleteRange not supported for table type PlainTable"),
            "{e}"
        );
        // Keys of other lengths than user_key_len are taken, as RocksDB
        // takes them: keys_of_other_lengths_make_variable_length_tables_...
        let mem = db.property("rocksdb.estimate-table-readers-mem").unwrap();
        assert!(mem.parse::<u64>().unwrap() > 0, "{mem}");
        drop(db);
        let db = DB::open(opts, dir.path()).unwrap();
        check(&db);
        // A database opened with block-based options still reads them.
        drop(db);
        let mut bb = Options::default();
        bb.cf.prefix_extractor = None;
        let db = DB::open(bb, dir.path()).unwrap();
        assert_eq!(
            scan(&db, &ReadOptions::default()),
            model.clone().into_iter().collect::<Vec<_>>()
        );
    }
}

/// `ldb` lines (`0xKEY : 0xVALUE`) of a scan with `--hex`.
fn ldb_scan(dir: &std::path::Path) -> Option<Vec<String>> {
    Some(
        common::rocksdb::ldb_scan(dir, true)?
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn rocksdb_ldb_reads_strata_plain_tables() {
    for (popts, prefix) in [
        (PlainTableOptions::default(), Some(8)),
        (
            PlainTableOptions {
                encoding_type: EncodingType::Prefix,
                store_index_in_file: true,
                index_sparseness: 2,
                ..Default::default()
            },
            Some(8),
        ),
        (
            PlainTableOptions {
                user_key_len: 16,
                hash_table_ratio: 0.0,
                ..Default::default()
            },
            None,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = DB::open(plain_options(popts, prefix), dir.path()).unwrap();
        let mut model = BTreeMap::new();
        // Two overlapping flushes, so the compaction rewrites (and zeroes
        // sequence numbers, PlainTable's seq-0 form) instead of moving.
        for round in 0..2u32 {
            for i in (round..3000u32).step_by(1 + round as usize) {
                let v = format!("v{round}-{i}").into_bytes();
                db.put(&WriteOptions::default(), &key(i), &v).unwrap();
                model.insert(key(i), v);
            }
            db.flush().unwrap();
        }
        db.compact_range(None, None).unwrap();
        let want: Vec<String> = model
            .iter()
            .map(|(k, v)| format!("0x{} : 0x{}", hex(k), hex(v)))
            .collect();
        drop(db);
        assert!(
            table_magics(dir.path())
                .iter()
                .all(|&m| m == strata::tools::table::footer::LEGACY_PLAIN_TABLE_MAGIC)
        );
        let Some(got) = ldb_scan(dir.path()) else {
            return;
        };
        assert_eq!(got, want);
        // A point lookup through RocksDB's hash index.
        let mut c = common::rocksdb::ldb().unwrap();
        let out = c
            .arg(format!("--db={}", dir.path().display()))
            .args(["--hex", "get"])
            .arg(format!("0x{}", hex(&key(1234))))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("0x{}", hex(&model[&key(1234)]))
        );
    }
}

#[test]
fn strata_reads_rocksdb_plain_tables() {
    for extra in [
        &["--prefix_size=8", "--keys_per_prefix=4"][..],
        &[
            "--prefix_size=8",
            "--keys_per_prefix=4",
            "--bloom_locality=1",
        ][..],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let args: Vec<&str> = [
            "--benchmarks=fillrandom,compact",
            "--num=5000",
            "--use_plain_table=1",
            "--compression_type=none",
            "--mmap_read=1",
            "--allow_concurrent_memtable_write=false",
            "--write_buffer_size=131072",
        ]
        .iter()
        .chain(extra)
        .copied()
        .collect();
        if !db_bench(dir.path(), &args) {
            return;
        }
        assert!(
            table_magics(dir.path())
                .contains(&strata::tools::table::footer::LEGACY_PLAIN_TABLE_MAGIC),
            "db_bench wrote PlainTable files"
        );
        let want = ldb_scan(dir.path()).unwrap();
        // Opened as RocksDB's OPTIONS file says (PlainTable, prefix 8)...
        let file = strata::db::options_parser::load_latest(dir.path())
            .unwrap()
            .expect("an OPTIONS file");
        let mut o = Options::default();
        file.apply_db(&mut o).unwrap();
        file.apply_cf("default", &mut o.cf).unwrap();
        assert!(matches!(o.cf.table_factory, TableFactory::Plain(_)));
        assert!(o.cf.prefix_extractor.is_some());
        // ...and with default options: both read everything.
        for opts in [o, Options::default()] {
            let db = DB::open(opts, dir.path()).unwrap();
            let got: Vec<String> = scan(&db, &ReadOptions::default())
                .iter()
                .map(|(k, v)| format!("0x{} : 0x{}", hex(k), hex(v)))
                .collect();
            assert_eq!(got, want);
            for line in want.iter().step_by(7) {
                let k = line.split(" : ").next().unwrap().trim_start_matches("0x");
                let k: Vec<u8> = (0..k.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&k[i..i + 2], 16).unwrap())
                    .collect();
                assert!(db.get(&ReadOptions::default(), &k).unwrap().is_some());
            }
        }
    }
}

/// `strata sst_dump`-style checks live in the CLI's tests; here the
/// library's view of a RocksDB PlainTable file.
#[test]
fn rocksdb_plain_table_properties_read() {
    let dir = tempfile::tempdir().unwrap();
    if !db_bench(
        dir.path(),
        &[
            "--benchmarks=fillseq,compact",
            "--num=2000",
            "--use_plain_table=1",
            "--prefix_size=8",
        ],
    ) {
        return;
    }
    let sst = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .unwrap();
    let fs = strata::fs::posix::PosixFileSystem;
    let props = {
        use strata::fs::FileSystem;
        let f = fs.new_random_access_file(&sst).unwrap();
        let n = f.size().unwrap();
        strata::tools::table::table_reader::read_table_properties(&*f, &sst.to_string_lossy(), n)
            .unwrap()
    };
    assert_eq!(props.num_entries, 2000);
    assert_eq!(props.fixed_key_len, 16);
    assert_eq!(props.prefix_extractor_name, b"rocksdb.FixedPrefix.8");
}

#[test]
fn block_based_tables_read_through_memory_maps() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options {
        create_if_missing: true,
        allow_mmap_reads: true,
        ..Options::default()
    };
    o.cf.write_buffer_size = 64 << 10;
    let db = DB::open(o.clone(), dir.path()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..5000u32 {
        let v = format!("{i}-{}", "y".repeat((i % 200) as usize)).into_bytes();
        db.put(&WriteOptions::default(), &key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(!table_magics(dir.path()).is_empty());
    drop(db);
    let db = DB::open(o, dir.path()).unwrap();
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        model.into_iter().collect::<Vec<_>>()
    );
    assert!(
        db.get(&ReadOptions::default(), &key(4321))
            .unwrap()
            .is_some()
    );
}

/// Valid RocksDB files in formats Strata does not read are `NotSupported`
/// naming the format, never `Corruption`: a BlobDB database (refused at
/// open). CuckooTable files are read (`tests/cuckoo_table.rs`).
#[test]
fn unsupported_rocksdb_formats_are_named() {
    let dir = tempfile::tempdir().unwrap();
    if !db_bench(
        dir.path(),
        &[
            "--benchmarks=fillrandom",
            "--num=2000",
            "--enable_blob_files=1",
            "--min_blob_size=0",
            "--write_buffer_size=65536",
        ],
    ) {
        return;
    }
    let e = DB::open(Options::default(), dir.path()).unwrap_err();
    assert!(matches!(e, strata::Error::NotSupported(_)), "{e}");
    assert!(e.to_string().contains("BlobDB"), "{e}");
}

/// `fixed_key_len` of every table in `dir`, sorted.
fn fixed_key_lens(dir: &std::path::Path) -> Vec<u64> {
    use strata::fs::FileSystem;
    let fs = strata::fs::posix::PosixFileSystem;
    let mut out: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .map(|p| {
            let f = fs.new_random_access_file(&p).unwrap();
            let n = f.size().unwrap();
            strata::tools::table::table_reader::read_table_properties(&*f, &p.to_string_lossy(), n)
                .unwrap()
                .fixed_key_len
        })
        .collect();
    out.sort();
    out
}

#[test]
fn keys_of_other_lengths_make_variable_length_tables_and_nothing_is_lost() {
    // RocksDB takes keys of any length into a column family whose
    // PlainTable has a fixed user_key_len (RocksDB's own c_test.c does),
    // then writes a fixed-length table that misreads them. Strata takes
    // them too and writes that memtable's table with variable lengths.
    let dir = tempfile::tempdir().unwrap();
    let popts = PlainTableOptions {
        user_key_len: 16,
        ..Default::default()
    };
    let mut o = plain_options(popts, Some(8));
    o.cf.disable_auto_compactions = true;
    let w = WriteOptions::default();
    let mut model = BTreeMap::new();
    {
        let db = DB::open(o.clone(), dir.path()).unwrap();
        for i in 0..200 {
            model.insert(key(i), b"fits".to_vec());
        }
        for (k, v) in &model {
            db.put(&w, k, v).unwrap();
        }
        db.flush().unwrap();
        // Only 16-byte keys: a fixed-length table, as before.
        assert_eq!(fixed_key_lens(dir.path()), vec![16]);
        // Inside the range of the first table's keys, so that the
        // compaction below merges the two tables.
        for (k, v) in [(&b"00000010"[..], &b"8"[..]), (b"0000002000000000+", b"17")] {
            db.put(&w, k, v).unwrap();
            model.insert(k.to_vec(), v.to_vec());
        }
        // Closed unflushed: the keys come back from the WAL.
    }
    let db = DB::open(o.clone(), dir.path()).unwrap();
    db.flush().unwrap();
    assert_eq!(fixed_key_lens(dir.path()), vec![0, 16]);
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    assert!(log.contains("variable-length PlainTable"), "{log}");
    let ro = ReadOptions::default();
    assert_eq!(
        scan(&db, &ro),
        model.clone().into_iter().collect::<Vec<_>>()
    );
    for (k, v) in &model {
        assert_eq!(db.get(&ro, k).unwrap().as_ref(), Some(v));
    }
    // A compaction of both keeps variable lengths.
    db.compact_range(None, None).unwrap();
    assert_eq!(fixed_key_lens(dir.path()), vec![0]);
    assert_eq!(scan(&db, &ro), model.into_iter().collect::<Vec<_>>());
}
