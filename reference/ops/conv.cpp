// Reference Conv and ConvTranspose (float32), accumulating in double.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/ops/conv.h"
#include "reference/kernel_registry.h"
#include "reference/ops/convolution.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt {

namespace {

using namespace reference;

// Adds bias B ([M]) to every output plane, then stores as float.
Status finish_with_bias(const Node& node, const Tensor* bias, int64_t batch, int64_t out_channels,
                        const std::vector<double>& accumulators, Tensor& output) {
  int64_t plane = out_channels == 0 || batch == 0 ? 0 : output.numel() / (batch * out_channels);
  std::vector<double> bias_values(static_cast<size_t>(out_channels), 0.0);
  if (bias != nullptr) {
    QDQRT_RETURN_IF_ERROR(expect_dtype(node, *bias, "bias B", {DataType::kFloat}));
    if (bias->rank() != 1 || bias->dim(0) != out_channels) {
      return invalid_argument("{}: bias B must have shape [{}], got {}", node.describe(), out_channels,
                              shape_to_string(bias->shape()));
    }
    bias_values = to_doubles(*bias);
  }
  float* out = output.data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < out_channels; ++m) {
      int64_t base = (n * out_channels + m) * plane;
      for (int64_t i = 0; i < plane; ++i) {
        out[base + i] = static_cast<float>(accumulators[static_cast<size_t>(base + i)] + bias_values[static_cast<size_t>(m)]);
      }
    }
  }
  return Status::ok();
}

Status conv_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const ConvAttributes* typed, typed_attributes<ConvAttributes>(node));
  const ConvAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "X"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* w, required_input(node, inputs, 1, "W"));
  const Tensor* bias = optional_input(inputs, 2);
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input X", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *w, "weight W", {DataType::kFloat}));
  QDQRT_ASSIGN_OR_RETURN(ConvPlan plan, plan_conv(node, x->shape(), w->shape(), attributes));
  std::vector<double> accumulators = convolve(to_doubles(*x), to_doubles(*w), plan);
  Tensor output(DataType::kFloat, plan.output_shape);
  QDQRT_RETURN_IF_ERROR(finish_with_bias(node, bias, plan.batch, plan.out_channels, accumulators, output));
  outputs[0] = std::move(output);
  return Status::ok();
}

// Output sizes and pads of ConvTranspose along one spatial axis, following the ONNX spec.
struct TransposeAxis {
  int64_t input = 1, kernel = 1, stride = 1, dilation = 1, pad_begin = 0, output = 1;
};

