// Typed attributes of BatchNormalization (inference only) and LayerNormalization (opset 17+).
#pragma once

#include <cstdint>

#include "core/graph.h"

namespace qdqrt {

struct BatchNormalizationAttributes : OpAttributes {
  float epsilon = 1e-5f;
  float momentum = 0.9f;  // training only; kept for completeness
};

struct LayerNormalizationAttributes : OpAttributes {
  int64_t axis = -1;  // first normalized axis; may be negative
  float epsilon = 1e-5f;
  int64_t stash_type = 1;  // element type of Mean/InvStdDev computation; qdqrt computes in double
};

}  // namespace qdqrt
