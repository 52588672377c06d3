//! The leveled picker (RocksDB's `LevelCompactionPicker`): the level with
//! the highest score >= 1 compacts into the next one (L0 into the base
//! level). On L1+ the file with the smallest ratio of overlapping
//! next-level bytes to its own size goes first (RocksDB's default
//! `kMinOverlappingRatio`). When no level is due, single files may ask
//! for a compaction (`file_triggers`: deletions, released snapshots,
//! `ttl`, `periodic_compaction_seconds`).
//!
//! Invariant: a picked compaction shares no file with a running one, and
//! at most one compaction reads L0 at a time.

use std::cmp::Ordering;
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
    /// The last level is reserved for files ingested behind
    /// (`Options::allow_ingest_behind`): universal compaction neither
    /// reads nor writes it.
    pub reserved_last_level: bool,
    /// The oldest snapshot when one was last released (the last sequence
    /// number if none was left; 0 before any release): bottommost files
    /// wholly older are due (RocksDB's `oldest_snapshot_seqnum_`).
    pub oldest_snapshot: crate::format::SequenceNumber,
    /// Files written by bottommost-file rewrites, not picked again.
    pub rewritten_bottommost: &'a HashSet<u64>,
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

/// Builds the compaction of `start` (files on `start_level`, or on
/// several levels for `compact_files`) into `output_level`, as RocksDB's
/// `SetupOtherInputs` (and `SanitizeCompactionInputFiles`) do: from the
/// start level down to the output level, each level adds its clean-cut
/// files overlapping the range so far. Then, when nothing lies between
/// the two levels, the start level grows to more files of the range
/// covered if that adds no output-level file and stays under
/// `max_compaction_bytes`. Adds the grandparents. `None` if any input is
/// being compacted.
///
/// The range is not widened back upwards: a shallower file left out holds
/// only newer data, so it may stay above the output.
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
    let widen = |lo: &mut Vec<u8>, hi: &mut Vec<u8>, files: &[Arc<FileMetaData>]| {
        let refs: Vec<&Arc<FileMetaData>> = files.iter().collect();
        if let Some((l, h)) = range_of(&ucmp, &refs) {
            if ucmp.compare(&l, lo) == Ordering::Less {
                *lo = l;
            }
            if ucmp.compare(&h, hi) == Ordering::Greater {
                *hi = h;
            }
        }
    };
    let refs: Vec<&Arc<FileMetaData>> = start.iter().collect();
    let (mut lo, mut hi) = range_of(&ucmp, &refs)?;
    let mut inputs: Vec<LevelInputs> = Vec::new();
    // With files on levels between the start and the output level (manual
    // and `compact_files` compactions), repeat until the range is stable:
    // an intermediate file the widened range overlaps must be an input, or
    // its older data would end up above the newer outputs.
    let intermediate = (start_level + 1..output_level).any(|l| v.num_files(l) > 0);
    loop {
        let before = (lo.clone(), hi.clone());
        inputs.clear();
        for level in start_level..=output_level {
            let files = overlapping_clean(v, &ucmp, level, &lo, &hi);
            widen(&mut lo, &mut hi, &files);
            if level == start_level || level == output_level || !files.is_empty() {
                inputs.push(LevelInputs { level, files });
            }
        }
        if !intermediate || (lo.clone(), hi.clone()) == before {
            break;
        }
    }
    if inputs.iter().any(|l| busy(&l.files, p.being_compacted)) {
        return None;
    }
    if output_level > start_level
        && inputs.len() == 2
        && (start_level + 1..output_level).all(|l| v.num_files(l) == 0)
        && !inputs[1].files.is_empty()
        && let Some(more) = expand_start_level(p, &inputs[0], &inputs[1])
    {
        inputs[0].files = more;
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
        output_path_id: None,
        version: Arc::clone(v),
    })
}

