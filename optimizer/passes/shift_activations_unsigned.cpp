#include "optimizer/passes/shift_activations_unsigned.h"

#include <optional>
#include <unordered_map>

#include "core/ops/quantize.h"
#include "optimizer/graph_utils.h"
#include "optimizer/passes/qdq_params.h"

namespace qdqrt::optimizer {

namespace {

// A per-tensor int8 Q/DQ with a constant zero-point input (the zero-point's dtype is the type).
std::optional<int64_t> int8_zero_point(const Graph& graph, const Node& node) {
  const std::optional<QuantParams> params = constant_quant_params(graph, node);
  if (!params || !params->per_tensor() || !params->zero_point.defined() ||
      params->quantized_dtype != DataType::kInt8) {
    return std::nullopt;
  }
  if (is_quantize(node) && node.attrs<QuantizeLinearAttributes>().output_dtype != DataType::kUndefined) {
    return std::nullopt;  // opset 21's output_dtype would have to change too
  }
  return params->zero_point_at(0);
}

// A weight operand: a constant, or a DequantizeLinear of a constant.
bool is_constant_operand(const Graph& graph, const ValueIndex& index, const std::string& value) {
  if (find_constant(graph, value) != nullptr) return true;
  const int producer = index.producer(value);
  if (producer < 0) return false;
  const Node& node = graph.nodes[static_cast<size_t>(producer)];
  return is_dequantize(node) && find_constant(graph, node.input(0)) != nullptr;
}

// Nodes of the default domain only (a custom op may reuse an ONNX name).
bool is_op(const Node& node, const char* op_type) { return node.domain.empty() && node.op_type == op_type; }

// The tensor a DequantizeLinear output reads, or "".
std::string dequantized_tensor(const Graph& graph, const ValueIndex& index, const std::string& value) {
  const int producer = index.producer(value);
  if (producer < 0 || !is_dequantize(graph.nodes[static_cast<size_t>(producer)])) return "";
  return graph.nodes[static_cast<size_t>(producer)].input(0);
}

bool reads_dequantized(const Graph& graph, const ValueIndex& index, const Node& node) {
  for (const std::string& input : node.inputs) {
    if (!input.empty() && !dequantized_tensor(graph, index, input).empty()) return true;
  }
  return false;
}

// Relu, or Clip/Max/Min with constant bounds: the clamp fusion folds DQ -> clamp -> Q into the
// layer before it only when both tensors have equal parameters, so they change together.
bool is_clamp(const Graph& graph, const Node& node) {
  if (is_op(node, "Relu")) return true;
  if (is_op(node, "Clip")) {
    for (size_t i = 1; i < node.inputs.size(); ++i) {
      if (node.has_input(i) && find_constant(graph, node.input(i)) == nullptr) return false;
    }
    return true;
  }
  if ((is_op(node, "Max") || is_op(node, "Min")) && node.inputs.size() == 2) {
    return (find_constant(graph, node.input(0)) != nullptr) != (find_constant(graph, node.input(1)) != nullptr);
  }
  return false;
}

// Mul(DQ(t), sigmoid of DQ(t)), the sigmoid quantized in between or not: one function of t's
// codes, a table (QuantizedSiLU or QLookup) whose output type is free.
bool is_quantized_silu(const Graph& graph, const ValueIndex& index, const Node& node) {
  if (!is_op(node, "Mul") || node.inputs.size() != 2) return false;
  for (size_t i = 0; i < 2; ++i) {
    const std::string x = dequantized_tensor(graph, index, node.input(i));
    if (x.empty()) continue;
    int sigmoid = index.producer(node.input(1 - i));
    if (sigmoid >= 0 && is_dequantize(graph.nodes[static_cast<size_t>(sigmoid)])) {
      const int q = index.producer(graph.nodes[static_cast<size_t>(sigmoid)].input(0));
      sigmoid = q >= 0 && is_quantize(graph.nodes[static_cast<size_t>(q)])
                    ? index.producer(graph.nodes[static_cast<size_t>(q)].input(0))
                    : -1;
    }
    if (sigmoid >= 0 && is_op(graph.nodes[static_cast<size_t>(sigmoid)], "Sigmoid") &&
        dequantized_tensor(graph, index, graph.nodes[static_cast<size_t>(sigmoid)].input(0)) == x) {
      return true;
    }
  }
  return false;
}

// Ops whose int8 layer takes one type for its 8-bit inputs and output (QAdd/QMul kernels, the
// folded clamp): their operands and quantized result change together or not at all.
bool joins_types(const Graph& graph, const ValueIndex& index, const Node& node) {
  if ((is_op(node, "Add") || is_op(node, "Mul")) && node.inputs.size() == 2) {
    return !is_quantized_silu(graph, index, node);
  }
  return is_clamp(graph, node);
}

// An op propagate_qdq left on an int8 tensor (input 0) whose int8 layer moves bytes of either
// 8-bit type unchanged (the max pool, int8_reshape, int8_transpose): the max and the order of codes
// shifted by 128 are the shifted ones, so its output is a candidate tensor that changes with its
// input. (Pad writes the zero-point as its pad value; Slice/Gather keep their type.)
bool moves_codes(const ValueIndex& index, const Node& node, const std::string& tensor) {
  static const char* const kMovers[] = {"MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze"};
  if (node.inputs.empty() || node.input(0) != tensor || node.outputs.empty() || node.outputs[0].empty()) return false;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == tensor) return false;
  }
  for (size_t i = 1; i < node.outputs.size(); ++i) {  // MaxPool's Indices
    if (!node.outputs[i].empty() && (!index.consumers(node.outputs[i]).empty() || index.is_graph_output(node.outputs[i]))) {
      return false;
    }
  }
  for (const char* op_type : kMovers) {
    if (is_op(node, op_type)) return true;
  }
  return false;
}

