//! Reads records back from a log file (WAL or MANIFEST).
//!
//! The reader reports damage instead of deciding what it means: the caller
//! applies its WAL recovery mode. `read_record` returns
//! * `Ok(Some(record))` for each intact logical record, in order;
//! * `Ok(None)` at a clean end of file;
//! * `Err(ReadError::TruncatedTail)` when the file ends inside a record, or
//!   in zero-filled space (a torn write: RocksDB's "truncated header" and
//!   "error reading trailing data");
//! * `Err(ReadError::Corruption)` for a checksum mismatch, an impossible
//!   length or an unknown fragment type in the middle of the file. The
//!   reader then drops the rest of the block, so a caller that chooses to
//!   skip corruption may keep reading.
//!
//! Invariant: a record is returned only if every fragment passed its CRC and
//! the fragments arrived in FIRST, MIDDLE*, LAST order within one log.

use super::{BLOCK_SIZE, HEADER_SIZE, RECYCLABLE_HEADER_SIZE, RecordType};
use crate::error::Error;
use crate::fs::SequentialFile;
use crate::util::checksum::{crc32c, crc32c_extend, unmask};
use crate::util::coding::{decode_fixed16, decode_fixed32};

/// Why a record could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// Bytes at `offset` are damaged.
    Corruption { offset: u64, reason: String },
    /// The log ends inside a record or in zero-filled space at `offset`.
    TruncatedTail { offset: u64, reason: String },
    /// The file could not be read, or uses a feature we do not support.
    Other(Error),
}

impl ReadError {
    /// Converts to a crate error naming `file`.
    pub fn into_error(self, file: &str) -> Error {
        match self {
            ReadError::Corruption { offset, reason }
            | ReadError::TruncatedTail { offset, reason } => {
                Error::corruption(file, offset, reason)
            }
            ReadError::Other(e) => e,
        }
    }

    /// Offset of the damage, if any.
    pub fn offset(&self) -> Option<u64> {
        match self {
            ReadError::Corruption { offset, .. } | ReadError::TruncatedTail { offset, .. } => {
                Some(*offset)
            }
            ReadError::Other(_) => None,
        }
    }
}

enum Physical {
    Fragment(RecordType, usize, usize), // type, payload start, payload len within `buf`
    Eof,
}

/// Reads logical records from a log file.
pub struct LogReader {
    file: Box<dyn SequentialFile>,
    log_number: u64,
    buf: Vec<u8>,
    /// Start of the unread part of `buf`.
    pos: usize,
    /// File offset of `buf[0]`.
    buf_offset: u64,
    eof: bool,
    record: Vec<u8>,
    /// File offset of the first fragment of the last returned record.
    last_record_offset: u64,
}

impl std::fmt::Debug for LogReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogReader")
            .field("log_number", &self.log_number)
            .field("offset", &(self.buf_offset + self.pos as u64))
            .finish()
    }
}

impl LogReader {
    /// `log_number` is checked against recyclable fragments: a mismatch marks
    /// leftovers of a recycled file, which end the log.
    pub fn new(file: Box<dyn SequentialFile>, log_number: u64) -> Self {
        LogReader {
            file,
            log_number,
            buf: Vec::with_capacity(BLOCK_SIZE),
            pos: 0,
            buf_offset: 0,
            eof: false,
            record: Vec::new(),
            last_record_offset: 0,
        }
    }

    /// A reader of `file` (positioned at its start) that begins at
    /// `offset`, which must be where a record starts (a value
    /// `end_offset` returned): tailing readers resume there after the end
    /// of a file that is still being written.
    pub fn resume_at(
        mut file: Box<dyn SequentialFile>,
        log_number: u64,
        offset: u64,
    ) -> Result<Self, ReadError> {
        let block = BLOCK_SIZE as u64;
        let block_start = offset - offset % block;
        file.skip(block_start).map_err(ReadError::Other)?;
        let mut r = Self::new(file, log_number);
        r.buf_offset = block_start;
        if offset > block_start {
            r.read_block()?;
            r.pos = usize::try_from(offset - block_start)
                .unwrap_or(usize::MAX)
                .min(r.buf.len());
        }
        debug_assert!(r.end_offset() <= offset);
        Ok(r)
    }

