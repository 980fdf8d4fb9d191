// The NCHW fp32 Conv implementations, for what the NHWC kernels do not take (more than
// kSgemmMaxTaps taps, groups other than 1 and C, dims beyond int):
//   depthwise_nchw  group == C == OC: direct per-channel loops. Items: (image, channel).
//   pointwise_nchw  1x1, stride 1, no pads (grouped): the GEMM reads X directly.
//   gemm_nchw       anything else: per group Y[oc, pixels] = W[oc, Cg*KH*KW] x
//                   im2col(X)[Cg*KH*KW, pixels] (Eigen), the im2col block of one tile of output
//                   rows in per-thread scratch.
// pointwise and gemm items: (image, group, tile of output rows, block of <= 64 output channels).
// Weights as the model stores them (OIHW), no epilogue.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "engine/layers/float_conv/conv.h"

namespace qdqrt::engine::fp32::conv {

namespace {

// Writes rows [oh_begin, oh_end) of im2col for channels [c_begin, c_begin + cg) of one image
// into col[k][pixel] (pixel = (oh - oh_begin) * OW + ow, row length `pixels`).
void im2col(const ConvGeometry& g, const float* image, int64_t c_begin, int64_t oh_begin, int64_t oh_end, float* col) {
  const int64_t pixels = (oh_end - oh_begin) * g.out_width;
  const int64_t plane = g.height * g.width;
  float* out = col;
  for (int64_t c = 0; c < g.in_per_group(); ++c) {
    const float* in_plane = image + (c_begin + c) * plane;
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const int64_t offset_w = kw * g.dilation_w - g.pad_left;
        // Output columns whose input column is inside [0, W).
        int64_t ow_begin = offset_w >= 0 ? 0 : (-offset_w + g.stride_w - 1) / g.stride_w;
        int64_t ow_end = g.width - 1 - offset_w < 0 ? 0 : (g.width - 1 - offset_w) / g.stride_w + 1;
        ow_begin = std::min(ow_begin, g.out_width);
        ow_end = std::clamp(ow_end, ow_begin, g.out_width);
        for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
          float* row = out + (oh - oh_begin) * g.out_width;
          const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
          if (ih < 0 || ih >= g.height) {
            std::fill_n(row, g.out_width, 0.0f);
            continue;
          }
          const float* in_row = in_plane + ih * g.width + offset_w;
          std::fill_n(row, ow_begin, 0.0f);
          if (g.stride_w == 1) {
            std::memcpy(row + ow_begin, in_row + ow_begin, static_cast<size_t>(ow_end - ow_begin) * sizeof(float));
          } else {
            for (int64_t ow = ow_begin; ow < ow_end; ++ow) row[ow] = in_row[ow * g.stride_w];
          }
          std::fill(row + ow_end, row + g.out_width, 0.0f);
        }
        out += pixels;
      }
    }
  }
}

// out[i] += weight * in[i * stride] for i < count: the depthwise inner loop. The engine is built
// for baseline x86-64; GCC compiles this function once per listed ISA and picks the clone for the
// running CPU when the program loads (same operations, so the same numbers on every clone).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void accumulate_taps(float* __restrict out, const float* __restrict in, float weight, int64_t count, int64_t stride) {
  if (stride == 1) {
    for (int64_t i = 0; i < count; ++i) out[i] += weight * in[i];
  } else if (stride == 2) {
    for (int64_t i = 0; i < count; ++i) out[i] += weight * in[2 * i];
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] += weight * in[i * stride];
  }
}

class ConvLayer final : public Layer {
 public:
  ConvLayer(ConvGeometry geometry, const float* weights, const float* bias, int32_t input, int32_t output,
            kernels::Fp32Kernels fp32)
      : g_(geometry), weights_(weights), bias_(bias), input_(input), output_(output), fp32_(fp32) {}

