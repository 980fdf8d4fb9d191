// Tester of the fp32 igemm (kernels/fp32/fp32_sgemm.h): NHWC convolution or plain GEMM with
// random data on every ISA this machine runs, against a direct convolution in double from the
// unpacked weights. Inputs end at a guard page (an over-read faults), output pixels and input
// pixels may have padding channels, and the work is split into row and column ranges the way the
// engine's threads split it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/fp32/fp32_gemv.h"
#include "kernels/fp32/fp32_grouped.h"
#include "kernels/fp32/fp32_live_taps.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "kernels/fp32/fp32_sgemm_prefetch.h"
#include "kernels/fp32/fp32_winograd.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {

class Fp32ConvTester {
 public:
  Fp32ConvTester& batch(int value) { batch_ = value; return *this; }
  Fp32ConvTester& input_size(int height, int width) { height_ = height, width_ = width; return *this; }
  Fp32ConvTester& channels(int input, int output) { input_channels_ = input, output_channels_ = output; return *this; }
  Fp32ConvTester& kernel(int height, int width) { kernel_height_ = height, kernel_width_ = width; return *this; }
  Fp32ConvTester& stride(int height, int width) { stride_height_ = height, stride_width_ = width; return *this; }
  Fp32ConvTester& dilation(int height, int width) { dilation_height_ = height, dilation_width_ = width; return *this; }
  Fp32ConvTester& padding(int top, int left, int bottom, int right) {
    pad_top_ = top, pad_left_ = left, pad_bottom_ = bottom, pad_right_ = right;
    return *this;
  }
  Fp32ConvTester& pixel_stride_extra(int input, int output) { input_extra_ = input, output_extra_ = output; return *this; }
  Fp32ConvTester& clamp(float low, float high) { min_ = low, max_ = high; return *this; }
  Fp32ConvTester& residual(bool value) { residual_ = value; return *this; }
  Fp32ConvTester& activation(Fp32EpilogueActivation value) { activation_ = value; return *this; }
  Fp32ConvTester& bias(bool value) { bias_ = value; return *this; }
  // Split rows at `row_split` and columns at the panel boundary below `column_split` (0: none).
  Fp32ConvTester& split(int64_t row_split, int column_split) { row_split_ = row_split, column_split_ = column_split; return *this; }
  Fp32ConvTester& seed(uint32_t value) { seed_ = value; return *this; }
  // GEMM form: run_sgemm with A rows of `input_channels + input_extra` floats.
  Fp32ConvTester& plain_gemm(bool value) { plain_gemm_ = value; return *this; }
  // Depthwise (groups == channels): run_depthwise_f32 over output rows; output channels = input.
  Fp32ConvTester& depthwise(bool value) { depthwise_ = value; return *this; }
  // Winograd F(2x2, 3x3) (3x3, stride 1): run_winograd_f32 over 2x2 tiles (the row split in tiles).
  Fp32ConvTester& winograd(bool value) { winograd_ = value; return *this; }
  // Input channel c of image b scaled by a random gate[b][c] (run_sconv / run_sgemm on weights from
  // scale_packed_sgemm_channels, per image and per column range, as the engine's gated 1x1 conv).
  Fp32ConvTester& channel_scale(bool value) { channel_scale_ = value; return *this; }
  // Depthwise: each output row written to a one-row buffer (SconvArgs::output_pixel_offset, as the
  // engine's depthwise -> 1x1 bands do), then copied into place; its input rows read from a copy of
  // just those rows (SconvArgs::input_row_offset, input_image_stride 0: the expand -> depthwise
  // bands).
  Fp32ConvTester& band_output(bool value) { band_output_ = value; return *this; }
  // The input read as NCHW (a copy, ending at a guard page) by run_direct_nchw_f32 over output rows;
  // besides the double reference, bit-identical to run_sconv on the NHWC input (same ISA).
  Fp32ConvTester& direct_nchw(bool value) { direct_nchw_ = value; return *this; }
  // Grouped (1 < group < channels): run_grouped_sconv on pack_grouped_sgemm's blocks of groups;
  // besides the double reference, equal to run_grouped_sconv_blocks (the dense blocks) on the same
  // ISA (but for the shift tile's sums), and it runs half panels exactly when a block holds several
  // groups.
  Fp32ConvTester& groups(int value) { group_ = value; return *this; }
  // Plain GEMM: every row also computed in runs of 1 .. the small-M kernel's rows (run_sgemm's GEMV
  // path, fp32_gemv.h), each column range of the split alone, bitwise equal to the same rows of one
  // run_sgemm over all rows (the microkernel's tiles; rows must exceed the GEMV's limit).
  Fp32ConvTester& small_rows(bool value) { small_rows_ = value; return *this; }
  // run_sconv_live_taps (each row tile's taps that read only padding left out); besides the double
  // reference, equal to run_sconv on the same input (same ISA; the dropped products are zeros).
  Fp32ConvTester& live_taps(bool value) { live_taps_ = value; return *this; }
  // Plain GEMM through run_sgemm_with_layout(layout); besides the double reference, bitwise equal
  // to run_sgemm (A read in place) over all rows and columns.
  Fp32ConvTester& a_layout(SgemmALayout value) { a_layout_ = value; return *this; }

