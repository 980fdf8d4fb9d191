# The same 1,000 Fashion-MNIST test images give identical top-1 predictions through the Python
# module, `qdqrt eval` and the C++ API (python/tests/predict_fmnist.cpp), on the shipped QDQ ResNet.
import os
import subprocess

import numpy as np
import pytest

import qdqrt
from conftest import QDQ_MODEL, fashion_mnist, needs_fashion_mnist

IMAGES = 1000


@needs_fashion_mnist
def test_python_cli_and_cpp_predict_the_same(cli, tmp_path):
    predictor = os.environ.get("QDQRT_PREDICT_FMNIST")
    if not predictor:
        pytest.skip("QDQRT_PREDICT_FMNIST not set (ctest sets it)")
    images, labels = fashion_mnist("test", IMAGES)

    session = qdqrt.InferenceSession(str(QDQ_MODEL))
    python_batch1 = np.array([session.run(None, {"input": images[i : i + 1]})[0].argmax() for i in range(IMAGES)])
    python_batched = np.concatenate([session.run(None, {"input": images[i : i + 100]})[0].argmax(1)
                                     for i in range(0, IMAGES, 100)])

    subprocess.run([cli, "eval", "--data=fashion-mnist:test", "--mean=0.2860", "--std=0.3530", f"--samples={IMAGES}",
                    f"--model={QDQ_MODEL}", "--threads=2", "--noProgress", f"--savePredictions={tmp_path}"],
                   check=True, capture_output=True)
    cli_predictions = np.load(tmp_path / "fmnist_resnet_qdq.npy")

    subprocess.run([predictor, str(QDQ_MODEL), str(IMAGES), str(tmp_path / "images.npy"), str(tmp_path / "cpp.npy")],
                   check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "images.npy"), images)  # the same preprocessing, bit for bit
    cpp_predictions = np.load(tmp_path / "cpp.npy")

    assert python_batch1.shape == (IMAGES,)
    np.testing.assert_array_equal(python_batch1, cpp_predictions)
    np.testing.assert_array_equal(python_batched, cpp_predictions)
    np.testing.assert_array_equal(cli_predictions, cpp_predictions)
    assert (python_batch1 == labels).mean() > 0.8  # the model's accuracy: these are real predictions
