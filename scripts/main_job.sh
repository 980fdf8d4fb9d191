#!/usr/bin/env bash
# README command (1): install, build, and run the main job on a model shipped in models/:
# build an INT8 engine from it and save it (qdqrt exec --onnx --saveEngine), load the saved engine
# and benchmark it the way trtexec does, with the per-layer profile (qdqrt exec --loadEngine
# --dumpProfile), then show how the optimizer fused the model into INT8 layers (qdqrt inspect).
# Then PTQ vs QAT: calibrate PTQ models from the shipped FP32 ResNet, EfficientNet and ViT with max and
# entropy (qdqrt calibrate, 512 training images), and evaluate FP32, PTQ max, PTQ entropy and QAT
# of each on all 10,000 Fashion-MNIST test images (qdqrt eval): one table, JSON and an SVG plot.
# The preprocessing (mean/std) comes from the models' metadata. Last, which layers cost the worst
# PTQ model its accuracy: qdqrt compare, tensor by tensor against its FP32 reference.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${QDQRT_BUILD_DIR:-$root/build}"
model="$root/models/${QDQRT_MODEL:-fmnist_resnet_qdq.onnx}"
engine_file="$build_dir/$(basename "${model%.onnx}").qdqrt"
# Only what the job runs: the CLI's packages and the `qdqrt` target (scripts/test.sh builds the rest).
bash "$root/scripts/build.sh" --cli
echo "=== qdqrt exec: build the engine and save it ==="
"$build_dir/qdqrt" exec --onnx="$model" --saveEngine="$engine_file" --skipInference
echo
echo "=== qdqrt exec: load the saved engine and benchmark it ==="
"$build_dir/qdqrt" exec --loadEngine="$engine_file" --dumpProfile --separateProfileRun --duration=2
echo
echo "=== qdqrt inspect (optimized layers) ==="
"$build_dir/qdqrt" inspect --onnx="$model"

echo
echo "=== qdqrt calibrate: PTQ models (max, entropy; 512 training images) ==="
job_dir="$build_dir/main_job"
mkdir -p "$job_dir"
for net in resnet efficientnet vit mobilenet_widerange; do
  for method in max entropy; do
    "$build_dir/qdqrt" calibrate --onnx="$root/models/fmnist_${net}_fp32.onnx" --data=fashion-mnist:train \
      --samples=512 --method="$method" --output="$job_dir/fmnist_${net}_ptq_${method}.onnx"
  done
done
echo
echo "=== qdqrt eval: FP32 vs PTQ vs QAT on the Fashion-MNIST test set (10,000 images) ==="
models=()
for net in resnet efficientnet vit mobilenet_widerange; do
  models+=(--model="$root/models/fmnist_${net}_fp32.onnx" --model="$job_dir/fmnist_${net}_ptq_max.onnx"
           --model="$job_dir/fmnist_${net}_ptq_entropy.onnx" --model="$root/models/fmnist_${net}_qdq.onnx")
done
"$build_dir/qdqrt" eval --data=fashion-mnist:test "${models[@]}" \
  --json="$job_dir/eval.json" --plot="$job_dir/eval.svg" --savePredictions="$job_dir/predictions"
echo
worst=$(/usr/bin/python3 -c "
import json, sys
rows = [row for row in json.load(open(sys.argv[1]))['models'] if '_ptq_' in row['model']]
print(min(rows, key=lambda row: row['top1'])['path'])" "$job_dir/eval.json")
echo "=== qdqrt compare: the worst PTQ model ($(basename "$worst")) against its FP32 reference, tensor by tensor ==="
"$build_dir/qdqrt" compare --onnx="$worst" --data=fashion-mnist:test --samples=500 --rows=10 --json="$job_dir/compare.json"
echo
echo "Accuracy-vs-latency plot: $job_dir/eval.svg (table as JSON: $job_dir/eval.json; compare: $job_dir/compare.json)"
