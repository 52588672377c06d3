//! Flow control: when compaction falls behind, writes slow down smoothly
//! and stop only at hard limits (RocksDB's `WriteController` and
//! `ColumnFamilyData::RecalculateWriteStallConditions`).
//!
//! Each installed version recomputes a column family's condition from its
//! L0 file count, its estimated compaction debt and its immutable
//! memtables:
//! * *stop* at `level0_stop_writes_trigger` L0 files, at
//!   `hard_pending_compaction_bytes_limit`, or (handled by the write path)
//!   when every write buffer is full;
//! * *delay* from `level0_slowdown_writes_trigger` and
//!   `soft_pending_compaction_bytes_limit`, or with one write buffer left
//!   (when there are more than three).
//!
//! While delayed, the write leader paces each group at the delayed write
//! rate. The rate starts at `delayed_write_rate`, shrinks by 0.8 each time
//! the debt grows and grows by 1.25 each time it shrinks, and is scaled
//! down linearly as L0 (or the debt) approaches its stop limit, so
//! throughput degrades gradually instead of falling off a cliff.
//!
//! Invariant: the rate stays within `[MIN_RATE, delayed_write_rate]`; one
//! pause never exceeds `MAX_PAUSE`.

use std::time::{Duration, Instant};

/// Slowest pace (bytes/s) writes are ever delayed to.
pub const MIN_RATE: u64 = 16 << 10;
/// Longest single pause of a write group.
pub const MAX_PAUSE: Duration = Duration::from_millis(100);

/// A column family's write-stall condition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StallCondition {
    Normal,
    /// Writes proceed at `fraction` (0..1] of the delayed write rate.
    Delayed {
        fraction: f64,
        cause: &'static str,
    },
    Stopped {
        cause: &'static str,
    },
}

/// Inputs of [`condition`].
#[derive(Clone, Copy, Debug)]
pub struct StallInputs {
    pub l0_files: usize,
    pub pending_bytes: u64,
    pub imms: usize,
    pub max_write_buffer_number: usize,
    pub slowdown_trigger: usize,
    pub stop_trigger: usize,
    pub soft_limit: u64,
    pub hard_limit: u64,
    pub auto_compactions: bool,
}

/// The condition `i` puts writes in.
pub fn condition(i: &StallInputs) -> StallCondition {
    if !i.auto_compactions {
        return StallCondition::Normal;
    }
    if i.l0_files >= i.stop_trigger {
        return StallCondition::Stopped {
            cause: "level0 file count at the stop trigger",
        };
    }
    if i.hard_limit > 0 && i.pending_bytes >= i.hard_limit {
        return StallCondition::Stopped {
            cause: "pending compaction bytes at the hard limit",
        };
    }
    let mut fraction = 1.0f64;
    let mut cause = "";
    if i.l0_files >= i.slowdown_trigger {
        let span = (i.stop_trigger - i.slowdown_trigger).max(1) as f64;
        let left = (i.stop_trigger - i.l0_files) as f64;
        fraction = fraction.min((left / span).max(0.05));
        cause = "level0 file count at the slowdown trigger";
    }
    if i.soft_limit > 0 && i.pending_bytes >= i.soft_limit {
        let f = if i.hard_limit > i.soft_limit {
            let span = (i.hard_limit - i.soft_limit) as f64;
            ((i.hard_limit - i.pending_bytes) as f64 / span).max(0.05)
        } else {
            0.05
        };
        if f < fraction || cause.is_empty() {
            cause = "pending compaction bytes at the soft limit";
        }
        fraction = fraction.min(f);
    }
    if i.max_write_buffer_number > 3 && i.imms + 1 >= i.max_write_buffer_number {
        if cause.is_empty() {
            cause = "too many immutable memtables";
        }
        fraction = fraction.min(1.0);
    }
    if cause.is_empty() {
        StallCondition::Normal
    } else {
        StallCondition::Delayed { fraction, cause }
    }
}

/// Paces delayed writes.
#[derive(Debug)]
pub struct WriteController {
    max_rate: u64,
    rate: u64,
    /// Debt at the last recomputation (to see whether it grows).
    last_debt: Option<(usize, u64)>,
    /// When the bytes written so far at the current rate are paid for.
    next_free: Option<Instant>,
    fraction: f64,
}

impl WriteController {
    pub fn new(delayed_write_rate: u64) -> Self {
        WriteController {
            max_rate: delayed_write_rate.max(MIN_RATE),
            rate: delayed_write_rate.max(MIN_RATE),
            last_debt: None,
            next_free: None,
            fraction: 1.0,
        }
    }

