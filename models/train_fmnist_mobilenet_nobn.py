#!/usr/bin/python3
"""Trains a MobileNet-style network without BatchNormalization on Fashion-MNIST, QAT-fine-tunes it,
exports both to ONNX: the shipped model on which post-training quantization loses accuracy.

    /usr/bin/python3 models/train_fmnist_mobilenet_nobn.py [--out models] [--epochs 5] [--qat-steps 300]

Writes <out>/fmnist_mobilenet_nobn_fp32.onnx and <out>/fmnist_mobilenet_nobn_qdq.onnx (opset 13,
input "input" [batch, 1, 28, 28], output "output" [batch, 10] logits) and prints the test
accuracies of FP32, per-tensor max PTQ and QAT. Input normalization and data as in fmnist_common.py;
Q/DQ placement as in fake_quant.py (per-tensor input and per-channel weight quantizers on every
Conv, the depthwise ones included, and on the Linear).

Without BatchNormalization nothing keeps the activations near unit scale: the ReLU outputs grow
long, sparse tails (ranges in the hundreds while most values are below a few units), so max
calibration spends most of the int8 levels on values that hardly occur.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fmnist_common import train_qat_and_export  # noqa: E402


def conv_relu(in_channels, out_channels, kernel, stride=1, groups=1):
    conv = nn.Conv2d(in_channels, out_channels, kernel, stride, kernel // 2, groups=groups)
    nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")  # He init: no BatchNorm rescales the signal
    nn.init.zeros_(conv.bias)
    return nn.Sequential(conv, nn.ReLU())


class FmnistMobileNetNoBN(nn.Module):
    """28x28x1 -> stem 3x3 conv 32 (stride 2) -> depthwise-separable blocks (depthwise 3x3 + ReLU,
    pointwise 1x1 + ReLU) to 64, 64 (stride 2), 128, 128 -> global pool -> 10 logits. No BatchNorm."""

    def __init__(self):
        super().__init__()
        layers = [conv_relu(1, 32, 3, 2)]  # 14x14
        channels = 32
        for out_channels, stride in ((64, 1), (64, 2), (128, 1), (128, 1)):
            layers += [conv_relu(channels, channels, 3, stride, groups=channels), conv_relu(channels, out_channels, 1)]
            channels = out_channels
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


def main():
    train_qat_and_export(FmnistMobileNetNoBN, "fmnist_mobilenet_nobn", __doc__, epochs=5.0, qat_steps=300,
                         augmented=True, weight_decay=0.01, learning_rate=1e-3)


if __name__ == "__main__":
    main()
