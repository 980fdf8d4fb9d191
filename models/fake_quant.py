"""Fake quantization placed the way NVIDIA pytorch-quantization (TensorRT QAT) places it.

- every Conv (2-D and 3-D)/Linear input: per-tensor symmetric int8 quantizer, amax from a calibration pass;
- every Conv/Linear weight: per-output-channel (axis 0) symmetric int8 quantizer, amax = max |w|;
- bias stays float;
- ResNet blocks: a residual quantizer on the identity branch of the Add, so Conv+Add can be INT8.

Scale = amax / 127, zero point 0, range [-128, 127]. torch.onnx.export (opset 13) turns
torch.fake_quantize_per_tensor_affine / torch.fake_quantize_per_channel_affine into
QuantizeLinear -> DequantizeLinear pairs.
"""
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

QUANT_MIN, QUANT_MAX = -128, 127


class TensorQuantizer(nn.Module):
    """Per-tensor symmetric quantizer: records max |x| while calibrating, fake-quantizes after."""

    def __init__(self):
        super().__init__()
        self.calibrating = False
        self.register_buffer("amax", torch.tensor(0.0))
        self.register_buffer("scale", torch.tensor(1.0))
        self.register_buffer("zero_point", torch.tensor(0, dtype=torch.int32))

    def forward(self, x):
        if self.calibrating:
            self.amax = torch.maximum(self.amax, x.detach().abs().max())
            self.scale = (self.amax / QUANT_MAX).clamp(min=1e-8)
            return x
        return torch.fake_quantize_per_tensor_affine(x, self.scale, self.zero_point, QUANT_MIN, QUANT_MAX)


def weight_scale(weight):
    """Per-output-channel (axis 0) symmetric scale: max |w| of each output channel / 127."""
    return (weight.detach().abs().flatten(1).amax(dim=1) / QUANT_MAX).clamp(min=1e-8)


class _QuantWeighted:
    """Weight fake quantization shared by QuantConv2d and QuantLinear.

    While training the scale follows the weight; freeze_weight_scales() stores it as a buffer so
    the exported graph holds constant scales instead of an Abs/ReduceMax/Div subgraph.
    """

    def quantized_weight(self):
        if hasattr(self, "weight_scale"):
            scale, zero_point = self.weight_scale, self.weight_zero_point
        else:
            scale = weight_scale(self.weight)
            zero_point = torch.zeros(scale.shape, dtype=torch.int32)
        return torch.fake_quantize_per_channel_affine(self.weight, scale, zero_point, 0, QUANT_MIN, QUANT_MAX)


class QuantConv2d(nn.Conv2d, _QuantWeighted):
    def forward(self, x):
        return self._conv_forward(self.input_quantizer(x), self.quantized_weight(), self.bias)


class QuantConv3d(nn.Conv3d, _QuantWeighted):
    def forward(self, x):
        return self._conv_forward(self.input_quantizer(x), self.quantized_weight(), self.bias)


class QuantLinear(nn.Linear, _QuantWeighted):
    def forward(self, x):
        return F.linear(self.input_quantizer(x), self.quantized_weight(), self.bias)


def freeze_weight_scales(model):
    for module in model.modules():
        if isinstance(module, _QuantWeighted):
            scale = weight_scale(module.weight)
            module.register_buffer("weight_scale", scale)
            module.register_buffer("weight_zero_point", torch.zeros(scale.shape, dtype=torch.int32))
    return model


def _basic_block_forward(self, x):
    """torchvision BasicBlock.forward with the identity branch quantized."""
    out = self.relu(self.bn1(self.conv1(x)))
    out = self.bn2(self.conv2(out))
    identity = x if self.downsample is None else self.downsample(x)
    return self.relu(out + self.residual_quantizer(identity))


def _bottleneck_forward(self, x):
    """torchvision Bottleneck.forward with the identity branch quantized."""
    out = self.relu(self.bn1(self.conv1(x)))
    out = self.relu(self.bn2(self.conv2(out)))
    out = self.bn3(self.conv3(out))
    identity = x if self.downsample is None else self.downsample(x)
    return self.relu(out + self.residual_quantizer(identity))


def _video_basic_block_forward(self, x):
    """torchvision.models.video BasicBlock.forward with the identity branch quantized."""
    out = self.conv2(self.conv1(x))
    identity = x if self.downsample is None else self.downsample(x)
    return self.relu(out + self.residual_quantizer(identity))


QUANTIZED_TWINS = {nn.Conv2d: QuantConv2d, nn.Conv3d: QuantConv3d, nn.Linear: QuantLinear}


def quantize_model(model):
    """Swaps Conv2d/Conv3d/Linear for their quantized twins in place and adds residual quantizers.

    torchvision ResNet blocks (and the video ResNets' basic blocks) get their forward replaced; a model of our own marks where a
    quantizer goes (the identity branch of a residual Add, an attention MatMul's input) with an
    nn.Identity child whose name ends in `_quantizer`.
    """
    from torchvision.models.resnet import BasicBlock, Bottleneck
    from torchvision.models.video.resnet import BasicBlock as VideoBasicBlock

    block_forwards = {BasicBlock: _basic_block_forward, Bottleneck: _bottleneck_forward,
                      VideoBasicBlock: _video_basic_block_forward}
    for module in list(model.modules()):
        # The video ResNets' convolutions are nn.Conv3d subclasses (Conv3DSimple, Conv3DNoTemporal)
        # that only add a static method: they become QuantConv3d too.
        twin = QUANTIZED_TWINS.get(type(module))
        if twin is None and isinstance(module, nn.Conv3d) and not isinstance(module, QuantConv3d):
            twin = QuantConv3d
        if twin is not None:
            module.__class__ = twin
            module.input_quantizer = TensorQuantizer()
        elif type(module) in block_forwards:
            module.residual_quantizer = TensorQuantizer()
            module.forward = types.MethodType(block_forwards[type(module)], module)
        for name, child in list(module.named_children()):
            if name.endswith("_quantizer") and isinstance(child, nn.Identity):
                setattr(module, name, TensorQuantizer())
    return model


def set_calibrating(model, calibrating):
    for module in model.modules():
        if isinstance(module, TensorQuantizer):
            module.calibrating = calibrating


@torch.no_grad()
def calibrate(model, batches):
    """Max calibration: amax of every activation quantizer = max |x| over the batches (eval mode)."""
    model.eval()
    set_calibrating(model, True)
    for batch in batches:
        model(batch)
    set_calibrating(model, False)
    return model
