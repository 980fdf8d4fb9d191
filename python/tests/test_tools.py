# qdqrt.calibrate (a Python iterable or an ORT-style CalibrationDataReader) and qdqrt.inspect.
import numpy as np
import pytest

import qdqrt
from conftest import FASHION_MNIST, FP32_MODEL, QDQ_MODEL, fashion_mnist


def calibration_images(count):
    if FASHION_MNIST.is_dir():
        return fashion_mnist("train", count)[0]
    return np.random.default_rng(1).standard_normal((count, 1, 28, 28), dtype=np.float32)


def test_calibrate_from_an_iterable(images, tmp_path):
    batches = calibration_images(64).reshape(8, 8, 1, 28, 28)
    output = tmp_path / "ptq.onnx"
    result = qdqrt.calibrate(str(FP32_MODEL), ({"input": batch} for batch in batches), method="max", output=output)
    assert result.images == 64
    assert result.quantized_weights > 0 and result.quantized_activations > 0
    assert result.amax and all(value >= 0 for value in result.amax.values())
    assert output.read_bytes() == result.model
    session = qdqrt.InferenceSession(result.model)  # the QDQ model builds into an INT8 engine
    assert session.engine.precision == "int8"
    fp32 = qdqrt.InferenceSession(str(FP32_MODEL))
    ptq_top1 = session.run(None, {"input": images})[0].argmax(1)
    fp32_top1 = fp32.run(None, {"input": images})[0].argmax(1)
    assert (ptq_top1 == fp32_top1).mean() >= 0.8


def test_calibrate_from_a_calibration_data_reader():
    class Reader:  # ONNX Runtime's CalibrationDataReader shape: get_next() until None
        def __init__(self, images):
            self.feeds = iter([{"input": image[None]} for image in images])

        def get_next(self):
            return next(self.feeds, None)

    images = calibration_images(16)
    by_reader = qdqrt.calibrate(FP32_MODEL, Reader(images), method="percentile", percentile=99.9)
    by_list = qdqrt.calibrate(FP32_MODEL, [{"input": images}], method="percentile", percentile=99.9)
    assert by_reader.images == 16
    assert by_reader.amax == by_list.amax  # the same images in other batches


def test_calibrate_errors():
    images = calibration_images(4)
    with pytest.raises(ValueError, match="method"):
        qdqrt.calibrate(FP32_MODEL, [{"input": images}], method="minmax")
    with pytest.raises(ValueError, match="'input'"):
        qdqrt.calibrate(FP32_MODEL, [{"x": images}])
    with pytest.raises(ValueError, match="no feeds"):
        qdqrt.calibrate(FP32_MODEL, [])
    with pytest.raises(qdqrt.Error, match="Q/DQ|QuantizeLinear|already"):
        qdqrt.calibrate(QDQ_MODEL, [{"input": images}])


def test_inspect():
    report = qdqrt.inspect(str(QDQ_MODEL))
    assert {"Layers", "Summary", "PassesRun"} <= set(report)
    assert report["Summary"]["Int8MACShare"] == 1.0
    assert report["Summary"]["LayerCount"] == len(report["Layers"])
    assert any(layer["Precision"] == "INT8" for layer in report["Layers"])
    fp32 = qdqrt.inspect(QDQ_MODEL, fp32=True)
    assert "INT8" not in fp32["Summary"]["LayersPerPrecision"]
    shaped = qdqrt.inspect(QDQ_MODEL, shapes={"input": [8, 1, 28, 28]})
    assert shaped["Layers"][0]["Inputs"][0]["Dimensions"][0] == 8
    with pytest.raises(ValueError, match="disabled_passes: unknown pass 'nope'"):
        qdqrt.inspect(QDQ_MODEL, disabled_passes=["nope"])
