//! Memory-mapped writes (RocksDB's `allow_mmap_writes`, its
//! `PosixMmapFile`): a table file being written is extended in regions
//! (64 KiB, doubling up to 1 MiB per region, as RocksDB), each region
//! reserved on disk with `posix_fallocate` and mapped shared; appends are
//! copies into the map, so no `write()` call happens per append and the
//! bytes are in the page cache (they survive a process crash) as soon as
//! they are copied.
//!
//! The space is reserved before the region is mapped because a store into
//! a shared map of a sparse file that the disk cannot back raises SIGBUS:
//! with the blocks allocated first, a full disk is an `ENOSPC` error of
//! `posix_fallocate`, returned by `append`, on file systems that allocate
//! in place (ext4, xfs, tmpfs). Copy-on-write file systems (btrfs) may
//! still need space when a mapped page is first written back, and answer a
//! full disk there with SIGBUS, as they do for RocksDB's mapped writes:
//! do not use `allow_mmap_writes` on them.
//!
//! The file is longer than what was appended while a region is mapped (the
//! rest of the region is zeros). `sync` and `close` unmap the region and cut
//! the file to its logical size before they return, and `sync` makes that
//! size durable with the data (`msync` of the region, then `fdatasync`),
//! so a synced table never has a zero tail, even after a power loss. A
//! process crash between appends leaves the zero tail on a file that was
//! never synced; such a file (an unfinished flush or compaction output) is
//! not in the MANIFEST and is deleted at the next open.
//!
//! RocksDB maps only table files (its WAL and MANIFEST writers turn mmap
//! writes off). Strata also maps write-ahead logs, by default
//! (`Options::mmap_wal_writes`), on the file systems that allocate in place
//! ([`maps_safely`]: ext2/3/4, xfs, tmpfs; elsewhere logs are written with
//! `write()`). A log (`create_log`) differs from a table in three ways:
//! `sync` keeps the region mapped (`msync` of what was appended, then
//! `fdatasync`; the zero tail stays reserved on disk), `seal` cuts the
//! file to its logical size when the log is switched away from (before any
//! write goes to the next log, so only the newest log can ever end in
//! zeros), and the log reader takes zero-filled space for the end of the
//! log. So a process crash leaves the newest log with a zero tail after its
//! last record, which recovery treats as the end of the log (RocksDB's
//! readers skip zero-filled space too).
//!
//! Invariants: `region_offset` is a multiple of the page size;
//! `region_offset <= size <= region_offset + region.len()` while a region
//! is mapped; the file on disk is at least `region_offset + region.len()`
//! bytes long while it is mapped and exactly `size` bytes when none is.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use super::WritableFile;
use super::posix::os_err;
use crate::error::{Error, Result};

/// First region's size (RocksDB: 64 KiB rounded up to the page size).
const FIRST_REGION: usize = 64 * 1024;
/// Regions double up to this size (RocksDB's 1 MiB).
const MAX_REGION: usize = 1 << 20;
/// A log's regions double up to this size (fewer `mmap`/`munmap` calls
/// on the write path).
const MAX_LOG_REGION: usize = 4 << 20;
/// Alignment of a region's file offset. mmap(2) needs the page size; 64 KiB
/// is a multiple of every page size Linux uses for files (4, 16, 64 KiB).
const REGION_ALIGN: u64 = 64 * 1024;

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
unsafe extern "C" {
    /// glibc's and musl's `posix_fallocate`: `fallocate(2)` where the file
    /// system has it, zeros written otherwise; returns an errno value.
    fn posix_fallocate(fd: std::ffi::c_int, offset: i64, len: i64) -> std::ffi::c_int;
}

