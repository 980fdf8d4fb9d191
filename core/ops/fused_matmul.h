// FusedMatMul: a float MatMul by a constant matrix with the bias Add after it, and optionally the
// GELU after that (a transformer's MLP, ONNX Runtime's BiasGelu),
//   y = function(MatMul(a, b) + bias)
// as one float layer: the engine's fp32 GEMM starts each sum from the bias and applies the GELU in
// its epilogue (the transformer's projections and MLPs, whose exported Linear is a MatMul and an
// Add: ONNX Gemm takes only a rank-2 A), where the nodes wrote the product and read it back.
// Inputs: a (float, rank >= 2), b (constant float [K, N]), bias (constant float, N values, every dim
// but the last 1, rank at most a's, so the Add does not change the product's dims). Attributes:
// "fused_nodes" as every fused layer and "function": "" or "Gelu" (ONNX Gelu, approximate "none"). The reference kernel (reference/ops/fused.cpp) runs the ops it
// stands for, in their order.
#pragma once

#include "core/ops/fused.h"

namespace qdqrt {

namespace layers {
inline constexpr const char* kFusedMatMul = "FusedMatMul";
enum FusedMatMulInput { kFusedMatMulA = 0, kFusedMatMulB, kFusedMatMulBias, kFusedMatMulInputCount };
}  // namespace layers

struct FusedMatMulAttributes : OpAttributes {
  FusedLayerInfo fused;  // no activation, no pointwise program
  bool gelu = false;     // "function" = "Gelu"
};

}  // namespace qdqrt
