#!/usr/bin/env bash
# Builds the libFuzzer target of qdqrt serve's request parsers (HTTP JSON, binary extension, gRPC)
# with clang (ASan + UBSan) in build-fuzz/ and runs it.
#   bash scripts/fuzz_serve_request.sh [seconds]      (default 60)
# Seeds come from tests/server/fuzz/corpus/ (the first byte of each picks the parser; see
# tests/server/fuzz/request_fuzz_entry.h). Findings are written to build-fuzz/findings-serve/;
# copy each one you fix into tests/server/fuzz/corpus/ so qdqrt_server_tests replays it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
build_dir="${QDQRT_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${QDQRT_FUZZ_BUILD_JOBS:-2}"

CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQDQRT_FUZZ=ON -DQDQRT_SANITIZE=ON -DQDQRT_BUILD_BENCH=OFF >/dev/null
ninja -C "$build_dir" -j"$jobs" fuzz_serve_request

corpus="$build_dir/corpus-serve"
findings="$build_dir/findings-serve"
mkdir -p "$corpus" "$findings"
for file in "$root"/tests/server/fuzz/corpus/*; do
  case "$file" in *.md) ;; *) [ -f "$file" ] && cp "$file" "$corpus/" ;; esac
done

# ASan's allocator limit turns a huge allocation into a finding instead of an OOM kill.
ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}" \
  "$build_dir/tests/server/fuzz_serve_request" "$corpus" -artifact_prefix="$findings/" \
  -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
