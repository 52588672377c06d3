//! Direct I/O on Linux (RocksDB's `use_direct_reads` and
//! `use_direct_io_for_flush_and_compaction`): files opened with `O_DIRECT`
//! bypass the page cache, so every read and write must be aligned (offset,
//! length and buffer address) to the device's logical block size; this
//! module uses [`ALIGN`] (4 KiB), a multiple of every common block size.
//!
//! Reads fetch the aligned window around the asked range into an aligned
//! scratch buffer and copy the asked bytes out. Writes keep the unaligned
//! tail in memory: `flush` writes only whole aligned blocks; `sync` and
//! `close` also write the tail padded with zeros (without forgetting it, so
//! later appends rewrite that block) and then cut the file to its logical
//! size. A file system that refuses `O_DIRECT` (tmpfs) gives `NotSupported`
//! naming the file, as the feature is what is missing, not the data.
//!
//! Invariants: `written` (bytes on disk that will not be written again) is
//! a multiple of [`ALIGN`]; `written + tail.len()` is the file's logical
//! size; no buffer handed to the OS is unaligned.

use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::posix::os_err;
use super::{RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// Alignment of every direct read and write (offset, length, address).
pub const ALIGN: usize = 4096;

/// Bytes of whole blocks a writer gathers before writing them.
const WRITE_CHUNK: usize = 1 << 20;

/// `O_DIRECT` of this target (Linux's value differs by architecture).
#[cfg(all(target_os = "linux", any(target_arch = "aarch64", target_arch = "arm")))]
const O_DIRECT: i32 = 0o200_000;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "powerpc", target_arch = "powerpc64")
))]
const O_DIRECT: i32 = 0o400_000;
#[cfg(all(target_os = "linux", any(target_arch = "mips", target_arch = "mips64")))]
const O_DIRECT: i32 = 0o100_000;
#[cfg(all(
    target_os = "linux",
    not(any(
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "mips",
        target_arch = "mips64"
    ))
))]
const O_DIRECT: i32 = 0o40_000;

fn not_supported(path: &Path, e: &io::Error) -> Error {
    Error::NotSupported(format!(
        "direct I/O (O_DIRECT) on {}: {e} (the file system does not support it; turn off \
         use_direct_reads / use_direct_io_for_flush_and_compaction)",
        path.display()
    ))
}

/// Opens `path` with `O_DIRECT` through `opts`.
#[cfg(target_os = "linux")]
fn open_direct(opts: &mut OpenOptions, path: &Path) -> Result<File> {
    match opts.custom_flags(O_DIRECT).open(path) {
        Ok(f) => Ok(f),
        Err(e) if e.raw_os_error() == Some(22) => Err(not_supported(path, &e)), // EINVAL
        Err(e) => Err(os_err("open (direct)", path, e)),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_opts: &mut OpenOptions, path: &Path) -> Result<File> {
    Err(not_supported(
        path,
        &io::Error::other("direct I/O is implemented for Linux only"),
    ))
}

/// A zeroed buffer of `len` bytes (a multiple of [`ALIGN`]) whose start
/// is aligned: a window into a larger allocation.
struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        debug_assert_eq!(len % ALIGN, 0);
        let raw = vec![0u8; len + ALIGN];
        let start = raw.as_ptr().align_offset(ALIGN);
        debug_assert!(start < ALIGN);
        AlignedBuf { raw, start, len }
    }

    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }

    fn as_ref(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }
}

fn align_down(x: u64) -> u64 {
    x - x % ALIGN as u64
}

fn align_up(x: usize) -> usize {
    x.div_ceil(ALIGN) * ALIGN
}

/// A file read with `O_DIRECT`.
#[derive(Debug)]
pub(super) struct DirectRandomAccessFile {
    path: PathBuf,
    file: File,
}

impl DirectRandomAccessFile {
    pub(super) fn open(path: &Path) -> Result<DirectRandomAccessFile> {
        Ok(DirectRandomAccessFile {
            path: path.to_path_buf(),
            file: open_direct(OpenOptions::new().read(true), path)?,
        })
    }
}

impl RandomAccessFile for DirectRandomAccessFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let start = align_down(offset);
        let skip = (offset - start) as usize;
        let mut scratch = AlignedBuf::new(align_up(skip + buf.len()));
        let window = scratch.as_mut();
        let mut done = 0;
        while done < window.len() {
            match self.file.read_at(&mut window[done..], start + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(os_err("read (direct)", &self.path, e)),
            }
            // A short read not at a block boundary is the end of file.
            if done % ALIGN != 0 {
                break;
            }
        }
        let n = done.saturating_sub(skip).min(buf.len());
        buf[..n].copy_from_slice(&scratch.as_ref()[skip..skip + n]);
        Ok(n)
    }

    fn size(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| os_err("stat", &self.path, e))
    }
}

/// A new file written with `O_DIRECT`.
pub(super) struct DirectWritableFile {
    path: PathBuf,
    file: Option<File>,
    /// Bytes on disk for good (a multiple of ALIGN).
    written: u64,
    /// The bytes after `written`, not yet written for good.
    tail: Vec<u8>,
}

impl DirectWritableFile {
    pub(super) fn create(path: &Path) -> Result<DirectWritableFile> {
        let file = open_direct(
            OpenOptions::new().write(true).create(true).truncate(true),
            path,
        )?;
        Ok(DirectWritableFile {
            path: path.to_path_buf(),
            file: Some(file),
            written: 0,
            tail: Vec::with_capacity(WRITE_CHUNK + ALIGN),
        })
    }

    fn file(&self) -> Result<&File> {
        self.file.as_ref().ok_or_else(|| {
            Error::InvalidArgument(format!("{}: file already closed", self.path.display()))
        })
    }

