#!/usr/bin/env bash
# README command (1): install, build, and run the main job on a model shipped in models/:
# run it with the reference executor (outputs and timing), then show how the optimizer fuses it
# into INT8 layers (qdqrt inspect).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${QDQRT_BUILD_DIR:-$root/build}"
model="$root/models/${QDQRT_MODEL:-fmnist_resnet_qdq.onnx}"
bash "$root/scripts/build.sh"
echo "=== qdqrt run (reference executor) ==="
"$build_dir/qdqrt" run --onnx="$model" --iterations=10
echo
echo "=== qdqrt inspect (optimized layers) ==="
"$build_dir/qdqrt" inspect --onnx="$model"
