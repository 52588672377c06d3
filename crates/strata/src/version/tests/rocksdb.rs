//! MANIFESTs written by RocksDB 7.8.3 (`ldb`), kept in `tests/data`.

use super::*;
use crate::fs::buffer::BytesFile;
use crate::wal::LogReader;

const RDB: &[u8] = include_bytes!("../../../tests/data/rocksdb_rdb_MANIFEST-000032");
const RDB_DUMP: &str = include_str!("../../../tests/data/rocksdb_rdb_MANIFEST-000032.edits.txt");
const RDB2: &[u8] = include_bytes!("../../../tests/data/rocksdb_rdb2_MANIFEST-000020");
const RDB2_DUMP: &str = include_str!("../../../tests/data/rocksdb_rdb2_MANIFEST-000020.edits.txt");

fn records(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut r = LogReader::new(Box::new(BytesFile::new(bytes.to_vec())), 0);
    let mut out = Vec::new();
    while let Some(rec) = r.read_record().unwrap() {
        out.push(rec);
    }
    out
}

/// A DB directory holding `bytes` as MANIFEST-`number`.
fn install(bytes: &[u8], number: u64) -> (MemFileSystem, FileSystemRef) {
    let (m, fs) = mem();
    fs.write_file(
        &db_path().join(format!("MANIFEST-{number:06}")),
        bytes,
        true,
    )
    .unwrap();
    set_current_file(&*fs, &db_path(), number).unwrap();
    (m, fs)
}

#[test]
fn debug_strings_match_ldb_manifest_dump() {
    for (bytes, dump) in [(RDB, RDB_DUMP), (RDB2, RDB2_DUMP)] {
        let ours: String = records(bytes)
            .iter()
            .map(|r| VersionEdit::decode(r).unwrap().to_string())
            .collect();
        assert_eq!(ours.trim_end(), dump.trim_end());
    }
}

#[test]
fn reencoding_is_byte_identical_except_unique_ids() {
    let mut n = 0;
    for bytes in [RDB, RDB2] {
        for rec in records(bytes) {
            let mut e = VersionEdit::decode(&rec).unwrap();
            let mut want = rec.clone();
            for (_, f) in &mut e.new_files {
                if let Some([a, b]) = f.unique_id.take() {
                    // Custom field 12, length 16, two fixed64s.
                    let mut field = vec![12u8, 16];
                    field.extend_from_slice(&a.to_le_bytes());
                    field.extend_from_slice(&b.to_le_bytes());
                    let at = want
                        .windows(field.len())
                        .position(|w| w == field.as_slice())
                        .unwrap();
                    want.drain(at..at + field.len());
                }
            }
            assert_eq!(e.encode(), want, "{e}");
            n += 1;
        }
    }
    assert!(n >= 10);
}

#[test]
fn recover_rocksdb_manifests() {
    let (_m, fs) = install(RDB, 32);
    let vs = recover_ro(&fs).unwrap();
    // As `ldb manifest_dump` prints: next_file_number 37 last_sequence 6
    // prev_log_number 0 max_column_family 0 min_log_number_to_keep 27.
    assert_eq!(vs.next_file_number(), 37);
    assert_eq!(vs.last_sequence(), 6);
    assert_eq!(vs.prev_log_number(), 0);
    assert_eq!(vs.max_column_family(), 0);
    assert_eq!(vs.min_log_number_to_keep(), 27);
    let cf = vs.column_family(0).unwrap();
    assert_eq!(cf.log_number(), 27);
    assert_eq!(cf.comparator_name(), "leveldb.BytewiseComparator");
    let v = vs.current(0).unwrap();
    assert_eq!(v.num_files(0), 0);
    let dump = v.debug_string(false);
    assert!(
        dump.contains(" 35:1013[0 .. 0]['k1' seq:0, type:1 .. 'k5' seq:0, type:1]\n"),
        "{dump}"
    );
    assert_eq!(vs.live_files(), vec![35]);

    let (_m, fs) = install(RDB2, 20);
    let vs = recover_ro(&fs).unwrap();
    assert_eq!((vs.next_file_number(), vs.last_sequence()), (22, 5));
    assert_eq!(vs.column_family(0).unwrap().log_number(), 15);
    let v = vs.current(0).unwrap();
    let l0: Vec<u64> = v.files(0).iter().map(|f| f.number).collect();
    assert_eq!(l0, [18, 13, 8]);
    assert!(v.files(0)[0].unique_id.is_some());
    let dump = v.debug_string(true);
    assert!(
        dump.contains(
            " 18:1003[5 .. 5]['6B33' seq:5, type:15 .. '6B34' seq:72057594037927935, type:15]\n"
        ),
        "{dump}"
    );

    // A read-write recovery rolls the RocksDB MANIFEST over into ours.
    let want = fingerprint(&vs);
    drop(vs);
    let vs = VersionSet::recover(fs.clone(), &db_path(), bytewise(), false).unwrap();
    assert_eq!(vs.manifest_file_number(), 22);
    assert_eq!(fingerprint(&vs), want);
    drop(vs);
    assert_eq!(fingerprint(&recover_ro(&fs).unwrap()), want);
}
