//! Table interop with RocksDB 7.8.3, both directions:
//! * tables from `strata sst_write` (format_versions 2 to 5, flat or
//!   partitioned index and filters) pass RocksDB's
//!   `sst_dump --command=verify`, its scan prints exactly our entries, and
//!   RocksDB ingests them and finds every key through our bloom filter
//!   (`ldb --bloom_bits=10 get`), legacy or FastLocalBloom;
//! * `strata sst_dump` prints the same entries as RocksDB's `sst_dump` for
//!   tables RocksDB wrote (ldb load + compact; db_bench fillrandom with every
//!   compression and checksum type).

mod common;

use std::collections::BTreeMap;

use common::*;

fn random_entries(seed: u64, n: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut rng = Rng(seed);
    let mut m = BTreeMap::new();
    while m.len() < n {
        let mut k = format!("key{:08}", rng.next() % 1_000_000).into_bytes();
        if rng.next() % 4 == 0 {
            k.extend(common::random_bytes(&mut rng, 6)); // binary tails
        }
        let v = if rng.next() % 3 == 0 {
            common::random_bytes(&mut rng, 300)
        } else {
            // Compressible values, like db_bench's.
            vec![b'a' + (rng.next() % 26) as u8; (rng.next() % 200) as usize]
        };
        m.insert(k, v);
    }
    m
}

