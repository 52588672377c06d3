//! The version set's life: create, log edits, column families, rollover,
//! recovery rules (comparators, atomic groups, required fields, errors).

use super::*;
use crate::error::Error;

#[test]
fn create_apply_recover() {
    let (_m, fs) = mem();
    let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    assert_eq!(vs.manifest_file_number(), 1);
    assert_eq!(vs.next_file_number(), 2);
    assert_eq!(
        read_current_file(&*fs, &db_path()).unwrap(),
        "MANIFEST-000001"
    );
    for i in 0..20 {
        workload_step(&mut vs, i).unwrap();
    }
    let want = fingerprint(&vs);
    let next = vs.next_file_number();
    drop(vs);
    let vs = recover_ro(&fs).unwrap();
    assert_eq!(fingerprint(&vs), want);
    assert!(
        vs.next_file_number() >= next,
        "{} vs {next}",
        vs.next_file_number()
    );
    // A read-write recovery rolls over to a new MANIFEST with the same state.
    let before = fs.children(&db_path()).unwrap();
    let vs = VersionSet::recover(fs.clone(), &db_path(), bytewise(), false).unwrap();
    assert_eq!(fingerprint(&vs), want);
    let m = vs.manifest_file_number();
    assert!(m >= next, "new MANIFEST {m} must use a fresh number");
    assert_eq!(
        read_current_file(&*fs, &db_path()).unwrap(),
        format!("MANIFEST-{m:06}")
    );
    // Nothing was deleted.
    let after = fs.children(&db_path()).unwrap();
    assert!(before.iter().all(|n| after.contains(n)));
    drop(vs);
    assert_eq!(fingerprint(&recover_ro(&fs).unwrap()), want);
}

#[test]
fn read_only_recovery_changes_nothing() {
    let (m, fs) = mem();
    let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    workload_step(&mut vs, 0).unwrap();
    drop(vs);
    let snapshot = |m: &MemFileSystem| {
        m.file_names()
            .into_iter()
            .map(|p| (m.read_file(&p).unwrap(), p))
            .collect::<Vec<_>>()
    };
    let before = snapshot(&m);
    let mut vs = recover_ro(&fs).unwrap();
    assert!(vs.is_read_only());
    assert!(matches!(
        vs.log_and_apply(0, VersionEdit::new()),
        Err(Error::NotSupported(_))
    ));
    assert_eq!(snapshot(&m), before);
}

#[test]
fn column_families() {
    let (_m, fs) = mem();
    let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    let a = vs.create_column_family("a").unwrap();
    let b = vs.create_column_family("b").unwrap();
    assert_eq!((a, b), (1, 2));
    assert!(vs.create_column_family("a").is_err());
    assert!(matches!(
        vs.drop_column_family(0),
        Err(Error::InvalidArgument(_))
    ));
    assert!(vs.drop_column_family(9).is_err());
    let mut e = VersionEdit::new();
    e.add_file(2, meta(vs.new_file_number(), "a", "b", 1));
    vs.log_and_apply(b, e).unwrap();
    vs.drop_column_family(a).unwrap();
    assert!(vs.log_and_apply(a, VersionEdit::new()).is_err());
    let c = vs.create_column_family("c").unwrap();
    assert_eq!(c, 3, "ids are never reused");
    assert_eq!(
        vs.column_families(),
        vec![
            (0, "default".to_string()),
            (2, "b".to_string()),
            (3, "c".to_string())
        ]
    );
    let want = fingerprint(&vs);
    drop(vs);
    let vs = VersionSet::recover(fs.clone(), &db_path(), bytewise(), false).unwrap();
    assert_eq!(fingerprint(&vs), want);
    assert_eq!(vs.current(b).unwrap().num_files(2), 1);
    assert_eq!(vs.max_column_family(), 3);
    // After the rollover snapshot too.
    drop(vs);
    let mut vs = recover_ro(&fs).unwrap();
    assert_eq!(fingerprint(&vs), want);
    assert!(vs.create_column_family("d").is_err(), "read-only");
}

#[test]
fn comparator_mismatch_and_per_cf_comparators() {
    let (_m, fs) = mem();
    let rev: crate::util::comparator::ComparatorRef =
        Arc::new(crate::util::comparator::ReverseBytewiseComparator);
    let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    vs.create_column_family_with("r", rev.clone(), 0).unwrap();
    drop(vs);
    // The default comparator does not match cf "r".
    let e = recover_ro(&fs).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(
        e.to_string().contains("does not match existing comparator"),
        "{e}"
    );
    let mut opts = VersionSetOptions::new(bytewise());
    opts.cf_comparators.insert("r".into(), rev.clone());
    let vs = VersionSet::recover_with(fs.clone(), &db_path(), opts, false).unwrap();
    assert_eq!(
        vs.column_family_by_name("r").unwrap().comparator_name(),
        rev.name()
    );
    drop(vs);
    let e = VersionSet::recover(fs.clone(), &db_path(), rev, true).unwrap_err();
    assert!(e.to_string().contains(
        "rocksdb.ReverseBytewiseComparator: does not match existing comparator leveldb.BytewiseComparator"
    ), "{e}");
}

