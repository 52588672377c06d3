#!/usr/bin/env bash
# Runs every Strata test on a fresh machine: installs what the tests need
# (a Rust toolchain, RocksDB 7.8.3's tools for the interop tests), then the
# lint gates, the unit/property/integration tests, the fuzz-corpus replay, and
# the loom model tests of the memtable's lock-free arena and skiplist.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v cargo >/dev/null 2>&1; then
  curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c clippy,rustfmt
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
# rocksdb-tools: RocksDB 7.8.3's ldb, sst_dump and db_bench for the interop
# tests; librocksdb-dev: its C library and header, which the C API's test
# program is also built against (the oracle for what it expects);
# valgrind: one memcheck run of that program.
need=()
command -v sst_dump >/dev/null 2>&1 && command -v ldb >/dev/null 2>&1 || need+=(rocksdb-tools)
[ -f /usr/include/rocksdb/c.h ] || need+=(librocksdb-dev)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v cc >/dev/null 2>&1 || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
  as_root apt-get install -y "${need[@]}" >/dev/null 2>&1 || {
    as_root apt-get update >/dev/null
    as_root apt-get install -y "${need[@]}" >/dev/null
  }
fi

# No incremental caches: every CI run is a cold build, and the caches of a
# workspace this size took over a gigabyte of a CI machine's small disk.
export CARGO_INCREMENTAL=0
df -h . | sed 's/^/== disk: /'
run_start=$SECONDS

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
# RocksDB 7.8.3's own C API test program (db/c_test.c, from Debian's
# source package): crates/strata-c/tests/c_api.rs builds it against
# Strata's header and library and runs it (skipped, and said so, when the
# source cannot be fetched).
if src="$(./scripts/build-rocksdb.sh 7.8.3 source 2>/dev/null)" && [ -f "$src/db/c_test.c" ]; then
  export STRATA_ROCKSDB_C_TEST="$src/db/c_test.c"
else
  echo "== RocksDB's db/c_test.c could not be fetched: its run is skipped"
fi
echo "== cargo test (library, CLI, interop with RocksDB $(dpkg-query -W -f='${Version}' rocksdb-tools 2>/dev/null || echo '?'))"
# Each reliability suite leaves its figures as a row under target/tmp/reliability.
rm -rf target/tmp/reliability
# The C API's tests build libstrata_c with these features too
# (crates/strata-c/tests/c_api.rs), reusing the engine built here.
export STRATA_TEST_FEATURES=strata/invariants,strata/crash-points
cargo test --workspace --features "$STRATA_TEST_FEATURES"
# The Python package (maturin develop into target/py-venv, pytest, with
# rocksdict from PyPI as the interop oracle).
echo "== Python package (crates/strata-py)"
py_start=$SECONDS
./scripts/test-python.sh
echo "== Python package took $((SECONDS - py_start))s"
# `--cfg loom` swaps the memtable's atomics for loom's (memtable/sync.rs) and
# changes every crate's build, hence its own target dir; the `loom` profile
# (root Cargo.toml) keeps that cold build short. About 2 minutes cold on 2
# cores, 10 s warm.
echo "== loom model tests (memtable arena and skiplist)"
loom_start=$SECONDS
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p strata --profile loom --lib memtable::loom
echo "== loom model tests took $((SECONDS - loom_start))s"
# Coverage-guided fuzzing of every decoder, 10 s a target (skipped, and
# said so, where nightly Rust or cargo-fuzz cannot be installed).
echo "== cargo-fuzz (nightly)"
fuzz_start=$SECONDS
./scripts/fuzz-ci.sh
echo "== cargo-fuzz took $((SECONDS - fuzz_start))s"
echo "== reliability figures of this run (docs/RELIABILITY.md G1-G9)"
echo "| # | suite | figures |"
echo "|---|---|---|"
cat target/tmp/reliability/*.row 2>/dev/null | sort -V
df -h . | sed 's/^/== disk: /'
du -sh target 2>/dev/null | sed 's/^/== target: /'
echo "== all tests passed in $((SECONDS - run_start))s"
