# Shared by the scripts/fuzz_*.sh runners (sourced, not run): build one libFuzzer target with clang
# (ASan + UBSan) in build-fuzz/, gather its seeds, run it for a bounded time.
#   fuzz_build TARGET...          configure build-fuzz/ and build the TARGETs
#   fuzz_dirs SUFFIX              sets corpus=build-fuzz/corpus$SUFFIX, findings=build-fuzz/findings$SUFFIX
#   fuzz_copy_seeds DIR           copies DIR's files (not *.md) into the corpus
#   fuzz_run BINARY MAX_LEN       runs BINARY (relative to build-fuzz/) for $seconds
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
build_dir="${QDQRT_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${QDQRT_FUZZ_BUILD_JOBS:-2}"

fuzz_build() {
  CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DQDQRT_FUZZ=ON -DQDQRT_SANITIZE=ON -DQDQRT_BUILD_BENCH=OFF >/dev/null
  ninja -C "$build_dir" -j"$jobs" "$@"
}

fuzz_dirs() {
  corpus="$build_dir/corpus$1"
  findings="$build_dir/findings$1"
  mkdir -p "$corpus" "$findings"
}

fuzz_copy_seeds() {
  for file in "$1"/*; do
    case "$file" in *.md) ;; *) [ -f "$file" ] && cp "$file" "$corpus/" ;; esac
  done
  return 0
}

fuzz_run() {
  # ASan's allocator limit turns a huge allocation into a finding instead of an OOM kill.
  ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}" \
    "$build_dir/$1" "$corpus" -artifact_prefix="$findings/" \
    -max_total_time="$seconds" -max_len="$2" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
}
