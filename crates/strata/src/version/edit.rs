//! `VersionEdit`: one MANIFEST record (RocksDB `db/version_edit.{h,cc}`),
//! with the blob-file and WAL records it may carry. See docs/FORMATS.md §5.2 for
//! the tags; new files (`FileMetaData`, kNewFile4) are in `file_meta.rs`.
//!
//! Invariants:
//! * `encode` writes fields in RocksDB 7.8.3's order and only tags that 7.8.3
//!   writes (new files always as kNewFile4).
//! * `decode(encode(e)) == e` for every edit whose keys are valid internal
//!   keys and whose `unique_id`s are `None`.
//! * `decode` never panics and never allocates from an unchecked length: all
//!   reads go through the bounds-checked [`Decoder`]. Every failure is
//!   `Error::Corruption` whose message starts with the RocksDB class name
//!   ("VersionEdit: unknown tag") and whose offset is the byte within the
//!   record where the failing field starts (callers relocate it into the
//!   MANIFEST).

use std::collections::HashSet;

pub use super::file_meta::{FILE_NUMBER_MASK, FileMetaData, UNKNOWN_FILE_CHECKSUM_FUNC_NAME};
use super::file_meta::{
    check_file_number, decode_new_file4, decode_old_new_file, encode_new_file4, get_internal_key,
    lossy, varint64_bytes,
};
use crate::error::{Error, Result};
use crate::util::coding::{Decoder, put_length_prefixed_slice, put_varint32, put_varint64};

// Edit tags.
pub(crate) const TAG_COMPARATOR: u32 = 1;
pub(crate) const TAG_LOG_NUMBER: u32 = 2;
pub(crate) const TAG_NEXT_FILE_NUMBER: u32 = 3;
pub(crate) const TAG_LAST_SEQUENCE: u32 = 4;
pub(crate) const TAG_COMPACT_CURSOR: u32 = 5;
pub(crate) const TAG_DELETED_FILE: u32 = 6;
pub(crate) const TAG_NEW_FILE: u32 = 7;
pub(crate) const TAG_PREV_LOG_NUMBER: u32 = 9;
pub(crate) const TAG_MIN_LOG_NUMBER_TO_KEEP: u32 = 10;
pub(crate) const TAG_NEW_FILE2: u32 = 100;
pub(crate) const TAG_NEW_FILE3: u32 = 102;
pub(crate) const TAG_NEW_FILE4: u32 = 103;
pub(crate) const TAG_COLUMN_FAMILY: u32 = 200;
pub(crate) const TAG_COLUMN_FAMILY_ADD: u32 = 201;
pub(crate) const TAG_COLUMN_FAMILY_DROP: u32 = 202;
pub(crate) const TAG_MAX_COLUMN_FAMILY: u32 = 203;
pub(crate) const TAG_IN_ATOMIC_GROUP: u32 = 300;
pub(crate) const TAG_BLOB_FILE_ADDITION: u32 = 400;
pub(crate) const TAG_BLOB_FILE_GARBAGE: u32 = 401;
/// Unknown tags with this bit are length-prefixed and may be skipped.
pub(crate) const TAG_SAFE_IGNORE_MASK: u32 = 1 << 13;
pub(crate) const TAG_DB_ID: u32 = TAG_SAFE_IGNORE_MASK + 1;
pub(crate) const TAG_BLOB_FILE_ADDITION_DEPRECATED: u32 = TAG_SAFE_IGNORE_MASK + 2;
pub(crate) const TAG_BLOB_FILE_GARBAGE_DEPRECATED: u32 = TAG_SAFE_IGNORE_MASK + 3;
pub(crate) const TAG_WAL_ADDITION: u32 = TAG_SAFE_IGNORE_MASK + 4;
pub(crate) const TAG_WAL_DELETION: u32 = TAG_SAFE_IGNORE_MASK + 5;
pub(crate) const TAG_FULL_HISTORY_TS_LOW: u32 = TAG_SAFE_IGNORE_MASK + 6;
pub(crate) const TAG_WAL_ADDITION2: u32 = TAG_SAFE_IGNORE_MASK + 7;
pub(crate) const TAG_WAL_DELETION2: u32 = TAG_SAFE_IGNORE_MASK + 8;

/// A blob file added to the DB (BlobDB; decoded and kept, not acted on).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlobFileAddition {
    pub blob_file_number: u64,
    pub total_blob_count: u64,
    pub total_blob_bytes: u64,
    pub checksum_method: Vec<u8>,
    pub checksum_value: Vec<u8>,
}

