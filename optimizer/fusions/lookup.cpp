// Lookup fusion: DQ -> Sigmoid/Tanh/HardSwish/HardSigmoid/Gelu -> Q, DQ(x) -> Sigmoid -> Mul(x)
// -> Q (SiLU), the erf-form GELU of opset < 20 exports, and DQ -> Div/Mul by a constant -> Erf -> Q
// (ONNX Runtime's QDQ GELU quantizes the Erf) become a table-driven QLookup.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/attribute_values.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// The other input of a binary node that reads `value` (or "" when it does not read it).
std::string other_input(const Node& node, const std::string& value) {
  if (node.inputs.size() != 2) return "";
  if (node.input(0) == value) return node.input(1);
  if (node.input(1) == value) return node.input(0);
  return "";
}

bool is_scalar_constant(const Graph& graph, const std::string& value, double expected) {
  const Tensor* constant = find_constant(graph, value);
  return constant != nullptr && constant->dtype() == DataType::kFloat && constant->numel() == 1 &&
         std::abs(constant->data<float>()[0] - expected) <= 1e-5 * std::abs(expected);
}

}  // namespace

std::vector<int> match_erf_gelu(const Graph& graph, const ValueIndex& index, int first) {
  const Node& scale = graph.nodes[static_cast<size_t>(first)];
  const std::string& x = scale.input(0);
  const bool div = is_onnx(scale, "Div") && is_scalar_constant(graph, scale.input(1), std::sqrt(2.0));
  const bool mul = is_onnx(scale, "Mul") && (is_scalar_constant(graph, other_input(scale, x), std::sqrt(0.5)));
  if (!div && !mul) return {};
  std::vector<int> nodes = {first};
  auto next = [&](const char* op_type) -> int {
    const Node& last = graph.nodes[static_cast<size_t>(nodes.back())];
    int consumer = single_consumer(index, last.outputs[0]);
    if (consumer < 0 || !is_onnx(graph.nodes[static_cast<size_t>(consumer)], op_type)) return -1;
    nodes.push_back(consumer);
    return consumer;
  };
  if (next("Erf") < 0) return {};
  const std::string& erf = graph.nodes[static_cast<size_t>(nodes.back())].outputs[0];
  int add = next("Add");
  if (add < 0 || !is_scalar_constant(graph, other_input(graph.nodes[static_cast<size_t>(add)], erf), 1.0)) return {};
  const std::string& sum = graph.nodes[static_cast<size_t>(add)].outputs[0];
  int mul1 = next("Mul");
  if (mul1 < 0) return {};
  const std::string first_factor = other_input(graph.nodes[static_cast<size_t>(mul1)], sum);
  const std::string& product = graph.nodes[static_cast<size_t>(mul1)].outputs[0];
  int mul2 = next("Mul");
  if (mul2 < 0) return {};
  const std::string second_factor = other_input(graph.nodes[static_cast<size_t>(mul2)], product);
  const bool x_then_half = first_factor == x && is_scalar_constant(graph, second_factor, 0.5);
  const bool half_then_x = is_scalar_constant(graph, first_factor, 0.5) && second_factor == x;
  if (!x_then_half && !half_then_x) return {};
  return nodes;
}

// Div(x, c) or Mul(x, c) / Mul(c, x) by a float scalar constant c read only by an Erf: {scale,
// erf}, c and whether it divides; {} otherwise.
struct ScaledErf {
  std::vector<int> nodes;
  std::string x;
  float operand = 1.0f;
  bool divides = true;
};

ScaledErf match_scaled_erf(const Graph& graph, const ValueIndex& index, int first) {
  const Node& scale = graph.nodes[static_cast<size_t>(first)];
  if (scale.inputs.size() != 2 || !scale.has_input(0) || !scale.has_input(1)) return {};
  const bool divides = is_onnx(scale, "Div");
  if (!divides && !is_onnx(scale, "Mul")) return {};
  // A Div's constant is its divisor; a Mul's may be either operand.
  const int constant_side = divides || find_constant(graph, scale.input(0)) == nullptr ? 1 : 0;
  const Tensor* constant = find_constant(graph, scale.input(constant_side));
  if (constant == nullptr || constant->dtype() != DataType::kFloat || constant->numel() != 1 ||
      find_constant(graph, scale.input(1 - constant_side)) != nullptr) {
    return {};
  }
  const float operand = constant->data<float>()[0];
  if (!std::isfinite(operand) || operand == 0.0f) return {};
  const int erf = single_consumer(index, scale.outputs[0]);
  if (erf < 0 || !is_onnx(graph.nodes[static_cast<size_t>(erf)], "Erf")) return {};
  return {.nodes = {first, erf}, .x = scale.input(1 - constant_side), .operand = operand, .divides = divides};
}

