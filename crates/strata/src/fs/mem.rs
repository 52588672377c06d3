//! [`MemFileSystem`]: an in-memory, *crashable* file system for tests.
//!
//! Owns: a directory tree, the bytes of every file, the log of directory
//! operations not yet made durable, and a lock table.
//!
//! Model and invariants:
//! * Paths are normalized: relative paths are taken from the root, `.` and
//!   trailing slashes are ignored, `..` goes up, so `/a/b/`, `a/b` and
//!   `/a/./b` name the same directory. A file's parent directory must exist.
//! * Each file has its current bytes and a synced length: the prefix made
//!   durable by [`WritableFile::sync`]. Handles share the file's bytes, so a
//!   reader opened before a write sees later appends (as on a real OS).
//! * Each directory has its current entries and its durable entries. Every
//!   change to the entries (create, delete, rename) is logged as a pending
//!   `DirOp`; `sync_dir(d)` applies, in order, the pending operations
//!   touching `d` to the durable entries. `create_dir_all` and `delete_dir`
//!   are durable at once (kept simple on purpose).
//! * `new_writable_file` over an existing name links a new, empty file under
//!   that name (like write-new-then-rename): a crash restores the old file or
//!   the new one. Readers of the old file keep seeing the old bytes.
//! * [`MemFileSystem::crash`] (power loss) applies each pending directory
//!   operation independently with probability 1/2 (a rename is one operation,
//!   so it stays atomic), then cuts every file to its synced prefix plus a
//!   random-length prefix of its unsynced tail (writes reach the disk in
//!   order). Afterwards everything is durable, all locks are released, and
//!   every handle opened before the crash fails (it belongs to the dead
//!   process). The outcome depends only on the state and the seed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};
use crate::util::rng::Rng;
use crate::util::sync::lock;

#[derive(Debug)]
struct FileData {
    data: Vec<u8>,
    /// Bytes made durable by `sync`; always `<= data.len()`.
    synced: usize,
    /// Last write, in Unix seconds.
    modified: u64,
}

impl Default for FileData {
    fn default() -> Self {
        FileData {
            data: Vec::new(),
            synced: 0,
            modified: super::unix_seconds_now(),
        }
    }
}

impl FileData {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> usize {
        let len = self.data.len();
        let start = usize::try_from(offset).unwrap_or(len).min(len);
        let n = buf.len().min(len - start);
        buf[..n].copy_from_slice(&self.data[start..start + n]);
        n
    }
}

type FileRef = Arc<Mutex<FileData>>;

#[derive(Debug, Clone)]
enum Entry {
    File(FileRef),
    Dir,
}

#[derive(Debug, Default)]
struct DirState {
    current: BTreeMap<String, Entry>,
    durable: BTreeMap<String, Entry>,
}

/// A directory change not yet durable: a create is a `link`, a delete an
/// `unlink`, a rename both, applied together (so it is atomic).
#[derive(Debug)]
struct DirOp {
    unlink: Option<(PathBuf, String)>,
    link: Option<(PathBuf, String, FileRef)>,
}

impl DirOp {
    fn touches(&self, d: &Path) -> bool {
        self.unlink.as_ref().is_some_and(|(dir, _)| dir == d)
            || self.link.as_ref().is_some_and(|(dir, _, _)| dir == d)
    }

    /// Applies the operation to the durable entries (missing dirs: no-op).
    fn apply_durable(&self, dirs: &mut BTreeMap<PathBuf, DirState>) {
        if let Some((dir, name)) = &self.unlink {
            if let Some(d) = dirs.get_mut(dir) {
                d.durable.remove(name);
            }
        }
        if let Some((dir, name, file)) = &self.link {
            if let Some(d) = dirs.get_mut(dir) {
                d.durable.insert(name.clone(), Entry::File(file.clone()));
            }
        }
    }
}

#[derive(Debug)]
struct State {
    dirs: BTreeMap<PathBuf, DirState>,
    pending: Vec<DirOp>,
    locks: BTreeSet<PathBuf>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    /// Bumped (under the state lock) by every crash; handles remember it.
    generation: AtomicU64,
}

/// An in-memory, crashable file system; clones share the same state.
///
/// A clone made by [`MemFileSystem::process`] stands for one process: once
/// a crash happens, every operation through it fails, as the process died
/// with the machine. Plain clones keep working across crashes.
#[derive(Debug, Clone)]
pub struct MemFileSystem {
    inner: Arc<Inner>,
    /// The crash generation of the process this view belongs to, if any.
    bound: Option<u64>,
}

impl Default for MemFileSystem {
    fn default() -> Self {
        MemFileSystem::new()
    }
}

/// `path` made absolute with `.`, `..` and trailing slashes resolved.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The normalized parent directory and the name of `path`.
fn split(path: &Path) -> Result<(PathBuf, String)> {
    let p = normalize(path);
    match (p.parent(), p.file_name()) {
        (Some(dir), Some(name)) => Ok((dir.to_path_buf(), name.to_string_lossy().into_owned())),
        _ => Err(Error::InvalidArgument(format!(
            "not a file path: {}",
            path.display()
        ))),
    }
}

