#include "optimizer/selectors/qdq_selectors.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/ops/elementwise.h"
#include "core/ops/fused_layers.h"
#include "core/ops/matmul.h"
#include "core/ops/quantize.h"
#include "reference/executor.h"

namespace qdqrt::optimizer {

namespace {

bool is_onnx(const Node& node, const char* op_type) { return node.domain.empty() && node.op_type == op_type; }

DataType value_dtype(const Graph& graph, const std::string& value) {
  if (const Tensor* constant = find_constant(graph, value)) return constant->dtype();
  const ValueInfo* info = graph.find_value(value);
  return info != nullptr ? info->dtype : DataType::kUndefined;
}

std::optional<Shape> value_shape(const Graph& graph, const std::string& value) {
  if (const Tensor* constant = find_constant(graph, value)) return constant->shape();
  const ValueInfo* info = graph.find_value(value);
  if (info == nullptr) return std::nullopt;
  return info->static_shape();
}

bool is_8bit(DataType dtype) { return dtype == DataType::kInt8 || dtype == DataType::kUint8; }

// The single consumer of `value` (read once, not a graph output), or -1.
int single_consumer(const ValueIndex& index, const std::string& value) {
  return index.has_single_use(value) ? index.consumers(value)[0] : -1;
}

// Per-tensor: one scale value (scalar or [1]).
bool is_per_tensor(const QuantizedInput& input) { return !input.per_channel; }

// QuantizeLinear node `q_index` reading `value`, with per-tensor constant 8-bit parameters.
std::optional<QuantizedOutput> quantize_reader(const Graph& graph, int q_index, const std::string& value) {
  const Node& q = graph.nodes[static_cast<size_t>(q_index)];
  if (!is_onnx(q, "QuantizeLinear") || q.input(0) != value) return std::nullopt;
  const Tensor* scale = find_constant(graph, q.input(1));
  if (scale == nullptr || scale->numel() != 1 || scale->dtype() != DataType::kFloat) return std::nullopt;
  QuantizedOutput out;
  out.q_node = q_index;
  out.scale = q.input(1);
  if (q.has_input(2)) {
    const Tensor* zero_point = find_constant(graph, q.input(2));
    if (zero_point == nullptr || zero_point->numel() != 1 || !is_8bit(zero_point->dtype())) return std::nullopt;
    out.zero_point = q.input(2);
    out.dtype = zero_point->dtype();
  }
  if (const auto* attributes = dynamic_cast<const QuantizeLinearAttributes*>(q.typed_attributes.get())) {
    if (attributes->block_size != 0) return std::nullopt;
    if (attributes->output_dtype != DataType::kUndefined && !is_8bit(attributes->output_dtype)) return std::nullopt;
    if (out.zero_point.empty() && attributes->output_dtype != DataType::kUndefined) {
      out.dtype = attributes->output_dtype;
    }
  }
  if (q.outputs.empty() || q.outputs[0].empty()) return std::nullopt;
  return out;
}

// A QuantizeLinear reading `value` as its only reader, with per-tensor constant parameters.
std::optional<QuantizedOutput> output_quantization(const Graph& graph, const ValueIndex& index,
                                                   const std::string& value) {
  int consumer = single_consumer(index, value);
  if (consumer < 0) return std::nullopt;
  return quantize_reader(graph, consumer, value);
}

// The real range [lo, hi] a quantizer represents: ((q_min - zp) * scale, (q_max - zp) * scale).
std::pair<double, double> quantizer_range(const Graph& graph, const QuantizedOutput& q) {
  const double scale = find_constant(graph, q.scale)->data<float>()[0];
  const int64_t zero_point = q.zero_point.empty() ? 0 : find_constant(graph, q.zero_point)->value_as_int64(0);
  const int64_t q_min = q.dtype == DataType::kInt8 ? -128 : 0;
  const int64_t q_max = q.dtype == DataType::kInt8 ? 127 : 255;
  return {static_cast<double>(q_min - zero_point) * scale, static_cast<double>(q_max - zero_point) * scale};
}

// Q fan-out: every reader of `value` is a QuantizeLinear (2 or more, e.g. a ResNet block's output
// read by the next block's input quantizer and by its residual quantizer). The layer writes the
// int8 tensor of one of them (the primary) and the others are derived from it. The primary is
// the Q whose real range covers every other's (so requantizing from it never clips what the
// original would not), the finest such (smallest scale), the first in graph order on ties.
// Returns false (with a note) when no range covers the others.
bool select_quantize_fan_out(const Graph& graph, const ValueIndex& index, const std::string& value,
                             std::optional<QuantizedOutput>& primary, std::vector<QuantizedOutput>& others,
                             std::vector<FloatReason>& notes) {
  const std::vector<int>& readers = index.consumers(value);
  if (readers.size() < 2 || index.is_graph_output(value)) return false;
  std::vector<QuantizedOutput> candidates;
  for (int reader : readers) {
    auto q = quantize_reader(graph, reader, value);
    if (!q) return false;
    candidates.push_back(*q);
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.q_node < b.q_node; });
  int best = -1;
  double best_scale = 0.0;
  for (size_t c = 0; c < candidates.size(); ++c) {
    auto [lo, hi] = quantizer_range(graph, candidates[c]);
    bool covers = true;
    for (const QuantizedOutput& other : candidates) {
      auto [other_lo, other_hi] = quantizer_range(graph, other);
      covers = covers && lo <= other_lo && hi >= other_hi;
    }
    const double scale = find_constant(graph, candidates[c].scale)->data<float>()[0];
    if (covers && (best < 0 || scale < best_scale)) {
      best = static_cast<int>(c);
      best_scale = scale;
    }
  }
  if (best < 0) {
    for (const QuantizedOutput& q : candidates) {
      const Node& node = graph.nodes[static_cast<size_t>(q.q_node)];
      notes.push_back({node.name, node.op_type,
                       "the layer output feeds several QuantizeLinear nodes and no one's range covers the others'"});
    }
    return false;
  }
  primary = candidates[static_cast<size_t>(best)];
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (static_cast<int>(c) != best) others.push_back(candidates[c]);
  }
  return true;
}

