#!/usr/bin/env bash
# Coverage-guided fuzzing (docs/RELIABILITY.md G7): builds the cargo-fuzz targets
# under fuzz/ and runs each for STRATA_CARGO_FUZZ_SECS seconds (default 10),
# starting from its saved corpus (read-only; new inputs go to a temporary
# directory). Needs nightly Rust and cargo-fuzz: installs them when it can,
# and says so and skips when it cannot. A crash fails the script; libFuzzer
# keeps the input in fuzz/artifacts/<target>/ (save it under
# fuzz/corpus/<target>/ as a regression seed with the fix).
#
# Long run: STRATA_CARGO_FUZZ_SECS=3600 ./scripts/fuzz-ci.sh
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${STRATA_CARGO_FUZZ_SECS:-10}
rows=target/tmp/reliability
mkdir -p "$rows"

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  if ! rustup toolchain install nightly --profile minimal >/dev/null 2>&1; then
    echo "== cargo-fuzz: skipped (no nightly toolchain could be installed)"
    echo "| G7-cargo-fuzz | coverage-guided cargo-fuzz | skipped: no nightly toolchain |" >"$rows/G7-cargo-fuzz.row"
    exit 0
  fi
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  if ! cargo install cargo-fuzz --locked >/dev/null 2>&1; then
    echo "== cargo-fuzz: skipped (cargo-fuzz could not be installed)"
    echo "| G7-cargo-fuzz | coverage-guided cargo-fuzz | skipped: cargo-fuzz not installable |" >"$rows/G7-cargo-fuzz.row"
    exit 0
  fi
fi

cd fuzz
cargo +nightly fuzz build -O
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Targets run two at a time (each fuzzer is one process on one core), so
# every target still gets its full ${secs} s of a core.
jobs=${STRATA_CARGO_FUZZ_JOBS:-2}
run_target() {
  local t=$1
  mkdir -p "$work/$t"
  if cargo +nightly fuzz run -O "$t" "$work/$t" "corpus/$t" -- \
      -max_total_time="$secs" -print_final_stats=1 >"$work/$t.log" 2>&1; then
    echo ok >"$work/$t.status"
  else
    echo failed >"$work/$t.status"
  fi
}
all=$(cargo +nightly fuzz list)
running=0
for t in $all; do
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
targets=0
execs=0
for t in $all; do
  log="$work/$t.log"
  if [ "$(cat "$work/$t.status" 2>/dev/null)" != ok ]; then
    echo "== cargo-fuzz: target $t FAILED:"
    tail -60 "$log"
    echo "== the input is in fuzz/artifacts/$t/; fix it and save it under fuzz/corpus/$t/"
    exit 1
  fi
  n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  echo "cargo-fuzz $t: ${n:-0} executions in ${secs} s, no crash"
  targets=$((targets + 1))
  execs=$((execs + ${n:-0}))
done
echo "| G7-cargo-fuzz | coverage-guided cargo-fuzz, ${secs} s per target | $targets targets, $execs executions, 0 crashes |" \
  >"../$rows/G7-cargo-fuzz.row"
