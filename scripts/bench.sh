#!/usr/bin/env bash
# The main job: Strata against RocksDB 7.8.3's db_bench on temporary
# databases, docs/BENCHMARKS.md's Core suite (fillseq, fillrandom, overwrite,
# then readrandom, readseq, readreverse, seekrandom, readwhilewriting),
# same flags and seed, alternating rounds; prints the median table with
# write amplification, size on disk and peak RSS, and writes a chart.
# See scripts/compare-rocksdb.sh for the knobs.
#
#   ./scripts/bench.sh                          # 1M keys, 3 rounds
#   NUM=200000 ROUNDS=5 ./scripts/bench.sh
#   ./scripts/bench.sh --bloom_bits=10          # extra flags go to both engines
#   ./scripts/bench.sh --micro                  # criterion micro-benchmarks instead
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--micro" ]; then
  shift
  if ! command -v cargo >/dev/null 2>&1; then
    curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
  fi
  exec cargo bench -p strata --bench table -- "$@"
fi
exec ./scripts/compare-rocksdb.sh "$@"
