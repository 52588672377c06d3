#!/usr/bin/env bash
# Space amplification race (issue 4): fillrandom+overwrite with small files
# and levels on Strata and on RocksDB 7.8.3's db_bench, same flags; the size
# on disk after the run divided by the size after a full manual compaction.
# Also prints each engine's longest write stall and throughput lines.
#   NUM=1000000 ./scripts/space-amp.sh
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=${NUM:-1000000}
cargo build --release -q -p strata-cli
STRATA=target/release/strata
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--num="$NUM" --key_size=16 --value_size=100 --compression_type=snappy
  --write_buffer_size=4194304 --target_file_size_base=4194304
  --max_bytes_for_level_base=16777216 --level_compaction_dynamic_level_bytes=true
  --threads=1)
size() { du -sb "$1" | cut -f1; }
run() { # name dir command...
  local name=$1 dir=$2
  shift 2
  "$@" --db="$dir" --benchmarks=fillrandom,overwrite "${flags[@]}" >"$work/$name.out" 2>&1
  grep -E '^(fillrandom|overwrite) ' "$work/$name.out" | sed "s/^/$name: /"
  grep -E '^Stalls|^size on disk' "$work/$name.out" | sed "s/^/$name: /" || true
  local before; before=$(size "$dir")
  "$@" --db="$dir" --use_existing_db=1 --benchmarks=compact "${flags[@]}" >"$work/$name.compact" 2>&1
  local after; after=$(size "$dir")
  echo "$name: size after run $before bytes, after full compaction $after bytes, ratio $(python3 -c "print(f'{$before/$after:.3f}')")"
}
run strata "$work/strata" "$STRATA" bench
run rocksdb "$work/rocksdb" db_bench
