"""Exports tiny_qat_convnet.onnx: a pytorch-quantization-style QAT conv net for the graph-level
pass tests (run with Debian's /usr/bin/python3; deterministic, seed 0).

Per-tensor fake-quant on activations, per-output-channel fake-quant on weights whose scales are
computed IN the graph (Abs/ReduceMax/Div, as some QAT exports leave them), BatchNormalization kept
after each Conv, a MaxPool between quantizers, a quantized residual add, Flatten and Linear.
"""
import sys

import torch
import torch.nn as nn


def quantize_activation(x, amax):
    return torch.fake_quantize_per_tensor_affine(x, amax / 127.0, 0, -128, 127)


def quantize_weight(weight):
    # Scales from the weight itself, as an in-graph Abs/ReduceMax/Div subgraph.
    dims = tuple(range(1, weight.dim()))
    amax = weight.abs().amax(dim=dims)
    scale = amax / 127.0
    zero_point = torch.zeros(weight.shape[0], dtype=torch.int32)
    return torch.fake_quantize_per_channel_affine(weight, scale, zero_point, 0, -128, 127)


class QuantConvBn(nn.Module):
    def __init__(self, cin, cout, input_amax):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.input_amax = input_amax

    def forward(self, x):
        x = quantize_activation(x, self.input_amax)
        y = nn.functional.conv2d(x, quantize_weight(self.conv.weight), None, padding=1)
        return self.bn(y)


class TinyQatConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = QuantConvBn(1, 8, 2.0)
        self.block2 = QuantConvBn(8, 8, 3.0)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = torch.relu(self.block1(x))
        # MaxPool between two quantizers: propagate_qdq makes it an int8 MaxPool.
        y = quantize_activation(y, 3.0)
        y = nn.functional.max_pool2d(y, 2)
        z = self.block2(y)
        residual = quantize_activation(y, 3.0)  # pytorch-quantization's residual quantizer
        y = torch.relu(z + residual)
        y = nn.functional.max_pool2d(y, 2)
        y = torch.flatten(y, 1)
        y = quantize_activation(y, 4.0)
        return nn.functional.linear(y, quantize_weight(self.fc.weight), self.fc.bias)


def main(path):
    torch.manual_seed(0)
    model = TinyQatConvNet()
    with torch.no_grad():  # non-trivial BN statistics, some negative gammas
        for block in (model.block1, model.block2):
            block.bn.weight.copy_(torch.randn(8))
            block.bn.bias.copy_(torch.randn(8) * 0.1)
            block.bn.running_mean.copy_(torch.randn(8) * 0.1)
            block.bn.running_var.copy_(torch.rand(8) + 0.5)
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, torch.randn(1, 1, 16, 16), path, opset_version=13, input_names=["input"],
                          output_names=["logits"], do_constant_folding=False,
                          training=torch.onnx.TrainingMode.PRESERVE)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tiny_qat_convnet.onnx")
