#!/usr/bin/env bash
# Runs `qdqrt inspect` on the project's QDQ models: table and summary printed, --exportLayerInfo
# JSON parses with one entry per printed row, --dumpGraph writes loadable graphs, bad flags fail
# with exit code 2 (usage) or 1 (model) and a message naming the problem.
# Usage: inspect_cli_test.sh path/to/qdqrt MODELS_DIR
set -u
qdqrt="$1"
models="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

# fail / expect CODE STREAM REGEX ARGS...
source "$(dirname "${BASH_SOURCE[0]}")/../common/cli_expect.sh"

model="$models/resnet_trt.onnx"
if [[ ! -f "$model" ]]; then
  echo "missing $model (run models/export_qdq_styles.py)"
  exit 1
fi

expect 0 stdout "=== Layer information ===" inspect --onnx="$model"
expect 0 stdout "Conv/MatMul MACs in INT8: " inspect --onnx="$model"
expect 0 stdout "Q/DQ nodes left: " inspect --onnx="$model" --shapes=input:4x1x28x28
expect 0 stdout "DepthwiseConv" inspect --onnx="$models/mobilenet_ort_u8.onnx"

# Reference layers: none in this model (must not fire); a CumSum, which no native layer runs, is
# named with its op and reason.
expect 0 stdout "^Reference layers: 0$" inspect --onnx="$model"
grep -q "reference layer:" "$work/stdout" && fail "inspect warned of a reference layer in a model without any"
/usr/bin/python3 - "$work/cumsum.onnx" <<'PY' || fail "cannot write the CumSum model (/usr/bin/python3 with onnx)"
import sys, onnx
from onnx import helper, TensorProto
graph = helper.make_graph(
    [helper.make_node("CumSum", ["x", "axis"], ["y"], name="running_sum")], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
    [helper.make_tensor("axis", TensorProto.INT64, [], [1])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
PY
expect 0 stdout "^\[W\] reference layer: CumSum 'running_sum' runs on the reference executor \(slow, one thread\): no native layer implements CumSum$" \
  inspect --onnx="$work/cumsum.onnx" --shapes=x:2x8 --exportLayerInfo="$work/cumsum.json"
grep -Eq "^Reference layers: 1$" "$work/stdout" || fail "inspect does not count the reference layer"
/usr/bin/python3 - "$work/cumsum.json" <<'PY' || fail "inspect's JSON does not list the reference layer"
import json, sys
layers = json.load(open(sys.argv[1]))["Summary"]["ReferenceLayers"]
assert layers == [{"Node": "running_sum", "OpType": "CumSum", "Reason": "no native layer implements CumSum"}], layers
PY

# JSON: parses, one layer per table row, summary present.
expect 0 stdout "Layer summary" inspect --onnx="$model" --exportLayerInfo="$work/layers.json"
rows=$(($(sed -n '/=== Layer information ===/,/=== Layer summary ===/p' "$work/stdout" | wc -l) - 3))
/usr/bin/python3 - "$work/layers.json" "$rows" <<'PY' || fail "layers.json does not match the table"
import json, sys
data = json.load(open(sys.argv[1]))
assert len(data["Layers"]) == int(sys.argv[2]), (len(data["Layers"]), sys.argv[2])
for layer in data["Layers"]:
    assert {"Name", "LayerType", "Inputs", "Outputs", "ParameterType", "Precision", "MACs"} <= set(layer), layer
    for tensor in layer["Inputs"] + layer["Outputs"]:
        assert {"Name", "Location", "Dimensions", "Format/Datatype"} <= set(tensor), tensor
assert data["Bindings"] == ["input", "logits"], data["Bindings"]
assert "Int8MACShare" in data["Summary"] and "FloatReasons" in data["Summary"]
assert data["Summary"]["ReferenceLayers"] == [], data["Summary"]["ReferenceLayers"]
PY

# The table: the name last, cut at 60 characters unless --fullNames.
expect 0 stdout "^Kind +In +Out +Input shapes +Output shape +MACs  Name$" inspect --onnx="$model"
sed -n '/=== Layer information ===/,/=== Layer summary ===/p' "$work/stdout" | awk 'length($0) > 200 { exit 1 }' ||
  fail "inspect's table has lines over 200 characters"
expect 0 stdout "Name$" inspect --onnx="$models/mobilenet_ort_u8.onnx" --fullNames
grep -q '\.\.\.$' "$work/stdout" && fail "--fullNames still cut a name"

# --dumpGraph: the input graph and one file per pass run, each loadable by `qdqrt run`.
expect 0 stdout "Passes run" inspect --onnx="$model" --dumpGraph="$work/dump"
[[ -f "$work/dump/00_input.onnx" ]] || fail "--dumpGraph wrote no 00_input.onnx"
for file in "$work"/dump/*.onnx; do
  "$qdqrt" run --onnx="$file" >/dev/null 2>"$work/run_err" || { fail "qdqrt run on dumped $file"; cat "$work/run_err"; }
done

# --fp32: the float pipeline (its own pass names), no Q/DQ and no INT8 layer left.
expect 0 stdout "Passes run: remove_identities, fold_constants, evaluate_shape_computations, remove_empty_pads, fold_expand_into_broadcast, lower_box_scatter, lower_einsum, lower_reduce_l2, fold_pad_into_pool, lower_spatial_mean, remove_fake_quantization, slice_gathered_parts, split_sliced_projection, merge_transposes, fold_batchnorm, lower_conv3d, lower_pool3d, merge_transpose_reshape, prune_dead_conv_taps, fuse_layer_norm, fuse_float_conv_epilogue" \
  inspect --onnx="$model" --fp32
expect 0 stdout "Q/DQ nodes left: 0 QuantizeLinear, 0 DequantizeLinear" inspect --onnx="$model" --fp32
grep -q "^  INT8: " "$work/stdout" && fail "--fp32 left INT8 layers"
expect 2 stderr "unknown pass 'fuse_qdq_conv'" inspect --onnx="$model" --fp32 --passes=fuse_qdq_conv

# The FP32 fusions: the shipped float EfficientNet's convs with their SiLU, Sigmoid and residual
# Add, one FP32 layer each, named after the nodes they stand for.
effnet="$(dirname "${BASH_SOURCE[0]}")/../../models/fmnist_efficientnet_fp32.onnx"
expect 0 stdout "^Conv .*/stem/stem.0/Conv \+ /stem/stem.2/Sigmoid \+ /stem/stem.2/Mul$" \
  inspect --onnx="$effnet" --fp32 --fullNames
expect 0 stdout "/blocks/blocks.0/project/project.0/Conv \+ /blocks/blocks.0/Add$" inspect --onnx="$effnet" --fullNames
expect 0 stdout "^DepthwiseConv .*/blocks/blocks.0/depthwise/depthwise.0/Conv \+ .*/depthwise.2/Mul$" \
  inspect --onnx="$effnet" --fp32 --fullNames
grep -Eq "^  INT8: " "$work/stdout" && fail "the float EfficientNet's fused convs counted as INT8"
grep -Eq "^Sigmoid " "$work/stdout" && fail "a Sigmoid left beside the fused convs"
expect 0 stdout "Conv/MatMul MACs in INT8: 0.0%" inspect --onnx="$effnet" --fp32
expect 0 stdout "Conv .*/stem/stem.0/Conv$" inspect --onnx="$effnet" --fp32 --fullNames --disablePasses=fuse_float_conv_epilogue

# Bad command lines and bad models.
expect 2 stderr "unknown pass 'no_such_pass'" inspect --onnx="$model" --passes=no_such_pass
expect 2 stderr "--disablePasses: unknown pass 'nope'" inspect --onnx="$model" --disablePasses=nope
expect 2 stderr "--onnx" inspect --onnx="$work/missing.onnx"
expect 2 stderr "--shapes" inspect --onnx="$model" --shapes=input:1xZx28
expect 2 stderr "no input 'image'" inspect --onnx="$model" --shapes=image:1x1x28x28
expect 2 stderr "static dim 1 = 1" inspect --onnx="$model" --shapes=input:1x3x28x28
echo "not a model" >"$work/garbage.onnx"
expect 1 stderr "garbage.onnx" inspect --onnx="$work/garbage.onnx"
expect 1 stderr "exportLayerInfo" inspect --onnx="$model" --exportLayerInfo=/nonexistent-dir/l.json
expect 2 stderr "--onnx is required" inspect

if [[ $failures -ne 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all inspect CLI checks passed"
