//! `strata --db=PATH COMMAND`: RocksDB's `ldb` admin commands with the same
//! syntax and output shapes (`key : value` for scan, `key ==> value` for
//! dump and load, `OK` after writes, `Failed: ...` and exit status 1 on
//! errors).
//!
//! As ldb, commands open an existing database with the options of its
//! newest OPTIONS file (compaction style, levels, triggers, ...; see
//! `db_options`) unless `--try_load_options=false`, plus a string-append
//! merge operator.

use std::io::{BufRead, Write};
use std::sync::Arc;

use strata::WriteBatch;
use strata::db::{BottommostLevelCompaction, CompactRangeOptions};
use strata::merge_operator::StringAppendOperator;
use strata::tools::format::write_batch::BatchRecord;
use strata::tools::wal::LogReader;
use strata::{
    ColumnFamilyDescriptor, ColumnFamilyHandle, ColumnFamilyOptions, DB, Options, ReadOptions,
    WriteOptions,
};

use crate::db_options;
use crate::flags::{Flags, from_hex, to_hex};

/// Commands that take `--db`.
pub const COMMANDS: &[&str] = &[
    "get",
    "put",
    "delete",
    "deleterange",
    "batchput",
    "scan",
    "dump",
    "query",
    "load",
    "list_column_families",
    "create_column_family",
    "drop_column_family",
    "dump_wal",
    "checkconsistency",
    "approxsize",
    "flush",
    "manifest_dump",
    "compact",
    "stats",
    "get_property",
    "list_live_files_metadata",
    "dump_live_files",
    "change_compaction_style",
    "reduce_levels",
    "update_manifest",
    "checkpoint",
    "write_extern_sst",
    "ingest_extern_sst",
    "backup",
    "restore",
    "file_checksum_dump",
    "idump",
    "repair",
    "list_file_range_deletes",
    "unsafe_remove_sst_file",
];

struct Ctx<'a> {
    f: &'a Flags,
    key_hex: bool,
    value_hex: bool,
    /// `--ttl`: values carry DBWithTTL's timestamp suffix.
    ttl: bool,
}

impl Ctx<'_> {
    fn key_in(&self, s: &str) -> Result<Vec<u8>, String> {
        if self.key_hex {
            from_hex(s)
        } else {
            Ok(s.as_bytes().to_vec())
        }
    }
    fn value_in(&self, s: &str) -> Result<Vec<u8>, String> {
        if self.value_hex {
            from_hex(s)
        } else {
            Ok(s.as_bytes().to_vec())
        }
    }
    /// A key as ldb prints it: `0x`-hex, or its bytes as they are.
    fn key_out(&self, b: &[u8]) -> Vec<u8> {
        if self.key_hex {
            format!("0x{}", to_hex(b)).into_bytes()
        } else {
            b.to_vec()
        }
    }
    fn value_out(&self, b: &[u8]) -> Vec<u8> {
        if self.value_hex {
            format!("0x{}", to_hex(b)).into_bytes()
        } else {
            b.to_vec()
        }
    }
    /// A value as stored: with `--ttl`, stamped with the current time.
    fn stored_in(&self, v: &[u8]) -> Vec<u8> {
        if self.ttl {
            strata::utilities::ttl::append_ts(v, strata::compaction_filter::unix_now_seconds())
        } else {
            v.to_vec()
        }
    }
    /// A stored value as read: with `--ttl`, without its timestamp.
    fn stored_out<'v>(&self, v: &'v [u8]) -> Result<&'v [u8], String> {
        if self.ttl {
            strata::utilities::ttl::strip_ts(v).map_err(err)
        } else {
            Ok(v)
        }
    }
}

/// `b` as C's `%s` prints it: up to its first NUL byte (ldb prints keys
/// and values with printf, so a binary key or value ends there).
fn c_str(b: &[u8]) -> &[u8] {
    b.iter().position(|&c| c == 0).map_or(b, |n| &b[..n])
}

/// Writes `parts` and a newline, each part cut as `%s` cuts it.
fn write_c_line(out: &mut impl Write, parts: &[&[u8]]) -> Result<(), String> {
    for p in parts {
        out.write_all(c_str(p)).map_err(|e| e.to_string())?;
    }
    out.write_all(b"\n").map_err(|e| e.to_string())
}

/// ldb's `--count_delim` tally (dump and idump): entries and bytes per
/// run of equal key prefixes, printed when the prefix changes. As ldb's
/// loop, a run whose prefix is empty is not printed: its counts carry
/// into the next run.
struct DelimTally {
    prefix: Vec<u8>,
    count: u64,
    bytes: u64,
}

impl DelimTally {
    fn new() -> DelimTally {
        DelimTally {
            prefix: Vec::new(),
            count: 0,
            bytes: 0,
        }
    }

    fn add(&mut self, out: &mut impl Write, prefix: Vec<u8>, bytes: u64) -> Result<(), String> {
        if !self.prefix.is_empty() && self.prefix != prefix {
            self.print(out)?;
            self.count = 1;
            self.bytes = bytes;
        } else {
            self.count += 1;
            self.bytes += bytes;
        }
        self.prefix = prefix;
        Ok(())
    }

    fn print(&self, out: &mut impl Write) -> Result<(), String> {
        write_c_line(
            out,
            &[
                &self.prefix,
                format!(" => count:{}\tsize:{}", self.count, self.bytes).as_bytes(),
            ],
        )
    }
}

/// The bytes of `b` before the first byte in `stops` (a C loop over a
/// NUL-terminated string).
fn c_prefix<'a>(b: &'a [u8], stops: &[u8]) -> &'a [u8] {
    &b[..b.iter().position(|x| stops.contains(x)).unwrap_or(b.len())]
}

/// `--count_delim[=C]`: C's first byte, '.' when given bare.
fn count_delim(f: &Flags) -> Option<u8> {
    match f.get("count_delim") {
        Some(v) if !v.is_empty() && v != "true" => Some(v.as_bytes()[0]),
        Some(_) => Some(b'.'),
        None => None,
    }
}

/// DBWithTTL's `kMinTimestamp`: ldb's default `--start_time`.
const TTL_MIN_TIMESTAMP: i64 = 1_368_146_402;

/// ldb's `TimeToHumanString` (`strftime("%c")`), in UTC (ldb prints
/// local time; the two agree where TZ is UTC).
fn human_time(t: i64) -> String {
    strata::tools::util::civil_time::CivilTime::from_unix(t).ctime()
}

fn err(e: strata::Error) -> String {
    format!("Failed: {e}")
}

