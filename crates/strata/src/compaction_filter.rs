//! Compaction filters: user code that sees each live value a compaction
//! rewrites and may keep it, remove it, or change it (RocksDB's
//! `CompactionFilter`). Shipped example: [`TtlCompactionFilter`], which
//! drops values whose trailing 4-byte timestamp is older than a time to
//! live (the value layout of RocksDB's `DBWithTTL`).
//!
//! Invariants: the filter sees only the newest version of a key, and only
//! when no live snapshot can see that version (RocksDB's rule), so a
//! snapshot reader never observes a filter's decision; a `Remove` becomes
//! a deletion at the entry's sequence number, so older versions below it
//! stay hidden.

use std::sync::Arc;

/// What a compaction filter decided for one value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Keep,
    /// The key reads as deleted from now on.
    Remove,
    /// The key reads as this value from now on.
    ChangeValue(Vec<u8>),
}

/// Called by compactions for each value they rewrite (see the module
/// comment for which ones).
pub trait CompactionFilter: Send + Sync {
    /// Shown in the OPTIONS file and the LOG.
    fn name(&self) -> &str;
    /// `level` is the compaction's output level.
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> Decision;
}

/// Shared handle to a compaction filter.
pub type CompactionFilterRef = Arc<dyn CompactionFilter>;

/// What a [`CompactionFilterFactory`] is told of the compaction it makes a
/// filter for (RocksDB's `CompactionFilter::Context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactionFilterContext {
    /// Every table file of the column family is an input.
    pub is_full_compaction: bool,
    /// Asked for by `compact_range`/`compact_files`.
    pub is_manual_compaction: bool,
    pub column_family_id: u32,
}

/// Makes one compaction filter per compaction (RocksDB's
/// `CompactionFilterFactory`): for filters that keep state across the keys
/// of one compaction. A column family's `compaction_filter`, when set,
/// wins over its factory (as in RocksDB).
pub trait CompactionFilterFactory: Send + Sync {
    /// Shown in the OPTIONS file and the LOG.
    fn name(&self) -> &str;
    /// The filter of one compaction; `None`: this compaction filters
    /// nothing.
    fn create_compaction_filter(
        &self,
        context: &CompactionFilterContext,
    ) -> Option<CompactionFilterRef>;
}

/// Shared handle to a compaction filter factory.
pub type CompactionFilterFactoryRef = Arc<dyn CompactionFilterFactory>;

/// Drops values whose last 4 bytes, a little-endian Unix time in seconds
/// (as RocksDB's `DBWithTTL` appends), are more than `ttl_seconds` old.
/// Values shorter than 4 bytes are kept (they cannot carry a timestamp).
#[derive(Clone)]
pub struct TtlCompactionFilter {
    pub ttl_seconds: u64,
    /// The clock, in Unix seconds (tests pass a fixed one).
    pub now: Arc<dyn Fn() -> u64 + Send + Sync>,
}

impl std::fmt::Debug for TtlCompactionFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlCompactionFilter")
            .field("ttl_seconds", &self.ttl_seconds)
            .finish()
    }
}

impl TtlCompactionFilter {
    /// A filter with the system clock.
    pub fn new(ttl_seconds: u64) -> Self {
        TtlCompactionFilter {
            ttl_seconds,
            now: Arc::new(unix_now_seconds),
        }
    }

    /// Appends the current time to `value`, as a TTL-aware writer does.
    pub fn stamp(value: &[u8], now_seconds: u64) -> Vec<u8> {
        let mut v = value.to_vec();
        v.extend_from_slice(&(now_seconds as u32).to_le_bytes());
        v
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl CompactionFilter for TtlCompactionFilter {
    fn name(&self) -> &str {
        "TtlCompactionFilter"
    }

    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> Decision {
        let Some(ts) = value.len().checked_sub(4).and_then(|i| value.get(i..)) else {
            return Decision::Keep;
        };
        let mut b = [0u8; 4];
        b.copy_from_slice(ts);
        let written = u64::from(u32::from_le_bytes(b));
        if written.saturating_add(self.ttl_seconds) < (self.now)() {
            Decision::Remove
        } else {
            Decision::Keep
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_filter_decides_by_trailing_timestamp() {
        let f = TtlCompactionFilter {
            ttl_seconds: 10,
            now: Arc::new(|| 1_000),
        };
        let fresh = TtlCompactionFilter::stamp(b"v", 995);
        let stale = TtlCompactionFilter::stamp(b"v", 989);
        assert_eq!(f.filter(1, b"k", &fresh), Decision::Keep);
        assert_eq!(f.filter(1, b"k", &stale), Decision::Remove);
        assert_eq!(f.filter(1, b"k", b"ab"), Decision::Keep);
    }
}
