//! [`FaultInjectionFileSystem`]: wraps any [`FileSystem`] and fails chosen
//! operations, for I/O-error sweeps and disk-full tests.
//!
//! Owns: the operation counter, the armed faults, the random-fault generator
//! and the space quota. Files it opens wrap the inner files, so operations on
//! already-open files are counted and can fail too.
//!
//! Invariants:
//! * Every fallible operation is counted once, as one [`OpKind`], before it
//!   reaches the inner file system (`file_exists` and `WritableFile::size`
//!   cannot fail and are not counted; dropping a lock is not counted).
//! * A failing operation is *not* forwarded: a failed `append` writes
//!   nothing, a failed `sync` leaves the file unsynced, a failed `rename`
//!   renames nothing.
//! * Injected errors are `Error::Io` whose message contains "injected".
//! * Quota: appends are refused with `Error::NoSpace` (writing nothing) when
//!   they would take the bytes appended through this wrapper past the quota.
//!   Deleting files frees nothing; raise or clear the quota instead.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{FileLock, FileSystem, FileSystemRef, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};
use crate::util::rng::Rng;

/// The kinds of counted operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `new_writable_file` (and `new_direct_writable_file`).
    NewWritable,
    /// `new_mmap_writable_file` (`allow_mmap_writes`).
    NewMmapWritable,
    /// `reopen_writable_file`.
    ReopenWritable,
    /// `new_random_access_file`.
    NewRandomAccess,
    /// `new_sequential_file`.
    NewSequential,
    /// `WritableFile::append`.
    Append,
    /// `WritableFile::flush`.
    Flush,
    /// `WritableFile::sync`.
    Sync,
    /// `WritableFile::close`.
    Close,
    /// `WritableFile::range_sync` (`bytes_per_sync`).
    RangeSync,
    /// `RandomAccessFile::read_at` and `SequentialFile::read`.
    Read,
    /// `SequentialFile::skip`.
    Skip,
    /// `file_size` and `RandomAccessFile::size`.
    Size,
    /// `children`.
    Children,
    /// `delete_file`.
    Delete,
    /// `rename_file`.
    Rename,
    /// `link_file`.
    Link,
    /// `create_dir_all`.
    CreateDir,
    /// `delete_dir`.
    DeleteDir,
    /// `sync_dir`.
    SyncDir,
    /// `lock_file`.
    Lock,
}

/// How long an armed fault lasts once it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailMode {
    /// Fails one operation, then disarms.
    Once,
    /// Fails that operation and every later matching one until
    /// [`FaultInjectionFileSystem::clear_faults`].
    Persistent,
}

#[derive(Debug)]
struct Fault {
    /// Empty: every kind.
    kinds: Vec<OpKind>,
    path_contains: Option<String>,
    /// Matching operations still to let through before firing.
    skip: u64,
    mode: FailMode,
}

#[derive(Debug)]
struct RandomFaults {
    kinds: Vec<OpKind>,
    one_in: u64,
    rng: Rng,
}

fn kind_matches(kinds: &[OpKind], kind: OpKind) -> bool {
    kinds.is_empty() || kinds.contains(&kind)
}

#[derive(Debug, Default)]
struct State {
    ops: u64,
    faults: Vec<Fault>,
    random: Option<RandomFaults>,
    injected: u64,
    last_injected: Option<(OpKind, String)>,
    quota: Option<u64>,
    appended: u64,
}

type Shared = Arc<Mutex<State>>;

