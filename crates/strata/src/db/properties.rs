//! DB properties (RocksDB's `GetProperty` names) and the options dump in
//! the LOG at open.
//!
//! Supported: `rocksdb.stats` (compaction stats tables and stall
//! counters), `rocksdb.levelstats`, `rocksdb.num-files-at-level<N>`,
//! `rocksdb.estimate-pending-compaction-bytes`, `rocksdb.compaction-pending`,
//! `rocksdb.num-running-compactions`, `rocksdb.num-running-flushes`,
//! `rocksdb.total-sst-files-size`, `rocksdb.base-level`,
//! `rocksdb.is-write-stopped`, `rocksdb.actual-delayed-write-rate`, the
//! memtable properties and `rocksdb.estimate-num-keys`,
//! `rocksdb.block-cache-capacity`, `rocksdb.block-cache-usage` and
//! `rocksdb.estimate-table-readers-mem` (index, filter, dictionary and
//! range-tombstone bytes of the open table readers).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::flow_control::StallCondition;
use super::stats::{LevelShape, render_cf, render_stalls};
use super::{ColumnFamilyHandle, DB, DbInner};
use crate::compaction::score;

/// The LOG's lines for a `CompressionOptions`, as RocksDB prints them.
fn compression_opts_lines(name: &str, o: &crate::table::CompressionOptions) -> String {
    [
        format!("Options.{name}.window_bits: {}", o.window_bits),
        format!("Options.{name}.level: {}", o.level),
        format!("Options.{name}.strategy: {}", o.strategy),
        format!("Options.{name}.max_dict_bytes: {}", o.max_dict_bytes),
        format!(
            "Options.{name}.zstd_max_train_bytes: {}",
            o.zstd_max_train_bytes
        ),
        format!(
            "Options.{name}.use_zstd_dict_trainer: {}",
            o.use_zstd_dict_trainer
        ),
        format!("Options.{name}.parallel_threads: {}", o.parallel_threads),
        format!("Options.{name}.enabled: {}", o.enabled),
        format!(
            "Options.{name}.max_dict_buffer_bytes: {}",
            o.max_dict_buffer_bytes
        ),
    ]
    .join("\n")
}

impl DbInner {
    /// Writes the options to the LOG (at open).
    pub(crate) fn log_options(&self) {
        let o = &self.options;
        self.info_log
            .log(&format!("Strata version {}", env!("CARGO_PKG_VERSION")));
        self.info_log
            .log(&format!("DB path: {}", self.dbname.display()));
        for line in [
            format!("Options.max_background_jobs: {}", o.max_background_jobs),
            format!("Options.max_subcompactions: {}", o.max_subcompactions),
            format!("Options.memory_budget: {:?}", o.memory_budget),
            format!("Options.db_host_id: {}", o.db_host_id),
            // RocksDB's form: the capacity, or None.
            match &o.row_cache {
                Some(c) => format!("Options.row_cache: {}", c.capacity()),
                None => "Options.row_cache: None".to_string(),
            },
            format!("Options.delayed_write_rate: {}", o.delayed_write_rate),
            format!("Options.max_open_files: {}", o.max_open_files),
            format!("Options.wal_recovery_mode: {:?}", o.wal_recovery_mode),
            format!("Options.paranoid_checks: {}", o.paranoid_checks),
            format!("Options.allow_mmap_reads: {}", u8::from(o.allow_mmap_reads)),
            format!(
                "Options.allow_mmap_writes: {}",
                u8::from(o.allow_mmap_writes)
            ),
            format!("Options.use_direct_reads: {}", u8::from(o.use_direct_reads)),
            format!(
                "Options.use_direct_io_for_flush_and_compaction: {}",
                u8::from(o.use_direct_io_for_flush_and_compaction)
            ),
        ] {
            self.info_log.log(&line);
        }
        let c = &o.cf;
        for line in [
            format!("Options.comparator: {}", c.comparator.name()),
            format!("Options.write_buffer_size: {}", c.write_buffer_size),
            format!(
                "Options.memtable_huge_page_size: {}",
                c.memtable_huge_page_size
            ),
            format!(
                "Options.max_write_buffer_number: {}",
                c.max_write_buffer_number
            ),
            format!("Options.compression: {}", c.compression.name()),
            format!(
                "Options.bottommost_compression: {}",
                c.bottommost_compression.map_or("Disabled", |b| b.name())
            ),
            compression_opts_lines(
                "bottommost_compression_opts",
                &c.bottommost_compression_opts,
            ),
            compression_opts_lines("compression_opts", &c.compression_opts),
            format!("Options.num_levels: {}", c.num_levels),
            format!(
                "Options.compaction_style: {}",
                c.compaction_style.rocksdb_name()
            ),
            format!(
                "Options.level0_file_num_compaction_trigger: {}",
                c.level0_file_num_compaction_trigger
            ),
            format!(
                "Options.level0_slowdown_writes_trigger: {}",
                c.level0_slowdown_writes_trigger
            ),
            format!(
                "Options.level0_stop_writes_trigger: {}",
                c.level0_stop_writes_trigger
            ),
            format!("Options.target_file_size_base: {}", c.target_file_size_base),
            format!(
                "Options.target_file_size_multiplier: {}",
                c.target_file_size_multiplier
            ),
            format!(
                "Options.max_bytes_for_level_base: {}",
                c.max_bytes_for_level_base
            ),
            format!(
                "Options.max_bytes_for_level_multiplier: {}",
                c.max_bytes_for_level_multiplier
            ),
            format!(
                "Options.level_compaction_dynamic_level_bytes: {}",
                c.level_compaction_dynamic_level_bytes
            ),
            format!(
                "Options.max_compaction_bytes: {}",
                c.effective_max_compaction_bytes()
            ),
            format!(
                "Options.soft_pending_compaction_bytes_limit: {}",
                c.soft_pending_compaction_bytes_limit
            ),
            format!(
                "Options.hard_pending_compaction_bytes_limit: {}",
                c.hard_pending_compaction_bytes_limit
            ),
            format!(
                "Options.disable_auto_compactions: {}",
                c.disable_auto_compactions
            ),
            format!(
                "Options.compaction_filter: {}",
                c.compaction_filter.as_ref().map_or("None", |f| f.name())
            ),
            format!("Options.compaction_options_universal: {:?}", c.universal),
            format!("Options.compaction_options_fifo: {:?}", c.fifo),
            format!("Options.ttl: {}", c.ttl),
            format!(
                "Options.periodic_compaction_seconds: {}",
                c.periodic_compaction_seconds
            ),
            format!("Options.bloom_bits_per_key: {:?}", c.bloom_bits_per_key),
            format!(
                "Options.filter_policy: {}",
                c.bloom_bits_per_key
                    .map_or_else(|| "nullptr".into(), |b| c.filter_policy.options_string(b))
            ),
            format!(
                "Options.optimize_filters_for_hits: {}",
                c.optimize_filters_for_hits
            ),
            format!("Options.level_scaled_filters: {}", c.level_scaled_filters),
            format!("Options.block_size: {}", c.block_size),
        ] {
            for l in line.lines() {
                self.info_log.log(l);
            }
        }
    }

