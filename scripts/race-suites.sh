#!/usr/bin/env bash
# Named race suites: `strata bench` against release (NDEBUG) builds of
# RocksDB's db_bench (scripts/build-rocksdb.sh), same flags and seed, fresh
# directories, alternating which engine goes first, ROUNDS rounds; prints
# the median ops/sec of each case for each engine and the ratio.
#
#   SUITE=threads ./scripts/race-suites.sh   # fillrandom, overwrite at 1/2/4/8 threads; readwhilewriting at 4
#   SUITE=seed003 ./scripts/race-suites.sh   # 8 threads, batch 8, no auto compactions: vanilla, pipelined, unordered
#   SUITE=sync    ./scripts/race-suites.sh   # fillrandom --sync=1 at 1 and 8 threads
#   SUITE=flash   ./scripts/race-suites.sh   # seed 001's shapes: 10-byte keys, 800-byte values, no compression
#   SUITE=latency ./scripts/race-suites.sh   # 10M fillrandom --histogram: P99.99 and max write latency
#   SUITE=seed002 ./scripts/race-suites.sh   # seed 002's RAM shapes on tmpfs: PlainTable, 20-byte keys with
#                                            # 20-byte (point lookup) or 12-byte prefixes, readwhilewriting
#                                            # with 2 and 4 readers and a rate-limited writer
#   SUITE=backup  ./scripts/race-suites.sh   # backup and restore of a 1.1 GB database (ops/sec = 1 / seconds)
#   SUITE=rangedel ./scripts/race-suites.sh  # reads over 1,000 range tombstones (width 100) among 1M keys
#   SUITE=transactions ./scripts/race-suites.sh
#                                            # randomtransaction, pessimistic and optimistic, 1 and 4
#                                            # threads, 2 sets; RocksDB: 10.4.2-txn (the only db_bench
#                                            # whose randomtransaction runs in a release build; see
#                                            # scripts/build-rocksdb.sh) unless ROCKSDB is given
#   SUITE=all     ./scripts/race-suites.sh   # all of the above
#
# Environment:
#   ROCKSDB  7.8.3 (default), 10.4.2, both, or debian (Debian's db_bench,
#            built with assertions: figures not comparable, and said so)
#   ROUNDS   rounds (default 3)
#   SCALE    multiplies every suite's key count (default 1)
#   OUT      results directory (default target/race/suites-<time>)
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE="${SUITE:-all}"
ROUNDS="${ROUNDS:-3}"
SCALE="${SCALE:-1}"
if [ "$SUITE" = transactions ]; then
  ROCKSDB="${ROCKSDB:-10.4.2-txn}"
else
  ROCKSDB="${ROCKSDB:-7.8.3}"
fi
OUT="${OUT:-target/race/suites-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if ! command -v cargo >/dev/null 2>&1; then
  curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
cargo build --release -p strata-cli >&2
STRATA="$PWD/target/release/strata"

versions=()
case "$ROCKSDB" in
  both) versions=(7.8.3 10.4.2) ;;
  *) versions=("$ROCKSDB") ;;
esac
declare -A BIN
for v in "${versions[@]}"; do
  if [ "$v" = debian ]; then
    command -v db_bench >/dev/null || apt-get install -y rocksdb-tools >/dev/null
    BIN[$v]="$(command -v db_bench)"
    echo "WARNING: racing Debian's db_bench, built with assertions on: figures are not comparable" >&2
  else
    BIN[$v]="$(./scripts/build-rocksdb.sh "$v")"
  fi
done

n() { echo $(($1 * SCALE)); }

