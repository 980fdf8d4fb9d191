// fused depthwise: a depthwise conv fused with the 1x1 convs around it (a FusedDepthwiseConv node
// of the optimizer, lowered by depthwise_chain.cpp): the 1x1 expansion before it (params under kExPrefix) and/or the 1x1 projection after it
// (then the projection's params are the layer's own and the depthwise's are under kDwPrefix).
// Work items are units of a few output rows (an even number of equal units where the height
// allows, so two threads take equal halves); a call runs its consecutive units in bands of about
// kBandPixels depthwise output pixels. Per band, the expansion
// computes the input rows the band's windows read into per-thread scratch (rows a previous band of
// the same call computed are kept: moved to the front, not recomputed), the depthwise writes the
// band to scratch (or to the output without a projection), and the projection's GEMM reads it
// there. MobileNetV2's 112x112 and 56x56 intermediates (1.2-4.8 MB) then stay in L1/L2 instead of
// going through L3. The same kernels and sums as the separate layers: bit-identical.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "engine/layers/float_conv/conv.h"

namespace qdqrt::engine::fp32::conv {

namespace {

constexpr int64_t kBandPixels = 112;
int64_t band_rows(int64_t out_width, int64_t out_height) {
  return std::clamp<int64_t>(kBandPixels / std::max<int64_t>(out_width, 1), 1, std::max<int64_t>(out_height, 1));
}

}  // namespace

int64_t fused_unit_rows(int64_t out_width, int64_t out_height) {
  const int64_t height = std::max<int64_t>(out_height, 1);
  const int64_t band = band_rows(out_width, out_height);
  // Items of a whole band when the bands already halve evenly; otherwise the largest unit that
  // makes an even number of equal items (28 rows in bands of 4 are 7 items, 3 and 4 per thread: one
  // waits 14% of the layer for the other; in units of 2 rows, 7 and 7, each run in bands of 4),
  // as long as whole units still fill 3/4 of a band (a call's bands are whole units).
  for (int64_t rows = band; rows >= 1; --rows) {
    if (height % (2 * rows) == 0 && 4 * (band / rows) * rows >= 3 * band) return rows;
  }
  return band;
}

namespace {
int64_t align16(int64_t floats) { return (floats + 15) / 16 * 16; }
// Expanded input rows one band reads.
int64_t expanded_rows(int64_t band, int64_t kernel_h, int64_t stride_h, int64_t dilation_h, int64_t height) {
  return std::min(height, (band - 1) * stride_h + (kernel_h - 1) * dilation_h + 1);
}

}  // namespace

FusedScratch fused_scratch(bool expand, bool project, int64_t channels, int64_t width, int64_t height,
                           int64_t out_width, int64_t out_height, int64_t kernel_h, int64_t stride_h,
                           int64_t dilation_h) {
  const int64_t rows = band_rows(out_width, out_height);
  FusedScratch scratch;
  if (expand)
    scratch.expanded = align16(expanded_rows(rows, kernel_h, stride_h, dilation_h, height) * width * channels);
  if (project) scratch.band = align16(rows * out_width * channels);
  return scratch;
}

bool is_fused_depthwise(const Params& layer_params) {
  return layer_params.has(std::string(kDwPrefix) + std::string(params::kConvMode.key())) ||
         layer_params.has(std::string(kExPrefix) + std::string(params::kConvMode.key()));
}

namespace {

class FusedDepthwiseLayer final : public Layer {
 public:
  FusedDepthwiseLayer(const kernels::SconvGeometry& dw_geometry, std::optional<kernels::PackedSgemm> expand,
                      kernels::Fp32Epilogue expand_epilogue, kernels::PackedDepthwiseF32 dw,
                      kernels::Fp32Epilogue dw_epilogue, std::optional<kernels::PackedSgemm> project,
                      kernels::Fp32Epilogue project_epilogue, FusedScratch scratch, int32_t input, int32_t residual,
                      int32_t output, int32_t row_sums, kernels::Fp32ChannelSumsF32Fn channel_sums)
      : geometry_(dw_geometry),
        expand_(std::move(expand)),
        expand_epilogue_(expand_epilogue),
        dw_(std::move(dw)),
        dw_epilogue_(dw_epilogue),
        project_(std::move(project)),
        project_epilogue_(project_epilogue),
        scratch_(scratch),
        input_(input),
        residual_(residual),
        output_(output),
        row_sums_(row_sums),
        channel_sums_(channel_sums),
        band_rows_(band_rows(dw_geometry.output_width, dw_geometry.output_height)),
        unit_rows_(fused_unit_rows(dw_geometry.output_width, dw_geometry.output_height)) {}

