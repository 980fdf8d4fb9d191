#!/usr/bin/env python3
"""The device-machine measurement of qdqrt in one run (called by bench/device/run.sh; docs/bench.md,
"On the device machine"): the kernel bench's peaks and ResNet-50 convolution rows on the AMX-INT8
and the AVX-512 VNNI tiles, then whole models (FP32 and QDQ files, batch 1) at each thread count
with qdqrt (the default engine, and for QDQ files an engine capped at avx512vnni when the default
one runs AMX) beside ONNX Runtime's Python API on the same files, within a time budget. Writes
into --out, rewriting them after every run so that a killed run still leaves its figures:

    summary.md    the tables (also printed on stdout at the end)
    summary.json  every figure and setting behind them
    kernels.json  the kernel bench's JSON output of each invocation
    layers.json   per engine: ISA, CPU features and every layer's type and kernel (TacticName)

    python3 bench/device/device_bench.py --qdqrt Q --kernel-bench K --manifests DIR --models-dir DIR
        --out DIR [--threads 1,2,4,8,16] [--duration 1] [--warmup 200] [--iterations 10]
        [--budget S | --deadline EPOCH] [--ort required|skip] [--kernels full|quick|none] ...
    python3 bench/device/device_bench.py --selftest

Exit status: 0 when everything that was started ran, 1 when a run failed or ONNX Runtime is
missing under --ort=required (the figures of everything else are still written).
"""
import argparse
import collections
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import bench_models  # noqa: E402  (median_from_times, median_from_summary, short_error)

VNNI, AMX = "avx512vnni", "amxint8"
PREFERRED_ORDER = ("resnet50", "mobilenet_v2", "efficientnet_b0")  # the models of the issue, first
RESNET50_AMX_GOAL = 2.5  # the AMX path's speed-up over the VNNI path on ResNet-50 QDQ the project aims at
# Kernel bench filters. The VNNI invocation (--isa=avx512vnni) also gives the vpdpbusd and fp32 FMA
# peaks; the default one first only the AMX peak (its error row says why AMX is absent), then, where
# AMX runs, the same convolution rows on the AMX tiles.
CONV_ROWS = "conv_u8/resnet50/[^/]+/threads:1"
QUICK_CONV_ROWS = "conv_u8/resnet50/l1_3x3_64/threads:1"
PEAKS_VNNI = "peak/vpdpbusd_zmm|peak/vfmadd_zmm"
PEAKS_AMX = "peak/tdpbusd_amx|amxint8/conv_and_gemm"
RESERVE_S = 5.0  # kept at the end of the budget for the last summary
ORT_TIMEOUT_S, QDQRT_TIMEOUT_S, BUILD_TIMEOUT_S, KERNEL_TIMEOUT_S = 300, 300, 300, 180


def log(message, start=[None]):  # noqa: B006  (the first call's time, kept between calls)
    if start[0] is None:
        start[0] = time.monotonic()
    print(f"[{time.monotonic() - start[0]:7.1f} s] {message}", flush=True)


def parse_list(text, kind=str):
    return [kind(item) for item in text.split(",") if item.strip()]


def thread_order(threads):
    """The fewest and the most threads first (the scaling figure), then the rest ascending, so that
    a budget cut leaves the rows that matter most."""
    ordered = sorted(set(threads))
    first = [ordered[0]] + ([ordered[-1]] if len(ordered) > 1 else [])
    return first + [t for t in ordered if t not in first]


def isa_of_kernel(name):
    """The ISA suffix of a kernel name (`qu8-qc8w-gemm-6x64c4-fp32-avx512vnni` -> avx512vnni)."""
    if not name:
        return "?"
    tail = name.split()[0].rsplit("-", 1)[-1]
    return tail if re.fullmatch(r"[a-z0-9_]+", tail) else "?"


# ----- subprocesses -----------------------------------------------------------------------------------

class Budget:
    def __init__(self, deadline):
        self.deadline = deadline

    def left(self):
        return self.deadline - time.time()

    def allows(self, estimate_s):
        return self.left() - RESERVE_S >= estimate_s

    def timeout(self, cap):
        return max(1.0, min(cap, self.left() - 1.0))


def run_process(command, timeout, env=None):
    """(CompletedProcess or None, error or None, seconds)."""
    start = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s", time.monotonic() - start
    except OSError as error:
        return None, str(error), time.monotonic() - start
    seconds = time.monotonic() - start
    if result.returncode != 0:
        code = result.returncode
        what = f"killed by signal {-code}" if code < 0 else f"exit {code}"
        return result, f"{what}: {bench_models.short_error(result.stderr + result.stdout)}", seconds
    return result, None, seconds


LIB_DIR = [None]  # --lib-dir: the packed binaries' libraries, for their processes only


def qdqrt_env(isa_cap, amx_emulation):
    env = dict(os.environ)
    if LIB_DIR[0]:
        env["LD_LIBRARY_PATH"] = LIB_DIR[0] + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.pop("QDQRT_MAX_ISA", None)
    env.pop("QDQRT_AMX_EMULATION", None)
    if isa_cap:
        env["QDQRT_MAX_ISA"] = isa_cap
    if amx_emulation:
        env["QDQRT_AMX_EMULATION"] = "1"
    return env


# ----- the kernel bench -------------------------------------------------------------------------------

def kernel_filters(mode):
    conv = {"full": CONV_ROWS, "quick": QUICK_CONV_ROWS}[mode]
    return {"vnni": f"^({PEAKS_VNNI}|{conv})", "amx_peaks": f"^({PEAKS_AMX})$", "amx": f"^({conv})"}


