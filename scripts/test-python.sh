#!/usr/bin/env bash
# Builds strata's Python package into a virtual environment (maturin
# develop; --release for benchmarks) and runs its pytest suite. rocksdict
# from PyPI is installed too: the interop test reads with rocksdict what
# strata wrote, and scripts/bench_python.py races the two.
#
#   ./scripts/test-python.sh            # build (debug) + tests
#   ./scripts/test-python.sh --release  # build optimized (for benchmarks) + tests
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$root/target/py-venv
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if [ ! -x "$venv/bin/python" ]; then
  # Debian's own python3 needs python3-venv for `-m venv`.
  python3 -m venv "$venv" 2>/dev/null || {
    rm -rf "$venv"
    as_root apt-get install -y python3-venv >/dev/null 2>&1 || {
      as_root apt-get update >/dev/null
      as_root apt-get install -y python3-venv >/dev/null
    }
    python3 -m venv "$venv"
  }
fi
"$venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.5,<2" pytest rocksdict
export VIRTUAL_ENV=$venv
export CARGO_TARGET_DIR=$root/target/py
cd crates/strata-py
cargo fmt --check
cargo clippy -q -- -D warnings
"$venv/bin/maturin" develop -q "$@"
"$venv/bin/python" -m pytest -q tests