fn not_found(what: &str, path: &Path) -> Error {
    Error::NotFound(format!("{what} {}", path.display()))
}

fn io_err(what: &str, path: &Path, msg: &str) -> Error {
    Error::io(
        format!("{what} {}", path.display()),
        std::io::Error::other(msg.to_string()),
    )
}

impl State {
    fn dir_mut(&mut self, dir: &Path, what: &str) -> Result<&mut DirState> {
        self.dirs
            .get_mut(dir)
            .ok_or_else(|| not_found(&format!("{what}: no directory"), dir))
    }

    fn lookup_file(&self, path: &Path, what: &str) -> Result<FileRef> {
        let (dir, name) = split(path)?;
        match self.dirs.get(&dir).and_then(|d| d.current.get(&name)) {
            Some(Entry::File(f)) => Ok(f.clone()),
            Some(Entry::Dir) => Err(io_err(what, path, "is a directory")),
            None => Err(not_found(what, path)),
        }
    }

    /// Links `file` under `path`, replacing an existing file.
    fn link(&mut self, path: &Path, file: FileRef) -> Result<()> {
        let (dir, name) = split(path)?;
        let d = self.dir_mut(&dir, "create")?;
        if let Some(Entry::Dir) = d.current.get(&name) {
            return Err(io_err("create", path, "is a directory"));
        }
        d.current.insert(name.clone(), Entry::File(file.clone()));
        self.pending.push(DirOp {
            unlink: None,
            link: Some((dir, name, file)),
        });
        Ok(())
    }

    /// Moves directory `from` (with everything below it) to `to`, which
    /// must not exist. Like directory creation in this model, the move is
    /// durable at once (a crash never undoes it); the entries inside keep
    /// their own pending (not yet synced) operations.
    fn rename_dir(&mut self, from: &Path, to: &Path) -> Result<()> {
        let (from, to) = (normalize(from), normalize(to));
        let (from_parent, from_name) = split(&from)?;
        let (to_parent, to_name) = split(&to)?;
        if to.starts_with(&from) {
            return Err(io_err("rename", &to, "is inside the directory moved"));
        }
        if self
            .dir_mut(&to_parent, "rename")?
            .current
            .contains_key(&to_name)
        {
            return Err(io_err("rename onto", &to, "exists"));
        }
        let moved: Vec<PathBuf> = self
            .dirs
            .keys()
            .filter(|k| k.starts_with(&from))
            .cloned()
            .collect();
        for old in moved {
            if let (Some(state), Ok(rest)) = (self.dirs.remove(&old), old.strip_prefix(&from)) {
                self.dirs.insert(to.join(rest), state);
            }
        }
        let rebase = |dir: &mut PathBuf| {
            if let Ok(rest) = dir.strip_prefix(&from) {
                *dir = to.join(rest);
            }
        };
        for op in &mut self.pending {
            if let Some((dir, _)) = &mut op.unlink {
                rebase(dir);
            }
            if let Some((dir, _, _)) = &mut op.link {
                rebase(dir);
            }
        }
        let p = self.dir_mut(&from_parent, "rename")?;
        p.current.remove(&from_name);
        p.durable.remove(&from_name);
        let p = self.dir_mut(&to_parent, "rename")?;
        p.current.insert(to_name.clone(), Entry::Dir);
        p.durable.insert(to_name, Entry::Dir);
        Ok(())
    }

    fn create_file(&mut self, path: &Path) -> Result<FileRef> {
        let f = FileRef::default();
        self.link(path, f.clone())?;
        Ok(f)
    }
}

