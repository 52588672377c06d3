//! External file ingestion (RocksDB's `IngestExternalFile` and its
//! `ExternalSstFileIngestionJob`): tables an `SstFileWriter` made (ours or
//! RocksDB's) join a column family's LSM tree without passing through the
//! write path.
//!
//! The steps, as RocksDB takes them:
//! 1. Prepare, without locks: read each file (version, global-sequence
//!    field, key range, every key at sequence 0), then link (`move_files`)
//!    or copy it into the database directory under a reserved file number
//!    kept in `pending_outputs`, synced, and sync the directory.
//! 2. Under `write_mutex` with no insert in flight (no write can run):
//!    sync the WAL (so that recovery after a crash never holds the files
//!    without every write acknowledged before them), then flush memtables
//!    whose keys overlap a file, or fail when `allow_blocking_flush` is
//!    off.
//! 3. Pick each file's level (the deepest it fits without overlapping
//!    keys above it) and sequence number (0 when nothing older overlaps
//!    and no snapshot must not see it, else the next sequence number),
//!    write the number into the file when asked, and log every column
//!    family's edit as one atomic MANIFEST group.
//! 4. Publish the consumed sequence numbers; on failure remove the copies.
//!
//! Invariants: an ingested file is in the MANIFEST only after its bytes
//! and directory entry are durable; its keys read at its assigned
//! sequence number (the MANIFEST's `largest_seqno`, see
//! `Table::open_in_db`); the MANIFEST's last sequence covers it; a file
//! that overlaps keys of the column family always takes a sequence
//! number above every existing key, and sits above them (L0, or a level
//! above every overlapping one).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering as AtomicOrdering;

use super::{ColumnFamilyHandle, DB, DbInner, DbState, PoisonError};
use crate::compaction_filter::unix_now_seconds;
use crate::error::{Error, Result};
use crate::format::iterator::InternalIterator;
use crate::format::{
    MAX_SEQUENCE_NUMBER, SequenceNumber, ValueType, make_internal_key, parse_internal_key,
};
use crate::fs::copy_file;
use crate::memtable::MemTable;
use crate::options::{CompactionStyle, IngestExternalFileOptions};
use crate::table::{Table, TableOptions};
use crate::util::comparator::ComparatorRef;
use crate::version::version::sstable_key_compare;
use crate::version::{FileMetaData, Version, VersionEdit};

/// One column family's files for [`DB::ingest_external_files`].
#[derive(Clone, Debug)]
pub struct IngestExternalFileArg {
    pub column_family: ColumnFamilyHandle,
    pub external_files: Vec<PathBuf>,
    pub options: IngestExternalFileOptions,
}

/// What the ingestion learned of one external file.
#[derive(Debug)]
struct IngestedFile {
    external_path: PathBuf,
    /// Its name in the database once linked or copied.
    internal_path: Option<PathBuf>,
    number: u64,
    file_size: u64,
    /// Internal keys; sequence 0 until assigned (a range tombstone's end
    /// sentinel keeps its maximal sequence).
    smallest: Vec<u8>,
    largest: Vec<u8>,
    /// The global sequence number written in the file (0 for a fresh one).
    original_seqno: SequenceNumber,
    /// File offset of the 8-byte global sequence number, if the file has
    /// the field where it can be rewritten.
    global_seqno_offset: Option<u64>,
    copied: bool,
    picked_level: usize,
    assigned_seqno: SequenceNumber,
}

/// One column family's share of an ingestion.
struct IngestionJob {
    cf_id: u32,
    cf_name: String,
    opts: IngestExternalFileOptions,
    ucmp: ComparatorRef,
    files: Vec<IngestedFile>,
    /// Two of the files overlap: all go to L0 with new sequence numbers.
    files_overlap: bool,
    consumed_seqnos: u64,
}

/// A file's `(smallest, largest)` internal keys.
pub(super) type KeySpan = (Vec<u8>, Vec<u8>);

/// The first and last internal keys of `table`'s entries (not checked
/// for shape), if it has any.
pub(super) fn point_key_bounds(table: &Table) -> Result<Option<KeySpan>> {
    let mut it = table.iter();
    it.seek_to_first();
    it.status()?;
    if !it.valid() {
        return Ok(None);
    }
    let first = it.key().to_vec();
    it.seek_to_last();
    it.status()?;
    Ok(Some((first, it.key().to_vec())))
}