SelectResult select_qdq_lookup(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  static const char* const kFunctions[] = {"Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "Gelu"};
  bool known = false;
  for (const char* function : kFunctions) known = known || is_onnx(node, function);
  std::vector<int> erf_gelu;
  ScaledErf scaled_erf;
  if (!known && (is_onnx(node, "Div") || is_onnx(node, "Mul"))) {
    erf_gelu = match_erf_gelu(graph, index, node_index);
    if (erf_gelu.empty()) scaled_erf = match_scaled_erf(graph, index, node_index);
  }
  if (!known && erf_gelu.empty() && scaled_erf.nodes.empty()) return {};
  if (!looks_quantized(index, graph, node)) return {};
  // The scaled Erf's input may be the Mul's second operand.
  const std::string& input = scaled_erf.nodes.empty() ? node.input(0) : scaled_erf.x;
  SelectResult result;
  auto x = activation_input(graph, index, input, "input", result.reason);
  if (!x) return result;
  QdqSelection selection;
  selection.layer_op = layers::kQLookup;
  selection.inputs = {*x};
  selection.targets = {node_index};
  selection.output = node.outputs[0];
  selection.lookup_function = node.op_type;
  if (!erf_gelu.empty()) {
    selection.targets = erf_gelu;
    selection.output = graph.nodes[static_cast<size_t>(erf_gelu.back())].outputs[0];
    selection.lookup_function = lookup_function_name(LookupFunction::kGelu);
  }
  if (!scaled_erf.nodes.empty()) {
    selection.targets = scaled_erf.nodes;
    selection.output = graph.nodes[static_cast<size_t>(scaled_erf.nodes.back())].outputs[0];
    selection.lookup_function = lookup_function_name(LookupFunction::kErf);
    selection.lookup_operand = scaled_erf.operand;
    selection.lookup_operand_divides = scaled_erf.divides;
  }
  // SiLU: Sigmoid(x) * x with the same dequantized x.
  if (is_onnx(node, "Sigmoid")) {
    int consumer = single_consumer(index, node.outputs[0]);
    if (consumer >= 0 && is_onnx(graph.nodes[static_cast<size_t>(consumer)], "Mul")) {
      const Node& mul = graph.nodes[static_cast<size_t>(consumer)];
      const std::string& other = mul.input(0) == node.outputs[0] ? mul.input(1) : mul.input(0);
      if (other == node.input(0)) {
        selection.targets.push_back(consumer);
        selection.output = mul.outputs[0];
        selection.lookup_function = lookup_function_name(LookupFunction::kSiLU);
      }
    }
  }
  auto q = required_output_quantization(graph, index, selection.output, result.reason);
  if (!q) return result;
  end_at_quantize(graph, *q, selection);
  result.selection = std::move(selection);
  return result;
}

Status apply_qdq_lookup(Graph& graph, const QdqSelection& selection, PassContext& context) {
  const Node& main = graph.nodes[static_cast<size_t>(selection.targets[0])];
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/true);  // HardSigmoid alpha/beta, Gelu approximate
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  layer.inputs = input_triple(graph, selection.inputs[0]);
  layer.inputs.insert(layer.inputs.end(), output_params.begin(), output_params.end());
  if (selection.lookup_function != main.op_type) layer.attributes.clear();  // SiLU, erf-form Gelu
  set_string_attribute(layer, "function", selection.lookup_function);
  if (selection.lookup_function == lookup_function_name(LookupFunction::kErf)) {
    set_string_attribute(layer, "operand_op", selection.lookup_operand_divides ? "Div" : "Mul");
    layer.attributes["operand"] = float_attribute(selection.lookup_operand);
  }
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
