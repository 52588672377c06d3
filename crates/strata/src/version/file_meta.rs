//! `FileMetaData`: one table file as an edit or a version describes it, and
//! its MANIFEST encodings: kNewFile4 (the only form RocksDB 7.8.3 writes,
//! docs/FORMATS.md §5.3) and the older kNewFile, kNewFile2 and kNewFile3 (read
//! only).
//!
//! Invariants:
//! * A kNewFile4 record carries custom fields 5, 6, 7 and 8, then 65 (path
//!   id, if non-zero), 9 (temperature, if set), 2 (if marked for
//!   compaction), 3 (min log number hack, first file of an edit only) and 4
//!   (oldest blob file, if set), in RocksDB 7.8.3's order. kUniqueId (12) is
//!   never written: it is decoded and kept only for display.
//! * Decoding accepts unknown custom fields without bit 6 and rejects those
//!   with it; keys must parse as internal keys; file numbers fit in 62 bits.

use crate::format::dbformat::parse_internal_key;
use crate::util::coding::{
    Decoder, put_fixed64, put_length_prefixed_slice, put_varint32, put_varint64,
};

/// File numbers use the low 62 bits (the rest once held the path id).
pub const FILE_NUMBER_MASK: u64 = 0x3FFF_FFFF_FFFF_FFFF;
/// What RocksDB records when no file-checksum generator is configured.
pub const UNKNOWN_FILE_CHECKSUM_FUNC_NAME: &str = "Unknown";

const TAG_NEW_FILE: u32 = super::edit::TAG_NEW_FILE;
const TAG_NEW_FILE3: u32 = super::edit::TAG_NEW_FILE3;
const TAG_NEW_FILE4: u32 = super::edit::TAG_NEW_FILE4;

// kNewFile4 custom field tags.
const NF_TERMINATE: u32 = 1;
const NF_NEED_COMPACTION: u32 = 2;
const NF_MIN_LOG_NUMBER_TO_KEEP_HACK: u32 = 3;
const NF_OLDEST_BLOB_FILE_NUMBER: u32 = 4;
const NF_OLDEST_ANCESTER_TIME: u32 = 5;
const NF_FILE_CREATION_TIME: u32 = 6;
const NF_FILE_CHECKSUM: u32 = 7;
const NF_FILE_CHECKSUM_FUNC_NAME: u32 = 8;
const NF_TEMPERATURE: u32 = 9;
const NF_UNIQUE_ID: u32 = 12;
const NF_PATH_ID: u32 = 65;
/// Unknown custom fields with this bit must be understood: fatal.
const NF_NON_SAFE_IGNORE_MASK: u32 = 1 << 6;
/// Highest temperature 7.8.3 knows (kCold); others read as unknown (0).
const MAX_TEMPERATURE: u8 = 0x0C;

/// One table file: its number, size, key and sequence ranges, and the
/// metadata RocksDB keeps beside them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMetaData {
    pub number: u64,
    pub file_size: u64,
    /// Smallest internal key in the file.
    pub smallest: Vec<u8>,
    /// Largest internal key in the file.
    pub largest: Vec<u8>,
    pub smallest_seqno: u64,
    pub largest_seqno: u64,
    /// Index into `db_paths` (always 0 here; 0..=3 accepted).
    pub path_id: u32,
    pub marked_for_compaction: bool,
    /// Unix seconds (0 = unknown).
    pub oldest_ancester_time: u64,
    /// Unix seconds (0 = unknown).
    pub file_creation_time: u64,
    pub file_checksum: Vec<u8>,
    pub file_checksum_func_name: String,
    /// RocksDB `Temperature` byte (0 = unknown).
    pub temperature: u8,
    /// Oldest blob file referenced (0 = none).
    pub oldest_blob_file_number: u64,
    /// RocksDB's internal unique id, when a RocksDB-written MANIFEST had one.
    /// Read and shown, never written (docs/FORMATS.md §5.3).
    pub unique_id: Option<[u64; 2]>,
}

impl Default for FileMetaData {
    fn default() -> Self {
        FileMetaData {
            number: 0,
            file_size: 0,
            smallest: Vec::new(),
            largest: Vec::new(),
            smallest_seqno: 0,
            largest_seqno: 0,
            path_id: 0,
            marked_for_compaction: false,
            oldest_ancester_time: 0,
            file_creation_time: 0,
            file_checksum: Vec::new(),
            file_checksum_func_name: UNKNOWN_FILE_CHECKSUM_FUNC_NAME.to_string(),
            temperature: 0,
            oldest_blob_file_number: 0,
            unique_id: None,
        }
    }
}