/// Garbage found in a blob file (BlobDB; decoded and kept, not acted on).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlobFileGarbage {
    pub blob_file_number: u64,
    pub garbage_blob_count: u64,
    pub garbage_blob_bytes: u64,
}

/// A WAL tracked in the MANIFEST (`track_and_verify_wals_in_manifest`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalAddition {
    pub log_number: u64,
    /// Bytes known synced, if recorded.
    pub synced_size: Option<u64>,
}

/// Stops tracking every WAL numbered below `log_number`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalDeletion {
    pub log_number: u64,
}

/// A change to the set of files and counters; one MANIFEST record.
/// `None`/empty fields are absent from the encoding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    pub db_id: Option<String>,
    /// Name of the user comparator.
    pub comparator: Option<String>,
    /// WALs numbered below this hold nothing unflushed for this CF.
    pub log_number: Option<u64>,
    pub prev_log_number: Option<u64>,
    pub next_file_number: Option<u64>,
    pub max_column_family: Option<u32>,
    pub min_log_number_to_keep: Option<u64>,
    pub last_sequence: Option<u64>,
    /// `(level, internal key)`: round-robin compaction cursors.
    pub compact_cursors: Vec<(u32, Vec<u8>)>,
    /// `(level, file number)`, without duplicates.
    pub deleted_files: Vec<(u32, u64)>,
    /// `(level, file)`.
    pub new_files: Vec<(u32, FileMetaData)>,
    pub blob_file_additions: Vec<BlobFileAddition>,
    pub blob_file_garbages: Vec<BlobFileGarbage>,
    pub wal_additions: Vec<WalAddition>,
    pub wal_deletion: Option<WalDeletion>,
    /// The column family this edit applies to (0 = default).
    pub column_family: u32,
    /// Set when this edit creates column family `column_family` with this name.
    pub column_family_add: Option<String>,
    pub column_family_drop: bool,
    /// Set inside an atomic group: how many records of the group follow.
    pub remaining_entries: Option<u32>,
    pub full_history_ts_low: Option<Vec<u8>>,
}

fn put_varint32_varint64(dst: &mut Vec<u8>, tag: u32, v: u64) {
    put_varint32(dst, tag);
    put_varint64(dst, v);
}

/// Custom fields after the terminator of the known ones.
/// The end marker of the blob records' custom fields (RocksDB's
/// `BlobFileAddition`/`BlobFileGarbage::CustomFieldTags::kEndMarker`, the
/// enum's first value). WAL records end theirs with 1 (`kTerminate`).
const BLOB_END_MARKER: u32 = 0;

/// Skips a blob record's custom fields up to and including its end marker.
fn decode_custom_fields_end(d: &mut Decoder<'_>, class: &str) -> std::result::Result<(), String> {
    loop {
        let tag = d
            .varint32()
            .ok_or_else(|| format!("{class}: Error decoding custom field tag"))?;
        if tag == BLOB_END_MARKER {
            return Ok(());
        }
        if tag & (1 << 6) != 0 {
            return Err(format!(
                "{class}: Forward incompatible custom field encountered"
            ));
        }
        d.length_prefixed()
            .ok_or_else(|| format!("{class}: Error decoding custom field value"))?;
    }
}

impl BlobFileAddition {
    fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.blob_file_number);
        put_varint64(dst, self.total_blob_count);
        put_varint64(dst, self.total_blob_bytes);
        put_length_prefixed_slice(dst, &self.checksum_method);
        put_length_prefixed_slice(dst, &self.checksum_value);
        put_varint32(dst, BLOB_END_MARKER);
    }

    fn decode_from(d: &mut Decoder<'_>) -> std::result::Result<Self, String> {
        const C: &str = "BlobFileAddition";
        let e = |what: &str| format!("{C}: Error decoding {what}");
        let blob_file_number = d.varint64().ok_or_else(|| e("blob file number"))?;
        let total_blob_count = d.varint64().ok_or_else(|| e("total blob count"))?;
        let total_blob_bytes = d.varint64().ok_or_else(|| e("total blob bytes"))?;
        let checksum_method = d.length_prefixed().ok_or_else(|| e("checksum method"))?;
        let checksum_value = d.length_prefixed().ok_or_else(|| e("checksum value"))?;
        decode_custom_fields_end(d, C)?;
        Ok(BlobFileAddition {
            blob_file_number,
            total_blob_count,
            total_blob_bytes,
            checksum_method: checksum_method.to_vec(),
            checksum_value: checksum_value.to_vec(),
        })
    }
}

