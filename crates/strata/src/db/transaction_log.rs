//! WAL tailing (RocksDB's `GetUpdatesSince` and its
//! `TransactionLogIteratorImpl`): the write batches of the alive and
//! archived WALs from a sequence number on, in order, for replication
//! and change capture.
//!
//! The iterator starts at the batch holding the requested sequence number
//! (which may start before it), or at the first batch after it when the
//! number fell in a gap (writes that skipped the WAL, ingested files) or
//! in WALs already purged: a follower compares `sequence` with what it
//! asked for. It never reads past the visible sequence number, so it never
//! returns a batch whose write is not yet visible. At the end it is not
//! valid with an OK status when it has returned everything visible, and
//! `TryAgain` when more was written in a WAL it does not know (create a
//! new iterator); after an OK end, `next` later picks up batches written
//! since, as RocksDB's does. Consecutive batches must be contiguous
//! (`sequence` = previous `sequence` + the sequence numbers the previous
//! batch took): a gap ends the iteration with `Corruption`, as in
//! RocksDB. A batch takes one per counted entry, except entries of a
//! WriteCommitted prepared section (WAL-only until their commit); a batch
//! holding a commit or rollback marker may take more (a WriteCommitted
//! commit applies its section after the marker; a WritePrepared decision
//! reserves one), so the batch after it may start further on.
//!
//! Invariant: `current_last_seq` (the last sequence number of the last
//! batch returned) only grows, and never passes the visible sequence
//! number at the time the batch was read.

use std::sync::Arc;

use super::files::{WalFile, WalFileType};
use super::two_phase::{RecordShape, record_shape};
use super::{DB, DbInner};
use crate::error::{Error, Result};
use crate::format::{SequenceNumber, WriteBatch};
use crate::wal::LogReader;
use crate::wal::reader::ReadError;

/// One batch from [`TransactionLogIterator::get_batch`].
#[derive(Clone, Debug)]
pub struct BatchResult {
    /// The sequence number of the batch's first record.
    pub sequence: SequenceNumber,
    pub write_batch: WriteBatch,
}

/// Iterator over the write batches of the WALs; see the module comment.
pub struct TransactionLogIterator {
    db: Arc<DbInner>,
    files: Vec<WalFile>,
    file_index: usize,
    reader: Option<LogReader>,
    /// File offset past the last record consumed from `files[file_index]`.
    offset: u64,
    start_seq: SequenceNumber,
    started: bool,
    batch: Option<WriteBatch>,
    current_seq: SequenceNumber,
    current_last_seq: SequenceNumber,
    /// The current batch holds a two-phase decision: the next may start
    /// after `current_last_seq + 1`.
    open_ended: bool,
    status: Option<Error>,
}

impl std::fmt::Debug for TransactionLogIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionLogIterator")
            .field("file_index", &self.file_index)
            .field("current_seq", &self.current_seq)
            .finish()
    }
}

/// A record read from the current WAL.
enum Read {
    Batch(WriteBatch, RecordShape),
    /// Nothing more in this file for now.
    End,
}

impl TransactionLogIterator {
    fn new(db: Arc<DbInner>, files: Vec<WalFile>, start_seq: SequenceNumber) -> Self {
        let mut it = TransactionLogIterator {
            db,
            files,
            file_index: 0,
            reader: None,
            offset: 0,
            start_seq,
            started: false,
            batch: None,
            current_seq: 0,
            current_last_seq: 0,
            open_ended: false,
            status: None,
        };
        it.seek_to_start();
        it
    }

    /// Whether a batch is available.
    pub fn valid(&self) -> bool {
        self.started && self.batch.is_some() && self.status.is_none()
    }

