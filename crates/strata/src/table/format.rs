//! Block handles, the table footer, block trailers, and reading a block from
//! a file with checksum verification and decompression (RocksDB
//! `table/format.cc`).
//!
//! ```text
//! block   := payload | compression_type: u8 | checksum: fixed32
//! footer  := checksum_type: u8 | metaindex_handle | index_handle | padding to 41
//!            | format_version: fixed32 | magic: fixed64          (53 bytes, fv >= 1)
//!          | metaindex_handle | index_handle | padding to 40 | legacy magic (48 bytes)
//! ```
//! Invariant: a handle read from disk is checked against the file size
//! before anything is allocated for it.

use std::sync::Arc;

use super::compression::{CompressionType, decompress};
use crate::env::{RandomAccessFile, read_exact_at};
use crate::error::{Error, Result};
use crate::util::checksum::{ChecksumType, block_checksum};
use crate::util::coding::{
    Decoder, decode_fixed32, decode_fixed64, put_fixed32, put_fixed64, put_varint64,
};

/// Bytes after each block's payload: compression type and checksum.
pub const BLOCK_TRAILER_SIZE: usize = 5;
/// Magic number of block-based tables with the new footer.
pub const BLOCK_BASED_TABLE_MAGIC: u64 = 0x88e2_41b7_85f4_cff7;
/// LevelDB's table magic, used by format_version 0 footers.
pub const LEGACY_BLOCK_BASED_TABLE_MAGIC: u64 = 0xdb47_7524_8b80_fb57;
/// Newest table format_version RocksDB 7.8.3 reads.
pub const MAX_FORMAT_VERSION: u32 = 5;
/// Length of a new-style footer.
pub const NEW_FOOTER_LEN: usize = 53;
/// Length of a legacy footer.
pub const LEGACY_FOOTER_LEN: usize = 48;
/// Longest encoding of a block handle.
pub const MAX_HANDLE_LEN: usize = 20;

/// Where a block lives in a file: offset of its payload and the payload's
/// size (trailer excluded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    pub fn new(offset: u64, size: u64) -> Self {
        BlockHandle { offset, size }
    }

    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(MAX_HANDLE_LEN);
        self.encode_to(&mut v);
        v
    }

    pub fn decode_from(d: &mut Decoder<'_>) -> Option<BlockHandle> {
        Some(BlockHandle {
            offset: d.varint64()?,
            size: d.varint64()?,
        })
    }

    /// Decodes a handle that must fill `src` exactly or be followed by
    /// bytes the caller ignores.
    pub fn decode(src: &[u8]) -> Option<BlockHandle> {
        Self::decode_from(&mut Decoder::new(src))
    }

    /// True if the block and its trailer lie within a file of `file_size`
    /// bytes.
    pub fn fits_in(&self, file_size: u64) -> bool {
        self.offset
            .checked_add(self.size)
            .and_then(|e| e.checked_add(BLOCK_TRAILER_SIZE as u64))
            .is_some_and(|end| end <= file_size)
    }
}

/// The fixed-size tail of a table file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    pub checksum_type: ChecksumType,
    pub metaindex_handle: BlockHandle,
    pub index_handle: BlockHandle,
    pub format_version: u32,
    /// Offset of the footer in the file.
    pub offset: u64,
}

impl Footer {
    /// Encodes a new-style (format_version >= 1) footer.
    pub fn encode(&self) -> Vec<u8> {
        debug_assert!(self.format_version >= 1);
        let mut v = Vec::with_capacity(NEW_FOOTER_LEN);
        v.push(self.checksum_type as u8);
        self.metaindex_handle.encode_to(&mut v);
        self.index_handle.encode_to(&mut v);
        v.resize(1 + 2 * MAX_HANDLE_LEN, 0);
        put_fixed32(&mut v, self.format_version);
        put_fixed64(&mut v, BLOCK_BASED_TABLE_MAGIC);
        debug_assert_eq!(v.len(), NEW_FOOTER_LEN);
        v
    }

