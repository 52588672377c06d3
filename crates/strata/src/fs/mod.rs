//! Layer 1: every byte Strata reads or writes goes through a [`FileSystem`],
//! so tests can run in memory, simulate power loss and inject faults.
//!
//! Implementations:
//! * [`posix::PosixFileSystem`]: the real operating system.
//! * [`mem::MemFileSystem`]: in memory, and *crashable*: it tracks what was
//!   synced (file bytes and directory entries) and on a simulated power loss
//!   keeps only synced state plus a random subset of unsynced writes.
//! * [`fault::FaultInjectionFileSystem`]: wraps another file system and fails
//!   chosen operations (the k-th, once or from then on, by kind or path), or
//!   returns `NoSpace` past a byte quota.
//!
//! Contract shared by all implementations:
//! * `WritableFile::sync` makes the file's bytes written so far durable; a
//!   new file's directory entry is durable only after `sync_dir` on its
//!   parent directory (as on Linux/ext4 without `dirsync`).
//! * `rename_file` is atomic: a reader sees the old or the new target.
//! * `RandomAccessFile::read_at` returns fewer bytes than asked only at EOF.

pub mod buffer;
pub mod checksum_file;
pub mod fault;
pub mod mem;
pub mod posix;
mod posix_direct;
mod posix_mmap_write;
pub mod range_sync;

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};

