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

// How a Q/DQ node's scale and zero-point apply to x: one value, one per index along `axis`
// (opset 13+), or one per block of block_size along `axis` (opset 21+, same rank as x).
struct QuantParamShapes {
  enum class Kind { kPerTensor, kPerAxis, kBlocked } kind = Kind::kPerTensor;
  int64_t axis = 0;  // normalized; per-axis and blocked only
};

// The ONNX rules for scale and zero-point shapes against x's shape (zero_point null when absent),
// on shapes alone: the reference kernels call it on tensors, the parser on the static shapes of
// every Q/DQ node, so a model the reference refuses does not build or inspect either.
Result<QuantParamShapes> check_quant_param_shapes(const Node& node, const Shape& x, const Shape& scale,
                                                  const Shape* zero_point, int64_t axis_attribute,
                                                  int64_t block_size);

}  // namespace qdqrt
