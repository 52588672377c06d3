//! Reading RocksDB OPTIONS files (`OPTIONS-NNNNNN`, as RocksDB 7.8.3
//! writes them and as [`super::options_file`] writes ours): [`parse`] splits
//! the text into its sections, and [`OptionsFile::apply_db`] /
//! [`OptionsFile::apply_cf`] apply the settings that shape files and
//! compaction (RocksDB's `LoadLatestOptions` for what Strata supports).
//! Unknown sections and options are ignored, as RocksDB does with
//! `ignore_unknown_options` ([`OptionsFile::unknown_options`] lists them,
//! and `DB::open` reports those of the database's newest file once in the
//! LOG); malformed lines and values are
//! `InvalidArgument` errors naming the file and line or option.
//!
//! Also [`sanitize`]: the adjustments RocksDB's `SanitizeOptions` makes to
//! compaction settings (FIFO has one level and no L0 write stalls; the L0
//! triggers are made ordered).

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::options::{ColumnFamilyOptions, CompactionStyle, Options, TableFactory};
use crate::table::CompressionType;
use crate::util::checksum::ChecksumType;
use crate::util::slice_transform::parse_slice_transform;

fn bad(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// The sections of an OPTIONS file.
#[derive(Debug, Default)]
pub struct OptionsFile {
    /// File name (for messages).
    pub name: String,
    db: BTreeMap<String, String>,
    cfs: BTreeMap<String, BTreeMap<String, String>>,
    /// The `[CFOptions]` sections' column families in file order (default
    /// first, then as created: RocksDB's order).
    cf_order: Vec<String>,
    tables: BTreeMap<String, BTreeMap<String, String>>,
    /// The table factory of each column family's `[TableOptions/<type>]`
    /// section (`BlockBasedTable`, `PlainTable`, ...).
    table_types: BTreeMap<String, String>,
}

/// Undoes RocksDB's option-file escaping (`\\`, `\:`, `\#`, `\n`, `\r`).
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

/// The newest `OPTIONS-NNNNNN` file of the database directory `db` (on the
/// real file system), parsed; `None` when it has none (or no directory).
pub fn load_latest(db: &std::path::Path) -> Result<Option<OptionsFile>> {
    load_latest_in(&crate::fs::posix::PosixFileSystem::new(), db)
}

/// [`load_latest`] on the file system `fs`.
pub fn load_latest_in(
    fs: &dyn crate::fs::FileSystem,
    db: &std::path::Path,
) -> Result<Option<OptionsFile>> {
    let Ok(children) = fs.children(db) else {
        return Ok(None);
    };
    let newest = children
        .into_iter()
        .filter_map(|name| match crate::filename::parse_file_name(&name)? {
            (n, crate::filename::FileType::Options) => Some((n, name)),
            _ => None,
        })
        .max();
    let Some((_, name)) = newest else {
        return Ok(None);
    };
    let path = db.join(&name);
    let bytes = fs.read_file(&path)?;
    parse(&name, &String::from_utf8_lossy(&bytes)).map(Some)
}

/// The option names Strata's own OPTIONS files hold, per section.
struct KnownOptions {
    db: std::collections::BTreeSet<String>,
    cf: std::collections::BTreeSet<String>,
    tables: BTreeMap<String, std::collections::BTreeSet<String>>,
}

/// [`KnownOptions`], from what Strata writes for a block-based, a
/// PlainTable and a CuckooTable column family.
fn known_options() -> KnownOptions {
    let o = Options::default();
    let plain = ColumnFamilyOptions {
        table_factory: TableFactory::Plain(Default::default()),
        ..o.cf.clone()
    };
    let cuckoo = ColumnFamilyOptions {
        table_factory: TableFactory::Cuckoo(Default::default()),
        ..o.cf.clone()
    };
    let text = super::options_file::render(
        &o,
        &[
            (0, "default", &o.cf),
            (1, "plain", &plain),
            (2, "cuckoo", &cuckoo),
        ],
    );
    let mut known = KnownOptions {
        db: Default::default(),
        cf: Default::default(),
        tables: BTreeMap::new(),
    };
    let Ok(f) = parse("OPTIONS", &text) else {
        return known;
    };
    known.db = f.db.keys().cloned().collect();
    known.cf = f.cfs.values().flat_map(|m| m.keys().cloned()).collect();
    for (cf, m) in &f.tables {
        let kind = f.table_types.get(cf).cloned().unwrap_or_default();
        known
            .tables
            .entry(kind)
            .or_default()
            .extend(m.keys().cloned());
    }
    known
}

/// Parses the text of an OPTIONS file.
pub fn parse(name: &str, text: &str) -> Result<OptionsFile> {
    let mut f = OptionsFile {
        name: name.to_string(),
        ..OptionsFile::default()
    };
    // Which map the `key=value` lines go to.
    enum Sec {
        Other,
        Db,
        Cf(String),
        Table(String),
    }
    let mut sec = Sec::Other;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(h) = line.strip_prefix('[') {
            let h = h
                .strip_suffix(']')
                .ok_or_else(|| bad(format!("{name}:{}: bad section header: {line}", i + 1)))?;
            // As RocksDB: the argument runs from the first `"` to the last
            // one, so a name holding quotes survives its own rendering.
            let (kind, arg) = match (h.find('"'), h.rfind('"')) {
                (Some(a), Some(b)) if a < b => (h[..a].trim(), Some(unescape(&h[a + 1..b]))),
                _ => (h.trim(), None),
            };
            sec = match (kind, arg) {
                ("DBOptions", _) => Sec::Db,
                ("CFOptions", Some(cf)) => {
                    if !f.cfs.contains_key(&cf) {
                        f.cf_order.push(cf.clone());
                        f.cfs.insert(cf.clone(), BTreeMap::new());
                    }
                    Sec::Cf(cf)
                }
                (t, Some(cf)) if t.starts_with("TableOptions/") => {
                    f.table_types
                        .insert(cf.clone(), t["TableOptions/".len()..].to_string());
                    Sec::Table(cf)
                }
                _ => Sec::Other,
            };
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(bad(format!(
                "{name}:{}: not a key=value line: {line}",
                i + 1
            )));
        };
        let (k, v) = (k.trim().to_string(), v.trim().to_string());
        match &sec {
            Sec::Other => {}
            Sec::Db => {
                f.db.insert(k, v);
            }
            Sec::Cf(cf) => {
                f.cfs.entry(cf.clone()).or_default().insert(k, v);
            }
            Sec::Table(cf) => {
                f.tables.entry(cf.clone()).or_default().insert(k, v);
            }
        }
    }
    Ok(f)
}