fn dump_input(m: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<u8> {
    let mut s = String::new();
    // Reverse order and a duplicate: sst_write sorts and keeps the last.
    for (k, v) in m.iter().rev() {
        s.push_str(&format!("0x{} ==> 0x{}\n", hex(k), hex(b"stale")));
        s.push_str(&format!("0x{} ==> 0x{}\n", hex(k), hex(v)));
    }
    s.into_bytes()
}

fn expected_lines(m: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<String> {
    m.iter()
        .map(|(k, v)| format!("'{}' seq:0, type:1 => {}", hex(k), hex(v)))
        .collect()
}

/// RocksDB's `sst_dump --command=verify` passes `sst`.
fn rocksdb_verifies(sst: &std::path::Path, what: &str) {
    let mut verify = rocksdb_tool("sst_dump").unwrap();
    verify
        .arg(format!("--file={}", sst.display()))
        .arg("--command=verify");
    let out = run(verify, b"");
    assert!(out.contains("The file is ok"), "{what}: {out}");
}

/// RocksDB's `sst_dump` verifies `sst` and its scan prints `want`.
fn rocksdb_verifies_and_scans(sst: &std::path::Path, want: &[String], what: &str) {
    rocksdb_verifies(sst, what);
    let mut scan = rocksdb_tool("sst_dump").unwrap();
    scan.arg(format!("--file={}", sst.display()))
        .arg("--command=scan")
        .arg("--output_hex");
    assert_eq!(
        entry_lines(&run(scan, b"")),
        want,
        "RocksDB's scan of our table: {what}"
    );
}

/// RocksDB's `ldb` ingests `sst` into a new database at `db` and its gets
/// (with `get_flags`) find every `step`-th entry.
fn rocksdb_ingests_and_gets(
    sst: &std::path::Path,
    db: &std::path::Path,
    entries: &BTreeMap<Vec<u8>, Vec<u8>>,
    step: usize,
    get_flags: &[&str],
    what: &str,
) {
    let mut ingest = rocksdb_tool("ldb").unwrap();
    ingest
        .arg(format!("--db={}", db.display()))
        .arg("--create_if_missing")
        .arg("ingest_extern_sst")
        .arg(sst.display().to_string());
    run(ingest, b"");
    for (k, v) in entries.iter().step_by(step) {
        let mut get = rocksdb_tool("ldb").unwrap();
        get.arg(format!("--db={}", db.display()))
            .args(get_flags)
            .arg("--hex")
            .arg("get")
            .arg(format!("0x{}", hex(k)));
        assert_eq!(run(get, b"").trim(), format!("0x{}", hex(v)), "{what}");
    }
}

#[test]
fn rocksdb_reads_and_ingests_strata_tables() {
    let Some(_) = rocksdb_tool("sst_dump") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let entries = random_entries(42, 3000);
    let want = expected_lines(&entries);
    let codecs = ["none", "snappy", "lz4", "lz4hc", "zstd", "zlib", "bzip2"];
    for (i, codec) in codecs.iter().enumerate() {
        for bloom in [0, 10] {
            let sst = dir.path().join(format!("t-{codec}-{bloom}.sst"));
            let mut cmd = strata();
            cmd.arg("sst_write")
                .arg(format!("--file={}", sst.display()))
                .arg(format!("--compression_type={codec}"))
                .arg(format!("--bloom_bits={bloom}"))
                .arg(format!("--checksum_type={}", 1 + (i % 4)))
                // Every table form 7.8.3 reads: internal-key indexes and
                // legacy Bloom filters (2), user-key indexes (3), delta
                // handles (4), FastLocalBloom (5).
                .arg(format!("--format_version={}", [5, 2, 3, 4][i % 4]))
                // Partitioned index (and filters) on every other codec.
                .args(match i % 3 {
                    0 => &["--partition_index_and_filters", "--metadata_block_size=256"][..],
                    1 => &["--partition_index", "--metadata_block_size=256"][..],
                    _ => &[][..],
                })
                .arg("--block_size=1024")
                .arg("--hex");
            // Standard128 Ribbon filters on every other codec: RocksDB's
            // gets below go through them.
            if bloom > 0 && i % 2 == 0 {
                cmd.arg("--use_ribbon_filter");
            }
            run(cmd, &dump_input(&entries));
            rocksdb_verifies_and_scans(&sst, &want, codec);

            let mut ours = strata();
            ours.arg("sst_dump")
                .arg(format!("--file={}", sst.display()))
                .arg("--command=scan")
                .arg("--output_hex");
            assert_eq!(entry_lines(&run(ours, b"")), want);

            if bloom == 0 {
                continue;
            }
            // Ingest into a fresh RocksDB and look keys up through the filter.
            let db = dir.path().join(format!("db-{codec}"));
            rocksdb_ingests_and_gets(&sst, &db, &entries, 97, &["--bloom_bits=10"], codec);
            let mut scan = rocksdb_tool("ldb").unwrap();
            scan.arg(format!("--db={}", db.display()))
                .arg("--hex")
                .arg("scan");
            let listed: Vec<String> = run(scan, b"").lines().map(|l| l.to_string()).collect();
            let want_scan: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("0x{} : 0x{}", hex(k), hex(v)))
                .collect();
            assert_eq!(
                listed, want_scan,
                "ldb scan after ingesting our {codec} table"
            );
        }
    }
}

/// Tables Strata writes with each block-layout option set away from its
/// default (uncompressed index blocks, restart intervals in data and index
/// blocks, each index shortening mode, filters of prefixes only) pass
/// RocksDB 7.8.3's `sst_dump --command=verify`, its scan prints exactly our
/// entries, and RocksDB finds the keys after ingesting them. Each option
/// changes the file's bytes (so the flag did something).
#[test]
fn rocksdb_reads_strata_tables_with_every_block_layout_option() {
    let Some(_) = rocksdb_tool("sst_dump") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let entries = random_entries(7, 3000);
    let want = expected_lines(&entries);
    let base = [
        "--compression_type=snappy",
        "--bloom_bits=10",
        "--block_size=1024",
        "--hex",
    ];
    let variants: &[&[&str]] = &[
        &[],
        &["--enable_index_compression=0"],
        &["--block_restart_interval=1"],
        &["--block_restart_interval=4"],
        &["--index_block_restart_interval=8"],
        &[
            "--index_block_restart_interval=4",
            "--partition_index",
            "--metadata_block_size=256",
        ],
        &["--index_shortening_mode=0"],
        &["--index_shortening_mode=2"],
        &["--prefix_size=7", "--whole_key_filtering=0"],
        &[
            "--prefix_size=7",
            "--whole_key_filtering=0",
            "--partition_index_and_filters",
        ],
    ];
    let mut baseline: Option<Vec<u8>> = None;
    for (i, extra) in variants.iter().enumerate() {
        let what = format!("{extra:?}");
        let sst = dir.path().join(format!("layout-{i}.sst"));
        let mut cmd = strata();
        cmd.arg("sst_write")
            .arg(format!("--file={}", sst.display()))
            .args(base)
            .args(*extra);
        run(cmd, &dump_input(&entries));
        let bytes = std::fs::read(&sst).unwrap();
        match &baseline {
            None => baseline = Some(bytes),
            Some(b) => assert_ne!(&bytes, b, "{what} wrote the default table"),
        }

        rocksdb_verifies_and_scans(&sst, &want, &what);
        let db = dir.path().join(format!("db-layout-{i}"));
        rocksdb_ingests_and_gets(&sst, &db, &entries, 101, &[], &what);
    }
}

/// Tables Strata writes with compression dictionaries (raw samples,
/// ZSTD-trained, ZSTD-finalized; held to the end of the table or written
/// mid-table; flat and partitioned indexes) pass RocksDB's
/// `sst_dump --command=verify` and its scan prints exactly our entries:
/// RocksDB finds the `rocksdb.compression_dict` block and decompresses
/// every data block against it.
#[test]
fn rocksdb_reads_strata_tables_with_compression_dictionaries() {
    let Some(_) = rocksdb_tool("sst_dump") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let entries = random_entries(7, 4000);
    let want = expected_lines(&entries);
    let cases: [(&str, u32, bool, u64, bool); 8] = [
        ("zstd", 0, true, 0, false),
        ("zstd", 65536, true, 0, true),
        ("zstd", 65536, false, 50_000, false),
        ("zstd", 0, true, 50_000, true),
        ("lz4", 0, true, 0, true),
        ("lz4", 0, true, 50_000, false),
        ("zlib", 0, true, 0, false),
        ("snappy", 0, true, 0, true),
    ];
    for (i, (codec, train, trainer, buffer, partitioned)) in cases.into_iter().enumerate() {
        let what = format!(
            "{codec} train {train} trainer {trainer} buffer {buffer} partitioned {partitioned}"
        );
        let sst = dir.path().join(format!("dict-{i}.sst"));
        let mut cmd = strata();
        cmd.arg("sst_write")
            .arg(format!("--file={}", sst.display()))
            .arg(format!("--compression_type={codec}"))
            .arg("--compression_max_dict_bytes=8192")
            .arg(format!("--compression_zstd_max_train_bytes={train}"))
            .arg(format!("--compression_use_zstd_dict_trainer={trainer}"))
            .arg(format!("--compression_max_dict_buffer_bytes={buffer}"))
            .arg("--block_size=1024")
            .arg("--hex");
        if partitioned {
            cmd.args(["--partition_index_and_filters", "--metadata_block_size=256"]);
        }
        run(cmd, &dump_input(&entries));
        let mut props = strata();
        props
            .arg("sst_dump")
            .arg(format!("--file={}", sst.display()))
            .arg("--command=none")
            .arg("--show_properties");
        let shown = run(props, b"");
        assert!(shown.contains("max_dict_bytes=8192;"), "{what}: {shown}");

        rocksdb_verifies_and_scans(&sst, &want, &what);
    }
}

/// A database Strata writes with `compression_opts` (db_bench's flags:
/// dictionaries on every flush and compaction output) is read whole by
/// RocksDB's ldb, and every table passes RocksDB's sst_dump verify.
#[test]
fn rocksdb_reads_a_strata_database_with_compression_dictionaries() {
    let Some(_) = rocksdb_tool("ldb") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (codec, train) in [("zstd", 65536), ("lz4", 0)] {
        let db = dir.path().join(format!("db-{codec}"));
        let mut b = strata();
        b.arg("bench")
            .arg(format!("--db={}", db.display()))
            .arg("--benchmarks=fillrandom,compact")
            .arg("--num=30000")
            .arg("--write_buffer_size=262144")
            .arg("--target_file_size_base=262144")
            .arg(format!("--compression_type={codec}"))
            .arg("--compression_max_dict_bytes=16384")
            .arg(format!("--compression_zstd_max_train_bytes={train}"));
        run(b, b"");
        let mut scan = rocksdb_tool("ldb").unwrap();
        scan.arg(format!("--db={}", db.display())).arg("scan");
        let n = run(scan, b"").lines().count();
        // fillrandom draws keys with repeats: about 1 - 1/e of 30,000 differ.
        assert!(n > 15_000, "{codec}: ldb scanned {n} keys");
        let mut checked = 0;
        for e in std::fs::read_dir(&db).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "sst") {
                rocksdb_verifies(&p, &format!("{codec} {}", p.display()));
                checked += 1;
            }
        }
        assert!(checked > 1, "{codec}: {checked} tables");
        let opts = std::fs::read_dir(&db)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("OPTIONS-")
            })
            .unwrap();
        let text = std::fs::read_to_string(opts).unwrap();
        assert!(text.contains("max_dict_bytes=16384;"), "{codec}: {text}");
    }
}

