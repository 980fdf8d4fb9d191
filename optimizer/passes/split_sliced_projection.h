// Splits a projection by a constant weight whose output is read only by Slices of its last axis
// into one projection per Slice: nn.MultiheadAttention's packed in-projection
//
//   qkv = Add(MatMul(x, W[K, 3E]), b[3E]);  q, k, v = Slice(qkv, [0, E, 2E] .. [E, 2E, 3E], axis -1)
//
// becomes q = Add(MatMul(x, W[:, 0:E]), b[0:E]) and likewise k and v: the same multiply-adds, no
// copies of the packed result, and each part a MatMul by a constant (the engine's GEMM layer)
// where the Slice had no native layer. The bias Add is optional and may have either operand
// first; a bias of shape [N] or [1, ..., N] is sliced with the weight, a scalar one kept. A
// quantized weight, DequantizeLinear(8-bit constant [K, N], scale, zero-point) per tensor or per
// column (axis 1) and read only by the MatMul, is split the same way: one DequantizeLinear per
// part with its columns, scales and zero-points (each part then fuses to an INT8 QMatMul).
//
// Fires only when every reader of the packed value is such a Slice (constant starts and ends, one
// axis, the last, step 1), the value is no graph output, the MatMul's result is read only by the
// Add, and the weight is a 2-D float constant or such a DequantizeLinear (not per row, not
// blocked). Runs after evaluate_shape_computations, which
// turns the Slices' starts and ends (computed from Shape by torch's export) into constants.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_split_sliced_projection_pass();

}  // namespace qdqrt::optimizer