fn cf_options() -> ColumnFamilyOptions {
    ColumnFamilyOptions {
        // ldb opens with a string-append merge operator; so do we, so that
        // merge operands written by either tool can be read.
        merge_operator: Some(Arc::new(StringAppendOperator::default())),
        ..ColumnFamilyOptions::default()
    }
}

/// A boolean flag that is on unless given as false (`--x=false`, `--nox`).
fn bool_default_true(f: &Flags, name: &str) -> Result<bool, String> {
    if f.get(name).is_some() || f.get(&format!("no{name}")).is_some() {
        f.bool(name)
    } else {
        Ok(true)
    }
}

/// The options to open `db` with, as ldb chooses them: the newest OPTIONS
/// file's settings (unless `--try_load_options=false`), then ldb's
/// command-line overrides, then RocksDB's sanitizing; one descriptor per
/// existing column family (just `default` for a new database).
fn db_options(db: &str, f: &Flags) -> Result<(Options, Vec<ColumnFamilyDescriptor>), String> {
    let mut opts = Options {
        create_if_missing: f.bool("create_if_missing")?,
        cf: cf_options(),
        ..Options::default()
    };
    opts.create_missing_column_families = false;
    let names = match DB::list_column_families(&opts, db) {
        Ok(n) => n,
        Err(_) => vec!["default".to_string()],
    };
    let file = if bool_default_true(f, "try_load_options")? {
        db_options::read_latest(std::path::Path::new(db))?
    } else {
        None
    };
    if let Some(file) = &file {
        file.apply_db(&mut opts).map_err(db_options::failed)?;
    }
    let mut descs = Vec::with_capacity(names.len());
    for name in &names {
        let mut o = cf_options();
        if let Some(file) = &file {
            file.apply_cf(name, &mut o).map_err(db_options::failed)?;
        }
        db_options::apply_overrides(f, &mut o)?;
        db_options::sanitize(&mut o);
        if name == "default" {
            opts.cf = o.clone();
        }
        descs.push(ColumnFamilyDescriptor::new(name.clone(), o));
    }
    Ok((opts, descs))
}

/// Opens the database read-write with `adjust` applied to every column
/// family's options (ldb's `OverrideBaseCFOptions`).
fn open_adjusted(
    db: &str,
    f: &Flags,
    adjust: impl Fn(&mut ColumnFamilyOptions),
) -> Result<DB, String> {
    let (mut opts, mut descs) = db_options(db, f)?;
    adjust(&mut opts.cf);
    for d in &mut descs {
        adjust(&mut d.options);
    }
    DB::open_cf(opts, db, descs).map_err(err)
}

/// `files per level ...: a,b,c` over every level of `cf`.
fn files_per_level(db: &DB, cf: &ColumnFamilyHandle) -> Result<Vec<usize>, String> {
    let n = db.number_levels(cf).map_err(err)?;
    (0..n)
        .map(|l| {
            let v = db
                .property_cf(cf, &format!("rocksdb.num-files-at-level{l}"))
                .unwrap_or_default();
            v.trim()
                .parse()
                .map_err(|_| format!("Failed: bad level count {v}"))
        })
        .collect()
}

