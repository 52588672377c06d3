#!/usr/bin/env bash
# Builds release (NDEBUG) db_bench binaries of RocksDB from registry
# sources, once per machine, cached under target/rocksdb/<version>/:
#
#   7.8.3   Debian bookworm's source package (apt-get source rocksdb), the
#           version whose files Strata shares
#   10.4.2  the complete source bundled in the crates.io package
#           librocksdb-sys 0.17.3+10.4.2 (cargo fetch)
#
#   ./scripts/build-rocksdb.sh 7.8.3        # prints the db_bench path
#   ./scripts/build-rocksdb.sh 10.4.2
#   ./scripts/build-rocksdb.sh 10.4.2-txn   # 10.4.2 whose randomtransaction
#                                            # benchmark runs in a release build
#   ./scripts/build-rocksdb.sh 10.4.2 tools # ldb and sst_dump instead of
#                                            # db_bench; prints their directory
#   ./scripts/build-rocksdb.sh 7.8.3 source # only fetch the source (for
#                                            # its db/c_test.c); prints its
#                                            # directory
#
# Debian's own db_bench (rocksdb-tools) is built without NDEBUG and prints
# "WARNING: Assertions are enabled"; it is fine for interop tests, not for
# racing. The binaries built here are CMAKE_BUILD_TYPE=Release, PORTABLE,
# with gflags and every codec. Progress goes to stderr, the binary's path
# to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
version="${1:-7.8.3}"
what="${2:-db_bench}"
dest="$root/target/rocksdb/$version"
case "$what" in
  db_bench) targets=(db_bench) ;;
  tools)
    targets=(ldb sst_dump)
    [ "$version" != 10.4.2-txn ] || { echo "build-rocksdb: tools come from 10.4.2, not 10.4.2-txn" >&2; exit 2; }
    ;;
  source) targets=(none) ;;
  *) echo "build-rocksdb: unknown target set $what (db_bench, tools or source)" >&2; exit 2 ;;
esac
bin="$dest/${targets[0]}"
if [ "$what" != source ] && [ -x "$bin" ] && [ -x "$dest/${targets[-1]}" ]; then
  if [ "$what" = tools ]; then echo "$dest"; else echo "$bin"; fi
  exit 0
fi

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
log() { echo "build-rocksdb: $*" >&2; }

if [ "$what" = source ]; then
  deps=(dpkg-dev)
else
  deps=(cmake ninja-build g++ libgflags-dev libsnappy-dev liblz4-dev libzstd-dev zlib1g-dev libbz2-dev dpkg-dev)
fi
missing=()
for p in "${deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  as_root apt-get update >/dev/null
  as_root apt-get install -y "${missing[@]}" >/dev/null
fi

src_root="$root/target/rocksdb/src"
mkdir -p "$src_root" "$dest"
case "$version" in
  7.8.3)
    src="$src_root/rocksdb-7.8.3"
    if [ ! -f "$src/CMakeLists.txt" ]; then
      if ! grep -rqs "^Types:.*deb-src" /etc/apt/sources.list.d/ /etc/apt/sources.list; then
        log "adding a deb-src entry for bookworm"
        as_root tee /etc/apt/sources.list.d/strata-deb-src.sources >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        as_root apt-get update >/dev/null
      fi
      log "apt-get source rocksdb"
      (cd "$src_root" && apt-get source --download-only rocksdb >/dev/null 2>&1 || apt-get source rocksdb >/dev/null)
      (cd "$src_root" && rm -rf rocksdb-7.8.3 && dpkg-source -x --skip-patches rocksdb_7.8.3*.dsc rocksdb-7.8.3 >/dev/null)
    fi
    ;;
  10.4.2)
    crate_dir="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/librocksdb-sys-0.17.3+10.4.2 2>/dev/null | head -1 || true)"
    if [ -z "$crate_dir" ]; then
      log "fetching librocksdb-sys 0.17.3+10.4.2 from crates.io"
      tmp="$src_root/fetch-librocksdb-sys"
      mkdir -p "$tmp/src"
      cat >"$tmp/Cargo.toml" <<'EOF'