/// The filter block of the only table in `db`.
fn only_filter_block(db: &std::path::Path) -> Vec<u8> {
    let (bytes, _, meta) = only_table(db);
    let m = meta
        .iter()
        .find(|m| m.0 == "fullfilter.rocksdb.BuiltinBloomFilter")
        .unwrap_or_else(|| panic!("{}: no full filter", db.display()));
    bytes[m.1 as usize..(m.1 + m.2) as usize].to_vec()
}

/// The only table in `db`: its bytes and its meta blocks' handles.
fn only_table(
    db: &std::path::Path,
) -> (
    Vec<u8>,
    strata::tools::table::table_properties::TableProperties,
    Vec<(String, u64, u64)>,
) {
    use strata::tools::table::{Table, TableOptions};
    let tables: Vec<_> = std::fs::read_dir(db)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    assert_eq!(tables.len(), 1, "{}: {tables:?}", db.display());
    let bytes = std::fs::read(&tables[0]).unwrap();
    let file = strata::fs::default_fs()
        .new_random_access_file(&tables[0])
        .unwrap();
    let t = Table::open(file, "t.sst", bytes.len() as u64, &TableOptions::default()).unwrap();
    let meta = t
        .meta_blocks()
        .iter()
        .map(|(k, h)| (k.clone(), h.offset, h.size))
        .collect();
    (bytes, t.properties().clone(), meta)
}

