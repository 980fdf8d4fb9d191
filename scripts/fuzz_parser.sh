#!/usr/bin/env bash
# Builds the ONNX parser's libFuzzer target with clang (ASan + UBSan) in build-fuzz/ and runs it.
#   bash scripts/fuzz_parser.sh [seconds]      (default 60)
# Seeds come from ONNX's backend test models (libonnx-testdata). Findings are written to
# build-fuzz/findings/; copy each one you fix into tests/fuzz/regressions/ so the gtest replays it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_onnx_parser
fuzz_dirs ""
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
fuzz_copy_seeds "$root/tests/fuzz/regressions"
fuzz_run tests/fuzz/fuzz_onnx_parser 65536
