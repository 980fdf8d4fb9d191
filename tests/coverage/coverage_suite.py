#!/usr/bin/python3
"""The coverage suite: does each architecture of models/export_coverage.py build, without reference
layers, and match the reference executor? Checked against models/coverage_expectations.json.

    coverage_suite.py check --model resnet18 [--model ...] --tier ci --work DIR --qdqrt build/qdqrt
    coverage_suite.py table --work DIR [--markdown] [--all]

`check`, per model: exports it (models/export_coverage.py in a subprocess with a timeout; cached in
DIR/cache by a hash of the export scripts, the model and the tier), then for the FP32 and the QDQ
file builds an engine and runs it on the model's seeded input (`qdqrt exec --exportLayerInfo
--exportOutput`, one thread), counts the engine's `reference` layers (LayerType in the layer info),
runs the same input through the reference executor (`qdqrt run --saveOutputs`) and takes the largest
|engine - reference| over the outputs, relative to the reference output's range (max - min). It
writes DIR/results/<model>.json and prints one row per variant, then compares each row with the
expectations: a check worse than expected is a regression (exit 1), one better is reported as
IMPROVED (update the expectations file), so that fixing a model means editing that file.

A QDQ file whose error is above the tolerance is diagnosed (first_divergence): the first quantized
tensor between the engine's layers whose codes differ from the reference executor's must differ by
one code where the reference's value lies within TIE_ULPS of a rounding tie (.5); then every
stretch between the tensors the engine keeps between its layers (quantized and float32) is
recomputed by the reference executor from the engine's own tensors upstream, and each quantized
tensor must again differ only at ties, each float one by at most FLOAT_TOLERANCE of its range.
Anything else is a regression whatever the expected max_error, so a raised tolerance cannot hide a
wrong layer.

The expectations, per model and variant (all optional; the defaults are what every model should
reach): "status" ("ok"; or export_failed, build_failed, run_failed, reference_failed, timeout),
"reference_layers" (0; the count of reference layers allowed), "max_error" (the tolerance of the
variant: relative to the output range), and "reason" (required when any differs from the default).
A status other than the expected one fails unless it is "ok" (then it is an improvement).

The expectations are for the ci tier: with `--tier full` the differences are printed, not failed.

`table` prints the rows of every result in DIR/results (markdown with --markdown, for docs/coverage.md)
and fails when a model of the suite (--all: every model export_coverage.py knows) has no result.
"""
import argparse
import collections
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXPORTER = os.path.join(REPO_ROOT, "models", "export_coverage.py")
EXPORT_SOURCES = [EXPORTER] + [os.path.join(REPO_ROOT, "models", f)
                              for f in ("fake_quant.py", "export_torchvision.py", "export_qdq_styles.py")]
DEFAULT_EXPECTATIONS = os.path.join(REPO_ROOT, "models", "coverage_expectations.json")
PYTHON = "/usr/bin/python3"
# "ort_u8": ONNX Runtime quantize_static's layout, for the models export_coverage.py writes it for.
VARIANTS = ("fp32", "qdq", "ort_u8")
STATUSES = ("ok", "export_failed", "build_failed", "run_failed", "inspect_failed", "reference_failed", "timeout")
ENTRY_KEYS = {"status", "reference_layers", "max_error", "float_quantized_macs", "reason"}
# The ops whose MACs count: those of a quantized weight (a DequantizeLinear feeds input 1) must run in INT8.
MAC_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")
# Ops between a weight's DequantizeLinear and its MatMul that keep it a quantized weight.
LAYOUT_OPS = ("Transpose", "Reshape", "Identity", "Flatten", "Squeeze", "Unsqueeze")


class Failure(Exception):
    """A stage that failed: its status and the line that says why."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


def shown(path):
    """A path as the messages show it: relative to the repository when inside it."""
    path = os.path.abspath(path)
    return os.path.relpath(path, REPO_ROOT) if path.startswith(REPO_ROOT + os.sep) else path


def last_error_line(text):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if "error" in line.lower() or "unsupported" in line.lower():
            # "qdqrt exec: error: unsupported: --onnx: 'FILE': 'FILE': node 'n' (Op): ..." -> "node 'n' (Op): ..."
            return (line[line.find("node '"):] if "node '" in line else line)[:300]
    return lines[-1][:300] if lines else "(no output)"


def run_stage(command, timeout, failed_status, log):
    log.write("+ " + " ".join(command) + "\n")
    began = time.time()
    try:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure("timeout", f"{os.path.basename(command[0])} {command[1]} ran past {timeout} s")
    log.write(result.stdout)
    if result.returncode != 0:
        raise Failure(failed_status, last_error_line(result.stdout))
    return time.time() - began, result.stdout


def package_version(name):
    try:
        import importlib.metadata
        return importlib.metadata.version(name)
    except Exception:  # noqa: BLE001 - a missing package only weakens the cache key
        return "unknown"


def export_key(model, tier, dynamic=False):
    digest = hashlib.sha256()
    for path in EXPORT_SOURCES:
        with open(path, "rb") as f:
            digest.update(f.read())
    digest.update(f"{model}\0{tier}\0{package_version('torch')}\0{package_version('torchvision')}".encode())
    if dynamic:
        digest.update(b"\0dynamic")
    return digest.hexdigest()


def exported_files(work, model, tier, timeout, log, dynamic=False):
    """The model's files, exported once per content hash; returns (paths, seconds, cached).
    `dynamic`: the export with symbolic size dims (export_coverage.py --dynamic)."""
    name = f"{model}_{tier}" + ("_dynamic" if dynamic else "")
    directory = os.path.join(work, "cache", name)
    stem = os.path.join(directory, name)
    paths = {"input": stem + "_input.npy", "fp32": stem + "_fp32.onnx", "qdq": stem + "_qdq.onnx"}
    optional = {"ort_u8": stem + "_ort_u8.onnx"}  # written for some models only

    def with_optional():
        return dict(paths, **{variant: path for variant, path in optional.items() if os.path.exists(path)})

    key = export_key(model, tier, dynamic)
    key_path = os.path.join(directory, "key")
    if os.path.exists(key_path) and open(key_path).read() == key and all(map(os.path.exists, paths.values())):
        return with_optional(), 0.0, True
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    seconds, _ = run_stage([PYTHON, EXPORTER, "--model", model, "--tier", tier, "--out", directory] +
                           (["--dynamic"] if dynamic else []), timeout, "export_failed", log)
    with open(key_path, "w") as f:  # written last: an interrupted export is redone
        f.write(key)
    return with_optional(), seconds, False


def read_engine_outputs(path):
    outputs = {}
    for entry in json.load(open(path)):
        dims = [int(d) for d in entry["dimensions"].split("x")] if entry["dimensions"] else []
        values = np.array([np.nan if v is None else v for v in entry["values"]], dtype=np.float64)
        outputs[entry["name"]] = values.reshape(dims)
    return outputs


def relative_error(candidate, reference):
    reference = reference.astype(np.float64)
    if candidate.shape != reference.shape:
        return float("inf")
    output_range = float(np.nanmax(reference) - np.nanmin(reference)) if reference.size else 0.0
    difference = np.abs(candidate - reference)
    difference[np.isnan(candidate) & np.isnan(reference)] = 0.0
    difference[np.isnan(difference)] = np.inf
    return float(difference.max() / (output_range or 1.0)) if difference.size else 0.0


def output_range(reference):
    """max - min of a reference output (0 when it is constant, as an all-zero head makes it)."""
    reference = reference.astype(np.float64)
    finite = reference[np.isfinite(reference)]
    return float(finite.max() - finite.min()) if finite.size else 0.0


def kept_taps(size, kernel, stride, dilation, pad_begin, pad_end):
    """The taps of one axis of a Conv window from the first to the last that reads an input pixel for
    some output (qdqrt drops the kernel rows and columns that read only padding); all of them when
    none does."""
    outputs = (size + pad_begin + pad_end - ((kernel - 1) * dilation + 1)) // stride + 1
    live = [any(0 <= o * stride - pad_begin + t * dilation < size for o in range(outputs)) for t in range(kernel)]
    if not any(live):
        return kernel
    return kernel - live[::-1].index(True) - live.index(True)


def conv_window(node, x, weight):
    """A Conv's kernel taps that read the input (kept_taps per spatial axis) when its input's dims are
    known, else every tap."""
    spatial = weight[2:]
    window = node.get("window") or {}
    if x is None or len(x) != len(weight) or window.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        return int(np.prod(spatial, dtype=np.int64))
    count = len(spatial)
    pads = window.get("pads") or [0] * (2 * count)
    if window.get("auto_pad") == "VALID":
        pads = [0] * (2 * count)
    taps = 1
    for axis in range(count):
        taps *= kept_taps(x[2 + axis], spatial[axis], (window.get("strides") or [1] * count)[axis],
                          (window.get("dilations") or [1] * count)[axis], pads[axis], pads[count + axis])
    return taps


def node_macs(node):
    """A MAC node's multiply-accumulates from its dims, None when one it needs is unknown. A Conv
    counts the taps that read the input (conv_window)."""
    weight, x, y = node["weight"], node["x"], node["y"]
    elements = lambda dims: int(np.prod(dims, dtype=np.int64)) if dims is not None else None  # noqa: E731
    if node["op"] == "Conv" and weight is not None and y is not None:
        return elements(y) * weight[1] * conv_window(node, x, weight)
    if node["op"] == "ConvTranspose" and weight is not None and x is not None:
        return elements(x) * elements(weight[1:])
    if node["op"] in ("MatMul", "Gemm") and x is not None and y is not None:
        return elements(y) * (x[0] if node["trans_a"] else x[-1])
    return None


def shapes_of_initializers(graph):
    return {t.name: list(t.dims) for t in graph.initializer}


def mac_nodes(path, input_shape):
    """The Conv/ConvTranspose/MatMul/Gemm nodes of an ONNX file at the given input shape, each
    {"node", "op", "weight", "x", "y" (dims; None where ONNX's shape inference cannot tell), "trans_a",
    "macs" (node_macs), "quantized" (a DequantizeLinear feeds its weight, input 1, directly or through
    LAYOUT_OPS), "constant" (computed from constants only: qdqrt folds it at build time)}. Read with
    onnx, not qdqrt: the count inspect's is checked against."""
    import onnx
    model = onnx.load(path)
    graph = model.graph
    for value in graph.input:
        if value.name == "input":
            for dim, size in zip(value.type.tensor_type.shape.dim, input_shape):
                dim.Clear()
                dim.dim_value = size
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    shapes = shapes_of_initializers(graph)
    for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        if value.type.tensor_type.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]
            shapes[value.name] = dims if None not in dims else None
    for node in graph.node:  # torch writes some weights as Constant nodes
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            shapes[node.output[0]] = list(node.attribute[0].t.dims)
    producer = {output: node for node in graph.node for output in node.output}
    # The values computed from the graph's inputs (the rest only from constants, which qdqrt folds).
    dynamic = {value.name for value in graph.input} - set(shapes_of_initializers(graph))
    for node in graph.node:
        if any(name in dynamic for name in node.input):
            dynamic.update(node.output)
    nodes = []
    for index, node in enumerate(graph.node):
        if node.op_type not in MAC_OPS or len(node.input) < 2:
            continue
        source = producer.get(node.input[1])
        while source is not None and source.op_type in LAYOUT_OPS:  # torch transposes Linear weights
            source = producer.get(source.input[0])
        entry = {"node": node.name or f"#{index}", "op": node.op_type, "weight": shapes.get(node.input[1]),
                 "x": shapes.get(node.input[0]), "y": shapes.get(node.output[0]),
                 "trans_a": node.op_type == "Gemm" and any(a.name == "transA" and a.i for a in node.attribute),
                 "window": {a.name: (a.s.decode() if a.name == "auto_pad" else list(a.ints)) for a in node.attribute
                            if a.name in ("auto_pad", "pads", "strides", "dilations")},
                 "quantized": source is not None and source.op_type == "DequantizeLinear",
                 "constant": node.output[0] not in dynamic}
        entry["macs"] = node_macs(entry)
        nodes.append(entry)
    return nodes


