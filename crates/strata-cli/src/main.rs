//! The `strata` command: table tools now (`sst_dump`, `sst_write`), and
//! later the ldb-style admin commands, `bench` and `stress`.

#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod flags;
mod sst_dump;
mod sst_write;

use std::process::ExitCode;

fn usage() -> &'static str {
    "usage: strata COMMAND [--flag=value ...]\n\
     commands:\n\
     \x20 sst_dump  --file=PATH [--command=scan|check|verify|raw|none] [--show_properties]\n\
     \x20           [--output_hex] [--input_key_hex] [--from=K] [--to=K] [--read_num=N]\n\
     \x20 sst_write --file=PATH [--compression_type=snappy|lz4|lz4hc|zstd|zlib|bzip2|none]\n\
     \x20           [--bloom_bits=10] [--block_size=4096] [--checksum_type=1] [--hex]\n\
     \x20           reads `key ==> value` lines from stdin\n"
}

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