#[test]
fn rejected_edits_change_nothing() {
    let (_m, fs) = mem();
    let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    let mut e = VersionEdit::new();
    e.add_file(1, meta(7, "a", "c", 1));
    vs.log_and_apply(0, e).unwrap();
    let want = fingerprint(&vs);
    let size = vs.manifest_file_size();
    let cases: Vec<(u32, VersionEdit)> = vec![
        (0, {
            let mut e = VersionEdit::new();
            e.add_file(1, meta(8, "b", "d", 1));
            e
        }),
        (0, {
            let mut e = VersionEdit::new();
            e.add_file(2, meta(7, "x", "y", 1));
            e
        }),
        (0, {
            let mut e = VersionEdit::new();
            e.delete_file(2, 7);
            e
        }),
        (0, {
            let mut e = VersionEdit::new();
            e.add_file(7, meta(9, "x", "y", 1));
            e
        }),
        (5, VersionEdit::new()),
        (0, {
            let mut e = VersionEdit::new();
            let mut f = meta(9, "x", "y", 1);
            f.smallest = b"short".to_vec();
            e.add_file(0, f);
            e
        }),
    ];
    for (cf, e) in cases {
        let err = vs.log_and_apply(cf, e).unwrap_err();
        assert!(
            err.is_corruption() || matches!(err, Error::InvalidArgument(_)),
            "{err}"
        );
        assert_eq!(fingerprint(&vs), want);
        assert_eq!(vs.manifest_file_size(), size, "nothing written");
        assert!(vs.background_error().is_none());
    }
    let mut e = VersionEdit::new();
    e.add_file(7, meta(9, "x", "y", 1));
    let err = vs.log_and_apply(0, e).unwrap_err();
    assert!(
        err.to_string()
            .contains("db has more levels than options.num_levels")
    );
}

#[test]
fn counters_in_every_edit() {
    let (_m, fs) = mem();
    let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    vs.set_last_sequence(41);
    let n = vs.new_file_number();
    let mut e = VersionEdit::new();
    e.add_file(0, meta(n, "a", "b", 40));
    vs.log_and_apply(0, e).unwrap();
    let mut r = ManifestReader::open(&*fs, &db_path().join("MANIFEST-000001")).unwrap();
    let mut edits = Vec::new();
    while let Some((_, e)) = r.next_edit().unwrap() {
        edits.push(e);
    }
    assert_eq!(edits.len(), 2);
    let e = &edits[1];
    assert_eq!(e.last_sequence, Some(41));
    assert_eq!(e.next_file_number, Some(n + 1));
    assert_eq!(e.prev_log_number, Some(0));
    assert_eq!(
        edits[0].comparator.as_deref(),
        Some("leveldb.BytewiseComparator")
    );
    assert_eq!(edits[0].next_file_number, Some(2));
    // A larger sequence in the edit wins and is published.
    let mut e = VersionEdit::new();
    e.last_sequence = Some(100);
    vs.log_and_apply(0, e).unwrap();
    assert_eq!(vs.last_sequence(), 100);
}

#[test]
fn manifest_rollover_by_size() {
    let (_m, fs) = mem();
    let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    vs.max_manifest_file_size = 300;
    let mut manifests = std::collections::BTreeSet::new();
    for i in 0..40 {
        workload_step(&mut vs, i).unwrap();
        manifests.insert(vs.manifest_file_number());
        assert_eq!(
            read_current_file(&*fs, &db_path()).unwrap(),
            format!("MANIFEST-{:06}", vs.manifest_file_number())
        );
    }
    assert!(manifests.len() > 3, "{manifests:?}");
    let want = fingerprint(&vs);
    drop(vs);
    assert_eq!(fingerprint(&recover_ro(&fs).unwrap()), want);
}

