//! Fixed-width little-endian and LEB128 varint encodings (RocksDB's
//! `util/coding.h`), plus a bounds-checked [`Decoder`] cursor.
//!
//! Invariant: no function here reads past the end of its input or panics on
//! any input; decoders return `None` on malformed or truncated bytes.

/// Longest encoding of a varint32.
pub const MAX_VARINT32_LEN: usize = 5;
/// Longest encoding of a varint64.
pub const MAX_VARINT64_LEN: usize = 10;

#[inline]
pub fn put_fixed16(dst: &mut Vec<u8>, v: u16) {
    dst.extend_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads a little-endian u32 at `pos`, or `None` if out of bounds.
#[inline]
pub fn decode_fixed32(src: &[u8], pos: usize) -> Option<u32> {
    let b = src.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads a little-endian u64 at `pos`, or `None` if out of bounds.
#[inline]
pub fn decode_fixed64(src: &[u8], pos: usize) -> Option<u64> {
    let b = src.get(pos..pos.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// Reads a little-endian u16 at `pos`, or `None` if out of bounds.
#[inline]
pub fn decode_fixed16(src: &[u8], pos: usize) -> Option<u16> {
    let b = src.get(pos..pos.checked_add(2)?)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

#[inline]
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

#[inline]
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Number of bytes `put_varint64(v)` writes.
#[inline]
pub fn varint_length(mut v: u64) -> usize {
    let mut len = 1;
    while v >= 0x80 {
        v >>= 7;
        len += 1;
    }
    len
}

/// Decodes a varint32 from the front of `src`: `(value, bytes used)`.
#[inline]
pub fn get_varint32(src: &[u8]) -> Option<(u32, usize)> {
    // Fast path: one byte.
    if let Some(&b) = src.first()
        && b < 0x80
    {
        return Some((u32::from(b), 1));
    }
    let mut result: u32 = 0;
    for (i, &byte) in src.iter().take(MAX_VARINT32_LEN).enumerate() {
        let shift = 7 * i as u32;
        if i == MAX_VARINT32_LEN - 1 && byte > 0x0F {
            return None; // more than 32 bits
        }
        result |= u32::from(byte & 0x7F) << shift;
        if byte < 0x80 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Decodes a varint64 from the front of `src`: `(value, bytes used)`.
#[inline]
pub fn get_varint64(src: &[u8]) -> Option<(u64, usize)> {
    let mut result: u64 = 0;
    for (i, &byte) in src.iter().take(MAX_VARINT64_LEN).enumerate() {
        let shift = 7 * i as u32;
        if i == MAX_VARINT64_LEN - 1 && byte > 0x01 {
            return None; // more than 64 bits
        }
        result |= u64::from(byte & 0x7F) << shift;
        if byte < 0x80 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Zigzag-then-varint64 encoding of a signed value.
pub fn put_varsigned64(dst: &mut Vec<u8>, v: i64) {
    put_varint64(dst, ((v << 1) ^ (v >> 63)) as u64);
}

/// Decodes a zigzag varint64.
pub fn get_varsigned64(src: &[u8]) -> Option<(i64, usize)> {
    let (n, len) = get_varint64(src)?;
    Some((((n >> 1) as i64) ^ -((n & 1) as i64), len))
}

/// Appends a varint32 length and the bytes.
pub fn put_length_prefixed_slice(dst: &mut Vec<u8>, s: &[u8]) {
    put_varint32(dst, s.len() as u32);
    dst.extend_from_slice(s);
}

/// A bounds-checked cursor over a byte slice. Every getter returns `None`
/// on truncation or malformed input and leaves the position unspecified.
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    pub fn varint32(&mut self) -> Option<u32> {
        let (v, n) = get_varint32(self.remaining())?;
        self.pos += n;
        Some(v)
    }

    #[inline]
    pub fn varint64(&mut self) -> Option<u64> {
        let (v, n) = get_varint64(self.remaining())?;
        self.pos += n;
        Some(v)
    }

    #[inline]
    pub fn varsigned64(&mut self) -> Option<i64> {
        let (v, n) = get_varsigned64(self.remaining())?;
        self.pos += n;
        Some(v)
    }

    #[inline]
    pub fn fixed32(&mut self) -> Option<u32> {
        let v = decode_fixed32(self.buf, self.pos)?;
        self.pos += 4;
        Some(v)
    }

    #[inline]
    pub fn fixed64(&mut self) -> Option<u64> {
        let v = decode_fixed64(self.buf, self.pos)?;
        self.pos += 8;
        Some(v)
    }

    #[inline]
    pub fn u8(&mut self) -> Option<u8> {
        let v = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }

    /// The next `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    /// A varint32 length followed by that many bytes.
    #[inline]
    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = self.varint32()? as usize;
        self.bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varint_examples() {
        let mut v = Vec::new();
        put_varint32(&mut v, 300);
        assert_eq!(v, [0xAC, 0x02]);
        assert_eq!(get_varint32(&v), Some((300, 2)));
        assert_eq!(get_varint32(&[0x80]), None);
        assert_eq!(get_varint32(&[0xFF, 0xFF, 0xFF, 0xFF, 0x1F]), None);
        assert_eq!(
            get_varint32(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
            Some((u32::MAX, 5))
        );
        let mut w = Vec::new();
        put_varint64(&mut w, u64::MAX);
        assert_eq!(w.len(), 10);
        assert_eq!(get_varint64(&w), Some((u64::MAX, 10)));
        w[9] = 0x02;
        assert_eq!(get_varint64(&w), None);
    }

    proptest! {
        #[test]
        fn varint64_roundtrip(v: u64, tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            prop_assert_eq!(buf.len(), varint_length(v));
            let n = buf.len();
            buf.extend_from_slice(&tail);
            prop_assert_eq!(get_varint64(&buf), Some((v, n)));
        }

        #[test]
        fn varint32_roundtrip(v: u32) {
            let mut buf = Vec::new();
            put_varint32(&mut buf, v);
            prop_assert_eq!(get_varint32(&buf), Some((v, buf.len())));
            prop_assert_eq!(get_varint64(&buf), Some((u64::from(v), buf.len())));
        }

        #[test]
        fn varsigned_roundtrip(v: i64) {
            let mut buf = Vec::new();
            put_varsigned64(&mut buf, v);
            prop_assert_eq!(get_varsigned64(&buf), Some((v, buf.len())));
        }

        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            let _ = get_varint32(&bytes);
            let _ = get_varint64(&bytes);
            let mut d = Decoder::new(&bytes);
            let _ = d.length_prefixed();
            let _ = d.fixed64();
        }

        #[test]
        fn fixed_roundtrip(a: u16, b: u32, c: u64) {
            let mut buf = Vec::new();
            put_fixed16(&mut buf, a);
            put_fixed32(&mut buf, b);
            put_fixed64(&mut buf, c);
            prop_assert_eq!(decode_fixed16(&buf, 0), Some(a));
            prop_assert_eq!(decode_fixed32(&buf, 2), Some(b));
            prop_assert_eq!(decode_fixed64(&buf, 6), Some(c));
            prop_assert_eq!(decode_fixed64(&buf, 7), None);
        }
    }
}