    /// File offset where the last returned record started.
    pub fn last_record_offset(&self) -> u64 {
        self.last_record_offset
    }

    /// File offset just past the last byte consumed.
    pub fn end_offset(&self) -> u64 {
        self.buf_offset + self.pos as u64
    }

    /// Reads the next logical record.
    pub fn read_record(&mut self) -> Result<Option<Vec<u8>>, ReadError> {
        self.record.clear();
        let mut in_fragmented = false;
        let mut record_start = 0u64;
        loop {
            let frag_offset = self.buf_offset + self.pos as u64;
            let phys = match self.read_physical() {
                Ok(p) => p,
                Err(e) => {
                    self.record.clear();
                    if in_fragmented && let ReadError::TruncatedTail { .. } = e {
                        return Err(ReadError::TruncatedTail {
                            offset: record_start,
                            reason: "error reading trailing data: log ends inside a record".into(),
                        });
                    }
                    return Err(e);
                }
            };
            let (t, start, len) = match phys {
                Physical::Eof => {
                    if in_fragmented {
                        self.record.clear();
                        return Err(ReadError::TruncatedTail {
                            offset: record_start,
                            reason: "error reading trailing data: log ends inside a record".into(),
                        });
                    }
                    return Ok(None);
                }
                Physical::Fragment(t, s, l) => (t, s, l),
            };
            let payload = &self.buf[start..start + len];
            match t {
                RecordType::Full | RecordType::RecyclableFull => {
                    if in_fragmented {
                        return Err(self.corrupt(record_start, "partial record without end"));
                    }
                    self.last_record_offset = frag_offset;
                    return Ok(Some(payload.to_vec()));
                }
                RecordType::First | RecordType::RecyclableFirst => {
                    if in_fragmented {
                        return Err(self.corrupt(record_start, "partial record without end"));
                    }
                    in_fragmented = true;
                    record_start = frag_offset;
                    self.record.clear();
                    self.record.extend_from_slice(payload);
                }
                RecordType::Middle | RecordType::RecyclableMiddle => {
                    if !in_fragmented {
                        return Err(self.corrupt(frag_offset, "missing start of fragmented record"));
                    }
                    self.record.extend_from_slice(payload);
                }
                RecordType::Last | RecordType::RecyclableLast => {
                    if !in_fragmented {
                        return Err(self.corrupt(frag_offset, "missing start of fragmented record"));
                    }
                    self.record.extend_from_slice(payload);
                    self.last_record_offset = record_start;
                    return Ok(Some(std::mem::take(&mut self.record)));
                }
                RecordType::SetCompressionType => {
                    let ctype = decode_fixed32(payload, 0).unwrap_or(u32::MAX);
                    if ctype != 0 {
                        return Err(ReadError::Other(Error::NotSupported(format!(
                            "compressed WAL (compression type {ctype})"
                        ))));
                    }
                }
                RecordType::Zero => {
                    return Err(self.corrupt(frag_offset, "unexpected zero-type fragment"));
                }
            }
        }
    }

    fn corrupt(&mut self, offset: u64, reason: &str) -> ReadError {
        self.record.clear();
        ReadError::Corruption {
            offset,
            reason: reason.to_string(),
        }
    }

    /// Refills `buf` with the next block. Returns false at end of file.
    fn read_block(&mut self) -> Result<bool, ReadError> {
        if self.eof {
            return Ok(false);
        }
        self.buf_offset += self.buf.len() as u64;
        self.buf.clear();
        self.buf.resize(BLOCK_SIZE, 0);
        self.pos = 0;
        let mut filled = 0;
        while filled < BLOCK_SIZE {
            let n = self
                .file
                .read(&mut self.buf[filled..])
                .map_err(ReadError::Other)?;
            if n == 0 {
                self.eof = true;
                break;
            }
            filled += n;
        }
        self.buf.truncate(filled);
        Ok(filled > 0)
    }