/// Reserves `[offset, offset + len)` of `file` on disk, extending it.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn reserve(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let (Ok(off), Ok(n)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    loop {
        // SAFETY: posix_fallocate only reads its integer arguments; `file`
        // keeps the descriptor open for the call. Exercised by this
        // module's tests and by tests/mmap_writes.rs.
        let rc = unsafe { posix_fallocate(file.as_raw_fd(), off, n) };
        match rc {
            0 => return Ok(()),
            4 => continue, // EINTR
            e => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

/// Whether shared-map stores into files under `dir` cannot fault on a full
/// disk: the file system allocates the blocks `posix_fallocate` reserves
/// in place (ext2/3/4, xfs, tmpfs). Copy-on-write and network file systems
/// (btrfs, zfs, NFS, overlayfs over them) are not trusted.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub(super) fn maps_safely(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const EXT: i64 = 0xEF53;
    const XFS: i64 = 0x5846_5342;
    const TMPFS: i64 = 0x0102_1994;
    unsafe extern "C" {
        /// glibc's and musl's `statfs(2)`.
        fn statfs(path: *const std::ffi::c_char, buf: *mut u64) -> std::ffi::c_int;
    }
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // `struct statfs` is 120 bytes on 64-bit Linux, `f_type` (a long) its
    // first field; the buffer is larger than every 64-bit layout.
    let mut buf = [0u64; 32];
    // SAFETY: `c` is a NUL-terminated path; `buf` is writable and bigger
    // than the kernel's `struct statfs`, which statfs fills. Exercised by
    // this module's tests and every database opened on the real file
    // system.
    let rc = unsafe { statfs(c.as_ptr(), buf.as_mut_ptr()) };
    rc == 0 && matches!(buf[0] as i64, EXT | XFS | TMPFS)
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub(super) fn maps_safely(_dir: &Path) -> bool {
    false
}

/// Makes the pages of `[addr, addr + len)` present and writable in this
/// process's page tables without touching their contents (Linux's
/// `MADV_POPULATE_WRITE`, since 5.14; older kernels answer `EINVAL` and
/// nothing happens).
///
/// Why: the first store into each 4 KiB page of a shared file map takes a
/// fault in which the file system marks the page dirty (`page_mkwrite`):
/// 1-2 us a page, about a fifth of the writer's time in a stream of large
/// batches. A log's fresh region is handed to the janitor to take those
/// faults ahead of the writer.
///
/// Never changes memory: populating writes no byte, so a store the writer
/// makes into the same page at the same time is untouched, and a range
/// that is no longer mapped, or lies past the end of a file cut shorter,
/// makes the call fail (`ENOMEM`, `EFAULT`) instead of raising a signal.
#[cfg(target_os = "linux")]
fn populate_write(addr: usize, len: usize) {
    unsafe extern "C" {
        fn madvise(
            addr: *mut std::ffi::c_void,
            len: usize,
            advice: std::ffi::c_int,
        ) -> std::ffi::c_int;
    }
    /// `MADV_POPULATE_WRITE` from Linux's `mman-common.h`.
    const MADV_POPULATE_WRITE: std::ffi::c_int = 23;
    // SAFETY: see above: the call reads and writes no memory of ours, and
    // whatever is (or is no longer) mapped at the range, the kernel only
    // faults pages in or returns an error.
    let _ = unsafe { madvise(addr as *mut std::ffi::c_void, len, MADV_POPULATE_WRITE) };
}

/// A table file (or log) written through shared memory maps.
pub(super) struct MmapWritableFile {
    path: PathBuf,
    file: Option<File>,
    /// The mapped region, if any, and its file offset.
    region: Option<memmap2::MmapMut>,
    region_offset: u64,
    /// Size of the next region to map.
    next_region: usize,
    /// Bytes appended (the file's logical size).
    size: u64,
    /// A write-ahead log: `sync` keeps the region mapped (see the module
    /// docs).
    log: bool,
    /// `seal` was called: appends fail, `sync` still works.
    sealed: bool,
    /// Bytes of the file reserved on disk (`posix_fallocate`).
    reserved: u64,
    /// A log reserves at least this much at a time (RocksDB preallocates
    /// its WAL, 1.1 x the write buffer, in one call too): `posix_fallocate`
    /// starts a file-system journal transaction, which can wait for a
    /// journal commit in progress, so it stays off most writes.
    reserve_ahead: u64,
}

impl std::fmt::Debug for MmapWritableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MmapWritableFile")
            .field("path", &self.path)
            .field("size", &self.size)
            .finish()
    }
}

