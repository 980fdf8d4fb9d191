// The pieces every fp32 Conv implementation shares: geometry, epilogue params, row sums.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/ops/fused_conv.h"
#include "engine/layers/float_conv/conv.h"
#include "kernels/fp32/fp32_nhwc_conv_rule.h"

namespace qdqrt::engine::fp32::conv {

bool is_nhwc(ConvMode mode) {
  return mode == ConvMode::kIgemm || mode == ConvMode::kDepthwiseNhwc || mode == ConvMode::kWinograd ||
         mode == ConvMode::kDirectNchw;
}

void write_row_sums(kernels::Fp32ChannelSumsF32Fn channel_sums, const float* out, int64_t width, int64_t channels,
                    int64_t row_begin, int64_t row_end, int64_t c_begin, int64_t c_end, float* sums) {
  for (int64_t row = row_begin; row < row_end; ++row) {
    channel_sums(static_cast<size_t>(width), static_cast<size_t>(c_end - c_begin), static_cast<size_t>(channels),
                 out + row * width * channels + c_begin, sums + row * channels + c_begin);
  }
}

kernels::SconvGeometry conv_geometry(const ConvGeometry& g) {
  kernels::SconvGeometry geometry;
  geometry.input_height = static_cast<int>(g.height);
  geometry.input_width = static_cast<int>(g.width);
  geometry.input_pixel_stride = g.channels;
  geometry.input_image_stride = g.channels * g.height * g.width;
  geometry.kernel_height = static_cast<int>(g.kernel_h);
  geometry.kernel_width = static_cast<int>(g.kernel_w);
  geometry.stride_height = static_cast<int>(g.stride_h);
  geometry.stride_width = static_cast<int>(g.stride_w);
  geometry.pad_top = static_cast<int>(g.pad_top);
  geometry.pad_left = static_cast<int>(g.pad_left);
  geometry.dilation_height = static_cast<int>(g.dilation_h);
  geometry.dilation_width = static_cast<int>(g.dilation_w);
  geometry.output_height = static_cast<int>(g.out_height);
  geometry.output_width = static_cast<int>(g.out_width);
  return geometry;
}

bool is_gateable(const ConvGeometry& g) {
  return g.mode == ConvMode::kIgemm && g.group == 1 && g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
         g.pad_top == 0 && g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0;
}

int64_t scratch_floats(const ConvGeometry& g, kernels::Isa isa, bool gated) {
  if (gated) return kernels::packed_sgemm_floats(static_cast<int>(g.out_channels), g.channels, isa);
  if (g.mode == ConvMode::kWinograd) {
    return kernels::winograd_f32_scratch_floats(static_cast<int>(g.out_channels), static_cast<int>(g.channels), isa);
  }
  return g.mode == ConvMode::kGemm ? g.k() * g.tile_rows * g.out_width : 0;
}

bool winograd_applies(const ConvGeometry& g) {
  return g.group == 1 &&
         kernels::winograd_f32_applies(static_cast<int>(g.kernel_h), static_cast<int>(g.kernel_w),
                                       static_cast<int>(g.stride_h), static_cast<int>(g.stride_w),
                                       static_cast<int>(g.dilation_h), static_cast<int>(g.dilation_w),
                                       static_cast<int>(g.pad_top), static_cast<int>(g.pad_left),
                                       static_cast<int>(g.pad_bottom), static_cast<int>(g.pad_right));
}

int64_t winograd_tiles(const ConvGeometry& g, int64_t batch) {
  return (g.out_height + 1) / 2 * ((g.out_width + 1) / 2) * std::max<int64_t>(batch, 1);
}

Result<kernels::Fp32Epilogue> read_activation(const BindContext& context, std::string_view prefix) {
  kernels::Fp32Epilogue epilogue;
  QDQRT_ASSIGN_OR_RETURN(epilogue.min, params::kClipMin.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(epilogue.max, params::kClipMax.read(context, prefix));
  if (!(epilogue.min <= epilogue.max)) return context.error("act.min exceeds act.max");
  QDQRT_ASSIGN_OR_RETURN(epilogue.activation, params::kEpilogueFunction.read(context, prefix));
  return epilogue;
}

Result<int32_t> bind_row_sums(const BindContext& context, const PlanTensor& y) {
  if (context.layer().outputs.size() > 2) return context.error("at most an output and its row sums");
  QDQRT_BIND_ASSIGN(const PlanTensor* sums, context, context.output(1));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *sums, "row sums", DataType::kFloat, 3));
  if (sums->shape != Shape{y.shape[0], y.shape[2], y.shape[1]} || batch_layout_of(*sums) != batch_layout_of(y) ||
      !batch_leads(y)) {
    return context.error(fmt::format("row sums {} are not [N, OH, C] of the output {} batched like it",
                                     shape_to_string(sums->shape), shape_to_string(y.shape)));
  }
  return context.layer().outputs[1];
}

Status write_conv_epilogue(const Node& node, const FusedActivation& activation, ConvEpilogueFunction function,
                           PlanLayer& layer) {
  if (activation.kind == ActivationKind::kRelu) {
    params::kClipMin.write(layer, 0.0);
  } else if (activation.kind == ActivationKind::kClip) {
    params::kClipMin.write(layer, activation.min);
    params::kClipMax.write(layer, activation.max);
  } else if (activation.kind != ActivationKind::kNone) {
    return invalid_argument("{}: a conv epilogue takes Relu or Clip, not {}", node.describe(),
                            activation_kind_name(activation.kind));
  }
  switch (function) {
    case ConvEpilogueFunction::kNone: break;
    case ConvEpilogueFunction::kSigmoid:
      params::kEpilogueFunction.write(layer, kernels::Fp32EpilogueActivation::kSigmoid);
      break;
    case ConvEpilogueFunction::kHardSwish:
      params::kEpilogueFunction.write(layer, kernels::Fp32EpilogueActivation::kHardSwish);
      break;
    case ConvEpilogueFunction::kSiLU:
      params::kEpilogueFunction.write(layer, kernels::Fp32EpilogueActivation::kSilu);
      break;
  }
  return Status::ok();
}

void write_geometry(PlanLayer& layer, const ConvGeometry& g) {
  params::kGroup.write(layer, g.group);
  params::kKernel.write(layer, {g.kernel_h, g.kernel_w});
  params::kStrides.write(layer, {g.stride_h, g.stride_w});
  params::kDilations.write(layer, {g.dilation_h, g.dilation_w});
  params::kPads.write(layer, {g.pad_top, g.pad_left, g.pad_bottom, g.pad_right});
  params::kConvMode.write(layer, static_cast<int64_t>(g.mode));
}

std::optional<std::string> nhwc_kernels_decline(const ConvGeometry& g) {
  return kernels::fp32_nhwc_conv_declines({.channels = g.channels,
                                           .out_channels = g.out_channels,
                                           .height = g.height,
                                           .width = g.width,
                                           .group = g.group,
                                           .kernel_h = g.kernel_h,
                                           .kernel_w = g.kernel_w,
                                           .dilation_h = g.dilation_h,
                                           .dilation_w = g.dilation_w,
                                           .pad_top = g.pad_top,
                                           .pad_left = g.pad_left});
}

}  // namespace qdqrt::engine::fp32::conv
