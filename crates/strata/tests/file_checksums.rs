//! Whole-file checksums (`Options::file_checksum_gen_factory`): every
//! table a flush, a compaction or an ingestion adds records RocksDB's
//! `FileChecksumCrc32c` (the crc32c of the file, big-endian) in the
//! MANIFEST; `get_live_files_checksum_info` lists them, they survive a
//! reopen, and RocksDB's `ldb file_checksum_dump` prints the same.
//!
//! The `ldb` check needs `ldb` on the PATH; it fails with a clear message
//! otherwise, unless STRATA_SKIP_INTEROP=1.

mod common;

use std::sync::Arc;

use strata::tools::table::{SstFileWriter, TableOptions};
use strata::tools::util::file_checksum::FileChecksumGenCrc32cFactory;
use strata::{DB, IngestExternalFileOptions, Options, WriteOptions};

fn opts(with: bool) -> Options {
    let mut o = Options {
        create_if_missing: true,
        ..Options::default()
    };
    if with {
        o.file_checksum_gen_factory = Some(Arc::new(FileChecksumGenCrc32cFactory));
    }
    o.cf.write_buffer_size = 64 << 10;
    o
}

#[test]
fn every_table_records_its_crc32c_and_ldb_prints_it() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let db = DB::open(opts(true), &db_path).unwrap();
    for i in 0..3000u32 {
        db.put(
            &WriteOptions::default(),
            format!("k{i:05}").as_bytes(),
            &[b'v'; 100],
        )
        .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let ext = dir.path().join("ext.sst");
    let mut w = SstFileWriter::create(&ext, TableOptions::default()).unwrap();
    w.put(b"zz", b"ingested").unwrap();
    w.finish().unwrap();
    db.ingest_external_file(&[&ext], &IngestExternalFileOptions::default())
        .unwrap();
    let check = |db: &DB| {
        let infos = db.get_live_files_checksum_info();
        assert!(infos.len() >= 2, "{infos:?}");
        for i in &infos {
            assert_eq!(i.checksum_func_name, "FileChecksumCrc32c");
            let bytes = std::fs::read(db_path.join(format!("{:06}.sst", i.file_number))).unwrap();
            assert_eq!(
                i.checksum,
                strata::tools::util::checksum::crc32c(&bytes).to_be_bytes(),
                "table #{}",
                i.file_number
            );
        }
        infos
    };
    let infos = check(&db);
    drop(db);
    // Recorded in the MANIFEST: there after a reopen without the factory.
    let db = DB::open(opts(false), &db_path).unwrap();
    assert_eq!(check(&db), infos);
    drop(db);

    let Some(mut ldb) = common::rocksdb::ldb() else {
        return;
    };
    let out = ldb
        .arg(format!("--db={}", db_path.display()))
        .arg("file_checksum_dump")
        .arg("--hex")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: String = infos
        .iter()
        .map(|i| {
            let hex: String = i.checksum.iter().map(|b| format!("{b:02X}")).collect();
            format!("{}, {}, 0x{hex}\n", i.file_number, i.checksum_func_name)
        })
        .collect::<String>()
        + "Print SST file checksum information finished \n";
    // ldb prints in its hash map's order; compare the lines as sets.
    let sorted = |s: &str| {
        let mut v: Vec<String> = s.lines().map(String::from).collect();
        v.sort();
        v
    };
    let got = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(got.ends_with("Print SST file checksum information finished \n"));
    assert_eq!(sorted(&got), sorted(&want));
}

#[test]
fn without_a_factory_checksums_are_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(opts(false), dir.path().join("db")).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    db.flush().unwrap();
    let infos = db.get_live_files_checksum_info();
    assert_eq!(infos.len(), 1);
    assert_eq!(infos[0].checksum_func_name, "Unknown");
    assert!(infos[0].checksum.is_empty());
}