// The output Q of `selection.output` (single reader, or a fan-out to several Qs); updates output.
void select_output_quantization(const Graph& graph, const ValueIndex& index, QdqSelection& selection) {
  if (auto q = output_quantization(graph, index, selection.output)) {
    selection.output_q = *q;
  } else if (!select_quantize_fan_out(graph, index, selection.output, selection.output_q, selection.extra_output_qs,
                                      selection.notes)) {
    return;
  }
  selection.output = graph.nodes[static_cast<size_t>(selection.output_q->q_node)].outputs[0];
}

// Relu / Clip (constant bounds) / LeakyRelu as a fusable activation.
std::optional<FusedActivation> activation_of(const Graph& graph, const Node& node) {
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

std::string node_name(const Graph& graph, int node) { return graph.nodes[static_cast<size_t>(node)].name; }

// Activation then output Q after `selection.output`; updates targets/output.
void select_activation_and_output(const Graph& graph, const ValueIndex& index, QdqSelection& selection) {
  int consumer = single_consumer(index, selection.output);
  if (consumer >= 0) {
    const Node& next = graph.nodes[static_cast<size_t>(consumer)];
    if (auto activation = activation_of(graph, next); activation && next.input(0) == selection.output) {
      selection.activation = *activation;
      selection.targets.push_back(consumer);
      selection.output = next.outputs[0];
    }
  }
  select_output_quantization(graph, index, selection);
}

// The epilogue of a Conv/MatMul writing `selection.output`: [bias Add] [residual Add] [activation] [Q].
void select_epilogue(const Graph& graph, const ValueIndex& index, QdqSelection& selection, int64_t bias_channels) {
  const Node& main = graph.nodes[static_cast<size_t>(selection.targets[0])];
  // A following Add of a constant [N] vector is the bias (MatMul + Add as exported from Linear).
  if (bias_channels > 0 && selection.bias.empty() && !selection.computed_bias) {
    int consumer = single_consumer(index, selection.output);
    if (consumer >= 0 && is_onnx(graph.nodes[static_cast<size_t>(consumer)], "Add")) {
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
  }
  // Residual Add.
  const std::vector<int>& readers = index.consumers(selection.output);
  if (readers.size() > 1 || (readers.size() == 1 && index.is_graph_output(selection.output))) {
    for (int reader : readers) {
      if (is_onnx(graph.nodes[static_cast<size_t>(reader)], "Add")) {
        selection.notes.push_back({node_name(graph, reader), "Add",
                                   fmt::format("its input from {} has other consumers", main.describe())});
      }
    }
    select_output_quantization(graph, index, selection);  // a fan-out to several Qs
    return;
  }
  int consumer = single_consumer(index, selection.output);
  if (consumer >= 0 && is_onnx(graph.nodes[static_cast<size_t>(consumer)], "Add")) {
    const Node& add = graph.nodes[static_cast<size_t>(consumer)];
    const std::string& other = add.input(0) == selection.output ? add.input(1) : add.input(0);
    if (other == selection.output || find_constant(graph, other) != nullptr) return;
    std::string reason;
    std::optional<QuantizedInput> residual = quantized_input(graph, index, other, reason);
    if (!residual) {
      selection.notes.push_back(
          {add.name, "Add", reason.empty() ? "residual input is float" : "residual input: " + reason});
      return;
    }
    if (!is_per_tensor(*residual)) {
      selection.notes.push_back({add.name, "Add", "residual has per-channel scales"});
      return;
    }
    const ValueInfo* residual_info = graph.find_value(other);
    const ValueInfo* add_info = graph.find_value(add.outputs[0]);
    auto same_dims = [](const ValueInfo* a, const ValueInfo* b) {
      if (a == nullptr || b == nullptr || !a->shape || !b->shape || a->shape->size() != b->shape->size()) return false;
      for (size_t i = 0; i < a->shape->size(); ++i) {
        const Dim& x = (*a->shape)[i];
        const Dim& y = (*b->shape)[i];
        if (x.is_static() != y.is_static() || (x.is_static() && x.value != y.value) ||
            (!x.is_static() && (x.symbol.empty() || x.symbol != y.symbol))) return false;
      }
      return true;
    };
    if (!same_dims(residual_info, add_info)) {
      selection.notes.push_back({add.name, "Add", "residual shape is unknown or broadcasts"});
      return;
    }
    selection.residual = *residual;
    selection.targets.push_back(consumer);
    selection.output = add.outputs[0];
  }
  select_activation_and_output(graph, index, selection);
}

// Checks the activation-side input (per-tensor, 8-bit).
std::optional<QuantizedInput> activation_input(const Graph& graph, const ValueIndex& index, const std::string& value,
                                               const char* role, std::string& reason) {
  std::string why;
  std::optional<QuantizedInput> input = quantized_input(graph, index, value, why);
  if (!input) {
    reason = why.empty() ? fmt::format("{} is float (no DequantizeLinear)", role) : fmt::format("{}: {}", role, why);
    return std::nullopt;
  }
  if (!is_per_tensor(*input)) {
    reason = fmt::format("{} has per-channel scales (activations must be per-tensor)", role);
    return std::nullopt;
  }
  return input;
}

// A DQ of a constant feeding the bias: evaluated once.
std::optional<Tensor> constant_float(const Graph& graph, const ValueIndex& index, const std::string& value) {
  if (const Tensor* constant = find_constant(graph, value)) {
    if (constant->dtype() == DataType::kFloat) return *constant;
    return std::nullopt;
  }
  int producer = index.producer(value);
  if (producer < 0) return std::nullopt;
  const Node& dq = graph.nodes[static_cast<size_t>(producer)];
  if (!is_onnx(dq, "DequantizeLinear")) return std::nullopt;
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < dq.inputs.size(); ++i) {
    if (!dq.has_input(i)) {
      inputs.push_back(nullptr);
      continue;
    }
    const Tensor* constant = find_constant(graph, dq.input(i));
    if (constant == nullptr) return std::nullopt;
    inputs.push_back(constant);
  }
  auto outputs = run_reference_node(dq, inputs);
  if (!outputs.ok() || outputs.value().empty()) return std::nullopt;
  return outputs.value()[0];
}

bool looks_quantized(const ValueIndex& index, const Graph& graph, const Node& node) {
  for (const std::string& input : node.inputs) {
    int producer = input.empty() ? -1 : index.producer(input);
    if (producer >= 0 && is_onnx(graph.nodes[static_cast<size_t>(producer)], "DequantizeLinear")) return true;
  }
  return false;
}

}  // namespace

