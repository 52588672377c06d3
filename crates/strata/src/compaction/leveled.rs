//! The leveled picker (RocksDB's `LevelCompactionPicker`): the level with
//! the highest score >= 1 compacts into the next one (L0 into the base
//! level). On L1+ the file with the smallest ratio of overlapping
//! next-level bytes to its own size goes first (RocksDB's default
//! `kMinOverlappingRatio`). When no level is due, files marked for
//! compaction (mostly deletions) are pushed down, or rewritten in place at
//! the bottom so their tombstones go away.
//!
//! Invariant: a picked compaction shares no file with a running one, and
//! at most one compaction reads L0 at a time.

use std::collections::HashSet;
use std::sync::Arc;

use super::score::{LevelScores, compute};
use super::{Compaction, CompactionReason, LevelInputs, overlapping_clean, range_of};
use crate::format::extract_user_key;
use crate::options::ColumnFamilyOptions;
use crate::version::{FileMetaData, Version};

/// What a picker sees.
pub struct PickerInput<'a> {
    pub cf_id: u32,
    pub version: &'a Arc<Version>,
    pub opts: &'a ColumnFamilyOptions,
    /// Files that running compactions hold.
    pub being_compacted: &'a HashSet<u64>,
    /// Unix seconds (FIFO's TTL).
    pub now_seconds: u64,
}

impl std::fmt::Debug for PickerInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PickerInput")
            .field("cf_id", &self.cf_id)
            .field("version", &self.version)
            .finish()
    }
}

fn busy(files: &[Arc<FileMetaData>], being: &HashSet<u64>) -> bool {
    files.iter().any(|f| being.contains(&f.number))
}

/// Builds the compaction of `start` (files on `start_level`) into
/// `output_level`: adds the clean-cut overlapping files of every level in
/// between and of the output level, and the grandparents. `None` if any
/// of them is being compacted.
#[allow(clippy::too_many_arguments)]
pub fn setup_compaction(
    p: &PickerInput<'_>,
    start_level: usize,
    start: Vec<Arc<FileMetaData>>,
    output_level: usize,
    reason: CompactionReason,
    score: f64,
) -> Option<Compaction> {
    let v = p.version;
    let ucmp = v.icmp().user_comparator().clone();
    if start.is_empty() || busy(&start, p.being_compacted) {
        return None;
    }
    let mut inputs = vec![LevelInputs {
        level: start_level,
        files: start,
    }];
    // Widen through every level down to the output level until stable.
    loop {
        let all: Vec<&Arc<FileMetaData>> = inputs.iter().flat_map(|l| l.files.iter()).collect();
        let (lo, hi) = range_of(&ucmp, &all)?;
        let mut next = vec![LevelInputs {
            level: start_level,
            files: overlapping_clean(v, &ucmp, start_level, &lo, &hi),
        }];
        for level in start_level + 1..=output_level {
            let files = overlapping_clean(v, &ucmp, level, &lo, &hi);
            if !files.is_empty() || level == output_level {
                next.push(LevelInputs { level, files });
            }
        }
        let count = |x: &[LevelInputs]| x.iter().map(|l| l.files.len()).sum::<usize>();
        let grew = count(&next) != count(&inputs);
        inputs = next;
        if !grew {
            break;
        }
    }
    if output_level == start_level {
        inputs.truncate(1);
    }
    if inputs.iter().any(|l| busy(&l.files, p.being_compacted)) {
        return None;
    }
    let all: Vec<&Arc<FileMetaData>> = inputs.iter().flat_map(|l| l.files.iter()).collect();
    let (lo, hi) = range_of(&ucmp, &all)?;
    let grandparents = if output_level + 1 < v.num_levels() {
        v.overlapping_files(output_level + 1, Some(&lo), Some(&hi))
    } else {
        Vec::new()
    };
    Some(Compaction {
        cf_id: p.cf_id,
        inputs,
        output_level,
        target_file_size: p.opts.target_file_size(output_level),
        max_grandparent_overlap_bytes: p.opts.target_file_size(output_level).saturating_mul(10),
        grandparents,
        reason,
        score,
        deletion_only: false,
        allow_trivial_move: reason != CompactionReason::FilesMarkedForCompaction,
        version: Arc::clone(v),
    })
}

