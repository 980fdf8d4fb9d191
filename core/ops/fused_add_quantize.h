// AddQuantize: a residual block's end, y = QuantizeLinear(activation(a + b)) for two float
// tensors of one shape computed at run time, as one float layer. Output 0 is the quantized y (the
// next INT8 conv's input); the optional output 1 is activation(a + b) in float, for the readers
// that take the sum itself (the next block's residual Add, a pool). A residual branch without a
// quantizer (pytorch-quantization's torchvision exports) otherwise runs Add, Relu and
// QuantizeLinear as three passes over the block's output.
// Inputs: a, b (float, equal dims), y_scale (float, one value), y_zero_point (int8 or uint8, one
// value: the output type). Attributes: "fused_nodes" and the fused-layer activation
// ("activation": "" or "Relu"). The reference kernel (reference/ops/fused.cpp) runs the ops it
// stands for, in their order.
#pragma once

#include "core/ops/fused.h"

namespace qdqrt {

namespace layers {
inline constexpr const char* kAddQuantize = "AddQuantize";
enum AddQuantizeInput {
  kAddQuantizeA = 0,
  kAddQuantizeB,
  kAddQuantizeYScale,
  kAddQuantizeYZeroPoint,
  kAddQuantizeInputCount
};
}  // namespace layers

struct AddQuantizeAttributes : OpAttributes {
  FusedLayerInfo fused;  // activation: kNone or kRelu; no pointwise program
};

}  // namespace qdqrt