std::optional<QuantizedInput> quantized_input(const Graph& graph, const ValueIndex& index, const std::string& value,
                                              std::string& reason) {
  int producer = index.producer(value);
  if (producer < 0 || !is_onnx(graph.nodes[static_cast<size_t>(producer)], "DequantizeLinear")) return std::nullopt;
  const Node& dq = graph.nodes[static_cast<size_t>(producer)];
  QuantizedInput input;
  input.dq_node = producer;
  input.quantized = dq.input(0);
  input.scale = dq.input(1);
  input.zero_point = dq.input(2);
  input.dtype = value_dtype(graph, input.quantized);
  if (!is_8bit(input.dtype)) {
    reason = fmt::format("{} reads {} data (int8/uint8 needed)", dq.describe(), dtype_name(input.dtype));
    return std::nullopt;
  }
  const Tensor* scale = find_constant(graph, input.scale);
  if (scale == nullptr) {
    reason = fmt::format("scale of {} is not a constant", dq.describe());
    return std::nullopt;
  }
  const Tensor* zero_point = input.zero_point.empty() ? nullptr : find_constant(graph, input.zero_point);
  if (!input.zero_point.empty() && zero_point == nullptr) {
    reason = fmt::format("zero-point of {} is not a constant", dq.describe());
    return std::nullopt;
  }
  const auto* attributes = dynamic_cast<const DequantizeLinearAttributes*>(dq.typed_attributes.get());
  if (attributes != nullptr && attributes->block_size != 0) {
    reason = fmt::format("{} uses blocked quantization", dq.describe());
    return std::nullopt;
  }
  input.per_channel = scale->numel() != 1 || (zero_point != nullptr && zero_point->numel() != 1);
  if (input.per_channel) {
    auto shape = value_shape(graph, input.quantized);
    int64_t axis = attributes != nullptr ? attributes->axis : 1;
    if (!shape) {
      reason = fmt::format("{}: per-channel input of unknown shape", dq.describe());
      return std::nullopt;
    }
    const int64_t rank = static_cast<int64_t>(shape->size());
    input.axis = axis < 0 ? axis + rank : axis;
  }
  return input;
}

