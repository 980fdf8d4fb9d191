# InferenceSession over a range of shapes: the TensorRT execution provider's profile options
# (trt_profile_min_shapes / _opt_ / _max_, "name:1x3x8x8") build one engine that runs every shape
# in the range; a shape outside it raises naming the input, dim and range.
import subprocess
import threading
import warnings

import numpy as np
import pytest

import qdqrt

PROFILE = {
    "trt_profile_min_shapes": "x:1x3x8x8",
    "trt_profile_opt_shapes": "x:2x3x16x16",
    "trt_profile_max_shapes": "x:4x3x24x24",
}


@pytest.fixture(scope="module")
def conv_model(tmp_path_factory):
    """Conv 3x3 (pad 1) -> Relu over float[N, 3, H, W], and its weights."""
    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(5)
    weight = rng.standard_normal((4, 3, 3, 3), dtype=np.float32) * np.float32(0.3)
    bias = rng.standard_normal(4, dtype=np.float32) * np.float32(0.1)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, "H", "W"])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")])
    path = tmp_path_factory.mktemp("profiles") / "conv.onnx"
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path), weight, bias


def numpy_conv_relu(x, weight, bias):
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))  # N, C, H, W, 3, 3
    out = np.einsum("nchwij,kcij->nkhw", windows.astype(np.float64), weight.astype(np.float64)) + bias[None, :, None, None]
    return np.maximum(out, 0)


def range_session(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ORT warns that the TensorRT EP is not available; so does qdqrt
        return qdqrt.InferenceSession(path, **kwargs)


def test_any_shape_in_the_range_runs_on_one_engine(conv_model):
    path, weight, bias = conv_model
    session = range_session(path, providers=[("TensorrtExecutionProvider", PROFILE), "CPUExecutionProvider"])
    assert session.profile == {"x": ([1, 3, 8, 8], [2, 3, 16, 16], [4, 3, 24, 24])}
    assert session.get_inputs()[0].shape == ["N", 3, "H", "W"]
    per_shape = qdqrt.InferenceSession(path)  # without a profile: rebuilt at each new shape
    rng = np.random.default_rng(3)
    for shape in [(1, 3, 8, 8), (2, 3, 16, 12), (4, 3, 24, 24), (3, 3, 9, 17), (2, 3, 16, 12)]:
        x = rng.standard_normal(shape, dtype=np.float32)
        [y] = session.run(None, {"x": x})
        assert y.shape == (shape[0], 4, shape[2], shape[3])
        # The range engine lowers each shape at the profile's maximum batch (4) and a per-shape engine
        # at the run's; the float Winograd choice counts the images (an 8x8 map: Winograd for 4, the
        # igemm for 1), so sums may differ by rounding.
        np.testing.assert_allclose(y, per_shape.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(y, numpy_conv_relu(x, weight, bias), rtol=1e-4, atol=1e-4)
    # io_binding takes the same path.
    x = rng.standard_normal((1, 3, 10, 8), dtype=np.float32)
    binding = session.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y")
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], session.run(None, {"x": x})[0])


def test_provider_options_list_and_default_opt(conv_model):
    path, weight, bias = conv_model
    options = {"trt_profile_min_shapes": "x:1x3x8x8", "trt_profile_max_shapes": "x:1x3x12x12"}
    session = range_session(path, providers=["TensorrtExecutionProvider"], provider_options=[options])
    assert session.profile == {"x": ([1, 3, 8, 8], [1, 3, 12, 12], [1, 3, 12, 12])}
    x = np.random.default_rng(4).standard_normal((1, 3, 11, 9), dtype=np.float32)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], numpy_conv_relu(x, weight, bias), rtol=1e-4, atol=1e-4)
    assert qdqrt.InferenceSession(path).profile is None


def test_shapes_outside_the_range_raise_naming_input_dim_and_range(conv_model):
    path, _, _ = conv_model
    session = range_session(path, providers=[("TensorrtExecutionProvider", PROFILE)])
    cases = [
        ((1, 3, 32, 8), r"input 'x': dim 2 of \[1, 3, 32, 8\] is 32, outside the profile's range 8..24"),
        ((1, 3, 8, 7), r"dim 3 of \[1, 3, 8, 7\] is 7, outside the profile's range 8..24"),
        ((5, 3, 8, 8), r"dim 0 of \[5, 3, 8, 8\] is 5, outside the profile's range 1..4"),
        ((1, 3, 8), r"has rank 3"),
    ]
    for shape, message in cases:
        with pytest.raises(ValueError, match=message):
            session.run(None, {"x": np.zeros(shape, np.float32)})
    with pytest.raises(ValueError, match="no shape given for input 'x'"):
        session.run(None, {})
    with pytest.raises(TypeError, match="float32"):
        session.run(None, {"x": np.zeros((1, 3, 8, 8), np.float64)})
    assert session.run(None, {"x": np.ones((1, 3, 8, 8), np.float32)})[0].shape == (1, 4, 8, 8)