impl FileMetaData {
    /// A file with the given identity and ranges; other fields default.
    pub fn new(
        number: u64,
        file_size: u64,
        smallest: Vec<u8>,
        largest: Vec<u8>,
        smallest_seqno: u64,
        largest_seqno: u64,
    ) -> FileMetaData {
        FileMetaData {
            number,
            file_size,
            smallest,
            largest,
            smallest_seqno,
            largest_seqno,
            ..FileMetaData::default()
        }
    }

    /// The metadata of table `number` as its builder reported it.
    /// Whether the smallest key does not sort after the largest. Every
    /// file the engine writes keeps this; an empty range tombstone
    /// (`[k, k)`) written as is would break it and hide the file from
    /// overlap checks.
    pub fn bounds_in_order(&self, icmp: &crate::format::InternalKeyComparator) -> bool {
        icmp.compare(&self.smallest, &self.largest) != std::cmp::Ordering::Greater
    }

    pub fn from_table(number: u64, info: &crate::table::TableInfo) -> FileMetaData {
        FileMetaData::new(
            number,
            info.file_size,
            info.smallest_key.clone(),
            info.largest_key.clone(),
            info.smallest_seqno,
            info.largest_seqno,
        )
    }
}

fn put_custom(dst: &mut Vec<u8>, tag: u32, value: &[u8]) {
    put_varint32(dst, tag);
    put_length_prefixed_slice(dst, value);
}

pub(crate) fn varint64_bytes(v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    put_varint64(&mut b, v);
    b
}

/// A length-prefixed internal key that must parse (RocksDB `GetInternalKey`).
pub(crate) fn get_internal_key(d: &mut Decoder<'_>) -> Option<Vec<u8>> {
    let k = d.length_prefixed()?;
    parse_internal_key(k)?;
    Some(k.to_vec())
}

pub(crate) fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Appends `f` at `level` as a kNewFile4 field; `min_log` adds the
/// min-log-number hack (custom field 3).
pub(crate) fn encode_new_file4(
    dst: &mut Vec<u8>,
    level: u32,
    f: &FileMetaData,
    min_log: Option<u64>,
) {
    debug_assert!(parse_internal_key(&f.smallest).is_some());
    debug_assert!(parse_internal_key(&f.largest).is_some());
    put_varint32(dst, TAG_NEW_FILE4);
    put_varint32(dst, level);
    put_varint64(dst, f.number);
    put_varint64(dst, f.file_size);
    put_length_prefixed_slice(dst, &f.smallest);
    put_length_prefixed_slice(dst, &f.largest);
    put_varint64(dst, f.smallest_seqno);
    put_varint64(dst, f.largest_seqno);
    put_custom(
        dst,
        NF_OLDEST_ANCESTER_TIME,
        &varint64_bytes(f.oldest_ancester_time),
    );
    put_custom(
        dst,
        NF_FILE_CREATION_TIME,
        &varint64_bytes(f.file_creation_time),
    );
    put_custom(dst, NF_FILE_CHECKSUM, &f.file_checksum);
    put_custom(
        dst,
        NF_FILE_CHECKSUM_FUNC_NAME,
        f.file_checksum_func_name.as_bytes(),
    );
    if f.path_id != 0 {
        put_custom(dst, NF_PATH_ID, &[f.path_id as u8]);
    }
    if f.temperature != 0 {
        put_custom(dst, NF_TEMPERATURE, &[f.temperature]);
    }
    if f.marked_for_compaction {
        put_custom(dst, NF_NEED_COMPACTION, &[1]);
    }
    if let Some(v) = min_log {
        let mut b = Vec::new();
        put_fixed64(&mut b, v);
        put_custom(dst, NF_MIN_LOG_NUMBER_TO_KEEP_HACK, &b);
    }
    if f.oldest_blob_file_number != 0 {
        put_custom(
            dst,
            NF_OLDEST_BLOB_FILE_NUMBER,
            &varint64_bytes(f.oldest_blob_file_number),
        );
    }
    put_varint32(dst, NF_TERMINATE);
}

pub(crate) fn check_file_number(f: &FileMetaData) -> std::result::Result<(), String> {
    if f.number > FILE_NUMBER_MASK {
        return Err(format!("file number {} too large", f.number));
    }
    Ok(())
}

