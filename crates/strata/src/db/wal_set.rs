//! The WAL files the write path owns: the current one, and closed ones
//! whose bytes may not be durable yet (RocksDB's `logs_` with their
//! `getting_synced` flags).
//!
//! A memtable switch does no fsync on the writer's thread: it hands the
//! old WAL's buffered bytes to the OS, keeps its handle here, and opens a
//! new WAL whose first record names its predecessor and the predecessor's
//! length (a `LogData`-only batch, which RocksDB replays as a no-op). The
//! closed WAL is synced later, by whichever comes first:
//! - a synced write, which syncs every closed WAL and the WAL directory
//!   before its own record (so a durable write never follows a
//!   non-durable one);
//! - the flush of the memtable it backs, before the flush's MANIFEST edit
//!   (RocksDB's `SyncClosedLogs`);
//! - `DB::flush_wal(true)` / `sync_wal`.
//!
//! Recovery checks the predecessor record: a WAL whose predecessor was cut
//! short by a power loss (the OS wrote the new WAL's bytes but not the old
//! one's tail) is not replayed, so the recovered state stays a prefix of
//! the acknowledged writes.
//!
//! Invariants: every closed WAL in `closed` is older than `current`; a WAL
//! leaves `closed` only once synced or obsolete; lock order is the DB
//! state mutex, then this set.

use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::format::write_batch::BatchRecord;
use crate::format::{SequenceNumber, WriteBatch};
use crate::fs::FileSystemRef;
use crate::util::sync::lock;
use crate::wal::LogWriter;

/// Marks the blob of a predecessor record.
const PREDECESSOR_TAG: &[u8] = b"strata.predecessor_wal:";

/// A closed WAL whose bytes may not be durable yet.
pub(crate) struct ClosedWal {
    pub(crate) number: u64,
    pub(crate) writer: Arc<Mutex<LogWriter>>,
}

#[derive(Default)]
pub(crate) struct WalSet {
    pub(crate) current: Option<LogWriter>,
    /// A write reached the current WAL (RocksDB's `!log_empty_`): until
    /// one does, a memtable switch keeps the current WAL for the next
    /// memtables instead of starting a new one.
    pub(crate) current_written: bool,
    /// The current WAL's directory entry is durable.
    pub(crate) dir_synced: bool,
    /// Closed WALs not yet synced, oldest first.
    pub(crate) closed: Vec<ClosedWal>,
}

impl WalSet {
    /// The current WAL (every read-write DB has one once open).
    pub(crate) fn current_mut(&mut self) -> Result<&mut LogWriter> {
        self.current
            .as_mut()
            .ok_or_else(|| crate::error::Error::InvalidArgument("no WAL is open".into()))
    }

    /// Makes every closed WAL and the current WAL's directory entry
    /// durable (what a synced write relies on besides its own record).
    pub(crate) fn sync_closed_and_dir(
        &mut self,
        fs: &FileSystemRef,
        wal_dir: &std::path::Path,
    ) -> Result<()> {
        let closed = !self.closed.is_empty();
        for c in &self.closed {
            lock(&c.writer).sync()?;
        }
        self.closed.clear();
        if !self.dir_synced {
            fs.sync_dir(wal_dir)?;
            self.dir_synced = true;
        }
        if closed {
            crate::crash_point!("wal::after_closed_wals_sync");
        }
        Ok(())
    }

    /// Forgets closed WALs below `min_wal` (obsolete: deleted or about to
    /// be, no sync needed).
    pub(crate) fn forget_below(&mut self, min_wal: u64) {
        self.closed.retain(|c| c.number >= min_wal);
    }
}

/// Syncs the closed WALs of `set` numbered below `below`, without holding
/// the set's lock during the syncs (writers go on), then syncs the WAL
/// directory (their entries) and drops them from the set.
pub(crate) fn sync_closed_below(
    set: &Mutex<WalSet>,
    below: u64,
    fs: &FileSystemRef,
    wal_dir: &std::path::Path,
) -> Result<()> {
    let todo: Vec<(u64, Arc<Mutex<LogWriter>>)> = lock(set)
        .closed
        .iter()
        .filter(|c| c.number < below)
        .map(|c| (c.number, Arc::clone(&c.writer)))
        .collect();
    if todo.is_empty() {
        return Ok(());
    }
    for (_, w) in &todo {
        lock(w).sync()?;
    }
    fs.sync_dir(wal_dir)?;
    crate::crash_point!("wal::after_closed_wals_sync");
    let mut s = lock(set);
    s.closed
        .retain(|c| !todo.iter().any(|(n, _)| *n == c.number));
    Ok(())
}

/// The first record of a new WAL: names the WAL before it and its length.
pub(crate) fn predecessor_record(seq: SequenceNumber, number: u64, size: u64) -> WriteBatch {
    let mut blob = PREDECESSOR_TAG.to_vec();
    blob.extend_from_slice(&number.to_le_bytes());
    blob.extend_from_slice(&size.to_le_bytes());
    let mut b = WriteBatch::new();
    b.put_log_data(&blob);
    b.set_sequence(seq);
    b
}

/// `(predecessor number, predecessor length)` if `batch` is a predecessor
/// record.
pub(crate) fn parse_predecessor(batch: &WriteBatch) -> Option<(u64, u64)> {
    if batch.count() != 0 {
        return None;
    }
    let mut it = batch.iter();
    let Some(Ok(BatchRecord::LogData(blob))) = it.next() else {
        return None;
    };
    if it.next().is_some() {
        return None;
    }
    let rest = blob.strip_prefix(PREDECESSOR_TAG)?;
    if rest.len() != 16 {
        return None;
    }
    let number = u64::from_le_bytes(rest[..8].try_into().ok()?);
    let size = u64::from_le_bytes(rest[8..].try_into().ok()?);
    Some((number, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predecessor_record_round_trips_and_is_a_no_op_batch() {
        let b = predecessor_record(42, 7, 123_456);
        assert_eq!(b.count(), 0);
        assert_eq!(b.sequence(), 42);
        let back = WriteBatch::from_bytes(b.data().to_vec()).unwrap();
        back.validate().unwrap();
        assert_eq!(parse_predecessor(&back), Some((7, 123_456)));
        let mut other = WriteBatch::new();
        other.put_log_data(b"strata.predecessor_wal:short");
        assert_eq!(parse_predecessor(&other), None);
        let mut put = WriteBatch::new();
        put.put(b"k", b"v");
        assert_eq!(parse_predecessor(&put), None);
    }
}
