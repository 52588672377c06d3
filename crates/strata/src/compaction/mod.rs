//! Layer 5: compaction. Which files to merge next (the pickers: leveled,
//! universal, FIFO), what survives a merge (the compaction iterator:
//! snapshots, shadowing, tombstones, merge operands, the compaction
//! filter), and the job that writes the merged output as new table files
//! (cut by size and by grandparent overlap, split into parallel
//! subcompactions). RocksDB's `db/compaction/`.
//!
//! * [`Compaction`]: one picked compaction: inputs per level, output level,
//!   the version they came from.
//! * [`score`]: level targets (static or dynamic), scores and the
//!   pending-compaction-bytes estimate.
//! * [`leveled`], [`universal`], [`fifo`]: the pickers; [`file_triggers`]:
//!   compactions single files ask for (deletions, released snapshots,
//!   `ttl`, `periodic_compaction_seconds`).
//! * [`iterator`]: the keep/drop rules applied to a sorted input stream.
//! * [`job`]: runs a compaction and returns the version edit's contents.
//!
//! Invariants: a compaction's inputs on every level >= 1 are a contiguous
//! run of that level's files whose user-key range no other file of the
//! level shares; the output level's overlapping files are all inputs; its
//! outputs never overlap each other or any file of the output level that
//! is not an input, so installing it keeps every level >= 1 disjoint.

pub mod fifo;
pub mod file_triggers;
pub mod iterator;
pub mod job;
pub mod leveled;
pub mod placement;
pub mod score;
pub mod universal;

#[cfg(test)]
mod iterator_tests;
#[cfg(test)]
mod picker_tests;

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use crate::format::{MAX_SEQUENCE_NUMBER, SequenceNumber, extract_user_key};
use crate::util::comparator::ComparatorRef;
use crate::version::{FileMetaData, Version};

/// Whether an entry is visible at a snapshot when sequence order alone
/// does not say: WritePrepared transactions put their writes in the
/// memtables at prepare and commit them later (RocksDB's
/// `SnapshotChecker`). Flushes and compactions keep what it says readers
/// may still need.
pub trait SnapshotChecker: Send + Sync {
    /// Whether the entry at `seq` is visible to a reader at `snapshot`;
    /// at `MAX_SEQUENCE_NUMBER`, whether it is committed at all. Once
    /// true for a snapshot, true for every later one.
    fn is_in_snapshot(&self, seq: SequenceNumber, snapshot: SequenceNumber) -> bool;
}

pub type SnapshotCheckerRef = Arc<dyn SnapshotChecker>;

/// The stripe of an entry not yet committed: kept as it is, and it
/// shadows nothing (readers skip it until it commits).
pub const UNCOMMITTED: usize = usize::MAX;

/// The snapshot stripe of the entry at `seq`: how many of `snapshots`
/// (ascending) cannot see it, or [`UNCOMMITTED`].
pub fn stripe_of(
    snapshots: &[SequenceNumber],
    checker: Option<&dyn SnapshotChecker>,
    seq: SequenceNumber,
) -> usize {
    match checker {
        None => snapshots.partition_point(|&s| s < seq),
        Some(c) if !c.is_in_snapshot(seq, MAX_SEQUENCE_NUMBER) => UNCOMMITTED,
        // Visibility is monotonic in the snapshot: a partition point.
        Some(c) => snapshots.partition_point(|&s| !c.is_in_snapshot(seq, s)),
    }
}

/// Why a compaction was picked (RocksDB's `CompactionReason` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionReason {
    LevelL0FilesNum,
    LevelMaxLevelSize,
    FilesMarkedForCompaction,
    /// A bottommost file whose deletions and overwritten versions the
    /// released snapshots no longer need.
    BottommostFiles,
    /// A file whose data is older than `ttl`.
    Ttl,
    /// A file written longer than `periodic_compaction_seconds` ago.
    PeriodicCompaction,
    UniversalSizeAmplification,
    UniversalSizeRatio,
    UniversalSortedRunNum,
    FifoMaxSize,
    FifoTtl,
    ManualCompaction,
    CompactFiles,
}