# A case: name | prep benchmarks and flags (run first on the fresh DB, or -) |
# measured benchmarks and flags (the last result line is the figure).
cases=()
add() { cases+=("$1|$2|$3"); }
# Where the databases live (seed002 puts them on tmpfs).
DBROOT="$work"
suite_threads() {
  local num; num=$(n 200000)
  for t in 1 2 4 8; do
    add "fillrandom threads=$t" - "--benchmarks=fillrandom --num=$num --threads=$t"
  done
  for t in 1 2 4 8; do
    add "overwrite threads=$t" "--benchmarks=fillseq --num=$num" \
      "--use_existing_db=1 --benchmarks=overwrite --num=$num --threads=$t"
  done
  add "readwhilewriting threads=4" "--benchmarks=fillseq --num=$num" \
    "--use_existing_db=1 --benchmarks=readwhilewriting --num=$num --threads=4"
}
suite_seed003() {
  local f; f="--benchmarks=fillrandom --num=$(n 200000) --threads=8 --batch_size=8 --disable_auto_compactions=1"
  add "vanilla (8 threads, batch 8)" - "$f --enable_pipelined_write=false"
  add "pipelined (8 threads, batch 8)" - "$f --enable_pipelined_write=true"
  add "unordered (8 threads, batch 8)" - "$f --enable_pipelined_write=false --unordered_write=1"
}
suite_sync() {
  add "fillrandom --sync=1 threads=1" - "--benchmarks=fillrandom --sync=1 --num=$(n 5000) --threads=1"
  add "fillrandom --sync=1 threads=8" - "--benchmarks=fillrandom --sync=1 --num=$(n 2000) --threads=8"
}
suite_flash() {
  local f num; num=$(n 500000)
  f="--key_size=10 --value_size=800 --compression_type=none --num=$num"
  add "bulk load fillseq, WAL off" - "$f --benchmarks=fillseq --disable_wal=1"
  add "bulk load fillrandom, WAL off, no compactions" - \
    "$f --benchmarks=fillrandom --disable_wal=1 --disable_auto_compactions=1"
  add "overwrite" "$f --benchmarks=fillseq --disable_wal=1" "$f --use_existing_db=1 --benchmarks=overwrite"
}
suite_backup() {
  local f; f="--num=$(n 2000000) --value_size=1000"
  add "backup (1.1 GB)" "$f --benchmarks=fillseq,compact" \
    "$f --use_existing_db=1 --benchmarks=backup --backup_dir=$work/bk"
  add "restore (1.1 GB)" "$f --benchmarks=fillseq,compact" \
    "$f --use_existing_db=1 --benchmarks=backup,restore --backup_dir=$work/bk --restore_dir=$work/rs"
}
# Seed 002 (RocksDB's in-memory benchmark), scaled to this machine: 1M
# keys (SCALE x) of 20+100 bytes in PlainTable files on tmpfs, bloom 10
# with locality, the point-lookup (prefix = the whole key) and
# prefix-range (12-byte prefixes, 10 keys each) configurations; the writer
# runs at 1.2 MB/s and 9.8 MB/s (the seed's 10240 and 81920 writes/s of
# 120 bytes). The seed's --memtablerep=prefix_hash, with
# --allow_concurrent_memtable_write=false, which RocksDB 7.8.3 requires for
# it (the seed predates that option).
suite_seed002() {
  DBROOT=/dev/shm
  local p num; num=$(n 1000000)
  p="--key_size=20 --value_size=100 --compression_type=none --compression_ratio=1 --use_plain_table=1"
  p="$p --mmap_read=1 --bloom_bits=10 --bloom_locality=1 --num_levels=6 --write_buffer_size=134217728"
  p="$p --max_write_buffer_number=2 --level0_file_num_compaction_trigger=8"
  p="$p --target_file_size_base=134217728 --max_bytes_for_level_base=1073741824"
  p="$p --level0_slowdown_writes_trigger=16 --level0_stop_writes_trigger=24 --num=$num"
  local hash="--memtablerep=prefix_hash --allow_concurrent_memtable_write=false"
  local shape flags rate readers
  # The vector memtable's bulk load (no concurrent memtable writes with it).
  add "vector memtable bulk load: fillrandom, no compactions" - \
    "$p --prefix_size=20 --memtablerep=vector --allow_concurrent_memtable_write=false --disable_auto_compactions=1 --benchmarks=fillrandom"
  for shape in "point lookup|--prefix_size=20 --keys_per_prefix=0" "prefix range|--prefix_size=12 --keys_per_prefix=10"; do
    flags="${shape#*|}"
    flags="$flags $hash"
    add "${shape%%|*}: filluniquerandom" - "$p $flags --benchmarks=filluniquerandom"
    for rate in 1200000 9830400; do
      for readers in 2 4; do
        add "${shape%%|*}: readwhilewriting $readers readers, writer $((rate / 1000)) KB/s" \
          "$p $flags --benchmarks=filluniquerandom" \
          "$p $flags --use_existing_db=1 --benchmarks=readwhilewriting --threads=$readers --duration=15 --benchmark_write_rate_limit=$rate"
      done
    done
  done
}
# Reads where range tombstones cover part of the keys: db_bench's fill
# writes a DeleteRange of 100 keys after every 1,000 puts, 1,000 in all.
suite_rangedel() {
  local f num; num=$(n 1000000)
  f="--num=$num --writes_per_range_tombstone=1000 --max_num_range_tombstones=1000 --range_tombstone_width=100"
  f="$f --compression_type=snappy --cache_size=67108864"
  local reads="--use_existing_db=1 --reads=$(n 300000)"
  add "readrandom over range tombstones" "$f --benchmarks=fillrandom" "$f $reads --benchmarks=readrandom"
  add "seekrandom over range tombstones" "$f --benchmarks=fillrandom" \
    "$f $reads --benchmarks=seekrandom --seek_nexts=10"
  add "readseq over range tombstones" "$f --benchmarks=fillrandom" "$f $reads --benchmarks=readseq"
}
suite_transactions() {
  local num; num=$(n 200000)
  for kind in transaction_db optimistic_transaction_db; do
    for t in 1 4; do
      add "randomtransaction --$kind threads=$t" - \
        "--benchmarks=randomtransaction --$kind=1 --transaction_sets=2 --num=$num --threads=$t"
    done
  done
}
suite_latency() {
  add "fillrandom 10M --histogram" - "--benchmarks=fillrandom --num=$(n 10000000) --histogram=1"
}
case "$SUITE" in
  all) suite_threads; suite_seed003; suite_sync; suite_flash; suite_latency; suite_seed002; suite_rangedel ;;
  threads | seed003 | sync | flash | latency | backup | seed002 | rangedel | transactions) "suite_$SUITE" ;;
  *) echo "unknown SUITE=$SUITE (threads, seed003, sync, flash, latency, backup, seed002, rangedel, transactions, all)" >&2; exit 2 ;;
