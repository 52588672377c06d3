//! VersionEdit encoding: property round trips, hand-built records per
//! docs/FORMATS.md §5.2-§5.5, and every tag rule with RocksDB's messages.

use proptest::prelude::*;

use super::*;
use crate::format::dbformat::{ValueType, make_internal_key};

fn ikey(k: &[u8], seq: u64) -> Vec<u8> {
    make_internal_key(k, seq, ValueType::Value)
}

fn err_of(bytes: &[u8]) -> String {
    let e = VersionEdit::decode(bytes).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    e.to_string()
}

fn arb_key() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(any::<u8>(), 0..12),
        0u64..(1 << 56),
        prop_oneof![
            Just(ValueType::Value),
            Just(ValueType::Deletion),
            Just(ValueType::RangeDeletion)
        ],
    )
        .prop_map(|(k, s, t)| make_internal_key(&k, s, t))
}

prop_compose! {
    fn arb_file()(
        number in 0u64..=FILE_NUMBER_MASK,
        file_size: u64,
        smallest in arb_key(),
        largest in arb_key(),
        smallest_seqno: u64,
        largest_seqno: u64,
        path_id in 0u32..4,
        marked_for_compaction: bool,
        oldest_ancester_time: u64,
        file_creation_time: u64,
        file_checksum in proptest::collection::vec(any::<u8>(), 0..8),
        file_checksum_func_name in "[A-Za-z0-9]{0,12}",
        temperature in prop_oneof![Just(0u8), Just(4u8), Just(8u8), Just(12u8)],
        oldest_blob_file_number: u64,
    ) -> FileMetaData {
        FileMetaData {
            number, file_size, smallest, largest, smallest_seqno, largest_seqno, path_id,
            marked_for_compaction, oldest_ancester_time, file_creation_time, file_checksum,
            file_checksum_func_name, temperature, oldest_blob_file_number, unique_id: None,
        }
    }
}

fn arb_edit() -> impl Strategy<Value = VersionEdit> {
    let counters = (
        proptest::option::of("[a-z0-9-]{0,36}"),
        proptest::option::of("[a-zA-Z.]{0,30}"),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u64>()),
    );
    let files = (
        proptest::collection::vec((0u32..10, arb_key()), 0..3),
        proptest::collection::btree_set((0u32..10, any::<u64>()), 0..5),
        proptest::collection::vec((0u32..10, arb_file()), 0..4),
    );
    let rest = (
        proptest::collection::vec(
            (
                any::<u64>(),
                any::<u64>(),
                any::<u64>(),
                "[a-z]{0,6}",
                proptest::collection::vec(any::<u8>(), 0..6),
            ),
            0..2,
        ),
        proptest::collection::vec((any::<u64>(), any::<u64>(), any::<u64>()), 0..2),
        proptest::collection::vec((any::<u64>(), proptest::option::of(any::<u64>())), 0..3),
        proptest::option::of(any::<u64>()),
        any::<u32>(),
        proptest::option::of("[a-z_]{0,10}"),
        any::<bool>(),
        proptest::option::of(any::<u32>()),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 1..9)),
    );
    (counters, files, rest).prop_map(|(c, f, r)| VersionEdit {
        db_id: c.0,
        comparator: c.1,
        log_number: c.2,
        prev_log_number: c.3,
        next_file_number: c.4,
        max_column_family: c.5,
        min_log_number_to_keep: c.6,
        last_sequence: c.7,
        compact_cursors: f.0,
        deleted_files: f.1.into_iter().collect(),
        new_files: f.2,
        blob_file_additions: r
            .0
            .into_iter()
            .map(|(a, b, c, m, v)| BlobFileAddition {
                blob_file_number: a,
                total_blob_count: b,
                total_blob_bytes: c,
                checksum_method: m.into_bytes(),
                checksum_value: v,
            })
            .collect(),
        blob_file_garbages: r
            .1
            .into_iter()
            .map(|(a, b, c)| BlobFileGarbage {
                blob_file_number: a,
                garbage_blob_count: b,
                garbage_blob_bytes: c,
            })
            .collect(),
        wal_additions: r
            .2
            .into_iter()
            .map(|(log_number, synced_size)| WalAddition {
                log_number,
                synced_size,
            })
            .collect(),
        wal_deletion: r.3.map(|log_number| WalDeletion { log_number }),
        column_family: r.4,
        column_family_add: r.5,
        column_family_drop: r.6,
        remaining_entries: r.7,
        full_history_ts_low: r.8,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn encode_decode_round_trip(e in arb_edit()) {
        let bytes = e.encode();
        let d = VersionEdit::decode(&bytes).unwrap();
        prop_assert_eq!(&d, &e);
        // Every strict prefix either fails cleanly or decodes to less.
        for n in 0..bytes.len() {
            if let Ok(p) = VersionEdit::decode(&bytes[..n]) {
                prop_assert!(p != e || n == bytes.len());
            }
        }
    }

    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = VersionEdit::decode(&bytes);
    }

    #[test]
    fn decode_mutated_never_panics(e in arb_edit(), at: usize, xor in 1u8..) {
        let mut bytes = e.encode();
        if !bytes.is_empty() {
            let i = at % bytes.len();
            bytes[i] ^= xor;
            let _ = VersionEdit::decode(&bytes);
        }
    }
}

