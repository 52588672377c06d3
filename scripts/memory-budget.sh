#!/usr/bin/env bash
# One memory budget (issue 18 item 4): fillrandom, then readrandom with
# THREADS readers, under Options::memory_budget (strata bench
# --memory_budget), sampling the process's resident set every 100 ms; then
# RocksDB's db_bench with its closest settings (a block cache of the
# budget, memtables charged to it with --cost_write_buffer_to_cache and a
# quarter of it as --db_write_buffer_size, table readers charged with
# --charge_table_reader) on the same flags, in the same run.
#
#   NUM=10000000 BUDGET=134217728 THREADS=8 ./scripts/memory-budget.sh
#
# ROCKSDB=path picks RocksDB's db_bench (default: Debian's, whose
# assertions cost speed, not memory).
set -euo pipefail
cd "$(dirname "$0")/.."
NUM="${NUM:-10000000}"
BUDGET="${BUDGET:-134217728}"
THREADS="${THREADS:-8}"
READS="${READS:-200000}"
ROCKSDB="${ROCKSDB:-$(command -v db_bench || true)}"
cargo build --release -q -p strata-cli
S="$PWD/target/release/strata"
work=$(mktemp -d "${TMPDIR:-/tmp}/membudget.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Runs a command, printing its output lines that report results and the
# peak VmRSS (MiB) sampled every 100 ms.
peak_rss() {
  "$@" > "$work/out" 2>&1 &
  local pid=$! peak=0 rss
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
    sleep 0.1
  done
  wait "$pid" || { cat "$work/out"; return 1; }
  tr '\r' '\n' < "$work/out" | grep -E "^(fillrandom|readrandom) " | sed 's/  */ /g' || true
  echo "  peak RSS: $((peak / 1024)) MiB (budget $((BUDGET >> 20)) MiB)"
}

common=(--num="$NUM" --bloom_bits=10 --seed=7)
echo "== strata bench --memory_budget=$BUDGET"
peak_rss "$S" bench --db="$work/strata" --benchmarks=fillrandom,waitforcompaction \
  --memory_budget="$BUDGET" "${common[@]}"
peak_rss "$S" bench --db="$work/strata" --use_existing_db=1 --benchmarks=readrandom \
  --threads="$THREADS" --reads="$READS" --memory_budget="$BUDGET" "${common[@]}"
du -sh "$work/strata" | awk '{print "  database: " $1}'
rm -rf "$work/strata"
if [ -n "$ROCKSDB" ]; then
  rocks=(--cache_size="$BUDGET" --cost_write_buffer_to_cache=1
    --db_write_buffer_size=$((BUDGET / 4)) --charge_table_reader=1)
  echo "== $ROCKSDB ${rocks[*]}"
  peak_rss "$ROCKSDB" --db="$work/rocksdb" --benchmarks=fillrandom,waitforcompaction \
    "${rocks[@]}" "${common[@]}"
  peak_rss "$ROCKSDB" --db="$work/rocksdb" --use_existing_db=1 --benchmarks=readrandom \
    --threads="$THREADS" --reads="$READS" "${rocks[@]}" "${common[@]}"
  du -sh "$work/rocksdb" | awk '{print "  database: " $1}'
fi
