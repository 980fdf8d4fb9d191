"""Pieces shared by the Fashion-MNIST training scripts: data loading, training loop, accuracy, export.

Data: Debian's dataset-fashion-mnist (IDX files). Input normalization:
x = (pixel / 255 - 0.2860) / 0.3530 (the training set's mean and standard deviation).
"""
import gzip
import os

import numpy as np
import torch
import torch.nn.functional as F

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530
OPSET = 13


def read_idx(path):
    """IDX file (gzipped) -> numpy array; the header gives the element type and the shape."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_split(split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(DATA_DIR, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(DATA_DIR, f"{prefix}-labels-idx1-ubyte.gz"))
    return normalize(images), torch.from_numpy(labels.astype(np.int64))


def normalize(images):
    """uint8 [N, 28, 28] -> float32 [N, 1, 28, 28], the model's input convention."""
    return torch.from_numpy(((images.astype(np.float32) / 255.0 - MEAN) / STD)[:, None])


def train(model, images, labels, steps, batch_size, learning_rate, generator):
    """Adam with cosine decay over `steps` mini-batches drawn by a seeded shuffle."""
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    model.train()
    order = torch.randperm(len(images), generator=generator)
    for step in range(steps):
        start = (step * batch_size) % len(images)
        if start + batch_size > len(images):
            order = torch.randperm(len(images), generator=generator)
            start = 0
        index = order[start:start + batch_size]
        loss = F.cross_entropy(model(images[index]), labels[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 100 == 0:
            print(f"  step {step}/{steps} loss {loss.item():.4f}", flush=True)


@torch.no_grad()
def accuracy(model, images, labels):
    model.eval()
    correct = sum((model(images[i:i + 1000]).argmax(1) == labels[i:i + 1000]).sum().item()
                  for i in range(0, len(images), 1000))
    return correct / len(images)


def export(model, path):
    torch.onnx.export(
        model, torch.zeros(1, 1, 28, 28), path, opset_version=OPSET, do_constant_folding=True,
        input_names=["input"], output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    # The preprocessing into the file's metadata, where qdqrt eval/calibrate read it.
    from add_preprocessing_metadata import add_metadata
    add_metadata(path)
