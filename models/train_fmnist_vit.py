#!/usr/bin/python3
"""Trains a small Vision Transformer on Fashion-MNIST, QAT-fine-tunes it, and exports both to ONNX.

    /usr/bin/python3 models/train_fmnist_vit.py [--out models] [--epochs 1.5] [--qat-steps 100]

Writes <out>/fmnist_vit_fp32.onnx and <out>/fmnist_vit_qdq.onnx (opset 13, input "input"
[batch, 1, 28, 28], output "output" [batch, 10] logits, batch dynamic) and prints the test
accuracies of FP32, per-tensor max PTQ (calibration only) and QAT. Input normalization and data
as in fmnist_common.py.

The attention is written the way timm and Hugging Face write it, so torch.onnx.export computes
every Reshape target from the input's shape (Shape -> Gather -> Unsqueeze -> Concat) and
LayerNorm exports decomposed (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) at
opset 13. Q/DQ placement (pytorch-quantization's BERT/ViT recipe, fake_quant.py): per-tensor int8
on every Linear and Conv input, per-channel int8 on their weights, and per-tensor int8 on both
inputs of the two attention MatMuls (Q, K^T; the Softmax output P, V).
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fmnist_common import train_qat_and_export  # noqa: E402


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        # quantize_model() turns these into TensorQuantizers: the attention MatMuls' inputs.
        self.matmul_q_input_quantizer = nn.Identity()
        self.matmul_k_input_quantizer = nn.Identity()
        self.matmul_a_input_quantizer = nn.Identity()
        self.matmul_v_input_quantizer = nn.Identity()

    def forward(self, x):
        batch, tokens, channels = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = torch.matmul(self.matmul_q_input_quantizer(q), self.matmul_k_input_quantizer(k.transpose(-2, -1)))
        probabilities = (scores / self.head_dim ** 0.5).softmax(dim=-1)
        context = torch.matmul(self.matmul_a_input_quantizer(probabilities), self.matmul_v_input_quantizer(v))
        return self.proj(context.transpose(1, 2).reshape(batch, tokens, channels))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attention = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class FmnistViT(nn.Module):
    """28x28x1 -> 7x7 patches (16 tokens) + class token -> `depth` blocks -> LayerNorm -> 10 logits."""

    def __init__(self, patch=7, dim=64, depth=3, heads=4, mlp_dim=128):
        super().__init__()
        self.patch_embedding = nn.Conv2d(1, dim, patch, patch)
        tokens = (28 // patch) ** 2
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.position_embedding = nn.Parameter(torch.randn(1, tokens + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads, mlp_dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.patch_embedding(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1) + self.position_embedding
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def main():
    train_qat_and_export(FmnistViT, "fmnist_vit", __doc__, epochs=1.5, qat_steps=100)


if __name__ == "__main__":
    main()