fn join(v: &[usize]) -> String {
    v.iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn open(db: &str, f: &Flags, read_only: bool) -> Result<DB, String> {
    open_with(db, f, read_only).map(|(d, _)| d)
}

/// Opens the database, also returning the options of its column families.
fn open_with(
    db: &str,
    f: &Flags,
    read_only: bool,
) -> Result<(DB, Vec<ColumnFamilyDescriptor>), String> {
    let (opts, descs) = db_options(db, f)?;
    let r = if read_only {
        DB::open_cf_read_only(opts, db, descs.clone())
    } else {
        DB::open_cf(opts, db, descs.clone())
    };
    r.map(|d| (d, descs)).map_err(err)
}

fn cf(db: &DB, f: &Flags) -> Result<ColumnFamilyHandle, String> {
    match f.get("column_family") {
        None => Ok(db.default_cf()),
        Some(name) => db
            .cf_handle(name)
            .ok_or_else(|| format!("Failed: Column family not found: {name}")),
    }
}

/// Runs one ldb command; `args` are the positional arguments after it.
pub fn run(db_path: &str, cmd: &str, args: &[String], f: &Flags) -> Result<(), String> {
    let hex = f.bool("hex")?;
    let c = Ctx {
        f,
        key_hex: hex || f.bool("key_hex")?,
        value_hex: hex || f.bool("value_hex")?,
        ttl: f.bool("ttl")?,
    };
    let out = std::io::stdout();
    let mut out = out.lock();
    let wo = WriteOptions::default();
    let arg = |i: usize, what: &str| -> Result<&String, String> {
        args.get(i)
            .ok_or_else(|| format!("Failed: {what} must be specified for the {cmd} command"))
    };
    match cmd {
        "get" => {
            let db = open(db_path, c.f, true)?;
            let k = c.key_in(arg(0, "<key>")?)?;
            match db
                .get_cf(&ReadOptions::default(), &cf(&db, f)?, &k)
                .map_err(err)?
            {
                Some(v) => write_c_line(&mut out, &[&c.value_out(c.stored_out(&v)?)])?,
                None => return Err("Failed: Get failed: NotFound: ".into()),
            }
        }
        "put" => {
            let db = open(db_path, c.f, false)?;
            let (k, v) = (c.key_in(arg(0, "<key>")?)?, c.value_in(arg(1, "<value>")?)?);
            db.put_cf(&wo, &cf(&db, f)?, &k, &c.stored_in(&v))
                .map_err(err)?;
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "delete" => {
            let db = open(db_path, c.f, false)?;
            let k = c.key_in(arg(0, "<key>")?)?;
            db.delete_cf(&wo, &cf(&db, f)?, &k).map_err(err)?;
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "deleterange" => {
            let db = open(db_path, c.f, false)?;
            let (b, e) = (
                c.key_in(arg(0, "<begin key>")?)?,
                c.key_in(arg(1, "<end key>")?)?,
            );
            db.delete_range_cf(&wo, &cf(&db, f)?, &b, &e).map_err(err)?;
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "batchput" => {
            if args.len() < 2 || args.len() % 2 != 0 {
                return Err(
                    "Failed: At least one <key> <value> pair must be specified batchput.".into(),
                );
            }
            let db = open(db_path, c.f, false)?;
            let h = cf(&db, f)?;
            let mut b = WriteBatch::new();
            for pair in args.chunks(2) {
                b.put_cf(
                    h.id,
                    &c.key_in(&pair[0])?,
                    &c.stored_in(&c.value_in(&pair[1])?),
                );
            }
            db.write(&wo, b).map_err(err)?;
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "query" => {
            // ldb's interactive `query`: lines of `get <key>`,
            // `put <key> <value>`, `delete <key>` or `help` on stdin.
            let db = open(db_path, c.f, false)?;
            let h = cf(&db, f)?;
            let mut failed = None;
            for line in std::io::stdin().lines() {
                let line = line.map_err(|e| e.to_string())?;
                let t: Vec<&str> = line.split(' ').collect();
                let said = match (t[0], t.len()) {
                    ("help", _) => "get <key>\nput <key> <value>\ndelete <key>".to_string(),
                    ("delete", 2) => match db.delete_cf(&wo, &h, &c.key_in(t[1])?) {
                        Ok(()) => format!("Successfully deleted {}", t[1]),
                        Err(e) => {
                            failed = Some(format!("delete {} failed: {e}", t[1]));
                            break;
                        }
                    },
                    ("put", 3) => {
                        let v = c.stored_in(&c.value_in(t[2])?);
                        match db.put_cf(&wo, &h, &c.key_in(t[1])?, &v) {
                            Ok(()) => format!("Successfully put {} {}", t[1], t[2]),
                            Err(e) => {
                                failed = Some(format!("put {}=>{} failed: {e}", t[1], t[2]));
                                break;
                            }
                        }
                    }
                    ("get", 2) => {
                        let k = c.key_in(t[1])?;
                        match db.get_cf(&ReadOptions::default(), &h, &k) {
                            Ok(Some(v)) => {
                                // One printf of the whole line: it ends at
                                // the first NUL.
                                let mut line = c.key_out(&k);
                                line.extend_from_slice(b" ==> ");
                                line.extend_from_slice(&c.value_out(c.stored_out(&v)?));
                                String::from_utf8_lossy(c_str(&line)).into_owned()
                            }
                            Ok(None) => {
                                // ldb stops at a missing key and fails with
                                // an empty message; so do we.
                                writeln!(out, "Not found {}", t[1]).map_err(|e| e.to_string())?;
                                failed = Some(String::new());
                                break;
                            }
                            Err(e) => {
                                failed = Some(format!("get {} error: {e}", t[1]));
                                break;
                            }
                        }
                    }
                    _ => format!("Unknown command {line}"),
                };
                writeln!(out, "{said}").map_err(|e| e.to_string())?;
            }
            if let Some(m) = failed {
                return Err(format!("Failed: {m}"));
            }
        }
        "scan" | "dump" => {
            let db = open(db_path, c.f, true)?;
            if cmd == "dump" && f.bool("stats")? {
                // ldb's `dump --stats`: the stats before the keys.
                if let Some(s) = db.property_cf(&cf(&db, f)?, "rocksdb.stats") {
                    writeln!(out, "{s}").map_err(|e| e.to_string())?;
                }
            }
            let from = f.get("from").map(|s| c.key_in(s)).transpose()?;
            let to = f.get("to").map(|s| c.key_in(s)).transpose()?;
            let max_keys: Option<u64> = f
                .get("max_keys")
                .map(|v| v.parse().map_err(|_| format!("bad --max_keys: {v}")))
                .transpose()?;
            let mut it = db
                .iter_cf(&ReadOptions::default(), &cf(&db, f)?)
                .map_err(err)?;
            if let Some(k) = &from {
                it.seek(k);
            }
            // ldb's --start_time/--end_time (with --ttl): timestamps in
            // [start, end).
            let ttl_bound = |name: &str, default: i64| -> Result<i64, String> {
                f.get(name)
                    .map(|v| v.parse().map_err(|_| format!("bad --{name}: {v}")))
                    .unwrap_or(Ok(default))
            };
            // DBWithTTL's kMinTimestamp and kMaxTimestamp by default.
            let (ttl_start, ttl_end) = (
                ttl_bound("start_time", TTL_MIN_TIMESTAMP)?,
                ttl_bound("end_time", i64::from(i32::MAX))?,
            );
            if ttl_end < ttl_start {
                return Err("Error: End time can't be less than start time".into());
            }
            // --timestamp (with --ttl): each entry's time first; dump's
            // --bucket=S: counts per S seconds of [start, end) instead of
            // the total (one bucket by default).
            let timestamp = c.ttl && f.bool("timestamp")?;
            let time_range = ttl_end - ttl_start;
            let bucket_size = match f.num::<i64>("bucket", 0)? {
                b if b > 0 && cmd == "dump" => b,
                _ => time_range,
            };
            let num_buckets = if bucket_size >= time_range {
                1
            } else {
                (time_range + bucket_size - 1) / bucket_size
            };
            let mut bucket_counts = vec![0u64; usize::try_from(num_buckets).unwrap_or(1)];
            // dump's --count_only (a value size histogram instead of the
            // entries) and --count_delim[=C] (counts and sizes per key
            // prefix up to C, '.' by default), as ldb 7.8.3.
            let count_only = cmd == "dump" && f.bool("count_only")?;
            let delim: Option<u8> = if cmd != "dump" { None } else { count_delim(f) };
            let mut vsize = strata::tools::util::histogram::Histogram::new();
            let mut tally = DelimTally::new();
            let mut n = 0u64;
            if timestamp && (cmd == "scan" || (!count_only && delim.is_none())) {
                let what = if cmd == "scan" { "Scanning" } else { "Dumping" };
                writeln!(
                    out,
                    "{what} key-values from {} to {}",
                    human_time(ttl_start),
                    human_time(ttl_end)
                )
                .map_err(|e| e.to_string())?;
            }
            while it.valid() {
                if to.as_deref().is_some_and(|t| it.key() >= t) || max_keys.is_some_and(|m| n >= m)
                {
                    break;
                }
                if c.ttl {
                    let v = it.value();
                    let ts = v
                        .len()
                        .checked_sub(4)
                        .map(|i| {
                            i64::from(u32::from_le_bytes([v[i], v[i + 1], v[i + 2], v[i + 3]]))
                        })
                        .unwrap_or(0);
                    if ts < ttl_start || ts >= ttl_end {
                        it.next();
                        continue;
                    }
                    if num_buckets > 1 {
                        bucket_counts[((ts - ttl_start) / bucket_size) as usize] += 1;
                    }
                    if timestamp && !count_only && delim.is_none() {
                        write!(out, "{} ", human_time(ts)).map_err(|e| e.to_string())?;
                    }
                }
                let sep = if cmd == "scan" { " : " } else { " ==> " };
                let v = if c.ttl {
                    &it.value()[..it.value().len().saturating_sub(4)]
                } else {
                    it.value()
                };
                // Sizes are of the value as read (without a TTL suffix).
                if let Some(d) = delim {
                    let k = it.key();
                    let size = (k.len() + v.len()) as u64;
                    tally.add(&mut out, c_prefix(k, &[d, 0]).to_vec(), size)?;
                }
                if count_only {
                    vsize.add(v.len() as u64);
                }
                if count_only || delim.is_some() {
                    // Counted, not printed.
                } else if cmd == "scan" {
                    // printf("%.*s : %.*s"): each ends at its first NUL.
                    write_c_line(&mut out, &[&c.key_out(it.key()), b" : ", &c.value_out(v)])?;
                } else {
                    // One printf of the whole `key ==> value` line.
                    let mut line = c.key_out(it.key());
                    line.extend_from_slice(sep.as_bytes());
                    line.extend_from_slice(&c.value_out(v));
                    write_c_line(&mut out, &[&line])?;
                }
                n += 1;
                it.next();
            }
            it.status().map_err(err)?;
            if c.ttl && num_buckets > 1 {
                let mut from = ttl_start;
                for (i, count) in bucket_counts.iter().enumerate() {
                    let to = if i + 1 == bucket_counts.len() {
                        ttl_end
                    } else {
                        from + bucket_size
                    };
                    writeln!(
                        out,
                        "Keys in range {} to {} : {count}",
                        human_time(from),
                        human_time(to)
                    )
                    .map_err(|e| e.to_string())?;
                    from += bucket_size;
                }
            } else if delim.is_some() {
                tally.print(&mut out)?;
            } else if cmd == "dump" {
                writeln!(out, "Keys in range: {n}").map_err(|e| e.to_string())?;
            }
            if count_only {
                writeln!(out, "Value size distribution: \n{}", vsize.report())
                    .map_err(|e| e.to_string())?;
            }
        }
        "load" => {
            let db = open(db_path, c.f, false)?;
            let h = cf(&db, f)?;
            let stdin = std::io::stdin();
            let mut batch = WriteBatch::new();
            for line in stdin.lock().split(b'\n') {
                let line = line.map_err(|e| e.to_string())?;
                let line = String::from_utf8_lossy(&line)
                    .trim_end_matches('\r')
                    .to_string();
                let Some((k, v)) = line.split_once(" ==> ") else {
                    continue;
                };
                batch.put_cf(h.id, &c.key_in(k)?, &c.value_in(v)?);
                if batch.byte_size() > 1 << 20 {
                    db.write(&wo, std::mem::take(&mut batch)).map_err(err)?;
                }
            }
            db.write(&wo, batch).map_err(err)?;
            if f.bool("compact")? {
                // ldb's `load --compact`: CompactRange with default options.
                db.compact_range_cf_opt(&h, None, None, &CompactRangeOptions::default())
                    .map_err(err)?;
            }
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "list_column_families" => {
            let names = DB::list_column_families(&Options::default(), db_path).map_err(err)?;
            writeln!(
                out,
                "Column families in {db_path}: \n{{{}}}",
                names.join(", ")
            )
            .map_err(|e| e.to_string())?;
        }
        "create_column_family" => {
            // As ldb: a new column family gets the default one's options.
            let (db, descs) = open_with(db_path, c.f, false)?;
            let o = descs
                .into_iter()
                .find(|d| d.name == "default")
                .map_or_else(cf_options, |d| d.options);
            db.create_column_family(arg(0, "<name>")?, o).map_err(err)?;
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "drop_column_family" => {
            let db = open(db_path, c.f, false)?;
            let name = arg(0, "<name>")?;
            let h = db
                .cf_handle(name)
                .ok_or_else(|| format!("Failed: Column family not found: {name}"))?;
            db.drop_column_family(&h).map_err(err)?;
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "flush" => {
            let db = open(db_path, c.f, false)?;
            db.flush_cf(&cf(&db, f)?).map_err(err)?;
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "dump_wal" => {
            let path = f.get("walfile").ok_or("Failed: --walfile is required")?;
            let write_committed = match f.get("write_committed") {
                None | Some("true") | Some("1") => true,
                Some("false") | Some("0") => false,
                Some(v) => return Err(format!("Failed: bad --write_committed={v}")),
            };
            dump_wal(
                &mut out,
                path,
                f.bool("header")?,
                f.bool("print_value")?,
                write_committed,
            )?;
        }
        "checkpoint" => {
            // ldb's `checkpoint --checkpoint_dir=DIR`: flushes, then makes
            // an openable copy in DIR (which must not exist).
            let dir = f.get("checkpoint_dir").unwrap_or("");
            let db = open(db_path, c.f, false)?;
            strata::utilities::checkpoint::Checkpoint::new(&db)
                .and_then(|cp| cp.create_checkpoint(std::path::Path::new(dir), 0))
                .map_err(err)?;
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "write_extern_sst" => {
            // ldb's `write_extern_sst <output_sst_path>`: `key ==> value`
            // lines from stdin, in increasing key order, into an external
            // file for this column family, with the database's options.
            let path = arg(0, "output SST file path")?;
            let (db, descs) = open_with(db_path, c.f, false)?;
            let h = cf(&db, f)?;
            let topts = descs
                .iter()
                .find(|d| d.name == h.name)
                .map(|d| d.options.table_options(h.id, &h.name))
                .ok_or_else(|| format!("Failed: Column family not found: {}", h.name))?;
            let fs = strata::fs::default_fs();
            let mut w = strata::SstFileWriter::create_for_column_family(
                &*fs,
                std::path::Path::new(path),
                topts,
            )
            .map_err(|e| format!("Failed: failed to open SST file: {e}"))?;
            let mut bad_lines = 0;
            for line in std::io::stdin().lock().split(b'\n') {
                let line = line.map_err(|e| e.to_string())?;
                let line = String::from_utf8_lossy(&line).into_owned();
                if let Some((k, v)) = line.split_once(" ==> ") {
                    w.put(&c.key_in(k)?, &c.value_in(v)?)
                        .map_err(|e| format!("Failed: failed to write record to file: {e}"))?;
                } else if !line.starts_with("Keys in range:")
                    && !line.starts_with("Created bg thread 0x")
                {
                    bad_lines += 1;
                }
            }
            w.finish()
                .map_err(|e| format!("Failed: Failed to finish writing to file: {e}"))?;
            if bad_lines > 0 {
                eprintln!("Warning: {bad_lines} bad lines ignored.");
            }
            // ldb reports a command's result (success too) on stderr.
            eprintln!("external SST file written to {path}");
        }
        "ingest_extern_sst" => {
            // ldb's `ingest_extern_sst <input_sst_path>` with its flags
            // (each `--x`, `--x=true|false`).
            let o = strata::IngestExternalFileOptions {
                move_files: f.bool_or("move_files", false)?,
                snapshot_consistency: f.bool_or("snapshot_consistency", true)?,
                allow_global_seqno: f.bool_or("allow_global_seqno", true)?,
                allow_blocking_flush: f.bool_or("allow_blocking_flush", true)?,
                ingest_behind: f.bool_or("ingest_behind", false)?,
                write_global_seqno: f.bool_or("write_global_seqno", true)?,
                ..Default::default()
            };
            if o.allow_global_seqno && !o.write_global_seqno {
                eprintln!(
                    "Warning: not writing global_seqno to the ingested SST can\n\
                     prevent older versions of RocksDB from being able to open it"
                );
            } else if !o.allow_global_seqno && o.write_global_seqno {
                return Err(
                    "Failed: ldb cannot write global_seqno to the ingested SST when \
                            global_seqno is not allowed"
                        .into(),
                );
            }
            let path = arg(0, "input SST path")?;
            let db = open(db_path, c.f, false)?;
            db.ingest_external_file_cf(&cf(&db, f)?, &[path], &o)
                .map_err(|e| format!("Failed: failed to ingest external SST: {e}"))?;
            eprintln!("external SST files ingested");
        }
        "backup" | "restore" => {
            // ldb's `backup` / `restore --backup_dir=DIR [--num_threads=N]`:
            // a new backup of the database, or the latest backup restored
            // into it (database and WAL directory alike).
            let dir = f
                .get("backup_dir")
                .ok_or("Failed: --backup_dir: missing backup directory")?;
            let mut bo = strata::utilities::backup::BackupEngineOptions::new(dir);
            bo.max_background_operations = f.num("num_threads", 1usize)?.max(1);
            let _ = f.get("stderr_log_level");
            if cmd == "backup" {
                let db = open(db_path, c.f, false)?;
                writeln!(out, "open db OK").map_err(|e| e.to_string())?;
                let mut engine = strata::utilities::backup::BackupEngine::open(bo).map_err(err)?;
                writeln!(out, "open backup engine OK").map_err(|e| e.to_string())?;
                engine.create_new_backup(&db, false).map_err(err)?;
                writeln!(out, "create new backup OK").map_err(|e| e.to_string())?;
            } else {
                let engine =
                    strata::utilities::backup::BackupEngine::open_read_only(bo).map_err(err)?;
                writeln!(out, "open restore engine OK").map_err(|e| e.to_string())?;
                let p = std::path::Path::new(db_path);
                engine
                    .restore_db_from_latest_backup(&Default::default(), p, p)
                    .map_err(err)?;
                writeln!(out, "restore from backup OK").map_err(|e| e.to_string())?;
            }
        }
        "file_checksum_dump" => {
            // ldb's `file_checksum_dump [--hex]`: each live table's number,
            // checksum function and checksum (raw, or 0x-hex with --hex),
            // by file number.
            // ldb 7.8.3 parses --path and then reads the current MANIFEST
            // whatever it names; so do we.
            if f.get("path").is_some_and(str::is_empty) {
                return Err("Failed: --path: missing pathname".into());
            }
            let hex = f.bool("hex")?;
            let db = open(db_path, c.f, true)?;
            let mut raw = Vec::new();
            for i in db.get_live_files_checksum_info() {
                raw.extend_from_slice(
                    format!("{}, {}, ", i.file_number, i.checksum_func_name).as_bytes(),
                );
                if hex {
                    raw.extend_from_slice(format!("0x{}", to_hex(&i.checksum)).as_bytes());
                } else {
                    raw.extend_from_slice(&i.checksum);
                }
                raw.push(b'\n');
            }
            raw.extend_from_slice(b"Print SST file checksum information finished \n");
            out.write_all(&raw).map_err(|e| e.to_string())?;
        }
        "idump" => {
            // ldb's `idump`: every stored version of each key (internal
            // keys not covered by a range tombstone) from --from to --to
            // (excluded), at most --max_keys; --count_only prints only the
            // count. --input_key_hex reads --from/--to as hex.
            let delim = count_delim(f);
            let mut tally = DelimTally::new();
            let input_hex = f.bool("input_key_hex")?;
            let key_arg = |name: &str| -> Result<Option<Vec<u8>>, String> {
                f.get(name)
                    .map(|v| {
                        if input_hex {
                            from_hex(v)
                        } else {
                            Ok(v.as_bytes().to_vec())
                        }
                    })
                    .transpose()
            };
            let (from, to) = (key_arg("from")?, key_arg("to")?);
            let max_keys: i64 = f.num("max_keys", -1)?;
            let count_only = f.bool("count_only")?;
            let db = open(db_path, c.f, true)?;
            let h = cf(&db, f)?;
            if f.bool("stats")?
                && let Some(s) = db.property_cf(&h, "rocksdb.stats")
            {
                writeln!(out, "{s}").map_err(|e| e.to_string())?;
            }
            let versions = db
                .get_all_key_versions(
                    &h,
                    from.as_deref(),
                    to.as_deref(),
                    usize::try_from(max_keys).unwrap_or(0),
                )
                .map_err(err)?;
            let mut count = 0i64;
            for v in versions {
                if to.as_deref() == Some(v.user_key.as_slice()) {
                    break;
                }
                count += 1;
                let key = strata::tools::format::make_internal_key(
                    &v.user_key,
                    v.sequence,
                    strata::tools::format::ValueType::from_u8(v.value_type)
                        .unwrap_or(strata::tools::format::ValueType::Value),
                );
                if let Some(d) = delim {
                    // As ldb: over the encoded internal key, bytes counted
                    // up to a 0x01 or NUL (a Put's type byte stops it),
                    // the prefix up to the delimiter, 0x01 or NUL.
                    let size = c_prefix(&key, &[1, 0]).len() + c_prefix(&v.value, &[1, 0]).len();
                    tally.add(&mut out, c_prefix(&key, &[d, 1, 0]).to_vec(), size as u64)?;
                } else if !count_only {
                    let value = if c.value_hex {
                        to_hex(&v.value).into_bytes()
                    } else {
                        v.value.clone()
                    };
                    let key = strata::tools::version::internal_key_debug_bytes(&key, c.key_hex);
                    write_c_line(&mut out, &[&key, b" => ", &value])?;
                }
                if max_keys > 0 && count >= max_keys {
                    break;
                }
            }
            if delim.is_some() {
                tally.print(&mut out)?;
            } else {
                writeln!(out, "Internal keys in range: {count}").map_err(|e| e.to_string())?;
            }
        }
        "repair" => {
            // ldb's `repair`: rebuilds the MANIFEST from the tables and
            // WALs (the database is not opened), with the options of its
            // newest OPTIONS file when there is one.
            let (opts, descs) = db_options(db_path, f)?;
            strata::db::repair_db_cf(&opts, db_path, descs).map_err(err)?;
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "list_file_range_deletes" => {
            // ldb's `list_file_range_deletes [--max_keys=N]` (1000 by
            // default): each table's range tombstones, fragmented.
            let max_keys: i64 = f.num("max_keys", 1000)?;
            let db = open(db_path, c.f, true)?;
            let s = db
                .range_tombstone_summary(&cf(&db, f)?, usize::try_from(max_keys).unwrap_or(0))
                .map_err(err)?;
            writeln!(out, "{s}").map_err(|e| e.to_string())?;
        }
        "unsafe_remove_sst_file" => {
            // ldb's `unsafe_remove_sst_file <number>`: drops a table from
            // the MANIFEST (its data is lost). Not for a live database.
            let number: u64 = arg(0, "SST file number")?
                .parse()
                .map_err(|_| "Failed: Failed to parse SST file number".to_string())?;
            let (opts, descs) = db_options(db_path, f)?;
            strata::db::unsafe_remove_sst_file(&opts, db_path, &descs, number)
                .map_err(|e| format!("Failed: failed to unsafely remove SST file: {e}"))?;
            eprintln!("unsafely removed SST file");
        }
        "checkconsistency" => {
            let db = open(db_path, c.f, true)?;
            db.verify_checksums().map_err(err)?;
            writeln!(out, "OK").map_err(|e| e.to_string())?;
        }
        "approxsize" => {
            let from = f
                .get("from")
                .ok_or("Failed: from must be specified for approxsize command")?;
            let to = f
                .get("to")
                .ok_or("Failed: to must be specified for approxsize command")?;
            let db = open(db_path, c.f, true)?;
            let size = db
                .approximate_size(&cf(&db, f)?, &c.key_in(from)?, &c.key_in(to)?)
                .map_err(err)?;
            writeln!(out, "{size}").map_err(|e| e.to_string())?;
        }
        "manifest_dump" => {
            // As ldb: the one MANIFEST in the directory unless --path.
            let path = match f.get("path") {
                Some(p) => p.to_string(),
                None => {
                    let fs = strata::fs::default_fs();
                    let names = fs.children(std::path::Path::new(db_path)).map_err(|e| {
                        format!("Failed: {e}: Failed to list the content of {db_path}")
                    })?;
                    let mut found = names.into_iter().filter(|n| {
                        matches!(
                            strata::tools::filename::parse_file_name(n),
                            Some((_, strata::tools::filename::FileType::Descriptor))
                        )
                    });
                    let Some(one) = found.next() else {
                        return Err(format!("Failed: No MANIFEST found in {db_path}"));
                    };
                    if found.next().is_some() {
                        return Err(
                            "Failed: Multiple MANIFEST files found; use --path to select one"
                                .into(),
                        );
                    }
                    format!("{}/{one}", db_path.trim_end_matches('/'))
                }
            };
            let verbose = f.bool("verbose")?;
            if verbose {
                writeln!(out, "Processing Manifest file {path}").map_err(|e| e.to_string())?;
            }
            let text = strata::tools::manifest_dump_with(
                strata::fs::default_fs().as_ref(),
                std::path::Path::new(db_path),
                Some(std::path::Path::new(&path)),
                verbose,
                c.key_hex,
            )
            .map_err(|e| format!("Failed: Error in processing file {path} {e}"))?;
            out.write_all(&text).map_err(|e| e.to_string())?;
            if verbose {
                writeln!(out, "Processing Manifest file {path} done").map_err(|e| e.to_string())?;
            }
        }
        "compact" => {
            // ldb's `compact`: CompactRange over [from, to] with the
            // bottommost level forced; nothing printed on success.
            let from = f.get("from").map(|s| c.key_in(s)).transpose()?;
            let to = f.get("to").map(|s| c.key_in(s)).transpose()?;
            let db = open(db_path, c.f, false)?;
            let opts = CompactRangeOptions {
                bottommost_level_compaction: BottommostLevelCompaction::Force,
                ..Default::default()
            };
            db.compact_range_cf_opt(&cf(&db, f)?, from.as_deref(), to.as_deref(), &opts)
                .map_err(|e| format!("Failed: Compaction failed: {e}"))?;
            db.close().map_err(err)?;
        }
        "stats" => {
            // ldb has no `stats` command: the `rocksdb.stats` property, as
            // ldb's `dump --stats` and db_bench's `stats` print it.
            let db = open(db_path, c.f, true)?;
            let s = db
                .property_cf(&cf(&db, f)?, "rocksdb.stats")
                .ok_or("Failed: failed to get property: rocksdb.stats")?;
            writeln!(out, "{s}").map_err(|e| e.to_string())?;
        }
        "get_property" => {
            if args.len() != 1 {
                return Err("Failed: property name must be specified".into());
            }
            let name = &args[0];
            let db = open(db_path, c.f, true)?;
            let v = db
                .property_cf(&cf(&db, f)?, name)
                .ok_or_else(|| format!("Failed: failed to get property: {name}"))?;
            writeln!(out, "{name}: {v}").map_err(|e| e.to_string())?;
        }
        "change_compaction_style" => {
            // ldb's ChangeCompactionStyleCommand: level (0) to universal
            // (1) only; compacts everything into one file in level 0.
            let style = |name: &str, what: &str| -> Result<i64, String> {
                match f.get(name).map(str::parse::<i64>) {
                    Some(Ok(v @ (0 | 1))) => Ok(v),
                    _ => Err(format!(
                        "Failed: Use --{name} to specify {what} compaction style. Check ldb help \
                         for proper compaction style value.\n"
                    )),
                }
            };
            let old = style("old_compaction_style", "old")?;
            let new = style("new_compaction_style", "new")?;
            if old == new {
                return Err(
                    "Failed: Old compaction style is the same as new compaction style. \
                            Nothing to do.\n"
                        .into(),
                );
            }
            if old == 1 && new == 0 {
                return Err(
                    "Failed: Convert from universal compaction to level compaction. \
                            Nothing to do.\n"
                        .into(),
                );
            }
            let db = open_adjusted(db_path, c.f, |o| {
                o.disable_auto_compactions = true;
                o.target_file_size_base = i32::MAX as u64;
                o.target_file_size_multiplier = 1;
                o.max_bytes_for_level_base = i32::MAX as u64;
                o.max_bytes_for_level_multiplier = 1.0;
            })?;
            let handle = cf(&db, f)?;
            let before = files_per_level(&db, &handle)?;
            writeln!(out, "files per level before compaction: {}", join(&before))
                .map_err(|e| e.to_string())?;
            let opts = CompactRangeOptions {
                change_level: true,
                target_level: 0,
                ..Default::default()
            };
            db.compact_range_cf_opt(&handle, None, None, &opts)
                .map_err(|e| format!("Failed: Compaction failed: {e}"))?;
            let after = files_per_level(&db, &handle)?;
            for (level, &n) in after.iter().enumerate() {
                let want = usize::from(level == 0);
                if n != want {
                    return Err(format!(
                        "Failed: Number of db files at level {level} after compaction is {n}, \
                         not {want}.\n"
                    ));
                }
            }
            writeln!(out, "files per level after compaction: {}", join(&after))
                .map_err(|e| e.to_string())?;
            db.close().map_err(err)?;
        }
        "reduce_levels" => {
            // ldb's ReduceDBLevelsCommand: compacts everything into the
            // deepest level in use, then moves it to level new_levels - 1
            // in the MANIFEST.
            let new_levels: i64 = match f.get("new_levels").map(str::parse::<i64>) {
                Some(Ok(n)) if n > 0 => n,
                _ => {
                    return Err("Failed:  Use --new_levels to specify a new level number\n".into());
                }
            };
            if new_levels <= 1 {
                return Err("Failed: Invalid number of levels.\n".into());
            }
            let new_levels = new_levels as usize;
            let (opts, descs) = db_options(db_path, f)?;
            let old = strata::db::num_levels_in_use(&opts, db_path, &descs).map_err(err)?;
            if f.bool("print_old_levels")? {
                writeln!(out, "The old number of levels in use is {old}")
                    .map_err(|e| e.to_string())?;
            }
            if old <= new_levels {
                return Ok(());
            }
            let db = open_adjusted(db_path, c.f, |o| {
                o.num_levels = old;
                // No size-triggered compaction.
                o.max_bytes_for_level_base = 1 << 50;
                o.max_bytes_for_level_multiplier = 1.0;
            })?;
            writeln!(out, "Compacting the db...").map_err(|e| e.to_string())?;
            out.flush().map_err(|e| e.to_string())?;
            db.compact_range_cf_opt(&cf(&db, f)?, None, None, &CompactRangeOptions::default())
                .map_err(err)?;
            db.close().map_err(err)?;
            strata::db::reduce_number_of_levels(&opts, db_path, &descs, new_levels).map_err(err)?;
        }
        "update_manifest" => {
            // ldb's UpdateManifestCommand (not for a live database).
            if !f.bool("update_temperatures")? {
                return Err(
                    "Failed: No action like --update_temperatures specified for update_manifest"
                        .into(),
                );
            }
            let (opts, descs) = db_options(db_path, f)?;
            let changed = strata::db::update_manifest_for_files_state(&opts, db_path, &descs)
                .map_err(|e| format!("Failed: failed to update manifest: {e}"))?;
            if f.bool("verbose")? {
                eprintln!(
                    "UpdateManifestForFilesState: {}",
                    if changed == 0 {
                        "no updates needed".to_string()
                    } else {
                        format!("updated {changed} files")
                    }
                );
            }
            eprintln!("Manifest updates successful");
        }
        "dump_live_files" => {
            // ldb's DBFileDumperCommand: the MANIFEST, each column
            // family's tables (entries and properties), its blob files
            // (none: Strata writes none), then every WAL.
            let db = open(db_path, c.f, true)?;
            drop(out);
            dump_live_files(&db, db_path)?;
            return Ok(());
        }
        "list_live_files_metadata" => {
            let sort = f.bool("sort_by_filename")?;
            let (db, descs) = open_with(db_path, c.f, true)?;
            let text = live_files_metadata(&db, db_path, &descs, sort);
            write!(out, "{text}").map_err(|e| e.to_string())?;
        }
        other => return Err(format!("Failed: unknown command {other}")),
    }
    Ok(())
}

/// ldb's `list_live_files_metadata` output: per column family, each level
/// (`0..num_levels`) with its table files, L0 newest first; or with
/// `sort` one `PATH : level N, column family 'NAME'` line per file, sorted
/// by path. Paths are `db_path` as given joined with the file name, with
/// repeated `/` collapsed (RocksDB's `NormalizePath`). Strata has no blob
/// files, so that list is always empty.
fn live_files_metadata(
    db: &DB,
    db_path: &str,
    descs: &[ColumnFamilyDescriptor],
    sort: bool,
) -> String {
    let metas = db.live_files_metadata();
    let path_of = |name: &str| db_options::normalize_path(&format!("{db_path}/{name}"));
    let mut s = String::new();
    if sort {
        s.push_str("Live SST and Blob Files:\n");
        let mut all: Vec<(String, usize, &str)> = metas
            .iter()
            .map(|m| (path_of(&m.name), m.level, m.column_family_name.as_str()))
            .collect();
        all.sort();
        for (path, level, cf) in all {
            s.push_str(&format!("{path} : level {level}, column family '{cf}'\n"));
        }
    } else {
        for name in db.column_families() {
            s.push_str(&format!(
                "===== Column Family: {name} =====\nLive SST Files:\n"
            ));
            let files: Vec<_> = metas
                .iter()
                .filter(|m| m.column_family_name == name)
                .collect();
            let num_levels = descs
                .iter()
                .find(|d| d.name == name)
                .map_or(7, |d| d.options.num_levels)
                .max(files.iter().map(|m| m.level + 1).max().unwrap_or(0));
            for level in 0..num_levels {
                s.push_str(&format!("---------- level {level} ----------\n"));
                for m in files.iter().filter(|m| m.level == level) {
                    s.push_str(&path_of(&m.name));
                    s.push('\n');
                }
            }
            s.push_str("Live Blob Files:\n");
        }
    }
    s.push_str("------------------------------\n");
    s
}

/// `ldb dump_live_files` on an open database (see its command).
fn dump_live_files(db: &DB, db_path: &str) -> Result<(), String> {
    let rule = "==============================";
    let fs = strata::fs::default_fs();
    let dir = std::path::Path::new(db_path);
    println!("Manifest File\n{rule}");
    match strata::tools::version::read_current_file(fs.as_ref(), dir) {
        Ok(name) => {
            let path = db_options::normalize_path(&format!("{db_path}/{name}"));
            println!("{path}");
            match strata::tools::manifest_dump_with(
                fs.as_ref(),
                dir,
                Some(std::path::Path::new(&path)),
                false,
                false,
            ) {
                Ok(text) => {
                    let mut o = std::io::stdout().lock();
                    o.write_all(&text).map_err(|e| e.to_string())?;
                }
                Err(e) => eprintln!("Error in processing file {path} {e}"),
            }
        }
        Err(_) => eprintln!(
            "Error when reading CURRENT file {}",
            db_options::normalize_path(&format!("{db_path}/CURRENT"))
        ),
    }
    println!();
    let metas = db.live_files_metadata();
    for name in db.column_families() {
        println!("Column family name: {name}\n{rule}\n\nSST Files\n{rule}");
        let mut files: Vec<_> = metas
            .iter()
            .filter(|m| m.column_family_name == name)
            .collect();
        // Level by level, each in its version's order.
        files.sort_by_key(|m| m.level);
        for m in files {
            let path = db_options::normalize_path(&format!("{db_path}/{}", m.name));
            println!("{path} level:{}\n------------------------------", m.level);
            crate::sst_dump::dump_for_ldb(std::path::Path::new(&path))?;
            println!();
        }
        println!("Blob Files\n{rule}");
    }
    println!();
    println!("Write Ahead Log Files\n{rule}");
    match db.sorted_wal_files() {
        Err(_) => eprintln!("Error when getting WAL files"),
        Ok(wals) => {
            let out = std::io::stdout();
            let mut out = out.lock();
            for w in wals {
                let path = format!("{}{}", db_path.trim_end_matches('/'), w.path_name);
                writeln!(out, "{path}").map_err(|e| e.to_string())?;
                dump_wal(&mut out, &path, true, true, true)?;
            }
        }
    }
    Ok(())
}

/// `ldb dump_wal`: one line per WAL record (`sequence,count,byte
/// size,offset,` then each entry as RocksDB's InMemoryHandler prints it).
/// `write_committed` is ldb's `--write_committed` (default true): the
/// policy whose markers print; another policy's section stops the dump
/// with RocksDB's error, as ldb does.
fn dump_wal(
    out: &mut impl Write,
    path: &str,
    header: bool,
    print_value: bool,
    write_committed: bool,
) -> Result<(), String> {
    let fs = strata::fs::default_fs();
    let file = fs
        .new_sequential_file(std::path::Path::new(path))
        .map_err(|e| format!("Failed: Failed to open WAL file {e}"))?;
    let number = std::path::Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(strata::tools::filename::parse_file_name)
        .map_or(0, |(n, _)| n);
    let mut r = LogReader::new(file, number);
    if header {
        let value = if print_value { " : value " } else { "" };
        writeln!(out, "Sequence,Count,ByteSize,Physical Offset,Key(s){value}")
            .map_err(|e| e.to_string())?;
    }
    let hex = |b: &[u8]| format!("0x{}", to_hex(b));
    let policy_error = |what: &str| {
        format!(
            "Not implemented: {what}. If it is not due to corruption, the WAL must be emptied \
             before changing the WritePolicy."
        )
    };
    loop {
        let rec = match r.read_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => break,
            Err(e) => return Err(format!("Failed: {}", e.into_error(path))),
        };
        let b = WriteBatch::from_bytes(rec)
            .map_err(|e| format!("Failed: Parsing write batch failed: {e}"))?;
        let mut line = format!(
            "{},{},{},{},",
            b.sequence(),
            b.count(),
            b.byte_size(),
            r.last_record_offset()
        );
        let mut error = None;
        for rec in b.iter() {
            let rec = match rec {
                Ok(rec) => rec,
                Err(e) => {
                    error = Some(e.to_string());
                    break;
                }
            };
            let key_value = |line: &mut String, name: &str, cf: u32, key: &[u8], value: &[u8]| {
                line.push_str(&format!("{name}({cf}) : {} ", hex(key)));
                if print_value {
                    line.push_str(&format!(": {} ", hex(value)));
                }
            };
            match rec {
                BatchRecord::Put { cf, key, value } => key_value(&mut line, "PUT", cf, key, value),
                BatchRecord::Merge { cf, key, value } => {
                    key_value(&mut line, "MERGE", cf, key, value)
                }
                BatchRecord::Delete { cf, key } => {
                    line.push_str(&format!("DELETE({cf}) : {} ", hex(key)));
                }
                BatchRecord::SingleDelete { cf, key } => {
                    line.push_str(&format!("SINGLE_DELETE({cf}) : {} ", hex(key)));
                }
                BatchRecord::DeleteRange { cf, begin, end } => {
                    line.push_str(&format!(
                        "DELETE_RANGE({cf}) : {} {} ",
                        hex(begin),
                        hex(end)
                    ));
                }
                BatchRecord::PutEntity { cf, key, .. } => {
                    line.push_str(&format!("PUT_ENTITY({cf}) : {} ", hex(key)));
                }
                BatchRecord::BlobIndex { .. } => {
                    error = Some("Invalid argument: PutBlobIndexCF not implemented".into());
                }
                BatchRecord::LogData(_) => {}
                BatchRecord::Noop => line.push_str("NOOP "),
                BatchRecord::BeginPrepare {
                    persisted,
                    unprepared,
                } => {
                    line.push_str(&format!("BEGIN_PREPARE({unprepared}) "));
                    error = match (unprepared, persisted, write_committed) {
                        (true, _, true) => Some(policy_error(
                            "WriteUnprepared txn tag when write_after_commit_ is enabled (in \
                             default WriteCommitted mode)",
                        )),
                        (true, _, false) => Some(policy_error(
                            "WriteUnprepared txn tag when write_before_prepare_ is disabled (in \
                             WriteCommitted/WritePrepared mode)",
                        )),
                        (false, true, true) => Some(policy_error(
                            "WritePrepared/WriteUnprepared txn tag when write_after_commit_ is \
                             enabled (in default WriteCommitted mode)",
                        )),
                        (false, false, false) => Some(policy_error(
                            "WriteCommitted txn tag when write_after_commit_ is disabled (in \
                             WritePrepared/WriteUnprepared mode)",
                        )),
                        _ => None,
                    };
                }
                BatchRecord::EndPrepare(xid) => {
                    line.push_str(&format!("END_PREPARE({}) ", hex(xid)));
                }
                BatchRecord::Commit(xid) => line.push_str(&format!("COMMIT({}) ", hex(xid))),
                BatchRecord::CommitWithTimestamp { ts, xid } => {
                    line.push_str(&format!(
                        "COMMIT_WITH_TIMESTAMP({}, {}) ",
                        hex(xid),
                        hex(ts)
                    ));
                }
                BatchRecord::Rollback(xid) => {
                    line.push_str(&format!("ROLLBACK({}) ", hex(xid)));
                }
            }
            if error.is_some() {
                break;
            }
        }
        if let Some(e) = error {
            // As ldb 7.8.3: the record's line is dropped and the command
            // fails.
            return Err(format!("Failed: Print write batch error: {e}"));
        }
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    Ok(())
}
