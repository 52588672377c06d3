//! `DB::delete_files_in_range`: tables of levels 1 and deeper wholly
//! inside the range go (one MANIFEST edit, survives reopen), tables
//! reaching outside stay, `include_end` decides about a table ending at
//! the range's end, and L0 is never touched (RocksDB's rules).

use std::path::Path;

use strata::tools::table::{SstFileWriter, TableOptions};
use strata::{DB, IngestExternalFileOptions, Options, ReadOptions, WriteOptions};

fn opts() -> Options {
    Options {
        create_if_missing: true,
        ..Options::default()
    }
}

/// One table per prefix in the last level: `<p>0`..`<p>9`.
fn load(db: &DB, dir: &Path, prefixes: &[&str]) {
    for p in prefixes {
        let path = dir.join(format!("{p}.sst"));
        let mut w = SstFileWriter::create(&path, TableOptions::default()).unwrap();
        for i in 0..10 {
            w.put(format!("{p}{i}").as_bytes(), b"v").unwrap();
        }
        w.finish().unwrap();
        db.ingest_external_file(&[&path], &IngestExternalFileOptions::default())
            .unwrap();
    }
}

fn keys(db: &DB) -> Vec<String> {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    let mut out = Vec::new();
    while it.valid() {
        out.push(String::from_utf8(it.key().to_vec()).unwrap());
        it.next();
    }
    it.status().unwrap();
    out
}

fn first_letters(db: &DB) -> String {
    let mut s: Vec<char> = keys(db).iter().map(|k| k.chars().next().unwrap()).collect();
    s.dedup();
    s.into_iter().collect()
}

#[test]
fn whole_tables_in_the_range_go_and_the_rest_stay() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let db = DB::open(opts(), &db_path).unwrap();
    load(&db, dir.path(), &["a", "b", "c", "d", "e"]);
    assert_eq!(
        db.live_files_metadata()
            .iter()
            .filter(|f| f.level == 6)
            .count(),
        5
    );
    let cf = db.default_cf();
    // "b".."c9": b and c entirely inside; a and d not.
    db.delete_files_in_range(&cf, Some(b"b"), Some(b"c9"), true)
        .unwrap();
    assert_eq!(first_letters(&db), "ade");
    // The end excluded: d ends at "d9", so it stays.
    db.delete_files_in_range(&cf, Some(b"d0"), Some(b"d9"), false)
        .unwrap();
    assert_eq!(first_letters(&db), "ade");
    // A range inside one table deletes nothing.
    db.delete_files_in_range(&cf, Some(b"e1"), Some(b"e5"), true)
        .unwrap();
    assert_eq!(keys(&db).len(), 30);
    // Unbounded below, several ranges at once.
    db.delete_files_in_ranges(&cf, &[(None, Some(b"a9")), (Some(b"e0"), None)], true)
        .unwrap();
    assert_eq!(first_letters(&db), "d");
    drop(db);
    let db = DB::open(opts(), &db_path).unwrap();
    assert_eq!(first_letters(&db), "d");
    // The deleted tables are gone from the directory.
    let ssts = std::fs::read_dir(&db_path)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count();
    assert_eq!(ssts, 1);
}

#[test]
fn level_zero_is_never_touched() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.cf.disable_auto_compactions = true;
    let db = DB::open(o, dir.path().join("db")).unwrap();
    db.put(&WriteOptions::default(), b"k1", b"v").unwrap();
    db.flush().unwrap();
    assert_eq!(db.live_files_metadata()[0].level, 0);
    db.delete_files_in_range(&db.default_cf(), None, None, true)
        .unwrap();
    assert_eq!(keys(&db), ["k1"]);
}
