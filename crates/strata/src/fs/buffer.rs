//! Files over plain byte buffers, for decoders fed from memory (fuzz
//! targets, tools, unit tests): a [`BufferFile`] writable into a shared
//! `Vec`, and a [`BytesFile`] readable at offsets or sequentially.

use std::sync::{Arc, Mutex, PoisonError};

use super::{RandomAccessFile, SequentialFile, WritableFile};
use crate::error::Result;

/// A writable file appending to a shared buffer; clones share it.
#[derive(Clone, Debug, Default)]
pub struct BufferFile(Arc<Mutex<Vec<u8>>>);

impl BufferFile {
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of everything appended so far.
    pub fn contents(&self) -> Vec<u8> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl WritableFile for BufferFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn close(&mut self) -> Result<()> {
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len() as u64
    }
}

/// Immutable bytes read as a file. Sequential reads return at most
/// `max_read` bytes at a time (to exercise callers' refill loops).
#[derive(Clone, Debug)]
pub struct BytesFile {
    data: Arc<[u8]>,
    pos: usize,
    max_read: usize,
}

impl BytesFile {
    pub fn new(data: impl Into<Arc<[u8]>>) -> Self {
        BytesFile {
            data: data.into(),
            pos: 0,
            max_read: usize::MAX,
        }
    }

    /// Limits each sequential read to `n` bytes.
    pub fn with_max_read(mut self, n: usize) -> Self {
        self.max_read = n.max(1);
        self
    }
}

impl RandomAccessFile for BytesFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.data.len());
        let n = buf.len().min(self.data.len() - start);
        buf[..n].copy_from_slice(&self.data[start..start + n]);
        Ok(n)
    }
    fn size(&self) -> Result<u64> {
        Ok(self.data.len() as u64)
    }
}

impl SequentialFile for BytesFile {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = buf.len().min(self.data.len() - self.pos).min(self.max_read);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
    fn skip(&mut self, n: u64) -> Result<()> {
        self.pos = self
            .pos
            .saturating_add(usize::try_from(n).unwrap_or(usize::MAX))
            .min(self.data.len());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_and_bytes_files() {
        let mut w = BufferFile::new();
        w.append(b"hello ").unwrap();
        w.append(b"world").unwrap();
        assert_eq!(w.size(), 11);
        let mut r = BytesFile::new(w.contents()).with_max_read(4);
        let mut buf = [0u8; 8];
        assert_eq!(r.read(&mut buf).unwrap(), 4);
        r.skip(2).unwrap();
        assert_eq!(r.read(&mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"worl");
        let mut b2 = [0u8; 20];
        assert_eq!(r.read_at(6, &mut b2).unwrap(), 5);
        assert_eq!(r.read_at(100, &mut b2).unwrap(), 0);
    }
}
