// Reference QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the integer ops
// QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger.
//
// Quantize: y = saturate(round_half_to_even(x / scale) + zero_point), x / scale in float32 as
// ONNX's reference does. Dequantize: y = float(x - zero_point) * scale. Scales and zero-points
// are per-tensor, per-axis (1-D along `axis`, opset 13+) or blocked (same rank as x, opset 21+).
#include <algorithm>
#include <cmath>

#include "core/ops/conv.h"
#include "core/ops/quantize.h"
#include "reference/kernel_registry.h"
#include "reference/ops/batched_matmul.h"
#include "reference/ops/convolution.h"
#include "reference/ops/dtype_helpers.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt {

namespace {

using namespace reference;

// Which scale / zero-point element applies to each element of x.
struct QuantParamLayout {
  enum class Kind { kPerTensor, kPerAxis, kBlocked } kind = Kind::kPerTensor;
  int64_t axis_dim = 1;        // x's size along axis
  int64_t inner = 1;           // elements after axis
  int64_t block_size = 0;      // blocked only
  int64_t param_axis_dim = 1;  // scale's size along axis (blocked only)

  int64_t param_index(int64_t i) const {
    switch (kind) {
      case Kind::kPerTensor: return 0;
      case Kind::kPerAxis: return (i / inner) % axis_dim;
      case Kind::kBlocked: {
        const int64_t outer = i / (axis_dim * inner);
        const int64_t along_axis = (i / inner) % axis_dim;
        return (outer * param_axis_dim + along_axis / block_size) * inner + i % inner;
      }
    }
    return 0;
  }
};

Result<QuantParamLayout> plan_quant_params(const Node& node, const Tensor& x, const Tensor& scale,
                                           const Tensor* zero_point, int64_t axis_attribute, int64_t block_size) {
  const Shape zero_point_shape = zero_point != nullptr ? zero_point->shape() : Shape{};
  QDQRT_ASSIGN_OR_RETURN(QuantParamShapes shapes,
                         check_quant_param_shapes(node, x.shape(), scale.shape(),
                                                  zero_point != nullptr ? &zero_point_shape : nullptr, axis_attribute,
                                                  block_size));
  QuantParamLayout layout;
  if (shapes.kind == QuantParamShapes::Kind::kPerTensor) return layout;
  layout.axis_dim = x.dim(shapes.axis);
  for (int64_t i = shapes.axis + 1; i < x.rank(); ++i) layout.inner *= x.dim(i);
  if (shapes.kind == QuantParamShapes::Kind::kPerAxis) {
    layout.kind = QuantParamLayout::Kind::kPerAxis;
    return layout;
  }
  layout.kind = QuantParamLayout::Kind::kBlocked;
  layout.block_size = block_size;
  layout.param_axis_dim = scale.dim(shapes.axis);
  return layout;
}

// round_half_to_even(value) + zero_point, saturated to [lowest, highest]. NaN maps to the zero-point.
int64_t quantize_value(double value, int64_t zero_point, std::pair<int64_t, int64_t> range) {
  if (std::isnan(value)) return std::clamp(zero_point, range.first, range.second);
  double rounded = std::nearbyint(value) + static_cast<double>(zero_point);  // default rounding: half to even
  rounded = std::clamp(rounded, static_cast<double>(range.first), static_cast<double>(range.second));
  return static_cast<int64_t>(rounded);
}

Status quantize_linear_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const QuantizeLinearAttributes* typed, typed_attributes<QuantizeLinearAttributes>(node));
  const QuantizeLinearAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "x"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* scale, required_input(node, inputs, 1, "y_scale"));
  const Tensor* zero_point = optional_input(inputs, 2);
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input x", {DataType::kFloat, DataType::kInt32}));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *scale, "y_scale", {DataType::kFloat}));
  // The output type comes from the zero-point, else output_dtype, else uint8.
  DataType output_dtype = attributes.output_dtype != DataType::kUndefined ? attributes.output_dtype : DataType::kUint8;
  if (zero_point != nullptr) {
    if (!is_quantized_integer_dtype(zero_point->dtype())) {
      return unsupported("{}: y_zero_point has element type {} (int8, uint8, int16, uint16, int4, uint4 supported)",
                         node.describe(), dtype_name(zero_point->dtype()));
    }
    if (attributes.output_dtype != DataType::kUndefined && attributes.output_dtype != zero_point->dtype()) {
      return invalid_model("{}: output_dtype {} differs from y_zero_point's element type {}", node.describe(),
                           dtype_name(attributes.output_dtype), dtype_name(zero_point->dtype()));
    }
    output_dtype = zero_point->dtype();
  }
  QDQRT_ASSIGN_OR_RETURN(QuantParamLayout layout,
                         plan_quant_params(node, *x, *scale, zero_point, attributes.axis, attributes.block_size));
  const std::vector<double> scales = to_doubles(*scale);
  const std::vector<int64_t> zero_points = zero_point ? to_int64s(*zero_point) : std::vector<int64_t>(scales.size(), 0);
  const auto range = integer_range(output_dtype);
  Tensor y(output_dtype, x->shape());
  for (int64_t i = 0; i < x->numel(); ++i) {
    const size_t p = static_cast<size_t>(layout.param_index(i));
    const float x_value = x->dtype() == DataType::kFloat ? x->data<float>()[i] : static_cast<float>(x->data<int32_t>()[i]);
    const float scaled = x_value / static_cast<float>(scales[p]);
    store_integer(y, i, quantize_value(scaled, zero_points[p], range));
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

Status dequantize_linear_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const DequantizeLinearAttributes* typed, typed_attributes<DequantizeLinearAttributes>(node));
  const DequantizeLinearAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "x"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* scale, required_input(node, inputs, 1, "x_scale"));
  const Tensor* zero_point = optional_input(inputs, 2);
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input x",
                                     {DataType::kInt8, DataType::kUint8, DataType::kInt16, DataType::kUint16,
                                      DataType::kInt4, DataType::kUint4, DataType::kInt32}));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *scale, "x_scale", {DataType::kFloat}));
  if (zero_point != nullptr && zero_point->dtype() != x->dtype()) {
    return invalid_model("{}: x_zero_point has element type {}, x has {}", node.describe(),
                         dtype_name(zero_point->dtype()), dtype_name(x->dtype()));
  }
  QDQRT_ASSIGN_OR_RETURN(QuantParamLayout layout,
                         plan_quant_params(node, *x, *scale, zero_point, attributes.axis, attributes.block_size));
  const std::vector<double> scales = to_doubles(*scale);
  const std::vector<int64_t> zero_points = zero_point ? to_int64s(*zero_point) : std::vector<int64_t>(scales.size(), 0);
  Tensor y(DataType::kFloat, x->shape());
  float* out = y.data<float>();
  for (int64_t i = 0; i < x->numel(); ++i) {
    const size_t p = static_cast<size_t>(layout.param_index(i));
    const float difference = static_cast<float>(x->value_as_int64(i) - zero_points[p]);
    out[i] = difference * static_cast<float>(scales[p]);
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

// uint8 quantization with scale and zero-point chosen from the data range (always including 0).
Status dynamic_quantize_linear_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "x"));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input x", {DataType::kFloat}));
  const float* in = x->data<float>();
  float x_min = 0.0f, x_max = 0.0f;
  for (int64_t i = 0; i < x->numel(); ++i) {
    x_min = std::min(x_min, in[i]);
    x_max = std::max(x_max, in[i]);
  }
  const std::pair<int64_t, int64_t> range = {0, 255};
  const float scale = (x_max - x_min) / 255.0f;
  // An all-zero input gives scale 0; every output is then the zero-point 0.
  const int64_t zero_point = scale == 0.0f ? 0 : quantize_value(0.0f - x_min / scale, 0, range);
  Tensor y(DataType::kUint8, x->shape());
  for (int64_t i = 0; i < x->numel(); ++i) {
    y.data<uint8_t>()[i] = static_cast<uint8_t>(scale == 0.0f ? 0 : quantize_value(in[i] / scale, zero_point, range));
  }
  outputs[0] = std::move(y);
  if (outputs.size() > 1 && !node.outputs[1].empty()) outputs[1] = Tensor::scalar<float>(scale);
  if (outputs.size() > 2 && !node.outputs[2].empty()) outputs[2] = Tensor::scalar<uint8_t>(static_cast<uint8_t>(zero_point));
  return Status::ok();
}

