//! Block compression codecs with RocksDB's on-disk framing
//! (`util/compression.h`, compress_format_version 2 for table
//! format_version >= 2).
//!
//! Invariant: a decompressor never allocates more than
//! [`MAX_UNCOMPRESSED_BLOCK`] bytes, whatever length prefix it is handed,
//! and every malformed input is an error, never a panic.

use std::io::Read;

use crate::error::{Error, Result};
use crate::util::coding::{get_varint32, put_varint32};

/// Largest uncompressed block we accept (a guard against lying length
/// prefixes in corrupt files).
pub const MAX_UNCOMPRESSED_BLOCK: usize = 256 << 20;

/// Compression type byte of a block trailer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompressionType {
    None = 0x00,
    Snappy = 0x01,
    Zlib = 0x02,
    BZip2 = 0x03,
    Lz4 = 0x04,
    Lz4hc = 0x05,
    Xpress = 0x06,
    Zstd = 0x07,
    ZstdNotFinal = 0x40,
}

impl CompressionType {
    pub fn from_u8(v: u8) -> Option<CompressionType> {
        use CompressionType::*;
        Some(match v {
            0x00 => None,
            0x01 => Snappy,
            0x02 => Zlib,
            0x03 => BZip2,
            0x04 => Lz4,
            0x05 => Lz4hc,
            0x06 => Xpress,
            0x07 => Zstd,
            0x40 => ZstdNotFinal,
            _ => return Option::None,
        })
    }

    /// The name RocksDB stores in the `rocksdb.compression` property.
    pub fn name(self) -> &'static str {
        use CompressionType::*;
        match self {
            None => "NoCompression",
            Snappy => "Snappy",
            Zlib => "Zlib",
            BZip2 => "BZip2",
            Lz4 => "LZ4",
            Lz4hc => "LZ4HC",
            Xpress => "Xpress",
            Zstd => "ZSTD",
            ZstdNotFinal => "ZSTDNotFinal",
        }
    }

    /// Parses db_bench/ldb spellings (`snappy`, `kSnappyCompression`, `LZ4`...).
    pub fn parse(s: &str) -> Option<CompressionType> {
        use CompressionType::*;
        let l = s.to_ascii_lowercase();
        Some(match l.as_str() {
            "none" | "no" | "nocompression" | "knocompression" => None,
            "snappy" | "ksnappycompression" => Snappy,
            "zlib" | "kzlibcompression" => Zlib,
            "bzip2" | "kbzip2compression" => BZip2,
            "lz4" | "klz4compression" => Lz4,
            "lz4hc" | "klz4hccompression" => Lz4hc,
            "zstd" | "kzstd" => Zstd,
            "xpress" | "kxpresscompression" => Xpress,
            _ => return Option::None,
        })
    }

    /// True if this build can write blocks with this codec.
    pub fn can_compress(self) -> bool {
        !matches!(
            self,
            CompressionType::Xpress | CompressionType::ZstdNotFinal
        )
    }
}

fn corrupt(msg: impl Into<String>) -> Error {
    Error::corruption("", 0, msg)
}

fn with_size_prefix(raw_len: usize, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 5);
    put_varint32(&mut out, raw_len as u32);
    out.extend_from_slice(body);
    out
}

/// Compresses `raw` with `kind`, in RocksDB's framing. `level` uses the
/// codec's default when `None`. Returns `Ok(None)` for codecs we cannot
/// write.
pub fn compress(kind: CompressionType, raw: &[u8], level: Option<i32>) -> Result<Option<Vec<u8>>> {
    compress_with_dict(kind, raw, level, None)
}

