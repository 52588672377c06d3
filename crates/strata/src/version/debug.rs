//! Human-readable dumps in the formats of RocksDB 7.8.3's
//! `VersionEdit::DebugString`, `Version::DebugString` and
//! `InternalKey::DebugString`, as `ldb manifest_dump` prints them.
//!
//! Invariant: formatting never fails or panics on any field value (bad keys
//! print as `(bad)` plus an escaped dump, as in RocksDB).

use std::fmt::{self, Write};

use super::edit::{BlobFileAddition, BlobFileGarbage, FileMetaData, VersionEdit, WalAddition};
use super::version::Version;
use crate::format::dbformat::parse_internal_key;

/// Upper-case hex, as RocksDB's `Slice::ToString(true)`.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02X}");
    }
    s
}

fn raw_or_hex(b: &[u8], as_hex: bool) -> String {
    if as_hex {
        hex(b)
    } else {
        String::from_utf8_lossy(b).into_owned()
    }
}

/// RocksDB's `EscapeString`: printable ASCII as is, others as `\xNN`.
fn escape(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        if (b' '..=b'~').contains(&c) {
            s.push(char::from(c));
        } else {
            let _ = write!(s, "\\x{c:02x}");
        }
    }
    s
}

/// `'user_key' seq:N, type:T`, or `(bad)<escaped bytes>`.
pub fn internal_key_debug_string(ikey: &[u8], as_hex: bool) -> String {
    match parse_internal_key(ikey) {
        Some(p) => format!(
            "'{}' seq:{}, type:{}",
            raw_or_hex(p.user_key, as_hex),
            p.sequence,
            p.value_type as u8
        ),
        None => format!("(bad){}", escape(ikey)),
    }
}

fn xxh3_avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}

fn mul128(a: u64, b: u64) -> (u64, u64) {
    let p = u128::from(a) * u128::from(b);
    ((p >> 64) as u64, p as u64)
}

/// RocksDB's `BijectiveHash2x64` with seed 0: `(high, low)`.
fn bijective_hash_2x64(in_high: u64, in_low: u64) -> (u64, u64) {
    let bitflipl: u64 = 0x5997_3f00_3336_2349;
    let bitfliph: u64 = 0xc202_7976_92d6_3d58;
    let (mut hi, mut lo) = mul128(in_low ^ in_high ^ bitflipl, 0x9E37_79B1_85EB_CA87);
    lo = lo.wrapping_add(0x03c0_0000_0000_0000);
    let h = in_high ^ bitfliph;
    hi = hi
        .wrapping_add(h)
        .wrapping_add(u64::from(h as u32).wrapping_mul(0x85EB_CA76));
    lo ^= hi.swap_bytes();
    let (hi2, lo2) = mul128(lo, 0xC2B2_AE3D_27D4_EB4F);
    let hi = hi2.wrapping_add(hi.wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
    (xxh3_avalanche(hi), xxh3_avalanche(lo2))
}

/// RocksDB's public form of an internal unique id, e.g.
/// `9B30B73CAAF728BB-FC1BE081D05FB599`.
pub fn public_unique_id(internal: [u64; 2]) -> String {
    // Offsets so that no external id is all zeros (RocksDB kHi/kLoOffsetForZero).
    let (hi, lo) = bijective_hash_2x64(
        internal[1].wrapping_add(17_391_078_804_906_429_400),
        internal[0].wrapping_add(6_417_269_962_128_484_497),
    );
    let mut bytes = lo.to_le_bytes().to_vec();
    bytes.extend_from_slice(&hi.to_le_bytes());
    let h = hex(&bytes);
    format!("{}-{}", &h[..16], &h[16..])
}

fn add_file_string(out: &mut String, level: u32, f: &FileMetaData, as_hex: bool) {
    let _ = write!(
        out,
        "\n  AddFile: {level} {} {} {} .. {}",
        f.number,
        f.file_size,
        internal_key_debug_string(&f.smallest, as_hex),
        internal_key_debug_string(&f.largest, as_hex)
    );
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
        let mut r = String::from("VersionEdit {");
        let mut line = |name: &str, v: &dyn fmt::Display| {
            let _ = write!(r, "\n  {name}: {v}");
        };
        if let Some(v) = &self.db_id {
            line("DB ID", v);
        }
        if let Some(v) = &self.comparator {
            line("Comparator", v);
        }
        if let Some(v) = self.log_number {
            line("LogNumber", &v);
        }
        if let Some(v) = self.prev_log_number {
            line("PrevLogNumber", &v);
        }
        if let Some(v) = self.next_file_number {
            line("NextFileNumber", &v);
        }
        if let Some(v) = self.max_column_family {
            line("MaxColumnFamily", &v);
        }
        if let Some(v) = self.min_log_number_to_keep {
            line("MinLogNumberToKeep", &v);
        }
        if let Some(v) = self.last_sequence {
            line("LastSeq", &v);
        }
        for (level, key) in &self.compact_cursors {
            let s = format!("{level} {}", internal_key_debug_string(key, as_hex));
            line("CompactCursor", &s);
        }
        for (level, number) in &self.deleted_files {
            line("DeleteFile", &format!("{level} {number}"));
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
            r.push_str("\n  ColumnFamilyDrop");
        }
        if let Some(n) = self.remaining_entries {
            let _ = write!(r, "\n  AtomicGroup: {n} entries remains");
        }
        if let Some(ts) = &self.full_history_ts_low {
            let _ = write!(r, "\n FullHistoryTsLow: {}", raw_or_hex(ts, as_hex));
        }
        r.push_str("\n}\n");
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
        let mut r = String::new();
        for level in 0..self.num_levels() {
            let _ = write!(
                r,
                "--- level {level} --- version# {}",
                self.version_number()
            );
            if let Some(c) = self.compact_cursor(level) {
                let _ = write!(
                    r,
                    " --- compact_cursor: {}",
                    internal_key_debug_string(c, as_hex)
                );
            }
            r.push_str(" ---\n");
            for f in self.files(level) {
                let _ = write!(
                    r,
                    " {}:{}[{} .. {}][{} .. {}]",
                    f.number,
                    f.file_size,
                    f.smallest_seqno,
                    f.largest_seqno,
                    internal_key_debug_string(&f.smallest, as_hex),
                    internal_key_debug_string(&f.largest, as_hex)
                );
                if f.oldest_blob_file_number != 0 {
                    let _ = write!(r, " blob_file:{}", f.oldest_blob_file_number);
                }
                r.push('\n');
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
