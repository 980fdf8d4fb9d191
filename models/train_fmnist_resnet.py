#!/usr/bin/python3
"""Trains a small ResNet on Fashion-MNIST, then QAT-fine-tunes it, and exports both to ONNX.

    /usr/bin/python3 models/train_fmnist_resnet.py [--out models] [--epochs 2] [--qat-steps 150]

Writes <out>/fmnist_resnet_fp32.onnx and <out>/fmnist_resnet_qdq.onnx (opset 13, input
"input" [batch, 1, 28, 28], output "output" [batch, 10] logits) and prints the test accuracies.
Input normalization: x = (pixel / 255 - 0.2860) / 0.3530. Data: Debian's dataset-fashion-mnist.
"""
import argparse
import copy
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_quant import calibrate, freeze_weight_scales, quantize_model  # noqa: E402
from fmnist_common import accuracy, export, load_split, train  # noqa: E402


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

    began = time.time()
    model = FmnistResNet()
    steps = int(args.epochs * len(train_images) / args.batch_size)
    print(f"FP32 training: {steps} steps of {args.batch_size}", flush=True)
    train(model, train_images, train_labels, steps, args.batch_size, 2e-3, generator)
    fp32_accuracy = accuracy(model, test_images, test_labels)
    print(f"FP32 test accuracy {fp32_accuracy:.4f} ({time.time() - began:.0f} s)", flush=True)

    qdq_model = quantize_model(copy.deepcopy(model))
    calibration = train_images[torch.randperm(len(train_images), generator=generator)[:2048]]
    calibrate(qdq_model, calibration.split(256))
    calibrated_accuracy = accuracy(qdq_model, test_images, test_labels)
    print(f"QDQ after max calibration: test accuracy {calibrated_accuracy:.4f}", flush=True)
    train(qdq_model, train_images, train_labels, args.qat_steps, args.batch_size, 1e-4, generator)
    freeze_weight_scales(qdq_model)
    qdq_accuracy = accuracy(qdq_model, test_images, test_labels)
    print(f"QDQ after {args.qat_steps} QAT steps: test accuracy {qdq_accuracy:.4f} "
          f"({time.time() - began:.0f} s total)", flush=True)

    os.makedirs(args.out, exist_ok=True)
    for net, name in ((model, "fmnist_resnet_fp32.onnx"), (qdq_model, "fmnist_resnet_qdq.onnx")):
        path = os.path.join(args.out, name)
        export(net.eval(), path)
        print(path)


if __name__ == "__main__":
    main()