impl BlobFileGarbage {
    fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.blob_file_number);
        put_varint64(dst, self.garbage_blob_count);
        put_varint64(dst, self.garbage_blob_bytes);
        put_varint32(dst, BLOB_END_MARKER);
    }

    fn decode_from(d: &mut Decoder<'_>) -> std::result::Result<Self, String> {
        const C: &str = "BlobFileGarbage";
        let e = |what: &str| format!("{C}: Error decoding {what}");
        let blob_file_number = d.varint64().ok_or_else(|| e("blob file number"))?;
        let garbage_blob_count = d.varint64().ok_or_else(|| e("garbage blob count"))?;
        let garbage_blob_bytes = d.varint64().ok_or_else(|| e("garbage blob bytes"))?;
        decode_custom_fields_end(d, C)?;
        Ok(BlobFileGarbage {
            blob_file_number,
            garbage_blob_count,
            garbage_blob_bytes,
        })
    }
}

impl WalAddition {
    fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.log_number);
        if let Some(size) = self.synced_size {
            put_varint32(dst, 2);
            put_varint64(dst, size);
        }
        put_varint32(dst, 1);
    }

    fn decode_from(d: &mut Decoder<'_>) -> std::result::Result<Self, String> {
        const C: &str = "WalAddition";
        let log_number = d
            .varint64()
            .ok_or_else(|| format!("{C}: Error decoding WAL log number"))?;
        let mut synced_size = None;
        loop {
            match d.varint32() {
                Some(1) => break,
                Some(2) => {
                    let size = d
                        .varint64()
                        .ok_or_else(|| format!("{C}: Error decoding WAL file size"))?;
                    synced_size = Some(size);
                }
                Some(t) => return Err(format!("{C}: Unknown tag {t}")),
                None => return Err(format!("{C}: Error decoding tag")),
            }
        }
        Ok(WalAddition {
            log_number,
            synced_size,
        })
    }
}

impl WalDeletion {
    fn decode_from(d: &mut Decoder<'_>) -> std::result::Result<Self, String> {
        let log_number = d
            .varint64()
            .ok_or_else(|| "WalDeletion: Error decoding WAL log number".to_string())?;
        Ok(WalDeletion { log_number })
    }
}

impl VersionEdit {
    /// An empty edit.
    pub fn new() -> VersionEdit {
        VersionEdit::default()
    }

    /// Adds file `f` at `level`.
    pub fn add_file(&mut self, level: u32, f: FileMetaData) {
        self.new_files.push((level, f));
    }

    /// Removes file `number` from `level`.
    pub fn delete_file(&mut self, level: u32, number: u64) {
        if !self.deleted_files.contains(&(level, number)) {
            self.deleted_files.push((level, number));
        }
    }

    /// True if the edit creates or drops a column family.
    pub fn is_column_family_manipulation(&self) -> bool {
        self.column_family_add.is_some() || self.column_family_drop
    }

