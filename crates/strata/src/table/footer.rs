//! Block handles, the table footer, block trailers, and reading a block from
//! a file with checksum verification and decompression (RocksDB's
//! `table/format.cc`; named for its centrepiece here, so that `format`
//! means only the internal-key and batch encodings of `crate::format`).
//!
//! ```text
//! block   := payload | compression_type: u8 | checksum: fixed32
//! footer  := checksum_type: u8 | metaindex_handle | index_handle | padding to 41
//!            | format_version: fixed32 | magic: fixed64          (53 bytes, fv 1..=5)
//!          | checksum_type: u8 | 3e 00 7a 00 | footer_checksum: fixed32
//!            | base_context_checksum: fixed32 | metaindex_size: fixed32
//!            | 16 unchecked zero bytes | 8 zero bytes
//!            | format_version: fixed32 | magic: fixed64          (53 bytes, fv 6)
//!          | metaindex_handle | index_handle | padding to 40 | legacy magic (48 bytes)
//! ```
//! format_version 6 (RocksDB 8.6+, the default of 9.x and 10.x) moves the
//! index handle into the meta-index (`rocksdb.index`), puts the meta-index
//! right before the footer, checksums the footer, and adds a per-file
//! "context" to every block checksum so that a block copied to another
//! offset or file fails verification: stored = checksum + modifier(base,
//! offset), with modifier = base ^ (low32(offset) + high32(offset)).
//! Invariant: a handle read from disk is checked against the file size
//! before anything is allocated for it.

use std::sync::Arc;

use super::compression::{CompressionType, decompress_with_dict};
use crate::error::{Error, Result};
use crate::fs::{RandomAccessFile, read_exact_at};
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
/// PlainTable's magic (`echo rocksdb.table.plain | sha1sum`).
pub const PLAIN_TABLE_MAGIC: u64 = 0x8242_2296_63bf_9564;
/// PlainTable's magic in a legacy (format_version 0) footer: what RocksDB
/// writes for every PlainTable file.
pub const LEGACY_PLAIN_TABLE_MAGIC: u64 = 0x4f34_18eb_7a8f_13b8;
/// CuckooTable's magic (`echo rocksdb.table.cuckoo | sha1sum`); RocksDB
/// writes it in a format_version 1 footer.
pub const CUCKOO_TABLE_MAGIC: u64 = 0x9267_89d0_c5f1_7873;
/// Newest table format_version RocksDB 7.8.3 reads.
pub const MAX_FORMAT_VERSION_7_8: u32 = 5;
/// Newest table format_version Strata reads and writes (RocksDB 8.6+'s
/// context checksums; RocksDB 9.x and 10.x write it by default).
pub const MAX_FORMAT_VERSION: u32 = 6;
/// RocksDB 10.4's format_version 7 (compression manager names in the
/// properties): a real format Strata does not read yet.
pub const FORMAT_VERSION_COMPRESSION_MANAGER: u32 = 7;
/// Part of a format_version 6 footer that cannot be a pair of handles.
const EXTENDED_MAGIC: [u8; 4] = [0x3e, 0x00, 0x7a, 0x00];
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

/// Which table format a file holds, by its footer's magic number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableKind {
    /// RocksDB's block-based table (and LevelDB's).
    #[default]
    BlockBased,
    /// RocksDB's PlainTable: no blocks, no trailers on meta blocks.
    Plain,
    /// RocksDB's CuckooTable: a hash table of fixed-size buckets, no
    /// trailers on meta blocks.
    Cuckoo,
}

/// The fixed-size tail of a table file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    pub kind: TableKind,
    pub checksum_type: ChecksumType,
    pub metaindex_handle: BlockHandle,
    pub index_handle: BlockHandle,
    pub format_version: u32,
    /// Offset of the footer in the file.
    pub offset: u64,
    /// format_version >= 6: the file's nonzero base for block checksum
    /// contexts; 0 before (no context).
    pub base_context_checksum: u32,
}

