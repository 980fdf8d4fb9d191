#!/usr/bin/env bash
# README command (1): install, build, and run the main job on a model shipped in models/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${QDQRT_BUILD_DIR:-$root/build}"
bash "$root/scripts/build.sh"
"$build_dir/qdqrt" run --onnx="$root/models/${QDQRT_MODEL:-fmnist_resnet_qdq.onnx}"