// A per-tensor (one element) or per-channel ([count]) parameter, expanded to `count` values;
// nullptr gives zeros.
Result<std::vector<double>> per_channel(const Node& node, const Tensor* tensor, int64_t count, const char* role) {
  if (tensor == nullptr) return std::vector<double>(static_cast<size_t>(count), 0.0);
  if (tensor->rank() <= 1 && tensor->numel() == 1) return std::vector<double>(static_cast<size_t>(count), tensor->value_as_double(0));
  if (tensor->rank() == 1 && tensor->numel() == count) return to_doubles(*tensor);
  return invalid_argument("{}: {} must be a scalar or have shape [{}], got {}", node.describe(), role, count,
                          shape_to_string(tensor->shape()));
}

Result<std::vector<int64_t>> per_channel_ints(const Node& node, const Tensor* tensor, int64_t count, const char* role) {
  QDQRT_ASSIGN_OR_RETURN(std::vector<double> values, per_channel(node, tensor, count, role));
  return std::vector<int64_t>(values.begin(), values.end());
}

Status expect_8bit(const Node& node, const Tensor& tensor, const char* role) {
  return expect_dtype(node, tensor, role, {DataType::kUint8, DataType::kInt8});
}

// Zero-points must have their data's element type.
Status expect_same_dtype(const Node& node, const Tensor* zero_point, const char* zero_point_role, const Tensor& data,
                         const char* data_role) {
  if (zero_point == nullptr || zero_point->dtype() == data.dtype()) return Status::ok();
  return invalid_model("{}: {} has element type {}, {} has {}", node.describe(), zero_point_role,
                       dtype_name(zero_point->dtype()), data_role, dtype_name(data.dtype()));
}

