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

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect CODE STREAM(stdout|stderr) REGEX ARGS...
expect() {
  local code="$1" stream="$2" pattern="$3"
  shift 3
  "$qdqrt" "$@" >"$work/stdout" 2>"$work/stderr"
  local actual=$?
  if [[ $actual -ne $code ]] || ! grep -Eq -- "$pattern" "$work/$stream"; then
    fail "qdqrt $* -> exit $actual (want $code); wanted $stream matching: $pattern"
    sed 's/^/    /' "$work/stderr" | head -20
  else
    echo "ok: qdqrt $*"
  fi
}

quick=(--warmUp=0 --duration=0 --threads=2)

# Usage errors: exit 2 and a message naming the flag.
expect 2 stderr "give a model with --onnx=FILE or a saved engine with --loadEngine=FILE" exec
expect 2 stderr "argument was not expected: --noSuchFlag" exec --onnx="$model" --noSuchFlag
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
expect 2 stderr "'images', which is not an input of the model" exec --onnx="$model" --shapes=images:1x1x28x28 "${quick[@]}"
# Not an engine: exit 1, naming the file.
echo "not an engine" >"$work/bad.qdqrt"
expect 1 stderr "--loadEngine: '$work/bad.qdqrt'" exec --loadEngine="$work/bad.qdqrt" "${quick[@]}"

# Build and save, then load and run with the profile: the main command's flow.
expect 0 stdout "Saved engine: $work/model.qdqrt" \
  exec --onnx="$model" --saveEngine="$work/model.qdqrt" --iterations=5 "${quick[@]}" --exportOutput="$work/built.json"
expect 0 stdout "=== Performance summary ===" \
  exec --loadEngine="$work/model.qdqrt" --iterations=20 "${quick[@]}" --dumpProfile --exportProfile="$work/profile.json" \
  --exportTimes="$work/times.json" --exportOutput="$work/loaded.json" --exportLayerInfo="$work/layers.json" --dumpLayerInfo
for pattern in "^Throughput: [0-9.e+]+ qps$" \
  "^Latency: min = [0-9.e+-]+ ms, max = [0-9.e+-]+ ms, mean = [0-9.e+-]+ ms, median = [0-9.e+-]+ ms, percentile\(90%\) = [0-9.e+-]+ ms, percentile\(95%\) = [0-9.e+-]+ ms, percentile\(99%\) = [0-9.e+-]+ ms$" \
  "^Total Host Walltime: " "^=== Profile \(20 iterations\) ===$" "^ +Time\(ms\) +Avg.\(ms\) +Median\(ms\) +Time\(%\) +Layer$" \
  " 100.0   Total$" "^=== Layer information ===$"; do
  grep -Eq -- "$pattern" "$work/stdout" || fail "exec output lacks a line matching: $pattern"
done
if command -v /usr/bin/python3 >/dev/null; then
  /usr/bin/python3 - "$work" <<'PY' || fail "exported JSON files"
import json, sys, os
work = sys.argv[1]
profile = json.load(open(os.path.join(work, "profile.json")))
assert profile[0] == {"count": 20}, profile[0]
total = sum(row["percentage"] for row in profile[1:])
assert abs(total - 100) < 1e-6, total
times = json.load(open(os.path.join(work, "times.json")))
assert len(times) == 20 and all(t["latencyMs"] >= 0 for t in times)
built = json.load(open(os.path.join(work, "built.json")))
loaded = json.load(open(os.path.join(work, "loaded.json")))
assert built == loaded, "loaded engine's outputs differ from the built engine's"
assert built[0]["dimensions"] == "1x10" and len(built[0]["values"]) == 10
layers = json.load(open(os.path.join(work, "layers.json")))
assert len(layers["Layers"]) == len(profile) - 1
PY
fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