/// [`compress`] against a compression dictionary (RocksDB's
/// `CompressionDict`): ZSTD, LZ4 and Zlib use it, as RocksDB's codecs do;
/// Snappy and BZip2 take none.
pub fn compress_with_dict(
    kind: CompressionType,
    raw: &[u8],
    level: Option<i32>,
    dict: Option<&mut DictCompressor>,
) -> Result<Option<Vec<u8>>> {
    use CompressionType as C;
    let failed =
        |what: &str, e: String| Error::InvalidArgument(format!("{what} compression failed: {e}"));
    if let Some(d) = dict {
        match kind {
            C::Lz4 | C::Lz4hc => {
                return Ok(Some(with_size_prefix(
                    raw.len(),
                    &lz4_flex::block::compress_with_dict(raw, &d.raw),
                )));
            }
            C::Zstd => {
                let body = match &mut d.zstd {
                    Some(z) => z.compress(raw),
                    None => zstd::bulk::Compressor::with_dictionary(level.unwrap_or(3), &d.raw)
                        .and_then(|mut z| z.compress(raw)),
                }
                .map_err(|e| failed("zstd", e.to_string()))?;
                return Ok(Some(with_size_prefix(raw.len(), &body)));
            }
            C::Zlib => return deflate(raw, level, Some(&d.raw)).map(Some),
            _ => {}
        }
    }
    Ok(Some(match kind {
        C::None => raw.to_vec(),
        C::Snappy => snap::raw::Encoder::new()
            .compress_vec(raw)
            .map_err(|e| failed("snappy", e.to_string()))?,
        C::Lz4 | C::Lz4hc => with_size_prefix(raw.len(), &lz4_flex::block::compress(raw)),
        C::Zstd => {
            let body = zstd::bulk::compress(raw, level.unwrap_or(3))
                .map_err(|e| failed("zstd", e.to_string()))?;
            with_size_prefix(raw.len(), &body)
        }
        C::Zlib => deflate(raw, level, None)?,
        C::BZip2 => {
            let lvl = bzip2::Compression::new(level.unwrap_or(9).clamp(1, 9) as u32);
            let mut enc = bzip2::read::BzEncoder::new(raw, lvl);
            let mut body = Vec::new();
            enc.read_to_end(&mut body)
                .map_err(|e| failed("bzip2", e.to_string()))?;
            with_size_prefix(raw.len(), &body)
        }
        C::Xpress | C::ZstdNotFinal => return Ok(None),
    }))
}

/// Splits RocksDB's varint32 uncompressed-size prefix (v2 framing).
/// Raw deflate with a 16 KiB window (RocksDB inflates with windowBits -14
/// and rejects distances beyond it), primed with `dict` if given
/// (RocksDB's `deflateSetDictionary`), size-prefixed.
fn deflate(raw: &[u8], level: Option<i32>, dict: Option<&[u8]>) -> Result<Vec<u8>> {
    let failed = |e: String| Error::InvalidArgument(format!("zlib compression failed: {e}"));
    let lvl = flate2::Compression::new(level.unwrap_or(6).clamp(0, 9) as u32);
    let mut c = flate2::Compress::new_with_window_bits(lvl, false, 14);
    if let Some(d) = dict {
        c.set_dictionary(d).map_err(|e| failed(e.to_string()))?;
    }
    let mut body = Vec::with_capacity(raw.len() / 2 + 64);
    loop {
        let before_in = c.total_in() as usize;
        body.reserve(raw.len() / 2 + 1024);
        let status = c
            .compress_vec(&raw[before_in..], &mut body, flate2::FlushCompress::Finish)
            .map_err(|e| failed(e.to_string()))?;
        if status == flate2::Status::StreamEnd {
            break;
        }
    }
    Ok(with_size_prefix(raw.len(), &body))
}

/// A compression dictionary ready for use: its bytes (stored in the
/// table's `rocksdb.compression_dict` block) and a ZSTD context primed
/// with it at the table's level, so the dictionary is digested once per
/// table rather than once per block.
pub struct DictCompressor {
    raw: Vec<u8>,
    /// Only for ZSTD tables.
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl DictCompressor {
    pub fn new(raw: Vec<u8>, kind: CompressionType, level: Option<i32>) -> Result<DictCompressor> {
        let zstd = match kind {
            CompressionType::Zstd => Some(
                zstd::bulk::Compressor::with_dictionary(level.unwrap_or(3), &raw)
                    .map_err(|e| Error::InvalidArgument(format!("bad ZSTD dictionary: {e}")))?,
            ),
            _ => None,
        };
        Ok(DictCompressor { raw, zstd })
    }

    /// The dictionary's bytes.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }
}

impl std::fmt::Debug for DictCompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DictCompressor")
            .field("bytes", &self.raw.len())
            .finish()
    }
}

fn split_size_prefix(data: &[u8]) -> Result<(usize, &[u8])> {
    let (n, used) = get_varint32(data).ok_or_else(|| corrupt("bad uncompressed size prefix"))?;
    let n = n as usize;
    if n > MAX_UNCOMPRESSED_BLOCK {
        return Err(corrupt(format!("uncompressed block size {n} is too large")));
    }
    Ok((n, &data[used..]))
}

/// `out`, if it has the size the block's prefix stated (when it had one).
fn check_stated_size(out: Vec<u8>, expected: Option<usize>) -> Result<Vec<u8>> {
    match expected {
        Some(n) if out.len() != n => Err(corrupt(format!(
            "decompressed size {} differs from stated {n}",
            out.len()
        ))),
        _ => Ok(out),
    }
}

