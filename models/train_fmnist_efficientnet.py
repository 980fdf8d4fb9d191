#!/usr/bin/python3
r"""Trains a small EfficientNet-style network on Fashion-MNIST, QAT-fine-tunes it, exports both to ONNX.

    /usr/bin/python3 models/train_fmnist_efficientnet.py [--out models] [--epochs 8] [--qat-steps 300]

The shipped files come from three runs, the second and third each a warm restart of the previous
run's FP32 file (a new cosine cycle from its weights, with label smoothing); the last run writes
both shipped files:

    /usr/bin/python3 models/train_fmnist_efficientnet.py --out /tmp/stage1
    /usr/bin/python3 models/train_fmnist_efficientnet.py --out /tmp/stage2 \
        --init-from /tmp/stage1/fmnist_efficientnet_fp32.onnx --epochs 5 --learning-rate 1e-3 --label-smoothing 0.1
    /usr/bin/python3 models/train_fmnist_efficientnet.py --out models \
        --init-from /tmp/stage2/fmnist_efficientnet_fp32.onnx --epochs 5 --learning-rate 1e-3 --label-smoothing 0.1

Writes <out>/fmnist_efficientnet_fp32.onnx and <out>/fmnist_efficientnet_qdq.onnx (opset 13, input
"input" [batch, 1, 28, 28], output "output" [batch, 10] logits) and prints the test accuracies of
FP32, per-tensor max PTQ (calibration only) and QAT. Input normalization and data as in
fmnist_common.py. Q/DQ placement as in fake_quant.py (pytorch-quantization style): every Conv and
Linear, the depthwise and squeeze-excite convs included, gets a per-tensor input quantizer and a
per-channel weight quantizer; the identity branch of each residual Add gets a residual quantizer.
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fmnist_common import train_qat_and_export  # noqa: E402


def conv_bn_silu(in_channels, out_channels, kernel, stride=1, groups=1):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(out_channels), nn.SiLU())


class SqueezeExcite(nn.Module):
    """Global average pool -> 1x1 conv reduce + SiLU -> 1x1 conv expand + Sigmoid -> scale the input."""

    def __init__(self, channels, squeezed):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.reduce = nn.Conv2d(channels, squeezed, 1)
        self.act = nn.SiLU()
        self.expand = nn.Conv2d(squeezed, channels, 1)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        return x * self.gate(self.expand(self.act(self.reduce(self.pool(x)))))


class MBConv(nn.Module):
    """EfficientNet's inverted residual: [1x1 expand + BN + SiLU], depthwise 3x3 + BN + SiLU,
    squeeze-excite (squeezed to a quarter of the block's input channels), 1x1 project + BN,
    and a residual Add when the stride is 1 and the channel count is kept."""

    def __init__(self, in_channels, out_channels, expand_ratio, stride):
        super().__init__()
        hidden = in_channels * expand_ratio
        self.expand = conv_bn_silu(in_channels, hidden, 1) if expand_ratio != 1 else nn.Identity()
        self.depthwise = conv_bn_silu(hidden, hidden, 3, stride, groups=hidden)
        self.se = SqueezeExcite(hidden, max(4, in_channels // 4))
        self.project = nn.Sequential(nn.Conv2d(hidden, out_channels, 1, bias=False), nn.BatchNorm2d(out_channels))
        self.has_residual = stride == 1 and in_channels == out_channels
        if self.has_residual:
            self.residual_quantizer = nn.Identity()  # quantize_model() makes it a TensorQuantizer

    def forward(self, x):
        out = self.project(self.se(self.depthwise(self.expand(x))))
        return out + self.residual_quantizer(x) if self.has_residual else out


class FmnistEfficientNet(nn.Module):
    """28x28x1 -> stem 16 (stride 2) -> MBConv blocks 16 (x1), 24 (x4, stride 2), 24, 40 (x4), 40
    -> head 1x1 conv 128 -> global pool -> 10 logits. The stride-2 stem keeps training to minutes
    on two cores (depthwise convolutions are slow in PyTorch's CPU backward pass)."""

    def __init__(self):
        super().__init__()
        self.stem = conv_bn_silu(1, 16, 3, 2)  # 14x14
        self.blocks = nn.Sequential(
            MBConv(16, 16, 1, 1),
            MBConv(16, 24, 4, 2),  # 7x7
            MBConv(24, 24, 4, 1),
            MBConv(24, 40, 4, 1),
            MBConv(40, 40, 4, 1))
        self.head = conv_bn_silu(40, 128, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.head(self.blocks(self.stem(x)))), 1))


def main():
    train_qat_and_export(FmnistEfficientNet, "fmnist_efficientnet", __doc__, epochs=8.0, qat_steps=300,
                         augmented=True, weight_decay=0.01)


if __name__ == "__main__":
    main()
