//! Compactions a file asks for whatever the level sizes say (RocksDB's
//! `LevelCompactionBuilder::SetupInitialFiles` after the size scores, in
//! its order):
//! 1. files marked for compaction when written (mostly deletions, or range
//!    tombstones over much data below): pushed one level down, or
//!    rewritten in place on the last level holding their range;
//! 2. bottommost files whose newest entry the oldest snapshot seen at a
//!    snapshot release sees (RocksDB's
//!    `BottommostFilesMarkedForCompaction`): their deletions and
//!    overwritten versions were kept for a snapshot that is gone, so they
//!    are rewritten in place;
//! 3. files whose data is older than `ttl` (`oldest_ancester_time`):
//!    moved one level down, except on the last non-empty level;
//! 4. files written more than `periodic_compaction_seconds` ago: rewritten
//!    in place.
//!
//! An L0 file due for any of these compacts all of L0 into the base level
//! (RocksDB rewrites L0 within L0 for 2 and 4).
//!
//! Universal compaction has its own form of 4 ([`universal_periodic_due`]).
//! [`next_deadline`] tells the compaction timer when 3 or 4 next comes
//! due, since no write may come along to schedule them.

use std::collections::HashSet;
use std::sync::Arc;

use super::leveled::{PickerInput, pick_l0, setup_compaction};
use super::{Compaction, CompactionReason};
use crate::format::{SequenceNumber, extract_user_key};
use crate::options::{ColumnFamilyOptions, CompactionStyle};
use crate::version::{FileMetaData, Version};

/// Whether any file below `f` (on `level`; for L0, also the older L0
/// files) may hold a key of its range (RocksDB's
/// `RangeMightExistAfterSortedRun`).
fn range_below(v: &Version, level: usize, f: &FileMetaData) -> bool {
    let (lo, hi) = (extract_user_key(&f.smallest), extract_user_key(&f.largest));
    if level == 0 {
        let ucmp = v.icmp().user_comparator();
        // L0 is newest first: the older files follow `f`.
        let older = v
            .files(0)
            .iter()
            .skip_while(|g| g.number != f.number)
            .skip(1);
        let overlaps = |g: &Arc<FileMetaData>| {
            ucmp.compare(extract_user_key(&g.smallest), hi).is_le()
                && ucmp.compare(extract_user_key(&g.largest), lo).is_ge()
        };
        if older.into_iter().any(overlaps) {
            return true;
        }
    }
    (level + 1..v.num_levels()).any(|l| !v.overlapping_files(l, Some(lo), Some(hi)).is_empty())
}

/// The smallest `largest_seqno` above `oldest_snapshot` of the bottommost
/// files of `v` that a snapshot release could make due (not rewritten
/// before): once the oldest snapshot reaches it, a bottommost file is due
/// (RocksDB's `bottommost_files_mark_threshold`; RocksDB waits until the
/// snapshot passes it, one sequence number later than needed). `MAX` when
/// there is none.
pub fn bottommost_threshold(
    v: &Version,
    oldest_snapshot: SequenceNumber,
    rewritten: &HashSet<u64>,
) -> SequenceNumber {
    let mut min = SequenceNumber::MAX;
    for level in 0..v.num_levels() {
        for f in v.files(level) {
            if f.largest_seqno > oldest_snapshot
                && f.largest_seqno < min
                && !rewritten.contains(&f.number)
                && !range_below(v, level, f)
            {
                min = f.largest_seqno;
            }
        }
    }
    min
}

/// The compaction of a file that asks for one, if any (in the order of
/// the module comment).
pub fn pick(p: &PickerInput<'_>, base_level: usize) -> Option<Compaction> {
    pick_marked(p, base_level)
        .or_else(|| pick_bottommost(p, base_level))
        .or_else(|| pick_ttl(p, base_level))
        .or_else(|| pick_periodic(p, base_level))
}