    /// The encoded record, in RocksDB 7.8.3's field order.
    pub fn encode(&self) -> Vec<u8> {
        let mut dst = Vec::new();
        if let Some(id) = &self.db_id {
            put_varint32(&mut dst, TAG_DB_ID);
            put_length_prefixed_slice(&mut dst, id.as_bytes());
        }
        if let Some(c) = &self.comparator {
            put_varint32(&mut dst, TAG_COMPARATOR);
            put_length_prefixed_slice(&mut dst, c.as_bytes());
        }
        if let Some(v) = self.log_number {
            put_varint32_varint64(&mut dst, TAG_LOG_NUMBER, v);
        }
        if let Some(v) = self.prev_log_number {
            put_varint32_varint64(&mut dst, TAG_PREV_LOG_NUMBER, v);
        }
        if let Some(v) = self.next_file_number {
            put_varint32_varint64(&mut dst, TAG_NEXT_FILE_NUMBER, v);
        }
        if let Some(v) = self.max_column_family {
            put_varint32(&mut dst, TAG_MAX_COLUMN_FAMILY);
            put_varint32(&mut dst, v);
        }
        if let Some(v) = self.min_log_number_to_keep {
            put_varint32_varint64(&mut dst, TAG_MIN_LOG_NUMBER_TO_KEEP, v);
        }
        if let Some(v) = self.last_sequence {
            put_varint32_varint64(&mut dst, TAG_LAST_SEQUENCE, v);
        }
        for (level, key) in &self.compact_cursors {
            put_varint32(&mut dst, TAG_COMPACT_CURSOR);
            put_varint32(&mut dst, *level);
            put_length_prefixed_slice(&mut dst, key);
        }
        for &(level, number) in &self.deleted_files {
            put_varint32(&mut dst, TAG_DELETED_FILE);
            put_varint32(&mut dst, level);
            put_varint64(&mut dst, number);
        }
        for (i, (level, f)) in self.new_files.iter().enumerate() {
            // RocksDB writes the min-log-number hack in the first file only.
            let min_log = if i == 0 {
                self.min_log_number_to_keep
            } else {
                None
            };
            encode_new_file4(&mut dst, *level, f, min_log);
        }
        for b in &self.blob_file_additions {
            put_varint32(&mut dst, TAG_BLOB_FILE_ADDITION);
            b.encode_to(&mut dst);
        }
        for g in &self.blob_file_garbages {
            put_varint32(&mut dst, TAG_BLOB_FILE_GARBAGE);
            g.encode_to(&mut dst);
        }
        for w in &self.wal_additions {
            let mut enc = Vec::new();
            w.encode_to(&mut enc);
            put_varint32(&mut dst, TAG_WAL_ADDITION2);
            put_length_prefixed_slice(&mut dst, &enc);
        }
        if let Some(w) = &self.wal_deletion {
            put_varint32(&mut dst, TAG_WAL_DELETION2);
            put_length_prefixed_slice(&mut dst, &varint64_bytes(w.log_number));
        }
        if self.column_family != 0 {
            put_varint32(&mut dst, TAG_COLUMN_FAMILY);
            put_varint32(&mut dst, self.column_family);
        }
        if let Some(name) = &self.column_family_add {
            put_varint32(&mut dst, TAG_COLUMN_FAMILY_ADD);
            put_length_prefixed_slice(&mut dst, name.as_bytes());
        }
        if self.column_family_drop {
            put_varint32(&mut dst, TAG_COLUMN_FAMILY_DROP);
        }
        if let Some(n) = self.remaining_entries {
            put_varint32(&mut dst, TAG_IN_ATOMIC_GROUP);
            put_varint32(&mut dst, n);
        }
        if let Some(ts) = &self.full_history_ts_low {
            put_varint32(&mut dst, TAG_FULL_HISTORY_TS_LOW);
            put_length_prefixed_slice(&mut dst, ts);
        }
        dst
    }