#[test]
fn live_files_tracks_old_versions() {
    let (_m, fs) = mem();
    let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    let mut e = VersionEdit::new();
    e.add_file(0, meta(10, "a", "b", 1));
    vs.log_and_apply(0, e).unwrap();
    let held = vs.current(0).unwrap();
    let mut e = VersionEdit::new();
    e.delete_file(0, 10);
    e.add_file(1, meta(11, "a", "b", 1));
    vs.log_and_apply(0, e).unwrap();
    assert_eq!(vs.live_files(), vec![10, 11]);
    drop(held);
    assert_eq!(vs.live_files(), vec![11]);
    let id = vs.create_column_family("x").unwrap();
    let mut e = VersionEdit::new();
    e.add_file(0, meta(12, "a", "b", 1));
    vs.log_and_apply(id, e).unwrap();
    let held = vs.current(id).unwrap();
    vs.drop_column_family(id).unwrap();
    assert_eq!(vs.live_files(), vec![11, 12]);
    drop(held);
    assert_eq!(vs.live_files(), vec![11]);
}

#[test]
fn create_new_refuses_existing_db_and_missing_fields_fail() {
    let (_m, fs) = mem();
    drop(VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap());
    assert!(VersionSet::create_new(fs.clone(), &db_path(), bytewise()).is_err());
    // A MANIFEST lacking the required fields.
    let e = VersionEdit {
        comparator: Some("leveldb.BytewiseComparator".into()),
        ..VersionEdit::default()
    };
    let w = manifest::write_manifest(&*fs, &db_path(), 9, &[e.encode()]).unwrap();
    drop(w);
    set_current_file(&*fs, &db_path(), 9).unwrap();
    let err = recover_ro(&fs).unwrap_err();
    assert!(err.is_corruption());
    assert!(
        err.to_string()
            .contains("no log_file_number, next_file_number, last_sequence entry in MANIFEST"),
        "{err}"
    );
    let e2 = VersionEdit {
        log_number: Some(0),
        last_sequence: Some(0),
        ..VersionEdit::default()
    };
    drop(manifest::write_manifest(&*fs, &db_path(), 10, &[e2.encode()]).unwrap());
    set_current_file(&*fs, &db_path(), 10).unwrap();
    let err = recover_ro(&fs).unwrap_err().to_string();
    assert!(
        err.contains("no next_file_number entry in MANIFEST"),
        "{err}"
    );
    assert!(err.contains("MANIFEST-000010"), "{err}");
    // CURRENT naming a missing MANIFEST is corruption, not NotFound.
    set_current_file(&*fs, &db_path(), 77).unwrap();
    assert!(recover_ro(&fs).unwrap_err().is_corruption());
}

fn raw_manifest(fs: &FileSystemRef, number: u64, edits: &[VersionEdit]) {
    let recs: Vec<Vec<u8>> = edits.iter().map(VersionEdit::encode).collect();
    drop(manifest::write_manifest(&**fs, &db_path(), number, &recs).unwrap());
    set_current_file(&**fs, &db_path(), number).unwrap();
}

#[test]
fn atomic_groups_on_replay() {
    let (_m, fs) = mem();
    let base = VersionEdit {
        comparator: Some("leveldb.BytewiseComparator".into()),
        log_number: Some(0),
        next_file_number: Some(100),
        last_sequence: Some(5),
        ..VersionEdit::default()
    };
    let grouped = |n: u64, remaining: u32| {
        let mut e = VersionEdit::new();
        e.add_file(0, meta(n, "a", "b", n));
        e.remaining_entries = Some(remaining);
        e
    };
    // Complete group: applied.
    raw_manifest(&fs, 1, &[base.clone(), grouped(10, 1), grouped(11, 0)]);
    assert_eq!(recover_ro(&fs).unwrap().current(0).unwrap().num_files(0), 2);
    // Incomplete group at the end: dropped entirely.
    raw_manifest(&fs, 2, &[base.clone(), grouped(10, 2), grouped(11, 1)]);
    assert_eq!(recover_ro(&fs).unwrap().current(0).unwrap().num_files(0), 0);
    // Wrong count, or a normal edit inside the group: corruption.
    raw_manifest(&fs, 3, &[base.clone(), grouped(10, 2), grouped(11, 0)]);
    let e = recover_ro(&fs).unwrap_err();
    assert!(e.to_string().contains("corrupted atomic group"), "{e}");
    raw_manifest(&fs, 4, &[base.clone(), grouped(10, 1), VersionEdit::new()]);
    assert!(
        recover_ro(&fs)
            .unwrap_err()
            .to_string()
            .contains("corrupted atomic group")
    );
    // Our writer emits the markers.
    let (_m, fs) = mem();
    let mut vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    let id = vs.create_column_family("x").unwrap();
    vs.log_and_apply_group(vec![
        (0, grouped(20, 9)),
        (id, grouped(21, 9)),
        (0, grouped(22, 9)),
    ])
    .unwrap();
    let mut r = ManifestReader::open(&*fs, &db_path().join("MANIFEST-000001")).unwrap();
    let mut marks = Vec::new();
    while let Some((_, e)) = r.next_edit().unwrap() {
        marks.push(e.remaining_entries);
    }
    assert_eq!(marks, [None, None, Some(2), Some(1), Some(0)]);
}

