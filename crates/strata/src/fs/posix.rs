//! The real file system: [`PosixFileSystem`] implements [`FileSystem`] with
//! `std::fs`.
//!
//! Owns: the OS-backed file handles and the process-wide table of paths
//! locked by [`FileSystem::lock_file`].
//!
//! Invariants:
//! * A [`WritableFile`] keeps at most [`WRITE_BUFFER_SIZE`] bytes in user
//!   space; `flush` hands them to the OS, `sync` also calls `fdatasync`.
//!   After a failed write the buffer holds exactly the bytes the OS did not
//!   take, so a retry never duplicates data.
//! * `read_at` returns fewer bytes than asked only at end of file (it loops
//!   over short reads and `EINTR`).
//! * A path is locked at most once per process (a static set of canonical
//!   paths) and at most once across processes (`flock(LOCK_EX|LOCK_NB)`,
//!   called directly because `File::try_lock` is newer than our MSRV);
//!   both are released when the [`FileLock`] is dropped.
//! * OS errors become `Error::io` (so `ENOSPC` is `Error::NoSpace`), except
//!   "not found", which becomes `Error::NotFound`.

use std::collections::BTreeSet;
use std::ffi::c_int;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};

/// Bytes a [`WritableFile`] buffers before handing them to the OS; appends of
/// at least this size bypass the buffer. 1 MiB, RocksDB's default
/// `writable_file_max_buffer_size`: a flush or compaction output goes to
/// the kernel in 1 MiB writes (with 64 KiB ones, the write system calls'
/// per-call and per-page work was half of a flush thread's time in a
/// WAL-off bulk load; 1 MiB took that load from about 620K to 750K
/// ops/sec, medians of alternating runs).
pub const WRITE_BUFFER_SIZE: usize = 1024 * 1024;

/// Read-ahead buffer size of a [`SequentialFile`].
const READ_BUFFER_SIZE: usize = 64 * 1024;

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct PosixFileSystem;

impl PosixFileSystem {
    /// The real file system.
    pub fn new() -> PosixFileSystem {
        PosixFileSystem
    }
}

/// Maps an OS error for operation `what` on `path`.
pub(super) fn os_err(what: &str, path: &Path, e: io::Error) -> Error {
    if e.kind() == ErrorKind::NotFound {
        Error::NotFound(format!("{what} {}: {e}", path.display()))
    } else {
        Error::io(format!("{what} {}", path.display()), e)
    }
}

fn closed_err(path: &Path) -> Error {
    Error::io(
        format!("write {}", path.display()),
        io::Error::other("file already closed"),
    )
}

struct PosixWritableFile {
    path: PathBuf,
    file: Option<File>,
    buf: Vec<u8>,
    size: u64,
    /// File offset up to which write-back was started (`range_sync`).
    range_synced: u64,
}

impl std::fmt::Debug for PosixWritableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PosixWritableFile")
            .field("path", &self.path)
            .field("buffered", &self.buf.len())
            .field("size", &self.size)
            .finish()
    }
}

/// Writes all of `data`, retrying on `EINTR`; returns how many bytes the OS
/// took before an error, with the error.
fn write_some(file: &mut File, data: &[u8]) -> (usize, io::Result<()>) {
    let mut done = 0;
    while done < data.len() {
        match file.write(&data[done..]) {
            Ok(0) => return (done, Err(io::Error::from(ErrorKind::WriteZero))),
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return (done, Err(e)),
        }
    }
    (done, Ok(()))
}

impl PosixWritableFile {
    fn file(&mut self) -> Result<&mut File> {
        match self.file.as_mut() {
            Some(f) => Ok(f),
            None => Err(closed_err(&self.path)),
        }
    }

    fn flush_buffer(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let Some(file) = self.file.as_mut() else {
            return Err(closed_err(&self.path));
        };
        let (n, res) = write_some(file, &self.buf);
        self.buf.drain(..n);
        res.map_err(|e| os_err("write", &self.path, e))
    }
}

