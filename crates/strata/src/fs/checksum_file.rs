//! A writable file that feeds every byte appended to a file-checksum
//! generator (RocksDB's `WritableFileWriter` with a checksum generator):
//! table writers get their file's whole-file checksum without reading it
//! back.
//!
//! Invariant: the checksum covers exactly the bytes appended, in order.

use std::sync::{Arc, Mutex, PoisonError};

use super::{FileSystem, WritableFile};
use crate::error::Result;
use crate::util::file_checksum::{FileChecksumGenFactoryRef, FileChecksumGenerator};

/// Wraps a file; see the module comment.
pub struct ChecksumWritableFile {
    inner: Box<dyn WritableFile>,
    generator: Arc<Mutex<Box<dyn FileChecksumGenerator>>>,
}

impl std::fmt::Debug for ChecksumWritableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChecksumWritableFile").finish()
    }
}

/// Gets the checksum once the file is written.
pub struct ChecksumHandle {
    generator: Arc<Mutex<Box<dyn FileChecksumGenerator>>>,
}

impl std::fmt::Debug for ChecksumHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChecksumHandle").finish()
    }
}

impl ChecksumWritableFile {
    /// `inner` with `generator` fed every appended byte.
    pub fn wrap(
        inner: Box<dyn WritableFile>,
        generator: Box<dyn FileChecksumGenerator>,
    ) -> (Box<dyn WritableFile>, ChecksumHandle) {
        let generator = Arc::new(Mutex::new(generator));
        (
            Box::new(ChecksumWritableFile {
                inner,
                generator: Arc::clone(&generator),
            }),
            ChecksumHandle { generator },
        )
    }
}

impl ChecksumHandle {
    /// `(checksum, function name)` of everything appended so far.
    pub fn finish(&self) -> (Vec<u8>, String) {
        let mut g = self
            .generator
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        (g.finalize(), g.name().to_string())
    }
}

impl WritableFile for ChecksumWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)?;
        self.generator
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .update(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn close(&mut self) -> Result<()> {
        self.inner.close()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

/// `file`, fed to a generator of `factory` when there is one.
pub fn maybe_checksummed(
    file: Box<dyn WritableFile>,
    factory: Option<&FileChecksumGenFactoryRef>,
) -> (Box<dyn WritableFile>, Option<ChecksumHandle>) {
    match factory.and_then(|f| f.create_generator("")) {
        Some(g) => {
            let (f, h) = ChecksumWritableFile::wrap(file, g);
            (f, Some(h))
        }
        None => (file, None),
    }
}

/// The checksum of the whole file at `path` by a generator of `factory`
/// (RocksDB's `GenerateOneFileChecksum`); `None` if the factory makes no
/// generator.
pub fn file_checksum(
    fs: &dyn FileSystem,
    path: &std::path::Path,
    factory: &FileChecksumGenFactoryRef,
) -> Result<Option<(Vec<u8>, String)>> {
    let Some(mut g) = factory.create_generator("") else {
        return Ok(None);
    };
    let mut input = fs.new_sequential_file(path)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        g.update(&buf[..n]);
    }
    let sum = g.finalize();
    Ok(Some((sum, g.name().to_string())))
}