// x - x_zero_point (scalar) as int64, and w - w_zero_point (scalar or per output channel).
struct IntegerConvOperands {
  std::vector<int64_t> x, w;
};
Result<IntegerConvOperands> integer_conv_operands(const Node& node, const Tensor& x, const Tensor* x_zero_point,
                                                  const Tensor& w, const Tensor* w_zero_point) {
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> x_zero, per_channel_ints(node, x_zero_point, 1, "x_zero_point"));
  const int64_t out_channels = w.rank() > 0 ? w.dim(0) : 0;
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> w_zero, per_channel_ints(node, w_zero_point, out_channels, "w_zero_point"));
  IntegerConvOperands operands{to_int64s(x), to_int64s(w)};
  for (int64_t& value : operands.x) value -= x_zero[0];
  const int64_t per_channel_size = out_channels > 0 ? w.numel() / out_channels : 0;
  for (size_t i = 0; i < operands.w.size(); ++i) operands.w[i] -= w_zero[i / static_cast<size_t>(per_channel_size)];
  return operands;
}

Status conv_integer_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const ConvAttributes* typed, typed_attributes<ConvAttributes>(node));
  const ConvAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "x"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* w, required_input(node, inputs, 1, "w"));
  const Tensor* x_zero_point = optional_input(inputs, 2);
  const Tensor* w_zero_point = optional_input(inputs, 3);
  QDQRT_RETURN_IF_ERROR(expect_8bit(node, *x, "input x"));
  QDQRT_RETURN_IF_ERROR(expect_8bit(node, *w, "weight w"));
  QDQRT_RETURN_IF_ERROR(expect_same_dtype(node, x_zero_point, "x_zero_point", *x, "x"));
  QDQRT_RETURN_IF_ERROR(expect_same_dtype(node, w_zero_point, "w_zero_point", *w, "w"));
  QDQRT_ASSIGN_OR_RETURN(ConvPlan plan, plan_conv(node, x->shape(), w->shape(), attributes));
  QDQRT_ASSIGN_OR_RETURN(IntegerConvOperands operands, integer_conv_operands(node, *x, x_zero_point, *w, w_zero_point));
  std::vector<int64_t> accumulators = convolve(operands.x, operands.w, plan);
  Tensor y(DataType::kInt32, plan.output_shape);
  for (size_t i = 0; i < accumulators.size(); ++i) y.data<int32_t>()[i] = static_cast<int32_t>(accumulators[i]);
  outputs[0] = std::move(y);
  return Status::ok();
}

