#include "optimizer/passes/quantize_concat_inputs.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "optimizer/graph_utils.h"
#include "optimizer/passes/propagate_qdq.h"
#include "optimizer/passes/qdq_params.h"

namespace qdqrt::optimizer {

namespace {

std::optional<QuantParams> per_tensor_8bit(const Graph& graph, const Node& node) {
  std::optional<QuantParams> params = constant_quant_params(graph, node);
  if (!params || !params->per_tensor()) return std::nullopt;
  if (params->quantized_dtype != DataType::kInt8 && params->quantized_dtype != DataType::kUint8) return std::nullopt;
  return params;
}

// The selector: the Concat's output Q, when the rewrite applies (see the header).
std::optional<int> concat_output_quantize(const Graph& graph, const ValueIndex& index, const Node& concat) {
  if (!concat.domain.empty() || concat.op_type != "Concat" || concat.inputs.empty() || concat.outputs.empty()) {
    return std::nullopt;
  }
  const std::string& y = concat.outputs[0];
  if (y.empty() || !index.has_single_use(y)) return std::nullopt;
  const int q_index = index.consumers(y)[0];
  const Node& q = graph.nodes[static_cast<size_t>(q_index)];
  if (!is_quantize(q) || q.input(0) != y || q.outputs.empty() || q.outputs[0].empty()) return std::nullopt;
  std::optional<QuantParams> params = per_tensor_8bit(graph, q);
  if (!params) return std::nullopt;
  bool float_input = false;
  for (const std::string& input : concat.inputs) {
    if (input.empty()) return std::nullopt;
    if (find_constant(graph, input) != nullptr) return std::nullopt;  // a Q of it would be a runtime node
    const ValueInfo* info = graph.find_value(input);
    if (info == nullptr || info->dtype != DataType::kFloat) return std::nullopt;
    const int producer = index.producer(input);
    if (producer >= 0 && is_dequantize(graph.nodes[static_cast<size_t>(producer)])) {
      std::optional<QuantParams> input_params = per_tensor_8bit(graph, graph.nodes[static_cast<size_t>(producer)]);
      if (!input_params || !same_quant_params(*input_params, *params, 0)) return std::nullopt;
    } else {
      // A Q reader with other parameters: the layer writing `input` would then feed two
      // quantizers, and the fusions write one and requantize the other (rounding twice).
      for (int reader : index.consumers(input)) {
        const Node& other = graph.nodes[static_cast<size_t>(reader)];
        if (!is_quantize(other) || other.input(0) != input) continue;
        std::optional<QuantParams> other_params = per_tensor_8bit(graph, other);
        if (!other_params || !same_quant_params(*other_params, *params, 0)) return std::nullopt;
      }
      float_input = true;
    }
  }
  if (!float_input) return std::nullopt;  // all dequantized alike: the concat fusion's case already
  return q_index;
}

class QuantizeConcatInputsPass : public Pass {
 public:
  std::string name() const override { return "quantize_concat_inputs"; }
  // After propagate_qdq has moved the Q up to the Concat (SqueezeNet: Concat -> MaxPool -> Q).
  std::vector<std::string> must_run_after() const override { return {"propagate_qdq"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    std::vector<std::string> new_quantizers;  // the Qs added, by node name
    std::optional<ValueIndex> current;
    for (size_t c = 0; c < graph.nodes.size(); ++c) {
      if (!current) current.emplace(graph);  // rebuilt after each rewrite
      const ValueIndex& index = *current;
      const std::optional<int> q_index = concat_output_quantize(graph, index, graph.nodes[c]);
      if (!q_index) continue;
      const Node q = graph.nodes[static_cast<size_t>(*q_index)];  // a copy: nodes are appended below
      const QuantParams params = *per_tensor_8bit(graph, q);
      std::vector<std::string> inputs = graph.nodes[c].inputs;
      std::map<std::string, std::string> dequantized;  // input value -> its DQ(Q(value))
      std::vector<Node> added;
      for (std::string& input : inputs) {
        const int producer = index.producer(input);
        if (producer >= 0 && is_dequantize(graph.nodes[static_cast<size_t>(producer)])) continue;
        if (auto it = dequantized.find(input); it != dequantized.end()) {
          input = it->second;
          continue;
        }
        // The value's Q with equal parameters, or a new one.
        std::string quantized;
        for (int reader : index.consumers(input)) {
          const Node& other = graph.nodes[static_cast<size_t>(reader)];
          if (!is_quantize(other) || other.input(0) != input || other.outputs.empty() || other.outputs[0].empty()) {
            continue;
          }
          std::optional<QuantParams> other_params = per_tensor_8bit(graph, other);
          if (other_params && same_quant_params(*other_params, params, 0)) {
            quantized = other.outputs[0];
            break;
          }
        }
        if (quantized.empty()) {
          quantized = unique_value_name(graph, input + "_quantized");
          set_value_info(graph, quantized, params.quantized_dtype, input);
          Node quantize = q;
          quantize.name = unique_node_name(graph, q.name + "/" + input);
          quantize.inputs[0] = input;
          quantize.outputs = {quantized};
          added.push_back(std::move(quantize));
        }
        const std::string restored = unique_value_name(graph, input + "_dequantized");
        set_value_info(graph, restored, DataType::kFloat, input);
        std::vector<std::string> dq_inputs = {quantized, q.input(1)};
        if (q.has_input(2)) dq_inputs.push_back(q.input(2));
        QDQRT_ASSIGN_OR_RETURN(Node dequantize, make_onnx_node(q, "DequantizeLinear",
                                                               unique_node_name(graph, q.name + "/" + input + "/dq"),
                                                               std::move(dq_inputs), restored));
        added.push_back(std::move(dequantize));
        dequantized[input] = restored;
        input = restored;
      }
      graph.nodes[c].inputs = std::move(inputs);
      for (Node& node : added) {
        if (is_quantize(node)) new_quantizers.push_back(node.name);
        graph.nodes.push_back(std::move(node));
      }
      changed = true;
      current.reset();
    }
    if (!changed) return Status::ok();
    hoist(graph, new_quantizers);
    return topological_sort(graph);
  }

 private:
  // A new Q reads a value that only moves data written by a layer (a lowered 3-D conv's Reshape
  // back to 5-D): it moves above the Reshape/Transpose/... as propagate_qdq moves Qs, so the layer
  // writes the codes and the data moves as 8-bit. Only where the op's own input has no other
  // reader (the layer would otherwise feed two quantizers).
  static void hoist(Graph& graph, const std::vector<std::string>& quantizers) {
    for (const std::string& name : quantizers) {
      for (size_t moves = 0; moves < graph.nodes.size(); ++moves) {
        const ValueIndex index(graph);
        size_t q_index = graph.nodes.size();
        for (size_t n = 0; n < graph.nodes.size(); ++n) {
          if (graph.nodes[n].name == name) q_index = n;
        }
        if (q_index == graph.nodes.size()) break;
        const int producer = index.producer(graph.nodes[q_index].input(0));
        if (producer < 0) break;
        const Node& op = graph.nodes[static_cast<size_t>(producer)];
        if (op.inputs.empty() || !index.has_single_use(op.input(0)) || index.is_graph_output(op.input(0))) break;
        if (!move_quantize_above_producer(graph, q_index)) break;
      }
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_quantize_concat_inputs_pass() { return std::make_unique<QuantizeConcatInputsPass>(); }

}  // namespace qdqrt::optimizer