def fill_mac_shapes(nodes, layer_info):
    """Where ONNX's shape inference left a MAC node's activation dims unknown (shapes computed through
    Shape, Gather, Div and Cast), takes them from `qdqrt inspect` of the graph with its shape
    computations evaluated and no fusion (one layer per node, its activation inputs and outputs with
    their dims); the MACs are still counted here."""
    def dims(tensor):  # None for an unknown rank or dim (-1)
        known = tensor.get("Dimensions")
        return known if known and -1 not in known else None

    layers = {layer["Node"]: layer for layer in layer_info}
    for node in nodes:
        layer = layers.get(node["node"])
        if node["macs"] is not None or layer is None:
            continue
        if node["x"] is None and layer["Inputs"]:
            node["x"] = dims(layer["Inputs"][0])
        if node["y"] is None and layer["Outputs"]:
            node["y"] = dims(layer["Outputs"][0])
        node["macs"] = node_macs(node)
    return nodes


def engine_precisions(layer_info):
    """ONNX node name -> the Precision of the engine layer that runs it (exec's layer info names every
    source node of a fused layer in its Name, joined by " + ")."""
    precisions = {}
    for layer in layer_info:
        for name in layer.get("Name", "").split(" + ") + list(layer.get("SourceNodes", [])):
            precisions.setdefault(name, layer.get("Precision", "?"))
    return precisions


def mac_split(nodes, precisions):
    """Of the quantized-weight MACs, how many the engine runs in INT8, and the nodes it runs otherwise
    (a node no engine layer names counts as not INT8, "missing")."""
    split = {"quantized_macs": 0, "int8_macs": 0, "float_quantized": [], "unknown_macs": [], "folded_macs": 0}
    for node in nodes:
        if not node["quantized"]:
            continue
        if node["constant"]:  # computed from constants only: folded at build time, never run
            split["folded_macs"] += node["macs"] or 0
            continue
        precision = precisions.get(node["node"])
        if precision is None:  # split into column ranges: INT8 when every part is
            parts = {value for name, value in precisions.items() if split_part_of(name, node["node"])}
            precision = ("INT8" if parts == {"INT8"} else "/".join(sorted(parts))) if parts else "missing"
        if node["macs"] is None:
            split["unknown_macs"].append(node["node"])
            if precision != "INT8":  # outside INT8 however many MACs it has
                split["float_quantized"].append(dict(node, precision=precision))
            continue
        split["quantized_macs"] += node["macs"]
        if precision == "INT8":
            split["int8_macs"] += node["macs"]
        else:
            split["float_quantized"].append({"node": node["node"], "op": node["op"], "macs": node["macs"],
                                             "precision": precision})
    split["float_quantized"].sort(key=lambda node: -(node["macs"] or 0))
    return split


def inspect_mac_mismatches(nodes, inspect_layers):
    """The layers of `qdqrt inspect` whose MACs differ from the sum of the ONNX MAC nodes they fuse
    (named in the layer's Name, joined by " + "), and the ONNX MAC nodes that run (not folded) which
    no inspect layer names. Layers inspect counts MACs for that fuse no such node (ReduceL2 lowered
    to a MatMul) are not compared."""
    running = {node["node"]: node for node in nodes if not node["constant"] and node["macs"] is not None}
    named, mismatches = set(), []
    for layer in inspect_layers:
        parts = [running[name] for name in layer.get("Name", "").split(" + ") if name in running]
        if not parts:
            continue
        named.update(part["node"] for part in parts)
        expected_macs = sum(part["macs"] for part in parts)
        if layer.get("MACs") != expected_macs:
            mismatches.append({"layer": layer.get("Node"), "op": layer.get("OpType"), "inspect": layer.get("MACs"),
                               "onnx": expected_macs})
    for name, node in running.items():
        if name in named:
            continue
        parts = [layer for layer in inspect_layers if split_part_of(layer.get("Node", ""), name)]
        counted = sum(layer.get("MACs") or 0 for layer in parts) if parts else "no layer"
        if counted != node["macs"]:
            mismatches.append({"layer": name, "op": node["op"], "inspect": counted, "onnx": node["macs"]})
    return mismatches


def split_part_of(layer_name, node_name):
    """Whether a layer is a column range of a node that split_sliced_projection split (the attention's
    packed in-projection): the parts are named <node>_<begin>_<end>."""
    return re.fullmatch(re.escape(node_name) + r"_\d+_\d+", layer_name) is not None


def float_quantized_macs(row):
    return sum(node["macs"] or 0 for node in (row.get("macs") or {}).get("float_quantized", []))


def check_variant(args, model, variant, paths, log):
    row = {"model": model, "variant": variant, "tier": args.tier, "status": "ok", "message": "",
           "layers": None, "reference_layers": None, "reference_ops": {}, "max_error": None, "seconds": {}}
    work = os.path.join(args.work, "runs", f"{model}_{args.tier}_{variant}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    shape = "x".join(str(d) for d in np.load(paths["input"], mmap_mode="r").shape)
    inputs = f"--loadInputs=input:{paths['input']}"
    layer_info, engine_outputs = os.path.join(work, "layers.json"), os.path.join(work, "engine_outputs.json")
    try:
        try:
            row["seconds"]["engine"], _ = run_stage(
                [args.qdqrt, "exec", f"--onnx={paths[variant]}", f"--shapes=input:{shape}", inputs,
                 "--iterations=1", "--warmUp=0", "--duration=0", "--threads=1",
                 f"--exportLayerInfo={layer_info}", f"--exportOutput={engine_outputs}"],
                args.run_timeout, "build_failed", log)
        except Failure as failure:
            # The layer info is written after the build: its presence tells a run failure from a build failure.
            if failure.status == "build_failed" and os.path.exists(layer_info):
                failure.status = "run_failed"
            raise
        finally:
            if os.path.exists(layer_info):
                layers = json.load(open(layer_info))["Layers"]
                row["layers"] = len(layers)
                fallbacks = [layer.get("OpType", "?") for layer in layers if layer.get("LayerType") == "reference"]
                row["reference_layers"] = len(fallbacks)
                row["reference_ops"] = dict(sorted(collections.Counter(fallbacks).items()))
        nodes = mac_nodes(paths[variant], [int(d) for d in shape.split("x")])
        if any(node["macs"] is None for node in nodes):
            shapes_json = os.path.join(work, "shapes.json")
            row["seconds"]["shapes"], _ = run_stage(
                [args.qdqrt, "inspect", f"--onnx={paths[variant]}", f"--shapes=input:{shape}",
                 "--passes=remove_identities,fold_constants,evaluate_shape_computations",
                 f"--exportLayerInfo={shapes_json}"],
                args.run_timeout, "inspect_failed", log)
            fill_mac_shapes(nodes, json.load(open(shapes_json))["Layers"])
        row["macs"] = mac_split(nodes, engine_precisions(layers))
        # inspect's count of the same graph, layer by layer: a fused layer kind left out of it (or
        # counted short) would inflate the INT8 share it prints.
        inspect_json = os.path.join(work, "inspect.json")
        row["seconds"]["inspect"], _ = run_stage(
            [args.qdqrt, "inspect", f"--onnx={paths[variant]}", f"--shapes=input:{shape}",
             f"--exportLayerInfo={inspect_json}"], args.run_timeout, "inspect_failed", log)
        inspect_report = json.load(open(inspect_json))
        row["macs"]["inspect_share"] = inspect_report["Summary"]["Int8MACShare"]
        row["macs"]["inspect_mismatches"] = inspect_mac_mismatches(nodes, inspect_report["Layers"])
        reference_dir = os.path.join(work, "reference")
        row["seconds"]["reference"], _ = run_stage(
            [args.qdqrt, "run", f"--onnx={paths[variant]}", inputs, f"--saveOutputs={reference_dir}"],
            args.run_timeout, "reference_failed", log)
        engine = read_engine_outputs(engine_outputs)
        errors, ranges = [], []
        for name, values in engine.items():
            reference_path = os.path.join(reference_dir, name + ".npy")
            if not os.path.exists(reference_path):
                raise Failure("reference_failed", f"the reference executor wrote no output '{name}'")
            errors.append(relative_error(values, np.load(reference_path)))
            ranges.append(output_range(np.load(reference_path)))
        if not errors:
            raise Failure("run_failed", "the engine exported no outputs")
        row["max_error"] = max(errors)
        row["output_range"] = min(ranges)
        if variant != "fp32" and row["max_error"] > args.tolerance[variant]:
            # Outside the tolerance: is the first difference a rounding tie, or a layer computing something else?
            try:
                row["divergence"] = first_divergence(args, paths, variant, work, layer_info, engine_outputs, inputs,
                                                     log)
            finally:
                # The tensors it saved (hundreds of MB for VGG's): the row keeps what they showed.
                for name in ("reference_tensors", "engine_tensors", "anchors", "reference_stretches"):
                    shutil.rmtree(os.path.join(work, name), ignore_errors=True)
                for name in ("tapped.onnx", "cut.onnx"):
                    if os.path.exists(os.path.join(work, name)):
                        os.remove(os.path.join(work, name))
    except Failure as failure:
        row["status"], row["message"] = failure.status, failure.message
    return row


# How far from a .5 boundary (in float32 ulps of the scaled value) a reference value may lie for a
# one-code difference to count as a rounding tie: the engine computes a quantizer's input with
# another float association (folded BatchNorm, fused SiLU epilogues), a few ulps from the reference's.
TIE_ULPS = 16

# How far a float32 tensor the engine keeps between its layers may lie from the reference executor's
# recomputation of it from the engine's own tensors upstream: max |engine - reference| relative to
# the tensor's range (float_deviation). Such a stretch is one engine layer (the nodes it fuses): the
# same math in another float association (an INT8 layer's int32 accumulation scaled once against
# the reference's sum of dequantized products, a fused epilogue, a vectorized exp or erf) lands a
# few float32 ulps of the tensor's largest values apart (one ulp is 1.2e-7 of the value; measured:
# at most 6.9e-7 of the range, ViT-B/16's float attention projection). 1e-5, some 80 ulps, leaves
# room for other kernels' association, and a bias, scale or axis off moves a tensor by far more.
FLOAT_TOLERANCE = 1e-5


def classify_divergence(engine_codes, reference_codes, reference_input, scale):
    """How a quantized tensor of the engine differs from the reference executor's: None when equal;
    else the count of differing codes, the largest difference and whether every difference is a
    rounding tie (one code, where the reference's input / scale lies within TIE_ULPS of a .5)."""
    if engine_codes.shape != reference_codes.shape:
        return {"codes": int(reference_codes.size), "of": int(reference_codes.size), "max_code": None,
                "ulps_from_half": float("inf"), "tie": False}
    difference = np.abs(engine_codes.astype(np.int64) - reference_codes.astype(np.int64))
    if not difference.any():
        return None
    where = difference != 0
    scaled = reference_input[where].astype(np.float64) / float(scale)
    # Distance from the .5 in float32 ulps of the scaled value (2^-23 relative, at least 2^-23).
    ulps = np.abs(scaled - np.floor(scaled) - 0.5) / (2.0 ** -23 * np.maximum(np.abs(scaled), 1.0))
    return {"codes": int(where.sum()), "of": int(difference.size), "max_code": int(difference.max()),
            "ulps_from_half": float(ulps.max()), "tie": bool(difference.max() == 1 and ulps.max() <= TIE_ULPS)}


def float_deviation(engine, reference):
    """How far a float tensor of the engine lies from the reference executor's: the largest
    |engine - reference| ("max_difference"), that relative to the reference's range ("deviation";
    the range is the larger of max - min and max |value| over its finite values, 1 when all are
    zero: a Sigmoid's values near 0.5 span 0.003 but differ by ulps of 0.5) and whether it is within
    FLOAT_TOLERANCE. NaN against NaN and an infinity against the same one are equal; a NaN or
    infinity against anything else, or another shape, is an infinite deviation."""
    if engine.shape != reference.shape:
        return {"deviation": float("inf"), "max_difference": float("inf"), "range": None, "within": False,
                "values": int(reference.size)}
    engine, reference = engine.astype(np.float64), reference.astype(np.float64)
    with np.errstate(invalid="ignore"):
        difference = np.abs(engine - reference)
    difference[(engine == reference) | (np.isnan(engine) & np.isnan(reference))] = 0.0
    difference[np.isnan(difference)] = np.inf
    finite = reference[np.isfinite(reference)]
    span = max(float(finite.max() - finite.min()), float(np.abs(finite).max())) if finite.size else 0.0
    span = span or 1.0
    worst = float(difference.max()) if difference.size else 0.0
    return {"deviation": worst / span, "max_difference": worst, "range": span,
            "within": bool(worst / span <= FLOAT_TOLERANCE), "values": int(reference.size)}


def inferred_shapes(model, input_shape):
    """The dims ONNX shape inference gives the values of the model at the input shape: name -> dims
    (None for a dim it cannot tell); a value it gives no shape is absent."""
    import onnx
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for value in model.graph.input:
        if value.name == "input":
            for dim, size in zip(value.type.tensor_type.shape.dim, input_shape):
                dim.Clear()
                dim.dim_value = size
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # noqa: BLE001 - without inference the anchors are declared without a shape
        return {}
    shapes = {}
    for value in list(inferred.graph.value_info) + list(inferred.graph.output):
        if value.type.tensor_type.HasField("shape"):
            shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None
                                  for d in value.type.tensor_type.shape.dim]
    return shapes


