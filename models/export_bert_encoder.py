#!/usr/bin/python3
"""Exports a BERT-base-shaped encoder stack (random weights) as FP32 and QDQ ONNX, for benchmarks.

    /usr/bin/python3 models/export_bert_encoder.py --out build/models [--layers 2] [--opset 17] [--dynamic]

Writes <out>/bert_encoder_fp32.onnx and <out>/bert_encoder_qdq.onnx: input "input" float32
[batch, 128, 768] (the embeddings' output: hidden states), output "output" float32
[batch, 128, 768], batch dynamic. Each layer is BERT's post-norm block: self-attention with 12
heads (Q, K, V and output Linear, scores scaled by 1/sqrt(64), Softmax; no attention mask), residual
Add + LayerNorm, feed-forward Linear(768 -> 3072) + GELU (erf) + Linear(3072 -> 768), residual Add +
LayerNorm. Written the way Hugging Face writes it, so torch.onnx.export computes the head-split
Reshape targets from Shape(x). At opset 17 LayerNorm exports as LayerNormalization; below, as its
decomposition. Weights: seeded normal(0, 0.02) as BERT's initializer, LayerNorm gamma 1 + noise.

Q/DQ placement (pytorch-quantization's BERT recipe, fake_quant.py): per-tensor int8 on every Linear
input, per-channel int8 on every Linear weight, per-tensor int8 on both inputs of the two attention
MatMuls (Q and K^T, the Softmax output and V); max calibration on 8 seeded random batches.
The files are about 60 MB each (2 layers): they stay out of git.
--dynamic: the sequence length symbolic too (input and output [batch, sequence, 768]; the same
weights and calibration), written as bert_encoder_dynamic_{fp32,qdq}.onnx.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_quant import calibrate, freeze_weight_scales, quantize_model  # noqa: E402

SEQUENCE, HIDDEN, HEADS, INTERMEDIATE = 128, 768, 12, 3072


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_size = HIDDEN // HEADS
        self.query = nn.Linear(HIDDEN, HIDDEN)
        self.key = nn.Linear(HIDDEN, HIDDEN)
        self.value = nn.Linear(HIDDEN, HIDDEN)
        self.output = nn.Linear(HIDDEN, HIDDEN)
        self.matmul_q_input_quantizer = nn.Identity()
        self.matmul_k_input_quantizer = nn.Identity()
        self.matmul_a_input_quantizer = nn.Identity()
        self.matmul_v_input_quantizer = nn.Identity()

    def heads(self, x):
        return x.view(x.size()[:-1] + (HEADS, self.head_size)).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        scores = torch.matmul(self.matmul_q_input_quantizer(q), self.matmul_k_input_quantizer(k.transpose(-1, -2)))
        probabilities = F.softmax(scores / self.head_size ** 0.5, dim=-1)
        context = torch.matmul(self.matmul_a_input_quantizer(probabilities), self.matmul_v_input_quantizer(v))
        context = context.permute(0, 2, 1, 3).contiguous()
        return self.output(context.view(context.size()[:-2] + (HIDDEN,)))


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = SelfAttention()
        self.attention_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.intermediate = nn.Linear(HIDDEN, INTERMEDIATE)
        self.output = nn.Linear(INTERMEDIATE, HIDDEN)
        self.output_norm = nn.LayerNorm(HIDDEN, eps=1e-12)

    def forward(self, x):
        x = self.attention_norm(x + self.attention(x))
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


class Encoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.Sequential(*[EncoderLayer() for _ in range(layers)])

    def forward(self, x):
        return self.layers(x)


def initialize(model, generator):
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(0.0, 0.02, generator=generator)
            module.bias.data.normal_(0.0, 0.02, generator=generator)
        elif isinstance(module, nn.LayerNorm):
            module.weight.data = 1.0 + 0.1 * torch.randn(HIDDEN, generator=generator)
            module.bias.data.normal_(0.0, 0.1, generator=generator)


def export(model, path, opset, dynamic=False):
    axes = {0: "batch", 1: "sequence"} if dynamic else {0: "batch"}
    torch.onnx.export(model, torch.zeros(1, SEQUENCE, HIDDEN), path, opset_version=opset, do_constant_folding=True,
                      input_names=["input"], output_names=["output"], dynamic_axes={"input": axes, "output": axes})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--opset", type=int, default=17, choices=range(13, 18))
    parser.add_argument("--dynamic", action="store_true", help="a symbolic sequence length, not only the batch")
    args = parser.parse_args()
    stem = "bert_encoder_dynamic" if args.dynamic else "bert_encoder"
    torch.set_num_threads(2)
    generator = torch.Generator().manual_seed(0)
    model = Encoder(args.layers)
    initialize(model, generator)
    model.eval()
    os.makedirs(args.out, exist_ok=True)
    fp32_path = os.path.join(args.out, f"{stem}_fp32.onnx")
    export(model, fp32_path, args.opset, args.dynamic)
    print(fp32_path)

    qdq_model = quantize_model(model)
    calibrate(qdq_model, [torch.randn(2, SEQUENCE, HIDDEN, generator=generator) for _ in range(8)])
    freeze_weight_scales(qdq_model)
    qdq_path = os.path.join(args.out, f"{stem}_qdq.onnx")
    export(qdq_model.eval(), qdq_path, args.opset, args.dynamic)
    print(qdq_path)


if __name__ == "__main__":
    main()