impl WritableFile for PosixWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file()?;
        if self.buf.len() + data.len() > WRITE_BUFFER_SIZE {
            self.flush_buffer()?;
        }
        if data.len() >= WRITE_BUFFER_SIZE {
            let file = self.file()?;
            let (n, res) = write_some(file, data);
            self.size += n as u64;
            return res.map_err(|e| os_err("write", &self.path, e));
        }
        self.buf.extend_from_slice(data);
        self.size += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.file()?;
        self.flush_buffer()
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        let path = self.path.clone();
        self.file()?
            .sync_data()
            .map_err(|e| os_err("fdatasync", &path, e))
    }

    fn close(&mut self) -> Result<()> {
        let res = self.flush();
        self.file = None;
        res
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn range_sync(&mut self) -> Result<()> {
        // Only bytes already written: the buffer stays in user space.
        let written = self.size - self.buf.len() as u64;
        if written <= self.range_synced {
            return Ok(());
        }
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        {
            use std::os::fd::AsRawFd;
            let (Ok(off), Ok(n)) = (
                i64::try_from(self.range_synced),
                i64::try_from(written - self.range_synced),
            ) else {
                return Ok(());
            };
            let fd = self.file()?.as_raw_fd();
            // SAFETY: sync_file_range only reads its integer arguments;
            // `self.file` keeps the descriptor open for the call.
            // Exercised by this module's range-sync test and every flush.
            let rc = unsafe { sync_file_range(fd, off, n, SYNC_FILE_RANGE_WRITE) };
            if rc != 0 {
                return Err(os_err(
                    "sync_file_range",
                    &self.path,
                    io::Error::last_os_error(),
                ));
            }
        }
        self.range_synced = written;
        Ok(())
    }
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
unsafe extern "C" {
    /// Linux's `sync_file_range(2)` (glibc and musl export it).
    fn sync_file_range(
        fd: std::ffi::c_int,
        offset: i64,
        nbytes: i64,
        flags: std::ffi::c_uint,
    ) -> std::ffi::c_int;
}

/// Starts write-back of the range's dirty pages without waiting for it.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
const SYNC_FILE_RANGE_WRITE: std::ffi::c_uint = 2;

impl Drop for PosixWritableFile {
    fn drop(&mut self) {
        // Best effort: nobody can see the error.
        let _ = self.flush_buffer();
    }
}

#[derive(Debug)]
struct PosixRandomAccessFile {
    path: PathBuf,
    file: File,
}

impl RandomAccessFile for PosixRandomAccessFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(os_err("read", &self.path, e)),
            }
        }
        Ok(done)
    }

    fn size(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| os_err("stat", &self.path, e))
    }
}

/// A table file read through a read-only shared memory map.
struct PosixMmapFile {
    map: Arc<memmap2::Mmap>,
}

/// The map's bytes, as [`MappedBytes`] (`Mmap` derefs to them).
struct MapBytes(Arc<memmap2::Mmap>);

impl AsRef<[u8]> for MapBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl RandomAccessFile for PosixMmapFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let data: &[u8] = &self.map;
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    fn size(&self) -> Result<u64> {
        Ok(self.map.len() as u64)
    }

    fn mapped(&self) -> Option<super::MappedBytes> {
        Some(Arc::new(MapBytes(Arc::clone(&self.map))))
    }
}

#[derive(Debug)]
struct PosixSequentialFile {
    path: PathBuf,
    reader: BufReader<File>,
}

impl SequentialFile for PosixSequentialFile {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.reader.read(&mut buf[done..]) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(os_err("read", &self.path, e)),
            }
        }
        Ok(done)
    }

    fn skip(&mut self, n: u64) -> Result<()> {
        let Ok(n) = i64::try_from(n) else {
            return Err(Error::InvalidArgument(format!(
                "skip of {n} bytes in {}",
                self.path.display()
            )));
        };
        self.reader
            .seek_relative(n)
            .map_err(|e| os_err("seek", &self.path, e))
    }
}

// `File::try_lock` is stable only since Rust 1.89 and the workspace MSRV is
// 1.85, so call flock(2) directly (no `libc` dependency). The constants have
// these values on Linux and on the BSDs/macOS.
const LOCK_EX: c_int = 2;
const LOCK_NB: c_int = 4;
const LOCK_UN: c_int = 8;

// errno values (Linux) for which a hard link is not supported rather than
// failed: across file systems, or on one without links.
const EPERM: i32 = 1;
const EXDEV: i32 = 18;
const EOPNOTSUPP: i32 = 95;

unsafe extern "C" {
    #[link_name = "flock"]
    fn sys_flock(fd: c_int, operation: c_int) -> c_int;
}

/// `flock(file, operation)`, retrying on `EINTR`.
fn flock(file: &File, operation: c_int) -> io::Result<()> {
    loop {
        // SAFETY: flock(2) only reads its two integer arguments, and `file`
        // keeps the descriptor open for the duration of the call.
        let rc = unsafe { sys_flock(file.as_raw_fd(), operation) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Canonical paths locked by this process.
static LOCKED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn locked_paths() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    LOCKED.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug)]
struct PosixFileLock {
    /// Canonical path, the key in [`LOCKED`].
    key: PathBuf,
    file: Option<File>,
}

impl FileLock for PosixFileLock {}

impl Drop for PosixFileLock {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            // Closing the descriptor releases the flock too; unlock first so
            // the lock is gone before the path leaves `LOCKED`.
            let _ = flock(&file, LOCK_UN);
            drop(file);
        }
        locked_paths().remove(&self.key);
    }
}