def run_kernel_bench(args, budget, state, save):
    if args.kernels == "none":
        return
    filters = kernel_filters(args.kernels)
    steps = [("vnni", [f"--isa={VNNI}"]), ("amx_peaks", []), ("amx", [])]
    for key, extra in steps:
        if key == "amx" and not amx_in_kernel_bench(state["kernels"].get("amx_peaks")):
            state["notes"].append("kernel bench: no AMX conv rows (the AMX peak row says why)")
            continue
        if not budget.allows(30):
            state["not_run"].append(f"kernel bench {key}: time budget")
            continue
        out_file = os.path.join(args.work, f"kernels_{key}.json")
        command = [args.kernel_bench, f"--benchmark_filter={filters[key]}", f"--benchmark_min_time={args.kernel_min_time}",
                   "--benchmark_format=json", f"--benchmark_out={out_file}", "--benchmark_out_format=json", *extra]
        log("kernel bench: " + " ".join(command[1:]))
        result, error, seconds = run_process(command, budget.timeout(KERNEL_TIMEOUT_S), qdqrt_env(None, False))
        data = None
        if os.path.exists(out_file):
            try:
                with open(out_file) as handle:
                    data = json.load(handle)
            except ValueError as problem:
                error = error or f"unreadable JSON ({problem})"
        if data is None and error is None:
            error = "no JSON written"
        if error:
            state["errors"].append(f"kernel bench {key}: {error}")
            log(f"kernel bench {key}: {error}")
        state["kernels"][key] = data or {"error": error}
        state["kernels"][key]["wall_s"] = seconds
        for row in (data or {}).get("benchmarks", []):
            if row.get("error_occurred"):
                log(f"  {row['name']}: {row.get('error_message')}")
        save()


def benchmark_rows(data):
    return {row["name"]: row for row in (data or {}).get("benchmarks", []) if row.get("run_type", "iteration") == "iteration"}


def amx_in_kernel_bench(data):
    if not data or "context" not in data:
        return False
    row = benchmark_rows(data).get("peak/tdpbusd_amx")
    return data["context"].get("isa") == AMX and row is not None and not row.get("error_occurred")


def peaks(kernels):
    """Single-core peaks (wall clock GOPS of the peak rows; the CPU-time figures beside them)."""
    result = {}
    for key, source, name in (("vpdpbusd", "vnni", "peak/vpdpbusd_zmm"), ("vfmadd", "vnni", "peak/vfmadd_zmm"),
                              ("tdpbusd", "amx_peaks", "peak/tdpbusd_amx")):
        row = benchmark_rows(kernels.get(source)).get(name)
        if row is None:
            result[key] = {"gops": None, "error": "not measured"}
        elif row.get("error_occurred"):
            result[key] = {"gops": None, "error": row.get("error_message", "?")}
        else:
            result[key] = {"gops": row.get("GOPS"), "gops_cpu": row.get("GOPS_cpu")}
    return result


def conv_name(full_name):
    """conv_u8/resnet50/l1_3x3_64/threads:1/real_time -> l1_3x3_64"""
    parts = full_name.split("/")
    return parts[2] if len(parts) > 2 else full_name


def kernel_table(kernels, peak):
    """Rows of the ResNet-50 conv table: per layer the VNNI and AMX kernel, GOPS, % of peak."""
    vnni = {conv_name(n): r for n, r in benchmark_rows(kernels.get("vnni")).items() if n.startswith("conv_u8/")}
    amx = {conv_name(n): r for n, r in benchmark_rows(kernels.get("amx")).items() if n.startswith("conv_u8/")}
    rows = []
    for layer in list(vnni) + [name for name in amx if name not in vnni]:
        row = {"layer": layer}
        for key, source, peak_key in (("vnni", vnni, "vpdpbusd"), ("amx", amx, "tdpbusd")):
            bench = source.get(layer)
            if bench is None or bench.get("error_occurred"):
                continue
            gops = bench.get("GOPS")
            row[key] = {"kernel": bench.get("label", "?"), "gops": gops, "gops_cpu": bench.get("GOPS_cpu"),
                        "time_us": to_us(bench.get("real_time"), bench.get("time_unit", "ns")),
                        "pct_vpdpbusd": pct(gops, peak["vpdpbusd"]["gops"]),
                        "pct_own_peak": pct(gops, peak[peak_key]["gops"]),
                        "bench_pct_peak": bench.get("pct_peak")}
        if "vnni" in row and "amx" in row and row["amx"]["gops"] and row["vnni"]["gops"]:
            row["amx_over_vnni"] = row["amx"]["gops"] / row["vnni"]["gops"]
        rows.append(row)
    return rows


def to_us(value, unit):
    if value is None:
        return None
    return value * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}.get(unit, 1e-3)


def pct(value, peak_value, threads=1):
    if value is None or not peak_value:
        return None
    return 100.0 * value / (threads * peak_value)


# ----- models ---------------------------------------------------------------------------------------

def load_models(manifest_dir, models_dir, names):
    """{model: {variant: {"path", "manifest"}}} for the manifests <model>_<variant>.json."""
    found = collections.OrderedDict()
    for name in sorted(os.listdir(manifest_dir)):
        match = re.fullmatch(r"(.+)_(fp32|qdq)\.json", name)
        if not match:
            continue
        with open(os.path.join(manifest_dir, name)) as handle:
            manifest = json.load(handle)
        manifest.pop("tensors", None)
        found.setdefault(match.group(1), {})[match.group(2)] = {
            "path": os.path.join(models_dir, manifest["model"]), "manifest": manifest}
    if names:
        missing = [name for name in names if name not in found]
        if missing:
            raise SystemExit(f"device_bench: no manifest for {', '.join(missing)} in {manifest_dir}")
    else:
        names = [name for name in PREFERRED_ORDER if name in found] + [name for name in found if name not in PREFERRED_ORDER]
    return collections.OrderedDict((name, found[name]) for name in names)


def shape_flag(manifest):
    return manifest["input"]["name"] + ":" + "x".join(str(d) for d in [1, *manifest["input"]["dims"]])


def layer_summary(info):
    layers = info.get("Layers", [])
    tactics = collections.Counter(layer.get("TacticName") or layer.get("QdqrtKernel") or "?" for layer in layers)
    by_isa = collections.Counter()
    for name, count in tactics.items():
        by_isa[isa_of_kernel(name)] += count
    return {"isa": info.get("ISA"), "cpu_features": info.get("CpuFeatures"), "layers": len(layers),
            "reference_layers": info.get("ReferenceLayers"), "layers_by_isa": dict(by_isa.most_common()),
            "kernels": dict(tactics.most_common())}