SelectResult select_qdq_conv(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& conv = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(conv, "Conv") || !looks_quantized(index, graph, conv)) return {};
  SelectResult result;
  QdqSelection selection;
  selection.layer_op = layers::kQConv;
  auto x = activation_input(graph, index, conv.input(0), "input", result.reason);
  if (!x) return result;
  std::string why;
  auto w = quantized_input(graph, index, conv.input(1), why);
  if (!w) {
    result.reason = why.empty() ? "weight is float (no DequantizeLinear)" : "weight: " + why;
    return result;
  }
  const Tensor* weight = find_constant(graph, w->quantized);
  if (weight == nullptr) {
    result.reason = "weight is not a constant";
    return result;
  }
  if (w->per_channel) {
    const Tensor* scale = find_constant(graph, w->scale);
    if (w->axis != 0 || scale->numel() != weight->dim(0)) {
      result.reason = "weight scales are not per output channel (axis 0)";
      return result;
    }
  }
  selection.inputs = {*x, *w};
  if (conv.has_input(2)) {
    if (find_constant(graph, conv.input(2)) != nullptr &&
        find_constant(graph, conv.input(2))->dtype() == DataType::kFloat) {
      selection.bias = conv.input(2);
    } else if (auto bias = constant_float(graph, index, conv.input(2))) {
      selection.computed_bias = std::move(*bias);
    } else {
      result.reason = "bias is not a constant";
      return result;
    }
  }
  selection.targets = {node_index};
  selection.output = conv.outputs[0];
  select_epilogue(graph, index, selection, 0);
  result.selection = std::move(selection);
  return result;
}

