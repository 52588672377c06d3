//! Prefix extractors (RocksDB's `SliceTransform`): map a user key to the
//! prefix that prefix bloom filters and prefix seeks work on. The name is
//! stored in table properties.

use std::sync::Arc;

/// Extracts a prefix from user keys.
pub trait SliceTransform: Send + Sync {
    /// Stored in `rocksdb.prefix.extractor.name`.
    fn name(&self) -> String;
    /// REQUIRES: `in_domain(key)`.
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8];
    /// Whether `key` has a prefix at all.
    fn in_domain(&self, key: &[u8]) -> bool;
}

impl std::fmt::Debug for dyn SliceTransform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// The first `n` bytes; keys shorter than `n` are out of domain
/// (`rocksdb.FixedPrefix.n`).
#[derive(Clone, Copy, Debug)]
pub struct FixedPrefix(pub usize);

impl SliceTransform for FixedPrefix {
    fn name(&self) -> String {
        format!("rocksdb.FixedPrefix.{}", self.0)
    }
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        &key[..self.0.min(key.len())]
    }
    fn in_domain(&self, key: &[u8]) -> bool {
        key.len() >= self.0
    }
}

/// At most the first `n` bytes; every key is in domain
/// (`rocksdb.CappedPrefix.n`).
#[derive(Clone, Copy, Debug)]
pub struct CappedPrefix(pub usize);

impl SliceTransform for CappedPrefix {
    fn name(&self) -> String {
        format!("rocksdb.CappedPrefix.{}", self.0)
    }
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        &key[..self.0.min(key.len())]
    }
    fn in_domain(&self, _key: &[u8]) -> bool {
        true
    }
}

/// Shared handle to a prefix extractor.
pub type SliceTransformRef = Arc<dyn SliceTransform>;

/// Parses a RocksDB prefix-extractor name (`rocksdb.FixedPrefix.8`,
/// `rocksdb.CappedPrefix.4`, `fixed:8`, `capped:4`).
pub fn parse_slice_transform(name: &str) -> Option<SliceTransformRef> {
    let num = |s: &str| s.parse::<usize>().ok();
    if let Some(n) = name
        .strip_prefix("rocksdb.FixedPrefix.")
        .or(name.strip_prefix("fixed:"))
    {
        return Some(Arc::new(FixedPrefix(num(n)?)));
    }
    if let Some(n) = name
        .strip_prefix("rocksdb.CappedPrefix.")
        .or(name.strip_prefix("capped:"))
    {
        return Some(Arc::new(CappedPrefix(num(n)?)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_capped() {
        let f = FixedPrefix(3);
        assert!(!f.in_domain(b"ab"));
        assert_eq!(f.transform(b"abcdef"), b"abc");
        let c = parse_slice_transform("rocksdb.CappedPrefix.3").unwrap();
        assert!(c.in_domain(b"ab"));
        assert_eq!(c.transform(b"ab"), b"ab");
        assert_eq!(c.name(), "rocksdb.CappedPrefix.3");
        assert!(parse_slice_transform("nope").is_none());
    }
}
