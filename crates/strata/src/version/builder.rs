//! `VersionBuilder`: applies a sequence of `VersionEdit`s to a base
//! `Version` and produces the next one (RocksDB `db/version_builder.cc`).
//!
//! Invariants:
//! * Within one edit, deletions are applied before additions, so an edit
//!   may move a file (delete from L0, add to L1) or replace it in place.
//! * `file_levels` maps every file number currently in the result to its
//!   level; adding a number already present or deleting a number not at the
//!   stated level is Corruption, with RocksDB's message.
//! * Files at levels `>= num_levels` are tracked apart (as RocksDB 7.x does)
//!   so a later edit may still delete them; if any remain when the builder
//!   finishes, the result is InvalidArgument "db has more levels than
//!   options.num_levels".
//! * `finish` sorts each level into its order and checks the invariants of
//!   every level the edits touched (all levels with `debug_assertions` or
//!   the `invariants` feature), so a broken LSM shape is never installed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::edit::{FileMetaData, VersionEdit};
use super::version::{Version, by_smallest_key, newest_first};
use crate::error::{Error, Result};

#[derive(Default)]
struct LevelState {
    deleted: HashSet<u64>,
    added: HashMap<u64, Arc<FileMetaData>>,
    touched: bool,
}

/// Accumulates edits on top of a base version.
pub struct VersionBuilder {
    base: Arc<Version>,
    levels: Vec<LevelState>,
    file_levels: HashMap<u64, usize>,
    invalid: HashMap<u64, u32>,
    compact_cursors: Vec<Option<Vec<u8>>>,
}

impl std::fmt::Debug for VersionBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionBuilder")
            .field("base", &self.base)
            .field("files", &self.file_levels.len())
            .finish()
    }
}

fn builder_corruption(msg: String) -> Error {
    Error::corruption("", 0, format!("VersionBuilder: {msg}"))
}

/// The error for files beyond the configured number of levels.
pub fn too_many_levels() -> Error {
    Error::InvalidArgument("db has more levels than options.num_levels".into())
}

impl VersionBuilder {
    pub fn new(base: Arc<Version>) -> VersionBuilder {
        let num_levels = base.num_levels();
        let file_levels = base.all_files().map(|(l, f)| (f.number, l)).collect();
        let compact_cursors = base.compact_cursors().to_vec();
        VersionBuilder {
            base,
            levels: (0..num_levels).map(|_| LevelState::default()).collect(),
            file_levels,
            invalid: HashMap::new(),
            compact_cursors,
        }
    }

    /// The level file `number` is on in the result so far.
    pub fn level_of(&self, number: u64) -> Option<usize> {
        self.file_levels.get(&number).copied()
    }

    /// Applies one edit: compact cursors, deletions, then additions.
    pub fn apply(&mut self, edit: &VersionEdit) -> Result<()> {
        let num_levels = self.levels.len();
        for (level, key) in &edit.compact_cursors {
            let l = *level as usize;
            if l + 1 < num_levels {
                self.compact_cursors[l] = Some(key.clone());
            }
        }
        for &(level, number) in &edit.deleted_files {
            self.delete_file(level, number)?;
        }
        for (level, f) in &edit.new_files {
            self.add_file(*level, f)?;
        }
        Ok(())
    }

    fn current_level_desc(&self, number: u64) -> Option<String> {
        if let Some(l) = self.file_levels.get(&number) {
            return Some(l.to_string());
        }
        self.invalid.get(&number).map(u32::to_string)
    }

    fn delete_file(&mut self, level: u32, number: u64) -> Result<()> {
        let l = level as usize;
        if l >= self.levels.len() {
            if self.invalid.get(&number) == Some(&level) {
                self.invalid.remove(&number);
                return Ok(());
            }
        } else if self.file_levels.get(&number) == Some(&l) {
            self.file_levels.remove(&number);
            let st = &mut self.levels[l];
            st.touched = true;
            st.added.remove(&number);
            st.deleted.insert(number);
            return Ok(());
        }
        let where_ = match self.current_level_desc(number) {
            Some(cur) => format!("on level {cur}"),
            None => "not in the LSM tree".to_string(),
        };
        Err(builder_corruption(format!(
            "Cannot delete table file #{number} from level {level} since it is {where_}"
        )))
    }

    fn add_file(&mut self, level: u32, f: &FileMetaData) -> Result<()> {
        let number = f.number;
        if let Some(cur) = self.current_level_desc(number) {
            return Err(builder_corruption(format!(
                "Cannot add table file #{number} to level {level} since it is already in the LSM tree on level {cur}"
            )));
        }
        let l = level as usize;
        if l >= self.levels.len() {
            self.invalid.insert(number, level);
            return Ok(());
        }
        self.file_levels.insert(number, l);
        let st = &mut self.levels[l];
        st.touched = true;
        st.added.insert(number, Arc::new(f.clone()));
        Ok(())
    }

    /// True if files remain at levels `>= num_levels`.
    pub fn has_invalid_levels(&self) -> bool {
        !self.invalid.is_empty()
    }

