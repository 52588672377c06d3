//! The compaction job: merges a compaction's inputs through the
//! compaction iterator into new table files (RocksDB's `CompactionJob`).
//!
//! The key space may be split into subcompactions (disjoint user-key
//! ranges, run on their own threads). Within one, an output file is cut
//! at a user-key boundary once it reaches the target file size or overlaps
//! too many grandparent bytes. Range tombstones are written as fragments
//! clipped to each output file's key range, so files never overlap; in the
//! oldest stripe of a bottommost compaction they are dropped, and within a
//! fragment only the newest tombstone of each stripe is kept.
//!
//! Invariants: every output file is synced before the job returns, and
//! the directory is synced once; output files of one job are disjoint and
//! ordered; a failed job returns the numbers of the files it created so
//! the caller can delete them (nothing is installed).

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::iterator::{CompactionIterStats, CompactionIterator, CompactionRules};
use super::{BeyondOutputLevel, Compaction};
use crate::error::Result;
use crate::format::dbformat::VALUE_TYPE_FOR_SEEK;
use crate::format::iterator::InternalIterator;
use crate::format::range_tombstones::{FragmentedRangeTombstoneList, TombstoneCursor};
use crate::format::{MAX_SEQUENCE_NUMBER, extract_user_key, make_internal_key};
use crate::fs::FileSystemRef;
use crate::table::{TableBuilder, TableInfo, TableOptions};
use crate::version::FileMetaData;

/// A subcompaction's user-key range `[lo, hi)` (`None` = unbounded).
type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Opens a merged iterator over the compaction's inputs.
pub type InputFactory<'a> = dyn Fn() -> Result<Box<dyn InternalIterator + Send + 'a>> + Sync + 'a;

/// What a job needs besides the compaction.
pub struct JobContext<'a> {
    pub fs: FileSystemRef,
    /// The directory of the outputs: table path `path_id`.
    pub dir: &'a Path,
    pub path_id: u32,
    pub table_options: TableOptions,
    pub rules: CompactionRules,
    /// Range tombstones of every input, merged.
    pub input_tombstones: Arc<FragmentedRangeTombstoneList>,
    /// Allocates an output file number (and protects it from deletion).
    pub new_file_number: &'a (dyn Fn() -> u64 + Sync),
    pub make_input: &'a InputFactory<'a>,
    pub max_subcompactions: usize,
    /// Unix seconds, recorded as the outputs' creation time.
    pub now_seconds: u64,
    /// Set when the DB closes: the job stops early with an error.
    pub cancel: Option<&'a std::sync::atomic::AtomicBool>,
    /// Who writes the outputs, recorded in their properties.
    pub identity: crate::table::factory::TableIdentity<'a>,
    /// Whole-file checksums of the outputs, when set.
    pub checksum_factory: Option<crate::util::file_checksum::FileChecksumGenFactoryRef>,
    /// How outputs are written (buffered, direct I/O or memory maps).
    pub write_mode: crate::fs::TableWriteMode,
    /// Write-back started every this many bytes of an output (0: never).
    pub bytes_per_sync: u64,
    /// Writes a line to the database's LOG (an output table written
    /// block-based instead of its column family's CuckooTable format).
    pub log: Option<&'a (dyn Fn(&str) + Sync)>,
}

impl std::fmt::Debug for JobContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobContext")
            .field("dir", &self.dir)
            .finish()
    }
}

/// What a finished job produced.
#[derive(Clone, Debug, Default)]
pub struct JobOutput {
    pub files: Vec<FileMetaData>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub iter_stats: CompactionIterStats,
    pub subcompactions: usize,
    pub micros: u64,
}

/// A failed job: the error and the files it had created.
#[derive(Debug)]
pub struct JobError {
    pub error: crate::error::Error,
    pub created: Vec<u64>,
}

/// Whether a written table should be compacted again soon: mostly
/// deletions (RocksDB's `CompactOnDeletionCollector` in spirit).
pub fn deletion_heavy(info: &TableInfo) -> bool {
    let p = &info.properties;
    p.num_entries >= 32 && p.num_deletions.saturating_mul(2) > p.num_entries
}