    /// Decodes the footer from the last bytes of a file of `file_size` bytes;
    /// `tail` holds the file's last `tail.len()` bytes (at most 53).
    pub fn decode(tail: &[u8], file_size: u64, file: &str) -> Result<Footer> {
        let n = tail.len();
        if n < LEGACY_FOOTER_LEN {
            return Err(Error::corruption(
                file,
                0,
                format!("file is too short ({file_size} bytes) to be an sstable"),
            ));
        }
        let magic = decode_fixed64(tail, n - 8).unwrap_or(0);
        let bad = |off: u64, msg: String| Error::corruption(file, off, msg);
        if magic == LEGACY_BLOCK_BASED_TABLE_MAGIC {
            let start = n - LEGACY_FOOTER_LEN;
            let mut d = Decoder::new(&tail[start..n - 8]);
            let offset = file_size - LEGACY_FOOTER_LEN as u64;
            let metaindex_handle = BlockHandle::decode_from(&mut d)
                .ok_or_else(|| bad(offset, "bad metaindex handle in footer".into()))?;
            let index_handle = BlockHandle::decode_from(&mut d)
                .ok_or_else(|| bad(offset, "bad index handle in footer".into()))?;
            return Ok(Footer {
                checksum_type: ChecksumType::Crc32c,
                metaindex_handle,
                index_handle,
                format_version: 0,
                offset,
            });
        }
        if magic != BLOCK_BASED_TABLE_MAGIC {
            return Err(bad(
                file_size - 8,
                format!(
                    "Bad table magic number: expected {BLOCK_BASED_TABLE_MAGIC}, found {magic}"
                ),
            ));
        }
        if n < NEW_FOOTER_LEN {
            return Err(bad(0, "file is too short to hold a footer".into()));
        }
        let start = n - NEW_FOOTER_LEN;
        let offset = file_size - NEW_FOOTER_LEN as u64;
        let format_version = decode_fixed32(tail, n - 12).unwrap_or(u32::MAX);
        if format_version == 0 || format_version > MAX_FORMAT_VERSION {
            return Err(bad(
                file_size - 12,
                format!("Corrupt or unsupported format_version: {format_version}"),
            ));
        }
        let ct = tail[start];
        let checksum_type = ChecksumType::from_u8(ct).ok_or_else(|| {
            bad(
                offset,
                format!("Corrupt or unsupported checksum type: {ct}"),
            )
        })?;
        let mut d = Decoder::new(&tail[start + 1..n - 12]);
        let metaindex_handle = BlockHandle::decode_from(&mut d)
            .ok_or_else(|| bad(offset, "bad metaindex handle in footer".into()))?;
        let index_handle = BlockHandle::decode_from(&mut d)
            .ok_or_else(|| bad(offset, "bad index handle in footer".into()))?;
        Ok(Footer {
            checksum_type,
            metaindex_handle,
            index_handle,
            format_version,
            offset,
        })
    }
}

/// Reads and decodes the footer of `file`.
pub fn read_footer(file: &dyn RandomAccessFile, name: &str, file_size: u64) -> Result<Footer> {
    let n = (NEW_FOOTER_LEN as u64).min(file_size) as usize;
    let tail = read_exact_at(file, name, file_size - n as u64, n)?;
    Footer::decode(&tail, file_size, name)
}

/// A block as read from a file: trailer checked, payload decompressed.
#[derive(Clone, Debug)]
pub struct BlockContents {
    pub data: Arc<[u8]>,
    /// The compression type the block was stored with.
    pub compression: CompressionType,
    /// Where the block came from (for error messages).
    pub handle: BlockHandle,
}

/// How to read blocks of one table.
#[derive(Clone, Copy, Debug)]
pub struct BlockReadOptions {
    pub checksum_type: ChecksumType,
    pub verify_checksums: bool,
    pub format_version: u32,
    pub file_size: u64,
}

/// Verifies a block's trailer checksum. `raw` is payload + trailer.
pub fn verify_block_checksum(
    kind: ChecksumType,
    raw: &[u8],
    name: &str,
    handle: BlockHandle,
) -> Result<()> {
    let n = raw.len() - BLOCK_TRAILER_SIZE;
    let stored = decode_fixed32(raw, n + 1).unwrap_or(0);
    let computed = block_checksum(kind, &raw[..n], raw[n]);
    if kind != ChecksumType::NoChecksum && stored != computed {
        return Err(Error::corruption(
            name,
            handle.offset,
            format!(
                "block checksum mismatch: stored = {stored}, computed = {computed}, type = {} (block of {} bytes)",
                kind as u8, handle.size
            ),
        ));
    }
    Ok(())
}

/// Fails with a Corruption naming `name` unless the block at `handle`
/// (trailer included) lies within a `file_size`-byte file.
pub fn check_in_file(name: &str, handle: BlockHandle, file_size: u64) -> Result<()> {
    if handle.fits_in(file_size) {
        return Ok(());
    }
    Err(Error::corruption(
        name,
        handle.offset,
        format!(
            "truncated block read: block handle ({}, {}) runs past the end of the {file_size}-byte file",
            handle.offset, handle.size
        ),
    ))
}

/// Reads the block at `handle`, verifies its checksum (if asked) and
/// decompresses it.
pub fn read_block(
    file: &dyn RandomAccessFile,
    name: &str,
    handle: BlockHandle,
    opts: &BlockReadOptions,
) -> Result<BlockContents> {
    check_in_file(name, handle, opts.file_size)?;
    let len = handle.size as usize + BLOCK_TRAILER_SIZE;
    let raw = read_exact_at(file, name, handle.offset, len)?;
    decode_block(raw, name, handle, opts)
}

