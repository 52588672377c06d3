//! `Version`: the immutable set of table files of one column family, per
//! level (RocksDB's `Version` + `VersionStorageInfo`).
//!
//! Invariants (checked by [`Version::check_invariants`], which returns
//! RocksDB's `VersionBuilder` consistency errors):
//! * L0 is ordered newest first: by largest_seqno desc, then smallest_seqno
//!   desc, then file number desc; of two adjacent L0 files the older one has
//!   a strictly smaller smallest_seqno, unless it looks ingested
//!   (smallest_seqno == largest_seqno) and its seqno is 0 or below the newer
//!   file's largest_seqno.
//! * On L1 and above files are sorted by smallest internal key and do not
//!   overlap: `largest(f) < smallest(next)` in internal-key order.
//! * A file number appears at most once in the whole version.
//! * A version never changes after construction; new versions come from a
//!   [`super::VersionBuilder`].

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use super::debug::internal_key_debug_string;
use super::edit::FileMetaData;
use crate::error::{Error, Result};
use crate::format::dbformat::{InternalKeyComparator, extract_user_key};

/// RocksDB's default `num_levels`.
pub const DEFAULT_NUM_LEVELS: usize = 7;

/// Called when a version is dropped (see [`Version::set_release_hook`]).
pub type ReleaseHook = Arc<dyn Fn() + Send + Sync>;

/// The files of one column family at one point in time.
#[derive(Clone)]
pub struct Version {
    icmp: InternalKeyComparator,
    files: Vec<Vec<Arc<FileMetaData>>>,
    /// Per level: the round-robin compaction cursor (an internal key).
    compact_cursors: Vec<Option<Vec<u8>>>,
    version_number: u64,
    /// The largest sequence number of any file (0 without files).
    max_seqno: u64,
    /// Told when this version is dropped, after its files are released.
    on_release: Option<ReleaseHook>,
}

impl Drop for Version {
    fn drop(&mut self) {
        // The last strong reference is gone: whoever the hook wakes can no
        // longer upgrade a weak reference to this version.
        if let Some(hook) = self.on_release.take() {
            hook();
        }
    }
}

impl std::fmt::Debug for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let per_level: Vec<Vec<u64>> = self
            .files
            .iter()
            .map(|l| l.iter().map(|f| f.number).collect())
            .collect();
        f.debug_struct("Version")
            .field("version_number", &self.version_number)
            .field("files", &per_level)
            .finish()
    }
}

/// True if `ikey` is the `end@MAX_SEQUENCE_NUMBER` range-deletion sentinel
/// a table's largest key becomes when a range tombstone ends it.
pub fn is_range_del_sentinel(ikey: &[u8]) -> bool {
    crate::format::parse_internal_key(ikey).is_some_and(|p| {
        p.sequence == crate::format::MAX_SEQUENCE_NUMBER
            && p.value_type == crate::format::ValueType::RangeDeletion
    })
}

/// RocksDB's `sstableKeyCompare` for file boundaries (internal keys): user
/// keys first; on a tie a range tombstone's end sentinel (an exclusive
/// bound) sorts before any other key, and two other keys are equal.
pub fn sstable_key_compare(
    ucmp: &crate::util::comparator::ComparatorRef,
    a: &[u8],
    b: &[u8],
) -> Ordering {
    use crate::format::dbformat::extract_user_key;
    ucmp.compare(extract_user_key(a), extract_user_key(b))
        .then_with(
            || match (is_range_del_sentinel(a), is_range_del_sentinel(b)) {
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                _ => Ordering::Equal,
            },
        )
}

/// L0 order: newest first (RocksDB `NewestFirstBySeqNo`).
pub fn newest_first(a: &FileMetaData, b: &FileMetaData) -> Ordering {
    b.largest_seqno
        .cmp(&a.largest_seqno)
        .then(b.smallest_seqno.cmp(&a.smallest_seqno))
        .then(b.number.cmp(&a.number))
}