esac

COMMON=(--seed=1234 --compression_type=snappy --cache_size=8388608)

run_case() { # engine-label binary round index
  local label="$1" bin="$2" r="$3" i="$4" dir="$DBROOT/strata-race-db"
  local name prep meas
  IFS='|' read -r name prep meas <<<"${cases[$i]}"
  rm -rf "$dir"
  if [ "$prep" != - ]; then
    # shellcheck disable=SC2086
    $bin --db="$dir" "${COMMON[@]}" $prep >/dev/null 2>&1
  fi
  # shellcheck disable=SC2086
  $bin --db="$dir" "${COMMON[@]}" $meas >"$OUT/$label.c$i.r$r.txt" 2>"$OUT/$label.c$i.r$r.err" || {
    echo "$label failed on case '$name' round $r (see $OUT/$label.c$i.r$r.err)" >&2
  }
  rm -rf "$dir"
}

for v in "${versions[@]}"; do
  bin="${BIN[$v]}"
  echo "== RocksDB $v: $bin" | tee "$OUT/rocksdb-$v.binary" >&2
  if "$bin" --benchmarks=fillseq --num=1 --db="$work/probe" 2>&1 | grep -q "Assertions are enabled"; then
    echo "   (built WITH assertions: not comparable)" | tee -a "$OUT/rocksdb-$v.binary" >&2
  else
    echo "   (release build, NDEBUG)" | tee -a "$OUT/rocksdb-$v.binary" >&2
  fi
  rm -rf "$work/probe"
  for i in "${!cases[@]}"; do
    for r in $(seq 1 "$ROUNDS"); do
      if [ $((r % 2)) = 1 ]; then order="strata rocksdb"; else order="rocksdb strata"; fi
      for e in $order; do
        if [ "$e" = strata ]; then
          run_case "strata-$v" "$STRATA bench" "$r" "$i"
        else
          run_case "rocksdb-$v" "$bin" "$r" "$i"
        fi
      done
    done
    echo "   done: ${cases[$i]%%|*}" >&2
  done
done

printf '%s\n' "${cases[@]}" >"$OUT/cases.txt"
python3 scripts/suite_report.py "$OUT" "$ROUNDS" "$SUITE" "${versions[@]}" | tee "$OUT/summary.md"
echo
echo "logs: $OUT"
