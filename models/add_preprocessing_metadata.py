#!/usr/bin/env python3
"""Writes the preprocessing (and, for the QAT files, their FP32 twin) into the metadata_props of
the shipped Fashion-MNIST models, the keys `qdqrt eval` and `qdqrt calibrate` read when no
--mean/--std is given (tools/model_metadata.h). Changes nothing else in the files; run again
after retraining (fmnist_common.export calls it on each exported file).

Usage: /usr/bin/python3 models/add_preprocessing_metadata.py [MODEL.onnx ...]
"""
import os
import sys

import onnx

MEAN, STD = "0.286", "0.353"
PREPROCESSING = "8-bit pixels / 255, then (x - mean) / std per channel"
HERE = os.path.dirname(os.path.abspath(__file__))
SHIPPED = [f"fmnist_{net}_{variant}.onnx" for net in ("resnet", "efficientnet", "vit", "mobilenet_widerange")
           for variant in ("fp32", "qdq")]


def metadata_for(file_name):
    metadata = {"preprocessing.mean": MEAN, "preprocessing.std": STD, "preprocessing": PREPROCESSING}
    if file_name.endswith("_qdq.onnx"):
        metadata["quantization.fp32_model"] = file_name.replace("_qdq.onnx", "_fp32.onnx")
        metadata["quantization"] = "QAT: pytorch-quantization-style fake quantization (models/fake_quant.py), TensorRT placement"
    return metadata


def add_metadata(path):
    model = onnx.load(path)
    wanted = metadata_for(os.path.basename(path))
    kept = [entry for entry in model.metadata_props if entry.key not in wanted]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    for key, value in sorted(wanted.items()):
        model.metadata_props.add(key=key, value=value)
    onnx.save(model, path)
    print(f"{path}: {', '.join(f'{k}={v}' for k, v in sorted(wanted.items()))}")


if __name__ == "__main__":
    for path in sys.argv[1:] or [os.path.join(HERE, name) for name in SHIPPED]:
        add_metadata(path)