impl MmapWritableFile {
    /// Creates (truncates) `path` for mapped writes. `NotSupported` where
    /// Strata has no mapped writer (outside 64-bit Linux).
    pub(super) fn create(path: &Path) -> Result<MmapWritableFile> {
        if !cfg!(all(target_os = "linux", target_pointer_width = "64")) {
            return Err(Error::NotSupported(format!(
                "memory-mapped writes (allow_mmap_writes) of {}: implemented for 64-bit Linux only",
                path.display()
            )));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| os_err("create", path, e))?;
        Ok(MmapWritableFile {
            path: path.to_path_buf(),
            file: Some(file),
            region: None,
            region_offset: 0,
            next_region: FIRST_REGION,
            size: 0,
            log: false,
            sealed: false,
            reserved: 0,
            reserve_ahead: 0,
        })
    }

    /// Creates (truncates) the write-ahead log `path` for mapped writes
    /// (see the module docs), reserving `preallocate` bytes at a time.
    pub(super) fn create_log(path: &Path, preallocate: u64) -> Result<MmapWritableFile> {
        let mut f = MmapWritableFile::create(path)?;
        f.log = true;
        f.reserve_ahead = preallocate;
        Ok(f)
    }

    fn file(&self) -> Result<&File> {
        self.file.as_ref().ok_or_else(|| {
            Error::io(
                format!("write {}", self.path.display()),
                io::Error::other("file already closed"),
            )
        })
    }

    /// Maps the region that holds offset `size` (reserving it on disk).
    fn map_region(&mut self) -> Result<()> {
        debug_assert!(self.region.is_none());
        let offset = self.size - self.size % REGION_ALIGN;
        let len = self.next_region;
        let end = offset + len as u64;
        if end > self.reserved {
            let from = self.reserved.max(offset);
            let upto = end.max(from.saturating_add(self.reserve_ahead));
            // The reservation ahead is a hint: on a disk too full for it,
            // the region alone is reserved (an ENOSPC then is the disk
            // truly being full for this write).
            #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
            let upto = match reserve(self.file()?, from, upto - from) {
                Ok(()) => upto,
                Err(_) if upto > end => {
                    reserve(self.file()?, from, end - from)
                        .map_err(|e| os_err("fallocate", &self.path, e))?;
                    end
                }
                Err(e) => return Err(os_err("fallocate", &self.path, e)),
            };
            self.reserved = upto;
        }
        debug_assert!(end <= self.reserved);
        let file = self.file()?;
        // SAFETY: the map is shared and writable over bytes of a file this
        // writer created and alone writes; `reserve` made the file at least
        // `offset + len` bytes long with its blocks allocated, so no store
        // into the map can land past the end of the file (SIGBUS; see the
        // module docs for copy-on-write file systems). The map is dropped
        // before the file is cut back (`unmap_and_truncate`).
        // Exercised by this module's tests and tests/mmap_writes.rs.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(offset)
                .len(len)
                .map_mut(file)
        }
        .map_err(|e| os_err("mmap", &self.path, e))?;
        // No read-ahead on a write fault: the pages past the one written
        // hold reserved zeros, and the file's read-ahead window (megabytes on
        // many disks) would otherwise be allocated and zeroed in one fault,
        // a multi-millisecond stall of the write that takes it. A failed
        // hint changes only that, so it is not an error.
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        // A log's region is faulted in writable by the janitor, ahead of
        // the writer. The region is unmapped only by a later janitor chore
        // (`retire`), so it stays mapped while this one runs.
        #[cfg(target_os = "linux")]
        if self.log {
            let (addr, len) = (map.as_ptr() as usize, map.len());
            crate::util::janitor::run_in_background(move || populate_write(addr, len));
        }
        self.region = Some(map);
        self.region_offset = offset;
        let max = if self.log { MAX_LOG_REGION } else { MAX_REGION };
        if self.next_region < max {
            self.next_region *= 2;
        }
        Ok(())
    }

    /// Unmaps `map`: a log's on the janitor thread (the writer of a log is
    /// a foreground write), a table's here.
    ///
    /// Why: unmapping a region of a shared file map that was written walks
    /// every page (moving its dirty bit to the page cache) and shoots down
    /// the TLB of every CPU running the process: about 0.4 ms for a 4 MiB
    /// region, paid by the write that filled it, hundreds of times in a
    /// large load (the second largest source of writes slower than 0.2 ms
    /// in a 10M-key `fillrandom`, after huge-page faults). Nothing else
    /// changes: the data is in the page cache from the moment it is copied
    /// into the map, an `fdatasync` writes it back whether or not the
    /// region is still mapped, and the region is never touched again once
    /// handed over.
    fn retire(&self, map: memmap2::MmapMut) {
        if self.log {
            crate::util::janitor::run_in_background(move || drop(map));
        }
        // A table's region is unmapped as `map` drops here.
    }

    /// Drops the region (after `msync` when `durable`) and cuts the file to
    /// its logical size.
    fn unmap_and_truncate(&mut self, durable: bool) -> Result<()> {
        if let Some(map) = self.region.take() {
            if durable {
                let used = (self.size - self.region_offset) as usize;
                map.flush_range(0, used)
                    .map_err(|e| os_err("msync", &self.path, e))?;
            }
            self.retire(map);
        }
        let size = self.size;
        let file = self.file()?;
        file.set_len(size)
            .map_err(|e| os_err("truncate", &self.path, e))?;
        self.reserved = size;
        Ok(())
    }
}

