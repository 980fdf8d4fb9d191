#include "optimizer/passes/propagate_qdq.h"

#include <algorithm>
#include <limits>
#include <set>

#include "core/attribute_values.h"
#include "optimizer/graph_utils.h"
#include "optimizer/passes/qdq_params.h"
#include "core/ops/elementwise.h"
#include "core/ops/quantize.h"
#include "core/op_registry.h"
#include "core/ops/tensor.h"
#include "reference/executor.h"

namespace qdqrt::optimizer {

namespace {

// Per-tensor constant parameters of a Q/DQ node, or nullopt.
std::optional<QuantParams> per_tensor_params(const Graph& graph, const Node& node) {
  std::optional<QuantParams> params = constant_quant_params(graph, node);
  if (!params || !params->per_tensor()) return std::nullopt;
  return params;
}

Tensor zero_point_scalar(const QuantParams& params) {
  Tensor value(params.quantized_dtype, {});
  const int64_t zero_point = params.zero_point_at(0);
  switch (params.quantized_dtype) {
    case DataType::kInt8: value.data<int8_t>()[0] = static_cast<int8_t>(zero_point); break;
    case DataType::kUint8: value.data<uint8_t>()[0] = static_cast<uint8_t>(zero_point); break;
    case DataType::kInt16: value.data<int16_t>()[0] = static_cast<int16_t>(zero_point); break;
    case DataType::kUint16: value.data<uint16_t>()[0] = static_cast<uint16_t>(zero_point); break;
    default: break;
  }
  return value;
}

// Does `op` (reading the moved value as input 0) commute with a per-tensor Q/DQ with `params`?
// Also the int8 pad value to use for constant-mode Pad (an undefined tensor when none).
bool commutes(const Graph& graph, const Node& op, const QuantParams& params, bool moving_quantize, Tensor& pad_value) {
  static const std::set<std::string> movers = {"MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze",
                                               "Unsqueeze", "Slice", "Gather", "Pad"};
  if (!op.domain.empty() || !movers.count(op.op_type) || op.outputs.empty() || op.outputs[0].empty()) return false;
  for (size_t i = 1; i < op.outputs.size(); ++i) {
    if (!op.outputs[i].empty()) return false;  // MaxPool's Indices
  }
  for (size_t i = 1; i < op.inputs.size(); ++i) {
    if (op.inputs[i] == op.inputs[0]) return false;
  }
  if (params.quantized_dtype != DataType::kInt8 && params.quantized_dtype != DataType::kUint8) return false;
  if (op.op_type == "Gather") return find_constant(graph, op.input(1)) != nullptr;
  if (op.op_type != "Pad") return true;
  const auto& attributes = op.attrs<PadAttributes>();
  if (attributes.mode != PadMode::kConstant) return true;
  if (!attributes.pads_from_input) {
    // The value attribute cannot hold an integer: only a zero pad with zero-point 0 works.
    return attributes.constant_value == 0.0f && params.zero_point_at(0) == 0;
  }
  float value = 0.0f;
  if (op.has_input(2)) {
    const Tensor* constant = find_constant(graph, op.input(2));
    if (constant == nullptr || constant->dtype() != DataType::kFloat || constant->numel() != 1) return false;
    value = constant->data<float>()[0];
  }
  QuantParams pad_params = params;
  if (moving_quantize) {
    // Q(pad(x, c)) == pad(Q(x), Q(c)) for any c.
    const int64_t quantized = quantize_scalar(value, params.scale.data<float>()[0], params.zero_point_at(0),
                                              params.quantized_dtype);
    pad_params.zero_point = Tensor::scalar<int64_t>(quantized);
  } else if (value != 0.0f) {
    return false;  // pad(DQ(x), c) == DQ(pad(x, zp)) only for c == 0
  }
  pad_value = zero_point_scalar(pad_params);
  return true;
}

bool move_quantize_backward(Graph& graph, const ValueIndex& index, size_t q_index) {
  Node& q = graph.nodes[q_index];
  const std::string y = q.input(0);
  if (!index.has_single_use(y)) return false;
  const int op_index = index.producer(y);
  if (op_index < 0) return false;
  Node& op = graph.nodes[static_cast<size_t>(op_index)];
  if (op.outputs[0] != y) return false;
  std::optional<QuantParams> params = per_tensor_params(graph, q);
  if (!params) return false;
  Tensor pad_value;
  if (!commutes(graph, op, *params, true, pad_value)) return false;
  // Moving a Q above an op fed by a DQ with the same parameters would only undo the forward
  // move of that DQ (the two rules would alternate): leave it for remove_redundant_qdq.
  const int source = index.producer(op.input(0));
  if (source >= 0 && is_dequantize(graph.nodes[static_cast<size_t>(source)]) &&
      index.has_single_use(op.input(0))) {
    return false;
  }
  const std::string x = op.input(0);
  if (find_constant(graph, x) != nullptr) return false;  // Q(constant) would stay a runtime node here
  // A Slice or Gather picks part of x: when x has other readers its float value stays, and the Q
  // would quantize all of x for the part this op picks (ShuffleNetV2's channel split: twice the
  // values, then an int8 slice and a reorder, where the float slice feeds one border quantize).
  if ((op.op_type == "Slice" || op.op_type == "Gather") && !index.has_single_use(x)) return false;
  const std::string x_quantized = unique_value_name(graph, x + "_quantized");
  set_value_info(graph, x_quantized, params->quantized_dtype, x);
  if (pad_value.defined()) {
    if (op.inputs.size() < 3) op.inputs.resize(3);
    op.inputs[2] = add_initializer(graph, op.name + "_pad_quantized", pad_value);
  }
  const std::string q_output = q.outputs[0];
  q.inputs[0] = x;
  q.outputs[0] = x_quantized;
  op.inputs[0] = x_quantized;
  op.outputs[0] = q_output;
  graph.values.erase(y);
  return true;
}

}  // namespace

bool move_quantize_above_producer(Graph& graph, size_t q_index) {
  if (q_index >= graph.nodes.size() || !is_quantize(graph.nodes[q_index])) return false;
  const ValueIndex index(graph);
  return move_quantize_backward(graph, index, q_index);
}

namespace {

class PropagateQdqPass : public Pass {
 public:
  std::string name() const override { return "propagate_qdq"; }
  std::vector<std::string> must_run_after() const override { return {"fold_constants"}; }

