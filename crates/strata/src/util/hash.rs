//! RocksDB's 32-bit `Hash` (a MurmurHash1 variant), used by the data-block
//! hash index and by the bloom filter's golden test.

/// RocksDB `Hash(data, n, seed)`. Tail bytes are sign-extended, as in RocksDB.
pub fn hash32(data: &[u8], seed: u32) -> u32 {
    const M: u32 = 0xc6a4_a793;
    const R: u32 = 24;
    let mut h = seed ^ (data.len() as u32).wrapping_mul(M);
    let mut chunks = data.chunks_exact(4);
    for w in &mut chunks {
        let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        h = h.wrapping_add(w);
        h = h.wrapping_mul(M);
        h ^= h >> 16;
    }
    let tail = chunks.remainder();
    let sx = |b: u8| b as i8 as i32 as u32;
    if tail.len() == 3 {
        h = h.wrapping_add(sx(tail[2]) << 16);
    }
    if tail.len() >= 2 {
        h = h.wrapping_add(sx(tail[1]) << 8);
    }
    if !tail.is_empty() {
        h = h.wrapping_add(sx(tail[0]));
        h = h.wrapping_mul(M);
        h ^= h >> R;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash32_vectors() {
        let seed = 0xbc9f_1d34;
        let cases: &[(&[u8], u32)] = &[
            (b"", 3164544308),
            (b"\x08", 422599524),
            (b"\x17", 3168152998),
            (b"\x9a", 3195034349),
            (b"\x4d\x76", 2447836956),
            (b"\x30\x46\x0b", 3808221797),
            (b"\x67\x53\x81\x1c", 118283265),
            (b"\xd0\x7a\x6e\xea\x56", 4255445370),
            (b"\x31\x1b\x98\x75\x96\x22\xd3\x9a", 469635402),
        ];
        for (input, want) in cases {
            assert_eq!(hash32(input, seed), *want, "{input:?}");
        }
    }
}
