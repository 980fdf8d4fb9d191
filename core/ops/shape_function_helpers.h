// Pieces the op families' shape functions share (core/shape_inference.h): the node's typed
// attributes, axis checks, n-way broadcasting and the output sizes of a sliding window, all on
// dims that carry expressions. Every failure is a Status naming the node.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/op_registry.h"
#include "core/ops/conv.h"
#include "core/ops/fused_op_table.h"  // broadcast_dims
#include "core/shape_inference.h"

namespace qdqrt {

// The node's typed attributes: the ones the loader parsed, else `parser` run on the node now (a
// graph built in memory may not have them).
template <class T>
Result<std::shared_ptr<const T>> shape_attributes(const ShapeInferenceContext& context, AttributeParser parser) {
  const Node& node = context.node();
  if (auto typed = std::dynamic_pointer_cast<const T>(node.typed_attributes)) return typed;
  if (parser == nullptr) return context.error("its attributes are not parsed");
  Result<std::shared_ptr<const OpAttributes>> parsed = parser(node);
  if (!parsed.ok()) return parsed.status();
  if (auto typed = std::dynamic_pointer_cast<const T>(parsed.value())) return typed;
  return context.error("its attributes are not of the expected type");
}

// The same with the parser the registry holds for the node's op.
template <class T>
Result<std::shared_ptr<const T>> shape_attributes(const ShapeInferenceContext& context) {
  const Node& node = context.node();
  const OpSchema* schema = OpRegistry::instance().find(node.domain, node.op_type);
  return shape_attributes<T>(context, schema == nullptr ? nullptr : schema->parse_attributes);
}

// Input i's dims; an error naming the input when it is absent or its rank is not known.
Result<Dims> required_input_dims(const ShapeInferenceContext& context, size_t i);
// The same, the errors naming the input's role too (`what`: "data", "indices").
Result<Dims> required_input_dims(const ShapeInferenceContext& context, size_t i, const char* what);

// `axis` (negative counts from the end) as an index into `rank` dims; `what` names it in errors
// ("attribute 'axis'"), which give the allowed range.
Result<size_t> resolve_axis(const ShapeInferenceContext& context, int64_t axis, size_t rank, const char* what);

// numpy broadcasting of the given inputs' dims; an error when a rank is not known or two static
// dims differ and neither is 1.
Result<Dims> broadcast_inputs(const ShapeInferenceContext& context, const std::vector<size_t>& inputs);

// Integer element types (the ones whose small tensors inference follows as elements; the graph's
// constants are followed as elements for these and bool).
bool is_integer_element_type(DataType dtype);

// Largest kernel, stride, dilation or pad a window takes, and largest input size: the window
// arithmetic stays inside int64.
inline constexpr int64_t kMaxWindowValue = int64_t{1} << 31;
inline constexpr int64_t kMaxWindowInput = int64_t{1} << 60;

// The output size of a window along one axis as an expression of the input size `input` (the
// rule window_output_size applies to values): extent = dilation * (kernel - 1) + 1.
DimExpr window_output_expr(const DimExpr& input, int64_t extent, int64_t stride, int64_t pad_begin, int64_t pad_end,
                           AutoPad auto_pad, bool ceil_mode);

// The spatial output dims of a window (Conv, the pools) over x [N, C, spatial...]: values where
// the input's are known (the rule core/ops/window.cpp resolves for the kernels) and expressions of
// the input's. `kernel` has one entry per spatial axis; empty strides/dilations/pads mean 1/1/0.
Result<Dims> window_spatial_dims(const ShapeInferenceContext& context, const Dims& x,
                                 const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads,
                                 AutoPad auto_pad, bool ceil_mode);

// Conv's output [N, M, spatial...] from x [N, C, spatial...] and the weight [M, C / group, k...]
// (Conv, QLinearConv, ConvInteger).
Result<Dims> conv_output(const ShapeInferenceContext& context, const ConvAttributes& attributes, const Dims& x,
                         const Dims& weight);

// MatMul's output (numpy matmul: 1-D operands get a 1 prepended / appended and removed again;
// the batch dims broadcast) (MatMul, QLinearMatMul, MatMulInteger).
Result<Dims> matmul_output(const ShapeInferenceContext& context, const Dims& a, const Dims& b);

}  // namespace qdqrt
