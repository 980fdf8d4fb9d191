// fp32 Conv (2-D), kind "fp32_conv".
//
// Modes (param "mode"):
//   igemm          NHWC, group 1: the fp32 igemm (kernels/fp32/fp32_sgemm.h) with weights packed at
//                  build; 1x1 reads the activations in place, KxK gathers taps through row
//                  pointers (no im2col). Epilogue: bias (BatchNorm is folded before), an absorbed
//                  Relu/Clip (act.min/act.max) and residual Add (input 1, NHWC like the output).
//   depthwise_nhwc NHWC, group == C == OC: the fp32 depthwise kernel, same epilogue.
//   winograd       NHWC, group 1, 3x3 stride 1 (kernels/fp32/fp32_winograd.h): F(2x2, 3x3) on the
//                  same microkernel, 2.25x fewer multiplies; same epilogue; per-thread scratch for
//                  the transformed tiles.
//   direct_nchw    NCHW input of at most 4 channels (the network's image), NHWC output, group 1:
//                  run_direct_nchw_f32 on the igemm's packed weights (same sums), no reorder of
//                  the input; same epilogue. Items: (block of output channels, output row).
//   gemm           NCHW, other groups or kernels beyond 11x11: per group Y[oc, pixels] =
//                  W[oc, Cg*KH*KW] x im2col(X)[Cg*KH*KW, pixels] (Eigen), the im2col block of one tile
//                  of output rows in per-thread scratch
//   pointwise      NCHW 1x1, stride 1, no pads (grouped): the GEMM reads X directly
//   depthwise      NCHW, kernels beyond 11x11: direct per-channel loops
// Work items: igemm (block of output channels, microkernel tile of output pixels), winograd (block
// of output channels, microkernel tile of 2x2 output tiles) and depthwise_nhwc (block of channels,
// output row), as ColumnBlockSplit (float_common.h) makes them;
// gemm/pointwise (image, group, tile of output rows, block of <= 64 output channels); depthwise
// (image, channel). The NHWC modes allocate nothing; only winograd needs scratch.
// fuse_float_conv_epilogues() absorbs the Relu/Clip and residual Add layers after an NHWC conv,
// and folds a squeeze-excite gate Mul (x * gate[N, C, 1, 1]) into the 1x1 igemm conv that is its
// only reader: input 2 is then the gate, and each run scales the packed weights' input channels
// by it (per image, into scratch) instead of a pass over x; and runs a depthwise conv together
// with the 1x1 expansion before it and/or the 1x1 projection after it in one layer over bands of
// rows (FusedDepthwiseLayer: the depthwise's params under "dw.", the expansion's under "ex.").
#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "engine/layers/float_common.h"
#include "core/ops/conv.h"
#include "core/ops/window.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "kernels/fp32/fp32_winograd.h"

namespace qdqrt::engine::fp32 {

namespace {

constexpr const char* kKind = "fp32_conv";
enum class ConvMode : int64_t {
  kGemm = 0,
  kPointwise = 1,
  kDepthwise = 2,
  kIgemm = 3,
  kDepthwiseNhwc = 4,
  kWinograd = 5,
  kDirectNchw = 6
};

// The output is NHWC (the input too, but for direct_nchw).
bool is_nhwc(ConvMode mode) {
  return mode == ConvMode::kIgemm || mode == ConvMode::kDepthwiseNhwc || mode == ConvMode::kWinograd ||
         mode == ConvMode::kDirectNchw;
}

// Output pixels from which Winograd pays: 7x7 (ResNet-50's layer4: 16 tiles for 49 pixels, 1.3x
// the work) runs about 1.25x faster than the igemm, 14x14 and up about 2x.
constexpr int64_t kWinogradMinPixels = 7 * 7;
constexpr double kDepthwiseCostFactor = 3.0;
// Column blocks when the tiles are few (ColumnBlockSplit): 2, not 4, since every column block
// transforms its tiles' inputs again (ResNet-50's layer3 and layer4 at batch 1).
constexpr int64_t kWinogradFewRowsColumnBlocks = 2;

// Per-channel sums of output rows [row_begin, row_end) of an NHWC tensor (`width` pixels of
// `channels` per row), channels [c_begin, c_end), to sums[row * channels + c]: the row sums a
// global average pool of a depthwise conv's output reads (fuse_pool_row_sums), taken while the
// rows are still in cache.
void write_row_sums(kernels::Fp32ChannelSumsF32Fn channel_sums, const float* out, int64_t width, int64_t channels,
                    int64_t row_begin, int64_t row_end, int64_t c_begin, int64_t c_end, float* sums) {
  for (int64_t row = row_begin; row < row_end; ++row) {
    channel_sums(static_cast<size_t>(width), static_cast<size_t>(c_end - c_begin), static_cast<size_t>(channels),
                 out + row * width * channels + c_begin, sums + row * channels + c_begin);
  }
}

struct ConvGeometry {
  int64_t channels = 0, height = 0, width = 0;            // input per image
  int64_t out_channels = 0, out_height = 0, out_width = 0;
  int64_t group = 1;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t tile_rows = 1, oc_block = 1;
  ConvMode mode = ConvMode::kGemm;

  int64_t in_per_group() const { return channels / group; }
  int64_t out_per_group() const { return out_channels / group; }
  int64_t k() const { return in_per_group() * kernel_h * kernel_w; }
  int64_t tiles() const { return (out_height + tile_rows - 1) / tile_rows; }
  int64_t oc_blocks() const { return (out_per_group() + oc_block - 1) / oc_block; }
};

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

// NHWC conv on the fp32 igemm / depthwise kernels.
// The kernels' geometry of a conv (NHWC input pixels of `channels`; NCHW images are as long).
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

class NhwcConvLayer final : public Layer {
 public:
  NhwcConvLayer(const ConvGeometry& g, kernels::PackedSgemm gemm, kernels::PackedDepthwiseF32 depthwise,
                kernels::PackedWinogradF32 winograd, float low, float high, kernels::Fp32EpilogueActivation activation,
                int32_t input, int32_t residual, int32_t gate, int32_t output, int32_t row_sums,
                kernels::Fp32ChannelSumsF32Fn channel_sums)
      : g_(g), gemm_(std::move(gemm)), depthwise_(std::move(depthwise)), winograd_(std::move(winograd)), input_(input),
        residual_(residual), gate_(gate), output_(output), row_sums_(row_sums), channel_sums_(channel_sums) {
    epilogue_.activation = activation;
    epilogue_.min = low;
    epilogue_.max = high;
    epilogue_.residual_row_stride = g.out_channels;
    geometry_ = conv_geometry(g);
  }