/// What RocksDB adds to a block's checksum at `offset` in a file whose
/// base context checksum is `base` (`ChecksumModifierForContext`); 0 when
/// `base` is 0 (format_version < 6).
pub fn checksum_modifier_for_context(base: u32, offset: u64) -> u32 {
    if base == 0 {
        return 0;
    }
    base ^ (offset as u32).wrapping_add((offset >> 32) as u32)
}

impl Footer {
    /// Encodes a new-style (format_version >= 1) footer. format_version 6
    /// requires the meta-index to end right before the footer and a
    /// nonzero `base_context_checksum`.
    pub fn encode(&self) -> Vec<u8> {
        debug_assert!(self.format_version >= 1);
        let mut v = Vec::with_capacity(NEW_FOOTER_LEN);
        v.push(self.checksum_type as u8);
        if self.format_version >= 6 {
            debug_assert_ne!(self.base_context_checksum, 0);
            debug_assert_eq!(
                self.metaindex_handle.offset
                    + self.metaindex_handle.size
                    + BLOCK_TRAILER_SIZE as u64,
                self.offset
            );
            v.extend_from_slice(&EXTENDED_MAGIC);
            put_fixed32(&mut v, 0); // the footer checksum, filled below
            put_fixed32(&mut v, self.base_context_checksum);
            put_fixed32(&mut v, self.metaindex_handle.size as u32);
        } else {
            self.metaindex_handle.encode_to(&mut v);
            self.index_handle.encode_to(&mut v);
        }
        v.resize(1 + 2 * MAX_HANDLE_LEN, 0);
        put_fixed32(&mut v, self.format_version);
        put_fixed64(
            &mut v,
            match self.kind {
                TableKind::BlockBased => BLOCK_BASED_TABLE_MAGIC,
                TableKind::Plain => PLAIN_TABLE_MAGIC,
                TableKind::Cuckoo => CUCKOO_TABLE_MAGIC,
            },
        );
        debug_assert_eq!(v.len(), NEW_FOOTER_LEN);
        if self.format_version >= 6 {
            let sum = footer_checksum(self.checksum_type, &v).wrapping_add(
                checksum_modifier_for_context(self.base_context_checksum, self.offset),
            );
            v[5..9].copy_from_slice(&sum.to_le_bytes());
        }
        v
    }

