//! The options the ldb-style commands open a database with, as RocksDB's
//! `ldb` does (`--try_load_options`, on by default for an existing
//! database): the newest `OPTIONS-NNNNNN` file of the database is read and
//! its settings applied (the parser is the library's
//! `strata::db::options_parser`), so that a command run on a universal or
//! FIFO database, or one with other levels or triggers, compacts it the way
//! it was configured instead of with the defaults (and the OPTIONS file the
//! open rewrites keeps saying so). The command-line overrides ldb applies
//! on top (`--auto_compaction`, `--file_size`, `--write_buffer_size`,
//! `--compression_type`, `--block_size`, `--bloom_bits`) follow.

use std::path::Path;

use strata::ColumnFamilyOptions;
use strata::CompressionType;

pub use strata::db::options_parser::{OptionsFile, sanitize, style_from_code};

use crate::flags::Flags;

/// The message the tools print for a library error: ldb's `Failed: ...`.
pub fn failed(e: strata::Error) -> String {
    match e {
        strata::Error::InvalidArgument(m) => format!("Failed: {m}"),
        other => format!("Failed: {other}"),
    }
}

/// The newest OPTIONS file of the database at `db`, if it has one.
pub fn read_latest(db: &Path) -> Result<Option<OptionsFile>, String> {
    strata::db::options_parser::load_latest(db).map_err(failed)
}

/// ldb's command-line overrides of the column family options, applied to
/// every column family after the OPTIONS file (`--auto_compaction=BOOL`,
/// `--file_size`, `--write_buffer_size`, `--compression_type`,
/// `--block_size`, `--bloom_bits`).
pub fn apply_overrides(f: &Flags, c: &mut ColumnFamilyOptions) -> Result<(), String> {
    if let Some(v) = f.get("auto_compaction") {
        let on = match v {
            "true" | "1" | "yes" => true,
            "false" | "0" | "no" => false,
            _ => return Err(format!("Failed: invalid value for --auto_compaction: {v}")),
        };
        c.disable_auto_compactions = !on;
    }
    let positive = |name: &str| -> Result<Option<u64>, String> {
        match f.get(name) {
            None => Ok(None),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(format!("Failed: {name} must be > 0.")),
            },
        }
    };
    if let Some(n) = positive("file_size")? {
        c.target_file_size_base = n;
    }
    if let Some(n) = positive("write_buffer_size")? {
        c.write_buffer_size = n as usize;
    }
    if let Some(n) = positive("block_size")? {
        c.block_size = n as usize;
    }
    if let Some(n) = positive("bloom_bits")? {
        c.bloom_bits_per_key = Some(n as f64);
    }
    // ldb's ParseIntOption (std::stoi: leading digits count).
    if let Some(v) = f.get("compression_max_dict_bytes") {
        let digits: String = v
            .trim_start()
            .chars()
            .enumerate()
            .take_while(|(i, ch)| ch.is_ascii_digit() || (*i == 0 && (*ch == '-' || *ch == '+')))
            .map(|(_, ch)| ch)
            .collect();
        match digits.parse::<i64>() {
            Ok(n) if n > i64::from(i32::MAX) || n < i64::from(i32::MIN) => {
                return Err("Failed: compression_max_dict_bytes has a value out-of-range.".into());
            }
            Ok(n) if n >= 0 => c.compression_opts.max_dict_bytes = n as u32,
            Ok(_) => return Err("Failed: compression_max_dict_bytes must be >= 0.".into()),
            Err(_) => {
                return Err("Failed: compression_max_dict_bytes has an invalid value.".into());
            }
        }
    }
    if let Some(v) = f.get("compression_type") {
        c.compression = CompressionType::parse(v)
            .filter(|t| t.can_compress())
            .ok_or_else(|| format!("Failed: Unknown compression type: {v}"))?;
    }
    Ok(())
}

/// RocksDB's `NormalizePath`: repeated `/` collapse to one, except a
/// leading `//` (a UNC name) is kept.
pub fn normalize_path(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    if p.len() > 2 && p.starts_with("//") {
        out.push_str("//");
    }
    for c in p.chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_paths_as_rocksdb() {
        assert_eq!(normalize_path("/tmp/x//000008.sst"), "/tmp/x/000008.sst");
        assert_eq!(normalize_path("/tmp//x///000008.sst"), "/tmp/x/000008.sst");
        assert_eq!(normalize_path("//tmp/x//1.sst"), "//tmp/x/1.sst");
        assert_eq!(normalize_path("x//1.sst"), "x/1.sst");
    }
}
