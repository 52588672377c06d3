//! Human-readable dumps in the formats of RocksDB 7.8.3's
//! `VersionEdit::DebugString`, `Version::DebugString` and
//! `InternalKey::DebugString`, as `ldb manifest_dump` prints them.
//!
//! The dumps are bytes, as RocksDB prints them: user keys appear raw
//! (unless in hex), so a binary key prints as RocksDB's does; the
//! `String` forms replace what is not UTF-8.
//!
//! Invariant: formatting never fails or panics on any field value (bad keys
//! print as `(bad)` plus an escaped dump, as in RocksDB).

use std::fmt;
use std::io::Write as _;

use super::edit::{BlobFileAddition, BlobFileGarbage, FileMetaData, VersionEdit, WalAddition};
use super::version::Version;
use crate::format::dbformat::parse_internal_key;
pub use crate::table::unique_id::public_unique_id;

/// Upper-case hex, as RocksDB's `Slice::ToString(true)`.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02X}"));
    }
    s
}

fn push_raw_or_hex(out: &mut Vec<u8>, b: &[u8], as_hex: bool) {
    if as_hex {
        out.extend_from_slice(hex(b).as_bytes());
    } else {
        out.extend_from_slice(b);
    }
}

/// RocksDB's `EscapeString`: printable ASCII as is, others as `\xNN`.
fn escape(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        if (b' '..=b'~').contains(&c) {
            s.push(char::from(c));
        } else {
            s.push_str(&format!("\\x{c:02x}"));
        }
    }
    s
}

/// `'user_key' seq:N, type:T`, or `(bad)<escaped bytes>`.
pub fn internal_key_debug_string(ikey: &[u8], as_hex: bool) -> String {
    String::from_utf8_lossy(&internal_key_debug_bytes(ikey, as_hex)).into_owned()
}

/// [`internal_key_debug_string`] with the user key's bytes as they are.
pub fn internal_key_debug_bytes(ikey: &[u8], as_hex: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(ikey.len() + 24);
    push_key(&mut out, ikey, as_hex);
    out
}

fn push_key(out: &mut Vec<u8>, ikey: &[u8], as_hex: bool) {
    match parse_internal_key(ikey) {
        Some(p) => {
            out.push(b'\'');
            push_raw_or_hex(out, p.user_key, as_hex);
            let _ = write!(out, "' seq:{}, type:{}", p.sequence, p.value_type as u8);
        }
        None => {
            let _ = write!(out, "(bad){}", escape(ikey));
        }
    }
}

fn add_file_string(out: &mut Vec<u8>, level: u32, f: &FileMetaData, as_hex: bool) {
    let _ = write!(out, "\n  AddFile: {level} {} {} ", f.number, f.file_size);
    push_key(out, &f.smallest, as_hex);
    out.extend_from_slice(b" .. ");
    push_key(out, &f.largest, as_hex);
    if f.oldest_blob_file_number != 0 {
        let _ = write!(out, " blob_file:{}", f.oldest_blob_file_number);
    }
    let _ = write!(
        out,
        " oldest_ancester_time:{} file_creation_time:{} file_checksum:{} file_checksum_func_name: {}",
        f.oldest_ancester_time,
        f.file_creation_time,
        hex(&f.file_checksum),
        f.file_checksum_func_name
    );
    if f.temperature != 0 {
        let _ = write!(out, " temperature: {}", f.temperature);
    }
    if let Some(id) = f.unique_id {
        let _ = write!(
            out,
            " unique_id(internal): {{{},{}}} public_unique_id: {}",
            id[0],
            id[1],
            public_unique_id(id)
        );
    }
}

impl fmt::Display for BlobFileAddition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "blob_file_number: {} total_blob_count: {} total_blob_bytes: {} checksum_method: {} checksum_value: {}",
            self.blob_file_number,
            self.total_blob_count,
            self.total_blob_bytes,
            String::from_utf8_lossy(&self.checksum_method),
            hex(&self.checksum_value)
        )
    }
}

impl fmt::Display for BlobFileGarbage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "blob_file_number: {} garbage_blob_count: {} garbage_blob_bytes: {}",
            self.blob_file_number, self.garbage_blob_count, self.garbage_blob_bytes
        )
    }
}

impl fmt::Display for WalAddition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "log_number: {} synced_size_in_bytes: {}",
            self.log_number,
            self.synced_size.unwrap_or(u64::MAX)
        )
    }
}

impl VersionEdit {
    /// RocksDB's `VersionEdit::DebugString(hex_key)`.
    pub fn debug_string(&self, as_hex: bool) -> String {
        String::from_utf8_lossy(&self.debug_bytes(as_hex)).into_owned()
    }

