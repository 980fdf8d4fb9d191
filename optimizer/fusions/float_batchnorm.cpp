// Float BatchNorm fusion (DenseNet's pre-activation units): an inference BatchNormalization whose
// per-channel parameters are constants, with the channel Concat before it and/or the Relu after
// it, becomes one FusedBatchNorm (core/ops/fused_batchnorm.h):
//   [Concat(x0, ..., xk-1, axis 1) ->] BatchNormalization [-> Relu]
// The engine then reads each xi where it lies and writes the normalized, rectified tensor once:
// one pass where the three nodes made three (DenseNet-121: 61 such units, about 10% of its time).
// Each value fused away has no other reader and is not a graph output; a BatchNormalization with
// neither neighbour is left as it is (the engine runs it as one pass already). BatchNorms after a
// Conv are folded into its weights before (fold_batchnorm).
#include <algorithm>

#include "core/attribute_values.h"
#include "core/ops/fused_batchnorm.h"
#include "core/ops/fused_layers.h"
#include "core/ops/normalization.h"
#include "core/ops/tensor.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// The only reader of `value` (not a graph output), or -1.
int sole_reader(const ValueIndex& index, const std::string& value) {
  return index.has_single_use(value) ? index.consumers(value)[0] : -1;
}

// A float value of known rank >= 2 whose dim 1 is static.
bool float_with_channels(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.find_value(value);
  return info != nullptr && info->dtype == DataType::kFloat && info->shape && info->shape->size() >= 2 &&
         (*info->shape)[1].is_static();
}

// The Concat writing `x` along axis 1 of runtime float inputs, read only by the BatchNorm; or -1.
int channel_concat(const Graph& graph, const ValueIndex& index, const std::string& x) {
  const int producer = index.producer(x);
  if (producer < 0 || !index.has_single_use(x)) return -1;
  const Node& concat = graph.nodes[static_cast<size_t>(producer)];
  if (!is_onnx(concat, "Concat") || concat.outputs.size() != 1 || concat.inputs.empty()) return -1;
  const ValueInfo* y = graph.find_value(x);
  if (y == nullptr || !y->shape) return -1;
  const int64_t rank = static_cast<int64_t>(y->shape->size());
  int64_t axis = concat.attrs<ConcatAttributes>().axis;
  if (axis < 0) axis += rank;
  if (axis != 1) return -1;
  for (const std::string& input : concat.inputs) {
    if (input.empty() || find_constant(graph, input) != nullptr || !float_with_channels(graph, input)) return -1;
    if (graph.find_value(input)->shape->size() != static_cast<size_t>(rank)) return -1;
  }
  return producer;
}

}  // namespace

SelectResult select_float_batchnorm(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& batchnorm = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(batchnorm, "BatchNormalization") || batchnorm.inputs.size() != 5 || batchnorm.outputs.empty()) return {};
  for (size_t i = 1; i < batchnorm.outputs.size(); ++i) {
    if (!batchnorm.outputs[i].empty()) return {};
  }
  if (const Attribute* training = batchnorm.find_attribute("training_mode"); training && training->i != 0) return {};
  const std::string& x = batchnorm.input(0);
  if (x.empty() || !float_with_channels(graph, x)) return {};
  const int64_t channels = (*graph.find_value(x)->shape)[1].value;
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* parameter = find_constant(graph, batchnorm.input(i));
    if (parameter == nullptr || parameter->dtype() != DataType::kFloat || parameter->rank() != 1 ||
        parameter->dim(0) != channels) {
      return {};
    }
  }
  QdqSelection selection;
  selection.layer_op = layers::kFusedBatchNorm;
  selection.targets = {node_index};
  selection.output = batchnorm.outputs[0];
  if (const int concat = channel_concat(graph, index, x); concat >= 0) selection.targets.push_back(concat);
  if (const int reader = sole_reader(index, selection.output); reader >= 0) {
    const Node& relu = graph.nodes[static_cast<size_t>(reader)];
    if (is_onnx(relu, "Relu") && relu.outputs.size() == 1 && float_with_channels(graph, relu.outputs[0])) {
      selection.targets.push_back(reader);
      selection.output = relu.outputs[0];
      selection.activation.kind = ActivationKind::kRelu;
    }
  }
  if (selection.targets.size() == 1) return {};  // alone: nothing to gain
  return {.selection = std::move(selection), .reason = ""};
}

Status apply_float_batchnorm(Graph& graph, const QdqSelection& selection, PassContext&) {
  const Node& batchnorm = graph.nodes[static_cast<size_t>(selection.targets[0])];
  const Node* concat = nullptr;
  const Node* relu = nullptr;
  for (size_t i = 1; i < selection.targets.size(); ++i) {
    const Node& node = graph.nodes[static_cast<size_t>(selection.targets[i])];
    (is_onnx(node, "Concat") ? concat : relu) = &node;
  }
  Node layer;
  layer.name = batchnorm.name;
  layer.op_type = layers::kFusedBatchNorm;
  layer.domain = layers::kDomain;
  layer.opset = 1;
  std::vector<std::string> fused_nodes;
  if (concat != nullptr) fused_nodes.push_back(concat->name);
  fused_nodes.push_back(batchnorm.name);
  if (relu != nullptr) fused_nodes.push_back(relu->name);
  layer.attributes["fused_nodes"] = strings_attribute(fused_nodes);
  layer.attributes["epsilon"] = float_attribute(batchnorm.attrs<BatchNormalizationAttributes>().epsilon);
  if (selection.activation.kind == ActivationKind::kRelu) layer.attributes["activation"] = string_attribute("Relu");
  layer.inputs.assign(batchnorm.inputs.begin() + 1, batchnorm.inputs.end());
  if (concat != nullptr) {
    layer.inputs.insert(layer.inputs.end(), concat->inputs.begin(), concat->inputs.end());
  } else {
    layer.inputs.push_back(batchnorm.input(0));
  }
  layer.outputs = {selection.output};
  QDQRT_ASSIGN_OR_RETURN(layer.typed_attributes, parse_fused_layer_attributes(layer));
  graph.opsets[layers::kDomain] = 1;
  // The layer takes the place of the last fused node (its output's writer); the others go.
  std::vector<int> removed = selection.targets;
  std::sort(removed.begin(), removed.end());
  graph.nodes[static_cast<size_t>(removed.back())] = std::move(layer);
  removed.pop_back();
  for (auto it = removed.rbegin(); it != removed.rend(); ++it) graph.nodes.erase(graph.nodes.begin() + *it);
  return Status::ok();
}

}  // namespace qdqrt::optimizer
