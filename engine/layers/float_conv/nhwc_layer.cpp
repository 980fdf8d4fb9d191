// The layer of the four NHWC fp32 Conv implementations (igemm, winograd, direct_nchw,
// depthwise_nhwc): work split, the kernels' epilogue (bias, clamp, activation, residual), the
// channel gate of a 1x1 igemm conv and a depthwise's row sums. Each implementation's file checks
// its geometry and reads its packed weights (ConvImplementation::check, read_weights).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "engine/layers/float_conv/conv.h"
#include "engine/plan_aliases.h"
#include "kernels/fp32/fp32_grouped.h"
#include "kernels/fp32/fp32_live_taps.h"

namespace qdqrt::engine::fp32::conv {

namespace {

class NhwcConvLayer final : public Layer {
 public:
  NhwcConvLayer(const ConvGeometry& g, kernels::PackedSgemm gemm, kernels::PackedGroupedSgemm grouped,
                kernels::PackedDepthwiseF32 depthwise,
                kernels::PackedWinogradF32 winograd, float low, float high, kernels::Fp32EpilogueActivation activation,
                int32_t input, int32_t residual, int32_t gate, int32_t output, int32_t row_sums,
                kernels::Fp32ChannelSumsF32Fn channel_sums, int64_t output_row_stride)
      : g_(g),
        gemm_(std::move(gemm)),
        grouped_(std::move(grouped)),
        depthwise_(std::move(depthwise)),
        winograd_(std::move(winograd)),
        input_(input),
        residual_(residual),
        gate_(gate),
        output_(output),
        row_sums_(row_sums),
        channel_sums_(channel_sums),
        output_row_stride_(output_row_stride) {
    epilogue_.activation = activation;
    epilogue_.min = low;
    epilogue_.max = high;
    epilogue_.residual_row_stride = g.out_channels;
    geometry_ = conv_geometry(g);
    // The igemm's tile (a grouped conv's parts share it).
    const kernels::PackedSgemm& tiled = !is_grouped() ? gemm_ : grouped_tiled();
    mr_ = tiled.mr;
    nr_ = tiled.nr;
    // A group-1 igemm whose taps read only padding for part of the output (dilated convs on small
    // maps) leaves those taps out per row tile: same sums (kernels/fp32/fp32_live_taps.h).
    if (g_.mode == ConvMode::kIgemm && g_.group == 1 && kernels::sconv_live_taps_apply(gemm_, geometry_)) {
      live_fraction_ = kernels::sconv_live_tap_fraction(geometry_, gemm_.mr);
    }
  }

