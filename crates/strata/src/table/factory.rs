//! The table formats behind one interface (RocksDB's `TableFactory`,
//! `TableReader` and `TableBuilder`): a file is opened by its footer's
//! magic, block-based, PlainTable or CuckooTable, whatever the column
//! family writes (RocksDB's `AdaptiveTableFactory` behaviour); a builder
//! writes the format `TableOptions::cuckoo` or `TableOptions::plain` picks.
//!
//! Format-specific access (block handles, index blocks) goes through
//! [`Table::as_block_based`].

use std::collections::BTreeMap;
use std::sync::Arc;

use super::cuckoo::{CuckooTable, CuckooTableBuilder, CuckooTableIter};
use super::footer::{BlockHandle, Footer, TableKind, read_footer};
use super::options::TableOptions;
use super::plain::{PlainTable, PlainTableBuilder, PlainTableIter};
use super::table_builder::{BlockBasedTableBuilder, TableInfo};
use super::table_properties::TableProperties;
use super::table_reader::{BlockBasedTable, BlockBasedTableIter};
use crate::error::{Error, Result};
use crate::format::dbformat::extract_user_key;
use crate::format::iterator::InternalIterator;
use crate::fs::{RandomAccessFile, WritableFile};

/// An open table of either format.
#[derive(Debug)]
pub enum Table {
    BlockBased(Arc<BlockBasedTable>),
    Plain(Arc<PlainTable>),
    Cuckoo(Arc<CuckooTable>),
}