  WorkShape work(const RunState& state) const override {
    const ColumnBlockSplit split = work_split(state);
    const double taps = static_cast<double>(g_.kernel_h * g_.kernel_w);
    const double item_pixels = g_.mode == ConvMode::kDepthwiseNhwc || g_.mode == ConvMode::kDirectNchw
                                   ? static_cast<double>(g_.out_width)
                               : g_.mode == ConvMode::kWinograd ? winograd_.mr * 4.0 / 2.25  // multiplies saved
                                                                : gemm_.mr;
    const double item_channels = static_cast<double>(g_.out_channels) / static_cast<double>(split.column_blocks);
    // Depthwise ran at about a third of the GEMM's rate (one multiply-add per loaded input); with
    // the window kernel most layers run at half to the full rate, yet 3x still measured best
    // (against 1x and 1.5x, 2 threads): its operations count 3x, so MobileNet's 7x7 and 14x14
    // ones (0.7-1.4 M multiply-adds) split in two at 2 threads instead of leaving one thread idle.
    const double depth =
        g_.mode == ConvMode::kDepthwiseNhwc ? kDepthwiseCostFactor * taps : taps * static_cast<double>(g_.channels);
    return {.items = split.items(), .ops_per_item = 2.0 * item_pixels * item_channels * depth};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const override {
    const kernels::SconvArgs args{state.data<float>(input_), state.data<float>(output_), g_.out_channels};
    kernels::Fp32Epilogue epilogue = epilogue_;
    if (residual_ >= 0) epilogue.residual = state.data<float>(residual_);
    const int64_t pixels = state.dim(input_, 0) * g_.out_height * g_.out_width;
    work_split(state).for_each_call(begin, end, [&](int64_t first, int64_t last, int64_t column_begin, int64_t column_end) {
      if (g_.mode == ConvMode::kDepthwiseNhwc) {
        kernels::run_depthwise_f32(depthwise_, geometry_, args, epilogue, first, last, static_cast<int>(column_begin),
                                   static_cast<int>(column_end));
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
      } else if (gate_ >= 0) {
        run_gated(state, args, epilogue, first * gemm_.mr, std::min(pixels, last * gemm_.mr),
                  static_cast<int>(column_begin), static_cast<int>(column_end), scratch);
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
    return ColumnBlockSplit((batch * g_.out_height * g_.out_width + gemm_.mr - 1) / gemm_.mr, g_.out_channels, gemm_.nr);
  }

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
  kernels::PackedDepthwiseF32 depthwise_;
  kernels::PackedWinogradF32 winograd_;
  kernels::Fp32Epilogue epilogue_;
  int32_t input_, residual_, gate_, output_;
  int32_t row_sums_;  // depthwise_nhwc: output 1, [N, OH, C] per-row channel sums, or -1
  kernels::Fp32ChannelSumsF32Fn channel_sums_;
};

bool is_gateable(const ConvGeometry& g) {
  return g.mode == ConvMode::kIgemm && g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
         g.pad_top == 0 && g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0;
}

// A depthwise conv fused with the 1x1 convs around it (fuse_float_conv_epilogues): the 1x1
// expansion before it (params under kExPrefix) and/or the 1x1 projection after it (then the
// projection's params are the layer's own and the depthwise's are under kDwPrefix). Work items are
// bands of about kBandPixels depthwise output pixels. Per band, the expansion computes the input
// rows the band's windows read into per-thread scratch (rows a previous band of the same call
// computed are kept: moved to the front, not recomputed), the depthwise writes the band to scratch
// (or to the output without a projection), and the projection's GEMM reads it there. MobileNetV2's
// 112x112 and 56x56 intermediates (1.2-4.8 MB) then stay in L1/L2 instead of going through L3.
// The same kernels and sums as the separate layers: bit-identical.
constexpr const char* kDwPrefix = "dw.";
constexpr const char* kExPrefix = "ex.";
// The depthwise's channels (= expansion outputs = projection inputs), under kDwPrefix.
constexpr IntCodec kFusedChannels{"channels", 1, INT32_MAX / 2};
constexpr int64_t kBandPixels = 112;
int64_t band_rows(int64_t out_width, int64_t out_height) {
  return std::clamp<int64_t>(kBandPixels / std::max<int64_t>(out_width, 1), 1, std::max<int64_t>(out_height, 1));
}
int64_t align16(int64_t floats) { return (floats + 15) / 16 * 16; }
// Expanded input rows one band reads.
int64_t expanded_rows(int64_t band, int64_t kernel_h, int64_t stride_h, int64_t dilation_h, int64_t height) {
  return std::min(height, (band - 1) * stride_h + (kernel_h - 1) * dilation_h + 1);
}
struct FusedScratch {
  int64_t expanded = 0, band = 0;  // floats
  int64_t bytes() const { return (expanded + band) * static_cast<int64_t>(sizeof(float)); }
};
FusedScratch fused_scratch(bool expand, bool project, int64_t channels, int64_t width, int64_t height, int64_t out_width,
                           int64_t out_height, int64_t kernel_h, int64_t stride_h, int64_t dilation_h) {
  const int64_t rows = band_rows(out_width, out_height);
  FusedScratch scratch;
  if (expand) scratch.expanded = align16(expanded_rows(rows, kernel_h, stride_h, dilation_h, height) * width * channels);
  if (project) scratch.band = align16(rows * out_width * channels);
  return scratch;
}

class FusedDepthwiseLayer final : public Layer {
 public:
  FusedDepthwiseLayer(const kernels::SconvGeometry& dw_geometry, std::optional<kernels::PackedSgemm> expand,
                      kernels::Fp32Epilogue expand_epilogue, kernels::PackedDepthwiseF32 dw,
                      kernels::Fp32Epilogue dw_epilogue, std::optional<kernels::PackedSgemm> project,
                      kernels::Fp32Epilogue project_epilogue, FusedScratch scratch, int32_t input, int32_t residual,
                      int32_t output, int32_t row_sums, kernels::Fp32ChannelSumsF32Fn channel_sums)
      : geometry_(dw_geometry), expand_(std::move(expand)), expand_epilogue_(expand_epilogue), dw_(std::move(dw)),
        dw_epilogue_(dw_epilogue), project_(std::move(project)), project_epilogue_(project_epilogue),
        scratch_(scratch), input_(input), residual_(residual), output_(output), row_sums_(row_sums),
        channel_sums_(channel_sums), band_rows_(band_rows(dw_geometry.output_width, dw_geometry.output_height)) {}

  WorkShape work(const RunState& state) const override {
    const double pixels = static_cast<double>(band_rows_ * geometry_.output_width);
    const double taps = static_cast<double>(geometry_.kernel_height * geometry_.kernel_width);
    double macs_per_pixel = kDepthwiseCostFactor * taps * dw_.channels;
    if (project_) macs_per_pixel += static_cast<double>(project_->n) * dw_.channels;
    if (expand_) {
      macs_per_pixel += static_cast<double>(geometry_.stride_height * geometry_.stride_width) * expand_->channels *
                        dw_.channels;
    }
    return {.items = state.dim(input_, 0) * bands(), .ops_per_item = 2.0 * pixels * macs_per_pixel};
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
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / bands();
      const int64_t oy_begin = (item % bands()) * band_rows_;
      const int64_t oy_end = std::min(oy_begin + band_rows_, static_cast<int64_t>(geometry_.output_height));
      const int64_t row_begin = image * geometry_.output_height + oy_begin, row_end = row_begin + oy_end - oy_begin;
      const int64_t first_pixel = row_begin * width, pixels = (row_end - row_begin) * width;
      kernels::SconvArgs dw_args{x, band, channels, first_pixel};
      kernels::SconvGeometry geometry = geometry_;
      if (expand_) {
        const int64_t top = oy_begin * geometry_.stride_height - geometry_.pad_top;
        const int64_t y0 = std::clamp<int64_t>(top, 0, geometry_.input_height);
        const int64_t y1 = std::clamp<int64_t>(
            (oy_end - 1) * geometry_.stride_height - geometry_.pad_top +
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
  int64_t bands() const { return (geometry_.output_height + band_rows_ - 1) / band_rows_; }

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
  int64_t band_rows_;
};

int64_t scratch_floats(const ConvGeometry& g, kernels::Isa isa = kernels::Isa::kScalar, bool gated = false) {
  if (gated) return kernels::packed_sgemm_floats(static_cast<int>(g.out_channels), g.channels, isa);
  if (g.mode == ConvMode::kWinograd) {
    return kernels::winograd_f32_scratch_floats(static_cast<int>(g.out_channels), static_cast<int>(g.channels), isa);
  }
  return g.mode == ConvMode::kGemm ? g.k() * g.tile_rows * g.out_width : 0;
}

bool winograd_applies(const ConvGeometry& g) {
  return g.group == 1 && g.out_height * g.out_width >= kWinogradMinPixels &&
         kernels::winograd_f32_applies(static_cast<int>(g.kernel_h), static_cast<int>(g.kernel_w),
                                       static_cast<int>(g.stride_h), static_cast<int>(g.stride_w),
                                       static_cast<int>(g.dilation_h), static_cast<int>(g.dilation_w),
                                       static_cast<int>(g.pad_top), static_cast<int>(g.pad_left),
                                       static_cast<int>(g.pad_bottom), static_cast<int>(g.pad_right));
}

// The absorbed clamp and activation (`act.*` under `prefix`) of an NHWC conv.
Result<kernels::Fp32Epilogue> read_activation(const BindContext& context, std::string_view prefix) {
  kernels::Fp32Epilogue epilogue;
  QDQRT_ASSIGN_OR_RETURN(epilogue.min, params::kClipMin.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(epilogue.max, params::kClipMax.read(context, prefix));
  if (!(epilogue.min <= epilogue.max)) return context.error("act.min exceeds act.max");
  QDQRT_ASSIGN_OR_RETURN(epilogue.activation, params::kEpilogueFunction.read(context, prefix));
  return epilogue;
}

// Output 1 of a depthwise conv whose output y [N, C, OH, OW] (NHWC) a global average pool reads:
// the per-row channel sums, [N, OH, C] fp32, batched like y.
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

Result<std::unique_ptr<Layer>> bind_nhwc_conv(const BindContext& context, const ConvGeometry& g,
                                              const std::vector<int64_t>& pads, const PlanTensor& y) {
  const int64_t taps = g.kernel_h * g.kernel_w;
  if (taps > kernels::kSgemmMaxTaps) return context.error(fmt::format("{} kernel taps, at most {}", taps, kernels::kSgemmMaxTaps));
  if ((g.mode == ConvMode::kIgemm || g.mode == ConvMode::kDirectNchw) && g.group != 1) {
    return context.error("igemm and direct_nchw modes need group 1");
  }
  if (g.mode == ConvMode::kWinograd && !winograd_applies(g)) {
    return context.error("winograd mode needs group 1 and a 3x3 stride-1 window with pads <= 1");
  }
  if (g.mode == ConvMode::kDepthwiseNhwc && !(g.group == g.channels && g.group == g.out_channels)) {
    return context.error("depthwise mode needs group == input channels == output channels");
  }
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
  kernels::PackedSgemm gemm;
  kernels::PackedDepthwiseF32 depthwise;
  kernels::PackedWinogradF32 winograd;
  const int channels = static_cast<int>(g.channels), out_channels = static_cast<int>(g.out_channels);
  if (g.mode == ConvMode::kWinograd) {
    if (static_cast<int64_t>(scratch_floats(g, isa) * sizeof(float)) > context.layer().scratch_bytes) {
      return context.error(fmt::format("scratch_bytes {} is less than the {} the Winograd tiles need",
                                       context.layer().scratch_bytes, scratch_floats(g, isa) * sizeof(float)));
    }
    const int64_t floats = kernels::packed_winograd_f32_floats(out_channels, channels, isa);
    QDQRT_ASSIGN_OR_RETURN(const float* weights, params::kWeights.read(context, floats));
    QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, kernels::sgemm_padded_n(out_channels, isa)));
    winograd = kernels::packed_winograd_f32_view(out_channels, channels, isa, weights, bias);
  } else if (g.mode == ConvMode::kIgemm || g.mode == ConvMode::kDirectNchw) {
    if (g.mode == ConvMode::kDirectNchw && !kernels::direct_nchw_f32_applies(channels, conv_geometry(g))) {
      return context.error("direct_nchw mode needs at most 4 input channels and a window whose rows fit its buffer");
    }
    const int64_t floats = kernels::packed_sgemm_floats(out_channels, taps * g.channels, isa);
    QDQRT_ASSIGN_OR_RETURN(const float* weights, params::kWeights.read(context, floats));
    QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, kernels::sgemm_padded_n(out_channels, isa)));
    gemm = kernels::packed_sgemm_view(out_channels, static_cast<int>(taps), channels, isa, weights, bias);
  } else {
    const int64_t padded = kernels::depthwise_f32_padded_channels(channels);
    QDQRT_ASSIGN_OR_RETURN(const float* weights, params::kWeights.read(context, padded * taps));
    QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, padded));
    depthwise = kernels::packed_depthwise_f32_view(channels, static_cast<int>(taps), isa, weights, bias);
  }
  int32_t row_sums = -1;
  if (context.layer().outputs.size() > 1) {
    if (g.mode != ConvMode::kDepthwiseNhwc) return context.error("row sums are a depthwise_nhwc conv's second output");
    QDQRT_ASSIGN_OR_RETURN(row_sums, bind_row_sums(context, y));
  }
  return std::unique_ptr<Layer>(std::make_unique<NhwcConvLayer>(
      g, std::move(gemm), std::move(depthwise), std::move(winograd), low, high, activation, context.layer().inputs[0],
      residual, gate, context.layer().outputs[0], row_sums, kernels::fp32_kernels(bind_isa(context.plan())).channel_sums_f32.fn));
}

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
  return std::pair{kernels::packed_sgemm_view(n, 1, static_cast<int>(in_channels), isa, weights, bias, false), epilogue};
}

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
  const FusedScratch scratch = fused_scratch(expand, project, channels, width, height, out_width, out_height,
                                             kernel[0], strides[0], dilations[0]);
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

Result<std::unique_ptr<Layer>> bind_conv(const BindContext& context) {
  if (context.layer().params.has(std::string(kDwPrefix) + std::string(params::kConvMode.key())) ||
      context.layer().params.has(std::string(kExPrefix) + std::string(params::kConvMode.key()))) {
    return bind_fused_depthwise(context);
  }
  QDQRT_ASSIGN_OR_RETURN(int64_t mode, params::kConvMode.read(context));
  const Layout layout = is_nhwc(static_cast<ConvMode>(mode)) ? Layout::kNhwc : Layout::kPlain;
  const Layout input_layout = static_cast<ConvMode>(mode) == ConvMode::kDirectNchw ? Layout::kPlain : layout;
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  const bool one_pixel = x->shape.size() == 4 && x->shape[2] == 1 && x->shape[3] == 1;  // same bytes in both layouts
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, 4,
                                      input_layout == Layout::kNhwc && one_pixel ? x->layout : input_layout));
  if (static_cast<ConvMode>(mode) == ConvMode::kDirectNchw && !batch_leads(*x)) {
    return context.error("direct_nchw mode needs the batch in front");
  }
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, 4, layout));
  if (x->shape[0] != y->shape[0] || x->batched != y->batched) return context.error("input and output batch differ");

  ConvGeometry g;
  g.channels = x->shape[1], g.height = x->shape[2], g.width = x->shape[3];
  g.out_channels = y->shape[1], g.out_height = y->shape[2], g.out_width = y->shape[3];
  QDQRT_ASSIGN_OR_RETURN(g.group, params::kGroup.read(context));
  QDQRT_ASSIGN_OR_RETURN(auto kernel, params::kKernel.read(context, 2));
  QDQRT_ASSIGN_OR_RETURN(auto strides, params::kStrides.read(context, 2));
  QDQRT_ASSIGN_OR_RETURN(auto dilations, params::kDilations.read(context, 2));
  QDQRT_ASSIGN_OR_RETURN(auto pads, params::kPads.read(context, 4));
  QDQRT_ASSIGN_OR_RETURN(g.tile_rows, params::kTileRows.read(context));
  QDQRT_ASSIGN_OR_RETURN(g.oc_block, params::kOutputChannelBlock.read(context));
  g.kernel_h = kernel[0], g.kernel_w = kernel[1], g.stride_h = strides[0], g.stride_w = strides[1];
  g.dilation_h = dilations[0], g.dilation_w = dilations[1];
  g.pad_top = pads[0], g.pad_left = pads[1], g.pad_bottom = pads[2], g.pad_right = pads[3];
  if (g.channels % g.group != 0 || g.out_channels % g.group != 0) {
    return context.error(fmt::format("group {} does not divide {} input and {} output channels", g.group, g.channels,
                                     g.out_channels));
  }
  // The output size the pads, kernel and strides give must be the plan's.
  if (window_output_size(g.height, g.kernel_h, g.stride_h, g.dilation_h, g.pad_top, g.pad_bottom, false) !=
          g.out_height ||
      window_output_size(g.width, g.kernel_w, g.stride_w, g.dilation_w, g.pad_left, g.pad_right, false) !=
          g.out_width) {
    return context.error(fmt::format("output {} does not follow from input {} and the window", shape_to_string(y->shape),
                                     shape_to_string(x->shape)));
  }
  g.mode = static_cast<ConvMode>(mode);
  if (g.mode == ConvMode::kDepthwise && !(g.group == g.channels && g.group == g.out_channels)) {
    return context.error("depthwise mode needs group == input channels == output channels");
  }
  if (g.mode == ConvMode::kPointwise &&
      !(g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && pads == std::vector<int64_t>(4, 0))) {
    return context.error("pointwise mode needs a 1x1 kernel, stride 1 and no pads");
  }
  if (is_nhwc(g.mode)) return bind_nhwc_conv(context, g, pads, *y);
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
  if (safe_numel({g.out_channels, g.in_per_group(), g.kernel_h, g.kernel_w}) < 0) return context.error("weights too large");
  QDQRT_ASSIGN_OR_RETURN(const float* weights, params::kWeights.read(context, weight_count));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read_optional(context, g.out_channels));
  return std::unique_ptr<Layer>(std::make_unique<ConvLayer>(g, weights, bias, context.layer().inputs[0],
                                                            context.layer().outputs[0],
                                                            kernels::fp32_kernels(bind_isa(context.plan()))));
}

