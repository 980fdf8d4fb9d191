#!/usr/bin/env bash
# qdqrt eval through the binary: table on stdout, JSON, well-formed SVG, .npy predictions, exit codes.
set -euo pipefail
qdqrt="$1"
models="$2"
if [ ! -d /usr/share/datasets/fashion-mnist ]; then echo "SKIP: no Fashion-MNIST"; exit 0; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
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
[ "$code2" = 2 ] && grep -q "missing.onnx: no such file" "$work/err2.txt"
echo "eval cli ok"