/// The `{k=v;k=v;}` value of a struct option (`compaction_options_*`).
fn struct_fields(v: &str) -> BTreeMap<String, String> {
    v.trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .split(';')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn num<T: std::str::FromStr>(file: &str, key: &str, v: &str) -> Result<T> {
    v.parse()
        .map_err(|_| bad(format!("{file}: invalid value for {key}: {v}")))
}

fn boolean(file: &str, key: &str, v: &str) -> Result<bool> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(bad(format!("{file}: invalid value for {key}: {v}"))),
    }
}

/// RocksDB's name of a compaction style (`kCompactionStyleLevel`, ...).
pub fn parse_style(v: &str) -> Option<CompactionStyle> {
    Some(match v {
        "kCompactionStyleLevel" => CompactionStyle::Level,
        "kCompactionStyleUniversal" => CompactionStyle::Universal,
        "kCompactionStyleFIFO" => CompactionStyle::Fifo,
        "kCompactionStyleNone" => CompactionStyle::None,
        _ => return None,
    })
}

/// db_bench's `--compaction_style` number (0 level, 1 universal, 2 fifo,
/// 3 none).
pub fn style_from_code(c: i64) -> Option<CompactionStyle> {
    Some(match c {
        0 => CompactionStyle::Level,
        1 => CompactionStyle::Universal,
        2 => CompactionStyle::Fifo,
        3 => CompactionStyle::None,
        _ => return None,
    })
}

/// A non-negative count from an `int` option (RocksDB's are signed).
fn count(file: &str, key: &str, v: &str) -> Result<Option<usize>> {
    let n: i64 = num(file, key, v)?;
    Ok(usize::try_from(n).ok())
}

