//! Repair (RocksDB's `RepairDB`): rebuilds the MANIFEST of a database
//! whose MANIFEST is lost or damaged, from its table files and WALs.
//!
//! As RocksDB: each table is scanned (its column family from its
//! properties, its key and sequence ranges from its entries) and one that
//! cannot be read goes to `lost/`; each WAL is replayed into
//! per-column-family memtables that become new tables, then goes to
//! `lost/`; a fresh MANIFEST names every surviving table, with the largest
//! sequence number found as the last sequence; the old MANIFESTs go to
//! `lost/`.
//!
//! Unlike RocksDB, which sets the old MANIFESTs aside and installs an
//! empty database before it starts (a crash then leaves a database that
//! opens with nothing in it), the old MANIFEST, CURRENT and WALs stay in
//! place until CURRENT names the complete new MANIFEST: a crash before
//! that leaves the database as it was (orphan new tables aside), a crash
//! after it the repaired one, and running repair again is always safe
//! (an entry found twice is kept once). Tables the readable part of the
//! old MANIFESTs deleted are set aside, and an ingested table whose
//! global sequence number only the MANIFEST records (`write_global_seqno`
//! off) gets it from there.
//!
//! Unlike RocksDB, which puts every table into L0 whatever their sequence
//! ranges, a column family whose tables' sequence ranges overlap (tables
//! from several levels of a compacted tree, where L0's newest-first order
//! would read stale versions) is merged into one table in its last level,
//! every entry kept with its sequence number (compactions then do the
//! rest); its old tables then go to `lost/` too. A column family whose
//! tables' ranges are disjoint keeps them in L0, newest first.
//!
//! Invariants: nothing is deleted (only moved to `lost/`); the new
//! MANIFEST is written only after every table it names is complete, and
//! nothing moves to `lost/` before CURRENT names it, except a table that
//! cannot be read.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ColumnFamilyDescriptor;
use super::DEFAULT_COLUMN_FAMILY_NAME;
use crate::error::{Error, Result};
use crate::format::dbformat::is_empty_range_tombstone;
use crate::format::iterator::InternalIterator;
use crate::format::{InternalKeyComparator, MAX_SEQUENCE_NUMBER, WriteBatch, parse_internal_key};
use crate::fs::{FileSystemRef, default_fs};
use crate::memtable::MemTable;
use crate::options::{ColumnFamilyOptions, Options};
use crate::table::table_properties::UNKNOWN_COLUMN_FAMILY;
use crate::table::{Table, TableBuilder};
use crate::version::{
    FileMetaData, FileType, ManifestReader, VersionEdit, VersionSet, parse_file_name,
};

/// Rebuilds the MANIFEST of the database at `path` (RocksDB's
/// `RepairDB(dbname, options)`); column families found in tables take
/// `opts.cf`.
pub fn repair_db(opts: &Options, path: impl AsRef<Path>) -> Result<()> {
    repair_db_cf(opts, path, Vec::new())
}

/// [`repair_db`] with options for named column families (comparators,
/// merge operators): RocksDB's `RepairDB(dbname, db_options,
/// column_families, unknown_cf_opts)` with `opts.cf` for the unknown ones.
pub fn repair_db_cf(
    opts: &Options,
    path: impl AsRef<Path>,
    descs: Vec<ColumnFamilyDescriptor>,
) -> Result<()> {
    let fs = opts.fs.clone().unwrap_or_else(default_fs);
    let dbname = path.as_ref().to_path_buf();
    let _lock = fs.lock_file(&dbname.join("LOCK"))?;
    let info_log = super::info_log::InfoLog::open(
        Arc::clone(&fs),
        &dbname,
        opts.max_log_file_size,
        opts.log_file_time_to_roll,
        opts.keep_log_file_num,
    );
    let mut r = Repairer {
        info_log,
        fs: Arc::clone(&fs),
        dbname: dbname.clone(),
        wal_dir: opts.wal_dir.clone().unwrap_or_else(|| dbname.clone()),
        table_paths: crate::filename::TablePaths::new(&dbname, &opts.db_paths),
        cf_opts: descs.into_iter().map(|d| (d.name, d.options)).collect(),
        default_opts: opts.cf.clone(),
        tables: Vec::new(),
        next_file_number: 1,
        cf_names: BTreeMap::new(),
        recovered: 0,
        manifest_seqnos: HashMap::new(),
        set_aside: Vec::new(),
    };
    let result = r.run();
    match &result {
        Ok(()) => r.info_log.log(&format!(
            "**** Repaired {}; recovered {} files. Some data may have been lost. ****",
            dbname.display(),
            r.recovered
        )),
        Err(e) => r
            .info_log
            .log(&format!("repair of {} failed: {e}", dbname.display())),
    }
    r.info_log.close();
    result
}

