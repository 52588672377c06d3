//! XXPH3: the *preview* 64-bit XXH3 hash of xxHash 0.7.2, exactly as RocksDB
//! 7.8.3 forks it in `util/xxph3.h` (its `Hash64` / `GetSliceHash64`). This
//! module owns that hash and nothing else; the full-filter (bloom) code hashes
//! every key with it, so the results are part of the on-disk format.
//!
//! It is *not* the final XXH3 (the `xxhash-rust` crate): the preview differs
//! for every length range (0, 1-3, 4-8, 9-16, 17-128, 129-240 and the long
//! stripe/accumulator path). RocksDB also changed the empty-input case to hash
//! the seed instead of returning 0.
//!
//! Safe, panic-free code: every read goes through [`r64`] / [`r32`], which
//! return 0 for an out-of-range read (never reached: all offsets are in range).

/// The default 192-byte secret (`kSecret`).
const SECRET: [u8; SECRET_LEN] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

const SECRET_LEN: usize = 192;
/// `XXPH3_SECRET_SIZE_MIN`.
const SECRET_SIZE_MIN: usize = 136;
const STRIPE_LEN: usize = 64;
/// Secret bytes consumed per stripe.
const SECRET_CONSUME_RATE: usize = 8;
/// Stripes per block: (192 - 64) / 8 = 16, so a block is 1024 bytes.
const STRIPES_PER_BLOCK: usize = (SECRET_LEN - STRIPE_LEN) / SECRET_CONSUME_RATE;
const BLOCK_LEN: usize = STRIPE_LEN * STRIPES_PER_BLOCK;
const SECRET_LASTACC_START: usize = 7;
const SECRET_MERGEACCS_START: usize = 11;
const MIDSIZE_MAX: usize = 240;
const MIDSIZE_STARTOFFSET: usize = 3;
const MIDSIZE_LASTOFFSET: usize = 17;

const PRIME32_1: u64 = 0x9E37_79B1;
const PRIME32_2: u64 = 0x85EB_CA77;
const PRIME32_3: u64 = 0xC2B2_AE3D;
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;

/// `XXPH3_64bits(data, len)`: RocksDB's `Hash64(data, n)` / `GetSliceHash64`,
/// the bloom-filter key hash. Same as [`xxph3_64_with_seed`] with seed 0.
pub fn xxph3_64(data: &[u8]) -> u64 {
    xxph3_64_with_seed(data, 0)
}

/// `XXPH3_64bits_withSeed(data, len, seed)`: RocksDB's `Hash64(data, n, seed)`.
pub fn xxph3_64_with_seed(data: &[u8], seed: u64) -> u64 {
    let len = data.len();
    if len <= 16 {
        len_0to16(data, &SECRET, seed)
    } else if len <= 128 {
        len_17to128(data, &SECRET, seed)
    } else if len <= MIDSIZE_MAX {
        len_129to240(data, &SECRET, seed)
    } else if seed == 0 {
        hash_long(data, &SECRET)
    } else {
        hash_long(data, &custom_secret(seed))
    }
}

/// Little-endian u64 at `at`; 0 if out of range (never happens for callers).
#[inline(always)]
fn r64(b: &[u8], at: usize) -> u64 {
    b.get(at..)
        .and_then(|s| s.first_chunk::<8>())
        .map_or(0, |c| u64::from_le_bytes(*c))
}

/// Little-endian u32 at `at`, widened; 0 if out of range.
#[inline(always)]
fn r32(b: &[u8], at: usize) -> u64 {
    b.get(at..)
        .and_then(|s| s.first_chunk::<4>())
        .map_or(0, |c| u64::from(u32::from_le_bytes(*c)))
}

/// 64x64 -> 128-bit multiply, folded by XOR of the halves.
#[inline(always)]
fn mul128_fold64(lhs: u64, rhs: u64) -> u64 {
    let product = u128::from(lhs) * u128::from(rhs);
    (product as u64) ^ ((product >> 64) as u64)
}

#[inline(always)]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(PRIME64_3);
    h ^= h >> 32;
    h
}

