#!/usr/bin/python3
"""Writes extra node-test cases in the ONNX backend-test layout, with PyTorch as the oracle.

Usage: /usr/bin/python3 make_torch_cases.py tests/reference/data/torch_cases
(the committed cases; qdqrt_reference_tests runs them as Torch/NodeCaseTest.*; set
QDQRT_EXTRA_NODE_TEST_DIR to run another directory instead). Seeded, so reruns are identical.

Covers configurations the ONNX 1.12 node tests do not: grouped/dilated ConvTranspose with
output_padding, pools with ceil_mode + padding, Resize linear/cubic/nearest against
torch.nn.functional.interpolate, per-channel quantization via torch.quantize_per_channel.
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper

rng = np.random.default_rng(1234)


def write_case(root, name, node, inputs, outputs, opset=13):
    """inputs/outputs: lists of (name, numpy array)."""
    case = os.path.join(root, "test_" + name)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data, exist_ok=True)

    def info(n, a):
        return helper.make_tensor_value_info(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)

    graph = helper.make_graph([node], name, [info(n, a) for n, a in inputs], [info(n, a) for n, a in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, os.path.join(case, "model.onnx"))
    for prefix, items in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(items):
            with open(os.path.join(data, f"{prefix}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def conv_transpose_cases(root):
    configs = [
        dict(c=4, m=6, g=2, k=(3, 2), s=(2, 3), d=(1, 2), p=(1, 0), op=(1, 2), hw=(5, 4)),
        dict(c=3, m=3, g=3, k=(3, 3), s=(2, 2), d=(2, 1), p=(2, 1), op=(0, 1), hw=(4, 6)),
        dict(c=2, m=4, g=1, k=(4, 1), s=(1, 2), d=(1, 1), p=(0, 0), op=(0, 1), hw=(3, 3)),
    ]
    for i, c in enumerate(configs):
        x = randn(2, c["c"], *c["hw"])
        w = randn(c["c"], c["m"] // c["g"], *c["k"])
        b = randn(c["m"])
        y = F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), stride=c["s"],
                               padding=c["p"], output_padding=c["op"], groups=c["g"], dilation=c["d"]).numpy()
        node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], group=c["g"], strides=list(c["s"]),
                                dilations=list(c["d"]), pads=list(c["p"]) * 2, output_padding=list(c["op"]))
        write_case(root, f"torch_convtranspose_{i}", node, [("x", x), ("w", w), ("b", b)], [("y", y)])


def conv_cases(root):
    configs = [
        dict(c=6, m=4, g=2, k=(3, 5), s=(2, 1), d=(1, 2), p=(1, 2), hw=(9, 11)),
        dict(c=8, m=8, g=8, k=(3, 3), s=(2, 2), d=(1, 1), p=(1, 1), hw=(7, 8)),
    ]
    for i, c in enumerate(configs):
        x = randn(2, c["c"], *c["hw"])
        w = randn(c["m"], c["c"] // c["g"], *c["k"])
        y = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), None, stride=c["s"], padding=c["p"],
                     dilation=c["d"], groups=c["g"]).numpy()
        node = helper.make_node("Conv", ["x", "w"], ["y"], group=c["g"], strides=list(c["s"]),
                                dilations=list(c["d"]), pads=list(c["p"]) * 2)
        write_case(root, f"torch_conv_{i}", node, [("x", x), ("w", w)], [("y", y)])


def pool_cases(root):
    x = randn(1, 3, 10, 9)
    for i, (k, s, p, d) in enumerate([((3, 3), (2, 2), (1, 1), (1, 1)), ((2, 3), (3, 2), (1, 0), (2, 1)),
                                      ((3, 2), (2, 3), (0, 1), (1, 1))]):
        y, idx = F.max_pool2d(torch.from_numpy(x), k, s, p, d, ceil_mode=True, return_indices=True)
        node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=list(k), strides=list(s),
                                pads=list(p) * 2, dilations=list(d), ceil_mode=1)
        # torch indices are per (n, c) plane; ONNX's include the n/c offset.
        plane = x.shape[2] * x.shape[3]
        offsets = (np.arange(x.shape[0] * x.shape[1]) * plane).reshape(x.shape[0], x.shape[1], 1, 1)
        write_case(root, f"torch_maxpool_ceil_{i}", node, [("x", x)],
                   [("y", y.numpy()), ("i", idx.numpy().astype(np.int64) + offsets)], opset=12)
    for i, (k, s, p, include) in enumerate([((3, 3), (2, 2), (1, 1), 1), ((3, 3), (2, 2), (1, 1), 0),
                                            ((2, 4), (3, 2), (1, 2), 1)]):
        y = F.avg_pool2d(torch.from_numpy(x), k, s, p, ceil_mode=True, count_include_pad=bool(include)).numpy()
        node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=list(k), strides=list(s),
                                pads=list(p) * 2, ceil_mode=1, count_include_pad=include)
        write_case(root, f"torch_averagepool_ceil_{i}", node, [("x", x)], [("y", y)])


def resize_cases(root):
    x = randn(1, 2, 5, 7)
    cases = [
        ("linear_half_pixel", dict(mode="bilinear", align_corners=False), dict(mode="linear")),
        ("linear_align_corners", dict(mode="bilinear", align_corners=True),
         dict(mode="linear", coordinate_transformation_mode="align_corners")),
        ("cubic_half_pixel", dict(mode="bicubic", align_corners=False), dict(mode="cubic")),
        ("nearest_asymmetric_floor", dict(mode="nearest"),
         dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")),
    ]
    for sizes in ([8, 12], [3, 4]):
        for name, torch_args, onnx_attrs in cases:
            y = F.interpolate(torch.from_numpy(x), size=sizes, **torch_args).numpy()
            node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **onnx_attrs)
            if name.startswith("nearest") and sizes[0] < 5:
                continue  # torch nearest downsampling uses scale = in / out, a different rounding
            write_case(root, f"torch_resize_{name}_{sizes[0]}x{sizes[1]}", node,
                       [("x", x), ("sizes", np.array([1, 2] + sizes, dtype=np.int64))], [("y", y)])


def quantize_cases(root):
    x = randn(2, 4, 3) * 3
    scales = np.array([0.02, 0.05, 0.1, 0.013], dtype=np.float32)
    zero_points = np.array([0, 5, -7, 100], dtype=np.int8)
    q = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales).double(),
                                   torch.from_numpy(zero_points.astype(np.int64)), 1, torch.qint8)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)
    write_case(root, "torch_quantizelinear_per_channel", node, [("x", x), ("s", scales), ("z", zero_points)],
               [("y", q.int_repr().numpy())])
    node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)
    write_case(root, "torch_dequantizelinear_per_channel", node,
               [("q", q.int_repr().numpy()), ("s", scales), ("z", zero_points)], [("y", q.dequantize().numpy())])


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    conv_cases(root)
    conv_transpose_cases(root)
    pool_cases(root)
    resize_cases(root)
    quantize_cases(root)


if __name__ == "__main__":
    main()