/// Data block hash indexes (`--use_data_block_hash_index`) and hash-search
/// indexes (`--use_hash_search --prefix_size=8`) are RocksDB's byte for
/// byte: the same db_bench keys and values compacted by RocksDB's db_bench
/// and by strata bench give identical data blocks (hash indexes included)
/// and identical `rocksdb.hashindex.*` blocks; index sizes (partitioned
/// too) are recorded as RocksDB records them.
#[test]
fn hash_indexes_match_rocksdbs_byte_for_byte() {
    let Some(_) = rocksdb_tool("db_bench") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cases: [&[&str]; 4] = [
        &["--use_data_block_hash_index=1", "--block_size=2048"],
        &[
            "--use_hash_search=1",
            "--prefix_size=8",
            "--keys_per_prefix=3",
        ],
        // And the partitioned index's size accounting.
        &["--partition_index_and_filters=1", "--bloom_bits=10"],
        // First-key indexes: the same index size (first keys included).
        &["--index_with_first_key=1"],
    ];
    for (i, extra) in cases.iter().enumerate() {
        let mut flags = vec![
            "--benchmarks=fillseq,compact".to_string(),
            "--num=8000".to_string(),
            "--compression_type=none".to_string(),
        ];
        flags.extend(extra.iter().map(|f| f.to_string()));
        let theirs = dir.path().join(format!("rocksdb-{i}"));
        let mut b = rocksdb_tool("db_bench").unwrap();
        b.args(&flags).arg(format!("--db={}", theirs.display()));
        run(b, b"");
        let ours = dir.path().join(format!("strata-{i}"));
        let mut b = strata();
        b.arg("bench")
            .args(&flags)
            .arg(format!("--db={}", ours.display()));
        run(b, b"");
        let (a, pa, ma) = only_table(&theirs);
        let (b, pb, mb) = only_table(&ours);
        let what = extra.join(" ");
        assert_eq!(pa.index_type(), pb.index_type(), "{what}");
        assert_eq!(pa.num_data_blocks, pb.num_data_blocks, "{what}");
        assert_eq!(pa.index_size, pb.index_size, "{what}");
        let n = pa.data_size as usize;
        assert_eq!(pb.data_size as usize, n, "{what}");
        assert!(a[..n] == b[..n], "{what}: the data blocks differ");
        let block = |bytes: &[u8], meta: &[(String, u64, u64)], name: &str| {
            meta.iter()
                .find(|m| m.0 == name)
                .map(|m| bytes[m.1 as usize..(m.1 + m.2) as usize].to_vec())
        };
        for name in ["rocksdb.hashindex.prefixes", "rocksdb.hashindex.metadata"] {
            let (x, y) = (block(&a, &ma, name), block(&b, &mb, name));
            assert_eq!(x.is_some(), i == 1, "{what}: {name}");
            assert!(x == y, "{what}: {name} differs");
        }
    }
}

