// LayerNorm fusion: the decomposed LayerNorm torch exports below opset 17
//   mean = ReduceMean(x, last axis); d = Sub(x, mean); variance = ReduceMean(Pow(d, 2) or Mul(d, d));
//   y = Div(d, Sqrt(Add(variance, epsilon))) [Mul gamma] [Add beta]
// and the opset-17 LayerNormalization over the last axis become one LayerNorm layer
// (core/ops/fused_layers.h), with the QuantizeLinear that follows (the next Linear's input
// quantizer) absorbed: the layer writes int8 directly, as TensorRT does.
#include <cmath>

#include "core/attribute_values.h"
#include "core/ops/fused_layers.h"
#include "core/ops/normalization.h"
#include "core/ops/reduce.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

std::optional<int64_t> rank_of(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.find_value(value);
  if (info == nullptr || info->dtype != DataType::kFloat || !info->shape || info->shape->empty()) return std::nullopt;
  return static_cast<int64_t>(info->shape->size());
}

// A ReduceMean of `value`'s last axis keeping dims (axes as attribute, or as a constant input at opset 18).
bool reduces_last_axis(const Graph& graph, const Node& node, int64_t rank) {
  if (!is_onnx(node, "ReduceMean") || node.outputs.size() != 1) return false;
  const auto& attributes = node.attrs<ReduceAttributes>();
  if (!attributes.keepdims) return false;
  std::vector<int64_t> axes = attributes.axes;
  if (attributes.axes_from_input) {
    const Tensor* constant = node.has_input(1) ? find_constant(graph, node.input(1)) : nullptr;
    if (constant == nullptr) return false;
    axes.clear();
    for (int64_t i = 0; i < constant->numel(); ++i) axes.push_back(constant->value_as_int64(i));
  }
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

// The other input of a binary `node` when one input is `value`.
std::string other_input(const Node& node, const std::string& value) {
  if (node.inputs.size() != 2) return "";
  if (node.input(0) == value) return node.input(1);
  if (node.input(1) == value) return node.input(0);
  return "";
}

// A float constant of one value, or nullopt.
std::optional<float> scalar_constant(const Graph& graph, const std::string& value) {
  const Tensor* constant = value.empty() ? nullptr : find_constant(graph, value);
  if (constant == nullptr || constant->numel() != 1 || constant->dtype() != DataType::kFloat) return std::nullopt;
  return constant->data<float>()[0];
}

// A float constant of `columns` values along the last axis (gamma, beta), or nullopt. A
// DequantizeLinear of constants counts: ONNX Runtime's quantizer dequantizes an initializer for all
// its readers, so a LayerNorm beta that torch's export shares with a quantized bias reads an int32 DQ.
std::optional<Tensor> row_constant(const Graph& graph, const ValueIndex& index, const std::string& value,
                                   int64_t columns) {
  std::optional<Tensor> constant = value.empty() ? std::nullopt : constant_float(graph, index, value);
  if (!constant || constant->numel() != columns) return std::nullopt;
  for (int64_t axis = 0; axis + 1 < constant->rank(); ++axis) {
    if (constant->dim(axis) != 1) return std::nullopt;
  }
  return constant;
}

int only_consumer(const ValueIndex& index, const std::string& value) { return single_consumer(index, value); }

struct Match {
  std::vector<int> nodes;  // graph order
  std::string x, gamma, beta, output;
  float epsilon = 1e-5f;
};

std::optional<Match> match_decomposed(const Graph& graph, const ValueIndex& index, int mean_index) {
  const Node& mean = graph.nodes[static_cast<size_t>(mean_index)];
  if (!is_onnx(mean, "ReduceMean") || !mean.has_input(0)) return std::nullopt;
  Match match;
  match.x = mean.input(0);
  const std::optional<int64_t> rank = rank_of(graph, match.x);
  if (!rank || !reduces_last_axis(graph, mean, *rank)) return std::nullopt;
  const ValueInfo* x_info = graph.find_value(match.x);
  const Dim last = x_info->shape->back();
  if (!last.is_static()) return std::nullopt;
  const int64_t columns = last.value;
  auto node_at = [&](int node_index) -> const Node& { return graph.nodes[static_cast<size_t>(node_index)]; };

  const int sub_index = only_consumer(index, mean.outputs[0]);
  if (sub_index < 0 || !is_onnx(node_at(sub_index), "Sub") || node_at(sub_index).input(0) != match.x ||
      node_at(sub_index).input(1) != mean.outputs[0]) {
    return std::nullopt;
  }
  const std::string centered = node_at(sub_index).outputs[0];
  // `centered` feeds the square (Pow 2 or Mul by itself) and the Div, nothing else.
  int square_index = -1, div_index = -1;
  for (int consumer : index.consumers(centered)) {
    const Node& node = node_at(consumer);
    if (is_onnx(node, "Pow") && node.input(0) == centered && scalar_constant(graph, node.input(1)) == 2.0f) {
      square_index = consumer;
    } else if (is_onnx(node, "Mul") && node.input(0) == centered && node.input(1) == centered) {
      square_index = consumer;
    } else if (is_onnx(node, "Div") && node.input(0) == centered) {
      div_index = consumer;
    } else {
      return std::nullopt;
    }
  }
  const size_t expected_reads = is_onnx(node_at(square_index < 0 ? sub_index : square_index), "Mul") ? 3 : 2;
  if (square_index < 0 || div_index < 0 || index.consumers(centered).size() != expected_reads ||
      index.is_graph_output(centered)) {
    return std::nullopt;
  }
  const int variance_index = only_consumer(index, node_at(square_index).outputs[0]);
  if (variance_index < 0 || !reduces_last_axis(graph, node_at(variance_index), *rank)) return std::nullopt;
  const int add_index = only_consumer(index, node_at(variance_index).outputs[0]);
  if (add_index < 0 || !is_onnx(node_at(add_index), "Add")) return std::nullopt;
  const std::optional<float> epsilon =
      scalar_constant(graph, other_input(node_at(add_index), node_at(variance_index).outputs[0]));
  if (!epsilon || !(*epsilon >= 0.0f) || !std::isfinite(*epsilon)) return std::nullopt;
  match.epsilon = *epsilon;
  const int sqrt_index = only_consumer(index, node_at(add_index).outputs[0]);
  if (sqrt_index != -1 && !is_onnx(node_at(sqrt_index), "Sqrt")) return std::nullopt;
  if (sqrt_index < 0 || only_consumer(index, node_at(sqrt_index).outputs[0]) != div_index ||
      node_at(div_index).input(1) != node_at(sqrt_index).outputs[0]) {
    return std::nullopt;
  }
  match.nodes = {mean_index, sub_index, square_index, variance_index, add_index, sqrt_index, div_index};
  match.output = node_at(div_index).outputs[0];
  // Optional affine part.
  int next = only_consumer(index, match.output);
  if (next >= 0 && is_onnx(node_at(next), "Mul") &&
      row_constant(graph, index, other_input(node_at(next), match.output), columns)) {
    match.gamma = other_input(node_at(next), match.output);
    match.nodes.push_back(next);
    match.output = node_at(next).outputs[0];
    next = only_consumer(index, match.output);
  }
  if (next >= 0 && is_onnx(node_at(next), "Add") &&
      row_constant(graph, index, other_input(node_at(next), match.output), columns)) {
    match.beta = other_input(node_at(next), match.output);
    match.nodes.push_back(next);
    match.output = node_at(next).outputs[0];
  }
  return match;
}

std::optional<Match> match_operator(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(node, "LayerNormalization") || !node.has_input(0) || !node.has_input(1)) return std::nullopt;
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty()) return std::nullopt;  // Mean / InvStdDev wanted: not ours
  }
  const std::optional<int64_t> rank = rank_of(graph, node.input(0));
  const auto& attributes = node.attrs<LayerNormalizationAttributes>();
  if (!rank || (attributes.axis != -1 && attributes.axis != *rank - 1)) return std::nullopt;
  const Dim last = graph.find_value(node.input(0))->shape->back();
  if (!last.is_static() || !row_constant(graph, index, node.input(1), last.value)) return std::nullopt;
  if (node.has_input(2) && !row_constant(graph, index, node.input(2), last.value)) return std::nullopt;
  Match match;
  match.nodes = {node_index};
  match.x = node.input(0);
  match.gamma = node.input(1);
  match.beta = node.has_input(2) ? node.input(2) : "";
  match.output = node.outputs[0];
  match.epsilon = attributes.epsilon;
  return match;
}

