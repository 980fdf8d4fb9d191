#!/usr/bin/python3
"""Trains a small ResNet on Fashion-MNIST, then QAT-fine-tunes it, and exports both to ONNX.

    /usr/bin/python3 models/train_fmnist_resnet.py [--out models] [--epochs 15]
        [--qat-steps 300] [--label-smoothing 0.1]

Writes <out>/fmnist_resnet_fp32.onnx and <out>/fmnist_resnet_qdq.onnx (opset 13, input
"input" [batch, 1, 28, 28], output "output" [batch, 10] logits) and prints the test accuracies.
Input normalization: x = (pixel / 255 - 0.2860) / 0.3530. Data: Debian's dataset-fashion-mnist.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fmnist_common import train_qat_and_export  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False), nn.BatchNorm2d(out_channels))
        self.residual_quantizer = nn.Identity()  # quantize_model() makes it a TensorQuantizer

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return F.relu(out + self.residual_quantizer(identity))


class FmnistResNet(nn.Module):
    """28x28x1 -> stem 16 -> blocks 16, 32 (stride 2), 64 (stride 2) -> global pool -> 10 logits."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.blocks = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def main():
    train_qat_and_export(FmnistResNet, "fmnist_resnet", __doc__, epochs=15.0, qat_steps=300, augmented=True,
                         weight_decay=0.01, label_smoothing=0.1)


if __name__ == "__main__":
    main()
