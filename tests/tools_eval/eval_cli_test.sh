#!/usr/bin/env bash
# qdqrt eval through the binary: table on stdout, JSON, well-formed SVG, .npy predictions, exit codes.
set -euo pipefail
qdqrt="$1"
models="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# A label outside the model's classes (10 here) is refused, naming the image, not counted as a miss.
mkdir "$work/labels"
/usr/bin/python3 -c "
import numpy as np, sys
np.save(sys.argv[1] + '/images.npy', np.zeros((3, 1, 28, 28), np.float32))
np.save(sys.argv[1] + '/labels.npy', np.array([1, 12, 3], np.int64))" "$work/labels"
set +e
"$qdqrt" eval --data="npy:$work/labels" --model="$models/fmnist_resnet_qdq.onnx" --noProgress --threads=2 2> "$work/err0.txt"
code0=$?
set -e
cat "$work/err0.txt"
[ "$code0" = 2 ] && grep -q "image 1 has label 12, outside the model's 10 classes (0..9)" "$work/err0.txt"
if [ ! -d /usr/share/datasets/fashion-mnist ]; then echo "SKIP: no Fashion-MNIST"; exit 0; fi
"$qdqrt" eval --data=fashion-mnist:test --mean=0.2860 --std=0.3530 --samples=64 --batch=32 --threads=2 \
  --model="$models/fmnist_resnet_fp32.onnx" --model="$models/fmnist_resnet_qdq.onnx" --noProgress \
  --json="$work/eval.json" --plot="$work/eval.svg" --savePredictions="$work/pred" > "$work/out.txt"
cat "$work/out.txt"
grep -q "latency b1 median (ms)" "$work/out.txt"
grep -Eq "^fmnist_resnet_fp32 +\| fp32 +\| +[0-9.]+ \| +[0-9.]+ \| +100.00 \|" "$work/out.txt"
grep -Eq "^fmnist_resnet_qdq +\| int8 " "$work/out.txt"
grep -q "wrote plot $work/eval.svg" "$work/out.txt"
/usr/bin/python3 - "$work" <<'PY'
import json, sys, xml.etree.ElementTree as ET
import numpy as np
work = sys.argv[1]
root = ET.parse(f"{work}/eval.svg").getroot()          # raises on malformed XML
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg", root.tag
texts = [t.text or "" for t in root.iter(ns + "text")]
assert any("Top-1 accuracy vs latency" in t for t in texts), texts
assert any(t.startswith("fmnist_resnet_qdq (int8") for t in texts), texts
assert len(list(root.iter(ns + "circle"))) == 2
report = json.load(open(f"{work}/eval.json"))
assert report["images"] == 64 and [m["model"] for m in report["models"]] == ["fmnist_resnet_fp32", "fmnist_resnet_qdq"]
pred = np.load(f"{work}/pred/fmnist_resnet_qdq.npy")
assert pred.dtype == np.int64 and pred.shape == (64,), (pred.dtype, pred.shape)
assert abs((pred == np.load(f"{work}/pred/fmnist_resnet_fp32.npy")).mean() * 100 - report["models"][1]["agreement"]) < 1e-9
print("svg/json/npy ok")
PY
# Errors: bad SPEC and a missing model are usage errors (exit 2) with a message.
set +e
"$qdqrt" eval --data=fashion-mnist:nope --model="$models/fmnist_resnet_qdq.onnx" 2> "$work/err1.txt"
code1=$?
"$qdqrt" eval --data=fashion-mnist:test --model="$work/missing.onnx" 2> "$work/err2.txt"
code2=$?
set -e
[ "$code1" = 2 ] && grep -q "qdqrt eval: error:.*--data" "$work/err1.txt"
[ "$code2" = 2 ] && grep -q "missing.onnx' does not exist" "$work/err2.txt"
echo "eval cli ok"
