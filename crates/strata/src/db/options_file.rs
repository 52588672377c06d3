//! The `OPTIONS-NNNNNN` file: the options a database was last opened (or
//! its column families created or dropped) with, in RocksDB's INI format,
//! so `ldb --try_load_options` and RocksDB's `LoadLatestOptions` can read
//! it. Only options Strata has are written; RocksDB fills in defaults for
//! the rest.
//!
//! Written like CURRENT: to `OPTIONS-NNNNNN.dbtmp`, synced, renamed, the
//! directory synced. The two newest OPTIONS files are kept (RocksDB's
//! rule), older ones and stray temporaries are deleted.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::Result;
use crate::filename::{options_file_name, replace_file_atomically, temp_options_file_name};
use crate::fs::FileSystem;
use crate::options::{ColumnFamilyOptions, Options, WalRecoveryMode};
use crate::table::CompressionType;
use crate::version::{FileType, parse_file_name};

/// How many OPTIONS files are kept.
const OPTIONS_FILES_TO_KEEP: usize = 2;

/// RocksDB's option-file escaping of `\`, `:`, `#`, newline and CR.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ':' => out.push_str("\\:"),
            '#' => out.push_str("\\#"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn compression_name(c: CompressionType) -> &'static str {
    match c {
        CompressionType::None => "kNoCompression",
        CompressionType::Snappy => "kSnappyCompression",
        CompressionType::Zlib => "kZlibCompression",
        CompressionType::BZip2 => "kBZip2Compression",
        CompressionType::Lz4 => "kLZ4Compression",
        CompressionType::Lz4hc => "kLZ4HCCompression",
        CompressionType::Xpress => "kXpressCompression",
        CompressionType::Zstd => "kZSTD",
        CompressionType::ZstdNotFinal => "kZSTDNotFinalCompression",
    }
}

fn recovery_mode_name(m: WalRecoveryMode) -> &'static str {
    match m {
        WalRecoveryMode::TolerateCorruptedTailRecords => "kTolerateCorruptedTailRecords",
        WalRecoveryMode::AbsoluteConsistency => "kAbsoluteConsistency",
        WalRecoveryMode::PointInTime => "kPointInTimeRecovery",
        WalRecoveryMode::SkipAnyCorruptedRecords => "kSkipAnyCorruptedRecords",
    }
}

