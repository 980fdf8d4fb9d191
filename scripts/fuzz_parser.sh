#!/usr/bin/env bash
# Builds the ONNX parser's libFuzzer target with clang (ASan + UBSan) in build-fuzz/ and runs it.
#   bash scripts/fuzz_parser.sh [seconds]      (default 60)
# Seeds come from ONNX's backend test models (libonnx-testdata). Findings are written to
# build-fuzz/findings/; copy each one you fix into tests/fuzz/regressions/ so the gtest replays it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
build_dir="${QDQRT_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${QDQRT_FUZZ_BUILD_JOBS:-2}"

CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQDQRT_FUZZ=ON -DQDQRT_SANITIZE=ON -DQDQRT_BUILD_BENCH=OFF >/dev/null
ninja -C "$build_dir" -j"$jobs" fuzz_onnx_parser

corpus="$build_dir/corpus"
findings="$build_dir/findings"
mkdir -p "$corpus" "$findings"
testdata=""
for dir in /usr/share/libonnx-testdata/data/node /usr/lib/python3/dist-packages/onnx/backend/test/data/node; do
  if [ -d "$dir" ]; then testdata="$dir"; break; fi
done
if [ -n "$testdata" ]; then
  for name in test_relu test_add test_quantizelinear test_dequantizelinear_axis test_conv_with_strides_padding \
              test_qlinearconv test_reshape_reordered_all_dims test_maxpool_2d_pads test_gemm_default_single_elem_vector_bias \
              test_resize_upsample_scales_linear test_concat_2d_axis_0 test_reduce_mean_keepdims_example \
              test_constant test_cast_FLOAT_to_FLOAT16 test_transpose_default; do
    if [ -f "$testdata/$name/model.onnx" ]; then cp "$testdata/$name/model.onnx" "$corpus/seed_$name.onnx"; fi
  done
fi
for file in "$root"/tests/fuzz/regressions/*; do
  case "$file" in *.md) ;; *) [ -f "$file" ] && cp "$file" "$corpus/" ;; esac
done

# ASan's allocator limit turns a huge allocation into a finding instead of an OOM kill.
ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}" \
  "$build_dir/tests/fuzz/fuzz_onnx_parser" "$corpus" -artifact_prefix="$findings/" \
  -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
