# qdqrt.quantization as ONNX Runtime's: the documented quantize_static example (its data reader
# class and call, from onnxruntime-inference-examples' image classification sample) with only the
# imports changed, then ORT's arguments one by one.
import numpy as np
import onnx
from onnx import numpy_helper
import pytest

import qdqrt as onnxruntime                                       # was: import onnxruntime
from qdqrt.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
from conftest import FASHION_MNIST, FP32_MODEL, fashion_mnist


def _preprocess_images(size_limit):
    """The user's own preprocessing (the sample reads image files): images as the model was trained on."""
    if FASHION_MNIST.is_dir():
        images = fashion_mnist("train", size_limit)[0]
    else:
        images = np.random.default_rng(1).standard_normal((size_limit, 1, 28, 28), dtype=np.float32)
    return [image[None] for image in images]


class DataReader(CalibrationDataReader):
    def __init__(self, model_path: str):
        self.enum_data = None
        session = onnxruntime.InferenceSession(model_path, None)
        (_, _, height, width) = session.get_inputs()[0].shape
        self.nhwc_data_list = _preprocess_images(size_limit=64)
        self.input_name = session.get_inputs()[0].name
        self.datasize = len(self.nhwc_data_list)

    def get_next(self):
        if self.enum_data is None:
            self.enum_data = iter([{self.input_name: nhwc_data} for nhwc_data in self.nhwc_data_list])
        return next(self.enum_data, None)

    def rewind(self):
        self.enum_data = None


def _ops(path):
    return [node.op_type for node in onnx.load(str(path)).graph.node]


def _agreement(quantized_path, count=256):
    if FASHION_MNIST.is_dir():
        images = fashion_mnist("test", count)[0]
    else:
        images = np.random.default_rng(2).standard_normal((count, 1, 28, 28), dtype=np.float32)
    reference = onnxruntime.InferenceSession(str(FP32_MODEL)).run(None, {"input": images})[0].argmax(1)
    quantized = onnxruntime.InferenceSession(str(quantized_path)).run(None, {"input": images})[0].argmax(1)
    return float((reference == quantized).mean())


def test_the_documented_example_runs_with_only_the_import_changed(tmp_path):
    input_model_path, output_model_path = str(FP32_MODEL), str(tmp_path / "model.quant.onnx")
    dr = DataReader(input_model_path)
    quantize_static(input_model_path, output_model_path, dr, quant_format=QuantFormat.QDQ, per_channel=False,
                    weight_type=QuantType.QInt8)
    ops = _ops(output_model_path)
    assert ops.count("QuantizeLinear") > 0 and ops.count("DequantizeLinear") > 0
    # The quantized model runs in INT8 and agrees with the FP32 one.
    session = onnxruntime.InferenceSession(output_model_path)
    assert any(layer["kind"].startswith("q") for layer in session.engine.layers)
    if FASHION_MNIST.is_dir():
        assert _agreement(output_model_path) >= 0.9


def test_activation_type_and_per_channel_choose_the_qdq_style(tmp_path):
    s8, u8 = tmp_path / "s8.onnx", tmp_path / "u8.onnx"
    quantize_static(FP32_MODEL, s8, DataReader(str(FP32_MODEL)), per_channel=True)
    quantize_static(FP32_MODEL, u8, DataReader(str(FP32_MODEL)), activation_type=QuantType.QUInt8,
                    calibrate_method=CalibrationMethod.Entropy)
    s8_model, u8_model = onnx.load(str(s8)), onnx.load(str(u8))
    zero_points = {init.name: numpy_helper.to_array(init) for init in u8_model.graph.initializer
                   if init.name.endswith("_zero_point")}
    activation_zero_points = [v for v in zero_points.values() if v.dtype == np.uint8]
    assert activation_zero_points and all((v == 128).all() for v in activation_zero_points)
    # ORT-style placement quantizes more ops' inputs than TensorRT-style.
    assert _ops(u8).count("QuantizeLinear") > _ops(s8).count("QuantizeLinear")
    per_channel_scales = [init for init in s8_model.graph.initializer
                          if init.name.endswith("_scale") and len(init.dims) == 1 and init.dims[0] > 1]
    assert per_channel_scales  # per_channel=True: one scale per output channel
    assert not [init for init in u8_model.graph.initializer if init.name.endswith("_scale") and len(init.dims) > 0]
    if FASHION_MNIST.is_dir():
        assert _agreement(u8) >= 0.9


