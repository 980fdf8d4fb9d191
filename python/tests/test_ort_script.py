# An ONNX Runtime user's script, unchanged but for its imports: quantize with quantize_static, open
# sessions with options and providers, read metadata, run with RunOptions, transposed and list
# inputs, OrtValues and an IOBinding with a preallocated output.
import numpy as np

import qdqrt as ort                                              # was: import onnxruntime as ort
from qdqrt.quantization import CalibrationDataReader, QuantType, quantize_static  # was: onnxruntime.quantization
from conftest import FASHION_MNIST, FP32_MODEL, fashion_mnist


class ImageReader(CalibrationDataReader):
    def __init__(self, images, input_name):
        self.batches = iter([{input_name: images[i : i + 8]} for i in range(0, len(images), 8)])

    def get_next(self):
        return next(self.batches, None)


def test_an_ort_script_runs_with_only_the_imports_changed(tmp_path):
    if FASHION_MNIST.is_dir():
        images = fashion_mnist("train", 64)[0]
    else:
        images = np.random.default_rng(4).standard_normal((64, 1, 28, 28), dtype=np.float32)
    quantized = str(tmp_path / "model.int8.onnx")
    quantize_static(str(FP32_MODEL), quantized, ImageReader(images, "input"), per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(quantized, sess_options=options, providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta()
    assert isinstance(meta.custom_metadata_map, dict) and isinstance(meta.producer_name, str)
    input_name = session.get_inputs()[0].name
    output_name = session.get_outputs()[0].name

    hwc = np.ascontiguousarray(images[0].transpose(1, 2, 0))            # an image as read: H, W, C
    run_options = ort.RunOptions()
    run_options.log_severity_level = 3
    [logits] = session.run([output_name], {input_name: hwc.transpose(2, 0, 1)[None]}, run_options)
    [from_list] = session.run(None, {input_name: images[:1].tolist()})
    np.testing.assert_array_equal(logits, from_list)

    value = ort.OrtValue.ortvalue_from_numpy(images[:4])
    [result] = session.run_with_ort_values([output_name], {input_name: value})
    binding = session.io_binding()
    binding.bind_cpu_input(input_name, images[:4])
    output = ort.OrtValue.ortvalue_from_shape_and_type([4, 10], np.float32)
    binding.bind_ortvalue_output(output_name, output)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(output.numpy(), result.numpy())
    assert output.numpy().argmax(1).shape == (4,)
