#!/usr/bin/env bash
# Runs the `qdqrt exec` binary: bad command lines exit 2 (usage) or 1 (a file that is not an
# engine) with a message naming the flag; a short build+save then load run prints the summary
# block and the profile, and its JSON files parse.
# Usage: exec_cli_test.sh path/to/qdqrt MODEL.onnx
set -u
qdqrt="$1"
model="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

# fail / expect CODE STREAM REGEX ARGS...
source "$(dirname "${BASH_SOURCE[0]}")/../common/cli_expect.sh"

quick=(--warmUp=0 --duration=0 --threads=2)

# Usage errors: exit 2 and a message naming the flag.
expect 2 stderr "give a model with --onnx=FILE or a saved engine with --loadEngine=FILE" exec
expect 2 stderr "unknown flag --noSuchFlag$" exec --onnx="$model" --noSuchFlag
expect 2 stderr "unknown flag --iteration \(did you mean --iterations\?\)" exec --onnx="$model" --iteration=5
expect 2 stderr "unknown flag --loadengine \(did you mean --loadEngine\?\)" exec --loadengine=x.qdqrt
expect 2 stderr "--onnx: File does not exist: $work/missing.onnx" exec --onnx="$work/missing.onnx"
expect 2 stderr "--loadEngine: File does not exist" exec --loadEngine="$work/missing.qdqrt"
expect 2 stderr "--onnx and --loadEngine exclude each other" exec --onnx="$model" --loadEngine="$model"
expect 2 stderr "--int8 and --fp32 exclude each other" exec --onnx="$model" --int8 --fp32
expect 2 stderr "--percentile: .*percentile 120 is not in \[0, 100\]" exec --onnx="$model" --percentile=90,120
expect 2 stderr "--percentile: .*'x' is not a number" exec --onnx="$model" --percentile=x
expect 2 stderr "--iterations" exec --onnx="$model" --iterations=0
expect 2 stderr "--shapes: .*dim 'abc'" exec --onnx="$model" --shapes=input:1xabc
expect 2 stderr "--exportProfile: directory '$work/nodir' of" exec --onnx="$model" --exportProfile="$work/nodir/p.json"
expect 2 stderr "--onnx: .*input 'input': dim 2 is 28 in the model" exec --onnx="$model" --shapes=input:1x1x32x32 "${quick[@]}"
expect 2 stderr "'images' is not an input of the model" exec --onnx="$model" --shapes=images:1x1x28x28 "${quick[@]}"
# Files that are not regular files are named as what they are, never read (a FIFO would block, /dev/zero
# never ends): each command runs under a timeout so a hang is a failure, not a stuck test.
mkfifo "$work/fifo"
timed_qdqrt() { timeout 60 "$qdqrt_binary" "$@"; }
qdqrt_binary="$qdqrt"
qdqrt=timed_qdqrt
expect 2 stderr "--calib: calibration cache '$work/fifo' is a FIFO, not a regular file" exec --onnx="$model" --calib="$work/fifo" "${quick[@]}"
expect 2 stderr "--calib: calibration cache '/dev/zero' is a character device" exec --onnx="$model" --calib=/dev/zero "${quick[@]}"
expect 2 stderr "--loadInputs: input 'input': file '$work/fifo' is a FIFO" exec --onnx="$model" --loadInputs=input:"$work/fifo" "${quick[@]}"
qdqrt="$qdqrt_binary"
# --saveEngine naming the model would overwrite it: refused, the model intact.
cp "$model" "$work/model_copy.onnx"
expect 2 stderr "--saveEngine: '$work/model_copy.onnx' is the model given to --onnx" exec --onnx="$work/model_copy.onnx" --saveEngine="$work/model_copy.onnx" "${quick[@]}"
cmp -s "$model" "$work/model_copy.onnx" || fail "--saveEngine equal to --onnx changed the model"
# Thread counts: negative or far beyond the cores are refused before anything runs.
expect 2 stderr "--threads: 512 threads is more than the limit of" exec --onnx="$model" --threads=512
expect 2 stderr "--threads: thread count -1 is negative" exec --onnx="$model" --threads=-1

