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
    use crate::format::dbformat::{
        InternalKeyComparator, ValueType, extract_user_key, make_internal_key, parse_internal_key,
    };
    use crate::util::comparator::bytewise;
    use crate::util::datadriven::Case;
    use crate::version::debug::internal_key_debug_string;

    // -----------------------------------------------------------------
    // Data-driven cases: `testdata/version_builder.txt`, each a list of
    // commands run in order on one builder (see the top of that file):
    //
    //   num_levels=N              a builder on an empty version
    //   edit add L<n> <file>...   `number:smallest-largest:size:seqlo-seqhi`
    //                             plus `!` (marked for compaction)
    //   edit delete L<n> <num>...
    //   edit cursor L<n> <k>@<s>
    //   apply                     prints `apply: ok` or `apply: error: ..`
    //   level_of <num>            prints `level_of <num>: L<n>` or `none`
    //   has_invalid_levels        prints `has_invalid_levels: true|false`
    //   finish                    prints `finish v<i>:` and the version
    //                             (or `finish: error: ..`); later edits
    //                             go to a builder on v<i>
    //   show v<i>                 prints version v<i> again
    //
    // A version prints as `  L<n>: <file>...` per non-empty level and
    // `  cursor L<n>: <k>@<s>` per compact cursor, or `  (empty)`.

    const TESTDATA: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/version/testdata/version_builder.txt"
    );

    /// `L<n>`.
    fn parse_level(s: &str) -> u32 {
        s.strip_prefix('L')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("bad level {s:?}"))
    }

    /// `number:smallest-largest:size:seqlo-seqhi` plus `!`.
    fn parse_file(spec: &str) -> FileMetaData {
        let marked = spec.ends_with('!');
        let parts: Vec<&str> = spec.trim_end_matches('!').split(':').collect();
        assert_eq!(parts.len(), 4, "bad file {spec:?}");
        let (lo, hi) = parts[1].split_once('-').expect("smallest-largest");
        let (slo, shi) = parts[3].split_once('-').expect("seqlo-seqhi");
        let (slo, shi): (u64, u64) = (slo.parse().unwrap(), shi.parse().unwrap());
        let mut f = FileMetaData::new(
            parts[0].parse().expect("file number"),
            parts[2].parse().expect("file size"),
            make_internal_key(lo.as_bytes(), slo, ValueType::Value),
            make_internal_key(hi.as_bytes(), shi, ValueType::Value),
            slo,
            shi,
        );
        f.marked_for_compaction = marked;
        f
    }

    /// `k@s`.
    fn parse_key(s: &str) -> Vec<u8> {
        let (k, seq) = s.split_once('@').expect("k@seq");
        make_internal_key(k.as_bytes(), seq.parse().expect("seq"), ValueType::Value)
    }

    /// `k@s` for a Value key, RocksDB's debug string otherwise.
    fn show_key(ikey: &[u8]) -> String {
        match parse_internal_key(ikey) {
            Some(p) if p.value_type == ValueType::Value => {
                format!("{}@{}", String::from_utf8_lossy(p.user_key), p.sequence)
            }
            _ => internal_key_debug_string(ikey, false),
        }
    }

    fn show_file(f: &FileMetaData) -> String {
        format!(
            "{}:{}-{}:{}:{}-{}{}",
            f.number,
            String::from_utf8_lossy(extract_user_key(&f.smallest)),
            String::from_utf8_lossy(extract_user_key(&f.largest)),
            f.file_size,
            f.smallest_seqno,
            f.largest_seqno,
            if f.marked_for_compaction { "!" } else { "" }
        )
    }

    fn show_version(header: String, v: &Version, out: &mut Vec<String>) {
        out.push(header);
        let start = out.len();
        for l in 0..v.num_levels() {
            let files: Vec<String> = v.files(l).iter().map(|f| show_file(f)).collect();
            if !files.is_empty() {
                out.push(format!("  L{l}: {}", files.join(" ")));
            }
        }
        for l in 0..v.num_levels() {
            if let Some(k) = v.compact_cursor(l) {
                out.push(format!("  cursor L{l}: {}", show_key(k)));
            }
        }
        if out.len() == start {
            out.push("  (empty)".into());
        }
    }

    /// The case's builder (there is none before `num_levels=N` or after a
    /// failed `finish`).
    fn open<'a>(builder: &'a mut Option<VersionBuilder>, at: &str) -> &'a mut VersionBuilder {
        builder
            .as_mut()
            .unwrap_or_else(|| panic!("{at}: no builder (num_levels=N first)"))
    }

    fn run_case(case: &Case) -> Vec<String> {
        let mut out = Vec::new();
        let mut builder: Option<VersionBuilder> = None;
        let mut edit = VersionEdit::new();
        let mut versions: Vec<Arc<Version>> = Vec::new();
        for (i, line) in case.input.iter().enumerate() {
            let at = format!("version_builder.txt:{}", case.line + i);
            if line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [nl] if nl.starts_with("num_levels=") => {
                    let n = nl["num_levels=".len()..].parse().expect("num_levels");
                    let icmp = InternalKeyComparator::new(bytewise());
                    builder = Some(VersionBuilder::new(Arc::new(Version::new(icmp, n))));
                }
                ["edit", "add", level, files @ ..] => {
                    for spec in files {
                        edit.add_file(parse_level(level), parse_file(spec));
                    }
                }
                ["edit", "delete", level, numbers @ ..] => {
                    for n in numbers {
                        edit.delete_file(parse_level(level), n.parse().expect("file number"));
                    }
                }
                ["edit", "cursor", level, key] => {
                    edit.compact_cursors
                        .push((parse_level(level), parse_key(key)));
                }
                ["apply"] => {
                    let e = std::mem::take(&mut edit);
                    out.push(match open(&mut builder, &at).apply(&e) {
                        Ok(()) => "apply: ok".into(),
                        Err(err) => format!("apply: error: {err}"),
                    });
                }
                ["level_of", n] => {
                    let level = open(&mut builder, &at).level_of(n.parse().expect("file number"));
                    out.push(match level {
                        Some(l) => format!("level_of {n}: L{l}"),
                        None => format!("level_of {n}: none"),
                    });
                }
                ["has_invalid_levels"] => {
                    let invalid = open(&mut builder, &at).has_invalid_levels();
                    out.push(format!("has_invalid_levels: {invalid}"));
                }
                ["finish"] => {
                    let finished = builder
                        .take()
                        .unwrap_or_else(|| panic!("{at}: no builder (num_levels=N first)"))
                        .finish(versions.len() as u64 + 1);
                    match finished {
                        Ok(v) => {
                            let v = Arc::new(v);
                            versions.push(v.clone());
                            show_version(format!("finish v{}:", versions.len()), &v, &mut out);
                            builder = Some(VersionBuilder::new(v));
                        }
                        Err(err) => out.push(format!("finish: error: {err}")),
                    }
                }
                ["show", name] => {
                    let v = name
                        .strip_prefix('v')
                        .and_then(|i| i.parse::<usize>().ok())
                        .and_then(|i| versions.get(i.wrapping_sub(1)))
                        .unwrap_or_else(|| panic!("{at}: no version {name:?}"));
                    show_version(format!("show {name}:"), v, &mut out);
                }
                _ => panic!("{at}: unknown command {line:?}"),
            }
        }
        out
    }

    #[test]
    fn version_builder_golden() {
        crate::util::datadriven::run_file(TESTDATA, run_case);
    }
}