/// `table`'s entries are in increasing internal-key order under `ucmp`
/// (a full scan); `InvalidArgument` naming both comparators if not.
fn check_ordered(
    table: &Table,
    ucmp: &ComparatorRef,
    name: &str,
    written_with: &[u8],
) -> Result<()> {
    let icmp = crate::format::InternalKeyComparator::new(ucmp.clone());
    let mut it = table.iter();
    it.seek_to_first();
    let mut prev: Option<Vec<u8>> = None;
    while it.valid() {
        if let Some(p) = &prev
            && icmp.compare(p, it.key()) != Ordering::Less
        {
            return Err(Error::InvalidArgument(format!(
                "{name}: written with comparator {} and not ordered by this column family's {}",
                String::from_utf8_lossy(written_with),
                ucmp.name()
            )));
        }
        prev = Some(it.key().to_vec());
        it.next();
    }
    it.status()
}

/// The internal-key span of `table`'s range tombstones (empty ones, which
/// cover nothing, left out: their bounds would invert the file's), as
/// RocksDB widens a file's bounds with them; `Err` on a damaged key.
pub(super) fn range_tombstone_bounds(
    table: &Table,
    ucmp: &ComparatorRef,
) -> std::result::Result<Option<KeySpan>, ()> {
    let mut bounds = None;
    for (begin, end) in table.range_tombstones() {
        let p = parse_internal_key(begin).ok_or(())?;
        if ucmp.compare(p.user_key, end) != Ordering::Less {
            continue;
        }
        let start = make_internal_key(p.user_key, p.sequence, ValueType::RangeDeletion);
        let end = make_internal_key(end, MAX_SEQUENCE_NUMBER, ValueType::RangeDeletion);
        bounds = union_bounds(ucmp, bounds, Some((start, end)));
    }
    Ok(bounds)
}

/// The smallest span holding both `(smallest, largest)` spans.
pub(super) fn union_bounds(
    ucmp: &ComparatorRef,
    a: Option<KeySpan>,
    b: Option<KeySpan>,
) -> Option<KeySpan> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some((lo1, hi1)), Some((lo2, hi2))) => Some((
            if sstable_key_compare(ucmp, &lo2, &lo1) == Ordering::Less {
                lo2
            } else {
                lo1
            },
            if sstable_key_compare(ucmp, &hi2, &hi1) == Ordering::Greater {
                hi2
            } else {
                hi1
            },
        )),
    }
}

fn user_key(ikey: &[u8]) -> &[u8] {
    crate::format::dbformat::extract_user_key(ikey)
}

/// Whether `t`'s keys or range tombstones touch `[lo, hi]` (user keys,
/// inclusive): RocksDB's `OverlapWithIterator` plus its range-deletion
/// check.
fn table_overlaps(t: &Arc<Table>, ucmp: &ComparatorRef, lo: &[u8], hi: &[u8]) -> Result<bool> {
    let mut it = t.iter();
    it.seek(&make_internal_key(
        lo,
        MAX_SEQUENCE_NUMBER,
        ValueType::Value,
    ));
    it.status()?;
    if it.valid() && ucmp.compare(user_key(it.key()), hi) != Ordering::Greater {
        return Ok(true);
    }
    Ok(t.range_tombstones()
        .iter()
        .any(|(b, e)| tombstone_overlaps(ucmp, user_key(b), e, lo, hi)))
}

/// Whether tombstone `[b, e)` meets `[lo, hi]`.
fn tombstone_overlaps(ucmp: &ComparatorRef, b: &[u8], e: &[u8], lo: &[u8], hi: &[u8]) -> bool {
    ucmp.compare(b, hi) != Ordering::Greater && ucmp.compare(e, lo) == Ordering::Greater
}

/// Whether memtable `m` holds a key or range tombstone in `[lo, hi]`.
fn memtable_overlaps(m: &Arc<MemTable>, ucmp: &ComparatorRef, lo: &[u8], hi: &[u8]) -> bool {
    let mut it = m.iter();
    it.seek(&make_internal_key(
        lo,
        MAX_SEQUENCE_NUMBER,
        ValueType::Value,
    ));
    if it.valid() && ucmp.compare(user_key(it.key()), hi) != Ordering::Greater {
        return true;
    }
    m.num_range_deletes() > 0
        && m.range_tombstones()
            .iter()
            .any(|(b, e)| tombstone_overlaps(ucmp, user_key(b), e, lo, hi))
}