# --markDebug keeps an intermediate tensor as an engine output; --saveDebugTensors writes its raw data.
relu="/stem/stem.2/Relu_output_0"
expect 0 stdout "Debug tensor $relu: float32 \[1, [0-9]+, 28, 28\] \([0-9]+ bytes\) written to $work/relu.bin" \
  exec --onnx="$model" --markDebug="$relu" --saveDebugTensors="$relu:$work/relu.bin" --iterations=1 "${quick[@]}"
/usr/bin/python3 - "$work/stdout" "$work/relu.bin" <<'PY' || fail "--saveDebugTensors: the raw file does not hold the ReLU output"
import re, sys
import numpy as np
line = re.search(r"Debug tensor \S+: float32 \[([0-9, ]+)\] \(([0-9]+) bytes\)", open(sys.argv[1]).read())
shape = [int(d) for d in line.group(1).split(", ")]
values = np.fromfile(sys.argv[2], np.float32)
assert values.size * 4 == int(line.group(2)) == int(np.prod(shape)) * 4, (values.size, line.group(0))
assert values.min() >= 0 and values.max() > 0  # a ReLU's output
PY
expect 2 stderr "--markDebug: the model has no tensor 'no_such_tensor'" exec --onnx="$model" --markDebug=no_such_tensor "${quick[@]}"
expect 2 stderr "--saveDebugTensors: '$relu' is not marked" exec --onnx="$model" --saveDebugTensors="$relu:$work/x.bin" "${quick[@]}"

# Not an engine: exit 1, naming the file.
echo "not an engine" >"$work/bad.qdqrt"
expect 1 stderr "--loadEngine: '$work/bad.qdqrt'" exec --loadEngine="$work/bad.qdqrt" "${quick[@]}"

