#!/usr/bin/env python3
"""Regenerates the data files of the model skeletons that bench/device/skeleton.py wrote: for each
manifest DIR/<stem>.json, copies <stem>.onnx into --out and writes <stem>.data beside it, each
tensor at its offset, with seeded random values (numpy only; the same seed gives the same bytes).

    python3 bench/device/regen_weights.py --carry DIR --out WORKDIR [--seed 0] [--only a,b]

Floats: normal(mean, std) per output channel where the manifest has per-channel statistics
("axis0"), else per tensor, clipped to the channel's (tensor's) [min, max], so a scale or a
BatchNormalization variance stays positive and quantized weights keep their range. Integers and
bool: uniform in [min, max] (a weight zero point of 0 stays 0). Prints one line per model.
"""
import argparse
import glob
import json
import os
import shutil
import sys
import time

import numpy as np


def tensor_values(entry, rng):
    dtype = np.dtype(entry["dtype"])
    shape = tuple(entry["shape"])
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if dtype.kind == "f":
        channels = entry.get("axis0")
        if channels:
            rows = len(channels["mean"])
            per_row = count // rows
            column = lambda key: np.asarray(channels[key], dtype=np.float64)[:, None]  # noqa: E731
            values = rng.standard_normal((rows, per_row), dtype=np.float32)
            values = values * column("std") + column("mean")
            values = np.clip(values, column("min"), column("max"))
        else:
            values = rng.standard_normal(count, dtype=np.float32) * entry["std"] + entry["mean"]
            values = np.clip(values, entry["min"], entry["max"])
        return values.astype(dtype).reshape(-1)
    if dtype.kind in "iu":
        return rng.integers(entry["min"], entry["max"], size=count, endpoint=True).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(int(entry["min"]), int(entry["max"]), size=count, endpoint=True).astype(dtype)
    raise ValueError(f"{entry['name']}: unsupported dtype {dtype}")


def regenerate(manifest_path, out_dir, seed=0):
    """Writes the skeleton and its data file into out_dir; returns (model path, data bytes)."""
    with open(manifest_path) as handle:
        manifest = json.load(handle)
    source_dir = os.path.dirname(manifest_path)
    os.makedirs(out_dir, exist_ok=True)
    model_path = os.path.join(out_dir, manifest["model"])
    shutil.copyfile(os.path.join(source_dir, manifest["model"]), model_path)
    data_path = os.path.join(out_dir, manifest["data"])
    with open(data_path, "wb") as data:
        data.truncate(manifest["data_bytes"])
        for index, entry in enumerate(manifest["tensors"]):
            rng = np.random.default_rng([seed, index])
            values = tensor_values(entry, rng)
            if values.nbytes != entry["length"]:
                raise ValueError(f"{manifest_path}: '{entry['name']}' makes {values.nbytes} bytes, "
                                 f"the manifest says {entry['length']}")
            data.seek(entry["offset"])
            data.write(values.tobytes())
    size = os.path.getsize(data_path)
    if size != manifest["data_bytes"]:
        raise ValueError(f"{data_path}: {size} bytes, expected {manifest['data_bytes']}")
    return model_path, size


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--carry", required=True, help="folder of the skeletons and their manifests")
    parser.add_argument("--out", required=True, help="folder to write the models into")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="comma-separated stems (default: every manifest)")
    args = parser.parse_args()
    manifests = sorted(glob.glob(os.path.join(args.carry, "*.json")))
    wanted = [name for name in args.only.split(",") if name]
    if wanted:
        manifests = [path for path in manifests if os.path.splitext(os.path.basename(path))[0] in wanted]
    if not manifests:
        sys.exit(f"regen_weights: no manifest in {args.carry}" + (f" for {args.only}" if wanted else ""))
    for path in manifests:
        start = time.monotonic()
        model_path, size = regenerate(path, args.out, args.seed)
        print(f"regenerated {os.path.basename(model_path)}: {size / 2**20:.1f} MiB of weights in "
              f"{time.monotonic() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
