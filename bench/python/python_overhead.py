#!/usr/bin/env python3
"""The Python module's overhead per run over the C++ API (docs/bench.md, "Python").

Times ExecutionContext::run from C++ (qdqrt_bench_engine_run, Google Benchmark) and, on the same
model, batch and thread count, qdqrt.InferenceSession.run and qdqrt Context.run from Python, in
alternating rounds so that load changes hit both. Each figure is the median over repetitions of the
mean time per run; the overhead is Python's median minus C++'s. Besides --model, the same is
measured on a tiny model with the same input and output (Flatten -> MatMul 784x10), where the run
itself takes a few microseconds and the overhead is not lost in the model's run-to-run noise.

  PYTHONPATH=build/python /usr/bin/python3 bench/python/python_overhead.py \
      --cpp=build/bench/python/qdqrt_bench_engine_run --model=models/fmnist_resnet_qdq.onnx
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import tempfile
import time

import numpy as np

import qdqrt


def time_python(run, seconds, runs_per_block=200):
    """Mean microseconds per call over blocks of calls; the median of the block means."""
    for _ in range(runs_per_block):  # warm-up
        run()
    block_means = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(block_means) < 5:
        start = time.perf_counter_ns()
        for _ in range(runs_per_block):
            run()
        block_means.append((time.perf_counter_ns() - start) / runs_per_block / 1000.0)
    return statistics.median(block_means)


def time_cpp(binary, model, threads, seconds):
    """Google Benchmark's median over 5 repetitions of the mean time per run, in microseconds."""
    result = subprocess.run([binary, f"--model={model}", f"--threads={threads}", "--benchmark_format=json",
                             f"--benchmark_min_time={seconds / 5}", "--benchmark_repetitions=5",
                             "--benchmark_report_aggregates_only=true"],
                            check=True, capture_output=True, text=True)
    for row in json.loads(result.stdout)["benchmarks"]:
        if row.get("aggregate_name") == "median":
            return row["real_time"]
    raise RuntimeError("no median in the benchmark output")


def write_tiny_model(path):
    """[batch, 1, 28, 28] -> Flatten -> MatMul [784, 10] -> [batch, 10], float."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = np.random.default_rng(0).standard_normal((784, 10), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["input"], ["flat"]), helper.make_node("MatMul", ["flat", "weights"], ["output"])],
        "tiny", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 28, 28])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(weights, "weights")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def measure(args, model):
    options = qdqrt.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = qdqrt.InferenceSession(model, options)
    model_input = session.get_inputs()[0]
    shape = [1 if not isinstance(dim, int) else dim for dim in model_input.shape]
    feeds = {model_input.name: np.random.default_rng(0).standard_normal(shape, dtype=np.float32)}
    context = session.engine.create_context(threads=args.threads)

    rows = {"C++ ExecutionContext::run": [], "Python InferenceSession.run": [], "Python Context.run": []}
    for _ in range(args.rounds):
        rows["C++ ExecutionContext::run"].append(time_cpp(args.cpp, model, args.threads, args.seconds))
        rows["Python InferenceSession.run"].append(time_python(lambda: session.run(None, feeds), args.seconds))
        rows["Python Context.run"].append(time_python(lambda: context.run(feeds), args.seconds))

    cpp = statistics.median(rows["C++ ExecutionContext::run"])
    print(f"\n{model}, batch 1, {args.threads} thread(s), {args.rounds} rounds: median us per run\n")
    print("| API | median (us) | rounds (us) | over C++ (us) |")
    print("| --- | ---: | --- | ---: |")
    for name, values in rows.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.1f} | {', '.join(f'{value:.1f}' for value in values)} | {median - cpp:+.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpp", required=True, help="qdqrt_bench_engine_run")
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    args = parser.parse_args()
    measure(args, args.model)
    with tempfile.TemporaryDirectory() as work:
        tiny = pathlib.Path(work) / "tiny.onnx"
        write_tiny_model(tiny)
        measure(args, str(tiny))


if __name__ == "__main__":
    main()
