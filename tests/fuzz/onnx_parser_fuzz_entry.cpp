#include "tests/fuzz/onnx_parser_fuzz_entry.h"

#include <set>
#include <string>
#include <unordered_set>

#include "parser/onnx_loader.h"
#include "core/op_registry.h"

namespace qdqrt {

namespace {

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

const OpRegistry& fuzz_op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    std::set<std::string> seen;
    for (const OpSchema* schema : OpRegistry::instance().all()) {
      r.add(*schema);
      if (schema->domain.empty()) seen.insert(schema->op_type);
    }
    for (const char* op :
         {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger",
          "DynamicQuantizeLinear", "Conv", "ConvTranspose", "Gemm", "MatMul", "MaxPool", "AveragePool",
          "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization", "LayerNormalization", "InstanceNormalization",
          "Resize", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Abs", "Neg", "Erf", "Relu", "LeakyRelu",
          "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Clip", "Softmax", "LogSoftmax", "Where", "Equal",
          "Less", "Greater", "Not", "And", "Min", "Max", "Sum", "Floor", "Ceil", "Round", "Reciprocal", "Gelu", "Mish",
          "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "Reshape", "Transpose", "Concat", "Slice", "Gather",
          "Shape", "Cast", "Flatten", "Squeeze", "Unsqueeze", "Split", "Pad", "Identity", "Constant",
          "ConstantOfShape", "Expand", "Tile", "Range", "DepthToSpace", "SpaceToDepth", "Dropout", "ArgMax"}) {
      if (seen.insert(op).second) r.add(OpSchema{"", op, kMinOnnxOpset, kMaxOnnxOpset, nullptr});
    }
    return r;
  }();
  return registry;
}

void fuzz_onnx_parser_one_input(const uint8_t* data, size_t size) {
  LoadOptions options;
  options.registry = &fuzz_op_registry();
  auto graph = load_onnx_bytes(data, size, options);
  if (graph.ok()) {
    if (!graph_invariants_hold(*graph)) __builtin_trap();
  } else if (graph.status().message().empty() || graph.status().code() == StatusCode::kInternal) {
    // Every rejection must say why, and none may be an internal error (an escaped exception).
    __builtin_trap();
  }
}

}  // namespace qdqrt