SelectResult select_qdq_matmul(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  const bool is_gemm = is_onnx(node, "Gemm");
  if ((!is_onnx(node, "MatMul") && !is_gemm) || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  QdqSelection selection;
  selection.layer_op = layers::kQMatMul;
  const GemmAttributes* gemm = is_gemm ? dynamic_cast<const GemmAttributes*>(node.typed_attributes.get()) : nullptr;
  if (is_gemm && gemm == nullptr) {
    result.reason = "Gemm attributes missing";
    return result;
  }
  if (gemm != nullptr && gemm->trans_a) {
    result.reason = "transA on an activation (A would need a transpose)";
    return result;
  }
  auto a = activation_input(graph, index, node.input(0), "input A", result.reason);
  if (!a) return result;
  std::string why;
  auto b = quantized_input(graph, index, node.input(1), why);
  if (!b) {
    result.reason = why.empty() ? "input B is float (no DequantizeLinear)" : "input B: " + why;
    return result;
  }
  const Tensor* weight = find_constant(graph, b->quantized);
  int64_t columns = 0;
  if (weight != nullptr) {
    if (weight->rank() != 2) {
      result.reason = fmt::format("constant B has rank {} (2 needed)", weight->rank());
      return result;
    }
    const bool transposed = gemm != nullptr && gemm->trans_b;
    columns = transposed ? weight->dim(0) : weight->dim(1);
    if (b->per_channel) {
      const Tensor* scale = find_constant(graph, b->scale);
      const int64_t column_axis = transposed ? 0 : 1;
      if (b->axis != column_axis || scale->numel() != columns) {
        result.reason = "weight scales are not per output column";
        return result;
      }
    }
    selection.transpose_weight = transposed;
  } else {
    if (!is_per_tensor(*b)) {
      result.reason = "input B (an activation) has per-channel scales";
      return result;
    }
    if (gemm != nullptr && gemm->trans_b) {
      result.reason = "transB on an activation";
      return result;
    }
  }
  if (gemm != nullptr) selection.weight_scale_multiplier = gemm->alpha;
  if (gemm != nullptr && gemm->alpha != 1.0f && weight == nullptr) {
    result.reason = "Gemm alpha with an activation B";
    return result;
  }
  selection.inputs = {*a, *b};
  if (is_gemm && node.has_input(2)) {
    auto c = constant_float(graph, index, node.input(2));
    if (!c || columns == 0 || (c->numel() != columns && c->numel() != 1) ||
        (c->rank() >= 1 && c->dim(c->rank() - 1) != c->numel())) {
      result.reason = "Gemm C is not a constant [N] vector";
      return result;
    }
    Tensor bias(DataType::kFloat, {columns});
    for (int64_t i = 0; i < columns; ++i) {
      bias.data<float>()[i] = gemm->beta * c->data<float>()[c->numel() == 1 ? 0 : i];
    }
    selection.computed_bias = std::move(bias);
  }
  selection.targets = {node_index};
  selection.output = node.outputs[0];
  select_epilogue(graph, index, selection, columns);
  result.selection = std::move(selection);
  return result;
}

SelectResult select_qdq_binary(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  const bool is_add = is_onnx(node, "Add");
  if ((!is_add && !is_onnx(node, "Mul")) || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  QdqSelection selection;
  selection.layer_op = is_add ? layers::kQAdd : layers::kQMul;
  auto a = activation_input(graph, index, node.input(0), "input A", result.reason);
  if (!a) return result;
  auto b = activation_input(graph, index, node.input(1), "input B", result.reason);
  if (!b) return result;
  selection.inputs = {*a, *b};
  selection.targets = {node_index};
  selection.output = node.outputs[0];
  select_activation_and_output(graph, index, selection);
  result.selection = std::move(selection);
  return result;
}

SelectResult select_qdq_pool(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  const bool global = is_onnx(node, "GlobalAveragePool");
  if (!global && !is_onnx(node, "AveragePool")) return {};
  if (!looks_quantized(index, graph, node)) {
    // A float input whose average is quantized (a conv written in float, then pool -> Q): say
    // why it stays float. Moving the Q above the pool is not a rewrite of the model: the output
    // scale is calibrated on averages, and quantizing each input with it would clip.
    SelectResult result;
    if (output_quantization(graph, index, node.outputs[0])) {
      int producer = index.producer(node.input(0));
      result.reason = fmt::format(
          "input{} is float and the model has no QuantizeLinear before the pool (quantizing the "
          "inputs with the output's scale would round and clip them; the average is quantized after)",
          producer >= 0 ? " from " + graph.nodes[static_cast<size_t>(producer)].describe() : std::string());
    }
    return result;
  }
  SelectResult result;
  auto x = activation_input(graph, index, node.input(0), "input", result.reason);
  if (!x) return result;
  QdqSelection selection;
  selection.layer_op = global ? layers::kQGlobalAveragePool : layers::kQAveragePool;
  selection.inputs = {*x};
  selection.targets = {node_index};
  selection.output = node.outputs[0];
  select_output_quantization(graph, index, selection);
  result.selection = std::move(selection);
  return result;
}

SelectResult select_qdq_max_pool(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(node, "MaxPool") || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  auto x = activation_input(graph, index, node.input(0), "input", result.reason);
  if (!x) return result;
  if (node.outputs.size() > 1 && !node.outputs[1].empty() && !index.consumers(node.outputs[1]).empty()) {
    result.reason = "Indices output is used";
    return result;
  }
  auto q = output_quantization(graph, index, node.outputs[0]);
  if (!q) {
    result.reason = "output is not quantized (no QuantizeLinear follows)";
    return result;
  }
  const Tensor* in_scale = find_constant(graph, x->scale);
  const Tensor* out_scale = find_constant(graph, q->scale);
  const Tensor* in_zero = x->zero_point.empty() ? nullptr : find_constant(graph, x->zero_point);
  const Tensor* out_zero = q->zero_point.empty() ? nullptr : find_constant(graph, q->zero_point);
  const int64_t in_zp = in_zero ? in_zero->value_as_int64(0) : 0;
  const int64_t out_zp = out_zero ? out_zero->value_as_int64(0) : 0;
  if (in_scale->data<float>()[0] != out_scale->data<float>()[0] || in_zp != out_zp || x->dtype != q->dtype) {
    result.reason = "input and output quantization parameters differ";
    return result;
  }
  QdqSelection selection;
  selection.layer_op = "MaxPool";
  selection.inputs = {*x};
  selection.targets = {node_index};
  selection.output_q = *q;
  selection.output = graph.nodes[static_cast<size_t>(q->q_node)].outputs[0];
  result.selection = std::move(selection);
  return result;
}

SelectResult select_qdq_concat(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(node, "Concat") || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  QdqSelection selection;
  selection.layer_op = layers::kQConcat;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    auto x = activation_input(graph, index, node.input(i), fmt::format("input {}", i).c_str(), result.reason);
    if (!x) return result;
    selection.inputs.push_back(*x);
  }
  auto q = output_quantization(graph, index, node.outputs[0]);
  if (!q) {
    result.reason = "output is not quantized (no QuantizeLinear follows)";
    return result;
  }
  selection.targets = {node_index};
  selection.output_q = *q;
  selection.output = graph.nodes[static_cast<size_t>(q->q_node)].outputs[0];
  result.selection = std::move(selection);
  return result;
}

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

// The erf form of GELU starting at `first` (reading x): Div(x, sqrt 2) or Mul(x, 1/sqrt 2) ->
// Erf -> Add(1) -> then Mul(x, .) -> Mul(0.5), or Mul(0.5) -> Mul(x, .). Each intermediate
// value single-use. Returns the nodes in order, or empty.
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

}  // namespace