/// Reads a whole stream, refusing to grow past the cap.
fn read_capped(mut r: impl Read, expected: Option<usize>) -> Result<Vec<u8>> {
    let cap = expected.unwrap_or(MAX_UNCOMPRESSED_BLOCK);
    let mut out = Vec::with_capacity(expected.unwrap_or(4096));
    let mut limited = (&mut r).take(cap as u64 + 1);
    limited
        .read_to_end(&mut out)
        .map_err(|e| corrupt(format!("bad compressed block: {e}")))?;
    if out.len() > cap {
        return Err(corrupt("compressed block inflates past its stated size"));
    }
    check_stated_size(out, expected)
}

/// Raw inflate primed with `dict` (RocksDB's `inflateSetDictionary`).
fn inflate_with_dict(body: &[u8], expected: Option<usize>, dict: &[u8]) -> Result<Vec<u8>> {
    let mut d = flate2::Decompress::new(false);
    d.set_dictionary(dict)
        .map_err(|e| corrupt(format!("bad Zlib dictionary: {e}")))?;
    let cap = expected.unwrap_or(MAX_UNCOMPRESSED_BLOCK);
    let mut out = Vec::with_capacity(expected.map_or(64 << 10, |n| n + 1));
    loop {
        let (consumed, produced) = (d.total_in() as usize, d.total_out());
        let st = d
            .decompress_vec(&body[consumed..], &mut out, flate2::FlushDecompress::Finish)
            .map_err(|e| corrupt(format!("bad compressed block: {e}")))?;
        if out.len() > cap {
            return Err(corrupt("compressed block inflates past its stated size"));
        }
        if st == flate2::Status::StreamEnd {
            break;
        }
        if out.len() == out.capacity() {
            out.reserve(out.len().max(4096));
        } else if d.total_in() as usize == consumed && d.total_out() == produced {
            return Err(corrupt("bad compressed block: truncated deflate stream"));
        }
    }
    check_stated_size(out, expected)
}

/// Decompresses a block payload. `format_version` selects the framing
/// (RocksDB's compress_format_version is 2 for table format_version >= 2).
/// Errors are Corruption with offset 0; callers relocate them.
pub fn decompress(kind: CompressionType, data: &[u8], format_version: u32) -> Result<Vec<u8>> {
    decompress_with_dict(kind, data, format_version, None)
}