def test_bad_profile_options_are_refused(conv_model, tmp_path):
    path, _, _ = conv_model
    cases = [
        ({"trt_profile_min_shapes": "x:1x3x8x8"}, "needs trt_profile_min_shapes and trt_profile_max_shapes"),
        ({"trt_profile_min_shapes": "x:1x3xAx8", "trt_profile_max_shapes": "x:1x3x8x8"}, "dim 'A' that is not a number"),
        ({"trt_profile_min_shapes": "1x3x8x8", "trt_profile_max_shapes": "x:1x3x8x8"}, "is not NAME:DIMS"),
        ({"trt_profile_min_shapes": "y:1x3x8x8", "trt_profile_max_shapes": "y:1x3x8x8"}, "'y' is not an input of the model"),
        ({"trt_profile_min_shapes": "x:1x3x8x8", "trt_profile_max_shapes": "x:1x3x4x4"}, "dim 2 needs min <= opt <= max"),
        ({"trt_profile_min_shapes": "x:1x4x8x8", "trt_profile_max_shapes": "x:1x4x8x8"}, "dim 1 is 3 in the model"),
    ]
    for options, message in cases:
        with pytest.raises(ValueError, match=message):
            range_session(path, providers=[("TensorrtExecutionProvider", options)])
    engine_file = tmp_path / "conv.qdqrt"
    engine = qdqrt.build(path, input_shapes={"x": [1, 3, 8, 8]})
    engine.save(str(engine_file))
    with pytest.raises(ValueError, match=r"an engine file runs the shapes \(or the profiles\) it was built with"):
        range_session(str(engine_file), providers=[("TensorrtExecutionProvider", PROFILE)])


def test_concurrent_runs_at_different_shapes(conv_model):
    path, weight, bias = conv_model
    session = range_session(path, providers=[("TensorrtExecutionProvider", PROFILE)])
    failures = []

    def client(seed):
        rng = np.random.default_rng(seed)
        for step in range(6):
            shape = (1 + step % 3, 3, 8 + 2 * ((seed + step) % 8), 8 + 3 * ((seed * step) % 5))
            x = rng.standard_normal(shape, dtype=np.float32)
            y = session.run(None, {"x": x})[0]
            if not np.allclose(y, numpy_conv_relu(x, weight, bias), rtol=1e-4, atol=1e-4):
                failures.append(shape)

    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures


def test_set_providers_sets_and_drops_the_range(conv_model):
    path, weight, bias = conv_model
    session = qdqrt.InferenceSession(path)
    x = np.random.default_rng(8).standard_normal((1, 3, 30, 9), dtype=np.float32)
    session.run(None, {"x": x})  # any shape: built at the feeds' shapes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.set_providers([("TensorrtExecutionProvider", PROFILE)])
    assert session.profile == {"x": ([1, 3, 8, 8], [2, 3, 16, 16], [4, 3, 24, 24])}
    with pytest.raises(ValueError, match="dim 2 of \\[1, 3, 30, 9\\] is 30, outside the profile's range 8..24"):
        session.run(None, {"x": x})
    small = x[:, :, :12, :]
    np.testing.assert_allclose(session.run(None, {"x": np.ascontiguousarray(small)})[0],
                               numpy_conv_relu(small, weight, bias), rtol=1e-4, atol=1e-4)
    session.set_providers(["CPUExecutionProvider"])
    assert session.profile is None
    np.testing.assert_allclose(session.run(None, {"x": x})[0], numpy_conv_relu(x, weight, bias), rtol=1e-4, atol=1e-4)


def test_a_range_engine_file_runs_its_profiles(conv_model, cli, tmp_path):
    """A range engine saved by `qdqrt exec` (two profiles) loads as a session over its profiles."""
    path, weight, bias = conv_model
    engine_file = tmp_path / "conv_range.qdqrt"
    subprocess.run([cli, "exec", f"--onnx={path}", "--minShapes=x:1x3x8x8", "--maxShapes=x:2x3x16x16",
                    "--minShapes=x:1x3x17x17", "--maxShapes=x:1x3x32x32", f"--saveEngine={engine_file}",
                    "--iterations=1", "--warmUp=0", "--duration=0"], check=True, capture_output=True, timeout=300)
    for source in (str(engine_file), engine_file.read_bytes()):
        session = qdqrt.InferenceSession(source)
        assert session.profiles == [{"x": ([1, 3, 8, 8], [2, 3, 16, 16], [2, 3, 16, 16])},
                                    {"x": ([1, 3, 17, 17], [1, 3, 32, 32], [1, 3, 32, 32])}]
        assert session.get_inputs()[0].shape == ["N", 3, "H", "W"]  # as the file's model declares them
        assert session.get_outputs()[0].name == "y"
        rng = np.random.default_rng(11)
        for shape in [(2, 3, 8, 13), (1, 3, 30, 17)]:
            x = rng.standard_normal(shape, dtype=np.float32)
            np.testing.assert_allclose(session.run(None, {"x": x})[0], numpy_conv_relu(x, weight, bias),
                                       rtol=1e-4, atol=1e-4)
        with pytest.raises(ValueError, match="input 'x'"):
            session.run(None, {"x": np.zeros((2, 3, 20, 20), np.float32)})  # batch 2 only in the first profile
        with pytest.raises(ValueError, match="the profiles"):
            range_session(source, providers=[("TensorrtExecutionProvider", PROFILE)])


def test_the_engine_api_points_a_range_engine_file_to_the_session(conv_model, cli, tmp_path):
    """qdqrt.load() runs one shape: given a range engine's file it says what opens it."""
    path, _, _ = conv_model
    engine_file = tmp_path / "conv_range_load.qdqrt"
    subprocess.run([cli, "exec", f"--onnx={path}", "--minShapes=x:1x3x8x8", "--maxShapes=x:1x3x16x16",
                    f"--saveEngine={engine_file}", "--buildOnly"], check=True, capture_output=True, timeout=300)
    for source in (str(engine_file), engine_file.read_bytes()):
        with pytest.raises(Exception, match=r"range engine .*qdqrt.InferenceSession\(path\)"):
            qdqrt.load(source)