fn len_0to16(input: &[u8], secret: &[u8], seed: u64) -> u64 {
    let len = input.len();
    if len > 8 {
        // 9..=16
        let lo = r64(input, 0) ^ r64(secret, 0).wrapping_add(seed);
        let hi = r64(input, len - 8) ^ r64(secret, 8).wrapping_sub(seed);
        let acc = (len as u64)
            .wrapping_add(lo.wrapping_add(hi))
            .wrapping_add(mul128_fold64(lo, hi));
        avalanche(acc)
    } else if len >= 4 {
        // 4..=8
        let input_lo = r32(input, 0);
        let input_hi = r32(input, len - 4);
        let input64 = input_lo | (input_hi << 32);
        let keyed = input64 ^ r64(secret, 0).wrapping_add(seed);
        let mix64 = (len as u64).wrapping_add((keyed ^ (keyed >> 51)).wrapping_mul(PRIME32_1));
        avalanche((mix64 ^ (mix64 >> 47)).wrapping_mul(PRIME64_2))
    } else if let (Some(&c1), Some(&c2), Some(&c3)) =
        (input.first(), input.get(len >> 1), input.last())
    {
        // 1..=3
        let combined =
            u64::from(c1) | (u64::from(c2) << 8) | (u64::from(c3) << 16) | ((len as u64) << 24);
        let keyed = combined ^ r32(secret, 0).wrapping_add(seed);
        avalanche(keyed.wrapping_mul(PRIME64_1))
    } else {
        // RocksDB modification: hash the seed rather than return 0.
        mul128_fold64(seed.wrapping_add(r64(secret, 0)), PRIME64_2)
    }
}

#[inline(always)]
fn mix16b(input: &[u8], at: usize, secret: &[u8], sat: usize, seed: u64) -> u64 {
    mul128_fold64(
        r64(input, at) ^ r64(secret, sat).wrapping_add(seed),
        r64(input, at + 8) ^ r64(secret, sat + 8).wrapping_sub(seed),
    )
}

fn len_17to128(input: &[u8], secret: &[u8], seed: u64) -> u64 {
    let len = input.len();
    let mut acc = (len as u64).wrapping_mul(PRIME64_1);
    if len > 32 {
        if len > 64 {
            if len > 96 {
                acc = acc.wrapping_add(mix16b(input, 48, secret, 96, seed));
                acc = acc.wrapping_add(mix16b(input, len - 64, secret, 112, seed));
            }
            acc = acc.wrapping_add(mix16b(input, 32, secret, 64, seed));
            acc = acc.wrapping_add(mix16b(input, len - 48, secret, 80, seed));
        }
        acc = acc.wrapping_add(mix16b(input, 16, secret, 32, seed));
        acc = acc.wrapping_add(mix16b(input, len - 32, secret, 48, seed));
    }
    acc = acc.wrapping_add(mix16b(input, 0, secret, 0, seed));
    acc = acc.wrapping_add(mix16b(input, len - 16, secret, 16, seed));
    avalanche(acc)
}

fn len_129to240(input: &[u8], secret: &[u8], seed: u64) -> u64 {
    let len = input.len();
    let mut acc = (len as u64).wrapping_mul(PRIME64_1);
    let nb_rounds = len / 16;
    for i in 0..8 {
        acc = acc.wrapping_add(mix16b(input, 16 * i, secret, 16 * i, seed));
    }
    acc = avalanche(acc);
    for i in 8..nb_rounds {
        let sat = 16 * (i - 8) + MIDSIZE_STARTOFFSET;
        acc = acc.wrapping_add(mix16b(input, 16 * i, secret, sat, seed));
    }
    let last = SECRET_SIZE_MIN - MIDSIZE_LASTOFFSET;
    acc = acc.wrapping_add(mix16b(input, len - 16, secret, last, seed));
    avalanche(acc)
}