def build_engine(args, budget, state, model, variant, cap, files):
    """Builds and saves the engine of (model, variant) capped at `cap` (None: qdqrt's choice)."""
    key = engine_key(model, variant, cap)
    engine = os.path.join(args.work, f"{model}_{variant}_{cap or 'default'}.qdqrt")
    info_file = engine + ".layers.json"
    command = [args.qdqrt, "exec", f"--onnx={files['path']}", f"--shapes={shape_flag(files['manifest'])}",
               f"--saveEngine={engine}", "--buildOnly", f"--exportLayerInfo={info_file}"]
    result, error, seconds = run_process(command, budget.timeout(BUILD_TIMEOUT_S), qdqrt_env(cap, args.amx_emulation))
    record = {"model": model, "variant": variant, "cap": cap, "build_s": seconds, "engine": engine, "error": error,
              "warnings": []}
    if result is not None:
        record["warnings"] = [line.strip() for line in (result.stdout + result.stderr).splitlines()
                              if re.search(r"\[[WE]\]|AMX|amx", line)][:20]
    if error is None:
        try:
            with open(info_file) as handle:
                info = json.load(handle)
            record.update(layer_summary(info))
            state["layers"][key] = {"ISA": info.get("ISA"), "CpuFeatures": info.get("CpuFeatures"),
                                    "Layers": [[layer.get("Name"), layer.get("LayerType"), layer.get("TacticName")]
                                               for layer in info.get("Layers", [])]}
        except (OSError, ValueError) as problem:
            record["error"] = f"no layer info ({problem})"
    state["engines"][key] = record
    log(f"build {key}: " + (f"FAILED {record['error']}" if record["error"] else
                              f"{seconds:.1f} s, ISA {record.get('isa')}, layers by ISA {record.get('layers_by_isa')}"))
    return record


def engine_key(model, variant, cap):
    return f"{model}/{variant}/{cap or 'default'}"


def run_qdqrt(args, budget, engine, manifest, threads, cap):
    times_file = os.path.join(args.work, "times.json")
    if os.path.exists(times_file):
        os.remove(times_file)
    command = [args.qdqrt, "exec", f"--loadEngine={engine['engine']}", f"--threads={threads}",
               f"--shapes={shape_flag(manifest)}", f"--warmUp={args.warmup}", f"--duration={args.duration}",
               f"--iterations={args.iterations}", f"--exportTimes={times_file}"]
    result, error, seconds = run_process(command, budget.timeout(QDQRT_TIMEOUT_S), qdqrt_env(cap, args.amx_emulation))
    record = {"wall_s": seconds}
    if error:
        record["error"] = error
        return record
    latencies = []
    try:
        with open(times_file) as handle:
            latencies = [entry["latencyMs"] for entry in json.load(handle)
                         if isinstance(entry, dict) and isinstance(entry.get("latencyMs"), (int, float))]
    except (OSError, ValueError):
        latencies = []
    if latencies:
        record.update(latency_stats(latencies))
    else:
        median = bench_models.median_from_summary(result.stdout)
        if median is None:
            record["error"] = "no latency in --exportTimes JSON or in the performance summary"
        else:
            record.update({"median_ms": median, "runs": None})
    return record


def latency_stats(latencies):
    ordered = sorted(latencies)
    count = len(ordered)
    mean = sum(ordered) / count
    std = math.sqrt(sum((x - mean) ** 2 for x in ordered) / count)
    return {"median_ms": bench_models.median(ordered), "min_ms": ordered[0], "mean_ms": mean,
            "p90_ms": ordered[min(count, max(1, math.ceil(0.9 * count))) - 1], "runs": count,
            "cv_pct": 100.0 * std / mean if mean > 0 else None}


def run_ort(args, budget, files, threads):
    command = [args.python, os.path.join(HERE, "ort_bench.py"), "--model", files["path"], "--shapes",
               shape_flag(files["manifest"]), "--threads", str(threads), "--warmUp", str(args.warmup),
               "--duration", str(args.duration), "--iterations", str(args.iterations)]
    result, error, seconds = run_process(command, budget.timeout(ORT_TIMEOUT_S))
    record = {"wall_s": seconds}
    if error:
        record["error"] = error
        return record
    try:
        stats = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as problem:
        record["error"] = f"unreadable ort_bench output ({problem}): {result.stdout[:200]!r}"
        return record
    record.update({"median_ms": stats["median_ms"], "min_ms": stats["min_ms"], "mean_ms": stats["mean_ms"],
                   "p90_ms": stats["p90_ms"], "runs": stats["iterations"], "session_s": stats.get("session_s"),
                   "cpu_ms_per_iteration": stats.get("cpu_ms_per_iteration"), "ort_version": stats.get("ort_version")})
    return record


def probe_ort(python):
    result, error, _ = run_process([python, "-c", "import onnxruntime; print(onnxruntime.__version__)"], 120)
    if error:
        return None, error
    return result.stdout.strip().splitlines()[-1], None


def run_models(args, budget, state, save):
    models = load_models(args.manifests, args.models_dir, parse_list(args.models))
    variants = parse_list(args.variants)
    state["model_order"] = list(models)
    state["models"] = {model: {variant: {"macs": files[variant]["manifest"].get("macs"),
                                         "input": shape_flag(files[variant]["manifest"]),
                                         "source_bytes": files[variant]["manifest"].get("source_bytes")}
                               for variant in files} for model, files in models.items()}
    estimates = {}  # (runner, model, variant, cap) -> seconds of its last run
    default_estimate = args.warmup / 1000.0 + args.duration + 3.0

    def attempt(kind, model, variant, cap, threads, body):
        key = (kind, model, variant, cap)
        estimate = estimates.get(key, default_estimate)
        label = f"{kind} {model} {variant}{'' if kind == 'ort' else ' ' + (cap or 'default')} threads={threads}"
        if not budget.allows(estimate):
            state["not_run"].append(f"{label}: time budget")
            log(f"{label}: not run (time budget: {budget.left():.0f} s left, needs ~{estimate:.0f} s)")
            return
        record = body()
        estimates[key] = record["wall_s"]
        record.update({"runner": kind, "model": model, "variant": variant, "cap": cap, "threads": threads})
        state["runs"].append(record)
        if "error" in record:
            state["errors"].append(f"{label}: {record['error']}")
            log(f"{label}: FAILED {record['error']}")
        else:
            log(f"{label}: {record['median_ms']:.3f} ms median ({record.get('runs')} runs, {record['wall_s']:.1f} s)")
        save()

    for threads in thread_order(parse_list(args.threads, int)):
        for model, files in models.items():
            order = []  # qdqrt and ONNX Runtime alternate
            if "qdq" in variants and "qdq" in files:
                order += [("qdqrt", "qdq", None), ("ort", "qdq", None), ("qdqrt", "qdq", VNNI)]
            if "fp32" in variants and "fp32" in files:
                order += [("ort", "fp32", None), ("qdqrt", "fp32", None)]
            for kind, variant, cap in order:
                if kind == "ort":
                    if state["ort"]["available"]:
                        attempt("ort", model, variant, None, threads, lambda: run_ort(args, budget, files[variant], threads))
                    continue
                key = engine_key(model, variant, cap)
                if cap == VNNI:
                    # Only where the default engine is another path: AMX, or one that failed to
                    # build (an AMX self-check that crashes, say) -- the VNNI figures still come.
                    default = state["engines"].get(engine_key(model, variant, None), {})
                    failed = default.get("error") and "time budget" not in default["error"]
                    if default.get("isa") != AMX and not failed:
                        continue
                if key not in state["engines"]:
                    if not budget.allows(20):
                        state["not_run"].append(f"build {key}: time budget")
                        state["engines"][key] = {"error": "not built: time budget"}
                        continue
                    build_engine(args, budget, state, model, variant, cap, files[variant])
                    save()
                engine = state["engines"][key]
                if engine.get("error"):
                    continue
                attempt("qdqrt", model, variant, cap, threads,
                        lambda: run_qdqrt(args, budget, engine, files[variant]["manifest"], threads, cap))