impl MemFileSystem {
    /// An empty file system holding only the root directory `/`.
    pub fn new() -> MemFileSystem {
        let mut dirs = BTreeMap::new();
        dirs.insert(PathBuf::from("/"), DirState::default());
        MemFileSystem {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    dirs,
                    pending: Vec::new(),
                    locks: BTreeSet::new(),
                }),
                generation: AtomicU64::new(0),
            }),
            bound: None,
        }
    }

    /// A view of this file system for one process: after the next crash
    /// every operation through it (and every handle it opened) fails, so a
    /// dead database's background threads cannot touch the recovered state.
    pub fn process(&self) -> MemFileSystem {
        MemFileSystem {
            inner: self.inner.clone(),
            bound: Some(self.generation()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.inner.state)
    }

    /// The state, for an operation of this view's process. The check runs
    /// under the state lock, which a crash also holds while it bumps the
    /// generation, so no operation of a dead process lands after a crash.
    fn live_state(&self, what: &str, path: &Path) -> Result<MutexGuard<'_, State>> {
        let st = self.state();
        match self.bound {
            Some(g) if g != self.inner.generation.load(Ordering::SeqCst) => {
                Err(io_err(what, path, "process died in a simulated crash"))
            }
            _ => Ok(st),
        }
    }

    /// Runs `f` on the live state; returns its result with the generation
    /// read under the same lock.
    fn with_live<T>(
        &self,
        what: &str,
        path: &Path,
        f: impl FnOnce(&mut State) -> Result<T>,
    ) -> Result<(T, u64)> {
        let mut st = self.live_state(what, path)?;
        let t = f(&mut st)?;
        Ok((t, self.generation()))
    }

    /// The generation handles opened through this view belong to.
    fn generation(&self) -> u64 {
        self.bound
            .unwrap_or_else(|| self.inner.generation.load(Ordering::SeqCst))
    }

    /// Simulated power loss, deterministic for `seed`: synced bytes and
    /// synced directory entries survive; each pending directory operation
    /// survives or not at random (a rename entirely or not at all); each file
    /// keeps a random-length prefix of its unsynced tail (maybe none, maybe
    /// all). Releases all locks and invalidates all open handles.
    pub fn crash(&self, seed: u64) {
        self.crash_with(Some(&mut Rng(seed)));
    }

    /// Power loss that keeps exactly the synced state: no pending directory
    /// operation and no unsynced byte survives.
    pub fn crash_drop_unsynced(&self) {
        self.crash_with(None);
    }

    fn crash_with(&self, mut rng: Option<&mut Rng>) {
        let mut st = self.state();
        // The power fails now: handles check the generation while holding
        // their file's lock, and the copies below take each file's lock, so
        // a write or sync either completed before its file is copied (and
        // is judged by the crash like any other) or fails. No sync reports
        // success for bytes the crash already dropped.
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
        let pending = std::mem::take(&mut st.pending);
        for op in &pending {
            if let Some(r) = rng.as_deref_mut() {
                if r.next() & 1 == 1 {
                    op.apply_durable(&mut st.dirs);
                }
            }
        }
        // New file objects, so handles of the dead process cannot reach them.
        let mut survivors: HashMap<*const Mutex<FileData>, FileRef> = HashMap::new();
        for d in st.dirs.values_mut() {
            for e in d.durable.values_mut() {
                let Entry::File(f) = e else { continue };
                let new = survivors.entry(Arc::as_ptr(f)).or_insert_with(|| {
                    let old = lock(f);
                    let synced = old.synced.min(old.data.len());
                    let tail = (old.data.len() - synced) as u64;
                    let extra = match rng.as_deref_mut() {
                        None => 0,
                        Some(r) => match r.next() % 4 {
                            0 => 0,
                            1 => tail,
                            _ => r.up_to(tail),
                        },
                    };
                    let keep = synced + extra as usize;
                    Arc::new(Mutex::new(FileData {
                        data: old.data[..keep].to_vec(),
                        synced: keep,
                        modified: old.modified,
                    }))
                });
                *e = Entry::File(new.clone());
            }
            d.current = d.durable.clone();
        }
        st.locks.clear();
    }

    /// Paths of all files (not directories) currently present, sorted.
    pub fn file_names(&self) -> Vec<PathBuf> {
        let st = self.state();
        let mut out: Vec<PathBuf> = st
            .dirs
            .iter()
            .flat_map(|(dir, d)| {
                d.current
                    .iter()
                    .filter(|(_, e)| matches!(e, Entry::File(_)))
                    .map(move |(name, _)| dir.join(name))
            })
            .collect();
        out.sort();
        out
    }

    /// XORs the byte at `offset` of `path` with `xor_mask` (synced or not).
    pub fn corrupt_byte(&self, path: &Path, offset: u64, xor_mask: u8) -> Result<()> {
        let f = self.state().lookup_file(path, "corrupt")?;
        let mut f = lock(&f);
        let len = f.data.len();
        match usize::try_from(offset).ok().and_then(|o| f.data.get_mut(o)) {
            Some(b) => {
                *b ^= xor_mask;
                Ok(())
            }
            None => Err(Error::InvalidArgument(format!(
                "corrupt {} at {offset}: file has {len} bytes",
                path.display()
            ))),
        }
    }

    /// Cuts `path` to `len` bytes (which must not exceed its size).
    pub fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let f = self.state().lookup_file(path, "truncate")?;
        let mut f = lock(&f);
        match usize::try_from(len) {
            Ok(len) if len <= f.data.len() => {
                f.data.truncate(len);
                f.synced = f.synced.min(len);
                Ok(())
            }
            _ => Err(Error::InvalidArgument(format!(
                "truncate {} to {len}: file has {} bytes",
                path.display(),
                f.data.len()
            ))),
        }
    }

    /// Sets `path`'s modification time (Unix seconds), as if it was last
    /// written then: tests age files without waiting.
    pub fn set_modification_time(&self, path: &Path, seconds: u64) -> Result<()> {
        let f = self.state().lookup_file(path, "touch")?;
        lock(&f).modified = seconds;
        Ok(())
    }

    /// The synced (durable) length of `path`'s bytes.
    pub fn synced_len(&self, path: &Path) -> Result<u64> {
        let f = self.state().lookup_file(path, "stat")?;
        let f = lock(&f);
        Ok(f.synced as u64)
    }
}

