#!/usr/bin/env bash
# The sanitizer steps of CI (.ci/run), apart from the default test run so that stays fast. Each
# builds only what it runs, in its own build directory, and runs the test binaries directly:
#   bash scripts/test_sanitizers.sh address   clang ASan + UBSan, the fuzzers' build (build-fuzz/,
#       scripts/fuzz_common.sh): the parser, engine file, optimizer (passes, fusions), engine and
#       op shape-function tests (their fuzz corpus replays and random nodes included), then the
#       three libFuzzer targets over their corpora once (-runs=0: a replay, no fuzzing)
#   bash scripts/test_sanitizers.sh thread    TSan (build-tsan/): several ExecutionContexts on one
#       Engine against a serial run (tests/engine/concurrency_test.cpp, EngineCore.ConcurrentContexts*)
#   bash scripts/test_sanitizers.sh           both
# Any sanitizer report fails the step. Timings are printed (docs/security.md lists them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
which="${1:-all}"
export QDQRT_FUZZ_BUILD_JOBS="${QDQRT_FUZZ_BUILD_JOBS:-$(nproc)}"

run_address() {
  local start=$SECONDS
  # fuzz_common.sh: configure build-fuzz/ (clang, -DQDQRT_FUZZ=ON -DQDQRT_SANITIZE=ON) and build.
  source "$root/scripts/fuzz_common.sh" 0
  local tests=(tests/parser/qdqrt_parser_tests tests/engine_file/qdqrt_engine_file_tests
               tests/optimizer_passes/qdqrt_optimizer_passes_tests tests/optimizer_fusion/qdqrt_optimizer_fusion_tests
               tests/engine/qdqrt_engine_tests tests/shape_inference/qdqrt_shape_inference_tests)
  local targets=()
  for binary in "${tests[@]}"; do targets+=("$(basename "$binary")"); done
  fuzz_build "${targets[@]}" fuzz_onnx_parser fuzz_engine_file fuzz_engine_plan
  echo "sanitizers: address build took $((SECONDS - start)) s"
  start=$SECONDS
  # allocator_may_return_null: a test that asks for terabytes on purpose gets nullptr (bad_alloc),
  # as from the system allocator, not an ASan abort.
  export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  for binary in "${tests[@]}"; do
    echo "sanitizers: address: $binary"
    (cd "$build_dir" && "./$binary" --gtest_brief=1)
  done
  local corpus
  for target in fuzz_onnx_parser:tests/fuzz/regressions fuzz_engine_file:tests/fuzz/engine_file_corpus \
                fuzz_engine_plan:tests/fuzz/engine_plan_corpus; do
    corpus="$root/${target#*:}"
    echo "sanitizers: address: ${target%%:*} over $corpus"
    "$build_dir/tests/fuzz/${target%%:*}" -runs=0 -rss_limit_mb=2048 "$corpus" 2>&1 | tail -2
  done
  echo "sanitizers: address tests took $((SECONDS - start)) s"
}

run_thread() {
  local dir="${QDQRT_TSAN_BUILD_DIR:-$root/build-tsan}"
  local start=$SECONDS
  CC=clang CXX=clang++ cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQDQRT_BUILD_BENCH=OFF \
    -DQDQRT_SANITIZE_THREAD=ON >/dev/null
  ninja -C "$dir" -j"$QDQRT_FUZZ_BUILD_JOBS" qdqrt_engine_tests
  echo "sanitizers: thread build took $((SECONDS - start)) s"
  start=$SECONDS
  # Debian's TBB is not instrumented: its scheduler's own synchronization is invisible to TSan,
  # so reports inside libtbb are suppressed (ours, between contexts and layers, are not).
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/tsan_suppressions.txt"
  (cd "$dir" && ./tests/engine/qdqrt_engine_tests --gtest_filter='Concurrency.*:EngineCore.ConcurrentContexts*' \
     --gtest_brief=1)
  echo "sanitizers: thread tests took $((SECONDS - start)) s"
}

case "$which" in
  address) run_address ;;
  thread) run_thread ;;
  all) run_address; run_thread ;;
  *) echo "usage: $0 [address|thread|all]" >&2; exit 2 ;;
esac
