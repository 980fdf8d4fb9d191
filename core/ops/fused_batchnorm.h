// FusedBatchNorm: DenseNet's pre-activation unit, an inference BatchNormalization of the channel
// concatenation of its inputs with the activation after it,
//   y = activation(BatchNormalization(Concat(x0, ..., xk-1, axis = 1), scale, B, mean, var)),
// as one float layer: the engine reads each xi where it lies and writes y once, where the three
// nodes wrote and read the concatenation and the normalized tensor apart.
// Inputs: scale, B, mean, var (constant float [C]), then x0 .. xk-1 (k >= 1, float, rank >= 2,
// equal dims but dim 1; C = the sum of their dim 1). Attributes: "epsilon" (float, as
// BatchNormalization's), "fused_nodes" and the fused-layer activation ("activation": "" or "Relu"
// or "Clip" with "activation_min"/"activation_max"). The reference kernel (reference/ops/fused.cpp)
// runs the ops it stands for, in their order.
#pragma once

#include "core/ops/fused.h"

namespace qdqrt {

namespace layers {
inline constexpr const char* kFusedBatchNorm = "FusedBatchNorm";
enum FusedBatchNormInput {
  kFusedBatchNormScale = 0,
  kFusedBatchNormBias,
  kFusedBatchNormMean,
  kFusedBatchNormVariance,
  kFusedBatchNormFirstX
};
}  // namespace layers

struct FusedBatchNormAttributes : OpAttributes {
  FusedLayerInfo fused;  // activation: kNone, kRelu or kClip; no pointwise program
  float epsilon = 1e-5f;
};

}  // namespace qdqrt