/// docs/FORMATS.md §5.5, built by hand.
#[test]
fn decode_hand_built_minimal_manifest_edit() {
    let smallest = ikey(b"a", 1);
    let largest = ikey(b"z", 7);
    let mut b = vec![1u8, 26];
    b.extend_from_slice(b"leveldb.BytewiseComparator");
    b.extend_from_slice(&[2, 0, 3, 3, 4, 7]);
    b.extend_from_slice(&[103, 0, 2, 0xe8, 0x07]); // L0, file 2, 1000 bytes
    b.push(smallest.len() as u8);
    b.extend_from_slice(&smallest);
    b.push(largest.len() as u8);
    b.extend_from_slice(&largest);
    b.extend_from_slice(&[1, 7, 1]); // seqnos 1..7, kTerminate
    let e = VersionEdit::decode(&b).unwrap();
    assert_eq!(e.comparator.as_deref(), Some("leveldb.BytewiseComparator"));
    assert_eq!(e.log_number, Some(0));
    assert_eq!(e.next_file_number, Some(3));
    assert_eq!(e.last_sequence, Some(7));
    assert_eq!(e.new_files.len(), 1);
    let (level, f) = &e.new_files[0];
    assert_eq!(*level, 0);
    assert_eq!(
        f,
        &FileMetaData::new(2, 1000, smallest.clone(), largest.clone(), 1, 7)
    );
    assert_eq!(f.file_checksum_func_name, "Unknown");
    // Our encoding of it adds the four custom fields 7.8.3 always writes.
    let enc = e.encode();
    assert_eq!(VersionEdit::decode(&enc).unwrap(), e);
    assert!(enc.windows(9).any(|w| w == b"\x08\x07Unknown"));
}

#[test]
fn decode_old_new_file_forms() {
    let s = ikey(b"a", 3);
    let l = ikey(b"b", 4);
    let tail = |b: &mut Vec<u8>| {
        b.push(s.len() as u8);
        b.extend_from_slice(&s);
        b.push(l.len() as u8);
        b.extend_from_slice(&l);
    };
    // kNewFile (LevelDB): level, number, size, keys.
    let mut b = vec![7, 1, 9, 100];
    tail(&mut b);
    let e = VersionEdit::decode(&b).unwrap();
    let f = &e.new_files[0].1;
    assert_eq!((e.new_files[0].0, f.number, f.file_size), (1, 9, 100));
    assert_eq!(
        (f.smallest_seqno, f.largest_seqno),
        (crate::format::MAX_SEQUENCE_NUMBER, 0)
    );
    // kNewFile2: + seqnos.
    let mut b = vec![100, 2, 10, 50];
    tail(&mut b);
    b.extend_from_slice(&[3, 4]);
    let e = VersionEdit::decode(&b).unwrap();
    let f = &e.new_files[0].1;
    assert_eq!((f.number, f.smallest_seqno, f.largest_seqno), (10, 3, 4));
    // kNewFile3: path id after the number.
    let mut b = vec![102, 0, 11, 2, 60];
    tail(&mut b);
    b.extend_from_slice(&[3, 4]);
    let e = VersionEdit::decode(&b).unwrap();
    let f = &e.new_files[0].1;
    assert_eq!(e.new_files[0].0, 0);
    assert_eq!((f.number, f.path_id, f.file_size), (11, 2, 60));
    // Truncated forms are "new-fileN entry".
    assert!(err_of(&b[..b.len() - 1]).contains("new-file3 entry"));
}

#[test]
fn unknown_tag_rules() {
    // Unknown tag without bit 13: fatal.
    assert!(err_of(&[11]).contains("VersionEdit: unknown tag"));
    assert!(err_of(&[8]).contains("unknown tag"));
    // With bit 13: skipped with its length prefix.
    let mut b = vec![0x89, 0x40, 3, 1, 2, 3]; // tag 8201, 3 bytes
    b.extend_from_slice(&[2, 5]);
    let e = VersionEdit::decode(&b).unwrap();
    assert_eq!(e.log_number, Some(5));
    assert!(err_of(&[0x89, 0x40, 4, 1, 2, 3]).contains("safely ignoreable tag length error"));
    // A bad varint where a tag should be.
    assert!(err_of(&[2, 5, 0xff]).contains("VersionEdit: invalid tag"));
    // Offsets point at the failing field.
    let e = VersionEdit::decode(&[2, 5, 11]).unwrap_err();
    assert!(matches!(e, Error::Corruption { offset: 2, .. }), "{e:?}");
}

fn new_file4_with(custom: &[u8]) -> Vec<u8> {
    let s = ikey(b"a", 1);
    let mut b = vec![103, 0, 5, 10, s.len() as u8];
    b.extend_from_slice(&s);
    b.push(s.len() as u8);
    b.extend_from_slice(&s);
    b.extend_from_slice(&[1, 1]);
    b.extend_from_slice(custom);
    b
}