impl WritableFile for MmapWritableFile {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        self.file()?;
        if self.sealed {
            return Err(Error::io(
                format!("write {}", self.path.display()),
                io::Error::other("log already sealed"),
            ));
        }
        while !data.is_empty() {
            let full = match &self.region {
                Some(map) => self.size == self.region_offset + map.len() as u64,
                None => true,
            };
            if full {
                if let Some(map) = self.region.take() {
                    self.retire(map);
                }
                self.map_region()?;
            }
            let Some(map) = self.region.as_mut() else {
                unreachable!("a region was just mapped")
            };
            let at = (self.size - self.region_offset) as usize;
            let n = data.len().min(map.len() - at);
            map[at..at + n].copy_from_slice(&data[..n]);
            self.size += n as u64;
            data = &data[n..];
        }
        debug_assert!(match &self.region {
            Some(m) => self.size <= self.region_offset + m.len() as u64,
            // Nothing appended since the last sync or ever.
            None => true,
        });
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        // The bytes are in the page cache once copied into the map.
        self.file().map(|_| ())
    }

    fn sync(&mut self) -> Result<()> {
        // A log keeps its region: `fdatasync` alone writes back the pages
        // stored through the map and the metadata of the blocks they fill.
        // On Linux (the only platform of this writer) `msync(MS_SYNC)` is
        // that same `vfs_fsync_range` on the file: stores through a shared
        // map dirty the page cache (the first store after a writeback
        // faults and marks the page dirty), so calling both would sync
        // twice.
        if !self.log {
            self.unmap_and_truncate(true)?;
        }
        let path = self.path.clone();
        self.file()?
            .sync_data()
            .map_err(|e| os_err("fdatasync", &path, e))
    }

    fn seal(&mut self) -> Result<()> {
        if self.sealed || self.file.is_none() {
            return Ok(());
        }
        self.sealed = true;
        self.unmap_and_truncate(false)
    }

    fn close(&mut self) -> Result<()> {
        if self.file.is_none() {
            return Ok(());
        }
        let res = self.unmap_and_truncate(false);
        self.file = None;
        res
    }

    fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for MmapWritableFile {
    fn drop(&mut self) {
        // Best effort: nobody can see the error. A file dropped unclosed is
        // an abandoned output, but leave no zero tail on it either.
        if self.file.is_some() {
            let _ = self.unmap_and_truncate(false);
        }
    }
}