/// A table file found: its number and path id.
type TableFile = (u64, u32);

/// A table that survived the scan.
struct TableInfo {
    meta: FileMetaData,
    cf_id: u32,
}

struct Repairer {
    info_log: super::info_log::InfoLog,
    fs: FileSystemRef,
    dbname: PathBuf,
    wal_dir: PathBuf,
    /// Where tables are looked for (`db_paths`), by path id.
    table_paths: crate::filename::TablePaths,
    cf_opts: HashMap<String, ColumnFamilyOptions>,
    default_opts: ColumnFamilyOptions,
    tables: Vec<TableInfo>,
    next_file_number: u64,
    /// Column families seen: id -> name (the default always).
    cf_names: BTreeMap<u32, String>,
    /// Tables the new MANIFEST names.
    recovered: usize,
    /// Largest sequence number the old MANIFESTs give each live table
    /// (an ingested table's global sequence number may live only there).
    manifest_seqnos: HashMap<u64, u64>,
    /// Files that move to `lost/` once CURRENT names the new MANIFEST.
    set_aside: Vec<PathBuf>,
}

impl Repairer {
    fn options_for(&self, name: &str) -> ColumnFamilyOptions {
        self.cf_opts
            .get(name)
            .cloned()
            .unwrap_or_else(|| self.default_opts.clone())
    }

    fn run(&mut self) -> Result<()> {
        self.cf_names
            .insert(0, DEFAULT_COLUMN_FAMILY_NAME.to_string());
        // Deletions made before (obsolete tables the database removed) are
        // made durable before anything else: a crash during the repair
        // must not bring those tables back.
        self.sync_dirs()?;
        let (manifests, wals, tables) = self.find_files()?;
        let obsolete = self.read_manifests(&manifests)?;
        for (n, path_id) in tables {
            let path = self.table_paths.table_file(path_id, n);
            if obsolete.contains(&n) {
                // A committed compaction (or deletion) replaced it, but its
                // deletion was not durable: resurrecting it would bring
                // back versions its replacement superseded.
                self.info_log.log(&format!(
                    "repair: table #{n} is obsolete (the MANIFEST deleted it): moved to lost/"
                ));
                self.set_aside.push(path);
                continue;
            }
            self.scan_table(n, path_id)?;
        }
        for w in wals {
            // A WAL that cannot be read is skipped, as RocksDB; unlike
            // RocksDB, a table that cannot be written fails the repair
            // (the WAL's writes would be lost with it).
            self.convert_wal(w)?;
            self.set_aside
                .push(self.wal_dir.join(crate::filename::log_file_name(w)));
        }
        self.write_descriptor()?;
        // The repaired database is the database now; what it replaced
        // moves to lost/ (a crash meanwhile leaves some of it in place: an
        // open ignores old MANIFESTs and WALs below the log number, and
        // deletes orphan tables; a repair keeps each entry once).
        for m in &manifests {
            self.set_aside.push(self.dbname.join(m));
        }
        for p in std::mem::take(&mut self.set_aside) {
            self.archive(&p);
        }
        self.sync_dirs()
    }

    /// Syncs the DB directory, the WAL directory and the table paths.
    fn sync_dirs(&self) -> Result<()> {
        self.fs.sync_dir(&self.dbname)?;
        if self.wal_dir != self.dbname {
            self.fs.sync_dir(&self.wal_dir)?;
        }
        for d in self.table_paths.distinct_dirs() {
            if d != self.dbname && d != self.wal_dir {
                self.fs.sync_dir(d)?;
            }
        }
        Ok(())
    }