// Add(the float output of a Conv/Gemm/MatMul reading DQs, read by this Add only, DQ(t) of the
// same shape): the residual fusion takes it into that layer's epilogue, which reads a residual of
// either 8-bit type and writes any type, so t's type is free there (ResNet's block inputs: the
// Add's other side is not quantized, which would otherwise keep t int8).
bool is_layer_residual_add(const Graph& graph, const ValueIndex& index, const Node& add, const std::string& residual) {
  if (!is_op(add, "Add") || add.inputs.size() != 2) return false;
  const std::string& other = add.input(0) == residual ? add.input(1) : add.input(0);
  if (other == residual || other.empty() || index.is_graph_output(other) || !index.has_single_use(other)) return false;
  const int producer = index.producer(other);
  if (producer < 0) return false;
  const Node& layer = graph.nodes[static_cast<size_t>(producer)];
  if (!(is_op(layer, "Conv") || is_op(layer, "Gemm") || is_op(layer, "MatMul")) ||
      dequantized_tensor(graph, index, layer.input(0)).empty() || !is_constant_operand(graph, index, layer.input(1))) {
    return false;
  }
  return same_dims(graph.find_value(other), graph.find_value(add.outputs[0]));
}

// Ops that read DQs and whose int8 layer writes any 8-bit type: the GEMM layers' requantizing
// epilogue, the tables of the lookup fusion.
bool writes_any_type(const Graph& graph, const ValueIndex& index, const Node& node) {
  static const char* const kFree[] = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Sigmoid",
                                      "Tanh", "HardSwish", "HardSigmoid", "Gelu"};
  for (const char* op_type : kFree) {
    if (is_op(node, op_type)) return true;
  }
  return is_quantized_silu(graph, index, node);
}

class Components {
 public:
  int add() {
    parent_.push_back(static_cast<int>(parent_.size()));
    return parent_.back();
  }
  int find(int i) {
    while (parent_[static_cast<size_t>(i)] != i) i = parent_[static_cast<size_t>(i)];
    return i;
  }
  void join(int a, int b) { parent_[static_cast<size_t>(find(a))] = find(b); }

 private:
  std::vector<int> parent_;
};

class ShiftActivationsUnsignedPass : public Pass {
 public:
  std::string name() const override { return "shift_activations_unsigned"; }
  // On the final Q/DQ placement: after the moves and the removal of redundant pairs.
  std::vector<std::string> must_run_after() const override { return {"propagate_qdq", "remove_redundant_qdq"}; }

