//! Layer 3: the log format shared by write-ahead logs and the MANIFEST
//! (RocksDB `db/log_format.h`): 32 KiB blocks of checksummed fragments.
//!
//! ```text
//! fragment := masked_crc32c: fixed32 | length: fixed16 | type: u8
//!             [log_number: fixed32, recyclable types only] | payload
//! ```
//! Invariants: no fragment crosses a block boundary; fewer than a header's
//! worth of bytes at the end of a block are zero padding; the CRC covers the
//! type byte, the log number (recyclable) and the payload.

pub mod reader;
pub mod writer;

pub use reader::{LogReader, ReadError};
pub use writer::LogWriter;

/// Size of a log block.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Header of a legacy fragment: crc (4), length (2), type (1).
pub const HEADER_SIZE: usize = 7;
/// Header of a recyclable fragment: legacy header plus a 4-byte log number.
pub const RECYCLABLE_HEADER_SIZE: usize = 11;

/// Fragment types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordType {
    Zero = 0,
    Full = 1,
    First = 2,
    Middle = 3,
    Last = 4,
    RecyclableFull = 5,
    RecyclableFirst = 6,
    RecyclableMiddle = 7,
    RecyclableLast = 8,
    SetCompressionType = 9,
}

impl RecordType {
    pub fn from_u8(v: u8) -> Option<RecordType> {
        use RecordType::*;
        Some(match v {
            0 => Zero,
            1 => Full,
            2 => First,
            3 => Middle,
            4 => Last,
            5 => RecyclableFull,
            6 => RecyclableFirst,
            7 => RecyclableMiddle,
            8 => RecyclableLast,
            9 => SetCompressionType,
            _ => return None,
        })
    }

    pub fn is_recyclable(self) -> bool {
        (self as u8) >= 5 && (self as u8) <= 8
    }
}