  Status run(Graph& graph, PassContext&) override {
    // One rewrite at a time, then re-index; each rewrite moves a Q/DQ past one op, so the number
    // of rewrites is bounded (the limit only guards against a bug cycling forever).
    const size_t limit = 16 * graph.nodes.size() + 16;
    for (size_t rewrites = 0; rewrites < limit; ++rewrites) {
      if (!rewrite_once(graph)) break;
    }
    remove_unused(graph);
    return Status::ok();
  }

 private:
  static bool rewrite_once(Graph& graph) {
    ValueIndex index(graph);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const Node& node = graph.nodes[n];
      if (node.outputs.empty() || node.outputs[0].empty()) continue;
      if (is_dequantize(node) && (fold_into_constant_weight(graph, index, n) || move_dequantize_forward(graph, index, n))) {
        return true;
      }
      if (is_quantize(node) && (merge_equal_quantizers(graph, index, n) || absorb_clamp(graph, index, n) ||
                                move_quantize_backward(graph, index, n))) {
        return true;
      }
      if (node.op_type == "Concat" && node.domain.empty() && move_dequantize_past_concat(graph, index, n)) return true;
    }
    return false;
  }

  // The DQ node that will dequantize the moved value: `dq` itself when the op is its only reader,
  // else a copy (the other readers keep the original), appended to the graph.
  static Node& dequantize_for(Graph& graph, const ValueIndex& index, size_t dq_index) {
    if (index.has_single_use(graph.nodes[dq_index].outputs[0])) return graph.nodes[dq_index];
    Node copy = graph.nodes[dq_index];
    copy.name = unique_node_name(graph, copy.name);
    graph.nodes.push_back(std::move(copy));
    return graph.nodes.back();
  }

