//! Appends records to a log file, fragmenting them over 32 KiB blocks.
//!
//! Invariant: `block_offset` is the write position within the current
//! block, always `<= BLOCK_SIZE`; each `add_record` issues exactly one
//! `append` to the file (header and payload of all fragments together), so a
//! crash tears at most the record being written.

use super::{BLOCK_SIZE, HEADER_SIZE, RECYCLABLE_HEADER_SIZE, RecordType};
use crate::error::Result;
use crate::fs::WritableFile;
use crate::util::checksum::{crc32c, crc32c_extend, mask};

/// Writes log records (WAL or MANIFEST).
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    block_offset: usize,
    log_number: u64,
    recycle: bool,
    /// Precomputed CRC of each type byte (RocksDB's `type_crc_`).
    type_crc: [u32; 10],
    buf: Vec<u8>,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("log_number", &self.log_number)
            .field("block_offset", &self.block_offset)
            .finish()
    }
}

impl LogWriter {
    /// A writer at the start of an empty file. `recycle` selects the 11-byte
    /// recyclable headers that embed the low 32 bits of `log_number`.
    pub fn new(file: Box<dyn WritableFile>, log_number: u64, recycle: bool) -> Self {
        Self::with_offset(file, log_number, recycle, 0)
    }

    /// A writer that continues a file already `file_size` bytes long.
    pub fn with_offset(
        file: Box<dyn WritableFile>,
        log_number: u64,
        recycle: bool,
        file_size: u64,
    ) -> Self {
        let mut type_crc = [0u32; 10];
        for (i, c) in type_crc.iter_mut().enumerate() {
            *c = crc32c(&[i as u8]);
        }
        LogWriter {
            file,
            block_offset: (file_size % BLOCK_SIZE as u64) as usize,
            log_number,
            recycle,
            type_crc,
            buf: Vec::new(),
        }
    }

    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// Bytes written to the file so far.
    pub fn file_size(&self) -> u64 {
        self.file.size()
    }

    /// Appends one logical record (an empty record is one empty FULL fragment).
    pub fn add_record(&mut self, mut data: &[u8]) -> Result<()> {
        let header_size = if self.recycle {
            RECYCLABLE_HEADER_SIZE
        } else {
            HEADER_SIZE
        };
        self.buf.clear();
        let mut begin = true;
        loop {
            debug_assert!(self.block_offset <= BLOCK_SIZE);
            let leftover = BLOCK_SIZE - self.block_offset;
            if leftover < header_size {
                // Pad the block's tail with zeros and switch to a new block.
                self.buf
                    .extend_from_slice(&[0u8; RECYCLABLE_HEADER_SIZE][..leftover]);
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - header_size;
            let n = data.len().min(avail);
            let end = n == data.len();
            let t = match (begin, end, self.recycle) {
                (true, true, false) => RecordType::Full,
                (true, false, false) => RecordType::First,
                (false, true, false) => RecordType::Last,
                (false, false, false) => RecordType::Middle,
                (true, true, true) => RecordType::RecyclableFull,
                (true, false, true) => RecordType::RecyclableFirst,
                (false, true, true) => RecordType::RecyclableLast,
                (false, false, true) => RecordType::RecyclableMiddle,
            };
            self.emit_fragment(t, &data[..n], header_size);
            data = &data[n..];
            begin = false;
            if end {
                break;
            }
        }
        self.file.append(&self.buf)
    }

    fn emit_fragment(&mut self, t: RecordType, payload: &[u8], header_size: usize) {
        debug_assert!(payload.len() <= 0xffff);
        debug_assert!(self.block_offset + header_size + payload.len() <= BLOCK_SIZE);
        let mut crc = self.type_crc[t as usize];
        let mut header = [0u8; RECYCLABLE_HEADER_SIZE];
        header[4..6].copy_from_slice(&(payload.len() as u16).to_le_bytes());
        header[6] = t as u8;
        if self.recycle {
            header[7..11].copy_from_slice(&(self.log_number as u32).to_le_bytes());
            crc = crc32c_extend(crc, &header[7..11]);
        }
        crc = crc32c_extend(crc, payload);
        header[..4].copy_from_slice(&mask(crc).to_le_bytes());
        self.buf.extend_from_slice(&header[..header_size]);
        self.buf.extend_from_slice(payload);
        self.block_offset += header_size + payload.len();
    }

    /// Hands written records to the OS (survives a process crash).
    pub fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    /// Ends the log: the file is cut to the records written (see
    /// [`crate::fs::WritableFile::seal`]); `sync` still works.
    pub fn seal(&mut self) -> Result<()> {
        self.file.seal()
    }

    /// Makes written records durable.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    pub fn close(&mut self) -> Result<()> {
        self.file.close()
    }
}
