#!/usr/bin/env bash
# Runs the qdqrt binary on bad command lines: each must exit with the expected code (never a
# crash or signal) and name the flag or value at fault on stderr.
# Usage: cli_test.sh path/to/qdqrt
set -u
qdqrt="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

# expect CODE STDERR_REGEX ARGS...
expect() {
  local code="$1" pattern="$2"
  shift 2
  "$qdqrt" "$@" >"$work/stdout" 2>"$work/stderr"
  local actual=$?
  if [[ $actual -ne $code ]] || ! grep -Eq -- "$pattern" "$work/stderr"; then
    echo "FAIL: qdqrt $* -> exit $actual (want $code), stderr:"
    sed 's/^/    /' "$work/stderr"
    echo "    (wanted stderr matching: $pattern)"
    failures=$((failures + 1))
  else
    echo "ok: qdqrt $*"
  fi
}

# expect_stdout CODE STDOUT_REGEX ARGS...
expect_stdout() {
  local code="$1" pattern="$2"
  shift 2
  "$qdqrt" "$@" >"$work/stdout" 2>"$work/stderr"
  local actual=$?
  if [[ $actual -ne $code ]] || ! grep -Eq -- "$pattern" "$work/stdout"; then
    echo "FAIL: qdqrt $* -> exit $actual (want $code), stdout:"
    sed 's/^/    /' "$work/stdout"
    failures=$((failures + 1))
  else
    echo "ok: qdqrt $*"
  fi
}

touch "$work/model.onnx" "$work/x.npy"
printf 'not an onnx model' >"$work/garbage.onnx"

expect_stdout 0 "run" --help
expect_stdout 0 "--loadInputs" run --help
expect_stdout 0 "--saveOutputs" run --help
expect 2 "subcommand" 
expect 2 "nosuch" nosuch
expect 2 "--onnx is required" run
expect 2 "--bogus" run --onnx="$work/model.onnx" --bogus
expect_stdout 0 "^qdqrt [0-9]+\.[0-9]+\.[0-9]+$" --version
expect 2 "unknown flag --onxx \(did you mean --onnx\?\)" run --onxx="$work/model.onnx"
expect 2 "unknown flag --mehtod \(did you mean --method\?\)" calibrate --mehtod=max
expect 2 "--onnx.*missing.onnx|missing.onnx.*--onnx|File does not exist: $work/missing.onnx" run --onnx="$work/missing.onnx"
expect 2 "--loadInputs.*NAME:FILE" run --onnx="$work/model.onnx" --loadInputs=x.npy
expect 2 "--loadInputs.*input 'x'.*does not exist" run --onnx="$work/model.onnx" --loadInputs=x:"$work/nope.npy"
expect 2 "--loadInputs.*empty entry" run --onnx="$work/model.onnx" --loadInputs="x:$work/x.npy,,"
expect 2 "--shapes.*'abc' is not a non-negative integer" run --onnx="$work/model.onnx" --shapes=x:1xabc
expect 2 "--shapes.*NAME:DIMS" run --onnx="$work/model.onnx" --shapes=1x3
expect 2 "--iterations" run --onnx="$work/model.onnx" --iterations=0
expect 2 "--iterations" run --onnx="$work/model.onnx" --iterations=many
expect 2 "--seed" run --onnx="$work/model.onnx" --seed=-1x
expect 2 "--saveOutputs" run --onnx="$work/model.onnx" --saveOutputs="$work/x.npy"
# A model file that is not ONNX: a load failure (exit 1) naming the file, not a crash.
expect 1 "--onnx: '$work/garbage.onnx'" run --onnx="$work/garbage.onnx"

# qdqrt calibrate: bad flag values and data are usage errors (2), models it cannot calibrate fail (1).
models="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../models" && pwd)"
fp32="$models/fmnist_resnet_fp32.onnx"
expect_stdout 0 "--calibrationCache" calibrate --help
expect 2 "--data is required" calibrate --onnx="$fp32" --output="$work/o.onnx"
expect 2 "--method.*unknown calibration method 'kl'" calibrate --onnx="$fp32" --data=fashion-mnist:test --method=kl --output="$work/o.onnx"
expect 2 "--method.*percentile must be a number" calibrate --onnx="$fp32" --data=fashion-mnist:test --method=percentile=200 --output="$work/o.onnx"
expect 2 "--placement.*unknown placement 'everywhere'" calibrate --onnx="$fp32" --data=fashion-mnist:test --placement=everywhere --output="$work/o.onnx"
expect 2 "--mean.*'abc' is not a number" calibrate --onnx="$fp32" --data=fashion-mnist:test --mean=abc --output="$work/o.onnx"
expect 2 "--samples" calibrate --onnx="$fp32" --data=fashion-mnist:test --samples=0 --output="$work/o.onnx"
expect 2 "bad data SPEC 'mnist:train'" calibrate --onnx="$fp32" --data=mnist:train --output="$work/o.onnx"
expect 2 "split must be 'train' or 'test'" calibrate --onnx="$fp32" --data=fashion-mnist:val --output="$work/o.onnx"
expect 1 "already quantized" calibrate --onnx="$models/fmnist_resnet_qdq.onnx" --data=fashion-mnist:test --samples=2 --output="$work/o.onnx"
expect 1 "garbage.onnx" calibrate --onnx="$work/garbage.onnx" --data=fashion-mnist:test --samples=2 --output="$work/o.onnx"
expect_stdout 0 "--reference" compare --help
expect 2 "--onnx is required" compare
expect 2 "no QuantizeLinear -> DequantizeLinear on an activation" compare --onnx="$fp32"
expect 2 "--sort" compare --onnx="$models/fmnist_resnet_qdq.onnx" --sort=best
if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