/// `f` of `level` compacted into `output_level` (L0 files: all of L0 into
/// the base level), for `reason`. Only data past its ttl may move as it
/// is (RocksDB's `IsTrivialMove`); the other reasons are about rewriting.
fn compact_file(
    p: &PickerInput<'_>,
    level: usize,
    f: &Arc<FileMetaData>,
    output_level: usize,
    base_level: usize,
    reason: CompactionReason,
) -> Option<Compaction> {
    let mut c = if level == 0 {
        pick_l0(p, base_level, 0.0)?
    } else {
        setup_compaction(p, level, vec![Arc::clone(f)], output_level, reason, 0.0)?
    };
    c.reason = reason;
    c.allow_trivial_move = reason == CompactionReason::Ttl && c.allow_trivial_move;
    Some(c)
}

/// The first compaction, for `reason`, of a file of `levels` not being
/// compacted to which `output` gives an output level.
fn first_due(
    p: &PickerInput<'_>,
    levels: std::ops::Range<usize>,
    base_level: usize,
    reason: CompactionReason,
    output: impl Fn(usize, &FileMetaData) -> Option<usize>,
) -> Option<Compaction> {
    let v = p.version;
    for level in levels {
        for f in v.files(level) {
            if p.being_compacted.contains(&f.number) {
                continue;
            }
            if let Some(out) = output(level, f)
                && let Some(c) = compact_file(p, level, f, out, base_level, reason)
            {
                return Some(c);
            }
        }
    }
    None
}

/// Files marked for compaction (many deletions): pushed one level down, or
/// rewritten in place on the last level holding their range.
fn pick_marked(p: &PickerInput<'_>, base_level: usize) -> Option<Compaction> {
    let v = p.version;
    first_due(
        p,
        0..v.num_levels(),
        base_level,
        CompactionReason::FilesMarkedForCompaction,
        |level, f| {
            f.marked_for_compaction
                .then(|| level + usize::from(level > 0 && range_below(v, level, f)))
        },
    )
}

/// Bottommost files every snapshot sees whole: rewritten in place, which
/// drops their deletions and older versions and zeroes their sequence
/// numbers. A file such a rewrite wrote is not picked again (it kept
/// sequence numbers, e.g. of an uncommitted prepared transaction, that
/// another rewrite would keep too).
fn pick_bottommost(p: &PickerInput<'_>, base_level: usize) -> Option<Compaction> {
    let v = p.version;
    // With files ingested behind, sequence numbers are never zeroed: a
    // rewrite would gain nothing (RocksDB skips these column families).
    if p.oldest_snapshot == 0
        || p.reserved_last_level
        || p.opts.compaction_style != CompactionStyle::Level
    {
        return None;
    }
    first_due(
        p,
        0..v.num_levels(),
        base_level,
        CompactionReason::BottommostFiles,
        |level, f| {
            (f.largest_seqno != 0
                && f.largest_seqno <= p.oldest_snapshot
                && !p.rewritten_bottommost.contains(&f.number)
                && !range_below(v, level, f))
            .then_some(level)
        },
    )
}

/// The last non-empty level of `v` (0 when only L0 holds files).
pub fn last_non_empty_level(v: &Version) -> usize {
    (0..v.num_levels())
        .rev()
        .find(|&l| v.num_files(l) > 0)
        .unwrap_or(0)
}

/// The Unix second from which something written (or whose data dates)
/// from `t` is more than `age` seconds old; `None` if either is 0
/// (unknown, or no limit). RocksDB's `t < now - age`, as a deadline.
fn due_at(t: u64, age: u64) -> Option<u64> {
    (t > 0 && age > 0).then(|| t.saturating_add(age).saturating_add(1))
}

/// When `f` was written, for periodic compaction: its creation time, else
/// its data's age (RocksDB's order; 0 = unknown, never due).
fn written_at(f: &FileMetaData) -> u64 {
    if f.file_creation_time > 0 {
        f.file_creation_time
    } else {
        f.oldest_ancester_time
    }
}

/// Whether `f` is due for periodic compaction at `now` (RocksDB's
/// `ComputeFilesMarkedForPeriodicCompaction`).
fn periodic_due(f: &FileMetaData, period: u64, now: u64) -> bool {
    due_at(written_at(f), period).is_some_and(|d| d <= now)
}