// The params every mode has: group, window, mode.
void write_geometry(PlanLayer& layer, const ConvGeometry& g) {
  params::kGroup.write(layer, g.group);
  params::kKernel.write(layer, {g.kernel_h, g.kernel_w});
  params::kStrides.write(layer, {g.stride_h, g.stride_w});
  params::kDilations.write(layer, {g.dilation_h, g.dilation_w});
  params::kPads.write(layer, {g.pad_top, g.pad_left, g.pad_bottom, g.pad_right});
  params::kConvMode.write(layer, static_cast<int64_t>(g.mode));
}

Status lower_nhwc_conv(const Node& node, BuildContext& context, ConvGeometry g, const Tensor& weight,
                       const Tensor* bias) {
  const kernels::Isa isa = kernels::usable_isa(context.isa());
  const int taps = static_cast<int>(g.kernel_h * g.kernel_w);
  const int channels = static_cast<int>(g.channels), out_channels = static_cast<int>(g.out_channels);
  const float* bias_values = bias != nullptr ? bias->data<float>() : nullptr;
  PlanLayer layer;
  // An image of few channels as the network's input (stored NCHW): read in place (direct_nchw).
  bool direct = false;
  if (g.group == 1 && !winograd_applies(g) && g.channels <= 4 &&
      kernels::direct_nchw_f32_applies(channels, conv_geometry(g))) {
    QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.input(0)));
    const PlanTensor tensor = context.tensor(stored);
    direct = tensor.layout == Layout::kPlain && tensor.dtype == DataType::kFloat && batch_leads(tensor);
  }
  if (winograd_applies(g)) {
    g.mode = ConvMode::kWinograd;
    const kernels::PackedWinogradF32 packed =
        kernels::pack_winograd_f32(out_channels, channels, weight.data<float>(), bias_values, isa);
    layer = make_layer(node, kKind, kernels::winograd_f32_kernel_name(isa));
    params::kWeights.write_bytes(layer, packed.data.data(), packed.data.size() * sizeof(float));
    params::kBias.write_bytes(layer, packed.bias.data(), packed.bias.size() * sizeof(float));
    layer.scratch_bytes = scratch_floats(g, isa) * static_cast<int64_t>(sizeof(float));
  } else if (g.group == 1) {
    g.mode = direct ? ConvMode::kDirectNchw : ConvMode::kIgemm;
    kernels::SgemmWeightsDesc desc;
    desc.n = out_channels;
    desc.taps = taps;
    desc.channels = channels;
    desc.weights = weight.data<float>();
    desc.stride_n = static_cast<int64_t>(channels) * taps;
    desc.stride_tap = 1;
    desc.stride_channel = taps;
    desc.bias = bias_values;
    const kernels::PackedSgemm packed = kernels::pack_sgemm(desc, isa);
    layer = make_layer(node, kKind,
                       direct ? kernels::direct_nchw_f32_kernel_name(packed)
                              : kernels::sgemm_kernel_name(packed, taps > 1 || g.stride_h > 1 || g.stride_w > 1));
    params::kWeights.write_bytes(layer, packed.data.data(), packed.data.size() * sizeof(float));
    params::kBias.write_bytes(layer, packed.bias.data(), packed.bias.size() * sizeof(float));
  } else {
    g.mode = ConvMode::kDepthwiseNhwc;
    const kernels::PackedDepthwiseF32 packed =
        kernels::pack_depthwise_f32(channels, taps, weight.data<float>(), bias_values, isa);
    layer = make_layer(node, kKind, kernels::depthwise_f32_kernel_name(packed));
    params::kWeights.write_bytes(layer, packed.weights.data(), packed.weights.size() * sizeof(float));
    params::kBias.write_bytes(layer, packed.bias.data(), packed.bias.size() * sizeof(float));
  }
  // A [N, C, 1, 1] input (after GlobalAveragePool) holds the same bytes in both layouts: read as stored.
  QDQRT_ASSIGN_OR_RETURN(int32_t input, g.height == 1 && g.width == 1 ? context.input_as_stored(node.input(0))
                                        : context.input(node.input(0), direct ? Layout::kPlain : Layout::kNhwc));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kNhwc));
  layer.inputs = {input};
  layer.outputs = {output};
  write_geometry(layer, g);
  params::kTileRows.write(layer, 1);
  params::kOutputChannelBlock.write(layer, 1);
  params::kIsa.write(layer, isa);
  params::kClipMin.write(layer, -std::numeric_limits<double>::infinity());
  params::kClipMax.write(layer, std::numeric_limits<double>::infinity());
  params::kEpilogueFunction.write(layer, kernels::Fp32EpilogueActivation::kNone);
  context.add_layer(std::move(layer));
  return Status::ok();
}