def test_nodes_to_exclude_and_op_types_to_quantize(tmp_path):
    model = onnx.load(str(FP32_MODEL))
    convs = [node.name for node in model.graph.node if node.op_type == "Conv"]
    excluded = tmp_path / "excluded.onnx"
    quantize_static(FP32_MODEL, excluded, DataReader(str(FP32_MODEL)), nodes_to_exclude=[convs[0]])
    first = next(node for node in onnx.load(str(excluded)).graph.node if node.name == convs[0])
    producers = {output: node.op_type for node in onnx.load(str(excluded)).graph.node for output in node.output}
    assert all(producers.get(name) != "DequantizeLinear" for name in first.input)  # stays float
    only_gemm = tmp_path / "gemm.onnx"
    quantize_static(FP32_MODEL, only_gemm, DataReader(str(FP32_MODEL)), op_types_to_quantize=["Gemm", "MatMul"])
    graph = onnx.load(str(only_gemm)).graph
    producers = {output: node.op_type for node in graph.node for output in node.output}
    quantized_readers = {node.op_type for node in graph.node
                         if any(producers.get(name) == "DequantizeLinear" for name in node.input)}
    assert quantized_readers and quantized_readers <= {"Gemm", "MatMul"}, quantized_readers
    with pytest.raises(ValueError, match="nodes_to_exclude"):
        quantize_static(FP32_MODEL, tmp_path / "x.onnx", DataReader(str(FP32_MODEL)), nodes_to_exclude=["no_such_node"])


def test_what_qdqrt_cannot_do_is_refused_by_name(tmp_path):
    out = tmp_path / "x.onnx"
    with pytest.raises(ValueError, match="QOperator"):
        quantize_static(FP32_MODEL, out, DataReader(str(FP32_MODEL)), quant_format=QuantFormat.QOperator)
    with pytest.raises(ValueError, match="Distribution"):
        quantize_static(FP32_MODEL, out, DataReader(str(FP32_MODEL)), calibrate_method=CalibrationMethod.Distribution)
    with pytest.raises(ValueError, match="QUInt8"):
        quantize_static(FP32_MODEL, out, DataReader(str(FP32_MODEL)), weight_type=QuantType.QUInt8)
    with pytest.raises(TypeError):
        CalibrationDataReader()  # abstract, as in ORT
    assert not out.exists()


def test_sensitivity_ranks_each_quantized_node(tmp_path):
    """The CLI's --sensitivity from Python: each quantized node alone, ranked by the top-1 it loses."""
    if FASHION_MNIST.is_dir():
        images, labels = fashion_mnist("test", 64)
    else:
        images = np.random.default_rng(3).standard_normal((64, 1, 28, 28), dtype=np.float32)
        labels = np.zeros(64, np.int64)
    model = onnx.load(str(FP32_MODEL))
    excluded = next(node.name for node in model.graph.node if node.op_type == "Conv")
    result = onnxruntime.calibrate(str(FP32_MODEL), DataReader(str(FP32_MODEL)), exclude=[excluded],
                                   sensitivity=(images, labels), threads=2)
    ranking = result.sensitivity
    assert ranking["images"] == 64 and 0 <= ranking["fp32_top1"] <= 100 and 0 <= ranking["int8_top1"] <= 100
    nodes = [row["node"] for row in ranking["rows"]]
    assert nodes and excluded not in nodes  # excluded nodes stay float, so they are not ranked
    assert [row["lost"] for row in ranking["rows"]] == sorted((row["lost"] for row in ranking["rows"]), reverse=True)
    assert all(abs(ranking["fp32_top1"] - row["top1"] - row["lost"]) < 1e-9 for row in ranking["rows"])
    assert "top-1 lost" in ranking["table"]
    assert onnxruntime.calibrate(str(FP32_MODEL), DataReader(str(FP32_MODEL))).sensitivity is None
    with pytest.raises(ValueError, match="one label per image"):
        onnxruntime.calibrate(str(FP32_MODEL), DataReader(str(FP32_MODEL)), sensitivity=(images, labels[:3]))
