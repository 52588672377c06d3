//! User-key comparators. The comparator's name is stored in table
//! properties and (later) the MANIFEST, and checked when a file is opened.
//!
//! Invariant: `compare` is a total order, and `find_shortest_separator` /
//! `find_short_successor` only ever return keys that keep index separators
//! valid: `start <= sep < limit` and `key <= successor`.

use std::cmp::Ordering;
use std::sync::Arc;

/// Orders user keys. Implementations must be thread-safe and deterministic.
pub trait Comparator: Send + Sync {
    /// The name stored on disk; opening a file written with another name fails.
    fn name(&self) -> &str;

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;

    /// Replaces `start` by a short key in `[start, limit)` if one exists.
    /// Leaving `start` unchanged is always correct.
    fn find_shortest_separator(&self, _start: &mut Vec<u8>, _limit: &[u8]) {}

    /// Replaces `key` by a short key `>= key`. Leaving it unchanged is correct.
    fn find_short_successor(&self, _key: &mut Vec<u8>) {}

    /// True only for plain bytewise order: internal-key comparisons then
    /// skip the dynamic call and use [`bytewise_compare`].
    fn is_bytewise(&self) -> bool {
        false
    }

    /// Whether keys of different bytes may compare equal (RocksDB's
    /// `CanKeysWithDifferentByteContentsBeEqual`; true unless the order
    /// says otherwise): data block hash indexes, which hash key bytes, are
    /// only written when this is false.
    fn can_keys_with_different_bytes_be_equal(&self) -> bool {
        true
    }
}

/// Bytewise order, compared a big-endian 8-byte word at a time over the
/// first `WORDWISE_BYTES` bytes (db_bench's and rocksdict's keys are short
/// and share long prefixes: a libc `memcmp` call costs more than the
/// comparison there), then by `memcmp` for whatever is left.
#[inline]
pub fn bytewise_compare(a: &[u8], b: &[u8]) -> Ordering {
    /// Longer common prefixes go to `memcmp`, whose vector loop wins.
    const WORDWISE_BYTES: usize = 32;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n && i < WORDWISE_BYTES {
        let (Some(x), Some(y)) = (a[i..].first_chunk::<8>(), b[i..].first_chunk::<8>()) else {
            break; // unreachable: `i + 8 <= n`
        };
        if x != y {
            return u64::from_be_bytes(*x).cmp(&u64::from_be_bytes(*y));
        }
        i += 8;
    }
    if i >= WORDWISE_BYTES {
        return a[i..].cmp(&b[i..]);
    }
    // Fewer than 8 bytes of the shorter key left: one zero-padded word
    // each (the same count of bytes from both), then the lengths.
    let tail = n - i;
    debug_assert!(tail < 8);
    let (mut x, mut y) = ([0u8; 8], [0u8; 8]);
    x[..tail].copy_from_slice(&a[i..n]);
    y[..tail].copy_from_slice(&b[i..n]);
    u64::from_be_bytes(x)
        .cmp(&u64::from_be_bytes(y))
        .then(a.len().cmp(&b.len()))
}

/// Bytewise (memcmp) order: RocksDB's default, `leveldb.BytewiseComparator`.
#[derive(Clone, Copy, Debug, Default)]
pub struct BytewiseComparator;

impl Comparator for BytewiseComparator {
    fn name(&self) -> &str {
        "leveldb.BytewiseComparator"
    }

    fn can_keys_with_different_bytes_be_equal(&self) -> bool {
        false
    }

    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        bytewise_compare(a, b)
    }

    fn is_bytewise(&self) -> bool {
        true
    }

    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        let min_len = start.len().min(limit.len());
        let diff = start
            .iter()
            .zip(limit.iter())
            .position(|(a, b)| a != b)
            .unwrap_or(min_len);
        if diff >= min_len {
            return; // one is a prefix of the other
        }
        let byte = start[diff];
        if byte >= limit[diff] {
            return; // start is not below limit: leave it alone
        }
        // RocksDB's rule: incrementing the byte is enough when the result
        // stays below `limit`, which it does if limit's byte is larger by
        // more than one, or if limit goes on past it (the result is then a
        // proper prefix of limit).
        if diff < limit.len() - 1 || byte + 1 < limit[diff] {
            start[diff] += 1;
            start.truncate(diff + 1);
            debug_assert!(self.compare(start, limit) == Ordering::Less);
        } else {
            // RocksDB also tries to shorten past the differing byte: skip
            // trailing 0xff bytes and increment the first smaller one.
            let mut i = diff + 1;
            while i < start.len() {
                if start[i] < 0xff {
                    start[i] += 1;
                    start.truncate(i + 1);
                    break;
                }
                i += 1;
            }
        }
    }

    fn find_short_successor(&self, key: &mut Vec<u8>) {
        if let Some(i) = key.iter().position(|&b| b != 0xff) {
            key[i] += 1;
            key.truncate(i + 1);
        }
    }
}