/// Standard128 Ribbon filters (`--use_ribbon_filter`) are RocksDB's byte
/// for byte: the same keys compacted by RocksDB's db_bench and by strata
/// bench give identical filter blocks (size, hash seed, solution bits).
#[test]
fn ribbon_filters_match_rocksdbs_byte_for_byte() {
    let Some(_) = rocksdb_tool("db_bench") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for num in [700, 30_000] {
        let flags = [
            "--benchmarks=fillseq,compact".to_string(),
            format!("--num={num}"),
            "--bloom_bits=10".to_string(),
            "--use_ribbon_filter=1".to_string(),
            "--compression_type=none".to_string(),
        ];
        let theirs = dir.path().join(format!("rocksdb-{num}"));
        let mut b = rocksdb_tool("db_bench").unwrap();
        b.args(&flags).arg(format!("--db={}", theirs.display()));
        run(b, b"");
        let ours = dir.path().join(format!("strata-{num}"));
        let mut b = strata();
        b.arg("bench")
            .args(&flags)
            .arg(format!("--db={}", ours.display()));
        run(b, b"");
        let (a, b) = (only_filter_block(&theirs), only_filter_block(&ours));
        // -2 in the trailer: Standard128 Ribbon (700 keys: still Ribbon, as
        // Bloom would take more space).
        assert_eq!(
            a[a.len() - 5],
            0xfe,
            "{num}: RocksDB wrote no Ribbon filter"
        );
        assert_eq!(a.len(), b.len(), "{num} keys: filter sizes");
        assert!(a == b, "{num} keys: the filter blocks differ");
    }
}

fn compare_dumps(dir: &std::path::Path, what: &str) {
    let files = sst_files(dir);
    assert!(!files.is_empty(), "{what}: RocksDB wrote no table");
    for f in files {
        let mut theirs = rocksdb_tool("sst_dump").unwrap();
        theirs
            .arg(format!("--file={}", f.display()))
            .arg("--command=scan")
            .arg("--output_hex");
        let want = entry_lines(&run(theirs, b""));
        let mut ours = strata();
        ours.arg("sst_dump")
            .arg(format!("--file={}", f.display()))
            .arg("--command=scan")
            .arg("--output_hex")
            .arg("--verify_checksum");
        let got = entry_lines(&run(ours, b""));
        assert!(!want.is_empty() || got.is_empty());
        assert_eq!(got, want, "{what}: {} differs", f.display());
    }
}

#[test]
fn strata_reads_tables_written_by_ldb() {
    let Some(_) = rocksdb_tool("ldb") else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let entries = random_entries(7, 5000);
    let mut load = rocksdb_tool("ldb").unwrap();
    load.arg(format!("--db={}", db.display()))
        .arg("--create_if_missing")
        .arg("--hex")
        .arg("load");
    let input: String = entries
        .iter()
        .map(|(k, v)| format!("0x{} ==> 0x{}\n", hex(k), hex(v)))
        .collect();
    run(load, input.as_bytes());
    let mut del = rocksdb_tool("ldb").unwrap();
    del.arg(format!("--db={}", db.display()))
        .arg("delete")
        .arg("key00000001");
    run(del, b"");
    let mut compact = rocksdb_tool("ldb").unwrap();
    compact.arg(format!("--db={}", db.display())).arg("compact");
    run(compact, b"");
    compare_dumps(&db, "ldb load + compact");
}