impl OptionsFile {
    /// The options of this file Strata does not know (neither applies nor
    /// writes), as `Section.name` (`DBOptions.`, `CFOptions.`,
    /// `TableOptions/<factory>.`), each once, sorted: what a newer RocksDB
    /// wrote. Strata knows every option its own OPTIONS files hold.
    pub fn unknown_options(&self) -> Vec<String> {
        let known = known_options();
        let mut out = std::collections::BTreeSet::new();
        for k in self.db.keys() {
            if !known.db.contains(k) {
                out.insert(format!("DBOptions.{k}"));
            }
        }
        for m in self.cfs.values() {
            for k in m.keys() {
                if !known.cf.contains(k) {
                    out.insert(format!("CFOptions.{k}"));
                }
            }
        }
        for (cf, m) in &self.tables {
            let kind = self
                .table_types
                .get(cf)
                .map_or("BlockBasedTable", String::as_str);
            let names = known.tables.get(kind);
            for k in m.keys() {
                if !names.is_some_and(|n| n.contains(k)) {
                    out.insert(format!("TableOptions/{kind}.{k}"));
                }
            }
        }
        out.into_iter().collect()
    }

    /// The column families the file has `[CFOptions "name"]` sections for,
    /// in the file's order.
    pub fn column_families(&self) -> impl Iterator<Item = &str> {
        self.cf_order.iter().map(|s| s.as_str())
    }

    /// Applies the `[DBOptions]` settings that matter to compaction and to
    /// the write path.
    /// A column family option as the file writes it (`None` if absent).
    pub fn cf_option(&self, cf: &str, key: &str) -> Option<&str> {
        self.cfs.get(cf)?.get(key).map(String::as_str)
    }