/// kNewFile (LevelDB), kNewFile2 and kNewFile3.
pub(crate) fn decode_old_new_file(d: &mut Decoder<'_>, tag: u32) -> Option<(u32, FileMetaData)> {
    let level = d.varint32()?;
    let number = d.varint64()?;
    // kNewFile4 stores a path id in one byte and refuses ids above 3; the
    // same limit here keeps every decoded edit re-encodable (found by
    // cargo-fuzz: a larger kNewFile3 path id re-encoded to a kNewFile4 the
    // decoder refused).
    let path_id = if tag == TAG_NEW_FILE3 {
        d.varint32().filter(|&p| p <= 3)?
    } else {
        0
    };
    let file_size = d.varint64()?;
    let smallest = get_internal_key(d)?;
    let largest = get_internal_key(d)?;
    // LevelDB's record has no sequence range: RocksDB's defaults.
    let (smallest_seqno, largest_seqno) = if tag == TAG_NEW_FILE {
        (crate::format::dbformat::MAX_SEQUENCE_NUMBER, 0)
    } else {
        (d.varint64()?, d.varint64()?)
    };
    let mut f = FileMetaData::new(
        number,
        file_size,
        smallest,
        largest,
        smallest_seqno,
        largest_seqno,
    );
    f.path_id = path_id;
    Some((level, f))
}

/// kNewFile4 with its custom fields (RocksDB `DecodeNewFile4From`).
/// Returns the file and the min-log-number hack's value, if present.
pub(crate) fn decode_new_file4(
    d: &mut Decoder<'_>,
) -> std::result::Result<((u32, FileMetaData), Option<u64>), String> {
    let mut min_log = None;
    let head = (|| {
        let level = d.varint32()?;
        let number = d.varint64()?;
        let file_size = d.varint64()?;
        let smallest = get_internal_key(d)?;
        let largest = get_internal_key(d)?;
        let smallest_seqno = d.varint64()?;
        let largest_seqno = d.varint64()?;
        Some((
            level,
            FileMetaData::new(
                number,
                file_size,
                smallest,
                largest,
                smallest_seqno,
                largest_seqno,
            ),
        ))
    })();
    let Some((level, mut f)) = head else {
        return Err("new-file4 entry".into());
    };
    loop {
        let tag = d.varint32().ok_or("new-file4 custom field")?;
        if tag == NF_TERMINATE {
            break;
        }
        let field = d
            .length_prefixed()
            .ok_or("new-file4 custom field length prefixed slice error")?;
        let varint = |what: &str| -> std::result::Result<u64, String> {
            Decoder::new(field)
                .varint64()
                .ok_or_else(|| format!("invalid {what}"))
        };
        match tag {
            NF_PATH_ID => {
                let [p] = field else {
                    return Err("path_id field wrong size".into());
                };
                if *p > 3 {
                    return Err("path_id wrong vaue".into());
                }
                f.path_id = u32::from(*p);
            }
            NF_OLDEST_ANCESTER_TIME => f.oldest_ancester_time = varint("oldest ancester time")?,
            NF_FILE_CREATION_TIME => f.file_creation_time = varint("file creation time")?,
            NF_FILE_CHECKSUM => f.file_checksum = field.to_vec(),
            NF_FILE_CHECKSUM_FUNC_NAME => f.file_checksum_func_name = lossy(field),
            NF_NEED_COMPACTION => {
                let [b] = field else {
                    return Err("need_compaction field wrong size".into());
                };
                f.marked_for_compaction = *b == 1;
            }
            NF_MIN_LOG_NUMBER_TO_KEEP_HACK => {
                let v = Decoder::new(field)
                    .fixed64()
                    .ok_or("deleted log number malformatted")?;
                min_log = Some(v);
            }
            NF_OLDEST_BLOB_FILE_NUMBER => {
                f.oldest_blob_file_number = varint("oldest blob file number")?;
            }
            NF_TEMPERATURE => {
                let [t] = field else {
                    return Err("temperature field wrong size".into());
                };
                if *t <= MAX_TEMPERATURE {
                    f.temperature = *t;
                }
            }
            NF_UNIQUE_ID => {
                let mut u = Decoder::new(field);
                match (field.len(), u.fixed64(), u.fixed64()) {
                    (16, Some(a), Some(b)) => f.unique_id = Some([a, b]),
                    _ => return Err("invalid unique id".into()),
                }
            }
            t if t & NF_NON_SAFE_IGNORE_MASK != 0 => {
                return Err("new-file4 custom field not supported".into());
            }
            _ => {} // a field from the future that may be ignored
        }
    }
    Ok(((level, f), min_log))
}