impl Table {
    /// Opens the table in `file` (`file_size` bytes; `name` is used in
    /// errors). `opts.comparator` must match the one the table was written
    /// with. A file an `SstFileWriter` made reads with its recorded global
    /// sequence number; [`Table::open_in_db`] is how a database opens its
    /// tables.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        name: &str,
        file_size: u64,
        opts: &TableOptions,
    ) -> Result<Table> {
        Self::open_in_db(file, name, file_size, opts, None)
    }

    /// Opens a table of a database whose MANIFEST gives it
    /// `largest_seqno` (an ingested file's global sequence number; see
    /// `BlockBasedTable::open_with_footer`).
    pub fn open_in_db(
        file: Arc<dyn RandomAccessFile>,
        name: &str,
        file_size: u64,
        opts: &TableOptions,
        largest_seqno: Option<u64>,
    ) -> Result<Table> {
        let footer = read_footer(&*file, name, file_size)?;
        Ok(match footer.kind {
            TableKind::BlockBased => {
                Table::BlockBased(Arc::new(BlockBasedTable::open_with_footer(
                    file,
                    name,
                    file_size,
                    opts,
                    largest_seqno,
                    footer,
                )?))
            }
            TableKind::Plain => Table::Plain(Arc::new(PlainTable::open(
                file, name, file_size, opts, footer,
            )?)),
            TableKind::Cuckoo => Table::Cuckoo(Arc::new(CuckooTable::open(
                file, name, file_size, opts, footer,
            )?)),
        })
    }

    /// The block-based reader, for block-level access (`None` for other
    /// formats).
    pub fn as_block_based(&self) -> Option<&Arc<BlockBasedTable>> {
        match self {
            Table::BlockBased(t) => Some(t),
            Table::Plain(_) | Table::Cuckoo(_) => None,
        }
    }

    pub fn kind(&self) -> TableKind {
        match self {
            Table::BlockBased(_) => TableKind::BlockBased,
            Table::Plain(_) => TableKind::Plain,
            Table::Cuckoo(_) => TableKind::Cuckoo,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Table::BlockBased(t) => t.name(),
            Table::Plain(t) => t.name(),
            Table::Cuckoo(t) => t.name(),
        }
    }

    pub fn file_size(&self) -> u64 {
        match self {
            Table::BlockBased(t) => t.file_size(),
            Table::Plain(t) => t.file_size(),
            Table::Cuckoo(t) => t.file_size(),
        }
    }

    pub fn footer(&self) -> &Footer {
        match self {
            Table::BlockBased(t) => t.footer(),
            Table::Plain(t) => t.footer(),
            Table::Cuckoo(t) => t.footer(),
        }
    }

    pub fn properties(&self) -> &TableProperties {
        match self {
            Table::BlockBased(t) => t.properties(),
            Table::Plain(t) => t.properties(),
            Table::Cuckoo(t) => t.properties(),
        }
    }

    /// Meta-index entries by name.
    pub fn meta_blocks(&self) -> &BTreeMap<String, BlockHandle> {
        match self {
            Table::BlockBased(t) => t.meta_blocks(),
            Table::Plain(t) => t.meta_blocks(),
            Table::Cuckoo(t) => t.meta_blocks(),
        }
    }

    /// Bytes the reader holds in memory outside the block cache.
    pub fn memory_usage(&self) -> u64 {
        match self {
            Table::BlockBased(t) => t.memory_usage(),
            Table::Plain(t) => t.memory_usage(),
            Table::Cuckoo(t) => t.memory_usage(),
        }
    }

    /// Range tombstones as (internal begin key, exclusive end user key);
    /// PlainTable stores none.
    pub fn range_tombstones(&self) -> &[(Vec<u8>, Vec<u8>)] {
        match self {
            Table::BlockBased(t) => t.range_tombstones(),
            Table::Plain(_) | Table::Cuckoo(_) => &[],
        }
    }

    /// The range tombstones fragmented, built once per reader; `None` when
    /// the table has none.
    pub fn fragmented_range_tombstones(
        &self,
    ) -> Option<&std::sync::Arc<crate::format::range_tombstones::FragmentedRangeTombstoneList>>
    {
        match self {
            Table::BlockBased(t) if !t.range_tombstones().is_empty() => {
                Some(t.fragmented_range_tombstones())
            }
            _ => None,
        }
    }

    /// The global sequence number of an ingested external file, if any.
    pub fn global_seqno(&self) -> Option<u64> {
        match self {
            Table::BlockBased(t) => t.global_seqno(),
            Table::Plain(_) | Table::Cuckoo(_) => None,
        }
    }

    /// Approximate file offset where entries at or after `ikey` begin.
    pub fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        match self {
            Table::BlockBased(t) => t.approximate_offset_of(ikey),
            Table::Plain(t) => t.approximate_offset_of(ikey),
            Table::Cuckoo(t) => t.approximate_offset_of(ikey),
        }
    }

    /// False only if the filter proves `user_key` is absent.
    pub fn key_may_match(&self, user_key: &[u8]) -> bool {
        self.key_may_match_with(user_key, false)
    }

    /// [`Table::key_may_match`]; with `no_io`, a filter part that would
    /// have to be read answers "may match".
    pub fn key_may_match_with(&self, user_key: &[u8], no_io: bool) -> bool {
        match self {
            Table::BlockBased(t) => t.key_may_match_with(user_key, no_io),
            Table::Plain(t) => t.key_may_match(user_key),
            // No filter: the hash probe is as cheap.
            Table::Cuckoo(_) => true,
        }
    }

    /// Starts loading what a lookup of `user_key` reads first (the
    /// PlainTable bloom line; nothing for block-based tables).
    pub fn prepare(&self, user_key: &[u8]) {
        if let Table::Plain(t) = self {
            t.prepare(user_key);
        }
    }

    /// False only if the filter proves no key shares `user_key`'s prefix.
    pub fn prefix_of_key_may_match(&self, user_key: &[u8]) -> bool {
        match self {
            Table::BlockBased(t) => t.prefix_of_key_may_match(user_key),
            Table::Plain(t) => t.prefix_of_key_may_match(user_key),
            Table::Cuckoo(_) => true,
        }
    }

    /// The first point entry at or after the internal key `target` if it
    /// has the same user key; consults the filter first.
    pub fn get(&self, target: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        match self {
            Table::BlockBased(t) => t.get(target),
            Table::Plain(t) => {
                let user_key = extract_user_key(target);
                if !t.key_may_match(user_key) {
                    return Ok(None);
                }
                let mut it = t.prefix_iter();
                it.seek(target);
                it.status()?;
                Ok((it.valid() && extract_user_key(it.key()) == user_key)
                    .then(|| (it.key().to_vec(), it.value().to_vec())))
            }
            Table::Cuckoo(t) => Ok(t.get(target)),
        }
    }

    /// A point lookup: calls `f` with each entry (internal key, value)
    /// from the first at or after the internal key `target`, in order,
    /// while they have `target`'s user key (by `ucmp`), until `f` returns
    /// true (a malformed key is passed to `f` too, which should stop). The caller has asked the filter ([`Table::key_may_match`]).
    /// A PlainTable is probed through its hash index without touching
    /// its reference count.
    /// With `no_io`, a block-based table reads no block missing from the
    /// block cache (`Incomplete`); a PlainTable, in memory once open, is
    /// read as usual.
    pub fn lookup(
        &self,
        target: &[u8],
        ucmp: &crate::util::comparator::ComparatorRef,
        no_io: bool,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        fn walk(
            it: &mut impl InternalIterator,
            target: &[u8],
            ucmp: &crate::util::comparator::ComparatorRef,
            f: &mut impl FnMut(&[u8], &[u8]) -> bool,
        ) -> Result<()> {
            let user_key = extract_user_key(target);
            it.seek(target);
            while it.valid() {
                let k = it.key();
                // A malformed key goes to `f` (which reports it) whatever
                // its bytes compare as.
                let ours = crate::format::parse_internal_key(k).is_none()
                    || ucmp.compare(extract_user_key(k), user_key).is_eq();
                if !ours || f(k, it.value()) {
                    break;
                }
                it.next();
            }
            it.status()
        }
        match self {
            Table::BlockBased(t) if no_io => walk(&mut t.no_io_iter(), target, ucmp, &mut f),
            Table::BlockBased(t) => walk(&mut t.iter(), target, ucmp, &mut f),
            Table::Plain(t) => t.with_lookup_iter(|it| walk(it, target, ucmp, &mut f)),
            // One entry per user key, found by the hash probe.
            Table::Cuckoo(t) => {
                if let Some((k, v)) = t.get(target) {
                    f(&k, &v);
                }
                Ok(())
            }
        }
    }

    /// An iterator over all point entries (total-order seeks).
    pub fn iter(&self) -> TableIter {
        match self {
            Table::BlockBased(t) => TableIter::BlockBased(t.iter()),
            Table::Plain(t) => TableIter::Plain(t.iter()),
            Table::Cuckoo(t) => TableIter::Cuckoo(t.iter()),
        }
    }

    /// An iterator for point lookups and prefix-confined reads: a seek
    /// whose target's prefix the table lacks may end invalid instead of
    /// on a key of another prefix (PlainTable's hash index).
    pub fn prefix_iter(&self) -> TableIter {
        match self {
            Table::BlockBased(t) => TableIter::BlockBased(t.iter()),
            Table::Plain(t) => TableIter::Plain(t.prefix_iter()),
            Table::Cuckoo(t) => TableIter::Cuckoo(t.iter()),
        }
    }

    /// An iterator for compaction input (no block cache; checksums always
    /// verified).
    pub fn compaction_iter(&self) -> TableIter {
        match self {
            Table::BlockBased(t) => TableIter::BlockBased(t.compaction_iter()),
            Table::Plain(t) => TableIter::Plain(t.iter()),
            Table::Cuckoo(t) => TableIter::Cuckoo(t.iter()),
        }
    }

    /// Reads every block (every entry, for PlainTable, which has no
    /// checksums; every bucket and hash probe, for CuckooTable) and
    /// verifies it.
    pub fn verify_checksums(&self) -> Result<()> {
        match self {
            Table::BlockBased(t) => t.verify_checksums(),
            Table::Plain(t) => t.verify(),
            Table::Cuckoo(t) => t.verify(),
        }
    }
}

