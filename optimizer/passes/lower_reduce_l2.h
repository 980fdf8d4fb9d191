// Lowers ReduceL2 over the last axis with keepdims -- the norm of F.normalize(x, dim=-1), which
// Swin-V2's cosine attention applies to its queries and keys -- to native layers:
//
//   ReduceL2(x [..., K], axes = [-1], keepdims = 1)  ->  Sqrt(MatMul(Mul(x, x), ones [K, 1]))
//
// (the engine's elementwise, GEMM and unary layers; the sum of squares in the GEMM's order, within
// float rounding of the reference kernel's). Only float32, K known at build; other axes, several
// axes, keepdims = 0 or axes given at run time stay ReduceL2 on the reference layer.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_lower_reduce_l2_pass();

}  // namespace qdqrt::optimizer
