// Concat copy: output rows are the inputs' rows side by side (channel concat in NHWC: one row per
// pixel; any axis works with outer = product of the dims before it and inner_i = the input's
// extent along the axis times the product of the dims after it). An input whose scale/zero-point
// differ from the output's is requantized on the fly (quantize.h formula); otherwise it is copied.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quantize/quantize.h"

namespace qdqrt::kernels {

template <class T>
struct ConcatInput {
  const T* data = nullptr;
  size_t inner = 0;          // elements per outer row
  bool requantize = false;   // false: plain copy (same scale and zero-point as the output)
  RequantizeParams params;   // used when requantize
};

// Rows [outer_begin, outer_end) of the output (row length = sum of inputs[i].inner).
template <class T>
void qconcat(size_t outer_begin, size_t outer_end, const ConcatInput<T>* inputs, size_t input_count, T* output,
             RequantizeFn<T> requantize);

}  // namespace qdqrt::kernels