/// An iterator over a table of either format.
// Not boxed: an iterator is created per table read, and the common
// (block-based) variant is the large one.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum TableIter {
    BlockBased(BlockBasedTableIter),
    Plain(PlainTableIter),
    Cuckoo(CuckooTableIter),
}

macro_rules! each {
    ($self:ident, $it:ident => $e:expr) => {
        match $self {
            TableIter::BlockBased($it) => $e,
            TableIter::Plain($it) => $e,
            TableIter::Cuckoo($it) => $e,
        }
    };
}

impl InternalIterator for TableIter {
    #[inline]
    fn valid(&self) -> bool {
        each!(self, it => it.valid())
    }
    fn seek_to_first(&mut self) {
        each!(self, it => it.seek_to_first())
    }
    fn seek_to_last(&mut self) {
        each!(self, it => it.seek_to_last())
    }
    fn seek(&mut self, target: &[u8]) {
        each!(self, it => it.seek(target))
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        each!(self, it => it.seek_for_prev(target))
    }
    #[inline]
    fn next(&mut self) {
        each!(self, it => it.next())
    }
    fn prev(&mut self) {
        each!(self, it => it.prev())
    }
    #[inline]
    fn key(&self) -> &[u8] {
        each!(self, it => it.key())
    }
    #[inline]
    fn value(&self) -> &[u8] {
        each!(self, it => it.value())
    }
    fn status(&self) -> Result<()> {
        each!(self, it => it.status())
    }
}