/// Reverse bytewise order, `rocksdb.ReverseBytewiseComparator`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReverseBytewiseComparator;

impl Comparator for ReverseBytewiseComparator {
    fn name(&self) -> &str {
        "rocksdb.ReverseBytewiseComparator"
    }

    fn can_keys_with_different_bytes_be_equal(&self) -> bool {
        false
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }
}

/// The shared handle type for comparators.
pub type ComparatorRef = Arc<dyn Comparator>;

/// The default comparator as a shared handle.
pub fn bytewise() -> ComparatorRef {
    Arc::new(BytewiseComparator)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn bytewise_compare_is_slice_order(
            a in proptest::collection::vec(any::<u8>(), 0..20),
            b in proptest::collection::vec(any::<u8>(), 0..20),
        ) {
            prop_assert_eq!(bytewise_compare(&a, &b), a.cmp(&b));
            let mut c = a.clone();
            c.extend_from_slice(&b);
            prop_assert_eq!(bytewise_compare(&a, &c), a.cmp(&c));
            prop_assert_eq!(bytewise_compare(&c, &a), c.cmp(&a));
        }

        /// Keys sharing a prefix of any length (the word loop, the padded
        /// tail and the `memcmp` past 32 bytes), with small alphabets so
        /// that suffixes often tie, and zero bytes against a shorter key.
        #[test]
        fn bytewise_compare_with_common_prefixes(
            prefix in proptest::collection::vec(any::<u8>(), 0..48),
            a in proptest::collection::vec(0u8..3, 0..12),
            b in proptest::collection::vec(0u8..3, 0..12),
        ) {
            let (mut x, mut y) = (prefix.clone(), prefix);
            x.extend_from_slice(&a);
            y.extend_from_slice(&b);
            prop_assert_eq!(bytewise_compare(&x, &y), x.cmp(&y));
            prop_assert_eq!(bytewise_compare(&y, &x), y.cmp(&x));
            prop_assert_eq!(bytewise_compare(&x, &x), std::cmp::Ordering::Equal);
        }
    }

    #[test]
    fn separator_examples() {
        let c = BytewiseComparator;
        let mut s = b"abcd".to_vec();
        c.find_shortest_separator(&mut s, b"abzz");
        assert_eq!(s, b"abd");
        let mut s = b"abc".to_vec();
        c.find_shortest_separator(&mut s, b"abcde");
        assert_eq!(s, b"abc");
        // Adjacent bytes: incremented when limit goes on (RocksDB), else
        // the first non-0xff byte after it is.
        let mut s = b"ab\x2c\x31zz".to_vec();
        c.find_shortest_separator(&mut s, b"ab\x2d\x00");
        assert_eq!(s, b"ab\x2d");
        let mut s = b"ab\x2c\xff\x31zz".to_vec();
        c.find_shortest_separator(&mut s, b"ab\x2d");
        assert_eq!(s, b"ab\x2c\xff\x32");
        let mut k = vec![0xff, 0xff, 0x05, 0x07];
        c.find_short_successor(&mut k);
        assert_eq!(k, [0xff, 0xff, 0x06]);
    }

    proptest! {
        #[test]
        fn separator_is_between(a: Vec<u8>, b: Vec<u8>) {
            let c = BytewiseComparator;
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            prop_assume!(lo < hi);
            let mut s = lo.clone();
            c.find_shortest_separator(&mut s, &hi);
            prop_assert!(s >= lo && s < hi);
            let mut t = lo.clone();
            c.find_short_successor(&mut t);
            prop_assert!(t >= lo);
        }
    }
}
