// Clamp fusion: DQ -> Relu/Clip/Max/Min (constant bounds) -> Q, the ReLU/ReLU6 that ONNX Runtime's
// quantizer leaves between two Q/DQ pairs with symmetric int8 activations, runs in int8:
// - folded into the layer that writes the DQ's input (QConv, QMatMul, QLookup, QRequantize) when
//   the layer's output, the DQ and the Q have equal parameters: the layer clamps before it
//   quantizes. Exact, since Q is monotonic: Q(clip(DQ(Q(v)))) == Q(clip(v));
// - otherwise a standalone QRequantize carrying the clamp as its activation (a 256-entry table in
//   the engine, bit-exact with the source nodes).
#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/ops/fused_layers.h"
#include "optimizer/fusions/epilogue.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();
constexpr float kHighest = std::numeric_limits<float>::max();

// Max(x, c) / Min(x, c) with a float scalar constant c: the clamp and x, or the reason it is not one.
struct ClampMatch {
  std::optional<FusedActivation> clamp;
  std::string x;
  std::string reason;
};

ClampMatch match_clamp(const Graph& graph, const Node& node) {
  ClampMatch match;
  if (is_onnx(node, "Relu") || is_onnx(node, "Clip")) {
    match.x = node.input(0);
    match.clamp = fusable_activation(graph, node);
    if (!match.clamp) match.reason = "Clip bound is not a constant";
    return match;
  }
  const bool is_max = is_onnx(node, "Max");
  if (!is_max && !is_onnx(node, "Min")) return match;
  if (node.inputs.size() != 2) return match;
  for (size_t i = 0; i < 2; ++i) {
    const Tensor* bound = find_constant(graph, node.input(1 - i));
    if (bound == nullptr || bound->dtype() != DataType::kFloat || bound->numel() != 1) continue;
    match.x = node.input(i);
    FusedActivation clamp;
    clamp.kind = ActivationKind::kClip;
    (is_max ? clamp.min : clamp.max) = bound->data<float>()[0];
    match.clamp = clamp;
    return match;
  }
  match.reason = fmt::format("{} has no constant scalar operand", node.op_type);
  return match;
}

// Interval form of an activation: none, Relu and Clip are clamps; LeakyRelu is not.
bool clamp_bounds(const FusedActivation& activation, float& low, float& high) {
  switch (activation.kind) {
    case ActivationKind::kNone: low = kLowest; high = kHighest; return true;
    case ActivationKind::kRelu: low = 0.0f; high = kHighest; return true;
    case ActivationKind::kClip: low = activation.min; high = activation.max; return activation.min <= activation.max;
    default: return false;
  }
}

// `first` then `second` as one clamp, when both are clamps whose ranges overlap.
std::optional<FusedActivation> compose_clamps(const FusedActivation& first, const FusedActivation& second) {
  float low_first = 0, high_first = 0, low_second = 0, high_second = 0;
  if (!clamp_bounds(first, low_first, high_first) || !clamp_bounds(second, low_second, high_second)) return std::nullopt;
  const float low = std::max(low_first, low_second);
  const float high = std::min(high_first, high_second);
  if (low > high) return std::nullopt;
  FusedActivation composed;
  if (low == 0.0f && high == kHighest) {
    composed.kind = ActivationKind::kRelu;
  } else if (low != kLowest || high != kHighest) {
    composed.kind = ActivationKind::kClip;
    composed.min = low;
    composed.max = high;
  }
  return composed;
}

// Input index of a layer's y_scale (y_zero_point follows), or -1 for layers the clamp cannot join.
int output_scale_input(const Node& layer) {
  if (layer.domain != layers::kDomain) return -1;
  if (layer.op_type == layers::kQConv) return layers::kConvYScale;
  if (layer.op_type == layers::kQMatMul) return layers::kMatMulYScale;
  if (layer.op_type == layers::kQLookup || layer.op_type == layers::kQRequantize) return layers::kUnaryYScale;
  return -1;
}

// Equal dtype, scalar scale and zero-point ("" = 0), given by the names of constants.
bool same_constant_params(const Graph& graph, const std::string& scale_a, const std::string& zero_point_a,
                          DataType dtype_a, const std::string& scale_b, const std::string& zero_point_b,
                          DataType dtype_b) {
  if (dtype_a != dtype_b) return false;
  const Tensor* a = find_constant(graph, scale_a);
  const Tensor* b = find_constant(graph, scale_b);
  if (a == nullptr || b == nullptr || a->numel() != 1 || b->numel() != 1) return false;
  if (a->data<float>()[0] != b->data<float>()[0]) return false;
  auto zero_point = [&](const std::string& name) -> std::optional<int64_t> {
    if (name.empty()) return 0;
    const Tensor* constant = find_constant(graph, name);
    if (constant == nullptr || constant->numel() != 1) return std::nullopt;
    return constant->value_as_int64(0);
  };
  std::optional<int64_t> zp_a = zero_point(zero_point_a), zp_b = zero_point(zero_point_b);
  return zp_a && zp_b && *zp_a == *zp_b;
}