Status lower_conv(const Node& node, BuildContext& context) {
  const auto& attributes = node.attrs<ConvAttributes>();
  const Tensor* weight = context.constant(node.input(1));
  const Tensor* bias = node.has_input(2) ? context.constant(node.input(2)) : nullptr;
  if (weight == nullptr || weight->dtype() != DataType::kFloat || weight->rank() != 4 ||
      (node.has_input(2) && (bias == nullptr || bias->dtype() != DataType::kFloat))) {
    return lower_with_reference(node, context);  // runtime weights or bias, or not 2-D
  }
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, context.shape_of(node.input(0)));
  QDQRT_ASSIGN_OR_RETURN(Shape y_shape, context.shape_of(node.outputs[0]));
  if (x_shape.size() != 4 || y_shape.size() != 4) return lower_with_reference(node, context);
  const Shape kernel_shape = {weight->dim(2), weight->dim(3)};
  if (!attributes.kernel_shape.empty() && attributes.kernel_shape != kernel_shape) return lower_with_reference(node, context);
  WindowAttributes window{.auto_pad = attributes.auto_pad,
                          .strides = &attributes.strides,
                          .dilations = &attributes.dilations,
                          .pads = &attributes.pads,
                          .ceil_mode = false};
  QDQRT_ASSIGN_OR_RETURN(WindowGeometry window_geometry,
                         resolve_window(node, {x_shape[2], x_shape[3]}, kernel_shape, window));
  ConvGeometry g;
  g.channels = x_shape[1], g.height = x_shape[2], g.width = x_shape[3];
  g.out_channels = y_shape[1], g.out_height = y_shape[2], g.out_width = y_shape[3];
  g.group = attributes.group;
  g.kernel_h = kernel_shape[0], g.kernel_w = kernel_shape[1];
  g.stride_h = window_geometry.strides[1], g.stride_w = window_geometry.strides[2];
  g.dilation_h = window_geometry.dilations[1], g.dilation_w = window_geometry.dilations[2];
  g.pad_top = window_geometry.pads_begin[1], g.pad_left = window_geometry.pads_begin[2];
  g.pad_bottom = window_geometry.pads_end[1], g.pad_right = window_geometry.pads_end[2];
  if (g.group < 1 || g.channels % g.group != 0 || g.out_channels % g.group != 0 || weight->dim(0) != g.out_channels ||
      weight->dim(1) != g.in_per_group() || window_geometry.output[1] != g.out_height ||
      window_geometry.output[2] != g.out_width || (bias != nullptr && bias->numel() != g.out_channels)) {
    return lower_with_reference(node, context);  // let the reference report the inconsistency
  }
  const int64_t taps = g.kernel_h * g.kernel_w;
  const bool small_dims = g.channels <= INT32_MAX / 2 && g.out_channels <= INT32_MAX / 2 &&
                          g.height <= INT32_MAX / 2 && g.width <= INT32_MAX / 2;
  if (taps <= kernels::kSgemmMaxTaps && small_dims && g.pad_top < g.kernel_h * g.dilation_h &&
      g.pad_left < g.kernel_w * g.dilation_w && (g.group == 1 || (g.group == g.channels && g.group == g.out_channels))) {
    return lower_nhwc_conv(node, context, g, *weight, bias);
  }
  if (g.group == g.channels && g.group == g.out_channels) {
    g.mode = ConvMode::kDepthwise;
  } else if (g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
             g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0) {
    g.mode = ConvMode::kPointwise;
  }
  // Tiles of whole output rows: about 512 pixels (the GEMM's n), the im2col block <= 512 KiB.
  const int64_t pixel_budget = std::clamp<int64_t>(131072 / std::max<int64_t>(g.k(), 1), 16, 512);
  g.tile_rows = std::clamp<int64_t>(pixel_budget / std::max<int64_t>(g.out_width, 1), 1, std::max<int64_t>(g.out_height, 1));
  g.oc_block = std::clamp<int64_t>(g.out_per_group(), 1, kGemmMaxRows);

  const kernels::Fp32Kernels fp32 = kernels::fp32_kernels(kernels::usable_isa(context.isa()));
  PlanLayer layer = make_layer(node, kKind, g.mode == ConvMode::kDepthwise ? "f32-dwconv-multiversion" : fp32.gemm.name);
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), Layout::kPlain));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  layer.inputs = {input};
  layer.outputs = {output};
  write_geometry(layer, g);
  params::kTileRows.write(layer, g.tile_rows);
  params::kOutputChannelBlock.write(layer, g.oc_block);
  params::kWeights.write_bytes(layer, weight->raw_data(), weight->nbytes());
  if (bias != nullptr) params::kBias.write_bytes(layer, bias->raw_data(), bias->nbytes());
  layer.scratch_bytes = scratch_floats(g) * static_cast<int64_t>(sizeof(float));
  context.add_layer(std::move(layer));
  return Status::ok();
}

