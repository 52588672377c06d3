//! The backup meta file (`meta/<id>`), in RocksDB 7.8.3's format, read
//! and written byte for byte as its `BackupMeta::LoadFromFile` and
//! `StoreToFile` do:
//!
//! ```text
//! [schema_version 2.0]          (schema 2 only)
//! <timestamp>
//! <sequence number>
//! [metadata <hex>]              (application metadata, upper-case hex)
//! [<field> <data>]...           (schema 2: unknown fields ignored)
//! <number of files>
//! <path> crc32 <crc32c as unsigned decimal>[ <field> <data>]...
//! [// FOOTER
//! <field> <data>...]            (schema 2)
//! ```
//!
//! Paths are relative to the backup directory. A field whose name starts
//! with `ni::` must be understood (`NotSupported` otherwise), as RocksDB
//! decides.

use crate::error::{Error, Result};

/// One file of a backup as the meta file lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaEntry {
    /// Relative to the backup directory (`private/1/MANIFEST-000005`).
    pub path: String,
    /// crc32c of the whole file, when recorded.
    pub crc32c: Option<u32>,
    /// Its size when the meta file records it (schema 2 `size` field).
    pub size: Option<u64>,
}

/// A parsed meta file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaFile {
    /// Seconds since the Unix epoch.
    pub timestamp: i64,
    pub sequence: u64,
    pub app_metadata: Vec<u8>,
    pub files: Vec<MetaEntry>,
}

const SCHEMA_PREFIX: &str = "schema_version ";
const FOOTER: &str = "// FOOTER";
const NON_IGNORABLE: &str = "ni::";