  WorkShape work(const RunState& state) const override {
    const int64_t batch = state.dim(input_, 0);
    if (g_.mode == ConvMode::kDepthwise) {
      return {.items = batch * g_.channels,
              .ops_per_item = 2.0 * static_cast<double>(g_.out_height * g_.out_width * g_.kernel_h * g_.kernel_w)};
    }
    const double macs = static_cast<double>(std::min(g_.oc_block, g_.out_per_group())) *
                        static_cast<double>(g_.tile_rows * g_.out_width) * static_cast<double>(g_.k());
    return {.items = batch * g_.group * g_.tiles() * g_.oc_blocks(), .ops_per_item = 2.0 * macs};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const override {
    const float* x = state.data<float>(input_);
    float* y = state.data<float>(output_);
    if (g_.mode == ConvMode::kDepthwise) {
      for (int64_t item = begin; item < end; ++item) depthwise_plane(x, y, item);
      return;
    }
    float* col = reinterpret_cast<float*>(scratch.data());
    int64_t built = -1;  // the (image, group, tile) whose im2col is in `col`
    for (int64_t item = begin; item < end; ++item) {
      const int64_t block = item % g_.oc_blocks();
      const int64_t tile_index = item / g_.oc_blocks();
      const int64_t tile = tile_index % g_.tiles();
      const int64_t group = (tile_index / g_.tiles()) % g_.group;
      const int64_t image = tile_index / g_.tiles() / g_.group;
      const int64_t oh_begin = tile * g_.tile_rows;
      const int64_t oh_end = std::min(g_.out_height, oh_begin + g_.tile_rows);
      const int64_t pixels = (oh_end - oh_begin) * g_.out_width;
      const int64_t out_plane = g_.out_height * g_.out_width;
      const float* image_in = x + image * g_.channels * g_.height * g_.width;
      const float* b = nullptr;
      size_t ldb = 0;
      if (g_.mode == ConvMode::kPointwise) {
        b = image_in + group * g_.in_per_group() * out_plane + oh_begin * g_.out_width;
        ldb = static_cast<size_t>(out_plane);
      } else {
        if (built != tile_index) {
          im2col(g_, image_in, group * g_.in_per_group(), oh_begin, oh_end, col);
          built = tile_index;
        }
        b = col;
        ldb = static_cast<size_t>(pixels);
      }
      const int64_t oc_begin = group * g_.out_per_group() + block * g_.oc_block;
      const int64_t oc_count = std::min(g_.oc_block, g_.out_per_group() - block * g_.oc_block);
      float* c = y + (image * g_.out_channels + oc_begin) * out_plane + oh_begin * g_.out_width;
      kernels::Fp32GemmParams params;
      params.m = static_cast<size_t>(oc_count);
      params.n = static_cast<size_t>(pixels);
      params.k = static_cast<size_t>(g_.k());
      if (bias_ != nullptr) {
        for (int64_t oc = 0; oc < oc_count; ++oc) std::fill_n(c + oc * out_plane, pixels, bias_[oc_begin + oc]);
        params.beta = 1.0f;
      }
      gemm_in_stack_sized_calls(fp32_, params, weights_ + oc_begin * g_.k(), static_cast<size_t>(g_.k()), b, ldb,
                                nullptr, c, static_cast<size_t>(out_plane));
    }
  }

 private:
  void depthwise_plane(const float* x, float* y, int64_t item) const {
    const int64_t channel = item % g_.channels;
    const float* in = x + item * g_.height * g_.width;
    float* out = y + item * g_.out_height * g_.out_width;
    const float* w = weights_ + channel * g_.kernel_h * g_.kernel_w;
    const float init = bias_ != nullptr ? bias_[channel] : 0.0f;
    for (int64_t oh = 0; oh < g_.out_height; ++oh) {
      float* out_row = out + oh * g_.out_width;
      std::fill_n(out_row, g_.out_width, init);
      for (int64_t kh = 0; kh < g_.kernel_h; ++kh) {
        const int64_t ih = oh * g_.stride_h - g_.pad_top + kh * g_.dilation_h;
        if (ih < 0 || ih >= g_.height) continue;
        const float* in_row = in + ih * g_.width;
        for (int64_t kw = 0; kw < g_.kernel_w; ++kw) {
          const int64_t offset_w = kw * g_.dilation_w - g_.pad_left;
          int64_t ow_begin = offset_w >= 0 ? 0 : (-offset_w + g_.stride_w - 1) / g_.stride_w;
          int64_t ow_end = g_.width - 1 - offset_w < 0 ? 0 : (g_.width - 1 - offset_w) / g_.stride_w + 1;
          ow_end = std::min(ow_end, g_.out_width);
          if (ow_end > ow_begin) {
            accumulate_taps(out_row + ow_begin, in_row + offset_w + ow_begin * g_.stride_w, w[kh * g_.kernel_w + kw],
                            ow_end - ow_begin, g_.stride_w);
          }
        }
      }
    }
  }

  ConvGeometry g_;
  const float* weights_;
  const float* bias_;
  int32_t input_, output_;
  kernels::Fp32Kernels fp32_;
};

PlanLayer lower_nchw(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias,
                     const std::string& kernel) {
  PlanLayer layer = make_layer(node, kKind, kernel);
  params::kWeights.write_bytes(layer, weight.raw_data(), weight.nbytes());
  if (bias != nullptr) params::kBias.write_bytes(layer, bias->raw_data(), bias->nbytes());
  layer.scratch_bytes = scratch_floats(g) * static_cast<int64_t>(sizeof(float));
  return layer;
}

PlanLayer lower_gemm(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias, kernels::Isa,
                     const kernels::Fp32Kernels& fp32) {
  return lower_nchw(node, g, weight, bias, fp32.gemm.name);
}

PlanLayer lower_depthwise(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias,
                          kernels::Isa, const kernels::Fp32Kernels&) {
  return lower_nchw(node, g, weight, bias, "f32-dwconv-multiversion");
}

Result<Verdict> accepts_depthwise(const ConvCandidate& candidate) {
  if (!candidate.g.depthwise()) return Verdict::decline("group is not input channels == output channels");
  return Verdict::take();
}

Result<Verdict> accepts_pointwise(const ConvCandidate& candidate) {
  if (!candidate.g.pointwise()) return Verdict::decline("not a 1x1 stride-1 window without pads");
  return Verdict::take();
}

Result<Verdict> accepts_any(const ConvCandidate&) { return Verdict::take(); }

Status check_depthwise(const BindContext& context, const ConvGeometry& g) {
  if (!g.depthwise()) return context.error("depthwise mode needs group == input channels == output channels");
  return Status::ok();
}

Status check_pointwise(const BindContext& context, const ConvGeometry& g) {
  if (!g.pointwise()) return context.error("pointwise mode needs a 1x1 kernel, stride 1 and no pads");
  return Status::ok();
}

Status check_any(const BindContext&, const ConvGeometry&) { return Status::ok(); }

// The NCHW layer reads its weights itself (bind_nchw_conv).
Status no_packed_weights(const BindContext& context, const ConvGeometry&, kernels::Isa, NhwcWeights&) {
  return context.error("an NCHW conv mode has no packed NHWC weights");
}

}  // namespace

