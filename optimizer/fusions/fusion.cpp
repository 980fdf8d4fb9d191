#include "optimizer/fusions/fusion.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "core/attribute_values.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/epilogue.h"
#include "optimizer/fusions/quantized_io.h"

namespace qdqrt::optimizer {

namespace {

const Node* find_node(const Graph& graph, const std::string& name) {
  for (const Node& node : graph.nodes) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

}  // namespace

FusionPass::FusionPass(std::string name) : name_(std::move(name)), fusion_(find_fusion(name_)) {}

std::vector<std::string> FusionPass::must_run_after() const {
  return fusion_ != nullptr ? fusion_->must_run_after : std::vector<std::string>{};
}

Status FusionPass::run(Graph& graph, PassContext& context) {
  if (fusion_ == nullptr) return internal_error("no fusion named '{}' in the registry", name_);
  std::unordered_set<std::string> rejected;
  for (bool fused = true; fused;) {
    fused = false;
    ValueIndex index(graph);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (rejected.count(graph.nodes[n].name)) continue;
      SelectResult result = fusion_->selector(graph, index, static_cast<int>(n), context);
      if (!result.selection) {
        if (!result.reason.empty()) context.note_float(graph.nodes[n], result.reason);
        rejected.insert(graph.nodes[n].name);
        continue;
      }
      const QdqSelection& selection = *result.selection;
      for (const FloatReason& note : selection.notes) {
        if (const Node* noted = find_node(graph, note.node)) context.note_float(*noted, note.reason);
      }
      // A float layer keeps its main node's name and reason; the nodes it absorbs go.
      for (size_t t = fusion_->float_layer ? 1 : 0; t < selection.targets.size(); ++t) {
        context.clear_float_reason(graph.nodes[static_cast<size_t>(selection.targets[t])].name);
      }
      QDQRT_RETURN_IF_ERROR(fusion_->action(graph, selection, context));
      fused = true;
      break;
    }
  }
  remove_unused(graph);
  return Status::ok();
}

Node make_layer_node(const Graph& graph, const QdqSelection& selection, bool keep_attributes) {
  const Node& main = graph.nodes[static_cast<size_t>(selection.targets[0])];
  Node layer;
  layer.name = main.name;
  layer.op_type = selection.layer_op;
  layer.domain = layers::kDomain;
  layer.opset = 1;
  if (keep_attributes) layer.attributes = main.attributes;
  Attribute fused;
  fused.kind = Attribute::Kind::kStrings;
  for (int target : selection.targets) fused.strings.push_back(graph.nodes[static_cast<size_t>(target)].name);
  if (selection.output_q) fused.strings.push_back(graph.nodes[static_cast<size_t>(selection.output_q->q_node)].name);
  for (const QuantizedOutput& extra : selection.extra_output_qs) {
    if (shares_layer_output(graph, selection, extra))
      fused.strings.push_back(graph.nodes[static_cast<size_t>(extra.q_node)].name);
  }
  layer.attributes["fused_nodes"] = fused;
  set_activation_attributes(layer, selection.activation);
  return layer;
}

Status replace_with_layer(Graph& graph, const QdqSelection& selection, Node layer,
                          const std::vector<std::string>& output_params, PassContext& context) {
  while (!layer.inputs.empty() && layer.inputs.back().empty()) layer.inputs.pop_back();
  layer.outputs = {selection.output};
  QDQRT_ASSIGN_OR_RETURN(layer.typed_attributes, parse_fused_layer_attributes(layer));
  graph.opsets[layers::kDomain] = 1;

  // The layer takes the place of its last node; the others go.
  std::vector<int> removed = selection.targets;
  if (selection.output_q) removed.push_back(selection.output_q->q_node);
  std::sort(removed.begin(), removed.end());
  const int layer_slot = removed.back();
  removed.pop_back();
  QDQRT_ASSIGN_OR_RETURN(std::vector<int> shared, rewire_extra_quantizers(graph, selection, output_params, context));
  removed.insert(removed.end(), shared.begin(), shared.end());
  std::sort(removed.begin(), removed.end());
  graph.nodes[static_cast<size_t>(layer_slot)] = std::move(layer);
  for (auto it = removed.rbegin(); it != removed.rend(); ++it) graph.nodes.erase(graph.nodes.begin() + *it);
  // A QRequantize sits where its Q was, possibly before the layer it now reads.
  if (!selection.extra_output_qs.empty()) QDQRT_RETURN_IF_ERROR(topological_sort(graph));
  return Status::ok();
}

Status replace_first_with_layer(Graph& graph, const QdqSelection& selection, Node layer) {
  if (!selection.lookup_function.empty()) set_string_attribute(layer, "function", selection.lookup_function);
  while (!layer.inputs.empty() && layer.inputs.back().empty()) layer.inputs.pop_back();
  layer.outputs = {selection.output};
  QDQRT_ASSIGN_OR_RETURN(layer.typed_attributes, parse_fused_layer_attributes(layer));
  graph.opsets[layers::kDomain] = 1;
  graph.nodes[static_cast<size_t>(selection.targets[0])] = std::move(layer);
  std::vector<int> removed(selection.targets.begin() + 1, selection.targets.end());
  std::sort(removed.rbegin(), removed.rend());
  for (int node : removed) graph.nodes.erase(graph.nodes.begin() + node);
  return Status::ok();
}

void set_string_attribute(Node& node, const std::string& key, const std::string& value) {
  node.attributes[key] = string_attribute(value);
}

}  // namespace qdqrt::optimizer
