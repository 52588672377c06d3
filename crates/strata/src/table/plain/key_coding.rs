//! PlainTable's entry encoding (RocksDB's `PlainTableKeyEncoder` and
//! `PlainTableKeyDecoder`, `table/plain/plain_table_key_coding.cc`).
//!
//! An entry is an encoded internal key, then `varint32 value_size` and
//! the value. A key whose sequence is 0 and type `Value` stores its user
//! key followed by the byte 0xFF instead of the 8-byte trailer.
//!
//! `kPlain` keys: `[varint32 user_key_size]` (absent with a fixed key
//! length) then the key. `kPrefix` keys (needs a prefix extractor): a
//! size byte `type << 6 | size` (size 0x3F: `0x3F + varint32` follows)
//! with type full key (0), prefix of the previous key (1, followed by a
//! suffix), or key suffix (2): the previous key's first `prefix_len`
//! bytes plus the stored suffix. A full key starts each prefix and then
//! every `index_sparseness`-th key of it, so the hash index can point at
//! it; other entries can only be decoded in sequence ("not seekable").
//!
//! Invariant: the decoder never reads outside the slice it is given and
//! reports damage as an error string (the caller names file and offset).

use crate::format::ValueType;
use crate::format::dbformat::{TRAILER_LEN, pack_sequence_and_type, parse_internal_key};
use crate::util::coding::{get_varint32, put_varint32};
use crate::util::slice_transform::SliceTransformRef;

/// The flag byte that replaces the trailer of a sequence-0 `Value` key
/// (RocksDB's `kValueTypeSeqId0`).
const SEQ0_VALUE: u8 = 0xFF;
/// Sizes below this fit in a `kPrefix` size byte.
const SIZE_INLINE_LIMIT: u32 = 0x3F;

const FULL_KEY: u8 = 0;
const PREFIX_FROM_PREVIOUS_KEY: u8 = 1;
const KEY_SUFFIX: u8 = 2;

/// How keys are stored (RocksDB's `EncodingType`; the
/// `rocksdb.plain.table.encoding.type` property).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EncodingType {
    /// Every key in full.
    #[default]
    Plain,
    /// Keys after the first of a prefix store only their suffix.
    Prefix,
}

impl EncodingType {
    pub fn code(self) -> u32 {
        match self {
            EncodingType::Plain => 0,
            EncodingType::Prefix => 1,
        }
    }

    pub fn from_code(c: u32) -> Option<Self> {
        match c {
            0 => Some(EncodingType::Plain),
            1 => Some(EncodingType::Prefix),
            _ => None,
        }
    }

    /// The OPTIONS file's name.
    pub fn name(self) -> &'static str {
        match self {
            EncodingType::Plain => "kPlain",
            EncodingType::Prefix => "kPrefix",
        }
    }

    pub fn from_name(n: &str) -> Option<Self> {
        match n {
            "kPlain" => Some(EncodingType::Plain),
            "kPrefix" => Some(EncodingType::Prefix),
            _ => None,
        }
    }
}

fn encode_size(kind: u8, size: u32, out: &mut Vec<u8>) {
    if size < SIZE_INLINE_LIMIT {
        out.push(kind << 6 | size as u8);
    } else {
        out.push(kind << 6 | SIZE_INLINE_LIMIT as u8);
        put_varint32(out, size - SIZE_INLINE_LIMIT);
    }
}

/// Encodes entries for a table being written.
pub struct KeyEncoder {
    encoding: EncodingType,
    /// 0: variable-length keys.
    fixed_user_key_len: u32,
    prefix_extractor: Option<SliceTransformRef>,
    index_sparseness: usize,
    keys_in_prefix: usize,
    prev_prefix: Vec<u8>,
}

impl std::fmt::Debug for KeyEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyEncoder")
            .field("encoding", &self.encoding)
            .field("fixed_user_key_len", &self.fixed_user_key_len)
            .finish()
    }
}

impl KeyEncoder {
    /// `kPrefix` without a prefix extractor falls back to `kPlain`, as in
    /// RocksDB.
    pub fn new(
        encoding: EncodingType,
        fixed_user_key_len: u32,
        prefix_extractor: Option<SliceTransformRef>,
        index_sparseness: usize,
    ) -> Self {
        KeyEncoder {
            encoding: if prefix_extractor.is_some() {
                encoding
            } else {
                EncodingType::Plain
            },
            fixed_user_key_len,
            prefix_extractor,
            index_sparseness: index_sparseness.max(1),
            keys_in_prefix: 0,
            prev_prefix: Vec::new(),
        }
    }

    /// The encoding actually used.
    pub fn encoding(&self) -> EncodingType {
        self.encoding
    }