    /// Writes `len` bytes of the tail (padded with zeros to a whole block)
    /// at `written`.
    fn write_tail(&self, len: usize) -> Result<()> {
        let mut buf = AlignedBuf::new(align_up(len));
        buf.as_mut()[..len].copy_from_slice(&self.tail[..len]);
        self.file()?
            .write_all_at(buf.as_ref(), self.written)
            .map_err(|e| os_err("write (direct)", &self.path, e))
    }

    /// Writes the tail's whole blocks for good.
    fn write_whole_blocks(&mut self) -> Result<()> {
        let whole = self.tail.len() - self.tail.len() % ALIGN;
        if whole == 0 {
            return Ok(());
        }
        self.write_tail(whole)?;
        self.tail.drain(..whole);
        self.written += whole as u64;
        debug_assert_eq!(self.written % ALIGN as u64, 0);
        Ok(())
    }

    /// Everything on disk: the whole blocks for good, the last partial one
    /// padded (kept in the tail), the file cut to its logical size.
    fn persist_all(&mut self) -> Result<()> {
        self.write_whole_blocks()?;
        if !self.tail.is_empty() {
            self.write_tail(self.tail.len())?;
        }
        let size = self.size();
        self.file()?
            .set_len(size)
            .map_err(|e| os_err("truncate (direct)", &self.path, e))
    }
}

impl WritableFile for DirectWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file()?;
        self.tail.extend_from_slice(data);
        if self.tail.len() >= WRITE_CHUNK {
            self.write_whole_blocks()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.file()?;
        self.write_whole_blocks()
    }

    fn sync(&mut self) -> Result<()> {
        self.persist_all()?;
        let path = self.path.clone();
        self.file()?
            .sync_all()
            .map_err(|e| os_err("fsync (direct)", &path, e))
    }

    fn close(&mut self) -> Result<()> {
        let res = if self.file.is_some() {
            self.persist_all()
        } else {
            Ok(())
        };
        self.file = None;
        res
    }

    fn size(&self) -> u64 {
        self.written + self.tail.len() as u64
    }
}

impl Drop for DirectWritableFile {
    fn drop(&mut self) {
        // Best effort: nobody can see the error.
        if self.file.is_some() {
            let _ = self.persist_all();
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A directory on a file system that takes O_DIRECT (not tmpfs), or
    /// None.
    fn direct_dir() -> Option<tempfile::TempDir> {
        let d = tempfile::tempdir().ok()?;
        let probe = d.path().join("probe");
        std::fs::write(&probe, b"x").ok()?;
        DirectRandomAccessFile::open(&probe).ok()?;
        Some(d)
    }

    #[test]
    fn direct_writes_and_reads_match_plain_ones() {
        let Some(dir) = direct_dir() else {
            eprintln!("skipping: the temporary directory refuses O_DIRECT");
            return;
        };
        let path = dir.path().join("t");
        let mut want = Vec::new();
        let mut w = DirectWritableFile::create(&path).unwrap();
        let mut x = 7u64;
        for i in 0..400 {
            let n = (x % 9000) as usize + i % 3;
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407)
                >> 3;
            let chunk: Vec<u8> = (0..n).map(|j| (j as u64 ^ x) as u8).collect();
            w.append(&chunk).unwrap();
            want.extend_from_slice(&chunk);
            match i % 50 {
                7 => w.flush().unwrap(),
                // A sync writes the padded tail and cuts the file: its
                // bytes are exactly what was appended so far.
                13 => {
                    w.sync().unwrap();
                    assert_eq!(std::fs::read(&path).unwrap(), want);
                }
                _ => {}
            }
            assert_eq!(w.size(), want.len() as u64);
        }
        w.close().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
        let r = DirectRandomAccessFile::open(&path).unwrap();
        assert_eq!(r.size().unwrap(), want.len() as u64);
        // The kernel has the file open with O_DIRECT.
        use std::os::fd::AsRawFd;
        let info =
            std::fs::read_to_string(format!("/proc/self/fdinfo/{}", r.file.as_raw_fd())).unwrap();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .map(|f| i32::from_str_radix(f.trim(), 8).unwrap())
            .unwrap();
        assert_ne!(flags & O_DIRECT, 0, "{info}");
        for (off, len) in [
            (0usize, 1usize),
            (1, 4095),
            (4095, 2),
            (4096, 4096),
            (10_000, 70_000),
            (want.len() - 3, 10),
            (want.len(), 5),
            (want.len() + 9000, 5),
        ] {
            let mut buf = vec![0u8; len];
            let n = r.read_at(off as u64, &mut buf).unwrap();
            let end = (off + len).min(want.len());
            let expect = if off < want.len() {
                &want[off..end]
            } else {
                &[][..]
            };
            assert_eq!(&buf[..n], expect, "read at {off} of {len}");
        }
    }

    #[test]
    fn a_file_system_without_direct_io_says_not_supported() {
        let shm = Path::new("/dev/shm");
        if !shm.is_dir() {
            return;
        }
        let Ok(dir) = tempfile::tempdir_in(shm) else {
            return;
        };
        let path = dir.path().join("t");
        std::fs::write(&path, b"data").unwrap();
        match DirectRandomAccessFile::open(&path) {
            // tmpfs refuses O_DIRECT on most kernels; newer ones accept it.
            Err(e) => assert!(matches!(e, Error::NotSupported(_)), "{e}"),
            Ok(r) => {
                let mut b = [0u8; 4];
                assert_eq!(r.read_at(0, &mut b).unwrap(), 4);
                assert_eq!(&b, b"data");
            }
        }
    }
}