/// L1+ order: by smallest internal key, then file number
/// (RocksDB `BySmallestKey`).
pub fn by_smallest_key(
    icmp: &InternalKeyComparator,
    a: &FileMetaData,
    b: &FileMetaData,
) -> Ordering {
    icmp.compare(&a.smallest, &b.smallest)
        .then(a.number.cmp(&b.number))
}

fn inconsistent(msg: String) -> Error {
    Error::corruption("", 0, format!("VersionBuilder: {msg}"))
}

impl Version {
    /// An empty version with `num_levels` levels.
    pub fn new(icmp: InternalKeyComparator, num_levels: usize) -> Version {
        Version {
            icmp,
            files: vec![Vec::new(); num_levels],
            compact_cursors: vec![None; num_levels],
            version_number: 0,
            max_seqno: 0,
            on_release: None,
        }
    }

    /// Calls `hook` when this version is dropped: the version set's
    /// versions tell the database that the last reader of a version has
    /// gone, as its files may have become obsolete then (RocksDB purges
    /// obsolete files when the last reference to a SuperVersion goes).
    pub(crate) fn set_release_hook(&mut self, hook: Option<ReleaseHook>) {
        self.on_release = hook;
    }

    /// REQUIRES: each level already in its order (checked by the caller
    /// with `check_invariants`).
    pub(crate) fn from_parts(
        icmp: InternalKeyComparator,
        files: Vec<Vec<Arc<FileMetaData>>>,
        compact_cursors: Vec<Option<Vec<u8>>>,
        version_number: u64,
    ) -> Version {
        debug_assert_eq!(files.len(), compact_cursors.len());
        let max_seqno = files
            .iter()
            .flatten()
            .map(|f| f.largest_seqno)
            .max()
            .unwrap_or(0);
        Version {
            icmp,
            files,
            compact_cursors,
            version_number,
            max_seqno,
            on_release: None,
        }
    }

    /// The largest sequence number any file of this version holds: every
    /// write after it is in the memtables (flushes take memtables in
    /// order; an ingested file's global sequence number counts here).
    pub fn max_seqno(&self) -> u64 {
        self.max_seqno
    }

    pub fn icmp(&self) -> &InternalKeyComparator {
        &self.icmp
    }

    pub fn num_levels(&self) -> usize {
        self.files.len()
    }

    /// A number identifying this version in debug output.
    pub fn version_number(&self) -> u64 {
        self.version_number
    }

    /// The files of `level` in level order (empty past the last level).
    pub fn files(&self, level: usize) -> &[Arc<FileMetaData>] {
        self.files.get(level).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn num_files(&self, level: usize) -> usize {
        self.files(level).len()
    }

    /// Sum of file sizes on `level`.
    pub fn total_size(&self, level: usize) -> u64 {
        self.files(level).iter().map(|f| f.file_size).sum()
    }

    /// The compaction cursor of `level`, if one was recorded.
    pub fn compact_cursor(&self, level: usize) -> Option<&[u8]> {
        self.compact_cursors.get(level)?.as_deref()
    }

    pub(crate) fn compact_cursors(&self) -> &[Option<Vec<u8>>] {
        &self.compact_cursors
    }

    /// Every file of every level, level by level.
    pub fn all_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMetaData>)> {
        self.files
            .iter()
            .enumerate()
            .flat_map(|(l, fs)| fs.iter().map(move |f| (l, f)))
    }

