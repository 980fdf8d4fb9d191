#!/usr/bin/python3
"""Whole-model benchmark: `qdqrt exec` against ONNX Runtime (Node.js) on the same ONNX files.

Called by bench/models/run_bench.sh (which installs ONNX Runtime first); see docs/bench.md.
For each model x variant (FP32 / QDQ) x threads x batch it runs tools/ort/bench_ort.js and
`qdqrt exec` with equal thread counts, warm-up and duration, and prints one Markdown table:
median latencies, the ratio ORT/qdqrt on the same file, the ratio ORT-FP32-on-the-FP32-original
/ qdqrt (QDQ rows), and qdqrt's end-to-end GOPS as a fraction of the measured vpdpbusd peak.

--dynamic: the models exported with symbolic sizes (models/export_coverage.py --dynamic: the
YOLO-style detector's height and width, the nn.TransformerEncoder's sequence length;
models/export_bert_encoder.py --dynamic: the BERT-base-shaped encoder's sequence length). Per model,
shape and thread count, batch 1: `qdqrt exec --loadEngine=E --shapes=..` of one engine file
saved for the model's whole range (DYNAMIC_MODELS: --minShapes/--optShapes/--maxShapes), beside an engine built for
exactly that shape (--shapes only), ORT on the same QDQ file and ORT on the FP32 original, in
--rounds alternated rounds (the order of the two qdqrt runs flips each round); the table has the
medians over the rounds and the ratio dynamic/fixed.

--coverage: the models of models/export_coverage.py at their full size (--tier full), exported once
into the cache. Per model and thread count, batch 1: qdqrt and ORT on the FP32 file and on the QDQ
file (in --rounds rounds whose order flips), the bar each row is held to (QDQ: >= 2x ORT on the FP32
original and >= 1.5x ORT on the same file; FP32: >= 1x ORT), and for each row that misses it the
heaviest layers of a short profiled qdqrt run (--exportProfile, layer types and kernels from
--exportLayerInfo). --ort-u8 adds a row for the file in ONNX Runtime quantize_static's u8 layout,
held to the QDQ bars. --merge keeps an earlier --json run's rows that were not run again.

A qdqrt (or ORT) run that fails or times out shows as "n/a" with its error under the table; the
exit code is then 0 unless --strict (1; or 77, "skipped" for ctest, when every qdqrt failure says
that exec or an engine part has not landed yet). --selftest checks the parsers and the MAC counter without running anything.
"""
import argparse
import datetime
import glob
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import onnx

TORCHVISION_MODELS = ("resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0")
# Generated into the cache by models/export_bert_encoder.py (too large for git).
ENCODER_MODELS = ("bert_encoder",)
QUICK_MODELS = ("fmnist_resnet", "mobilenet_v2")
VARIANTS = ("fp32", "qdq", "ort_s8", "ort_u8")
QUANTIZED_VARIANTS = ("qdq", "ort_s8", "ort_u8", "qdq+bf16")  # qdq: pytorch-quantization style; ort_*: quantize_static style
# --coverage --bf16: the QDQ file again with qdqrt exec --bf16 (its float MatMul/Gemm layers in bf16),
# an extra row beside the standard ones; its ORT figure is the QDQ row's (the same file).
BF16_VARIANT = "qdq+bf16"
# --dynamic: model -> (the profile's min, opt, max, and the shapes timed), batch 1, the `ci` tier's network.
DYNAMIC_MODELS = {
    "yolo": {"min": "1x3x320x320", "opt": "1x3x640x640", "max": "1x3x640x640",
             "shapes": ["1x3x320x320", "1x3x480x640", "1x3x640x640"]},
    "bert": {"min": "1x16x128", "opt": "1x128x128", "max": "1x384x128",
             "shapes": ["1x16x128", "1x64x128", "1x128x128", "1x384x128"]},
    # models/export_bert_encoder.py --dynamic: 2 BERT-base layers, quantized attention MatMuls.
    "bert_encoder": {"min": "1x16x768", "opt": "1x128x768", "max": "1x384x768",
                     "shapes": ["1x16x768", "1x64x768", "1x128x768", "1x384x768"]},
}
# --coverage: models/export_coverage.py's models at the size they are used at; the bars each row is
# held to (qdqrt's speed-up over ORT: QDQ files against ORT on the FP32 original and on the same
# file, FP32 files against ORT on the same file).
COVERAGE_TIER = "full"
QDQ_BAR_FP32, QDQ_BAR_SAME, FP32_BAR = 2.0, 1.5, 1.0
PROFILE_TOP = 5  # layers listed per row that misses a bar
NOT_RUN = "not run:"  # the error of a --coverage row that --time-limit left out
RUN_TIMEOUT_S = 1200  # building a ResNet-50 engine plus the timed runs, on a loaded machine
EXIT_SKIPPED = 77  # ctest SKIP_RETURN_CODE


def log(message):
    print(message, file=sys.stderr, flush=True)


def load_average():
    return os.getloadavg()[0]


# ----- models -------------------------------------------------------------------------------------

def local_models(root):
    """models/<name>_fp32.onnx / <name>_qdq.onnx pairs shipped in the repository."""
    found = {}
    for path in sorted(glob.glob(os.path.join(root, "models", "*.onnx"))):
        match = re.match(r"(.+)_(fp32|qdq)\.onnx$", os.path.basename(path))
        if match:
            found.setdefault(match.group(1), {})[match.group(2)] = path
    return found


def export_torchvision(root, cache, names, wanted_variants=None):
    """Exports the torchvision models once into `cache` (regenerated when the exporter changes)."""
    exporter = os.path.join(root, "models", "export_torchvision.py")
    sources = [exporter, os.path.join(root, "models", "fake_quant.py")]
    newest_source = max(os.path.getmtime(path) for path in sources)
    ort_exporter = os.path.join(root, "models", "export_ort_styles.py")
    ort_newest = max(newest_source, os.path.getmtime(ort_exporter),
                     os.path.getmtime(os.path.join(root, "models", "export_qdq_styles.py")))
    paths = {}
    for name in names:
        paths[name] = {variant: os.path.join(cache, f"{name}_{variant}.onnx") for variant in VARIANTS}
        stale = [v for v in ("fp32", "qdq")
                 if not os.path.exists(paths[name][v]) or os.path.getmtime(paths[name][v]) < newest_source]
        if stale:
            log(f"exporting {name} ({', '.join(stale)}) into {cache} ...")
            subprocess.run([sys.executable, exporter, "--model", name, "--variant", *stale, "--out", cache],
                           check=True, stdout=subprocess.DEVNULL)
        ort_stale = [v for v in ("ort_s8", "ort_u8")
                     if wanted_variants and v in wanted_variants and
                     (not os.path.exists(paths[name][v]) or os.path.getmtime(paths[name][v]) < ort_newest)]
        if ort_stale:
            # The ONNX Runtime quantize_static-style files, made from the same FP32 export (in a
            # scratch folder so the FP32 file the table compares against stays the one above).
            log(f"exporting {name} ({', '.join(ort_stale)}) into {cache} ...")
            scratch = os.path.join(cache, "ort_styles")
            subprocess.run([sys.executable, ort_exporter, "--model", name, "--style", *ort_stale, "--out", scratch],
                           check=True, stdout=subprocess.DEVNULL)
            for variant in ort_stale:
                os.replace(os.path.join(scratch, f"{name}_{variant}.onnx"), paths[name][variant])
    return paths


def export_encoder(root, cache):
    """The BERT-base-shaped encoder (FP32 and QDQ), exported once into `cache`."""
    exporter = os.path.join(root, "models", "export_bert_encoder.py")
    newest_source = max(os.path.getmtime(exporter), os.path.getmtime(os.path.join(root, "models", "fake_quant.py")))
    paths = {variant: os.path.join(cache, f"bert_encoder_{variant}.onnx") for variant in ("fp32", "qdq")}
    if any(not os.path.exists(path) or os.path.getmtime(path) < newest_source for path in paths.values()):
        log(f"exporting bert_encoder into {cache} ...")
        subprocess.run([sys.executable, exporter, "--out", cache], check=True, stdout=subprocess.DEVNULL)
    return {"bert_encoder": paths}