[package]
name = "fetch-librocksdb-sys"
version = "0.0.0"
edition = "2021"
publish = false
[workspace]
[dependencies]
librocksdb-sys = "=0.17.3"
EOF
      echo "" >"$tmp/src/lib.rs"
      (cd "$tmp" && cargo fetch >/dev/null 2>&1)
      crate_dir="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/librocksdb-sys-0.17.3+10.4.2 | head -1)"
    fi
    src="$crate_dir/rocksdb"
    ;;
  10.4.2-txn)
    # 10.4.2 with db_bench's randomtransaction harness made to run in a
    # release build (test_util/transaction_test_util.cc): it names each
    # pessimistic transaction inside an assert(), which NDEBUG removes
    # ("Cannot prepare a transaction that has not been named"), and its
    # debug log reads the snapshot of an optimistic transaction that has
    # none (a segfault in every build). The engine is untouched: the
    # 10.4.2 build is copied and only that file is recompiled.
    base_bin="$("$0" 10.4.2)"
    base_build="$root/target/rocksdb/build-10.4.2"
    build="$root/target/rocksdb/build-$version"
    fix="$src_root/txnfix/transaction_test_util.cc"
    orig="$(sed -n 's|^build CMakeFiles/rocksdb.dir/test_util/transaction_test_util.cc.o: [^ ]* \([^ ]*\) .*|\1|p' "$base_build/build.ninja")"
    [ -f "$orig" ] || { echo "build-rocksdb: cannot find transaction_test_util.cc in $base_build" >&2; exit 1; }
    mkdir -p "$(dirname "$fix")"
    sed -e 's|^  assert(txn_->SetName(name).ok());|  { Status set_name_s = txn_->SetName(name); assert(set_name_s.ok()); (void)set_name_s; }|' \
        -e 's|txn->GetSnapshot()->GetSequenceNumber()|(txn->GetSnapshot() ? txn->GetSnapshot()->GetSequenceNumber() : 0)|' \
        "$orig" >"$fix"
    grep -q "set_name_s" "$fix" && grep -q "txn->GetSnapshot() ?" "$fix" || {
      echo "build-rocksdb: the transaction harness fix did not apply" >&2; exit 1; }
    rm -rf "$build"
    cp -a "$base_build" "$build"
    sed -i "s|$orig|$fix|" "$build/build.ninja"
    log "rebuilding db_bench with the fixed transaction harness in $build"
    (cd "$build" && nice -n 10 ninja db_bench >"$build/build.log" 2>&1) || {
      tail -40 "$build/build.log" >&2
      exit 1
    }
    : "$base_bin"
    cp "$build/db_bench" "$bin.tmp"
    mv "$bin.tmp" "$bin"
    echo "$bin"
    exit 0
    ;;
  *)
    echo "build-rocksdb: unknown version $version (7.8.3, 10.4.2 or 10.4.2-txn)" >&2
    exit 2
    ;;
esac
if [ "$what" = source ]; then
  echo "$src"
  exit 0
fi

build="$root/target/rocksdb/build-$version"
mkdir -p "$build"
log "configuring $src (Release, PORTABLE) in $build"
cmake -S "$src" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DPORTABLE=ON -DWITH_GFLAGS=ON \
  -DWITH_SNAPPY=ON -DWITH_LZ4=ON -DWITH_ZSTD=ON -DWITH_ZLIB=ON -DWITH_BZ2=ON \
  -DROCKSDB_BUILD_SHARED=OFF -DWITH_TESTS=OFF -DWITH_BENCHMARK_TOOLS=ON \
  -DWITH_TOOLS=OFF -DWITH_CORE_TOOLS=ON -DFAIL_ON_WARNINGS=OFF \
  -DCMAKE_CXX_FLAGS="-Wno-error" >"$build/cmake.log" 2>&1 || {
  tail -30 "$build/cmake.log" >&2
  exit 1
}
log "building ${targets[*]} (about 15 minutes on 2 cores)"
nice -n 10 cmake --build "$build" --target "${targets[@]}" -j "$(nproc)" >"$build/build.log" 2>&1 || {
  tail -40 "$build/build.log" >&2
  exit 1
}
for t in "${targets[@]}"; do
  exe="$(find "$build" -maxdepth 2 -type f -name "$t" -perm -u+x | head -1)"
  [ -n "$exe" ] || { echo "build-rocksdb: $t not found in $build" >&2; exit 1; }
  cp "$exe" "$dest/$t.tmp"
  mv "$dest/$t.tmp" "$dest/$t"
done
if [ "$what" = tools ]; then
  echo "$dest"
else
  "$bin" --version >&2 2>/dev/null || true
  echo "$bin"
fi
