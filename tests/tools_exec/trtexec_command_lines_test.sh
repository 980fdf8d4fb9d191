#!/usr/bin/env bash
# trtexec command lines run unchanged with `qdqrt exec` in trtexec's place: the examples of
# NVIDIA's trtexec README (dynamic shapes, a timing trace, multi-streaming, raw input data, DLA and
# FP16 flags) and the two command lines of TREx's process_engine.py (build, then profile with every
# export). Models with the README's input names and shapes are written with the onnx package.
# Also: a model without Q/DQ is labelled FP32 with a warning, and --calib quantizes it from a
# TensorRT calibration cache written by `qdqrt calibrate`.
# Usage: trtexec_command_lines_test.sh path/to/qdqrt MODELS_DIR
set -u
qdqrt="$(realpath "$1")"
models="$(realpath "$2")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/../common/cli_expect.sh"  # fail
trtexec() { "$qdqrt" exec "$@"; }

cd "$work" || exit 1
mkdir -p data/mnist loadinputs
/usr/bin/python3 - <<'PY' || { echo "SKIP: cannot write the models (/usr/bin/python3 with onnx)"; exit 0; }
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto

def qdq_conv(input_name, dims, path):
    rng = np.random.default_rng(0)
    weight = rng.integers(-127, 128, size=(8, 3, 3, 3)).astype(np.int8)
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "zp"),
             numpy_helper.from_array(weight, "w_q"), numpy_helper.from_array(np.full(8, 0.01, np.float32), "w_s"),
             numpy_helper.from_array(np.zeros(8, np.int8), "w_zp")]
    nodes = [helper.make_node("QuantizeLinear", [input_name, "s", "zp"], ["x_q"], name="quant"),
             helper.make_node("DequantizeLinear", ["x_q", "s", "zp"], ["x_dq"], name="dequant"),
             helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_zp"], ["w"], name="weight_dequant", axis=0),
             helper.make_node("Conv", ["x_dq", "w"], ["conv_out"], name="conv", kernel_shape=[3, 3], strides=[2, 2]),
             helper.make_node("Relu", ["conv_out"], ["output"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)

qdq_conv("input", ["batch", 3, 244, 244], "model.onnx")
qdq_conv("input", ["batch", 3, 244, 244], "resnet50.onnx")
qdq_conv("input", [1, 3, 28, 28], "data/mnist/mnist.onnx")
qdq_conv("data", [1, 3, 244, 244], "loadinputs/model.onnx")
data = np.ones((1, 3, 244, 244), dtype=np.float32)
data.tofile("loadinputs/data.bin")
PY

# run NAME COMMAND...: the command must exit 0; its log is kept in NAME.log.
run() {
  local name="$1"
  shift
  "$@" >"$work/$name.log" 2>"$work/$name.err"
  local code=$?
  if [[ $code -ne 0 ]]; then
    fail "$name: $* -> exit $code: $(head -3 "$work/$name.err")"
  else
    echo "ok: $name: $*"
  fi
}
# has NAME REGEX: the log of NAME has a line matching REGEX (after trtexec's "[date] [I] " prefix).
has() {
  sed -E 's/^\[[0-9/:-]+\] \[[IWEV]\] //' "$work/$1.log" | grep -Eq -- "$2" || fail "$1: no line matching: $2"
}

# The README's examples, as written there (trtexec is qdqrt exec).
run example2 trtexec --onnx=data/mnist/mnist.onnx --useDLACore=1 --fp16 --allowGPUFallback
has example2 "^not applicable on CPU: --useDLACore \(no DLA\)$"
has example2 "^not applicable on CPU: --fp16 "
has example2 "^=== Performance summary ===$"
run example3_static trtexec --onnx=model.onnx
run example3_shapes trtexec --onnx=model.onnx --shapes=input:32x3x244x244
has example3_shapes "^Shapes: input:32x3x244x244 \(batch 32\)$"
run example3_range trtexec --onnx=model.onnx --minShapes=input:1x3x244x244 --optShapes=input:16x3x244x244 --maxShapes=input:32x3x244x244 --shapes=input:5x3x244x244
has example3_range "^Input build shapes: min input=1x3x244x244, opt input=16x3x244x244, max input=32x3x244x244$"
has example3_range "^Max batch: 32$"
has example3_range "^Shapes: input:5x3x244x244 \(batch 5\)$"
run example4 trtexec --onnx=data/mnist/mnist.onnx --exportTimes=trace.json
run example5_int8 trtexec --onnx=resnet50.onnx --saveEngine=g1.trt --int8 --skipInference
run example5_best trtexec --onnx=resnet50.onnx --saveEngine=g2.trt --best --skipInference
run example5_streams2 trtexec --loadEngine=g1.trt --streams=2
has example5_streams2 "^Streams: 2 \(each its own context and host thread\)$"
has example5_streams2 "^Throughput: [0-9.e+]+ qps$"
run example5_g2 trtexec --loadEngine=g2.trt --streams=2
run example6 trtexec --onnx=model.onnx --stronglyTyped
has example6 "^not applicable on CPU: --stronglyTyped "
(cd loadinputs && run loadinputs trtexec --onnx=model.onnx --loadInputs="data":data.bin --exportOutput=out.json)
/usr/bin/python3 - "$work" <<'PY' || fail "example 4's trace or the .bin run's output"
import json, sys, os
work = sys.argv[1]
trace = json.load(open(os.path.join(work, "trace.json")))
fields = {"startEnqMs", "endEnqMs", "startH2dMs", "endH2dMs", "startComputeMs", "endComputeMs", "startD2hMs",
          "endD2hMs", "h2dMs", "computeMs", "d2hMs", "latencyMs"}
assert trace and all(set(t) == fields for t in trace), trace[0]
# All-ones input through the model: the same output as the reference executor gives.
out = json.load(open(os.path.join(work, "loadinputs", "out.json")))
assert out[0]["name"] == "output" and out[0]["dimensions"] == "1x8x121x121", out[0]["dimensions"]
PY
# A .bin of the wrong size is refused, naming both sizes.
head -c 100 loadinputs/data.bin >loadinputs/short.bin
(cd loadinputs && "$qdqrt" exec --onnx=model.onnx --loadInputs=data:short.bin >/dev/null 2>"$work/short.err")
[[ $? -eq 2 ]] && grep -q "holds 100 bytes; float32 \[1, 3, 244, 244\] needs 714432" "$work/short.err" ||
  fail "a short .bin: $(cat "$work/short.err")"

# TREx's process_engine.py: build, then profile with every export; the profile log parses as
# TREx's parse_trtexec_log reads it (sections of "[date] [I] key: value" lines).
run trex_build trtexec --verbose --nvtxMode=verbose --buildOnly --workspace=1024 --onnx=model.onnx --saveEngine=model.onnx.engine --timingCacheFile=./timing.cache
run trex_profile trtexec --verbose --noDataTransfers --useCudaGraph --separateProfileRun --nvtxMode=verbose --loadEngine=model.onnx.engine --exportTimes=model.onnx.engine.timing.json --exportProfile=model.onnx.engine.profile.json --exportLayerInfo=model.onnx.engine.graph.json --timingCacheFile=./timing.cache
/usr/bin/python3 - "$work/trex_profile.log" <<'PY' || fail "the profile log does not parse as TREx reads it"
import re, sys
sections = {"=== Performance summary ===": {}, "=== Inference Options ===": {}, "=== Device Information ===": {}}
current = None
for line in open(sys.argv[1]):
    if current is None:
        current = next((s for s in sections if re.search(s, line)), None)
        continue
    match = re.search(r"(\[\d+/\d+/\d+-\d+:\d+:\d+\] \[I\] )", line)
    kv = line[match.span()[1]:].strip() if match else ""
    if not match or ":" not in kv:
        current = next((s for s in sections if re.search(s, line)), None)
        continue
    key, value = kv.split(":")[0], kv.split(":")[1][1:]
    sections[current][key] = value
perf = sections["=== Performance summary ==="]
assert float(perf["Throughput"].split()[0]) > 0, perf
stats = [float(re.search(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?", s.split("=")[1]).group(0)) for s in perf["Latency"].split(",")]
assert len(stats) == 7 and stats[0] <= stats[3] <= stats[1], stats
assert float(perf["Total Host Walltime"].split()[0]) > 0
assert sections["=== Inference Options ==="]["Streams"] == "1"
assert sections["=== Device Information ==="]["Selected Device"]
PY

# A model without Q/DQ: labelled FP32, with a warning; --calib with a cache from qdqrt calibrate
# quantizes it (the data set: Debian's Fashion-MNIST, as the calibration tests use).
run fp32 trtexec --onnx="$models/fmnist_resnet_fp32.onnx" --skipInference
has fp32 "^Precision: fp32 \(int8: 0 of [0-9]+ layers; this model has no Q/DQ\)$"
grep -q "\] \[W\] int8: 0 of [0-9]* layers: this model has no Q/DQ" "$work/fp32.log" || fail "fp32: no [W] line"
if "$qdqrt" calibrate --onnx="$models/fmnist_resnet_fp32.onnx" --data=fashion-mnist:train --samples=64 --mean=0.2860 \
     --std=0.3530 --output="$work/ptq.onnx" --calibrationCache="$work/calib.cache" --noProgress >"$work/calibrate.log" 2>&1; then
  run calib trtexec --onnx="$models/fmnist_resnet_fp32.onnx" --int8 --calib=calib.cache --skipInference
  has calib "^Calibration: [0-9]+ scales from calib.cache"
  has calib "^Precision: int8 \(int8: [1-9][0-9]* of [0-9]+ layers"
else
  echo "SKIP: --calib (qdqrt calibrate failed: $(tail -1 "$work/calibrate.log"))"
fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
