#!/usr/bin/env bash
# The main job: release-build benchmarks of Strata's file formats on a
# temporary directory (table build and lookups through the filter, block
# seek, WAL append). Becomes the db_bench-compatible `strata bench` race
# against RocksDB once the database lands.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
  curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
export TMPDIR="${TMPDIR:-/tmp}"
cargo bench -p strata --bench table -- "$@"
