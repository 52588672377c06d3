//! RocksDB's file names (`file/filename.cc`): building and parsing the names
//! of every file in a DB directory, and the CURRENT file protocol.
//!
//! Invariants:
//! * Numbers print with at least six digits (`%06llu`); the parser accepts
//!   any number of decimal digits that fits in a u64.
//! * `parse_file_name(name_of(n, t)) == Some((n, t))` for every name built
//!   here.
//! * CURRENT is only ever replaced atomically: the new contents are written
//!   to `NNNNNN.dbtmp`, synced, renamed over CURRENT, and the directory is
//!   synced, in that order (RocksDB's `SetCurrentFile`). A crash at any point
//!   leaves CURRENT naming the old MANIFEST or the new one, never a torn or
//!   missing file.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fs::FileSystem;

/// The kinds of files found in a DB directory (RocksDB's `FileType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileType {
    /// Write-ahead log `NNNNNN.log`.
    Wal,
    /// The `LOCK` file.
    DbLock,
    /// Table file `NNNNNN.sst` (or LevelDB's `NNNNNN.ldb`).
    Table,
    /// `MANIFEST-NNNNNN`.
    Descriptor,
    /// `CURRENT`.
    Current,
    /// Temporary file `NNNNNN.dbtmp` or `OPTIONS-NNNNNN.dbtmp`.
    Temp,
    /// Info log `LOG`, `LOG.old`, `LOG.old.<micros>`.
    InfoLog,
    /// `METADB-NNNNNN` (RocksDB's meta database; never written here).
    MetaDatabase,
    /// `IDENTITY`.
    Identity,
    /// `OPTIONS-NNNNNN`.
    Options,
    /// Blob file `NNNNNN.blob`.
    Blob,
}

/// `000123.log`.
pub fn log_file_name(number: u64) -> String {
    format!("{number:06}.log")
}

/// `000123.sst`.
pub fn table_file_name(number: u64) -> String {
    format!("{number:06}.sst")
}

/// The directories table files live in: RocksDB's `db_paths` resolved,
/// the DB directory alone when none are set. A table's `path_id` in the
/// MANIFEST indexes this list.
///
/// Invariant: never empty; every `path_id` a version holds is below
/// [`TablePaths::len`] (checked when the database opens).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TablePaths {
    dirs: Vec<crate::options::DbPath>,
}

impl TablePaths {
    /// `db_paths`, or `dbname` with no size limit when it is empty.
    pub fn new(dbname: &Path, db_paths: &[crate::options::DbPath]) -> Self {
        let dirs = if db_paths.is_empty() {
            vec![crate::options::DbPath::new(dbname, u64::MAX)]
        } else {
            db_paths.to_vec()
        };
        TablePaths { dirs }
    }

    /// How many directories.
    pub fn len(&self) -> usize {
        self.dirs.len()
    }

    /// Always false (kept for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// The directory of `path_id` (the last one for an index past the
    /// end, which the open refuses before any read).
    pub fn dir(&self, path_id: u32) -> &Path {
        debug_assert!((path_id as usize) < self.dirs.len(), "path_id {path_id}");
        let i = (path_id as usize).min(self.dirs.len() - 1);
        &self.dirs[i].path
    }

    /// The target size of `path_id`.
    pub fn target_size(&self, path_id: u32) -> u64 {
        self.dirs
            .get(path_id as usize)
            .map_or(u64::MAX, |d| d.target_size)
    }

    /// `<dir of path_id>/000123.sst`.
    pub fn table_file(&self, path_id: u32, number: u64) -> PathBuf {
        self.dir(path_id).join(table_file_name(number))
    }

    /// Every directory once, in `path_id` order (a directory listed twice
    /// appears at its first index).
    pub fn distinct_dirs(&self) -> Vec<&Path> {
        let mut out: Vec<&Path> = Vec::new();
        for d in &self.dirs {
            if !out.contains(&d.path.as_path()) {
                out.push(&d.path);
            }
        }
        out
    }

    /// `InvalidArgument` unless `path_id` names one of the directories.
    pub fn check(&self, path_id: u32, number: u64) -> Result<()> {
        if (path_id as usize) < self.dirs.len() {
            return Ok(());
        }
        Err(Error::InvalidArgument(format!(
            "table file {} is in db_paths[{path_id}], but only {} table path(s) are set: \
             open with the db_paths the database was written with",
            table_file_name(number),
            self.dirs.len()
        )))
    }
}