// The fused layer that can take the clamp: it writes x's int8 tensor for this DQ only, with the
// DQ's and the Q's parameters, and its activation composes with the clamp. -1 otherwise.
int absorbing_layer(const Graph& graph, const ValueIndex& index, int clamp_node, const QuantizedInput& x,
                    const QuantizedOutput& q, const FusedActivation& clamp, FusedActivation& composed) {
  if (!same_constant_params(graph, x.scale, x.zero_point, x.dtype, q.scale, q.zero_point, q.dtype)) return -1;
  if (single_consumer(index, x.quantized) != x.dq_node) return -1;
  if (single_consumer(index, graph.nodes[static_cast<size_t>(x.dq_node)].outputs[0]) != clamp_node) return -1;
  const int producer = index.producer(x.quantized);
  if (producer < 0) return -1;
  const Node& layer = graph.nodes[static_cast<size_t>(producer)];
  const int y_scale = output_scale_input(layer);
  if (y_scale < 0 || layer.outputs.size() != 1 || !layer.has_input(static_cast<size_t>(y_scale))) return -1;
  const std::string y_zero_point = layer.input(static_cast<size_t>(y_scale) + 1);
  if (!same_constant_params(graph, layer.input(static_cast<size_t>(y_scale)), y_zero_point, x.dtype, x.scale,
                            x.zero_point, x.dtype)) {
    return -1;
  }
  const FusedLayerInfo* fused = fused_layer_info(layer);
  if (fused == nullptr) return -1;
  std::optional<FusedActivation> both = compose_clamps(fused->activation, clamp);
  if (!both) return -1;
  composed = *both;
  return producer;
}

Status fold_into_layer(Graph& graph, const QdqSelection& selection) {
  Node& layer = graph.nodes[static_cast<size_t>(selection.absorbing_layer)];
  const Node& clamp = graph.nodes[static_cast<size_t>(selection.targets[0])];
  const Node& q = graph.nodes[static_cast<size_t>(selection.output_q->q_node)];
  layer.attributes.erase("activation");
  layer.attributes.erase("activation_min");
  layer.attributes.erase("activation_max");
  set_activation_attributes(layer, selection.activation);
  Attribute& fused = layer.attributes["fused_nodes"];
  fused.kind = Attribute::Kind::kStrings;
  fused.strings.push_back(clamp.name);
  fused.strings.push_back(q.name);
  QDQRT_ASSIGN_OR_RETURN(layer.typed_attributes, parse_fused_layer_attributes(layer));
  graph.values.erase(layer.outputs[0]);
  layer.outputs[0] = selection.output;
  std::vector<int> removed = {selection.targets[0], selection.output_q->q_node};
  std::sort(removed.rbegin(), removed.rend());
  for (int node : removed) graph.nodes.erase(graph.nodes.begin() + node);
  return Status::ok();
}

}  // namespace

SelectResult select_qdq_clamp(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  ClampMatch match = match_clamp(graph, node);
  if ((!match.clamp && match.reason.empty()) || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  if (!match.clamp) {
    result.reason = match.reason;
    return result;
  }
  auto x = activation_input(graph, index, match.x, "input", result.reason);
  if (!x) return result;
  auto q = required_output_quantization(graph, index, node.outputs[0], result.reason);
  if (!q) return result;
  QdqSelection selection;
  selection.layer_op = layers::kQRequantize;
  selection.inputs = {*x};
  selection.targets = {node_index};
  selection.activation = *match.clamp;
  end_at_quantize(graph, *q, selection);
  FusedActivation composed;
  selection.absorbing_layer = absorbing_layer(graph, index, node_index, *x, *q, *match.clamp, composed);
  if (selection.absorbing_layer >= 0) selection.activation = composed;
  result.selection = std::move(selection);
  return result;
}

Status apply_qdq_clamp(Graph& graph, const QdqSelection& selection, PassContext& context) {
  if (selection.absorbing_layer >= 0) return fold_into_layer(graph, selection);
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/false);
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  layer.inputs = input_triple(graph, selection.inputs[0]);
  layer.inputs.insert(layer.inputs.end(), output_params.begin(), output_params.end());
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