    /// Appends the entry (`ikey`, `value`) to `out`. REQUIRES: `ikey` is
    /// a valid internal key (and has the fixed length, if any).
    pub fn append_entry(&mut self, ikey: &[u8], value: &[u8], out: &mut Vec<u8>) {
        debug_assert!(ikey.len() >= TRAILER_LEN);
        let user_len = ikey.len() - TRAILER_LEN;
        let user_key = &ikey[..user_len];
        let mut key_part = ikey;
        // `new` keeps kPrefix only with an extractor.
        match (self.encoding, &self.prefix_extractor) {
            (EncodingType::Plain, _) | (EncodingType::Prefix, None) => {
                if self.fixed_user_key_len == 0 {
                    put_varint32(out, user_len as u32);
                } else {
                    debug_assert_eq!(user_len, self.fixed_user_key_len as usize);
                }
            }
            (EncodingType::Prefix, Some(pe)) => {
                let prefix = pe.transform(user_key);
                if self.keys_in_prefix == 0
                    || prefix != self.prev_prefix.as_slice()
                    || self.keys_in_prefix % self.index_sparseness == 0
                {
                    self.keys_in_prefix = 1;
                    self.prev_prefix.clear();
                    self.prev_prefix.extend_from_slice(prefix);
                    encode_size(FULL_KEY, user_len as u32, out);
                } else {
                    self.keys_in_prefix += 1;
                    let plen = self.prev_prefix.len();
                    if self.keys_in_prefix == 2 {
                        encode_size(PREFIX_FROM_PREVIOUS_KEY, plen as u32, out);
                    }
                    encode_size(KEY_SUFFIX, (user_len - plen) as u32, out);
                    key_part = &ikey[plen..];
                }
            }
        }
        let trailer = &ikey[user_len..];
        if trailer == pack_sequence_and_type(0, ValueType::Value).to_le_bytes() {
            out.extend_from_slice(&key_part[..key_part.len() - TRAILER_LEN]);
            out.push(SEQ0_VALUE);
        } else {
            out.extend_from_slice(key_part);
        }
        put_varint32(out, value.len() as u32);
        out.extend_from_slice(value);
    }
}

/// One decoded entry: the internal key went into the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The value is `data[value_start..value_start + value_len]`.
    pub value_start: usize,
    pub value_len: usize,
    /// Offset of the next entry.
    pub next: usize,
    /// The entry holds its key in full (decodable without the previous).
    pub seekable: bool,
}

/// Decodes entries in sequence; the state carries the previous key's
/// prefix length (`kPrefix`).
#[derive(Clone, Debug)]
pub struct KeyDecoder {
    encoding: EncodingType,
    fixed_user_key_len: u32,
    prefix_len: usize,
}

type DecodeResult<T> = std::result::Result<T, &'static str>;

impl KeyDecoder {
    pub fn new(encoding: EncodingType, fixed_user_key_len: u32) -> Self {
        KeyDecoder {
            encoding,
            fixed_user_key_len,
            prefix_len: 0,
        }
    }

    /// Decodes the entry at `offset` of `data` (the data section). `key`
    /// holds the previous entry's internal key (its prefix is reused by
    /// suffix entries) and receives this one's.
    pub fn next_entry(
        &mut self,
        data: &[u8],
        offset: usize,
        key: &mut Vec<u8>,
    ) -> DecodeResult<Entry> {
        let mut pos = offset;
        let mut seekable = true;
        match self.encoding {
            EncodingType::Plain => {
                let user_len = if self.fixed_user_key_len != 0 {
                    self.fixed_user_key_len as usize
                } else {
                    let (n, len) =
                        get_varint32(data.get(pos..).unwrap_or_default()).ok_or("bad key size")?;
                    pos += len;
                    n as usize
                };
                key.clear();
                pos = read_internal_key(data, pos, user_len, key)?;
            }
            EncodingType::Prefix => {
                let (kind, size) = decode_size(data, &mut pos)?;
                match kind {
                    FULL_KEY => {
                        key.clear();
                        pos = read_internal_key(data, pos, size, key)?;
                    }
                    PREFIX_FROM_PREVIOUS_KEY => {
                        seekable = false;
                        self.prefix_len = size;
                        // A suffix must follow.
                        let (kind, size) = decode_size(data, &mut pos)?;
                        if kind != KEY_SUFFIX {
                            return Err("prefix flag not followed by a suffix");
                        }
                        pos = self.suffix(data, pos, size, key)?;
                    }
                    KEY_SUFFIX => {
                        seekable = false;
                        pos = self.suffix(data, pos, size, key)?;
                    }
                    _ => return Err("Un-identified size flag"),
                }
            }
        }
        let (value_len, n) = get_varint32(data.get(pos..).unwrap_or_default())
            .ok_or("Unexpected EOF when reading the next value's size")?;
        let value_start = pos + n;
        let next = value_start
            .checked_add(value_len as usize)
            .filter(|&e| e <= data.len())
            .ok_or("value runs past the data")?;
        Ok(Entry {
            value_start,
            value_len: value_len as usize,
            next,
            seekable,
        })
    }

    fn suffix(
        &self,
        data: &[u8],
        pos: usize,
        size: usize,
        key: &mut Vec<u8>,
    ) -> DecodeResult<usize> {
        if key.len() < TRAILER_LEN || key.len() - TRAILER_LEN < self.prefix_len {
            return Err("key suffix without a previous key of its prefix");
        }
        key.truncate(self.prefix_len);
        read_internal_key(data, pos, size, key)
    }
}