def export_dynamic(root, cache, names):
    """The --dynamic models (FP32 and QDQ, symbolic sizes), exported once into `cache`."""
    exporter = os.path.join(root, "models", "export_coverage.py")
    sources = [exporter] + [os.path.join(root, "models", f) for f in ("fake_quant.py", "export_torchvision.py")]
    newest_source = max(os.path.getmtime(path) for path in sources)
    encoder_exporter = os.path.join(root, "models", "export_bert_encoder.py")
    paths = {}
    for name in names:
        stem = "bert_encoder_dynamic" if name == "bert_encoder" else f"{name}_ci_dynamic"
        paths[name] = {variant: os.path.join(cache, f"{stem}_{variant}.onnx") for variant in ("fp32", "qdq")}
        newest = max(newest_source, os.path.getmtime(encoder_exporter)) if name == "bert_encoder" else newest_source
        if any(not os.path.exists(path) or os.path.getmtime(path) < newest for path in paths[name].values()):
            log(f"exporting {name} with symbolic sizes into {cache} ...")
            command = ([sys.executable, encoder_exporter, "--dynamic", "--out", cache] if name == "bert_encoder" else
                       [sys.executable, exporter, "--model", name, "--tier", "ci", "--dynamic", "--out", cache])
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return paths


def model_input(path):
    """(name, per-image dims) of the model's single non-initializer input; dims exclude batch."""
    model = onnx.load(path, load_external_data=False)
    initializers = {init.name for init in model.graph.initializer}
    inputs = [value for value in model.graph.input if value.name not in initializers]
    if len(inputs) != 1:
        raise ValueError(f"{path}: expected one input, found {len(inputs)}")
    dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
    if len(dims) < 2 or any(d <= 0 for d in dims[1:]):
        raise ValueError(f"{path}: input '{inputs[0].name}' needs static non-batch dims, has {dims}")
    return inputs[0].name, dims[1:]


def count_macs(path, qdqrt=None):
    """Multiply-accumulates of one image through every Conv, ConvTranspose, Gemm and MatMul.

    ONNX's shape inference cannot follow every shape computation (a ViT's class token Expand);
    then, given the qdqrt binary, `qdqrt inspect` counts them (it evaluates them at batch 1)."""
    try:
        return count_macs_onnx(path)
    except ValueError:
        if qdqrt is None:
            raise
    name, dims = model_input(path)
    with tempfile.TemporaryDirectory(prefix="qdqrt_macs_") as workdir:
        report = os.path.join(workdir, "layers.json")
        subprocess.run([qdqrt, "inspect", f"--onnx={path}", "--shapes=" + name + ":" + "x".join(map(str, [1, *dims])),
                        f"--exportLayerInfo={report}"], check=True, stdout=subprocess.DEVNULL)
        with open(report) as handle:
            summary = json.load(handle)["Summary"]
    return summary["Int8MACs"] + summary["FloatMACs"]