impl CompactionReason {
    pub fn name(self) -> &'static str {
        match self {
            CompactionReason::LevelL0FilesNum => "LevelL0FilesNum",
            CompactionReason::LevelMaxLevelSize => "LevelMaxLevelSize",
            CompactionReason::FilesMarkedForCompaction => "FilesMarkedForCompaction",
            CompactionReason::BottommostFiles => "BottommostFiles",
            CompactionReason::Ttl => "Ttl",
            CompactionReason::PeriodicCompaction => "PeriodicCompaction",
            CompactionReason::UniversalSizeAmplification => "UniversalSizeAmplification",
            CompactionReason::UniversalSizeRatio => "UniversalSizeRatio",
            CompactionReason::UniversalSortedRunNum => "UniversalSortedRunNum",
            CompactionReason::FifoMaxSize => "FIFOMaxSize",
            CompactionReason::FifoTtl => "FIFOTtl",
            CompactionReason::ManualCompaction => "ManualCompaction",
            CompactionReason::CompactFiles => "CompactFiles",
        }
    }
}

/// The sizes (file bytes) of `v`'s sorted runs: each level-0 file, and
/// each other non-empty level.
pub fn sorted_run_bytes(v: &Version) -> Vec<u64> {
    runs_without(v, &HashSet::new(), None)
}

/// [`sorted_run_bytes`] without the files numbered in `gone` and without
/// level `skip`.
fn runs_without(v: &Version, gone: &HashSet<u64>, skip: Option<usize>) -> Vec<u64> {
    let kept = |l: usize| {
        v.files(l)
            .iter()
            .filter(|f| !gone.contains(&f.number))
            .map(|f| f.file_size)
    };
    let mut runs: Vec<u64> = kept(0).collect();
    runs.extend(
        (1..v.num_levels())
            .filter(|&l| Some(l) != skip)
            .map(|l| kept(l).sum::<u64>())
            .filter(|&n| n > 0),
    );
    runs
}

/// The files a compaction takes from one level.
#[derive(Clone, Debug)]
pub struct LevelInputs {
    pub level: usize,
    pub files: Vec<Arc<FileMetaData>>,
}

/// One picked compaction.
#[derive(Clone, Debug)]
pub struct Compaction {
    pub cf_id: u32,
    /// Inputs by level, shallowest first; the last entry may be the
    /// output level's overlapping files.
    pub inputs: Vec<LevelInputs>,
    pub output_level: usize,
    /// Output files are cut at about this size.
    pub target_file_size: u64,
    /// An output file is also cut once it overlaps this many bytes of the
    /// grandparent level (the level below the output).
    pub max_grandparent_overlap_bytes: u64,
    /// Files of `output_level + 1` overlapping the compaction.
    pub grandparents: Vec<Arc<FileMetaData>>,
    pub reason: CompactionReason,
    pub score: f64,
    /// Only delete the inputs (FIFO): nothing is written.
    pub deletion_only: bool,
    /// The inputs move to the output level without being rewritten.
    pub allow_trivial_move: bool,
    /// The table path of the outputs: set by a manual compaction
    /// (`CompactRangeOptions::target_path_id`), else chosen by
    /// [`placement::output_path_id`] when the compaction runs.
    pub output_path_id: Option<u32>,
    /// The version the inputs were picked from.
    pub version: Arc<Version>,
}

impl Compaction {
    pub fn start_level(&self) -> usize {
        self.inputs.first().map_or(self.output_level, |l| l.level)
    }

