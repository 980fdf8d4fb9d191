#!/usr/bin/python3
"""Trains a small EfficientNet-style network on Fashion-MNIST, QAT-fine-tunes it, exports both to ONNX.

    /usr/bin/python3 models/train_fmnist_efficientnet.py [--out models] [--epochs 2] [--qat-steps 150]

Writes <out>/fmnist_efficientnet_fp32.onnx and <out>/fmnist_efficientnet_qdq.onnx (opset 13, input
"input" [batch, 1, 28, 28], output "output" [batch, 10] logits) and prints the test accuracies of
FP32, per-tensor max PTQ (calibration only) and QAT. Input normalization and data as in
fmnist_common.py. Q/DQ placement as in fake_quant.py (pytorch-quantization style): every Conv and
Linear, the depthwise and squeeze-excite convs included, gets a per-tensor input quantizer and a
per-channel weight quantizer; the identity branch of each residual Add gets a residual quantizer.
"""
import argparse
import copy
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_quant import calibrate, freeze_weight_scales, quantize_model  # noqa: E402
from fmnist_common import accuracy, export, load_split, train  # noqa: E402


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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--epochs", type=float, default=2.0, help="FP32 training epochs")
    parser.add_argument("--qat-steps", type=int, default=150, help="QAT fine-tuning mini-batches")
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(2)
    generator = torch.Generator().manual_seed(0)
    train_images, train_labels = load_split("train")
    test_images, test_labels = load_split("test")
    os.makedirs(args.out, exist_ok=True)

    began = time.time()
    model = FmnistEfficientNet()
    print(f"parameters: {sum(p.numel() for p in model.parameters())}", flush=True)
    steps = int(args.epochs * len(train_images) / args.batch_size)
    print(f"FP32 training: {steps} steps of {args.batch_size}", flush=True)
    train(model, train_images, train_labels, steps, args.batch_size, 2e-3, generator)
    fp32_accuracy = accuracy(model, test_images, test_labels)
    print(f"FP32 test accuracy {fp32_accuracy:.4f} ({time.time() - began:.0f} s)", flush=True)
    fp32_path = os.path.join(args.out, "fmnist_efficientnet_fp32.onnx")
    export(model.eval(), fp32_path)
    print(fp32_path, flush=True)

    qdq_model = quantize_model(copy.deepcopy(model))
    calibration = train_images[torch.randperm(len(train_images), generator=generator)[:2048]]
    calibrate(qdq_model, calibration.split(256))
    ptq_accuracy = accuracy(qdq_model, test_images, test_labels)
    print(f"QDQ after per-tensor max calibration (PTQ): test accuracy {ptq_accuracy:.4f}", flush=True)
    train(qdq_model, train_images, train_labels, args.qat_steps, args.batch_size, 1e-4, generator)
    freeze_weight_scales(qdq_model)
    qdq_accuracy = accuracy(qdq_model, test_images, test_labels)
    print(f"QDQ after {args.qat_steps} QAT steps: test accuracy {qdq_accuracy:.4f} "
          f"({time.time() - began:.0f} s total)", flush=True)
    qdq_path = os.path.join(args.out, "fmnist_efficientnet_qdq.onnx")
    export(qdq_model.eval(), qdq_path)
    print(qdq_path)
    print(f"summary: FP32 {100 * fp32_accuracy:.2f}%, PTQ-max {100 * ptq_accuracy:.2f}%, "
          f"QAT {100 * qdq_accuracy:.2f}%")


if __name__ == "__main__":
    main()