impl IngestionJob {
    /// Reads every file and links or copies it into the database as
    /// tables `first_number..`. On error the caller calls `cleanup`.
    fn prepare(
        &mut self,
        db: &DbInner,
        paths: &[PathBuf],
        first_number: u64,
        topts: &TableOptions,
    ) -> Result<()> {
        for (i, path) in paths.iter().enumerate() {
            let f = self.file_info(db, path, first_number + i as u64, topts)?;
            self.files.push(f);
        }
        if self.files.len() > 1 {
            let mut sorted: Vec<&IngestedFile> = self.files.iter().collect();
            sorted.sort_by(|a, b| sstable_key_compare(&self.ucmp, &a.smallest, &b.smallest));
            self.files_overlap = sorted.windows(2).any(|w| {
                sstable_key_compare(&self.ucmp, &w[0].largest, &w[1].smallest) != Ordering::Less
            });
        }
        if self.opts.ingest_behind && self.files_overlap {
            return Err(Error::NotSupported("Files have overlapping ranges".into()));
        }
        for f in &mut self.files {
            // Ingested files join the first table path, as in RocksDB.
            let internal = db.table_paths.table_file(0, f.number);
            let mut copy = !self.opts.move_files;
            if self.opts.move_files {
                match db.fs.link_file(&f.external_path, &internal) {
                    Ok(()) => {
                        f.internal_path = Some(internal.clone());
                        // The application may not have synced the file:
                        // the database's copy must be durable.
                        db.fs.reopen_writable_file(&internal)?.sync()?;
                    }
                    Err(Error::NotSupported(_)) if self.opts.failed_move_fall_back_to_copy => {
                        copy = true;
                    }
                    Err(e) => return Err(e),
                }
            }
            if copy {
                f.internal_path = Some(internal.clone());
                copy_file(&*db.fs, &f.external_path, &internal, None)?;
                f.copied = true;
            }
            crate::crash_point!("ingest::after_file");
        }
        db.fs.sync_dir(db.table_paths.dir(0))
    }

    /// RocksDB's `GetIngestedFileInfo`: the facts about `path` that place
    /// it, with the file's own checks.
    fn file_info(
        &self,
        db: &DbInner,
        path: &Path,
        number: u64,
        topts: &TableOptions,
    ) -> Result<IngestedFile> {
        let file_size = db.fs.file_size(path)?;
        let file = db.fs.new_random_access_file(path)?;
        let name = path.to_string_lossy();
        // Read outside the block cache: the keys' sequence numbers may
        // change once the file is placed.
        let opts = TableOptions {
            block_cache: None,
            ..topts.clone()
        };
        let table = Arc::new(Table::open(file, &name, file_size, &opts)?);
        let Some(block_based) = table.as_block_based() else {
            return Err(Error::NotSupported(format!(
                "{name}: ingesting a {:?} table (external files must be block-based tables)",
                table.kind()
            )));
        };
        if self.opts.verify_checksums_before_ingest {
            table.verify_checksums()?;
        }
        let props = table.properties();
        // Tables open whatever comparator wrote them (as in RocksDB; a
        // database's own comparator is checked against its MANIFEST). A
        // foreign file written under another comparator's name may still
        // be ordered as this column family's: it is, or it is refused.
        if !props.comparator_name.is_empty()
            && props.comparator_name != topts.comparator.name().as_bytes()
        {
            check_ordered(&table, &topts.comparator, &name, &props.comparator_name)?;
        }
        let corrupt = |msg: &str| Err(Error::corruption(&name, 0, msg));
        let Some(version) = props.external_sst_version() else {
            return corrupt("External file version not found");
        };
        let (original_seqno, global_seqno_offset) = match version {
            2 => {
                let Some(seq) = props
                    .user_property(crate::table::table_properties::EXTERNAL_SST_GLOBAL_SEQNO)
                    .and_then(|v| crate::util::coding::decode_fixed64(v, 0))
                else {
                    return corrupt("External file global sequence number not found");
                };
                let Some(offset) = block_based.global_seqno_offset() else {
                    return corrupt("Was not able to find file global seqno field");
                };
                (seq, Some(offset))
            }
            1 => {
                if self.opts.allow_blocking_flush || self.opts.allow_global_seqno {
                    return Err(Error::InvalidArgument(format!(
                        "External SST file V1 does not support global seqno: {name}"
                    )));
                }
                (0, None)
            }
            v => {
                return Err(Error::InvalidArgument(format!(
                    "External file version is not supported: {v} ({name})"
                )));
            }
        };
        if props.column_family_id != crate::table::table_properties::UNKNOWN_COLUMN_FAMILY
            && props.column_family_id != u64::from(self.cf_id)
        {
            return Err(Error::InvalidArgument(format!(
                "External file column family id don't match: {name} was written for column \
                 family {} ({}), ingested into {} ({})",
                props.column_family_id,
                String::from_utf8_lossy(&props.column_family_name),
                self.cf_id,
                self.cf_name
            )));
        }
        if props.num_entries == 0 && props.num_range_deletions == 0 {
            return Err(Error::InvalidArgument(format!(
                "File contain no entries: {name}"
            )));
        }
        let mut bounds = point_key_bounds(&table)?;
        if let Some((first, last)) = &bounds {
            for k in [first, last] {
                match parse_internal_key(k) {
                    None => return corrupt("Corrupted key in external file."),
                    Some(p) if p.sequence != 0 => {
                        return corrupt("External file has non zero sequence number");
                    }
                    Some(_) => {}
                }
            }
        }
        if topts.plain.is_some() && !table.range_tombstones().is_empty() {
            // Its compactions would have to write them into PlainTable
            // files, which cannot hold them.
            return Err(Error::NotSupported(format!(
                "{name}: DeleteRange not supported for table type PlainTable in CF {}",
                topts.column_family_name
            )));
        }
        let Ok(tombstones) = range_tombstone_bounds(&table, &self.ucmp) else {
            return corrupt("Corrupted key in external file.");
        };
        bounds = union_bounds(&self.ucmp, bounds, tombstones);
        let Some((smallest, largest)) = bounds else {
            // Only empty range deletions: nothing to ingest.
            return Err(Error::InvalidArgument(format!(
                "File contain no entries: {name} (only empty range deletions)"
            )));
        };
        Ok(IngestedFile {
            external_path: path.to_path_buf(),
            internal_path: None,
            number,
            file_size,
            smallest,
            largest,
            original_seqno,
            global_seqno_offset,
            copied: false,
            picked_level: 0,
            assigned_seqno: 0,
        })
    }

