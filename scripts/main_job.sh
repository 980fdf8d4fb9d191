#!/usr/bin/env bash
# README command (1): install, build, and run the main job on a model shipped in models/:
# build an INT8 engine from it and save it (qdqrt exec --onnx --saveEngine), load the saved engine
# and benchmark it the way trtexec does, with the per-layer profile (qdqrt exec --loadEngine
# --dumpProfile), then show how the optimizer fused the model into INT8 layers (qdqrt inspect).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${QDQRT_BUILD_DIR:-$root/build}"
model="$root/models/${QDQRT_MODEL:-fmnist_resnet_qdq.onnx}"
engine_file="$build_dir/$(basename "${model%.onnx}").qdqrt"
bash "$root/scripts/build.sh"
echo "=== qdqrt exec: build the engine and save it ==="
"$build_dir/qdqrt" exec --onnx="$model" --saveEngine="$engine_file" --skipInference
echo
echo "=== qdqrt exec: load the saved engine and benchmark it ==="
"$build_dir/qdqrt" exec --loadEngine="$engine_file" --dumpProfile --separateProfileRun --duration=2
echo
echo "=== qdqrt inspect (optimized layers) ==="
"$build_dir/qdqrt" inspect --onnx="$model"
