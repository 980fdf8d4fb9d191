#!/usr/bin/env bash
# Runs the qdqrt binary on bad command lines: each must exit with the expected code (never a
# crash or signal) and name the flag or value at fault on stderr.
# Usage: cli_test.sh path/to/qdqrt
set -u
qdqrt="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

# fail / expect CODE STREAM REGEX ARGS...
source "$(dirname "${BASH_SOURCE[0]}")/../common/cli_expect.sh"

touch "$work/model.onnx" "$work/x.npy"
printf 'not an onnx model' >"$work/garbage.onnx"

expect 0 stdout "run" --help
expect 0 stdout "--loadInputs" run --help
expect 0 stdout "--saveOutputs" run --help
expect 2 stderr "subcommand" 
expect 2 stderr "nosuch" nosuch
expect 2 stderr "--onnx is required" run
expect 2 stderr "--bogus" run --onnx="$work/model.onnx" --bogus
expect 0 stdout "^qdqrt [0-9]+\.[0-9]+\.[0-9]+$" --version
expect 2 stderr "unknown flag --onxx \(did you mean --onnx\?\)" run --onxx="$work/model.onnx"
expect 2 stderr "unknown flag --mehtod \(did you mean --method\?\)" calibrate --mehtod=max
expect 2 stderr "--onnx.*missing.onnx|missing.onnx.*--onnx|File does not exist: $work/missing.onnx" run --onnx="$work/missing.onnx"
expect 2 stderr "--loadInputs.*NAME:FILE" run --onnx="$work/model.onnx" --loadInputs=x.npy
expect 2 stderr "--loadInputs.*input 'x'.*does not exist" run --onnx="$work/model.onnx" --loadInputs=x:"$work/nope.npy"
expect 2 stderr "--loadInputs.*empty entry" run --onnx="$work/model.onnx" --loadInputs="x:$work/x.npy,,"
expect 2 stderr "--shapes.*'abc' is not a non-negative integer" run --onnx="$work/model.onnx" --shapes=x:1xabc
expect 2 stderr "--shapes.*NAME:DIMS" run --onnx="$work/model.onnx" --shapes=1x3
expect 2 stderr "--iterations" run --onnx="$work/model.onnx" --iterations=0
expect 2 stderr "--iterations" run --onnx="$work/model.onnx" --iterations=many
expect 2 stderr "--seed" run --onnx="$work/model.onnx" --seed=-1x
expect 2 stderr "--saveOutputs" run --onnx="$work/model.onnx" --saveOutputs="$work/x.npy"
# A model file that is not ONNX: a load failure (exit 1) naming the file, not a crash.
expect 1 stderr "--onnx: '$work/garbage.onnx'" run --onnx="$work/garbage.onnx"

# qdqrt calibrate: bad flag values and data are usage errors (2), models it cannot calibrate fail (1).
models="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../models" && pwd)"
fp32="$models/fmnist_resnet_fp32.onnx"
expect 0 stdout "--calibrationCache" calibrate --help
expect 2 stderr "--data is required" calibrate --onnx="$fp32" --output="$work/o.onnx"
expect 2 stderr "--method.*unknown calibration method 'kl'" calibrate --onnx="$fp32" --data=fashion-mnist:test --method=kl --output="$work/o.onnx"
expect 2 stderr "--method.*percentile must be a number" calibrate --onnx="$fp32" --data=fashion-mnist:test --method=percentile=200 --output="$work/o.onnx"
expect 2 stderr "--placement.*unknown placement 'everywhere'" calibrate --onnx="$fp32" --data=fashion-mnist:test --placement=everywhere --output="$work/o.onnx"
expect 2 stderr "--mean.*'abc' is not a number" calibrate --onnx="$fp32" --data=fashion-mnist:test --mean=abc --output="$work/o.onnx"
expect 2 stderr "--samples" calibrate --onnx="$fp32" --data=fashion-mnist:test --samples=0 --output="$work/o.onnx"
expect 2 stderr "bad data SPEC 'mnist:train'" calibrate --onnx="$fp32" --data=mnist:train --output="$work/o.onnx"
expect 2 stderr "split must be 'train' or 'test'" calibrate --onnx="$fp32" --data=fashion-mnist:val --output="$work/o.onnx"
expect 1 stderr "already quantized" calibrate --onnx="$models/fmnist_resnet_qdq.onnx" --data=fashion-mnist:test --samples=2 --output="$work/o.onnx"
expect 1 stderr "garbage.onnx" calibrate --onnx="$work/garbage.onnx" --data=fashion-mnist:test --samples=2 --output="$work/o.onnx"
expect 0 stdout "--reference" compare --help
expect 2 stderr "--onnx is required" compare
expect 2 stderr "no QuantizeLinear -> DequantizeLinear on an activation" compare --onnx="$fp32"
expect 2 stderr "--sort" compare --onnx="$models/fmnist_resnet_qdq.onnx" --sort=best
if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