#[test]
fn strata_reads_db_bench_tables_every_codec_and_checksum() {
    let Some(_) = rocksdb_tool("db_bench") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let codecs = ["none", "snappy", "zlib", "lz4", "zstd"];
    for (i, codec) in codecs.iter().enumerate() {
        for checksum in [1, 2, 3, 4] {
            if (i + checksum) % 2 == 1 && checksum != 4 {
                continue; // every codec and every checksum, not every pair
            }
            let db = dir.path().join(format!("bench-{codec}-{checksum}"));
            let mut b = rocksdb_tool("db_bench").unwrap();
            b.arg(format!("--db={}", db.display()))
                .arg("--benchmarks=fillrandom")
                .arg("--num=20000")
                .arg("--value_size=100")
                .arg(format!("--compression_type={codec}"))
                .arg(format!("--checksum_type={checksum}"))
                .arg("--write_buffer_size=262144")
                .arg("--bloom_bits=10")
                .arg("--disable_wal=1");
            run(b, b"");
            compare_dumps(&db, &format!("db_bench {codec} checksum {checksum}"));
        }
    }
}

/// Tables whose data blocks were compressed against a dictionary
/// (`compression_opts.max_dict_bytes`, raw samples or a trained ZSTD
/// dictionary): Strata reads every entry as RocksDB's sst_dump does and
/// verifies the checksums.
#[test]
fn strata_reads_db_bench_tables_with_compression_dictionaries() {
    let Some(_) = rocksdb_tool("db_bench") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for codec in ["zstd", "lz4", "zlib"] {
        for train in [0, 65536] {
            if train > 0 && codec != "zstd" {
                continue; // training is ZSTD's
            }
            let db = dir.path().join(format!("dict-{codec}-{train}"));
            let mut b = rocksdb_tool("db_bench").unwrap();
            b.arg(format!("--db={}", db.display()))
                .arg("--benchmarks=fillrandom,compact")
                .arg("--num=20000")
                .arg(format!("--compression_type={codec}"))
                .arg("--compression_max_dict_bytes=16384")
                .arg(format!("--compression_zstd_max_train_bytes={train}"));
            run(b, b"");
            compare_dumps(&db, &format!("db_bench {codec} dictionary, train {train}"));
        }
    }
}