    /// Files of `level` whose user-key range intersects
    /// `[smallest_user_key, largest_user_key]` (both inclusive; `None` is
    /// unbounded), in level order. Unlike RocksDB's `GetOverlappingInputs`
    /// this does not widen the range through overlapping L0 files.
    pub fn overlapping_files(
        &self,
        level: usize,
        smallest_user_key: Option<&[u8]>,
        largest_user_key: Option<&[u8]>,
    ) -> Vec<Arc<FileMetaData>> {
        let ucmp = self.icmp.user_comparator();
        // A largest key that is a range tombstone's end sentinel
        // (`end@MAX_SEQ`, RocksDB's kTypeRangeDeletion boundary) is
        // exclusive: the file holds nothing of that user key.
        let before = |f: &FileMetaData| {
            smallest_user_key.is_some_and(|s| match ucmp.compare(extract_user_key(&f.largest), s) {
                Ordering::Less => true,
                Ordering::Equal => is_range_del_sentinel(&f.largest),
                Ordering::Greater => false,
            })
        };
        let after = |f: &FileMetaData| {
            largest_user_key.is_some_and(|l| {
                ucmp.compare(extract_user_key(&f.smallest), l) == Ordering::Greater
            })
        };
        let files = self.files(level);
        if level == 0 {
            return files
                .iter()
                .filter(|f| !before(f) && !after(f))
                .cloned()
                .collect();
        }
        // Sorted and disjoint: skip the files wholly before the range.
        let start = files.partition_point(|f| before(f));
        files[start..]
            .iter()
            .take_while(|f| !after(f))
            .cloned()
            .collect()
    }

    /// Checks every invariant of the module comment with `icmp`.
    pub fn check_invariants(&self, icmp: &InternalKeyComparator) -> Result<()> {
        let mut seen = HashSet::new();
        for (_, f) in self.all_files() {
            if !seen.insert(f.number) {
                return Err(inconsistent(format!(
                    "file #{} appears more than once",
                    f.number
                )));
            }
        }
        for level in 0..self.num_levels() {
            self.check_level(icmp, level)?;
        }
        Ok(())
    }

    /// Checks the order (and for L1+ the non-overlap) of one level, with
    /// RocksDB's messages.
    pub fn check_level(&self, icmp: &InternalKeyComparator, level: usize) -> Result<()> {
        for pair in self.files(level).windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if level == 0 {
                check_l0_pair(a, b)?;
                continue;
            }
            if by_smallest_key(icmp, a, b) != Ordering::Less {
                return Err(inconsistent(format!(
                    "L{level} files are not sorted properly: files #{}, #{}",
                    a.number, b.number
                )));
            }
            if icmp.compare(&a.largest, &b.smallest) != Ordering::Less {
                return Err(inconsistent(format!(
                    "L{level} has overlapping ranges: file #{} largest key: {} vs. file #{} smallest key: {}",
                    a.number,
                    internal_key_debug_string(&a.largest, true),
                    b.number,
                    internal_key_debug_string(&b.smallest, true)
                )));
            }
        }
        Ok(())
    }
}

