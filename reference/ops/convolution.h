// The convolution of the reference's Conv, ConvInteger, QLinearConv and the fused QConv: shapes
// checked against the attributes (the window from core/ops/window.h), then a direct
// convolution in the accumulator type.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/ops/conv.h"
#include "core/ops/window.h"
#include "core/status.h"

namespace qdqrt::reference {

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

}  // namespace qdqrt::reference