#[cfg(all(test, target_os = "linux", target_pointer_width = "64"))]
mod tests {
    use super::*;

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn appends_across_regions_read_back_and_the_file_is_cut_to_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.sst");
        let mut f = MmapWritableFile::create(&path).unwrap();
        let mut want = Vec::new();
        // Sizes that straddle every region boundary (64K, 128K, ... 1M).
        for (i, n) in [1usize, 4095, 70_000, 1 << 20, 3, 200_000, 2_500_000]
            .into_iter()
            .enumerate()
        {
            let chunk = pattern(n, i as u8);
            f.append(&chunk).unwrap();
            want.extend_from_slice(&chunk);
            assert_eq!(f.size(), want.len() as u64);
        }
        // While mapped, the file is longer than its logical size.
        assert!(std::fs::metadata(&path).unwrap().len() > want.len() as u64);
        f.sync().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), want.len() as u64);
        // Appends after a sync continue where the data ends (mid-page).
        let tail = pattern(100_001, 9);
        f.append(&tail).unwrap();
        want.extend_from_slice(&tail);
        f.close().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
        assert!(f.append(b"x").is_err(), "appends after close fail");
    }

    #[test]
    fn a_log_keeps_its_region_across_syncs_and_seal_cuts_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            maps_safely(dir.path()),
            "the test machine's temp dir is ext4 or tmpfs"
        );
        assert!(!maps_safely(Path::new("/proc")), "procfs is not trusted");
        let path = dir.path().join("000001.log");
        let mut f = MmapWritableFile::create_log(&path, 200_000).unwrap();
        let mut want = pattern(1000, 1);
        f.append(&want).unwrap();
        f.sync().unwrap();
        // Synced, still mapped: the file ends in the reserved zeros (a
        // region, and at least what was asked to be reserved ahead).
        let on_disk = std::fs::read(&path).unwrap();
        assert!(on_disk.len() >= 200_000);
        assert_eq!(&on_disk[..want.len()], &want[..]);
        assert!(on_disk[want.len()..].iter().all(|&b| b == 0));
        // Appends continue in the same region, across into the next.
        let more = pattern(300_000, 2);
        f.append(&more).unwrap();
        want.extend_from_slice(&more);
        f.seal().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
        assert!(f.append(b"x").is_err(), "appends after seal fail");
        f.sync().unwrap();
        f.close().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }

    /// The janitor pre-faults every fresh log region while the writer
    /// fills it: the bytes read back are exactly the appended ones, and
    /// pre-faulting a range after it was unmapped is harmless.
    #[test]
    fn pre_faulted_log_regions_keep_every_appended_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000002.log");
        let mut f = MmapWritableFile::create_log(&path, 0).unwrap();
        let mut want = Vec::new();
        for (i, n) in [1usize, 4095, 70_000, 200_000, 1 << 20, 3 << 20]
            .iter()
            .enumerate()
        {
            let chunk = pattern(*n, i as u8);
            f.append(&chunk).unwrap();
            want.extend_from_slice(&chunk);
        }
        f.seal().unwrap();
        f.close().unwrap();
        // Wait for the janitor's queue (populates, then the unmaps).
        let (tx, rx) = std::sync::mpsc::channel();
        crate::util::janitor::run_in_background(move || tx.send(()).unwrap());
        rx.recv().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
        // A range that is no longer mapped: an error, no signal.
        let map = memmap2::MmapMut::map_anon(1 << 16).unwrap();
        let (addr, len) = (map.as_ptr() as usize, map.len());
        drop(map);
        populate_write(addr, len);
    }

    #[test]
    fn an_empty_file_and_a_dropped_file_are_cut_to_size() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.sst");
        MmapWritableFile::create(&empty).unwrap().close().unwrap();
        assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
        let dropped = dir.path().join("dropped.sst");
        {
            let mut f = MmapWritableFile::create(&dropped).unwrap();
            f.append(&pattern(5000, 1)).unwrap();
        }
        assert_eq!(std::fs::read(&dropped).unwrap(), pattern(5000, 1));
    }
}
