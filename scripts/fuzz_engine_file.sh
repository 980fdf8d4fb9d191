#!/usr/bin/env bash
# Builds the engine file reader's libFuzzer target with clang (ASan + UBSan) in build-fuzz/ and runs it.
#   bash scripts/fuzz_engine_file.sh [seconds]      (default 60)
# Seeds come from tests/fuzz/engine_file_corpus/ (valid engine files written by the engine_file
# gtest). The target reads each input as it is and with its checksum recomputed, so mutations
# get past the checksum to the FlatBuffers verifier and the plan checks. Findings are written to
# build-fuzz/findings-engine/; copy each one you fix into tests/fuzz/engine_file_corpus/ so the
# gtest replays it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
build_dir="${QDQRT_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${QDQRT_FUZZ_BUILD_JOBS:-2}"

CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQDQRT_FUZZ=ON -DQDQRT_SANITIZE=ON -DQDQRT_BUILD_BENCH=OFF >/dev/null
ninja -C "$build_dir" -j"$jobs" fuzz_engine_file

corpus="$build_dir/corpus-engine"
findings="$build_dir/findings-engine"
mkdir -p "$corpus" "$findings"
for file in "$root"/tests/fuzz/engine_file_corpus/*; do
  case "$file" in *.md) ;; *) [ -f "$file" ] && cp "$file" "$corpus/" ;; esac
done

# ASan's allocator limit turns a huge allocation into a finding instead of an OOM kill.
ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}" \
  "$build_dir/tests/fuzz/fuzz_engine_file" "$corpus" -artifact_prefix="$findings/" \
  -max_total_time="$seconds" -max_len=262144 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
