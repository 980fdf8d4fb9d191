# ONNX Runtime's Python surface beyond run(): model metadata, RunOptions, OrtValue, IOBinding,
# providers, input conversion, SessionOptions as ORT checks them, ORT's profile schema, and the
# files a session is handed (FIFOs, devices).
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import qdqrt
from conftest import QDQ_MODEL


@pytest.fixture(scope="module")
def session():
    return qdqrt.InferenceSession(str(QDQ_MODEL))


def small_model(path, **metadata):
    from onnx import TensorProto, helper, save

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "tiny_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
    graph.doc_string = "graph doc"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="unit-test",
                              doc_string="model doc", domain="test.domain", model_version=7)
    helper.set_model_props(model, metadata)
    save(model, str(path))
    return str(path)


def test_get_modelmeta(tmp_path):
    session = qdqrt.InferenceSession(small_model(tmp_path / "m.onnx", author="me", license="MIT"))
    meta = session.get_modelmeta()
    assert (meta.producer_name, meta.graph_name, meta.domain) == ("unit-test", "tiny_graph", "test.domain")
    assert (meta.description, meta.graph_description, meta.version) == ("model doc", "graph doc", 7)
    assert meta.custom_metadata_map == {"author": "me", "license": "MIT"}
    from_bytes = qdqrt.InferenceSession((tmp_path / "m.onnx").read_bytes())
    assert from_bytes.get_modelmeta().custom_metadata_map == {"author": "me", "license": "MIT"}


def test_run_options_terminate(session, images):
    options = qdqrt.RunOptions()
    options.log_severity_level = 3
    [logits] = session.run(None, {"input": images[:1]}, options)
    assert logits.shape == (1, 10)
    options.terminate = True
    with pytest.raises(qdqrt.Error, match="terminate flag"):
        session.run(None, {"input": images[:1]}, options)
    with pytest.raises(AttributeError):
        options.no_such_option = 1


def test_run_options_terminate_stops_runs_in_another_thread(session, images):
    import threading
    import time

    options = qdqrt.RunOptions()
    batch = np.repeat(images[:1], 64, axis=0)
    stopped = []

    def run_until_stopped():
        deadline = time.monotonic() + 20
        for _ in range(100000):
            if time.monotonic() > deadline:
                return
            try:
                session.run(None, {"input": batch}, options)
            except qdqrt.Error as error:
                stopped.append(str(error))
                return

    runner = threading.Thread(target=run_until_stopped)
    runner.start()
    time.sleep(0.05)
    options.terminate = True
    runner.join(30)
    assert not runner.is_alive()
    assert stopped and "terminate flag" in stopped[0]
    options.terminate = False
    [logits] = session.run(None, {"input": batch}, options)
    assert logits.shape == (64, 10)


def test_ort_values_and_run_with_ort_values(session, images):
    [expected] = session.run(None, {"input": images[:2]})
    value = qdqrt.OrtValue.ortvalue_from_numpy(images[:2])
    assert value.shape() == [2, 1, 28, 28] and value.data_type() == "tensor(float)" and value.device_name() == "cpu"
    assert value.is_tensor() and value.data_ptr() == images[:2].__array_interface__["data"][0]  # shared, no copy
    [result] = session.run_with_ort_values(["output"], {"input": value})
    assert isinstance(result, qdqrt.OrtValue)
    np.testing.assert_array_equal(result.numpy(), expected)
    empty = qdqrt.OrtValue.ortvalue_from_shape_and_type([2, 10], np.float32)
    assert empty.shape() == [2, 10] and empty.numpy().dtype == np.float32
    with pytest.raises(ValueError, match="CPU only"):
        qdqrt.OrtValue.ortvalue_from_numpy(images[:1], "cuda", 0)


