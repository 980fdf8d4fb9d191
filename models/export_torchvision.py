#!/usr/bin/python3
"""Exports torchvision classifiers to ONNX (opset 13, dynamic batch) as FP32 and as explicit QDQ.

Weights are random (torch.manual_seed(0)), but BatchNorm is made non-trivial: random affine
parameters and running statistics gathered by a few train-mode passes over random data. The QDQ
variant uses the pytorch-quantization (TensorRT) placement from fake_quant.py, calibrated with max
calibration on a few random batches. Exports are deterministic: same arguments, same bytes.

    /usr/bin/python3 models/export_torchvision.py --model resnet18 --variant qdq --out build/models
"""
import argparse
import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_quant import calibrate, freeze_weight_scales, quantize_model  # noqa: E402

MODELS = ("resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0")
OPSET = 13
STATS_BATCHES, CALIBRATION_BATCHES, BATCH_SIZE = 4, 4, 8


def random_batches(count, size, seed):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(BATCH_SIZE, 3, size, size, generator=generator) for _ in range(count)]


@torch.no_grad()
def settle_batchnorm(model, batches):
    """Random BatchNorm affine parameters and running statistics of train-mode passes over `batches`,
    so that no BatchNorm is the identity; returns the model in eval mode. A model without BatchNorm
    (the transformers) skips the passes: they would change nothing (MViT's take minutes)."""
    settled = False
    for module in model.modules():
        if isinstance(module, (nn.BatchNorm2d, nn.BatchNorm3d)):
            nn.init.uniform_(module.weight, 0.5, 1.5)
            nn.init.normal_(module.bias, 0.0, 0.1)
            module.momentum = None  # cumulative average: running stats = mean over the passes
            module.reset_running_stats()
            settled = True
    if not settled:
        return model.eval()
    model.train()
    for batch in batches:
        model(batch)
    return model.eval()


def build_model(name, size):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    return settle_batchnorm(model, random_batches(STATS_BATCHES, size, seed=1))


def export(model, path, size):
    dummy = torch.zeros(1, 3, size, size)
    torch.onnx.export(
        model, dummy, path, opset_version=OPSET, do_constant_folding=True,
        input_names=["input"], output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})


@torch.no_grad()
def save_reference_output(model, input_path, out_dir, model_path):
    name = os.path.splitext(os.path.basename(model_path))[0]
    directory = os.path.join(out_dir, "outputs", name, "torch")
    os.makedirs(directory, exist_ok=True)
    output = model(torch.from_numpy(np.load(input_path)))
    np.save(os.path.join(directory, "output.npy"), output.numpy())


def output_path(out_dir, name, variant, size):
    suffix = "" if size == 224 else f"_{size}"
    return os.path.join(out_dir, f"{name}_{variant}{suffix}.onnx")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", nargs="+", choices=MODELS, required=True)
    parser.add_argument("--variant", nargs="+", choices=("fp32", "qdq"), default=["fp32", "qdq"])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--size", type=int, default=224, help="input height and width (default 224)")
    parser.add_argument("--reference-input", metavar="NPY",
                        help="also run each exported torch model on this input and save its output as "
                             "OUT/outputs/<export name>/torch/output.npy (an independent implementation "
                             "for the oracle tests)")
    args = parser.parse_args()
    if args.size < 32:
        parser.error("--size must be at least 32 (the networks downsample by 32)")

    # One thread: on a shared 2-core machine, OpenMP threads spinning against each other are
    # several times slower than one thread.
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    for name in args.model:
        float_model = build_model(name, args.size)
        for variant in args.variant:
            model = float_model
            if variant == "qdq":
                model = quantize_model(copy.deepcopy(float_model))
                calibrate(model, random_batches(CALIBRATION_BATCHES, args.size, seed=2))
                freeze_weight_scales(model)
            path = output_path(args.out, name, variant, args.size)
            export(model, path, args.size)
            print(path)
            if args.reference_input:
                save_reference_output(model, args.reference_input, args.out, path)


if __name__ == "__main__":
    main()
