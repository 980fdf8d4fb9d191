#!/usr/bin/python3
"""Small Fashion-MNIST nets exported as explicit-QDQ ONNX in the two styles real tools produce.

Nets (trained 1 short epoch so that predictions mean something):
  resnet   : Conv-BN-ReLU stem, two residual blocks (one with a strided 1x1 projection), GAP, Linear.
  mobilenet: depthwise conv, SiLU, squeeze-excite (GlobalAveragePool, Sigmoid, Mul), a Concat, a
             token MLP (Transpose -> MatMul with a residual Add) and a Gemm classifier.
Styles (opset 13):
  *_trt.onnx     pytorch-quantization / TensorRT style: per-tensor s8 input quantizers and per-channel
                 weight quantizers on every Conv/Linear (max calibration), BatchNormalization kept after
                 Conv, a residual quantizer on the identity branch of residual adds.
  *_ort_u8.onnx  ONNX Runtime 1.16's quantize_static (QDQ format, per-channel) emulated on the FP32
                 export (ort_style_qdq says op by op): asymmetric u8 activations from min/max
                 calibration, symmetric s8 per-channel weights, int32 bias, Relu/Clip folded into the
                 producer's range; Reshape/Transpose/MaxPool/AveragePool/Resize outputs share their
                 input's scale and zero-point; ops ORT leaves float stay float.
  *_ort_s8.onnx  the same with symmetric s8 activations (Relu/Clip kept, with Q/DQ around it).
models/export_ort_styles.py writes the same two ORT styles of torchvision models (mobilenet_v2,
efficientnet_b0, resnet50) with this file's ort_style_qdq().
Usage: /usr/bin/python3 models/export_qdq_styles.py OUT_DIR
"""
import gzip
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