/// What every handle shares: the file, its path, and the crash generation
/// it was opened in.
#[derive(Debug)]
struct Handle {
    fs: Arc<Inner>,
    generation: u64,
    path: PathBuf,
    file: FileRef,
}

impl Handle {
    /// A handle of generation `generation`, read under the state lock
    /// that found `file` (so a crash cannot fall in between).
    fn new(fs: &MemFileSystem, path: &Path, (file, generation): (FileRef, u64)) -> Handle {
        Handle {
            fs: fs.inner.clone(),
            generation,
            path: path.to_path_buf(),
            file,
        }
    }

    /// Fails if a crash happened since the open.
    fn check(&self, what: &str) -> Result<()> {
        if self.fs.generation.load(Ordering::SeqCst) != self.generation {
            return Err(io_err(what, &self.path, "opened before a simulated crash"));
        }
        Ok(())
    }

    /// The file's bytes, or an error if a crash happened since the open.
    /// The check runs under the file's lock (see `crash_with`).
    fn data(&self, what: &str) -> Result<MutexGuard<'_, FileData>> {
        let f = lock(&self.file);
        self.check(what)?;
        Ok(f)
    }
}

#[derive(Debug)]
struct MemWritableFile {
    h: Handle,
    size: u64,
    closed: bool,
}

impl MemWritableFile {
    fn check(&self, what: &str) -> Result<()> {
        if self.closed {
            return Err(io_err(what, &self.h.path, "file already closed"));
        }
        self.h.check(what)
    }

    fn data(&self, what: &str) -> Result<MutexGuard<'_, FileData>> {
        if self.closed {
            return Err(io_err(what, &self.h.path, "file already closed"));
        }
        self.h.data(what)
    }
}

impl WritableFile for MemWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut f = self.data("write")?;
        f.data.extend_from_slice(data);
        f.modified = super::unix_seconds_now();
        drop(f);
        self.size += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.check("flush")
    }

    fn sync(&mut self) -> Result<()> {
        let mut f = self.data("sync")?;
        f.synced = f.data.len();
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        self.check("close")?;
        self.closed = true;
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }
}

#[derive(Debug)]
struct MemRandomAccessFile(Handle);

impl RandomAccessFile for MemRandomAccessFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        Ok(self.0.data("read")?.read_at(offset, buf))
    }

    fn size(&self) -> Result<u64> {
        Ok(self.0.data("stat")?.data.len() as u64)
    }
}

#[derive(Debug)]
struct MemSequentialFile {
    h: Handle,
    pos: u64,
}

impl SequentialFile for MemSequentialFile {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = self.h.data("read")?.read_at(self.pos, buf);
        self.pos += n as u64;
        Ok(n)
    }

    fn skip(&mut self, n: u64) -> Result<()> {
        self.h.check("skip")?;
        self.pos = self.pos.saturating_add(n);
        Ok(())
    }
}

#[derive(Debug)]
struct MemFileLock {
    fs: Arc<Inner>,
    generation: u64,
    path: PathBuf,
}

impl FileLock for MemFileLock {}

impl Drop for MemFileLock {
    fn drop(&mut self) {
        let mut st = lock(&self.fs.state);
        // A crash already released it (and someone may hold it anew).
        if self.fs.generation.load(Ordering::SeqCst) == self.generation {
            st.locks.remove(&self.path);
        }
    }
}