def test_io_binding_writes_preallocated_outputs_in_place(session, images):
    [expected] = session.run(None, {"input": images[:4]})
    binding = session.io_binding()
    binding.bind_cpu_input("input", images[:4])
    output = qdqrt.OrtValue.ortvalue_from_shape_and_type([4, 10], np.float32)
    binding.bind_ortvalue_output("output", output)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(output.numpy(), expected)  # written where it was bound
    assert binding.get_outputs()[0].data_ptr() == output.data_ptr()
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], expected)

    # Raw buffers (ORT's bind_input / bind_output with buffer_ptr) and outputs bound by name only.
    source = np.ascontiguousarray(images[4:6])
    target = np.zeros((2, 10), np.float32)
    binding.clear_binding_inputs()
    binding.clear_binding_outputs()
    binding.bind_input("input", "cpu", 0, np.float32, list(source.shape), source.ctypes.data)
    binding.bind_output("output", "cpu", 0, np.float32, [2, 10], target.ctypes.data)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(target, session.run(None, {"input": source})[0])
    binding.clear_binding_outputs()
    binding.bind_output("output")
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], target)

    # A bound output of the wrong shape or dtype is refused, naming the output.
    binding.clear_binding_outputs()
    binding.bind_ortvalue_output("output", qdqrt.OrtValue.ortvalue_from_shape_and_type([3, 10], np.float32))
    with pytest.raises(ValueError, match="output 'output': the bound array has shape"):
        session.run_with_iobinding(binding)
    binding.clear_binding_outputs()
    binding.bind_ortvalue_output("output", qdqrt.OrtValue.ortvalue_from_shape_and_type([2, 10], np.float64))
    with pytest.raises(TypeError, match="output 'output'"):
        session.run_with_iobinding(binding)


