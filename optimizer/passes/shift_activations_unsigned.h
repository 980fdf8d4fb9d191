// Stores int8 activations as uint8 (zero-point + 128) where every reader is a Conv/Gemm/MatMul
// data input or a residual Add: the same integers shifted by 128, so every result is bit-equal.
// VNNI multiplies unsigned activations by signed weights (vpdpbusd), so a signed activation is
// flipped to unsigned on every read (the GEMM panel copy; docs/decisions.md); stored unsigned, a
// 1x1 conv reads its input rows in place.
// A tensor changes only where its writer and readers all take the new type: written by a Conv/
// Gemm/MatMul epilogue, a table (Sigmoid, SiLU, ...) or a float layer's Quantize; read by Conv/
// Gemm/MatMul data inputs, or as the residual of an Add the residual fusion takes into the epilogue
// of the Conv/Gemm/MatMul on its other side (ResNet's block inputs). Tensors joined by an int8
// Add/Mul or a clamp (Relu/Clip, folded into its producer only with equal parameters on both
// sides) change together or not at all, and so do the input and output of a MaxPool, Reshape,
// Flatten, Transpose, Squeeze or Unsqueeze left on int8 codes by propagate_qdq (ResNet's stem
// pool). A tensor another pool, concat, Pad, Slice/Gather, float island, attention MatMul's second
// operand or graph output touches keeps its dtype.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_shift_activations_unsigned_pass();

}  // namespace qdqrt::optimizer