def kept_float_tensors(model, layers, constants, input_shape):
    """The float32 tensors the engine keeps between its layers that are values of the ONNX graph: the
    float32 Outputs of the layer info that a node of the graph produces (not the graph's inputs,
    outputs or constants; not a name with a ',', which --markDebug cannot take), in graph order, as
    (name, dims of the engine's values, the shape to declare). The declared shape is what ONNX shape
    inference gives the value in the original graph (None for a dim it cannot tell), so the cut
    graph's inference knows what the original's did; where it gives none (past a Loop or a tensor
    sequence, which it does not follow: MViT's tensor_split), the engine's dims, so that a condition
    the loader evaluates on them (MViT's squeeze Ifs) resolves in the cut as in the original; a
    tensor whose inferred dims disagree with the engine's is left out."""
    engine_dims = {o["Name"]: o.get("Dimensions") for layer in layers for o in layer.get("Outputs", [])
                   if o.get("Datatype") == "float32"}
    graph_values = {o.name for o in model.graph.output} | {i.name for i in model.graph.input}
    produced = [name for node in model.graph.node for name in node.output
                if name in engine_dims and name not in graph_values and name not in constants and "," not in name]
    if not produced:
        return []
    shapes = inferred_shapes(model, input_shape)
    tensors = []
    for name in produced:
        dims, declared = engine_dims[name], shapes.get(name)
        if not dims or any(not isinstance(d, int) or d < 0 for d in dims):
            continue
        if declared is not None and (len(declared) != len(dims) or
                                     any(d is not None and d != e for d, e in zip(declared, dims))):
            continue
        tensors.append((name, [int(d) for d in dims], declared if declared is not None else [int(d) for d in dims]))
    return tensors


def run_marked(args, paths, variant, inputs, names, directory, log):
    """Runs the engine with the named tensors marked (--markDebug) and each saved raw
    (--saveDebugTensors, one flag per tensor); returns name -> file."""
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    files = {name: os.path.join(directory, f"{index}.bin") for index, name in enumerate(names)}
    shape = "x".join(str(d) for d in np.load(paths["input"], mmap_mode="r").shape)
    run_stage([args.qdqrt, "exec", f"--onnx={paths[variant]}", f"--shapes=input:{shape}", inputs,
               "--iterations=1", "--warmUp=0", "--duration=0", "--threads=1"] +
              [f"--markDebug={name}" for name in files] +
              [f"--saveDebugTensors={name}:{path}" for name, path in files.items()],
              args.run_timeout, "run_failed", log)
    return files


def same_outputs(engine_outputs, files):
    """Whether the raw outputs a marked run saved equal those the unmarked run exported as JSON (float32
    through its shortest round-trip text, so compared as float32; a non-finite value is written null)."""
    for entry in json.load(open(engine_outputs)):
        path = files.get(entry["name"])
        try:
            dtype = np.dtype(entry["datatype"])
        except TypeError:
            return False
        if path is None or not os.path.exists(path):
            return False
        saved = np.fromfile(path, dtype=dtype)
        exported = np.array([np.nan if v is None else v for v in entry["values"]], dtype=np.float64)
        if saved.size != exported.size:
            return False
        if dtype == np.float32:
            exported = exported.astype(np.float32)
        saved = saved.astype(exported.dtype)
        null = np.isnan(exported)
        if not (np.array_equal(saved[~null], exported[~null]) and not np.isfinite(saved[null]).any()):
            return False
    return True