/// Who writes a table, as its properties record it (RocksDB's
/// `rocksdb.creating.db.identity`, `.session.identity`,
/// `.host.identity`).
#[derive(Clone, Copy, Debug)]
pub struct TableIdentity<'a> {
    pub db_id: &'a str,
    pub session_id: &'a str,
    /// The resolved `db_host_id` (empty: none recorded).
    pub host_id: &'a str,
}

/// Builds one table file in the format `TableOptions::cuckoo` or
/// `TableOptions::plain` picks.
#[derive(Debug)]
pub enum TableBuilder {
    BlockBased(Box<BlockBasedTableBuilder>),
    Plain(Box<PlainTableBuilder>),
    Cuckoo(Box<CuckooTableBuilder>),
}

impl TableBuilder {
    /// Starts a table written to `file`, which must be empty.
    pub fn new(opts: TableOptions, file: Box<dyn WritableFile>) -> Result<TableBuilder> {
        Ok(if opts.cuckoo.is_some() {
            TableBuilder::Cuckoo(Box::new(CuckooTableBuilder::new(opts, file)?))
        } else if opts.plain.is_some() {
            TableBuilder::Plain(Box::new(PlainTableBuilder::new(&opts, file)?))
        } else {
            TableBuilder::BlockBased(Box::new(BlockBasedTableBuilder::new(opts, file)?))
        })
    }

    /// Sets properties that identify the writer (db id, session, host,
    /// file number).
    pub fn set_identity(&mut self, id: &TableIdentity<'_>, file_number: u64) {
        match self {
            TableBuilder::BlockBased(b) => b.set_identity(id, file_number),
            TableBuilder::Plain(b) => b.set_identity(id, file_number),
            TableBuilder::Cuckoo(b) => b.set_identity(id, file_number),
        }
    }

    /// Adds a user-collected property.
    pub fn add_user_property(&mut self, name: &str, value: Vec<u8>) {
        match self {
            TableBuilder::BlockBased(b) => b.add_user_property(name, value),
            TableBuilder::Plain(b) => b.add_user_property(name, value),
            TableBuilder::Cuckoo(b) => b.add_user_property(name, value),
        }
    }

    /// Adds a point entry. REQUIRES: `ikey` is a valid internal key greater
    /// than every key added before.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        match self {
            TableBuilder::BlockBased(b) => b.add(ikey, value),
            TableBuilder::Plain(b) => b.add(ikey, value),
            TableBuilder::Cuckoo(b) => b.add(ikey, value),
        }
    }

    /// Adds a range tombstone `[begin, end)` at `seq` (`NotSupported` in a
    /// PlainTable, as in RocksDB).
    pub fn add_range_tombstone(&mut self, begin: &[u8], end: &[u8], seq: u64) -> Result<()> {
        match self {
            TableBuilder::BlockBased(b) => b.add_range_tombstone(begin, end, seq),
            TableBuilder::Plain(_) => Err(Error::NotSupported(
                "Range deletion unsupported in PlainTable".into(),
            )),
            // Buffered: the table is then written block-based.
            TableBuilder::Cuckoo(b) => b.add_range_tombstone(begin, end, seq),
        }
    }

    pub fn num_entries(&self) -> u64 {
        match self {
            TableBuilder::BlockBased(b) => b.num_entries(),
            TableBuilder::Plain(b) => b.num_entries(),
            TableBuilder::Cuckoo(b) => b.num_entries(),
        }
    }

    pub fn estimated_file_size(&self) -> u64 {
        match self {
            TableBuilder::BlockBased(b) => b.estimated_file_size(),
            TableBuilder::Plain(b) => b.estimated_file_size(),
            TableBuilder::Cuckoo(b) => b.estimated_file_size(),
        }
    }

    /// Writes the rest of the file, syncs if asked, and closes it.
    pub fn finish(self, sync: bool) -> Result<TableInfo> {
        match self {
            TableBuilder::BlockBased(b) => b.finish(sync),
            TableBuilder::Plain(b) => b.finish(sync),
            TableBuilder::Cuckoo(b) => b.finish(sync),
        }
    }

    /// The user key of the last point entry added.
    pub fn last_user_key(&self) -> &[u8] {
        match self {
            TableBuilder::BlockBased(b) => b.last_user_key(),
            TableBuilder::Plain(b) => b.last_user_key(),
            TableBuilder::Cuckoo(b) => b.last_user_key(),
        }
    }
}