std::optional<Match> match_layer_norm(const Graph& graph, const ValueIndex& index, int node_index) {
  if (std::optional<Match> match = match_operator(graph, index, node_index)) return match;
  return match_decomposed(graph, index, node_index);
}

}  // namespace

SelectResult select_layer_norm(const Graph& graph, const ValueIndex& index, int node_index) {
  std::optional<Match> match = match_layer_norm(graph, index, node_index);
  if (!match) return {};
  QdqSelection selection;
  selection.layer_op = layers::kLayerNorm;
  selection.targets = match->nodes;
  selection.output = match->output;
  select_output_quantization(graph, index, selection);
  SelectResult result;
  result.selection = std::move(selection);
  return result;
}

Status apply_layer_norm(Graph& graph, const QdqSelection& selection, PassContext& context) {
  // The selection's nodes are still in place: match again for x, gamma, beta and epsilon.
  const ValueIndex index(graph);
  std::optional<Match> match = match_layer_norm(graph, index, selection.targets[0]);
  if (!match) return internal_error("fuse_layer_norm: the selected pattern no longer matches");
  const int64_t columns = graph.find_value(match->x)->shape->back().value;
  auto row = [&](const std::string& value, float fill, const char* name) {
    std::optional<Tensor> constant = row_constant(graph, index, value, columns);
    Tensor flat(DataType::kFloat, Shape{columns});
    for (int64_t c = 0; c < columns; ++c) flat.data<float>()[c] = constant ? constant->data<float>()[c] : fill;
    return add_initializer(graph, graph.nodes[static_cast<size_t>(selection.targets[0])].name + name, std::move(flat));
  };
  const std::string gamma = row(match->gamma, 1.0f, "_gamma");
  const std::string beta = row(match->beta, 0.0f, "_beta");
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/false);
  layer.attributes["epsilon"] = float_attribute(match->epsilon);
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  layer.inputs = {match->x, gamma, beta, output_params[0], output_params[1]};
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