/// Bytes of the files of `v` from `first_level` down that lie wholly
/// inside one of the user-key ranges `[begin, end)`: what the range
/// tombstones of a table above them would let compactions drop.
pub fn bytes_covered_below<'a>(
    v: &crate::version::Version,
    first_level: usize,
    ranges: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
) -> u64 {
    let ucmp = v.icmp().user_comparator();
    // Overlapping ranges (a flush's are not fragmented) count a file once.
    let mut counted = std::collections::HashSet::new();
    let mut covered = 0u64;
    for (b, e) in ranges {
        for level in first_level..v.num_levels() {
            for f in v.overlapping_files(level, Some(b), Some(e)) {
                if ucmp.compare(extract_user_key(&f.smallest), b) != Ordering::Less
                    && ucmp.compare(extract_user_key(&f.largest), e) == Ordering::Less
                    && counted.insert(f.number)
                {
                    covered = covered.saturating_add(f.file_size);
                }
            }
        }
    }
    covered
}

/// Whether a table of `file_size` bytes whose range tombstones cover
/// `covered` bytes below it should be compacted down soon: at least as
/// much would be freed as the table holds (the range-tombstone side of
/// RocksDB's compensated file sizes).
pub fn range_deletions_heavy(covered: u64, file_size: u64) -> bool {
    covered > 0 && covered >= file_size
}

/// Runs `c`. REQUIRES: `c` is not deletion-only nor a trivial move.
pub fn run(c: &Compaction, ctx: &JobContext<'_>) -> std::result::Result<JobOutput, JobError> {
    let start = Instant::now();
    let ucmp = ctx.rules.ucmp.clone();
    let all = &ctx.input_tombstones;
    let beyond = BeyondOutputLevel::new(c, ucmp.clone());
    let bottommost = beyond.is_empty();
    // Which tombstones the outputs keep: the newest of each snapshot
    // stripe, none of the oldest stripe at the bottom.
    let kept = all.select(|seqs| {
        let mut out = Vec::new();
        let mut last_stripe = None;
        for &s in seqs {
            let stripe = ctx.rules.stripe(s);
            if last_stripe == Some(stripe) || (bottommost && stripe == 0) {
                continue;
            }
            last_stripe = Some(stripe);
            out.push(s);
        }
        out
    });
    let bounds = subcompaction_bounds(c, ctx, &ucmp);
    let ranges: Vec<KeyRange> = {
        let mut r = Vec::new();
        let mut lo = None;
        for b in &bounds {
            r.push((lo.clone(), Some(b.clone())));
            lo = Some(b.clone());
        }
        r.push((lo, None));
        r
    };
    let results: Vec<std::result::Result<(Vec<FileMetaData>, CompactionIterStats), JobError>> =
        if ranges.len() == 1 {
            vec![run_sub(c, ctx, all, &kept, None, None)]
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = ranges
                    .iter()
                    .map(|(lo, hi)| {
                        let kept = &kept;
                        s.spawn(move || run_sub(c, ctx, all, kept, lo.as_deref(), hi.as_deref()))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(JobError {
                                error: crate::error::Error::io(
                                    "subcompaction",
                                    std::io::Error::other("thread panicked"),
                                ),
                                created: Vec::new(),
                            })
                        })
                    })
                    .collect()
            })
        };
    let mut out = JobOutput {
        subcompactions: ranges.len(),
        bytes_read: c.input_bytes(),
        ..JobOutput::default()
    };
    let mut first_err = None;
    let mut created = Vec::new();
    for r in results {
        match r {
            Ok((files, stats)) => {
                created.extend(files.iter().map(|f| f.number));
                out.files.extend(files);
                out.iter_stats.add(&stats);
            }
            Err(e) => {
                created.extend(e.created.iter().copied());
                first_err.get_or_insert(e.error);
            }
        }
    }
    if first_err.is_none()
        && !out.files.is_empty()
        && let Err(e) = ctx.fs.sync_dir(ctx.dir)
    {
        first_err = Some(e);
    }
    if let Some(error) = first_err {
        return Err(JobError { error, created });
    }
    crate::crash_point!("compaction::after_outputs_sync");
    out.bytes_written = out.files.iter().map(|f| f.file_size).sum();
    out.micros = start.elapsed().as_micros() as u64;
    Ok(out)
}

