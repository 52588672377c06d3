//! Which of the table paths (`db_paths`) a compaction writes to: RocksDB's
//! `LevelCompactionBuilder::GetPathId` and
//! `UniversalCompactionBuilder::GetPathId`. Flushes and ingested files
//! always go to path 0; the last path takes whatever fits nowhere else.
//!
//! Invariant: the result is below `paths.len()`.

use super::Compaction;
use crate::filename::TablePaths;
use crate::options::{ColumnFamilyOptions, CompactionStyle};

/// The path of `c`'s outputs under `opts`' compaction style.
pub fn output_path_id(c: &Compaction, paths: &TablePaths, opts: &ColumnFamilyOptions) -> u32 {
    let p = match opts.compaction_style {
        CompactionStyle::Level => leveled(paths, opts, c.output_level),
        CompactionStyle::Universal => universal(paths, opts, c.input_bytes()),
        CompactionStyle::Fifo | CompactionStyle::None => 0,
    };
    debug_assert!((p as usize) < paths.len());
    p
}

/// Leveled: levels are laid out path after path, L0 counted as big as L1
/// (`max_bytes_for_level_base`), each deeper level `multiplier` times the
/// one above; `level` goes to the first path whose remaining target holds
/// it.
pub fn leveled(paths: &TablePaths, opts: &ColumnFamilyOptions, level: usize) -> u32 {
    let last = (paths.len() - 1) as u32;
    let mut p = 0u32;
    let mut remaining = paths.target_size(0);
    let mut level_size = opts.max_bytes_for_level_base;
    let mut cur = 0usize;
    while p < last {
        if level_size <= remaining {
            if cur == level {
                return p;
            }
            remaining -= level_size;
            if cur > 0 {
                level_size = (level_size as f64 * opts.max_bytes_for_level_multiplier) as u64;
            }
            cur += 1;
            continue;
        }
        p += 1;
        remaining = paths.target_size(p);
    }
    p
}

/// Universal: the first path that holds a file of `file_size` and, with
/// the paths before it, the runs expected to be merged with it before it
/// is compacted again (`file_size * (100 - size_ratio) / 100`).
pub fn universal(paths: &TablePaths, opts: &ColumnFamilyOptions, file_size: u64) -> u32 {
    let last = (paths.len() - 1) as u32;
    let ratio = u64::from(opts.universal.size_ratio.min(100));
    let future = (u128::from(file_size) * u128::from(100 - ratio) / 100) as u64;
    let mut accumulated = 0u64;
    for p in 0..last {
        let target = paths.target_size(p);
        if target > file_size && accumulated.saturating_add(target - file_size) > future {
            return p;
        }
        accumulated = accumulated.saturating_add(target);
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::DbPath;
    use std::path::Path;

    fn paths(sizes: &[u64]) -> TablePaths {
        let list: Vec<DbPath> = sizes
            .iter()
            .enumerate()
            .map(|(i, s)| DbPath::new(format!("/p{i}"), *s))
            .collect();
        TablePaths::new(Path::new("/db"), &list)
    }

    #[test]
    fn one_path_takes_everything() {
        let opts = ColumnFamilyOptions::default();
        let p = TablePaths::new(Path::new("/db"), &[]);
        for level in 0..7 {
            assert_eq!(leveled(&p, &opts, level), 0);
        }
        assert_eq!(universal(&p, &opts, u64::MAX), 0);
    }

    #[test]
    fn leveled_lays_levels_out_path_after_path() {
        // L0 and L1 count 10 each, L2 100, L3 1000.
        let opts = ColumnFamilyOptions {
            max_bytes_for_level_base: 10,
            max_bytes_for_level_multiplier: 10.0,
            ..ColumnFamilyOptions::default()
        };
        // Path 0 holds L0 and L1 (20 bytes), path 1 holds L2 (100), the
        // rest falls to the last path.
        let p = paths(&[25, 150, 1]);
        let got: Vec<u32> = (0..6).map(|l| leveled(&p, &opts, l)).collect();
        assert_eq!(got, vec![0, 0, 1, 2, 2, 2]);
        // A first path too small even for L0 sends everything on.
        let p = paths(&[5, 1 << 40]);
        assert_eq!(leveled(&p, &opts, 0), 1);
    }

    #[test]
    fn universal_leaves_room_for_the_runs_it_will_meet() {
        let opts = ColumnFamilyOptions::default(); // size_ratio 1
        let p = paths(&[100, 1000, 10]);
        // 10 bytes fit path 0 with room for the 9.9 expected to join.
        assert_eq!(universal(&p, &opts, 10), 0);
        // 60 bytes fit path 0 but not with the 59 expected to join.
        assert_eq!(universal(&p, &opts, 60), 1);
        // Too big for every path but the last.
        assert_eq!(universal(&p, &opts, 5000), 2);
    }
}