    pub(crate) fn property(&self, cf_id: u32, name: &str) -> Option<String> {
        if let Some(v) = self.memtable_property(cf_id, name) {
            return Some(v);
        }
        let st = self.lock_state();
        let cf = st.cfs.get(&cf_id)?;
        let v = st.versions.current(cf_id)?;
        let scores = score::compute(&v, &cf.options, &HashSet::new());
        if let Some(l) = name.strip_prefix("rocksdb.num-files-at-level") {
            let l: usize = l.parse().ok()?;
            return Some(v.num_files(l).to_string());
        }
        match name {
            "rocksdb.block-cache-capacity" => cf
                .options
                .block_cache
                .as_ref()
                .map(|c| c.capacity().to_string()),
            "rocksdb.block-cache-usage" => cf
                .options
                .block_cache
                .as_ref()
                .map(|c| c.usage().to_string()),
            "rocksdb.block-cache-pinned-usage" => cf
                .options
                .block_cache
                .as_ref()
                .map(|c| c.pinned_usage().to_string()),
            "rocksdb.estimate-table-readers-mem" => {
                Some(self.table_cache.readers_memory().to_string())
            }
            "rocksdb.stats" | "strata.stats" => {
                let mut out = String::new();
                for c in st.cfs.values().filter(|c| !c.dropped && c.id == cf_id) {
                    let Some(v) = st.versions.current(c.id) else {
                        continue;
                    };
                    let sc = score::compute(&v, &c.options, &HashSet::new());
                    let shapes: Vec<LevelShape> = (0..v.num_levels())
                        .map(|l| LevelShape {
                            files: v.num_files(l),
                            being_compacted: v
                                .files(l)
                                .iter()
                                .filter(|f| st.bg_work.is_being_compacted(f.number))
                                .count(),
                            bytes: v.total_size(l),
                            score: sc.score_of(l),
                        })
                        .collect();
                    let stats = st.stats.get(&c.id).cloned().unwrap_or_default();
                    out.push_str(&render_cf(
                        &c.name,
                        &shapes,
                        &stats,
                        self.user_bytes_written.load(Ordering::Relaxed),
                        self.started.elapsed().as_secs_f64(),
                    ));
                }
                out.push_str(&render_stalls(&st.stall_stats));
                let _ = writeln!(
                    out,
                    "Write stall: {:?}; delayed write rate {} bytes/s",
                    st.write_stall,
                    st.write_controller.rate()
                );
                Some(out)
            }
            "rocksdb.levelstats" => {
                let mut out = String::from("Level Files Size(MB)\n--------------------\n");
                for l in 0..v.num_levels() {
                    let _ = writeln!(
                        out,
                        "{l:>5} {:>5} {:>8.0}",
                        v.num_files(l),
                        v.total_size(l) as f64 / 1048576.0
                    );
                }
                Some(out)
            }
            "rocksdb.estimate-pending-compaction-bytes" => {
                Some(scores.pending_compaction_bytes.to_string())
            }
            "rocksdb.compaction-pending" => {
                Some(u8::from(scores.scores.first().is_some_and(|s| s.1 >= 1.0)).to_string())
            }
            "rocksdb.num-running-compactions" => {
                Some(st.bg_work.compactions_scheduled().to_string())
            }
            "rocksdb.num-running-flushes" => Some(st.bg_work.flushes_scheduled().to_string()),
            "rocksdb.total-sst-files-size" => Some(
                v.all_files()
                    .map(|(_, f)| f.file_size)
                    .sum::<u64>()
                    .to_string(),
            ),
            "rocksdb.base-level" => Some(scores.base_level.to_string()),
            "rocksdb.is-write-stopped" => {
                Some(u8::from(matches!(st.write_stall, StallCondition::Stopped { .. })).to_string())
            }
            "rocksdb.actual-delayed-write-rate" => Some(match st.write_stall {
                StallCondition::Delayed { .. } => st.write_controller.rate().to_string(),
                _ => "0".into(),
            }),
            _ => None,
        }
    }
}