# A run with every report and export on a small Q/DQ model (written with the onnx Python package):
# the summary block, the profile table, JSON files that parse, profile percentages summing to 100.
small="$work/qdq.onnx"
/usr/bin/python3 - "$small" <<'PY' || { echo "SKIP: cannot write the small model (/usr/bin/python3 with onnx)"; small=""; }
import sys, onnx
from onnx import helper, TensorProto
dims = ["N", 3, 5, 7]
graph = helper.make_graph(
    [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], name="quant"),
     helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], name="dequant")], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
    [helper.make_tensor_value_info("q", TensorProto.INT8, dims), helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
    [helper.make_tensor("s", TensorProto.FLOAT, [], [0.05]), helper.make_tensor("zp", TensorProto.INT8, [], [3])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
PY
check_reports() {  # check_reports STDOUT_FILE ITERATIONS
  local pattern
  # Every line has trtexec's "[MM/DD/YYYY-HH:MM:SS] [I] " prefix; the patterns below match what follows it.
  # ... except trtexec's own first and last lines, "&&&& RUNNING ..." and "&&&& PASSED ...".
  grep -Evq '^(\[[0-9]{2}/[0-9]{2}/[0-9]{4}-[0-9]{2}:[0-9]{2}:[0-9]{2}\] \[[IWEV]\] |&&&& (RUNNING|PASSED) )' "$1" &&
    fail "a line without trtexec's log prefix: $(grep -Ev '^(\[[0-9/:-]+\] \[[IWEV]\] |&&&& )' "$1" | head -1)"
  head -1 "$1" | grep -Eq '^&&&& RUNNING qdqrt\.exec \[qdqrt v[0-9.]+\] # .*qdqrt exec ' || fail "first line is not &&&& RUNNING: $(head -1 "$1")"
  tail -1 "$1" | grep -Eq '^&&&& PASSED qdqrt\.exec \[qdqrt v[0-9.]+\] # .*qdqrt exec ' || fail "last line is not &&&& PASSED: $(tail -1 "$1")"
  sed -E 's/^\[[0-9/:-]+\] \[[IWEV]\] //' "$1" >"$1.text"
  set -- "$1.text" "$2"
  for pattern in "^Throughput: [0-9.e+]+ qps$" \
    "^Latency: min = [0-9.e+-]+ ms, max = [0-9.e+-]+ ms, mean = [0-9.e+-]+ ms, median = [0-9.e+-]+ ms, percentile\(90%\) = [0-9.e+-]+ ms, percentile\(95%\) = [0-9.e+-]+ ms, percentile\(99%\) = [0-9.e+-]+ ms$" \
    "^Total Host Walltime: " "^=== Profile \($2 iterations\) ===$" "^ +Time\(ms\) +Avg.\(ms\) +Median\(ms\) +Time\(%\) +Layer$" \
    " 100.0   Total$" "^=== Layer information ===$"; do
    grep -Eq -- "$pattern" "$1" || fail "exec output lacks a line matching: $pattern"
  done
  /usr/bin/python3 - "$work" "$2" <<'PY' || fail "exported JSON files"
import json, sys, os
work, iterations = sys.argv[1], int(sys.argv[2])
profile = json.load(open(os.path.join(work, "profile.json")))
assert profile[0] == {"count": iterations}, profile[0]
total = sum(row["percentage"] for row in profile[1:])
assert abs(total - 100) < 1e-6, total
times = json.load(open(os.path.join(work, "times.json")))
assert len(times) == iterations and all(t["latencyMs"] >= 0 for t in times)
outputs = json.load(open(os.path.join(work, "output.json")))
assert all({"name", "dimensions", "values"} <= set(o) for o in outputs)
layers = json.load(open(os.path.join(work, "layers.json")))
assert [layer["Name"] for layer in layers["Layers"]] == [row["name"] for row in profile[1:]]
PY
}
reports=(--dumpProfile --exportProfile="$work/profile.json" --exportTimes="$work/times.json"
         --exportOutput="$work/output.json" --exportLayerInfo="$work/layers.json" --dumpLayerInfo)
if [[ -n "$small" ]]; then
  expect 0 stdout "=== Performance summary ===" exec --onnx="$small" --shapes=x:4x3x5x7 --iterations=20 "${quick[@]}" "${reports[@]}"
  check_reports "$work/stdout" 20
  # Must not fire: every layer of this model is native.
  grep -q "reference layer:" "$work/stdout" && fail "a warning for a reference layer in a model without any"
  grep -Eq "Reference layers: 0$" "$work/stdout" || fail "the engine summary does not count 0 reference layers"
fi

# A node no native layer runs (CumSum): a warning line naming it, its op and the reason, counted
# in the summary; --noReferenceLayers makes the build (or a loaded engine holding one) fail.
cumsum="$work/cumsum.onnx"
/usr/bin/python3 - "$cumsum" <<'PY' || { echo "SKIP: cannot write the CumSum model (/usr/bin/python3 with onnx)"; cumsum=""; }
import sys, onnx
from onnx import helper, TensorProto
graph = helper.make_graph(
    [helper.make_node("CumSum", ["x", "axis"], ["c"], name="running_sum"),
     helper.make_node("Relu", ["c"], ["y"], name="relu")], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
    [helper.make_tensor("axis", TensorProto.INT64, [], [1])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
PY
if [[ -n "$cumsum" ]]; then
  warning="\[W\] reference layer: CumSum 'running_sum' runs on the reference executor \(slow, one thread\): no native layer implements CumSum$"
  expect 0 stdout "$warning" exec --onnx="$cumsum" --saveEngine="$work/cumsum.qdqrt" --iterations=2 "${quick[@]}"
  grep -Eq "Reference layers: 1$" "$work/stdout" || fail "the engine summary does not count the reference layer"
  expect 0 stdout "$warning" exec --loadEngine="$work/cumsum.qdqrt" --iterations=2 "${quick[@]}"
  expect 1 stderr "--onnx: .*1 node\(s\) would run on the reference executor.*CumSum 'running_sum': no native layer implements CumSum" \
    exec --onnx="$cumsum" --noReferenceLayers "${quick[@]}"
  grep -q "=== Inference ===" "$work/stdout" && fail "--noReferenceLayers: the refused engine ran"
  expect 1 stderr "--noReferenceLayers: 1 layer\(s\) run on the reference executor: CumSum 'running_sum'" \
    exec --loadEngine="$work/cumsum.qdqrt" --noReferenceLayers "${quick[@]}"
fi

# The README flow on the shipped model: build and save, then load and run with the profile; the
# loaded engine's outputs equal the built engine's.
"$qdqrt" exec --onnx="$model" --saveEngine="$work/model.qdqrt" --iterations=5 "${quick[@]}" \
  --exportOutput="$work/built.json" >"$work/stdout" 2>"$work/stderr"
code=$?
if [[ $code -ne 0 ]]; then
  fail "qdqrt exec --onnx=$model --saveEngine: exit $code: $(cat "$work/stderr")"
else
  expect 0 stdout "=== Load ===" exec --loadEngine="$work/model.qdqrt" --iterations=20 "${quick[@]}" "${reports[@]}"
  check_reports "$work/stdout" 20
  # trtexec's engine-file flags: the version that made the file, load timing, then exit.
  expect 0 stdout "Plan was created with qdqrt version [0-9.]+ \(engine format [0-9]+\)$" exec --loadEngine="$work/model.qdqrt" --getPlanVersionOnly
  grep -q "=== Performance summary ===" "$work/stdout" && fail "--getPlanVersionOnly ran the engine"
  expect 0 stdout "Total deserialization time = [0-9.]+ milliseconds in 5 iterations" exec --loadEngine="$work/model.qdqrt" --timeDeserialize
  grep -q "=== Performance summary ===" "$work/stdout" && fail "--timeDeserialize ran the engine"
  expect 2 stderr "--getPlanVersionOnly reads an engine file: give it with --loadEngine" exec --onnx="$model" --getPlanVersionOnly
  expect 1 stdout "^&&&& FAILED qdqrt.exec" exec --loadEngine="$work/bad.qdqrt" --getPlanVersionOnly
  # Bare --threads is trtexec's "use threads": every hardware thread.
  expect 0 stdout "Threads: $(nproc)$" exec --loadEngine="$work/model.qdqrt" --threads --iterations=2 --warmUp=0 --duration=0
  # --idleTime pauses between timed runs, outside the timed latency: 5 runs 100 ms apart take >= 400 ms of walltime.
  expect 0 stdout "Idle: 100 ms between timed runs" exec --loadEngine="$work/model.qdqrt" --idleTime=100 --sleepTime=50 \
    --iterations=5 --warmUp=0 --duration=0 --threads=2
  grep -q "Sleep: 50 ms before the timed runs" "$work/stdout" || fail "--sleepTime: no Sleep line"
  /usr/bin/python3 - "$work/stdout" <<'PY' || fail "--idleTime: the pauses are not between the runs"
import re, sys
text = open(sys.argv[1]).read()
walltime = float(re.search(r"Total Host Walltime: ([0-9.e+-]+) s", text).group(1))
median = float(re.search(r"median = ([0-9.e+-]+) ms", text).group(1))
assert walltime >= 0.4, walltime       # four gaps of 100 ms
assert median < 100, median            # not counted in the latency
PY
  /usr/bin/python3 -c "
import json, sys
built, loaded = (json.load(open(f)) for f in sys.argv[1:])
assert built == loaded, 'the loaded engine gives other outputs than the built one'
" "$work/built.json" "$work/output.json" || fail "built and loaded outputs differ"
fi

# --bf16: float MatMul/Gemm layers in bf16 where the CPU runs the bf16 kernels (--dumpLayerInfo names
# them); where it cannot (kernels limited to avx2 here), a warning line and the fp32 kernels.
export QDQRT_MAX_ISA=avx2
expect 0 stdout "\[W\] --bf16: (kernels are limited to avx2 \(QDQRT_MAX_ISA\)|this CPU lacks AVX512_BF16), so float MatMul/Gemm layers keep their fp32 kernels" \
  exec --onnx="$model" --fp32 --bf16 --dumpLayerInfo "${quick[@]}"
grep -q "bf16-gemm" "$work/stdout" && fail "--bf16 under QDQRT_MAX_ISA=avx2 still chose a bf16 kernel"
unset QDQRT_MAX_ISA
expect 0 stdout "Precision: .*BF16 for float MatMul/Gemm \(--bf16\)" exec --onnx="$model" --fp32 --bf16 --dumpLayerInfo "${quick[@]}"
if grep -q avx512_bf16 /proc/cpuinfo; then
  grep -Eq "bf16-gemm-(14x32-avx512bf16|32x32-amxbf16)" "$work/stdout" || fail "--bf16 --dumpLayerInfo shows no bf16 kernel"
  grep -q "\[W\] --bf16" "$work/stdout" && fail "--bf16 warned on a CPU with AVX512_BF16"
fi
expect 0 stdout "\[W\] --bf16 ignored with --loadEngine" exec --loadEngine="$work/model.qdqrt" --bf16 "${quick[@]}"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
