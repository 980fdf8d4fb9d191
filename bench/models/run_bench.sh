#!/usr/bin/env bash
# Whole-model benchmark: qdqrt exec against ONNX Runtime (Node.js) on the torchvision models
# (resnet18, resnet50, mobilenet_v2, efficientnet_b0 at 224x224, FP32, QDQ and the ONNX Runtime
# quantizer's styles; exported once into BUILD/bench_models) and the models in models/, at 1 and 2
# threads, batch 1 and 8; --dynamic: the range-engine table; --coverage: models/export_coverage.py's
# models at their full size against the bars of docs/bench.md ("Coverage models at full size").
# Prints one Markdown table on stdout, progress on stderr. See docs/bench.md.
#
#   bench/models/run_bench.sh [--quick] [--models=a,b] [--threads=1,2] [--batches=1,8]
#                             [--duration=S] [--warmup=MS] [--json=FILE] [--strict] ...
#
# QDQRT_BUILD_DIR selects the build directory (default: build/ in the repository).
# All options: bench/models/run_bench.sh --help.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${QDQRT_BUILD_DIR:-$root/build}"
# Debian's python3 has onnx and torch (the `python3` on PATH may be another one).
python=/usr/bin/python3
"$root/scripts/install_ort.sh"
exec "$python" "$root/bench/models/bench_models.py" --root "$root" --build "$build" "$@"