/// `000123.blob`.
pub fn blob_file_name(number: u64) -> String {
    format!("{number:06}.blob")
}

/// `MANIFEST-000005`.
pub fn descriptor_file_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// `OPTIONS-000007`.
pub fn options_file_name(number: u64) -> String {
    format!("OPTIONS-{number:06}")
}

/// `000009.dbtmp`.
pub fn temp_file_name(number: u64) -> String {
    format!("{number:06}.dbtmp")
}

/// `OPTIONS-000007.dbtmp`.
pub fn temp_options_file_name(number: u64) -> String {
    format!("OPTIONS-{number:06}.dbtmp")
}

/// `LOG.old.<micros>`.
pub fn old_info_log_file_name(micros: u64) -> String {
    format!("LOG.old.{micros}")
}

pub const CURRENT_FILE_NAME: &str = "CURRENT";
pub const LOCK_FILE_NAME: &str = "LOCK";
pub const IDENTITY_FILE_NAME: &str = "IDENTITY";
pub const INFO_LOG_FILE_NAME: &str = "LOG";

/// The path of `CURRENT` in `dbname`.
pub fn current_file_path(dbname: &Path) -> PathBuf {
    dbname.join(CURRENT_FILE_NAME)
}

/// Consumes a run of decimal digits: `(value, rest)`. `None` if there is no
/// digit or the value overflows a u64 (RocksDB's `ConsumeDecimalNumber`).
fn consume_decimal(s: &str) -> Option<(u64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let mut v: u64 = 0;
    for b in s[..digits].bytes() {
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some((v, &s[digits..]))
}

/// Parses a file name (a leading `/` is ignored) into its number and type;
/// files without a number (CURRENT, LOCK, IDENTITY, LOG) get number 0, and
/// `LOG.old.<micros>` gets the timestamp. `None` if the name is not one of
/// RocksDB's.
pub fn parse_file_name(name: &str) -> Option<(u64, FileType)> {
    let rest = match name.strip_prefix('/') {
        Some(r) if !r.is_empty() => r,
        _ => name,
    };
    match rest {
        IDENTITY_FILE_NAME => return Some((0, FileType::Identity)),
        CURRENT_FILE_NAME => return Some((0, FileType::Current)),
        LOCK_FILE_NAME => return Some((0, FileType::DbLock)),
        _ => {}
    }
    if let Some(r) = rest.strip_prefix(INFO_LOG_FILE_NAME) {
        if r.is_empty() || r == ".old" {
            return Some((0, FileType::InfoLog));
        }
        let ts = r.strip_prefix(".old.")?;
        return match consume_decimal(ts)? {
            (n, "") => Some((n, FileType::InfoLog)),
            _ => None,
        };
    }
    if let Some(r) = rest.strip_prefix("MANIFEST-") {
        return match consume_decimal(r)? {
            (n, "") => Some((n, FileType::Descriptor)),
            _ => None,
        };
    }
    if let Some(r) = rest.strip_prefix("METADB-") {
        return match consume_decimal(r)? {
            (n, "") => Some((n, FileType::MetaDatabase)),
            _ => None,
        };
    }
    if let Some(r) = rest.strip_prefix("OPTIONS-") {
        let (r, temp) = match r.strip_suffix(".dbtmp") {
            Some(r) => (r, true),
            None => (r, false),
        };
        return match consume_decimal(r)? {
            (n, "") if temp => Some((n, FileType::Temp)),
            (n, "") => Some((n, FileType::Options)),
            _ => None,
        };
    }
    let (n, suffix) = consume_decimal(rest)?;
    let t = match suffix {
        ".log" => FileType::Wal,
        ".sst" | ".ldb" => FileType::Table,
        ".blob" => FileType::Blob,
        ".dbtmp" => FileType::Temp,
        _ => return None,
    };
    Some((n, t))
}

/// Points CURRENT at `MANIFEST-<manifest_number>`: writes
/// `MANIFEST-NNNNNN\n` to `NNNNNN.dbtmp`, syncs it, renames it over CURRENT
/// and syncs the directory. On failure before the rename the temp file is
/// removed (best effort); after a failed directory sync CURRENT may name
/// either MANIFEST, so the caller must treat the outcome as unknown.
pub fn set_current_file(fs: &dyn FileSystem, dbname: &Path, manifest_number: u64) -> Result<()> {
    let contents = format!("{}\n", descriptor_file_name(manifest_number));
    let tmp = dbname.join(temp_file_name(manifest_number));
    replace_file_atomically(
        fs,
        dbname,
        &tmp,
        &current_file_path(dbname),
        contents.as_bytes(),
    )
}

/// Makes `dst` (in directory `dir`) hold exactly `contents`, or leaves it
/// as it was: writes and syncs `tmp`, renames it over `dst`, syncs `dir`.
/// On failure `tmp` is removed (best effort).
pub fn replace_file_atomically(
    fs: &dyn FileSystem,
    dir: &Path,
    tmp: &Path,
    dst: &Path,
    contents: &[u8],
) -> Result<()> {
    let written = (|| {
        let mut f = fs.new_writable_file(tmp)?;
        f.append(contents)?;
        f.sync()?;
        f.close()?;
        crate::crash_point!("replace::after_tmp_sync");
        fs.rename_file(tmp, dst)
    })();
    if let Err(e) = written {
        let _ = fs.delete_file(tmp);
        return Err(e);
    }
    crate::crash_point!("replace::after_rename");
    fs.sync_dir(dir)
}

/// Reads CURRENT and returns the MANIFEST file name it names (without the
/// newline). Errors as RocksDB's `GetCurrentManifestPath`: a missing
/// newline is "CURRENT file does not end with newline", a name that is not
/// `MANIFEST-<number>` is "CURRENT file corrupted".
pub fn read_current_file(fs: &dyn FileSystem, dbname: &Path) -> Result<String> {
    let path = current_file_path(dbname);
    let data = fs.read_file(&path)?;
    let shown = path.display();
    let Some((&b'\n', name)) = data.split_last() else {
        let at = data.len() as u64;
        return Err(Error::corruption(
            shown,
            at,
            "CURRENT file does not end with newline",
        ));
    };
    match std::str::from_utf8(name).ok() {
        Some(n) if matches!(parse_file_name(n), Some((_, FileType::Descriptor))) => {
            Ok(n.to_string())
        }
        _ => Err(Error::corruption(shown, 0, "CURRENT file corrupted")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::fault::{FailMode, FaultInjectionFileSystem, OpKind};
    use crate::fs::mem::MemFileSystem;
    use std::sync::Arc;

    #[test]
    fn names_round_trip() {
        let cases: Vec<(String, u64, FileType)> = vec![
            (log_file_name(123), 123, FileType::Wal),
            (table_file_name(7), 7, FileType::Table),
            (blob_file_name(8), 8, FileType::Blob),
            (descriptor_file_name(5), 5, FileType::Descriptor),
            (options_file_name(7), 7, FileType::Options),
            (temp_file_name(9), 9, FileType::Temp),
            (temp_options_file_name(9), 9, FileType::Temp),
            (
                old_info_log_file_name(1795333316760444),
                1795333316760444,
                FileType::InfoLog,
            ),
            (table_file_name(12345678), 12345678, FileType::Table),
        ];
        for (name, n, t) in cases {
            assert_eq!(parse_file_name(&name), Some((n, t)), "{name}");
        }
        assert_eq!(log_file_name(123), "000123.log");
        assert_eq!(descriptor_file_name(5), "MANIFEST-000005");
        assert_eq!(table_file_name(12345678), "12345678.sst");
        assert_eq!(temp_file_name(9), "000009.dbtmp");
    }

    #[test]
    fn parse_examples() {
        use FileType::*;
        let ok = [
            ("CURRENT", 0, Current),
            ("/CURRENT", 0, Current),
            ("LOCK", 0, DbLock),
            ("IDENTITY", 0, Identity),
            ("LOG", 0, InfoLog),
            ("LOG.old", 0, InfoLog),
            ("LOG.old.42", 42, InfoLog),
            ("000123.ldb", 123, Table),
            ("1.sst", 1, Table),
            ("MANIFEST-1", 1, Descriptor),
            ("METADB-3", 3, MetaDatabase),
            ("18446744073709551615.log", u64::MAX, Wal),
        ];
        for (name, n, t) in ok {
            assert_eq!(parse_file_name(name), Some((n, t)), "{name}");
        }
        let bad = [
            "",
            "/",
            "foo",
            "CURRENTX",
            "LOG.old.",
            "LOG.old.x",
            "LOGX",
            "MANIFEST-",
            "MANIFEST-12x",
            "MANIFEST-x",
            "OPTIONS-",
            "OPTIONS-1x",
            "100",
            "100.",
            "100.txt",
            ".sst",
            "18446744073709551616.log",
            "000123.sst.bak",
        ];
        for name in bad {
            assert_eq!(parse_file_name(name), None, "{name}");
        }
    }

    fn mem_db() -> (MemFileSystem, PathBuf) {
        let fs = MemFileSystem::new();
        let db = PathBuf::from("/db");
        fs.create_dir_all(&db).unwrap();
        (fs, db)
    }

    #[test]
    fn current_file_round_trip_and_errors() {
        let (fs, db) = mem_db();
        assert!(read_current_file(&fs, &db).unwrap_err().is_not_found());
        set_current_file(&fs, &db, 5).unwrap();
        assert_eq!(read_current_file(&fs, &db).unwrap(), "MANIFEST-000005");
        assert_eq!(
            fs.read_file(&db.join("CURRENT")).unwrap(),
            b"MANIFEST-000005\n"
        );
        assert!(!fs.file_exists(&db.join("000005.dbtmp")));
        // Durable after return, whatever the crash keeps.
        fs.crash(1);
        assert_eq!(read_current_file(&fs, &db).unwrap(), "MANIFEST-000005");

        fs.write_file(&db.join("CURRENT"), b"MANIFEST-000005", true)
            .unwrap();
        let e = read_current_file(&fs, &db).unwrap_err();
        assert!(
            e.to_string()
                .contains("CURRENT file does not end with newline")
        );
        assert!(e.is_corruption());
        fs.write_file(&db.join("CURRENT"), b"", true).unwrap();
        let e = read_current_file(&fs, &db).unwrap_err();
        assert!(e.to_string().contains("does not end with newline"), "{e}");
        fs.write_file(&db.join("CURRENT"), b"000005.log\n", true)
            .unwrap();
        let e = read_current_file(&fs, &db).unwrap_err();
        assert!(e.to_string().contains("CURRENT file corrupted"), "{e}");
        fs.write_file(&db.join("CURRENT"), b"MANIFEST-\xff\n", true)
            .unwrap();
        assert!(read_current_file(&fs, &db).unwrap_err().is_corruption());
    }

    #[test]
    fn set_current_steps_in_order() {
        // Fail the k-th operation for every k: the failed operations, in
        // order, are the steps of the protocol.
        let mut steps = Vec::new();
        for k in 0.. {
            let (mem, db) = mem_db();
            set_current_file(&mem, &db, 1).unwrap();
            let fs = FaultInjectionFileSystem::new(Arc::new(mem.clone()));
            fs.fail_after(k, FailMode::Once);
            let r = set_current_file(&fs, &db, 2);
            let Some((kind, path)) = fs.last_injected() else {
                r.unwrap();
                break;
            };
            assert!(r.is_err(), "{kind:?}");
            steps.push((kind, path.replace("/db/", "")));
            // Whatever failed, CURRENT names one of the two MANIFESTs, and
            // before the rename it is still the old one.
            let got = read_current_file(&mem, &db).unwrap();
            if kind == OpKind::SyncDir {
                assert_eq!(got, "MANIFEST-000002");
            } else {
                assert_eq!(got, "MANIFEST-000001", "{kind:?}");
                assert!(!mem.file_exists(&db.join("000002.dbtmp")), "{kind:?}");
            }
        }
        let want = [
            (OpKind::NewWritable, "000002.dbtmp"),
            (OpKind::Append, "000002.dbtmp"),
            (OpKind::Sync, "000002.dbtmp"),
            (OpKind::Close, "000002.dbtmp"),
            (OpKind::Rename, "000002.dbtmp -> CURRENT"),
            (OpKind::SyncDir, "/db"),
        ];
        let got: Vec<(OpKind, &str)> = steps.iter().map(|(k, p)| (*k, p.as_str())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn crash_during_switch_keeps_old_or_new() {
        let (mut old, mut new) = (false, false);
        for seed in 0..200 {
            let (fs, db) = mem_db();
            set_current_file(&fs, &db, 1).unwrap();
            let faulty = FaultInjectionFileSystem::new(Arc::new(fs.clone()));
            faulty.fail_op(&[OpKind::SyncDir], None, 0, FailMode::Once);
            let _ = set_current_file(&faulty, &db, 2);
            fs.crash(seed);
            match read_current_file(&fs, &db).unwrap().as_str() {
                "MANIFEST-000001" => old = true,
                "MANIFEST-000002" => new = true,
                other => panic!("seed {seed}: {other}"),
            }
        }
        assert!(old && new);
    }
}