def test_providers(session):
    assert session.get_provider_options() == {"CPUExecutionProvider": {}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.set_providers(["CUDAExecutionProvider", "CPUExecutionProvider"])
        qdqrt.InferenceSession(str(QDQ_MODEL), providers=[("TensorrtExecutionProvider", {}), "CPUExecutionProvider"])
    messages = [str(warning.message) for warning in caught]
    assert any("'CUDAExecutionProvider' is not in available provider names" in m for m in messages), messages
    assert any("'TensorrtExecutionProvider'" in m for m in messages), messages
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        session.set_providers(["CPUExecutionProvider"])  # no warning for the provider qdqrt is


def test_inputs_converted_as_ort_converts_them(session, images):
    hwc = np.ascontiguousarray(images[0].transpose(1, 2, 0))  # [28, 28, 1]
    [expected] = session.run(None, {"input": np.ascontiguousarray(hwc.transpose(2, 0, 1)[None])})
    [transposed] = session.run(None, {"input": hwc.transpose(2, 0, 1)[None]})  # not C-contiguous
    np.testing.assert_array_equal(transposed, expected)
    [from_list] = session.run(None, {"input": images[:1].tolist()})  # Python floats, read as float32
    np.testing.assert_array_equal(from_list, session.run(None, {"input": images[:1]})[0])
    [swapped] = session.run(None, {"input": images[:1].astype(">f4")})  # big-endian
    np.testing.assert_array_equal(swapped, from_list)
    [fortran] = session.run(None, {"input": np.asfortranarray(images[:2])})
    np.testing.assert_array_equal(fortran, session.run(None, {"input": images[:2]})[0])
    with pytest.raises(TypeError, match="float32"):
        session.run(None, {"input": images[:1].astype(np.float64)})  # another dtype is still refused
    with pytest.raises(TypeError, match="input 'input'"):
        session.run(None, {"input": [["not", "numbers"]]})


def test_session_options_are_checked_as_ort_checks_them(tmp_path, images):
    options = qdqrt.SessionOptions()
    with pytest.raises(AttributeError):
        options.intra_op_num_thread = 2  # the typo ORT reports
    for bad in (-1, 1024, 100000):
        with pytest.raises(ValueError, match="intra_op_num_threads"):
            options.intra_op_num_threads = bad
    with pytest.raises(ValueError, match="inter_op_num_threads"):
        options.inter_op_num_threads = -2
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    options.log_severity_level = 3
    options.execution_mode = qdqrt.ExecutionMode.ORT_SEQUENTIAL
    engine = qdqrt.build(str(QDQ_MODEL))
    with pytest.raises(ValueError, match="threads"):
        engine.create_context(threads=-1)
    with pytest.raises(ValueError, match="threads"):
        engine.create_context(threads=100000)


def test_optimized_model_filepath_writes_the_optimized_graph(tmp_path):
    import onnx

    options = qdqrt.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    qdqrt.InferenceSession(str(QDQ_MODEL), options)
    optimized = onnx.load(str(tmp_path / "optimized.onnx"))
    original = onnx.load(str(QDQ_MODEL))
    ops = {node.op_type for node in optimized.graph.node}
    assert len(optimized.graph.node) < len(original.graph.node), ops  # Q/DQ pairs fused into layers
    assert "qdqrt" in {opset.domain for opset in optimized.opset_import}
    options.optimized_model_filepath = str(tmp_path / "no_such_dir" / "optimized.onnx")
    with pytest.raises(qdqrt.Error, match="optimized_model_filepath"):
        qdqrt.InferenceSession(str(QDQ_MODEL), options)


def test_profile_follows_ort_trace_schema(images, tmp_path):
    options = qdqrt.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "profile")
    session = qdqrt.InferenceSession(str(QDQ_MODEL), options)
    session.run(None, {"input": images[:3]})
    events = json.load(open(session.end_profiling()))
    nodes = [event for event in events if event["cat"] == "Node"]
    assert len(nodes) == len(session.engine.layers)
    for event, layer in zip(nodes, session.engine.layers):
        assert event["name"] == layer["name"] + "_kernel_time"
        assert event["ph"] == "X" and event["dur"] >= 0 and event["ts"] >= 0
        args = event["args"]
        assert args["provider"] == "CPUExecutionProvider" and args["op_name"]
        for entry in args["input_type_shape"] + args["output_type_shape"]:
            [(dtype, shape)] = entry.items()
            assert isinstance(dtype, str) and all(isinstance(dim, int) for dim in shape)
    first = nodes[0]["args"]["input_type_shape"][0]
    assert list(first.values())[0][0] == 3  # shapes at the run's batch
    assert [event["name"] for event in events if event["cat"] == "Session"] == ["model_run"]


def test_special_files_are_refused_not_read(tmp_path):
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    # In a child process: a session that blocked on the FIFO would hang the test run.
    script = (
        "import sys, qdqrt\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        qdqrt.InferenceSession(path)\n"
        "    except qdqrt.Error as error:\n"
        "        print(error)\n")
    result = subprocess.run([sys.executable, "-c", script, str(fifo), "/dev/zero", str(tmp_path / "missing.onnx")],
                            capture_output=True, text=True, timeout=60, env=os.environ)
    lines = result.stdout.splitlines()
    assert len(lines) == 3, (result.stdout, result.stderr)
    assert f"'{fifo}' is a FIFO" in lines[0]
    assert "'/dev/zero' is a character device" in lines[1]
    assert "missing.onnx' does not exist" in lines[2]


def test_engine_save_leaves_special_files_alone(tmp_path):
    engine = qdqrt.build(str(QDQ_MODEL))
    fifo = tmp_path / "engine.fifo"
    os.mkfifo(fifo)
    with pytest.raises(qdqrt.Error, match="not a regular file"):
        engine.save(fifo)
    assert fifo.is_fifo()
    planted = tmp_path / "engine.qdqrt.partial"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    planted.symlink_to(victim)
    engine.save(tmp_path / "engine.qdqrt")
    assert victim.read_text() == "keep me"
    assert qdqrt.load(tmp_path / "engine.qdqrt").max_batch == engine.max_batch