/// [`decompress`] for a data block of a table with a compression
/// dictionary (`rocksdb.compression_dict`): ZSTD, LZ4 and Zlib blocks were
/// compressed against it (RocksDB's `compression_opts.max_dict_bytes`);
/// Snappy and BZip2 take none.
pub fn decompress_with_dict(
    kind: CompressionType,
    data: &[u8],
    format_version: u32,
    dict: Option<&[u8]>,
) -> Result<Vec<u8>> {
    use CompressionType as C;
    let dict = dict.filter(|d| !d.is_empty());
    let v2 = format_version >= 2;
    match kind {
        C::None => Ok(data.to_vec()),
        C::Snappy => {
            let n = snap::raw::decompress_len(data)
                .map_err(|e| corrupt(format!("bad snappy block: {e}")))?;
            if n > MAX_UNCOMPRESSED_BLOCK {
                return Err(corrupt(format!("uncompressed block size {n} is too large")));
            }
            snap::raw::Decoder::new()
                .decompress_vec(data)
                .map_err(|e| corrupt(format!("bad snappy block: {e}")))
        }
        C::Lz4 | C::Lz4hc => {
            if !v2 {
                return Err(Error::NotSupported(
                    "LZ4 blocks of table format_version < 2".into(),
                ));
            }
            let (n, body) = split_size_prefix(data)?;
            match dict {
                None => lz4_flex::block::decompress(body, n),
                Some(d) => lz4_flex::block::decompress_with_dict(body, n, d),
            }
            .map_err(|e| corrupt(format!("bad LZ4 block: {e}")))
        }
        C::Zstd | C::ZstdNotFinal => {
            let (n, body) = split_size_prefix(data)?;
            let out = match dict {
                None => zstd::bulk::decompress(body, n),
                Some(d) => zstd::bulk::Decompressor::with_dictionary(d)
                    .and_then(|mut z| z.decompress(body, n)),
            }
            .map_err(|e| corrupt(format!("bad ZSTD block: {e}")))?;
            if out.len() != n {
                return Err(corrupt("ZSTD block size differs from its prefix"));
            }
            Ok(out)
        }
        C::Zlib => {
            let (n, body) = if v2 {
                let (n, b) = split_size_prefix(data)?;
                (Some(n), b)
            } else {
                (None, data)
            };
            match dict {
                None => read_capped(flate2::read::DeflateDecoder::new(body), n),
                Some(d) => inflate_with_dict(body, n, d),
            }
        }
        C::BZip2 => {
            let (n, body) = if v2 {
                let (n, b) = split_size_prefix(data)?;
                (Some(n), b)
            } else {
                (None, data)
            };
            read_capped(bzip2::read::BzDecoder::new(body), n)
        }
        C::Xpress => Err(Error::NotSupported(
            "Xpress compression (Windows only)".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALL: [CompressionType; 7] = [
        CompressionType::None,
        CompressionType::Snappy,
        CompressionType::Zlib,
        CompressionType::BZip2,
        CompressionType::Lz4,
        CompressionType::Lz4hc,
        CompressionType::Zstd,
    ];

    #[test]
    fn roundtrip_every_codec() {
        let data: Vec<u8> = (0..100_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
            .collect();
        for kind in ALL {
            let c = compress(kind, &data, None).unwrap().unwrap();
            if kind != CompressionType::None {
                assert!(c.len() < data.len() / 2, "{kind:?} {}", c.len());
            }
            assert_eq!(decompress(kind, &c, 5).unwrap(), data, "{kind:?}");
        }
    }

    #[test]
    fn zlib_uses_small_window() {
        // Repeats 20 KiB apart must not become back-references past 16 KiB.
        let chunk: Vec<u8> = (0..20_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut data = chunk.clone();
        data.extend_from_slice(&chunk);
        let c = compress(CompressionType::Zlib, &data, None)
            .unwrap()
            .unwrap();
        let (_, body) = split_size_prefix(&c).unwrap();
        let mut d = flate2::Decompress::new_with_window_bits(false, 14);
        let mut out = Vec::with_capacity(data.len() + 16);
        d.decompress_vec(body, &mut out, flate2::FlushDecompress::Finish)
            .unwrap();
        assert_eq!(out, data);
    }

    /// Blocks compressed against a dictionary read back only with it
    /// (ZSTD, LZ4, Zlib; RocksDB's `compression_opts.max_dict_bytes`).
    #[test]
    fn dictionary_blocks_roundtrip() {
        let dict: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        let data: Vec<u8> = dict[100..2100]
            .iter()
            .chain(dict[3000..3500].iter())
            .copied()
            .collect();
        // ZSTD with a raw-content dictionary.
        let mut c = zstd::bulk::Compressor::with_dictionary(3, &dict).unwrap();
        let z = with_size_prefix(data.len(), &c.compress(&data).unwrap());
        assert_eq!(
            decompress_with_dict(CompressionType::Zstd, &z, 5, Some(&dict)).unwrap(),
            data
        );
        assert!(decompress(CompressionType::Zstd, &z, 5).is_err());
        // LZ4.
        let l = with_size_prefix(
            data.len(),
            &lz4_flex::block::compress_with_dict(&data, &dict),
        );
        assert!(l.len() < 200, "{}", l.len());
        assert_eq!(
            decompress_with_dict(CompressionType::Lz4, &l, 5, Some(&dict)).unwrap(),
            data
        );
        // Zlib (raw deflate primed with the dictionary).
        let mut zc = flate2::Compress::new_with_window_bits(flate2::Compression::new(6), false, 14);
        zc.set_dictionary(&dict).unwrap();
        let mut body = Vec::with_capacity(4096);
        zc.compress_vec(&data, &mut body, flate2::FlushCompress::Finish)
            .unwrap();
        let zl = with_size_prefix(data.len(), &body);
        assert!(zl.len() < 200, "{}", zl.len());
        assert_eq!(
            decompress_with_dict(CompressionType::Zlib, &zl, 5, Some(&dict)).unwrap(),
            data
        );
        assert!(
            decompress_with_dict(CompressionType::Zlib, &zl[..zl.len() - 3], 5, Some(&dict))
                .is_err()
        );
    }

    #[test]
    fn lying_size_prefix_is_rejected() {
        let mut bad = Vec::new();
        put_varint32(&mut bad, u32::MAX);
        bad.extend_from_slice(&[1, 2, 3]);
        for kind in [
            CompressionType::Lz4,
            CompressionType::Zstd,
            CompressionType::Zlib,
            CompressionType::BZip2,
        ] {
            assert!(decompress(kind, &bad, 5).unwrap_err().is_corruption());
        }
    }

    proptest! {
        #[test]
        fn decompress_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200), k in 0usize..7) {
            let _ = decompress(ALL[k], &data, 5);
            let _ = decompress(ALL[k], &data, 1);
        }

        #[test]
        fn roundtrip_random(data in proptest::collection::vec(any::<u8>(), 0..3000), k in 0usize..7) {
            let c = compress(ALL[k], &data, None).unwrap().unwrap();
            prop_assert_eq!(decompress(ALL[k], &c, 5).unwrap(), data);
        }
    }
}