    /// Decodes a record; see the module comment for the error contract.
    pub fn decode(src: &[u8]) -> Result<VersionEdit> {
        let mut edit = VersionEdit::default();
        let mut d = Decoder::new(src);
        let mut deleted_seen: HashSet<(u32, u64)> = HashSet::new();
        while !d.is_empty() {
            let at = d.position();
            let fail = |msg: &str| Err(Error::corruption("", at as u64, msg.to_string()));
            let Some(tag) = d.varint32() else {
                return fail("VersionEdit: invalid tag");
            };
            let r: std::result::Result<(), String> = (|| {
                let m = |s: &str| format!("VersionEdit: {s}");
                match tag {
                    TAG_DB_ID => {
                        let s = d.length_prefixed().ok_or_else(|| m("db id"))?;
                        edit.db_id = Some(lossy(s));
                    }
                    TAG_COMPARATOR => {
                        let s = d.length_prefixed().ok_or_else(|| m("comparator name"))?;
                        edit.comparator = Some(lossy(s));
                    }
                    TAG_LOG_NUMBER => {
                        edit.log_number = Some(d.varint64().ok_or_else(|| m("log number"))?);
                    }
                    TAG_PREV_LOG_NUMBER => {
                        let v = d.varint64().ok_or_else(|| m("previous log number"))?;
                        edit.prev_log_number = Some(v);
                    }
                    TAG_NEXT_FILE_NUMBER => {
                        let v = d.varint64().ok_or_else(|| m("next file number"))?;
                        edit.next_file_number = Some(v);
                    }
                    TAG_LAST_SEQUENCE => {
                        let v = d.varint64().ok_or_else(|| m("last sequence number"))?;
                        edit.last_sequence = Some(v);
                    }
                    TAG_MAX_COLUMN_FAMILY => {
                        let v = d.varint32().ok_or_else(|| m("max column family"))?;
                        edit.max_column_family = Some(v);
                    }
                    TAG_MIN_LOG_NUMBER_TO_KEEP => {
                        let v = d.varint64().ok_or_else(|| m("min log number to kee"))?;
                        edit.min_log_number_to_keep = Some(v);
                    }
                    TAG_COMPACT_CURSOR => {
                        let level = d.varint32().ok_or_else(|| m("compaction cursor"))?;
                        let key = get_internal_key(&mut d).ok_or_else(|| m("compaction cursor"))?;
                        edit.compact_cursors.push((level, key));
                    }
                    TAG_DELETED_FILE => {
                        let level = d.varint32().ok_or_else(|| m("deleted file"))?;
                        let number = d.varint64().ok_or_else(|| m("deleted file"))?;
                        if deleted_seen.insert((level, number)) {
                            edit.deleted_files.push((level, number));
                        }
                    }
                    TAG_NEW_FILE | TAG_NEW_FILE2 | TAG_NEW_FILE3 => {
                        let what = match tag {
                            TAG_NEW_FILE => "new-file entry",
                            TAG_NEW_FILE2 => "new-file2 entry",
                            _ => "new-file3 entry",
                        };
                        let f = decode_old_new_file(&mut d, tag).ok_or_else(|| m(what))?;
                        check_file_number(&f.1).map_err(|s| m(&s))?;
                        edit.new_files.push(f);
                    }
                    TAG_NEW_FILE4 => {
                        let (f, min_log) = decode_new_file4(&mut d).map_err(|s| m(&s))?;
                        if min_log.is_some() {
                            edit.min_log_number_to_keep = min_log;
                        }
                        check_file_number(&f.1).map_err(|s| m(&s))?;
                        edit.new_files.push(f);
                    }
                    TAG_BLOB_FILE_ADDITION | TAG_BLOB_FILE_ADDITION_DEPRECATED => {
                        let b = BlobFileAddition::decode_from(&mut d)?;
                        edit.blob_file_additions.push(b);
                    }
                    TAG_BLOB_FILE_GARBAGE | TAG_BLOB_FILE_GARBAGE_DEPRECATED => {
                        let g = BlobFileGarbage::decode_from(&mut d)?;
                        edit.blob_file_garbages.push(g);
                    }
                    TAG_WAL_ADDITION => {
                        edit.wal_additions.push(WalAddition::decode_from(&mut d)?);
                    }
                    TAG_WAL_ADDITION2 => {
                        let s = d
                            .length_prefixed()
                            .ok_or_else(|| m("WalAddition not prefixed by length"))?;
                        let w = WalAddition::decode_from(&mut Decoder::new(s))?;
                        edit.wal_additions.push(w);
                    }
                    TAG_WAL_DELETION => {
                        edit.wal_deletion = Some(WalDeletion::decode_from(&mut d)?);
                    }
                    TAG_WAL_DELETION2 => {
                        let s = d
                            .length_prefixed()
                            .ok_or_else(|| m("WalDeletion not prefixed by length"))?;
                        edit.wal_deletion = Some(WalDeletion::decode_from(&mut Decoder::new(s))?);
                    }
                    TAG_COLUMN_FAMILY => {
                        let v = d.varint32().ok_or_else(|| m("set column family id"))?;
                        edit.column_family = v;
                    }
                    TAG_COLUMN_FAMILY_ADD => {
                        let s = d.length_prefixed().ok_or_else(|| m("column family add"))?;
                        edit.column_family_add = Some(lossy(s));
                    }
                    TAG_COLUMN_FAMILY_DROP => edit.column_family_drop = true,
                    TAG_IN_ATOMIC_GROUP => {
                        let v = d.varint32().ok_or_else(|| m("remaining entries"))?;
                        edit.remaining_entries = Some(v);
                    }
                    TAG_FULL_HISTORY_TS_LOW => {
                        let s = d
                            .length_prefixed()
                            .ok_or_else(|| m("full_history_ts_low"))?;
                        if s.is_empty() {
                            return Err(m("full_history_ts_low: empty"));
                        }
                        edit.full_history_ts_low = Some(s.to_vec());
                    }
                    t if t & TAG_SAFE_IGNORE_MASK != 0 => {
                        // A tag from the future that may be ignored: it is
                        // followed by its length.
                        d.length_prefixed()
                            .ok_or_else(|| m("safely ignoreable tag length error"))?;
                    }
                    _ => return Err(m("unknown tag")),
                }
                Ok(())
            })();
            if let Err(msg) = r {
                return fail(&msg);
            }
        }
        Ok(edit)
    }
}

#[cfg(test)]
mod tests;