FMNIST = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def read_idx(name):
    with gzip.open(os.path.join(FMNIST, name), "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fmnist(split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(f"{prefix}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    labels = read_idx(f"{prefix}-labels-idx1-ubyte.gz").astype(np.int64)
    return ((images - MEAN) / STD)[:, None, :, :], labels


# ---------------------------------------------------------------- fake quantization (style a)
class Quantizer(nn.Module):
    """Max-calibrated symmetric s8 fake quantizer: per tensor, or per channel along axis 0."""

    def __init__(self, per_channel=False):
        super().__init__()
        self.per_channel = per_channel
        self.calibrating = False
        self.enabled = False
        self.register_buffer("amax", torch.zeros(1))

    def forward(self, x):
        if self.calibrating:
            if self.per_channel:
                amax = x.detach().abs().flatten(1).max(dim=1).values
                self.amax = amax if self.amax.numel() != amax.numel() else torch.maximum(self.amax, amax)
            else:
                self.amax = torch.maximum(self.amax, x.detach().abs().max().reshape(1))
            return x
        if not self.enabled:
            return x
        scale = torch.clamp(self.amax, min=1e-8) / 127.0
        if self.per_channel:
            zero = torch.zeros(scale.shape, dtype=torch.int32)
            return torch.fake_quantize_per_channel_affine(x, scale, zero, 0, -128, 127)
        return torch.fake_quantize_per_tensor_affine(x, float(scale), 0, -128, 127)


class QConv2d(nn.Conv2d):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.input_quantizer = Quantizer()
        self.weight_quantizer = Quantizer(per_channel=True)

    def forward(self, x):
        return self._conv_forward(self.input_quantizer(x), self.weight_quantizer(self.weight), self.bias)


class QLinear(nn.Linear):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.input_quantizer = Quantizer()
        self.weight_quantizer = Quantizer(per_channel=True)

    def forward(self, x):
        return F.linear(self.input_quantizer(x), self.weight_quantizer(self.weight), self.bias)


def conv_bn(cin, cout, k, stride=1, groups=1):
    return nn.Sequential(QConv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = conv_bn(cin, cout, 3, stride)
        self.conv2 = conv_bn(cout, cout, 3)
        self.project = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None
        self.residual_quantizer = Quantizer()

    def forward(self, x):
        out = self.conv2(F.relu(self.conv1(x)))
        identity = self.project(x) if self.project is not None else x
        return F.relu(out + self.residual_quantizer(identity))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(1, 16, 3)
        self.block1 = Block(16, 16, 1)
        self.block2 = Block(16, 32, 2)
        self.fc = QLinear(32, 10)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = self.block2(self.block1(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class MobileNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(1, 16, 3, 2)
        self.depthwise = conv_bn(16, 16, 3, groups=16)
        self.se_reduce = QConv2d(16, 4, 1)
        self.se_expand = QConv2d(4, 16, 1)
        self.pointwise = conv_bn(32, 24, 1)
        self.token_mlp = QLinear(24, 24)
        self.fc1 = QLinear(24, 32)
        self.fc2 = QLinear(32, 10)

    def forward(self, x):
        stem = F.silu(self.stem(x))                       # 14x14
        y = F.silu(self.depthwise(stem))
        se = torch.sigmoid(self.se_expand(F.silu(self.se_reduce(F.adaptive_avg_pool2d(y, 1)))))
        y = torch.cat([y * se, stem], dim=1)
        y = F.max_pool2d(self.pointwise(y), 2)            # 7x7
        tokens = y.flatten(2).transpose(1, 2)             # [N, 49, 24]
        tokens = tokens + self.token_mlp(tokens)
        pooled = tokens.mean(dim=1)
        return self.fc2(F.relu(self.fc1(pooled)))


def quantizers(model):
    return [m for m in model.modules() if isinstance(m, Quantizer)]


def train(model, images, labels, steps=150, batch=64):
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    order = np.random.default_rng(0).permutation(len(images))
    for step in range(steps):
        idx = order[step * batch:(step + 1) * batch]
        loss = F.cross_entropy(model(torch.from_numpy(images[idx])), torch.from_numpy(labels[idx]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


def accuracy(model, images, labels):
    with torch.no_grad():
        return float((model(torch.from_numpy(images)).argmax(1).numpy() == labels).mean())


def calibrate_fake_quant(model, calibration):
    for q in quantizers(model):
        q.calibrating = True
    with torch.no_grad():
        model(torch.from_numpy(calibration))
    for q in quantizers(model):
        q.calibrating, q.enabled = False, True


def export(model, path, training_mode):
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), path, opset_version=13, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      training=training_mode, do_constant_folding=training_mode != torch.onnx.TrainingMode.PRESERVE)


# ---------------------------------------------------------------- ORT-style QDQ (style b)
def evaluate_all(model, feed):
    """Every tensor of an FP32 ONNX graph, computed with torch ops (calibration only)."""
    env = {k: torch.from_numpy(numpy_helper.to_array(t).copy()) for k, t in
           ((i.name, i) for i in model.graph.initializer)}
    env.update({k: torch.from_numpy(v) for k, v in feed.items()})
    for node in model.graph.node:
        a = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
        x = [env[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Conv":
            pads = a.get("pads", [0, 0, 0, 0])
            out = F.conv2d(x[0], x[1], x[2] if len(x) > 2 else None, a.get("strides", [1, 1]),
                           pads[:2], a.get("dilations", [1, 1]), a.get("group", 1))
        elif op == "Relu": out = F.relu(x[0])
        elif op == "Clip":
            low = x[1] if len(x) > 1 and x[1] is not None else a.get("min")
            high = x[2] if len(x) > 2 and x[2] is not None else a.get("max")
            out = torch.clamp(x[0], None if low is None else float(low), None if high is None else float(high))
        elif op in ("Identity", "Dropout"): out = x[0]
        elif op in UNARY_OPS: out = UNARY_OPS[op](x[0])
        elif op in BINARY_OPS: out = BINARY_OPS[op](x[0], x[1])
        elif op in ("Max", "Min"):
            out = x[0]
            for other in x[1:]:
                out = torch.maximum(out, other) if op == "Max" else torch.minimum(out, other)
        elif op == "Div": out = x[0] / x[1] if x[0].is_floating_point() else torch.div(x[0], x[1], rounding_mode="trunc")
        elif op == "Mod": out = torch.fmod(x[0], x[1]) if a.get("fmod", 0) else torch.remainder(x[0], x[1])
        elif op == "LeakyRelu": out = F.leaky_relu(x[0], a.get("alpha", 0.01))
        elif op == "GlobalAveragePool": out = x[0].mean(dim=(2, 3), keepdim=True)
        elif op == "MaxPool":
            out = F.max_pool2d(x[0], a["kernel_shape"], a.get("strides"), a.get("pads", [0, 0])[:2],
                               ceil_mode=bool(a.get("ceil_mode", 0)))
        elif op == "AveragePool":
            out = F.avg_pool2d(x[0], a["kernel_shape"], a.get("strides"), a.get("pads", [0, 0])[:2],
                               ceil_mode=bool(a.get("ceil_mode", 0)),
                               count_include_pad=bool(a.get("count_include_pad", 0)))
        elif op == "BatchNormalization":
            out = F.batch_norm(x[0], x[3], x[4], x[1], x[2], False, 0.0, a.get("epsilon", 1e-5))
        elif op == "LayerNormalization":
            axis = a.get("axis", -1) % x[0].dim()
            out = F.layer_norm(x[0], x[0].shape[axis:], x[1], x[2] if len(x) > 2 else None, a.get("epsilon", 1e-5))
        elif op == "Softmax": out = torch.softmax(x[0], a.get("axis", -1))
        elif op == "HardSigmoid": out = torch.clamp(a.get("alpha", 0.2) * x[0] + a.get("beta", 0.5), 0.0, 1.0)
        elif op == "HardSwish": out = F.hardswish(x[0])
        elif op == "Cast": out = x[0].to(CAST_TYPES[a["to"]])
        elif op == "Pad":
            pads = x[1].tolist()
            half = len(pads) // 2
            # ONNX: all begins then all ends, first axis first; F.pad: (begin, end) pairs, last axis first.
            torch_pads = [p for axis in reversed(range(half)) for p in (pads[axis], pads[axis + half])]
            value = float(x[2]) if len(x) > 2 and x[2] is not None else 0.0
            out = F.pad(x[0], torch_pads, mode=a.get("mode", b"constant").decode(), value=value)
        elif op == "Split":
            sizes = x[1].tolist() if len(x) > 1 and x[1] is not None else a.get("split")
            axis = a.get("axis", 0)
            if sizes is None:
                sizes = [x[0].shape[axis] // len(node.output)] * len(node.output)
            out = tuple(torch.split(x[0], sizes, dim=axis))
        elif op == "Concat": out = torch.cat(x, dim=a["axis"])
        elif op == "Flatten": out = torch.flatten(x[0], a.get("axis", 1))
        elif op == "Reshape":
            shape = [d if d != 0 else x[0].shape[i] for i, d in enumerate(x[1].tolist())]
            out = x[0].reshape(shape)
        elif op == "Transpose": out = x[0].permute(a["perm"])
        elif op == "MatMul": out = x[0] @ x[1]
        elif op == "Gemm":
            b = x[1].t() if a.get("transB", 0) else x[1]
            out = a.get("alpha", 1.0) * (x[0] @ b) + a.get("beta", 1.0) * (x[2] if len(x) > 2 else 0)
        elif op == "Einsum": out = torch.einsum(a["equation"].decode(), *x)
        elif op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"):
            axes = a.get("axes") if "axes" in a else (x[1].tolist() if len(x) > 1 and x[1] is not None else None)
            axes = list(range(x[0].dim())) if axes is None else axes
            keep = bool(a.get("keepdims", 1))
            out = x[0]
            reduce = {"ReduceMean": torch.mean, "ReduceSum": torch.sum, "ReduceMax": torch.amax,
                      "ReduceMin": torch.amin}[op]
            for axis in sorted((d % x[0].dim() for d in axes), reverse=True):
                out = reduce(out, dim=axis, keepdim=keep)
        elif op == "Constant":
            if "value" in a:
                out = torch.from_numpy(numpy_helper.to_array(a["value"]).copy())
            elif "value_float" in a or "value_floats" in a:
                out = torch.tensor(a.get("value_float", a.get("value_floats")), dtype=torch.float32)
            else:
                out = torch.tensor(a.get("value_int", a.get("value_ints")), dtype=torch.int64)
        elif op == "ConstantOfShape":
            value = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
            out = torch.full(x[0].tolist(), value.item(), dtype=torch.from_numpy(value).dtype)
        elif op == "Shape":
            out = torch.tensor(x[0].shape, dtype=torch.int64)[a.get("start", 0):a.get("end", None)]
        elif op == "Size": out = torch.tensor(x[0].numel(), dtype=torch.int64)
        elif op == "Range": out = torch.arange(x[0].item(), x[1].item(), x[2].item(), dtype=x[0].dtype)
        elif op == "Expand": out = x[0].expand(torch.broadcast_shapes(x[0].shape, tuple(x[1].tolist()))).clone()
        elif op == "Tile": out = x[0].repeat(x[1].tolist())
        elif op == "Where": out = torch.where(x[0], x[1], x[2])
        elif op == "Gather":
            axis = a.get("axis", 0) % x[0].dim()
            index = x[1].reshape(-1) % x[0].shape[axis]
            out = torch.index_select(x[0], axis, index).reshape(
                x[0].shape[:axis] + x[1].shape + x[0].shape[axis + 1:])
        elif op == "Slice":
            out = x[0]
            axes = x[3].tolist() if len(x) > 3 and x[3] is not None else list(range(len(x[1])))
            steps = x[4].tolist() if len(x) > 4 and x[4] is not None else [1] * len(axes)
            for start, end, axis, step in zip(x[1].tolist(), x[2].tolist(), axes, steps):
                size = out.shape[axis]
                start, end = start + size if start < 0 else start, end + size if end < 0 else end
                low, high = (0, size) if step > 0 else (-1, size - 1)
                start, end = min(max(start, 0), high), min(max(end, low), high)  # ONNX clamping
                out = torch.index_select(out, axis, torch.arange(start, end, step, dtype=torch.int64))
        elif op == "Unsqueeze":
            rank = x[0].dim() + len(x[1])
            out = x[0]
            for axis in sorted(d % rank for d in x[1].tolist()):
                out = out.unsqueeze(axis)
        elif op == "Squeeze":
            axes = x[1].tolist() if len(x) > 1 and x[1] is not None else \
                [d for d in range(x[0].dim()) if x[0].shape[d] == 1]
            out = x[0]
            for axis in sorted((d % x[0].dim() for d in axes), reverse=True):
                out = out.squeeze(axis)
        elif op == "Resize": out = resize(x, a)
        elif op == "ScatterND":
            k = x[1].shape[-1]
            index = x[1].reshape(-1, k)
            out = x[0].clone()
            out[tuple(index.t())] = x[2].reshape((index.shape[0],) + tuple(x[0].shape[k:]))
        else: raise RuntimeError(f"calibration evaluator: unsupported op {op}")
        for name, value in zip(node.output, out if isinstance(out, tuple) else (out,)):
            env[name] = value
    return env


def resize(x, a):
    """ONNX Resize (opset 11+) on NCHW for the modes torch exports: nearest with asymmetric
    coordinates and floor (F.interpolate's nearest), linear with half_pixel / pytorch_half_pixel or
    align_corners."""
    data, scales = x[0], x[2] if len(x) > 2 else None
    sizes = x[3].tolist() if len(x) > 3 and x[3] is not None else \
        [int(np.floor(d * s)) for d, s in zip(data.shape, scales.tolist())]
    mode = a.get("mode", b"nearest").decode()
    transform = a.get("coordinate_transformation_mode", b"half_pixel").decode()
    if mode == "nearest":
        if transform != "asymmetric" or a.get("nearest_mode", b"round_prefer_floor").decode() != "floor":
            raise RuntimeError(f"calibration evaluator: Resize nearest with {transform} coordinates")
        return F.interpolate(data, size=sizes[2:], mode="nearest")
    if mode == "linear" and transform in ("half_pixel", "pytorch_half_pixel", "align_corners"):
        return F.interpolate(data, size=sizes[2:], mode="bilinear", align_corners=transform == "align_corners")
    raise RuntimeError(f"calibration evaluator: Resize mode {mode} with {transform} coordinates")


UNARY_OPS = {"Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Erf": torch.erf, "Sqrt": torch.sqrt, "Exp": torch.exp,
             "Log": torch.log, "Neg": torch.neg, "Abs": torch.abs, "Floor": torch.floor, "Ceil": torch.ceil,
             "Sin": torch.sin, "Cos": torch.cos, "Reciprocal": torch.reciprocal, "Not": torch.logical_not,
             "Softplus": F.softplus, "Sign": torch.sign}
BINARY_OPS = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Pow": torch.pow, "Equal": torch.eq,
              "Less": torch.lt, "Greater": torch.gt, "LessOrEqual": torch.le, "GreaterOrEqual": torch.ge,
              "And": torch.logical_and, "Or": torch.logical_or}
CAST_TYPES = {TensorProto.FLOAT: torch.float32, TensorProto.INT64: torch.int64, TensorProto.INT32: torch.int32,
              TensorProto.BOOL: torch.bool, TensorProto.DOUBLE: torch.float64}

# ONNX Runtime 1.16's quantize_static, QDQ format: the op types it quantizes by default (the union of
# its QLinear and QDQ registries) and how (its QDQ registry; the others quantize every float input and
# output). LayerNormalization, Erf, Div, Sub, Pow, Sqrt, ReduceMean, Einsum, Slice, Flatten,
# HardSwish, HardSigmoid, Tanh, Expand, ... are not among them: they stay float, and a tensor
# between two of them gets no Q/DQ.
ORT_DIRECT_8BIT = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Resize", "MaxPool", "AveragePool"}
ORT_QUANTIZED_OPS = {"ArgMax", "Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul", "Relu", "Clip", "LeakyRelu",
                     "Sigmoid", "MaxPool", "GlobalAveragePool", "Split", "Pad", "Concat", "Softmax", "Where",
                     "Gather"} | ORT_DIRECT_8BIT


def ort_style_qdq(fp32_path, out_path, calibration, asymmetric):
    """Rewrites an FP32 ONNX file as ONNX Runtime 1.16's quantize_static (QuantFormat.QDQ,
    per_channel=True, MinMax calibration, weights s8; activations u8 asymmetric, or s8 symmetric when
    `asymmetric` is False) writes it, walking the nodes in graph order as it does:
    - Conv/ConvTranspose/Gemm: input and output Q/DQ, weight per-channel s8 (axis 0; ConvTranspose 1;
      Gemm 0 with transB else 1), bias int32 at input scale x weight scale;
    - MatMul: every input and the output; an initializer input per-channel s8 along axis 1, so a
      MatMul of two activations gets two activation Q/DQ;
    - Relu/Clip whose input is quantized: with asymmetric activations and an input read by it alone
      (not a graph output) the node is removed and the producer writes its output, quantized with
      its range; otherwise its input and output get Q/DQ;
    - Reshape, Transpose, Squeeze, Unsqueeze, Resize, MaxPool, AveragePool: when the input is
      quantized, the output gets Q/DQ with the input's scale and zero point (else nothing);
    - Split: the input, and every output with the input's parameters; Gather: likewise when its data
      is quantized (an int64 shape Gather is not); Where: the output when both data inputs are;
    - Softmax: input and output, the output at scale 1/256, zero point 0 (u8) whatever its range;
    - Add, Mul, Sigmoid, LeakyRelu, GlobalAveragePool, Concat, Pad, ArgMax: every float input and
      output (a float initializer input, such as a bias added after a MatMul or a constant factor,
      becomes a per-tensor symmetric u8 initializer, zero point 128, and a DequantizeLinear);
    - everything else stays float.
    Activation parameters: min/max over the calibration batch, widened to include 0; u8: scale
    (max - min) / 255, zero point round(-min / scale)."""
    model = onnx.load(fp32_path)
    graph = model.graph
    init = {t.name: t for t in graph.initializer}
    env = evaluate_all(model, {"input": calibration})
    ranges = {k: (float(v.min()), float(v.max())) for k, v in env.items()
              if v.dtype == torch.float32 and v.numel() and k not in init}
    float_inits = {k for k, t in init.items() if t.data_type == TensorProto.FLOAT}
    graph_inputs, graph_outputs = {i.name for i in graph.input}, {o.name for o in graph.output}

    # name -> ("activation",) | ("shared", source) | ("initializer",) | ("weight", axis)
    tensors, biases, fixed, removed = {}, {}, {}, []
    quantizable = lambda name: bool(name) and (name in ranges or name in float_inits)  # noqa: E731

    def activation(name):
        if quantizable(name) and name not in tensors:
            tensors[name] = ("initializer",) if name in init else ("activation",)

    def shared(name, source):
        if quantizable(name):
            tensors[name] = ("shared", source)

    def weight(name, axis):
        if name in float_inits and name not in tensors:
            tensors[name] = ("weight", axis)

    def bias(name, x, w):
        if name in float_inits and name not in biases:
            biases[name] = (x, w)

    for node in list(graph.node):
        op = node.op_type
        if op not in ORT_QUANTIZED_OPS:
            continue
        inputs, outputs = list(node.input), list(node.output)
        if op in ("Conv", "ConvTranspose", "Gemm"):
            activation(inputs[0])
            activation(outputs[0])
            trans_b = any(a.name == "transB" and a.i for a in node.attribute)
            weight(inputs[1], {"Conv": 0, "ConvTranspose": 1}.get(op, 0 if trans_b else 1))
            if len(inputs) > 2 and inputs[2]:
                bias(inputs[2], inputs[0], inputs[1])
        elif op == "MatMul":
            for name in inputs + outputs:
                weight(name, 1) if name in init else activation(name)
        elif op in ("Relu", "Clip"):
            if inputs[0] not in tensors:
                continue
            readers = [n for n in graph.node if inputs[0] in n.input]
            if asymmetric and len(readers) == 1 and inputs[0] not in graph_outputs | graph_inputs:
                producer = next(n for n in graph.node if inputs[0] in n.output)
                producer.output[list(producer.output).index(inputs[0])] = outputs[0]
                del tensors[inputs[0]]
                removed.append(node)
            activation(outputs[0])
        elif op in ORT_DIRECT_8BIT:
            if inputs[0] in tensors:
                shared(outputs[0], inputs[0])
        elif op == "Split":
            activation(inputs[0])
            for name in outputs:
                shared(name, inputs[0])
        elif op == "Gather":
            if inputs[0] in float_inits:
                activation(inputs[0])
            if inputs[0] in tensors:
                shared(outputs[0], inputs[0])
        elif op == "Where":
            if inputs[1] in tensors and inputs[2] in tensors:
                activation(outputs[0])
        else:
            for name in inputs + outputs:
                activation(name)
            if op == "Softmax" and outputs[0] in tensors:
                fixed[outputs[0]] = (np.float32(1 / 256.0), np.uint8(0)) if asymmetric else \
                    (np.float32(1 / 127.0), np.int8(0))
    for node in removed:
        graph.node.remove(node)
    producers = {o: n for n in graph.node for o in n.output}

    def params(name):
        if name in fixed:
            return fixed[name]
        if tensors[name][0] == "shared":
            return params(tensors[name][1])
        if tensors[name][0] == "initializer":  # ORT: a per-tensor symmetric "weight" of the activation type
            absmax = float(np.abs(numpy_helper.to_array(init[name])).max())
            if asymmetric:
                scale = np.float32(absmax * 2 / 255.0) if absmax > 0 else np.float32(1.0)
                return scale, np.uint8(128 if absmax > 0 else 0)
            return np.float32(absmax / 127.0 if absmax > 0 else 1.0), np.int8(0)
        lo, hi = ranges[name]
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        if asymmetric:
            scale = max(hi - lo, 1e-8) / 255.0
            return np.float32(scale), np.uint8(np.clip(round(-lo / scale), 0, 255))
        return np.float32(max(max(-lo, hi), 1e-8) / 127.0), np.int8(0)

    new_inits, extra_nodes, rename = [], [], {}
    for name, kind in tensors.items():
        if kind[0] == "weight":
            w = numpy_helper.to_array(init[name])
            axis = kind[1]
            reduce_axes = tuple(d for d in range(w.ndim) if d != axis)
            scale = (np.maximum(np.abs(w).max(axis=reduce_axes), 1e-8) / 127.0).astype(np.float32)
            shape = [1] * w.ndim
            shape[axis] = -1
            q = np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8)
            new_inits += [numpy_helper.from_array(q, f"{name}_quantized"),
                          numpy_helper.from_array(scale, f"{name}_scale"),
                          numpy_helper.from_array(np.zeros(scale.shape, np.int8), f"{name}_zero_point")]
            extra_nodes.append(helper.make_node("DequantizeLinear", [f"{name}_quantized", f"{name}_scale",
                                                f"{name}_zero_point"], [f"{name}_dequantized"],
                                                name=f"{name}_DequantizeLinear", axis=axis))
            rename[name] = f"{name}_dequantized"
            continue
        scale, zero = params(name)
        new_inits += [numpy_helper.from_array(np.array(scale), f"{name}_scale"),
                      numpy_helper.from_array(np.array(zero), f"{name}_zero_point")]
        if kind[0] == "initializer":
            value = numpy_helper.to_array(init[name])
            info = np.iinfo(zero.dtype)
            q = np.clip(np.rint(value / scale) + int(zero), info.min, info.max).astype(zero.dtype)
            new_inits.append(numpy_helper.from_array(q, f"{name}_quantized"))
            extra_nodes.append(helper.make_node("DequantizeLinear", [f"{name}_quantized", f"{name}_scale",
                                                f"{name}_zero_point"], [f"{name}_dequantized"],
                                                name=f"{name}_DequantizeLinear"))
            rename[name] = f"{name}_dequantized"
            continue
        source = name
        if name in graph_outputs:  # the producer writes name_float; Q/DQ restore `name`
            source = f"{name}_float"
            producers[name].output[list(producers[name].output).index(name)] = source
        extra_nodes.append(helper.make_node("QuantizeLinear", [source, f"{name}_scale", f"{name}_zero_point"],
                                            [f"{name}_quantized"], name=f"{name}_QuantizeLinear"))
        extra_nodes.append(helper.make_node("DequantizeLinear", [f"{name}_quantized", f"{name}_scale",
                                            f"{name}_zero_point"], [name if name in graph_outputs else
                                                                    f"{name}_dequantized"],
                                            name=f"{name}_DequantizeLinear"))
        if name not in graph_outputs:
            rename[name] = f"{name}_dequantized"
    for name, (x, w) in biases.items():  # int32, scale = x_scale * w_scale
        if x not in tensors or tensors.get(w, ("",))[0] != "weight":
            continue
        x_scale, _ = params(x)
        w_scale = numpy_helper.to_array(next(t for t in new_inits if t.name == f"{w}_scale"))
        b_scale = (x_scale * w_scale).astype(np.float32)
        b = numpy_helper.to_array(init[name])
        new_inits += [numpy_helper.from_array(np.rint(b / b_scale).astype(np.int32), f"{name}_quantized"),
                      numpy_helper.from_array(b_scale, f"{name}_scale"),
                      numpy_helper.from_array(np.zeros(b_scale.shape, np.int32), f"{name}_zero_point")]
        extra_nodes.append(helper.make_node("DequantizeLinear", [f"{name}_quantized", f"{name}_scale",
                                            f"{name}_zero_point"], [f"{name}_dequantized"],
                                            name=f"{name}_DequantizeLinear", axis=0))
        rename[name] = f"{name}_dequantized"

    # Every reader of a quantized tensor reads its DQ (the Q nodes added above read the float tensor).
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in rename:
                node.input[i] = rename[name]
    nodes = list(graph.node) + extra_nodes
    used = {i for n in nodes for i in n.input}
    kept_inits = [t for t in graph.initializer if t.name in used] + [t for t in new_inits if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept_inits)
    # Topological order.
    available = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    ordered = []
    while nodes:
        ready = [n for n in nodes if all(i in available for i in n.input)]
        if not ready:
            raise RuntimeError("cycle while ordering " + str([n.name for n in nodes][:5]))
        for n in ready:
            ordered.append(n)
            available.update(n.output)
        ready_ids = {id(n) for n in ready}
        nodes = [n for n in nodes if id(n) not in ready_ids]
    del graph.node[:]
    graph.node.extend(ordered)
    del graph.value_info[:]
    onnx.checker.check_model(model)
    onnx.save(model, out_path)



def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/optimizer_models/data"
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    train_images, train_labels = load_fmnist("train")
    test_images, test_labels = load_fmnist("test")
    calibration = train_images[-256:]
    for name, make in (("resnet", ResNet), ("mobilenet", MobileNet)):
        model = make()
        train(model, train_images, train_labels)
        print(f"{name}: fp32 accuracy {accuracy(model, test_images[:1000], test_labels[:1000]):.3f}")
        fp32_path = os.path.join(out_dir, f"{name}_fp32.onnx")
        export(model, fp32_path, torch.onnx.TrainingMode.EVAL)  # BN folded, no quantizers
        calibrate_fake_quant(model, calibration)
        print(f"{name}: fake-quant accuracy {accuracy(model, test_images[:1000], test_labels[:1000]):.3f}")
        export(model, os.path.join(out_dir, f"{name}_trt.onnx"), torch.onnx.TrainingMode.PRESERVE)
        ort_style_qdq(fp32_path, os.path.join(out_dir, f"{name}_ort_u8.onnx"), calibration, asymmetric=True)
        ort_style_qdq(fp32_path, os.path.join(out_dir, f"{name}_ort_s8.onnx"), calibration, asymmetric=False)
    # The first 1,000 test images (raw uint8 pixels, 1000x28x28; normalize with MEAN/STD) and labels.
    read_idx("t10k-images-idx3-ubyte.gz")[:1000].tofile(os.path.join(out_dir, "fmnist_test_1000_images.u8"))
    read_idx("t10k-labels-idx1-ubyte.gz")[:1000].tofile(os.path.join(out_dir, "fmnist_test_1000_labels.u8"))


if __name__ == "__main__":
    main()