fn decode_size(data: &[u8], pos: &mut usize) -> DecodeResult<(u8, usize)> {
    let b = *data
        .get(*pos)
        .ok_or("Unexpected EOF when reading size of the key")?;
    *pos += 1;
    let kind = b >> 6;
    let inline = u32::from(b) & SIZE_INLINE_LIMIT;
    if inline < SIZE_INLINE_LIMIT {
        return Ok((kind, inline as usize));
    }
    let (extra, n) = get_varint32(data.get(*pos..).unwrap_or_default()).ok_or("bad key size")?;
    *pos += n;
    Ok((
        kind,
        (SIZE_INLINE_LIMIT as usize).saturating_add(extra as usize),
    ))
}

/// Appends `user_len` key bytes at `pos` and the trailer (or the
/// sequence-0 flag) to `key`; returns the position after them.
fn read_internal_key(
    data: &[u8],
    pos: usize,
    user_len: usize,
    key: &mut Vec<u8>,
) -> DecodeResult<usize> {
    let flag_at = pos.checked_add(user_len).ok_or("key size overflows")?;
    let flag = *data.get(flag_at).ok_or("key runs past the data")?;
    key.extend_from_slice(&data[pos..flag_at]);
    if flag == SEQ0_VALUE {
        key.extend_from_slice(&pack_sequence_and_type(0, ValueType::Value).to_le_bytes());
        return Ok(flag_at + 1);
    }
    let end = flag_at + TRAILER_LEN;
    let trailer = data.get(flag_at..end).ok_or("key runs past the data")?;
    key.extend_from_slice(trailer);
    if parse_internal_key(key).is_none() {
        return Err("Corrupted key found during next key read");
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::make_internal_key;
    use crate::util::slice_transform::FixedPrefix;
    use std::sync::Arc;

    fn roundtrip(
        enc: EncodingType,
        fixed: u32,
        pe: Option<SliceTransformRef>,
        keys: &[(Vec<u8>, u64)],
    ) {
        let mut e = KeyEncoder::new(enc, fixed, pe, 3);
        let mut data = Vec::new();
        let entries: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .enumerate()
            .map(|(i, (k, s))| {
                (
                    make_internal_key(k, *s, ValueType::Value),
                    vec![b'v'; i % 70],
                )
            })
            .collect();
        for (k, v) in &entries {
            e.append_entry(k, v, &mut data);
        }
        let mut d = KeyDecoder::new(e.encoding(), fixed);
        let mut key = Vec::new();
        let mut pos = 0;
        for (k, v) in &entries {
            let got = d.next_entry(&data, pos, &mut key).unwrap();
            assert_eq!(&key, k);
            assert_eq!(
                &data[got.value_start..got.value_start + got.value_len],
                &v[..]
            );
            pos = got.next;
        }
        assert_eq!(pos, data.len());
        // Every truncation is an error, never a panic.
        for cut in 0..data.len() {
            let mut d = KeyDecoder::new(e.encoding(), fixed);
            let mut pos = 0;
            while pos < cut {
                match d.next_entry(&data[..cut], pos, &mut key) {
                    Ok(got) => pos = got.next,
                    Err(_) => break,
                }
            }
        }
    }

    #[test]
    fn both_encodings_round_trip() {
        let mut keys: Vec<(Vec<u8>, u64)> = Vec::new();
        for p in 0..5u8 {
            for i in 0..(p as usize * 3 + 1) {
                let mut k = vec![b'p', p, b'-'];
                k.extend(std::iter::repeat_n(b'x', i * 13));
                keys.push((k, (i % 2) as u64 * 77));
            }
        }
        let pe: SliceTransformRef = Arc::new(FixedPrefix(2));
        roundtrip(EncodingType::Plain, 0, None, &keys);
        roundtrip(EncodingType::Prefix, 0, Some(pe.clone()), &keys);
        let fixed: Vec<(Vec<u8>, u64)> = (0..50u32)
            .map(|i| (i.to_be_bytes().to_vec(), u64::from(i % 3)))
            .collect();
        roundtrip(EncodingType::Plain, 4, None, &fixed);
    }

    #[test]
    fn prefix_encoding_matches_rocksdbs_example() {
        // plain_table_factory.h: "0000 0001", "0000 00021", "0000 0002",
        // "00011 00", "0002 0001" (prefix extractor: the first 4 bytes,
        // except "00011" under a capped extractor the example assumes; we
        // use a fixed 4 and keys whose prefixes it gives).
        let pe: SliceTransformRef = Arc::new(FixedPrefix(4));
        let mut e = KeyEncoder::new(EncodingType::Prefix, 0, Some(pe), 16);
        let mut out = Vec::new();
        let k = |s: &[u8]| make_internal_key(s, 5, ValueType::Value);
        e.append_entry(&k(b"00000001"), b"", &mut out);
        assert_eq!(out[0], 8); // full key, size 8
        let start = out.len();
        e.append_entry(&k(b"000000021"), b"", &mut out);
        // prefix flag (1<<6 | 4), suffix flag (2<<6 | 5)
        assert_eq!(&out[start..start + 2], &[0x44, 0x85]);
        assert_eq!(&out[start + 2..start + 7], b"00021");
    }
}