    /// Every input file with its level.
    pub fn input_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMetaData>)> {
        self.inputs
            .iter()
            .flat_map(|l| l.files.iter().map(move |f| (l.level, f)))
    }

    pub fn num_input_files(&self) -> usize {
        self.inputs.iter().map(|l| l.files.len()).sum()
    }

    pub fn input_bytes(&self) -> u64 {
        self.input_files().map(|(_, f)| f.file_size).sum()
    }

    /// The size of the sorted run the outputs join (all of the output
    /// level once they are in; for level 0, the outputs alone) and the
    /// sizes of every sorted run of the tree afterwards, that one
    /// included (see [`sorted_run_bytes`]); for sizing filters by run.
    pub fn runs_after(&self) -> (u64, Vec<u64>) {
        let inputs: HashSet<u64> = self.input_files().map(|(_, f)| f.number).collect();
        let stays: u64 = if self.output_level == 0 {
            0
        } else {
            self.version
                .files(self.output_level)
                .iter()
                .filter(|f| !inputs.contains(&f.number))
                .map(|f| f.file_size)
                .sum()
        };
        let out = stays + self.input_bytes();
        let mut runs = runs_without(&self.version, &inputs, Some(self.output_level));
        runs.push(out);
        (out, runs)
    }

    /// Bytes of inputs on `level`.
    pub fn input_bytes_at(&self, level: usize) -> u64 {
        self.inputs
            .iter()
            .filter(|l| l.level == level)
            .flat_map(|l| l.files.iter())
            .map(|f| f.file_size)
            .sum()
    }

    /// True if the inputs can move to the output level unchanged (as
    /// RocksDB's `Compaction::IsTrivialMove`): they all come from one
    /// level, nothing of the output level overlaps them, their key ranges
    /// are disjoint (several level-0 files qualify only if no two of them
    /// share a user key: sequential loads), and no input overlaps too much
    /// of the level below the output.
    pub fn is_trivial_move(&self) -> bool {
        if !self.allow_trivial_move || self.deletion_only {
            return false;
        }
        let mut levels = self.inputs.iter().filter(|l| !l.files.is_empty());
        let (Some(only), None) = (levels.next(), levels.next()) else {
            return false;
        };
        if only.level == self.output_level {
            return false;
        }
        let ucmp = self.version.icmp().user_comparator();
        let mut files: Vec<&Arc<FileMetaData>> = only.files.iter().collect();
        files.sort_by(|a, b| {
            ucmp.compare(extract_user_key(&a.smallest), extract_user_key(&b.smallest))
        });
        let disjoint = files.windows(2).all(|w| {
            ucmp.compare(
                extract_user_key(&w[0].largest),
                extract_user_key(&w[1].smallest),
            ) == Ordering::Less
        });
        disjoint
            && files.iter().all(|f| {
                let (lo, hi) = (extract_user_key(&f.smallest), extract_user_key(&f.largest));
                let overlap: u64 = self
                    .grandparents
                    .iter()
                    .filter(|g| {
                        ucmp.compare(extract_user_key(&g.largest), lo) != Ordering::Less
                            && ucmp.compare(extract_user_key(&g.smallest), hi) != Ordering::Greater
                    })
                    .map(|g| g.file_size)
                    .sum();
                overlap <= self.max_grandparent_overlap_bytes
            })
    }

    /// The smallest and largest user keys of all inputs.
    pub fn user_key_range(&self, ucmp: &ComparatorRef) -> Option<(Vec<u8>, Vec<u8>)> {
        let files: Vec<&Arc<FileMetaData>> = self.input_files().map(|(_, f)| f).collect();
        range_of(ucmp, &files)
    }

    /// Numbers of every input file.
    pub fn input_numbers(&self) -> HashSet<u64> {
        self.input_files().map(|(_, f)| f.number).collect()
    }
}

/// The user-key range covered by `files`.
pub fn range_of(ucmp: &ComparatorRef, files: &[&Arc<FileMetaData>]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut lo: Option<&[u8]> = None;
    let mut hi: Option<&[u8]> = None;
    for f in files {
        let s = extract_user_key(&f.smallest);
        let l = extract_user_key(&f.largest);
        if lo.is_none_or(|x| ucmp.compare(s, x) == Ordering::Less) {
            lo = Some(s);
        }
        if hi.is_none_or(|x| ucmp.compare(l, x) == Ordering::Greater) {
            hi = Some(l);
        }
    }
    Some((lo?.to_vec(), hi?.to_vec()))
}