/// The seeded secret: each 16-byte pair gets `+seed` on its first u64 and
/// `-seed` on its second.
fn custom_secret(seed: u64) -> [u8; SECRET_LEN] {
    let mut out = [0u8; SECRET_LEN];
    for (i, (dst, src)) in out
        .chunks_exact_mut(8)
        .zip(SECRET.chunks_exact(8))
        .enumerate()
    {
        let k = r64(src, 0);
        let v = if i % 2 == 0 {
            k.wrapping_add(seed)
        } else {
            k.wrapping_sub(seed)
        };
        dst.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// One 64-byte stripe into the 8 accumulators (64-bit accumulator width:
/// the preview adds each input lane to its own accumulator, no lane swap).
#[inline(always)]
fn accumulate_512(acc: &mut [u64; 8], stripe: &[u8], secret: &[u8]) {
    for (i, a) in acc.iter_mut().enumerate() {
        let data_val = r64(stripe, 8 * i);
        let data_key = data_val ^ r64(secret, 8 * i);
        let product = (data_key & 0xFFFF_FFFF).wrapping_mul(data_key >> 32);
        *a = a.wrapping_add(data_val).wrapping_add(product);
    }
}

fn scramble(acc: &mut [u64; 8], secret: &[u8]) {
    for (i, a) in acc.iter_mut().enumerate() {
        let mut v = *a;
        v ^= v >> 47;
        v ^= r64(secret, 8 * i);
        *a = v.wrapping_mul(PRIME32_1);
    }
}

/// Inputs longer than 240 bytes.
fn hash_long(input: &[u8], secret: &[u8; SECRET_LEN]) -> u64 {
    let len = input.len();
    let mut acc: [u64; 8] = [
        PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1,
    ];
    let scramble_secret = secret.get(SECRET_LEN - STRIPE_LEN..).unwrap_or(&[]);

    let mut blocks = input.chunks_exact(BLOCK_LEN);
    for block in &mut blocks {
        for (n, stripe) in block.chunks_exact(STRIPE_LEN).enumerate() {
            let s = secret.get(n * SECRET_CONSUME_RATE..).unwrap_or(&[]);
            accumulate_512(&mut acc, stripe, s);
        }
        scramble(&mut acc, scramble_secret);
    }
    // Last partial block: its whole stripes, then the final 64 bytes if the
    // length is not a multiple of the stripe size.
    for (n, stripe) in blocks.remainder().chunks_exact(STRIPE_LEN).enumerate() {
        let s = secret.get(n * SECRET_CONSUME_RATE..).unwrap_or(&[]);
        accumulate_512(&mut acc, stripe, s);
    }
    if len % STRIPE_LEN != 0 {
        let last = input.get(len - STRIPE_LEN..).unwrap_or(&[]);
        let s = secret
            .get(SECRET_LEN - STRIPE_LEN - SECRET_LASTACC_START..)
            .unwrap_or(&[]);
        accumulate_512(&mut acc, last, s);
    }

    // Merge the accumulators.
    let ms = secret.get(SECRET_MERGEACCS_START..).unwrap_or(&[]);
    let mut result = (len as u64).wrapping_mul(PRIME64_1);
    for (i, pair) in acc.chunks_exact(2).enumerate() {
        let (a0, a1) = match pair {
            [a0, a1] => (*a0, *a1),
            _ => (0, 0),
        };
        result = result.wrapping_add(mul128_fold64(
            a0 ^ r64(ms, 16 * i),
            a1 ^ r64(ms, 16 * i + 8),
        ));
    }
    avalanche(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RocksDB util/hash_test.cc `Hash64SmallValueSchema` (seed 0).
    #[test]
    fn small_value_schema() {
        let cases: &[(&[u8], u64)] = &[
            (b"", 5999572062939766020),
            (b"\x08", 583283813901344696),
            (b"\x17", 16175549975585474943),
            (b"\x9a", 16322991629225003903),
            (b"\x1c", 13269285487706833447),
            (b"\x4d\x76", 6859542833406258115),
            (b"\x52\xd5", 4919611532550636959),
            (b"\x91\xf7", 14199427467559720719),
            (b"\xd6\x27", 12292689282614532691),
            (b"\x30\x46\x0b", 11404699285340020889),
            (b"\x56\xdc\xd6", 12404347133785524237),
            (b"\xd4\x52\x33", 15853805298481534034),
            (b"\x6a\xb5\xf4", 16863488758399383382),
            (b"\x67\x53\x81\x1c", 9010661983527562386),
            (b"\x69\xb8\xc0\x88", 6611781377647041447),
            (b"\x1e\x84\xaf\x2d", 15290969111616346501),
            (b"\x46\xdc\x54\xbe", 7063754590279313623),
            (b"\xd0\x7a\x6e\xea\x56", 6384167718754869899),
            (b"\x86\x83\xd5\xa4\xd8", 16874407254108011067),
            (b"\xb7\x46\xbb\x77\xce", 16809880630149135206),
            (b"\x6c\xa8\xbc\xe5\x99", 1249038833153141148),
            (b"\x5c\x5e\xe1\xa0\x73\x81", 17358142495308219330),
            (b"\x08\x5d\x73\x1c\xe5\x2e", 4237646583134806322),
            (b"\x42\xfb\xf2\x52\xb4\x10", 4373664924115234051),
            (b"\x73\xe1\xff\x56\x9c\xce", 12012981210634596029),
            (b"\x5c\xbe\x97\x75\x54\x9a\x52", 5716522398211028826),
            (b"\x16\x82\x39\x49\x88\x2b\x36", 15604531309862565013),
            (b"\x59\x77\xf0\xa7\x24\xf4\x78", 8601330687345614172),
            (b"\xd3\xa5\x7c\x0e\xc0\x02\x07", 8088079329364056942),
            (b"\x31\x1b\x98\x75\x96\x22\xd3\x9a", 9844314944338447628),
            (b"\x38\xd6\xf7\x28\x20\xb4\x8a\xe9", 10973293517982163143),
            (b"\xbb\x18\x5d\xf4\x12\x03\xf7\x99", 9986007080564743219),
            (b"\x80\xd4\x3b\x3b\xae\x22\xa2\x78", 1729303145008254458),
            (
                b"\x1a\xb5\xd0\xfe\xab\xc3\x61\xb2\x99",
                13253403748084181481,
            ),
            (b"\x8e\x4a\xc3\x18\x20\x2f\x06\xe6\x3c", 7768754303876232188),
            (b"\xb6\xc0\xdd\x05\x3f\xc4\x86\x4c\xef", 12439346786701492),
            (
                b"\x9a\x5f\x78\x0d\xaf\x50\xe1\x1f\x55",
                10841838338450144690,
            ),
            (
                b"\x22\x6f\x39\x1f\xf8\xdd\x4f\x52\x17\x94",
                12883919702069153152,
            ),
            (
                b"\x32\x89\x2a\x75\x48\x3a\x4a\x02\x69\xdd",
                12692903507676842188,
            ),
            (
                b"\x06\x92\x5c\xf4\x88\x0e\x7e\x68\x38\x3e",
                6540985900674032620,
            ),
            (
                b"\xbd\x2c\x63\x38\xbf\xe9\x78\xb7\xbf\x15",
                10551812464348219044,
            ),
        ];
        for (input, want) in cases {
            assert_eq!(xxph3_64(input), *want, "{input:02x?}");
            assert_eq!(xxph3_64_with_seed(input, 0), *want, "{input:02x?}");
        }
    }

    /// docs/FORMATS.md §10.2: preview values differ from final XXH3.
    #[test]
    fn differs_from_final_xxh3() {
        assert_eq!(xxph3_64(b"hello"), 0xA0BB_C238_C976_57B5);
        assert_eq!(xxph3_64(b"foo"), 0x2540_784D_970D_DE34);
        assert_eq!(xxph3_64(b"key1"), 0x6568_09C4_F775_FBC3);
        for s in [&b""[..], b"a", b"hello", b"foo", b"key1", &[7u8; 300]] {
            assert_ne!(xxph3_64(s), xxhash_rust::xxh3::xxh3_64(s), "{s:?}");
        }
    }

    /// RocksDB's `Hash64TestDescriptor`: for i in 0..limit, hash the first i
    /// bytes of `repeat` repeated, map `h % 61` into the alphabet.
    fn descriptor(repeat: &[u8], limit: usize) -> String {
        const ENC: &[u8] = b"abcdefghijklmnopqrstuvwxyz123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let mut input = Vec::new();
        while input.len() < limit {
            input.extend_from_slice(repeat);
        }
        (0..limit)
            .map(|i| ENC[(xxph3_64(&input[..i]) % 61) as usize] as char)
            .collect()
    }

    /// RocksDB util/hash_test.cc `Hash64LargeValueSchema` (all length ranges,
    /// including the long-input stripes at 241..430).
    #[test]
    fn large_value_schema() {
        let foo = concat!(
            "cRhyWsY67B6klRA1udmOuiYuX7IthyGBKqbeosz2hzVglWCmQx8nEdnpkvPfYX56Up2OWOTV",
            "lTzfAoYwvtqKzjD8E9xttR2unelbXbIV67NUe6bOO23BxaSFRcA3njGu5cUWfgwOqNoTsszp",
            "uPvKRP6qaUR5VdoBkJUCFIefd7edlNK5mv6JYWaGdwxehg65hTkTmjZoPKxTZo4PLyzbL9U4",
            "xt12ITSfeP2MfBHuLI2z2pDlBb44UQKVMx27LEoAHsdLp3WfWfgH3sdRBRCHm33UxCM4QmE2",
            "xJ7gqSvNwTeH7v9GlC8zWbGroyD3UVNeShMLx29O7tH1biemLULwAHyIw8zdtLMDpEJ8m2ic",
            "l6Lb4fDuuFNAs1GCVUthjK8CV8SWI8Rsz5THSwn5CGhpqUwSZcFknjwWIl5rNCvDxXJqYr",
        );
        let rocks = concat!(
            "c1EeRkrzgOYWLA8PuhJrwTePJewoB44WdXYDfhbk3ZxTqqg25WlPExDl7IKIQLJvnA6gJxxn",
            "9TCSLkFGfJeXehaSS1GBqWSzfhEH4VXiXIUCuxJXxtKXcSC6FrNIQGTZbYDiUOLD6Y5inzrF",
            "9etwQhXUBanw55xAUdNMFQAm2GjJ6UDWp2mISLiMMkLjANWMKLaZMqaFLX37qB4MRO1ooVRv",
            "zSvaNRSCLxlggQCasQq8icWjzf3HjBlZtU6pd4rkaUxSzHqmo9oM5MghbU5Rtxg8wEfO7lVN",
            "5wdMONYecslQTwjZUpO1K3LDf3K3XK6sUXM6ShQQ3RHmMn2acB4YtTZ3QQcHYJSOHn2DuWpa",
            "Q8RqzX5lab92YmOLaCdOHq1BPsM7SIBzMdLgePNsJ1vvMALxAaoDUHPxoFLO2wx18IXnyX",
        );
        let rocksdb = concat!(
            "c1EeRkukbkb28wLTahwD2sfUhZzaBEnF8SVrxnPVB6A7b8CaAl3UKsDZISF92GSq2wDCukOq",
            "Jgrsp7A3KZhDiLW8dFXp8UPqPxMCRlMdZeVeJ2dJxrmA6cyt99zkQFj7ELbut6jAeVqARFnw",
            "fnWVXOsaLrq7bDCbMcns2DKvTaaqTCLMYxI7nhtLpFN1jR755FRQFcOzrrDbh7QhypjdvlYw",
            "cdAMSZgp9JMHxbM23wPSuH6BOFgxejz35PScZfhDPvTOxIy1jc3MZsWrMC3P324zNolO7JdW",
            "CX2I5UDKjjaEJfxbgVgJIXxtQGlmj2xkO5sPpjULQV4X2HlY7FQleJ4QRaJIB4buhCA4vUTF",
            "eMFlxCIYUpTCsal2qsmnGOWa8WCcefrohMjDj1fjzSvSaQwlpyR1GZHF2uPOoQagiCpHpm",
        );
        assert_eq!(foo.len(), 430);
        assert_eq!(descriptor(b"foo", 430), foo);
        assert_eq!(descriptor(b"Rocks", 430), rocks);
        assert_eq!(descriptor(b"RocksDB", 430), rocksdb);
    }

    /// Long inputs (several 1024-byte blocks, with and without a partial
    /// stripe) must not panic and must depend on length and seed, as
    /// RocksDB's `Hash64Misc` checks.
    #[test]
    fn misc_lengths_and_seeds() {
        for fill in [0u8, b'a', b'1', 0xff] {
            let s = vec![fill; 3000];
            let mut prev = Vec::new();
            for size in (0..=3000).step_by(7).chain([1024, 2048, 2049, 2111]) {
                let here = xxph3_64(&s[..size]);
                assert_eq!(here, xxph3_64_with_seed(&s[..size], 0));
                let mut seed = 1u64;
                while seed != 0 {
                    assert_ne!(here, xxph3_64_with_seed(&s[..size], seed), "{size} {seed}");
                    seed <<= 1;
                }
                prev.push(here);
            }
            let mut dedup = prev.clone();
            dedup.sort_unstable();
            dedup.dedup();
            assert_eq!(dedup.len(), prev.len());
        }
    }

    #[test]
    fn empty_input_hashes_the_seed() {
        for seed in 0..1000u64 {
            let h = xxph3_64_with_seed(b"", seed);
            assert_ne!(h as u32, 0);
            assert_ne!((h >> 32) as u32, 0);
        }
    }
}