fn lock(s: &Shared) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts operation `kind` on `paths` and fails it if a fault fires.
fn check(shared: &Shared, kind: OpKind, paths: &[&Path]) -> Result<()> {
    let mut st = lock(shared);
    st.ops += 1;
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let mut fire = false;
    st.faults.retain_mut(|f| {
        let path_ok = match &f.path_contains {
            None => true,
            Some(s) => shown.iter().any(|p| p.contains(s.as_str())),
        };
        if !kind_matches(&f.kinds, kind) || !path_ok {
            return true;
        }
        if f.skip > 0 {
            f.skip -= 1;
            return true;
        }
        fire = true;
        f.mode == FailMode::Persistent
    });
    if let Some(r) = st.random.as_mut() {
        if kind_matches(&r.kinds, kind) && r.rng.next() % r.one_in.max(1) == 0 {
            fire = true;
        }
    }
    if !fire {
        return Ok(());
    }
    let shown = shown.join(" -> ");
    st.injected += 1;
    st.last_injected = Some((kind, shown.clone()));
    Err(Error::io(
        format!("injected fault: {kind:?} {shown}"),
        std::io::Error::other("injected fault"),
    ))
}

/// A [`FileSystem`] wrapper that fails chosen operations. Clones share the
/// same counters and faults.
#[derive(Clone)]
pub struct FaultInjectionFileSystem {
    inner: FileSystemRef,
    shared: Shared,
}

impl std::fmt::Debug for FaultInjectionFileSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultInjectionFileSystem")
            .field("state", &*lock(&self.shared))
            .finish_non_exhaustive()
    }
}

impl FaultInjectionFileSystem {
    /// Wraps `inner`; no fault is armed and there is no quota.
    pub fn new(inner: FileSystemRef) -> FaultInjectionFileSystem {
        FaultInjectionFileSystem {
            inner,
            shared: Shared::default(),
        }
    }

    /// The wrapped file system.
    pub fn inner(&self) -> &FileSystemRef {
        &self.inner
    }

    /// Arms a fault on any operation: `k` operations (0-based) from now pass
    /// and the next one fails (`k == 0`: the very next operation fails).
    pub fn fail_after(&self, k: u64, mode: FailMode) {
        self.fail_op(&[], None, k, mode);
    }

    /// Arms a fault on operations of one of `kinds` (empty: any kind) whose
    /// path (either path, for a rename) contains `path_contains`: `after`
    /// matching operations pass, the next one fails. Several faults can be
    /// armed at once.
    pub fn fail_op(
        &self,
        kinds: &[OpKind],
        path_contains: Option<&str>,
        after: u64,
        mode: FailMode,
    ) {
        lock(&self.shared).faults.push(Fault {
            kinds: kinds.to_vec(),
            path_contains: path_contains.map(str::to_string),
            skip: after,
            mode,
        });
    }

    /// Fails each operation of one of `kinds` (empty: any) with probability
    /// `1 / one_in`, deterministically for `seed`.
    pub fn fail_randomly(&self, kinds: &[OpKind], one_in: u64, seed: u64) {
        lock(&self.shared).random = Some(RandomFaults {
            kinds: kinds.to_vec(),
            one_in,
            rng: Rng(seed),
        });
    }

    /// Disarms every fault and random failures (not the quota).
    pub fn clear_faults(&self) {
        let mut st = lock(&self.shared);
        st.faults.clear();
        st.random = None;
    }

    /// Operations counted so far.
    pub fn op_count(&self) -> u64 {
        lock(&self.shared).ops
    }

    /// Operations failed by injection so far (quota refusals not included).
    pub fn injected_count(&self) -> u64 {
        lock(&self.shared).injected
    }

    /// The kind and path(s) of the last injected failure.
    pub fn last_injected(&self) -> Option<(OpKind, String)> {
        lock(&self.shared).last_injected.clone()
    }

    /// Sets (or with `None` removes) the limit on total bytes appended
    /// through this wrapper; see the module comment.
    pub fn set_space_quota(&self, quota: Option<u64>) {
        lock(&self.shared).quota = quota;
    }

    /// Total bytes successfully appended through this wrapper.
    pub fn bytes_appended(&self) -> u64 {
        lock(&self.shared).appended
    }

    fn check(&self, kind: OpKind, path: &Path) -> Result<()> {
        check(&self.shared, kind, &[path])
    }
}

struct FaultWritableFile {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    shared: Shared,
}

