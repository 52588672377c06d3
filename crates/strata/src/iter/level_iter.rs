//! `LevelIterator`: one iterator over a level's files (sorted, disjoint),
//! opening each file only when the cursor reaches it (RocksDB's
//! `LevelIterator`). Keeps reads on deep levels from opening every table.
//!
//! Invariant: at most one file is open at a time; the iterator is valid
//! only when that file's iterator is; an error from opening or reading a
//! file stops the iterator (`status()` returns it) and is never skipped.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::InternalKeyComparator;
use crate::format::iterator::InternalIterator;
use crate::version::FileMetaData;

/// Opens the iterator of one file.
pub type FileOpener =
    Arc<dyn Fn(&FileMetaData) -> Result<Box<dyn InternalIterator + Send>> + Send + Sync>;

/// A cursor over all files of one level >= 1.
pub struct LevelIterator {
    icmp: InternalKeyComparator,
    files: Vec<Arc<FileMetaData>>,
    opener: FileOpener,
    index: usize,
    cur: Option<Box<dyn InternalIterator + Send>>,
    status: Option<Error>,
}

impl std::fmt::Debug for LevelIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelIterator")
            .field("files", &self.files.len())
            .field("index", &self.index)
            .finish()
    }
}

impl LevelIterator {
    /// REQUIRES: `files` sorted by key and disjoint.
    pub fn new(
        icmp: InternalKeyComparator,
        files: Vec<Arc<FileMetaData>>,
        opener: FileOpener,
    ) -> Self {
        debug_assert!(
            files
                .windows(2)
                .all(|w| icmp.compare(&w[0].largest, &w[1].smallest) == Ordering::Less)
        );
        LevelIterator {
            icmp,
            files,
            opener,
            index: 0,
            cur: None,
            status: None,
        }
    }

    fn open(&mut self, index: usize) -> bool {
        self.index = index;
        self.cur = None;
        if self.status.is_some() {
            return false;
        }
        let Some(f) = self.files.get(index) else {
            return false;
        };
        match (self.opener)(f) {
            Ok(it) => {
                self.cur = Some(it);
                true
            }
            Err(e) => {
                self.status = Some(e);
                false
            }
        }
    }

    fn cur_valid(&self) -> bool {
        self.cur.as_ref().is_some_and(|c| c.valid())
    }

    /// Keeps an error of the current file; true if one was found.
    fn take_error(&mut self) -> bool {
        if let Some(c) = &self.cur
            && let Err(e) = c.status()
        {
            self.status.get_or_insert(e);
            self.cur = None;
        }
        self.status.is_some()
    }

    fn skip_forward(&mut self) {
        while !self.cur_valid() {
            if self.take_error() || self.index + 1 >= self.files.len() {
                self.cur = None;
                return;
            }
            if self.open(self.index + 1)
                && let Some(c) = self.cur.as_mut()
            {
                c.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while !self.cur_valid() {
            if self.take_error() || self.index == 0 {
                self.cur = None;
                return;
            }
            if self.open(self.index - 1)
                && let Some(c) = self.cur.as_mut()
            {
                c.seek_to_last();
            }
        }
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.status.is_none() && self.cur_valid()
    }

    fn seek_to_first(&mut self) {
        if self.files.is_empty() {
            self.cur = None;
            return;
        }
        if self.open(0)
            && let Some(c) = self.cur.as_mut()
        {
            c.seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        if self.files.is_empty() {
            self.cur = None;
            return;
        }
        if self.open(self.files.len() - 1)
            && let Some(c) = self.cur.as_mut()
        {
            c.seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        let i = self
            .files
            .partition_point(|f| self.icmp.compare(&f.largest, target) == Ordering::Less);
        if i >= self.files.len() {
            self.cur = None;
            self.index = self.files.len().saturating_sub(1);
            return;
        }
        if self.open(i)
            && let Some(c) = self.cur.as_mut()
        {
            c.seek(target);
        }
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self
            .files
            .partition_point(|f| self.icmp.compare(&f.smallest, target) != Ordering::Greater);
        if i == 0 {
            self.cur = None;
            self.index = 0;
            return;
        }
        if self.open(i - 1)
            && let Some(c) = self.cur.as_mut()
        {
            c.seek_for_prev(target);
        }
        self.skip_backward();
    }

    fn next(&mut self) {
        if let Some(c) = self.cur.as_mut() {
            c.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(c) = self.cur.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| c.value())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.status {
            return Err(e.duplicate());
        }
        self.cur.as_ref().map_or(Ok(()), |c| c.status())
    }
}
