#!/usr/bin/python3
"""Exports torchvision classifiers as ONNX Runtime quantize_static-style QDQ models (s8 and u8).

The FP32 model is models/export_torchvision.py's (random weights, non-trivial BatchNorm, opset 13,
BN folded by the export); the QDQ rewrite is models/export_qdq_styles.py's emulation of ORT's
quantize_static (QDQ format, per-channel s8 weights, int32 biases), calibrated with min/max on
random images (export_torchvision's calibration batches):
  <model>_ort_s8[_<size>].onnx  symmetric s8 activations: ReLU/ReLU6 (Relu/Clip) kept between Q/DQ pairs
  <model>_ort_u8[_<size>].onnx  asymmetric u8 activations: Relu/Clip folded into the producer's range
Also writes <model>_fp32[_<size>].onnx (the FP32 original they were made from).

    /usr/bin/python3 models/export_ort_styles.py --model mobilenet_v2 efficientnet_b0 --out build/models
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_qdq_styles import ort_style_qdq  # noqa: E402
from export_torchvision import MODELS, build_model, export, output_path, random_batches  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", nargs="+", choices=MODELS, required=True)
    parser.add_argument("--style", nargs="+", choices=("ort_s8", "ort_u8"), default=["ort_s8", "ort_u8"])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--size", type=int, default=224, help="input height and width (default 224)")
    args = parser.parse_args()
    if args.size < 32:
        parser.error("--size must be at least 32 (the networks downsample by 32)")
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    calibration = random_batches(1, args.size, seed=2)[0].numpy()
    for name in args.model:
        fp32_path = output_path(args.out, name, "fp32", args.size)
        export(build_model(name, args.size), fp32_path, args.size)
        print(fp32_path)
        for style in args.style:
            path = output_path(args.out, name, style, args.size)
            ort_style_qdq(fp32_path, path, calibration, asymmetric=style == "ort_u8")
            print(path)


if __name__ == "__main__":
    main()