/// Every index and filter layout RocksDB 7.8.3's db_bench writes:
/// partitioned index (alone and with partitioned filters, format_version 2
/// with its legacy Bloom partitions, restart intervals), hash search, data
/// block hash index, no index shortening, format_versions 3 and 4. Strata
/// scans each table as RocksDB's sst_dump does, and point reads through
/// the database (index partitions, filter partitions) answer as RocksDB's
/// `ldb get` does for present and absent keys.
#[test]
fn strata_reads_every_index_and_filter_layout() {
    let Some(_) = rocksdb_tool("db_bench") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let layouts: [&[&str]; 8] = [
        &["--partition_index_and_filters=1"],
        &["--partition_index=1"],
        &["--partition_index_and_filters=1", "--format_version=2"],
        &[
            "--partition_index_and_filters=1",
            "--index_block_restart_interval=4",
        ],
        &["--use_hash_search=1", "--prefix_size=8"],
        &["--use_data_block_hash_index=1", "--index_shortening_mode=0"],
        &["--format_version=3"],
        &["--format_version=4", "--index_block_restart_interval=8"],
    ];
    for (i, flags) in layouts.iter().enumerate() {
        let what = flags.join(" ");
        let db = dir.path().join(format!("layout-{i}"));
        let mut b = rocksdb_tool("db_bench").unwrap();
        b.arg(format!("--db={}", db.display()))
            .arg("--benchmarks=fillrandom,compact")
            .arg("--num=20000")
            .arg("--bloom_bits=10")
            .arg("--metadata_block_size=512")
            .args(*flags);
        run(b, b"");
        compare_dumps(&db, &what);
        // Point reads: every 251st key present, and the same keys with a
        // changed last byte (mostly absent).
        let mut scan = rocksdb_tool("ldb").unwrap();
        scan.arg(format!("--db={}", db.display()))
            .arg("--hex")
            .arg("scan");
        let keys: Vec<String> = run(scan, b"")
            .lines()
            .step_by(251)
            .filter_map(|l| l.split(" : ").next().map(str::to_string))
            .collect();
        assert!(keys.len() > 30, "{what}: {} keys", keys.len());
        let mut probes = keys.clone();
        probes.extend(keys.iter().map(|k| format!("{}FF", &k[..k.len() - 2])));
        for k in &probes {
            let get = |mut c: std::process::Command| {
                c.arg(format!("--db={}", db.display()))
                    .arg("--hex")
                    .arg("get")
                    .arg(k);
                let out = c.output().unwrap();
                (
                    out.status.success(),
                    String::from_utf8_lossy(&out.stdout).trim().to_string(),
                )
            };
            let theirs = get(rocksdb_tool("ldb").unwrap());
            let ours = get(strata());
            assert_eq!(ours, theirs, "{what}: get {k}");
        }
    }
}

/// Filters RocksDB wrote, probed by Strata: Ribbon (bit-exact queries of
/// its Standard128 layout), partitioned Bloom and Ribbon, and the legacy
/// Bloom of format_version 2. Every present key is found (no false
/// negatives) and at least 95% of absent-key reads are stopped by the
/// filter (`rocksdb.bloom.filter.useful`).
#[test]
fn strata_filters_with_rocksdbs_ribbon_partitioned_and_legacy_filters() {
    let Some(_) = rocksdb_tool("db_bench") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let layouts: [&[&str]; 4] = [
        &["--use_ribbon_filter=1"],
        &["--use_ribbon_filter=1", "--partition_index_and_filters=1"],
        &["--partition_index_and_filters=1"],
        &["--format_version=2"],
    ];
    for (i, flags) in layouts.iter().enumerate() {
        let what = flags.join(" ");
        let db = dir.path().join(format!("filter-{i}"));
        let mut b = rocksdb_tool("db_bench").unwrap();
        b.arg(format!("--db={}", db.display()))
            .arg("--benchmarks=fillseq,compact")
            .arg("--num=20000")
            .arg("--bloom_bits=10")
            .arg("--metadata_block_size=512")
            .args(*flags);
        run(b, b"");
        let mut ours = strata();
        ours.arg("bench")
            .arg(format!("--db={}", db.display()))
            .arg("--use_existing_db=1")
            .arg("--benchmarks=readrandom,readmissing")
            .arg("--num=20000")
            .arg("--reads=5000")
            .arg("--bloom_bits=10")
            .arg("--statistics");
        let out = run(ours, b"");
        assert!(
            out.contains("(5000 of 5000 found)"),
            "{what}: present keys missed\n{out}"
        );
        let useful: u64 = out
            .lines()
            .find_map(|l| l.strip_prefix("rocksdb.bloom.filter.useful COUNT : "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        assert!(
            useful >= 4750,
            "{what}: the filter stopped {useful} of 5000 absent reads"
        );
    }
}

/// The "DB host id" line of `sst_dump --show_properties` for every table
/// of `db`, as `tool` prints it.
fn host_ids(tool: impl Fn() -> std::process::Command, db: &std::path::Path) -> Vec<String> {
    sst_files(db)
        .iter()
        .map(|t| {
            let mut c = tool();
            c.arg(format!("--file={}", t.display()))
                .arg("--show_properties")
                .arg("--command=none");
            let out = run(c, b"");
            out.lines()
                .find(|l| l.trim_start().starts_with("DB host id:"))
                .unwrap_or_else(|| panic!("no host id in {out}"))
                .trim()
                .to_string()
        })
        .collect()
}

/// Tables record the host that wrote them as RocksDB's do (`db_host_id`,
/// default `__hostname__`: the machine's host name), and a database's
/// own `db_host_id` (in its OPTIONS file too) is recorded instead.
#[test]
fn tables_record_the_host_name_as_rocksdb_does() {
    let Some(_) = rocksdb_tool("ldb") else { return };
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("theirs");
    let mut load = rocksdb_tool("ldb").unwrap();
    load.arg(format!("--db={}", theirs.display()))
        .arg("--create_if_missing")
        .arg("load");
    run(load, b"a ==> 1\nb ==> 2\n");
    let mut compact = rocksdb_tool("ldb").unwrap();
    compact
        .arg(format!("--db={}", theirs.display()))
        .arg("compact");
    run(compact, b"");
    let sst_dump = || rocksdb_tool("sst_dump").unwrap();
    let rocksdb_says = host_ids(sst_dump, &theirs);
    assert_eq!(rocksdb_says.len(), 1);
    let ours = dir.path().join("ours");
    let mut load = strata();
    load.arg(format!("--db={}", ours.display()))
        .arg("--create_if_missing")
        .arg("load");
    run(load, b"a ==> 1\nb ==> 2\n");
    let mut compact = strata();
    compact
        .arg(format!("--db={}", ours.display()))
        .arg("compact");
    run(compact, b"");
    assert_eq!(host_ids(sst_dump, &ours), rocksdb_says);
    let strata_sst_dump = || {
        let mut c = strata();
        c.arg("sst_dump");
        c
    };
    assert_eq!(host_ids(strata_sst_dump, &theirs), rocksdb_says);
    // A host id of the database's own.
    let custom = dir.path().join("custom");
    let o = strata::options::Options {
        create_if_missing: true,
        db_host_id: "rack-7/node-2".into(),
        ..Default::default()
    };
    let db = strata::DB::open(o, &custom).unwrap();
    db.put(&Default::default(), b"k", b"v").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    assert_eq!(
        host_ids(sst_dump, &custom),
        vec!["DB host id: rack-7/node-2"]
    );
    let options = std::fs::read_dir(&custom)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("OPTIONS-")
        })
        .max()
        .unwrap();
    let text = std::fs::read_to_string(options).unwrap();
    assert!(text.contains("  db_host_id=rack-7/node-2\n"), "{text}");
}

