#!/usr/bin/python3
"""`qdqrt calibrate` output run by ONNX Runtime: calibrates the shipped FP32 ResNet (entropy, 256
training images), then runs the PTQ model on 1,000 Fashion-MNIST test images with `qdqrt run`
(reference executor) and ONNX Runtime (optimizations disabled = literal Q/DQ semantics, and all =
integer QLinear kernels) and checks top-1 agreement >= 99.5% with each.

    ort_agreement.py --qdqrt build/qdqrt --ort tools/ort/run_ort.js --node node --work DIR
"""
import argparse
import gzip
import os
import subprocess
import sys

import numpy as np

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FMNIST_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530
IMAGES = 1000
MIN_AGREEMENT = 0.995


def run(command):
    print("+ " + " ".join(command), flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.stdout.strip():
        print(result.stdout.rstrip()[-2000:], flush=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: exit code {result.returncode} from {command[0]}")


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--qdqrt", required=True)
    parser.add_argument("--ort", required=True)
    parser.add_argument("--node", default="node")
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(os.path.join(args.work, "inputs"), exist_ok=True)
    model = os.path.join(args.work, "ptq_entropy.onnx")
    run([args.qdqrt, "calibrate", "--onnx", os.path.join(REPO_ROOT, "models", "fmnist_resnet_fp32.onnx"),
         "--data", f"fashion-mnist:{FMNIST_DIR}:train", "--samples", "256", "--method", "entropy",
         "--mean", str(MEAN), "--std", str(STD), "--output", model, "--noProgress"])
    images = read_idx(os.path.join(FMNIST_DIR, "t10k-images-idx3-ubyte.gz"))[:IMAGES]
    labels = read_idx(os.path.join(FMNIST_DIR, "t10k-labels-idx1-ubyte.gz"))[:IMAGES]
    normalized = ((images.astype(np.float32) / 255.0 - MEAN) / STD)[:, None].astype(np.float32)
    input_path = os.path.join(args.work, "inputs", "input.npy")
    np.save(input_path, normalized)

    qdqrt_out = os.path.join(args.work, "qdqrt")
    run([args.qdqrt, "run", "--onnx", model, f"--loadInputs=input:{input_path}", "--saveOutputs", qdqrt_out])
    reference = np.load(os.path.join(qdqrt_out, "output.npy")).argmax(-1)
    print(f"qdqrt reference top-1 {100 * np.mean(reference == labels):.2f}%")
    failed = False
    for level in ("disabled", "all"):
        ort_out = os.path.join(args.work, f"ort_{level}")
        os.makedirs(ort_out, exist_ok=True)
        run([args.node, args.ort, "--model", model, "--inputs", os.path.join(args.work, "inputs"),
             "--outputs", ort_out, "--optimization", level])
        ort = np.load(os.path.join(ort_out, "output.npy")).argmax(-1)
        agreement = np.mean(ort == reference)
        print(f"ONNX Runtime ({level}): top-1 {100 * np.mean(ort == labels):.2f}%, "
              f"agreement with qdqrt {100 * agreement:.2f}%")
        if agreement < MIN_AGREEMENT:
            print(f"FAILED: agreement below {100 * MIN_AGREEMENT}%")
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
