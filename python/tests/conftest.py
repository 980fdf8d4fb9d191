# Shared fixtures: where the sources, models, CLI and Fashion-MNIST are (ctest sets the environment:
# python/CMakeLists.txt).
import gzip
import os
import pathlib

import numpy as np
import pytest

SOURCE_ROOT = pathlib.Path(os.environ.get("QDQRT_SOURCE_ROOT", pathlib.Path(__file__).resolve().parents[2]))
MODELS = SOURCE_ROOT / "models"
QDQ_MODEL = MODELS / "fmnist_resnet_qdq.onnx"
FP32_MODEL = MODELS / "fmnist_resnet_fp32.onnx"
FASHION_MNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")
MEAN, STD = np.float32(0.2860), np.float32(0.3530)


def fashion_mnist(split, count):
    """The first `count` images of a split as `qdqrt eval --mean=0.2860 --std=0.3530` feeds them
    (tools/datasets.cpp: pixel * (1/255) in float32, then (x - mean) / std), and their labels."""
    prefix = "t10k" if split == "test" else "train"
    with gzip.open(FASHION_MNIST / f"{prefix}-images-idx3-ubyte.gz") as file:
        pixels = np.frombuffer(file.read(), np.uint8, offset=16)[: count * 784]
    with gzip.open(FASHION_MNIST / f"{prefix}-labels-idx1-ubyte.gz") as file:
        labels = np.frombuffer(file.read(), np.uint8, offset=8)[:count].astype(np.int64)
    scale = np.float32(1.0) / np.float32(255.0)
    images = (pixels.astype(np.float32) * scale - MEAN) / STD
    return images.reshape(-1, 1, 28, 28), labels


needs_fashion_mnist = pytest.mark.skipif(not FASHION_MNIST.is_dir(), reason="Debian dataset-fashion-mnist not installed")


@pytest.fixture(scope="session")
def images():
    """16 test images, or seeded noise without the data set."""
    if FASHION_MNIST.is_dir():
        return fashion_mnist("test", 16)[0]
    return np.random.default_rng(0).standard_normal((16, 1, 28, 28), dtype=np.float32)


@pytest.fixture(scope="session")
def cli():
    return os.environ.get("QDQRT_CLI", str(SOURCE_ROOT / "build" / "qdqrt"))
