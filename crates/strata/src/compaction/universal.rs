//! The universal picker (RocksDB's `UniversalCompactionPicker`). Sorted
//! runs are the L0 files (newest first) and then each non-empty level
//! below. In order of preference it picks:
//! 1. all runs from the newest one not being compacted down to the oldest,
//!    when those newer than the oldest exceed
//!    `max_size_amplification_percent` of its size (size amplification;
//!    none if a run among them is being compacted);
//! 2. consecutive runs from the newest, while each next run is at most
//!    `(100 + size_ratio)%` of the sum so far (size ratio), at least
//!    `min_merge_width` and at most `max_merge_width` of them;
//! 3. when there are more runs than `level0_file_num_compaction_trigger`,
//!    enough of the newest runs to get back to the trigger (still at
//!    least `min_merge_width` of them, as in RocksDB).
//!
//! The output goes to the last level if the oldest run is picked, else to
//! the level just above the next older run (L0 if that run is an L0 file),
//! so runs stay ordered by age down the levels.

use std::sync::Arc;

use super::leveled::PickerInput;
use super::{Compaction, CompactionReason, LevelInputs, file_triggers};
use crate::version::FileMetaData;

/// One sorted run: an L0 file or a whole level.
#[derive(Clone, Debug)]
pub struct SortedRun {
    pub level: usize,
    pub files: Vec<Arc<FileMetaData>>,
    pub size: u64,
    pub being_compacted: bool,
}

/// The sorted runs of a version, newest first.
pub fn sorted_runs(p: &PickerInput<'_>) -> Vec<SortedRun> {
    let v = p.version;
    let mut runs = Vec::new();
    for f in v.files(0) {
        runs.push(SortedRun {
            level: 0,
            files: vec![Arc::clone(f)],
            size: f.file_size,
            being_compacted: p.being_compacted.contains(&f.number),
        });
    }
    let levels = v.num_levels() - usize::from(p.reserved_last_level && v.num_levels() > 2);
    for level in 1..levels {
        let files = v.files(level);
        if files.is_empty() {
            continue;
        }
        runs.push(SortedRun {
            level,
            files: files.to_vec(),
            size: files.iter().map(|f| f.file_size).sum(),
            being_compacted: files.iter().any(|f| p.being_compacted.contains(&f.number)),
        });
    }
    runs
}

/// Picks the next universal compaction, if any is due.
pub fn pick(p: &PickerInput<'_>) -> Option<Compaction> {
    let runs = sorted_runs(p);
    if file_triggers::universal_periodic_due(p)
        && let Some(c) = pick_periodic(p, &runs)
    {
        return Some(c);
    }
    let trigger = p.opts.level0_file_num_compaction_trigger.max(1);
    if runs.len() < trigger || runs.len() < 2 {
        return None;
    }
    if let Some(c) = pick_size_amp(p, &runs) {
        return Some(c);
    }
    let u = &p.opts.universal;
    if let Some((start, count)) =
        pick_by_ratio(&runs, u.size_ratio, u.max_merge_width, u.min_merge_width)
    {
        return Some(build(
            p,
            &runs,
            start,
            count,
            CompactionReason::UniversalSizeRatio,
        ));
    }
    let not_busy = runs.iter().filter(|r| !r.being_compacted).count();
    if not_busy > trigger {
        // Still at least `min_merge_width` runs, as in RocksDB.
        let max_files = (not_busy - trigger + 1).min(u.max_merge_width);
        if let Some((start, count)) = pick_by_ratio(&runs, u32::MAX, max_files, u.min_merge_width) {
            return Some(build(
                p,
                &runs,
                start,
                count,
                CompactionReason::UniversalSortedRunNum,
            ));
        }
    }
    None
}