/// Split points (user keys) for subcompactions: input file boundaries
/// spread evenly by count; none for small compactions.
fn subcompaction_bounds(
    c: &Compaction,
    ctx: &JobContext<'_>,
    ucmp: &crate::util::comparator::ComparatorRef,
) -> Vec<Vec<u8>> {
    let n = ctx.max_subcompactions.max(1);
    // Never into L0: its files must not share sequence ranges.
    if n == 1
        || c.output_level == 0
        || c.input_bytes() < c.target_file_size.min(64 << 20).saturating_mul(2)
    {
        return Vec::new();
    }
    let mut keys: Vec<Vec<u8>> = c
        .input_files()
        .flat_map(|(_, f)| {
            [
                extract_user_key(&f.smallest).to_vec(),
                extract_user_key(&f.largest).to_vec(),
            ]
        })
        .collect();
    keys.sort_by(|a, b| ucmp.compare(a, b));
    keys.dedup_by(|a, b| ucmp.compare(a, b) == Ordering::Equal);
    if keys.len() < 3 {
        return Vec::new();
    }
    // Interior keys only: the first and last would make empty ranges.
    let interior = &keys[1..keys.len() - 1];
    let parts = n.min(interior.len() + 1);
    let mut bounds: Vec<Vec<u8>> = (1..parts)
        .map(|i| interior[i * interior.len() / parts].clone())
        .collect();
    bounds.dedup();
    bounds
}

struct OutputFile {
    builder: TableBuilder,
    number: u64,
    checksum: Option<crate::fs::checksum_file::ChecksumHandle>,
    /// Lower clip bound of the file's tombstones.
    lo: Option<Vec<u8>>,
}

