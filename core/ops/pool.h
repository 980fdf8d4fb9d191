// Typed attributes of MaxPool and AveragePool (GlobalAveragePool/GlobalMaxPool have none).
// Empty strides/dilations/pads mean the ONNX defaults (1, 1, 0).
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/ops/conv.h"

namespace qdqrt {

struct PoolAttributes : OpAttributes {
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;             // opset 10+
  std::vector<int64_t> dilations;     // MaxPool opset 10+, AveragePool opset 19+
  std::vector<int64_t> kernel_shape;  // required
  std::vector<int64_t> pads;          // [x1_begin, ..., x1_end, ...]
  std::vector<int64_t> strides;
};

struct MaxPoolAttributes : PoolAttributes {
  // 0: Indices are row-major flat offsets; 1: column-major (only the spatial H/W swap).
  int64_t storage_order = 0;
};

struct AveragePoolAttributes : PoolAttributes {
  bool count_include_pad = false;
};

// Parses AveragePool's attribute set (dilations allowed) from any op that carries it (QAveragePool).
Result<AveragePoolAttributes> parse_average_pool_attribute_set(const Node& node);

}  // namespace qdqrt