  // DQ(constant int8 weight) -> Transpose/Reshape/... (torch exports DQ -> Transpose -> MatMul for
  // Linear weights): the op is evaluated on the int8 constant and the DQ reads the result. A
  // per-axis DQ moves only past Transpose (its axis follows the permutation).
  static bool fold_into_constant_weight(Graph& graph, const ValueIndex& index, size_t dq_index) {
    const Node& dq = graph.nodes[dq_index];
    const Tensor* weight = find_constant(graph, dq.input(0));
    if (weight == nullptr || !index.has_single_use(dq.outputs[0])) return false;
    std::optional<QuantParams> params = constant_quant_params(graph, dq);
    if (!params) return false;
    const size_t op_index = static_cast<size_t>(index.consumers(dq.outputs[0])[0]);
    const Node& op = graph.nodes[op_index];
    Tensor unused_pad_value;
    QuantParams as_per_tensor = *params;
    as_per_tensor.scale = Tensor::scalar<float>(1.0f);
    as_per_tensor.zero_point = Tensor();
    if (op.input(0) != dq.outputs[0] || !commutes(graph, op, as_per_tensor, false, unused_pad_value)) return false;
    if (op.op_type == "Pad" || op.op_type == "MaxPool") return false;  // pad value / window semantics
    int64_t new_axis = params->axis;
    if (!params->per_tensor()) {
      if (op.op_type != "Transpose") return false;
      const int64_t rank = weight->rank();
      const int64_t old_axis = params->axis < 0 ? params->axis + rank : params->axis;
      std::vector<int64_t> perm = op.attrs<TransposeAttributes>().perm;
      if (perm.empty()) {
        for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
      }
      auto found = std::find(perm.begin(), perm.end(), old_axis);
      if (found == perm.end()) return false;
      new_axis = found - perm.begin();
    }
    std::vector<const Tensor*> inputs;
    for (const std::string& input : op.inputs) {
      const Tensor* constant = input == dq.outputs[0] ? weight : (input.empty() ? nullptr : find_constant(graph, input));
      if (!input.empty() && constant == nullptr) return false;
      inputs.push_back(constant);
    }
    Result<std::vector<Tensor>> folded = run_reference_node(op, inputs);
    if (!folded.ok() || folded->empty()) return false;
    const std::string y = op.outputs[0];
    const std::string folded_name = add_initializer(graph, dq.input(0) + "_" + op.op_type, std::move((*folded)[0]));
    Node& moved = graph.nodes[dq_index];
    graph.values.erase(moved.outputs[0]);
    graph.nodes[op_index].outputs.assign(graph.nodes[op_index].outputs.size(), "");
    moved.inputs[0] = folded_name;
    moved.outputs[0] = y;
    if (new_axis != params->axis) {
      moved.attributes["axis"] = int_attribute(new_axis);
      DequantizeLinearAttributes attributes = moved.attrs<DequantizeLinearAttributes>();
      attributes.axis = new_axis;
      moved.typed_attributes = make_attributes(attributes);
    }
    return true;
  }

  static bool move_dequantize_forward(Graph& graph, const ValueIndex& index, size_t dq_index) {
    const std::string dq_output = graph.nodes[dq_index].outputs[0];
    std::optional<QuantParams> params = per_tensor_params(graph, graph.nodes[dq_index]);
    if (!params) return false;
    for (int reader : index.consumers(dq_output)) {
      Node& candidate = graph.nodes[static_cast<size_t>(reader)];
      Tensor pad_value;
      if (candidate.input(0) != dq_output || !commutes(graph, candidate, *params, false, pad_value)) continue;
      const std::string x_quantized = graph.nodes[dq_index].inputs[0];
      const bool single_use = index.has_single_use(dq_output);
      Node& dq = dequantize_for(graph, index, dq_index);  // may reallocate graph.nodes
      Node& op = graph.nodes[static_cast<size_t>(reader)];
      const std::string y = op.outputs[0];
      const std::string y_quantized = unique_value_name(graph, y + "_quantized");
      set_value_info(graph, y_quantized, params->quantized_dtype, y);
      if (pad_value.defined()) {
        if (op.inputs.size() < 3) op.inputs.resize(3);
        op.inputs[2] = add_initializer(graph, op.name + "_pad_zero_point", pad_value);
      }
      op.inputs[0] = x_quantized;
      op.outputs[0] = y_quantized;
      dq.inputs[0] = y_quantized;
      dq.outputs[0] = y;
      if (single_use) graph.values.erase(dq_output);
      return true;
    }
    return false;
  }

  // A value read by several Qs with equal parameters (ResNet's stem MaxPool feeds the first block's
  // input and downsample quantizers): the later Qs' readers read the first Q's output, so the
  // value has one reader and the Q can move (Q(x) twice is the same tensor: exact).
  static bool merge_equal_quantizers(Graph& graph, const ValueIndex& index, size_t q_index) {
    const Node& q = graph.nodes[q_index];
    std::optional<QuantParams> params = per_tensor_params(graph, q);
    if (!params) return false;
    for (int reader : index.consumers(q.input(0))) {
      const Node& other = graph.nodes[static_cast<size_t>(reader)];
      if (static_cast<size_t>(reader) == q_index || !is_quantize(other) || other.input(0) != q.input(0)) continue;
      if (other.outputs.empty() || other.outputs[0].empty()) continue;
      std::optional<QuantParams> other_params = per_tensor_params(graph, other);
      if (!other_params || !same_quant_params(*params, *other_params, 0)) continue;
      if (!bypass_value(graph, other.outputs[0], q.outputs[0])) continue;
      graph.nodes.erase(graph.nodes.begin() + reader);
      return true;
    }
    return false;
  }