    /// Encodes a legacy (format_version 0) footer, the form RocksDB writes
    /// for PlainTable files: two handles, zero padding, legacy magic.
    pub fn encode_legacy(&self) -> Vec<u8> {
        debug_assert_eq!(self.format_version, 0);
        let mut v = Vec::with_capacity(LEGACY_FOOTER_LEN);
        self.metaindex_handle.encode_to(&mut v);
        self.index_handle.encode_to(&mut v);
        v.resize(LEGACY_FOOTER_LEN - 8, 0);
        put_fixed64(
            &mut v,
            match self.kind {
                TableKind::BlockBased => LEGACY_BLOCK_BASED_TABLE_MAGIC,
                TableKind::Plain => LEGACY_PLAIN_TABLE_MAGIC,
                // CuckooTable has no legacy magic (RocksDB never writes one).
                TableKind::Cuckoo => CUCKOO_TABLE_MAGIC,
            },
        );
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
        let (legacy, kind) = match magic {
            LEGACY_BLOCK_BASED_TABLE_MAGIC => (true, TableKind::BlockBased),
            LEGACY_PLAIN_TABLE_MAGIC => (true, TableKind::Plain),
            BLOCK_BASED_TABLE_MAGIC => (false, TableKind::BlockBased),
            PLAIN_TABLE_MAGIC => (false, TableKind::Plain),
            CUCKOO_TABLE_MAGIC => (false, TableKind::Cuckoo),
            _ => {
                return Err(bad(
                    file_size - 8,
                    format!(
                        "Bad table magic number: expected {BLOCK_BASED_TABLE_MAGIC}, found {magic}"
                    ),
                ));
            }
        };
        if legacy {
            let start = n - LEGACY_FOOTER_LEN;
            let mut d = Decoder::new(&tail[start..n - 8]);
            let offset = file_size - LEGACY_FOOTER_LEN as u64;
            let metaindex_handle = BlockHandle::decode_from(&mut d)
                .ok_or_else(|| bad(offset, "bad metaindex handle in footer".into()))?;
            let index_handle = BlockHandle::decode_from(&mut d)
                .ok_or_else(|| bad(offset, "bad index handle in footer".into()))?;
            return Ok(Footer {
                kind,
                checksum_type: if kind == TableKind::Plain {
                    ChecksumType::NoChecksum
                } else {
                    ChecksumType::Crc32c
                },
                metaindex_handle,
                index_handle,
                format_version: 0,
                offset,
                base_context_checksum: 0,
            });
        }
        if n < NEW_FOOTER_LEN {
            return Err(bad(0, "file is too short to hold a footer".into()));
        }
        let start = n - NEW_FOOTER_LEN;
        let offset = file_size - NEW_FOOTER_LEN as u64;
        let format_version = decode_fixed32(tail, n - 12).unwrap_or(u32::MAX);
        let compression_manager = format_version == FORMAT_VERSION_COMPRESSION_MANAGER;
        if format_version == 0 || (format_version > MAX_FORMAT_VERSION && !compression_manager) {
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
        if format_version >= 6 {
            let mut f =
                Self::decode_v6(&tail[start..], checksum_type, format_version, offset, file)?;
            // Format_version 7 keeps format_version 6's footer: only one
            // that passes its checks (extended magic, a checksum over the
            // version too) is a table of that format; anything else failed
            // above as a damaged footer (say an older table's version field
            // hit by a bit flip).
            if compression_manager {
                return Err(Error::NotSupported(format!(
                    "{file}: table format_version {format_version} (RocksDB 10.4's compression \
                     manager format; Strata reads format_version 0 to {MAX_FORMAT_VERSION})"
                )));
            }
            f.kind = kind;
            return Ok(f);
        }
        let mut d = Decoder::new(&tail[start + 1..n - 12]);
        let metaindex_handle = BlockHandle::decode_from(&mut d)
            .ok_or_else(|| bad(offset, "bad metaindex handle in footer".into()))?;
        let index_handle = BlockHandle::decode_from(&mut d)
            .ok_or_else(|| bad(offset, "bad index handle in footer".into()))?;
        Ok(Footer {
            kind,
            checksum_type,
            metaindex_handle,
            index_handle,
            format_version,
            offset,
            base_context_checksum: 0,
        })
    }

    /// Decodes the 53 bytes `f` of a format_version 6 footer at `offset`.
    /// The index handle is left empty: it is in the meta-index.
    fn decode_v6(
        f: &[u8],
        checksum_type: ChecksumType,
        format_version: u32,
        offset: u64,
        file: &str,
    ) -> Result<Footer> {
        debug_assert_eq!(f.len(), NEW_FOOTER_LEN);
        let bad = |msg: String| Error::corruption(file, offset, msg);
        if f[1..5] != EXTENDED_MAGIC {
            return Err(bad(format!(
                "Bad extended magic number: 0x{:02X}{:02X}{:02X}{:02X}",
                f[1], f[2], f[3], f[4]
            )));
        }
        let stored = decode_fixed32(f, 5).unwrap_or(0);
        let base_context_checksum = decode_fixed32(f, 9).unwrap_or(0);
        if base_context_checksum == 0 {
            return Err(bad("Invalid base context checksum".into()));
        }
        if checksum_type != ChecksumType::NoChecksum {
            let mut copy = [0u8; NEW_FOOTER_LEN];
            copy.copy_from_slice(f);
            copy[5..9].fill(0);
            let computed = footer_checksum(checksum_type, &copy)
                .wrapping_add(checksum_modifier_for_context(base_context_checksum, offset));
            if computed != stored {
                return Err(bad(format!("Footer at {offset} checksum mismatch")));
            }
        }
        let metaindex_size = u64::from(decode_fixed32(f, 13).unwrap_or(0));
        if decode_fixed64(f, 33).unwrap_or(0) != 0 {
            return Err(Error::NotSupported(format!(
                "{file}: table uses a future feature (reserved footer bytes are set) not \
                 supported in this version"
            )));
        }
        let metaindex_offset = offset
            .checked_sub(BLOCK_TRAILER_SIZE as u64 + metaindex_size)
            .ok_or_else(|| {
                bad(format!(
                    "bad footer: a meta-index of {metaindex_size} bytes does not fit before \
                     the footer at {offset}"
                ))
            })?;
        Ok(Footer {
            kind: TableKind::BlockBased,
            checksum_type,
            metaindex_handle: BlockHandle::new(metaindex_offset, metaindex_size),
            index_handle: BlockHandle::default(),
            format_version,
            offset,
            base_context_checksum,
        })
    }
}

/// RocksDB's `ComputeBuiltinChecksum` over a whole footer (its last byte
/// plays the block type byte's part).
fn footer_checksum(kind: ChecksumType, f: &[u8]) -> u32 {
    let (body, last) = f.split_at(f.len() - 1);
    block_checksum(kind, body, last[0])
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
    /// The footer's base context checksum (0 before format_version 6).
    pub base_context_checksum: u32,
}

impl BlockReadOptions {
    /// How to read the blocks of the table with `footer`.
    pub fn for_footer(footer: &Footer, verify_checksums: bool, file_size: u64) -> Self {
        BlockReadOptions {
            checksum_type: footer.checksum_type,
            verify_checksums,
            format_version: footer.format_version,
            file_size,
            base_context_checksum: footer.base_context_checksum,
        }
    }
}

/// Verifies a block's trailer checksum. `raw` is payload + trailer;
/// `context` the file's base context checksum (0: none).
pub fn verify_block_checksum(
    kind: ChecksumType,
    context: u32,
    raw: &[u8],
    name: &str,
    handle: BlockHandle,
) -> Result<()> {
    let n = raw.len() - BLOCK_TRAILER_SIZE;
    let modifier = checksum_modifier_for_context(context, handle.offset);
    let stored = decode_fixed32(raw, n + 1)
        .unwrap_or(0)
        .wrapping_sub(modifier);
    let computed = block_checksum(kind, &raw[..n], raw[n]);
    if kind != ChecksumType::NoChecksum && stored != computed {
        let ctx = if modifier != 0 {
            "(context removed)"
        } else {
            ""
        };
        return Err(Error::corruption(
            name,
            handle.offset,
            format!(
                "block checksum mismatch: stored{ctx} = {stored}, computed = {computed}, type = {} (block of {} bytes)",
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
    raw: Vec<u8>,
    name: &str,
    handle: BlockHandle,
    opts: &BlockReadOptions,
) -> Result<BlockContents> {
    decode_block_with_dict(raw, name, handle, opts, None)
}

/// [`decode_block`] for a data block of a table with a compression
/// dictionary.
pub fn decode_block_with_dict(
    mut raw: Vec<u8>,
    name: &str,
    handle: BlockHandle,
    opts: &BlockReadOptions,
    dict: Option<&[u8]>,
) -> Result<BlockContents> {
    if opts.verify_checksums {
        verify_block_checksum(
            opts.checksum_type,
            opts.base_context_checksum,
            &raw,
            name,
            handle,
        )?;
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
        decompress_with_dict(compression, &raw[..n], opts.format_version, dict)
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
            kind: TableKind::BlockBased,
            checksum_type: ChecksumType::Crc32c,
            metaindex_handle: BlockHandle::new(1000, 50),
            index_handle: BlockHandle::new(900, 95),
            format_version: 5,
            offset: 1055,
            base_context_checksum: 0,
        };
        let enc = f.encode();
        assert_eq!(
            &enc[45..],
            &[0xF7, 0xCF, 0xF4, 0x85, 0xB7, 0x41, 0xE2, 0x88]
        );
        let size = 1055 + 53;
        assert_eq!(Footer::decode(&enc, size, "t").unwrap(), f);
        let mut bad = enc.clone();
        bad[41] = 8;
        let e = Footer::decode(&bad, size, "t").unwrap_err();
        assert!(e.to_string().contains("format_version: 8"), "{e}");
        // A version field damaged into 7 is not a format_version 7 table:
        // its footer lacks that format's magic and checksum.
        bad[41] = 7;
        let e = Footer::decode(&bad, size, "t").unwrap_err();
        assert!(matches!(e, Error::Corruption { .. }), "{e}");
        // A real format_version 7 footer (format_version 6's layout).
        let v7 = Footer {
            kind: TableKind::BlockBased,
            checksum_type: ChecksumType::Crc32c,
            metaindex_handle: BlockHandle::new(1000, 50),
            index_handle: BlockHandle::default(),
            format_version: 7,
            offset: 1055,
            base_context_checksum: 0x1234_5678,
        };
        let e = Footer::decode(&v7.encode(), size, "t").unwrap_err();
        assert!(matches!(e, Error::NotSupported(_)), "{e}");
        assert!(e.to_string().contains("format_version 7"), "{e}");
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
    fn footer_v6_roundtrip_checksum_and_rejections() {
        for kind in [
            ChecksumType::Crc32c,
            ChecksumType::XxHash,
            ChecksumType::XxHash64,
            ChecksumType::Xxh3,
        ] {
            let f = Footer {
                kind: TableKind::BlockBased,
                checksum_type: kind,
                metaindex_handle: BlockHandle::new(1000, 50),
                index_handle: BlockHandle::default(),
                format_version: 6,
                offset: 1055,
                base_context_checksum: 0x1234_5678,
            };
            let enc = f.encode();
            assert_eq!(&enc[1..5], &EXTENDED_MAGIC);
            assert_eq!(decode_fixed32(&enc, 13), Some(50));
            let size = 1055 + 53;
            assert_eq!(Footer::decode(&enc, size, "t").unwrap(), f);
            // Any flipped byte outside the magic and version fails the
            // footer checksum (or its own check).
            for i in 0..41 {
                let mut bad = enc.clone();
                bad[i] ^= 0x10;
                assert!(
                    Footer::decode(&bad, size, "t").is_err(),
                    "{kind:?} byte {i}"
                );
            }
            // The same footer read at another offset fails: the checksum
            // carries the offset.
            let mut moved = f;
            moved.offset = 2055;
            moved.metaindex_handle = BlockHandle::new(2000, 50);
            let e = Footer::decode(&enc, 2055 + 53, "t").unwrap_err();
            assert!(e.to_string().contains("checksum mismatch"), "{e}");
            assert_eq!(
                Footer::decode(&moved.encode(), 2055 + 53, "t").unwrap(),
                moved
            );
        }
        // Reserved bytes set: a future feature, not damage.
        let f = Footer {
            kind: TableKind::BlockBased,
            checksum_type: ChecksumType::NoChecksum,
            metaindex_handle: BlockHandle::new(1000, 50),
            index_handle: BlockHandle::default(),
            format_version: 6,
            offset: 1055,
            base_context_checksum: 7,
        };
        let mut enc = f.encode();
        enc[40] = 1;
        let e = Footer::decode(&enc, 1055 + 53, "t").unwrap_err();
        assert!(matches!(e, Error::NotSupported(_)), "{e}");
    }

    #[test]
    fn context_modifier_matches_rocksdb() {
        assert_eq!(checksum_modifier_for_context(0, 12345), 0);
        assert_eq!(checksum_modifier_for_context(5, 0), 5);
        assert_eq!(
            checksum_modifier_for_context(0xdead_beef, 0x0000_0002_0000_0010),
            0xdead_beef ^ 0x12
        );
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