    /// [`VersionEdit::debug_string`] with keys' bytes as they are.
    pub fn debug_bytes(&self, as_hex: bool) -> Vec<u8> {
        let mut r = b"VersionEdit {".to_vec();
        let line = |r: &mut Vec<u8>, name: &str, v: &dyn fmt::Display| {
            let _ = write!(r, "\n  {name}: {v}");
        };
        if let Some(v) = &self.db_id {
            line(&mut r, "DB ID", v);
        }
        if let Some(v) = &self.comparator {
            line(&mut r, "Comparator", v);
        }
        if let Some(v) = self.log_number {
            line(&mut r, "LogNumber", &v);
        }
        if let Some(v) = self.prev_log_number {
            line(&mut r, "PrevLogNumber", &v);
        }
        if let Some(v) = self.next_file_number {
            line(&mut r, "NextFileNumber", &v);
        }
        if let Some(v) = self.max_column_family {
            line(&mut r, "MaxColumnFamily", &v);
        }
        if let Some(v) = self.min_log_number_to_keep {
            line(&mut r, "MinLogNumberToKeep", &v);
        }
        if let Some(v) = self.last_sequence {
            line(&mut r, "LastSeq", &v);
        }
        for (level, key) in &self.compact_cursors {
            let _ = write!(r, "\n  CompactCursor: {level} ");
            push_key(&mut r, key, as_hex);
        }
        // RocksDB keeps deleted files in an ordered set.
        let mut deleted = self.deleted_files.clone();
        deleted.sort_unstable();
        deleted.dedup();
        for (level, number) in &deleted {
            line(&mut r, "DeleteFile", &format!("{level} {number}"));
        }
        for (level, f) in &self.new_files {
            add_file_string(&mut r, *level, f, as_hex);
        }
        for b in &self.blob_file_additions {
            let _ = write!(r, "\n  BlobFileAddition: {b}");
        }
        for g in &self.blob_file_garbages {
            let _ = write!(r, "\n  BlobFileGarbage: {g}");
        }
        for w in &self.wal_additions {
            let _ = write!(r, "\n  WalAddition: {w}");
        }
        if let Some(w) = &self.wal_deletion {
            let _ = write!(r, "\n  WalDeletion: log_number: {}", w.log_number);
        }
        let _ = write!(r, "\n  ColumnFamily: {}", self.column_family);
        if let Some(name) = &self.column_family_add {
            let _ = write!(r, "\n  ColumnFamilyAdd: {name}");
        }
        if self.column_family_drop {
            r.extend_from_slice(b"\n  ColumnFamilyDrop");
        }
        if let Some(n) = self.remaining_entries {
            let _ = write!(r, "\n  AtomicGroup: {n} entries remains");
        }
        if let Some(ts) = &self.full_history_ts_low {
            r.extend_from_slice(b"\n FullHistoryTsLow: ");
            push_raw_or_hex(&mut r, ts, as_hex);
        }
        r.extend_from_slice(b"\n}\n");
        r
    }
}

impl fmt::Display for VersionEdit {
    /// The non-hex `DebugString`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.debug_string(false))
    }
}

impl Version {
    /// RocksDB's `Version::DebugString(hex)`: one `--- level N ---` header
    /// per level and one line per file.
    pub fn debug_string(&self, as_hex: bool) -> String {
        String::from_utf8_lossy(&self.debug_bytes_numbered(as_hex, self.version_number()))
            .into_owned()
    }

    /// [`Version::debug_string`] in bytes, showing `version_number` (a
    /// dump numbers versions as RocksDB's recovery would).
    pub(crate) fn debug_bytes_numbered(&self, as_hex: bool, version_number: u64) -> Vec<u8> {
        let mut r = Vec::new();
        for level in 0..self.num_levels() {
            let _ = write!(r, "--- level {level} --- version# {version_number}");
            if let Some(c) = self.compact_cursor(level) {
                r.extend_from_slice(b" --- compact_cursor: ");
                push_key(&mut r, c, as_hex);
            }
            r.extend_from_slice(b" ---\n");
            for f in self.files(level) {
                let _ = write!(
                    r,
                    " {}:{}[{} .. {}][",
                    f.number, f.file_size, f.smallest_seqno, f.largest_seqno
                );
                push_key(&mut r, &f.smallest, as_hex);
                r.extend_from_slice(b" .. ");
                push_key(&mut r, &f.largest, as_hex);
                r.push(b']');
                if f.oldest_blob_file_number != 0 {
                    let _ = write!(r, " blob_file:{}", f.oldest_blob_file_number);
                }
                r.push(b'\n');
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::dbformat::{ValueType, make_internal_key};

    #[test]
    fn keys_and_unique_ids() {
        let k = make_internal_key(b"k5", 6, ValueType::Value);
        assert_eq!(internal_key_debug_string(&k, false), "'k5' seq:6, type:1");
        assert_eq!(internal_key_debug_string(&k, true), "'6B35' seq:6, type:1");
        assert_eq!(internal_key_debug_string(b"\x01ab", false), "(bad)\\x01ab");
        // Values printed by `ldb manifest_dump` (RocksDB 7.8.3) for /tmp/rdb.
        assert_eq!(
            public_unique_id([17959302418998891990, 2641967448345744760]),
            "9B30B73CAAF728BB-FC1BE081D05FB599"
        );
        assert_eq!(
            public_unique_id([9352908045367642827, 13976932797557061020]),
            "3ECA778D86A22C5A-B29601D7970594F9"
        );
    }

    #[test]
    fn edit_debug_string_matches_ldb() {
        let mut e = VersionEdit::new();
        e.log_number = Some(27);
        e.prev_log_number = Some(0);
        e.next_file_number = Some(32);
        e.last_sequence = Some(6);
        let mut f = FileMetaData::new(
            30,
            983,
            make_internal_key(b"k5", 6, ValueType::Value),
            make_internal_key(b"k5", 6, ValueType::Value),
            6,
            6,
        );
        f.oldest_ancester_time = 1795333316;
        f.unique_id = Some([9352908045367642827, 13976932797557061020]);
        e.add_file(0, f);
        let want = "VersionEdit {\n  LogNumber: 27\n  PrevLogNumber: 0\n  NextFileNumber: 32\n  LastSeq: 6\n  AddFile: 0 30 983 'k5' seq:6, type:1 .. 'k5' seq:6, type:1 oldest_ancester_time:1795333316 file_creation_time:0 file_checksum: file_checksum_func_name: Unknown unique_id(internal): {9352908045367642827,13976932797557061020} public_unique_id: 3ECA778D86A22C5A-B29601D7970594F9\n  ColumnFamily: 0\n}\n";
        assert_eq!(e.to_string(), want);
    }
}