impl FileSystem for PosixFileSystem {
    fn new_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = File::create(path).map_err(|e| os_err("create", path, e))?;
        Ok(Box::new(PosixWritableFile {
            path: path.to_path_buf(),
            file: Some(file),
            buf: Vec::with_capacity(WRITE_BUFFER_SIZE),
            size: 0,
            range_synced: 0,
        }))
    }

    fn reopen_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| os_err("open for append", path, e))?;
        let size = file.metadata().map_err(|e| os_err("stat", path, e))?.len();
        Ok(Box::new(PosixWritableFile {
            path: path.to_path_buf(),
            file: Some(file),
            buf: Vec::with_capacity(WRITE_BUFFER_SIZE),
            size,
            range_synced: size,
        }))
    }

    fn new_random_access_file(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| os_err("open", path, e))?;
        Ok(Arc::new(PosixRandomAccessFile {
            path: path.to_path_buf(),
            file,
        }))
    }

    fn new_direct_random_access_file(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(super::posix_direct::DirectRandomAccessFile::open(
            path,
        )?))
    }

    fn new_direct_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(super::posix_direct::DirectWritableFile::create(
            path,
        )?))
    }

    fn new_mmap_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(super::posix_mmap_write::MmapWritableFile::create(
            path,
        )?))
    }

    fn new_mmap_log_file(&self, path: &Path, preallocate: u64) -> Result<Box<dyn WritableFile>> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if super::posix_mmap_write::maps_safely(dir) {
            Ok(Box::new(
                super::posix_mmap_write::MmapWritableFile::create_log(path, preallocate)?,
            ))
        } else {
            self.new_writable_file(path)
        }
    }

    fn new_mmap_file(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| os_err("open", path, e))?;
        let len = file.metadata().map_err(|e| os_err("stat", path, e))?.len();
        if len == 0 {
            // Nothing to map (and mmap refuses empty files).
            return Ok(Arc::new(PosixRandomAccessFile {
                path: path.to_path_buf(),
                file,
            }));
        }
        // SAFETY: the map is read-only and shared. Strata maps only table
        // files, which are immutable once written and deleted (unlinked,
        // which keeps the pages) only after every reader is gone; a file
        // truncated behind Strata's back would fault, as with RocksDB's
        // mmap reads. Exercised by `tests/plain_table.rs` (PlainTable and
        // block-based tables read through maps).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| os_err("mmap", path, e))?;
        Ok(Arc::new(PosixMmapFile { map: Arc::new(map) }))
    }

    fn new_sequential_file(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = File::open(path).map_err(|e| os_err("open", path, e))?;
        Ok(Box::new(PosixSequentialFile {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(READ_BUFFER_SIZE, file),
        }))
    }

    fn file_exists(&self, path: &Path) -> bool {
        fs::symlink_metadata(path).is_ok()
    }

    fn children(&self, dir: &Path) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| os_err("list", dir, e))? {
            let entry = entry.map_err(|e| os_err("list", dir, e))?;
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
        Ok(out)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| os_err("stat", path, e))
    }

    fn file_modification_time(&self, path: &Path) -> Result<u64> {
        let m = fs::metadata(path).map_err(|e| os_err("stat", path, e))?;
        let t = m
            .modified()
            .map_err(|e| os_err("modification time of", path, e))?;
        Ok(t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()))
    }

    fn delete_file(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| os_err("delete", path, e))
    }

    fn rename_file(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to)
            .map_err(|e| os_err(&format!("rename to {} from", to.display()), from, e))
    }

    fn link_file(&self, from: &Path, to: &Path) -> Result<()> {
        fs::hard_link(from, to).map_err(|e| {
            // As RocksDB: a link across file systems, or on one without
            // links, is not supported (the caller copies).
            match e.raw_os_error() {
                Some(code) if code == EXDEV || code == EPERM || code == EOPNOTSUPP => {
                    Error::NotSupported(format!(
                        "hard link {} to {}: {e}",
                        from.display(),
                        to.display()
                    ))
                }
                _ => os_err(&format!("link to {} from", to.display()), from, e),
            }
        })
    }

    fn overwrite_at(&self, path: &Path, offset: u64, data: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| os_err("open for writing in place", path, e))?;
        let len = file.metadata().map_err(|e| os_err("stat", path, e))?.len();
        if offset
            .checked_add(data.len() as u64)
            .is_none_or(|end| end > len)
        {
            return Err(Error::InvalidArgument(format!(
                "write {} bytes at {offset} of {}: the file has {len} bytes",
                data.len(),
                path.display()
            )));
        }
        file.write_all_at(data, offset)
            .map_err(|e| os_err("write in place", path, e))?;
        file.sync_all().map_err(|e| os_err("sync", path, e))
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| os_err("create dir", dir, e))
    }

    fn delete_dir(&self, dir: &Path) -> Result<()> {
        fs::remove_dir(dir).map_err(|e| os_err("delete dir", dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir)
            .and_then(|f| f.sync_all())
            .map_err(|e| os_err("sync dir", dir, e))
    }

    fn lock_file(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| os_err("open lock file", path, e))?;
        let key = fs::canonicalize(path).map_err(|e| os_err("resolve", path, e))?;
        if !locked_paths().insert(key.clone()) {
            return Err(Error::Busy(format!(
                "lock {}: already held by this process",
                path.display()
            )));
        }
        // From here on `lock` owns the set entry and removes it on any exit.
        let mut lock = PosixFileLock { key, file: None };
        match flock(&file, LOCK_EX | LOCK_NB) {
            Ok(()) => {
                lock.file = Some(file);
                Ok(Box::new(lock))
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => Err(Error::Busy(format!(
                "lock {}: held by another process",
                path.display()
            ))),
            Err(e) => Err(os_err("lock", path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PosixFileSystem) {
        (tempfile::tempdir().unwrap(), PosixFileSystem::new())
    }

    #[test]
    fn write_read_round_trip() {
        let (dir, fs) = setup();
        let p = dir.path().join("f");
        let mut w = fs.new_writable_file(&p).unwrap();
        w.append(b"hello ").unwrap();
        w.append(b"world").unwrap();
        assert_eq!(w.size(), 11);
        // Buffered: not visible to the OS before flush.
        assert_eq!(fs.file_size(&p).unwrap(), 0);
        w.flush().unwrap();
        assert_eq!(fs.file_size(&p).unwrap(), 11);
        let big = vec![7u8; WRITE_BUFFER_SIZE * 2 + 3];
        w.append(&big).unwrap();
        w.sync().unwrap();
        w.close().unwrap();
        assert!(w.append(b"x").is_err());
        let all = fs.read_file(&p).unwrap();
        assert_eq!(&all[..11], b"hello world");
        assert_eq!(&all[11..], &big[..]);

        let r = fs.new_random_access_file(&p).unwrap();
        assert_eq!(r.size().unwrap(), all.len() as u64);
        let mut buf = [0u8; 5];
        assert_eq!(r.read_at(6, &mut buf).unwrap(), 5);
        assert_eq!(&buf, b"world");

        let mut s = fs.new_sequential_file(&p).unwrap();
        s.skip(6).unwrap();
        let mut buf = [0u8; 5];
        assert_eq!(s.read(&mut buf).unwrap(), 5);
        assert_eq!(&buf, b"world");
    }

    #[test]
    fn table_outputs_range_sync_as_they_grow_and_keep_their_bytes() {
        let (dir, fs) = setup();
        let p = dir.path().join("t");
        let mut w =
            crate::fs::new_table_output(&fs, &p, crate::fs::TableWriteMode::Buffered, 64 << 10)
                .unwrap();
        // Appends past the user-space buffer: writes, then range syncs of
        // what was written (none of the buffered tail).
        let data: Vec<u8> = (0..3 * WRITE_BUFFER_SIZE + 12_345)
            .map(|i| (i % 251) as u8)
            .collect();
        for chunk in data.chunks(4096) {
            w.append(chunk).unwrap();
        }
        assert!(w.range_sync().is_ok());
        w.sync().unwrap();
        w.close().unwrap();
        assert_eq!(fs.read_file(&p).unwrap(), data);
        // Directly: nothing written yet is nothing to sync; then a range.
        let q = dir.path().join("q");
        let mut f = fs.new_writable_file(&q).unwrap();
        f.append(b"buffered").unwrap();
        f.range_sync().unwrap();
        f.flush().unwrap();
        f.range_sync().unwrap();
        f.sync().unwrap();
        assert_eq!(fs.read_file(&q).unwrap(), b"buffered");
    }

    #[test]
    fn partial_read_at_eof() {
        let (dir, fs) = setup();
        let p = dir.path().join("f");
        fs.write_file(&p, b"0123456789", true).unwrap();
        let r = fs.new_random_access_file(&p).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(r.read_at(6, &mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"6789");
        assert_eq!(r.read_at(10, &mut buf).unwrap(), 0);
        assert_eq!(r.read_at(100, &mut buf).unwrap(), 0);
        let mut s = fs.new_sequential_file(&p).unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(s.read(&mut buf).unwrap(), 10);
        assert_eq!(s.read(&mut buf).unwrap(), 0);
        // A short read through read_exact_at is a corruption naming the file.
        let e = super::super::read_exact_at(r.as_ref(), "f", 6, 8).unwrap_err();
        assert!(e.is_corruption());
    }

    #[test]
    fn drop_flushes_and_reopen_appends() {
        let (dir, fs) = setup();
        let p = dir.path().join("f");
        {
            let mut w = fs.new_writable_file(&p).unwrap();
            w.append(b"abc").unwrap();
        }
        assert_eq!(fs.read_file(&p).unwrap(), b"abc");
        let mut w = fs.reopen_writable_file(&p).unwrap();
        assert_eq!(w.size(), 3);
        w.append(b"def").unwrap();
        w.close().unwrap();
        assert_eq!(fs.read_file(&p).unwrap(), b"abcdef");
        // Creating truncates.
        fs.write_file(&p, b"z", false).unwrap();
        assert_eq!(fs.read_file(&p).unwrap(), b"z");
    }

    #[test]
    fn directory_operations() {
        let (dir, fs) = setup();
        let sub = dir.path().join("a/b");
        fs.create_dir_all(&sub).unwrap();
        fs.create_dir_all(&sub).unwrap();
        fs.write_file(&sub.join("x"), b"1", false).unwrap();
        fs.write_file(&sub.join("y"), b"22", false).unwrap();
        fs.rename_file(&sub.join("y"), &sub.join("x")).unwrap();
        fs.sync_dir(&sub).unwrap();
        assert_eq!(fs.children(&sub).unwrap(), vec!["x".to_string()]);
        assert_eq!(fs.read_file(&sub.join("x")).unwrap(), b"22");
        assert!(fs.file_exists(&sub.join("x")));
        assert!(!fs.file_exists(&sub.join("y")));
        assert!(fs.delete_dir(&sub).is_err());
        fs.delete_file(&sub.join("x")).unwrap();
        fs.delete_dir(&sub).unwrap();
        assert!(!fs.file_exists(&sub));
    }

    #[test]
    fn missing_files_are_not_found() {
        let (dir, fs) = setup();
        let p = dir.path().join("nope");
        assert!(fs.new_random_access_file(&p).err().unwrap().is_not_found());
        assert!(fs.new_sequential_file(&p).err().unwrap().is_not_found());
        assert!(fs.file_size(&p).unwrap_err().is_not_found());
        assert!(fs.delete_file(&p).unwrap_err().is_not_found());
        assert!(fs.children(&p).unwrap_err().is_not_found());
        assert!(fs.sync_dir(&p).unwrap_err().is_not_found());
        let q = dir.path().join("q");
        assert!(fs.rename_file(&p, &q).unwrap_err().is_not_found());
        assert!(fs.read_file(&p).unwrap_err().is_not_found());
    }

    #[test]
    fn lock_is_busy_twice_and_free_after_drop() {
        let (dir, fs) = setup();
        let p = dir.path().join("LOCK");
        let l = fs.lock_file(&p).unwrap();
        assert!(matches!(fs.lock_file(&p), Err(Error::Busy(_))));
        // The same file through another spelling of its path.
        let other = dir.path().join(".").join("LOCK");
        assert!(matches!(fs.lock_file(&other), Err(Error::Busy(_))));
        // A second flock on another descriptor in this process conflicts too.
        let f = File::open(&p).unwrap();
        let e = flock(&f, LOCK_EX | LOCK_NB).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WouldBlock);
        drop(f);
        drop(l);
        let l2 = fs.lock_file(&p).unwrap();
        drop(l2);
        assert!(fs.file_exists(&p));
    }

    #[test]
    fn default_fs_is_posix() {
        let dir = tempfile::tempdir().unwrap();
        let fs = super::super::default_fs();
        let p = dir.path().join("f");
        fs.write_file(&p, b"data", true).unwrap();
        fs.sync_dir(dir.path()).unwrap();
        assert_eq!(fs.read_file(&p).unwrap(), b"data");
    }
}