  void test_all_isas() const {
    for (Isa isa : supported_isas()) test(isa);
  }

  void test(Isa isa) const {
    SCOPED_TRACE(::testing::Message() << "isa " << isa_name(isa) << ", " << batch_ << "x" << height_ << "x" << width_
                                      << "x" << input_channels_ << " -> " << output_channels_ << ", kernel "
                                      << kernel_height_ << "x" << kernel_width_ << ", stride " << stride_height_
                                      << ", pads " << pad_top_ << "," << pad_left_ << "," << pad_bottom_ << ","
                                      << pad_right_ << ", dilation " << dilation_height_ << ", residual " << residual_
                                      << ", activation " << fp32_epilogue_activation_name(activation_));
    const int out_h = (height_ + pad_top_ + pad_bottom_ - dilation_height_ * (kernel_height_ - 1) - 1) / stride_height_ + 1;
    const int out_w = (width_ + pad_left_ + pad_right_ - dilation_width_ * (kernel_width_ - 1) - 1) / stride_width_ + 1;
    ASSERT_GT(out_h, 0);
    ASSERT_GT(out_w, 0);
    const int taps = kernel_height_ * kernel_width_;
    const int output_channels_ = depthwise_ ? input_channels_ : this->output_channels_;
    const int group_channels = depthwise_ ? 1 : input_channels_ / group_;
    const int out_per_group = output_channels_ / group_;
    ASSERT_EQ(input_channels_ % group_, 0);
    ASSERT_EQ(output_channels_ % group_, 0);
    const bool grouped = group_ > 1 && !depthwise_;
    const int64_t in_stride = input_channels_ + input_extra_, out_stride = output_channels_ + output_extra_;
    const int64_t in_pixels = static_cast<int64_t>(batch_) * height_ * width_;
    const int64_t out_pixels = static_cast<int64_t>(batch_) * out_h * out_w;
    std::mt19937 rng(seed_);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    GuardedBuffer input_buffer(static_cast<size_t>(in_pixels * in_stride) * sizeof(float));
    float* input = input_buffer.as<float>();
    for (int64_t i = 0; i < in_pixels * in_stride; ++i) input[i] = uniform(rng);
    std::vector<float> weights(static_cast<size_t>(output_channels_) * group_channels * taps);  // OIHW
    for (float& w : weights) w = uniform(rng);
    std::vector<float> bias(static_cast<size_t>(output_channels_));
    for (float& b : bias) b = uniform(rng);
    std::vector<float> residual(static_cast<size_t>(out_pixels * out_stride));
    for (float& r : residual) r = uniform(rng);
    std::vector<float> gate(static_cast<size_t>(batch_) * input_channels_, 1.0f);
    if (channel_scale_) {
      for (float& g : gate) g = 0.5f * uniform(rng) + 0.5f;
    }

    SgemmWeightsDesc desc;
    desc.n = output_channels_;
    desc.taps = taps;
    desc.channels = input_channels_;
    desc.weights = weights.data();
    desc.stride_n = static_cast<int64_t>(input_channels_) * taps;
    desc.stride_tap = 1;
    desc.stride_channel = taps;
    desc.bias = bias_ ? bias.data() : nullptr;
    const PackedSgemm packed = depthwise_ || grouped ? PackedSgemm{} : pack_sgemm(desc, isa);
    const PackedGroupedSgemm packed_grouped =
        grouped ? pack_grouped_sgemm(weights.data(), desc.bias, output_channels_, group_channels, taps, group_, isa)
                : PackedGroupedSgemm{};
    const PackedWinogradF32 packed_winograd =
        winograd_ ? pack_winograd_f32(output_channels_, input_channels_, weights.data(), desc.bias, isa)
                  : PackedWinogradF32{};
    AlignedBuffer<float> winograd_scratch(
        winograd_ ? static_cast<size_t>(winograd_f32_scratch_floats(output_channels_, input_channels_, isa)) : 0);
    const PackedDepthwiseF32 packed_depthwise =
        depthwise_ ? pack_depthwise_f32(input_channels_, taps, weights.data(), desc.bias, isa) : PackedDepthwiseF32{};

    const float kSentinel = -12345.0f;
    std::vector<float> output(static_cast<size_t>(out_pixels * out_stride), kSentinel);
    Fp32Epilogue epilogue;
    epilogue.min = min_;
    epilogue.max = max_;
    epilogue.activation = activation_;
    if (residual_) {
      epilogue.residual = residual.data();
      epilogue.residual_row_stride = out_stride;
    }
    SconvGeometry geometry;
    geometry.input_height = height_;
    geometry.input_width = width_;
    geometry.input_pixel_stride = in_stride;
    geometry.input_image_stride = static_cast<int64_t>(height_) * width_ * in_stride;
    geometry.kernel_height = kernel_height_;
    geometry.kernel_width = kernel_width_;
    geometry.stride_height = stride_height_;
    geometry.stride_width = stride_width_;
    geometry.pad_top = pad_top_;
    geometry.pad_left = pad_left_;
    geometry.dilation_height = dilation_height_;
    geometry.dilation_width = dilation_width_;
    geometry.output_height = out_h;
    geometry.output_width = out_w;
    const SconvArgs args{input, output.data(), out_stride};
    // The NCHW copy of the input (input_extra_ 0) for the direct kernel.
    GuardedBuffer nchw_buffer(direct_nchw_ ? static_cast<size_t>(in_pixels * input_channels_) * sizeof(float) : 4);
    if (direct_nchw_) {
      EXPECT_TRUE(direct_nchw_f32_applies(input_channels_, geometry));
      float* nchw = nchw_buffer.as<float>();
      for (int64_t p = 0; p < in_pixels; ++p) {
        const int64_t image = p / (static_cast<int64_t>(height_) * width_), pixel = p % (static_cast<int64_t>(height_) * width_);
        for (int c = 0; c < input_channels_; ++c) {
          nchw[(image * input_channels_ + c) * height_ * width_ + pixel] = input[p * in_stride + c];
        }
      }
    }
    SconvGeometry nchw_geometry = geometry;
    nchw_geometry.input_image_stride = static_cast<int64_t>(input_channels_) * height_ * width_;
    const SconvArgs nchw_args{nchw_buffer.as<float>(), output.data(), out_stride};
    // Depthwise and direct NCHW split whole output rows.
    // Winograd splits 2x2 tiles.
    const int64_t tiles = winograd_f32_tiles(geometry, batch_);
    const int64_t rows = winograd_ ? tiles : out_pixels;
    const int64_t row_split = depthwise_ || direct_nchw_ ? std::clamp<int64_t>(row_split_, 0, out_pixels / out_w) * out_w
                                         : std::clamp<int64_t>(row_split_, 0, rows);
    // Columns split at a panel (depthwise: a channel block) boundary.
    const int column_unit = depthwise_ ? kDepthwiseF32ChannelBlock : sgemm_tile(isa).nr;
    const int column_split = std::min(column_split_ / column_unit * column_unit, output_channels_);
    AlignedBuffer<float> scaled(channel_scale_ ? static_cast<size_t>(packed_sgemm_floats(output_channels_, packed.k(), isa))
                                               : 0);
    auto run = [&](int64_t m_begin, int64_t m_end, int n_begin, int n_end) {
      if (m_begin >= m_end || n_begin >= n_end) return;
      if (channel_scale_) {
        // Per image: its gate's weights over this column range, then its rows.
        const int64_t image_pixels = static_cast<int64_t>(out_h) * out_w;
        for (int64_t image = m_begin / image_pixels; image * image_pixels < m_end; ++image) {
          scale_packed_sgemm_channels(packed, gate.data() + image * input_channels_, n_begin, n_end, scaled.data());
          const PackedSgemm view = packed_sgemm_view(output_channels_, taps, input_channels_, isa, scaled.data(),
                                                     packed.bias.data());
          const int64_t first = std::max(m_begin, image * image_pixels);
          const int64_t last = std::min(m_end, (image + 1) * image_pixels);
          if (plain_gemm_) {
            run_sgemm(view, input, in_stride, output.data(), out_stride, epilogue, first, last, n_begin, n_end);
          } else {
            run_sconv(view, geometry, args, epilogue, first, last, n_begin, n_end);
          }
        }
        return;
      }
      if (winograd_) {
        run_winograd_f32(packed_winograd, geometry, args, epilogue, m_begin, m_end, n_begin, n_end,
                         winograd_scratch.data());
      } else if (depthwise_ && band_output_) {
        std::vector<float> band(static_cast<size_t>(out_w * out_stride), kSentinel);
        for (int64_t row = m_begin / out_w; row < m_end / out_w; ++row) {
          const int64_t image = row / out_h, oy = row % out_h;
          const int y0 = static_cast<int>(std::clamp<int64_t>(oy * stride_height_ - pad_top_, 0, height_));
          const int y1 = static_cast<int>(std::clamp<int64_t>(
              oy * stride_height_ - pad_top_ + (kernel_height_ - 1) * dilation_height_ + 1, y0, height_));
          GuardedBuffer rows_buffer(static_cast<size_t>(std::max(y1 - y0, 1)) * width_ * in_stride * sizeof(float));
          std::copy_n(input + (image * height_ + y0) * width_ * in_stride, static_cast<int64_t>(y1 - y0) * width_ * in_stride,
                      rows_buffer.as<float>());
          SconvGeometry rows_geometry = geometry;
          rows_geometry.input_image_stride = 0;
          SconvArgs band_args = args;
          band_args.input = rows_buffer.as<float>();
          band_args.input_row_offset = y0;
          band_args.output = band.data();
          band_args.output_pixel_offset = row * out_w;
          run_depthwise_f32(packed_depthwise, rows_geometry, band_args, epilogue, row, row + 1, n_begin, n_end);
          ASSERT_TRUE(rows_buffer.canary_intact());
          for (int64_t i = 0; i < out_w * out_stride; ++i) {
            if (i % out_stride >= n_begin && i % out_stride < n_end) output[static_cast<size_t>(row * out_w * out_stride + i)] = band[static_cast<size_t>(i)];
          }
        }
      } else if (direct_nchw_) {
        run_direct_nchw_f32(packed, nchw_geometry, nchw_args, epilogue, m_begin / out_w, m_end / out_w, n_begin, n_end);
      } else if (depthwise_) {
        run_depthwise_f32(packed_depthwise, geometry, args, epilogue, m_begin / out_w, m_end / out_w, n_begin, n_end);
      } else if (grouped) {
        run_grouped_sconv(packed_grouped, geometry, args, epilogue, m_begin, m_end, n_begin, n_end);
      } else if (plain_gemm_) {
        run_sgemm_with_layout(packed, input, in_stride, output.data(), out_stride, epilogue, m_begin, m_end, n_begin,
                              n_end, a_layout_);
      } else if (live_taps_) {
        run_sconv_live_taps(packed, geometry, args, epilogue, m_begin, m_end, n_begin, n_end);
      } else {
        run_sconv(packed, geometry, args, epilogue, m_begin, m_end, n_begin, n_end);
      }
    };
    for (auto [m_begin, m_end] : {std::pair<int64_t, int64_t>{0, row_split}, {row_split, rows}}) {
      run(m_begin, m_end, 0, column_split);
      run(m_begin, m_end, column_split, output_channels_);
    }
    if (small_rows_) test_small_rows(isa, packed, input, in_stride, out_stride, epilogue, rows, column_split);
    ASSERT_TRUE(input_buffer.canary_intact());
    ASSERT_TRUE(nchw_buffer.canary_intact());
    if (live_taps_) {
      std::vector<float> igemm(output.size(), kSentinel);
      SconvArgs igemm_args = args;
      igemm_args.output = igemm.data();
      run_sconv(packed, geometry, igemm_args, epilogue, 0, out_pixels, 0, output_channels_);
      for (size_t i = 0; i < output.size(); ++i) {
        ASSERT_TRUE(output[i] == igemm[i]) << "element " << i << ": live taps " << output[i] << ", igemm " << igemm[i];
      }
    }
    if (plain_gemm_ && a_layout_ != SgemmALayout::kRows && !channel_scale_) {
      std::vector<float> rows_layout(output.size(), kSentinel);
      run_sgemm(packed, input, in_stride, rows_layout.data(), out_stride, epilogue, 0, out_pixels, 0, output_channels_);
      for (size_t i = 0; i < output.size(); ++i) {
        ASSERT_EQ(std::memcmp(&output[i], &rows_layout[i], sizeof(float)), 0)
            << "element " << i << ": layout " << static_cast<int>(a_layout_) << " " << output[i] << ", rows "
            << rows_layout[i];
      }
    }
    if (grouped) {
      const GroupedSgemmLayout& layout = packed_grouped.layout;
      EXPECT_EQ(grouped_sgemm_runs_halves(layout), layout.block_in > group_channels);
      std::vector<float> blocks(output.size(), kSentinel);
      SconvArgs blocks_args = args;
      blocks_args.output = blocks.data();
      run_grouped_sconv_blocks(packed_grouped, geometry, blocks_args, epilogue, 0, out_pixels, 0, output_channels_);
      // The shift tile sums in another order: checked against the double reference below only.
      for (size_t i = 0; i < output.size() && !grouped_sgemm_shift_applies(layout, isa); ++i) {
        // == : the skipped zero products may change only the sign of a zero sum.
        ASSERT_TRUE(output[i] == blocks[i]) << "element " << i << ": halves " << output[i] << ", blocks " << blocks[i];
      }
    }
    if (direct_nchw_) {
      std::vector<float> igemm(output.size(), kSentinel);
      SconvArgs igemm_args = args;
      igemm_args.output = igemm.data();
      run_sconv(packed, geometry, igemm_args, epilogue, 0, out_pixels, 0, output_channels_);
      for (size_t i = 0; i < output.size(); ++i) {
        ASSERT_EQ(std::memcmp(&output[i], &igemm[i], sizeof(float)), 0)
            << "element " << i << ": direct " << output[i] << ", igemm " << igemm[i];
      }
    }

    int64_t mismatches = 0;
    for (int64_t m = 0; m < out_pixels; ++m) {
      const int64_t image = m / (out_h * out_w), oy = m / out_w % out_h, ox = m % out_w;
      for (int n = 0; n < output_channels_; ++n) {
        double sum = bias_ ? bias[static_cast<size_t>(n)] : 0.0, magnitude = std::fabs(sum);
        for (int ky = 0; ky < kernel_height_; ++ky) {
          for (int kx = 0; kx < kernel_width_; ++kx) {
            const int64_t y = oy * stride_height_ - pad_top_ + ky * dilation_height_;
            const int64_t x = ox * stride_width_ - pad_left_ + kx * dilation_width_;
            if (y < 0 || y >= height_ || x < 0 || x >= width_) continue;
            const float* pixel = input + ((image * height_ + y) * width_ + x) * in_stride;
            const int c_begin = depthwise_ ? n : n / out_per_group * group_channels;
            const int c_end = depthwise_ ? n + 1 : c_begin + group_channels;
            for (int c = c_begin; c < c_end; ++c) {
              const int group_c = c - c_begin;
              const double term = static_cast<double>(pixel[c]) * gate[static_cast<size_t>(image * input_channels_ + c)] *
                                  weights[(static_cast<size_t>(n) * group_channels + group_c) * taps + ky * kernel_width_ + kx];
              sum += term;
              magnitude += std::fabs(term);
            }
          }
        }
        if (residual_) {
          sum += residual[static_cast<size_t>(m * out_stride + n)];
          magnitude += std::fabs(residual[static_cast<size_t>(m * out_stride + n)]);
        }
        const double expected = activate(std::min<double>(std::max<double>(sum, min_), max_));
        const float got = output[static_cast<size_t>(m * out_stride + n)];
        // fp32 accumulation over taps * channels terms: a few ulps of the terms' magnitude (Winograd:
        // the transforms' sums and differences of inputs and of weights, a few ulps more).
        const double tolerance = (winograd_ ? 1e-5 : 2e-6) * magnitude + 1e-6 + 4e-7 * std::fabs(expected);
        if (!(std::fabs(got - expected) <= tolerance) && mismatches++ < 5) {
          ADD_FAILURE() << "pixel " << m << " channel " << n << ": got " << got << ", expected " << expected;
        }
      }
      for (int64_t n = output_channels_; n < out_stride; ++n) {
        if (output[static_cast<size_t>(m * out_stride + n)] != kSentinel && mismatches++ < 5) {
          ADD_FAILURE() << "pixel " << m << ": padding channel " << n << " was written";
        }
      }
    }
    EXPECT_EQ(mismatches, 0);
  }