def count_macs_onnx(path):
    model = onnx.load(path)
    initializers = {init.name for init in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        for dim in value.type.tensor_type.shape.dim:
            if not dim.dim_value:
                dim.dim_value = 1  # symbolic dims (the batch) -> 1
    # data_prop: Reshape targets computed from Shape(x) (transformer exports) get evaluated.
    model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    shapes = {init.name: list(init.dims) for init in model.graph.initializer}
    for value in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        if value.type.tensor_type.HasField("shape"):
            shapes.setdefault(value.name, [d.dim_value for d in value.type.tensor_type.shape.dim])

    def shape_of(name, node):
        shape = shapes.get(name)
        if shape is None or any(d <= 0 for d in shape):
            raise ValueError(f"{path}: no static shape for '{name}' ({node.op_type} node '{node.name}')")
        return shape

    macs = 0
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Conv":
            # output elements x (input channels per group x kernel taps)
            macs += math.prod(shape_of(node.output[0], node)) * math.prod(shape_of(node.input[1], node)[1:])
        elif node.op_type == "ConvTranspose":
            weight = shape_of(node.input[1], node)  # [C_in, C_out/group, kh, kw]
            macs += math.prod(shape_of(node.input[0], node)) * math.prod(weight[1:])
        elif node.op_type == "Gemm":
            a = shape_of(node.input[0], node)
            trans_a = any(attr.name == "transA" and attr.i for attr in node.attribute)
            macs += math.prod(shape_of(node.output[0], node)) * (a[0] if trans_a else a[1])
        elif node.op_type == "MatMul":
            macs += math.prod(shape_of(node.output[0], node)) * shape_of(node.input[0], node)[-1]
    return macs


# ----- runners ------------------------------------------------------------------------------------

def short_error(text):
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    message = lines[-1] if lines else "no output"
    for line in lines:  # prefer an explicit error line over the last line
        if "error" in line.lower():
            message = line
            break
    return message[:200]


def run_command(command, timeout, env=None):
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    except OSError as error:
        return None, str(error)
    if result.returncode != 0:
        return None, f"exit {result.returncode}: {short_error(result.stderr + result.stdout)}"
    return result, None


def run_ort(args, model, shape_flag, threads):
    command = [args.node, args.ort_runner, "--model", model, "--shapes", shape_flag,
               "--threads", str(threads), "--warmUp", str(args.warmup), "--duration", str(args.duration),
               "--iterations", str(args.iterations)]
    result, error = run_command(command, args.timeout)
    if error:
        return None, None, error
    try:
        stats = json.loads(result.stdout.strip().splitlines()[-1])
        return stats["median_ms"], stats, None
    except (ValueError, KeyError, IndexError) as problem:
        return None, None, f"unreadable bench_ort output ({problem}): {result.stdout[:200]!r}"


def median(values):
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def median_from_times(data, reduce=median):
    """Median latency (or `reduce` of the latencies) from trtexec-style --exportTimes JSON: a list
    of per-iteration records."""
    if isinstance(data, dict):  # tolerate a wrapper object holding the list
        lists = [value for value in data.values() if isinstance(value, list)]
        data = lists[0] if lists else []
    if not isinstance(data, list):
        return None
    for key in ("latencyMs", "computeMs", "endToEndMs"):
        values = [entry[key] for entry in data if isinstance(entry, dict) and isinstance(entry.get(key), (int, float))]
        if values:
            return reduce(values)
    numbers = [entry for entry in data if isinstance(entry, (int, float))]
    return reduce(numbers) if numbers else None


def median_from_summary(text):
    """Median from trtexec's performance summary: 'Latency: min = .. ms, ..., median = X ms, ...'."""
    for line in text.splitlines():
        if re.search(r"\bLatency:", line):
            match = re.search(r"median\s*=\s*([0-9.eE+-]+)\s*ms", line)
            if match:
                return float(match.group(1))
    return None


def qdqrt_env(args):
    """qdqrt's own ISA cap (kernels/cpu_features.h), like trtexec's device selection."""
    return dict(os.environ, QDQRT_MAX_ISA=args.isa) if args.isa else None


def run_qdqrt(args, model, shape_flag, threads, workdir, source_flags=None, minimums=None, extra_flags=()):
    """`source_flags` replace --onnx=MODEL (a range engine's profile, --loadEngine); the run's
    fastest iteration is appended to `minimums` when given (None when unknown); `extra_flags` are
    appended (flags that do not change the timed runs, such as --exportLayerInfo)."""
    times_file = os.path.join(workdir, "times.json")
    if os.path.exists(times_file):
        os.remove(times_file)
    command = [args.qdqrt, "exec", *(source_flags or [f"--onnx={model}"]), f"--threads={threads}",
               f"--shapes={shape_flag}", f"--warmUp={args.warmup}", f"--duration={args.duration}",
               f"--iterations={args.iterations}", f"--exportTimes={times_file}", *extra_flags]
    result, error = run_command(command, args.timeout, qdqrt_env(args))
    if error:
        return None, error
    value = None
    if os.path.exists(times_file):
        try:
            with open(times_file) as handle:
                times = json.load(handle)
            value = median_from_times(times)
            if minimums is not None:
                minimums.append(median_from_times(times, min))
        except ValueError:
            value = None
    if value is None:
        value = median_from_summary(result.stdout)
    if value is None:
        return None, "no latency in --exportTimes JSON or in the performance summary"
    return value, None


def measure_peak(args):
    """Single-core vpdpbusd peak in GOPS (best ISA, thread CPU time) from the kernel benchmark."""
    if args.peak_gops:
        return args.peak_gops, "given"
    if not os.path.exists(args.kernel_bench):
        return None, f"{args.kernel_bench} not built"
    result, error = run_command([args.kernel_bench, "--benchmark_filter=^peak/vpdpbusd_zmm$",
                                 "--benchmark_format=json"], 300)
    if error:
        return None, error
    try:
        context = json.loads(result.stdout)["context"]
        return float(context["measured_peak_gops_per_core"]), context.get("isa", "?")
    except (ValueError, KeyError) as problem:
        return None, f"unreadable kernel benchmark output ({problem})"


# ----- table --------------------------------------------------------------------------------------

def fmt_ms(value):
    if value is None:
        return "n/a"
    return f"{value:.3f}" if value < 10 else f"{value:.2f}"


def fmt_ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0:
        return "n/a"
    return f"{numerator / denominator:.2f}x"


def ort_fp32_ms(row, by_key):
    """ORT's median on the FP32 original at the row's threads and batch (its FP32 row's ORT run)."""
    fp32 = by_key.get((row["model"], "fp32", row["threads"], row["batch"]))
    return fp32["ort_ms"] if fp32 else None


def coverage_bar(row, by_key):
    """(met: True / False / None when a figure is missing, the table cell) of the coverage bars:
    QDQ rows >= 2x ORT on the FP32 original and >= 1.5x ORT on the same file, FP32 rows >= 1x ORT."""
    if row["variant"] in QUANTIZED_VARIANTS:
        bars = [("ORT FP32", ort_fp32_ms(row, by_key), QDQ_BAR_FP32), ("ORT same file", row["ort_ms"], QDQ_BAR_SAME)]
    else:
        bars = [("ORT FP32", row["ort_ms"], FP32_BAR)]
    misses, unknown = [], False
    for label, ort_ms, bar in bars:
        if ort_ms is None or row["qdqrt_ms"] is None or row["qdqrt_ms"] <= 0:
            unknown = True
        elif ort_ms / row["qdqrt_ms"] < bar:
            misses.append(f"{label} {ort_ms / row['qdqrt_ms']:.2f}x < {bar:g}x")
    if misses:
        return False, "not met: " + ", ".join(misses)
    return (None, "n/a") if unknown else (True, "met")


def print_table(rows, peak, out, bars=False):
    """`bars`: the coverage table, with the bar column (coverage_bar) and without the batch."""
    header = ["model", "variant", "threads", "batch", "qdqrt ms", "ORT ms", "ORT/qdqrt",
              "ORT FP32/qdqrt", "qdqrt GOPS", "% VNNI peak", "load"]
    if bars:
        header[header.index("batch")] = "ref layers"
        header.insert(header.index("load"), "bar")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    by_key = {(r["model"], r["variant"], r["threads"], r["batch"]): r for r in rows}
    for row in rows:
        gops = pct = "-"
        if row["qdqrt_ms"] is not None:
            value = 2.0 * row["macs_per_image"] * row["batch"] / (row["qdqrt_ms"] * 1e-3) * 1e-9
            gops = f"{value:.0f}"
            row_peak = row.get("peak_gops_per_core") or peak
            if row_peak and row["variant"] in QUANTIZED_VARIANTS:
                pct = f"{100.0 * value / (row['threads'] * row_peak):.1f}%"
        against_fp32 = "-"
        if row["variant"] in QUANTIZED_VARIANTS:
            against_fp32 = fmt_ratio(ort_fp32_ms(row, by_key), row["qdqrt_ms"])
        cells = [row["model"], row["variant"].upper(), str(row["threads"]), str(row["batch"]),
                 fmt_ms(row["qdqrt_ms"]), fmt_ms(row["ort_ms"]), fmt_ratio(row["ort_ms"], row["qdqrt_ms"]),
                 against_fp32, gops, pct, f"{row['load']:.1f}"]
        if bars:
            reference = row.get("reference_layers")
            cells[3] = "n/a" if reference is None else str(reference)
            cells.insert(len(cells) - 1, coverage_bar(row, by_key)[1])
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines), file=out)
    errors = [(r, side) for r in rows for side in ("qdqrt", "ort") if r[f"{side}_error"]]
    if errors:
        print("\nFailed runs:", file=out)
        seen = set()
        for row, side in errors:
            message = row[f"{side}_error"]
            label = f"{row['model']} {row['variant']} t{row['threads']} b{row['batch']}"
            # Identical errors (e.g. a missing command) are listed once.
            if (side, message) in seen:
                continue
            seen.add((side, message))
            print(f"- {side} ({label}): {message}", file=out)


def range_flags(spec, input_name="input"):
    """The exec flags of a DYNAMIC_MODELS entry's profile."""
    return [f"--minShapes={input_name}:{spec['min']}", f"--optShapes={input_name}:{spec['opt']}",
            f"--maxShapes={input_name}:{spec['max']}"]


def median_or_none(values):
    values = [value for value in values if value is not None]
    return median(values) if values else None


def save_range_engine(args, model, spec, workdir):
    """(the engine file, error): the model's range engine for `spec`'s profile, saved once."""
    engine_file = os.path.join(workdir, os.path.basename(model) + ".range.qdqrt")
    _, error = run_command([args.qdqrt, "exec", f"--onnx={model}", *range_flags(spec), f"--saveEngine={engine_file}",
                            "--iterations=1", "--warmUp=0", "--duration=0"], args.timeout)
    return engine_file, error


def run_dynamic(args, cache, names, threads_list):
    """The --dynamic table's rows: per model, shape and threads the medians over the rounds."""
    models = export_dynamic(args.root, cache, names)
    rows = []
    with tempfile.TemporaryDirectory(prefix="qdqrt_bench_") as workdir:
        for name in names:
            spec = DYNAMIC_MODELS[name]
            engine_file, save_error = save_range_engine(args, models[name]["qdq"], spec, workdir)
            for shape in spec["shapes"]:
                for threads in threads_list:
                    shape_flag = f"input:{shape}"
                    times = {"dynamic": [], "fixed": [], "ort_qdq": [], "ort_fp32": []}
                    fastest = {"dynamic": [], "fixed": []}  # each run's fastest iteration
                    errors = {}
                    load = load_average()
                    for round_index in range(args.rounds):
                        order = ("dynamic", "fixed") if round_index % 2 == 0 else ("fixed", "dynamic")
                        log(f"{name} {shape} threads={threads} round {round_index + 1}/{args.rounds} "
                            f"(load {load_average():.1f}) ...")
                        for kind in order:
                            if kind == "dynamic" and save_error:
                                value, error = None, f"--saveEngine: {save_error}"
                            else:
                                source = [f"--loadEngine={engine_file}"] if kind == "dynamic" else None
                                value, error = run_qdqrt(args, models[name]["qdq"], shape_flag, threads, workdir,
                                                         source, fastest[kind])
                            times[kind].append(value)
                            if error:
                                errors[kind] = error
                        for variant in ("qdq", "fp32"):
                            value, _, error = run_ort(args, models[name][variant], shape_flag, threads)
                            times[f"ort_{variant}"].append(value)
                            if error:
                                errors[f"ort_{variant}"] = error
                        log("  " + "; ".join(f"{kind} {fmt_ms(values[-1])}" for kind, values in times.items()))
                    row = {"model": name, "shape": shape, "threads": threads, "rounds": args.rounds,
                           "load": (load + load_average()) / 2, "errors": errors, "times": times}
                    row.update({f"{kind}_ms": median_or_none(values) for kind, values in times.items()})
                    # Under load a run's fastest iteration is the least disturbed one: its ratio too.
                    row.update({f"{kind}_min_ms": min((v for v in values if v is not None), default=None)
                                for kind, values in fastest.items()})
                    rows.append(row)
    return rows