def first_divergence(args, paths, variant, work, layer_info, engine_outputs, inputs, log, tamper=None):
    """The first quantized tensor (in graph order) where the engine's codes differ from the reference
    executor's on the original graph, classified by classify_divergence, plus its name, and under
    "stretches" every such tensor recomputed by the reference executor from the engine's tensors
    upstream (its codes and the float32 tensors it keeps between layers: "floats" of them, each
    compared with the reference's recomputation of it by float_deviation), the tie codes counted, the
    largest float deviation given, the others listed; or a dict saying why it could not be found.
    The tensors compared are those the engine keeps between layers, so marking them does not change
    what it runs (checked on the outputs; when marking the floats changes them, the codes alone are
    anchored, as "floats_not_anchored" says), and the quantized tensors it does not keep (a Q moved
    above a Reshape the engine runs as a view: a lowered 3-D conv's or pool's) when marking them too
    leaves the outputs as they were (else the kept ones alone, as "hidden_not_anchored" says). The stretches are checked when every code is
    equal too (a float layer may be what differs). `tamper` (the planted checks): called with the
    files of the engine's marked tensors and the names of the kept quantized and float tensors before
    they are read, to plant a wrong value."""
    import onnx
    from onnx import helper, numpy_helper
    model = onnx.load(paths[variant])
    constants = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            constants[node.output[0]] = node.attribute[0].t
    layers = json.load(open(layer_info))["Layers"]
    kept = {o["Name"] for layer in layers for o in layer.get("Outputs", [])}
    graph_outputs = {o.name for o in model.graph.output}
    candidates = [node for node in model.graph.node if node.op_type == "QuantizeLinear"
                  and node.output[0] not in graph_outputs and node.input[0] not in constants
                  and node.input[1] in constants and numpy_helper.to_array(constants[node.input[1]]).size == 1]
    kept_quantizers = [node for node in candidates if node.output[0] in kept]
    if not kept_quantizers:
        return {"found": False, "why": "no per-tensor quantized tensor between layers"}
    quantizers = candidates
    input_shape = list(np.load(paths["input"], mmap_mode="r").shape)
    floats = kept_float_tensors(model, layers, constants, input_shape)
    added = set()
    for node in quantizers:
        for name in (node.input[0], node.output[0]):
            if name not in added and name not in graph_outputs:
                model.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None))
                added.add(name)
    tapped = os.path.join(work, "tapped.onnx")
    onnx.save(model, tapped)
    reference_dir = os.path.join(work, "reference_tensors")
    run_stage([args.qdqrt, "run", f"--onnx={tapped}", inputs, f"--saveOutputs={reference_dir}"],
              args.run_timeout, "reference_failed", log)
    # The engine again, the kept tensors marked and saved, and its outputs too: marking must not
    # change them.
    marked_dir = os.path.join(work, "engine_tensors")
    outputs = [entry["name"] for entry in json.load(open(engine_outputs))]
    floats_not_anchored = hidden_not_anchored = None
    all_floats, files = floats, None
    for quantizers in ([candidates] if len(candidates) > len(kept_quantizers) else []) + [kept_quantizers]:
        codes_names = [node.output[0] for node in quantizers]
        floats = all_floats
        files = run_marked(args, paths, variant, inputs, codes_names + [name for name, _, _ in floats] + outputs,
                           marked_dir, log)
        if floats and not same_outputs(engine_outputs, files):
            floats_not_anchored = f"marking the {len(floats)} float tensors between layers changed the engine's outputs"
            floats = []
            files = run_marked(args, paths, variant, inputs, codes_names + outputs, marked_dir, log)
        if same_outputs(engine_outputs, files):
            break
        if quantizers is candidates:
            hidden_not_anchored = (f"marking the {len(candidates) - len(kept_quantizers)} quantized tensors the "
                                   "engine does not keep changed its outputs")
            floats_not_anchored = None
    if not same_outputs(engine_outputs, files):
        return {"found": False, "why": "marking the quantized tensors changed the engine's outputs"}
    # `qdqrt run --saveOutputs` names files after values, characters other than [A-Za-z0-9._-] as '_'.
    saved = lambda directory, name: os.path.join(directory, re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy")
    # A tensor the engine does not keep is compared only when it saved all of it (one the optimizer
    # evaluated into a constant, in a shape computation, is not a tensor of the run).
    kept_names = {node.output[0] for node in kept_quantizers}

    def saved_whole(node):
        name = node.output[0]
        if name in kept_names:
            return True
        reference = np.load(saved(reference_dir, name), mmap_mode="r")
        return os.path.exists(files[name]) and os.path.getsize(files[name]) == reference.nbytes
    quantizers = [node for node in quantizers if saved_whole(node)]
    codes_names = [node.output[0] for node in quantizers]
    if tamper is not None:
        tamper(files, codes_names, [name for name, _, _ in floats])
    engine_codes, result = {}, None
    for index, node in enumerate(quantizers):
        reference_codes = np.load(saved(reference_dir, node.output[0]))
        codes = np.fromfile(files[node.output[0]], dtype=reference_codes.dtype)
        if codes.size == reference_codes.size:
            codes = codes.reshape(reference_codes.shape)
        engine_codes[node.output[0]] = codes
        scale = numpy_helper.to_array(constants[node.input[1]]).item()
        found = classify_divergence(engine_codes[node.output[0]], reference_codes,
                                    np.load(saved(reference_dir, node.input[0])), scale)
        if found is not None and result is None:
            result = dict(found, found=True, tensor=node.output[0], compared=index + 1)
    if result is None:
        # Equal codes, yet the outputs differ: the stretches may show a float layer that does.
        result = {"found": False, "why": f"all {len(quantizers)} quantized tensors between layers are equal"}
    if any(codes.shape != np.load(saved(reference_dir, name), mmap_mode="r").shape
           for name, codes in engine_codes.items()):
        return result

    # Past the first tie the two runs hold different codes, and the float tensors between layers
    # differ by ulps (the same math in another float association), which a LayerNorm's or a
    # Softmax's cancellation can amplify past TIE_ULPS before the next quantizer. So each stretch
    # between kept tensors is checked on its own: the original graph cut at every kept tensor, which
    # becomes an input fed with the engine's values (codes, floats), while the node that computes it
    # recomputes it from the engine's tensors upstream. A layer wrong anywhere shows in its own
    # stretch: a quantized tensor as more than ties, a float one beyond FLOAT_TOLERANCE.
    # A float tensor whose saved values do not fill the dims the layer info gives is left out.
    floats = [(name, dims, declared) for name, dims, declared in floats
              if os.path.getsize(files[name]) == 4 * int(np.prod(dims, dtype=np.int64))]
    if len(quantizers) > len(kept_quantizers):
        try:
            stretches = check_stretches(args, paths[variant], work, inputs, log, quantizers, constants, engine_codes,
                                        floats, files)
            quantizers = None
        except Failure as failure:
            # The reference executor refused the graph cut at a tensor the engine does not keep: the
            # kept ones alone.
            hidden_not_anchored = f"the reference executor failed on the graph cut at them: {failure.message}"
            quantizers = kept_quantizers
            engine_codes = {node.output[0]: engine_codes[node.output[0]] for node in kept_quantizers}
    try:
        if quantizers is not None:
            stretches = check_stretches(args, paths[variant], work, inputs, log, quantizers, constants, engine_codes,
                                        floats, files)
    except Failure as failure:
        if not floats:
            raise
        # The reference executor refused the graph cut at the float tensors too: the codes alone.
        stretches = check_stretches(args, paths[variant], work, inputs, log, quantizers, constants, engine_codes,
                                    [], files)
        floats_not_anchored = f"the reference executor failed on the graph cut at them: {failure.message}"
    if floats_not_anchored:
        stretches["floats_not_anchored"] = floats_not_anchored
    if hidden_not_anchored:
        stretches["hidden_not_anchored"] = hidden_not_anchored
    result["stretches"] = stretches
    return result


def check_stretches(args, path, work, inputs, log, quantizers, constants, engine_codes, floats, files):
    """first_divergence's stretches: the graph at `path` cut at the kept quantized tensors
    (`quantizers`, their engine codes) and the kept float tensors (`floats`: (name, dims,
    declared shape) as kept_float_tensors gives them, their values in `files`), each recomputed by
    the reference executor from the engine's tensors upstream and compared with the engine's."""
    import onnx
    from onnx import helper, numpy_helper
    cut = onnx.load(path)
    recomputed = {node.output[0]: node.output[0] + "#recomputed" for node in quantizers}
    recomputed.update((name, name + "#recomputed") for name, _, _ in floats)
    identities = {node.output[0]: node.input[0] for node in cut.graph.node if node.op_type == "Identity"}

    def quantizer_key(node):
        # A QuantizeLinear of the same value with the same scale and zero point computes the same codes
        # (ResNet's residual quantizer shares the next conv's input quantizer: the engine keeps one).
        def value(name):
            while name in identities:
                name = identities[name]
            return numpy_helper.to_array(constants[name]).tobytes() if name in constants else name
        return (node.input[0],) + tuple(value(name) for name in node.input[1:])

    kept_keys = {quantizer_key(node): node.output[0] for node in quantizers}
    for node in cut.graph.node:
        if node.op_type == "QuantizeLinear" and node.output[0] not in recomputed and kept_keys.get(quantizer_key(node)):
            # Its twin is fed the engine's codes: so is it.
            node.op_type, node.input[:] = "Identity", [kept_keys[quantizer_key(node)]]
            del node.attribute[:]
            continue
        for position, output in enumerate(node.output):
            if output in recomputed:
                node.output[position] = recomputed[output]
    anchors_dir = os.path.join(work, "anchors")
    shutil.rmtree(anchors_dir, ignore_errors=True)
    os.makedirs(anchors_dir)
    anchor_inputs, cut_outputs, engine_floats = [], [], {}

    def anchor(name, values, elem_type, declared):
        cut.graph.input.append(helper.make_tensor_value_info(name, elem_type, declared))
        path = os.path.join(anchors_dir, f"{len(anchor_inputs)}.npy")
        np.save(path, values)
        quoted = f"'{name}'" if ":" in name or "," in name else name
        anchor_inputs.append(f"--loadInputs={quoted}:{path}")
        return path

    for name, dims, declared in floats:
        engine_floats[name] = anchor(name, np.fromfile(files[name], dtype=np.float32).reshape(dims),
                                     onnx.TensorProto.FLOAT, declared)
        cut_outputs.append(recomputed[name])
    for node in quantizers:
        codes = engine_codes[node.output[0]]
        anchor(node.output[0], codes, onnx.TensorProto.UINT8 if codes.dtype == np.uint8 else onnx.TensorProto.INT8,
               list(codes.shape))
        cut_outputs.append(recomputed[node.output[0]])
        if node.input[0] not in engine_floats:  # else its input is the engine's, fed in
            cut_outputs.append(node.input[0])
    for output in dict.fromkeys(cut_outputs):
        cut.graph.output.append(helper.make_tensor_value_info(output, onnx.TensorProto.UNDEFINED, None))
    cut_path = os.path.join(work, "cut.onnx")
    onnx.save(cut, cut_path)
    stretches_dir = os.path.join(work, "reference_stretches")
    run_stage([args.qdqrt, "run", f"--onnx={cut_path}", inputs] + anchor_inputs + [f"--saveOutputs={stretches_dir}"],
              args.run_timeout, "reference_failed", log)
    # `qdqrt run --saveOutputs` names files after values, characters other than [A-Za-z0-9._-] as '_'.
    saved = lambda name: os.path.join(stretches_dir, re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy")  # noqa: E731
    stretches = {"checked": len(quantizers), "tie_codes": 0, "tie_ulps": 0.0, "floats": len(floats),
                 "float_deviation": 0.0, "wrong": []}
    for index, (name, _, _) in enumerate(floats):
        found = float_deviation(np.load(engine_floats[name]), np.load(saved(recomputed[name])))
        if found["deviation"] > stretches["float_deviation"] or "float_worst" not in stretches:
            stretches["float_deviation"], stretches["float_worst"] = found["deviation"], name
        if not found["within"]:
            stretches["wrong"].append(dict(found, kind="float", tensor=name, compared=index + 1))
    for index, node in enumerate(quantizers):
        scale = numpy_helper.to_array(constants[node.input[1]]).item()
        quantizer_input = engine_floats.get(node.input[0]) or saved(node.input[0])
        found = classify_divergence(engine_codes[node.output[0]], np.load(saved(recomputed[node.output[0]])),
                                    np.load(quantizer_input), scale)
        if found is None:
            continue
        if found["tie"]:
            stretches["tie_codes"] += found["codes"]
            stretches["tie_ulps"] = max(stretches["tie_ulps"], found["ulps_from_half"])
        else:
            stretches["wrong"].append(dict(found, tensor=node.output[0], compared=index + 1))
    return stretches


def load_expectations(path):
    """The expectations file, validated: unknown keys, statuses or a missing reason are errors."""
    with open(path) as f:
        data = json.load(f)
    tolerance = data["tolerance"]
    for model, variants in data["models"].items():
        for variant, entry in variants.items():
            where = f"{path}: {model}/{variant}"
            if variant not in VARIANTS:
                raise ValueError(f"{where}: unknown variant (expected one of {', '.join(VARIANTS)})")
            if set(entry) - ENTRY_KEYS:
                raise ValueError(f"{where}: unknown keys {sorted(set(entry) - ENTRY_KEYS)}")
            if entry.get("status", "ok") not in STATUSES:
                raise ValueError(f"{where}: unknown status '{entry['status']}' (one of {', '.join(STATUSES)})")
            if not entry.get("reason"):
                raise ValueError(f"{where}: an expectation other than the default needs a \"reason\"")
    return tolerance, data["models"]


def expected(expectations, row):
    tolerance, models = expectations
    entry = models.get(row["model"], {}).get(row["variant"], {})
    return {"status": entry.get("status", "ok"), "reference_layers": entry.get("reference_layers", 0),
            "max_error": entry.get("max_error", tolerance[row["variant"]]),
            "float_quantized_macs": entry.get("float_quantized_macs", 0), "reason": entry.get("reason", "")}


def describe_mac_nodes(nodes, limit=3):
    shown_nodes = [f"'{node['node']}' ({node['op']}, {node['macs'] if node['macs'] is not None else '?'} MACs, "
                   f"{node['precision']})" for node in nodes[:limit]]
    return ", ".join(shown_nodes) + (f" and {len(nodes) - limit} more" if len(nodes) > limit else "")


def judge_macs(row, want, label):
    """(regressions, improvements) of the MAC checks: quantized MACs the engine runs outside INT8
    layers beyond the expectation's float_quantized_macs, and inspect's count against the ONNX graph's."""
    regressions, improvements = [], []
    macs = row.get("macs")
    if row["status"] != "ok" or not macs:
        return regressions, improvements
    found = float_quantized_macs(row)
    unknown = [node for node in macs["float_quantized"] if node["macs"] is None]
    if found > want["float_quantized_macs"] or unknown:
        share = 100.0 * found / macs["quantized_macs"] if macs["quantized_macs"] else 0.0
        regressions.append(f"{label}: {found} of {macs['quantized_macs']} quantized Conv/MatMul MACs ({share:.2g}%) "
                           f"run outside INT8 layers, expected at most {want['float_quantized_macs']}: "
                           f"{describe_mac_nodes(macs['float_quantized'])}")
    elif found < want["float_quantized_macs"]:
        improvements.append(f"{label}: {found} quantized Conv/MatMul MACs outside INT8 layers, "
                            f"expected {want['float_quantized_macs']}")
    mismatches = macs.get("inspect_mismatches", [])
    if mismatches:
        shown_layers = ", ".join(f"'{m['layer']}' ({m['op']}: inspect {m['inspect']}, graph {m['onnx']})"
                                 for m in mismatches[:3])
        regressions.append(f"{label}: inspect's MACs differ from the ONNX graph's in {len(mismatches)} layers: "
                           f"{shown_layers}")
    return regressions, improvements


def judge(expectations, row):
    """(regressions, improvements): lines saying how the row differs from its expectation."""
    want = expected(expectations, row)
    tolerance = expectations[0][row["variant"]]
    label = f"{row['model']}/{row['variant']}"
    regressions, improvements = [], []
    if row["status"] != want["status"]:
        line = f"{label}: status {row['status']}, expected {want['status']}"
        if row["status"] == "ok":
            improvements.append(line)
        else:
            regressions.append(f"{line}: {row['message']}")
    if row["reference_layers"] is not None:
        if row["reference_layers"] > want["reference_layers"]:
            regressions.append(f"{label}: {row['reference_layers']} reference layers {row['reference_ops']}, "
                               f"expected at most {want['reference_layers']}")
        elif row["reference_layers"] < want["reference_layers"]:
            improvements.append(f"{label}: {row['reference_layers']} reference layers, "
                                f"expected {want['reference_layers']}")
    if row["status"] == "ok" and row.get("output_range") == 0:
        regressions.append(f"{label}: the output is constant (range 0 on the seeded input): every comparison passes "
                           f"on it, so the row checks nothing; give the model weights that make it vary")
    mac_regressions, mac_improvements = judge_macs(row, want, label)
    regressions += mac_regressions
    improvements += mac_improvements
    divergence = row.get("divergence") or {}
    stretches = divergence.get("stretches")
    # The first divergent tensor is compared with the whole-graph reference, whose float tensors
    # upstream differ from the engine's by ulps that a LayerNorm or Softmax can amplify past
    # TIE_ULPS; its own stretch recomputes it from the engine's tensors upstream, so when that
    # stretch finds it right (not in `wrong`) the difference is that drift, not the layer.
    drift_only = stretches is not None and all(wrong.get("tensor") != divergence.get("tensor")
                                               for wrong in stretches.get("wrong", []))
    if divergence.get("found") and not divergence["tie"] and not drift_only:
        regressions.append(f"{label}: {describe_divergence(divergence)}: not rounding ties, a layer computes "
                           f"something else than the reference executor")
    for wrong in divergence.get("stretches", {}).get("wrong", [])[:3]:
        if wrong.get("kind") == "float":
            regressions.append(f"{label}: float tensor '{wrong['tensor']}' ({wrong['compared']} of the kept float "
                               f"tensors in graph order) recomputed from the engine's tensors upstream: "
                               f"{describe_float(wrong)}: beyond {FLOAT_TOLERANCE:g} of its range, a layer computes "
                               f"something else than the reference executor")
            continue
        regressions.append(f"{label}: quantized tensor '{wrong['tensor']}' ({wrong['compared']} in graph order) "
                           f"recomputed from the engine's tensors upstream: {describe_codes(wrong)}: not rounding "
                           f"ties, a layer computes something else than the reference executor")
    if row["max_error"] is not None:
        if not row["max_error"] <= want["max_error"]:
            regressions.append(f"{label}: max error {row['max_error']:.3g} of the output range, "
                               f"expected at most {want['max_error']:.3g}")
        elif want["max_error"] > tolerance and row["max_error"] <= tolerance:
            improvements.append(f"{label}: max error {row['max_error']:.3g}, within the tolerance {tolerance:g} "
                                f"(expected up to {want['max_error']:.3g})")
    return regressions, improvements


def describe_codes(found):
    return (f"{found['codes']} of {found['of']} codes differ, by at most {found['max_code']}, the reference's "
            f"input / scale there at most {found['ulps_from_half']:.3g} ulps from a .5")


def describe_float(found):
    if found["range"] is None:
        return f"another shape than the reference's ({found['values']} values)"
    return (f"max |engine - reference| {found['max_difference']:.3g}, {found['deviation']:.3g} of its range "
            f"{found['range']:.3g}")


def describe_divergence(divergence):
    if not divergence.get("found"):
        text = f"first divergent quantized tensor not found ({divergence.get('why', '')})"
    else:
        text = (f"first divergent quantized tensor '{divergence['tensor']}' (quantized tensor {divergence['compared']} "
                f"in graph order): {describe_codes(divergence)}")
    stretches = divergence.get("stretches")
    if stretches:
        floats = stretches.get("floats", 0)
        ties = (f" (at most {stretches['tie_ulps']:.3g} ulps from a .5)"
                if stretches.get("tie_codes") and "tie_ulps" in stretches else "")
        text += (f"; each of the {stretches['checked']} quantized {f'and {floats} float ' if floats else ''}tensors "
                 f"between layers recomputed from the engine's tensors upstream: {stretches['tie_codes']} codes "
                 f"differ at ties{ties}, {len(stretches['wrong'])} tensors otherwise")
        if floats and stretches["float_deviation"] == 0:
            text += "; the float tensors equal to the reference's recomputation"
        elif floats:
            text += (f"; the float tensors within {stretches['float_deviation']:.2g} of their range of the "
                     f"reference's recomputation ('{stretches['float_worst']}' the farthest)")
        if stretches.get("floats_not_anchored"):
            text += f"; float tensors not anchored: {stretches['floats_not_anchored']}"
        if stretches.get("hidden_not_anchored"):
            text += f"; quantized tensors the engine does not keep not anchored: {stretches['hidden_not_anchored']}"
    return text


def format_error(value):
    if value is None:
        return "-"
    return "0 (exact)" if value == 0 else f"{value:.2g}"


def format_row(row, markdown=False):
    fallbacks = "-" if row["reference_layers"] is None else str(row["reference_layers"])
    if row["reference_ops"]:
        fallbacks += " (" + ", ".join(f"{op} x{n}" for op, n in row["reference_ops"].items()) + ")"
    status = "builds" if row["status"] == "ok" else row["status"].replace("_", " ")
    if row["message"]:
        status += f": {row['message']}"
    cells = [row["model"], row["variant"], status, "-" if row["layers"] is None else str(row["layers"]),
             fallbacks, format_int8_share(row), format_error(row.get("output_range")), format_error(row["max_error"])]
    if markdown:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
    return (f"{cells[0]:<30} {cells[1]:<6} {cells[3]:>6} {cells[4]:<28} {cells[5]:>16} {cells[6]:>8} {cells[7]:>10}  "
            f"{cells[2]}")


def format_int8_share(row):
    """The share of the quantized Conv/MatMul MACs the engine runs in INT8 layers, and their count."""
    macs = row.get("macs")
    if not macs or not (macs["quantized_macs"] or macs["float_quantized"]):
        return "-"
    share = 100.0 * macs["int8_macs"] / macs["quantized_macs"] if macs["quantized_macs"] else 0.0
    text = "100%" if macs["int8_macs"] == macs["quantized_macs"] and not macs["float_quantized"] else f"{share:.3g}%"
    return f"{text} of {macs['quantized_macs'] / 1e6:.3g} M"


def print_table(rows, markdown):
    if markdown:
        print("| model | file | status | layers | reference layers | quantized MACs in INT8 | output range | "
              "max error (of range) |")
        print("|---|---|---|---|---|---|---|---|")
    else:
        print(f"{'model':<30} {'file':<6} {'layers':>6} {'reference layers':<28} {'quantized in INT8':>16} "
              f"{'range':>8} {'max error':>10}  status")
    for row in rows:
        print(format_row(row, markdown))


def check(args):
    expectations = load_expectations(args.expectations)
    args.tolerance = expectations[0]
    os.makedirs(os.path.join(args.work, "results"), exist_ok=True)
    all_regressions, all_improvements, rows = [], [], []
    for model in args.model:
        log_path = os.path.join(args.work, "results", f"{model}_{args.tier}.log")
        with open(log_path, "w") as log:
            model_rows = []
            try:
                paths, export_seconds, cached = exported_files(args.work, model, args.tier, args.export_timeout, log)
                print(f"{model}: export {'cached' if cached else f'{export_seconds:.1f} s'}", flush=True)
                for variant in VARIANTS:
                    if variant in paths:
                        model_rows.append(check_variant(args, model, variant, paths, log))
            except Failure as failure:
                for variant in ("fp32", "qdq"):
                    model_rows.append({"model": model, "variant": variant, "tier": args.tier, "status": failure.status,
                                       "message": failure.message, "layers": None, "reference_layers": None,
                                       "reference_ops": {}, "max_error": None, "seconds": {}})
        with open(os.path.join(args.work, "results", f"{model}_{args.tier}.json"), "w") as f:
            json.dump(model_rows, f, indent=1)
        rows += model_rows
        for row in model_rows:
            regressions, improvements = judge(expectations, row)
            all_regressions += regressions
            all_improvements += improvements
    print_table(rows, markdown=False)
    for row in rows:
        if row.get("divergence"):
            tie = (" (rounding ties)" if row["divergence"].get("tie") and
                   not row["divergence"].get("stretches", {}).get("wrong") else "")
            print(f"{row['model']}/{row['variant']}: {describe_divergence(row['divergence'])}{tie}")
    print(f"(commands and their output: {os.path.join(args.work, 'results')}/<model>_{args.tier}.log)")
    if args.tier != "ci":
        # The expectations are the ci tier's: a full-size file has more values, so more rounding ties.
        for line in all_regressions + all_improvements:
            print(f"DIFFERS from the ci tier's expectation: {line}")
        return 0
    for line in all_improvements:
        print(f"IMPROVED: {line} -- update {shown(args.expectations)}")
    for line in all_regressions:
        print(f"REGRESSION: {line}")
    return 1 if all_regressions else 0


def table(args):
    expectations = load_expectations(args.expectations)
    rows = []
    for path in sorted(glob.glob(os.path.join(args.work, "results", f"*_{args.tier}.json"))):
        rows += json.load(open(path))
    order = args.model or []
    if args.all:
        listed = subprocess.run([PYTHON, EXPORTER, "--list"], stdout=subprocess.PIPE, text=True, check=True).stdout
        order = [line.split()[0] for line in listed.splitlines() if line.strip()]
    position = {model: i for i, model in enumerate(order)}
    rows.sort(key=lambda row: (position.get(row["model"], len(position)), row["model"],
                               VARIANTS.index(row["variant"])))
    print_table(rows, args.markdown)
    regressions = [line for row in rows for line in judge(expectations, row)[0]]
    missing = sorted(set(order) - {row["model"] for row in rows})
    built = sum(row["status"] == "ok" for row in rows)
    clean = sum(row["status"] == "ok" and row["reference_layers"] == 0 for row in rows)
    quantized = [row for row in rows if row["status"] == "ok" and row["variant"] != "fp32"]
    all_int8 = sum(not (row.get("macs") or {}).get("float_quantized") for row in quantized)
    print(f"\n{len(rows)} files: {built} build and run, {clean} of them without reference layers; {all_int8} of the "
          f"{len(quantized)} quantized ones run every quantized Conv/MatMul MAC in INT8; "
          f"{len(regressions)} regressions against {shown(args.expectations)}")
    for line in regressions:
        print(f"REGRESSION: {line}")
    if missing:
        print(f"MISSING: no result for {', '.join(missing)} (run `check` for them first)")
    return 1 if regressions or missing else 0


def selftest(args):
    """The suite's own logic on known rows and files, without qdqrt or torch: a judge that let a
    regression through would make every coverage test pass."""
    failures = []

    def expect(condition, what):
        print(("ok    " if condition else "FAIL  ") + what)
        if not condition:
            failures.append(what)

    directory = tempfile.mkdtemp(prefix="coverage_selftest_")
    try:
        def write(models):
            path = os.path.join(directory, "expectations.json")
            with open(path, "w") as f:
                json.dump({"tolerance": {"fp32": 1e-4, "qdq": 1e-4}, "models": models}, f)
            return path

        for models, words in (({"m": {"fp32": {"status": "build_failed"}}}, "m/fp32: an expectation other than"),
                              ({"m": {"fp32": {"refernce_layers": 1, "reason": "r"}}},
                               "unknown keys ['refernce_layers']"),
                              ({"m": {"fp32": {"status": "broken", "reason": "r"}}}, "unknown status 'broken'"),
                              ({"m": {"int4": {"status": "timeout", "reason": "r"}}}, "m/int4: unknown variant"),
                              ({"m": {"qdq": {"float_quantized_macs": 5}}}, "m/qdq: an expectation other than")):
            try:
                load_expectations(write(models))
                expect(False, f"a bad expectations file is refused ({words})")
            except ValueError as error:
                expect(words in str(error), f"a bad expectations file is refused: {error}")

        expectations = load_expectations(write({
            "broken": {"qdq": {"status": "build_failed", "reason": "r"}},
            "fallback": {"fp32": {"reference_layers": 2, "reason": "r"}},
            "chaotic": {"qdq": {"max_error": 0.3, "reason": "r"}}}))

        def row(model, variant, status="ok", reference_layers=0, max_error=0.0):
            return {"model": model, "variant": variant, "status": status, "message": "why",
                    "reference_layers": reference_layers, "reference_ops": {}, "max_error": max_error}

        cases = [
            (row("clean", "fp32"), 0, 0), (row("clean", "qdq", max_error=9e-5), 0, 0),
            (row("clean", "fp32", status="build_failed", reference_layers=None, max_error=None), 1, 0),
            (row("clean", "fp32", reference_layers=1), 1, 0), (row("clean", "qdq", max_error=2e-4), 1, 0),
            (row("clean", "fp32", max_error=float("inf")), 1, 0),
            (row("broken", "qdq", status="build_failed", reference_layers=None, max_error=None), 0, 0),
            (row("broken", "qdq", status="reference_failed", reference_layers=3, max_error=None), 2, 0),
            (row("broken", "qdq"), 0, 1),
            (row("fallback", "fp32", reference_layers=2), 0, 0), (row("fallback", "fp32", reference_layers=3), 1, 0),
            (row("fallback", "fp32", reference_layers=1), 0, 1),
            (row("chaotic", "qdq", max_error=0.2), 0, 0), (row("chaotic", "qdq", max_error=0.4), 1, 0),
            (row("chaotic", "qdq", max_error=0.0), 0, 1)]
        tie = {"found": True, "tensor": "q", "compared": 3, "codes": 1, "of": 8, "max_code": 1,
               "ulps_from_half": 0.0, "tie": True}
        cases += [(dict(row("chaotic", "qdq", max_error=0.2), divergence=tie), 0, 0),
                  (dict(row("chaotic", "qdq", max_error=0.2), divergence=dict(tie, tie=False)), 1, 0),
                  (dict(row("chaotic", "qdq", max_error=0.2), divergence={"found": False, "why": "w"}), 0, 0),
                  (dict(row("chaotic", "qdq", max_error=0.2),
                        divergence=dict(tie, stretches={"checked": 9, "tie_codes": 4, "wrong": []})), 0, 0),
                  (dict(row("chaotic", "qdq", max_error=0.2), divergence=dict(tie, stretches={
                      "checked": 9, "tie_codes": 4, "wrong": [dict(tie, tie=False, compared=7)]})), 1, 0),
                  # Not a tie against the whole graph, but right in its own stretch (recomputed from
                  # the engine's tensors upstream): float drift, not a regression; wrong there: two.
                  (dict(row("chaotic", "qdq", max_error=0.2), divergence=dict(tie, tie=False, stretches={
                      "checked": 9, "tie_codes": 4, "wrong": []})), 0, 0),
                  (dict(row("chaotic", "qdq", max_error=0.2), divergence=dict(tie, tie=False, stretches={
                      "checked": 9, "tie_codes": 4, "wrong": [dict(tie, tie=False)]})), 2, 0)]
        # The float tensors between layers, anchored in the stretches: one beyond FLOAT_TOLERANCE is a
        # regression, in a row whose codes are all equal too.
        floats = {"checked": 9, "tie_codes": 4, "tie_ulps": 2.0, "floats": 5, "float_deviation": 3e-7,
                  "float_worst": "f", "wrong": []}
        off = {"kind": "float", "tensor": "f", "compared": 2, "deviation": 2e-5, "max_difference": 2e-5, "range": 1.0,
               "within": False, "values": 8}
        equal = {"found": False, "why": "all 9 quantized tensors between layers are equal"}
        cases += [(dict(row("chaotic", "qdq", max_error=0.2), divergence=dict(tie, stretches=floats)), 0, 0),
                  (dict(row("chaotic", "qdq", max_error=0.2),
                        divergence=dict(tie, stretches=dict(floats, wrong=[off]))), 1, 0),
                  (dict(row("chaotic", "qdq", max_error=0.2), divergence=dict(equal, stretches=floats)), 0, 0),
                  (dict(row("chaotic", "qdq", max_error=0.2),
                        divergence=dict(equal, stretches=dict(floats, wrong=[off, dict(off, tensor="g")]))), 2, 0)]
        # Quantized MACs outside INT8 layers, a constant output, inspect's count against the graph's.
        def mac_row(model, float_macs=0, output_range=1.0, mismatches=(), unknown=False):
            split = {"quantized_macs": 100, "int8_macs": 100 - float_macs, "float_quantized": [], "unknown_macs": [],
                     "folded_macs": 0, "inspect_mismatches": list(mismatches)}
            if float_macs:
                split["float_quantized"] = [{"node": "conv_b", "op": "Conv", "macs": float_macs, "precision": "FP32"}]
            if unknown:
                split["float_quantized"] = [{"node": "mm", "op": "MatMul", "macs": None, "precision": "missing"}]
            return dict(row(model, "qdq"), macs=split, output_range=output_range)

        expectations = (expectations[0], dict(expectations[1], floating={
            "qdq": {"float_quantized_macs": 20, "reason": "r"}}))
        short = {"layer": "dw", "op": "FusedDepthwiseConv", "inspect": 10, "onnx": 30}
        cases += [(mac_row("clean"), 0, 0), (mac_row("clean", float_macs=1), 1, 0),
                  (mac_row("clean", unknown=True), 1, 0), (mac_row("clean", output_range=0.0), 1, 0),
                  (mac_row("clean", mismatches=[short]), 1, 0),
                  (mac_row("floating", float_macs=20), 0, 0), (mac_row("floating", float_macs=21), 1, 0),
                  (mac_row("floating", float_macs=0), 0, 1)]

        # inspect's layers against the graph's MAC nodes: a fused layer counts the nodes it names.
        def node(name, macs, constant=False):
            return {"node": name, "op": "Conv", "macs": macs, "constant": constant}
        graph_nodes = [node("e", 10), node("d", 5), node("p", 7), node("c", 3), node("folded", 9, constant=True)]
        layers = [{"Name": "e + d + relu + p", "Node": "dw", "OpType": "FusedDepthwiseConv", "MACs": 22},
                  {"Name": "c + bn", "Node": "c", "OpType": "QConv", "MACs": 3},
                  {"Name": "sum", "Node": "sum", "OpType": "MatMul", "MACs": 4}]
        expect(inspect_mac_mismatches(graph_nodes, layers) == [],
               "inspect's layers equal to the nodes they fuse: no mismatch (folded nodes and lowered ops aside)")
        found = inspect_mac_mismatches(graph_nodes, [dict(layers[0], MACs=5), layers[1]])
        expect([m["layer"] for m in found] == ["dw"], f"a fused layer counted short: a mismatch ({found})")
        found = inspect_mac_mismatches(graph_nodes, layers[1:])
        expect(sorted(m["layer"] for m in found) == ["d", "e", "p"], f"nodes no layer names: mismatches ({found})")
        # A packed projection split into column ranges (split_sliced_projection) counts its parts.
        split_nodes = [node("proj", 30)]
        parts = [{"Name": f"proj_{a}_{b}", "Node": f"proj_{a}_{b}", "OpType": "MatMul", "MACs": 10}
                 for a, b in ((0, 8), (8, 16), (16, 24))]
        expect(inspect_mac_mismatches(split_nodes, parts) == [], "a split projection: its parts' MACs add up")
        found = inspect_mac_mismatches(split_nodes, parts[:2])
        expect(len(found) == 1 and found[0]["inspect"] == 20, f"a split projection counted short ({found})")
        # Kernel taps that read only padding for every output are not counted (qdqrt drops them).
        for args_, taps in (((24, 3, 1, 24, 24, 24), 1), ((24, 3, 1, 12, 12, 12), 3), ((6, 3, 1, 4, 4, 0), 2),
                            ((5, 3, 2, 5, 5, 5), 1), ((7, 3, 1, 1, 1, 1), 3)):
            expect(kept_taps(*args_) == taps, f"kept_taps{args_} == {taps} ({kept_taps(*args_)})")
        aspp = {"op": "Conv", "weight": [4, 3, 3, 3], "x": [1, 3, 6, 6], "y": [1, 4, 6, 6],
                "window": {"dilations": [6, 6], "pads": [6, 6, 6, 6]}}
        expect(node_macs(aspp) == 144 * 3, f"a dilated conv past its map counts its centre tap ({node_macs(aspp)})")
        expect(node_macs(dict(aspp, window={"dilations": [6, 6], "auto_pad": "SAME_UPPER"})) == 144 * 27,
               "auto_pad SAME_*: every tap counted")
        split = mac_split([dict(node("proj", 30), quantized=True)], {"proj_0_8": "INT8", "proj_8_16": "FP32"})
        expect(split["float_quantized"] and split["float_quantized"][0]["precision"] == "FP32/INT8",
               f"a split quantized projection with a float part is outside INT8 ({split})")

        for case, regressions, improvements in cases:
            found = judge(expectations, case)
            expect((len(found[0]), len(found[1])) == (regressions, improvements),
                   f"{case['model']}/{case['variant']} {case['status']} refs {case['reference_layers']} "
                   f"error {case['max_error']}: {regressions} regressions, {improvements} improvements ({found})")

        # Scale 0.5: the inputs 1.25 and -0.75 are 2.5 and -1.5 scaled, exact ties (codes 2 and -2).
        codes, inputs = np.array([2, -2, 1, 0], np.int8), np.array([1.25, -0.75, 0.5, 0.1], np.float32)
        expect(classify_divergence(codes.copy(), codes, inputs, 0.5) is None, "equal codes: no divergence")
        found = classify_divergence(np.array([3, -1, 1, 0], np.int8), codes, inputs, 0.5)
        expect(found["tie"] and found["codes"] == 2, f"one code off at exact .5 values: ties ({found})")
        nudged = inputs.copy()
        nudged[0] = np.nextafter(nudged[0], np.float32(2))
        expect(classify_divergence(np.array([3, -2, 1, 0], np.int8), codes, nudged, 0.5)["tie"],
               "one code off an ulp from .5: a tie")
        # 1.25 + 200 float32 ulps (2^-23 each): scaled, 2.5 + 160 times 2.5 * 2^-23, beyond TIE_ULPS.
        far = inputs.copy()
        far[0] = np.float32(1.25 + 200 * 2.0 ** -23)
        found = classify_divergence(np.array([3, -2, 1, 0], np.int8), codes, far, 0.5)
        expect(not found["tie"] and 150 < found["ulps_from_half"] < 250,
               f"one code off {TIE_ULPS}+ ulps from a .5: not a tie ({found})")
        found = classify_divergence(np.array([2, -2, 2, 0], np.int8), codes, inputs, 0.5)
        expect(not found["tie"], f"one code off away from a .5 (a zero point or scale off): not a tie ({found})")
        found = classify_divergence(np.array([4, -2, 1, 0], np.int8), codes, inputs, 0.5)
        expect(not found["tie"], f"two codes off at a .5: not a tie ({found})")
        found = classify_divergence(codes[:3], codes, inputs, 0.5)
        expect(not found["tie"], "a shape that differs: not a tie")

        # A float tensor against the reference's recomputation of it: within FLOAT_TOLERANCE of its range.
        recomputed = np.array([-2.0, 0.5, 1.0, 2.0], np.float32)
        expect(float_deviation(recomputed.copy(), recomputed)["deviation"] == 0.0, "equal floats: deviation 0")
        close = recomputed + np.float32(2 ** -20)  # a few ulps of the largest value
        found = float_deviation(close, recomputed)
        expect(found["within"] and abs(found["deviation"] - 2 ** -22) < 1e-12,
               f"floats ulps apart: within, relative to the range 4 ({found})")
        found = float_deviation(recomputed + np.float32(5e-5), recomputed)
        expect(not found["within"], f"floats 5e-5 apart, 1.25e-5 of the range 4: beyond {FLOAT_TOLERANCE:g} ({found})")
        sigmoid = np.array([0.5, 0.5006, 0.5012], np.float32)  # a narrow range: ulps of 0.5 count against 0.5
        found = float_deviation(sigmoid + np.float32(2 ** -23), sigmoid)
        expect(found["within"] and found["range"] == np.float32(0.5012),
               f"values near 0.5 an ulp apart: within, against their largest magnitude ({found})")
        found = float_deviation(sigmoid + np.float32(1e-4), sigmoid)
        expect(not found["within"], f"values near 0.5 1e-4 apart: beyond ({found})")
        nan = np.array([np.nan, np.inf, 1.0], np.float32)
        expect(float_deviation(nan.copy(), nan)["deviation"] == 0.0, "NaN against NaN, inf against inf: equal")
        found = float_deviation(np.array([1.0, np.inf, 1.0], np.float32), nan)
        expect(found["deviation"] == float("inf") and not found["within"], f"a number against NaN: infinite ({found})")
        found = float_deviation(recomputed[:3], recomputed)
        expect(not found["within"] and found["range"] is None, f"a shape that differs: not within ({found})")
        expect(float_deviation(np.zeros(3, np.float32), np.zeros(3, np.float32))["within"], "all zero: within")

        reference = np.array([[0.0, 2.0], [1.0, 4.0]])
        expect(relative_error(reference.copy(), reference) == 0.0, "equal outputs: error 0")
        expect(abs(relative_error(reference + [[0, 0], [0, 0.4]], reference) - 0.1) < 1e-12,
               "error relative to the range: 0.4 of 4 is 0.1")
        expect(relative_error(np.array([[0.0, np.nan], [1.0, 4.0]]), reference) == float("inf"),
               "a NaN where the reference has a number: infinite error")
        expect(relative_error(reference[:1], reference) == float("inf"), "a shape that differs: infinite error")
        outputs = os.path.join(directory, "outputs.json")
        with open(outputs, "w") as f:
            json.dump([{"name": "y", "dimensions": "2x2", "datatype": "float32", "values": [0, 1.5, None, 3]}], f)
        read = read_engine_outputs(outputs)["y"]
        expect(read.shape == (2, 2) and read[0, 1] == 1.5 and np.isnan(read[1, 0]), "exported outputs are read back")
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    # The committed file: valid, and every model it names is one the exporter knows.
    tolerance, models = load_expectations(args.expectations)
    listed = subprocess.run([PYTHON, EXPORTER, "--list"], stdout=subprocess.PIPE, text=True, check=True).stdout
    known = {line.split()[0] for line in listed.splitlines() if line.strip()}
    expect(set(models) <= known, f"{shown(args.expectations)} names only known models "
                                 f"(unknown: {sorted(set(models) - known)})")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


def planted_model(path, second_input_quantized=True, zero_weights=False, softmax=False, reshape=False):
    """A tiny QDQ network: input -> Q/DQ -> conv_a (DQ weight) -> Relu -> [Q/DQ] -> conv_b (DQ weight)
    -> output. Without the Q/DQ before conv_b its weight is quantized but its input float, so the
    engine runs conv_b in float: quantized MACs outside INT8. `zero_weights`: conv_b's weight all
    zero, so the output is constant. `softmax`: a Softmax over the last axis instead of the Relu, a
    float layer of its own: the engine keeps conv_a's output and the Softmax's in float32 between
    its layers. `reshape`: a Reshape of the Relu's output to [1, 8, 3, 12] before the Q/DQ (conv_b
    reads that shape): the optimizer moves the Q above it into conv_a, and the engine runs the
    Reshape as a view, so it does not keep the codes 'a_q' between its layers."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    # Scales whose products are no round numbers: conv_a's output would often sit on a .5 of conv_b's
    # input quantizer otherwise (a rounding tie, which engine and reference may resolve apart).
    initializers = [numpy_helper.from_array(np.array(0.0517, np.float32), "scale"),
                    numpy_helper.from_array(np.array(0.00713 if softmax else 0.3713, np.float32), "scale_a"),
                    numpy_helper.from_array(np.array(0, np.int8), "zero")]
    for name in ("a", "b"):
        weight = rng.integers(-127, 128, (8, 8, 3, 3)).astype(np.int8)
        if name == "b" and zero_weights:
            weight[:] = 0
        initializers += [numpy_helper.from_array(weight, f"w_{name}_int8"),
                         numpy_helper.from_array(np.full(8, 0.0113, np.float32), f"w_{name}_scale"),
                         numpy_helper.from_array(np.zeros(8, np.int8), f"w_{name}_zero")]
    nodes = [helper.make_node("QuantizeLinear", ["input", "scale", "zero"], ["x_q"], name="q_x"),
             helper.make_node("DequantizeLinear", ["x_q", "scale", "zero"], ["x_dq"], name="dq_x")]
    for name in ("a", "b"):
        nodes.append(helper.make_node("DequantizeLinear", [f"w_{name}_int8", f"w_{name}_scale", f"w_{name}_zero"],
                                      [f"w_{name}"], name=f"dq_w_{name}", axis=0))
    nodes += [helper.make_node("Conv", ["x_dq", "w_a"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
              helper.make_node("Softmax", ["a"], ["a_relu"], name="softmax_a", axis=-1) if softmax else
              helper.make_node("Relu", ["a"], ["a_relu"], name="relu_a")]
    conv_b_input, output_shape = "a_relu", [1, 8, 6, 6]
    if reshape:
        initializers.append(numpy_helper.from_array(np.array([1, 8, 3, 12], np.int64), "a_shape"))
        nodes.append(helper.make_node("Reshape", ["a_relu", "a_shape"], ["a_reshaped"], name="reshape_a"))
        conv_b_input, output_shape = "a_reshaped", [1, 8, 3, 12]
    if second_input_quantized:
        nodes += [helper.make_node("QuantizeLinear", [conv_b_input, "scale_a", "zero"], ["a_q"], name="q_a"),
                  helper.make_node("DequantizeLinear", ["a_q", "scale_a", "zero"], ["a_dq"], name="dq_a")]
        conv_b_input = "a_dq"
    nodes.append(helper.make_node("Conv", [conv_b_input, "w_b"], ["output"], name="conv_b", pads=[1, 1, 1, 1]))
    graph = helper.make_graph(nodes, "planted",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 8, 6, 6])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, output_shape)], initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def planted(args):
    """The checks on tiny networks built here, through qdqrt: a conv with a quantized weight left in
    float must fail the MAC check (naming it), the same conv with its input quantized must pass, and
    a constant output must fail. What `selftest` cannot show: that the rows the suite computes from
    qdqrt's runs carry what the judging reads."""
    failures = []

    def expect(condition, what):
        print(("ok    " if condition else "FAIL  ") + what)
        if not condition:
            failures.append(what)

    args.tolerance = {"fp32": 1e-4, "qdq": 1e-4, "ort_u8": 1e-4}
    expectations = ({"fp32": 1e-4, "qdq": 1e-4, "ort_u8": 1e-4}, {})
    directory = os.path.join(args.work, "planted")
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    input_path = os.path.join(directory, "input.npy")
    np.save(input_path, np.random.default_rng(8).standard_normal((1, 8, 6, 6)).astype(np.float32))
    conv_b_macs = 8 * 6 * 6 * 8 * 9
    with open(os.path.join(directory, "planted.log"), "w") as log:
        for case, options in (("clean", {}), ("float_conv", {"second_input_quantized": False}),
                              ("constant", {"zero_weights": True})):
            path = os.path.join(directory, f"{case}.onnx")
            planted_model(path, **options)
            row = check_variant(args, f"planted_{case}", "qdq", {"input": input_path, "qdq": path}, log)
            regressions, _ = judge(expectations, row)
            print(f"{case}: {format_row(row)}")
            for line in regressions:
                print(f"      {line}")
            expect(row["status"] == "ok", f"{case}: builds and runs ({row['message']})")
            macs = row.get("macs") or {}
            if case == "clean":
                expect(not regressions, f"clean: no regression ({regressions})")
                expect(macs.get("int8_macs") == 2 * conv_b_macs and not macs.get("float_quantized"),
                       f"clean: both convs' {2 * conv_b_macs} quantized MACs in INT8 ({macs})")
            elif case == "float_conv":
                expect(float_quantized_macs(row) == conv_b_macs, f"float_conv: conv_b's {conv_b_macs} MACs found "
                                                                 f"outside INT8 ({macs.get('float_quantized')})")
                expect(any("quantized Conv/MatMul MACs" in line and "'conv_b'" in line for line in regressions),
                       "float_conv: a regression naming conv_b")
            else:
                expect(row.get("output_range") == 0.0, f"constant: output range 0 ({row.get('output_range')})")
                expect(any("the output is constant" in line for line in regressions), "constant: a regression")

        # The stretches of first_divergence on the Softmax network: the engine keeps conv_a's output
        # 'a' in float32 between its layers (the Softmax and the QuantizeLinear after it run as one
        # layer), and the codes 'x_q' (its stretch, input -> QuantizeLinear, has no float tensor) and
        # 'a_q' (its stretch starts at the engine's 'a'). A value planted in the engine's saved tensors
        # must show in its stretch, and nothing may show without one.
        path = os.path.join(directory, "softmax.onnx")
        planted_model(path, softmax=True)
        variant_paths = {"input": input_path, "qdq": path}
        row = check_variant(args, "planted_softmax", "qdq", variant_paths, log)
        expect(row["status"] == "ok" and not judge(expectations, row)[0],
               f"softmax: builds, runs and passes ({row['message']}, {judge(expectations, row)[0]})")
        work = os.path.join(args.work, "runs", f"planted_softmax_{args.tier}_qdq")

        def stretches(tensor=None, dtype=None, change=None):
            def tamper(files, codes, floats):
                expect(codes == ["x_q", "a_q"] and floats == ["a"], f"kept tensors: codes {codes}, floats {floats}")
                if tensor is not None:
                    values = np.fromfile(files[tensor], dtype=dtype)
                    change(values)
                    values.tofile(files[tensor])

            found = first_divergence(args, variant_paths, "qdq", work, os.path.join(work, "layers.json"),
                                     os.path.join(work, "engine_outputs.json"), f"--loadInputs=input:{input_path}",
                                     log, tamper=tamper)
            wrong = {(entry.get("kind", "codes"), entry["tensor"]) for entry in found.get("stretches", {}).get("wrong", [])}
            print(f"      {describe_divergence(found)}")
            return found, wrong, judge(expectations, dict(row, divergence=found))[0]

        def shift_codes(values):
            values[5] = values[5] - 3 if values[5] > 0 else values[5] + 3

        def shift_float(values):  # -9.2 becomes the largest value of its Softmax row (of -12.6 to 0.79)
            values[0] += np.float32(15.0)

        found, wrong, regressions = stretches()
        expect(found.get("stretches", {}).get("floats") == 1 and not wrong and not regressions,
               f"softmax as built: the float tensor anchored, no stretch wrong ({wrong}, {regressions})")
        found, wrong, regressions = stretches("a", np.float32, shift_float)
        expect(("float", "a") in wrong and ("codes", "a_q") in wrong and len(regressions) == 2,
               f"softmax, 15 added to a value of the engine's 'a': it is listed as a wrong float tensor, and the "
               f"codes 'a_q' recomputed from it as wrong ({wrong})")
        found, wrong, regressions = stretches("x_q", np.int8, shift_codes)
        expect(("codes", "x_q") in wrong and regressions,
               f"softmax, a code of the engine's 'x_q' (a stretch without float tensors) 3 off: listed wrong "
               f"({wrong})")

        # The Reshape network: the codes 'a_q' are not kept between the engine's layers (its Reshape is
        # a view of conv_a's output) and are marked all the same: a code planted there must show.
        path = os.path.join(directory, "reshape.onnx")
        planted_model(path, reshape=True)
        variant_paths = {"input": input_path, "qdq": path}
        row = check_variant(args, "planted_reshape", "qdq", variant_paths, log)
        expect(row["status"] == "ok" and not judge(expectations, row)[0],
               f"reshape: builds, runs and passes ({row['message']}, {judge(expectations, row)[0]})")
        work = os.path.join(args.work, "runs", f"planted_reshape_{args.tier}_qdq")
        layers = json.load(open(os.path.join(work, "layers.json")))["Layers"]
        expect("a_q" not in {o["Name"] for layer in layers for o in layer.get("Outputs", [])},
               "reshape: the engine does not keep 'a_q' between its layers")

        def reshape_stretches(tamper_codes):
            def tamper(files, codes, floats):
                expect(codes == ["x_q", "a_q"], f"reshape: quantized tensors compared {codes}")
                if tamper_codes:
                    values = np.fromfile(files["a_q"], dtype=np.int8)
                    shift_codes(values)
                    values.tofile(files["a_q"])

            found = first_divergence(args, variant_paths, "qdq", work, os.path.join(work, "layers.json"),
                                     os.path.join(work, "engine_outputs.json"), f"--loadInputs=input:{input_path}",
                                     log, tamper=tamper)
            print(f"      {describe_divergence(found)}")
            return {(entry.get("kind", "codes"), entry["tensor"]) for entry in found.get("stretches", {}).get("wrong", [])}

        wrong = reshape_stretches(False)
        expect(not wrong, f"reshape as built: no stretch wrong ({wrong})")
        wrong = reshape_stretches(True)
        expect(("codes", "a_q") in wrong, f"reshape, a code of the engine's hidden 'a_q' 3 off: listed wrong ({wrong})")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    check_parser = sub.add_parser("check", help="export, build, run and compare models")
    check_parser.add_argument("--model", action="append", required=True)
    check_parser.add_argument("--qdqrt", required=True, help="the qdqrt binary")
    check_parser.add_argument("--export-timeout", type=float, default=900, help="seconds per model export")
    check_parser.add_argument("--run-timeout", type=float, default=900,
                              help="seconds per engine build-and-run and per reference run")
    table_parser = sub.add_parser("table", help="print the results as a table")
    table_parser.add_argument("--model", action="append", help="models that must have a result, in table order")
    table_parser.add_argument("--all", action="store_true", help="every model export_coverage.py knows must have one")
    table_parser.add_argument("--markdown", action="store_true")
    planted_parser = sub.add_parser("planted",
                                    help="the MAC and constant-output checks on tiny networks, through qdqrt")
    planted_parser.add_argument("--qdqrt", required=True, help="the qdqrt binary")
    planted_parser.add_argument("--work", required=True, help="directory for the files and runs")
    planted_parser.add_argument("--tier", default="ci")
    planted_parser.add_argument("--run-timeout", type=float, default=120)
    selftest_parser = sub.add_parser("selftest", help="the suite's own judging, on known rows and files")
    selftest_parser.add_argument("--expectations", default=DEFAULT_EXPECTATIONS)
    for sub_parser in (check_parser, table_parser):
        sub_parser.add_argument("--work", required=True, help="directory for the cache, runs and results")
        sub_parser.add_argument("--tier", choices=("ci", "full"), default="ci")
        sub_parser.add_argument("--expectations", default=DEFAULT_EXPECTATIONS)
    args = parser.parse_args()
    try:
        return {"check": check, "table": table, "selftest": selftest, "planted": planted}[args.command](args)
    except (ValueError, KeyError, OSError) as error:
        print(f"coverage_suite: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