SelectResult select_qdq_lookup(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  static const char* const kFunctions[] = {"Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "Gelu"};
  bool known = false;
  for (const char* function : kFunctions) known = known || is_onnx(node, function);
  std::vector<int> erf_gelu;
  if (!known && (is_onnx(node, "Div") || is_onnx(node, "Mul"))) erf_gelu = match_erf_gelu(graph, index, node_index);
  if ((!known && erf_gelu.empty()) || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  auto x = activation_input(graph, index, node.input(0), "input", result.reason);
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
  auto q = output_quantization(graph, index, selection.output);
  if (!q) {
    result.reason = "output is not quantized (no QuantizeLinear follows)";
    return result;
  }
  selection.output_q = *q;
  selection.output = graph.nodes[static_cast<size_t>(q->q_node)].outputs[0];
  result.selection = std::move(selection);
  return result;
}

SelectResult select_int8_layer(const Graph& graph, const ValueIndex& index, int node) {
  using Selector = SelectResult (*)(const Graph&, const ValueIndex&, int);
  for (Selector selector : {select_qdq_conv, select_qdq_matmul, select_qdq_binary, select_qdq_pool,
                            select_qdq_max_pool, select_qdq_concat, select_qdq_lookup}) {
    SelectResult result = selector(graph, index, node);
    if (result.selection || !result.reason.empty()) return result;
  }
  return {};
}

}  // namespace qdqrt::optimizer