void set_nchw_tiles(ConvGeometry& g) {
  // Tiles of whole output rows: about 512 pixels (the GEMM's n), the im2col block <= 512 KiB.
  const int64_t pixel_budget = std::clamp<int64_t>(131072 / std::max<int64_t>(g.k(), 1), 16, 512);
  g.tile_rows =
      std::clamp<int64_t>(pixel_budget / std::max<int64_t>(g.out_width, 1), 1, std::max<int64_t>(g.out_height, 1));
  g.oc_block = std::clamp<int64_t>(g.out_per_group(), 1, kGemmMaxRows);
}

Result<std::unique_ptr<Layer>> bind_nchw_conv(const BindContext& context, ConvGeometry g) {
  if (context.layer().outputs.size() > 1) return context.error("one output in the NCHW modes");
  g.tile_rows = std::min(g.tile_rows, std::max<int64_t>(g.out_height, 1));
  g.oc_block = std::min(g.oc_block, std::max<int64_t>(g.out_per_group(), 1));  // a larger block is one block
  if (safe_numel({g.in_per_group(), g.kernel_h, g.kernel_w, g.tile_rows, g.out_width, 4}) < 0) {
    return context.error("the im2col tile is too large");
  }
  if (static_cast<int64_t>(scratch_floats(g) * sizeof(float)) > context.layer().scratch_bytes) {
    return context.error(fmt::format("scratch_bytes {} is less than the {} the im2col tile needs",
                                     context.layer().scratch_bytes, scratch_floats(g) * sizeof(float)));
  }
  const int64_t weight_count = g.out_channels * g.in_per_group() * g.kernel_h * g.kernel_w;
  if (safe_numel({g.out_channels, g.in_per_group(), g.kernel_h, g.kernel_w}) < 0)
    return context.error("weights too large");
  QDQRT_ASSIGN_OR_RETURN(const float* weights, params::kWeights.read(context, weight_count));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read_optional(context, g.out_channels));
  return std::unique_ptr<Layer>(std::make_unique<ConvLayer>(g, weights, bias, context.layer().inputs[0],
                                                            context.layer().outputs[0],
                                                            kernels::fp32_kernels(bind_isa(context.plan()))));
}

const ConvImplementation kDepthwiseNchwImplementation{.name = "depthwise_nchw",
                                                      .mode = ConvMode::kDepthwise,
                                                      .accepts = accepts_depthwise,
                                                      .lower = lower_depthwise,
                                                      .check = check_depthwise,
                                                      .read_weights = no_packed_weights};
const ConvImplementation kPointwiseNchwImplementation{.name = "pointwise_nchw",
                                                      .mode = ConvMode::kPointwise,
                                                      .accepts = accepts_pointwise,
                                                      .lower = lower_gemm,
                                                      .check = check_pointwise,
                                                      .read_weights = no_packed_weights};
const ConvImplementation kGemmNchwImplementation{.name = "gemm_nchw",
                                                 .mode = ConvMode::kGemm,
                                                 .accepts = accepts_any,
                                                 .lower = lower_gemm,
                                                 .check = check_any,
                                                 .read_weights = no_packed_weights};

}  // namespace qdqrt::engine::fp32::conv