  WorkShape work(const RunState& state) const override {
    const double pixels = static_cast<double>(unit_rows_ * geometry_.output_width);
    const double taps = static_cast<double>(geometry_.kernel_height * geometry_.kernel_width);
    double macs_per_pixel = kDepthwiseCostFactor * taps * dw_.channels;
    if (project_) macs_per_pixel += static_cast<double>(project_->n) * dw_.channels;
    if (expand_) {
      macs_per_pixel +=
          static_cast<double>(geometry_.stride_height * geometry_.stride_width) * expand_->channels * dw_.channels;
    }
    return {.items = state.dim(input_, 0) * units(), .ops_per_item = 2.0 * pixels * macs_per_pixel};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const override {
    float* expanded = reinterpret_cast<float*>(scratch.data());
    float* band = expanded + scratch_.expanded;
    const float* x = state.data<float>(input_);
    float* y = state.data<float>(output_);
    const int64_t width = geometry_.output_width, channels = dw_.channels;
    const int64_t in_row = static_cast<int64_t>(geometry_.input_width) * channels;  // floats per expanded row
    kernels::Fp32Epilogue epilogue = project_epilogue_;
    const float* residual = residual_ >= 0 ? state.data<float>(residual_) : nullptr;
    int64_t cached_image = -1, cached_begin = 0, cached_end = 0;  // expanded rows in `expanded`
    // Bands of up to units_per_band() consecutive units of one image.
    for (int64_t item = begin; item < end;) {
      const int64_t image = item / units(), unit = item % units();
      const int64_t band_units = std::min({units_per_band(), units() - unit, end - item});
      const int64_t oy_begin = unit * unit_rows_;
      const int64_t oy_end = std::min<int64_t>((unit + band_units) * unit_rows_, geometry_.output_height);
      item += band_units;
      const int64_t row_begin = image * geometry_.output_height + oy_begin, row_end = row_begin + oy_end - oy_begin;
      const int64_t first_pixel = row_begin * width, pixels = (row_end - row_begin) * width;
      kernels::SconvArgs dw_args{x, band, channels, first_pixel};
      kernels::SconvGeometry geometry = geometry_;
      if (expand_) {
        const int64_t top = oy_begin * geometry_.stride_height - geometry_.pad_top;
        const int64_t y0 = std::clamp<int64_t>(top, 0, geometry_.input_height);
        const int64_t y1 = std::clamp<int64_t>((oy_end - 1) * geometry_.stride_height - geometry_.pad_top +
                                                   (geometry_.kernel_height - 1) * geometry_.dilation_height + 1,
                                               y0, geometry_.input_height);
        int64_t from = y0;
        if (cached_image == image && y0 >= cached_begin && y0 < cached_end) {
          // The rows the previous band computed: to the front.
          std::memmove(expanded, expanded + (y0 - cached_begin) * in_row,
                       static_cast<size_t>((cached_end - y0) * in_row) * sizeof(float));
          from = cached_end;
        }
        if (y1 > from) {
          const int64_t cin = expand_->channels;
          kernels::run_sgemm(*expand_, x + (image * geometry_.input_height + from) * geometry_.input_width * cin, cin,
                             expanded + (from - y0) * in_row, channels, expand_epilogue_, 0,
                             (y1 - from) * geometry_.input_width, 0, static_cast<int>(channels));
        }
        cached_image = image, cached_begin = y0, cached_end = std::max(y1, from);
        // The depthwise reads this image's rows [y0, y1) from the buffer.
        geometry.input_image_stride = 0;
        dw_args.input = expanded;
        dw_args.input_row_offset = static_cast<int>(y0);
      }
      if (!project_) {
        dw_args.output = y;
        dw_args.output_pixel_offset = 0;
        kernels::run_depthwise_f32(dw_, geometry, dw_args, dw_epilogue_, row_begin, row_end);
        if (row_sums_ >= 0) {
          write_row_sums(channel_sums_, y, width, channels, row_begin, row_end, 0, channels,
                         state.data<float>(row_sums_));
        }
        continue;
      }
      kernels::run_depthwise_f32(dw_, geometry, dw_args, dw_epilogue_, row_begin, row_end);
      const int64_t out_channels = project_->n;
      if (residual) epilogue.residual = residual + first_pixel * out_channels;
      kernels::run_sgemm(*project_, band, channels, y + first_pixel * out_channels, out_channels, epilogue, 0, pixels,
                         0, static_cast<int>(out_channels));
    }
  }

 private:
  int64_t units() const { return (geometry_.output_height + unit_rows_ - 1) / unit_rows_; }
  int64_t units_per_band() const { return std::max<int64_t>(band_rows_ / unit_rows_, 1); }

  kernels::SconvGeometry geometry_;
  std::optional<kernels::PackedSgemm> expand_;
  kernels::Fp32Epilogue expand_epilogue_;
  kernels::PackedDepthwiseF32 dw_;
  kernels::Fp32Epilogue dw_epilogue_;
  std::optional<kernels::PackedSgemm> project_;
  kernels::Fp32Epilogue project_epilogue_;
  FusedScratch scratch_;
  int32_t input_, residual_, output_;
  int32_t row_sums_;  // without a projection: output 1, [N, OH, C] per-row channel sums, or -1
  kernels::Fp32ChannelSumsF32Fn channel_sums_;
  int64_t band_rows_;  // the most rows one band computes (scratch holds one band)
  int64_t unit_rows_;  // rows per work item, at most band_rows_
};

// A 1x1 stride-1 igemm conv's params under `prefix` (the expansion or the projection of a fused
// depthwise): weights for `in_channels` -> `out_channels`, its epilogue.
Result<std::pair<kernels::PackedSgemm, kernels::Fp32Epilogue>> bind_pointwise_part(const BindContext& context,
                                                                                   std::string_view prefix,
                                                                                   int64_t in_channels,
                                                                                   int64_t out_channels) {
  QDQRT_ASSIGN_OR_RETURN(int64_t mode, params::kConvMode.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(int64_t group, params::kGroup.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(auto kernel, params::kKernel.read(context, 2, prefix));
  QDQRT_ASSIGN_OR_RETURN(auto strides, params::kStrides.read(context, 2, prefix));
  QDQRT_ASSIGN_OR_RETURN(auto pads, params::kPads.read(context, 4, prefix));
  if (static_cast<ConvMode>(mode) != ConvMode::kIgemm || group != 1 || kernel != std::vector<int64_t>{1, 1} ||
      strides != std::vector<int64_t>{1, 1} || pads != std::vector<int64_t>(4, 0)) {
    return context.error(fmt::format("the fused '{}' part is not a 1x1 stride-1 igemm conv", prefix));
  }
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, read_packed_isa(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(const kernels::Fp32Epilogue epilogue, read_activation(context, prefix));
  const int n = static_cast<int>(out_channels);
  QDQRT_ASSIGN_OR_RETURN(const float* weights,
                         params::kWeights.read(context, kernels::packed_sgemm_floats(n, in_channels, isa), prefix));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, kernels::sgemm_padded_n(n, isa), prefix));
  return std::pair{kernels::packed_sgemm_view(n, 1, static_cast<int>(in_channels), isa, weights, bias, false),
                   epilogue};
}

}  // namespace

// The fused depthwise (FusedDepthwiseLayer): input 0 is the first part's input, input 1 the
// projection's residual.
Result<std::unique_ptr<Layer>> bind_fused_depthwise(const BindContext& context) {
  const Params& layer_params = context.layer().params;
  const bool project = layer_params.has(std::string(kDwPrefix) + std::string(params::kConvMode.key()));
  const bool expand = layer_params.has(std::string(kExPrefix) + std::string(params::kConvMode.key()));
  const std::string_view dw_prefix = project ? kDwPrefix : "";
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, 4, Layout::kNhwc));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, 4, Layout::kNhwc));
  if (x->shape[0] != y->shape[0] || batch_layout_of(*x) != batch_layout_of(*y) || !batch_leads(*x)) {
    return context.error("input and output batch differ");
  }
  if (context.layer().inputs.size() > 2 || (!project && context.has_input(1))) {
    return context.error("at most an input and the projection's residual");
  }
  QDQRT_ASSIGN_OR_RETURN(int64_t dw_mode, params::kConvMode.read(context, dw_prefix));
  QDQRT_ASSIGN_OR_RETURN(int64_t channels, kFusedChannels.read(context, kDwPrefix));
  QDQRT_ASSIGN_OR_RETURN(int64_t dw_group, params::kGroup.read(context, dw_prefix));
  QDQRT_ASSIGN_OR_RETURN(auto kernel, params::kKernel.read(context, 2, dw_prefix));
  QDQRT_ASSIGN_OR_RETURN(auto strides, params::kStrides.read(context, 2, dw_prefix));
  QDQRT_ASSIGN_OR_RETURN(auto dilations, params::kDilations.read(context, 2, dw_prefix));
  QDQRT_ASSIGN_OR_RETURN(auto pads, params::kPads.read(context, 4, dw_prefix));
  const int64_t in_channels = x->shape[1], height = x->shape[2], width = x->shape[3];
  const int64_t out_channels = y->shape[1], out_height = y->shape[2], out_width = y->shape[3];
  if (static_cast<ConvMode>(dw_mode) != ConvMode::kDepthwiseNhwc || dw_group != channels ||
      (!expand && in_channels != channels) || (!project && out_channels != channels)) {
    return context.error(fmt::format("a fused depthwise of {} channels does not fit input {} and output {}", channels,
                                     shape_to_string(x->shape), shape_to_string(y->shape)));
  }
  if (in_channels > INT32_MAX / 2 || out_channels > INT32_MAX / 2 || height > INT32_MAX / 2 || width > INT32_MAX / 2 ||
      kernel[0] * kernel[1] > kernels::kSgemmMaxTaps || pads[0] >= kernel[0] * dilations[0] ||
      pads[1] >= kernel[1] * dilations[1] ||
      (height + pads[0] + pads[2] - dilations[0] * (kernel[0] - 1) - 1) / strides[0] + 1 != out_height ||
      (width + pads[1] + pads[3] - dilations[1] * (kernel[1] - 1) - 1) / strides[1] + 1 != out_width) {
    return context.error(fmt::format("output {} does not follow from input {} and the depthwise window",
                                     shape_to_string(y->shape), shape_to_string(x->shape)));
  }
  const FusedScratch scratch = fused_scratch(expand, project, channels, width, height, out_width, out_height, kernel[0],
                                             strides[0], dilations[0]);
  if (scratch.bytes() > context.layer().scratch_bytes) {
    return context.error(fmt::format("scratch_bytes {} is less than the {} the fused bands need",
                                     context.layer().scratch_bytes, scratch.bytes()));
  }
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa dw_isa, read_packed_isa(context, dw_prefix));
  QDQRT_ASSIGN_OR_RETURN(const kernels::Fp32Epilogue dw_epilogue, read_activation(context, dw_prefix));
  const int taps = static_cast<int>(kernel[0] * kernel[1]);
  const int64_t padded = kernels::depthwise_f32_padded_channels(static_cast<int>(channels));
  QDQRT_ASSIGN_OR_RETURN(const float* dw_weights, params::kWeights.read(context, padded * taps, dw_prefix));
  QDQRT_ASSIGN_OR_RETURN(const float* dw_bias, params::kBias.read(context, padded, dw_prefix));
  std::optional<kernels::PackedSgemm> expand_gemm, project_gemm;
  kernels::Fp32Epilogue expand_epilogue, project_epilogue;
  if (expand) {
    QDQRT_ASSIGN_OR_RETURN(auto part, bind_pointwise_part(context, kExPrefix, in_channels, channels));
    expand_gemm = std::move(part.first);
    expand_epilogue = part.second;
  }
  int32_t residual = -1;
  if (project) {
    QDQRT_ASSIGN_OR_RETURN(auto part, bind_pointwise_part(context, "", channels, out_channels));
    project_gemm = std::move(part.first);
    project_epilogue = part.second;
    project_epilogue.residual_row_stride = out_channels;
    if (context.has_input(1)) {
      QDQRT_BIND_ASSIGN(const PlanTensor* r, context, context.input(1));
      QDQRT_RETURN_IF_ERROR(expect_tensor(context, *r, "residual", DataType::kFloat, 4, Layout::kNhwc));
      if (r->shape != y->shape || batch_layout_of(*r) != batch_layout_of(*y)) {
        return context.error(fmt::format("residual {} is not shaped like the output {}", shape_to_string(r->shape),
                                         shape_to_string(y->shape)));
      }
      residual = context.layer().inputs[1];
    }
  }
  int32_t row_sums = -1;
  if (context.layer().outputs.size() > 1) {
    if (project) return context.error("row sums of a depthwise fused with its projection");
    QDQRT_ASSIGN_OR_RETURN(row_sums, bind_row_sums(context, *y));
  }
  kernels::SconvGeometry geometry;
  geometry.input_height = static_cast<int>(height);
  geometry.input_width = static_cast<int>(width);
  geometry.input_pixel_stride = channels;
  geometry.input_image_stride = channels * height * width;
  geometry.kernel_height = static_cast<int>(kernel[0]);
  geometry.kernel_width = static_cast<int>(kernel[1]);
  geometry.stride_height = static_cast<int>(strides[0]);
  geometry.stride_width = static_cast<int>(strides[1]);
  geometry.pad_top = static_cast<int>(pads[0]);
  geometry.pad_left = static_cast<int>(pads[1]);
  geometry.dilation_height = static_cast<int>(dilations[0]);
  geometry.dilation_width = static_cast<int>(dilations[1]);
  geometry.output_height = static_cast<int>(out_height);
  geometry.output_width = static_cast<int>(out_width);
  return std::unique_ptr<Layer>(std::make_unique<FusedDepthwiseLayer>(
      geometry, std::move(expand_gemm), expand_epilogue,
      kernels::packed_depthwise_f32_view(static_cast<int>(channels), taps, dw_isa, dw_weights, dw_bias), dw_epilogue,
      std::move(project_gemm), project_epilogue, scratch, context.layer().inputs[0], residual,
      context.layer().outputs[0], row_sums, kernels::fp32_kernels(bind_isa(context.plan())).channel_sums_f32.fn));
}

}  // namespace qdqrt::engine::fp32::conv