  // Relu/Clip -> Q where the Q saturates at the same bounds: Q(clip(x)) == Q(x).
  static bool absorb_clamp(Graph& graph, const ValueIndex& index, size_t q_index) {
    Node& q = graph.nodes[q_index];
    const std::string y = q.input(0);
    if (!index.has_single_use(y)) return false;
    const int clamp_index = index.producer(y);
    if (clamp_index < 0) return false;
    const Node& clamp = graph.nodes[static_cast<size_t>(clamp_index)];
    if (!clamp.domain.empty() || (clamp.op_type != "Relu" && clamp.op_type != "Clip")) return false;
    std::optional<QuantParams> params = per_tensor_params(graph, q);
    if (!params) return false;
    float low = 0.0f;
    std::optional<float> high;
    if (clamp.op_type == "Clip") {
      const auto& attributes = clamp.attrs<ClipAttributes>();
      low = attributes.min;
      if (attributes.max != std::numeric_limits<float>::max()) high = attributes.max;
      if (attributes.bounds_from_inputs) {
        low = std::numeric_limits<float>::lowest();
        high.reset();
        for (size_t i = 1; i <= 2; ++i) {
          if (!clamp.has_input(i)) continue;
          const Tensor* bound = find_constant(graph, clamp.input(i));
          if (bound == nullptr || bound->dtype() != DataType::kFloat || bound->numel() != 1) return false;
          (i == 1 ? low : high.emplace()) = bound->data<float>()[0];
        }
      }
    }
    const float scale = params->scale.data<float>()[0];
    const int64_t zero_point = params->zero_point_at(0);
    if (quantize_scalar(low, scale, zero_point, params->quantized_dtype) != quantized_min(params->quantized_dtype)) {
      return false;
    }
    if (high && quantize_scalar(*high, scale, zero_point, params->quantized_dtype) !=
                    quantized_max(params->quantized_dtype)) {
      return false;
    }
    q.inputs[0] = clamp.input(0);
    graph.values.erase(y);
    return true;
  }

  static bool move_dequantize_past_concat(Graph& graph, const ValueIndex& index, size_t concat_index) {
    const Node& concat = graph.nodes[concat_index];
    std::vector<size_t> dq_indices;
    std::optional<QuantParams> first;
    for (const std::string& input : concat.inputs) {
      const int producer = index.producer(input);
      if (producer < 0) return false;
      const Node& dq = graph.nodes[static_cast<size_t>(producer)];
      if (!is_dequantize(dq)) return false;
      std::optional<QuantParams> params = per_tensor_params(graph, dq);
      if (!params) return false;
      if (!first) {
        first = params;
      } else if (!same_quant_params(*first, *params, 0)) {
        return false;
      }
      dq_indices.push_back(static_cast<size_t>(producer));
    }
    if (dq_indices.empty()) return false;
    if (first->quantized_dtype != DataType::kInt8 && first->quantized_dtype != DataType::kUint8) return false;
    std::vector<std::string> quantized_inputs;
    for (size_t i : dq_indices) quantized_inputs.push_back(graph.nodes[i].inputs[0]);
    // Single-use input DQs die with this rewrite (remove_unused); shared ones stay for their
    // other readers. The output DQ is the first input's DQ when that one is single-use.
    Node& output_dq = dequantize_for(graph, index, dq_indices[0]);  // may reallocate graph.nodes
    Node& moved_concat = graph.nodes[concat_index];
    const std::string y = moved_concat.outputs[0];
    const std::string y_quantized = unique_value_name(graph, y + "_quantized");
    set_value_info(graph, y_quantized, first->quantized_dtype, y);
    moved_concat.inputs = quantized_inputs;
    moved_concat.outputs[0] = y_quantized;
    output_dq.inputs[0] = y_quantized;
    output_dq.outputs[0] = y;
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_propagate_qdq_pass() { return std::make_unique<PropagateQdqPass>(); }

}  // namespace qdqrt::optimizer