// Drops the tensors in `unused` (no layer touches them any more) and renumbers the rest.
void remove_tensors(EnginePlan& plan, const std::vector<bool>& unused) {
  std::vector<int32_t> new_index(plan.tensors.size(), -1);
  std::vector<PlanTensor> kept;
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    if (unused[t]) continue;
    new_index[t] = static_cast<int32_t>(kept.size());
    kept.push_back(std::move(plan.tensors[t]));
  }
  plan.tensors = std::move(kept);
  auto remap = [&](std::vector<int32_t>& indices) {
    for (int32_t& index : indices) {
      if (index >= 0) index = new_index[static_cast<size_t>(index)];
    }
  };
  for (PlanLayer& layer : plan.layers) {
    remap(layer.inputs);
    remap(layer.outputs);
  }
  remap(plan.inputs);
  remap(plan.outputs);
}

bool has_activation(const PlanLayer& layer) {
  auto low = layer.params.get_float(std::string(params::kClipMin.key()));
  auto high = layer.params.get_float(std::string(params::kClipMax.key()));
  auto function = layer.params.get_string(std::string(params::kEpilogueFunction.key()));
  return !low.ok() || !high.ok() || !function.ok() || !std::isinf(*low) || !std::isinf(*high) ||
         *function != kernels::fp32_epilogue_activation_name(kernels::Fp32EpilogueActivation::kNone);
}

bool is_unary(const PlanLayer& layer, kernels::Fp32UnaryOp op) {
  auto value = layer.params.get_int(std::string(params::kUnaryOp.key()));
  return layer.kind == "fp32_unary" && layer.inputs.size() == 1 && layer.outputs.size() == 1 && value.ok() &&
         *value == static_cast<int64_t>(op);
}

bool is_binary(const PlanLayer& layer, kernels::Fp32BinaryOp op) {
  auto value = layer.params.get_int(std::string(params::kBinaryOp.key()));
  return layer.kind == "fp32_binary" && layer.inputs.size() == 2 && layer.outputs.size() == 1 && value.ok() &&
         *value == static_cast<int64_t>(op);
}

void set_function(PlanLayer& conv, kernels::Fp32EpilogueActivation function, const PlanLayer& absorbed) {
  params::kEpilogueFunction.write(conv, function);
  conv.name += " + " + absorbed.name;
  conv.source_nodes.insert(conv.source_nodes.end(), absorbed.source_nodes.begin(), absorbed.source_nodes.end());
}

// Relu / Clip as clamp bounds; nullopt for other unary layers.
std::optional<std::pair<double, double>> clamp_of(const PlanLayer& layer) {
  auto op = layer.params.get_int(std::string(params::kUnaryOp.key()));
  if (!op.ok()) return std::nullopt;
  if (*op == static_cast<int64_t>(kernels::Fp32UnaryOp::kRelu)) {
    return std::pair{0.0, std::numeric_limits<double>::infinity()};
  }
  if (*op != static_cast<int64_t>(kernels::Fp32UnaryOp::kClip)) return std::nullopt;
  auto low = layer.params.get_float(std::string(params::kAlpha.key()));
  auto high = layer.params.get_float(std::string(params::kBeta.key()));
  if (!low.ok() || !high.ok() || std::isnan(*low) || std::isnan(*high) || !(*low <= *high)) return std::nullopt;
  return std::pair{*low, *high};
}

