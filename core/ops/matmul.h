// Typed attributes of Gemm (MatMul has none).
#pragma once

#include <cstdint>

#include "core/graph.h"

namespace qdqrt {

struct GemmAttributes : OpAttributes {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
};

}  // namespace qdqrt
