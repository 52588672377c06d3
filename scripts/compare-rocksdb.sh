#!/usr/bin/env bash
# The race: a release build of RocksDB's db_bench against `strata bench`, same flags,
# same seed (so both draw the same keys), fresh directories, alternating
# which engine goes first, ROUNDS rounds. Prints one table (median ops/sec
# per benchmark and the ratio Strata / RocksDB, plus write amplification,
# size on disk and peak RSS of both) and writes it with a chart to OUT.
#
#   ./scripts/compare-rocksdb.sh                      # Core suite, 1M keys, 3 rounds
#   NUM=10000000 ROUNDS=1 READS=1000000 ./scripts/compare-rocksdb.sh
#   ./scripts/compare-rocksdb.sh --bloom_bits=10      # extra flags go to both engines
#   SUITE=threads|seed003|sync|flash|latency|seed002|backup|rangedel|all ./scripts/compare-rocksdb.sh
#                                                     # the named suites (scripts/race-suites.sh)
#
# RocksDB: release (NDEBUG) builds made once per machine by
# scripts/build-rocksdb.sh and cached under target/rocksdb/ (about 15
# minutes on 2 cores the first time). ROCKSDB=7.8.3 (default), 10.4.2, both,
# or debian (Debian's db_bench, built with assertions: the figures are then
# not comparable, and the table says so).
#
# Environment:
#   NUM      keys (--num), default 1000000
#   READS    --reads for the read benchmarks (default: NUM)
#   ROUNDS   rounds, default 3
#   WRITES   write benchmarks, run on a fresh DB (default fillseq,fillrandom,overwrite);
#            the phase ends with waitforcompaction, so the reads start from a
#            settled tree whatever the timing of the last compaction
#   READSET  benchmarks then run on that DB (default readrandom,readseq,readreverse,seekrandom,readwhilewriting)
#   OUT      results directory (default target/race/<date>)
#
# Each round and engine runs WRITES on a fresh DB, then READSET with
# --use_existing_db, each under /usr/bin/time: peak RSS is the larger of
# the two; write amplification is the bytes the WRITES process wrote to
# disk (getrusage blocks x 512: WAL, tables, MANIFEST; the compactions it
# leads to included) over the user bytes (operations x (key + value)); size
# on disk is the directory after WRITES.
# A last pair of runs records fillrandom's throughput every second
# (--report_interval_seconds=1) for the chart.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${SUITE:-}" ] && [ "$SUITE" != core ]; then
  exec ./scripts/race-suites.sh "$@"
fi
ROCKSDB="${ROCKSDB:-7.8.3}"
if [ "$ROCKSDB" = both ]; then
  base_out="${OUT:-target/race/$(date +%Y%m%d-%H%M%S)}"
  for v in 7.8.3 10.4.2; do
    ROCKSDB=$v OUT="$base_out/$v" "$0" "$@"
  done
  exit 0
fi

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v cargo >/dev/null 2>&1; then
  curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
if [ "$ROCKSDB" = debian ]; then
  if ! command -v db_bench >/dev/null 2>&1; then
    as_root apt-get install -y rocksdb-tools >/dev/null 2>&1 || {
      as_root apt-get update >/dev/null
      as_root apt-get install -y rocksdb-tools >/dev/null
    }
  fi
  DB_BENCH="$(command -v db_bench)"
  BUILD_NOTE="Debian's db_bench, built WITH assertions: figures not comparable"
else
  DB_BENCH="$(./scripts/build-rocksdb.sh "$ROCKSDB")"
  BUILD_NOTE="release build (NDEBUG) of RocksDB $ROCKSDB"
fi
echo "RocksDB: $DB_BENCH ($BUILD_NOTE)" >&2
if [ ! -x /usr/bin/time ]; then
  as_root apt-get install -y time >/dev/null
fi

cargo build --release -p strata-cli
STRATA="$PWD/target/release/strata"
NUM="${NUM:-1000000}"
READS="${READS:-$NUM}"
ROUNDS="${ROUNDS:-3}"
WRITES="${WRITES:-fillseq,fillrandom,overwrite}"
READSET="${READSET:-readrandom,readseq,readreverse,seekrandom,readwhilewriting}"
OUT="${OUT:-target/race/$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

FLAGS=(--num="$NUM" --key_size=16 --value_size=100 --compression_type=snappy
  --cache_size=8388608 --seed=1234 --threads=1 "$@")

engine_cmd() {
  case "$1" in
    strata) echo "$STRATA bench" ;;
    rocksdb) echo "$DB_BENCH" ;;
  esac
}

run_engine() { # engine round
  local e="$1" r="$2" dir="$work/$1"
  local cmd
  cmd=$(engine_cmd "$e")
  rm -rf "$dir"
  echo "== round $r: $e $WRITES then $READSET" >&2
  # shellcheck disable=SC2086
  /usr/bin/time -f "%M %O" -o "$OUT/$e.r$r.writes.time" \
    $cmd --db="$dir" --benchmarks="$WRITES,waitforcompaction" "${FLAGS[@]}" \
    >"$OUT/$e.r$r.writes.txt" 2>"$OUT/$e.r$r.writes.err"
  du -sb "$dir" | cut -f1 >"$OUT/$e.r$r.size"
  # shellcheck disable=SC2086
  /usr/bin/time -f "%M %O" -o "$OUT/$e.r$r.reads.time" \
    $cmd --db="$dir" --use_existing_db=1 --reads="$READS" --benchmarks="$READSET" "${FLAGS[@]}" \
    >"$OUT/$e.r$r.reads.txt" 2>"$OUT/$e.r$r.reads.err"
  grep -h "ops/sec" "$OUT/$e.r$r.writes.txt" "$OUT/$e.r$r.reads.txt" >&2
  rm -rf "$dir"
}

for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="strata rocksdb"; else order="rocksdb strata"; fi
  for e in $order; do run_engine "$e" "$r"; done
done

# Throughput over time, for the chart.
for e in strata rocksdb; do
  cmd=$(engine_cmd "$e")
  rm -rf "$work/$e"
  # shellcheck disable=SC2086
  $cmd --db="$work/$e" --benchmarks=fillrandom --report_interval_seconds=1 \
    --report_file="$OUT/$e.timeline.csv" "${FLAGS[@]}" >"$OUT/$e.timeline.txt" 2>/dev/null
  rm -rf "$work/$e"
done

{
  echo "RocksDB binary: $DB_BENCH ($BUILD_NOTE)"
  echo
  python3 scripts/race_report.py "$OUT" "$ROUNDS" "$NUM" 116 "${FLAGS[*]}"
} | tee "$OUT/summary.md"
echo
echo "results, logs and chart: $OUT (race.svg)"