// Absorbs into `conv` the layer `next` that is the only reader of its output, when it is a residual
// Add of NHWC tensors (the other operand written before `conv`) or a Relu/Clip. True when done.
bool absorb(PlanLayer& conv, size_t conv_index, const PlanLayer& next, const std::vector<int64_t>& producer) {
  const int32_t t = conv.outputs[0];
  if (next.kind == "fp32_binary" && !has_activation(conv) && conv.inputs.size() == 1 && next.inputs.size() == 2 &&
      next.outputs.size() == 1) {
    auto op = next.params.get_int(std::string(params::kBinaryOp.key()));
    if (!op.ok() || *op != static_cast<int64_t>(kernels::Fp32BinaryOp::kAdd)) return false;
    const int32_t other = next.inputs[0] == t ? next.inputs[1] : next.inputs[0];
    if (other == t || other < 0 || producer[static_cast<size_t>(other)] >= static_cast<int64_t>(conv_index)) return false;
    conv.inputs.push_back(other);
  } else if (next.kind == "fp32_unary" && next.inputs.size() == 1 && next.outputs.size() == 1) {
    if (has_activation(conv)) return false;
    if (is_unary(next, kernels::Fp32UnaryOp::kSigmoid) || is_unary(next, kernels::Fp32UnaryOp::kHardSwish)) {
      params::kEpilogueFunction.write(conv, is_unary(next, kernels::Fp32UnaryOp::kSigmoid)
                                                ? kernels::Fp32EpilogueActivation::kSigmoid
                                                : kernels::Fp32EpilogueActivation::kHardSwish);
    } else {
      auto bounds = clamp_of(next);
      if (!bounds) return false;
      params::kClipMin.write(conv, bounds->first);
      params::kClipMax.write(conv, bounds->second);
    }
  } else {
    return false;
  }
  conv.outputs[0] = next.outputs[0];
  conv.name += " + " + next.name;
  conv.source_nodes.insert(conv.source_nodes.end(), next.source_nodes.begin(), next.source_nodes.end());
  return true;
}

std::optional<kernels::Isa> isa_of(const PlanLayer& layer) {
  auto name = layer.params.get_string(std::string(params::kIsa.key()));
  if (!name.ok()) return std::nullopt;
  for (int value = 0; value <= static_cast<int>(kernels::Isa::kAmxInt8); ++value) {
    if (*name == kernels::isa_name(static_cast<kernels::Isa>(value))) return static_cast<kernels::Isa>(value);
  }
  return std::nullopt;
}

// Who writes and how many read each tensor of a plan, and which are the plan's inputs/outputs
// (the plan-level fusions below only merge layers around a tensor with one producer, one reader
// and no outside use).
struct TensorUses {
  explicit TensorUses(const EnginePlan& plan)
      : producer(plan.tensors.size(), -1), readers(plan.tensors.size(), 0), interface(plan.tensors.size(), false) {
    for (int32_t t : plan.inputs) interface[static_cast<size_t>(t)] = true;
    for (int32_t t : plan.outputs) interface[static_cast<size_t>(t)] = true;
    for (size_t i = 0; i < plan.layers.size(); ++i) {
      for (int32_t t : plan.layers[i].inputs) {
        if (t >= 0) ++readers[static_cast<size_t>(t)];
      }
      for (int32_t t : plan.layers[i].outputs) {
        if (t >= 0) producer[static_cast<size_t>(t)] = static_cast<int64_t>(i);
      }
    }
  }
  std::vector<int64_t> producer, readers;
  std::vector<bool> interface;
};

// Drops the layers marked in `erase` (merged into another), keeping the others' order.
void erase_layers(EnginePlan& plan, const std::vector<bool>& erase) {
  size_t kept = 0;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    if (erase[i]) continue;
    if (kept != i) plan.layers[kept] = std::move(plan.layers[i]);
    ++kept;
  }
  plan.layers.resize(kept);
}

// Folds `x * gate[N, C, 1, 1]` (an fp32_binary Mul, x stored NHWC) into the 1x1 stride-1 igemm
// conv that is the product's only reader, when scaling that conv's packed weights (n_padded x C
// per image) costs at most half a pass over x (H x W x C): EfficientNet-B0's squeeze-excite gates
// at 14x14 and up (the 112x112 one's Mul took 0.14 ms of 10.9). The gate becomes conv input 2.
void fold_channel_gates(EnginePlan& plan, std::vector<bool>& unused) {
  const TensorUses uses(plan);
  const std::vector<int64_t>& producer = uses.producer;
  const std::vector<int64_t>& readers = uses.readers;
  const std::vector<bool>& interface = uses.interface;
  std::vector<bool> erase(plan.layers.size(), false);
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    PlanLayer& conv = plan.layers[i];
    auto mode = conv.params.get_int(std::string(params::kConvMode.key()));
    auto kernel = conv.params.get_ints(std::string(params::kKernel.key()));
    auto strides = conv.params.get_ints(std::string(params::kStrides.key()));
    auto pads = conv.params.get_ints(std::string(params::kPads.key()));
    auto isa = isa_of(conv);
    if (conv.kind != kKind || !mode.ok() || static_cast<ConvMode>(*mode) != ConvMode::kIgemm || !kernel.ok() ||
        *kernel != std::vector<int64_t>{1, 1} || !strides.ok() || *strides != std::vector<int64_t>{1, 1} ||
        !pads.ok() || *pads != std::vector<int64_t>{0, 0, 0, 0} || !isa || conv.inputs.empty() ||
        conv.inputs.size() > 2 || conv.outputs.size() != 1 || conv.inputs[0] < 0) {
      continue;
    }
    const int32_t product = conv.inputs[0];
    const int64_t mul_index = producer[static_cast<size_t>(product)];
    if (mul_index < 0 || erase[static_cast<size_t>(mul_index)] || readers[static_cast<size_t>(product)] != 1 ||
        interface[static_cast<size_t>(product)]) {
      continue;
    }
    const PlanLayer& mul = plan.layers[static_cast<size_t>(mul_index)];
    if (!is_binary(mul, kernels::Fp32BinaryOp::kMul)) continue;
    const PlanTensor& y = plan.tensors[static_cast<size_t>(product)];
    if (y.shape.size() != 4 || y.layout != Layout::kNhwc || y.dtype != DataType::kFloat || y.batch_axis != 0 ||
        y.batch_factor != 1) {
      continue;
    }
    int32_t x = -1, gate = -1;
    for (int side = 0; side < 2; ++side) {
      const int32_t a = mul.inputs[side], b = mul.inputs[1 - side];
      if (a < 0 || b < 0 || a == b) continue;
      const PlanTensor& ta = plan.tensors[static_cast<size_t>(a)];
      const PlanTensor& tb = plan.tensors[static_cast<size_t>(b)];
      if (ta.shape == y.shape && ta.layout == Layout::kNhwc && ta.dtype == DataType::kFloat &&
          batch_layout_of(ta) == batch_layout_of(y) && tb.dtype == DataType::kFloat &&
          tb.shape == Shape{y.shape[0], y.shape[1], 1, 1} && batch_layout_of(tb) == batch_layout_of(y)) {
        x = a, gate = b;
        break;
      }
    }
    if (x < 0) continue;
    const kernels::Isa conv_isa = *isa;
    const int64_t channels = y.shape[1];
    const int64_t out_channels = plan.tensors[static_cast<size_t>(conv.outputs[0])].shape.size() == 4
                                     ? plan.tensors[static_cast<size_t>(conv.outputs[0])].shape[1]
                                     : -1;
    if (out_channels < 1 || channels > INT32_MAX / 2 || out_channels > INT32_MAX / 2) continue;
    if (2 * kernels::sgemm_padded_n(static_cast<int>(out_channels), conv_isa) > y.shape[2] * y.shape[3]) continue;
    conv.inputs[0] = x;
    conv.inputs.resize(3, -1);
    conv.inputs[2] = gate;
    ConvGeometry g;
    g.mode = ConvMode::kIgemm;
    g.channels = channels;
    g.out_channels = out_channels;
    conv.scratch_bytes = std::max(conv.scratch_bytes,
                                  scratch_floats(g, conv_isa, true) * static_cast<int64_t>(sizeof(float)));
    conv.name = mul.name + " + " + conv.name;
    conv.source_nodes.insert(conv.source_nodes.begin(), mul.source_nodes.begin(), mul.source_nodes.end());
    unused[static_cast<size_t>(product)] = true;
    erase[static_cast<size_t>(mul_index)] = true;
  }
  erase_layers(plan, erase);
}