    /// The resulting version, numbered `version_number`; see the module
    /// comment for the checks.
    pub fn finish(self, version_number: u64) -> Result<Version> {
        if self.has_invalid_levels() {
            return Err(too_many_levels());
        }
        let icmp = self.base.icmp().clone();
        let mut files = Vec::with_capacity(self.levels.len());
        let mut touched = Vec::new();
        for (l, st) in self.levels.iter().enumerate() {
            if !st.touched {
                files.push(self.base.files(l).to_vec());
                continue;
            }
            touched.push(l);
            let mut level: Vec<Arc<FileMetaData>> = self
                .base
                .files(l)
                .iter()
                .filter(|f| !st.deleted.contains(&f.number) && !st.added.contains_key(&f.number))
                .cloned()
                .chain(st.added.values().cloned())
                .collect();
            if l == 0 {
                level.sort_by(|a, b| newest_first(a, b));
            } else {
                level.sort_by(|a, b| by_smallest_key(&icmp, a, b));
            }
            files.push(level);
        }
        let v = Version::from_parts(icmp.clone(), files, self.compact_cursors, version_number);
        if cfg!(any(debug_assertions, feature = "invariants")) {
            v.check_invariants(&icmp)?;
        } else {
            for l in touched {
                v.check_level(&icmp, l)?;
            }
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::dbformat::{InternalKeyComparator, ValueType, make_internal_key};
    use crate::util::comparator::bytewise;

    fn base(levels: usize) -> Arc<Version> {
        Arc::new(Version::new(InternalKeyComparator::new(bytewise()), levels))
    }

    fn meta(n: u64, lo: &str, hi: &str, seq: u64) -> FileMetaData {
        FileMetaData::new(
            n,
            10,
            make_internal_key(lo.as_bytes(), seq, ValueType::Value),
            make_internal_key(hi.as_bytes(), seq, ValueType::Value),
            seq,
            seq,
        )
    }

    fn nums(v: &Version, level: usize) -> Vec<u64> {
        v.files(level).iter().map(|f| f.number).collect()
    }

    #[test]
    fn apply_add_delete_move() {
        let mut b = VersionBuilder::new(base(7));
        let mut e = VersionEdit::new();
        e.add_file(0, meta(5, "a", "c", 5));
        e.add_file(0, meta(6, "b", "d", 6));
        e.add_file(1, meta(3, "m", "n", 1));
        e.add_file(1, meta(2, "e", "f", 1));
        b.apply(&e).unwrap();
        let v1 = Arc::new(b.finish(1).unwrap());
        assert_eq!(nums(&v1, 0), [6, 5]);
        assert_eq!(nums(&v1, 1), [2, 3]);

        // Move file 5 from L0 to L2 and replace file 2 in place.
        let mut b = VersionBuilder::new(v1.clone());
        let mut e = VersionEdit::new();
        e.delete_file(0, 5);
        e.add_file(2, meta(5, "a", "c", 5));
        e.delete_file(1, 2);
        let mut f2 = meta(2, "e", "f", 1);
        f2.marked_for_compaction = true;
        e.add_file(1, f2);
        b.apply(&e).unwrap();
        assert_eq!(b.level_of(5), Some(2));
        let v2 = b.finish(2).unwrap();
        assert_eq!(nums(&v2, 0), [6]);
        assert_eq!(nums(&v2, 1), [2, 3]);
        assert!(v2.files(1)[0].marked_for_compaction);
        assert_eq!(nums(&v2, 2), [5]);
        // The base is untouched.
        assert_eq!(nums(&v1, 0), [6, 5]);
    }

    #[test]
    fn rejects_bad_edits() {
        let mut b = VersionBuilder::new(base(7));
        let mut e = VersionEdit::new();
        e.add_file(0, meta(5, "a", "c", 5));
        b.apply(&e).unwrap();
        let err = b.apply(&e).unwrap_err();
        assert!(err.is_corruption());
        assert!(
            err.to_string().contains(
                "Cannot add table file #5 to level 0 since it is already in the LSM tree on level 0"
            ),
            "{err}"
        );
        let mut d = VersionEdit::new();
        d.delete_file(1, 5);
        let err = b.apply(&d).unwrap_err().to_string();
        assert!(
            err.contains("Cannot delete table file #5 from level 1 since it is on level 0"),
            "{err}"
        );
        let mut d = VersionEdit::new();
        d.delete_file(0, 9);
        let err = b.apply(&d).unwrap_err().to_string();
        assert!(err.contains("since it is not in the LSM tree"), "{err}");

        // Overlap on L1 is caught at finish.
        let mut b = VersionBuilder::new(base(7));
        let mut e = VersionEdit::new();
        e.add_file(1, meta(1, "a", "c", 1));
        e.add_file(1, meta(2, "b", "d", 1));
        b.apply(&e).unwrap();
        assert!(b.finish(1).unwrap_err().to_string().contains("overlapping"));
    }

    #[test]
    fn invalid_levels_tolerated_until_finish() {
        let mut b = VersionBuilder::new(base(3));
        let mut e = VersionEdit::new();
        e.add_file(5, meta(1, "a", "c", 1));
        b.apply(&e).unwrap();
        assert!(b.has_invalid_levels());
        let mut d = VersionEdit::new();
        d.delete_file(5, 1);
        b.apply(&d).unwrap();
        assert!(!b.has_invalid_levels());
        b.finish(1).unwrap();

        let mut b = VersionBuilder::new(base(3));
        b.apply(&e).unwrap();
        let err = b.finish(1).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)));
        assert!(
            err.to_string()
                .contains("db has more levels than options.num_levels")
        );
    }

    #[test]
    fn compact_cursors_kept_below_last_level() {
        let mut b = VersionBuilder::new(base(3));
        let mut e = VersionEdit::new();
        let k = make_internal_key(b"k", 1, ValueType::Value);
        e.compact_cursors.push((1, k.clone()));
        e.compact_cursors.push((2, k.clone()));
        b.apply(&e).unwrap();
        let v = b.finish(1).unwrap();
        assert_eq!(v.compact_cursor(1), Some(k.as_slice()));
        assert_eq!(v.compact_cursor(2), None);
    }
}
