#!/usr/bin/env python3
"""Every HTTP endpoint docs/serve.md lists, through `qdqrt serve` on 127.0.0.1 with Python's own
HTTP client (urllib / http.client, as a Triton HTTP client speaks it): KServe v2 health, metadata,
readiness, infer (JSON, Triton's binary extension, a form-encoded body as curl -d sends it,
gzip and chunked bodies), Triton's statistics, repository and system shared-memory extensions, the
Prometheus metrics, and the error shape of each refusal.

Usage: http_conformance_test.py QDQRT MODEL.onnx
"""
import gzip
import http.client
import json
from multiprocessing import shared_memory
import os
import struct
import subprocess
import sys
import tempfile
import time

QDQRT, MODEL = sys.argv[1:3]


def start_server(directory):
    port_file = os.path.join(directory, "ports")
    process = subprocess.Popen(
        [QDQRT, "serve", f"--model=fmnist={MODEL}", "--host=127.0.0.1", "--httpPort=0", "--grpcPort=-1",
         "--metricsPort=0", f"--portFile={port_file}", f"--engineCacheDir={directory}/cache",
         "--maxBodyBytes=1048576"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while not os.path.exists(port_file):
        if process.poll() is not None or time.time() > deadline:
            process.kill()
            raise RuntimeError("qdqrt serve did not start: " + process.stderr.read().decode(errors="replace"))
        time.sleep(0.05)
    ports = dict(line.split("=") for line in open(port_file).read().split())
    return process, int(ports["http"]), int(ports["metrics"])


class Client:
    def __init__(self, port):
        self.port = port

    def request(self, method, path, body=None, headers=None, chunked=False):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            if chunked:
                connection.request(method, path, body=iter([body[i:i + 1000] for i in range(0, len(body), 1000)]),
                                   headers=headers or {}, encode_chunked=True)
            else:
                connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def json(self, method, path, body=None, headers=None):
        status, _, data = self.request(method, path, body, headers)
        return status, (json.loads(data) if data else None)


failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("  FAILED:", what)


def images(batch, seed):
    values, state = [], seed
    for _ in range(batch * 784):
        state = (state * 1664525 + 1013904223) % 2**32
        values.append(state / 2**31 - 1.0)
    return [struct.unpack("f", struct.pack("f", v))[0] for v in values]


def infer_body(batch, seed, **extra):
    return json.dumps({"inputs": [{"name": "input", "shape": [batch, 1, 28, 28], "datatype": "FP32",
                                   "data": images(batch, seed)}], **extra}).encode()


def main():
    with tempfile.TemporaryDirectory() as directory:
        process, port, metrics_port = start_server(directory)
        try:
            run(Client(port), Client(metrics_port))
        finally:
            process.terminate()
            code = process.wait(timeout=30)
            check(code == 0, f"exit code {code} after SIGTERM")
    print("http_conformance_test:", "FAILED" if failures else "passed", f"({len(failures)} failures)")
    sys.exit(1 if failures else 0)


def run(client, metrics):
    json_type = {"Content-Type": "application/json"}
    # Health and server metadata.
    check(client.request("GET", "/v2/health/live")[0] == 200, "live")
    check(client.request("GET", "/v2/health/ready")[0] == 200, "ready")
    status, server = client.json("GET", "/v2")
    check(status == 200 and server["name"] == "qdqrt", "server metadata")
    check(server["extensions"] == ["binary_tensor_data", "model_configuration", "model_repository", "statistics",
                                   "system_shared_memory"],
          f"advertised extensions {server['extensions']}")
    # Model metadata and readiness.
    expected_metadata = {"name": "fmnist", "versions": ["1"], "platform": "qdqrt_onnx",
                         "inputs": [{"name": "input", "datatype": "FP32", "shape": [-1, 1, 28, 28]}],
                         "outputs": [{"name": "output", "datatype": "FP32", "shape": [-1, 10]}]}
    for path in ("/v2/models/fmnist", "/v2/models/fmnist/versions/1"):
        check(client.json("GET", path) == (200, expected_metadata), f"metadata {path}")
    for path, wanted in (("/v2/models/fmnist/ready", 200), ("/v2/models/fmnist/versions/1/ready", 200),
                         ("/v2/models/fmnist/versions/9/ready", 404), ("/v2/models/nope/ready", 404)):
        check(client.request("GET", path)[0] == wanted, f"ready {path}")
    status, error = client.json("GET", "/v2/models/nope")
    check(status == 404 and error == {"error": "unknown model 'nope'"}, "unknown model error shape")
    # Infer: JSON, id echoed, every output.
    status, answer = client.json("POST", "/v2/models/fmnist/infer", infer_body(2, 1, id="r-1"), json_type)
    check(status == 200 and answer["id"] == "r-1" and answer["model_version"] == "1", "JSON infer")
    logits = answer["outputs"][0]["data"] if status == 200 else []
    check(answer and answer["outputs"][0]["shape"] == [2, 10] and len(logits) == 20, "JSON infer output shape")
    # The binary extension both ways: the same numbers, bit for bit.
    header = json.dumps({"inputs": [{"name": "input", "shape": [2, 1, 28, 28], "datatype": "FP32",
                                     "parameters": {"binary_data_size": 2 * 784 * 4}}],
                         "outputs": [{"name": "output", "parameters": {"binary_data": True}}]}).encode()
    raw = struct.pack(f"{2 * 784}f", *images(2, 1))
    status, headers, data = client.request("POST", "/v2/models/fmnist/infer", header + raw,
                                           {"Inference-Header-Content-Length": str(len(header)),
                                            "Content-Type": "application/octet-stream"})
    json_length = int(headers.get("Inference-Header-Content-Length", "0"))
    check(status == 200 and list(struct.unpack("20f", data[json_length:])) == logits, "binary infer equals JSON infer")
    # System shared memory: the input read from a region, the output written into it.
    region = shared_memory.SharedMemory(create=True, size=65536)
    try:
        key = "/" + region.name
        check(client.request("POST", "/v2/systemsharedmemory/region/r/register",
                             json.dumps({"key": key, "offset": 0, "byte_size": 65536}).encode(), json_type)[0] == 200,
              "shared memory register")
        check(client.json("GET", "/v2/systemsharedmemory/region/r/status") ==
              (200, [{"name": "r", "key": key, "offset": 0, "byte_size": 65536}]), "shared memory status")
        region.buf[:2 * 784 * 4] = raw
        body = json.dumps({"inputs": [{"name": "input", "shape": [2, 1, 28, 28], "datatype": "FP32",
                                       "parameters": {"shared_memory_region": "r", "shared_memory_byte_size": 2 * 784 * 4}}],
                           "outputs": [{"name": "output", "parameters": {"shared_memory_region": "r",
                                                                         "shared_memory_offset": 32768,
                                                                         "shared_memory_byte_size": 80}}]}).encode()
        status, answer = client.json("POST", "/v2/models/fmnist/infer", body, json_type)
        check(status == 200 and "data" not in answer["outputs"][0], "shared memory infer")
        check(list(struct.unpack("20f", bytes(region.buf[32768:32768 + 80]))) == logits,
              "shared memory output equals JSON infer")
        status, error = client.json("POST", "/v2/models/fmnist/infer", body.replace(b"32768", b"65500"), json_type)
        check(status == 400 and "runs past shared memory region 'r'" in error["error"], "shared memory out of range")
        check(client.request("POST", "/v2/systemsharedmemory/region/r/unregister")[0] == 200, "shared memory unregister")
        check(client.json("GET", "/v2/systemsharedmemory/status") == (200, []), "shared memory status empty")
    finally:
        region.close()
        region.unlink()
    # A form-encoded body (curl -d) over 8 KiB, a gzip body and a chunked body: the same answer.
    form = infer_body(3, 5)
    check(len(form) > 8192, "form body size")
    status, by_form = client.json("POST", "/v2/models/fmnist/infer", form,
                                  {"Content-Type": "application/x-www-form-urlencoded"})
    check(status == 200 and by_form["outputs"][0]["shape"] == [3, 10], "form-encoded JSON infer")
    status, by_gzip = client.json("POST", "/v2/models/fmnist/infer", gzip.compress(form),
                                  {"Content-Encoding": "gzip", **json_type})
    check(status == 200 and by_gzip.get("outputs") == by_form.get("outputs"), "gzip body")
    status, _, data = client.request("POST", "/v2/models/fmnist/infer", form, json_type, chunked=True)
    check(status == 200 and json.loads(data).get("outputs") == by_form.get("outputs"), "chunked body")
    # Refusals and their error shape.
    refusals = [
        ("malformed JSON", b'{"inputs": [', json_type, 400),
        ("repeated output", infer_body(1, 2, outputs=[{"name": "output"}, {"name": "output"}]), json_type, 400),
        ("classification", infer_body(1, 2, outputs=[{"name": "output", "parameters": {"classification": 2}}]),
         json_type, 400),
        ("over the body limit", b" " * (2 << 20), json_type, 413),
        ("gzip bomb", gzip.compress(b" " * (8 << 20)), {"Content-Encoding": "gzip", **json_type}, 413),
        ("unknown content coding", b"{}", {"Content-Encoding": "compress", **json_type}, 415),
    ]
    for name, body, headers, wanted in refusals:
        status, _, data = client.request("POST", "/v2/models/fmnist/infer", body, headers)
        try:
            message = json.loads(data)["error"]
        except (ValueError, KeyError, TypeError):
            message = None
        check(status == wanted and isinstance(message, str) and message, f"{name}: {status} {data[:120]!r}")
    status, _, _ = client.request("GET", "/v2/health/live", headers={f"X-{i}": "1" for i in range(200)})
    check(status == 431, f"200 header fields: {status}")
    # Model configuration.
    for path in ("/v2/models/fmnist/config", "/v2/models/fmnist/versions/1/config"):
        status, config = client.json("GET", path)
        check(status == 200 and config["name"] == "fmnist" and config["max_batch_size"] == 8 and
              config["input"] == [{"name": "input", "data_type": "TYPE_FP32", "dims": [1, 28, 28]}] and
              config["output"] == [{"name": "output", "data_type": "TYPE_FP32", "dims": [10]}], f"config {path}")
    check(client.request("GET", "/v2/models/nope/config")[0] == 404, "config of an unknown model")
    # Statistics.
    for path in ("/v2/models/stats", "/v2/models/fmnist/stats", "/v2/models/fmnist/versions/1/stats"):
        status, stats = client.json("GET", path)
        model = stats["model_stats"][0] if status == 200 and stats["model_stats"] else {}
        check(model.get("name") == "fmnist" and model["inference_stats"]["success"]["count"] >= 5 and
              model["inference_stats"]["fail"]["count"] >= 1 and model["execution_count"] >= 5 and
              {"success", "fail", "queue", "compute_input", "compute_infer", "compute_output"} <=
              set(model["inference_stats"]) and all("batch_size" in b for b in model["batch_stats"]),
              f"statistics {path}")
    check(client.request("GET", "/v2/models/nope/stats")[0] == 404, "statistics of an unknown model")
    # Repository: index (with no body at all, and ready only), unload, load, refusals.
    status, index = client.json("POST", "/v2/repository/index")
    check(status == 200 and index == [{"name": "fmnist", "version": "1", "state": "READY"}], f"index {index}")
    check(client.json("POST", "/v2/repository/index", b'{"ready": true}', json_type)[0] == 200, "index ready")
    check(client.request("POST", "/v2/repository/models/fmnist/unload", b"")[0] == 200, "unload")
    check(client.request("GET", "/v2/models/fmnist/ready")[0] == 503, "unloaded model not ready")
    check(client.request("POST", "/v2/models/fmnist/infer", infer_body(1, 3), json_type)[0] == 503, "unloaded infer")
    check(client.request("POST", "/v2/repository/models/fmnist/load", b"")[0] == 200, "load")
    check(client.request("GET", "/v2/health/ready")[0] == 200, "ready after load")
    check(client.request("POST", "/v2/repository/models/nope/load", b"")[0] == 404, "load of a model that does not exist")
    check(client.request("GET", "/v2/health/ready")[0] == 200, "ready after a failed load")
    check(client.request("POST", "/v2/repository/models/fmnist/load", b'{"parameters": {"config": "{}"}}',
                         json_type)[0] == 400, "load with a config override")
    # Metrics.
    status, _, text = metrics.request("GET", "/metrics")
    text = text.decode()
    for name in ("nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count",
                 "nv_inference_exec_count", "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
                 "nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us",
                 "nv_inference_compute_output_duration_us", "nv_inference_pending_request_count",
                 "qdqrt_inference_batch_size_bucket"):
        check(status == 200 and f'{name}{{model="fmnist",version="1"' in text, f"metric {name}")
    for name in ("nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes"):
        check(f"\n{name} " in text, f"metric {name}")


if __name__ == "__main__":
    main()