// Copies `part`'s params and blobs into `into` under `prefix`.
void copy_params(const PlanLayer& part, std::string_view prefix, PlanLayer& into) {
  for (const auto& [key, value] : part.params.values()) into.params.set(std::string(prefix) + key, value);
  for (const Blob& blob : part.blobs) {
    Blob copy = blob;
    copy.name = std::string(prefix) + blob.name;
    into.blobs.push_back(std::move(copy));
  }
}

bool has_param(const PlanLayer& layer, std::string_view prefix, std::string_view key) {
  return layer.params.has(std::string(prefix) + std::string(key));
}

// scratch_bytes of a fused depthwise layer from its params and tensors.
void set_fused_scratch(PlanLayer& layer, const EnginePlan& plan) {
  const bool project = has_param(layer, kDwPrefix, params::kConvMode.key());
  const bool expand = has_param(layer, kExPrefix, params::kConvMode.key());
  const std::string dw_prefix = project ? kDwPrefix : "";
  auto kernel = layer.params.get_ints(dw_prefix + std::string(params::kKernel.key()));
  auto strides = layer.params.get_ints(dw_prefix + std::string(params::kStrides.key()));
  auto dilations = layer.params.get_ints(dw_prefix + std::string(params::kDilations.key()));
  auto channels = layer.params.get_int(std::string(kDwPrefix) + std::string(kFusedChannels.key()));
  const Shape& x = plan.tensors[static_cast<size_t>(layer.inputs[0])].shape;
  const Shape& y = plan.tensors[static_cast<size_t>(layer.outputs[0])].shape;
  if (!kernel.ok() || !strides.ok() || !dilations.ok() || !channels.ok() || kernel->size() != 2 ||
      strides->size() != 2 || dilations->size() != 2) {
    return;  // bind reports it
  }
  layer.scratch_bytes = fused_scratch(expand, project, *channels, x[3], x[2], y[3], y[2], (*kernel)[0], (*strides)[0],
                                      (*dilations)[0])
                            .bytes();
}

// Fuses a depthwise NHWC conv with the 1x1 stride-1 igemm convs around it (FusedDepthwiseLayer):
// first into the projection that is its only reader (no gate; the projection may have a
// residual), then the expansion whose output only the depthwise (fused or not) reads (no residual,
// no gate). When an image's intermediate is at least 64 KiB (smaller ones stay in L2 between the
// layers anyway) and its rows at least 28 pixels (the bands then hold whole or nearly whole GEMM
// tiles): MobileNetV2 at 224x224 from 112x112 to 28x28, EfficientNet-B0's expansions there.
void fuse_depthwise_pointwise(EnginePlan& plan, std::vector<bool>& unused) {
  auto mode_of = [](const PlanLayer& layer) -> std::optional<ConvMode> {
    auto mode = layer.params.get_int(std::string(params::kConvMode.key()));
    if (layer.kind != kKind || !mode.ok() || has_param(layer, kDwPrefix, params::kConvMode.key()) ||
        has_param(layer, kExPrefix, params::kConvMode.key())) {
      return std::nullopt;
    }
    return static_cast<ConvMode>(*mode);
  };
  auto is_pointwise = [&](const PlanLayer& layer) {
    auto kernel = layer.params.get_ints(std::string(params::kKernel.key()));
    auto strides = layer.params.get_ints(std::string(params::kStrides.key()));
    auto pads = layer.params.get_ints(std::string(params::kPads.key()));
    return mode_of(layer) == ConvMode::kIgemm && kernel.ok() && *kernel == std::vector<int64_t>{1, 1} &&
           strides.ok() && *strides == std::vector<int64_t>{1, 1} && pads.ok() && *pads == std::vector<int64_t>(4, 0) &&
           !layer.inputs.empty() && layer.inputs.size() <= 2 && layer.inputs[0] >= 0 && layer.outputs.size() == 1;
  };
  // An intermediate worth keeping out of the arena.
  auto large = [&](int32_t t) {
    const PlanTensor& mid = plan.tensors[static_cast<size_t>(t)];
    return mid.shape.size() == 4 && mid.layout == Layout::kNhwc && batch_leads(mid) && mid.shape[3] >= 28 &&
           mid.shape[1] * mid.shape[2] * mid.shape[3] * static_cast<int64_t>(sizeof(float)) >= (64 << 10);
  };
  for (int pass = 0; pass < 2; ++pass) {
    const TensorUses uses(plan);
    const std::vector<int64_t>& producer = uses.producer;
    const std::vector<int64_t>& readers = uses.readers;
    const std::vector<bool>& interface = uses.interface;
    auto sole_reader = [&](int32_t t) {
      return t >= 0 && producer[static_cast<size_t>(t)] >= 0 && readers[static_cast<size_t>(t)] == 1 &&
             !interface[static_cast<size_t>(t)] && large(t);
    };
    std::vector<bool> erase(plan.layers.size(), false);
    // `layer` takes over the layer at `from_index` (its params under `prefix`, its input 0, its
    // names; with write_channels the depthwise channel count too); the tensor between them goes.
    auto absorb = [&](PlanLayer& layer, size_t from_index, std::string_view prefix, bool write_channels) {
      const PlanLayer& from = plan.layers[from_index];
      const int32_t t = layer.inputs[0];
      copy_params(from, prefix, layer);
      if (write_channels) kFusedChannels.write(layer, plan.tensors[static_cast<size_t>(t)].shape[1], kDwPrefix);
      unused[static_cast<size_t>(t)] = true;
      layer.inputs[0] = from.inputs[0];
      layer.name = from.name + " + " + layer.name;
      layer.kernel = from.kernel + " + " + layer.kernel;
      layer.source_nodes.insert(layer.source_nodes.begin(), from.source_nodes.begin(), from.source_nodes.end());
      erase[from_index] = true;
      set_fused_scratch(layer, plan);
    };
    for (size_t i = 0; i < plan.layers.size(); ++i) {
      PlanLayer& layer = plan.layers[i];
      if (pass == 0) {
        // Depthwise -> projection: the projection takes the depthwise.
        if (!is_pointwise(layer) || !sole_reader(layer.inputs[0])) continue;
        const int32_t t = layer.inputs[0];
        const size_t dw_index = static_cast<size_t>(producer[static_cast<size_t>(t)]);
        const PlanLayer& dw = plan.layers[dw_index];
        if (erase[dw_index] || mode_of(dw) != ConvMode::kDepthwiseNhwc || dw.inputs.size() != 1 || dw.inputs[0] < 0) {
          continue;
        }
        absorb(layer, dw_index, kDwPrefix, true);
      } else {
        // Expansion -> depthwise (alone or with its projection): the depthwise takes the expansion.
        const bool fused = has_param(layer, kDwPrefix, params::kConvMode.key());
        if (layer.kind != kKind || has_param(layer, kExPrefix, params::kConvMode.key()) || layer.inputs.empty() ||
            !(fused || (mode_of(layer) == ConvMode::kDepthwiseNhwc && layer.inputs.size() == 1)) ||
            !sole_reader(layer.inputs[0])) {
          continue;
        }
        const int32_t t = layer.inputs[0];
        const size_t ex_index = static_cast<size_t>(producer[static_cast<size_t>(t)]);
        const PlanLayer& ex = plan.layers[ex_index];
        if (erase[ex_index] || !is_pointwise(ex) || ex.inputs.size() != 1 ||
            !batch_leads(plan.tensors[static_cast<size_t>(ex.inputs[0])])) {
          continue;
        }
        absorb(layer, ex_index, kExPrefix, !fused);
      }
    }
    erase_layers(plan, erase);
  }
}

