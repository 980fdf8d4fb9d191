#include "tools/layer_precisions.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "tools/cli_flags.h"

namespace qdqrt::tools {

Result<std::vector<LayerPrecision>> parse_layer_precisions(const std::string& text) {
  std::vector<LayerPrecision> specs;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(begin, end - begin);
    begin = end + 1;
    if (item.empty()) continue;
    size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) {
      return invalid_argument("'{}' is not NAME:PRECISION (e.g. conv1:fp32)", item);
    }
    LayerPrecision spec{item.substr(0, colon), item.substr(colon + 1)};
    static const std::set<std::string> kKnown = {"fp32", "int8", "fp16", "bf16", "fp8", "int4"};
    if (!kKnown.count(spec.precision)) {
      return invalid_argument("'{}': precision '{}' is not one of fp32, int8 (or fp16, bf16, fp8, int4)", item,
                              spec.precision);
    }
    specs.push_back(spec);
  }
  if (specs.empty()) return invalid_argument("no NAME:PRECISION given");
  return specs;
}

Result<int> keep_nodes_in_float(Graph& graph, const std::vector<std::string>& nodes) {
  std::vector<std::string> node_names;
  for (const Node& node : graph.nodes) node_names.push_back(node.name);
  auto producer = [&](const std::string& value) -> Node* {
    for (Node& node : graph.nodes) {
      if (std::find(node.outputs.begin(), node.outputs.end(), value) != node.outputs.end()) return &node;
    }
    return nullptr;
  };
  int rewired = 0;
  for (const std::string& name : nodes) {
    auto target = std::find_if(graph.nodes.begin(), graph.nodes.end(), [&](const Node& node) { return node.name == name; });
    if (target == graph.nodes.end()) {
      std::string closest = suggest_flag(name, node_names);
      return invalid_argument("no node named '{}' in the model{}", name,
                              closest.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", closest));
    }
    for (std::string& input : target->inputs) {
      Node* dequantize = input.empty() ? nullptr : producer(input);
      if (dequantize == nullptr || dequantize->op_type != "DequantizeLinear") continue;
      Node* quantize = producer(dequantize->input(0));
      if (quantize == nullptr || quantize->op_type != "QuantizeLinear") continue;
      if (graph.find_initializer(quantize->input(0)) != nullptr) continue;  // a weight: folds to float
      input = quantize->input(0);
      ++rewired;
    }
  }
  // Q/DQ nodes left without readers (and not graph outputs) go, DQ before Q.
  bool removed = true;
  while (removed) {
    removed = false;
    std::set<std::string> read(graph.outputs.begin(), graph.outputs.end());
    for (const Node& node : graph.nodes) read.insert(node.inputs.begin(), node.inputs.end());
    auto unused = std::find_if(graph.nodes.begin(), graph.nodes.end(), [&](const Node& node) {
      return (node.op_type == "DequantizeLinear" || node.op_type == "QuantizeLinear") && !read.count(node.outputs[0]);
    });
    if (unused != graph.nodes.end()) {
      graph.nodes.erase(unused);
      removed = true;
    }
  }
  return rewired;
}

}  // namespace qdqrt::tools
