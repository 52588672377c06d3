//! Moving a level's files to another level without rewriting them
//! (RocksDB's `ReFitLevel`, what `CompactRangeOptions::change_level` does
//! after a manual compaction, and what `ldb change_compaction_style` and
//! `reduce_levels` rely on).
//!
//! Invariant: files move only across empty levels, so the LSM order
//! (newer data above older) holds after the move; the move is one
//! MANIFEST edit. REQUIRES: manual mode (no compaction runs meanwhile).

use super::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::version::VersionEdit;

impl DbInner {
    /// Moves every file of `level` of column family `cf_id` to
    /// `target_level`, or (negative) to the smallest empty level above it
    /// whose target size holds them.
    pub(crate) fn refit_level(
        &self,
        st: &mut DbState,
        cf_id: u32,
        level: usize,
        target_level: i32,
    ) -> Result<()> {
        let Some(cf) = st.cfs.get(&cf_id) else {
            return Ok(());
        };
        let opts = cf.options.clone();
        let Some(v) = st.versions.current(cf_id) else {
            return Ok(());
        };
        let n = v.num_levels();
        if target_level >= 0 && target_level as usize >= n {
            return Err(Error::InvalidArgument(
                "Target level exceeds number of levels".into(),
            ));
        }
        if level >= n || v.num_files(level) == 0 {
            return Ok(());
        }
        let to = if target_level < 0 {
            // RocksDB's FindMinimumEmptyLevelFitting.
            let (_, targets) = crate::compaction::score::level_targets(&v, &opts);
            let bytes = v.total_size(level);
            let mut to = level;
            for l in (1..level).rev() {
                if v.num_files(l) > 0 || targets[l] < bytes {
                    break;
                }
                to = l;
            }
            to
        } else {
            target_level as usize
        };
        if to == level {
            return Ok(());
        }
        let between = if to > level {
            if level == 0 {
                return Err(Error::NotSupported(
                    "Cannot change from level 0 to other levels.".into(),
                ));
            }
            level + 1..to + 1
        } else {
            to..level
        };
        if between.clone().any(|l| v.num_files(l) > 0) {
            return Err(Error::NotSupported(
                "Levels between source and target are not empty for a move.".into(),
            ));
        }
        let mut edit = VersionEdit::default();
        for f in v.files(level) {
            edit.delete_file(level as u32, f.number);
            edit.add_file(to as u32, (**f).clone());
        }
        st.versions.log_and_apply(cf_id, edit)?;
        self.info_log.log(&format!(
            "[{}] refitted {} files from level {level} to level {to}",
            cf_id,
            v.num_files(level)
        ));
        self.install_super_versions(st);
        Ok(())
    }
}