    /// Whether a memtable of the column family holds keys in a file's
    /// range (RocksDB's `NeedsFlush`).
    fn needs_flush(&self, mems: &[Arc<MemTable>]) -> bool {
        self.files.iter().any(|f| {
            mems.iter().any(|m| {
                memtable_overlaps(m, &self.ucmp, user_key(&f.smallest), user_key(&f.largest))
            })
        })
    }

    /// Picks every file's level and sequence number against `version`
    /// and returns the edit that adds them. `last_seqno` is the last
    /// sequence number in use; it advances by the numbers this job takes.
    fn run(
        &mut self,
        db: &DbInner,
        st: &DbState,
        version: &Arc<Version>,
        force_global_seqno: bool,
        last_seqno: &mut SequenceNumber,
    ) -> Result<VersionEdit> {
        let cf = st.cfs.get(&self.cf_id).ok_or_else(|| {
            Error::InvalidArgument("cannot ingest an external file into a dropped CF".into())
        })?;
        let style = cf.options.compaction_style;
        let base_level = crate::compaction::score::level_targets(version, &cf.options).0;
        let topts = db
            .super_versions
            .load()
            .get(&self.cf_id)
            .map(|sv| Arc::clone(&sv.table_options))
            .ok_or_else(|| {
                Error::InvalidArgument("cannot ingest an external file into a dropped CF".into())
            })?;
        let mut edit = VersionEdit::default();
        let now = unix_now_seconds();
        for i in 0..self.files.len() {
            let assigned = if self.opts.ingest_behind {
                self.check_level_for_ingested_behind_file(st, version, i)?;
                0
            } else {
                self.assign_level_and_seqno(
                    db,
                    st,
                    version,
                    &topts,
                    style,
                    base_level,
                    force_global_seqno,
                    *last_seqno,
                    i,
                )?
            };
            let f = &mut self.files[i];
            for k in [&mut f.smallest, &mut f.largest] {
                if let Some(p) = parse_internal_key(k)
                    && p.sequence == 0
                {
                    let t = p.value_type;
                    let uk = p.user_key.to_vec();
                    *k = make_internal_key(&uk, assigned, t);
                }
            }
            self.assign_global_seqno(db, i, assigned)?;
            if assigned > *last_seqno {
                debug_assert_eq!(assigned, *last_seqno + 1);
                *last_seqno = assigned;
                self.consumed_seqnos += 1;
            }
            let f = &self.files[i];
            let mut meta = FileMetaData::new(
                f.number,
                f.file_size,
                f.smallest.clone(),
                f.largest.clone(),
                f.assigned_seqno,
                f.assigned_seqno,
            );
            // After the global sequence number was written into it.
            if let (Some(factory), Some(path)) =
                (&db.options.file_checksum_gen_factory, &f.internal_path)
                && let Some((sum, name)) =
                    crate::fs::checksum_file::file_checksum(&*db.fs, path, factory)?
            {
                meta.file_checksum = sum;
                meta.file_checksum_func_name = name;
            }
            meta.oldest_ancester_time = now;
            meta.file_creation_time = now;
            edit.new_files.push((f.picked_level as u32, meta));
        }
        Ok(edit)
    }