 private:
  void test_small_rows(Isa isa, const PackedSgemm& packed, const float* input, int64_t in_stride, int64_t out_stride,
                       const Fp32Epilogue& epilogue, int64_t rows, int column_split) const {
    ASSERT_TRUE(plain_gemm_ && !channel_scale_);
    const int max_rows = isa == Isa::kScalar ? 0 : sgemv_implementation(isa).max_rows;
    // Vector ISAs take the GEMV path for 1..max_rows rows and not past it.
    for (int r = 1; r <= max_rows + 1; ++r) EXPECT_EQ(sgemv_applies(packed, r), r <= max_rows) << r << " rows";
    ASSERT_FALSE(sgemv_applies(packed, rows)) << "the tiled run needs more rows";
    const float kSentinel = -12345.0f;
    std::vector<float> tiled(static_cast<size_t>(rows * out_stride), kSentinel);
    run_sgemm(packed, input, in_stride, tiled.data(), out_stride, epilogue, 0, rows, 0, output_channels_);
    for (int group = 1; group <= std::max(max_rows, 1); ++group) {
      // Runs of `group` rows from row 0 and from row 1 (a first run of one row).
      for (int first = 0; first <= std::min(1, group - 1); ++first) {
        SCOPED_TRACE(::testing::Message() << "runs of " << group << " rows from row " << first);
        std::vector<float> small(tiled.size(), kSentinel);
        for (int64_t m = 0; m < rows; m = m == 0 && first > 0 ? first : m + group) {
          const int64_t end = std::min(rows, m == 0 && first > 0 ? first : m + group);
          for (auto [n_begin, n_end] : {std::pair<int, int>{0, column_split}, {column_split, output_channels_}}) {
            if (n_begin < n_end) {
              run_sgemm(packed, input, in_stride, small.data(), out_stride, epilogue, m, end, n_begin, n_end);
            }
          }
        }
        for (size_t i = 0; i < tiled.size(); ++i) {
          ASSERT_EQ(std::memcmp(&small[i], &tiled[i], sizeof(float)), 0)
              << "row " << i / out_stride << " column " << i % out_stride << ": small " << small[i] << ", tiled "
              << tiled[i];
        }
      }
    }
  }

