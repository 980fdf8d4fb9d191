// Typed attributes of the reduce family: Reduce* and ArgMax/ArgMin.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"

namespace qdqrt {

// ReduceSum takes axes as input 1 from opset 13, the other Reduce* ops from opset 18; before
// that axes is an attribute. Empty axes reduce every axis unless noop_with_empty_axes is set
// (then the op is an identity).
struct ReduceAttributes : OpAttributes {
  std::vector<int64_t> axes;
  bool axes_from_input = false;
  bool keepdims = true;
  bool noop_with_empty_axes = false;
};

struct ArgMinMaxAttributes : OpAttributes {
  int64_t axis = 0;
  bool keepdims = true;
  bool select_last_index = false;  // ties pick the last index instead of the first
};

// CumSum along the axis given as input 1.
struct CumSumAttributes : OpAttributes {
  bool exclusive = false;  // element i sums elements before i only
  bool reverse = false;    // sum from the end of the axis
};

}  // namespace qdqrt
