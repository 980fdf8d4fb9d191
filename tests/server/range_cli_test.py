#!/usr/bin/env python3
"""`qdqrt serve --model=NAME=PATH --minShapes/--optShapes/--maxShapes` on 127.0.0.1: a conv net with
symbolic batch, height and width (written with onnx's helper) served over that range from one
engine: requests of two shapes are answered (output shapes follow), metadata reports -1 for the
dims that vary, a shape outside the range is a 400 naming input, dim and range, and SIGTERM stops
it (exit 0). A range naming no input of the model fails the start (exit 1).

Usage: range_cli_test.py QDQRT
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

QDQRT = sys.argv[1]
RANGE = ["--minShapes=x:1x3x8x8", "--optShapes=x:2x3x16x16", "--maxShapes=x:2x3x24x24"]


def write_model(path):
    rng = np.random.default_rng(1)
    weight = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]), helper.make_node("Relu", ["c"], ["y"])],
        "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, "Hh", "Wh"])], [numpy_helper.from_array(weight, "w")])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def start(directory, model, extra):
    port_file = os.path.join(directory, "ports")
    if os.path.exists(port_file):
        os.remove(port_file)
    process = subprocess.Popen([QDQRT, "serve", f"--model=conv={model}", "--host=127.0.0.1", "--httpPort=0",
                                "--grpcPort=-1", "--metricsPort=-1", f"--portFile={port_file}", "--noEngineCache"] + extra,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while not os.path.exists(port_file):
        if process.poll() is not None or time.time() > deadline:
            process.kill()
            return process, None
        time.sleep(0.05)
    ports = dict(line.split("=") for line in open(port_file).read().split())
    return process, int(ports["http"])


def post(port, shape):
    data = np.full(shape, 0.5, np.float32).ravel().tolist()
    body = json.dumps({"inputs": [{"name": "x", "shape": shape, "datatype": "FP32", "data": data}]}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/conv/infer", body,
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("  FAILED:", what)


with tempfile.TemporaryDirectory() as directory:
    model = os.path.join(directory, "conv.onnx")
    write_model(model)
    process, port = start(directory, model, RANGE)
    check(port is not None, "serve started: " + (process.stderr.read().decode(errors="replace") if port is None else ""))
    if port is not None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/models/conv", timeout=30) as response:
                metadata = json.loads(response.read())
            check(metadata["inputs"][0]["shape"] == [-1, 3, -1, -1], f"input metadata {metadata['inputs']}")
            check(metadata["outputs"][0]["shape"] == [-1, 4, -1, -1], f"output metadata {metadata['outputs']}")
            for shape, expected in [([1, 3, 8, 8], [1, 4, 4, 4]), ([2, 3, 24, 17], [2, 4, 12, 9])]:
                status, answer = post(port, shape)
                check(status == 200 and answer["outputs"][0]["shape"] == expected, f"{shape}: {status} {answer}")
            status, answer = post(port, [1, 3, 32, 8])
            check(status == 400 and "input 'x': dim 2 of [1, 3, 32, 8] is 32, outside the profile's range 8..24"
                  in answer.get("error", ""), f"out of range: {status} {answer}")
        finally:
            process.send_signal(signal.SIGTERM)
            check(process.wait(timeout=60) == 0, "exit 0 on SIGTERM")
    process, port = start(directory, model, ["--minShapes=image:1x3x8x8", "--maxShapes=image:1x3x8x8"])
    code = process.wait(timeout=60)
    message = process.stderr.read().decode(errors="replace")
    check(port is None and code == 1 and "'input_ranges' names 'image', which is not an input" in message,
          f"bad range: exit {code}: {message}")
    process, port = start(directory, model, ["--minShapes=x:1x3x8x8"])
    code = process.wait(timeout=60)
    message = process.stderr.read().decode(errors="replace")
    check(code == 2 and "shape but no maximum (--maxShapes=x:DIMS)" in message,
          f"min without max: exit {code}: {message}")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("range serve CLI: ok")
