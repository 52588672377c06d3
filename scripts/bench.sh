#!/usr/bin/env bash
# The main job: Strata against RocksDB 7.8.3 on temporary databases.
# `strata bench` and RocksDB's `db_bench` run the same benchmarks with the
# same flags, alternating, ROUNDS times; the table shows each side's
# median ops/sec and the ratio (Strata / RocksDB; above 1 is faster).
#
#   ./scripts/bench.sh                 # 1M keys, 3 rounds
#   NUM=200000 ROUNDS=5 ./scripts/bench.sh
#   ./scripts/bench.sh --micro         # criterion micro-benchmarks instead
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v cargo >/dev/null 2>&1; then
  curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
export TMPDIR="${TMPDIR:-/tmp}"

if [ "${1:-}" = "--micro" ]; then
  shift
  exec cargo bench -p strata --bench table -- "$@"
fi

if ! command -v db_bench >/dev/null 2>&1; then
  as_root apt-get install -y rocksdb-tools >/dev/null 2>&1 || {
    as_root apt-get update >/dev/null
    as_root apt-get install -y rocksdb-tools >/dev/null
  }
fi

cargo build --release -p strata-cli
STRATA=target/release/strata
NUM="${NUM:-1000000}"
ROUNDS="${ROUNDS:-3}"
# Memtable-only reads first (the write buffer holds everything), then the
# same reads from a level-0 table after `flush`.
BENCHMARKS="${BENCHMARKS:-fillseq,fillrandom,readrandom,flush,readrandom,readseq}"
FLAGS=(--num="$NUM" --key_size=16 --value_size=100 --compression_type=snappy
  --write_buffer_size=1073741824 --max_write_buffer_number=2 --bloom_bits=10
  --benchmarks="$BENCHMARKS")

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Prints "name#occurrence ops_per_sec" for each report line of a run
# (readrandom#1 is from the memtable, readrandom#2 after the flush).
parse() {
  awk '/ops\/sec/ { for (i = 1; i <= NF; i++) if ($(i) == "ops/sec") print $1 "#" (++seen[$1]), $(i-1) }' "$1"
}

for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r/$ROUNDS: strata bench ${FLAGS[*]}"
  "$STRATA" bench --db="$work/strata" "${FLAGS[@]}" | tee "$work/strata.$r.txt" | grep ops/sec
  rm -rf "$work/strata"
  echo "== round $r/$ROUNDS: db_bench ${FLAGS[*]}"
  db_bench --db="$work/rocksdb" --threads=1 "${FLAGS[@]}" >"$work/rocksdb.$r.txt" 2>&1
  grep ops/sec "$work/rocksdb.$r.txt"
  rm -rf "$work/rocksdb"
  parse "$work/strata.$r.txt" | sed 's/^/strata /' >>"$work/all.txt"
  parse "$work/rocksdb.$r.txt" | sed 's/^/rocksdb /' >>"$work/all.txt"
done

echo
echo "Median ops/sec over $ROUNDS rounds, $NUM keys (16-byte keys, 100-byte values):"
printf '%-14s %14s %14s %8s\n' benchmark strata rocksdb ratio
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for key in $(awk '$1 == "strata" { print $2 }' "$work/all.txt" | awk '!seen[$0]++'); do
  s=$(awk -v k="$key" '$1 == "strata" && $2 == k { print $3 }' "$work/all.txt" | median)
  r=$(awk -v k="$key" '$1 == "rocksdb" && $2 == k { print $3 }' "$work/all.txt" | median)
  ratio=$(awk -v s="$s" -v r="$r" 'BEGIN { if (r > 0) printf "%.2f", s / r; else print "-" }')
  printf '%-14s %14.0f %14s %8s\n' "$key" "$s" "${r:--}" "$ratio"
done