# ----- summary ---------------------------------------------------------------------------------------

def engine_label(state, model, variant, cap):
    """QDQ: the engine's ISA (amxint8, avx512vnni); FP32: the ISA most of its kernels are for."""
    engine = state["engines"].get(engine_key(model, variant, cap), {})
    if variant == "fp32" and engine.get("layers_by_isa"):
        return "float, " + next(iter(engine["layers_by_isa"]))
    isa = engine.get("isa") or cap or "default"
    return isa + (" (emulated)" if isa == AMX and state["settings"].get("amx_emulation") else "")


def summarize(state):
    """The derived figures: model rows, AMX/VNNI ratios, thread scaling (pure function of state)."""
    peak = peaks(state["kernels"])
    qdqrt = {}
    ort = {}
    for run in state["runs"]:
        if "error" in run:
            continue
        if run["runner"] == "qdqrt":
            qdqrt[(run["model"], run["variant"], run["cap"], run["threads"])] = run
        else:
            ort[(run["model"], run["variant"], run["threads"])] = run
    order = state.get("model_order", [])
    rank = lambda model: (order.index(model) if model in order else len(order), model)  # noqa: E731
    keys = sorted({(r["model"], r["variant"], r["cap"] if r["runner"] == "qdqrt" else None, r["threads"])
                   for r in state["runs"]}, key=lambda k: (rank(k[0]), k[1], k[2] or "", k[3]))
    rows = []
    for model, variant, cap, threads in keys:
        run = qdqrt.get((model, variant, cap, threads))
        if cap is not None and run is None:
            continue
        engine = state["engines"].get(engine_key(model, variant, cap), {})
        isa = engine.get("isa")
        macs = state.get("models", {}).get(model, {}).get(variant, {}).get("macs")
        row = {"model": model, "variant": variant, "cap": cap, "engine": engine_label(state, model, variant, cap),
               "isa": isa, "threads": threads, "qdqrt_ms": run and run["median_ms"], "qdqrt_runs": run and run.get("runs"),
               "qdqrt_min_ms": run and run.get("min_ms")}
        same = ort.get((model, variant, threads))
        fp32 = ort.get((model, "fp32", threads))
        row["ort_ms"] = same and same["median_ms"]
        row["ort_runs"] = same and same["runs"]
        row["ort_fp32_ms"] = fp32 and fp32["median_ms"]
        row["ort_over_qdqrt"] = ratio(row["ort_ms"], row["qdqrt_ms"])
        row["ort_fp32_over_qdqrt"] = ratio(row["ort_fp32_ms"], row["qdqrt_ms"]) if variant != "fp32" else None
        row["gops"] = 2.0 * macs / (row["qdqrt_ms"] * 1e-3) * 1e-9 if macs and row["qdqrt_ms"] else None
        if variant == "fp32":
            row["peak_name"], peak_key = "vfmadd zmm", "vfmadd"
        elif isa == AMX:
            row["peak_name"], peak_key = "tdpbusd", "tdpbusd"
        else:
            row["peak_name"], peak_key = "vpdpbusd zmm", "vpdpbusd"
        row["pct_peak"] = pct(row["gops"], peak[peak_key]["gops"], threads)
        row["pct_vpdpbusd"] = pct(row["gops"], peak["vpdpbusd"]["gops"], threads) if variant != "fp32" else None
        rows.append(row)

    amx_vs_vnni = []
    for (model, variant, cap, threads), run in sorted(qdqrt.items(), key=lambda item: (rank(item[0][0]), item[0][3])):
        if cap != VNNI:
            continue
        amx_run = qdqrt.get((model, variant, None, threads))
        if amx_run is None or state["engines"].get(engine_key(model, variant, None), {}).get("isa") != AMX:
            continue
        entry = {"model": model, "variant": variant, "threads": threads, "amx_ms": amx_run["median_ms"],
                 "vnni_ms": run["median_ms"], "vnni_over_amx": ratio(run["median_ms"], amx_run["median_ms"])}
        if model == "resnet50" and variant == "qdq" and entry["vnni_over_amx"] is not None:
            entry["goal"] = RESNET50_AMX_GOAL
            entry["goal_met"] = entry["vnni_over_amx"] >= RESNET50_AMX_GOAL
        amx_vs_vnni.append(entry)

    scaling = []
    thread_counts = sorted({run["threads"] for run in state["runs"]})
    if len(thread_counts) > 1:
        low, high = thread_counts[0], thread_counts[-1]
        for model, variant, cap in sorted({(k[0], k[1], k[2]) for k in qdqrt}, key=lambda k: (rank(k[0]), k[1], k[2] or "")):
            one, many = qdqrt.get((model, variant, cap, low)), qdqrt.get((model, variant, cap, high))
            if not one or not many:
                continue
            ort_one, ort_many = ort.get((model, variant, low)), ort.get((model, variant, high))
            speedup = ratio(one["median_ms"], many["median_ms"])
            scaling.append({"model": model, "variant": variant, "engine": engine_label(state, model, variant, cap),
                            "low_threads": low, "high_threads": high, "low_ms": one["median_ms"],
                            "high_ms": many["median_ms"], "speedup": speedup,
                            "efficiency": speedup / (high / low) if speedup else None,
                            "ort_speedup": ratio(ort_one and ort_one["median_ms"], ort_many and ort_many["median_ms"])})
    return {"peaks": peak, "kernel_rows": kernel_table(state["kernels"], peak), "rows": rows,
            "amx_vs_vnni": amx_vs_vnni, "scaling": scaling}


def ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def fmt(value, kind="ms"):
    if value is None:
        return "n/a"
    if kind == "ms":
        return f"{value:.3f}" if value < 10 else f"{value:.2f}"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "pct":
        return f"{value:.1f}%"
    if kind == "gops":
        return f"{value:.0f}"
    return str(value)


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def render(state, derived):
    meta, settings, peak = state["meta"], state["settings"], derived["peaks"]
    lines = ["# qdqrt on the device machine", ""]
    lines.append(f"- Date: {meta.get('date')}; {meta.get('qdqrt_version', 'qdqrt ?')}, packed from commit "
                 f"{meta.get('pack', {}).get('commit', '?')}")
    lines.append(f"- CPU: {meta.get('cpu_model', '?')}; {meta.get('cpus_online', '?')} CPUs online, "
                 f"{meta.get('affinity', '?')} in this process's affinity; kernel {meta.get('kernel', '?')}; "
                 f"AMX flags in /proc/cpuinfo: {', '.join(meta.get('amx_flags') or []) or 'none'}")
    engines = [e for e in state["engines"].values() if e.get("isa")]
    default_isas = sorted({e["isa"] for e in engines if e.get("cap") is None and e.get("variant") != "fp32"})
    lines.append(f"- ISA qdqrt ran (default QDQ engines): {', '.join(default_isas) or 'n/a'}"
                 + (" (AMX emulated: QDQRT_AMX_EMULATION=1, a test run)" if settings.get("amx_emulation") else ""))
    amx = peak["tdpbusd"]
    lines.append("- AMX-INT8: " + ("usable (kernel bench peak/tdpbusd_amx ran)" if amx.get("gops")
                                    else f"not usable here: {amx.get('error')}"))
    lines.append("- Single-core peaks (kernel bench, wall clock): " + "; ".join(
        f"{name} {fmt(peak[key].get('gops'), 'gops')} {unit}"
        + (f" (CPU time: {peak[key]['gops_cpu']:.0f})" if peak[key].get("gops_cpu") else "")
        for key, name, unit in (("vpdpbusd", "vpdpbusd zmm", "GOPS"), ("tdpbusd", "tdpbusd", "GOPS"),
                                ("vfmadd", "vfmadd zmm", "GFLOP/s"))))
    ort = state["ort"]
    if ort["available"]:
        lines.append(f"- ONNX Runtime: {ort['version']} (Python API, bench/device/ort_bench.py)"
                     + (f"; WARNING: expected {ort['expected']}" if ort.get("expected") and
                        not str(ort["version"]).startswith(ort["expected"]) else ""))
    elif settings["ort"] == "skip":
        lines.append("- ONNX Runtime: skipped (--ort=skip)")
    else:
        lines.append(f"- **ERROR: ONNX Runtime is missing ({ort.get('error')}); the ORT columns are empty**")
    lines.append(f"- Each cell: {settings['warmup']} ms warm-up, then >= {settings['iterations']} runs and "
                 f">= {settings['duration']} s; batch 1; qdqrt and ORT alternate within each thread count")
    lines.append(f"- Budget: {settings['budget_s']:.0f} s from the start of run.sh; used "
                 f"{state.get('elapsed_s', 0):.0f} s; parts not run for time: {len(state['not_run'])}"
                 + (" (listed at the end)" if state["not_run"] else ""))
    lines.append("")

    if derived["kernel_rows"]:
        lines += ["## ResNet-50 convolutions, 1 thread (kernel bench `conv_u8/resnet50/*/threads:1`)", ""]
        with_amx = any("amx" in row for row in derived["kernel_rows"])
        body = []
        for row in derived["kernel_rows"]:
            vnni, amx_row = row.get("vnni", {}), row.get("amx", {})
            cells = [row["layer"], vnni.get("kernel", "n/a"), fmt(vnni.get("gops"), "gops"), fmt(vnni.get("pct_vpdpbusd"), "pct")]
            if with_amx:
                cells += [amx_row.get("kernel", "n/a"), fmt(amx_row.get("gops"), "gops"), fmt(amx_row.get("pct_own_peak"), "pct"),
                          fmt(amx_row.get("pct_vpdpbusd"), "pct"), fmt(row.get("amx_over_vnni"), "x")]
            body.append(cells)
        totals = {key: sum(r[key]["time_us"] for r in derived["kernel_rows"] if key in r and r[key].get("time_us"))
                  for key in ("vnni", "amx")}
        if totals["vnni"] and totals["amx"]:
            body.append(["sum of the times (each shape once)", "", f"{totals['vnni']:.0f} us", "", "",
                         f"{totals['amx']:.0f} us", "", "", fmt(totals["vnni"] / totals["amx"], "x")])
        header = ["layer", "VNNI kernel", "VNNI GOPS", "% vpdpbusd peak"]
        if with_amx:
            header += ["AMX kernel", "AMX GOPS", "% tdpbusd peak", "% vpdpbusd peak", "AMX/VNNI"]
        lines += table(header, body)
        if not with_amx:
            lines += ["", "No AMX rows: " + (derived["peaks"]["tdpbusd"].get("error") or "not measured")]
        lines.append("")

    if derived["rows"]:
        lines += ["## Whole models, batch 1", ""]
        body = []
        for row in derived["rows"]:
            body.append([row["model"], row["variant"].upper(), row["engine"], row["threads"], fmt(row["qdqrt_ms"]),
                         fmt(row["qdqrt_runs"], "n"), fmt(row["ort_ms"]), fmt(row["ort_runs"], "n"),
                         fmt(row["ort_over_qdqrt"], "x"),
                         "-" if row["variant"] == "fp32" else fmt(row["ort_fp32_over_qdqrt"], "x"),
                         fmt(row["gops"], "gops"),
                         f"{fmt(row['pct_peak'], 'pct')} {row['peak_name']}" if row["pct_peak"] is not None else "n/a"])
        lines += table(["model", "file", "qdqrt engine", "threads", "qdqrt ms", "runs", "ORT ms", "ORT runs",
                        "ORT/qdqrt", "ORT FP32/qdqrt", "qdqrt GOPS", "% of threads x peak"], body)
        lines.append("")

    if derived["amx_vs_vnni"]:
        lines += ["## AMX-INT8 against the AVX-512 VNNI path (same QDQ file, same machine)", ""]
        body = [[e["model"], e["threads"], fmt(e["amx_ms"]), fmt(e["vnni_ms"]), fmt(e["vnni_over_amx"], "x"),
                 ("met" if e["goal_met"] else "not met") + f" (>= {e['goal']}x)" if "goal" in e else "-"]
                for e in derived["amx_vs_vnni"]]
        lines += table(["model", "threads", "AMX ms", "VNNI ms", "VNNI/AMX", "ResNet-50 goal"], body)
        lines.append("")

    if derived["scaling"]:
        first = derived["scaling"][0]
        lines += [f"## Thread scaling, batch 1 ({first['low_threads']} -> {first['high_threads']} threads)", ""]
        body = [[s["model"], s["variant"].upper(), s["engine"], fmt(s["low_ms"]), fmt(s["high_ms"]), fmt(s["speedup"], "x"),
                 fmt(100.0 * s["efficiency"] if s["efficiency"] else None, "pct"), fmt(s["ort_speedup"], "x")]
                for s in derived["scaling"]]
        lines += table(["model", "file", "qdqrt engine", f"{first['low_threads']}-thread ms",
                        f"{first['high_threads']}-thread ms", "speed-up", "efficiency", "ORT speed-up"], body)
        lines.append("")

    if state["engines"]:
        lines += ["## Engines: the kernels that ran", ""]
        for key, engine in state["engines"].items():
            if engine.get("error"):
                lines.append(f"- {key}: {engine['error']}")
                continue
            top = ", ".join(f"{name} x{count}" for name, count in list(engine["kernels"].items())[:6])
            lines.append(f"- {key}: ISA {engine['isa']}, {engine['layers']} layers by kernel ISA "
                         f"{engine['layers_by_isa']}, built in {engine['build_s']:.1f} s; {top}")
        lines.append("")

    if state["errors"] or state["not_run"] or state["notes"]:
        lines += ["## Errors, parts not run, notes", ""]
        lines += [f"- ERROR {line}" for line in state["errors"]]
        lines += [f"- not run: {line}" for line in state["not_run"]]
        lines += [f"- {line}" for line in state["notes"]]
        lines.append("")
    return "\n".join(lines)