    /// Advances to the next batch (see the module comment for the end).
    pub fn next(&mut self) {
        if self.status.is_some() {
            return;
        }
        if !self.started {
            self.seek_to_start();
            return;
        }
        self.batch = None;
        loop {
            match self.read() {
                Err(e) => {
                    self.status = Some(e);
                    return;
                }
                Ok(Read::Batch(b, shape)) => {
                    let expected = self.current_last_seq + 1;
                    let contiguous =
                        b.sequence() == expected || (self.open_ended && b.sequence() > expected);
                    if !contiguous {
                        self.status = Some(Error::corruption(
                            &self.files[self.file_index].path_name,
                            self.offset,
                            format!(
                                "Gap in sequence number. Could not seek to required sequence \
                                 number: expected {expected}, found a batch at {}",
                                b.sequence()
                            ),
                        ));
                        return;
                    }
                    self.take(b, shape);
                    return;
                }
                Ok(Read::End) => {
                    if self.file_index + 1 < self.files.len() {
                        self.file_index += 1;
                        self.reader = None;
                        self.offset = 0;
                        continue;
                    }
                    if self.current_last_seq < self.visible() && !self.more_in_known_files() {
                        self.status = Some(Error::TryAgain(
                            "Create a new iterator to fetch the new tail.".into(),
                        ));
                    }
                    return;
                }
            }
        }
    }

