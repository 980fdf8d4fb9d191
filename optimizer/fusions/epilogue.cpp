#include "optimizer/fusions/epilogue.h"

#include <optional>

#include "core/attribute_values.h"
#include "core/ops/elementwise.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/residual_add.h"

namespace qdqrt::optimizer {

namespace {

// A following Add of a constant [N] vector is the bias (MatMul + Add as exported from Linear).
void select_bias_add(const Graph& graph, const ValueIndex& index, QdqSelection& selection, int64_t bias_channels) {
  int consumer = single_consumer(index, selection.output);
  if (consumer < 0 || !is_onnx(graph.nodes[static_cast<size_t>(consumer)], "Add")) return;
  const Node& add = graph.nodes[static_cast<size_t>(consumer)];
  const std::string& other = add.input(0) == selection.output ? add.input(1) : add.input(0);
  const Tensor* constant = find_constant(graph, other);
  if (constant != nullptr && constant->dtype() == DataType::kFloat && constant->numel() == bias_channels &&
      constant->rank() >= 1 && constant->dim(constant->rank() - 1) == bias_channels && constant->rank() <= 2) {
    selection.bias = other;
    selection.targets.push_back(consumer);
    selection.output = add.outputs[0];
  }
}

void set_float(Node& node, const std::string& key, float value) { node.attributes[key] = float_attribute(value); }

}  // namespace

std::optional<FusedActivation> fusable_activation(const Graph& graph, const Node& node) {
  FusedActivation activation;
  if (is_onnx(node, "Relu")) {
    activation.kind = ActivationKind::kRelu;
    return activation;
  }
  if (is_onnx(node, "LeakyRelu")) {
    const auto* attributes = dynamic_cast<const LeakyReluAttributes*>(node.typed_attributes.get());
    if (attributes == nullptr) return std::nullopt;
    activation.kind = ActivationKind::kLeakyRelu;
    activation.alpha = attributes->alpha;
    return activation;
  }
  if (is_onnx(node, "Clip")) {
    const auto* attributes = dynamic_cast<const ClipAttributes*>(node.typed_attributes.get());
    if (attributes == nullptr) return std::nullopt;
    activation.kind = ActivationKind::kClip;
    if (!attributes->bounds_from_inputs) {
      activation.min = attributes->min;
      activation.max = attributes->max;
      return activation;
    }
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (!node.has_input(i)) continue;
      const Tensor* bound = find_constant(graph, node.input(i));
      if (bound == nullptr || bound->numel() != 1 || bound->dtype() != DataType::kFloat) return std::nullopt;
      (i == 1 ? activation.min : activation.max) = bound->data<float>()[0];
    }
    return activation;
  }
  return std::nullopt;
}

void select_activation_and_output(const Graph& graph, const ValueIndex& index, QdqSelection& selection) {
  int consumer = single_consumer(index, selection.output);
  if (consumer >= 0) {
    const Node& next = graph.nodes[static_cast<size_t>(consumer)];
    if (auto activation = fusable_activation(graph, next); activation && next.input(0) == selection.output) {
      selection.activation = *activation;
      selection.targets.push_back(consumer);
      selection.output = next.outputs[0];
    }
  }
  select_output_quantization(graph, index, selection);
}

void select_epilogue(const Graph& graph, const ValueIndex& index, QdqSelection& selection, int64_t bias_channels) {
  if (bias_channels > 0 && selection.bias.empty() && !selection.computed_bias) {
    select_bias_add(graph, index, selection, bias_channels);
  }
  const std::vector<int>& readers = index.consumers(selection.output);
  if (readers.size() > 1 || (readers.size() == 1 && index.is_graph_output(selection.output))) {
    note_residual_adds_of_shared_output(graph, index, selection);
    select_output_quantization(graph, index, selection);  // a fan-out to several Qs
    return;
  }
  if (!select_residual_add(graph, index, selection)) return;
  select_activation_and_output(graph, index, selection);
}

void set_activation_attributes(Node& layer, const FusedActivation& activation) {
  if (activation.kind == ActivationKind::kNone) return;
  set_string_attribute(layer, "activation", activation_kind_name(activation.kind));
  if (activation.kind == ActivationKind::kClip) {
    set_float(layer, "activation_min", activation.min);
    set_float(layer, "activation_max", activation.max);
  }
  if (activation.kind == ActivationKind::kLeakyRelu) set_float(layer, "activation_alpha", activation.alpha);
}

std::vector<std::string> weighted_layer_inputs(Graph& graph, const QdqSelection& selection,
                                               const std::vector<std::string>& x,
                                               const std::vector<std::string>& weight,
                                               const std::vector<std::string>& output_params) {
  std::string bias = selection.bias;
  if (!bias.empty() && find_constant(graph, bias)->rank() != 1) {
    const Tensor* constant = find_constant(graph, bias);
    bias = add_initializer(graph, bias + "_vector", constant->reshaped({constant->numel()}));
  }
  if (selection.computed_bias) {
    const std::string& main = graph.nodes[static_cast<size_t>(selection.targets[0])].name;
    bias = add_initializer(graph, main + "_bias", *selection.computed_bias);
  }
  std::vector<std::string> inputs = {
      x[0], x[1], x[2], weight[0], weight[1], weight[2], bias, output_params[0], output_params[1]};
  append_residual_inputs(graph, selection, inputs);
  return inputs;
}

}  // namespace qdqrt::optimizer
