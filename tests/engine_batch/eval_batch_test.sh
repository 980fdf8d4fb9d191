#!/usr/bin/env bash
# qdqrt eval's predictions do not depend on --batch: the shipped models and a tiny ViT (tiny_vit.py:
# its attention Transpose moves the batch off dim 0) on 100 Fashion-MNIST test images at --batch=1
# and --batch=32 (100 is not a multiple of 32: the last run has 4 images).
set -euo pipefail
qdqrt="$1"
models="$2"
if [ ! -d /usr/share/datasets/fashion-mnist ]; then echo "SKIP: no Fashion-MNIST"; exit 0; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$(dirname "$0")/tiny_vit.py" "$work/tiny_vit.onnx"
model_flags=("--model=$work/tiny_vit.onnx")
for model in "$models"/fmnist_*.onnx; do model_flags+=("--model=$model"); done
for batch in 1 32; do
  "$qdqrt" eval --data=fashion-mnist:test --mean=0.2860 --std=0.3530 --samples=100 --batch=$batch --threads=2 \
    "${model_flags[@]}" --noProgress --savePredictions="$work/batch$batch" > "$work/out$batch.txt"
done
count=0
for prediction in "$work"/batch1/*.npy; do
  name="$(basename "$prediction")"
  cmp "$prediction" "$work/batch32/$name" || { echo "predictions of $name differ between --batch=1 and --batch=32"; exit 1; }
  count=$((count + 1))
done
[ "$count" = "${#model_flags[@]}" ] || { echo "expected ${#model_flags[@]} prediction files, got $count"; exit 1; }
echo "eval predictions identical at --batch=1 and --batch=32 for $count models"