/// The text of an OPTIONS file for `opts` and the column families
/// `(id, name, options)`, in id order.
pub(crate) fn render(opts: &Options, cfs: &[(u32, &str, &ColumnFamilyOptions)]) -> String {
    let mut s = String::new();
    s.push_str(
        "# This is a RocksDB option file.\n#\n\
         # For detailed file format spec, please refer to the example file\n\
         # in examples/rocksdb_option_file_example.ini\n#\n\n",
    );
    s.push_str("[Version]\n  rocksdb_version=7.8.3\n  options_file_version=1.1\n\n");
    s.push_str("[DBOptions]\n");
    let kv = |s: &mut String, k: &str, v: &dyn std::fmt::Display| {
        let _ = writeln!(s, "  {k}={v}");
    };
    kv(&mut s, "create_if_missing", &opts.create_if_missing);
    kv(&mut s, "error_if_exists", &opts.error_if_exists);
    kv(
        &mut s,
        "create_missing_column_families",
        &opts.create_missing_column_families,
    );
    kv(&mut s, "paranoid_checks", &opts.paranoid_checks);
    kv(&mut s, "allow_mmap_reads", &opts.allow_mmap_reads);
    kv(&mut s, "allow_mmap_writes", &opts.allow_mmap_writes);
    kv(&mut s, "use_direct_reads", &opts.use_direct_reads);
    kv(
        &mut s,
        "use_direct_io_for_flush_and_compaction",
        &opts.use_direct_io_for_flush_and_compaction,
    );
    kv(&mut s, "bytes_per_sync", &opts.bytes_per_sync);
    kv(&mut s, "max_background_jobs", &opts.max_background_jobs);
    kv(&mut s, "max_subcompactions", &opts.max_subcompactions);
    kv(&mut s, "db_write_buffer_size", &opts.db_write_buffer_size);
    kv(&mut s, "delayed_write_rate", &opts.delayed_write_rate);
    kv(
        &mut s,
        "allow_concurrent_memtable_write",
        &opts.allow_concurrent_memtable_write,
    );
    kv(
        &mut s,
        "enable_pipelined_write",
        &opts.enable_pipelined_write,
    );
    kv(&mut s, "unordered_write", &opts.unordered_write);
    kv(&mut s, "allow_2pc", &opts.allow_2pc);
    kv(&mut s, "allow_ingest_behind", &opts.allow_ingest_behind);
    kv(&mut s, "manual_wal_flush", &opts.manual_wal_flush);
    kv(&mut s, "WAL_ttl_seconds", &opts.wal_ttl_seconds);
    kv(&mut s, "WAL_size_limit_MB", &opts.wal_size_limit_mb);
    if let Some(f) = &opts.file_checksum_gen_factory {
        kv(&mut s, "file_checksum_gen_factory", &f.name());
    }
    kv(&mut s, "max_log_file_size", &opts.max_log_file_size);
    kv(&mut s, "log_file_time_to_roll", &opts.log_file_time_to_roll);
    kv(&mut s, "keep_log_file_num", &opts.keep_log_file_num);
    kv(&mut s, "max_open_files", &opts.max_open_files);
    kv(&mut s, "db_host_id", &escape(&opts.db_host_id));
    kv(
        &mut s,
        "max_manifest_file_size",
        &opts.max_manifest_file_size,
    );
    kv(
        &mut s,
        "wal_recovery_mode",
        &recovery_mode_name(opts.wal_recovery_mode),
    );
    if let Some(dir) = &opts.wal_dir {
        kv(&mut s, "wal_dir", &escape(&dir.display().to_string()));
    }
    s.push('\n');
    for (id, name, o) in cfs {
        let _ = writeln!(s, "[CFOptions \"{}\"]", escape(name));
        kv(&mut s, "comparator", &escape(o.comparator.name()));
        let merge = o
            .merge_operator
            .as_ref()
            .map_or_else(|| "nullptr".to_string(), |m| escape(m.name()));
        kv(&mut s, "merge_operator", &merge);
        let prefix = o
            .prefix_extractor
            .as_ref()
            .map_or_else(|| "nullptr".to_string(), |p| escape(&p.name()));
        kv(&mut s, "prefix_extractor", &prefix);
        kv(&mut s, "bloom_locality", &o.bloom_locality);
        kv(&mut s, "memtable_factory", &o.memtable_factory.name());
        kv(
            &mut s,
            "memtable_prefix_bloom_size_ratio",
            &format!("{:.6}", o.memtable_prefix_bloom_size_ratio),
        );
        kv(
            &mut s,
            "memtable_whole_key_filtering",
            &o.memtable_whole_key_filtering,
        );
        kv(&mut s, "inplace_update_support", &o.inplace_update_support);
        kv(
            &mut s,
            "inplace_update_num_locks",
            &o.inplace_update_num_locks,
        );
        kv(
            &mut s,
            "memtable_huge_page_size",
            &o.memtable_huge_page_size,
        );
        kv(&mut s, "write_buffer_size", &o.write_buffer_size);
        kv(
            &mut s,
            "max_write_buffer_number",
            &o.max_write_buffer_number,
        );
        kv(
            &mut s,
            "arena_block_size",
            &crate::memtable::arena_block_size_for(
                o.write_buffer_size,
                o.memtable_huge_page_size > 0,
            ),
        );
        kv(&mut s, "compression", &compression_name(o.compression));
        if !o.compression_per_level.is_empty() {
            let names: Vec<&str> = o
                .compression_per_level
                .iter()
                .map(|&c| compression_name(c))
                .collect();
            kv(&mut s, "compression_per_level", &names.join(":"));
        }
        kv(
            &mut s,
            "compression_opts",
            &o.compression_opts.to_options_string(),
        );
        kv(
            &mut s,
            "bottommost_compression_opts",
            &o.bottommost_compression_opts.to_options_string(),
        );
        kv(
            &mut s,
            "bottommost_compression",
            &o.bottommost_compression
                .map_or("kDisableCompressionOption", compression_name),
        );
        kv(&mut s, "num_levels", &o.num_levels);
        kv(
            &mut s,
            "compaction_style",
            &o.compaction_style.rocksdb_name(),
        );
        kv(
            &mut s,
            "disable_auto_compactions",
            &o.disable_auto_compactions,
        );
        kv(
            &mut s,
            "optimize_filters_for_hits",
            &o.optimize_filters_for_hits,
        );
        kv(
            &mut s,
            "level0_file_num_compaction_trigger",
            &o.level0_file_num_compaction_trigger,
        );
        kv(
            &mut s,
            "level0_slowdown_writes_trigger",
            &o.level0_slowdown_writes_trigger,
        );
        kv(
            &mut s,
            "level0_stop_writes_trigger",
            &o.level0_stop_writes_trigger,
        );
        kv(&mut s, "target_file_size_base", &o.target_file_size_base);
        kv(
            &mut s,
            "target_file_size_multiplier",
            &o.target_file_size_multiplier,
        );
        kv(
            &mut s,
            "max_bytes_for_level_base",
            &o.max_bytes_for_level_base,
        );
        kv(
            &mut s,
            "max_bytes_for_level_multiplier",
            &o.max_bytes_for_level_multiplier,
        );
        kv(
            &mut s,
            "level_compaction_dynamic_level_bytes",
            &o.level_compaction_dynamic_level_bytes,
        );
        kv(
            &mut s,
            "max_compaction_bytes",
            &o.effective_max_compaction_bytes(),
        );
        kv(
            &mut s,
            "soft_pending_compaction_bytes_limit",
            &o.soft_pending_compaction_bytes_limit,
        );
        kv(
            &mut s,
            "hard_pending_compaction_bytes_limit",
            &o.hard_pending_compaction_bytes_limit,
        );
        let filter = o
            .compaction_filter
            .as_ref()
            .map_or_else(|| "nullptr".to_string(), |f| escape(f.name()));
        kv(&mut s, "compaction_filter", &filter);
        let factory = o
            .compaction_filter_factory
            .as_ref()
            .map_or_else(|| "nullptr".to_string(), |f| escape(f.name()));
        kv(&mut s, "compaction_filter_factory", &factory);
        let u = &o.universal;
        kv(
            &mut s,
            "compaction_options_universal",
            &format!(
                "{{allow_trivial_move=false;stop_style=kCompactionStopStyleTotalSize;min_merge_width={};max_merge_width={};max_size_amplification_percent={};size_ratio={};compression_size_percent=-1;}}",
                u.min_merge_width,
                u.max_merge_width.min(u32::MAX as usize),
                u.max_size_amplification_percent,
                u.size_ratio
            ),
        );
        kv(
            &mut s,
            "compaction_options_fifo",
            &format!(
                "{{allow_compaction=false;age_for_warm=0;max_table_files_size={};}}",
                o.fifo.max_table_files_size
            ),
        );
        kv(&mut s, "ttl", &o.ttl);
        kv(
            &mut s,
            "periodic_compaction_seconds",
            &o.periodic_compaction_seconds,
        );
        s.push('\n');
        let t = o.table_options(*id, name);
        if let Some(c) = &t.cuckoo {
            // RocksDB's option names (cuckoo_table_type_info).
            let _ = writeln!(s, "[TableOptions/CuckooTable \"{}\"]", escape(name));
            kv(&mut s, "use_module_hash", &c.use_module_hash);
            kv(&mut s, "identity_as_first_hash", &c.identity_as_first_hash);
            kv(&mut s, "cuckoo_block_size", &c.cuckoo_block_size);
            kv(&mut s, "max_search_depth", &c.max_search_depth);
            kv(
                &mut s,
                "hash_table_ratio",
                &format!("{:.6}", c.hash_table_ratio),
            );
            s.push('\n');
            continue;
        }
        if let Some(p) = &t.plain {
            let _ = writeln!(s, "[TableOptions/PlainTable \"{}\"]", escape(name));
            kv(&mut s, "store_index_in_file", &p.store_index_in_file);
            kv(&mut s, "encoding_type", &p.encoding_type.name());
            kv(&mut s, "huge_page_tlb_size", &p.huge_page_tlb_size);
            kv(
                &mut s,
                "hash_table_ratio",
                &format!("{:.6}", p.hash_table_ratio),
            );
            kv(&mut s, "full_scan_mode", &p.full_scan_mode);
            kv(&mut s, "bloom_bits_per_key", &p.bloom_bits_per_key);
            kv(&mut s, "index_sparseness", &p.index_sparseness);
            kv(&mut s, "user_key_len", &p.user_key_len);
            s.push('\n');
            continue;
        }
        let _ = writeln!(s, "[TableOptions/BlockBasedTable \"{}\"]", escape(name));
        kv(&mut s, "block_size", &t.block_size);
        kv(&mut s, "block_restart_interval", &t.block_restart_interval);
        kv(&mut s, "checksum", &t.checksum.name());
        kv(&mut s, "format_version", &t.format_version);
        kv(
            &mut s,
            "index_block_restart_interval",
            &t.index_block_restart_interval,
        );
        kv(
            &mut s,
            "enable_index_compression",
            &t.enable_index_compression,
        );
        kv(&mut s, "index_shortening", &t.index_shortening.name());
        kv(&mut s, "index_type", &t.index_type.name());
        kv(
            &mut s,
            "data_block_index_type",
            &t.data_block_index_type.name(),
        );
        kv(
            &mut s,
            "data_block_hash_table_util_ratio",
            &format!("{:.6}", t.data_block_hash_table_util_ratio),
        );
        kv(&mut s, "partition_filters", &t.partition_filters);
        kv(&mut s, "metadata_block_size", &t.metadata_block_size);
        kv(&mut s, "whole_key_filtering", &t.whole_key_filtering);
        kv(
            &mut s,
            "cache_index_and_filter_blocks",
            &o.cache_index_and_filter_blocks,
        );
        kv(
            &mut s,
            "pin_l0_filter_and_index_blocks_in_cache",
            &o.pin_l0_filter_and_index_blocks_in_cache,
        );
        kv(
            &mut s,
            "pin_top_level_index_and_filter",
            &o.pin_top_level_index_and_filter,
        );
        let filter = t.bloom_bits_per_key.map_or_else(
            || "nullptr".to_string(),
            |b| t.filter_policy.options_string(b),
        );
        kv(&mut s, "filter_policy", &filter);
        s.push('\n');
    }
    s
}