fn corrupt(msg: impl Into<String>) -> Error {
    Error::corruption("", 0, msg)
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// C's `strtoull` as RocksDB uses it: leading digits, 0 if none.
fn leading_u64(s: &str) -> u64 {
    let digits: String = s
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap_or(0)
}

impl MetaFile {
    /// Parses meta file `text` (its name is used in errors).
    pub fn parse(text: &str, name: &str) -> Result<MetaFile> {
        let mut lines = text.split('\n').peekable();
        // A final newline leaves an empty last piece.
        let mut all: Vec<&str> = Vec::new();
        while let Some(l) = lines.next() {
            if l.is_empty() && lines.peek().is_none() {
                break;
            }
            all.push(l);
        }
        let mut it = all.into_iter();
        let mut major = 1;
        let mut first = it.next().unwrap_or("");
        if let Some(ver) = first.strip_prefix(SCHEMA_PREFIX) {
            if ver == "2" || ver.starts_with("2.") {
                major = 2;
            } else {
                return Err(Error::NotSupported(format!(
                    "Unsupported/unrecognized schema version: {ver}"
                )));
            }
            first = it.next().unwrap_or("");
        } else if first.is_empty() {
            return Err(corrupt("Unexpected empty line"));
        }
        let mut meta = MetaFile {
            timestamp: leading_u64(first) as i64,
            ..Default::default()
        };
        meta.sequence = it.next().map_or(0, leading_u64);
        let mut num_files: Option<usize> = None;
        for line in it.by_ref() {
            if line.is_empty() {
                return Err(corrupt("Unexpected empty line"));
            }
            if line.as_bytes()[0].is_ascii_digit() {
                num_files = Some(leading_u64(line) as usize);
                break;
            }
            let Some((field, data)) = line.split_once(' ') else {
                return Err(corrupt("Expected number of files or meta field"));
            };
            if field == "metadata" {
                meta.app_metadata = hex_decode(data)
                    .ok_or_else(|| corrupt("Failed to decode stored hex encoded app metadata"))?;
            } else if major < 2 {
                return Err(corrupt("Expected number of files or \"metadata\" field"));
            } else if field.starts_with(NON_IGNORABLE) {
                return Err(Error::NotSupported(format!(
                    "Unrecognized non-ignorable meta field {field} (from future version?)"
                )));
            }
        }
        let mut footer = false;
        for line in it.by_ref() {
            let parts: Vec<&str> = line.split(' ').collect();
            if major >= 2 && line == FOOTER {
                footer = true;
                break;
            }
            let path = parts[0].to_string();
            if major >= 2 {
                if parts.len() % 2 != 1 {
                    return Err(corrupt("Bad number of line components for file entry."));
                }
            } else {
                if parts.len() < 3 {
                    return Err(corrupt(format!(
                        "File checksum is missing for {path} in {name}"
                    )));
                }
                if parts[1] != "crc32" {
                    return Err(corrupt(format!(
                        "Unknown checksum type for {path} in {name}"
                    )));
                }
                if parts.len() > 3 {
                    return Err(corrupt(format!("Extra data for entry {path} in {name}")));
                }
            }
            let mut entry = MetaEntry {
                path,
                crc32c: None,
                size: None,
            };
            for pair in parts[1..].chunks(2) {
                let (field, data) = (pair[0], pair[1]);
                match field {
                    "crc32" => {
                        let v = data.parse::<u32>().ok().filter(|v| v.to_string() == data);
                        let Some(v) = v else {
                            return Err(corrupt(format!(
                                "Invalid checksum value for {} in {name}",
                                entry.path
                            )));
                        };
                        entry.crc32c = Some(v);
                    }
                    "size" => entry.size = Some(leading_u64(data)),
                    f if f.starts_with(NON_IGNORABLE) => {
                        return Err(Error::NotSupported(format!(
                            "Unrecognized non-ignorable file field {f} (from future version?)"
                        )));
                    }
                    _ => {}
                }
            }
            meta.files.push(entry);
        }
        if footer {
            for line in it {
                if line.is_empty() {
                    return Err(corrupt("Unexpected empty line"));
                }
                let Some((field, _)) = line.split_once(' ') else {
                    return Err(corrupt("Expected footer field"));
                };
                if field.starts_with(NON_IGNORABLE) {
                    return Err(Error::NotSupported(format!(
                        "Unrecognized non-ignorable field {field} (from future version?)"
                    )));
                }
            }
        }
        if num_files != Some(meta.files.len()) {
            return Err(corrupt(format!(
                "Inconsistent number of files or missing/incomplete header in {name}"
            )));
        }
        Ok(meta)
    }

    /// The meta file's text in schema `schema_version` (1 or 2).
    pub fn render(&self, schema_version: u32) -> Result<String> {
        use std::fmt::Write;
        let mut s = String::new();
        match schema_version {
            1 => {}
            2 => s.push_str("schema_version 2.0\n"),
            0 => {
                return Err(Error::InvalidArgument(
                    "BackupEngineOptions::schema_version must be >= 1".into(),
                ));
            }
            _ => {
                return Err(Error::NotSupported(
                    "Only BackupEngineOptions::schema_version <= 2 is supported".into(),
                ));
            }
        }
        let _ = writeln!(s, "{}", self.timestamp);
        let _ = writeln!(s, "{}", self.sequence);
        if !self.app_metadata.is_empty() {
            s.push_str("metadata ");
            for b in &self.app_metadata {
                let _ = write!(s, "{b:02X}");
            }
            s.push('\n');
        }
        let _ = writeln!(s, "{}", self.files.len());
        for f in &self.files {
            s.push_str(&f.path);
            if let Some(c) = f.crc32c {
                let _ = write!(s, " crc32 {c}");
            }
            s.push('\n');
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_both_schemas() {
        let m = MetaFile {
            timestamp: 1_700_000_000,
            sequence: 42,
            app_metadata: b"hello \x00\xff".to_vec(),
            files: vec![
                MetaEntry {
                    path: "private/1/CURRENT".into(),
                    crc32c: Some(123),
                    size: None,
                },
                MetaEntry {
                    path: "shared_checksum/000007_4000000000_1234.sst".into(),
                    crc32c: Some(4_000_000_000),
                    size: None,
                },
            ],
        };
        for v in [1, 2] {
            let text = m.render(v).unwrap();
            assert_eq!(MetaFile::parse(&text, "m").unwrap(), m, "{text}");
        }
        assert!(m.render(1).unwrap().contains("metadata 68656C6C6F2000FF\n"));
    }

    #[test]
    fn rocksdb_rules_for_damaged_and_future_files() {
        let bad = |t: &str| MetaFile::parse(t, "meta/1").unwrap_err().to_string();
        assert!(bad("1\n2\n3\nf crc32 1\n").contains("Inconsistent number of files"));
        assert!(bad("1\n2\n1\nf\n").contains("File checksum is missing"));
        assert!(bad("1\n2\n1\nf crc32 x1\n").contains("Invalid checksum value"));
        assert!(bad("1\n2\n1\nf md5 1\n").contains("Unknown checksum type"));
        assert!(bad("1\n2\n1\nf crc32 01\n").contains("Invalid checksum value"));
        assert!(bad("1\n2\nfoo bar\n0\n").contains("\"metadata\""));
        assert!(bad("schema_version 3\n1\n2\n0\n").contains("Unsupported"));
        assert!(bad("schema_version 2\n1\n2\nni::x y\n0\n").contains("non-ignorable"));
        // Schema 2: unknown fields ignored, sizes read, a footer.
        let m = MetaFile::parse(
            "schema_version 2.1\n5\n6\nnew_field abc\n1\nf crc32 7 size 99 temp hot\n// FOOTER\nchecksum 1\n",
            "m",
        )
        .unwrap();
        assert_eq!(m.files[0].size, Some(99));
        assert_eq!(m.files[0].crc32c, Some(7));
        assert_eq!((m.timestamp, m.sequence), (5, 6));
    }
}