impl FileSystem for MemFileSystem {
    fn new_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = self.with_live("create", path, |st| st.create_file(path))?;
        Ok(Box::new(MemWritableFile {
            h: Handle::new(self, path, file),
            size: 0,
            closed: false,
        }))
    }

    fn reopen_writable_file(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = self.with_live("open for append", path, |st| {
            match st.lookup_file(path, "open for append") {
                Ok(f) => Ok(f),
                Err(Error::NotFound(_)) => st.create_file(path),
                Err(e) => Err(e),
            }
        })?;
        let size = lock(&file.0).data.len() as u64;
        Ok(Box::new(MemWritableFile {
            h: Handle::new(self, path, file),
            size,
            closed: false,
        }))
    }

    fn new_random_access_file(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = self.with_live("open", path, |st| st.lookup_file(path, "open"))?;
        Ok(Arc::new(MemRandomAccessFile(Handle::new(self, path, file))))
    }

    fn new_sequential_file(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = self.with_live("open", path, |st| st.lookup_file(path, "open"))?;
        Ok(Box::new(MemSequentialFile {
            h: Handle::new(self, path, file),
            pos: 0,
        }))
    }

    fn file_exists(&self, path: &Path) -> bool {
        let Ok(st) = self.live_state("stat", path) else {
            return false;
        };
        let p = normalize(path);
        st.dirs.contains_key(&p)
            || split(&p).is_ok_and(|(dir, name)| {
                st.dirs
                    .get(&dir)
                    .is_some_and(|d| d.current.contains_key(&name))
            })
    }

    fn children(&self, dir: &Path) -> Result<Vec<String>> {
        let st = self.live_state("list", dir)?;
        match st.dirs.get(&normalize(dir)) {
            Some(d) => Ok(d.current.keys().cloned().collect()),
            None => Err(not_found("list", dir)),
        }
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let f = self.live_state("stat", path)?.lookup_file(path, "stat")?;
        let len = lock(&f).data.len() as u64;
        Ok(len)
    }

    fn file_modification_time(&self, path: &Path) -> Result<u64> {
        let f = self.live_state("stat", path)?.lookup_file(path, "stat")?;
        let t = lock(&f).modified;
        Ok(t)
    }

    fn delete_file(&self, path: &Path) -> Result<()> {
        let mut st = self.live_state("delete", path)?;
        st.lookup_file(path, "delete")?;
        let (dir, name) = split(path)?;
        st.dir_mut(&dir, "delete")?.current.remove(&name);
        st.pending.push(DirOp {
            unlink: Some((dir, name)),
            link: None,
        });
        Ok(())
    }

    fn rename_file(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.live_state("rename", from)?;
        if st.dirs.contains_key(&normalize(from)) {
            return st.rename_dir(from, to);
        }
        let file = st.lookup_file(from, "rename")?;
        let (from_dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        if (&from_dir, &from_name) == (&to_dir, &to_name) {
            return Ok(());
        }
        let target = st.dir_mut(&to_dir, "rename")?;
        if let Some(Entry::Dir) = target.current.get(&to_name) {
            return Err(io_err("rename onto", to, "is a directory"));
        }
        target
            .current
            .insert(to_name.clone(), Entry::File(file.clone()));
        st.dir_mut(&from_dir, "rename")?.current.remove(&from_name);
        st.pending.push(DirOp {
            unlink: Some((from_dir, from_name)),
            link: Some((to_dir, to_name, file)),
        });
        Ok(())
    }

    fn link_file(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.live_state("link", from)?;
        let file = st.lookup_file(from, "link")?;
        let (dir, name) = split(to)?;
        if st.dir_mut(&dir, "link")?.current.contains_key(&name) {
            return Err(io_err("link onto", to, "file exists"));
        }
        st.link(to, file)
    }

    fn overwrite_at(&self, path: &Path, offset: u64, data: &[u8]) -> Result<()> {
        let st = self.live_state("write in place", path)?;
        let file = st.lookup_file(path, "write in place")?;
        drop(st);
        let mut f = lock(&file);
        let len = f.data.len();
        let Some(range) = usize::try_from(offset)
            .ok()
            .and_then(|o| Some(o..o.checked_add(data.len())?))
            .filter(|r| r.end <= len)
        else {
            return Err(Error::InvalidArgument(format!(
                "write {} bytes at {offset} of {}: the file has {len} bytes",
                data.len(),
                path.display()
            )));
        };
        f.data[range].copy_from_slice(data);
        f.modified = super::unix_seconds_now();
        // Synced on return, as the contract says: the whole file is durable.
        f.synced = len;
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut st = self.live_state("create dir", dir)?;
        let target = normalize(dir);
        let mut cur = PathBuf::from("/");
        for c in target.components().skip(1) {
            let parent = cur.clone();
            cur.push(c);
            if st.dirs.contains_key(&cur) {
                continue;
            }
            let name = c.as_os_str().to_string_lossy().into_owned();
            let p = st.dir_mut(&parent, "create dir")?;
            if p.current.contains_key(&name) {
                return Err(io_err("create dir", &cur, "a file has that name"));
            }
            p.current.insert(name.clone(), Entry::Dir);
            p.durable.insert(name, Entry::Dir);
            st.dirs.insert(cur.clone(), DirState::default());
        }
        Ok(())
    }

    fn delete_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.live_state("delete dir", dir)?;
        let (parent, name) = split(dir)?;
        let d = normalize(dir);
        match st.dirs.get(&d) {
            None => return Err(not_found("delete dir", dir)),
            Some(s) if !s.current.is_empty() => {
                return Err(io_err("delete dir", dir, "directory not empty"));
            }
            Some(_) => {}
        }
        st.dirs.remove(&d);
        st.pending.retain(|op| !op.touches(&d));
        let p = st.dir_mut(&parent, "delete dir")?;
        p.current.remove(&name);
        p.durable.remove(&name);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.live_state("sync dir", dir)?;
        let d = normalize(dir);
        if !st.dirs.contains_key(&d) {
            return Err(not_found("sync dir", dir));
        }
        let (now, later): (Vec<DirOp>, Vec<DirOp>) = std::mem::take(&mut st.pending)
            .into_iter()
            .partition(|op| op.touches(&d));
        for op in &now {
            op.apply_durable(&mut st.dirs);
        }
        st.pending = later;
        Ok(())
    }

    fn lock_file(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut st = self.live_state("lock", path)?;
        let p = normalize(path);
        if st.locks.contains(&p) {
            return Err(Error::Busy(format!(
                "lock {}: already held",
                path.display()
            )));
        }
        if let Err(e) = st.lookup_file(&p, "lock") {
            if !e.is_not_found() {
                return Err(e);
            }
            st.create_file(&p)?;
        }
        st.locks.insert(p.clone());
        Ok(Box::new(MemFileLock {
            fs: self.inner.clone(),
            generation: self.generation(),
            path: p,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    /// A file system with `/db` created.
    fn db() -> MemFileSystem {
        let fs = MemFileSystem::new();
        fs.create_dir_all(&p("/db")).unwrap();
        fs
    }

    #[test]
    fn round_trip_and_shared_bytes() {
        let fs = db();
        let mut w = fs.new_writable_file(&p("/db/f")).unwrap();
        w.append(b"abc").unwrap();
        let r = fs.new_random_access_file(&p("/db/f")).unwrap();
        let mut s = fs.new_sequential_file(&p("db/./f")).unwrap();
        w.append(b"def").unwrap();
        let mut buf = [0u8; 10];
        assert_eq!(r.read_at(1, &mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"bcdef");
        assert_eq!(r.read_at(6, &mut buf).unwrap(), 0);
        assert_eq!(r.read_at(u64::MAX, &mut buf).unwrap(), 0);
        s.skip(2).unwrap();
        assert_eq!(s.read(&mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"cdef");
        assert_eq!(w.size(), 6);
        w.close().unwrap();
        assert!(w.append(b"x").is_err());
        assert_eq!(fs.read_file(&p("/db/f")).unwrap(), b"abcdef");
        let mut w = fs.reopen_writable_file(&p("/db/f")).unwrap();
        assert_eq!(w.size(), 6);
        w.append(b"g").unwrap();
        assert_eq!(fs.file_size(&p("/db/f")).unwrap(), 7);
    }

    #[test]
    fn directories_and_errors() {
        let fs = MemFileSystem::new();
        assert!(
            fs.new_writable_file(&p("/x/f"))
                .err()
                .unwrap()
                .is_not_found()
        );
        fs.create_dir_all(&p("/a/b/")).unwrap();
        fs.create_dir_all(&p("/a/b")).unwrap();
        assert!(fs.file_exists(&p("/a/b/")));
        assert_eq!(fs.children(&p("/a")).unwrap(), vec!["b".to_string()]);
        fs.write_file(&p("/a/b/x"), b"1", false).unwrap();
        fs.write_file(&p("/a/b/y"), b"22", false).unwrap();
        fs.rename_file(&p("/a/b/y"), &p("/a/b/x")).unwrap();
        assert_eq!(fs.children(&p("/a/b/")).unwrap(), vec!["x".to_string()]);
        assert_eq!(fs.read_file(&p("/a/b/x")).unwrap(), b"22");
        assert!(fs.delete_dir(&p("/a/b")).is_err());
        assert!(fs.delete_file(&p("/a/b/y")).unwrap_err().is_not_found());
        assert!(fs.file_size(&p("/a/b/y")).unwrap_err().is_not_found());
        assert!(fs.children(&p("/nope")).unwrap_err().is_not_found());
        assert!(fs.sync_dir(&p("/nope")).unwrap_err().is_not_found());
        assert!(
            fs.new_sequential_file(&p("/a/q"))
                .err()
                .unwrap()
                .is_not_found()
        );
        fs.delete_file(&p("/a/b/x")).unwrap();
        fs.delete_dir(&p("/a/b")).unwrap();
        assert!(!fs.file_exists(&p("/a/b")));
        assert_eq!(fs.file_names(), Vec::<PathBuf>::new());
    }

    #[test]
    fn synced_data_survives_and_tail_is_a_prefix() {
        let (mut none, mut all, mut part) = (false, false, false);
        for seed in 0..200 {
            let fs = db();
            let mut w = fs.new_writable_file(&p("/db/log")).unwrap();
            w.append(b"synced-").unwrap();
            w.sync().unwrap();
            fs.sync_dir(&p("/db")).unwrap();
            w.append(b"0123456789").unwrap();
            fs.crash(seed);
            assert!(w.append(b"x").is_err(), "stale handle must fail");
            let got = fs.read_file(&p("/db/log")).unwrap();
            let full = b"synced-0123456789";
            assert!(
                got.len() >= 7 && full.starts_with(&got),
                "seed {seed}: {got:?}"
            );
            match got.len() {
                7 => none = true,
                17 => all = true,
                _ => part = true,
            }
            // After the crash everything present is durable.
            fs.crash_drop_unsynced();
            assert_eq!(fs.read_file(&p("/db/log")).unwrap(), got);
        }
        assert!(none && all && part);
    }

    #[test]
    fn crash_is_deterministic_per_seed() {
        let run = |seed| {
            let fs = db();
            for i in 0..8 {
                let name = format!("/db/{i}");
                let mut w = fs.new_writable_file(&p(&name)).unwrap();
                w.append(&[i as u8; 100]).unwrap();
                if i % 2 == 0 {
                    w.sync().unwrap();
                }
            }
            fs.crash(seed);
            fs.file_names()
                .into_iter()
                .map(|n| (fs.read_file(&n).unwrap(), n))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert!((0..20).any(|s| run(s) != run(s + 1)));
    }

    #[test]
    fn unsynced_directory_entry_disappears() {
        let fs = db();
        fs.write_file(&p("/db/a"), b"data", true).unwrap();
        fs.crash_drop_unsynced();
        assert!(!fs.file_exists(&p("/db/a")));
        fs.write_file(&p("/db/a"), b"data", true).unwrap();
        fs.sync_dir(&p("/db/")).unwrap();
        fs.crash_drop_unsynced();
        assert_eq!(fs.read_file(&p("/db/a")).unwrap(), b"data");
        // A synced entry whose bytes were never synced survives empty.
        fs.write_file(&p("/db/b"), b"data", false).unwrap();
        fs.sync_dir(&p("/db")).unwrap();
        fs.crash_drop_unsynced();
        assert_eq!(fs.read_file(&p("/db/b")).unwrap(), b"");
        // A deletion is durable only after sync_dir.
        fs.delete_file(&p("/db/a")).unwrap();
        fs.crash_drop_unsynced();
        assert!(fs.file_exists(&p("/db/a")));
        fs.delete_file(&p("/db/a")).unwrap();
        fs.sync_dir(&p("/db")).unwrap();
        fs.crash(1);
        assert!(!fs.file_exists(&p("/db/a")));
    }

    #[test]
    fn hard_links_share_bytes_and_follow_directory_syncs() {
        let fs = db();
        fs.write_file(&p("/db/a"), b"data", true).unwrap();
        fs.sync_dir(&p("/db")).unwrap();
        fs.create_dir_all(&p("/cp")).unwrap();
        fs.link_file(&p("/db/a"), &p("/cp/a")).unwrap();
        assert_eq!(fs.read_file(&p("/cp/a")).unwrap(), b"data");
        assert!(
            fs.link_file(&p("/db/a"), &p("/cp/a")).is_err(),
            "link onto an existing name"
        );
        assert!(fs.link_file(&p("/db/missing"), &p("/cp/b")).is_err());
        // The new name is durable only once its directory is synced.
        fs.crash_drop_unsynced();
        assert!(!fs.file_exists(&p("/cp/a")));
        fs.link_file(&p("/db/a"), &p("/cp/a")).unwrap();
        fs.sync_dir(&p("/cp")).unwrap();
        fs.delete_file(&p("/db/a")).unwrap();
        fs.sync_dir(&p("/db")).unwrap();
        fs.crash(3);
        assert!(!fs.file_exists(&p("/db/a")));
        assert_eq!(fs.read_file(&p("/cp/a")).unwrap(), b"data");
    }

    #[test]
    fn directories_move_with_their_contents() {
        let fs = db();
        fs.create_dir_all(&p("/snap.tmp/sub")).unwrap();
        fs.write_file(&p("/snap.tmp/a"), b"1", true).unwrap();
        fs.write_file(&p("/snap.tmp/sub/b"), b"2", true).unwrap();
        fs.rename_file(&p("/snap.tmp"), &p("/snap")).unwrap();
        assert!(!fs.file_exists(&p("/snap.tmp")));
        assert_eq!(fs.read_file(&p("/snap/a")).unwrap(), b"1");
        assert_eq!(fs.read_file(&p("/snap/sub/b")).unwrap(), b"2");
        // Entries created before the move become durable by syncing the
        // directory under its new name.
        fs.sync_dir(&p("/snap")).unwrap();
        fs.crash_drop_unsynced();
        assert_eq!(fs.read_file(&p("/snap/a")).unwrap(), b"1");
        assert!(
            !fs.file_exists(&p("/snap/sub/b")),
            "never synced in its directory"
        );
        fs.create_dir_all(&p("/other")).unwrap();
        assert!(
            fs.rename_file(&p("/snap"), &p("/other")).is_err(),
            "onto an existing name"
        );
        assert!(
            fs.rename_file(&p("/snap"), &p("/snap/sub/x")).is_err(),
            "into itself"
        );
    }

    #[test]
    fn rename_is_atomic_across_crashes() {
        let (mut old, mut new) = (false, false);
        for seed in 0..300 {
            let fs = db();
            fs.write_file(&p("/db/CURRENT"), b"MANIFEST-000001\n", true)
                .unwrap();
            fs.sync_dir(&p("/db")).unwrap();
            fs.write_file(&p("/db/CURRENT.tmp"), b"MANIFEST-000002\n", true)
                .unwrap();
            fs.rename_file(&p("/db/CURRENT.tmp"), &p("/db/CURRENT"))
                .unwrap();
            fs.write_file(&p("/db/OTHER"), b"x", false).unwrap();
            fs.crash(seed);
            match fs.read_file(&p("/db/CURRENT")).unwrap().as_slice() {
                b"MANIFEST-000001\n" => old = true,
                b"MANIFEST-000002\n" => {
                    new = true;
                    assert!(!fs.file_exists(&p("/db/CURRENT.tmp")));
                }
                other => panic!("seed {seed}: torn CURRENT {other:?}"),
            }
        }
        assert!(old && new);
        // With the directory synced, the rename always survives.
        for seed in 0..50 {
            let fs = db();
            fs.write_file(&p("/db/CURRENT.tmp"), b"2", true).unwrap();
            fs.rename_file(&p("/db/CURRENT.tmp"), &p("/db/CURRENT"))
                .unwrap();
            fs.sync_dir(&p("/db")).unwrap();
            fs.crash(seed);
            assert_eq!(fs.read_file(&p("/db/CURRENT")).unwrap(), b"2");
            assert_eq!(fs.children(&p("/db")).unwrap(), vec!["CURRENT".to_string()]);
        }
    }

    #[test]
    fn locks() {
        let fs = db();
        let l = fs.lock_file(&p("/db/LOCK")).unwrap();
        assert!(matches!(fs.lock_file(&p("/db/LOCK/")), Err(Error::Busy(_))));
        drop(l);
        let l = fs.lock_file(&p("/db/LOCK")).unwrap();
        fs.crash(3);
        // The crash released it; a stale drop must not release the new one.
        let l2 = fs.lock_file(&p("/db/LOCK")).unwrap();
        drop(l);
        assert!(matches!(fs.lock_file(&p("/db/LOCK")), Err(Error::Busy(_))));
        drop(l2);
        fs.lock_file(&p("/db/LOCK")).unwrap();
    }

    #[test]
    fn corruption_helpers() {
        let fs = db();
        fs.write_file(&p("/db/t"), b"abcdef", true).unwrap();
        fs.corrupt_byte(&p("/db/t"), 1, 0x20).unwrap();
        assert_eq!(fs.read_file(&p("/db/t")).unwrap(), b"aBcdef");
        assert!(fs.corrupt_byte(&p("/db/t"), 6, 1).is_err());
        fs.truncate(&p("/db/t"), 3).unwrap();
        assert_eq!(fs.read_file(&p("/db/t")).unwrap(), b"aBc");
        assert_eq!(fs.synced_len(&p("/db/t")).unwrap(), 3);
        assert!(fs.truncate(&p("/db/t"), 4).is_err());
        assert!(fs.truncate(&p("/db/u"), 0).unwrap_err().is_not_found());
    }

    #[test]
    fn clones_share_state_and_recreate_replaces() {
        let fs = db();
        let fs2 = fs.clone();
        fs.write_file(&p("/db/f"), b"old", true).unwrap();
        fs.sync_dir(&p("/db")).unwrap();
        let r = fs2.new_random_access_file(&p("/db/f")).unwrap();
        fs2.write_file(&p("/db/f"), b"new!", true).unwrap();
        assert_eq!(r.size().unwrap(), 3);
        assert_eq!(fs.read_file(&p("/db/f")).unwrap(), b"new!");
        fs.crash_drop_unsynced();
        assert_eq!(fs2.read_file(&p("/db/f")).unwrap(), b"old");
        assert!(r.size().is_err());
    }

    #[test]
    fn a_process_view_dies_with_the_crash() {
        let fs = db();
        let proc1 = fs.process();
        proc1.write_file(&p("/db/a"), b"1", true).unwrap();
        proc1.sync_dir(&p("/db")).unwrap();
        let _lock = proc1.lock_file(&p("/db/LOCK")).unwrap();
        fs.crash(7);
        // Every operation of the dead process fails, and none lands.
        assert!(proc1.new_writable_file(&p("/db/b")).is_err());
        assert!(proc1.rename_file(&p("/db/a"), &p("/db/c")).is_err());
        assert!(proc1.delete_file(&p("/db/a")).is_err());
        assert!(proc1.sync_dir(&p("/db")).is_err());
        assert!(proc1.children(&p("/db")).is_err());
        assert!(!proc1.file_exists(&p("/db/a")));
        assert_eq!(fs.children(&p("/db")).unwrap(), vec!["LOCK", "a"]);
        // The next process works, and can take the lock the dead one held.
        let proc2 = fs.process();
        assert_eq!(proc2.read_file(&p("/db/a")).unwrap(), b"1");
        let _lock2 = proc2.lock_file(&p("/db/LOCK")).unwrap();
        proc2.write_file(&p("/db/b"), b"2", false).unwrap();
        assert!(fs.file_exists(&p("/db/b")));
    }
}
