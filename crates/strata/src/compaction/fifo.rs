//! The FIFO picker (RocksDB's `FIFOCompactionPicker`): every file lives in
//! L0; the oldest files are deleted, without rewriting anything, once they
//! are older than `ttl_seconds` or while the total size exceeds
//! `max_table_files_size`.
//!
//! Invariant: only a suffix of L0 (its oldest files) is ever deleted, so
//! what remains is always the newest data.

use std::sync::Arc;

use super::leveled::PickerInput;
use super::{Compaction, CompactionReason, LevelInputs};
use crate::version::FileMetaData;

/// Picks the files FIFO deletes next, if any: the expired ones, if
/// deleting them brings the total under `max_table_files_size`; else the
/// oldest files until it does (RocksDB's `PickTTLCompaction`, then
/// `PickSizeCompaction`).
pub fn pick(p: &PickerInput<'_>) -> Option<Compaction> {
    let l0 = p.version.files(0);
    let fifo = &p.opts.fifo;
    let total: u64 = l0.iter().map(|f| f.file_size).sum();
    // L0 is newest first: walk from the oldest end.
    let mut doomed: Vec<Arc<FileMetaData>> = Vec::new();
    let mut reason = CompactionReason::FifoTtl;
    if fifo.ttl_seconds > 0 {
        let mut left = total;
        for f in l0.iter().rev() {
            let expired = f.file_creation_time > 0
                && f.file_creation_time.saturating_add(fifo.ttl_seconds) < p.now_seconds;
            if !expired {
                break;
            }
            left -= f.file_size;
            doomed.push(Arc::clone(f));
        }
        if left > fifo.max_table_files_size {
            // Not enough: the size rule deletes these and more.
            doomed.clear();
        }
    }
    if doomed.is_empty() {
        let mut total = total;
        reason = CompactionReason::FifoMaxSize;
        for f in l0.iter().rev() {
            if total <= fifo.max_table_files_size {
                break;
            }
            total -= f.file_size;
            doomed.push(Arc::clone(f));
        }
    }
    if doomed.is_empty() || doomed.iter().any(|f| p.being_compacted.contains(&f.number)) {
        return None;
    }
    Some(Compaction {
        cf_id: p.cf_id,
        inputs: vec![LevelInputs {
            level: 0,
            files: doomed,
        }],
        output_level: 0,
        target_file_size: u64::MAX,
        max_grandparent_overlap_bytes: u64::MAX,
        grandparents: Vec::new(),
        reason,
        // RocksDB's L0 score: total size over the limit.
        score: total as f64 / fifo.max_table_files_size.max(1) as f64,
        deletion_only: true,
        allow_trivial_move: false,
        output_path_id: None,
        version: Arc::clone(p.version),
    })
}
