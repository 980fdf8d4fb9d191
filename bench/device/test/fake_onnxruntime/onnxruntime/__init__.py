"""A stand-in for onnxruntime's Python API, for the bench/device tests only (put its parent folder
on PYTHONPATH): it checks the session options that bench/device/ort_bench.py sets, reads the
model's input with onnx, checks the feeds against it, and "runs" by sleeping FAKE_ORT_RUN_MS
milliseconds (default 2). Each session appends one JSON line with what it was given to the file
FAKE_ORT_LOG, when set. Not onnxruntime: no inference happens.
"""
import enum
import json
import os
import time

import numpy as np
import onnx

__version__ = "0.0.0-fake"

_TYPES = {onnx.TensorProto.FLOAT: ("tensor(float)", np.float32), onnx.TensorProto.UINT8: ("tensor(uint8)", np.uint8),
          onnx.TensorProto.INT8: ("tensor(int8)", np.int8), onnx.TensorProto.INT64: ("tensor(int64)", np.int64)}


class GraphOptimizationLevel(enum.Enum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.Enum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL


class NodeArg:
    def __init__(self, name, type_name, shape):
        self.name, self.type, self.shape = name, type_name, shape


def _fail(message):
    raise RuntimeError(f"fake onnxruntime: {message}")


class InferenceSession:
    def __init__(self, path, sess_options=None, providers=None):
        options = sess_options
        if not isinstance(options, SessionOptions):
            _fail("no SessionOptions given")
        if not isinstance(options.intra_op_num_threads, int) or options.intra_op_num_threads < 1:
            _fail(f"intra_op_num_threads must be a positive int, got {options.intra_op_num_threads!r}")
        if options.inter_op_num_threads != 1:
            _fail(f"inter_op_num_threads must be 1, got {options.inter_op_num_threads!r}")
        if options.execution_mode is not ExecutionMode.ORT_SEQUENTIAL:
            _fail(f"execution_mode must be ORT_SEQUENTIAL, got {options.execution_mode!r}")
        if not isinstance(options.graph_optimization_level, GraphOptimizationLevel):
            _fail(f"graph_optimization_level is not a GraphOptimizationLevel: {options.graph_optimization_level!r}")
        if providers != ["CPUExecutionProvider"]:
            _fail(f"providers must be ['CPUExecutionProvider'], got {providers!r}")
        model = onnx.load(path)  # with its external data: fails when the data file is missing
        initializers = {init.name for init in model.graph.initializer}
        self._inputs = []
        for value in model.graph.input:
            if value.name in initializers:
                continue
            type_name, dtype = _TYPES[value.type.tensor_type.elem_type]
            shape = [d.dim_value if d.dim_value > 0 else (d.dim_param or None) for d in value.type.tensor_type.shape.dim]
            self._inputs.append((NodeArg(value.name, type_name, shape), dtype))
        self._outputs = [value.name for value in model.graph.output]
        self._run_s = float(os.environ.get("FAKE_ORT_RUN_MS", "2")) / 1000.0
        log = os.environ.get("FAKE_ORT_LOG")
        if log:
            with open(log, "a") as handle:
                handle.write(json.dumps({"model": os.path.abspath(path), "intra_op_num_threads": options.intra_op_num_threads,
                                         "inter_op_num_threads": options.inter_op_num_threads,
                                         "execution_mode": options.execution_mode.name,
                                         "graph_optimization_level": options.graph_optimization_level.name,
                                         "providers": providers}) + "\n")

    def get_inputs(self):
        return [meta for meta, _ in self._inputs]

    def run(self, output_names, feeds):
        if output_names is not None:
            _fail("run() is given output names; ort_bench.py asks for all outputs (None)")
        if set(feeds) != {meta.name for meta, _ in self._inputs}:
            _fail(f"feeds {sorted(feeds)} do not match the inputs {[meta.name for meta, _ in self._inputs]}")
        for meta, dtype in self._inputs:
            value = feeds[meta.name]
            if not isinstance(value, np.ndarray) or value.dtype != dtype:
                _fail(f"input '{meta.name}' must be a numpy {np.dtype(dtype).name} array")
            for axis, size in enumerate(meta.shape):
                if isinstance(size, int) and value.shape[axis] != size:
                    _fail(f"input '{meta.name}' has shape {value.shape}, the model fixes axis {axis} to {size}")
        time.sleep(self._run_s)
        return [np.zeros(1, dtype=np.float32) for _ in self._outputs]
