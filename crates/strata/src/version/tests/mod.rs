//! Tests of the version set as a whole: lifecycle and recovery
//! (`lifecycle.rs`), damaged MANIFESTs (`corruption.rs`), simulated power
//! loss and injected faults (`crash.rs`) and MANIFESTs written by RocksDB
//! 7.8.3 (`rocksdb.rs`). Shared helpers live here.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::format::dbformat::{ValueType, make_internal_key};
use crate::fs::mem::MemFileSystem;
use crate::fs::{FileSystem, FileSystemRef};
use crate::util::comparator::bytewise;

mod corruption;
mod crash;
mod lifecycle;
mod rocksdb;

pub(super) fn db_path() -> PathBuf {
    PathBuf::from("/db")
}

/// A fresh in-memory file system with `/db`.
pub(super) fn mem() -> (MemFileSystem, FileSystemRef) {
    let m = MemFileSystem::new();
    m.create_dir_all(&db_path()).unwrap();
    let fs: FileSystemRef = Arc::new(m.clone());
    (m, fs)
}

/// A table file at `[lo, hi]` with one sequence number.
pub(super) fn meta(n: u64, lo: &str, hi: &str, seq: u64) -> FileMetaData {
    FileMetaData::new(
        n,
        1000 + n,
        make_internal_key(lo.as_bytes(), seq, ValueType::Value),
        make_internal_key(hi.as_bytes(), seq, ValueType::Value),
        seq,
        seq,
    )
}

/// Everything recovery must reproduce, as text (file numbers handed out
/// later are not part of it).
pub(super) fn fingerprint(vs: &VersionSet) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "last_seq {} min_log {} prev_log {} max_cf {}",
        vs.last_sequence(),
        vs.min_log_number_to_keep(),
        vs.prev_log_number(),
        vs.max_column_family()
    );
    for (id, name) in vs.column_families() {
        let cf = vs.column_family(id).unwrap();
        let _ = writeln!(
            s,
            "cf {id} {name} {} log {}",
            cf.comparator_name(),
            cf.log_number()
        );
        s.push_str(
            &cf.current()
                .debug_string(true)
                .replace(&format!("version# {}", cf.current().version_number()), ""),
        );
    }
    s
}

/// Recovers `/db` read-only (changing nothing).
pub(super) fn recover_ro(fs: &FileSystemRef) -> crate::error::Result<VersionSet> {
    VersionSet::recover(fs.clone(), Path::new("/db"), bytewise(), true)
}

/// Step `i` of a deterministic workload touching every kind of edit:
/// L0 flushes, compactions to L1, a column family created, written to in
/// an atomic group and dropped, log number and sequence changes.
pub(super) fn workload_step(vs: &mut VersionSet, i: u64) -> crate::error::Result<()> {
    let seq = 10 * (i + 1);
    let cf1 = vs.column_family_by_name("cf1").map(|c| c.id());
    match i % 16 {
        3 => vs.create_column_family("cf1").map(|_| ()),
        7 if cf1.is_some() => {
            let id = cf1.unwrap_or(0);
            let mut a = VersionEdit::new();
            a.add_file(0, meta(vs.new_file_number(), "a", "m", seq));
            a.last_sequence = Some(seq);
            let mut b = VersionEdit::new();
            b.add_file(
                1,
                meta(
                    vs.new_file_number(),
                    &format!("g{i:04}a"),
                    &format!("g{i:04}z"),
                    seq,
                ),
            );
            b.log_number = Some(i);
            vs.log_and_apply_group(vec![(0, a), (id, b)])
        }
        11 if cf1.is_some() => vs.drop_column_family(cf1.unwrap_or(0)),
        4 | 9 | 14 => {
            // Compaction: every L0 file into one L1 file of a fresh range.
            let v = vs.current(0).unwrap_or_else(|| unreachable!());
            let mut e = VersionEdit::new();
            for f in v.files(0) {
                e.delete_file(0, f.number);
            }
            e.add_file(
                1,
                meta(
                    vs.new_file_number(),
                    &format!("k{i:04}a"),
                    &format!("k{i:04}z"),
                    0,
                ),
            );
            vs.log_and_apply(0, e)
        }
        _ => {
            let mut e = VersionEdit::new();
            e.add_file(0, meta(vs.new_file_number(), "b", "y", seq));
            e.last_sequence = Some(seq);
            e.log_number = Some(i + 2);
            vs.log_and_apply(0, e)
        }
    }
}