def print_dynamic_table(rows, out):
    header = ["model", "shape", "threads", "dynamic ms", "fixed ms", "dynamic/fixed", "dynamic/fixed (min)",
              "ORT QDQ ms", "ORT FP32 ms", "ORT FP32/dynamic", "load"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        cells = [row["model"], row["shape"], str(row["threads"]), fmt_ms(row["dynamic_ms"]), fmt_ms(row["fixed_ms"]),
                 fmt_ratio(row["dynamic_ms"], row["fixed_ms"]), fmt_ratio(row["dynamic_min_ms"], row["fixed_min_ms"]),
                 fmt_ms(row["ort_qdq_ms"]), fmt_ms(row["ort_fp32_ms"]),
                 fmt_ratio(row["ort_fp32_ms"], row["dynamic_ms"]), f"{row['load']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines), file=out)
    failed = [(row, kind, error) for row in rows for kind, error in row["errors"].items()]
    if failed:
        print("\nFailed runs:", file=out)
        for row, kind, error in failed:
            print(f"- {kind} ({row['model']} {row['shape']} t{row['threads']}): {error}", file=out)


# ----- --coverage ---------------------------------------------------------------------------------

def coverage_models(root):
    """{model: the files it is exported as} of models/export_coverage.py, in its order (its --list:
    `name ci:SHAPE full:SHAPE variants:fp32,qdq[,ort_u8]`)."""
    exporter = os.path.join(root, "models", "export_coverage.py")
    result = subprocess.run([sys.executable, exporter, "--list"], check=True, capture_output=True, text=True)
    models = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if fields:
            listed = [field[len("variants:"):] for field in fields if field.startswith("variants:")]
            models[fields[0]] = tuple(listed[0].split(",")) if listed else ("fp32", "qdq")
    return models


def export_coverage(root, cache, names, timeout, variants_of):
    """({model: {variant: path}}, {model: error}): the full-size coverage models, exported once into
    `cache`, one exporter process per model (regenerated when the exporter changes). `variants_of`:
    model -> the files wanted (fp32 and qdq always; ort_u8 where the exporter writes it)."""
    exporter = os.path.join(root, "models", "export_coverage.py")
    sources = [exporter] + [os.path.join(root, "models", f) for f in ("fake_quant.py", "export_torchvision.py")]
    newest_source = max(os.path.getmtime(path) for path in sources)
    paths, errors = {}, {}
    for name in names:
        paths[name] = {variant: os.path.join(cache, f"{name}_{COVERAGE_TIER}_{variant}.onnx")
                       for variant in variants_of(name)}
        if all(os.path.exists(path) and os.path.getmtime(path) >= newest_source for path in paths[name].values()):
            continue
        log(f"exporting {name} ({COVERAGE_TIER}) into {cache} ...")
        started = time.monotonic()
        _, error = run_command([sys.executable, exporter, "--model", name, "--tier", COVERAGE_TIER,
                                "--out", cache], timeout)
        if error:
            errors[name] = f"export failed: {error}"
            log(f"  {errors[name]}")
        else:
            log(f"  {time.monotonic() - started:.0f} s")
    return paths, errors


def layer_kinds(layer_info):
    """{layer name: "type kernel"} and the reference-layer count of an --exportLayerInfo JSON."""
    kinds = {}
    for layer in layer_info.get("Layers", []):
        if isinstance(layer, dict) and "Name" in layer:
            kind = str(layer.get("LayerType", "?"))
            kernel = layer.get("QdqrtKernel") or layer.get("TacticName")
            kinds[layer["Name"]] = f"{kind} {kernel}" if kernel and kernel != kind else kind
    return kinds, layer_info.get("ReferenceLayers")


def summarize_profile(profile, kinds=None, top=PROFILE_TOP):
    """The `top` heaviest layers of an --exportProfile JSON ([{"count": N}, {"name", "timeMs",
    "averageMs", "medianMs", ...}, ...]): {"iterations", "total_ms", "layers": [{"name", "kind", "ms",
    "pct"}]}. ms = the layer's median per run (a loaded machine disturbs it least; else its average,
    else its total / count), pct = its share of the sum over all layers; None when the JSON holds no
    layer."""
    if not isinstance(profile, list):
        return None
    iterations = next((entry["count"] for entry in profile if isinstance(entry, dict) and "count" in entry), None)
    layers = []
    for entry in profile:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or entry["name"] == "Total":
            continue
        ms = next((entry[key] for key in ("medianMs", "averageMs") if isinstance(entry.get(key), (int, float))), None)
        if ms is None:
            if not isinstance(entry.get("timeMs"), (int, float)) or not iterations:
                continue
            ms = entry["timeMs"] / iterations
        layers.append({"name": entry["name"], "kind": (kinds or {}).get(entry["name"], "?"), "ms": ms})
    if not layers:
        return None
    total = sum(layer["ms"] for layer in layers)
    for layer in layers:
        layer["pct"] = 100.0 * layer["ms"] / total if total > 0 else 0.0
    layers.sort(key=lambda layer: layer["ms"], reverse=True)
    return {"iterations": iterations, "total_ms": total, "layers": layers[:top]}


def short_layer_name(name, width=60):
    """A fused layer's first node and how many more it holds ("/a/Conv (+2)"), cut to `width`."""
    parts = name.split(" + ")
    text = parts[0] + (f" (+{len(parts) - 1})" if len(parts) > 1 else "")
    return text if len(text) <= width else "..." + text[-(width - 3):]


def format_profile(summary):
    """One line: the heaviest layers as `pct% name [type kernel] ms` (median ms per run)."""
    return "; ".join(f"{layer['pct']:.0f}% {short_layer_name(layer['name'])} [{layer['kind']}] {layer['ms']:.3f} ms"
                     for layer in summary["layers"])


def profile_qdqrt(args, model, shape_flag, threads, workdir, layer_info_file):
    """(summary_profile's dict, error) of a short profiled run of `model` (not the timed run)."""
    profile_file = os.path.join(workdir, "profile.json")
    if os.path.exists(profile_file):
        os.remove(profile_file)
    command = [args.qdqrt, "exec", f"--onnx={model}", f"--threads={threads}", f"--shapes={shape_flag}",
               f"--warmUp={min(args.warmup, 200):g}", "--duration=0", f"--iterations={args.profile_iterations}",
               f"--exportProfile={profile_file}"]
    _, error = run_command(command, args.timeout, qdqrt_env(args))
    if error:
        return None, error
    kinds = {}
    try:
        with open(layer_info_file) as handle:
            kinds, _ = layer_kinds(json.load(handle))
    except (OSError, ValueError):
        pass  # the layer types are a help, the profile stands without them
    try:
        with open(profile_file) as handle:
            summary = summarize_profile(json.load(handle), kinds)
    except (OSError, ValueError) as problem:
        return None, f"unreadable --exportProfile JSON ({problem})"
    return (summary, None) if summary else (None, "no layer in the --exportProfile JSON")


def run_coverage(args, cache, names, threads_list):
    """The --coverage rows: per thread count (all models at the first before the next), model and
    variant, batch 1, qdqrt and ORT on the file; the runs alternate in order between rounds. Rows
    that miss a bar get a short profiled run (row["profile"])."""
    paths, export_errors = export_coverage(args.root, cache, names, args.timeout,
                                           lambda name: file_variants(args, name))
    deadline = time.monotonic() + args.time_limit * 60 if args.time_limit else None
    inputs, macs, rows = {}, {}, []
    with tempfile.TemporaryDirectory(prefix="qdqrt_bench_") as workdir:
        for threads in threads_list:
            for name in names:
                if deadline and time.monotonic() > deadline:
                    error = f"{NOT_RUN} --time-limit of {args.time_limit:g} min reached"
                    rows += [coverage_row(name, variant, threads, None, None, error)
                             for variant in file_variants(args, name)]
                    continue
                if name in export_errors:
                    rows += [coverage_row(name, variant, threads, None, None, export_errors[name])
                             for variant in file_variants(args, name)]
                    continue
                try:
                    for variant in file_variants(args, name):
                        if (name, variant) not in inputs:
                            input_name, dims = model_input(paths[name][variant])
                            inputs[name, variant] = f"{input_name}:" + "x".join(map(str, [1, *dims]))
                            macs[name, variant] = count_macs(paths[name][variant], args.qdqrt)
                except (ValueError, OSError, subprocess.CalledProcessError) as problem:
                    rows += [coverage_row(name, variant, threads, None, None, f"unreadable model: {problem}")
                             for variant in file_variants(args, name)]
                    continue
                rows += coverage_group(args, workdir, name, paths[name], threads, inputs, macs)
    order = {name: index for index, name in enumerate(names)}
    rows.sort(key=lambda row: (order[row["model"]], variant_order(row["variant"]), row["threads"]))
    return rows


def file_variants(args, name):
    """The files of a coverage model that --coverage times: FP32 and QDQ, and with --ort-u8 ONNX
    Runtime quantize_static's u8 layout where the exporter writes it."""
    return ("fp32", "qdq") + (("ort_u8",) if args.ort_u8 and "ort_u8" in args.coverage_variants[name] else ())


def variant_order(variant):
    """Rows of one model: FP32, QDQ, QDQ+BF16, then ONNX Runtime's layouts."""
    order = ("fp32", "qdq", BF16_VARIANT, "ort_s8", "ort_u8")
    return order.index(variant) if variant in order else len(order)


def coverage_row(name, variant, threads, shape_flag, macs, error=None):
    return {"model": name, "variant": variant, "threads": threads, "batch": 1, "input": shape_flag,
            "macs_per_image": macs, "qdqrt_ms": None, "qdqrt_error": error, "ort_ms": None, "ort_error": error,
            "qdqrt_runs": [], "ort_runs": [], "peak_runs": [], "reference_layers": None, "profile": None,
            "profile_error": None, "load": load_average()}


def coverage_group(args, workdir, name, files, threads, inputs, macs):
    """One model's rows at `threads` (FP32, QDQ, with --bf16 QDQ+BF16, with --ort-u8 ORT_U8):
    args.rounds rounds of qdqrt and ORT on each file, in an order that flips every round; medians
    over the rounds."""
    variants = file_variants(args, name) + ((BF16_VARIANT,) if args.bf16 else ())
    source = {variant: "qdq" if variant == BF16_VARIANT else variant for variant in variants}
    rows = {variant: coverage_row(name, variant, threads, inputs[name, source[variant]], macs[name, source[variant]])
            for variant in variants}
    layer_info = {variant: os.path.join(workdir, f"{name}_{variant}_t{threads}.layers.json") for variant in rows}
    runs = [(side, variant) for variant in variants for side in ("qdqrt", "ort")
            if not (variant == BF16_VARIANT and side == "ort")]
    load = load_average()
    for round_index in range(args.rounds):
        log(f"{name} threads={threads} round {round_index + 1}/{args.rounds} (load {load_average():.1f}) ...")
        flip = (round_index + threads) % 2 == 1
        for side, variant in (reversed(runs) if flip else runs):
            row = rows[variant]
            if side == "qdqrt":
                value, error = run_qdqrt(args, files[source[variant]], row["input"], threads, workdir,
                                         extra_flags=[f"--exportLayerInfo={layer_info[variant]}",
                                                      *(["--bf16"] if variant == BF16_VARIANT else [])])
                if variant in QUANTIZED_VARIANTS and not args.peak_gops and value is not None:
                    # The % of the peak against a peak measured right after the run (the standard
                    # table does the same): the guest's speed drifts within minutes.
                    row_peak, _ = measure_peak(args)
                    if row_peak:
                        row["peak_runs"].append(row_peak)
            else:
                value, _, error = run_ort(args, files[variant], row["input"], threads)
            row[f"{side}_runs"].append(value)
            if error:
                row[f"{side}_error"] = error
            log(f"  {side} {variant.upper()} {error or fmt_ms(value) + ' ms'}")
    load = (load + load_average()) / 2
    if BF16_VARIANT in rows:
        rows[BF16_VARIANT]["ort_runs"] = list(rows["qdq"]["ort_runs"])
        rows[BF16_VARIANT]["ort_error"] = rows["qdq"]["ort_error"]
    by_key = {}
    for variant, row in rows.items():
        row["qdqrt_ms"] = median_or_none(row["qdqrt_runs"])
        row["ort_ms"] = median_or_none(row["ort_runs"])
        if row.get("peak_runs"):
            row["peak_gops_per_core"] = median_or_none(row["peak_runs"])
        row["load"] = load
        try:
            with open(layer_info[variant]) as handle:
                row["reference_layers"] = layer_kinds(json.load(handle))[1]
        except (OSError, ValueError):
            pass
        by_key[name, variant, threads, 1] = row
    for variant, row in rows.items():
        if variant != BF16_VARIANT and coverage_bar(row, by_key)[0] is False:
            log(f"  {variant.upper()} misses a bar: profiling ...")
            row["profile"], row["profile_error"] = profile_qdqrt(args, files[variant], row["input"], threads,
                                                                 workdir, layer_info[variant])
    return list(rows.values())


def print_profiles(rows, out):
    """Under the coverage table: for every row that misses a bar, qdqrt's heaviest layers."""
    by_key = {(r["model"], r["variant"], r["threads"], r["batch"]): r for r in rows}
    missed = [row for row in rows if coverage_bar(row, by_key)[0] is False]
    if not missed:
        return
    print(f"\nWhere the time goes in the rows that miss a bar (qdqrt exec --exportProfile, a separate short "
          f"run; the {PROFILE_TOP} heaviest layers: % of the engine's time, the layer's first node (+ nodes fused "
          f"into it) [layer type and kernel], median ms per run):", file=out)
    for row in missed:
        label = f"{row['model']} {row['variant'].upper()} t{row['threads']}"
        reference = row.get("reference_layers")
        prefix = f"{reference} reference layer(s); " if reference else ""
        if row.get("profile"):
            text = prefix + f"{row['profile']['total_ms']:.2f} ms in layers: " + format_profile(row["profile"])
        else:
            text = prefix + f"no profile ({row.get('profile_error') or 'not run'})"
        print(f"- {label} ({coverage_bar(row, by_key)[1][len('not met: '):]}): {text}", file=out)


def load_coverage_rows(path):
    """(rows, error) of an earlier --coverage --json file."""
    try:
        with open(path) as handle:
            rows = json.load(handle)["rows"]
    except (OSError, ValueError, KeyError, TypeError) as problem:
        return None, f"{path}: not a --coverage --json file ({problem!r})"
    keys = ("model", "variant", "threads", "batch", "qdqrt_ms", "ort_ms", "qdqrt_error", "ort_error", "load")
    if not isinstance(rows, list) or not all(isinstance(row, dict) and all(k in row for k in keys) for row in rows):
        return None, f"{path}: not a --coverage --json file (rows need {', '.join(keys)})"
    return rows, None


def merge_coverage(previous, rows, names):
    """An earlier run's rows, each replaced by the row of the same model, file and threads run now
    (a row not run now for the --time-limit keeps the earlier one)."""
    def key(row):
        return row["model"], row["variant"], row["threads"], row["batch"]
    new = {key(row): row for row in rows if not (row["qdqrt_error"] or "").startswith(NOT_RUN)}
    merged = [row for row in previous if key(row) not in new] + list(new.values())
    merged += [row for row in rows if key(row) not in new and key(row) not in {key(old) for old in previous}]
    order = {name: index for index, name in enumerate(names)}
    merged.sort(key=lambda row: (order.get(row["model"], len(order)), row["model"], variant_order(row["variant"]),
                                 row["threads"]))
    return merged


def git_commit(root):
    result, error = run_command(["git", "-C", root, "rev-parse", "--short", "HEAD"], 30)
    return result.stdout.strip() if not error else "unknown"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def parse_list(text, kind=str):
    return [kind(item) for item in text.split(",") if item]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", help="repository root (required)")
    parser.add_argument("--build", help="build directory: qdqrt, kernel benchmark (required)")
    parser.add_argument("--cache", help="where torchvision exports are kept (default BUILD/bench_models)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: batch 1, 2 threads, models " + ",".join(QUICK_MODELS) + ", 1 s per run")
    parser.add_argument("--models", help="comma-separated subset (default: all)")
    parser.add_argument("--variants", default="fp32,qdq",
                        help="comma-separated: fp32, qdq (pytorch-quantization style), ort_s8, ort_u8 (ONNX Runtime "
                             "quantize_static style; torchvision models only)")
    parser.add_argument("--threads", help="comma-separated thread counts (default 1,2)")
    parser.add_argument("--batches", help="comma-separated batch sizes (default 1,8; 32 for the large-batch rows)")
    parser.add_argument("--isa", choices=["scalar", "avx2", "avxvnni", "avx512vnni", "amxint8"],
                        help="cap qdqrt's kernels at this ISA (QDQRT_MAX_ISA); default: the best the CPU has")
    parser.add_argument("--warmup", type=float, help="warm-up per run in ms (default 500; --coverage 200)")
    parser.add_argument("--duration", type=float, help="minimum timed seconds per run (default 3; --coverage 1)")
    parser.add_argument("--iterations", type=int, default=10, help="minimum timed iterations per run")
    parser.add_argument("--timeout", type=float, help=f"seconds before one qdqrt or ORT run counts as failed "
                                                      f"(default {RUN_TIMEOUT_S}; --coverage 600)")
    parser.add_argument("--peak-gops", type=float, help="single-core peak GOPS (skips measuring it)")
    parser.add_argument("--qdqrt", help="qdqrt binary (default BUILD/qdqrt)")
    parser.add_argument("--node", default="node")
    parser.add_argument("--json", help="also write every row as JSON to this file")
    parser.add_argument("--strict", action="store_true",
                        help=f"exit 1 if any run failed ({EXIT_SKIPPED} if qdqrt's exec or an engine part has not landed yet)")
    parser.add_argument("--dynamic", action="store_true",
                        help="the models with symbolic sizes: one range engine per model against engines built for "
                             "each shape and ORT (models " + ",".join(DYNAMIC_MODELS) + ")")
    parser.add_argument("--rounds", type=int, help="--dynamic, --coverage: alternated rounds per row, the table "
                                                   "gives medians (default 3; --coverage 1)")
    parser.add_argument("--bf16", action="store_true",
                        help="--coverage: also a QDQ+BF16 row per model, qdqrt exec --bf16 on the QDQ file (its "
                             "float MatMul/Gemm layers in bf16) against ORT on that file; the standard rows stay")
    parser.add_argument("--ort-u8", action="store_true",
                        help="--coverage: also an ORT_U8 row for each model the exporter writes in ONNX Runtime "
                             "quantize_static's u8 layout, held to the QDQ bars (ORT on that file and on the "
                             "FP32 original)")
    parser.add_argument("--coverage", action="store_true",
                        help="models/export_coverage.py's models at their full size, batch 1: FP32 and QDQ rows "
                             "against ORT on the same file and on the FP32 original, the bars they meet, and the "
                             "per-layer profile of each row that misses one")
    parser.add_argument("--time-limit", type=float,
                        help="--coverage: minutes after which no further model starts (its rows say so)")
    parser.add_argument("--profile-iterations", type=int, default=20,
                        help="--coverage: iterations of the profiled run of a row that misses a bar")
    parser.add_argument("--merge", metavar="JSON",
                        help="--coverage: an earlier run's --json file; each row run now replaces its row of the "
                             "same model, file and threads, the others (and those --time-limit left out) are kept")
    parser.add_argument("--selftest", action="store_true", help="check the parsers and the MAC counter, then exit")
    args = parser.parse_args()
    if args.selftest:
        return selftest(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    if not args.root or not args.build:
        parser.error("--root and --build are required")

    args.qdqrt = args.qdqrt or os.path.join(args.build, "qdqrt")
    args.kernel_bench = os.path.join(args.build, "bench", "kernels", "qdqrt_bench_kernels")
    args.ort_runner = os.path.join(args.root, "tools", "ort", "bench_ort.js")
    cache = args.cache or os.path.join(args.build, "bench_models")
    os.makedirs(cache, exist_ok=True)
    threads_list = parse_list(args.threads or ("2" if args.quick else "1,2"), int)
    batches = parse_list(args.batches or ("1" if args.quick else "1,8"), int)
    short = args.quick or args.coverage
    args.warmup = args.warmup if args.warmup is not None else (200 if short else 500)
    args.duration = args.duration if args.duration is not None else (1 if short else 3)
    args.timeout = args.timeout or (600 if args.coverage else RUN_TIMEOUT_S)
    args.rounds = args.rounds or (1 if args.coverage else 3)
    variants = parse_list(args.variants)
    if any(v not in VARIANTS for v in variants):
        parser.error(f"--variants: choose from {','.join(VARIANTS)}")

    if args.coverage:
        return main_coverage(args, parser, cache, threads_list)
    if args.dynamic:
        wanted = parse_list(args.models) if args.models else list(DYNAMIC_MODELS)
        unknown = [name for name in wanted if name not in DYNAMIC_MODELS]
        if unknown:
            parser.error(f"--dynamic --models: unknown {','.join(unknown)} (available: {','.join(DYNAMIC_MODELS)})")
        load_start = os.getloadavg()
        started = datetime.datetime.now(datetime.timezone.utc)
        rows = run_dynamic(args, cache, wanted, parse_list(args.threads or "1,2", int))
        load_end = os.getloadavg()
        print(f"qdqrt range engines, {started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs; "
              f"load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end")
        print(f"batch 1; per row the median over {args.rounds} alternated rounds of each run's median "
              f"(>= {args.iterations} runs and >= {args.duration:g} s after {args.warmup:g} ms warm-up), "
              f"(min): the fastest iteration over the rounds; "
              f"dynamic: one engine file for the model's range (--saveEngine) run at the shape (--loadEngine "
              f"--shapes), fixed: an engine built for the shape; "
              f"ORT = onnxruntime-node, intra-op threads = qdqrt threads")
        print()
        print_dynamic_table(rows, sys.stdout)
        if args.json:
            with open(args.json, "w") as handle:
                json.dump({"date": started.isoformat(), "load_start": load_start, "load_end": load_end,
                           "rows": rows}, handle, indent=1)
        return 1 if args.strict and any(row["errors"] for row in rows) else 0

    local = local_models(args.root)
    available = list(local) + list(TORCHVISION_MODELS) + list(ENCODER_MODELS)
    wanted = parse_list(args.models) if args.models else (list(QUICK_MODELS) if args.quick else available)
    unknown = [name for name in wanted if name not in available]
    if unknown:
        parser.error(f"--models: unknown {','.join(unknown)} (available: {','.join(available)})")
    models = {name: local[name] for name in wanted if name in local}
    models.update(export_torchvision(args.root, cache, [n for n in wanted if n in TORCHVISION_MODELS], variants))
    if any(name in ENCODER_MODELS for name in wanted):
        models.update(export_encoder(args.root, cache))

    peak, peak_source = measure_peak(args)
    if peak is None:
        log(f"VNNI peak unavailable: {peak_source}")

    load_start = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    rows = []
    with tempfile.TemporaryDirectory(prefix="qdqrt_bench_") as workdir:
        for name in wanted:
            for variant in variants:
                path = models[name].get(variant)
                if path is None:
                    continue
                input_name, image_dims = model_input(path)
                macs = count_macs(path, args.qdqrt)
                for threads in threads_list:
                    for batch in batches:
                        shape_flag = f"{input_name}:" + "x".join(str(d) for d in [batch, *image_dims])
                        log(f"{name} {variant} threads={threads} batch={batch} (load {load_average():.1f}) ...")
                        load = load_average()
                        ort_ms, ort_stats, ort_error = run_ort(args, path, shape_flag, threads)
                        qdqrt_ms, qdqrt_error = run_qdqrt(args, path, shape_flag, threads, workdir)
                        log(f"  ORT {ort_error or fmt_ms(ort_ms) + ' ms'}; qdqrt {qdqrt_error or fmt_ms(qdqrt_ms) + ' ms'}")
                        row = {"model": name, "variant": variant, "threads": threads, "batch": batch,
                               "input": shape_flag, "macs_per_image": macs,
                               "ort_ms": ort_ms, "ort_error": ort_error, "ort_stats": ort_stats,
                               "qdqrt_ms": qdqrt_ms, "qdqrt_error": qdqrt_error,
                               "load": (load + load_average()) / 2}
                        if peak and variant in QUANTIZED_VARIANTS and not args.peak_gops:
                            # The guest's speed drifts by several percent within minutes: the
                            # row's % of the peak is against a peak measured right after it.
                            row_peak, _ = measure_peak(args)
                            if row_peak:
                                row["peak_gops_per_core"] = row_peak
                        rows.append(row)
    load_end = os.getloadavg()

    print(f"qdqrt whole-model benchmark, {started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs; "
          f"load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end")
    print(f"median of >= {args.iterations} runs and >= {args.duration:g} s after {args.warmup:g} ms warm-up; "
          f"ORT = onnxruntime-node, intra-op threads = qdqrt threads")
    if peak:
        row_peaks = [row["peak_gops_per_core"] for row in rows if row.get("peak_gops_per_core")]
        measured = (f"; re-measured after each quantized row: {min(row_peaks):.0f}-{max(row_peaks):.0f}"
                    if row_peaks else "")
        print(f"VNNI peak: {peak:.0f} GOPS per core at the start ({peak_source}, vpdpbusd{measured}); "
              f"% VNNI peak = qdqrt GOPS / (threads x the row's peak), QDQ rows only")
    print()
    print_table(rows, peak, sys.stdout)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"date": started.isoformat(), "peak_gops_per_core": peak, "load_start": load_start,
                       "load_end": load_end, "rows": rows}, handle, indent=1)
    failed = any(r["ort_error"] or r["qdqrt_error"] for r in rows)
    if failed and args.strict:
        qdqrt_errors = [r["qdqrt_error"] for r in rows if r["qdqrt_error"]]
        if not any(r["ort_error"] for r in rows) and all(map(not_landed_yet, qdqrt_errors)):
            log("qdqrt's exec command or an engine part has not landed yet: reporting the run as skipped")
            return EXIT_SKIPPED
        return 1
    return 0


def main_coverage(args, parser, cache, threads_list):
    args.coverage_variants = coverage_models(args.root)
    available = list(args.coverage_variants)
    wanted = parse_list(args.models) if args.models else available
    unknown = [name for name in wanted if name not in available]
    if unknown:
        parser.error(f"--coverage --models: unknown {','.join(unknown)} (available: {','.join(available)})")
    previous = None
    if args.merge:
        previous, error = load_coverage_rows(args.merge)
        if error:
            parser.error(f"--merge: {error}")
    peak, peak_source = measure_peak(args)
    if peak is None:
        log(f"VNNI peak unavailable: {peak_source}")
    load_start = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    rows = run_coverage(args, os.path.join(cache, f"coverage_{COVERAGE_TIER}"), wanted, threads_list)
    load_end = os.getloadavg()
    minutes = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds() / 60
    if args.merge:
        rows = merge_coverage(previous, rows, available)
    print(f"qdqrt coverage models ({COVERAGE_TIER} size, batch 1), commit {git_commit(args.root)}, {cpu_name()}, "
          f"{os.cpu_count()} CPUs, {started:%Y-%m-%d %H:%M} UTC, {minutes:.0f} min; load average "
          f"{load_start[0]:.1f} at start, {load_end[0]:.1f} at end" +
          (f" (rows of models not run now: {args.merge})" if args.merge else ""))
    print(f"per run the median of >= {args.iterations} runs and >= {args.duration:g} s after {args.warmup:g} ms "
          f"warm-up, the median over {args.rounds} round(s) alternating qdqrt and ORT; ORT = onnxruntime-node, "
          f"intra-op threads = qdqrt threads; ref layers: layers on qdqrt's reference executor")
    print(f"bars: QDQ{' and ORT_U8' if args.ort_u8 else ''} >= {QDQ_BAR_FP32:g}x ORT on the FP32 original and "
          f">= {QDQ_BAR_SAME:g}x ORT on the same file; "
          f"FP32 >= {FP32_BAR:g}x ORT")
    if peak:
        row_peaks = [row["peak_gops_per_core"] for row in rows if row.get("peak_gops_per_core")]
        measured = (f"; re-measured after each quantized run, the median of a row's runs: "
                    f"{min(row_peaks):.0f}-{max(row_peaks):.0f}" if row_peaks else "")
        print(f"VNNI peak: {peak:.0f} GOPS per core at the start ({peak_source}, vpdpbusd{measured}); "
              f"% VNNI peak = qdqrt GOPS / (threads x the row's peak), QDQ rows only")
    print()
    print_table(rows, peak, sys.stdout, bars=True)
    print_profiles(rows, sys.stdout)
    by_key = {(r["model"], r["variant"], r["threads"], r["batch"]): r for r in rows}
    met = [coverage_bar(row, by_key)[0] for row in rows]
    print(f"\n{met.count(True)} of {len(rows)} rows meet their bar, {met.count(False)} miss it, "
          f"{met.count(None)} n/a")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"date": started.isoformat(), "commit": git_commit(args.root), "cpu": cpu_name(),
                       "peak_gops_per_core": peak, "load_start": load_start, "load_end": load_end,
                       "minutes": minutes, "rows": rows}, handle, indent=1)
    return 1 if args.strict and any(r["ort_error"] or r["qdqrt_error"] for r in rows) else 0


