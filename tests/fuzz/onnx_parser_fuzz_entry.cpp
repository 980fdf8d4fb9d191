#include "tests/fuzz/onnx_parser_fuzz_entry.h"

#include <onnx/defs/schema.h>

#include <set>
#include <string>
#include <unordered_set>

#include "parser/onnx_loader.h"
#include "parser/op_registry.h"

namespace qdqrt {

namespace {

// Every ai.onnx op libonnx knows (so the checker and shape inference see every kind of node),
// with qdqrt's own attribute parser wherever an op family registered one.
const OpRegistry& fuzz_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    const OpRegistry& qdqrt_ops = OpRegistry::instance();
    std::set<std::string> seen;
    for (const OpSchema* schema : qdqrt_ops.all()) {
      r.add(*schema);
      if (schema->domain.empty()) seen.insert(schema->op_type);
    }
    for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas()) {
      if (schema.domain().empty() && seen.insert(schema.Name()).second) {
        r.add(OpSchema{"", schema.Name(), kMinOnnxOpset, kMaxOnnxOpset, nullptr});
      }
    }
    return r;
  }();
  return registry;
}

// What every loaded Graph promises its users.
bool graph_invariants_hold(const Graph& graph) {
  std::unordered_set<std::string> available(graph.inputs.begin(), graph.inputs.end());
  for (const auto& [name, tensor] : graph.initializers) {
    available.insert(name);
    if (!tensor.defined() && tensor.numel() != 0) return false;
  }
  std::unordered_set<std::string> names;
  for (const Node& node : graph.nodes) {
    if (!names.insert(node.name).second) return false;  // node names unique
    for (const std::string& input : node.inputs) {
      if (!input.empty() && !available.count(input)) return false;  // topological order
    }
    for (const std::string& output : node.outputs) {
      if (!output.empty() && !available.insert(output).second) return false;  // SSA
    }
  }
  for (const std::string& output : graph.outputs) {
    if (!available.count(output)) return false;
  }
  for (const auto& [name, info] : graph.values) {
    if (!info.shape) continue;
    for (const Dim& dim : *info.shape) {
      if (dim.value < -1) return false;
    }
    dims_to_string(*info.shape);
  }
  return true;
}

}  // namespace

void fuzz_onnx_parser_one_input(const uint8_t* data, size_t size) {
  LoadOptions options;
  options.registry = &fuzz_registry();
  auto graph = load_onnx_bytes(data, size, options);
  if (graph.ok()) {
    if (!graph_invariants_hold(*graph)) __builtin_trap();
  } else if (graph.status().message().empty() || graph.status().code() == StatusCode::kInternal) {
    // Every rejection must say why, and none may be an internal error (an escaped exception).
    __builtin_trap();
  }
}

}  // namespace qdqrt
