#!/usr/bin/env bash
# Table size race (issue 18): the same data, fully compacted by each engine.
# RocksDB's db_bench writes NUM random keys (db_bench's generator, 16-byte
# keys, 100-byte half-compressible values, bloom 10, no compactions); the
# directory is copied; each engine runs a full manual compaction of its
# copy (`compact`); the table bytes of both are compared, and RocksDB's ldb
# checks that both databases hold the same entries.
#
#   NUMS="1000000 10000000" CODECS="snappy zstd" ./scripts/table-size.sh
#
# EXTRA adds flags to both engines' runs, e.g. compression dictionaries
# (EXTRA="--compression_max_dict_bytes=16384
# --compression_zstd_max_train_bytes=65536") or Ribbon filters
# (EXTRA=--use_ribbon_filter=1).
#
# File sizes do not depend on how RocksDB was built, so Debian's db_bench
# serves when no release build is cached (ROCKSDB=7.8.3 uses the release
# build of scripts/build-rocksdb.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
NUMS="${NUMS:-1000000}"
read -r -a EXTRA_FLAGS <<< "${EXTRA:-}"
CODECS="${CODECS:-snappy zstd}"
cargo build --release -q -p strata-cli
STRATA="$PWD/target/release/strata"
if [ "${ROCKSDB:-debian}" = debian ]; then
  command -v db_bench >/dev/null || apt-get install -y rocksdb-tools >/dev/null
  BENCH="$(command -v db_bench)"
else
  BENCH="$(./scripts/build-rocksdb.sh "$ROCKSDB")"
fi
command -v ldb >/dev/null || apt-get install -y rocksdb-tools >/dev/null
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sst_bytes() { find "$1" -name '*.sst' -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }

echo "| keys | codec | RocksDB 7.8.3 | Strata | Strata / RocksDB | same entries |"
echo "|---:|---|---:|---:|---:|---|"
for num in $NUMS; do
  for codec in $CODECS; do
    flags=(--num="$num" --compression_type="$codec" --bloom_bits=10 --seed=42 "${EXTRA_FLAGS[@]}")
    rm -rf "$work/r" "$work/s"
    "$BENCH" --db="$work/r" --benchmarks=fillrandom --disable_auto_compactions=1 \
      "${flags[@]}" >"$work/fill.out" 2>&1
    cp -r "$work/r" "$work/s"
    "$BENCH" --db="$work/r" --use_existing_db=1 --benchmarks=compact \
      --disable_auto_compactions=1 "${flags[@]}" >"$work/r.out" 2>&1
    "$STRATA" bench --db="$work/s" --use_existing_db=1 --benchmarks=compact \
      --disable_auto_compactions=1 "${flags[@]}" >"$work/s.out" 2>&1
    r=$(sst_bytes "$work/r")
    s=$(sst_bytes "$work/s")
    same=no
    if [ "$(ldb --db="$work/r" --hex scan 2>/dev/null | md5sum)" = \
      "$(ldb --db="$work/s" --hex scan 2>/dev/null | md5sum)" ]; then
      same=yes
    fi
    echo "| $num | $codec | $r | $s | $(python3 -c "print(f'{$s/$r:.4f}')") | $same |"
  done
done