    /// MANIFEST names, WAL numbers and table numbers with their path ids,
    /// as RocksDB's `FindFiles` (tables are looked for in the table paths
    /// only); also the next file number.
    fn find_files(&mut self) -> Result<(Vec<String>, Vec<u64>, Vec<TableFile>)> {
        let mut dirs = vec![self.dbname.clone()];
        if self.wal_dir != self.dbname {
            dirs.push(self.wal_dir.clone());
        }
        for d in self.table_paths.distinct_dirs() {
            if !dirs.iter().any(|x| x == d) {
                dirs.push(d.to_path_buf());
            }
        }
        let (mut manifests, mut wals, mut tables) = (Vec::new(), Vec::new(), Vec::new());
        let mut found = false;
        for (i, d) in dirs.iter().enumerate() {
            // Tables here belong to the first table path naming `d`.
            let path_id =
                (0..self.table_paths.len() as u32).find(|&p| self.table_paths.dir(p) == d);
            let names = match self.fs.children(d) {
                Ok(n) => n,
                // A table path never written to.
                Err(_) if i > 0 && path_id.is_some() && !self.fs.file_exists(d) => continue,
                Err(e) => return Err(e),
            };
            // The LOCK and LOG repair itself made do not count.
            found |= names.iter().any(|n| n != "LOCK" && !n.starts_with("LOG"));
            for n in names {
                let Some((number, kind)) = parse_file_name(&n) else {
                    continue;
                };
                match (kind, path_id) {
                    (FileType::Descriptor, _) if i == 0 => manifests.push(n),
                    (FileType::Wal, _) => {
                        self.next_file_number = self.next_file_number.max(number + 1);
                        wals.push(number);
                    }
                    (FileType::Table, Some(p)) => {
                        self.next_file_number = self.next_file_number.max(number + 1);
                        tables.push((number, p));
                    }
                    // Numbered files (OPTIONS, temporaries); not LOG.old.<time>,
                    // whose "number" is a timestamp.
                    (FileType::InfoLog | FileType::DbLock | FileType::Current, _) => {}
                    _ => {
                        self.next_file_number = self.next_file_number.max(number + 1);
                    }
                }
            }
        }
        if !found {
            return Err(Error::corruption(
                self.dbname.display(),
                0,
                "repair found no files",
            ));
        }
        wals.sort_unstable();
        wals.dedup();
        tables.sort_unstable();
        Ok((manifests, wals, tables))
    }

    /// The tables the readable part of the database's MANIFESTs deleted
    /// and did not add back (beyond RocksDB, whose repair takes every
    /// table file: a deletion a crash undid would resurrect them). A
    /// MANIFEST cut short still holds only committed deletions; the file
    /// numbers it handed out are never reused (`next_file_number` rises
    /// past its own). Also records each live table's largest sequence
    /// number (`manifest_seqnos`) and the live column families.
    fn read_manifests(&mut self, manifests: &[String]) -> Result<HashSet<u64>> {
        let mut dead = HashSet::new();
        let mut live = HashSet::new();
        let mut families = BTreeMap::new();
        for m in manifests {
            // A damaged MANIFEST is read up to the damage (repair is for
            // damaged MANIFESTs); an I/O error fails the repair, as what
            // it hides may be needed.
            let mut reader = match ManifestReader::open(&*self.fs, &self.dbname.join(m)) {
                Ok(r) => r,
                Err(e) if is_io_failure(&e) => return Err(e),
                Err(_) => continue,
            };
            loop {
                let edit = match reader.next_edit() {
                    Ok(Some((_, edit))) => edit,
                    Ok(None) => break,
                    Err(e) if is_io_failure(&e) => return Err(e),
                    Err(_) => break,
                };
                if let Some(name) = &edit.column_family_add {
                    families.insert(edit.column_family, name.clone());
                } else if edit.column_family_drop {
                    families.remove(&edit.column_family);
                }
                if let Some(n) = edit.next_file_number {
                    self.next_file_number = self.next_file_number.max(n);
                }
                for &(_, n) in &edit.deleted_files {
                    live.remove(&n);
                    dead.insert(n);
                }
                for (_, f) in &edit.new_files {
                    dead.remove(&f.number);
                    live.insert(f.number);
                    self.manifest_seqnos.insert(f.number, f.largest_seqno);
                }
            }
        }
        self.manifest_seqnos.retain(|n, _| live.contains(n));
        // Column families the MANIFEST knows, so a WAL's writes to one
        // with no table yet are kept (RocksDB's repair learns families
        // from tables only and drops such writes).
        for (id, name) in families {
            self.cf_names.entry(id).or_insert(name);
        }
        Ok(dead)
    }