    /// RocksDB's `CheckLevelForIngestedBehindFile` for file `i`: it goes
    /// to the last level, at sequence number 0, under all existing data;
    /// no file above may hold entries at sequence 0 (they would tie).
    fn check_level_for_ingested_behind_file(
        &mut self,
        st: &DbState,
        version: &Version,
        i: usize,
    ) -> Result<()> {
        let lo = user_key(&self.files[i].smallest).to_vec();
        let hi = user_key(&self.files[i].largest).to_vec();
        let bottom = version.num_levels() - 1;
        if !self.fits_in_level(st, version, bottom, &lo, &hi) {
            return Err(Error::InvalidArgument(
                "Can't ingest_behind file as it doesn't fit at the bottommost level!".into(),
            ));
        }
        if (0..bottom).any(|l| version.files(l).iter().any(|f| f.smallest_seqno == 0)) {
            return Err(Error::InvalidArgument(
                "Can't ingest_behind file as despite allow_ingest_behind=true there are files \
                 with 0 seqno in database at upper levels!"
                    .into(),
            ));
        }
        self.files[i].picked_level = bottom;
        Ok(())
    }

    /// RocksDB's `AssignLevelAndSeqnoForIngestedFile` for file `i`.
    #[allow(clippy::too_many_arguments)]
    fn assign_level_and_seqno(
        &mut self,
        db: &DbInner,
        st: &DbState,
        version: &Arc<Version>,
        topts: &Arc<TableOptions>,
        style: CompactionStyle,
        base_level: usize,
        force_global_seqno: bool,
        last_seqno: SequenceNumber,
        i: usize,
    ) -> Result<SequenceNumber> {
        let lo = user_key(&self.files[i].smallest).to_vec();
        let hi = user_key(&self.files[i].largest).to_vec();
        let bottommost_only = self.opts.fail_if_not_bottommost_level;
        let not_bottommost = || {
            Err(Error::TryAgain(
                "Files cannot be ingested to Lmax. Please make sure key range of Lmax does not \
                 overlap with files to ingest."
                    .into(),
            ))
        };
        let mut assigned = 0;
        if force_global_seqno {
            assigned = last_seqno + 1;
            if style == CompactionStyle::Universal || self.files_overlap {
                if bottommost_only {
                    return not_bottommost();
                }
                self.files[i].picked_level = 0;
                return Ok(assigned);
            }
        }
        let mut overlap_with_db = false;
        let mut target_level = 0;
        for level in 0..version.num_levels() {
            if level > 0 && level < base_level {
                continue;
            }
            if version.num_files(level) > 0 {
                if self.level_overlaps(db, version, topts, level, &lo, &hi)? {
                    overlap_with_db = true;
                    break;
                }
                if style == CompactionStyle::Universal && level != 0 {
                    let level_largest = version
                        .files(level)
                        .iter()
                        .map(|f| f.largest_seqno)
                        .max()
                        .unwrap_or(0);
                    if level_largest != 0 && self.fits_in_level(st, version, level, &lo, &hi) {
                        assigned = level_largest;
                    } else {
                        continue;
                    }
                }
            } else if style == CompactionStyle::Universal {
                continue;
            }
            if self.fits_in_level(st, version, level, &lo, &hi) {
                target_level = level;
            }
        }
        if self.files_overlap {
            target_level = 0;
            assigned = last_seqno + 1;
        }
        if bottommost_only && target_level + 1 < version.num_levels() {
            return not_bottommost();
        }
        self.files[i].picked_level = target_level;
        if overlap_with_db && assigned == 0 {
            assigned = last_seqno + 1;
        }
        Ok(assigned)
    }