  double activate(double x) const {
    switch (activation_) {
      case Fp32EpilogueActivation::kNone: return x;
      case Fp32EpilogueActivation::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
      case Fp32EpilogueActivation::kSilu: return x / (1.0 + std::exp(-x));
      case Fp32EpilogueActivation::kHardSwish: return x * std::min(1.0, std::max(0.0, x / 6.0 + 0.5));
      case Fp32EpilogueActivation::kGelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    }
    return x;
  }

  Fp32EpilogueActivation activation_ = Fp32EpilogueActivation::kNone;
  int batch_ = 1, height_ = 5, width_ = 5, input_channels_ = 8, output_channels_ = 16;
  int kernel_height_ = 1, kernel_width_ = 1, stride_height_ = 1, stride_width_ = 1;
  int dilation_height_ = 1, dilation_width_ = 1;
  int pad_top_ = 0, pad_left_ = 0, pad_bottom_ = 0, pad_right_ = 0;
  int input_extra_ = 0, output_extra_ = 0;
  int group_ = 1;
  float min_ = -INFINITY, max_ = INFINITY;
  bool residual_ = false, bias_ = true, plain_gemm_ = false, depthwise_ = false, winograd_ = false;
  bool channel_scale_ = false, band_output_ = false, direct_nchw_ = false, small_rows_ = false, live_taps_ = false;
  SgemmALayout a_layout_ = SgemmALayout::kRows;
  int64_t row_split_ = 0;
  int column_split_ = 0;
  uint32_t seed_ = 1;
};

}  // namespace qdqrt::kernels::testing
