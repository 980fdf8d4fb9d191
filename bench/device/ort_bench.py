#!/usr/bin/env python3
"""Times an ONNX model with ONNX Runtime's Python API (CPU) the way tools/ort/bench_ort.js times it
with onnxruntime-node, for machines without Node.js. Prints one JSON line on stdout:
  {"median_ms":..,"mean_ms":..,"min_ms":..,"max_ms":..,"p90_ms":..,"iterations":..,
   "cpu_ms_per_iteration":..,"session_s":..,...}

    python3 bench/device/ort_bench.py --model m.onnx [--shapes name:1x3x224x224[,...]] [--threads N]
                                      [--warmUp MS] [--iterations N] [--duration S]
                                      [--optimization disabled|basic|extended|all]

As bench_ort.js: intra_op_num_threads = --threads, inter_op_num_threads = 1, sequential
execution, graph optimization level "all" (ORT_ENABLE_ALL), the CPU execution provider; seeded
random inputs of the given shapes (floats uniform in [-1, 1), integers in [0, 16); numpy's
generator, seed 12345, where bench_ort.js uses its own xorshift), a time-based warm-up of at least
one run, then at least --iterations runs and at least --duration seconds; the median of the wall
time of each session.run (session creation is not timed; session_s reports it). Exit status 3
when onnxruntime cannot be imported.
"""
import argparse
import json
import math
import sys
import time

import numpy as np

OPTIMIZATION_LEVELS = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC",
                       "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}
# ONNX Runtime's input type strings -> numpy dtypes (the types bench_ort.js feeds).
INPUT_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int8)": np.int8,
               "tensor(uint8)": np.uint8, "tensor(int16)": np.int16, "tensor(uint16)": np.uint16,
               "tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_}
EXIT_NO_ORT = 3


def parse_shapes(text):
    shapes = {}
    for entry in filter(None, text.split(",")):
        name, colon, dims = entry.rpartition(":")  # the name may itself hold ':' ("input:0")
        if not colon or not name:
            raise ValueError(f"--shapes entry '{entry}' is not name:DxDx...")
        try:
            values = [int(d) for d in dims.split("x")]
        except ValueError:
            values = []
        if not values or any(d < 1 for d in values):
            raise ValueError(f"--shapes entry '{entry}': dimensions must be positive integers")
        shapes[name] = values
    return shapes


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got '{text}'")
    return value


def non_negative(text):
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative number, got '{text}'")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", "--onnx", required=True)
    parser.add_argument("--shapes", default="")
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--warmUp", type=non_negative, default=500.0, help="milliseconds")
    parser.add_argument("--iterations", type=positive_int, default=10)
    parser.add_argument("--duration", type=non_negative, default=3.0, help="seconds")
    parser.add_argument("--optimization", choices=sorted(OPTIMIZATION_LEVELS), default="all")
    args = parser.parse_args(argv)
    try:
        args.shapes = parse_shapes(args.shapes)
    except ValueError as error:
        parser.error(str(error))
    return args


def make_feeds(inputs, shapes, seed=12345):
    rng = np.random.default_rng(seed)
    feeds = {}
    unused = set(shapes)
    for meta in inputs:
        dtype = INPUT_TYPES.get(meta.type)
        if dtype is None:
            raise ValueError(f"input '{meta.name}' has type {meta.type}, which is not supported")
        declared = list(meta.shape)
        dims = shapes.get(meta.name)
        unused.discard(meta.name)
        if dims:
            if declared and len(declared) != len(dims):
                raise ValueError(f"--shapes {meta.name}: rank {len(dims)} but the model declares rank {len(declared)}")
            for axis, size in enumerate(declared):
                if isinstance(size, int) and size > 0 and size != dims[axis]:
                    raise ValueError(f"--shapes {meta.name}: dimension {axis} is {dims[axis]} "
                                     f"but the model fixes it to {size}")
        else:
            if any(not isinstance(size, int) or size < 1 for size in declared):
                raise ValueError(f"input '{meta.name}' has a dynamic shape {declared}: give it with --shapes")
            dims = declared
        if np.dtype(dtype).kind == "f":
            feeds[meta.name] = rng.uniform(-1.0, 1.0, size=dims).astype(dtype)
        elif dtype is np.bool_:
            feeds[meta.name] = rng.random(size=dims) < 0.5
        else:
            feeds[meta.name] = rng.integers(0, 16, size=dims).astype(dtype)
    if unused:
        raise ValueError(f"--shapes names no model input: {', '.join(sorted(unused))}")
    return feeds


def percentile(sorted_times, fraction):
    """Nearest rank, as trtexec reports percentiles."""
    rank = max(1, math.ceil(fraction * len(sorted_times)))
    return sorted_times[min(len(sorted_times), rank) - 1]


def summarize(times):
    ordered = sorted(times)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {"median_ms": median, "mean_ms": sum(times) / len(times), "min_ms": ordered[0], "max_ms": ordered[-1],
            "p90_ms": percentile(ordered, 0.9), "iterations": len(times)}


def run(args, ort, clock=time.perf_counter, cpu_clock=time.process_time):
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPTIMIZATION_LEVELS[args.optimization])
    created = clock()
    session = ort.InferenceSession(args.model, sess_options=options, providers=["CPUExecutionProvider"])
    session_s = clock() - created
    feeds = make_feeds(session.get_inputs(), args.shapes)

    # Warm-up: at least one run, then until --warmUp ms have passed.
    warm_start = clock()
    while True:
        session.run(None, feeds)
        if (clock() - warm_start) * 1000.0 >= args.warmUp:
            break

    times = []
    cpu_start = cpu_clock()
    start = clock()
    while len(times) < args.iterations or clock() - start < args.duration:
        begin = clock()
        session.run(None, feeds)
        times.append((clock() - begin) * 1000.0)
    walltime = clock() - start
    cpu_s = cpu_clock() - cpu_start
    return {**summarize(times), "walltime_s": walltime,
            # Process CPU time (all threads, ORT's spin-waiting too) per run.
            "cpu_ms_per_iteration": cpu_s * 1000.0 / len(times), "session_s": session_s,
            "model": args.model, "threads": args.threads, "optimization": args.optimization,
            "shapes": {name: "x".join(str(d) for d in value.shape) for name, value in feeds.items()},
            "ort_version": getattr(ort, "__version__", "?"), "runtime": "onnxruntime (python)"}


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import onnxruntime as ort
    except ImportError as error:
        print(f"ort_bench: onnxruntime is not installed for {sys.executable}: {error}", file=sys.stderr)
        return EXIT_NO_ORT
    try:
        result = run(args, ort)
    except Exception as error:  # noqa: BLE001  (one line for the caller's table, not a traceback)
        print(f"ort_bench: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