// The output type of a QLinear op: y_zero_point's, else the input's.
Result<DataType> qlinear_output_dtype(const Node& node, const Tensor* y_zero_point, const Tensor& input) {
  if (y_zero_point == nullptr) return input.dtype();
  QDQRT_RETURN_IF_ERROR(expect_8bit(node, *y_zero_point, "y_zero_point"));
  return y_zero_point->dtype();
}

Status qlinear_conv_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const ConvAttributes* typed, typed_attributes<ConvAttributes>(node));
  const ConvAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "x"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x_scale, required_input(node, inputs, 1, "x_scale"));
  const Tensor* x_zero_point = optional_input(inputs, 2);
  QDQRT_ASSIGN_OR_RETURN(const Tensor* w, required_input(node, inputs, 3, "w"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* w_scale, required_input(node, inputs, 4, "w_scale"));
  const Tensor* w_zero_point = optional_input(inputs, 5);
  QDQRT_ASSIGN_OR_RETURN(const Tensor* y_scale, required_input(node, inputs, 6, "y_scale"));
  const Tensor* y_zero_point = optional_input(inputs, 7);
  const Tensor* bias = optional_input(inputs, 8);
  QDQRT_RETURN_IF_ERROR(expect_8bit(node, *x, "input x"));
  QDQRT_RETURN_IF_ERROR(expect_8bit(node, *w, "weight w"));
  QDQRT_RETURN_IF_ERROR(expect_same_dtype(node, x_zero_point, "x_zero_point", *x, "x"));
  QDQRT_RETURN_IF_ERROR(expect_same_dtype(node, w_zero_point, "w_zero_point", *w, "w"));
  for (const auto& [tensor, role] : {std::pair{x_scale, "x_scale"}, {w_scale, "w_scale"}, {y_scale, "y_scale"}}) {
    QDQRT_RETURN_IF_ERROR(expect_dtype(node, *tensor, role, {DataType::kFloat}));
  }
  QDQRT_ASSIGN_OR_RETURN(DataType output_dtype, qlinear_output_dtype(node, y_zero_point, *x));
  QDQRT_ASSIGN_OR_RETURN(ConvPlan plan, plan_conv(node, x->shape(), w->shape(), attributes));
  QDQRT_ASSIGN_OR_RETURN(IntegerConvOperands operands, integer_conv_operands(node, *x, x_zero_point, *w, w_zero_point));
  QDQRT_ASSIGN_OR_RETURN(std::vector<double> x_scales, per_channel(node, x_scale, 1, "x_scale"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<double> w_scales, per_channel(node, w_scale, plan.out_channels, "w_scale"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<double> y_scales, per_channel(node, y_scale, 1, "y_scale"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> y_zero, per_channel_ints(node, y_zero_point, 1, "y_zero_point"));
  std::vector<int64_t> biases(static_cast<size_t>(plan.out_channels), 0);
  if (bias != nullptr) {
    QDQRT_RETURN_IF_ERROR(expect_dtype(node, *bias, "bias B", {DataType::kInt32}));
    if (bias->rank() != 1 || bias->dim(0) != plan.out_channels) {
      return invalid_argument("{}: bias B must have shape [{}], got {}", node.describe(), plan.out_channels,
                              shape_to_string(bias->shape()));
    }
    biases = to_int64s(*bias);
  }
  std::vector<int64_t> accumulators = convolve(operands.x, operands.w, plan);
  const int64_t plane = shape_numel(plan.geometry.output_spatial());
  const auto range = integer_range(output_dtype);
  Tensor y(output_dtype, plan.output_shape);
  for (size_t i = 0; i < accumulators.size(); ++i) {
    const size_t channel = (i / static_cast<size_t>(plane)) % static_cast<size_t>(plan.out_channels);
    // The combined multiplier in float32, the product in double, as ONNX's reference computes it.
    const float multiplier = static_cast<float>(x_scales[0]) * static_cast<float>(w_scales[channel]) /
                             static_cast<float>(y_scales[0]);
    const int32_t accumulator = static_cast<int32_t>(accumulators[i] + biases[channel]);
    const double value = static_cast<double>(accumulator) * static_cast<double>(multiplier);
    store_integer(y, static_cast<int64_t>(i), quantize_value(value, y_zero[0], range));
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

// A - a_zero_point (per tensor or per row of A) and B - b_zero_point (per tensor or per column of B).
struct IntegerMatMulOperands {
  MatMulPlan plan;
  std::vector<int64_t> a, b;
};
Result<IntegerMatMulOperands> integer_matmul_operands(const Node& node, const Tensor& a, const Tensor* a_zero_point,
                                                      const Tensor& b, const Tensor* b_zero_point) {
  IntegerMatMulOperands operands;
  QDQRT_ASSIGN_OR_RETURN(operands.plan, plan_matmul(node, a.shape(), b.shape()));
  const MatMulPlan& plan = operands.plan;
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> a_zero, per_channel_ints(node, a_zero_point, plan.m, "a_zero_point"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> b_zero, per_channel_ints(node, b_zero_point, plan.n, "b_zero_point"));
  operands.a = to_int64s(a);
  operands.b = to_int64s(b);
  for (size_t i = 0; i < operands.a.size(); ++i) {
    operands.a[i] -= a_zero[(i / static_cast<size_t>(plan.k)) % static_cast<size_t>(plan.m)];
  }
  for (size_t i = 0; i < operands.b.size(); ++i) operands.b[i] -= b_zero[i % static_cast<size_t>(plan.n)];
  return operands;
}

Status matmul_integer_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const Tensor* a, required_input(node, inputs, 0, "A"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* b, required_input(node, inputs, 1, "B"));
  const Tensor* a_zero_point = optional_input(inputs, 2);
  const Tensor* b_zero_point = optional_input(inputs, 3);
  QDQRT_RETURN_IF_ERROR(expect_8bit(node, *a, "input A"));
  QDQRT_RETURN_IF_ERROR(expect_8bit(node, *b, "input B"));
  QDQRT_RETURN_IF_ERROR(expect_same_dtype(node, a_zero_point, "a_zero_point", *a, "A"));
  QDQRT_RETURN_IF_ERROR(expect_same_dtype(node, b_zero_point, "b_zero_point", *b, "B"));
  QDQRT_ASSIGN_OR_RETURN(IntegerMatMulOperands operands, integer_matmul_operands(node, *a, a_zero_point, *b, b_zero_point));
  std::vector<int64_t> product = batched_matmul(operands.a, operands.b, operands.plan);
  Tensor y(DataType::kInt32, operands.plan.output_shape);
  for (size_t i = 0; i < product.size(); ++i) y.data<int32_t>()[i] = static_cast<int32_t>(product[i]);
  outputs[0] = std::move(y);
  return Status::ok();
}

Status qlinear_matmul_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const Tensor* a, required_input(node, inputs, 0, "a"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* a_scale, required_input(node, inputs, 1, "a_scale"));
  const Tensor* a_zero_point = optional_input(inputs, 2);
  QDQRT_ASSIGN_OR_RETURN(const Tensor* b, required_input(node, inputs, 3, "b"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* b_scale, required_input(node, inputs, 4, "b_scale"));
  const Tensor* b_zero_point = optional_input(inputs, 5);
  QDQRT_ASSIGN_OR_RETURN(const Tensor* y_scale, required_input(node, inputs, 6, "y_scale"));
  const Tensor* y_zero_point = optional_input(inputs, 7);
  QDQRT_RETURN_IF_ERROR(expect_8bit(node, *a, "input a"));
  QDQRT_RETURN_IF_ERROR(expect_8bit(node, *b, "input b"));
  QDQRT_RETURN_IF_ERROR(expect_same_dtype(node, a_zero_point, "a_zero_point", *a, "a"));
  QDQRT_RETURN_IF_ERROR(expect_same_dtype(node, b_zero_point, "b_zero_point", *b, "b"));
  for (const auto& [tensor, role] : {std::pair{a_scale, "a_scale"}, {b_scale, "b_scale"}, {y_scale, "y_scale"}}) {
    QDQRT_RETURN_IF_ERROR(expect_dtype(node, *tensor, role, {DataType::kFloat}));
  }
  QDQRT_ASSIGN_OR_RETURN(DataType output_dtype, qlinear_output_dtype(node, y_zero_point, *a));
  QDQRT_ASSIGN_OR_RETURN(IntegerMatMulOperands operands, integer_matmul_operands(node, *a, a_zero_point, *b, b_zero_point));
  const MatMulPlan& plan = operands.plan;
  // a and y parameters: per tensor or per row; b parameters: per tensor or per column.
  QDQRT_ASSIGN_OR_RETURN(std::vector<double> a_scales, per_channel(node, a_scale, plan.m, "a_scale"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<double> b_scales, per_channel(node, b_scale, plan.n, "b_scale"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<double> y_scales, per_channel(node, y_scale, plan.m, "y_scale"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> y_zero, per_channel_ints(node, y_zero_point, plan.m, "y_zero_point"));
  std::vector<int64_t> product = batched_matmul(operands.a, operands.b, plan);
  const auto range = integer_range(output_dtype);
  Tensor y(output_dtype, plan.output_shape);
  for (size_t i = 0; i < product.size(); ++i) {
    const size_t row = (i / static_cast<size_t>(plan.n)) % static_cast<size_t>(plan.m);
    const size_t column = i % static_cast<size_t>(plan.n);
    const float multiplier =
        static_cast<float>(a_scales[row]) * static_cast<float>(b_scales[column]) / static_cast<float>(y_scales[row]);
    const double value = static_cast<double>(static_cast<int32_t>(product[i])) * static_cast<double>(multiplier);
    store_integer(y, static_cast<int64_t>(i), quantize_value(value, y_zero[row], range));
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

}  // namespace

void register_quantize_kernels(KernelRegistry& registry) {
  registry.add("", "QuantizeLinear", quantize_linear_kernel);
  registry.add("", "DequantizeLinear", dequantize_linear_kernel);
  registry.add("", "DynamicQuantizeLinear", dynamic_quantize_linear_kernel);
  registry.add("", "QLinearConv", qlinear_conv_kernel);
  registry.add("", "ConvInteger", conv_integer_kernel);
  registry.add("", "QLinearMatMul", qlinear_matmul_kernel);
  registry.add("", "MatMulInteger", matmul_integer_kernel);
}

}  // namespace qdqrt
