//! `destroy_db`: deletes a database (RocksDB's `DestroyDB`). Only files the
//! database owns by name (tables, WALs, MANIFESTs, CURRENT, OPTIONS, info
//! logs, IDENTITY, the WAL archive) are deleted, then LOCK and the
//! directory if nothing else is left in it; a database that is open (its
//! LOCK held, in this process or another) is refused.

use std::path::Path;

use crate::error::Result;
use crate::filename::{FileType, parse_file_name};
use crate::fs::{FileSystem, default_fs};
use crate::options::Options;

use super::wal_archive::ARCHIVE_DIR_NAME;

/// Deletes the database at `path` (its WALs in `opts.wal_dir`, its tables
/// in `opts.db_paths`). A directory that does not exist is already
/// destroyed: `Ok`.
pub fn destroy_db(opts: &Options, path: impl AsRef<Path>) -> Result<()> {
    let fs = opts.fs.clone().unwrap_or_else(default_fs);
    let dbname = path.as_ref();
    let Ok(children) = fs.children(dbname) else {
        return Ok(());
    };
    let lock_path = dbname.join("LOCK");
    let lock = fs.lock_file(&lock_path)?;
    let mut first_error = None;
    let mut note = |r: Result<()>| {
        if let Err(e) = r
            && first_error.is_none()
        {
            first_error = Some(e);
        }
    };
    for name in &children {
        if name == ARCHIVE_DIR_NAME {
            note(delete_archive(&*fs, &dbname.join(name)));
            continue;
        }
        match parse_file_name(name) {
            Some((_, FileType::DbLock)) | None => {}
            Some(_) => note(fs.delete_file(&dbname.join(name))),
        }
    }
    // Tables (and blobs) in the other table paths, which go when empty
    // (RocksDB's DestroyDB).
    for dir in opts.db_paths.iter().map(|p| p.path.as_path()) {
        if dir == dbname {
            continue;
        }
        let Ok(names) = fs.children(dir) else {
            continue;
        };
        for name in names {
            if let Some((_, FileType::Table | FileType::Blob)) = parse_file_name(&name) {
                note(fs.delete_file(&dir.join(&name)));
            }
        }
        let _ = fs.delete_dir(dir);
    }
    if let Some(wal_dir) = opts.wal_dir.as_deref().filter(|w| *w != dbname) {
        for name in fs.children(wal_dir).unwrap_or_default() {
            if name == ARCHIVE_DIR_NAME {
                note(delete_archive(&*fs, &wal_dir.join(&name)));
            } else if let Some((_, FileType::Wal)) = parse_file_name(&name) {
                note(fs.delete_file(&wal_dir.join(&name)));
            }
        }
        // Only goes when it is empty, as RocksDB's.
        let _ = fs.delete_dir(wal_dir);
    }
    drop(lock);
    // As RocksDB: LOCK and the directory go last, and failing to remove
    // them (another process's files left in it) is not an error.
    let _ = fs.delete_file(&lock_path);
    let _ = fs.delete_dir(dbname);
    first_error.map_or(Ok(()), Err)
}

fn delete_archive(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    for name in fs.children(dir).unwrap_or_default() {
        if let Some((_, FileType::Wal)) = parse_file_name(&name) {
            fs.delete_file(&dir.join(&name))?;
        }
    }
    let _ = fs.delete_dir(dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::DB;
    use crate::fs::mem::MemFileSystem;
    use crate::options::{ReadOptions, WriteOptions};
    use std::path::PathBuf;
    use std::sync::Arc;

    fn opts(fs: &MemFileSystem) -> Options {
        Options {
            create_if_missing: true,
            fs: Some(Arc::new(fs.clone())),
            ..Options::default()
        }
    }

    #[test]
    fn destroys_a_closed_database_and_refuses_an_open_one() {
        let fs = MemFileSystem::new();
        let db = DB::open(opts(&fs), "/db").unwrap();
        db.put(&WriteOptions::default(), b"k", b"v").unwrap();
        db.flush().unwrap();
        db.put(&WriteOptions::default(), b"k2", b"v2").unwrap();
        let err = destroy_db(&opts(&fs), "/db").unwrap_err();
        assert!(err.to_string().contains("lock"), "{err}");
        assert!(
            DB::open(opts(&fs), "/db").is_err(),
            "still open, still locked"
        );
        drop(db);
        // A file the database does not own stays, and so does the directory.
        fs.new_writable_file(&PathBuf::from("/db/mine.txt"))
            .unwrap();
        destroy_db(&opts(&fs), "/db").unwrap();
        assert_eq!(
            fs.children(Path::new("/db")).unwrap(),
            vec!["mine.txt".to_string()]
        );
        let db = DB::open(opts(&fs), "/db").unwrap();
        assert_eq!(db.get(&ReadOptions::default(), b"k").unwrap(), None);
        drop(db);
        fs.delete_file(Path::new("/db/mine.txt")).unwrap();
        destroy_db(&opts(&fs), "/db").unwrap();
        assert!(fs.children(Path::new("/db")).is_err(), "directory removed");
        // Destroying what is not there succeeds.
        destroy_db(&opts(&fs), "/db").unwrap();
    }
}