  Status run(Graph& graph, PassContext&) override {
    const ValueIndex index(graph);
    // Candidate tensors: outputs of activation Qs to int8, and of the byte-moving ops that read
    // them (one id each; such an op's output joins its input's component).
    std::unordered_map<std::string, int> tensor_id;  // tensor -> id
    std::vector<int> writer_node;                    // id -> the Q or byte-moving node
    Components components;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const Node& q = graph.nodes[n];
      if (!is_quantize(q) || q.outputs.empty() || q.outputs[0].empty()) continue;
      if (find_constant(graph, q.input(0)) != nullptr || !int8_zero_point(graph, q)) continue;
      tensor_id[q.outputs[0]] = components.add();
      writer_node.push_back(static_cast<int>(n));
    }
    for (size_t id = 0; id < writer_node.size(); ++id) {  // grows while it runs
      const std::string tensor = graph.nodes[static_cast<size_t>(writer_node[id])].outputs[0];
      for (int reader : index.consumers(tensor)) {
        const Node& op = graph.nodes[static_cast<size_t>(reader)];
        if (!moves_codes(index, op, tensor) || tensor_id.count(op.outputs[0]) != 0) continue;
        const ValueInfo* info = graph.find_value(op.outputs[0]);
        if (info == nullptr || info->dtype != DataType::kInt8) continue;
        const int moved = components.add();
        tensor_id[op.outputs[0]] = moved;
        writer_node.push_back(reader);
        components.join(moved, static_cast<int>(id));
      }
    }
    std::vector<bool> blocked(writer_node.size(), false), feeds_gemm(writer_node.size(), false);
    // The candidate tensor a DQ reads, or -1.
    auto source_of = [&](const std::string& value) {
      const int producer = index.producer(value);
      if (producer < 0 || !is_dequantize(graph.nodes[static_cast<size_t>(producer)])) return -1;
      auto it = tensor_id.find(graph.nodes[static_cast<size_t>(producer)].input(0));
      return it == tensor_id.end() ? -1 : it->second;
    };
    // A type-joining op: its DQ operands' tensors and the tensors its output is quantized to.
    auto join_operands_and_result = [&](size_t id, const Node& op) {
      for (const std::string& operand : op.inputs) {
        if (operand.empty() || find_constant(graph, operand) != nullptr) continue;
        const int other = source_of(operand);
        if (other < 0) blocked[id] = true;
        else components.join(static_cast<int>(id), other);
      }
      if (index.is_graph_output(op.outputs[0])) blocked[id] = true;
      for (int result_reader : index.consumers(op.outputs[0])) {
        const Node& next = graph.nodes[static_cast<size_t>(result_reader)];
        auto it = is_quantize(next) ? tensor_id.find(next.outputs[0]) : tensor_id.end();
        if (it == tensor_id.end()) blocked[id] = true;
        else components.join(static_cast<int>(id), it->second);
      }
    };
    for (size_t id = 0; id < writer_node.size(); ++id) {
      const Node& q = graph.nodes[static_cast<size_t>(writer_node[id])];
      const std::string& tensor = q.outputs[0];
      if (index.is_graph_output(tensor)) blocked[id] = true;
      // The writer: a layer made from an op reading DQs must be able to write the new type.
      const int writer = is_quantize(q) ? index.producer(q.input(0)) : -1;
      if (writer >= 0) {
        const Node& op = graph.nodes[static_cast<size_t>(writer)];
        if (!reads_dequantized(graph, index, op) || writes_any_type(graph, index, op)) {
          // a float layer's Quantize, a requantizing epilogue or a table: any type
        } else if (joins_types(graph, index, op)) {
          join_operands_and_result(id, op);
        } else {
          blocked[id] = true;  // pools, concat, data movement: one type in and out
        }
      }
      for (int reader : index.consumers(tensor)) {
        const Node& dq = graph.nodes[static_cast<size_t>(reader)];
        if (moves_codes(index, dq, tensor) && tensor_id.count(dq.outputs[0]) != 0) continue;  // joined
        if (!is_dequantize(dq) || dq.input(0) != tensor || !int8_zero_point(graph, dq) ||
            index.is_graph_output(dq.outputs[0])) {
          blocked[id] = true;
          continue;
        }
        for (int user : index.consumers(dq.outputs[0])) {
          const Node& op = graph.nodes[static_cast<size_t>(user)];
          const bool data_input = op.input(0) == dq.outputs[0];
          if (is_op(op, "Conv") && data_input && op.input(1) != dq.outputs[0]) {
            feeds_gemm[id] = true;
          } else if ((is_op(op, "Gemm") || is_op(op, "MatMul")) && data_input &&
                     is_constant_operand(graph, index, op.input(1))) {
            feeds_gemm[id] = true;
          } else if (is_layer_residual_add(graph, index, op, dq.outputs[0])) {
            // read by the layer's epilogue: either type
          } else if (joins_types(graph, index, op)) {
            join_operands_and_result(id, op);
          } else {
            blocked[id] = true;
          }
        }
      }
    }
    // A component changes when none of its tensors is blocked and one of them feeds a GEMM.
    std::vector<bool> component_blocked(writer_node.size(), false), component_feeds(writer_node.size(), false);
    for (size_t id = 0; id < writer_node.size(); ++id) {
      const size_t root = static_cast<size_t>(components.find(static_cast<int>(id)));
      component_blocked[root] = component_blocked[root] || blocked[id];
      component_feeds[root] = component_feeds[root] || feeds_gemm[id];
    }
    std::vector<int> shifted;
    for (size_t id = 0; id < writer_node.size(); ++id) {
      const size_t root = static_cast<size_t>(components.find(static_cast<int>(id)));
      if (!component_blocked[root] && component_feeds[root]) shifted.push_back(writer_node[id]);
    }
    for (int n : shifted) {
      const std::string tensor = graph.nodes[static_cast<size_t>(n)].outputs[0];
      std::vector<int> nodes{n};
      for (int reader : index.consumers(tensor)) nodes.push_back(reader);
      for (int m : nodes) {
        Node& node = graph.nodes[static_cast<size_t>(m)];
        if (!is_quantize(node) && !is_dequantize(node)) continue;  // a byte-moving op: no parameters
        const std::optional<int64_t> signed_zero_point = int8_zero_point(graph, node);
        if (!signed_zero_point) continue;  // already shifted (a node reading the tensor twice)
        const int64_t zero_point = *signed_zero_point + 128;
        node.inputs[2] = add_initializer(graph, node.name + "_zero_point_u8",
                                         Tensor::scalar<uint8_t>(static_cast<uint8_t>(zero_point)));
      }
      set_value_info(graph, tensor, DataType::kUint8, tensor);
    }
    remove_unused(graph);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_shift_activations_unsigned_pass() { return std::make_unique<ShiftActivationsUnsignedPass>(); }

}  // namespace qdqrt::optimizer