impl WritableFile for FaultWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        check(&self.shared, OpKind::Append, &[&self.path])?;
        let len = data.len() as u64;
        {
            let mut st = lock(&self.shared);
            if let Some(q) = st.quota {
                if st.appended.saturating_add(len) > q {
                    return Err(Error::NoSpace(format!(
                        "append of {len} bytes to {}: quota of {q} bytes reached",
                        self.path.display()
                    )));
                }
            }
            st.appended += len;
        }
        let res = self.inner.append(data);
        if res.is_err() {
            let mut st = lock(&self.shared);
            st.appended = st.appended.saturating_sub(len);
        }
        res
    }

    fn flush(&mut self) -> Result<()> {
        check(&self.shared, OpKind::Flush, &[&self.path])?;
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        check(&self.shared, OpKind::Sync, &[&self.path])?;
        self.inner.sync()
    }

    fn close(&mut self) -> Result<()> {
        check(&self.shared, OpKind::Close, &[&self.path])?;
        self.inner.close()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn range_sync(&mut self) -> Result<()> {
        check(&self.shared, OpKind::RangeSync, &[&self.path])?;
        self.inner.range_sync()
    }
}

struct FaultRandomAccessFile {
    inner: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    shared: Shared,
}

impl RandomAccessFile for FaultRandomAccessFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        check(&self.shared, OpKind::Read, &[&self.path])?;
        self.inner.read_at(offset, buf)
    }

    fn size(&self) -> Result<u64> {
        check(&self.shared, OpKind::Size, &[&self.path])?;
        self.inner.size()
    }
}

struct FaultSequentialFile {
    inner: Box<dyn SequentialFile>,
    path: PathBuf,
    shared: Shared,
}

impl SequentialFile for FaultSequentialFile {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        check(&self.shared, OpKind::Read, &[&self.path])?;
        self.inner.read(buf)
    }

    fn skip(&mut self, n: u64) -> Result<()> {
        check(&self.shared, OpKind::Skip, &[&self.path])?;
        self.inner.skip(n)
    }
}

