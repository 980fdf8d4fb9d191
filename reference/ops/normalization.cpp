// Reference BatchNormalization (inference) and LayerNormalization (float32), computing
// statistics in double.
#include <cmath>

#include "core/ops/normalization.h"
#include "reference/kernel_registry.h"
#include "reference/ops/broadcast.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt {

namespace {

using namespace reference;

Status batch_normalization_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const BatchNormalizationAttributes* typed, typed_attributes<BatchNormalizationAttributes>(node));
  const BatchNormalizationAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "X"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* scale, required_input(node, inputs, 1, "scale"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* bias, required_input(node, inputs, 2, "B"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* mean, required_input(node, inputs, 3, "input_mean"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* variance, required_input(node, inputs, 4, "input_var"));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input X", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(expect_rank_at_least(node, *x, "input X", 2));
  const int64_t channels = x->dim(1);
  const std::pair<const Tensor*, const char*> parameters[] = {
      {scale, "scale"}, {bias, "B"}, {mean, "input_mean"}, {variance, "input_var"}};
  for (const auto& [tensor, role] : parameters) {
    QDQRT_RETURN_IF_ERROR(expect_dtype(node, *tensor, role, {DataType::kFloat}));
    if (tensor->rank() != 1 || tensor->dim(0) != channels) {
      return invalid_argument("{}: {} must have shape [{}] (the channels of X {}), got {}", node.describe(), role,
                              channels, shape_to_string(x->shape()), shape_to_string(tensor->shape()));
    }
  }
  const std::vector<double> s = to_doubles(*scale), b = to_doubles(*bias), m = to_doubles(*mean),
                            v = to_doubles(*variance);
  int64_t plane = 1;
  for (int64_t axis = 2; axis < x->rank(); ++axis) plane *= x->dim(axis);
  Tensor y(DataType::kFloat, x->shape());
  const float* in = x->data<float>();
  float* out = y.data<float>();
  for (int64_t n = 0; n < x->dim(0); ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const size_t ci = static_cast<size_t>(c);
      const double inv_std = 1.0 / std::sqrt(v[ci] + static_cast<double>(attributes.epsilon));
      const int64_t base = (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) {
        out[base + i] = static_cast<float>((in[base + i] - m[ci]) * inv_std * s[ci] + b[ci]);
      }
    }
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

Status layer_normalization_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const LayerNormalizationAttributes* typed, typed_attributes<LayerNormalizationAttributes>(node));
  const LayerNormalizationAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "X"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* scale, required_input(node, inputs, 1, "Scale"));
  const Tensor* bias = optional_input(inputs, 2);
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input X", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *scale, "Scale", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(expect_rank_at_least(node, *x, "input X", 1));
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, attributes.axis, x->rank(), "attribute 'axis'"));
  // X is [outer..., inner...] with the normalized block starting at `axis`.
  const Shape inner_shape(x->shape().begin() + axis, x->shape().end());
  const int64_t inner = shape_numel(inner_shape);
  const int64_t outer = inner == 0 ? 0 : x->numel() / inner;
  // Scale and B broadcast unidirectionally to the normalized block.
  auto offsets_for = [&](const Tensor& tensor, const char* role) -> Result<std::vector<int64_t>> {
    QDQRT_ASSIGN_OR_RETURN(Shape shape, broadcast_shapes(node, {tensor.shape(), inner_shape}));
    if (shape != inner_shape) {
      return invalid_argument("{}: {} {} does not broadcast to the normalized shape {}", node.describe(), role,
                              shape_to_string(tensor.shape()), shape_to_string(inner_shape));
    }
    return broadcast_offsets(tensor.shape(), inner_shape);
  };
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> scale_offsets, offsets_for(*scale, "Scale"));
  std::vector<int64_t> bias_offsets;
  if (bias != nullptr) {
    QDQRT_RETURN_IF_ERROR(expect_dtype(node, *bias, "B", {DataType::kFloat}));
    QDQRT_ASSIGN_OR_RETURN(bias_offsets, offsets_for(*bias, "B"));
  }
  Shape stats_shape = x->shape();
  for (size_t i = static_cast<size_t>(axis); i < stats_shape.size(); ++i) stats_shape[i] = 1;
  Tensor y(DataType::kFloat, x->shape());
  Tensor mean_out(DataType::kFloat, stats_shape);
  Tensor inv_std_out(DataType::kFloat, stats_shape);
  const float* in = x->data<float>();
  const float* scale_values = scale->data<float>();
  const float* bias_values = bias != nullptr ? bias->data<float>() : nullptr;
  float* out = y.data<float>();
  for (int64_t row = 0; row < outer; ++row) {
    const float* values = in + row * inner;
    double mean = 0.0;
    for (int64_t i = 0; i < inner; ++i) mean += values[i];
    mean /= static_cast<double>(inner);
    double variance = 0.0;
    for (int64_t i = 0; i < inner; ++i) variance += (values[i] - mean) * (values[i] - mean);
    variance /= static_cast<double>(inner);
    const double inv_std = 1.0 / std::sqrt(variance + static_cast<double>(attributes.epsilon));
    for (int64_t i = 0; i < inner; ++i) {
      double result = (values[i] - mean) * inv_std * scale_values[scale_offsets[static_cast<size_t>(i)]];
      if (bias_values != nullptr) result += bias_values[bias_offsets[static_cast<size_t>(i)]];
      out[row * inner + i] = static_cast<float>(result);
    }
    mean_out.data<float>()[row] = static_cast<float>(mean);
    inv_std_out.data<float>()[row] = static_cast<float>(inv_std);
  }
  outputs[0] = std::move(y);
  if (outputs.size() > 1 && !node.outputs[1].empty()) outputs[1] = std::move(mean_out);
  if (outputs.size() > 2 && !node.outputs[2].empty()) outputs[2] = std::move(inv_std_out);
  return Status::ok();
}

}  // namespace

void register_normalization_kernels(KernelRegistry& registry) {
  registry.add("", "BatchNormalization", batch_normalization_kernel);
  registry.add("", "LayerNormalization", layer_normalization_kernel);
}

}  // namespace qdqrt
