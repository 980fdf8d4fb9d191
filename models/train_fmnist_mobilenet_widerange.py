#!/usr/bin/python3
"""Trains a MobileNet-style network on Fashion-MNIST, spreads its activation ranges across channels
(an exact FP32 rescaling), QAT-fine-tunes it and exports both to ONNX: the shipped model on which
post-training quantization loses accuracy and QAT recovers it.

    /usr/bin/python3 models/train_fmnist_mobilenet_widerange.py [--out models] [--epochs 4] [--qat-steps 500]

Writes <out>/fmnist_mobilenet_widerange_fp32.onnx and <out>/fmnist_mobilenet_widerange_qdq.onnx
(opset 13, input "input" [batch, 1, 28, 28], output "output" [batch, 10] logits) and prints the test
accuracies of FP32, per-tensor max PTQ and QAT. Input normalization and data as in fmnist_common.py;
Q/DQ placement as in fake_quant.py (per-tensor input and per-channel weight quantizers on every
Conv, the depthwise ones included, and on the Linear).

The rescaling: each ReLU output that feeds a depthwise conv has its channel c multiplied by s_c
(the producing BatchNorm's weight and bias times s_c) and the depthwise conv's channel-c weights
divided by s_c, with s_c = 2^u, u uniform in [-2.5, 2.5] (seeded). ReLU commutes with a positive
scale, so the FP32 network computes the same function, but the ranges of those tensors now differ
by up to 32x between channels, as BatchNorm folding leaves them in long-trained MobileNets (Nagel
et al., "Data-Free Quantization", 2019). One per-tensor int8 scale cannot serve all channels of such
a tensor: max calibration leaves the small channels a few levels, entropy clips the large ones. The
per-channel weight quantizers absorb the rescaling exactly; the loss is all in the activations.
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fmnist_common import train_qat_and_export  # noqa: E402

SPREAD_LOG2 = 2.5  # s_c = 2^u, u uniform in [-SPREAD_LOG2, SPREAD_LOG2]
SPREAD_SEED = 1


def conv_bn_relu(in_channels, out_channels, kernel, stride=1, groups=1):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(out_channels), nn.ReLU())


class FmnistMobileNet(nn.Module):
    """28x28x1 -> stem 3x3 conv 32 (stride 2) -> depthwise-separable blocks (depthwise 3x3 + BN +
    ReLU, pointwise 1x1 + BN + ReLU) to 64, 64 (stride 2), 128, 128 -> global pool -> 10 logits."""

    def __init__(self):
        super().__init__()
        layers = [conv_bn_relu(1, 32, 3, 2)]  # 14x14
        channels = 32
        for out_channels, stride in ((64, 1), (64, 2), (128, 1), (128, 1)):
            layers += [conv_bn_relu(channels, channels, 3, stride, groups=channels),
                       conv_bn_relu(channels, out_channels, 1)]
            channels = out_channels
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


@torch.no_grad()
def spread_channel_ranges(model, _data_generator=None):
    """The exact rescaling of the module docstring, on every (conv + BN + ReLU) -> depthwise pair
    (its own seeded generator: the same scales whether the FP32 weights were trained or loaded)."""
    generator = torch.Generator().manual_seed(SPREAD_SEED)
    stages = list(model.features)
    for producer, consumer in zip(stages, stages[1:]):
        depthwise = consumer[0]
        if depthwise.groups != depthwise.out_channels:
            continue
        norm = producer[1]
        scale = 2.0 ** ((torch.rand(norm.num_features, generator=generator) * 2 - 1) * SPREAD_LOG2)
        norm.weight.mul_(scale)
        norm.bias.mul_(scale)
        depthwise.weight.div_(scale[:, None, None, None])


def main():
    # QAT at 5e-4 (the other models: 1e-4): the small channels' producers must grow several-fold.
    train_qat_and_export(FmnistMobileNet, "fmnist_mobilenet_widerange", __doc__, epochs=4.0, qat_steps=500,
                         augmented=True, weight_decay=0.01, after_training=spread_channel_ranges,
                         qat_learning_rate=5e-4)


if __name__ == "__main__":
    main()