#[test]
fn replay_errors_name_manifest_and_offset() {
    let (_m, fs) = mem();
    let base = VersionEdit {
        log_number: Some(0),
        next_file_number: Some(100),
        last_sequence: Some(5),
        ..VersionEdit::default()
    };
    let mut add = VersionEdit::new();
    add.add_file(0, meta(10, "a", "b", 1));
    raw_manifest(&fs, 1, &[base.clone(), add.clone(), add.clone()]);
    let e = recover_ro(&fs).unwrap_err();
    match &e {
        Error::Corruption { file, offset, msg } => {
            assert!(file.ends_with("MANIFEST-000001"), "{e}");
            assert!(*offset > 0, "{e}");
            assert!(msg.contains("Cannot add table file #10"), "{e}");
        }
        other => panic!("{other}"),
    }
    let unknown_cf = VersionEdit {
        column_family: 4,
        ..VersionEdit::default()
    };
    raw_manifest(&fs, 2, &[base.clone(), unknown_cf]);
    let e = recover_ro(&fs).unwrap_err().to_string();
    assert!(
        e.contains("MANIFEST record referencing unknown column family"),
        "{e}"
    );
    let drop_missing = VersionEdit {
        column_family: 4,
        column_family_drop: true,
        ..VersionEdit::default()
    };
    raw_manifest(&fs, 3, &[base.clone(), drop_missing]);
    assert!(
        recover_ro(&fs)
            .unwrap_err()
            .to_string()
            .contains("dropping non-existing column family")
    );
    let add_twice = VersionEdit {
        column_family: 4,
        column_family_add: Some("x".into()),
        ..VersionEdit::default()
    };
    raw_manifest(&fs, 4, &[base.clone(), add_twice.clone(), add_twice]);
    assert!(
        recover_ro(&fs)
            .unwrap_err()
            .to_string()
            .contains("adding the same column family twice")
    );
    // L1 overlap found at the end of replay.
    let mut l1 = VersionEdit::new();
    l1.add_file(1, meta(20, "a", "m", 1));
    l1.add_file(1, meta(21, "k", "z", 1));
    raw_manifest(&fs, 5, &[base.clone(), l1]);
    let e = recover_ro(&fs).unwrap_err();
    assert!(
        e.is_corruption() && e.to_string().contains("L1 has overlapping ranges"),
        "{e}"
    );
    // A log number going backwards is ignored, as in RocksDB.
    let l5 = VersionEdit {
        log_number: Some(5),
        ..VersionEdit::default()
    };
    raw_manifest(
        &fs,
        6,
        &[
            base,
            l5,
            VersionEdit {
                log_number: Some(3),
                ..VersionEdit::default()
            },
        ],
    );
    assert_eq!(
        recover_ro(&fs)
            .unwrap()
            .column_family(0)
            .unwrap()
            .log_number(),
        5
    );
}

#[test]
fn recovery_counts_numbers_of_files_the_manifest_does_not_know() {
    // Found by the crash-point suite: a WAL started by a memtable switch
    // (no MANIFEST edit) kept a number past next_file_number; the next
    // open gave its new WAL the same number, and a crash before that WAL
    // was created made the old one's data count as new.
    let (_m, fs) = mem();
    let vs = VersionSet::create_new(fs.clone(), &db_path(), bytewise()).unwrap();
    let next = vs.next_file_number();
    drop(vs);
    fs.write_file(&db_path().join("000009.log"), b"", true)
        .unwrap();
    fs.write_file(&db_path().join("000012.sst"), b"", true)
        .unwrap();
    // An info log's number is a timestamp, not a file number.
    fs.write_file(&db_path().join("LOG.old.1795463713262181"), b"", true)
        .unwrap();
    assert!(next < 9);
    let wal_dir = PathBuf::from("/wal");
    fs.create_dir_all(&wal_dir).unwrap();
    fs.write_file(&wal_dir.join("000015.log"), b"", true)
        .unwrap();
    let vs = VersionSet::recover(fs.clone(), &db_path(), bytewise(), false).unwrap();
    assert_eq!(vs.manifest_file_number(), 13);
    assert_eq!(vs.next_file_number(), 14);
    drop(vs);
    let mut opts = VersionSetOptions::new(bytewise());
    opts.wal_dir = Some(wal_dir);
    let vs = VersionSet::recover_with(fs.clone(), &db_path(), opts, false).unwrap();
    assert_eq!(vs.manifest_file_number(), 16);
    assert_eq!(vs.next_file_number(), 17);
}