#[test]
fn new_file4_custom_fields() {
    // Unknown without bit 6 (13 = epoch number, newer RocksDB): skipped.
    let e = VersionEdit::decode(&new_file4_with(&[13, 1, 7, 15, 2, 0, 0, 1])).unwrap();
    assert_eq!(e.new_files[0].1.number, 5);
    // Unknown with bit 6: fatal.
    assert!(err_of(&new_file4_with(&[66, 0, 1])).contains("new-file4 custom field not supported"));
    // Path id, need compaction, temperature, min log hack, unique id.
    let mut c = vec![65, 1, 2, 2, 1, 1, 9, 1, 8, 3, 8];
    c.extend_from_slice(&42u64.to_le_bytes());
    c.extend_from_slice(&[12, 16]);
    c.extend_from_slice(&7u64.to_le_bytes());
    c.extend_from_slice(&9u64.to_le_bytes());
    c.push(1);
    let e = VersionEdit::decode(&new_file4_with(&c)).unwrap();
    let f = &e.new_files[0].1;
    assert_eq!(f.path_id, 2);
    assert!(f.marked_for_compaction);
    assert_eq!(f.temperature, 8);
    assert_eq!(f.unique_id, Some([7, 9]));
    assert_eq!(e.min_log_number_to_keep, Some(42));
    // Re-encoding drops the unique id but keeps the rest.
    let again = VersionEdit::decode(&e.encode()).unwrap();
    assert_eq!(again.new_files[0].1.unique_id, None);
    assert_eq!(again.min_log_number_to_keep, Some(42));
    // Field errors, with RocksDB's messages.
    assert!(err_of(&new_file4_with(&[65, 1, 4, 1])).contains("path_id wrong vaue"));
    assert!(err_of(&new_file4_with(&[65, 2, 0, 0, 1])).contains("path_id field wrong size"));
    assert!(err_of(&new_file4_with(&[2, 0, 1])).contains("need_compaction field wrong size"));
    assert!(err_of(&new_file4_with(&[12, 1, 0, 1])).contains("invalid unique id"));
    assert!(err_of(&new_file4_with(&[3, 1, 0, 1])).contains("deleted log number malformatted"));
    assert!(err_of(&new_file4_with(&[5, 1, 0x80, 1])).contains("invalid oldest ancester time"));
    assert!(err_of(&new_file4_with(&[5, 9])).contains("length prefixed slice error"));
    assert!(err_of(&new_file4_with(&[])).contains("new-file4 custom field"));
    // Keys must parse as internal keys.
    let mut b = vec![103, 0, 5, 10, 3, b'a', b'b', b'c'];
    b.extend_from_slice(&[3, b'a', b'b', b'c', 1, 1, 1]);
    assert!(err_of(&b).contains("VersionEdit: new-file4 entry"));
    let bad_type = make_internal_key(b"a", 1, ValueType::LogData);
    let mut b = vec![6, 0, 1, 5, bad_type.len() as u8];
    b.extend_from_slice(&bad_type);
    assert!(err_of(&b).contains("compaction cursor"));
}

#[test]
fn sub_records_and_misc() {
    assert!(err_of(&[0x86, 0x40, 0]).contains("full_history_ts_low: empty"));
    // kWalAddition (inline) with a synced size; kWalDeletion inline.
    let e = VersionEdit::decode(&[0x84, 0x40, 7, 2, 100, 1, 0x85, 0x40, 6]).unwrap();
    assert_eq!(
        e.wal_additions,
        vec![WalAddition {
            log_number: 7,
            synced_size: Some(100)
        }]
    );
    assert_eq!(e.wal_deletion, Some(WalDeletion { log_number: 6 }));
    assert!(err_of(&[0x84, 0x40, 7, 3]).contains("WalAddition: Unknown tag 3"));
    // Blob records: forward-incompatible custom fields are fatal.
    assert!(err_of(&[0x90, 0x03, 1, 1, 1, 0, 0, 64, 0, 1]).contains("Forward incompatible"));
    // A custom field (tag 5, empty value), then the end marker 0.
    let e = VersionEdit::decode(&[0x91, 0x03, 1, 2, 3, 5, 0, 0]).unwrap();
    assert_eq!(e.blob_file_garbages[0].garbage_blob_bytes, 3);
    // Duplicate deletions collapse (RocksDB keeps a set).
    let e = VersionEdit::decode(&[6, 1, 5, 6, 1, 5, 6, 2, 5]).unwrap();
    assert_eq!(e.deleted_files, vec![(1, 5), (2, 5)]);
    // A file number past the 62-bit mask is rejected.
    let mut f = FileMetaData::new(u64::MAX, 1, ikey(b"a", 1), ikey(b"a", 1), 1, 1);
    f.path_id = 0;
    let mut e = VersionEdit::new();
    e.add_file(0, f);
    assert!(err_of(&e.encode()).contains("too large"));
}
