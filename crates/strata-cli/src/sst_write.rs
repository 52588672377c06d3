//! `strata sst_write`: builds an external table from `key ==> value` lines
//! on stdin (ldb's dump form; keys in any order, later duplicates win),
//! through the library's `SstFileWriter`.

use std::collections::BTreeMap;
use std::io::BufRead;

use strata::tools::table::{CompressionType, SstFileWriter, TableOptions};
use strata::tools::util::checksum::ChecksumType;

use crate::flags::{Flags, from_hex};

pub fn run(f: &Flags) -> Result<(), String> {
    let path = f.get("file").ok_or("--file=PATH is required")?.to_string();
    let mut opts = TableOptions::default();
    if let Some(c) = f.get("compression_type") {
        opts.compression =
            CompressionType::parse(c).ok_or_else(|| format!("unknown compression type: {c}"))?;
    }
    // db_bench's names for the compression dictionary options.
    opts.compression_opts.max_dict_bytes = f.num("compression_max_dict_bytes", 0u32)?;
    opts.compression_opts.zstd_max_train_bytes = f.num("compression_zstd_max_train_bytes", 0u32)?;
    opts.compression_opts.max_dict_buffer_bytes =
        f.num("compression_max_dict_buffer_bytes", 0u64)?;
    opts.compression_opts.use_zstd_dict_trainer =
        f.bool_or("compression_use_zstd_dict_trainer", true)?;
    let bits: f64 = f.num("bloom_bits", 10.0)?;
    opts.bloom_bits_per_key = (bits > 0.0).then_some(bits);
    if f.bool("use_ribbon_filter")? {
        opts.filter_policy = strata::FilterPolicy::Ribbon {
            bloom_before_level: 0,
        };
    }
    opts.block_size = f.num("block_size", 4096usize)?;
    opts.block_restart_interval = f.num("block_restart_interval", 16usize)?;
    let ct: u8 = f.num("checksum_type", 1u8)?;
    opts.checksum =
        ChecksumType::from_u8(ct).ok_or_else(|| format!("unknown checksum type {ct}"))?;
    opts.format_version = f.num("format_version", 5u32)?;
    let partition_all = f.bool("partition_index_and_filters")?;
    if partition_all || f.bool("partition_index")? {
        opts.index_type = strata::IndexType::TwoLevelIndexSearch;
    }
    opts.partition_filters = partition_all;
    if f.bool("index_with_first_key")? && opts.index_type == strata::IndexType::BinarySearch {
        opts.index_type = strata::IndexType::BinarySearchWithFirstKey;
    }
    if f.bool("use_data_block_hash_index")? {
        opts.data_block_index_type = strata::DataBlockIndexType::BinaryAndHash;
    }
    opts.metadata_block_size = f.num("metadata_block_size", 4096usize)?;
    opts.index_block_restart_interval = f.num("index_block_restart_interval", 1usize)?;
    opts.enable_index_compression = f.bool_or("enable_index_compression", true)?;
    let mode: i64 = f.num("index_shortening_mode", 1)?;
    opts.index_shortening = strata::tools::table::options::IndexShorteningMode::from_code(mode)
        .ok_or_else(|| format!("unknown --index_shortening_mode={mode}"))?;
    // db_bench's --prefix_size: a fixed-length prefix extractor, whose
    // prefixes go into the filter (alone with --whole_key_filtering=0).
    let prefix: usize = f.num("prefix_size", 0usize)?;
    if prefix > 0 {
        opts.prefix_extractor = Some(std::sync::Arc::new(strata::FixedPrefix(prefix)));
    }
    opts.whole_key_filtering = f.bool_or("whole_key_filtering", true)?;
    let hex = f.bool("hex")?;
    let unknown = f.unknown();
    if !unknown.is_empty() {
        return Err(format!("unknown flags: --{}", unknown.join(", --")));
    }

    let mut entries: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let stdin = std::io::stdin();
    for (n, line) in stdin.lock().split(b'\n').enumerate() {
        let mut line = line.map_err(|e| format!("reading stdin: {e}"))?;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        let sep = b" ==> ";
        let pos = line
            .windows(sep.len())
            .position(|w| w == sep)
            .ok_or_else(|| format!("line {}: expected `key ==> value`", n + 1))?;
        let (k, v) = (&line[..pos], &line[pos + sep.len()..]);
        let (k, v) = if hex {
            let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            (from_hex(&s(k))?, from_hex(&s(v))?)
        } else {
            (k.to_vec(), v.to_vec())
        };
        entries.insert(k, v);
    }
    let mut w = SstFileWriter::create(&path, opts).map_err(|e| e.to_string())?;
    for (k, v) in &entries {
        w.put(k, v).map_err(|e| e.to_string())?;
    }
    let info = w.finish().map_err(|e| e.to_string())?;
    println!(
        "Wrote {} entries to {path} ({} bytes)",
        info.num_entries, info.file_size
    );
    Ok(())
}