/// A file being written sequentially (WAL, table, MANIFEST).
pub trait WritableFile: Send {
    /// Appends `data` at the end of the file (possibly buffered).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered data to the operating system (survives a process crash).
    fn flush(&mut self) -> Result<()>;
    /// Flushes and makes all appended data durable (survives power loss).
    fn sync(&mut self) -> Result<()>;
    /// Flushes and closes; later calls fail.
    fn close(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn size(&self) -> u64;
    /// Ends the appends: the file is exactly [`WritableFile::size`] bytes
    /// long once this returns (a memory-mapped log drops its zero tail);
    /// `sync` still works, appends fail. The default flushes.
    fn seal(&mut self) -> Result<()> {
        self.flush()
    }
    /// Starts writing back to the disk the bytes already handed to the OS,
    /// without waiting for it and without any durability promise
    /// (RocksDB's `RangeSync`: `sync_file_range(SYNC_FILE_RANGE_WRITE)`),
    /// so the `sync` that ends a large file waits for less. A hint: the
    /// default does nothing.
    fn range_sync(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A file read at arbitrary offsets by many threads (tables).
pub trait RandomAccessFile: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`; returns the count, which is
    /// smaller than `buf.len()` only at end of file.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize>;
    /// The file's size in bytes.
    fn size(&self) -> Result<u64>;
    /// The whole file as memory, when it is memory-mapped
    /// ([`FileSystem::new_mmap_file`]); `None` otherwise.
    fn mapped(&self) -> Option<MappedBytes> {
        None
    }
}

/// A memory-mapped file's bytes, shared by whoever reads them.
pub type MappedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A file read front to back once (WAL, MANIFEST replay).
pub trait SequentialFile: Send {
    /// Reads up to `buf.len()` bytes; 0 means end of file.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
    /// Skips `n` bytes.
    fn skip(&mut self, n: u64) -> Result<()>;
}

/// How flush and compaction outputs are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableWriteMode {
    /// Appends buffered in user space, then `write()` (the default).
    #[default]
    Buffered,
    /// Bypassing the page cache (`use_direct_io_for_flush_and_compaction`).
    Direct,
    /// Copies into shared memory maps (`allow_mmap_writes`).
    Mmap,
}

/// Creates table file `path` for a flush or compaction output, written as
/// `mode` says; a buffered one starts writing back every `bytes_per_sync`
/// bytes (0: never), see [`range_sync::RangeSyncFile`].
pub fn new_table_output(
    fs: &dyn FileSystem,
    path: &Path,
    mode: TableWriteMode,
    bytes_per_sync: u64,
) -> Result<Box<dyn WritableFile>> {
    match mode {
        TableWriteMode::Buffered if bytes_per_sync > 0 => Ok(Box::new(
            range_sync::RangeSyncFile::new(fs.new_writable_file(path)?, bytes_per_sync),
        )),
        TableWriteMode::Buffered => fs.new_writable_file(path),
        TableWriteMode::Direct => fs.new_direct_writable_file(path),
        TableWriteMode::Mmap => fs.new_mmap_writable_file(path),
    }
}

/// A held lock on a file (the DB's `LOCK`); released on drop.
pub trait FileLock: Send + Sync {}

/// What [`FileSystem::new_writable_file`] and friends open or create.
pub trait FileSystem: Send + Sync {
    /// Creates `path` (truncating an existing file) for writing.
    fn new_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens `path` for appending, creating it if missing.
    fn reopen_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    fn new_random_access_file(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens `path` for reads through a memory map where the file system
    /// can map files (RocksDB's `allow_mmap_reads`): reads copy from the
    /// map, and [`RandomAccessFile::mapped`] hands the bytes out. Other
    /// file systems open it as [`new_random_access_file`] does.
    ///
    /// [`new_random_access_file`]: FileSystem::new_random_access_file
    fn new_mmap_file(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.new_random_access_file(path)
    }
    /// Opens `path` for reads that bypass the OS page cache (RocksDB's
    /// `use_direct_reads`; `O_DIRECT` on Linux). `NotSupported` where the
    /// file system refuses it. File systems without a page cache (the
    /// in-memory one) open it as [`new_random_access_file`] does.
    ///
    /// [`new_random_access_file`]: FileSystem::new_random_access_file
    fn new_direct_random_access_file(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.new_random_access_file(path)
    }
    /// Creates `path` for writes that bypass the OS page cache (RocksDB's
    /// `use_direct_io_for_flush_and_compaction`), as
    /// [`new_direct_random_access_file`] does for reads.
    ///
    /// [`new_direct_random_access_file`]: FileSystem::new_direct_random_access_file
    fn new_direct_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.new_writable_file(path)
    }
    /// Creates `path` for writes copied into shared memory maps (RocksDB's
    /// `allow_mmap_writes`, which it uses for table files only). File
    /// systems without maps (the in-memory one) create it as
    /// [`new_writable_file`] does.
    ///
    /// [`new_writable_file`]: FileSystem::new_writable_file
    fn new_mmap_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.new_writable_file(path)
    }
    /// A new write-ahead log written through a shared memory map where the
    /// file system makes that safe (see `posix_mmap_write`): appends are
    /// copies into the page cache, no system call each. While it is being
    /// written the file may end in zeros (a reserved region), which log
    /// readers take for the end of the log; [`WritableFile::seal`] and
    /// `close` cut them. The default (and any file system where mapped
    /// stores could fault) is [`FileSystem::new_writable_file`].
    /// `preallocate`: bytes reserved on disk at a time.
    fn new_mmap_log_file(&self, path: &Path, preallocate: u64) -> Result<Box<dyn WritableFile>> {
        let _ = preallocate;
        self.new_writable_file(path)
    }
    fn new_sequential_file(&self, path: &Path) -> Result<Box<dyn SequentialFile>>;
    fn file_exists(&self, path: &Path) -> bool;
    /// Names (not paths) of the entries of directory `dir`.
    fn children(&self, dir: &Path) -> Result<Vec<String>>;
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// When `path` was last written, in seconds since the Unix epoch
    /// (RocksDB's `GetFileModificationTime`; WAL archive TTLs use it).
    fn file_modification_time(&self, path: &Path) -> Result<u64> {
        let _ = path;
        Err(crate::error::Error::NotSupported(
            "file modification times on this file system".into(),
        ))
    }
    fn delete_file(&self, path: &Path) -> Result<()>;
    /// Atomically replaces `to` by `from`. A directory `from` moves with
    /// its contents (`to` must not exist then).
    fn rename_file(&self, from: &Path, to: &Path) -> Result<()>;
    /// Makes `to` a second name of the file `from` (a hard link), as
    /// RocksDB's `FileSystem::LinkFile`. `NotSupported` where the file
    /// system cannot (across devices, or a file system without links):
    /// callers copy instead.
    fn link_file(&self, from: &Path, to: &Path) -> Result<()> {
        let _ = (from, to);
        Err(crate::error::Error::NotSupported(
            "hard links on this file system".into(),
        ))
    }
    /// Writes `data` over the bytes at `offset` of the existing file `path`
    /// (which must already hold them) and syncs the file: durable on
    /// return. RocksDB's `NewRandomRWFile` + `Write` + `Sync`, which
    /// ingestion uses to stamp a global sequence number into a table.
    /// `NotSupported` where the file system cannot write in place.
    fn overwrite_at(&self, path: &Path, offset: u64, data: &[u8]) -> Result<()> {
        let _ = (path, offset, data);
        Err(crate::error::Error::NotSupported(
            "writes in place on this file system".into(),
        ))
    }
    /// Creates `dir` and its parents; succeeds if it exists.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Removes an empty directory.
    fn delete_dir(&self, dir: &Path) -> Result<()>;
    /// Makes `dir`'s entries (creations, renames, deletions) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Takes an exclusive lock on `path` (creating it), `Busy` if held.
    fn lock_file(&self, path: &Path) -> Result<Box<dyn FileLock>>;

    /// Reads a whole file.
    fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        let mut f = self.new_sequential_file(path)?;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// Writes a whole file, optionally syncing it.
    fn write_file(&self, path: &Path, data: &[u8], sync: bool) -> Result<()> {
        let mut f = self.new_writable_file(path)?;
        f.append(data)?;
        if sync {
            f.sync()?;
        }
        f.close()
    }
}

/// The shared handle type for file systems.
pub type FileSystemRef = Arc<dyn FileSystem>;

/// The real operating system's file system.
pub fn default_fs() -> FileSystemRef {
    Arc::new(posix::PosixFileSystem::new())
}

/// REQUIRES: the caller checked `offset + len` against the file size, so
/// `len` never comes unchecked from disk.
///
/// Reads exactly `len` bytes at `offset`, or fails with a corruption error
/// naming the file if the file is shorter ("truncated block read").
pub fn read_exact_at(
    file: &dyn RandomAccessFile,
    name: &str,
    offset: u64,
    len: usize,
) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let n = file.read_at(offset, &mut buf)?;
    if n != len {
        return Err(crate::error::Error::corruption(
            name,
            offset,
            format!("truncated block read: wanted {len} bytes, got {n}"),
        ));
    }
    Ok(buf)
}

/// Bytes [`copy_file`] moves per read.
const COPY_CHUNK_SIZE: usize = 1 << 20;

/// Copies `src` to `dst` on `fs` (at most `limit` bytes; an error if
/// `src` is shorter than `limit`), synced.
pub fn copy_file(fs: &dyn FileSystem, src: &Path, dst: &Path, limit: Option<u64>) -> Result<()> {
    copy_file_between(fs, src, fs, dst, limit, true, &mut |_| {}).map(|_| ())
}

/// Copies `src` on `src_fs` to `dst` on `dst_fs` (at most `limit` bytes;
/// an error if `src` is shorter than `limit`), handing each chunk to
/// `on_chunk` once written; with `sync`, durable on return. Returns the
/// bytes copied.
pub fn copy_file_between(
    src_fs: &dyn FileSystem,
    src: &Path,
    dst_fs: &dyn FileSystem,
    dst: &Path,
    limit: Option<u64>,
    sync: bool,
    on_chunk: &mut dyn FnMut(&[u8]),
) -> Result<u64> {
    let mut input = src_fs.new_sequential_file(src)?;
    let mut output = dst_fs.new_writable_file(dst)?;
    let mut left = limit.unwrap_or(u64::MAX);
    let mut buf = vec![0u8; COPY_CHUNK_SIZE];
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = input.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        output.append(&buf[..n])?;
        on_chunk(&buf[..n]);
        left -= n as u64;
    }
    let size = output.size();
    if let Some(limit) = limit
        && size < limit
    {
        return Err(Error::io(
            format!("copy {}", src.display()),
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("file too small: {size} bytes, {limit} expected"),
            ),
        ));
    }
    if sync {
        output.sync()?;
    }
    output.close()?;
    Ok(size)
}

/// Seconds since the Unix epoch now (0 if the clock is before it).
pub(crate) fn unix_seconds_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