impl FileSystem for FaultInjectionFileSystem {
    fn new_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.check(OpKind::NewWritable, path)?;
        Ok(Box::new(FaultWritableFile {
            inner: self.inner.new_writable_file(path)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn reopen_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.check(OpKind::ReopenWritable, path)?;
        Ok(Box::new(FaultWritableFile {
            inner: self.inner.reopen_writable_file(path)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn new_random_access_file(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.check(OpKind::NewRandomAccess, path)?;
        Ok(Arc::new(FaultRandomAccessFile {
            inner: self.inner.new_random_access_file(path)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn new_direct_random_access_file(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.check(OpKind::NewRandomAccess, path)?;
        Ok(Arc::new(FaultRandomAccessFile {
            inner: self.inner.new_direct_random_access_file(path)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn new_direct_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.check(OpKind::NewWritable, path)?;
        Ok(Box::new(FaultWritableFile {
            inner: self.inner.new_direct_writable_file(path)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn new_mmap_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.check(OpKind::NewMmapWritable, path)?;
        Ok(Box::new(FaultWritableFile {
            inner: self.inner.new_mmap_writable_file(path)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn new_sequential_file(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.check(OpKind::NewSequential, path)?;
        Ok(Box::new(FaultSequentialFile {
            inner: self.inner.new_sequential_file(path)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn file_exists(&self, path: &Path) -> bool {
        self.inner.file_exists(path)
    }

    fn children(&self, dir: &Path) -> Result<Vec<String>> {
        self.check(OpKind::Children, dir)?;
        self.inner.children(dir)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.check(OpKind::Size, path)?;
        self.inner.file_size(path)
    }

    fn file_modification_time(&self, path: &Path) -> Result<u64> {
        self.check(OpKind::Size, path)?;
        self.inner.file_modification_time(path)
    }

    fn delete_file(&self, path: &Path) -> Result<()> {
        self.check(OpKind::Delete, path)?;
        self.inner.delete_file(path)
    }

    fn rename_file(&self, from: &Path, to: &Path) -> Result<()> {
        check(&self.shared, OpKind::Rename, &[from, to])?;
        self.inner.rename_file(from, to)
    }

    fn link_file(&self, from: &Path, to: &Path) -> Result<()> {
        check(&self.shared, OpKind::Link, &[from, to])?;
        self.inner.link_file(from, to)
    }

    fn overwrite_at(&self, path: &Path, offset: u64, data: &[u8]) -> Result<()> {
        // A write then a sync: either may fail.
        self.check(OpKind::Append, path)?;
        self.check(OpKind::Sync, path)?;
        self.inner.overwrite_at(path, offset, data)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.check(OpKind::CreateDir, dir)?;
        self.inner.create_dir_all(dir)
    }

    fn delete_dir(&self, dir: &Path) -> Result<()> {
        self.check(OpKind::DeleteDir, dir)?;
        self.inner.delete_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.check(OpKind::SyncDir, dir)?;
        self.inner.sync_dir(dir)
    }

    fn lock_file(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.check(OpKind::Lock, path)?;
        self.inner.lock_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::mem::MemFileSystem;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn setup() -> (MemFileSystem, FaultInjectionFileSystem) {
        let mem = MemFileSystem::new();
        mem.create_dir_all(&p("/db")).unwrap();
        let fs = FaultInjectionFileSystem::new(Arc::new(mem.clone()));
        (mem, fs)
    }

    fn is_injected(e: &Error) -> bool {
        matches!(e, Error::Io { .. }) && e.to_string().contains("injected")
    }

    #[test]
    fn kth_op_fails_once_then_works() {
        let (mem, fs) = setup();
        fs.fail_after(2, FailMode::Once);
        let mut w = fs.new_writable_file(&p("/db/f")).unwrap(); // op 0
        w.append(b"abc").unwrap(); // op 1
        let e = w.sync().unwrap_err(); // op 2
        assert!(is_injected(&e), "{e}");
        assert_eq!(
            mem.synced_len(&p("/db/f")).unwrap(),
            0,
            "failed sync synced"
        );
        assert_eq!(
            fs.last_injected(),
            Some((OpKind::Sync, "/db/f".to_string()))
        );
        w.sync().unwrap();
        assert_eq!(mem.synced_len(&p("/db/f")).unwrap(), 3);
        assert_eq!(fs.op_count(), 4);
        assert_eq!(fs.injected_count(), 1);
    }

    #[test]
    fn persistent_failure_until_cleared() {
        let (mem, fs) = setup();
        let mut w = fs.new_writable_file(&p("/db/f")).unwrap();
        fs.fail_after(1, FailMode::Persistent);
        w.append(b"a").unwrap();
        assert!(is_injected(&w.append(b"b").unwrap_err()));
        assert!(is_injected(&w.sync().unwrap_err()));
        assert!(is_injected(&fs.sync_dir(&p("/db")).unwrap_err()));
        assert!(is_injected(
            &fs.new_sequential_file(&p("/db/f")).err().unwrap()
        ));
        assert_eq!(mem.read_file(&p("/db/f")).unwrap(), b"a");
        fs.clear_faults();
        w.append(b"c").unwrap();
        assert_eq!(fs.read_file(&p("/db/f")).unwrap(), b"ac");
    }

    #[test]
    fn filter_by_kind_and_path_and_open_files() {
        let (mem, fs) = setup();
        let mut log = fs.new_writable_file(&p("/db/000003.log")).unwrap();
        let mut man = fs.new_writable_file(&p("/db/MANIFEST-000001")).unwrap();
        let r = fs.new_random_access_file(&p("/db/000003.log")).unwrap();
        fs.fail_op(&[OpKind::Sync], Some("MANIFEST"), 1, FailMode::Once);
        fs.fail_op(&[OpKind::Read], None, 0, FailMode::Once);
        log.sync().unwrap();
        man.sync().unwrap();
        log.sync().unwrap();
        assert!(is_injected(&man.sync().unwrap_err()));
        man.sync().unwrap();
        let mut buf = [0u8; 4];
        assert!(is_injected(&r.read_at(0, &mut buf).unwrap_err()));
        assert_eq!(r.read_at(0, &mut buf).unwrap(), 0);
        // A rename matches on either path, and a failed one renames nothing.
        fs.fail_op(&[OpKind::Rename], Some("CURRENT"), 0, FailMode::Once);
        fs.write_file(&p("/db/tmp"), b"x", true).unwrap();
        assert!(is_injected(
            &fs.rename_file(&p("/db/tmp"), &p("/db/CURRENT"))
                .unwrap_err()
        ));
        assert!(mem.file_exists(&p("/db/tmp")) && !mem.file_exists(&p("/db/CURRENT")));
        fs.rename_file(&p("/db/tmp"), &p("/db/CURRENT")).unwrap();
    }

    #[test]
    fn quota_gives_no_space() {
        let (mem, fs) = setup();
        fs.set_space_quota(Some(10));
        let mut w = fs.new_writable_file(&p("/db/f")).unwrap();
        w.append(b"123456").unwrap();
        assert!(matches!(w.append(b"78901"), Err(Error::NoSpace(_))));
        assert_eq!(mem.read_file(&p("/db/f")).unwrap(), b"123456");
        w.append(b"7890").unwrap();
        assert!(matches!(w.append(b"x"), Err(Error::NoSpace(_))));
        assert_eq!(fs.bytes_appended(), 10);
        fs.set_space_quota(None);
        w.append(b"x").unwrap();
        assert_eq!(mem.file_size(&p("/db/f")).unwrap(), 11);
        assert_eq!(fs.injected_count(), 0);
    }

    /// A small canonical workload: write and sync a file, publish it by
    /// rename, read it back.
    fn workload(fs: &dyn FileSystem) -> Result<()> {
        fs.create_dir_all(Path::new("/db"))?;
        let _lock = fs.lock_file(Path::new("/db/LOCK"))?;
        let mut w = fs.new_writable_file(Path::new("/db/t.tmp"))?;
        w.append(b"table")?;
        w.sync()?;
        w.close()?;
        fs.rename_file(Path::new("/db/t.tmp"), Path::new("/db/t"))?;
        fs.sync_dir(Path::new("/db"))?;
        if fs.read_file(Path::new("/db/t"))? != b"table" {
            return Err(Error::corruption("/db/t", 0, "wrong contents"));
        }
        fs.children(Path::new("/db"))?;
        fs.file_size(Path::new("/db/t"))?;
        Ok(())
    }

    #[test]
    fn sweep_every_op_of_a_workload() {
        let (_, fs) = setup();
        workload(&fs).unwrap();
        let n = fs.op_count();
        assert!(n >= 12, "{n}");
        for mode in [FailMode::Once, FailMode::Persistent] {
            for k in 0..n {
                let (mem, fs) = setup();
                fs.fail_after(k, mode);
                let e = workload(&fs).unwrap_err();
                assert!(is_injected(&e), "k={k}: {e}");
                assert_eq!(fs.injected_count(), 1, "k={k}");
                // After the fault clears the workload succeeds, and what
                // was published survives a power loss.
                fs.clear_faults();
                workload(&fs).unwrap();
                mem.crash(k);
                assert_eq!(mem.read_file(&p("/db/t")).unwrap(), b"table");
            }
        }
    }

    #[test]
    fn random_faults_are_deterministic() {
        let run = |seed| {
            let (_, fs) = setup();
            fs.fail_randomly(&[OpKind::Append], 3, seed);
            let mut w = fs.new_writable_file(&p("/db/f")).unwrap();
            (0..50).map(|_| w.append(b"x").is_ok()).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        let r = run(1);
        assert!(r.iter().any(|ok| *ok) && r.iter().any(|ok| !*ok));
    }
}