impl DbInner {
    /// Properties of the memtables and key counts, read from a SuperVersion
    /// (no DB lock held while tables are opened).
    fn memtable_property(&self, cf_id: u32, name: &str) -> Option<String> {
        const NAMES: &[&str] = &[
            "rocksdb.num-entries-active-mem-table",
            "rocksdb.num-deletes-active-mem-table",
            "rocksdb.num-entries-imm-mem-tables",
            "rocksdb.num-deletes-imm-mem-tables",
            "rocksdb.num-immutable-mem-table",
            "rocksdb.cur-size-active-mem-table",
            "rocksdb.cur-size-all-mem-tables",
            "rocksdb.size-all-mem-tables",
            "rocksdb.estimate-num-keys",
        ];
        if !NAMES.contains(&name) {
            return None;
        }
        let sv = self.super_version(cf_id).ok()?;
        let imm_entries: u64 = sv.imms.iter().map(|m| m.num_entries()).sum();
        let imm_deletes: u64 = sv.imms.iter().map(|m| m.num_deletes()).sum();
        let all_size = sv.mem.approximate_memory_usage()
            + sv.imms
                .iter()
                .map(|m| m.approximate_memory_usage())
                .sum::<usize>();
        let v = match name {
            "rocksdb.num-entries-active-mem-table" => sv.mem.num_entries(),
            "rocksdb.num-deletes-active-mem-table" => sv.mem.num_deletes(),
            "rocksdb.num-entries-imm-mem-tables" => imm_entries,
            "rocksdb.num-deletes-imm-mem-tables" => imm_deletes,
            "rocksdb.num-immutable-mem-table" => sv.imms.len() as u64,
            "rocksdb.cur-size-active-mem-table" => sv.mem.approximate_memory_usage() as u64,
            "rocksdb.cur-size-all-mem-tables" | "rocksdb.size-all-mem-tables" => all_size as u64,
            // RocksDB's estimate: entries minus twice the deletions (a
            // deletion hides one entry and counts as one), memtables and
            // tables (from their properties) alike.
            _ => {
                let mut n = (sv.mem.num_entries() + imm_entries)
                    .saturating_sub(2 * (sv.mem.num_deletes() + imm_deletes));
                for (_, f) in sv.version.all_files() {
                    let t = self.sv_table(&sv, f).ok()?;
                    let p = t.properties();
                    n += p.num_entries.saturating_sub(2 * p.num_deletions);
                }
                n
            }
        };
        Some(v.to_string())
    }
}

impl DB {
    /// A DB property by RocksDB's name (see the module comment), for the
    /// default column family; `None` for unknown names.
    pub fn property(&self, name: &str) -> Option<String> {
        self.inner.property(0, name)
    }

    pub fn property_cf(&self, cf: &ColumnFamilyHandle, name: &str) -> Option<String> {
        self.inner.property(cf.id, name)
    }

    /// Per-level compaction counters of the default column family (index
    /// = output level; L0 counts flushes).
    pub fn level_stats(&self) -> Vec<super::LevelStats> {
        self.inner
            .lock_state()
            .stats
            .get(&0)
            .map(|s| s.levels.clone())
            .unwrap_or_default()
    }

    /// Write-stall counters since open.
    pub fn stall_stats(&self) -> super::StallStats {
        self.inner.lock_state().stall_stats
    }
}