    /// The current pace in bytes per second (while delayed).
    pub fn rate(&self) -> u64 {
        ((self.rate as f64 * self.fraction) as u64).max(MIN_RATE)
    }

    /// Updates the rate after a version change. `debt` is the worst
    /// column family's `(L0 files, pending bytes)`; `None` when no
    /// column family is delayed.
    pub fn update(&mut self, fraction: Option<f64>, debt: (usize, u64)) {
        let Some(fraction) = fraction else {
            self.rate = self.max_rate;
            self.last_debt = None;
            self.next_free = None;
            self.fraction = 1.0;
            return;
        };
        if let Some(last) = self.last_debt {
            if debt > last {
                self.rate = ((self.rate as f64 * 0.8) as u64).max(MIN_RATE);
            } else if debt < last {
                self.rate = ((self.rate as f64 * 1.25) as u64).min(self.max_rate);
            }
        }
        self.last_debt = Some(debt);
        self.fraction = fraction.clamp(0.0, 1.0);
    }

    /// Whether a group arriving at `now` would have to wait: the bytes
    /// written before it are not paid for yet.
    pub fn would_delay(&self, now: Instant) -> bool {
        self.next_free.is_some_and(|t| t > now)
    }

    /// How long a group of `bytes` must wait before it is written: until
    /// the bytes written before it are paid for at the current rate. Its
    /// own bytes are paid for by the groups after it, so a group arriving
    /// at a paid-up controller goes at once (RocksDB's credit) and the
    /// pace still holds over any run of groups.
    pub fn delay_for(&mut self, bytes: u64, now: Instant) -> Duration {
        let start = match self.next_free {
            Some(t) if t > now => t,
            _ => now,
        };
        let cost = Duration::from_secs_f64(bytes as f64 / self.rate() as f64);
        self.next_free = Some(start + cost);
        start.saturating_duration_since(now).min(MAX_PAUSE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(l0: usize, pending: u64) -> StallInputs {
        StallInputs {
            l0_files: l0,
            pending_bytes: pending,
            imms: 0,
            max_write_buffer_number: 2,
            slowdown_trigger: 20,
            stop_trigger: 36,
            soft_limit: 100,
            hard_limit: 200,
            auto_compactions: true,
        }
    }

    #[test]
    fn conditions_grade_smoothly() {
        assert_eq!(condition(&inputs(3, 0)), StallCondition::Normal);
        let f = |l0, p| match condition(&inputs(l0, p)) {
            StallCondition::Delayed { fraction, .. } => fraction,
            other => panic!("{other:?}"),
        };
        assert!((f(20, 0) - 1.0).abs() < 1e-9);
        assert!((f(28, 0) - 0.5).abs() < 1e-9);
        assert!(f(35, 0) < f(30, 0));
        assert!((f(0, 150) - 0.5).abs() < 1e-9);
        assert!(matches!(
            condition(&inputs(36, 0)),
            StallCondition::Stopped { .. }
        ));
        assert!(matches!(
            condition(&inputs(0, 200)),
            StallCondition::Stopped { .. }
        ));
        let mut off = inputs(99, 999);
        off.auto_compactions = false;
        assert_eq!(condition(&off), StallCondition::Normal);
    }

    #[test]
    fn controller_adapts_and_paces() {
        let mut w = WriteController::new(1 << 20);
        w.update(Some(1.0), (20, 0));
        assert_eq!(w.rate(), 1 << 20);
        w.update(Some(1.0), (21, 0));
        assert_eq!(w.rate(), (((1u64 << 20) as f64) * 0.8) as u64);
        w.update(Some(1.0), (20, 0));
        // 0.8 then 1.25 is back to the start, give or take rounding.
        assert!(w.rate().abs_diff(1 << 20) <= 1, "{}", w.rate());
        let now = Instant::now();
        assert!(!w.would_delay(now));
        let d1 = w.delay_for(1 << 16, now);
        assert!(d1.is_zero(), "a paid-up controller lets a group go: {d1:?}");
        assert!(w.would_delay(now));
        let d2 = w.delay_for(1 << 16, now);
        assert_eq!(
            d2,
            Duration::from_secs_f64((1 << 16) as f64 / w.rate() as f64)
        );
        assert!(w.delay_for(1 << 30, now) <= MAX_PAUSE);
        assert!(w.delay_for(1, now) <= MAX_PAUSE);
        w.update(None, (0, 0));
        assert_eq!(w.rate(), 1 << 20);
    }
}
