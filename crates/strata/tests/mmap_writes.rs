//! Memory-mapped table writes (`allow_mmap_writes`) through the public API
//! on the real file system: flushes and compactions write their tables by
//! copying into maps, the database holds what a model says across a
//! reopen, every table file is exactly as long as the MANIFEST says (no
//! zero tail from the mapped regions), the option reaches the OPTIONS file,
//! and RocksDB 7.8.3's `ldb` reads the database.

mod common;

use strata::options::{Options, WriteOptions};
use strata::{DB, Error};

fn opts() -> Options {
    let mut o = Options {
        create_if_missing: true,
        allow_mmap_writes: true,
        ..Options::default()
    };
    o.cf.write_buffer_size = 256 << 10;
    o.cf.target_file_size_base = 512 << 10;
    o.cf.max_bytes_for_level_base = 1 << 20;
    o.cf.level0_file_num_compaction_trigger = 2;
    o
}

use common::scan_all as scan;

/// Every live table's size on disk equals its size in the MANIFEST.
fn tables_are_cut_to_size(db: &DB, path: &std::path::Path) -> usize {
    let files = db.live_files_metadata();
    for f in &files {
        let on_disk = std::fs::metadata(path.join(f.name.trim_start_matches('/')))
            .unwrap()
            .len();
        assert_eq!(on_disk, f.size, "{} on disk vs MANIFEST", f.name);
    }
    files.len()
}

#[test]
fn mmap_written_tables_hold_the_data_and_are_cut_to_size() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("db");
    if !cfg!(all(target_os = "linux", target_pointer_width = "64")) {
        eprintln!("skipping: mapped writes are implemented for 64-bit Linux only");
        return;
    }
    let db = DB::open(opts(), &path).unwrap();
    // Values of many sizes, some larger than a mapped region (64 KiB to
    // 1 MiB), so appends straddle region boundaries.
    let model = common::fill_in_flushed_rounds(&db, 5, 4000, 12000, |i| {
        if i % 997 == 0 {
            150_000
        } else {
            (i % 300) as usize
        }
    });
    common::assert_holds(&db, &model, 89);
    assert!(tables_are_cut_to_size(&db, &path) > 0);
    db.close().unwrap();

    // The OPTIONS file records the option, as RocksDB's does.
    let file = strata::db::options_parser::load_latest(&path)
        .unwrap()
        .unwrap();
    let mut loaded = Options::default();
    file.apply_db(&mut loaded).unwrap();
    assert!(loaded.allow_mmap_writes);

    // Reopened without maps, the same files read back whole.
    let plain = Options {
        allow_mmap_writes: false,
        ..opts()
    };
    let db = DB::open(plain, &path).unwrap();
    assert_eq!(scan(&db), model);
    db.verify_checksums().unwrap();
    tables_are_cut_to_size(&db, &path);
    db.close().unwrap();

    // RocksDB reads every table (ldb scan prints one line per key).
    let Some(out) = common::rocksdb::ldb_scan(&path, false) else {
        return;
    };
    assert_eq!(
        out.lines().count(),
        model.len(),
        "keys RocksDB's ldb scan read"
    );
}

#[test]
fn mmap_writes_and_direct_writes_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        use_direct_io_for_flush_and_compaction: true,
        ..opts()
    };
    match DB::open(o, dir.path().join("db")) {
        Err(Error::NotSupported(m)) => {
            assert!(m.contains("allow_mmap_writes"), "{m}");
            assert!(m.contains("use_direct_io_for_flush_and_compaction"), "{m}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// The option reaches the file system: with mapped writes refused there
/// (a fault on `new_mmap_writable_file`), a flush fails; without the
/// option the same flush, on the same file system, succeeds.
#[test]
fn flushes_create_their_tables_through_mapped_writes() {
    use std::sync::Arc;
    use strata::fs::fault::{FailMode, FaultInjectionFileSystem, OpKind};
    if !cfg!(all(target_os = "linux", target_pointer_width = "64")) {
        return;
    }
    for mmap in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let fault = Arc::new(FaultInjectionFileSystem::new(strata::fs::default_fs()));
        fault.fail_op(&[OpKind::NewMmapWritable], None, 0, FailMode::Persistent);
        let o = Options {
            allow_mmap_writes: mmap,
            fs: Some(fault.clone()),
            ..opts()
        };
        let db = DB::open(o, dir.path().join("db")).unwrap();
        db.put(&WriteOptions::default(), b"k", b"v").unwrap();
        assert_eq!(db.flush().is_err(), mmap, "allow_mmap_writes={mmap}");
    }
}