/// A Snappy block decompressed into a fresh shared buffer.
fn decompress_snappy_shared(data: &[u8]) -> Result<Arc<[u8]>> {
    let n = snap::raw::decompress_len(data)
        .map_err(|e| Error::corruption("", 0, format!("bad snappy block: {e}")))?;
    if n > super::compression::MAX_UNCOMPRESSED_BLOCK {
        return Err(Error::corruption(
            "",
            0,
            format!("uncompressed block size {n} is too large"),
        ));
    }
    let mut uninit: Arc<[std::mem::MaybeUninit<u8>]> = Arc::new_uninit_slice(n);
    let slots = Arc::get_mut(&mut uninit)
        .ok_or_else(|| Error::corruption("", 0, "block buffer is shared"))?;
    // SAFETY: `slots` is `n` writable bytes owned by the fresh Arc; zeroing
    // them initializes every byte, after which viewing them as `[u8]` is
    // sound. Exercised by every snappy table test (e.g.
    // `table::tests::table_matches_btreemap` with snappy).
    let buf: &mut [u8] = unsafe {
        std::ptr::write_bytes(slots.as_mut_ptr(), 0, n);
        std::slice::from_raw_parts_mut(slots.as_mut_ptr().cast::<u8>(), n)
    };
    let written = snap::raw::Decoder::new()
        .decompress(data, buf)
        .map_err(|e| Error::corruption("", 0, format!("bad snappy block: {e}")))?;
    if written != n {
        return Err(Error::corruption(
            "",
            0,
            "snappy block shorter than its length",
        ));
    }
    // SAFETY: every byte was initialized (zeroed, then overwritten).
    Ok(unsafe { uninit.assume_init() })
}

/// Checks and decompresses a block already read (payload + trailer).
pub fn decode_block(
    mut raw: Vec<u8>,
    name: &str,
    handle: BlockHandle,
    opts: &BlockReadOptions,
) -> Result<BlockContents> {
    if opts.verify_checksums {
        verify_block_checksum(opts.checksum_type, &raw, name, handle)?;
    }
    let n = raw.len() - BLOCK_TRAILER_SIZE;
    let type_byte = raw[n];
    let compression = CompressionType::from_u8(type_byte).ok_or_else(|| {
        Error::corruption(
            name,
            handle.offset + n as u64,
            format!("unknown block compression type {type_byte}"),
        )
    })?;
    let data: Arc<[u8]> = if compression == CompressionType::None {
        raw.truncate(n);
        raw.into()
    } else if compression == CompressionType::Snappy {
        // The common case: decompress straight into the shared buffer
        // (no intermediate Vec and copy).
        decompress_snappy_shared(&raw[..n]).map_err(|e| e.relocate(name, handle.offset))?
    } else {
        decompress(compression, &raw[..n], opts.format_version)
            .map_err(|e| e.relocate(name, handle.offset))?
            .into()
    };
    Ok(BlockContents {
        data,
        compression,
        handle,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_roundtrip_and_rejections() {
        let f = Footer {
            checksum_type: ChecksumType::Crc32c,
            metaindex_handle: BlockHandle::new(1000, 50),
            index_handle: BlockHandle::new(900, 95),
            format_version: 5,
            offset: 1055,
        };
        let enc = f.encode();
        assert_eq!(
            &enc[45..],
            &[0xF7, 0xCF, 0xF4, 0x85, 0xB7, 0x41, 0xE2, 0x88]
        );
        let size = 1055 + 53;
        assert_eq!(Footer::decode(&enc, size, "t").unwrap(), f);
        let mut bad = enc.clone();
        bad[41] = 6;
        let e = Footer::decode(&bad, size, "t").unwrap_err();
        assert!(e.to_string().contains("format_version: 6"), "{e}");
        let mut bad = enc.clone();
        bad[0] = 9;
        assert!(Footer::decode(&bad, size, "t").is_err());
        let mut bad = enc.clone();
        bad[52] ^= 1;
        assert!(
            Footer::decode(&bad, size, "t")
                .unwrap_err()
                .to_string()
                .contains("magic")
        );
        assert!(Footer::decode(&enc[..40], 40, "t").is_err());
    }

    #[test]
    fn handle_bounds() {
        assert!(BlockHandle::new(0, 10).fits_in(15));
        assert!(!BlockHandle::new(0, 10).fits_in(14));
        assert!(!BlockHandle::new(u64::MAX, 10).fits_in(u64::MAX));
        let h = BlockHandle::new(300, 70000);
        assert_eq!(BlockHandle::decode(&h.encode()), Some(h));
    }
}