/// The same entries compacted by RocksDB (ldb) and by Strata give
/// properties blocks of the same size: Strata writes the properties
/// RocksDB writes and leaves out those it leaves out (zero partitions and
/// compression samples, empty names); only values such as ids and times
/// differ, not their lengths.
#[test]
fn properties_blocks_are_rocksdbs_size() {
    let Some(_) = rocksdb_tool("ldb") else { return };
    let dir = tempfile::tempdir().unwrap();
    let input: String = (0..2000)
        .map(|i| format!("key{i:06} ==> value-{i}\n"))
        .collect();
    let mut sizes = Vec::new();
    for (name, tool) in [
        ("rocksdb", rocksdb_tool("ldb").unwrap()),
        ("strata", strata()),
    ] {
        let db = dir.path().join(name);
        let mut load = std::process::Command::new(tool.get_program());
        // The same options: ldb's defaults have no filter, strata's a
        // Bloom filter.
        load.arg(format!("--db={}", db.display()))
            .arg("--create_if_missing")
            .arg("--bloom_bits=10")
            .arg("load");
        run(load, input.as_bytes());
        let mut compact = std::process::Command::new(tool.get_program());
        compact
            .arg(format!("--db={}", db.display()))
            .arg("--bloom_bits=10")
            .arg("compact");
        run(compact, b"");
        let (_, _, meta) = only_table(&db);
        let props = meta
            .iter()
            .find(|m| m.0 == "rocksdb.properties")
            .unwrap_or_else(|| panic!("{name}: no properties block"))
            .2;
        sizes.push(props);
    }
    assert_eq!(sizes[0], sizes[1], "RocksDB's properties block vs Strata's");
}
