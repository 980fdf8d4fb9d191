# InferenceSession as ONNX Runtime's: call shapes, NodeArgs, errors, options, threads, no copies.
import json
import os
import re
import subprocess
import threading
import tracemalloc

import numpy as np
import pytest

import qdqrt
from conftest import QDQ_MODEL, SOURCE_ROOT


@pytest.fixture(scope="module")
def session():
    return qdqrt.InferenceSession(str(QDQ_MODEL))


def test_version_is_cmake_project_version(cli):
    cmake = (SOURCE_ROOT / "CMakeLists.txt").read_text()
    version = re.search(r"project\(qdqrt VERSION ([0-9.]+)", cmake).group(1)
    assert qdqrt.__version__ == version
    assert subprocess.run([cli, "--version"], capture_output=True, text=True, check=True).stdout.strip() == f"qdqrt {version}"


def test_node_args(session):
    [model_input] = session.get_inputs()
    assert model_input.name == "input"
    assert model_input.type == "tensor(float)"
    assert model_input.shape[1:] == [1, 28, 28] and isinstance(model_input.shape[0], str)
    [output] = session.get_outputs()
    assert (output.name, output.type) == ("output", "tensor(float)")
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert "NodeArg(name='input'" in repr(model_input)


def test_run_shapes_and_output_names(session, images):
    [logits] = session.run(None, {"input": images[:1]})
    assert logits.shape == (1, 10) and logits.dtype == np.float32
    [by_name] = session.run(["output"], {"input": images[:1]})
    np.testing.assert_array_equal(by_name, logits)
    twice = session.run(["output", "output"], {"input": images[:1]})
    np.testing.assert_array_equal(twice[1], logits)


def test_larger_batches_rebuild_and_agree(session, images):
    singles = np.concatenate([session.run(None, {"input": images[i : i + 1]})[0] for i in range(len(images))])
    [batched] = session.run(None, {"input": images})
    np.testing.assert_array_equal(batched, singles)  # engines are bit-identical across batches
    assert session.engine.max_batch >= len(images)
    [fewer] = session.run(None, {"input": images[:3]})
    np.testing.assert_array_equal(fewer, singles[:3])


def test_bytes_and_engine_file_give_the_same_outputs(session, images, tmp_path):
    [expected] = session.run(None, {"input": images[:4]})
    from_bytes = qdqrt.InferenceSession(QDQ_MODEL.read_bytes())
    np.testing.assert_array_equal(from_bytes.run(None, {"input": images[:4]})[0], expected)
    engine = qdqrt.build(str(QDQ_MODEL), input_shapes={"input": [4, 1, 28, 28]})
    assert engine.version == qdqrt.__version__  # the version stored in the engine file
    path = tmp_path / "fmnist.qdqrt"
    engine.save(path)
    from_file = qdqrt.InferenceSession(str(path))
    assert from_file.get_inputs()[0].shape == ["batch", 1, 28, 28]
    assert from_file.engine.version == qdqrt.__version__
    np.testing.assert_array_equal(from_file.run(None, {"input": images[:4]})[0], expected)
    # An engine file cannot grow: a batch above the one it was built for is the engine's error.
    with pytest.raises(ValueError, match=r"dim 0 may be 1\.\.4"):
        from_file.run(None, {"input": images[:8]})


def test_symbolic_dims_take_the_feeds_shapes(tmp_path):
    from onnx import TensorProto, helper, save

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "length"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "length"])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "relu.onnx"))
    session = qdqrt.InferenceSession(str(tmp_path / "relu.onnx"))
    assert session.get_inputs()[0].shape == ["batch", "length"]
    assert session.engine is None  # built by the first run, at its shapes
    rng = np.random.default_rng(2)
    for shape in [(2, 5), (3, 7), (1, 7), (4, 5)]:
        x = rng.standard_normal(shape, dtype=np.float32)
        [y] = session.run(None, {"x": x})
        np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert session.engine.inputs[0].shape[1] == 5


def test_denormals_flushed_unless_the_session_keeps_them(tmp_path):
    from onnx import TensorProto, helper, save

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"])], "double",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "double.onnx"))
    x = np.full((2, 64), 1e-39, dtype=np.float32)  # below FLT_MIN
    x[0, 0] = 1.5
    [flushed] = qdqrt.InferenceSession(str(tmp_path / "double.onnx")).run(None, {"x": x})
    assert flushed[0, 0] == 3.0 and not flushed[1].any()
    options = qdqrt.SessionOptions()
    options.add_session_config_entry("session.set_denormal_as_zero", "0")  # ORT's key, ORT's default
    [kept] = qdqrt.InferenceSession(str(tmp_path / "double.onnx"), options).run(None, {"x": x})
    np.testing.assert_array_equal(kept, x + x)
    assert kept[1, 0] > 0


def test_no_reference_layers_refuses_a_node_no_native_layer_runs(tmp_path):
    from onnx import TensorProto, helper, save

    graph = helper.make_graph(
        [helper.make_node("CumSum", ["x", "axis"], ["y"], name="running_sum")], "cumsum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor("axis", TensorProto.INT64, [], [1])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), str(tmp_path / "cumsum.onnx"))
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    session = qdqrt.InferenceSession(str(tmp_path / "cumsum.onnx"))  # the default: a reference layer runs it
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], np.cumsum(x, axis=1))
    assert [(layer["kind"], layer.get("reason")) for layer in session.engine.layers] == [
        ("reference", "no native layer implements CumSum")]
    options = qdqrt.SessionOptions()
    options.no_reference_layers = True
    with pytest.raises(qdqrt.Error, match="CumSum 'running_sum': no native layer implements CumSum"):
        qdqrt.InferenceSession(str(tmp_path / "cumsum.onnx"), options)


