// One row per qdqrt-domain fused layer (core/ops/fused_layers.h): everything a stage needs to know
// about a fused op without a case of its own. The attribute parser (core/ops/fused.cpp), inspect's
// slots, kind, MACs and layer-info type (optimizer/layer_info.cpp, tools/layer_info_schema.cpp) and
// the engine's output shapes at another batch (engine/batch_tracking.cpp) all read the table, so a
// new fused op is one row in `kFusedOps` (core/ops/fused.cpp) plus the functions it names.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/op_registry.h"
#include "core/ops/conv.h"
#include "core/ops/pool.h"

namespace qdqrt {

struct FusedLayerInfo;

// The shapes of a node's inputs in slot order, constants included; nullopt: the slot is absent or
// its rank is unknown. A dim is static, symbolic (Dim::symbol, e.g. "batch") or unknown (value -1,
// no symbol).
using Dims = std::vector<Dim>;
using OptionalDims = std::optional<Dims>;
using InputShapes = std::vector<OptionalDims>;

// A quantized activation input: the slot of its value and of its zero-point (the scale sits
// between them).
struct QuantizedInputSlot {
  int value = -1;
  int zero_point = -1;
};

struct FusedOpRow {
  const char* op_type = nullptr;  // layers::kQConv, ...
  // Input slots: the quantized activations (their scales and zero-points are parameters, not
  // data), then for variadic ops the slot from which (x, x_scale, x_zero_point) triples repeat to
  // the last input (QConcat; -1: none), and the slot of y_zero_point (absent: the layer writes
  // float; -1: the op has none). A layer whose activations are float lists none.
  std::vector<QuantizedInputSlot> quantized_inputs = {};
  int repeated_triples_from = -1;
  int output_zero_point = -1;
  // The kind label inspect and profiles show ("Conv", "MatMul", ...); `refine_kind`, when set,
  // reads the node for a finer one (QConv: DepthwiseConv/GroupConv; QLookup: its function).
  const char* kind = nullptr;
  std::string (*refine_kind)(const Node& node, const InputShapes& inputs) = nullptr;
  // The typed attribute parser the op registry runs on every node of this op.
  AttributeParser parse_attributes = nullptr;
  // The FusedLayerInfo inside the op's typed attributes (nullptr when they are another type).
  const FusedLayerInfo* (*fused_info)(const OpAttributes& attributes) = nullptr;
  // The output shape from the input shapes (dims may be symbolic); nullopt when they are unknown or
  // do not fit together. Every row has one: without it the engine cannot follow the batch.
  OptionalDims (*output_shape)(const Node& node, const InputShapes& inputs) = nullptr;
  // The dims of output `output` >= 1 from output 0's (`y`), for an op with more outputs (a conv's
  // row sums); nullptr: the op has one output.
  OptionalDims (*more_output_shape)(const Node& node, const Dims& y, size_t output) = nullptr;
  // Multiply-accumulates of the layer (Conv- and MatMul-like layers) from its input dims and its
  // output 0's dims `y`; nullptr: the layer's MACs are not counted. nullopt when a dim it needs is
  // not static or the count overflows int64.
  std::optional<int64_t> (*macs)(const Node& node, const InputShapes& inputs, const Dims& y) = nullptr;
  // The layer type TREx reads ("ParameterType" in inspect's and exec's layer JSON).
  const char* layer_info_type = nullptr;
};

// Every fused op, one row each.
std::span<const FusedOpRow> fused_op_table();
// The row of a qdqrt-domain op type; nullptr when there is none.
const FusedOpRow* find_fused_op(std::string_view op_type);
// The row of a node: nullptr when the node is not in the qdqrt domain or its op has no row.
const FusedOpRow* fused_op_row(const Node& node);

// The quantized activation inputs of `node` (the row's fixed slots, then its repeated triples).
std::vector<QuantizedInputSlot> quantized_input_slots(const FusedOpRow& row, const Node& node);
// The kind label of a fused layer node (the row's kind, refined by the node).
std::string fused_layer_kind(const FusedOpRow& row, const Node& node, const InputShapes& inputs);

// The shapes of a node's inputs as `graph` knows them (initializers, then value infos).
InputShapes input_shapes_in(const Graph& graph, const Node& node);

// Building blocks for rows (fused float layers reuse them). Shapes may carry symbolic dims: a
// symbol passes through where the dim does, a dim computed from a symbolic one is unknown.
// The slot of `inputs`, nullopt when the node has fewer inputs.
OptionalDims input_dims(const InputShapes& inputs, size_t slot);
// Conv's kind from its group and weight shape [C_out, C_in / group, k...]: "Conv" (group 1),
// "DepthwiseConv" (group == C_in == C_out), else "GroupConv".
std::string conv_kind(int64_t group, const OptionalDims& weight);
// numpy broadcasting; nullopt when static dims disagree.
OptionalDims broadcast_dims(const OptionalDims& a, const OptionalDims& b);
// Conv on x [N, C, spatial...] with weight [O, C / group, k...]: [N, O, out...].
OptionalDims conv_output_dims(const Node& node, const ConvAttributes& attributes, const OptionalDims& x,
                              const OptionalDims& weight);
// A pool window on x [N, C, spatial...]: [N, C, out...].
OptionalDims pool_output_dims(const Node& node, const PoolAttributes& attributes, const OptionalDims& x);
// A global pool on x [N, C, spatial...]: [N, C, 1...].
OptionalDims global_pool_output_dims(const OptionalDims& x);
// MatMul of a [..., M, K] and b [..., K, N] (both rank >= 2): [broadcast batch..., M, N].
OptionalDims matmul_output_dims(const OptionalDims& a, const OptionalDims& b);
// Concat along `axis` (negative counts from the end).
OptionalDims concat_output_dims(const std::vector<OptionalDims>& parts, int64_t axis);
// The row sums of a conv's output y [N, C, H, W] as its output 1: [N, H, C].
OptionalDims row_sums_output_dims(const Node& node, const Dims& y, size_t output);
// The element count of static dims; nullopt when a dim is not static or the count overflows.
std::optional<int64_t> static_numel(const OptionalDims& dims);
// MACs per output element of a Conv: the product of the weight's dims after the first.
std::optional<int64_t> conv_macs_per_output(const OptionalDims& weight);
// MACs per output element of a MatMul: K, the last dim of a.
std::optional<int64_t> matmul_macs_per_output(const OptionalDims& a);
// A Conv's MACs: output elements times conv_macs_per_output(weight).
std::optional<int64_t> conv_macs(const OptionalDims& weight, const Dims& y);
// A MatMul's MACs: output elements times K (the last dim of a).
std::optional<int64_t> matmul_macs(const OptionalDims& a, const Dims& y);

}  // namespace qdqrt