    /// `Ok` unless iteration stopped on an error (a gap, damage, or
    /// `TryAgain`).
    pub fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }

    /// The current batch. REQUIRES: `valid()`.
    pub fn get_batch(&self) -> BatchResult {
        debug_assert!(self.valid());
        BatchResult {
            sequence: self.current_seq,
            write_batch: self.batch.clone().unwrap_or_default(),
        }
    }

    fn visible(&self) -> SequenceNumber {
        self.db
            .last_sequence
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether the last known WAL may still grow (it is the current one):
    /// then an early end is "nothing more yet", not a missing tail.
    fn more_in_known_files(&self) -> bool {
        self.files.last().is_some_and(|f| {
            f.file_type == WalFileType::Alive && f.log_number == self.db.lock_state().wal_number
        })
    }

    /// Makes `b` the current batch.
    fn take(&mut self, b: WriteBatch, shape: RecordShape) {
        self.current_seq = b.sequence();
        self.current_last_seq = last_sequence(&b, shape);
        self.open_ended = shape.decisions;
        self.batch = Some(b);
    }

    /// Reads up to the first batch that reaches `start_seq`.
    fn seek_to_start(&mut self) {
        self.batch = None;
        while !self.started {
            match self.read() {
                Err(e) => {
                    self.status = Some(e);
                    return;
                }
                Ok(Read::Batch(b, shape)) => {
                    let last = last_sequence(&b, shape);
                    let reaches = if shape.own_sequences == 0 {
                        b.sequence() >= self.start_seq
                    } else {
                        last >= self.start_seq
                    };
                    if reaches {
                        self.started = true;
                        self.take(b, shape);
                        return;
                    }
                    // Before the start: remember where contiguity resumes.
                    if last >= self.current_last_seq {
                        self.current_last_seq = last;
                        self.open_ended = shape.decisions;
                    }
                }
                Ok(Read::End) => {
                    if self.file_index + 1 < self.files.len() {
                        self.file_index += 1;
                        self.reader = None;
                        self.offset = 0;
                    } else {
                        return;
                    }
                }
            }
        }
    }

    /// The next batch of the current file, unless it would pass the
    /// visible sequence number (RocksDB's `RestrictedRead`, checked on the
    /// batch itself). Our own predecessor markers are skipped.
    fn read(&mut self) -> Result<Read> {
        let Some(file) = self.files.get(self.file_index).cloned() else {
            return Ok(Read::End);
        };
        loop {
            let reader = match &mut self.reader {
                Some(r) => r,
                None => {
                    let Some(r) = self.open(&file)? else {
                        // Purged meanwhile: nothing to read in it.
                        return Ok(Read::End);
                    };
                    self.reader.insert(r)
                }
            };
            let rec = match reader.read_record() {
                Ok(Some(rec)) => rec,
                // The end, or a record still being written: stop here and
                // resume from `offset` with a fresh reader next time.
                Ok(None) | Err(ReadError::TruncatedTail { .. }) => {
                    self.reader = None;
                    return Ok(Read::End);
                }
                // The last alive WAL is being written while we read it: a
                // record whose bytes are still being copied in (through the
                // mapped WAL, or a concurrent `write()`) fails its checksum
                // now and reads whole later. Stop here and read it again
                // next time; damage that stays is reported once the WAL is
                // no longer the last one this iterator knows.
                Err(ReadError::Corruption { .. })
                    if self.file_index + 1 == self.files.len()
                        && file.file_type == WalFileType::Alive =>
                {
                    self.reader = None;
                    return Ok(Read::End);
                }
                Err(e) => return Err(e.into_error(&file.path_name)),
            };
            let end = reader.end_offset();
            let b = WriteBatch::from_bytes(rec).map_err(|e| match e {
                Error::Corruption { msg, .. } => Error::corruption(&file.path_name, end, msg),
                e => e,
            })?;
            let shape =
                record_shape(&b, file.log_number).map_err(|e| e.relocate(&file.path_name, end))?;
            // Not visible yet (a write still inserting, in the pipelined
            // and unordered modes): leave it for a later read.
            let visible = self.visible();
            let beyond = if shape.own_sequences == 0 {
                b.sequence() > visible + 1
            } else {
                last_sequence(&b, shape) > visible
            };
            if beyond {
                self.reader = None;
                return Ok(Read::End);
            }
            self.offset = end;
            if super::wal_set::parse_predecessor(&b).is_some() {
                continue;
            }
            return Ok(Read::Batch(b, shape));
        }
    }

    /// A reader of `file` at `offset`, trying the archive when the WAL
    /// moved there; `None` if it is gone.
    fn open(&self, file: &WalFile) -> Result<Option<LogReader>> {
        let kinds: &[WalFileType] = match file.file_type {
            WalFileType::Alive => &[WalFileType::Alive, WalFileType::Archived],
            WalFileType::Archived => &[WalFileType::Archived],
        };
        for &kind in kinds {
            let path = self.db.wal_path(file.log_number, kind);
            match self.db.fs.new_sequential_file(&path) {
                Ok(f) => {
                    return LogReader::resume_at(f, file.log_number, self.offset)
                        .map(Some)
                        .map_err(|e| e.into_error(&file.path_name));
                }
                Err(Error::NotFound(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}

/// The last sequence number `b`'s own entries take (the one before it
/// when they take none).
fn last_sequence(b: &WriteBatch, shape: RecordShape) -> SequenceNumber {
    (b.sequence() + shape.own_sequences).saturating_sub(1)
}

impl DB {
    /// The write batches from sequence number `seq` on, from the alive and
    /// archived WALs (RocksDB's `GetUpdatesSince`; see
    /// `Options::wal_ttl_seconds` to keep WALs for it). `NotFound` if `seq`
    /// is not yet written.
    pub fn get_updates_since(&self, seq: SequenceNumber) -> Result<TransactionLogIterator> {
        let inner = &self.inner;
        if seq > self.latest_sequence_number() {
            return Err(Error::NotFound(
                "Requested sequence not yet written in the db".into(),
            ));
        }
        // WAL records still in the writer's buffer (manual_wal_flush)
        // cannot be read back.
        let alive = inner.lock_state().files.alive_wals().to_vec();
        let mut files = inner.list_wal_files(&alive)?;
        // RocksDB's RetainProbableWalFiles: from the last file that starts
        // at or before `seq`.
        let first = files
            .iter()
            .rposition(|f| f.start_sequence != 0 && f.start_sequence <= seq)
            .unwrap_or(0);
        files.drain(..first);
        Ok(TransactionLogIterator::new(Arc::clone(inner), files, seq))
    }

    /// The WAL being written now (RocksDB's `GetCurrentWalFile`).
    pub fn get_current_wal_file(&self) -> Result<WalFile> {
        let number = self.inner.lock_state().wal_number;
        self.inner
            .list_wal_files(&[number])?
            .into_iter()
            .find(|f| f.log_number == number)
            .ok_or_else(|| Error::NotFound(format!("current WAL {number}")))
    }
}