/// Files whose data outlived `ttl` (RocksDB's `ComputeExpiredTtlFiles`),
/// one level down (never from the last non-empty level, where there is
/// nothing left to push through).
fn pick_ttl(p: &PickerInput<'_>, base_level: usize) -> Option<Compaction> {
    let v = p.version;
    if p.opts.ttl == 0 || p.opts.compaction_style != CompactionStyle::Level {
        return None;
    }
    first_due(
        p,
        0..last_non_empty_level(v),
        base_level,
        CompactionReason::Ttl,
        |level, f| {
            due_at(f.oldest_ancester_time, p.opts.ttl)
                .is_some_and(|d| d <= p.now_seconds)
                .then_some(level + 1)
        },
    )
}

/// Files written more than `periodic_compaction_seconds` ago, rewritten
/// in place.
fn pick_periodic(p: &PickerInput<'_>, base_level: usize) -> Option<Compaction> {
    let v = p.version;
    let period = p.opts.periodic_compaction_seconds;
    if period == 0 || p.opts.compaction_style != CompactionStyle::Level {
        return None;
    }
    first_due(
        p,
        0..v.num_levels(),
        base_level,
        CompactionReason::PeriodicCompaction,
        |level, f| periodic_due(f, period, p.now_seconds).then_some(level),
    )
}

/// Universal compaction: whether a file not being compacted is due for
/// periodic compaction, and whether one of the last sorted run is (RocksDB
/// then compacts from the oldest run up to the first busy one).
pub fn universal_periodic_due(p: &PickerInput<'_>) -> bool {
    let v = p.version;
    let period = p.opts.periodic_compaction_seconds;
    // The level reserved for files ingested behind is never compacted.
    let levels = v.num_levels() - usize::from(p.reserved_last_level && v.num_levels() > 2);
    period > 0
        && (0..levels).any(|l| {
            v.files(l).iter().any(|f| {
                !p.being_compacted.contains(&f.number) && periodic_due(f, period, p.now_seconds)
            })
        })
}

/// Whether `f` is due for periodic compaction now (universal's check of
/// the runs it picked).
pub fn file_periodic_due(p: &PickerInput<'_>, f: &FileMetaData) -> bool {
    periodic_due(f, p.opts.periodic_compaction_seconds, p.now_seconds)
}

/// The Unix second at which the next file of `v` becomes due for a TTL or
/// periodic compaction (or a FIFO TTL deletion) under `o`, if any will
/// (with the pickers' conditions: a leveled tree needs two levels, and a
/// `reserved_last_level` is never compacted). Files due already count as
/// due now (the caller's picker may have left them for a busy input).
pub fn next_deadline(
    v: &Version,
    o: &ColumnFamilyOptions,
    reserved_last_level: bool,
) -> Option<u64> {
    let mut next: Option<u64> = None;
    let mut due = |t: u64, age: u64| {
        if let Some(d) = due_at(t, age) {
            next = Some(next.map_or(d, |n| n.min(d)));
        }
    };
    let last = last_non_empty_level(v);
    let levels = v.num_levels() - usize::from(reserved_last_level && v.num_levels() > 2);
    if o.compaction_style == CompactionStyle::Level && v.num_levels() <= 1 {
        return None;
    }
    for level in 0..levels {
        for f in v.files(level) {
            match o.compaction_style {
                CompactionStyle::Fifo => due(f.file_creation_time, o.fifo.ttl_seconds),
                CompactionStyle::Level | CompactionStyle::Universal => {
                    if o.compaction_style == CompactionStyle::Level && level < last {
                        due(f.oldest_ancester_time, o.ttl);
                    }
                    due(written_at(f), o.periodic_compaction_seconds);
                }
                CompactionStyle::None => {}
            }
        }
    }
    next
}

/// Keeps in `set` only the numbers of files `v` still holds (the
/// bottommost rewrites' outputs, pruned as they are compacted away).
pub fn retain_live(set: &mut HashSet<u64>, versions: &[Arc<Version>]) {
    set.retain(|n| {
        versions
            .iter()
            .any(|v| (0..v.num_levels()).any(|l| v.files(l).iter().any(|f| f.number == *n)))
    });
}
