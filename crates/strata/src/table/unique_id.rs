//! SST unique ids (RocksDB's `table/unique_id.cc`): the 128-bit internal
//! id RocksDB derives from a table's DB id, DB session id and file
//! number, and its public form (`9B30B73CAAF728BB-FC1BE081D05FB599`),
//! which `sst_dump`, `ldb` and the MANIFEST dump print.
//!
//! Invariant: pure functions of their inputs; a malformed session id is
//! an error (RocksDB's `NotSupported`), never a panic.

use crate::error::{Error, Result};

fn xxh3_avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}

fn mul128(a: u64, b: u64) -> (u64, u64) {
    let p = u128::from(a) * u128::from(b);
    ((p >> 64) as u64, p as u64)
}

/// RocksDB's `BijectiveHash2x64` with seed 0: `(high, low)`.
fn bijective_hash_2x64(in_high: u64, in_low: u64) -> (u64, u64) {
    let bitflipl: u64 = 0x5997_3f00_3336_2349;
    let bitfliph: u64 = 0xc202_7976_92d6_3d58;
    let (mut hi, mut lo) = mul128(in_low ^ in_high ^ bitflipl, 0x9E37_79B1_85EB_CA87);
    lo = lo.wrapping_add(0x03c0_0000_0000_0000);
    let h = in_high ^ bitfliph;
    hi = hi
        .wrapping_add(h)
        .wrapping_add(u64::from(h as u32).wrapping_mul(0x85EB_CA76));
    lo ^= hi.swap_bytes();
    let (hi2, lo2) = mul128(lo, 0xC2B2_AE3D_27D4_EB4F);
    let hi = hi2.wrapping_add(hi.wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
    (xxh3_avalanche(hi), xxh3_avalanche(lo2))
}

/// RocksDB's `DecodeSessionId`: the 20 base-36 characters of a session
/// id as `(upper, lower)`: the last 12 characters and the two low bits of
/// the others make `lower`.
fn decode_session_id(id: &str) -> Result<(u64, u64)> {
    let len = id.len();
    if len < 13 {
        return Err(Error::NotSupported("Too short db_session_id".into()));
    }
    if len > 24 {
        return Err(Error::NotSupported("Too long db_session_id".into()));
    }
    let parse = |s: &[u8]| -> Option<u64> {
        s.iter().try_fold(0u64, |acc, &c| {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'A'..=b'Z' => c - b'A' + 10,
                _ => return None,
            };
            Some(acc.wrapping_mul(36).wrapping_add(u64::from(d)))
        })
    };
    let bad = || Error::NotSupported("Bad digit in db_session_id".into());
    let (a, b) = id.as_bytes().split_at(len - 12);
    let (a, b) = (parse(a).ok_or_else(bad)?, parse(b).ok_or_else(bad)?);
    Ok((a >> 2, (b & (u64::MAX >> 2)) | (a << 62)))
}

/// RocksDB's `GetSstInternalUniqueId` (the 128-bit form): `NotSupported`
/// when an input is missing or the session id malformed.
pub fn internal_unique_id(db_id: &str, db_session_id: &str, file_number: u64) -> Result<[u64; 2]> {
    if db_id.is_empty() {
        return Err(Error::NotSupported("Missing db_id".into()));
    }
    if file_number == 0 {
        return Err(Error::NotSupported("Missing or bad file number".into()));
    }
    if db_session_id.is_empty() {
        return Err(Error::NotSupported("Missing db_session_id".into()));
    }
    let (upper, lower) = decode_session_id(db_session_id)?;
    // RocksDB's Hash2x64 with a seed: XXH3's 128-bit hash.
    let h = xxhash_rust::xxh3::xxh3_128_with_seed(db_id.as_bytes(), upper);
    let db_a = (h >> 64) as u64;
    Ok([lower, db_a ^ file_number])
}

/// RocksDB's public form of an internal unique id, e.g.
/// `9B30B73CAAF728BB-FC1BE081D05FB599`.
pub fn public_unique_id(internal: [u64; 2]) -> String {
    // Offsets so that no external id is all zeros (RocksDB kHi/kLoOffsetForZero).
    let (hi, lo) = bijective_hash_2x64(
        internal[1].wrapping_add(17_391_078_804_906_429_400),
        internal[0].wrapping_add(6_417_269_962_128_484_497),
    );
    let mut s = String::with_capacity(33);
    for (i, b) in lo.to_le_bytes().iter().chain(&hi.to_le_bytes()).enumerate() {
        if i == 8 {
            s.push('-');
        }
        s.push_str(&format!("{b:02X}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_what_rocksdb_prints() {
        // RocksDB 7.8.3's sst_dump on a table its ldb wrote.
        let id = internal_unique_id(
            "7577f464-7f3d-4198-a939-d69ab84b0b17",
            "SOZX8OFTEBK7FGBO3KSO",
            18,
        )
        .unwrap();
        assert_eq!(public_unique_id(id), "5268EC8C052A8560-E1BF23C98365E6AC");
        // Values printed by `ldb manifest_dump` (RocksDB 7.8.3).
        assert_eq!(
            public_unique_id([17959302418998891990, 2641967448345744760]),
            "9B30B73CAAF728BB-FC1BE081D05FB599"
        );
    }

    #[test]
    fn bad_inputs_are_not_supported() {
        for (db, session, n) in [
            ("", "SOZX8OFTEBK7FGBO3KSO", 1),
            ("x", "", 1),
            ("x", "SOZX8OFTEBK7FGBO3KSO", 0),
            ("x", "SHORT", 1),
            ("x", "sozx8oftebk7fgbo3kso", 1),
            ("x", "SOZX8OFTEBK7FGBO3KSOSOZX8", 1),
        ] {
            assert!(matches!(
                internal_unique_id(db, session, n),
                Err(Error::NotSupported(_))
            ));
        }
    }
}
