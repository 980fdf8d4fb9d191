// Typed attributes of QuantizeLinear and DequantizeLinear. QLinearConv and ConvInteger use
// ConvAttributes (core/ops/conv.h); QLinearMatMul, MatMulInteger and DynamicQuantizeLinear
// have no attributes.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/graph.h"

namespace qdqrt {

struct QuantizeLinearAttributes : OpAttributes {
  int64_t axis = 1;         // opset 13+: the per-axis / blocked axis; may be negative
  int64_t block_size = 0;   // opset 21+: 0 = per-tensor or per-axis, > 0 = blocked along axis
  bool saturate = true;     // opset 19+: only affects float8 outputs (unsupported); ignored for ints
  DataType output_dtype = DataType::kUndefined;  // opset 21+: kUndefined = from y_zero_point (or uint8)
};

struct DequantizeLinearAttributes : OpAttributes {
  int64_t axis = 1;        // opset 13+
  int64_t block_size = 0;  // opset 21+
};

// The integer element types QuantizeLinear may produce (and DequantizeLinear may read, plus int32).
bool is_quantized_integer_dtype(DataType dtype);

}  // namespace qdqrt
