// Stores int8 activations as uint8 (zero-point + 128) where every reader is a Conv/Gemm/MatMul
// data input or a residual Add: the same integers shifted by 128, so every result is bit-equal.
// VNNI multiplies unsigned activations by signed weights (vpdpbusd), so a signed activation is
// flipped to unsigned on every read (the GEMM panel copy, ~10% of a pytorch-quantization
// MobileNetV2); stored unsigned, a 1x1 conv reads its input rows in place. Tensors joined by an
// int8 Add (whose kernels take one dtype for both inputs and the output) change together or not
// at all; a Q whose output any other op reads (pools, concat, float islands, an attention MatMul's
// second operand, a graph output) keeps its dtype.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_shift_activations_unsigned_pass();

}  // namespace qdqrt::optimizer