/// The oldest runs up to the first one being compacted. If that leaves
/// only the oldest run, it must hold a file due.
fn pick_periodic(p: &PickerInput<'_>, runs: &[SortedRun]) -> Option<Compaction> {
    let start = runs
        .iter()
        .rposition(|r| r.being_compacted)
        .map_or(0, |i| i + 1);
    if start == runs.len() {
        return None;
    }
    if start == runs.len() - 1
        && !runs[start]
            .files
            .iter()
            .any(|f| file_triggers::file_periodic_due(p, f))
    {
        return None;
    }
    Some(build(
        p,
        runs,
        start,
        runs.len() - start,
        CompactionReason::PeriodicCompaction,
    ))
}

/// All runs from the newest one not being compacted down to the oldest,
/// when together they exceed `max_size_amplification_percent` of the
/// oldest; none if a run among them (or the oldest) is being compacted.
fn pick_size_amp(p: &PickerInput<'_>, runs: &[SortedRun]) -> Option<Compaction> {
    let (last, newer) = runs.split_last()?;
    if last.being_compacted {
        return None;
    }
    let start = newer.iter().position(|r| !r.being_compacted)?;
    if newer[start..].iter().any(|r| r.being_compacted) {
        return None;
    }
    let newer_size: u64 = newer[start..].iter().map(|r| r.size).sum();
    let limit = u128::from(p.opts.universal.max_size_amplification_percent) * u128::from(last.size);
    if u128::from(newer_size) * 100 < limit {
        return None;
    }
    Some(build(
        p,
        runs,
        start,
        runs.len() - start,
        CompactionReason::UniversalSizeAmplification,
    ))
}

/// `(first run, count)` of the first window that passes the size-ratio
/// test with at least `min_width` runs and at most `max_width`.
fn pick_by_ratio(
    runs: &[SortedRun],
    ratio: u32,
    max_width: usize,
    min_width: usize,
) -> Option<(usize, usize)> {
    let min_width = min_width.max(2);
    let mut start = 0;
    while start < runs.len() {
        let i = (start..runs.len()).find(|&i| !runs[i].being_compacted)?;
        let mut size = runs[i].size;
        let mut count = 1;
        for next in &runs[i + 1..] {
            if count >= max_width || next.being_compacted {
                break;
            }
            let limit = u128::from(size) * (100 + u128::from(ratio)) / 100;
            if limit < u128::from(next.size) {
                break;
            }
            size = size.saturating_add(next.size);
            count += 1;
        }
        if count >= min_width {
            return Some((i, count));
        }
        start = i + 1;
    }
    None
}

fn build(
    p: &PickerInput<'_>,
    runs: &[SortedRun],
    start: usize,
    count: usize,
    reason: CompactionReason,
) -> Compaction {
    let v = p.version;
    let end = start + count;
    let output_level = if end == runs.len() {
        // The last level, unless reserved for files ingested behind.
        v.num_levels() - 1 - usize::from(p.reserved_last_level && v.num_levels() > 2)
    } else if runs[end].level == 0 {
        0
    } else {
        runs[end].level - 1
    };
    let mut inputs: Vec<LevelInputs> = Vec::new();
    for r in &runs[start..end] {
        match inputs.last_mut() {
            Some(l) if l.level == r.level => l.files.extend(r.files.iter().cloned()),
            _ => inputs.push(LevelInputs {
                level: r.level,
                files: r.files.clone(),
            }),
        }
    }
    if output_level > 0 && inputs.last().is_none_or(|l| l.level != output_level) {
        inputs.push(LevelInputs {
            level: output_level,
            files: Vec::new(),
        });
    }
    let target_file_size = if output_level == 0 {
        u64::MAX
    } else {
        p.opts.target_file_size(output_level)
    };
    Compaction {
        cf_id: p.cf_id,
        inputs,
        output_level,
        target_file_size,
        max_grandparent_overlap_bytes: u64::MAX,
        grandparents: Vec::new(),
        reason,
        score: runs.iter().filter(|r| !r.being_compacted).count() as f64
            / p.opts.level0_file_num_compaction_trigger.max(1) as f64,
        deletion_only: false,
        allow_trivial_move: false,
        output_path_id: None,
        version: Arc::clone(v),
    }
}