    pub fn apply_db(&self, o: &mut Options) -> Result<()> {
        let file = self.name.as_str();
        for (k, v) in &self.db {
            match k.as_str() {
                "max_background_jobs" => {
                    if let Some(n) = count(file, k, v)?.filter(|&n| n > 0) {
                        o.max_background_jobs = n;
                    }
                }
                "max_subcompactions" => {
                    let n: u64 = num(file, k, v)?;
                    o.max_subcompactions = (n as usize).max(1);
                }
                "db_write_buffer_size" => o.db_write_buffer_size = num(file, k, v)?,
                "delayed_write_rate" => {
                    let n: u64 = num(file, k, v)?;
                    if n > 0 {
                        o.delayed_write_rate = n;
                    }
                }
                "allow_concurrent_memtable_write" => {
                    o.allow_concurrent_memtable_write = boolean(file, k, v)?;
                }
                "enable_pipelined_write" => o.enable_pipelined_write = boolean(file, k, v)?,
                "unordered_write" => o.unordered_write = boolean(file, k, v)?,
                "allow_2pc" => o.allow_2pc = boolean(file, k, v)?,
                "allow_ingest_behind" => o.allow_ingest_behind = boolean(file, k, v)?,
                "allow_mmap_reads" => o.allow_mmap_reads = boolean(file, k, v)?,
                "allow_mmap_writes" => o.allow_mmap_writes = boolean(file, k, v)?,
                "use_direct_reads" => o.use_direct_reads = boolean(file, k, v)?,
                "use_direct_io_for_flush_and_compaction" => {
                    o.use_direct_io_for_flush_and_compaction = boolean(file, k, v)?
                }
                "manual_wal_flush" => o.manual_wal_flush = boolean(file, k, v)?,
                "bytes_per_sync" => o.bytes_per_sync = num(file, k, v)?,
                "WAL_ttl_seconds" => o.wal_ttl_seconds = num(file, k, v)?,
                // Written escaped (`escape`), as RocksDB writes strings.
                "db_host_id" => o.db_host_id = unescape(v),
                "WAL_size_limit_MB" => o.wal_size_limit_mb = num(file, k, v)?,
                "file_checksum_gen_factory" => {
                    o.file_checksum_gen_factory = match v.as_str() {
                        "FileChecksumGenCrc32cFactory" => Some(std::sync::Arc::new(
                            crate::util::file_checksum::FileChecksumGenCrc32cFactory,
                        )),
                        // nullptr, or a factory of the application's own.
                        _ => None,
                    };
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Applies the `[CFOptions "name"]` and `[TableOptions/... "name"]`
    /// settings of column family `name` (none if the file does not have
    /// it) that shape its files and their compaction.
    pub fn apply_cf(&self, name: &str, c: &mut ColumnFamilyOptions) -> Result<()> {
        let file = self.name.as_str();
        let empty = BTreeMap::new();
        let cf = self.cfs.get(name).unwrap_or(&empty);
        for (k, v) in cf {
            match k.as_str() {
                "compaction_style" => {
                    c.compaction_style = parse_style(v)
                        .ok_or_else(|| bad(format!("{file}: unknown compaction_style {v}")))?;
                }
                "num_levels" => {
                    if let Some(n) = count(file, k, v)?.filter(|&n| n > 0) {
                        c.num_levels = n;
                    }
                }
                "disable_auto_compactions" => c.disable_auto_compactions = boolean(file, k, v)?,
                "optimize_filters_for_hits" => {
                    c.optimize_filters_for_hits = boolean(file, k, v)?;
                }
                "level0_file_num_compaction_trigger" => {
                    if let Some(n) = count(file, k, v)?.filter(|&n| n > 0) {
                        c.level0_file_num_compaction_trigger = n;
                    }
                }
                "level0_slowdown_writes_trigger" => {
                    if let Some(n) = count(file, k, v)? {
                        c.level0_slowdown_writes_trigger = n;
                    }
                }
                "level0_stop_writes_trigger" => {
                    if let Some(n) = count(file, k, v)? {
                        c.level0_stop_writes_trigger = n;
                    }
                }
                "target_file_size_base" => {
                    let n: u64 = num(file, k, v)?;
                    if n > 0 {
                        c.target_file_size_base = n;
                    }
                }
                "target_file_size_multiplier" => {
                    let n: i64 = num(file, k, v)?;
                    c.target_file_size_multiplier = n.max(1) as u64;
                }
                "max_bytes_for_level_base" => {
                    let n: u64 = num(file, k, v)?;
                    if n > 0 {
                        c.max_bytes_for_level_base = n;
                    }
                }
                "max_bytes_for_level_multiplier" => {
                    c.max_bytes_for_level_multiplier = num(file, k, v)?;
                }
                "level_compaction_dynamic_level_bytes" => {
                    c.level_compaction_dynamic_level_bytes = boolean(file, k, v)?;
                }
                "max_compaction_bytes" => c.max_compaction_bytes = num(file, k, v)?,
                "soft_pending_compaction_bytes_limit" => {
                    c.soft_pending_compaction_bytes_limit = num(file, k, v)?;
                }
                "hard_pending_compaction_bytes_limit" => {
                    c.hard_pending_compaction_bytes_limit = num(file, k, v)?;
                }
                "write_buffer_size" => {
                    let n: usize = num(file, k, v)?;
                    if n > 0 {
                        c.write_buffer_size = n;
                    }
                }
                "max_write_buffer_number" => {
                    if let Some(n) = count(file, k, v)?.filter(|&n| n > 0) {
                        c.max_write_buffer_number = n;
                    }
                }
                "compression_per_level" => {
                    // Every codec must be one this build writes; otherwise
                    // the option keeps its default (as `compression`).
                    let codecs: Option<Vec<CompressionType>> = v
                        .split(':')
                        .filter(|c| !c.trim().is_empty())
                        .map(|c| CompressionType::parse(c.trim()).filter(|t| t.can_compress()))
                        .collect();
                    if let Some(codecs) = codecs {
                        c.compression_per_level = codecs;
                    }
                }
                "compression" => {
                    // A codec this build cannot write keeps the default.
                    if let Some(t) = CompressionType::parse(v).filter(|t| t.can_compress()) {
                        c.compression = t;
                    }
                }
                "compression_opts" | "bottommost_compression_opts" => {
                    let o = if k == "compression_opts" {
                        &mut c.compression_opts
                    } else {
                        &mut c.bottommost_compression_opts
                    };
                    o.parse_into(k, v).map_err(|_| {
                        bad(format!(
                            "{file}: unable to parse the specified CF option {k}"
                        ))
                    })?;
                }
                "bottommost_compression" => {
                    // kDisableCompressionOption, or a codec this build
                    // cannot write, leaves the level's codec.
                    c.bottommost_compression =
                        CompressionType::parse(v).filter(|t| t.can_compress());
                }
                "compaction_options_universal" => {
                    let u = struct_fields(v);
                    if let Some(x) = u.get("size_ratio") {
                        c.universal.size_ratio = num(file, "size_ratio", x)?;
                    }
                    if let Some(x) = u.get("min_merge_width") {
                        c.universal.min_merge_width = num(file, "min_merge_width", x)?;
                    }
                    if let Some(x) = u.get("max_merge_width") {
                        let n: u64 = num(file, "max_merge_width", x)?;
                        // RocksDB's UINT_MAX means "no limit".
                        c.universal.max_merge_width = if n >= u64::from(u32::MAX) {
                            usize::MAX
                        } else {
                            n as usize
                        };
                    }
                    if let Some(x) = u.get("max_size_amplification_percent") {
                        c.universal.max_size_amplification_percent =
                            num(file, "max_size_amplification_percent", x)?;
                    }
                }
                "compaction_options_fifo" => {
                    if let Some(x) = struct_fields(v).get("max_table_files_size") {
                        c.fifo.max_table_files_size = num(file, "max_table_files_size", x)?;
                    }
                }
                _ => {}
            }
        }
        // RocksDB's `ttl` (FIFO's age limit under FIFO) and
        // `periodic_compaction_seconds`; RocksDB's default marker stays the
        // marker (resolved when the options are sanitized).
        if let Some(v) = cf.get("ttl") {
            c.ttl = num(file, "ttl", v)?;
        }
        if let Some(v) = cf.get("periodic_compaction_seconds") {
            c.periodic_compaction_seconds = num(file, "periodic_compaction_seconds", v)?;
        }
        if let Some(v) = cf.get("prefix_extractor") {
            // A custom extractor's name keeps the caller's extractor.
            match v.as_str() {
                "nullptr" | "" => c.prefix_extractor = None,
                n => {
                    if let Some(pe) = parse_slice_transform(n) {
                        c.prefix_extractor = Some(pe);
                    }
                }
            }
        }
        // Other factories (hash reps) keep the caller's.
        if let Some(f) = cf
            .get("memtable_factory")
            .and_then(|v| crate::options::MemTableFactory::from_name(v))
        {
            c.memtable_factory = f;
        }
        if let Some(v) = cf.get("bloom_locality") {
            c.bloom_locality = num(file, "bloom_locality", v)?;
        }
        if let Some(v) = cf.get("memtable_prefix_bloom_size_ratio") {
            c.memtable_prefix_bloom_size_ratio = num(file, "memtable_prefix_bloom_size_ratio", v)?;
        }
        if let Some(v) = cf.get("memtable_whole_key_filtering") {
            c.memtable_whole_key_filtering = boolean(file, "memtable_whole_key_filtering", v)?;
        }
        if let Some(v) = cf.get("inplace_update_support") {
            c.inplace_update_support = boolean(file, "inplace_update_support", v)?;
        }
        if let Some(v) = cf.get("inplace_update_num_locks") {
            c.inplace_update_num_locks = num(file, "inplace_update_num_locks", v)?;
        }
        if let Some(v) = cf.get("memtable_huge_page_size") {
            c.memtable_huge_page_size = num(file, "memtable_huge_page_size", v)?;
        }
        let empty_table = BTreeMap::new();
        let table = self.tables.get(name).unwrap_or(&empty_table);
        match self.table_types.get(name).map(String::as_str) {
            Some("PlainTable") => {
                c.table_factory = TableFactory::Plain(plain_table_options(file, table)?);
                return Ok(());
            }
            Some("CuckooTable") => {
                c.table_factory = TableFactory::Cuckoo(cuckoo_table_options(file, table)?);
                return Ok(());
            }
            Some("BlockBasedTable") | None => c.table_factory = TableFactory::BlockBased,
            Some(other) => {
                return Err(Error::NotSupported(format!(
                    "{file}: table factory {other} (Strata writes BlockBasedTable, PlainTable and \
                     CuckooTable)"
                )));
            }
        }
        if let Some(t) = self.tables.get(name) {
            for (k, v) in t {
                match k.as_str() {
                    "block_size" => {
                        let n: usize = num(file, k, v)?;
                        if n > 0 {
                            c.block_size = n;
                        }
                    }
                    "block_restart_interval" => {
                        if let Some(n) = count(file, k, v)?.filter(|&n| n > 0) {
                            c.block_restart_interval = n;
                        }
                    }
                    "format_version" => {
                        let n: u32 = num(file, k, v)?;
                        c.format_version = n;
                    }
                    "checksum" => {
                        c.checksum = ChecksumType::from_name(v)
                            .ok_or_else(|| bad(format!("{file}: invalid value for {k}: {v}")))?;
                    }
                    "whole_key_filtering" => c.whole_key_filtering = boolean(file, k, v)?,
                    "cache_index_and_filter_blocks" => {
                        c.cache_index_and_filter_blocks = boolean(file, k, v)?;
                    }
                    "pin_l0_filter_and_index_blocks_in_cache" => {
                        c.pin_l0_filter_and_index_blocks_in_cache = boolean(file, k, v)?;
                    }
                    "pin_top_level_index_and_filter" => {
                        c.pin_top_level_index_and_filter = boolean(file, k, v)?;
                    }
                    "enable_index_compression" => c.enable_index_compression = boolean(file, k, v)?,
                    "index_block_restart_interval" => {
                        if let Some(n) = count(file, k, v)?.filter(|&n| n > 0) {
                            c.index_block_restart_interval = n;
                        }
                    }
                    "index_type" => {
                        if let Some(t) = crate::table::options::IndexType::from_name(v) {
                            c.index_type = t;
                        }
                    }
                    "data_block_index_type" => {
                        c.data_block_index_type =
                            crate::table::options::DataBlockIndexType::from_name(v).ok_or_else(
                                || bad(format!("{file}: invalid value for {k}: {v}")),
                            )?;
                    }
                    "data_block_hash_table_util_ratio" => {
                        c.data_block_hash_table_util_ratio = num(file, k, v)?;
                    }
                    "partition_filters" => c.partition_filters = boolean(file, k, v)?,
                    "metadata_block_size" => {
                        if let Some(n) = count(file, k, v)?.filter(|&n| n > 0) {
                            c.metadata_block_size = n;
                        }
                    }
                    "index_shortening" => {
                        if let Some(m) = crate::table::options::IndexShorteningMode::from_name(v) {
                            c.index_shortening = m;
                        }
                    }
                    "filter_policy" => {
                        use crate::table::options::FilterPolicy;
                        match v.as_str() {
                            "nullptr" | "" => c.bloom_bits_per_key = None,
                            p => {
                                // `bloomfilter:BITS:USE_BLOCK_BASED` or
                                // `ribbonfilter:BITS:BLOOM_BEFORE_LEVEL`
                                // (other policies keep the default).
                                let mut parts = p.split(':');
                                match (
                                    parts.next(),
                                    parts.next().map(str::parse::<f64>),
                                    parts.next(),
                                ) {
                                    (Some("bloomfilter"), Some(Ok(b)), _) => {
                                        c.bloom_bits_per_key = Some(b);
                                        c.filter_policy = FilterPolicy::Bloom;
                                    }
                                    (Some("ribbonfilter"), Some(Ok(b)), level) => {
                                        c.bloom_bits_per_key = Some(b);
                                        c.filter_policy = FilterPolicy::Ribbon {
                                            bloom_before_level: level
                                                .and_then(|l| l.parse().ok())
                                                .unwrap_or(0),
                                        };
                                    }
                                    _ => {}
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// The fields of a `[TableOptions/PlainTable]` section.
fn plain_table_options(
    file: &str,
    t: &BTreeMap<String, String>,
) -> Result<crate::table::PlainTableOptions> {
    let mut p = crate::table::PlainTableOptions::default();
    for (k, v) in t {
        match k.as_str() {
            "user_key_len" => p.user_key_len = num(file, k, v)?,
            "bloom_bits_per_key" => p.bloom_bits_per_key = num(file, k, v)?,
            "hash_table_ratio" => p.hash_table_ratio = num(file, k, v)?,
            "index_sparseness" => p.index_sparseness = num(file, k, v)?,
            "huge_page_tlb_size" => p.huge_page_tlb_size = num(file, k, v)?,
            "encoding_type" => {
                p.encoding_type = crate::table::plain::EncodingType::from_name(v)
                    .ok_or_else(|| bad(format!("{file}: invalid value for {k}: {v}")))?;
            }
            "full_scan_mode" => p.full_scan_mode = boolean(file, k, v)?,
            "store_index_in_file" => p.store_index_in_file = boolean(file, k, v)?,
            _ => {}
        }
    }
    Ok(p)
}

/// The fields of a `[TableOptions/CuckooTable]` section (RocksDB's
/// option names; out-of-range values fail when the options are
/// validated).
fn cuckoo_table_options(
    file: &str,
    t: &BTreeMap<String, String>,
) -> Result<crate::table::CuckooTableOptions> {
    let mut c = crate::table::CuckooTableOptions::default();
    for (k, v) in t {
        match k.as_str() {
            "hash_table_ratio" => c.hash_table_ratio = num(file, k, v)?,
            "max_search_depth" => c.max_search_depth = num(file, k, v)?,
            "cuckoo_block_size" => c.cuckoo_block_size = num(file, k, v)?,
            "identity_as_first_hash" => c.identity_as_first_hash = boolean(file, k, v)?,
            "use_module_hash" => c.use_module_hash = boolean(file, k, v)?,
            _ => {}
        }
    }
    Ok(c)
}

/// RocksDB's `SanitizeOptions` for the compaction settings: FIFO keeps
/// one level and never stalls writes on L0 files; the slowdown trigger is
/// at least the compaction trigger and the stop trigger at least the
/// slowdown trigger.
pub fn sanitize(c: &mut ColumnFamilyOptions) {
    if c.compaction_style == CompactionStyle::Fifo {
        c.num_levels = 1;
        c.level0_slowdown_writes_trigger = i32::MAX as usize;
        c.level0_stop_writes_trigger = i32::MAX as usize;
    }
    if c.level0_slowdown_writes_trigger < c.level0_file_num_compaction_trigger {
        c.level0_slowdown_writes_trigger = c.level0_file_num_compaction_trigger;
    }
    if c.level0_stop_writes_trigger < c.level0_slowdown_writes_trigger {
        c.level0_stop_writes_trigger = c.level0_slowdown_writes_trigger;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_families_come_in_the_files_order() {
        // RocksDB's LoadLatestOptions lists them as the file does: default
        // first, then in creation order (not sorted).
        let text = "[CFOptions \"default\"]\n[CFOptions \"zeta\"]\n  num_levels=3\n\
                    [CFOptions \"alpha\"]\n[CFOptions \"zeta\"]\n";
        let f = parse("OPTIONS-000007", text).unwrap();
        assert_eq!(
            f.column_families().collect::<Vec<_>>(),
            vec!["default", "zeta", "alpha"]
        );
        assert_eq!(f.cf_option("zeta", "num_levels"), Some("3"));
    }

    const ROCKSDB_STYLE: &str = "\
# comment
[Version]
  rocksdb_version=7.8.3

[DBOptions]
  max_background_jobs=4
  max_subcompactions=2
  delayed_write_rate=0

[CFOptions \"default\"]
  compaction_style=kCompactionStyleUniversal
  num_levels=5
  level0_file_num_compaction_trigger=8
  level0_slowdown_writes_trigger=20
  level0_stop_writes_trigger=36
  target_file_size_base=1048576
  level_compaction_dynamic_level_bytes=false
  compaction_options_universal={incremental=false;max_size_amplification_percent=150;max_merge_width=4294967295;min_merge_width=3;size_ratio=5;}
  compaction_options_fifo={allow_compaction=true;age_for_warm=0;max_table_files_size=0;}
  ttl=2592000
  compression=kNoCompression

[TableOptions/BlockBasedTable \"default\"]
  block_size=8192
  filter_policy=nullptr

[CFOptions \"f\\:ifo\"]
  compaction_style=kCompactionStyleFIFO
  num_levels=1
  compaction_options_fifo={allow_compaction=false;max_table_files_size=12345;}
  ttl=60

[TableOptions/BlockBasedTable \"f\\:ifo\"]
  filter_policy=bloomfilter:7:false
";

    #[test]
    fn applies_rocksdb_options_files() {
        let f = parse("OPTIONS-000007", ROCKSDB_STYLE).unwrap();
        let mut o = Options::default();
        f.apply_db(&mut o).unwrap();
        assert_eq!(o.max_background_jobs, 4);
        assert_eq!(o.max_subcompactions, 2);
        assert_eq!(o.delayed_write_rate, Options::default().delayed_write_rate);
        let mut c = ColumnFamilyOptions::default();
        f.apply_cf("default", &mut c).unwrap();
        assert_eq!(c.compaction_style, CompactionStyle::Universal);
        assert_eq!(c.num_levels, 5);
        assert_eq!(c.level0_file_num_compaction_trigger, 8);
        assert_eq!(c.target_file_size_base, 1 << 20);
        assert!(!c.level_compaction_dynamic_level_bytes);
        assert_eq!(c.universal.size_ratio, 5);
        assert_eq!(c.universal.min_merge_width, 3);
        assert_eq!(c.universal.max_merge_width, usize::MAX);
        assert_eq!(c.universal.max_size_amplification_percent, 150);
        assert_eq!(c.ttl, 2_592_000);
        let sane = c.sanitized();
        assert_eq!(
            (sane.fifo.ttl_seconds, sane.periodic_compaction_seconds),
            (0, 2_592_000),
            "under universal compaction, ttl is a periodic compaction"
        );
        assert_eq!(c.compression, CompressionType::None);
        assert_eq!(c.block_size, 8192);
        assert_eq!(c.bloom_bits_per_key, None);
        let mut c = ColumnFamilyOptions::default();
        f.apply_cf("f:ifo", &mut c).unwrap();
        assert_eq!(c.compaction_style, CompactionStyle::Fifo);
        assert_eq!(c.fifo.max_table_files_size, 12345);
        assert_eq!(c.ttl, 60);
        assert_eq!(c.sanitized().fifo.ttl_seconds, 60, "FIFO's age limit");
        assert_eq!(c.bloom_bits_per_key, Some(7.0));
        // A column family the file does not know keeps its options.
        let mut c = ColumnFamilyOptions::default();
        f.apply_cf("other", &mut c).unwrap();
        assert_eq!(c.compaction_style, CompactionStyle::Level);
    }

    /// Options Strata writes are all known; options of a newer RocksDB
    /// (or RocksDB options Strata does not have) are listed, each once.
    #[test]
    fn lists_the_options_strata_does_not_know() {
        assert_eq!(
            parse("O", ROCKSDB_STYLE).unwrap().unknown_options(),
            Vec::<String>::new()
        );
        let o = Options::default();
        let plain = ColumnFamilyOptions {
            table_factory: TableFactory::Plain(Default::default()),
            ..o.cf.clone()
        };
        let own =
            super::super::options_file::render(&o, &[(0, "default", &o.cf), (3, "p", &plain)]);
        assert_eq!(
            parse("O", &own).unwrap().unknown_options(),
            Vec::<String>::new()
        );
        let newer = format!(
            "{ROCKSDB_STYLE}\n[DBOptions]\n  follower_refresh_catchup_period_ms=10000\n\
             [CFOptions \"x\"]\n  uncache_aggressiveness=0\n\
             [TableOptions/BlockBasedTable \"x\"]\n  use_delta_encoding=true\n  \
             block_align=false\n[CFOptions \"y\"]\n  uncache_aggressiveness=5\n"
        );
        assert_eq!(
            parse("O", &newer).unwrap().unknown_options(),
            vec![
                "CFOptions.uncache_aggressiveness",
                "DBOptions.follower_refresh_catchup_period_ms",
                "TableOptions/BlockBasedTable.block_align",
                "TableOptions/BlockBasedTable.use_delta_encoding",
            ]
        );
    }

    #[test]
    fn db_host_id_round_trips_through_the_file() {
        let o = Options {
            db_host_id: "rack:7#b\\c\nd".into(),
            ..Options::default()
        };
        let text = crate::db::options_file::render(&o, &[(0, "default", &o.cf)]);
        let mut back = Options::default();
        parse("O", &text).unwrap().apply_db(&mut back).unwrap();
        assert_eq!(back.db_host_id, o.db_host_id);
        // RocksDB's default, as RocksDB writes it.
        let d = Options::default();
        let text = crate::db::options_file::render(&d, &[(0, "default", &d.cf)]);
        assert!(text.contains("  db_host_id=__hostname__\n"), "{text}");
    }

    #[test]
    fn rejects_bad_values() {
        let f = parse("O", "[CFOptions \"default\"]\n num_levels=seven\n").unwrap();
        assert!(
            f.apply_cf("default", &mut ColumnFamilyOptions::default())
                .is_err()
        );
        assert!(parse("O", "[CFOptions \"default\"\n").is_err());
    }

    #[test]
    fn sanitizes_like_rocksdb() {
        let mut c = ColumnFamilyOptions {
            compaction_style: CompactionStyle::Fifo,
            ..ColumnFamilyOptions::default()
        };
        sanitize(&mut c);
        assert_eq!(c.num_levels, 1);
        assert!(c.validate("default").is_ok());
        let mut c = ColumnFamilyOptions {
            level0_file_num_compaction_trigger: 30,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 10,
            ..ColumnFamilyOptions::default()
        };
        sanitize(&mut c);
        assert_eq!(
            (
                c.level0_slowdown_writes_trigger,
                c.level0_stop_writes_trigger
            ),
            (30, 30)
        );
    }
}
