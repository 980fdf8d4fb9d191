#include "optimizer/passes/qdq_params.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/ops/quantize.h"
#include "reference/executor.h"

namespace qdqrt::optimizer {

bool is_quantize(const Node& node) { return node.domain.empty() && node.op_type == "QuantizeLinear"; }
bool is_dequantize(const Node& node) { return node.domain.empty() && node.op_type == "DequantizeLinear"; }

int64_t QuantParams::zero_point_at(int64_t i) const {
  if (!zero_point.defined()) return 0;
  return zero_point.value_as_int64(zero_point.numel() == 1 ? 0 : i);
}

std::optional<QuantParams> constant_quant_params(const Graph& graph, const Node& node) {
  if (!is_quantize(node) && !is_dequantize(node)) return std::nullopt;
  const Tensor* scale = find_constant(graph, node.input(1));
  if (scale == nullptr || scale->dtype() != DataType::kFloat || scale->numel() == 0) return std::nullopt;
  QuantParams params;
  params.scale = *scale;
  if (node.has_input(2)) {
    const Tensor* zero_point = find_constant(graph, node.input(2));
    if (zero_point == nullptr || zero_point->numel() != scale->numel()) return std::nullopt;
    params.zero_point = *zero_point;
  }
  if (is_quantize(node)) {
    const auto& attributes = node.attrs<QuantizeLinearAttributes>();
    if (attributes.block_size != 0) return std::nullopt;
    params.axis = attributes.axis;
    params.quantized_dtype = params.zero_point.defined() ? params.zero_point.dtype()
                             : attributes.output_dtype != DataType::kUndefined ? attributes.output_dtype
                                                                               : DataType::kUint8;
  } else {
    const auto& attributes = node.attrs<DequantizeLinearAttributes>();
    if (attributes.block_size != 0) return std::nullopt;
    params.axis = attributes.axis;
    if (params.zero_point.defined()) {
      params.quantized_dtype = params.zero_point.dtype();
    } else if (const Tensor* x = find_constant(graph, node.input(0))) {
      params.quantized_dtype = x->dtype();
    } else if (const ValueInfo* info = graph.find_value(node.input(0))) {
      params.quantized_dtype = info->dtype;
    }
  }
  if (!is_quantized_integer_dtype(params.quantized_dtype) || params.quantized_dtype == DataType::kInt32) {
    return std::nullopt;
  }
  return params;
}

int64_t value_rank(const Graph& graph, const std::string& value) {
  if (const Tensor* constant = find_constant(graph, value)) return constant->rank();
  const ValueInfo* info = graph.find_value(value);
  return info != nullptr && info->shape ? static_cast<int64_t>(info->shape->size()) : -1;
}

std::optional<Tensor> folded_dequantize(const Graph& graph, const Node& dq) {
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
  if (!outputs.ok() || outputs.value().empty() || !outputs.value()[0].defined()) return std::nullopt;
  return std::move(outputs.value()[0]);
}

bool same_quant_params(const QuantParams& a, const QuantParams& b, int64_t rank) {
  if (a.quantized_dtype != b.quantized_dtype || a.scale.numel() != b.scale.numel()) return false;
  if (!a.per_tensor()) {
    const int64_t axis_a = a.axis < 0 ? a.axis + rank : a.axis;
    const int64_t axis_b = b.axis < 0 ? b.axis + rank : b.axis;
    if (axis_a != axis_b) return false;
  }
  for (int64_t i = 0; i < a.scale.numel(); ++i) {
    if (a.scale.data<float>()[i] != b.scale.data<float>()[i]) return false;
    if (a.zero_point_at(i) != b.zero_point_at(i)) return false;
  }
  return true;
}

int64_t quantized_min(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return -128;
    case DataType::kInt16: return -32768;
    case DataType::kInt4: return -8;
    default: return 0;
  }
}

int64_t quantized_max(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return 127;
    case DataType::kUint8: return 255;
    case DataType::kInt16: return 32767;
    case DataType::kUint16: return 65535;
    case DataType::kInt4: return 7;
    case DataType::kUint4: return 15;
    default: return 0;
  }
}

int64_t quantize_scalar(float value, float scale, int64_t zero_point, DataType dtype) {
  const float scaled = value / scale;
  if (std::isnan(scaled)) return std::clamp<int64_t>(zero_point, quantized_min(dtype), quantized_max(dtype));
  const double rounded = std::nearbyint(static_cast<double>(scaled)) + static_cast<double>(zero_point);
  return static_cast<int64_t>(std::clamp(rounded, static_cast<double>(quantized_min(dtype)),
                                         static_cast<double>(quantized_max(dtype))));
}

bool bypass_value(Graph& graph, std::string from, std::string to) {
  const bool from_is_output = std::find(graph.outputs.begin(), graph.outputs.end(), from) != graph.outputs.end();
  if (!from_is_output) {
    replace_uses(graph, from, to);
    return true;
  }
  const bool to_is_output = std::find(graph.outputs.begin(), graph.outputs.end(), to) != graph.outputs.end();
  const bool to_is_input = std::find(graph.inputs.begin(), graph.inputs.end(), to) != graph.inputs.end();
  if (to_is_output || to_is_input || graph.initializers.count(to)) return false;
  Node* producer = nullptr;
  for (Node& node : graph.nodes) {
    for (std::string& output : node.outputs) {
      if (output == to) producer = &node;
    }
  }
  if (producer == nullptr) return false;
  // `to` becomes `from` everywhere; the node that produced `from` must stop producing it.
  for (Node& node : graph.nodes) {
    for (std::string& output : node.outputs) {
      if (output == from) output.clear();
    }
  }
  for (std::string& output : producer->outputs) {
    if (output == to) output = from;
  }
  replace_uses(graph, to, from);
  if (const ValueInfo* info = graph.find_value(to)) {
    ValueInfo renamed = *info;
    renamed.name = from;
    if (!graph.values.count(from)) graph.values[from] = renamed;
  }
  return true;
}

void set_value_info(Graph& graph, const std::string& name, DataType dtype, const std::string& like) {
  ValueInfo info;
  if (const ValueInfo* source = graph.find_value(like)) info = *source;
  info.name = name;
  info.dtype = dtype;
  graph.values[name] = info;
}

}  // namespace qdqrt::optimizer
