#!/usr/bin/python3
"""Writes an ONNX model as a small "skeleton": the graph with its large initializers as ONNX external
data, without the data file, plus a JSON manifest from which bench/device/regen_weights.py writes a
data file of the same layout with seeded random values of the same magnitudes.

    /usr/bin/python3 bench/device/skeleton.py --model M.onnx --out DIR [--threshold BYTES]

Writes DIR/<stem>.onnx (its tensors of more than --threshold bytes, default 1024, point into
<stem>.data, which is not kept) and DIR/<stem>.json:

    {"model": "<stem>.onnx", "data": "<stem>.data", "data_bytes": N, "source_bytes": .., "source_sha256": ..,
     "input": {"name": .., "dims": [C, H, W]}, "macs": ..,
     "tensors": [{"name", "dtype", "shape", "offset", "length",
                  floats: "mean", "std", "min", "max" and, for rank >= 2, "axis0": per-output-channel
                  {"mean": [..], "std": [..], "min": [..], "max": [..]};
                  integers and bool: "min", "max"}]}

Timing does not depend on the weights' values, but their magnitudes matter: a QDQ file's float
weights go through QuantizeLinear with fixed per-channel scales, and a BatchNormalization variance
or a scale must stay positive. Per-channel statistics and clipping to the observed range keep both.
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np
import onnx
from onnx import external_data_helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import bench_models  # noqa: E402  (model_input, count_macs)

DEFAULT_THRESHOLD = 1024
MAX_CHANNELS = 8192  # per-channel statistics up to this many output channels
ALIGNMENT = 64  # offset of each tensor in the data file


def compact(values, digits=5):
    """Floats rounded to `digits` significant digits (the manifest's size; magnitudes are what
    matter). 9 digits give a float32 value back exactly: a clipping bound must not widen the range."""
    return [float(f"{v:.{digits}g}") for v in np.asarray(values, dtype=np.float64).ravel()]


def tensor_stats(array):
    if array.dtype.kind == "f":
        values = array.astype(np.float64)
        stats = {"mean": float(values.mean()), "std": float(values.std()),
                 "min": float(values.min()), "max": float(values.max())}
        if values.ndim >= 2 and 1 < values.shape[0] <= MAX_CHANNELS:
            rows = values.reshape(values.shape[0], -1)
            stats["axis0"] = {"mean": compact(rows.mean(axis=1)), "std": compact(rows.std(axis=1)),
                              "min": compact(rows.min(axis=1), 9), "max": compact(rows.max(axis=1), 9)}
        return stats
    if array.dtype.kind in "iub":
        return {"min": int(array.min()), "max": int(array.max())}
    raise ValueError(f"unsupported initializer dtype {array.dtype}")


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def make_skeleton(model_path, out_dir, threshold=DEFAULT_THRESHOLD, macs=None):
    """Writes the skeleton and its manifest into out_dir; returns the manifest."""
    stem = os.path.splitext(os.path.basename(model_path))[0]
    data_name = f"{stem}.data"
    model = onnx.load(model_path)
    input_name, dims = bench_models.model_input(model_path)
    if macs is None:
        macs = bench_models.count_macs(model_path)
    # Each large initializer's bytes get a place in the data file (64-byte aligned) that is never
    # written: the external_data entries are all the skeleton keeps.
    tensors = []
    data_bytes = 0
    for init in model.graph.initializer:
        if external_data_helper.uses_external_data(init):
            raise ValueError(f"{model_path}: '{init.name}' already uses external data: load the model with it")
        array = numpy_helper.to_array(init)
        if array.nbytes <= threshold:
            continue
        offset = (data_bytes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
        tensors.append({"name": init.name, "dtype": array.dtype.name, "shape": list(array.shape), "offset": offset,
                        "length": array.nbytes, **tensor_stats(array)})
        init.CopyFrom(numpy_helper.from_array(array, init.name))  # raw_data, whatever field held the values
        external_data_helper.set_external_data(init, location=data_name, offset=offset, length=array.nbytes)
        init.ClearField("raw_data")
        data_bytes = offset + array.nbytes
    os.makedirs(out_dir, exist_ok=True)
    skeleton_path = os.path.join(out_dir, f"{stem}.onnx")
    onnx.save_model(model, skeleton_path)
    manifest = {"model": os.path.basename(skeleton_path), "data": data_name, "data_bytes": data_bytes,
                "source": os.path.basename(model_path), "source_bytes": os.path.getsize(model_path),
                "source_sha256": sha256(model_path), "input": {"name": input_name, "dims": dims}, "macs": macs,
                "threshold": threshold, "tensors": tensors}
    with open(os.path.join(out_dir, f"{stem}.json"), "w") as handle:
        json.dump(manifest, handle, separators=(",", ":"))
    return manifest


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, nargs="+", help="ONNX files")
    parser.add_argument("--out", required=True, help="folder for the skeletons and manifests")
    parser.add_argument("--threshold", type=int, default=DEFAULT_THRESHOLD,
                        help="initializers of more bytes than this go external (default 1024)")
    args = parser.parse_args()
    for path in args.model:
        manifest = make_skeleton(path, args.out, args.threshold)
        skeleton = os.path.getsize(os.path.join(args.out, manifest["model"]))
        listing = os.path.getsize(os.path.join(args.out, os.path.splitext(manifest["model"])[0] + ".json"))
        print(f"{os.path.basename(path)}: {manifest['source_bytes'] / 2**20:.1f} MiB -> skeleton "
              f"{skeleton / 2**10:.0f} KiB + manifest {listing / 2**10:.0f} KiB "
              f"({len(manifest['tensors'])} tensors, {manifest['data_bytes'] / 2**20:.1f} MiB regenerated; "
              f"{manifest['macs'] / 1e9:.3f} GMAC)", flush=True)


if __name__ == "__main__":
    main()