/// Picks the next leveled compaction, if any is due.
pub fn pick(p: &PickerInput<'_>) -> Option<Compaction> {
    let scores = compute(p.version, p.opts, p.being_compacted);
    pick_with_scores(p, &scores)
}

/// [`pick`] with precomputed scores.
pub fn pick_with_scores(p: &PickerInput<'_>, scores: &LevelScores) -> Option<Compaction> {
    let v = p.version;
    let n = v.num_levels();
    if n <= 1 {
        return None;
    }
    for &(level, score) in &scores.scores {
        if score < 1.0 {
            break;
        }
        let c = if level == 0 {
            pick_l0(p, scores.base_level, score)
        } else if level + 1 < n {
            pick_level_file(p, level, score)
        } else {
            None
        };
        if c.is_some() {
            return c;
        }
    }
    pick_marked(p, scores.base_level)
}

fn pick_l0(p: &PickerInput<'_>, base_level: usize, score: f64) -> Option<Compaction> {
    let l0 = p.version.files(0).to_vec();
    if busy(&l0, p.being_compacted) {
        return None;
    }
    let reason = if l0.len() >= p.opts.level0_file_num_compaction_trigger {
        CompactionReason::LevelL0FilesNum
    } else {
        CompactionReason::LevelMaxLevelSize
    };
    setup_compaction(p, 0, l0, base_level, reason, score)
}

/// The file of `level` to compact first: least overlap with the next level
/// per byte of its own.
fn pick_level_file(p: &PickerInput<'_>, level: usize, score: f64) -> Option<Compaction> {
    let v = p.version;
    let mut candidates: Vec<(u128, &Arc<FileMetaData>)> = v
        .files(level)
        .iter()
        .filter(|f| !p.being_compacted.contains(&f.number))
        .map(|f| {
            let next = v.overlapping_files(
                level + 1,
                Some(extract_user_key(&f.smallest)),
                Some(extract_user_key(&f.largest)),
            );
            let overlap: u64 = next.iter().map(|g| g.file_size).sum();
            let ratio = u128::from(overlap) * 1024 / u128::from(f.file_size.max(1));
            (ratio, f)
        })
        .collect();
    candidates.sort_by_key(|(r, f)| (*r, f.number));
    for (_, f) in candidates {
        if let Some(c) = setup_compaction(
            p,
            level,
            vec![Arc::clone(f)],
            level + 1,
            CompactionReason::LevelMaxLevelSize,
            score,
        ) {
            return Some(c);
        }
    }
    None
}

/// Files marked for compaction (many deletions): pushed one level down, or
/// rewritten in place on the last level holding their range.
fn pick_marked(p: &PickerInput<'_>, base_level: usize) -> Option<Compaction> {
    let v = p.version;
    let n = v.num_levels();
    for level in 0..n {
        for f in v.files(level) {
            if !f.marked_for_compaction || p.being_compacted.contains(&f.number) {
                continue;
            }
            let (lo, hi) = (extract_user_key(&f.smallest), extract_user_key(&f.largest));
            let deeper =
                (level + 1..n).any(|l| !v.overlapping_files(l, Some(lo), Some(hi)).is_empty());
            let c = if level == 0 {
                pick_l0(p, base_level, 0.0).map(|mut c| {
                    c.reason = CompactionReason::FilesMarkedForCompaction;
                    c.allow_trivial_move = false;
                    c
                })
            } else if deeper {
                setup_compaction(
                    p,
                    level,
                    vec![Arc::clone(f)],
                    level + 1,
                    CompactionReason::FilesMarkedForCompaction,
                    0.0,
                )
            } else {
                setup_compaction(
                    p,
                    level,
                    vec![Arc::clone(f)],
                    level,
                    CompactionReason::FilesMarkedForCompaction,
                    0.0,
                )
            };
            if c.is_some() {
                return c;
            }
        }
    }
    None
}
