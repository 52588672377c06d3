//! Direct I/O (`use_direct_reads`, `use_direct_io_for_flush_and_compaction`)
//! through the public API on the real file system: flushes and compactions
//! write their tables with `O_DIRECT`, reads open them so, and the database
//! holds what a model says, across a reopen, with every block checksum
//! verified. Skipped (with a message) where the file system under the
//! target directory refuses `O_DIRECT`.

mod common;

use strata::options::Options;
use strata::{DB, Error};

fn opts() -> Options {
    let mut o = Options {
        create_if_missing: true,
        use_direct_reads: true,
        use_direct_io_for_flush_and_compaction: true,
        ..Options::default()
    };
    o.cf.write_buffer_size = 64 << 10;
    o.cf.target_file_size_base = 64 << 10;
    o.cf.max_bytes_for_level_base = 256 << 10;
    o.cf.level0_file_num_compaction_trigger = 2;
    o
}

use common::scan_all as scan;

#[test]
fn direct_io_databases_read_and_write_their_tables() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("db");
    let db = match DB::open(opts(), &path) {
        Ok(db) => db,
        Err(Error::NotSupported(m)) => {
            eprintln!("skipping: {m}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let model = common::fill_in_flushed_rounds(&db, 6, 3000, 9000, |i| (i % 200) as usize);
    common::assert_holds(&db, &model, 97);
    db.close().unwrap();
    let db = DB::open(opts(), &path).unwrap();
    assert_eq!(scan(&db), model);
    db.close().unwrap();
    // The same files read without direct I/O.
    let plain = Options {
        use_direct_reads: false,
        use_direct_io_for_flush_and_compaction: false,
        ..opts()
    };
    let db = DB::open(plain, &path).unwrap();
    assert_eq!(scan(&db), model);
    db.verify_checksums().unwrap();
}

#[test]
fn direct_reads_and_mmap_reads_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        allow_mmap_reads: true,
        ..opts()
    };
    match DB::open(o, dir.path().join("db")) {
        Err(Error::NotSupported(m)) => assert!(m.contains("use_direct_reads"), "{m}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}