def not_landed_yet(error):
    """A qdqrt failure that only means work in progress: no `exec` command, or an engine part that
    reports itself as missing ("unsupported: ... yet", the convention of tests/tools_exec)."""
    return "unknown command 'exec'" in error or re.search(r"unsupported: .*\byet\b", error) is not None


def selftest(root):
    """Checks the result parsers on trtexec-shaped data and the MAC counter on the shipped model."""
    profile = [{"count": 4}, {"name": "q", "timeMs": 0.4, "averageMs": 0.1, "medianMs": 0.1},
               {"name": "c + r + q2", "timeMs": 8.0, "averageMs": 2.0, "medianMs": 1.5},
               "junk", {"name": "Total", "timeMs": 20.0, "averageMs": 5.0, "medianMs": 4.0},
               {"name": "ref", "timeMs": 12.0, "averageMs": 3.0, "medianMs": 2.4}]
    layer_info = {"Layers": [{"Name": "c + r + q2", "LayerType": "qconv", "QdqrtKernel": "igemm"},
                             {"Name": "ref", "LayerType": "reference", "TacticName": "reference"}, {"x": 1}],
                  "ReferenceLayers": 1}
    kinds, reference_count = layer_kinds(layer_info)
    summary = summarize_profile(profile, kinds, top=2)

    def pct_cell(row_peak, bars=False):
        """The % VNNI peak cell of a QDQ row at 1000 GOPS in a table whose run started at 2000."""
        row = {"model": "m", "variant": "qdq", "threads": 1, "batch": 1, "qdqrt_ms": 1.0, "ort_ms": 2.0,
               "macs_per_image": 5e8, "load": 0.5, "qdqrt_error": None, "ort_error": None}
        if row_peak:
            row["peak_gops_per_core"] = row_peak
        out = io.StringIO()
        print_table([row], 2000.0, out, bars=bars)
        return out.getvalue().splitlines()[2].split("|")[10].strip()

    def bar_rows(fp32_qdqrt, fp32_ort, qdq_qdqrt, qdq_ort):
        fp32 = {"model": "m", "variant": "fp32", "threads": 1, "batch": 1, "qdqrt_ms": fp32_qdqrt, "ort_ms": fp32_ort}
        qdq = dict(fp32, variant="qdq", qdqrt_ms=qdq_qdqrt, ort_ms=qdq_ort)
        by_key = {("m", "fp32", 1, 1): fp32, ("m", "qdq", 1, 1): qdq}
        return [coverage_bar(fp32, by_key), coverage_bar(qdq, by_key)]

    checks = [
        (kinds, {"c + r + q2": "qconv igemm", "ref": "reference"}),
        (reference_count, 1),
        # medians, Total and non-layer entries left out, heaviest first, % of the sum of medians (4.0 ms)
        (summary, {"iterations": 4, "total_ms": 4.0,
                   "layers": [{"name": "ref", "kind": "reference", "ms": 2.4, "pct": 60.0},
                              {"name": "c + r + q2", "kind": "qconv igemm", "ms": 1.5, "pct": 37.5}]}),
        (format_profile(summary), "60% ref [reference] 2.400 ms; 38% c (+2) [qconv igemm] 1.500 ms"),
        # no medians or averages: total / count; a layer missing from the layer info shows "?"
        (summarize_profile([{"count": 2}, {"name": "a", "timeMs": 3.0}, {"name": "b", "timeMs": 1.0}])["layers"],
         [{"name": "a", "kind": "?", "ms": 1.5, "pct": 75.0}, {"name": "b", "kind": "?", "ms": 0.5, "pct": 25.0}]),
        (summarize_profile([{"count": 2}]), None),
        (summarize_profile({"name": "a"}), None),
        (short_layer_name("/a/Conv + /a/Relu + /b/QuantizeLinear"), "/a/Conv (+2)"),
        (short_layer_name("/" + "x" * 70, 20), "..." + "x" * 17),
        (bar_rows(10.0, 10.0, 2.0, 3.0), [(True, "met"), (True, "met")]),
        # rows run now replace the earlier ones of the same model, file and threads; rows left out by
        # --time-limit keep the earlier ones (or stand, when there are none); table order
        ([(r["model"], r["variant"], r["threads"], r["qdqrt_ms"]) for r in merge_coverage(
            [coverage_row("b", "qdq", 1, None, None), dict(coverage_row("a", "fp32", 1, None, None), qdqrt_ms=1.0),
             dict(coverage_row("a", "fp32", 2, None, None), qdqrt_ms=3.0), coverage_row("c", "fp32", 2, None, None)],
            [dict(coverage_row("a", "fp32", 1, None, None), qdqrt_ms=2.0),
             coverage_row("a", "fp32", 2, None, None, NOT_RUN + " limit"),
             coverage_row("d", "qdq", 2, None, None, NOT_RUN + " limit")], ["b", "a", "d"])],
         [("b", "qdq", 1, None), ("a", "fp32", 1, 2.0), ("a", "fp32", 2, 3.0), ("d", "qdq", 2, None),
          ("c", "fp32", 2, None)]),
        (load_coverage_rows(os.path.join(root, "models", "coverage_expectations.json"))[0], None),
        (load_coverage_rows(os.path.join(root, "no such file.json"))[0], None),
        (bar_rows(10.0, 9.0, 6.0, 8.0), [(False, "not met: ORT FP32 0.90x < 1x"),
                                         (False, "not met: ORT FP32 1.50x < 2x, ORT same file 1.33x < 1.5x")]),
        (bar_rows(10.0, None, 2.0, 4.0), [(None, "n/a"), (None, "n/a")]),
        (bar_rows(10.0, 10.0, None, 4.0)[1], (None, "n/a")),
        (bar_rows(10.0, 10.0, 2.0, None)[1], (None, "n/a")),  # one bar met, the other unknown
        (bar_rows(10.0, 10.0, 6.0, None)[1], (False, "not met: ORT FP32 1.67x < 2x")),

        (median_from_times([{"startHostMs": 0, "latencyMs": 3.0}, {"latencyMs": 1.0}, {"latencyMs": 2.0}]), 2.0),
        (median_from_times([{"latencyMs": 4.0}, {"latencyMs": 1.0}]), 2.5),
        (median_from_times([{"computeMs": 5.0}]), 5.0),  # no latencyMs: the compute time
        (median_from_times({"times": [{"latencyMs": 7.0}]}), 7.0),  # wrapped in an object
        (median_from_times([1.0, 9.0, 3.0]), 3.0),  # a bare list of numbers
        (median_from_times([]), None),
        (median_from_times([{"latencyMs": 4.0}, {"latencyMs": 1.0}, {"latencyMs": 2.0}], min), 1.0),
        (median_from_times({"latencyMs": "x"}), None),
        (median_from_summary("=== Performance summary ===\n"
                             "[I] Throughput: 800.5 qps\n"
                             "[I] Latency: min = 1.1 ms, max = 2.5 ms, mean = 1.3 ms, median = 1.25 ms, "
                             "percentile(90%) = 1.5 ms\n"), 1.25),
        (median_from_summary("Latency: min = 1 ms"), None),
        # Fashion-MNIST ResNet: stem 28*28*16*9, blocks of 3x3 convs at 16/32/64 channels, two 1x1
        # stride-2 downsamples, Linear 64->10 (models/README.md) = 9,345,920 MACs; QDQ the same.
        (count_macs(os.path.join(root, "models", "fmnist_resnet_fp32.onnx")), 9345920),
        (count_macs(os.path.join(root, "models", "fmnist_resnet_qdq.onnx")), 9345920),
        (model_input(os.path.join(root, "models", "fmnist_resnet_qdq.onnx")), ("input", [1, 28, 28])),
        (fmt_ratio(3.0, 1.5), "2.00x"),
        (range_flags(DYNAMIC_MODELS["bert"]), ["--minShapes=input:1x16x128", "--optShapes=input:1x128x128",
                                               "--maxShapes=input:1x384x128"]),
        # % VNNI peak against the peak measured after the row, the run's starting one without it
        (pct_cell(1250.0), "80.0%"), (pct_cell(1250.0, bars=True), "80.0%"), (pct_cell(None), "50.0%"),
        (median_or_none([3.0, None, 1.0, 2.0]), 2.0),
        (median_or_none([None]), None),
        (fmt_ratio(None, 1.5), "n/a"),
        (not_landed_yet("exit 2: qdqrt: error: unknown command 'exec' (commands: run, inspect)"), True),
        (not_landed_yet("exit 1: qdqrt exec: error: unsupported: --onnx: 'm.onnx': QConv 'c': "
                        "no engine layer runs QConv 'c' yet"), True),
        (not_landed_yet("exit 1: qdqrt exec: error: invalid model: 'm.onnx': bad"), False),
        (not_landed_yet("timed out after 1200 s"), False),
    ]
    failures = [(index, got, want) for index, (got, want) in enumerate(checks) if got != want]
    for index, got, want in failures:
        log(f"selftest check {index}: got {got!r}, want {want!r}")
    print(f"selftest: {len(checks) - len(failures)}/{len(checks)} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