def test_bf16_option_runs_float_matmuls_in_bf16_where_the_cpu_can(tmp_path):
    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(7)
    weight = rng.standard_normal((96, 64)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="projection")], "projection",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 96])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 64])],
        [numpy_helper.from_array(weight, "w")])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "projection.onnx"))
    x = rng.standard_normal((5, 96)).astype(np.float32)
    fp32 = qdqrt.InferenceSession(str(tmp_path / "projection.onnx"))
    assert [layer["kind"] for layer in fp32.engine.layers] == ["fp32_gemm"]
    options = qdqrt.SessionOptions()
    assert options.bf16 is False
    options.bf16 = True
    bf16 = qdqrt.InferenceSession(str(tmp_path / "projection.onnx"), options)
    expected = x @ weight
    with open("/proc/cpuinfo") as cpuinfo:
        has_bf16 = "avx512_bf16" in cpuinfo.read()
    if not has_bf16:  # a permission, not a requirement: the fp32 kernel, the fp32 result
        assert [layer["kind"] for layer in bf16.engine.layers] == ["fp32_gemm"]
        np.testing.assert_array_equal(bf16.run(None, {"x": x})[0], fp32.run(None, {"x": x})[0])
        return
    assert [layer["kind"] for layer in bf16.engine.layers] == ["bf16_gemm"]
    [y] = bf16.run(None, {"x": x})
    scale = np.abs(expected).max()
    assert np.abs(y - expected).max() <= 1e-2 * scale
    assert np.abs(y - fp32.run(None, {"x": x})[0]).max() > 1e-5 * scale  # bf16 operands, not fp32
    engine = qdqrt.build(str(tmp_path / "projection.onnx"), precision="fp32", bf16=True)
    assert [layer["kind"] for layer in engine.layers] == ["bf16_gemm"]


def test_errors(session, images):
    with pytest.raises(ValueError, match="'nope' is not an input"):
        session.run(None, {"nope": images[:1]})
    with pytest.raises(qdqrt.Error, match="'nope' is not an input"):  # also a qdqrt.Error
        session.run(None, {"nope": images[:1]})
    with pytest.raises(ValueError, match="not bound"):
        session.run(None, {})
    with pytest.raises(TypeError, match="float32"):
        session.run(None, {"input": images[:1].astype(np.float64)})
    with pytest.raises(ValueError, match="input"):
        session.run(None, {"input": images[:1, :, :14, :]})
    with pytest.raises(ValueError, match="not an output"):
        session.run(["logits"], {"input": images[:1]})
    with pytest.raises(qdqrt.Error, match="no_such_model.onnx"):
        qdqrt.InferenceSession("no_such_model.onnx")
    with pytest.raises(qdqrt.Error):
        qdqrt.InferenceSession(b"not a model")


def test_session_options_threads_and_profiling(images, tmp_path):
    options = qdqrt.SessionOptions()
    options.intra_op_num_threads = 1
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "profile")
    options.graph_optimization_level = qdqrt.GraphOptimizationLevel.ORT_ENABLE_ALL  # accepted, as in ORT scripts
    session = qdqrt.InferenceSession(str(QDQ_MODEL), sess_options=options, providers=["CPUExecutionProvider"])
    session.run(None, {"input": images[:1]})
    session.run(None, {"input": images[:1]})
    path = session.end_profiling()
    assert path.startswith(str(tmp_path / "profile")) and path.endswith(".json")
    events = json.loads(open(path).read())
    runs = [event for event in events if event["name"] == "model_run"]
    nodes = [event for event in events if event["cat"] == "Node"]
    assert len(runs) == 2 and len(nodes) == 2 * len(session.engine.layers)
    assert all(event["dur"] >= 0 for event in nodes)
    assert session.get_session_options().intra_op_num_threads == 1


def test_inputs_are_not_copied(session, images):
    batch = np.ascontiguousarray(np.repeat(images, 16, axis=0))  # 256 images, 800 KB
    session.run(None, {"input": batch})  # builds for this batch, contexts warm
    tracemalloc.start()
    session.run(None, {"input": batch})
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < batch.nbytes // 4, peak  # only the outputs (10 KB) are allocated


def test_gil_released_while_running(session, images):
    batch = np.ascontiguousarray(np.repeat(images, 32, axis=0))  # 512 images: tens of ms
    session.run(None, {"input": batch})
    started, done = threading.Event(), threading.Event()
    spins_during_run = 0

    def run():
        started.set()
        session.run(None, {"input": batch})
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    started.wait()
    while not done.is_set():
        spins_during_run += 1
    thread.join()
    # With the GIL held for the whole run this loop could not spin until the run returned.
    assert spins_during_run > 1000, spins_during_run


def test_threads_match_serial_runs(images):
    engine = qdqrt.build(str(QDQ_MODEL), input_shapes={"input": [4, 1, 28, 28]})
    feeds = [images[i : i + 4] for i in range(0, 16, 4)]
    serial_context = engine.create_context(threads=1)
    expected = [serial_context.run({"input": feed})["output"] for feed in feeds]
    session = qdqrt.InferenceSession(str(QDQ_MODEL))
    results, errors = {}, []

    def work(index):
        try:
            context = engine.create_context(threads=1)
            for repeat in range(20):
                for i, feed in enumerate(feeds):
                    results[(index, "context", repeat, i)] = context.run({"input": feed})["output"]
                    results[(index, "session", repeat, i)] = session.run(None, {"input": feed})[0]
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(results) == 4 * 2 * 20 * len(feeds)
    for (_, _, _, i), output in results.items():
        np.testing.assert_array_equal(output, expected[i])
