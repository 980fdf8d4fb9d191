// Folds an inference BatchNormalization into the Conv before it (the Conv's output read only by
// the BN). With f = gamma / sqrt(var + eps) per output channel:
//  - float Conv with a constant float weight: W' = W * f, b' = (b - mean) * f + beta;
//  - Conv whose weight is DequantizeLinear(int8 constant, constant per-tensor or axis-0 scale)
//    read only by this Conv: the DQ's scale becomes per-channel scale * f (axis 0) and the shift
//    goes into the float bias. The int8 weight is never re-quantized. f may be negative; the
//    scale then is negative, which DequantizeLinear computes exactly ((q - zp) * scale).
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_fold_batchnorm_pass();

}  // namespace qdqrt::optimizer