    fn read_physical(&mut self) -> Result<Physical, ReadError> {
        loop {
            let avail = self.buf.len() - self.pos;
            if avail < HEADER_SIZE {
                if !self.eof {
                    // The rest of the block is padding (or it is the first read).
                    if !self.read_block()? {
                        return Ok(Physical::Eof);
                    }
                    continue;
                }
                if avail > 0 && self.buf[self.pos..].iter().any(|&b| b != 0) {
                    let offset = self.buf_offset + self.pos as u64;
                    self.pos = self.buf.len();
                    return Err(ReadError::TruncatedTail {
                        offset,
                        reason: "truncated header at end of log".into(),
                    });
                }
                self.pos = self.buf.len();
                return Ok(Physical::Eof);
            }
            let offset = self.buf_offset + self.pos as u64;
            let h = &self.buf[self.pos..];
            let type_byte = h[6];
            let length = usize::from(decode_fixed16(h, 4).unwrap_or(0));
            let Some(t) = RecordType::from_u8(type_byte) else {
                self.pos = self.buf.len();
                return Err(ReadError::Corruption {
                    offset,
                    reason: format!("unknown record type {type_byte}"),
                });
            };
            let header_size = if t.is_recyclable() {
                RECYCLABLE_HEADER_SIZE
            } else {
                HEADER_SIZE
            };
            if t == RecordType::Zero && length == 0 {
                // Zero-filled space: nothing was ever written here.
                self.pos = self.buf.len();
                return Err(ReadError::TruncatedTail {
                    offset,
                    reason: "zero-filled space in log".into(),
                });
            }
            if header_size + length > avail {
                // A torn write shortens the file; it cannot make a
                // fragment cross its block (the writer never does), nor
                // leave a complete record behind a header that claims more.
                // Either means the length itself is damaged.
                let crosses_block = self.pos + header_size + length > BLOCK_SIZE;
                let shorter_record_fits = !crosses_block && header_size <= avail && {
                    let expected = unmask(decode_fixed32(h, 0).unwrap_or(0));
                    let mut crc = crc32c(&h[6..header_size]);
                    let mut found = crc == expected;
                    for &b in &h[header_size..avail] {
                        if found {
                            break;
                        }
                        crc = crc32c_extend(crc, &[b]);
                        found = crc == expected;
                    }
                    found
                };
                self.pos = self.buf.len();
                if crosses_block || shorter_record_fits {
                    return Err(ReadError::Corruption {
                        offset,
                        reason: format!("bad record length {length}"),
                    });
                }
                if self.eof {
                    return Err(ReadError::TruncatedTail {
                        offset,
                        reason: "truncated record at end of log".into(),
                    });
                }
                return Err(ReadError::Corruption {
                    offset,
                    reason: format!("bad record length {length}"),
                });
            }
            let expected = unmask(decode_fixed32(h, 0).unwrap_or(0));
            let actual = crc32c(&h[6..header_size + length]);
            if expected != actual {
                // Drop the rest of the block: the length may be garbage too.
                self.pos = self.buf.len();
                return Err(ReadError::Corruption {
                    offset,
                    reason: "checksum mismatch".into(),
                });
            }
            if t.is_recyclable() {
                let num = decode_fixed32(h, 7).unwrap_or(0);
                if num != self.log_number as u32 {
                    // Leftover of a recycled log: the log ends here.
                    self.pos = self.buf.len();
                    self.eof = true;
                    return Ok(Physical::Eof);
                }
            }
            let start = self.pos + header_size;
            self.pos = start + length;
            return Ok(Physical::Fragment(t, start, length));
        }
    }
}

#[cfg(test)]
mod tests;