/// Writes `text` as `OPTIONS-<number>` in `dbname` and removes older
/// OPTIONS files beyond the newest two.
pub(crate) fn persist(fs: &dyn FileSystem, dbname: &Path, number: u64, text: &str) -> Result<()> {
    let tmp = dbname.join(temp_options_file_name(number));
    let dst = dbname.join(options_file_name(number));
    replace_file_atomically(fs, dbname, &tmp, &dst, text.as_bytes())?;
    let mut numbers: Vec<u64> = Vec::new();
    for name in fs.children(dbname)? {
        match parse_file_name(&name) {
            Some((n, FileType::Options)) => numbers.push(n),
            Some((n, FileType::Temp)) if name.starts_with("OPTIONS-") && n != number => {
                let _ = fs.delete_file(&dbname.join(&name));
            }
            _ => {}
        }
    }
    numbers.sort_unstable_by(|a, b| b.cmp(a));
    for n in numbers.into_iter().skip(OPTIONS_FILES_TO_KEEP) {
        let _ = fs.delete_file(&dbname.join(options_file_name(n)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_shape() {
        assert_eq!(escape("a:b#c\\d\ne"), "a\\:b\\#c\\\\d\\ne");
        let o = Options::default();
        let text = render(&o, &[(0, "default", &o.cf), (1, "x:y", &o.cf)]);
        assert!(
            text.contains("[CFOptions \"default\"]\n  comparator=leveldb.BytewiseComparator\n")
        );
        assert!(text.contains("[TableOptions/BlockBasedTable \"x\\:y\"]"));
        assert!(text.contains("  filter_policy=bloomfilter:10:false\n"));
        assert!(text.contains("  compression=kSnappyCompression\n"));
    }

    /// Every table and compression option a column family sets away from
    /// its default comes back from the OPTIONS file (written as RocksDB
    /// writes them, read as RocksDB's LoadLatestOptions reads them), and
    /// so do the DB options that choose how files are read and written.
    #[test]
    fn table_options_round_trip() {
        use crate::db::options_parser::parse;
        use crate::table::CompressionType;
        use crate::table::options::{
            DataBlockIndexType, FilterPolicy, IndexShorteningMode, IndexType,
        };
        let mut o = Options {
            allow_mmap_reads: true,
            allow_mmap_writes: true,
            use_direct_reads: false,
            ..Options::default()
        };
        let cf = &mut o.cf;
        cf.checksum = crate::util::checksum::ChecksumType::XxHash64;
        cf.format_version = 4;
        cf.block_size = 8192;
        cf.block_restart_interval = 4;
        cf.index_block_restart_interval = 8;
        cf.index_shortening = IndexShorteningMode::NoShortening;
        cf.enable_index_compression = false;
        cf.data_block_index_type = DataBlockIndexType::BinaryAndHash;
        cf.metadata_block_size = 1024;
        cf.bloom_bits_per_key = Some(7.0);
        cf.filter_policy = FilterPolicy::Ribbon {
            bloom_before_level: 1,
        };
        cf.whole_key_filtering = false;
        cf.cache_index_and_filter_blocks = true;
        cf.pin_l0_filter_and_index_blocks_in_cache = true;
        cf.pin_top_level_index_and_filter = false;
        cf.optimize_filters_for_hits = true;
        cf.compression = CompressionType::Lz4;
        cf.compression_per_level = vec![
            CompressionType::None,
            CompressionType::Snappy,
            CompressionType::Zstd,
        ];
        cf.bottommost_compression = Some(CompressionType::Zlib);
        cf.compression_opts.level = 3;
        cf.compression_opts.max_dict_bytes = 16384;
        cf.compression_opts.zstd_max_train_bytes = 65536;
        cf.compression_opts.max_dict_buffer_bytes = 1 << 20;
        cf.compression_opts.use_zstd_dict_trainer = false;
        cf.bottommost_compression_opts.enabled = true;
        cf.bottommost_compression_opts.level = 5;
        cf.bottommost_compression_opts.max_dict_bytes = 4096;
        for index_type in [
            IndexType::TwoLevelIndexSearch,
            IndexType::BinarySearchWithFirstKey,
        ] {
            o.cf.index_type = index_type;
            o.cf.partition_filters = index_type == IndexType::TwoLevelIndexSearch;
            let text = render(&o, &[(0, "default", &o.cf)]);
            let f = parse("OPTIONS-000001", &text).unwrap();
            let mut db = Options::default();
            f.apply_db(&mut db).unwrap();
            assert!(db.allow_mmap_reads && db.allow_mmap_writes, "{text}");
            let mut c = ColumnFamilyOptions::default();
            f.apply_cf("default", &mut c).unwrap();
            let w = &o.cf;
            macro_rules! same {
                ($($field:ident),* $(,)?) => {
                    $(assert_eq!(c.$field, w.$field, "{}: {text}", stringify!($field));)*
                };
            }
            same!(
                checksum,
                format_version,
                block_size,
                block_restart_interval,
                index_block_restart_interval,
                index_shortening,
                enable_index_compression,
                data_block_index_type,
                index_type,
                partition_filters,
                metadata_block_size,
                bloom_bits_per_key,
                filter_policy,
                whole_key_filtering,
                cache_index_and_filter_blocks,
                pin_l0_filter_and_index_blocks_in_cache,
                pin_top_level_index_and_filter,
                optimize_filters_for_hits,
                compression,
                compression_per_level,
                bottommost_compression,
                compression_opts,
                bottommost_compression_opts,
            );
        }
    }

    /// Column family names with quotes, escapes and spaces come back whole
    /// (a fuzz find: the section parser once cut a name at its first quote).
    #[test]
    fn awkward_cf_names_round_trip() {
        use crate::db::options_parser::parse;
        let o = Options::default();
        for name in ["\":fifo", "a \"b\" c", "back\\slash#", "x]y", "\"\""] {
            let mut cf = o.cf.clone();
            cf.num_levels = 3;
            let text = render(&o, &[(0, name, &cf)]);
            let f = parse("OPTIONS-000001", &text).unwrap();
            assert_eq!(
                f.column_families().collect::<Vec<_>>(),
                vec![name],
                "{text}"
            );
            let mut back = o.cf.clone();
            f.apply_cf(name, &mut back).unwrap();
            assert_eq!(back.num_levels, 3);
        }
    }
}