/// RocksDB's L0 checks for adjacent files `a` (newer) and `b` (older).
fn check_l0_pair(a: &FileMetaData, b: &FileMetaData) -> Result<()> {
    if newest_first(a, b) != Ordering::Less {
        return Err(inconsistent(format!(
            "L0 files are not sorted properly: files #{}, #{}",
            a.number, b.number
        )));
    }
    if b.smallest_seqno == b.largest_seqno {
        // Looks like an ingested file with a global seqno.
        let seqno = b.smallest_seqno;
        if !(seqno < a.largest_seqno || seqno == 0) {
            return Err(inconsistent(format!(
                "L0 file #{} with seqno {} {} vs. file #{} with global_seqno {}",
                a.number, a.smallest_seqno, a.largest_seqno, b.number, seqno
            )));
        }
    } else if a.smallest_seqno <= b.smallest_seqno {
        return Err(inconsistent(format!(
            "L0 file #{} with seqno {} {} vs. file #{} with seqno {} {}",
            a.number,
            a.smallest_seqno,
            a.largest_seqno,
            b.number,
            b.smallest_seqno,
            b.largest_seqno
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::dbformat::{ValueType, make_internal_key};
    use crate::util::comparator::bytewise;

    fn icmp() -> InternalKeyComparator {
        InternalKeyComparator::new(bytewise())
    }

    fn file(n: u64, lo: &str, hi: &str, s: u64, l: u64) -> Arc<FileMetaData> {
        Arc::new(FileMetaData::new(
            n,
            100 * n,
            make_internal_key(lo.as_bytes(), s, ValueType::Value),
            make_internal_key(hi.as_bytes(), l, ValueType::Value),
            s,
            l,
        ))
    }

    fn version(levels: Vec<Vec<Arc<FileMetaData>>>) -> Version {
        let n = levels.len();
        Version::from_parts(icmp(), levels, vec![None; n], 1)
    }

    #[test]
    fn accessors_and_overlap() {
        let v = version(vec![
            vec![file(9, "c", "k", 20, 30), file(8, "a", "b", 10, 15)],
            vec![
                file(1, "a", "c", 1, 2),
                file(2, "e", "g", 3, 4),
                file(3, "m", "p", 5, 6),
            ],
            vec![],
        ]);
        v.check_invariants(&icmp()).unwrap();
        assert_eq!(v.num_levels(), 3);
        assert_eq!(v.num_files(1), 3);
        assert_eq!(v.num_files(7), 0);
        assert_eq!(v.total_size(1), 600);
        let nums = |fs: Vec<Arc<FileMetaData>>| fs.iter().map(|f| f.number).collect::<Vec<_>>();
        assert_eq!(nums(v.overlapping_files(1, Some(b"d"), Some(b"f"))), [2]);
        assert_eq!(nums(v.overlapping_files(1, Some(b"c"), Some(b"e"))), [1, 2]);
        assert_eq!(
            nums(v.overlapping_files(1, Some(b"h"), Some(b"l"))),
            Vec::<u64>::new()
        );
        assert_eq!(nums(v.overlapping_files(1, None, Some(b"e"))), [1, 2]);
        assert_eq!(nums(v.overlapping_files(1, Some(b"n"), None)), [3]);
        assert_eq!(nums(v.overlapping_files(1, None, None)), [1, 2, 3]);
        assert_eq!(nums(v.overlapping_files(0, Some(b"b"), Some(b"c"))), [9, 8]);
        assert_eq!(
            nums(v.overlapping_files(0, Some(b"l"), None)),
            Vec::<u64>::new()
        );
    }

    #[test]
    fn invariant_violations() {
        let err = |v: Version| v.check_invariants(&icmp()).unwrap_err().to_string();
        let e = err(version(vec![vec![
            file(1, "a", "b", 1, 2),
            file(2, "a", "b", 3, 4),
        ]]));
        assert!(e.contains("L0 files are not sorted properly"), "{e}");
        let e = err(version(vec![vec![
            file(2, "a", "b", 1, 10),
            file(1, "a", "b", 3, 4),
        ]]));
        assert!(
            e.contains("L0 file #2 with seqno 1 10 vs. file #1 with seqno 3 4"),
            "{e}"
        );
        // An ingested-looking older file is fine below the newer's largest.
        version(vec![vec![
            file(2, "a", "b", 1, 10),
            file(1, "a", "b", 4, 4),
        ]])
        .check_invariants(&icmp())
        .unwrap();
        let e = err(version(vec![vec![
            file(2, "a", "b", 5, 5),
            file(1, "a", "b", 5, 5),
        ]]));
        assert!(e.contains("global_seqno 5"), "{e}");
        let e = err(version(vec![
            vec![],
            vec![file(1, "a", "c", 1, 1), file(2, "c", "d", 1, 1)],
        ]));
        assert!(e.contains("L1 has overlapping ranges"), "{e}");
        let e = err(version(vec![
            vec![],
            vec![file(2, "e", "f", 1, 1), file(1, "a", "c", 1, 1)],
        ]));
        assert!(e.contains("L1 files are not sorted properly"), "{e}");
        let e = err(version(vec![
            vec![file(1, "a", "b", 1, 2)],
            vec![file(1, "a", "c", 1, 1)],
        ]));
        assert!(e.contains("more than once"), "{e}");
        // Same user key, older entry in the next file: no overlap.
        version(vec![
            vec![],
            vec![file(1, "a", "c", 5, 5), file(2, "c", "d", 4, 4)],
        ])
        .check_invariants(&icmp())
        .unwrap();
    }
}