/// Files of `level` overlapping the user-key range `[lo, hi]`. On levels
/// 1 and deeper the range is widened until no file outside it shares a
/// user key with the chosen ones (RocksDB's clean cut); on level 0 until
/// no other L0 file overlaps the widened range.
pub fn overlapping_clean(
    version: &Version,
    ucmp: &ComparatorRef,
    level: usize,
    lo: &[u8],
    hi: &[u8],
) -> Vec<Arc<FileMetaData>> {
    let (mut lo, mut hi) = (lo.to_vec(), hi.to_vec());
    loop {
        let files = version.overlapping_files(level, Some(&lo), Some(&hi));
        let refs: Vec<&Arc<FileMetaData>> = files.iter().collect();
        let Some((nlo, nhi)) = range_of(ucmp, &refs) else {
            return files;
        };
        let wider = ucmp.compare(&nlo, &lo) == Ordering::Less
            || ucmp.compare(&nhi, &hi) == Ordering::Greater;
        if !wider {
            return files;
        }
        if ucmp.compare(&nlo, &lo) == Ordering::Less {
            lo = nlo;
        }
        if ucmp.compare(&nhi, &hi) == Ordering::Greater {
            hi = nhi;
        }
    }
}

/// Whether any file outside a compaction may hold entries of a user key
/// older than the compaction's outputs: files on levels below the output
/// level and, when the output level is 0, every L0 file that is not an
/// input. Keys are asked in ascending order.
pub struct BeyondOutputLevel {
    ucmp: ComparatorRef,
    /// Per deeper level (>= 1): its files, sorted and disjoint.
    levels: Vec<Vec<Arc<FileMetaData>>>,
    cursors: Vec<usize>,
    /// L0 files (outside the inputs) to check one by one.
    l0: Vec<Arc<FileMetaData>>,
}

impl std::fmt::Debug for BeyondOutputLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BeyondOutputLevel")
            .field("levels", &self.levels.len())
            .field("l0", &self.l0.len())
            .finish()
    }
}

impl BeyondOutputLevel {
    pub fn new(c: &Compaction, ucmp: ComparatorRef) -> Self {
        let v = &c.version;
        let inputs = c.input_numbers();
        let levels: Vec<Vec<Arc<FileMetaData>>> = (c.output_level + 1..v.num_levels())
            .filter(|&l| l > 0)
            .map(|l| v.files(l).to_vec())
            .filter(|fs| !fs.is_empty())
            .collect();
        let l0 = if c.output_level == 0 {
            v.files(0)
                .iter()
                .filter(|f| !inputs.contains(&f.number))
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        BeyondOutputLevel {
            ucmp,
            cursors: vec![0; levels.len()],
            levels,
            l0,
        }
    }

    /// True if nothing beyond the output level overlaps any key: the
    /// compaction is at the bottom for its whole range.
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty() && self.l0.is_empty()
    }

    /// True if some file beyond the output level may contain `user_key`.
    /// REQUIRES: calls come in ascending key order.
    pub fn may_contain(&mut self, user_key: &[u8]) -> bool {
        let ucmp = &self.ucmp;
        let inside = |f: &FileMetaData| {
            ucmp.compare(extract_user_key(&f.smallest), user_key) != Ordering::Greater
                && ucmp.compare(user_key, extract_user_key(&f.largest)) != Ordering::Greater
        };
        if self.l0.iter().any(|f| inside(f)) {
            return true;
        }
        for (files, cur) in self.levels.iter().zip(self.cursors.iter_mut()) {
            while *cur < files.len()
                && ucmp.compare(extract_user_key(&files[*cur].largest), user_key) == Ordering::Less
            {
                *cur += 1;
            }
            if *cur < files.len() && inside(&files[*cur]) {
                return true;
            }
        }
        false
    }
}