    /// Whether keys of `level` (point keys or range tombstones) fall in
    /// `[lo, hi]`.
    fn level_overlaps(
        &self,
        db: &DbInner,
        version: &Version,
        topts: &Arc<TableOptions>,
        level: usize,
        lo: &[u8],
        hi: &[u8],
    ) -> Result<bool> {
        for f in version.overlapping_files(level, Some(lo), Some(hi)) {
            let t = db.table_cache.get(&f, topts, level == 0)?;
            if table_overlaps(&t, &self.ucmp, lo, hi)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// RocksDB's `IngestedFileFitInLevel`: L0 always; another level when
    /// no file there, nor the output of a running compaction into it,
    /// overlaps `[lo, hi]`.
    fn fits_in_level(
        &self,
        st: &DbState,
        version: &Version,
        level: usize,
        lo: &[u8],
        hi: &[u8],
    ) -> bool {
        if level == 0 {
            return true;
        }
        if !version
            .overlapping_files(level, Some(lo), Some(hi))
            .is_empty()
        {
            return false;
        }
        st.bg_work
            .range_is_free(self.cf_id, level, lo, hi, &self.ucmp)
    }

    /// RocksDB's `AssignGlobalSeqnoForIngestedFile` for file `i`.
    fn assign_global_seqno(&mut self, db: &DbInner, i: usize, seqno: SequenceNumber) -> Result<()> {
        let f = &mut self.files[i];
        if f.original_seqno == seqno {
            f.assigned_seqno = seqno;
            return Ok(());
        }
        if !self.opts.allow_global_seqno {
            return Err(Error::InvalidArgument(
                "Global seqno is required, but disabled".into(),
            ));
        }
        let Some(offset) = f.global_seqno_offset else {
            return Err(Error::InvalidArgument(
                "Trying to set global seqno for a file that don't have a global seqno field".into(),
            ));
        };
        if self.opts.write_global_seqno
            && let Some(path) = &f.internal_path
        {
            match db.fs.overwrite_at(path, offset, &seqno.to_le_bytes()) {
                Ok(()) | Err(Error::NotSupported(_)) => {}
                Err(e) => return Err(e),
            }
        }
        f.assigned_seqno = seqno;
        Ok(())
    }

    /// Removes what `prepare` put into the database directory.
    fn cleanup(&self, db: &DbInner) {
        for f in &self.files {
            if let Some(p) = &f.internal_path {
                db.table_cache.evict(f.number);
                let _ = db.fs.delete_file(p);
            }
        }
    }
}

impl DbInner {
    /// RocksDB's `DBImpl::IngestExternalFiles`: see the module comment.
    pub(crate) fn ingest_external_files(&self, args: &[IngestExternalFileArg]) -> Result<()> {
        if self.read_only {
            return Err(Error::NotSupported(
                "ingestion into a read-only database".into(),
            ));
        }
        if args.is_empty() {
            return Err(Error::InvalidArgument("ingestion arg list is empty".into()));
        }
        let mut seen = HashSet::new();
        for (i, a) in args.iter().enumerate() {
            if !seen.insert(a.column_family.id) {
                return Err(Error::InvalidArgument(
                    "ingestion args have duplicate column families".into(),
                ));
            }
            if a.external_files.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "external_files[{i}] is empty"
                )));
            }
            if a.options.ingest_behind && !self.options.allow_ingest_behind {
                return Err(Error::InvalidArgument(
                    "can't ingest_behind file in DB with allow_ingest_behind=false".into(),
                ));
            }
        }
        let total: usize = args.iter().map(|a| a.external_files.len()).sum();
        let numbers: Vec<u64> = {
            let mut st = self.lock_state();
            (0..total)
                .map(|_| {
                    let n = st.versions.new_file_number();
                    st.files.add_pending_output(n);
                    n
                })
                .collect()
        };
        // File numbers are consecutive: nothing else took one while the
        // state lock was held.
        debug_assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1));
        let mut jobs = Vec::with_capacity(args.len());
        let mut result = Ok(());
        let mut next = numbers[0];
        for a in args {
            let svs = self.super_versions.load();
            let Some(sv) = svs.get(&a.column_family.id) else {
                result = Err(Error::InvalidArgument(format!(
                    "unknown column family {} ({})",
                    a.column_family.id, a.column_family.name
                )));
                break;
            };
            let mut job = IngestionJob {
                cf_id: a.column_family.id,
                cf_name: a.column_family.name.clone(),
                opts: a.options,
                ucmp: sv.options.comparator.clone(),
                files: Vec::new(),
                files_overlap: false,
                consumed_seqnos: 0,
            };
            result = job.prepare(self, &a.external_files, next, &sv.table_options);
            next += a.external_files.len() as u64;
            jobs.push(job);
            if result.is_err() {
                break;
            }
        }
        // Set when the MANIFEST write failed part-way: it may name the
        // files, which must then stay (the database stops; the next open
        // keeps them or removes them as orphans).
        let mut outcome_unknown = false;
        if result.is_ok() {
            result = self.commit_ingestion(&mut jobs, &mut outcome_unknown);
        }
        {
            let mut st = self.lock_state();
            for n in &numbers {
                st.files.release_pending_output(*n);
            }
        }
        match &result {
            Err(_) if outcome_unknown => {}
            Err(_) => jobs.iter().for_each(|j| j.cleanup(self)),
            Ok(()) => {
                for j in &jobs {
                    for f in &j.files {
                        self.info_log.log(&format!(
                            "[{}] [AddFile] External SST file {} was ingested in L{} with path \
                             {} (global_seqno={})",
                            j.cf_name,
                            f.external_path.display(),
                            f.picked_level,
                            f.internal_path
                                .as_deref()
                                .unwrap_or(Path::new(""))
                                .display(),
                            f.assigned_seqno
                        ));
                        if j.opts.move_files && !f.copied {
                            // Added: the caller's name for the file goes.
                            let _ = self.fs.delete_file(&f.external_path);
                        }
                    }
                }
            }
        }
        result
    }

    /// Steps 2-4 of the module comment, as the only writer.
    fn commit_ingestion(
        &self,
        jobs: &mut [IngestionJob],
        outcome_unknown: &mut bool,
    ) -> Result<()> {
        let mut writers = self
            .write_mutex
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.wait_for_pending_writes();
        // Stronger than RocksDB: every write acknowledged before the
        // ingestion is made durable first, so a crash never keeps the
        // files but loses earlier writes (recovery yields a prefix).
        // Writes that skipped the WAL are durable only once flushed.
        self.flush_wal(true)?;
        let mut st = self.lock_state();
        if let Some(e) = st.bg_error.get() {
            return Err(e.duplicate());
        }
        let mut to_flush = Vec::new();
        for j in jobs.iter() {
            let Some(cf) = st.cfs.get(&j.cf_id).filter(|c| !c.dropped) else {
                return Err(Error::InvalidArgument(
                    "cannot ingest an external file into a dropped CF".into(),
                ));
            };
            let mems: Vec<Arc<MemTable>> = std::iter::once(Arc::clone(&cf.mem))
                .chain(cf.imms.iter().map(|(m, _)| Arc::clone(m)))
                .collect();
            if j.needs_flush(&mems) {
                if !j.opts.allow_blocking_flush {
                    return Err(Error::InvalidArgument(
                        "External file requires flush".into(),
                    ));
                }
                to_flush.push(j.cf_id);
            }
        }
        if !to_flush.is_empty() {
            st = self.flush_for_ingestion(&mut writers, st, &to_flush)?;
        }
        // Snapshots must not see the files: every file takes a number.
        let have_snapshots = !st.snapshots.is_empty();
        let start_seqno = self.last_sequence.load(AtomicOrdering::Acquire);
        debug_assert_eq!(
            start_seqno,
            self.write_path.last_allocated.load(AtomicOrdering::Acquire)
        );
        let mut edits = Vec::with_capacity(jobs.len());
        for j in jobs.iter_mut() {
            let Some(version) = st.versions.current(j.cf_id) else {
                return Err(Error::InvalidArgument(
                    "cannot ingest an external file into a dropped CF".into(),
                ));
            };
            let mut last = start_seqno;
            let force = j.opts.snapshot_consistency && have_snapshots;
            let edit = j.run(self, &st, &version, force, &mut last)?;
            edits.push((j.cf_id, edit));
        }
        let consumed = jobs.iter().map(|j| j.consumed_seqnos).max().unwrap_or(0);
        let new_last = start_seqno + consumed;
        crate::crash_point!("ingest::before_manifest");
        // The MANIFEST's last sequence covers the ingested files' numbers.
        st.versions.set_last_sequence(new_last);
        if let Err(e) = st.versions.log_and_apply_group(edits) {
            if st.versions.background_error().is_some() {
                // The write failed, not the edit's checks: the MANIFEST
                // may hold it.
                *outcome_unknown = true;
                st.bg_error.get_or_insert(e.duplicate());
            }
            return Err(e);
        }
        crate::crash_point!("ingest::after_manifest");
        if consumed > 0 {
            self.write_path
                .last_allocated
                .store(new_last, AtomicOrdering::Release);
            self.write_path
                .acked
                .fetch_max(new_last, AtomicOrdering::AcqRel);
            self.last_sequence.store(new_last, AtomicOrdering::Release);
        }
        let stats_files: Vec<(u32, usize, u64, bool)> = jobs
            .iter()
            .flat_map(|j| {
                j.files
                    .iter()
                    .map(move |f| (j.cf_id, f.picked_level, f.file_size, f.copied))
            })
            .collect();
        for (cf, level, size, copied) in stats_files {
            let l = st.stats.entry(cf).or_default().level_mut(level);
            l.files_written += 1;
            if copied {
                l.bytes_written += size;
            } else {
                l.bytes_moved += size;
            }
        }
        // A file that took a new number sits above its column family's
        // unflushed data: compactions into L0 wait for that data's flush
        // (`straddles_memtables`), so start the flush now.
        let behind: Vec<u32> = jobs
            .iter()
            .filter(|j| j.files.iter().any(|f| f.assigned_seqno > start_seqno))
            .filter(|j| st.cfs.get(&j.cf_id).is_some_and(|c| !c.mem.is_empty()))
            .map(|j| j.cf_id)
            .collect();
        if !behind.is_empty()
            && let Err(e) = self.switch_memtables(&mut writers, &mut st, &behind)
        {
            // The ingestion is committed; the failed switch stopped writes
            // with a background error, which the next write reports.
            self.info_log
                .log(&format!("memtable switch after ingestion failed: {e}"));
        }
        self.install_super_versions(&mut st);
        self.recalculate_write_stall(&mut st);
        self.maybe_schedule_work(&mut st);
        Ok(())
    }

    /// Flushes the memtables of `cfs` and waits until they are in tables,
    /// keeping `write_mutex` (no write can start meanwhile).
    fn flush_for_ingestion<'a>(
        &'a self,
        stage: &mut super::write::WriteStage,
        mut st: std::sync::MutexGuard<'a, DbState>,
        cfs: &[u32],
    ) -> Result<std::sync::MutexGuard<'a, DbState>> {
        let switch: Vec<u32> = cfs
            .iter()
            .copied()
            .filter(|id| st.cfs.get(id).is_some_and(|c| !c.mem.is_empty()))
            .collect();
        if !switch.is_empty() {
            self.switch_memtables(stage, &mut st, &switch)?;
        }
        self.maybe_schedule_work(&mut st);
        self.bg_cv.notify_all();
        loop {
            if let Some(e) = st.bg_error.get() {
                return Err(e.duplicate());
            }
            if cfs
                .iter()
                .all(|id| st.cfs.get(id).is_none_or(|c| c.imms.is_empty()))
            {
                return Ok(st);
            }
            st = self.bg_cv.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl DB {
    /// Adds the tables at `paths` (made by an `SstFileWriter`, Strata's or
    /// RocksDB's) to the default column family: RocksDB's
    /// `IngestExternalFile`. Each file goes to the deepest level it fits;
    /// a file overlapping existing keys takes a new sequence number and
    /// hides them. The files are added together or not at all.
    pub fn ingest_external_file<P: AsRef<Path>>(
        &self,
        paths: &[P],
        opts: &IngestExternalFileOptions,
    ) -> Result<()> {
        let cf = self.default_cf();
        self.ingest_external_file_cf(&cf, paths, opts)
    }

    /// [`DB::ingest_external_file`] into column family `cf`.
    pub fn ingest_external_file_cf<P: AsRef<Path>>(
        &self,
        cf: &ColumnFamilyHandle,
        paths: &[P],
        opts: &IngestExternalFileOptions,
    ) -> Result<()> {
        self.ingest_external_files(&[IngestExternalFileArg {
            column_family: cf.clone(),
            external_files: paths.iter().map(|p| p.as_ref().to_path_buf()).collect(),
            options: *opts,
        }])
    }

    /// Ingests files into several column families atomically: after a
    /// crash either every column family has its files or none has
    /// (RocksDB's `IngestExternalFiles`).
    pub fn ingest_external_files(&self, args: &[IngestExternalFileArg]) -> Result<()> {
        self.inner.ingest_external_files(args)
    }
}
