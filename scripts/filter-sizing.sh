#!/usr/bin/env bash
# Filters sized by level (issue 18 item 5): the same fill, uniform bloom
# filters (10 bits a key) against `--level_scaled_filters` (Monkey), then
# readrandom and readmissing ROUNDS times on each: throughput, the filter
# bytes of all tables, the files per level, and the filter statistics
# (readmissing's positives are all false).
#
#   NUM=2000000 ROUNDS=3 ./scripts/filter-sizing.sh
#   EXTRA="--level_compaction_dynamic_level_bytes=1" NUM=10000000 ./scripts/filter-sizing.sh
#
# EXTRA: more strata bench flags for the fill.
#
# L0 drains after each flush (--level0_file_num_compaction_trigger=1) so
# both trees end with the same shape.
set -euo pipefail
cd "$(dirname "$0")/.."
NUM="${NUM:-2000000}"
ROUNDS="${ROUNDS:-3}"
cargo build --release -q -p strata-cli
S="$PWD/target/release/strata"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for mode in 0 1; do
  d="$work/db$mode"
  "$S" bench --db="$d" --benchmarks=fillrandom,waitforcompaction --num="$NUM" --seed=7 \
    --bloom_bits=10 --write_buffer_size=4194304 --target_file_size_base=4194304 \
    --max_bytes_for_level_base=16777216 --level0_file_num_compaction_trigger=1 \
    --level_scaled_filters="$mode" ${EXTRA:-} | grep ops/sec
  bytes=0
  for f in "$d"/*.sst; do
    b=$("$S" sst_dump --file="$f" --show_properties | awk -F': ' '/filter block size/{print $2}')
    bytes=$((bytes + b))
  done
  levels=$("$S" --db="$d" dump_live_files 2>/dev/null |
    awk '/^--- level/{l=$3} /^ *[0-9]+:[0-9]+/{c[l]++} END{for (k in c) printf "L%s: %d files ", k, c[k]}')
  echo "level_scaled_filters=$mode: filter bytes $bytes; $levels"
  for r in $(seq "$ROUNDS"); do
    for b in readrandom readmissing; do
      # One benchmark per run, so the statistics are its own: for
      # readmissing every positive is a false one.
      "$S" bench --db="$d" --use_existing_db=1 --benchmarks="$b" --num="$NUM" \
        --reads=500000 --seed="$r" --bloom_bits=10 --level_scaled_filters="$mode" --statistics 2>&1 |
        tr '\r' '\n' | awk -v b="$b" '
          $1 == b { ops = $5 }
          /bloom.filter.useful COUNT/ { u = $4 }
          /bloom.filter.full.positive COUNT/ { p = $4 }
          END {
            line = sprintf("%-12s %9s ops/s  filter probes %d  positives %d", b, ops, u + p, p)
            if (b == "readmissing") line = line sprintf("  (false positives per lookup %.5f, per probe %.5f)", p / 500000, p / (u + p))
            print line
          }'
    done
  done
done