/// Writes the outputs of one subcompaction `[lo, hi)`.
fn run_sub(
    c: &Compaction,
    ctx: &JobContext<'_>,
    all: &Arc<FragmentedRangeTombstoneList>,
    kept: &FragmentedRangeTombstoneList,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> std::result::Result<(Vec<FileMetaData>, CompactionIterStats), JobError> {
    let mut created = Vec::new();
    let mut files = Vec::new();
    let r = (|| -> Result<CompactionIterStats> {
        let ucmp = ctx.rules.ucmp.clone();
        let mut input = (ctx.make_input)()?;
        match lo {
            Some(k) => input.seek(&make_internal_key(
                k,
                MAX_SEQUENCE_NUMBER,
                VALUE_TYPE_FOR_SEEK,
            )),
            None => input.seek_to_first(),
        }
        let tomb = TombstoneCursor::new(Arc::clone(all));
        let mut it = CompactionIterator::new(
            input,
            hi.map(<[u8]>::to_vec),
            ctx.rules.clone(),
            tomb,
            BeyondOutputLevel::new(c, ucmp.clone()),
        );
        let mut cur: Option<OutputFile> = None;
        let mut next_lo: Option<Vec<u8>> = lo.map(<[u8]>::to_vec);
        let mut last_user_key: Option<Vec<u8>> = None;
        let mut gp_index = 0;
        let mut gp_overlap = 0u64;
        let mut seen_key = false;
        let mut n = 0u64;
        while let Some((ikey, value)) = it.next_ref()? {
            n += 1;
            if n % 1024 == 0
                && ctx
                    .cancel
                    .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            {
                return Err(crate::error::Error::Incomplete(
                    "compaction cancelled: the database is closing".into(),
                ));
            }
            let uk = extract_user_key(ikey);
            let new_key = last_user_key.as_deref() != Some(uk);
            if new_key {
                // Grandparent overlap so far (RocksDB's ShouldStopBefore).
                while gp_index < c.grandparents.len()
                    && ucmp.compare(uk, extract_user_key(&c.grandparents[gp_index].largest))
                        == Ordering::Greater
                {
                    if seen_key {
                        gp_overlap += c.grandparents[gp_index].file_size;
                    }
                    gp_index += 1;
                }
                seen_key = true;
                // An L0 output is never split: L0 files must not share
                // sequence ranges, and one compaction's outputs all would.
                let splittable = cur.is_some() && c.output_level > 0;
                let too_big = splittable
                    && cur
                        .as_ref()
                        .is_some_and(|f| f.builder.estimated_file_size() >= c.target_file_size);
                let too_much_overlap = splittable && gp_overlap > c.max_grandparent_overlap_bytes;
                if too_big || too_much_overlap {
                    gp_overlap = 0;
                    if let Some(f) = cur.take() {
                        files.push(finish_file(c, ctx, kept, f, Some(uk))?);
                    }
                    next_lo = Some(uk.to_vec());
                }
                let mut k = last_user_key.take().unwrap_or_default();
                k.clear();
                k.extend_from_slice(uk);
                last_user_key = Some(k);
            }
            if cur.is_none() {
                cur = Some(open_file(ctx, next_lo.clone(), &mut created)?);
            }
            if let Some(f) = cur.as_mut() {
                f.builder.add(ikey, value)?;
            }
        }
        // Tombstones past the last point key go in the last file (or a
        // file of their own).
        if cur.is_none() && !kept.clipped(next_lo.as_deref(), hi).is_empty() {
            cur = Some(open_file(ctx, next_lo.clone(), &mut created)?);
        }
        if let Some(f) = cur.take() {
            files.push(finish_file(c, ctx, kept, f, hi)?);
        }
        Ok(it.stats)
    })();
    match r {
        Ok(stats) => Ok((files, stats)),
        Err(error) => Err(JobError { error, created }),
    }
}

fn open_file(
    ctx: &JobContext<'_>,
    lo: Option<Vec<u8>>,
    created: &mut Vec<u64>,
) -> Result<OutputFile> {
    let number = (ctx.new_file_number)();
    let path = ctx.dir.join(crate::filename::table_file_name(number));
    let file = crate::fs::new_table_output(&*ctx.fs, &path, ctx.write_mode, ctx.bytes_per_sync)?;
    created.push(number);
    let (file, checksum) =
        crate::fs::checksum_file::maybe_checksummed(file, ctx.checksum_factory.as_ref());
    let mut builder = TableBuilder::new(ctx.table_options.clone(), file)?;
    builder.set_identity(&ctx.identity, number);
    Ok(OutputFile {
        builder,
        number,
        checksum,
        lo,
    })
}

fn finish_file(
    c: &Compaction,
    ctx: &JobContext<'_>,
    kept: &FragmentedRangeTombstoneList,
    mut f: OutputFile,
    hi: Option<&[u8]>,
) -> Result<FileMetaData> {
    let tombstones = kept.clipped(f.lo.as_deref(), hi);
    for (b, e, s) in &tombstones {
        f.builder.add_range_tombstone(b, e, *s)?;
    }
    let info = f.builder.finish(true)?;
    if let (Some(reason), Some(log)) = (&info.block_based_fallback, ctx.log) {
        log(&format!(
            "[{}] compaction output table #{} is block-based, not CuckooTable: {reason}",
            ctx.table_options.column_family_name, f.number
        ));
    }
    let mut meta = FileMetaData::from_table(f.number, &info);
    meta.path_id = ctx.path_id;
    debug_assert!(
        meta.bounds_in_order(c.version.icmp()),
        "compaction output #{}: inverted bounds",
        f.number
    );
    if let Some(h) = &f.checksum {
        (meta.file_checksum, meta.file_checksum_func_name) = h.finish();
    }
    meta.file_creation_time = ctx.now_seconds;
    meta.oldest_ancester_time = c
        .input_files()
        .map(|(_, f)| f.oldest_ancester_time)
        .filter(|&t| t > 0)
        .min()
        .unwrap_or(ctx.now_seconds);
    // A file rewritten in place is not marked again (it would loop while
    // a snapshot keeps its deletions alive).
    // Range tombstones over data below are pushed down after it wherever
    // the file is (below it, nothing loops).
    let covered = bytes_covered_below(
        &c.version,
        c.output_level + 1,
        tombstones
            .iter()
            .map(|(b, e, _)| (b.as_slice(), e.as_slice())),
    );
    meta.marked_for_compaction = (c.output_level != c.start_level() && deletion_heavy(&info))
        || range_deletions_heavy(covered, meta.file_size);
    Ok(meta)
}
