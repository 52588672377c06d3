//! The `strata` command: table tools (`sst_dump`, `sst_write`) and the
//! ldb-style admin commands (`strata --db=PATH COMMAND`).

#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod bench;
mod db_options;
mod flags;
mod ldb;
mod sst_dump;
mod sst_write;
mod stress;

use std::process::ExitCode;

fn usage() -> String {
    let mut u = String::from(USAGE);
    u.push_str(
        "  --db=PATH [--column_family=NAME] [--hex] [--key_hex] [--value_hex]\n\
         \x20           [--try_load_options=true] [--auto_compaction=BOOL] [--file_size=B] COMMAND ...\n",
    );
    u.push_str("            ldb commands: ");
    u.push_str(&ldb::COMMANDS.join(" "));
    u.push('\n');
    u
}

const USAGE: &str = "usage: strata COMMAND [--flag=value ...]\n\
     commands:\n\
     \x20 sst_dump  --file=PATH [--command=scan|check|verify|raw|none] [--show_properties]\n\
     \x20           [--output_hex] [--input_key_hex] [--from=K] [--to=K] [--read_num=N]\n\
     \x20 sst_write --file=PATH [--compression_type=snappy|lz4|lz4hc|zstd|zlib|bzip2|none]\n\
     \x20           [--bloom_bits=10] [--use_ribbon_filter] [--block_size=4096] [--checksum_type=1] [--hex]\n\
     \x20           [--compression_max_dict_bytes=0] [--compression_zstd_max_train_bytes=0]\n\
     \x20           [--compression_max_dict_buffer_bytes=0] [--compression_use_zstd_dict_trainer]\n\
     \x20           reads `key ==> value` lines from stdin\n\
     \x20 bench     [--benchmarks=fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,flush]\n\
     \x20           [--num=N] [--reads=N] [--key_size=16] [--value_size=100] [--batch_size=1]\n\
     \x20           [--sync] [--disable_wal] [--compression_type=snappy] [--bloom_bits=-1]\n\
     \x20           [--write_buffer_size=B] [--db=DIR] [--use_existing_db] [--statistics]\n\
     \x20           benchmarks also: compact, waitforcompaction, stats\n\
     \x20           compaction: [--compaction_style=0|1|2|3] [--num_levels=7]\n\
     \x20           [--level0_file_num_compaction_trigger=4] [--level0_slowdown_writes_trigger=20]\n\
     \x20           [--level0_stop_writes_trigger=36] [--target_file_size_base=B]\n\
     \x20           [--target_file_size_multiplier=1] [--max_bytes_for_level_base=B]\n\
     \x20           [--max_bytes_for_level_multiplier=10] [--level_compaction_dynamic_level_bytes]\n\
     \x20           [--max_compaction_bytes=0] [--soft_pending_compaction_bytes_limit=B]\n\
     \x20           [--hard_pending_compaction_bytes_limit=B] [--disable_auto_compactions]\n\
     \x20           [--max_background_jobs=2] [--max_background_compactions=-1]\n\
     \x20           [--max_background_flushes=-1] [--subcompactions=1] [--delayed_write_rate=B]\n\
     \x20           [--universal_size_ratio=N] [--universal_min_merge_width=N]\n\
     \x20           [--universal_max_merge_width=N] [--universal_max_size_amplification_percent=N]\n\
     \x20           [--fifo_compaction_max_table_files_size_mb=N] [--ttl_seconds=N]\n\
     \x20           [--periodic_compaction_seconds=N] [--optimize_filters_for_hits]\n\
     \x20           [--level_scaled_filters] (Strata's: Monkey) (db_bench's flags and defaults)\n\
     \x20 stress    --db=DIR [--expected_state=DIR.expected] [--threads=4] [--max_key=10000]\n\
     \x20           [--ops_per_thread=100000] [--duration=SECS] [--seed=N] [--sync_one_in=0]\n\
     \x20           [--disable_wal] [--value_size_extra=60] [--flush_one_in=2000]\n\
     \x20           [--compact_one_in=20000] [--verify_only], and bench's option flags:\n\
     \x20           verifies against the expected state, runs, verifies (exit 2: wrong data)\n\
     \x20 crash_test --db=DIR [--cycles=100] [--kill_min_ms=200] [--kill_max_ms=1500]\n\
     \x20           [--fresh_every=25] [--wal_off_one_in=5] [--threads=4] [--max_key=5000]\n\
     \x20           [--seed=N]: runs stress, SIGKILLs it at random times, verifies each restart\n";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd_pos) = args.iter().position(|a| !a.starts_with('-')) else {
        eprint!("{}", usage());
        return ExitCode::from(1);
    };
    let cmd = args[cmd_pos].clone();
    let rest: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != cmd_pos)
        .map(|(_, a)| a.clone())
        .collect();
    let f = flags::Flags::parse(&rest);
    if cmd == "bench" {
        return match bench::run(&f) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        };
    }
    if cmd == "stress" || cmd == "crash_test" {
        let r = if cmd == "stress" {
            stress::run(&f)
        } else {
            stress::crash_test::run(&f)
        };
        return match r {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                // 2: the data was wrong, not the run.
                ExitCode::from(if e.contains(stress::VERIFICATION_FAILED) {
                    2
                } else {
                    1
                })
            }
        };
    }
    if let Some(db) = f.get("db").map(|s| s.to_string()) {
        let positional: Vec<String> = f.positional.clone();
        return match ldb::run(&db, &cmd, &positional, &f) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        };
    }
    let result = match cmd.as_str() {
        "sst_dump" => sst_dump::run(&f),
        "sst_write" => sst_write::run(&f),
        "help" | "--help" => {
            print!("{}", usage());
            Ok(())
        }
        other => Err(format!("unknown command: {other}\n{}", usage())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}