Status conv_transpose_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const ConvTransposeAttributes* typed, typed_attributes<ConvTransposeAttributes>(node));
  const ConvTransposeAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "X"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* w, required_input(node, inputs, 1, "W"));
  const Tensor* bias = optional_input(inputs, 2);
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input X", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *w, "weight W", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(expect_rank_at_least(node, *x, "input X", 3));
  if (w->rank() != x->rank()) {
    return invalid_argument("{}: weight W has shape {}, expected rank {} like X {}", node.describe(),
                            shape_to_string(w->shape()), x->rank(), shape_to_string(x->shape()));
  }
  const int64_t spatial_rank = x->rank() - 2;
  if (spatial_rank > 3) return unsupported("{}: {} spatial axes (at most 3 supported)", node.describe(), spatial_rank);
  const int64_t batch = x->dim(0), in_channels = x->dim(1), group = attributes.group;
  if (w->dim(0) != in_channels || in_channels % group != 0) {
    return invalid_argument("{}: weight W {} must have X's {} input channels first, divisible by group {}",
                            node.describe(), shape_to_string(w->shape()), in_channels, group);
  }
  const int64_t outputs_per_group = w->dim(1);
  const int64_t out_channels = outputs_per_group * group;
  const int64_t inputs_per_group = in_channels / group;

  auto per_axis = [&](const std::vector<int64_t>& values, const char* key, size_t expected) -> Status {
    if (values.empty() || values.size() == expected) return Status::ok();
    return invalid_argument("{}: attribute '{}' has {} values, expected {}", node.describe(), key, values.size(), expected);
  };
  size_t rank = static_cast<size_t>(spatial_rank);
  QDQRT_RETURN_IF_ERROR(per_axis(attributes.strides, "strides", rank));
  QDQRT_RETURN_IF_ERROR(per_axis(attributes.dilations, "dilations", rank));
  QDQRT_RETURN_IF_ERROR(per_axis(attributes.pads, "pads", 2 * rank));
  QDQRT_RETURN_IF_ERROR(per_axis(attributes.output_padding, "output_padding", rank));
  QDQRT_RETURN_IF_ERROR(per_axis(attributes.kernel_shape, "kernel_shape", rank));
  // output_shape may list only the spatial dims or the full [N, C, spatial...] shape.
  std::vector<int64_t> output_shape = attributes.output_shape;
  if (output_shape.size() == rank + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  QDQRT_RETURN_IF_ERROR(per_axis(output_shape, "output_shape", rank));

  TransposeAxis axes[3];  // padded at the front to three axes, like WindowGeometry
  for (size_t i = 0; i < rank; ++i) {
    TransposeAxis& a = axes[3 - rank + i];
    a.input = x->dim(static_cast<int64_t>(i) + 2);
    a.kernel = w->dim(static_cast<int64_t>(i) + 2);
    if (!attributes.kernel_shape.empty() && attributes.kernel_shape[i] != a.kernel) {
      return invalid_argument("{}: attribute kernel_shape [{}] does not match weight W shape {}", node.describe(),
                              fmt::join(attributes.kernel_shape, ", "), shape_to_string(w->shape()));
    }
    a.stride = attributes.strides.empty() ? 1 : attributes.strides[i];
    a.dilation = attributes.dilations.empty() ? 1 : attributes.dilations[i];
    int64_t output_padding = attributes.output_padding.empty() ? 0 : attributes.output_padding[i];
    // The output size without any padding removed.
    int64_t full = a.stride * (a.input - 1) + output_padding + (a.kernel - 1) * a.dilation + 1;
    if (!output_shape.empty() || attributes.auto_pad == AutoPad::kSameUpper ||
        attributes.auto_pad == AutoPad::kSameLower) {
      a.output = output_shape.empty() ? a.input * a.stride : output_shape[i];
      int64_t total = std::max<int64_t>(0, full - a.output);
      // SAME_UPPER puts the odd padding unit at the end (removed from the output's tail).
      a.pad_begin = attributes.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
    } else if (attributes.auto_pad == AutoPad::kValid) {
      a.output = full;
    } else {
      int64_t pad_begin = attributes.pads.empty() ? 0 : attributes.pads[i];
      int64_t pad_end = attributes.pads.empty() ? 0 : attributes.pads[i + rank];
      a.pad_begin = pad_begin;
      a.output = full - pad_begin - pad_end;
    }
    if (a.output < 1) {
      return invalid_argument("{}: output size {} on spatial axis {} is not positive", node.describe(), a.output, i);
    }
  }

  Shape out_shape = {batch, out_channels};
  for (size_t i = 0; i < rank; ++i) out_shape.push_back(axes[3 - rank + i].output);
  const std::vector<double> x_values = to_doubles(*x);
  const std::vector<double> w_values = to_doubles(*w);
  std::vector<double> accumulators(static_cast<size_t>(shape_numel(out_shape)), 0.0);
  const int64_t in_size = axes[0].input * axes[1].input * axes[2].input;
  const int64_t out_size = axes[0].output * axes[1].output * axes[2].output;
  const int64_t kernel_size = axes[0].kernel * axes[1].kernel * axes[2].kernel;

  // Scatter: every input element adds weight-scaled copies into the output.
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < in_channels; ++c) {
      const int64_t group_index = c / inputs_per_group;
      const double* in_plane = x_values.data() + (n * in_channels + c) * in_size;
      for (int64_t mg = 0; mg < outputs_per_group; ++mg) {
        const int64_t m = group_index * outputs_per_group + mg;
        double* out_plane = accumulators.data() + (n * out_channels + m) * out_size;
        const double* weights = w_values.data() + (c * outputs_per_group + mg) * kernel_size;
        for (int64_t kd = 0; kd < axes[0].kernel; ++kd) {
          for (int64_t kh = 0; kh < axes[1].kernel; ++kh) {
            for (int64_t kw = 0; kw < axes[2].kernel; ++kw) {
              const double weight = weights[(kd * axes[1].kernel + kh) * axes[2].kernel + kw];
              for (int64_t id = 0; id < axes[0].input; ++id) {
                const int64_t od = id * axes[0].stride - axes[0].pad_begin + kd * axes[0].dilation;
                if (od < 0 || od >= axes[0].output) continue;
                for (int64_t ih = 0; ih < axes[1].input; ++ih) {
                  const int64_t oh = ih * axes[1].stride - axes[1].pad_begin + kh * axes[1].dilation;
                  if (oh < 0 || oh >= axes[1].output) continue;
                  const double* in_row = in_plane + (id * axes[1].input + ih) * axes[2].input;
                  double* out_row = out_plane + (od * axes[1].output + oh) * axes[2].output;
                  for (int64_t iw = 0; iw < axes[2].input; ++iw) {
                    const int64_t ow = iw * axes[2].stride - axes[2].pad_begin + kw * axes[2].dilation;
                    if (ow >= 0 && ow < axes[2].output) out_row[ow] += in_row[iw] * weight;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  Tensor output(DataType::kFloat, out_shape);
  QDQRT_RETURN_IF_ERROR(finish_with_bias(node, bias, batch, out_channels, accumulators, output));
  outputs[0] = std::move(output);
  return Status::ok();
}

}  // namespace

void register_conv_kernels(KernelRegistry& registry) {
  registry.add("", "Conv", conv_kernel);
  registry.add("", "ConvTranspose", conv_transpose_kernel);
}

}  // namespace qdqrt
