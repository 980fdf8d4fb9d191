#include "optimizer/fusions/quantized_io.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/attribute_values.h"
#include "core/ops/fused_layers.h"
#include "core/ops/quantize.h"
#include "optimizer/passes/qdq_params.h"

namespace qdqrt::optimizer {

namespace {

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

}  // namespace

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

namespace {

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

Tensor zero_point_like(const Tensor& scale, DataType dtype) {
  Tensor zero(dtype, scale.shape());
  std::fill_n(static_cast<uint8_t*>(zero.raw_data()), zero.nbytes(), uint8_t{0});
  return zero;
}

float scalar_float(const Graph& graph, const std::string& value) {
  return find_constant(graph, value)->data<float>()[0];
}

int64_t zero_point_value(const Graph& graph, const std::string& value) {
  return value.empty() ? 0 : find_constant(graph, value)->value_as_int64(0);
}

bool same_output_params(const Graph& graph, const QuantizedOutput& a, const QuantizedOutput& b) {
  return a.dtype == b.dtype && scalar_float(graph, a.scale) == scalar_float(graph, b.scale) &&
         zero_point_value(graph, a.zero_point) == zero_point_value(graph, b.zero_point);
}

}  // namespace

bool is_onnx(const Node& node, const char* op_type) { return node.domain.empty() && node.op_type == op_type; }

bool same_input_output_params(const Graph& graph, const QuantizedInput& x, const QuantizedOutput& q) {
  const Tensor* in_scale = find_constant(graph, x.scale);
  const Tensor* out_scale = find_constant(graph, q.scale);
  const Tensor* in_zero = x.zero_point.empty() ? nullptr : find_constant(graph, x.zero_point);
  const Tensor* out_zero = q.zero_point.empty() ? nullptr : find_constant(graph, q.zero_point);
  const int64_t in_zp = in_zero ? in_zero->value_as_int64(0) : 0;
  const int64_t out_zp = out_zero ? out_zero->value_as_int64(0) : 0;
  return in_scale != nullptr && out_scale != nullptr && in_scale->data<float>()[0] == out_scale->data<float>()[0] &&
         in_zp == out_zp && x.dtype == q.dtype;
}

int single_consumer(const ValueIndex& index, const std::string& value) {
  return index.has_single_use(value) ? index.consumers(value)[0] : -1;
}

bool looks_quantized(const ValueIndex& index, const Graph& graph, const Node& node) {
  for (const std::string& input : node.inputs) {
    int producer = input.empty() ? -1 : index.producer(input);
    if (producer >= 0 && is_onnx(graph.nodes[static_cast<size_t>(producer)], "DequantizeLinear")) return true;
  }
  return false;
}

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

std::optional<QuantizedInput> activation_input(const Graph& graph, const ValueIndex& index, const std::string& value,
                                               const char* role, std::string& reason) {
  std::string why;
  std::optional<QuantizedInput> input = quantized_input(graph, index, value, why);
  if (!input) {
    reason = why.empty() ? fmt::format("{} is float (no DequantizeLinear)", role) : fmt::format("{}: {}", role, why);
    return std::nullopt;
  }
  if (input->per_channel) {
    reason = fmt::format("{} has per-channel scales (activations must be per-tensor)", role);
    return std::nullopt;
  }
  return input;
}

std::optional<Tensor> constant_float(const Graph& graph, const ValueIndex& index, const std::string& value) {
  if (const Tensor* constant = find_constant(graph, value)) {
    if (constant->dtype() == DataType::kFloat) return *constant;
    return std::nullopt;
  }
  int producer = index.producer(value);
  if (producer < 0) return std::nullopt;
  const Node& dq = graph.nodes[static_cast<size_t>(producer)];
  if (!is_onnx(dq, "DequantizeLinear")) return std::nullopt;
  return folded_dequantize(graph, dq);
}

std::optional<QuantizedOutput> output_quantization(const Graph& graph, const ValueIndex& index,
                                                   const std::string& value) {
  int consumer = single_consumer(index, value);
  if (consumer < 0) return std::nullopt;
  return quantize_reader(graph, consumer, value);
}

std::optional<QuantizedOutput> required_output_quantization(const Graph& graph, const ValueIndex& index,
                                                            const std::string& value, std::string& reason) {
  auto q = output_quantization(graph, index, value);
  if (!q) reason = "output is not quantized (no QuantizeLinear follows)";
  return q;
}

void end_at_quantize(const Graph& graph, const QuantizedOutput& q, QdqSelection& selection) {
  selection.output_q = q;
  selection.output = graph.nodes[static_cast<size_t>(q.q_node)].outputs[0];
}

void select_output_quantization(const Graph& graph, const ValueIndex& index, QdqSelection& selection) {
  if (auto q = output_quantization(graph, index, selection.output)) {
    selection.output_q = *q;
  } else if (!select_quantize_fan_out(graph, index, selection.output, selection.output_q, selection.extra_output_qs,
                                      selection.notes)) {
    return;
  }
  selection.output = graph.nodes[static_cast<size_t>(selection.output_q->q_node)].outputs[0];
}

std::vector<std::string> input_triple(Graph& graph, const QuantizedInput& input) {
  std::string zero_point = input.zero_point;
  if (zero_point.empty()) {
    zero_point = add_initializer(graph, input.quantized + "_zero_point",
                                 zero_point_like(*find_constant(graph, input.scale), input.dtype));
  }
  return {input.quantized, input.scale, zero_point};
}

std::vector<std::string> output_pair(Graph& graph, const std::optional<QuantizedOutput>& output) {
  if (!output) return {"", ""};
  std::string zero_point = output->zero_point;
  if (zero_point.empty()) {
    zero_point = add_initializer(graph, output->scale + "_zero_point",
                                 zero_point_like(*find_constant(graph, output->scale), output->dtype));
  }
  return {output->scale, zero_point};
}

bool shares_layer_output(const Graph& graph, const QdqSelection& selection, const QuantizedOutput& extra) {
  const std::string& q_output = graph.nodes[static_cast<size_t>(extra.q_node)].outputs[0];
  bool graph_output = std::find(graph.outputs.begin(), graph.outputs.end(), q_output) != graph.outputs.end();
  return !graph_output && same_output_params(graph, *selection.output_q, extra);
}

Result<std::vector<int>> rewire_extra_quantizers(Graph& graph, const QdqSelection& selection,
                                                 const std::vector<std::string>& layer_params, PassContext& context) {
  std::vector<int> removed;
  for (const QuantizedOutput& extra : selection.extra_output_qs) {
    Node& q = graph.nodes[static_cast<size_t>(extra.q_node)];
    context.clear_float_reason(q.name);
    const std::string q_output = q.outputs[0];
    if (shares_layer_output(graph, selection, extra)) {
      replace_uses(graph, q_output, selection.output);
      removed.push_back(extra.q_node);
      continue;
    }
    Node requantize;
    requantize.name = q.name;
    requantize.op_type = layers::kQRequantize;
    requantize.domain = layers::kDomain;
    requantize.opset = 1;
    requantize.attributes["fused_nodes"] = strings_attribute({q.name});
    std::vector<std::string> y = output_pair(graph, extra);
    requantize.inputs = {selection.output, layer_params[0], layer_params[1], y[0], y[1]};
    requantize.outputs = {q_output};
    QDQRT_ASSIGN_OR_RETURN(requantize.typed_attributes, parse_fused_layer_attributes(requantize));
    graph.nodes[static_cast<size_t>(extra.q_node)] = std::move(requantize);
  }
  return removed;
}

}  // namespace qdqrt::optimizer