/// More start-level files for a compaction of `start` with `output` (the
/// overlapping output-level files, not empty): the start level's clean-cut
/// files overlapping the whole range of both, or else its files lying
/// wholly inside that range; taken only if they add no output-level file,
/// are not being compacted and keep the compaction under
/// `max_compaction_bytes` (RocksDB's `SetupOtherInputs`).
fn expand_start_level(
    p: &PickerInput<'_>,
    start: &LevelInputs,
    output: &LevelInputs,
) -> Option<Vec<Arc<FileMetaData>>> {
    let v = p.version;
    let ucmp = v.icmp().user_comparator().clone();
    let limit = p.opts.effective_max_compaction_bytes();
    let size = |fs: &[Arc<FileMetaData>]| fs.iter().map(|f| f.file_size).sum::<u64>();
    let output_bytes = size(&output.files);
    let all: Vec<&Arc<FileMetaData>> = start.files.iter().chain(output.files.iter()).collect();
    let (lo, hi) = range_of(&ucmp, &all)?;
    let acceptable = |fs: &[Arc<FileMetaData>]| {
        let refs: Vec<&Arc<FileMetaData>> = fs.iter().collect();
        fs.len() > start.files.len()
            && output_bytes.saturating_add(size(fs)) < limit
            && !busy(fs, p.being_compacted)
            && range_of(&ucmp, &refs).is_some_and(|(l, h)| {
                overlapping_clean(v, &ucmp, output.level, &l, &h).len() == output.files.len()
            })
    };
    let overlapping = overlapping_clean(v, &ucmp, start.level, &lo, &hi);
    if acceptable(&overlapping) {
        return Some(overlapping);
    }
    if start.level == 0 {
        return None;
    }
    // The files wholly inside [lo, hi] (a contiguous run), minus end files
    // sharing a boundary user key with a neighbour outside.
    let files = v.files(start.level);
    let inside = |f: &FileMetaData| {
        ucmp.compare(extract_user_key(&f.smallest), &lo) != Ordering::Less
            && ucmp.compare(extract_user_key(&f.largest), &hi) != Ordering::Greater
    };
    let shares = |a: &FileMetaData, b: &FileMetaData| {
        ucmp.compare(extract_user_key(&a.largest), extract_user_key(&b.smallest)) != Ordering::Less
    };
    let mut first = files.iter().position(|f| inside(f))?;
    let mut end = first;
    while end < files.len() && inside(&files[end]) {
        end += 1;
    }
    while first < end && first > 0 && shares(&files[first - 1], &files[first]) {
        first += 1;
    }
    while first < end && end < files.len() && shares(&files[end - 1], &files[end]) {
        end -= 1;
    }
    let within = files[first..end].to_vec();
    let has_start = start
        .files
        .iter()
        .all(|f| within.iter().any(|g| g.number == f.number));
    (has_start && acceptable(&within)).then_some(within)
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
    // When L0 cannot go to the base level, the base level does not go
    // down either, so L0 is not starved (RocksDB's `skipped_l0_to_base`).
    let mut skipped_l0 = false;
    for &(level, score) in &scores.scores {
        if score < 1.0 {
            break;
        }
        if skipped_l0 && level == scores.base_level {
            continue;
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
        skipped_l0 |= level == 0;
    }
    super::file_triggers::pick(p, scores.base_level)
}

pub(crate) fn pick_l0(p: &PickerInput<'_>, base_level: usize, score: f64) -> Option<Compaction> {
    let l0 = p.version.files(0).to_vec();
    if busy(&l0, p.being_compacted) {
        return None;
    }
    // RocksDB names every L0 compaction so, whether count or size made
    // L0 due.
    setup_compaction(
        p,
        0,
        l0,
        base_level,
        CompactionReason::LevelL0FilesNum,
        score,
    )
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
    // Ties go to the smaller keys (RocksDB), i.e. level order: stable.
    candidates.sort_by_key(|(r, _)| *r);
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