    /// Moves `path` into `lost/` next to it (RocksDB's `ArchiveFile`).
    fn archive(&self, path: &Path) {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return;
        };
        let lost = dir.join("lost");
        let _ = self.fs.create_dir_all(&lost);
        let _ = self.fs.rename_file(path, &lost.join(name));
        crate::crash_point!("repair::after_archive");
    }

    /// Scans table `number`; a corrupt table goes to `lost/`. Any other
    /// failure (an I/O error, a format not supported) fails the repair
    /// rather than set aside a table that is fine (RocksDB sets aside
    /// whatever it fails to read).
    fn scan_table(&mut self, number: u64, path_id: u32) -> Result<()> {
        let path = self.table_paths.table_file(path_id, number);
        match self.scan(&path, number) {
            Ok(mut t) => {
                t.0.meta.path_id = path_id;
                self.cf_names
                    .entry(t.0.cf_id)
                    .or_insert_with(|| t.1.clone());
                self.tables.push(t.0);
            }
            Err(e) if e.is_corruption() => {
                self.info_log
                    .log(&format!("repair: table #{number}: ignoring {e}"));
                self.set_aside.push(path);
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// The metadata of the table at `path` and its column family's name.
    fn scan(&self, path: &Path, number: u64) -> Result<(TableInfo, String)> {
        let name = path.to_string_lossy().into_owned();
        let size = self.fs.file_size(path)?;
        let file = self.fs.new_random_access_file(path)?;
        let props = crate::table::table_reader::read_table_properties(&*file, &name, size)?;
        let mut cf_id = props.column_family_id;
        let mut cf_name = String::from_utf8_lossy(&props.column_family_name).into_owned();
        if cf_id == UNKNOWN_COLUMN_FAMILY {
            // A file of unknown family (an old format): the default one.
            cf_id = 0;
            cf_name = DEFAULT_COLUMN_FAMILY_NAME.to_string();
        }
        let cf_id = u32::try_from(cf_id)
            .map_err(|_| Error::corruption(&name, 0, format!("column family id {cf_id}")))?;
        if let Some(known) = self.cf_names.get(&cf_id)
            && *known != cf_name
        {
            return Err(Error::corruption(
                &name,
                0,
                format!(
                    "inconsistent column family name '{cf_name}'; expected '{known}' for column family id {cf_id}"
                ),
            ));
        }
        let opts = self.options_for(&cf_name);
        let table = Arc::new(self.open_table(
            file,
            &name,
            size,
            number,
            &opts.table_options(cf_id, &cf_name),
        )?);
        let icmp = InternalKeyComparator::new(opts.comparator.clone());
        let mut meta =
            FileMetaData::new(number, size, Vec::new(), Vec::new(), MAX_SEQUENCE_NUMBER, 0);
        let mut it = table.iter();
        it.seek_to_first();
        while it.valid() {
            let Some(p) = parse_internal_key(it.key()) else {
                it.next();
                continue;
            };
            extend(&icmp, &mut meta, it.key(), p.sequence);
            it.next();
        }
        it.status()?;
        for (begin, end) in table.range_tombstones() {
            if is_empty_range_tombstone(icmp.user_comparator().as_ref(), begin, end) {
                // Deletes nothing; would invert the bounds.
                continue;
            }
            if let Some(p) = parse_internal_key(begin) {
                extend(&icmp, &mut meta, begin, p.sequence);
                let end_key = crate::format::make_internal_key(
                    end,
                    MAX_SEQUENCE_NUMBER,
                    crate::format::ValueType::RangeDeletion,
                );
                extend(&icmp, &mut meta, &end_key, p.sequence);
            }
        }
        if meta.smallest.is_empty() {
            return Err(Error::corruption(&name, 0, "table has no entries"));
        }
        meta.oldest_ancester_time = props.creation_time;
        meta.file_creation_time = props.file_creation_time;
        Ok((TableInfo { meta, cf_id }, cf_name))
    }

    /// Opens table `number` as the database did: an ingested table whose
    /// global sequence number the old MANIFEST alone records reads with
    /// it (a table the MANIFEST contradicts reads as written).
    fn open_table(
        &self,
        file: Arc<dyn crate::fs::RandomAccessFile>,
        name: &str,
        size: u64,
        number: u64,
        topts: &crate::table::TableOptions,
    ) -> Result<Table> {
        if let Some(&seq) = self.manifest_seqnos.get(&number)
            && let Ok(t) = Table::open_in_db(Arc::clone(&file), name, size, topts, Some(seq))
        {
            return Ok(t);
        }
        Table::open(file, name, size, topts)
    }

    /// Replays WAL `number` into memtables and writes each non-empty one
    /// as a new table (RocksDB's `ConvertLogToTable`); damaged records
    /// are skipped and a missing WAL converts to nothing, but an I/O error
    /// (reading the WAL or writing a table) fails the repair rather than
    /// lose the WAL's writes.
    fn convert_wal(&mut self, number: u64) -> Result<()> {
        let path = self.wal_dir.join(crate::filename::log_file_name(number));
        let file = match self.fs.new_sequential_file(&path) {
            Ok(f) => f,
            Err(e) if e.is_not_found() => {
                self.info_log
                    .log(&format!("repair: WAL #{number}: ignoring {e}"));
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let mut reader = crate::wal::LogReader::new(file, number);
        let mut mems: super::MemTables = Default::default();
        for (&id, name) in &self.cf_names {
            let o = self.options_for(name);
            mems.insert(
                id,
                super::new_memtable(
                    &InternalKeyComparator::new(o.comparator.clone()),
                    &o,
                    None,
                    None,
                ),
            );
        }
        loop {
            let rec = match reader.read_record() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                // Checksummed reading skips damage (as RocksDB's reporter).
                Err(crate::wal::reader::ReadError::Corruption { .. }) => continue,
                Err(crate::wal::reader::ReadError::TruncatedTail { .. }) => break,
                // An I/O error is not the end of the log.
                Err(crate::wal::reader::ReadError::Other(e)) => return Err(e),
            };
            let Ok(batch) = WriteBatch::from_bytes(rec) else {
                continue;
            };
            // Records of column families that no longer exist are skipped
            // (a `skip` that skips nothing else), as recovery does.
            let none_flushed = |_: u32| false;
            if let Err(e) =
                super::write::insert_batch(&batch, batch.sequence(), &mems, Some(&none_flushed))
            {
                self.info_log
                    .log(&format!("repair: WAL #{number}: ignoring {e}"));
            }
        }
        for (id, mem) in mems {
            if mem.is_empty() {
                continue;
            }
            let name = self.cf_names.get(&id).cloned().unwrap_or_default();
            let file_number = self.next_file_number;
            self.next_file_number += 1;
            if let Some(meta) = self.write_memtable(&mem, id, &name, file_number)? {
                self.tables.push(TableInfo { meta, cf_id: id });
            }
        }
        Ok(())
    }

    /// Writes `mem` (every entry, every non-empty range tombstone) as
    /// table `number` of column family `cf_id`; `None` if that is nothing.
    fn write_memtable(
        &self,
        mem: &Arc<MemTable>,
        cf_id: u32,
        cf_name: &str,
        number: u64,
    ) -> Result<Option<FileMetaData>> {
        let o = self.options_for(cf_name);
        let mut tombstones = mem.range_tombstones();
        tombstones.retain(|(k, end)| !is_empty_range_tombstone(o.comparator.as_ref(), k, end));
        let point_entries = mem.num_entries() - mem.num_range_deletes();
        if point_entries == 0 && tombstones.is_empty() {
            return Ok(None);
        }
        // Written to the first table path, as flushes are.
        let path = self.table_paths.table_file(0, number);
        let file = self.fs.new_writable_file(&path)?;
        let mut b = TableBuilder::new(o.table_options(cf_id, cf_name), file)?;
        let mut it = mem.iter();
        it.seek_to_first();
        while it.valid() {
            b.add(it.key(), it.value())?;
            it.next();
        }
        for (k, end) in tombstones {
            if let Some(p) = parse_internal_key(&k) {
                b.add_range_tombstone(p.user_key, &end, p.sequence)?;
            }
        }
        let info = b.finish(true)?;
        self.fs.sync_dir(self.table_paths.dir(0))?;
        crate::crash_point!("repair::after_table");
        let now = crate::compaction_filter::unix_now_seconds();
        let mut meta = FileMetaData::from_table(number, &info);
        meta.file_creation_time = now;
        meta.oldest_ancester_time = now;
        Ok(Some(meta))
    }

    /// Writes the new MANIFEST (RocksDB's `AddTables`), merging the
    /// tables of column families whose sequence ranges overlap.
    fn write_descriptor(&mut self) -> Result<()> {
        let default_cmp = self.options_for(DEFAULT_COLUMN_FAMILY_NAME).comparator;
        let mut vopts = crate::version::VersionSetOptions::new(default_cmp);
        for name in self.cf_names.values() {
            let o = self.options_for(name);
            vopts
                .cf_comparators
                .insert(name.clone(), o.comparator.clone());
            vopts
                .cf_num_levels
                .insert(name.clone(), o.num_levels.max(1));
        }
        vopts.num_levels = self.default_opts.num_levels.max(1);
        // One MANIFEST, installed (CURRENT) only once complete; a new
        // number, as the old MANIFESTs stay until then.
        vopts.max_manifest_file_size = u64::MAX;
        let manifest_number = self.next_file_number;
        self.next_file_number += 1;
        let mut vs = VersionSet::create_uninstalled_at(
            Arc::clone(&self.fs),
            &self.dbname,
            vopts,
            manifest_number,
        )?;
        // Every WAL this repair read is in a table now: the edits record a
        // log number above them all, so none is replayed again, even one a
        // crash put back.
        let log_number = self.next_file_number;
        self.next_file_number += 1;
        vs.mark_file_number_used(log_number);
        let names: Vec<(u32, String)> =
            self.cf_names.iter().map(|(i, n)| (*i, n.clone())).collect();
        for (id, name) in &names {
            if *id != 0 {
                let cmp = self.options_for(name).comparator;
                vs.create_column_family_with_id(name, cmp, log_number, *id)?;
            }
        }
        let max_seq = self
            .tables
            .iter()
            .map(|t| t.meta.largest_seqno)
            .max()
            .unwrap_or(0);
        let mut by_cf: BTreeMap<u32, Vec<FileMetaData>> = BTreeMap::new();
        for t in std::mem::take(&mut self.tables) {
            by_cf.entry(t.cf_id).or_default().push(t.meta);
        }
        for (id, mut files) in by_cf {
            let name = self.cf_names.get(&id).cloned().unwrap_or_default();
            let o = self.options_for(&name);
            files.sort_by(crate::version::version::newest_first);
            let disjoint = files
                .windows(2)
                .all(|w| w[0].smallest_seqno > w[1].largest_seqno);
            let mut edit = VersionEdit {
                log_number: Some(log_number),
                ..VersionEdit::default()
            };
            if disjoint || files.len() == 1 {
                for f in files {
                    edit.new_files.push((0, f));
                }
            } else {
                let last = o.num_levels.max(1) - 1;
                for f in self.merge(id, &name, &o, &files, last)? {
                    edit.new_files.push((last as u32, f));
                }
                for f in &files {
                    self.set_aside
                        .push(self.table_paths.table_file(f.path_id, f.number));
                }
            }
            self.recovered += edit.new_files.len();
            vs.mark_file_number_used(self.next_file_number.saturating_sub(1));
            vs.set_last_sequence(max_seq);
            vs.log_and_apply(id, edit)?;
        }
        vs.mark_file_number_used(self.next_file_number.saturating_sub(1));
        vs.set_last_sequence(max_seq);
        // A last edit records the counters even without tables.
        vs.log_and_apply(0, VersionEdit::default())?;
        crate::crash_point!("repair::before_current");
        vs.install_current()
    }

    /// Merges `files` (column family `id`) into one table for `level`,
    /// keeping every entry with its sequence number (no compaction rule
    /// applied): an entry found twice (a repair that a crash interrupted
    /// after writing this table, run again) is written once, so nothing
    /// counts twice, merge operands included.
    fn merge(
        &mut self,
        id: u32,
        name: &str,
        o: &ColumnFamilyOptions,
        files: &[FileMetaData],
        _level: usize,
    ) -> Result<Vec<FileMetaData>> {
        let icmp = InternalKeyComparator::new(o.comparator.clone());
        let topts = o.table_options(id, name);
        let mut children: Vec<Box<dyn InternalIterator + Send>> = Vec::new();
        let mut tombstones: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for f in files {
            let path = self.table_paths.table_file(f.path_id, f.number);
            let file = self.fs.new_random_access_file(&path)?;
            let t = Arc::new(self.open_table(
                file,
                &path.to_string_lossy(),
                f.file_size,
                f.number,
                &topts,
            )?);
            tombstones.extend_from_slice(t.range_tombstones());
            children.push(Box::new(t.compaction_iter()));
        }
        tombstones.retain(|(k, end)| !is_empty_range_tombstone(o.comparator.as_ref(), k, end));
        tombstones.sort_by(|a, b| icmp.compare(&a.0, &b.0).then_with(|| a.1.cmp(&b.1)));
        tombstones.dedup();
        let number = self.next_file_number;
        self.next_file_number += 1;
        let path = self.table_paths.table_file(0, number);
        let mut b = TableBuilder::new(topts, self.fs.new_writable_file(&path)?)?;
        let mut it = Dedup::new(crate::iter::MergingIterator::new(icmp, children));
        it.seek_to_first();
        while it.valid() {
            b.add(it.key(), it.value())?;
            it.next();
        }
        it.status()?;
        for (k, end) in &tombstones {
            if let Some(p) = parse_internal_key(k) {
                b.add_range_tombstone(p.user_key, end, p.sequence)?;
            }
        }
        let info = b.finish(true)?;
        self.fs.sync_dir(self.table_paths.dir(0))?;
        crate::crash_point!("repair::after_table");
        let now = crate::compaction_filter::unix_now_seconds();
        let mut meta = FileMetaData::from_table(number, &info);
        meta.file_creation_time = now;
        meta.oldest_ancester_time = files
            .iter()
            .map(|f| f.oldest_ancester_time)
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(now);
        Ok(vec![meta])
    }
}

/// Whether `e` is the file system failing (not damaged or unsupported
/// content): repair stops rather than work around it.
fn is_io_failure(e: &Error) -> bool {
    matches!(e, Error::Io { .. } | Error::NoSpace(_))
}

/// Widens `meta`'s key and sequence ranges to take internal key `ikey`.
fn extend(icmp: &InternalKeyComparator, meta: &mut FileMetaData, ikey: &[u8], seq: u64) {
    if meta.smallest.is_empty() || icmp.compare(ikey, &meta.smallest).is_lt() {
        meta.smallest = ikey.to_vec();
    }
    if meta.largest.is_empty() || icmp.compare(ikey, &meta.largest).is_gt() {
        meta.largest = ikey.to_vec();
    }
    meta.smallest_seqno = meta.smallest_seqno.min(seq);
    meta.largest_seqno = meta.largest_seqno.max(seq);
}

/// Skips entries whose internal key equals the previous one: a repair
/// interrupted after a WAL became a table, but before the WAL was set
/// aside, finds the same entries twice at its next run (merge operands
/// must not apply twice). Forward iteration only, as compactions read.
struct Dedup<I> {
    inner: I,
    last: Vec<u8>,
}

impl<I: InternalIterator> Dedup<I> {
    fn new(inner: I) -> Self {
        Dedup {
            inner,
            last: Vec::new(),
        }
    }

    fn remember(&mut self) {
        self.last.clear();
        if self.inner.valid() {
            self.last.extend_from_slice(self.inner.key());
        }
    }
}

impl<I: InternalIterator> InternalIterator for Dedup<I> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.remember();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.remember();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
        self.remember();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target);
        self.remember();
    }
    fn next(&mut self) {
        self.inner.next();
        while self.inner.valid() && self.inner.key() == self.last.as_slice() {
            self.inner.next();
        }
        self.remember();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.remember();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}