def write_outputs(args, state):
    state["elapsed_s"] = time.time() - state["started"]
    derived = summarize(state)
    outputs = {"summary.md": render(state, derived) + "\n",
               "summary.json": json.dumps({**{k: v for k, v in state.items() if k not in ("kernels", "layers")},
                                           **derived}, indent=1, default=str),
               "kernels.json": json.dumps(state["kernels"], indent=1),
               "layers.json": json.dumps(state["layers"], separators=(",", ":"))}
    for name, text in outputs.items():
        temporary = os.path.join(args.out, f".{name}.tmp")
        with open(temporary, "w") as handle:
            handle.write(text)
        os.replace(temporary, os.path.join(args.out, name))
    return outputs["summary.md"]


# ----- machine ---------------------------------------------------------------------------------------

def machine_info():
    info = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "kernel": platform.release(),
            "cpus_online": os.cpu_count()}
    try:
        info["affinity"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        info["affinity"] = None
    try:
        with open("/proc/cpuinfo") as handle:
            text = handle.read()
        model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
        flags = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
        info["cpu_model"] = model.group(1).strip() if model else "?"
        flag_list = flags.group(1).split() if flags else []
        info["amx_flags"] = [flag for flag in flag_list if flag.startswith("amx")]
        info["vnni_flags"] = [flag for flag in flag_list if "vnni" in flag]
    except OSError:
        info["cpu_model"] = "?"
    return info


def new_state(args):
    state = {"started": args.started, "meta": machine_info(),
             "settings": {"threads": parse_list(args.threads, int), "duration": args.duration, "warmup": args.warmup,
                          "iterations": args.iterations, "budget_s": args.deadline - args.started, "ort": args.ort,
                          "kernels": args.kernels, "kernel_min_time": args.kernel_min_time,
                          "amx_emulation": args.amx_emulation, "models": args.models, "variants": args.variants},
             "ort": {"available": False}, "kernels": {}, "engines": {}, "layers": {}, "runs": [], "errors": [],
             "not_run": [], "notes": [], "model_order": []}
    if args.pack_info and os.path.exists(args.pack_info):
        with open(args.pack_info) as handle:
            state["meta"]["pack"] = json.load(handle)
    return state


# ----- self-test -------------------------------------------------------------------------------------

def selftest():
    """Checks the derived figures and the rendering on made-up runs, without running anything."""
    failures = []

    def check(condition, message):
        if not condition:
            failures.append(message)

    check(thread_order([1, 2, 4, 8, 16]) == [1, 16, 2, 4, 8], f"thread_order: {thread_order([1, 2, 4, 8, 16])}")
    check(thread_order([1]) == [1], "thread_order of one")
    check(isa_of_kernel("qu8-qc8w-igemm-32x64c4-fp32-amxint8") == AMX, "isa_of_kernel amx")
    check(isa_of_kernel("qu8-qc8w-gemm-6x64c4-fp32-avx512vnni +residual") == VNNI, "isa_of_kernel label")
    gbench = lambda rows, isa: {"context": {"isa": isa}, "benchmarks": rows}  # noqa: E731
    kernels = {
        "vnni": gbench([{"name": "peak/vpdpbusd_zmm", "GOPS": 1000.0, "GOPS_cpu": 1010.0},
                        {"name": "peak/vfmadd_zmm", "GOPS": 250.0, "GOPS_cpu": 251.0},
                        {"name": "conv_u8/resnet50/l1_3x3_64/threads:1/real_time", "GOPS": 800.0, "label": "k-avx512vnni",
                         "real_time": 200.0, "time_unit": "us", "pct_peak": 79.0}], VNNI),
        "amx_peaks": gbench([{"name": "peak/tdpbusd_amx", "GOPS": 7000.0, "GOPS_cpu": 7000.0}], AMX),
        "amx": gbench([{"name": "conv_u8/resnet50/l1_3x3_64/threads:1/real_time", "GOPS": 2400.0, "label": "k-amxint8",
                        "real_time": 66.7, "time_unit": "us"}], AMX)}
    check(amx_in_kernel_bench(kernels["amx_peaks"]), "amx_in_kernel_bench")
    absent = gbench([{"name": "peak/tdpbusd_amx", "error_occurred": True, "error_message": "this CPU lacks amxint8"}], VNNI)
    check(not amx_in_kernel_bench(absent), "amx_in_kernel_bench on an error row")
    check(peaks({"amx_peaks": absent})["tdpbusd"]["error"] == "this CPU lacks amxint8", "peaks: error kept")
    state = {"started": 0.0, "elapsed_s": 10.0, "meta": {"date": "d", "pack": {"commit": "abc"}},
             "settings": {"threads": [1, 16], "duration": 1.0, "warmup": 200, "iterations": 10, "budget_s": 450.0,
                          "ort": "required", "amx_emulation": False},
             "ort": {"available": True, "version": "1.30.0", "expected": "1.30"}, "kernels": kernels,
             "engines": {"resnet50/qdq/default": {"isa": AMX, "cap": None, "variant": "qdq", "layers": 2, "build_s": 1.0,
                                                  "layers_by_isa": {AMX: 1}, "kernels": {"k-amxint8": 1}},
                         "resnet50/qdq/avx512vnni": {"isa": VNNI, "cap": VNNI, "variant": "qdq", "layers": 2,
                                                     "build_s": 1.0, "layers_by_isa": {VNNI: 1}, "kernels": {"k": 1}},
                         "resnet50/fp32/default": {"isa": AMX, "cap": None, "variant": "fp32", "layers": 2,
                                                   "build_s": 1.0, "layers_by_isa": {"avx512": 2}, "kernels": {"f": 2}}},
             "layers": {}, "errors": [], "not_run": ["qdqrt x: time budget"], "notes": [], "model_order": ["resnet50"],
             "models": {"resnet50": {"qdq": {"macs": 4.0e9}, "fp32": {"macs": 4.0e9}}}}
    runs = []
    for threads, amx_ms, vnni_ms, fp32_ms, ort_qdq, ort_fp32 in ((1, 4.0, 10.0, 40.0, 80.0, 50.0),
                                                                 (16, 0.5, 1.0, 4.0, 10.0, 5.0)):
        runs += [{"runner": "qdqrt", "model": "resnet50", "variant": "qdq", "cap": None, "threads": threads,
                  "median_ms": amx_ms, "runs": 100},
                 {"runner": "qdqrt", "model": "resnet50", "variant": "qdq", "cap": VNNI, "threads": threads,
                  "median_ms": vnni_ms, "runs": 100},
                 {"runner": "qdqrt", "model": "resnet50", "variant": "fp32", "cap": None, "threads": threads,
                  "median_ms": fp32_ms, "runs": 25},
                 {"runner": "ort", "model": "resnet50", "variant": "qdq", "cap": None, "threads": threads,
                  "median_ms": ort_qdq, "runs": 12},
                 {"runner": "ort", "model": "resnet50", "variant": "fp32", "cap": None, "threads": threads,
                  "median_ms": ort_fp32, "runs": 20}]
    runs.append({"runner": "ort", "model": "resnet50", "variant": "qdq", "cap": None, "threads": 2, "error": "exit 1: x"})
    state["runs"] = runs
    derived = summarize(state)
    rows = {(r["variant"], r["cap"], r["threads"]): r for r in derived["rows"]}
    amx1 = rows.get(("qdq", None, 1), {})
    # 6 rows of runs, and one for the failed ORT run alone (its cells n/a).
    check(len(derived["rows"]) == 7 and rows[("qdq", None, 2)]["qdqrt_ms"] is None
          and rows[("qdq", None, 2)]["ort_ms"] is None, f"7 model rows, got {len(derived['rows'])}: {list(rows)}")
    check(amx1.get("ort_over_qdqrt") == 20.0 and amx1.get("ort_fp32_over_qdqrt") == 12.5, f"ratios {amx1}")
    check(abs(amx1.get("gops", 0) - 2000.0) < 1e-6, f"GOPS {amx1.get('gops')}")
    check(abs(amx1.get("pct_peak", 0) - 100.0 * 2000 / 7000) < 1e-6 and amx1.get("peak_name") == "tdpbusd",
          f"AMX row against the tdpbusd peak: {amx1}")
    vnni16 = rows.get(("qdq", VNNI, 16), {})
    check(abs(vnni16.get("pct_peak", 0) - 100.0 * 8000 / (16 * 1000)) < 1e-6, f"VNNI row x threads: {vnni16}")
    fp32 = rows.get(("fp32", None, 1), {})
    check(fp32.get("ort_fp32_over_qdqrt") is None and fp32.get("peak_name") == "vfmadd zmm"
          and abs(fp32.get("pct_peak", 0) - 100.0 * 200 / 250) < 1e-6, f"FP32 row {fp32}")
    check([(e["threads"], e["vnni_over_amx"], e.get("goal_met")) for e in derived["amx_vs_vnni"]] ==
          [(1, 2.5, True), (16, 2.0, False)], f"amx_vs_vnni {derived['amx_vs_vnni']}")
    scaling = {(s["variant"], s["engine"]): s for s in derived["scaling"]}
    check(scaling.get(("qdq", AMX), {}).get("speedup") == 8.0 and scaling[("qdq", AMX)]["efficiency"] == 0.5
          and scaling[("qdq", AMX)]["ort_speedup"] == 8.0, f"scaling {derived['scaling']}")
    kernel_rows = derived["kernel_rows"]
    check(len(kernel_rows) == 1 and kernel_rows[0]["amx_over_vnni"] == 3.0
          and abs(kernel_rows[0]["amx"]["pct_own_peak"] - 100 * 2400 / 7000) < 1e-6, f"kernel rows {kernel_rows}")
    text = render(state, derived)
    for expected in ("| resnet50 | QDQ | amxint8 | 1 | 4.000 | 100 | 80.00 | 12 | 20.00x | 12.50x | 2000 | 28.6% tdpbusd |",
                     "| resnet50 | 1 | 4.000 | 10.00 | 2.50x | met (>= 2.5x) |",
                     "| resnet50 | 16 | 0.500 | 1.000 | 2.00x | not met (>= 2.5x) |",
                     "| l1_3x3_64 | k-avx512vnni | 800 | 80.0% | k-amxint8 | 2400 | 34.3% | 240.0% | 3.00x |",
                     "- not run: qdqrt x: time budget"):
        check(expected in text, f"render lacks {expected!r}")
    # The budget: a run that does not fit is left out.
    budget = Budget(time.time() + RESERVE_S + 10.0)
    check(budget.allows(5.0) and not budget.allows(30.0), "Budget.allows")
    # ort_bench's statistics and argument checks.
    sys.path.insert(0, HERE)
    import ort_bench
    stats = ort_bench.summarize([3.0, 1.0, 2.0, 4.0])
    check(stats["median_ms"] == 2.5 and stats["p90_ms"] == 4.0 and stats["iterations"] == 4, f"ort summarize {stats}")
    check(ort_bench.parse_shapes("input:0:1x3x4x4") == {"input:0": [1, 3, 4, 4]}, "ort parse_shapes with ':'")
    for bad in ("x:1x0", "x", "x:a"):
        try:
            ort_bench.parse_shapes(bad)
            failures.append(f"ort parse_shapes accepted {bad!r}")
        except ValueError:
            pass
    print("\n".join(f"FAILED: {message}" for message in failures) or "device_bench selftest: all checks passed")
    return 1 if failures else 0


# ----- main ------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--selftest", action="store_true", help="check the summary logic on made-up runs and exit")
    parser.add_argument("--qdqrt", help="the qdqrt binary")
    parser.add_argument("--kernel-bench", help="the qdqrt_bench_kernels binary")
    parser.add_argument("--manifests", help="folder of the skeletons' JSON manifests")
    parser.add_argument("--models-dir", help="folder of the regenerated models")
    parser.add_argument("--out", help="folder for summary.md, summary.json, kernels.json, layers.json")
    parser.add_argument("--lib-dir", help="shared libraries for qdqrt and the kernel bench (LD_LIBRARY_PATH of "
                                          "their processes only; Python's are left alone)")
    parser.add_argument("--work", help="scratch folder for engines and times (default: a temporary one)")
    parser.add_argument("--pack-info", help="the carry's pack.json (commit, date)")
    parser.add_argument("--models", default="",
                        help="models to run, in this order (default: every model of --manifests, "
                             "resnet50, mobilenet_v2 and efficientnet_b0 first)")
    parser.add_argument("--variants", default="fp32,qdq")
    parser.add_argument("--threads", default="1,2,4,8,16")
    parser.add_argument("--duration", type=float, default=1.0, help="seconds of timed runs per cell (default 1)")
    parser.add_argument("--warmup", type=int, default=200, help="milliseconds of warm-up per cell (default 200)")
    parser.add_argument("--iterations", type=int, default=10, help="minimum timed runs per cell (default 10)")
    parser.add_argument("--kernels", choices=("full", "quick", "none"), default="full",
                        help="kernel bench rows: every ResNet-50 conv shape (full), one (quick), none")
    parser.add_argument("--kernel-min-time", type=float, default=0.2, help="--benchmark_min_time per kernel row")
    parser.add_argument("--ort", choices=("required", "skip"), default="required",
                        help="required: a missing onnxruntime is an error (exit 1, ORT columns empty); skip: no ORT runs")
    parser.add_argument("--ort-version", default="1.30", help="the ONNX Runtime version expected (a warning otherwise)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs ort_bench.py")
    parser.add_argument("--budget", type=float, default=420.0, help="seconds from now (default 420)")
    parser.add_argument("--deadline", type=float, help="the budget's end as Unix time (overrides --budget)")
    parser.add_argument("--started", type=float, help="Unix time the whole run started (for the budget's report)")
    parser.add_argument("--amx-emulation", action="store_true",
                        help="tests only: qdqrt runs the AMX kernels through its emulated tiles (QDQRT_AMX_EMULATION=1)")
    args = parser.parse_args()
    if args.selftest:
        return selftest()
    for name in ("qdqrt", "kernel_bench", "manifests", "models_dir", "out"):
        if not getattr(args, name):
            parser.error(f"--{name.replace('_', '-')} is required")
    now = time.time()
    args.started = args.started or now
    args.deadline = args.deadline or now + args.budget
    os.makedirs(args.out, exist_ok=True)
    scratch = None
    if not args.work:
        scratch = tempfile.TemporaryDirectory(prefix="qdqrt_device_")
        args.work = scratch.name
    os.makedirs(args.work, exist_ok=True)
    LIB_DIR[0] = args.lib_dir
    budget = Budget(args.deadline)
    state = new_state(args)
    version, _, _ = run_process([args.qdqrt, "--version"], 30, qdqrt_env(None, False))
    state["meta"]["qdqrt_version"] = version.stdout.strip() if version else "?"

    def save():
        return write_outputs(args, state)

    if args.ort == "required":
        ort_version, error = probe_ort(args.python)
        state["ort"] = {"available": ort_version is not None, "version": ort_version, "error": error,
                        "expected": args.ort_version}
        if ort_version is None:
            state["errors"].append(f"ONNX Runtime is required but `{args.python} -c 'import onnxruntime'` failed: {error}")
            log("ERROR: " + state["errors"][-1])
            log("ERROR: the ORT columns stay empty; qdqrt runs go on")
        elif not ort_version.startswith(args.ort_version):
            state["notes"].append(f"ONNX Runtime {ort_version}, not the expected {args.ort_version}")
        log(f"ONNX Runtime: {ort_version or 'MISSING'}")
    save()
    log(f"budget: {budget.left():.0f} s left")
    run_kernel_bench(args, budget, state, save)
    run_models(args, budget, state, save)
    text = save()
    print(text, flush=True)
    if scratch:
        scratch.cleanup()
    return 1 if state["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
