#!/usr/bin/python3
"""Writes a tiny ViT for 28x28 Fashion-MNIST images (random weights, batch dim symbolic):
4x4 patches -> 96-wide tokens -> one attention block whose Transpose moves the batch off dim 0
([B,49,3,4,24] perm [2,0,3,1,4]) -> mean over tokens -> 10 logits. Used by eval_batch_test.sh.

    /usr/bin/python3 tests/engine_batch/tiny_vit.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WIDTH, HEADS, HEAD_DIM, TOKENS = 96, 4, 24, 49


def main():
    rng = np.random.default_rng(0)

    def weight(name, shape, scale):
        return numpy_helper.from_array(rng.uniform(-scale, scale, shape).astype(np.float32), name)

    def ints(name, values):
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    initializers = [
        weight("w_embed", [16, WIDTH], 0.25), weight("w_qkv", [WIDTH, 3 * WIDTH], 0.1),
        weight("w_out", [WIDTH, WIDTH], 0.1), weight("w_head", [WIDTH, 10], 0.2),
        numpy_helper.from_array(np.array(HEAD_DIM ** -0.5, dtype=np.float32), "scale"),
        ints("patches", [0, 1, 7, 4, 7, 4]), ints("tokens", [0, TOKENS, 16]),
        ints("heads", [0, TOKENS, 3, HEADS, HEAD_DIM]), ints("merged", [0, TOKENS, WIDTH]),
        ints("i0", 0), ints("i1", 1), ints("i2", 2),
    ]
    nodes = [
        helper.make_node("Reshape", ["input", "patches"], ["p6"]),
        helper.make_node("Transpose", ["p6"], ["pt"], perm=[0, 2, 4, 1, 3, 5]),
        helper.make_node("Reshape", ["pt", "tokens"], ["p"]),
        helper.make_node("MatMul", ["p", "w_embed"], ["x"]),
        helper.make_node("MatMul", ["x", "w_qkv"], ["qkv"]),
        helper.make_node("Reshape", ["qkv", "heads"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 3, 1, 4]),
        helper.make_node("Gather", ["t", "i0"], ["q"], axis=0),
        helper.make_node("Gather", ["t", "i1"], ["k"], axis=0),
        helper.make_node("Gather", ["t", "i2"], ["v"], axis=0),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["a"], axis=-1),
        helper.make_node("MatMul", ["a", "v"], ["o"]),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ot", "merged"], ["m"]),
        helper.make_node("MatMul", ["m", "w_out"], ["proj"]),
        helper.make_node("Add", ["proj", "x"], ["y"]),
        helper.make_node("ReduceMean", ["y"], ["pooled"], axes=[1], keepdims=0),
        helper.make_node("MatMul", ["pooled", "w_head"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_vit", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 28, 28])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 10])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
