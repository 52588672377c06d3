//! Checksums stored in files: masked CRC32C (WAL, MANIFEST, table blocks)
//! and the other block checksum types of RocksDB's `ChecksumType`.
//!
//! Invariant: `unmask(mask(x)) == x`; what we store is always the masked
//! form, so a CRC of data that itself embeds CRCs stays well distributed.

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC32C (Castagnoli) of `data`, hardware-accelerated where available.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Extends `crc` (a finished CRC32C of earlier bytes) with `data`.
#[inline]
pub fn crc32c_extend(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// RocksDB's CRC mask: rotate right by 15, then add a constant.
#[inline]
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
#[inline]
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// Block checksum algorithm, stored as one byte in the table footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChecksumType {
    NoChecksum = 0,
    Crc32c = 1,
    XxHash = 2,
    XxHash64 = 3,
    Xxh3 = 4,
}

impl ChecksumType {
    /// Decodes the footer byte; `None` for unknown codes.
    pub fn from_u8(v: u8) -> Option<ChecksumType> {
        Some(match v {
            0 => ChecksumType::NoChecksum,
            1 => ChecksumType::Crc32c,
            2 => ChecksumType::XxHash,
            3 => ChecksumType::XxHash64,
            4 => ChecksumType::Xxh3,
            _ => return None,
        })
    }

    /// The type RocksDB names `name` (`kCRC32c`, ...); `None` if unknown.
    pub fn from_name(name: &str) -> Option<ChecksumType> {
        (0..=4)
            .filter_map(ChecksumType::from_u8)
            .find(|t| t.name() == name)
    }

    /// RocksDB's name for the type, as `sst_dump` prints it.
    pub fn name(self) -> &'static str {
        match self {
            ChecksumType::NoChecksum => "kNoChecksum",
            ChecksumType::Crc32c => "kCRC32c",
            ChecksumType::XxHash => "kxxHash",
            ChecksumType::XxHash64 => "kxxHash64",
            ChecksumType::Xxh3 => "kXXH3",
        }
    }
}

/// Checksum of a block as stored in its 5-byte trailer: computed over the
/// stored payload followed by the compression-type byte.
pub fn block_checksum(kind: ChecksumType, payload: &[u8], type_byte: u8) -> u32 {
    match kind {
        ChecksumType::NoChecksum => 0,
        ChecksumType::Crc32c => mask(crc32c_extend(crc32c(payload), &[type_byte])),
        ChecksumType::XxHash => {
            let mut h = xxhash_rust::xxh32::Xxh32::new(0);
            h.update(payload);
            h.update(&[type_byte]);
            h.digest()
        }
        ChecksumType::XxHash64 => {
            let mut h = xxhash_rust::xxh64::Xxh64::new(0);
            h.update(payload);
            h.update(&[type_byte]);
            h.digest() as u32
        }
        ChecksumType::Xxh3 => {
            let v = xxhash_rust::xxh3::xxh3_64(payload) as u32;
            v ^ u32::from(type_byte).wrapping_mul(0x6B90_83D9)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_vectors() {
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c(b"a"), 0xC1D0_4330);
        assert_eq!(crc32c(b"foo"), 0xCFC4_AE1D);
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xFFu8; 32]), 0x62A8_AB43);
        let asc: Vec<u8> = (0u8..32).collect();
        assert_eq!(crc32c(&asc), 0x46DD_794E);
        let desc: Vec<u8> = (0u8..32).rev().collect();
        assert_eq!(crc32c(&desc), 0x113F_DB5C);
        let mut pdu = vec![0x01, 0xC0];
        pdu.extend_from_slice(&[0u8; 14]);
        pdu.extend_from_slice(&[
            0x14, 0, 0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x18, 0x28, 0, 0, 0, 0, 0, 0, 0,
            0x02, 0, 0, 0, 0, 0, 0, 0,
        ]);
        assert_eq!(pdu.len(), 48);
        assert_eq!(crc32c(&pdu), 0xD996_3A56);
        assert_eq!(crc32c_extend(crc32c(b"1234"), b"56789"), 0xE306_9283);
    }

    #[test]
    fn mask_vectors() {
        assert_eq!(mask(0), 0xA282_EAD8);
        assert_eq!(mask(crc32c(b"a")), 0x28E4_6E78);
        assert_eq!(mask(crc32c(b"foo")), 0xFEBE_8A61);
        assert_eq!(mask(crc32c(b"123456789")), 0xC78A_B0E5);
        assert_eq!(mask(0xFFFF_FFFF), 0xA282_EAD7);
        for x in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(unmask(mask(x)), x);
            assert_ne!(mask(x), x);
        }
    }

    #[test]
    fn hash_vectors() {
        use xxhash_rust::{xxh3, xxh32, xxh64};
        assert_eq!(xxh3::xxh3_64(b""), 0x2D06_8005_38D3_94C2);
        assert_eq!(xxh3::xxh3_64(b"a"), 0xE6C6_32B6_1E96_4E1F);
        assert_eq!(xxh3::xxh3_64(b"123456789"), 0x72DC_B18B_67A1_7DFF);
        assert_eq!(xxh3::xxh3_64(b"hello"), 0x9555_E855_5C62_DCFD);
        assert_eq!(xxh32::xxh32(b"", 0), 0x02CC_5D05);
        assert_eq!(xxh32::xxh32(b"123456789", 0), 0x937B_AD67);
        assert_eq!(xxh64::xxh64(b"", 0), 0xEF46_DB37_51D8_E999);
        assert_eq!(xxh64::xxh64(b"123456789", 0), 0x8CB8_41DB_40E6_AE83);
    }

    #[test]
    fn block_checksum_vectors() {
        use ChecksumType::*;
        let kinds = [Crc32c, XxHash, XxHash64, Xxh3];
        let empty = [0x49258FD2, 0xCF65B03E, 0xDB052768, 0x38D394C2];
        let abc0 = [0xBF1B5400, 0x2C2020E2, 0x9FA85BFF, 0x892F3950];
        let abc1 = [0xBD2278D7, 0x492AAE5E, 0x697C07E2, 0xE2BFBA89];
        for (i, k) in kinds.iter().enumerate() {
            assert_eq!(block_checksum(*k, b"", 0), empty[i], "{k:?}");
            assert_eq!(block_checksum(*k, b"abc", 0), abc0[i], "{k:?}");
            assert_eq!(block_checksum(*k, b"abc", 1), abc1[i], "{k:?}");
        }
        // docs/FORMATS.md 9.1: one-entry data block.
        let block = [
            0x00, 0x09, 0x01, 0x61, 0x01, 0x01, 0, 0, 0, 0, 0, 0, 0x31, 0, 0, 0, 0, 0x01, 0, 0, 0,
        ];
        assert_eq!(block_checksum(Crc32c, &block, 0), 0x3AF97E82);
        assert_eq!(block_checksum(XxHash, &block, 0), 0xCE67114E);
        assert_eq!(block_checksum(XxHash64, &block, 0), 0xA9AC20E8);
        assert_eq!(block_checksum(Xxh3, &block, 0), 0xA0D0A62B);
    }
}
