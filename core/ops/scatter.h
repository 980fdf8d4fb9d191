// ScatterND: the data tensor with slices replaced (or combined, per `reduction`) at the positions
// an index tensor gives. Registered with the tensor family (register_tensor_ops).
#pragma once

#include "core/op_registry.h"

namespace qdqrt {

// ScatterND's `reduction`: "none" at every opset, "add" and "mul" from opset 16, "max" and "min"
// from opset 18.
enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

struct ScatterNDAttributes : OpAttributes {
  ScatterReduction reduction = ScatterReduction::kNone;
};

// "none", "add", ...
const char* scatter_reduction_name(ScatterReduction reduction);

void register_scatter_ops(OpRegistry& registry);

}  // namespace qdqrt
