//! Whole-file checksums of table files (RocksDB's `FileChecksumGenFactory`
//! and `FileChecksumGenerator`): with `Options::file_checksum_gen_factory`
//! set, every table written (flushes, compactions, ingested files) gets a
//! checksum of all its bytes, recorded with the function's name in the
//! MANIFEST, where `ldb file_checksum_dump` finds it. The built-in
//! [`FileChecksumGenCrc32cFactory`] writes RocksDB's `FileChecksumCrc32c`:
//! the crc32c of the file as 4 big-endian bytes.
//!
//! Invariant: a generator sees every byte of the file once, in order,
//! before `finalize`.

use std::sync::Arc;

use super::checksum::crc32c_extend;

/// Computes one file's checksum.
pub trait FileChecksumGenerator: Send {
    /// Adds the next bytes of the file.
    fn update(&mut self, data: &[u8]);
    /// The checksum of everything added.
    fn finalize(&mut self) -> Vec<u8>;
    /// The function's name, recorded next to the checksum.
    fn name(&self) -> &str;
}

/// Makes generators (RocksDB's `FileChecksumGenFactory`).
pub trait FileChecksumGenFactory: Send + Sync {
    /// A generator for function `requested` (empty: the default one);
    /// `None` if this factory does not know it.
    fn create_generator(&self, requested: &str) -> Option<Box<dyn FileChecksumGenerator>>;
    /// The factory's name, as the OPTIONS file records it.
    fn name(&self) -> &str;
}

/// RocksDB's `FileChecksumGenCrc32cFactory`.
#[derive(Debug, Default, Clone, Copy)]
pub struct FileChecksumGenCrc32cFactory;

/// The function name of [`FileChecksumGenCrc32cFactory`]'s checksums.
pub const CRC32C_FUNC_NAME: &str = "FileChecksumCrc32c";

struct Crc32c(u32);

impl FileChecksumGenerator for Crc32c {
    fn update(&mut self, data: &[u8]) {
        self.0 = crc32c_extend(self.0, data);
    }
    fn finalize(&mut self) -> Vec<u8> {
        self.0.to_be_bytes().to_vec()
    }
    fn name(&self) -> &str {
        CRC32C_FUNC_NAME
    }
}

impl FileChecksumGenFactory for FileChecksumGenCrc32cFactory {
    fn create_generator(&self, requested: &str) -> Option<Box<dyn FileChecksumGenerator>> {
        (requested.is_empty() || requested == CRC32C_FUNC_NAME)
            .then(|| Box::new(Crc32c(0)) as Box<dyn FileChecksumGenerator>)
    }
    fn name(&self) -> &str {
        "FileChecksumGenCrc32cFactory"
    }
}

/// The shared handle type for factories.
pub type FileChecksumGenFactoryRef = Arc<dyn FileChecksumGenFactory>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_is_rocksdb_s_big_endian_crc() {
        let f = FileChecksumGenCrc32cFactory;
        let mut g = f.create_generator("").unwrap();
        g.update(b"hello ");
        g.update(b"world");
        let want = crate::util::checksum::crc32c(b"hello world");
        assert_eq!(g.finalize(), want.to_be_bytes());
        assert_eq!(g.name(), "FileChecksumCrc32c");
        assert!(f.create_generator("FileChecksumMd5").is_none());
        // crc32c("123456789") = 0xE3069283, stored big-endian.
        let mut g = f.create_generator(CRC32C_FUNC_NAME).unwrap();
        g.update(b"123456789");
        assert_eq!(g.finalize(), [0xE3, 0x06, 0x92, 0x83]);
    }
}
