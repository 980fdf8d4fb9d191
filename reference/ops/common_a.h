// Helpers shared by the reference kernels of the quantize, conv, matmul, pool, normalization and
// resize families: input checks that name the node, axis normalization, numpy broadcasting, and
// the window geometry (output sizes and pads) of Conv and pooling.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/ops/conv.h"
#include "core/status.h"

namespace qdqrt::reference_a {

using Inputs = std::span<const Tensor* const>;

// The node's typed attribute struct; an error (not a crash) when the parser was not run.
template <class T>
Result<const T*> typed_attributes(const Node& node) {
  const T* attributes = dynamic_cast<const T*>(node.typed_attributes.get());
  if (attributes == nullptr) {
    return internal_error("{}: typed attributes missing (the op's attribute parser was not run)", node.describe());
  }
  return attributes;
}

// Input `index` (called `role` in messages); an error if absent.
Result<const Tensor*> required_input(const Node& node, Inputs inputs, size_t index, const char* role);
// Input `index`, or nullptr when absent (or an empty name).
const Tensor* optional_input(Inputs inputs, size_t index);

Status expect_dtype(const Node& node, const Tensor& tensor, const char* role, std::initializer_list<DataType> allowed);
Status expect_rank(const Node& node, const Tensor& tensor, const char* role, int64_t rank);
Status expect_rank_at_least(const Node& node, const Tensor& tensor, const char* role, int64_t rank);

// ONNX axis in [-rank, rank-1] -> [0, rank-1].
Result<int64_t> normalize_axis(const Node& node, int64_t axis, int64_t rank, const char* what);

// Element strides of a row-major shape.
std::vector<int64_t> row_major_strides(const Shape& shape);
// Numpy multidirectional broadcast of two shapes.
Result<Shape> broadcast_shapes(const Node& node, const Shape& a, const Shape& b);
// For every element of `output_shape` (row-major), the offset of the element of a tensor of
// shape `input_shape` that broadcasts onto it.
std::vector<int64_t> broadcast_offsets(const Shape& input_shape, const Shape& output_shape);

// All elements converted to double / int64 (any numeric dtype).
std::vector<double> to_doubles(const Tensor& tensor);
std::vector<int64_t> to_int64s(const Tensor& tensor);

// [lowest, highest] of an integer element type (int4: [-8, 7]).
std::pair<int64_t, int64_t> integer_range(DataType dtype);
// Writes an integer (already in range) into element `index` of an integer tensor.
void store_integer(Tensor& tensor, int64_t index, int64_t value);

// Output sizes and pads of a sliding window (Conv, pooling) over up to 3 spatial axes. Fewer
// spatial axes are padded at the front with size-1 axes (kernel 1, stride 1, no pads), so the
// kernels loop over exactly three.
struct WindowGeometry {
  int64_t spatial_rank = 0;  // the real number of spatial axes (1..3)
  int64_t input[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t strides[3] = {1, 1, 1};
  int64_t dilations[3] = {1, 1, 1};
  int64_t pads_begin[3] = {0, 0, 0};
  int64_t pads_end[3] = {0, 0, 0};
  int64_t output[3] = {1, 1, 1};
  // The real output spatial dims.
  Shape output_spatial() const;
};

struct WindowAttributes {
  AutoPad auto_pad = AutoPad::kNotSet;
  const std::vector<int64_t>* strides = nullptr;    // empty/null = 1
  const std::vector<int64_t>* dilations = nullptr;  // empty/null = 1
  const std::vector<int64_t>* pads = nullptr;       // empty/null = 0
  bool ceil_mode = false;
};

// input_spatial: the spatial dims of the input; kernel: the kernel extent per spatial axis.
Result<WindowGeometry> resolve_window(const Node& node, const Shape& input_spatial, const Shape& kernel,
                                      const WindowAttributes& attributes);

// ceil(numerator / denominator) for denominator > 0, clamped below at 0.
inline int64_t ceil_div_nonneg(int64_t numerator, int64_t denominator) {
  if (numerator <= 0) return 0;
  return (numerator + denominator - 1) / denominator;
}

// Shapes of a convolution (Conv, QLinearConv, ConvInteger), checked against the attributes.
struct ConvPlan {
  int64_t batch = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t group = 1;
  WindowGeometry geometry;
  Shape output_shape;  // [N, M, spatial...]
};
// x: [N, C, spatial...], w: [M, C/group, kernel...].
Result<ConvPlan> plan_conv(const Node& node, const Shape& x_shape, const Shape& w_shape,
                           const ConvAttributes& attributes);

// Direct convolution on values already converted to the accumulator type (double for float
// Conv, int64 for the integer convs, zero-points subtracted). Out-of-input taps read 0.
// Returns [N, M, oD, oH, oW] row-major. The innermost loop runs over output columns.
template <class Acc>
std::vector<Acc> convolve(const std::vector<Acc>& x, const std::vector<Acc>& w, const ConvPlan& plan) {
  const WindowGeometry& g = plan.geometry;
  const int64_t channels_per_group = plan.in_channels / plan.group;
  const int64_t outputs_per_group = plan.out_channels / plan.group;
  const int64_t in_size = g.input[0] * g.input[1] * g.input[2];
  const int64_t out_size = g.output[0] * g.output[1] * g.output[2];
  const int64_t kernel_size = g.kernel[0] * g.kernel[1] * g.kernel[2];
  std::vector<Acc> out(static_cast<size_t>(plan.batch * plan.out_channels * out_size), Acc(0));
  for (int64_t n = 0; n < plan.batch; ++n) {
    for (int64_t m = 0; m < plan.out_channels; ++m) {
      const int64_t group_index = m / outputs_per_group;
      Acc* out_plane = out.data() + (n * plan.out_channels + m) * out_size;
      for (int64_t c = 0; c < channels_per_group; ++c) {
        const int64_t input_channel = group_index * channels_per_group + c;
        const Acc* in_plane = x.data() + (n * plan.in_channels + input_channel) * in_size;
        const Acc* weights = w.data() + (m * channels_per_group + c) * kernel_size;
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
          for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
            for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
              const Acc weight = weights[(kd * g.kernel[1] + kh) * g.kernel[2] + kw];
              for (int64_t od = 0; od < g.output[0]; ++od) {
                const int64_t id = od * g.strides[0] - g.pads_begin[0] + kd * g.dilations[0];
                if (id < 0 || id >= g.input[0]) continue;
                for (int64_t oh = 0; oh < g.output[1]; ++oh) {
                  const int64_t ih = oh * g.strides[1] - g.pads_begin[1] + kh * g.dilations[1];
                  if (ih < 0 || ih >= g.input[1]) continue;
                  const Acc* in_row = in_plane + (id * g.input[1] + ih) * g.input[2];
                  Acc* out_row = out_plane + (od * g.output[1] + oh) * g.output[2];
                  // Only the output columns whose tap lands inside the input row.
                  const int64_t first = ceil_div_nonneg(g.pads_begin[2] - kw * g.dilations[2], g.strides[2]);
                  const int64_t last = std::min(
                      g.output[2], ceil_div_nonneg(g.input[2] + g.pads_begin[2] - kw * g.dilations[2], g.strides[2]));
                  const int64_t column_offset = kw * g.dilations[2] - g.pads_begin[2];
                  for (int64_t ow = first; ow < last; ++ow) {
                    out_row[ow] += in_row[ow * g.strides[2] + column_offset] * weight;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

// Numpy matmul shapes: 1-D A is a row vector, 1-D B a column vector (their unit axis dropped
// from the output); leading batch axes broadcast.
struct MatMulPlan {
  int64_t m = 1, k = 1, n = 1;
  Shape output_shape;
  std::vector<int64_t> a_offsets;  // per output batch, the first element of its A matrix
  std::vector<int64_t> b_offsets;
};
Result<MatMulPlan> plan_matmul(const Node& node, const Shape& a_shape, const Shape& b_shape);

// Batched product of values already converted to the accumulator type; returns the output's
// elements row-major.
template <class Acc>
std::vector<Acc> batched_matmul(const std::vector<Acc>& a, const std::vector<Acc>& b, const MatMulPlan& plan) {
  const size_t batches = plan.a_offsets.size();
  std::vector<Acc> out(batches * static_cast<size_t>(plan.m * plan.n), Acc(0));
  for (size_t batch = 0; batch < batches; ++batch) {
    const Acc* a_matrix = a.data() + plan.a_offsets[batch];
    const Acc* b_matrix = b.data() + plan.b_offsets[batch];
    Acc* out_matrix = out.data() + static_cast<int64_t>(batch) * plan.m * plan.n;
    for (int64_t i = 0; i < plan.m; ++i) {
      Acc* out_row = out_matrix + i * plan.n;
      for (int64_t p = 0; p < plan.k; ++p) {
        const Acc a_value = a_matrix[i * plan.k + p];
        const Acc* b_row = b_matrix + p * plan.n;
        for (int64_t j = 0; j < plan.n; ++j) out_row[j] += a_value * b_row[j];
      }
    }
  }
  return out;
}

}  // namespace qdqrt::reference_a