// A global average pool (fp32_global_avgpool_nhwc) of a depthwise conv's output, EfficientNet's
// squeeze-excite, reads per-row channel sums [N, OH, C] the depthwise writes as its second output
// while each row is still in cache (the pool's input 1), instead of a pass over the output from
// L3 (EfficientNet-B0's 112x112x32 to 56x56x144 ones are 1.2-1.8 MB). The depthwise alone or fused
// with its expansion; not with its projection (the pool reads the output).
void fuse_pool_row_sums(EnginePlan& plan) {
  const TensorUses uses(plan);
  for (PlanLayer& pool : plan.layers) {
    if (pool.kind != "fp32_global_avgpool_nhwc" || pool.inputs.size() != 1 || pool.outputs.size() != 1 ||
        pool.inputs[0] < 0) {
      continue;
    }
    const int32_t t = pool.inputs[0];
    const int64_t producer = uses.producer[static_cast<size_t>(t)];
    if (producer < 0) continue;
    PlanLayer& conv = plan.layers[static_cast<size_t>(producer)];
    auto mode = conv.params.get_int(std::string(params::kConvMode.key()));
    if (conv.kind != kKind || conv.outputs.size() != 1 || conv.outputs[0] != t || !mode.ok() ||
        static_cast<ConvMode>(*mode) != ConvMode::kDepthwiseNhwc || has_param(conv, kDwPrefix, params::kConvMode.key())) {
      continue;
    }
    const PlanTensor y = plan.tensors[static_cast<size_t>(t)];
    if (y.shape.size() != 4 || y.layout != Layout::kNhwc || y.dtype != DataType::kFloat || !batch_leads(y)) continue;
    PlanTensor sums;
    sums.name = y.name + "/row_sums";
    sums.dtype = DataType::kFloat;
    sums.shape = {y.shape[0], y.shape[2], y.shape[1]};
    sums.batched = y.batched;
    sums.layout = Layout::kPlain;
    sums.bytes = safe_numel(sums.shape) * static_cast<int64_t>(sizeof(float));
    const int32_t index = static_cast<int32_t>(plan.tensors.size());
    plan.tensors.push_back(std::move(sums));
    conv.outputs.push_back(index);
    conv.kernel += " + row sums";
    pool.inputs.push_back(index);
    pool.kernel += " (row sums)";
  }
}

Status fuse_conv_epilogues(EnginePlan& plan) {
  std::vector<bool> unused(plan.tensors.size(), false);
  bool changed = true;
  while (changed) {
    changed = false;
    const TensorUses uses(plan);
    const std::vector<int64_t>& producer = uses.producer;
    const std::vector<int64_t>& readers = uses.readers;
    const std::vector<bool>& interface = uses.interface;
    for (size_t i = 0; i < plan.layers.size() && !changed; ++i) {
      PlanLayer& conv = plan.layers[i];
      auto mode = conv.params.get_int(std::string(params::kConvMode.key()));
      if (conv.kind != kKind || !mode.ok() || !is_nhwc(static_cast<ConvMode>(*mode)) || conv.outputs.size() != 1) {
        continue;
      }
      const int32_t t = conv.outputs[0];
      if (t < 0 || interface[static_cast<size_t>(t)]) continue;
      if (readers[static_cast<size_t>(t)] == 2 && !has_activation(conv)) {
        // SiLU as x * Sigmoid(x): the Sigmoid and the Mul read the conv's output.
        std::vector<size_t> reader_layers;
        for (size_t j = i + 1; j < plan.layers.size(); ++j) {
          const auto& inputs = plan.layers[j].inputs;
          if (std::find(inputs.begin(), inputs.end(), t) != inputs.end()) reader_layers.push_back(j);
        }
        if (reader_layers.size() == 2 && is_unary(plan.layers[reader_layers[0]], kernels::Fp32UnaryOp::kSigmoid) &&
            is_binary(plan.layers[reader_layers[1]], kernels::Fp32BinaryOp::kMul)) {
          const PlanLayer& sigmoid = plan.layers[reader_layers[0]];
          const PlanLayer& mul = plan.layers[reader_layers[1]];
          const int32_t gate = sigmoid.outputs[0];
          const bool pattern = sigmoid.inputs[0] == t && gate >= 0 && readers[static_cast<size_t>(gate)] == 1 &&
                               !interface[static_cast<size_t>(gate)] &&
                               ((mul.inputs[0] == t && mul.inputs[1] == gate) ||
                                (mul.inputs[0] == gate && mul.inputs[1] == t));
          if (pattern) {
            set_function(conv, kernels::Fp32EpilogueActivation::kSilu, sigmoid);
            conv.name += " + " + mul.name;
            conv.source_nodes.insert(conv.source_nodes.end(), mul.source_nodes.begin(), mul.source_nodes.end());
            conv.outputs[0] = mul.outputs[0];
            unused[static_cast<size_t>(t)] = true;
            unused[static_cast<size_t>(gate)] = true;
            plan.layers.erase(plan.layers.begin() + static_cast<std::ptrdiff_t>(reader_layers[1]));
            plan.layers.erase(plan.layers.begin() + static_cast<std::ptrdiff_t>(reader_layers[0]));
            changed = true;
            break;
          }
        }
      }
      if (readers[static_cast<size_t>(t)] != 1) continue;
      for (size_t j = i + 1; j < plan.layers.size(); ++j) {
        const auto& inputs = plan.layers[j].inputs;
        if (std::find(inputs.begin(), inputs.end(), t) == inputs.end()) continue;
        if (absorb(conv, i, plan.layers[j], producer)) {
          unused[static_cast<size_t>(t)] = true;
          plan.layers.erase(plan.layers.begin() + static_cast<std::ptrdiff_t>(j));
          changed = true;
        }
        break;
      }
    }
  }
  fold_channel_gates(plan, unused);
  fuse_depthwise_pointwise(plan, unused);
  remove_tensors(plan, unused);
  fuse_pool_row_sums(plan);
  return Status::ok();
}

}  // namespace

void register_conv(LayerRegistry& registry) {
  registry.add_kind({kKind, bind_conv});
  registry.add_lowering(
      {.domain = "", .op_type = "Conv", .lower = lower_conv, .accepts = all_float, .prefers_nhwc = true});
}

}  // namespace qdqrt::engine::fp32

namespace qdqrt::engine {
Status fuse_float_conv_epilogues(EnginePlan& plan) { return fp32::fuse_conv_epilogues(plan); }
}  // namespace qdqrt::engine