  WorkShape work(const RunState& state) const override {
    const ColumnBlockSplit split = work_split(state);
    const double taps = static_cast<double>(g_.kernel_h * g_.kernel_w);
    const double item_pixels = g_.mode == ConvMode::kDepthwiseNhwc || g_.mode == ConvMode::kDirectNchw
                                   ? static_cast<double>(g_.out_width)
                               : g_.mode == ConvMode::kWinograd ? winograd_.mr * 4.0 / 2.25  // multiplies saved
                                                                : mr_;
    const double item_channels = static_cast<double>(g_.out_channels) / static_cast<double>(split.column_blocks);
    // Depthwise ran at about a third of the GEMM's rate (one multiply-add per loaded input); with
    // the window kernel most layers run at half to the full rate, yet 3x still measured best
    // (against 1x and 1.5x, 2 threads): its operations count 3x, so MobileNet's 7x7 and 14x14
    // ones (0.7-1.4 M multiply-adds) split in two at 2 threads instead of leaving one thread idle.
    // A grouped conv multiplies by the channels its half panels or blocks read (zeros included).
    const double depth = g_.mode == ConvMode::kDepthwiseNhwc ? kDepthwiseCostFactor * taps
                         : is_grouped() ? kernels::grouped_sgemm_depth(grouped_.layout, grouped_tiled().isa)
                                                             : taps * static_cast<double>(g_.channels) * live_fraction_;
    return {.items = split.items(), .ops_per_item = 2.0 * item_pixels * item_channels * depth};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const override {
    const kernels::SconvArgs args{state.data<float>(input_), state.data<float>(output_), output_row_stride_};
    kernels::Fp32Epilogue epilogue = epilogue_;
    if (residual_ >= 0) epilogue.residual = state.data<float>(residual_);
    const int64_t pixels = state.dim(input_, 0) * g_.out_height * g_.out_width;
    work_split(state).for_each_call(
        begin, end, [&](int64_t first, int64_t last, int64_t column_begin, int64_t column_end) {
          if (g_.mode == ConvMode::kDepthwiseNhwc) {
            kernels::run_depthwise_f32(depthwise_, geometry_, args, epilogue, first, last,
                                       static_cast<int>(column_begin), static_cast<int>(column_end));
            if (row_sums_ >= 0) {
              write_row_sums(channel_sums_, args.output, g_.out_width, g_.out_channels, first, last, column_begin,
                             column_end, state.data<float>(row_sums_));
            }
          } else if (g_.mode == ConvMode::kDirectNchw) {
            kernels::run_direct_nchw_f32(gemm_, geometry_, args, epilogue, first, last, static_cast<int>(column_begin),
                                         static_cast<int>(column_end));
          } else if (g_.mode == ConvMode::kWinograd) {
            const int64_t tiles = kernels::winograd_f32_tiles(geometry_, state.dim(input_, 0));
            kernels::run_winograd_f32(winograd_, geometry_, args, epilogue, first * winograd_.mr,
                                      std::min(tiles, last * winograd_.mr), static_cast<int>(column_begin),
                                      static_cast<int>(column_end), reinterpret_cast<float*>(scratch.data()));
          } else if (is_grouped()) {
            kernels::run_grouped_sconv(grouped_, geometry_, args, epilogue, first * mr_, std::min(pixels, last * mr_),
                                       static_cast<int>(column_begin),
                                       static_cast<int>(column_end));
          } else if (gate_ >= 0) {
            run_gated(state, args, epilogue, first * gemm_.mr, std::min(pixels, last * gemm_.mr),
                      static_cast<int>(column_begin), static_cast<int>(column_end), scratch);
          } else if (live_fraction_ < 1.0) {
            kernels::run_sconv_live_taps(gemm_, geometry_, args, epilogue, first * gemm_.mr,
                                         std::min(pixels, last * gemm_.mr), static_cast<int>(column_begin),
                                         static_cast<int>(column_end));
          } else {
            kernels::run_sconv(gemm_, geometry_, args, epilogue, first * gemm_.mr, std::min(pixels, last * gemm_.mr),
                               static_cast<int>(column_begin), static_cast<int>(column_end));
          }
        });
  }

 private:
  // Row items: microkernel tiles of output pixels (igemm) or of 2x2 output tiles (winograd), output
  // rows (depthwise); columns split in panels or the depthwise kernel's channel blocks.
  ColumnBlockSplit work_split(const RunState& state) const {
    const int64_t batch = state.dim(input_, 0);
    if (g_.mode == ConvMode::kDepthwiseNhwc) {
      return ColumnBlockSplit(batch * g_.out_height, g_.out_channels, kernels::kDepthwiseF32ChannelBlock);
    }
    if (g_.mode == ConvMode::kDirectNchw) return ColumnBlockSplit(batch * g_.out_height, g_.out_channels, gemm_.nr);
    if (g_.mode == ConvMode::kWinograd) {
      const int64_t tiles = kernels::winograd_f32_tiles(geometry_, batch);
      return ColumnBlockSplit((tiles + winograd_.mr - 1) / winograd_.mr, g_.out_channels, winograd_.nr,
                              kWinogradFewRowsColumnBlocks);
    }
    return ColumnBlockSplit((batch * g_.out_height * g_.out_width + mr_ - 1) / mr_, g_.out_channels, nr_);
  }

  // An igemm conv of 1 < group < C: blocks of groups, each a dense conv (kernels/fp32/fp32_grouped.h).
  bool is_grouped() const { return g_.mode == ConvMode::kIgemm && g_.group != 1; }
  const kernels::PackedSgemm& grouped_tiled() const { return grouped_.full.n > 0 ? grouped_.full : grouped_.tail; }

  // x * gate[image, channel] through the weights: per image of the rows, this call's columns'
  // panels scaled by the image's gate into scratch (a 1x1 stride-1 conv: the plain GEMM path,
  // which reads no zero row).
  void run_gated(const RunState& state, const kernels::SconvArgs& args, const kernels::Fp32Epilogue& epilogue,
                 int64_t m_begin, int64_t m_end, int column_begin, int column_end, std::span<uint8_t> scratch) const {
    const float* gate = state.data<float>(gate_);
    float* scaled = reinterpret_cast<float*>(scratch.data());
    const int64_t image_pixels = g_.out_height * g_.out_width;
    for (int64_t image = m_begin / image_pixels; image * image_pixels < m_end; ++image) {
      kernels::scale_packed_sgemm_channels(gemm_, gate + image * g_.channels, column_begin, column_end, scaled);
      const kernels::PackedSgemm view =
          kernels::packed_sgemm_view(gemm_.n, gemm_.taps, gemm_.channels, gemm_.isa, scaled, gemm_.bias.data(), false);
      kernels::run_sconv(view, geometry_, args, epilogue, std::max(m_begin, image * image_pixels),
                         std::min(m_end, (image + 1) * image_pixels), column_begin, column_end);
    }
  }

  ConvGeometry g_;
  kernels::SconvGeometry geometry_;
  kernels::PackedSgemm gemm_;
  kernels::PackedGroupedSgemm grouped_;
  int mr_ = 0, nr_ = 0;  // the igemm's tile (igemm and grouped igemm)
  double live_fraction_ = 1.0;  // below 1: a group-1 igemm on run_sconv_live_taps, this share of the taps live
  kernels::PackedDepthwiseF32 depthwise_;
  kernels::PackedWinogradF32 winograd_;
  kernels::Fp32Epilogue epilogue_;
  int32_t input_, residual_, gate_, output_;
  int32_t row_sums_;  // depthwise_nhwc: output 1, [N, OH, C] per-row channel sums, or -1
  kernels::Fp32ChannelSumsF32Fn channel_sums_;
  int64_t output_row_stride_;  // floats between output pixels: out_channels, or a Concat's (strided output)
};

}  // namespace

Result<std::unique_ptr<Layer>> bind_nhwc_conv(const BindContext& context, const ConvGeometry& g,
                                              const std::vector<int64_t>& pads, const PlanTensor& y) {
  const int64_t taps = g.kernel_h * g.kernel_w;
  if (taps > kernels::kSgemmMaxTaps)
    return context.error(fmt::format("{} kernel taps, at most {}", taps, kernels::kSgemmMaxTaps));
  const ConvImplementation* implementation = implementation_of(g.mode);
  QDQRT_RETURN_IF_ERROR(implementation->check(context, g));
  if (pads[0] >= g.kernel_h * g.dilation_h || pads[1] >= g.kernel_w * g.dilation_w || g.channels > INT32_MAX / 2 ||
      g.out_channels > INT32_MAX / 2 || g.height > INT32_MAX / 2 || g.width > INT32_MAX / 2) {
    return context.error("pads wider than the kernel or dims beyond the kernels' int range");
  }
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, read_packed_isa(context));
  QDQRT_ASSIGN_OR_RETURN(const kernels::Fp32Epilogue act, read_activation(context, ""));
  const float low = act.min, high = act.max;
  const kernels::Fp32EpilogueActivation activation = act.activation;
  int32_t residual = -1, gate = -1;
  if (context.layer().inputs.size() > 3) return context.error("at most an input, a residual and a gate");
  if (context.has_input(2)) {
    QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
    QDQRT_BIND_ASSIGN(const PlanTensor* s, context, context.input(2));
    if (!is_gateable(g)) return context.error("a channel gate needs a 1x1 stride-1 igemm conv without pads");
    if (s->dtype != DataType::kFloat || s->shape != Shape{x->shape[0], g.channels, 1, 1} ||
        batch_layout_of(*s) != batch_layout_of(*x) || s->batch_axis != 0 || s->batch_factor != 1) {
      return context.error(fmt::format("channel gate {} is not [N, {}, 1, 1] fp32 batched like the input",
                                       shape_to_string(s->shape), g.channels));
    }
    if (static_cast<int64_t>(scratch_floats(g, isa, true) * sizeof(float)) > context.layer().scratch_bytes) {
      return context.error(fmt::format("scratch_bytes {} is less than the {} the gated weights need",
                                       context.layer().scratch_bytes, scratch_floats(g, isa, true) * sizeof(float)));
    }
    gate = context.layer().inputs[2];
  }
  if (context.has_input(1)) {
    QDQRT_BIND_ASSIGN(const PlanTensor* r, context, context.input(1));
    QDQRT_RETURN_IF_ERROR(expect_tensor(context, *r, "residual", DataType::kFloat, 4, Layout::kNhwc));
    if (r->shape != y.shape || r->batched != y.batched) {
      return context.error(fmt::format("residual {} is not shaped like the output {}", shape_to_string(r->shape),
                                       shape_to_string(y.shape)));
    }
    residual = context.layer().inputs[1];
  }
  NhwcWeights weights;
  QDQRT_RETURN_IF_ERROR(implementation->read_weights(context, g, isa, weights));
  int32_t row_sums = -1;
  if (context.layer().outputs.size() > 1) {
    if (g.mode != ConvMode::kDepthwiseNhwc) return context.error("row sums are a depthwise_nhwc conv's second output");
    if (y.row_stride != 0) return context.error("a depthwise conv with row sums writes its output densely");
    QDQRT_ASSIGN_OR_RETURN(row_sums, bind_row_sums(context, y));
  }
  // A slice of a channels-last Concat (engine/plan_aliases.h): its pixels lie row_stride floats apart.
  if (y.row_stride != 0 && strided_row_length(context.plan(), y) != g.out_channels) {
    return context.error(fmt::format("output rows of {} at stride {} are not pixels of {} channels",
                                     strided_row_length(context.plan(), y), y.row_stride, g.out_channels));
  }
  const int64_t output_row_stride = y.row_stride != 0 ? y.row_stride : g.out_channels;
  return std::unique_ptr<Layer>(std::make_unique<NhwcConvLayer>(
      g, std::move(weights.gemm), std::move(weights.grouped), std::move(weights.depthwise), std::move(weights.winograd), low, high, activation,
      context.layer().inputs[0], residual, gate, context.layer().outputs[0], row_sums,
      kernels::fp32_kernels(bind_isa(context.plan())).channel_sums_f32.fn, output_row_stride));
}

}  // namespace qdqrt::engine::fp32::conv
