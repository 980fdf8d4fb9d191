// ConvTester: fluent description of one NHWC convolution (GEMM, implicit GEMM, grouped or
// depthwise), checked on every supported ISA against the direct-convolution oracle (kernels/oracle.h),
// bit-exact.
#pragma once

#include <cmath>

#include "kernels/conv/qconv.h"
#include "kernels/conv/qconv_grouped.h"
#include "kernels/dispatch.h"
#include "kernels/oracle.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {

class ConvTester {
 public:
  ConvTester& batch(int value) { batch_ = value; return *this; }
  ConvTester& input_size(int height, int width) { input_height_ = height; input_width_ = width; return *this; }
  ConvTester& channels(int input, int output) { input_channels_ = input; output_channels_ = output; return *this; }
  ConvTester& groups(int value) { groups_ = value; return *this; }
  ConvTester& kernel(int height, int width) { kernel_height_ = height; kernel_width_ = width; return *this; }
  ConvTester& stride(int height, int width) { stride_height_ = height; stride_width_ = width; return *this; }
  ConvTester& padding(int top, int left, int bottom, int right) {
    pad_top_ = top; pad_left_ = left; pad_bottom_ = bottom; pad_right_ = right; return *this;
  }
  ConvTester& dilation(int height, int width) { dilation_height_ = height; dilation_width_ = width; return *this; }
  // Extra elements between pixels (a channel slice of a wider tensor, e.g. a Concat output).
  ConvTester& pixel_stride_extra(int input, int output) { input_extra_ = input; output_extra_ = output; return *this; }
  ConvTester& quant(const QuantSettings& value) { quant_ = value; return *this; }
  ConvTester& split(int parts) { split_ = parts; return *this; }
  // Each pixel range also in `blocks` ranges of conv_channel_tiles (run_conv_channels), as the
  // engine splits layers of few pixels.
  ConvTester& channel_split(int blocks) { channel_split_ = blocks; return *this; }
  ConvTester& seed(uint32_t value) { seed_ = value; return *this; }
  // Runs the grouped form's plain reference (internal::run_conv_grouped_reference) instead of
  // run_conv_channels; the packed convolution must take the grouped form.
  ConvTester& grouped_reference(bool value) { grouped_reference_ = value; return *this; }
  // Fails unless the kernel name contains `part` on every ISA from `from` up (checks that a test
  // reaches the kernel it means to).
  ConvTester& expect_kernel(std::string part, Isa from) {
    kernel_part_ = std::move(part);
    kernel_from_ = from;
    return *this;
  }

  ConvShape shape() const {
    ConvShape s;
    s.batch = batch_;
    s.input_height = input_height_;
    s.input_width = input_width_;
    s.stride_height = stride_height_;
    s.stride_width = stride_width_;
    s.pad_top = pad_top_;
    s.pad_left = pad_left_;
    s.dilation_height = dilation_height_;
    s.dilation_width = dilation_width_;
    s.output_height = (input_height_ + pad_top_ + pad_bottom_ - dilation_height_ * (kernel_height_ - 1) - 1) /
                          stride_height_ + 1;
    s.output_width = (input_width_ + pad_left_ + pad_right_ - dilation_width_ * (kernel_width_ - 1) - 1) /
                         stride_width_ + 1;
    return s;
  }

  std::string describe(Isa isa) const {
    std::ostringstream s;
    s << "Conv batch=" << batch_ << " input=" << input_height_ << "x" << input_width_ << "x" << input_channels_
      << " output_channels=" << output_channels_ << " groups=" << groups_ << " kernel=" << kernel_height_ << "x"
      << kernel_width_ << " stride=" << stride_height_ << "x" << stride_width_ << " pads=" << pad_top_ << ","
      << pad_left_ << "," << pad_bottom_ << "," << pad_right_ << " dilation=" << dilation_height_ << "x"
      << dilation_width_ << " stride_extra=" << input_extra_ << "/" << output_extra_ << " split=" << split_
      << " seed=" << seed_ << " isa=" << isa_name(isa) << "; " << quant_.describe();
    return s.str();
  }

  // Every register tile of the ISA's GEMM family (depthwise convolutions have one kernel).
  void test(Isa isa) const {
    for (const internal::GemmImplementation& tile : gemm_implementations(isa)) test(isa, tile.nr);
  }

  void test(Isa isa, int nr) const {
    const std::string context = describe(isa) + " nr=" + std::to_string(nr);
    const ConvShape s = shape();
    ASSERT_GT(s.output_height, 0) << context;
    ASSERT_GT(s.output_width, 0) << context;
    std::mt19937 rng(seed_);
    const QuantSettings& q = quant_;
    const int out_size = output_element_size(q.output_type);
    const int64_t in_stride = input_channels_ + input_extra_;
    const int64_t out_stride = output_channels_ + output_extra_;
    const int64_t in_pixels = static_cast<int64_t>(batch_) * input_height_ * input_width_;
    const int64_t out_pixels = s.output_pixels();
    const int group_in = input_channels_ / groups_;
    const int taps = kernel_height_ * kernel_width_;

    GuardedBuffer input((in_pixels - 1) * in_stride + input_channels_);
    fill_bytes(rng, input.data(), input.size());
    std::vector<uint8_t> weights(static_cast<size_t>(output_channels_) * group_in * taps);
    fill_bytes(rng, weights.data(), weights.size());
    const CaseQuantization quantization(rng, output_channels_, static_cast<int64_t>(group_in) * taps);

    ConvWeightsDesc desc;
    desc.output_channels = output_channels_;
    desc.input_channels = input_channels_;
    desc.groups = groups_;
    desc.kernel_height = kernel_height_;
    desc.kernel_width = kernel_width_;
    desc.weights = weights.data();
    quantization.describe(q, desc);

    const int64_t residual_stride = output_channels_ + 5;
    GuardedBuffer residual((out_pixels - 1) * residual_stride + output_channels_);
    fill_bytes(rng, residual.data(), residual.size());
    const Residual residual_desc = quantization.residual(q, residual, residual_stride);
    const Epilogue epilogue = quantization.epilogue(q, residual_desc);

    const size_t out_bytes = ((out_pixels - 1) * out_stride + output_channels_) * out_size;
    GuardedBuffer expected(out_bytes), actual(out_bytes);
    std::memset(expected.data(), 0x5A, out_bytes);
    std::memset(actual.data(), 0x5A, out_bytes);
    oracle_conv(desc, s, input.data(), in_stride, expected.data(), out_stride, epilogue);

    const PackedConv packed = pack_conv(desc, isa, nr);
    if (!kernel_part_.empty() && isa >= kernel_from_) {
      EXPECT_NE(conv_kernel_name(packed, s).find(kernel_part_), std::string::npos)
          << context << ": ran " << conv_kernel_name(packed, s) << ", expected " << kernel_part_;
    }
    ConvRunArgs args;
    args.input = input.data();
    args.input_pixel_stride = in_stride;
    args.output = actual.data();
    args.output_pixel_stride = out_stride;
    const int tiles = conv_channel_tiles(packed);
    // The engine's warm stream (a later layer's weights, here this conv's own twice over, so that
    // ranges cross from one span into the next) must not change a byte either.
    std::vector<std::span<const int8_t>> warm_spans = conv_streamed_weights(packed, s);
    const size_t own_spans = warm_spans.size();
    for (size_t i = 0; i < own_spans; ++i) warm_spans.push_back(warm_spans[i]);
    int64_t warm_bytes = 0;
    for (const auto& span : warm_spans) warm_bytes += static_cast<int64_t>(span.size());
    if (grouped_reference_) {
      ASSERT_TRUE(internal::conv_grouped_applies(packed)) << context;
    }
    for (int part = 0; part < split_; ++part) {
      for (int block = 0; block < channel_split_; ++block) {
        const int pixel_begin = static_cast<int>(out_pixels * part / split_);
        const int pixel_end = static_cast<int>(out_pixels * (part + 1) / split_);
        const int tile_begin = tiles * block / channel_split_, tile_end = tiles * (block + 1) / channel_split_;
        // The engine's prefetch hints (the next block's tiles, else the next layer's weights: here
        // this conv's own) must not change a byte.
        args.next_tile_end = block + 1 < channel_split_ ? tiles * (block + 2) / channel_split_ : 0;
        args.next_weights = block + 1 < channel_split_ ? std::span<const int8_t>() : conv_leading_weights(packed, s);
        const int64_t call = part * channel_split_ + block, calls = static_cast<int64_t>(split_) * channel_split_;
        args.warm = {warm_spans.data(), static_cast<int>(warm_spans.size()), warm_bytes / 4 + warm_bytes * call / calls / 2,
                     warm_bytes / 4 + warm_bytes * (call + 1) / calls / 2};
        if (grouped_reference_) {
          internal::run_conv_grouped_reference(packed, s, args, epilogue, pixel_begin, pixel_end, tile_begin, tile_end);
        } else {
          run_conv_channels(packed, s, args, epilogue, pixel_begin, pixel_end, tile_begin, tile_end);
        }
      }
    }
    expect_outputs_equal(q.output_type, expected.data(), actual.data(), static_cast<int>(out_pixels),
                         output_channels_, out_stride, context + " [" + conv_kernel_name(packed, s) + "]");
    for (int64_t p = 0; p + 1 < out_pixels; ++p) {
      for (int64_t byte = output_channels_ * out_size; byte < out_stride * out_size; ++byte) {
        ASSERT_EQ(actual.data()[p * out_stride * out_size + byte], 0x5A) << context << ": wrote into pixel gap " << p;
      }
    }
    EXPECT_TRUE(actual.canary_intact()) << context << ": wrote before the output";
  }

  void test_all_isas() const {
    for (Isa isa : supported_isas()) test(isa);
  }

 private:
  int channel_split_ = 1;
  bool grouped_reference_ = false;
  int batch_ = 1, input_height_ = 5, input_width_ = 5, input_channels_ = 8, output_channels_ = 8, groups_ = 1;
  int kernel_height_ = 3, kernel_width_ = 3, stride_height_ = 1, stride_width_ = 1;
  int pad_top_ = 0, pad_left_ = 0, pad_bottom_ = 0, pad_right_ = 0, dilation_height_ = 1, dilation_width_ = 1;
  int input_extra_ = 0, output_extra_ = 0;
  std::string kernel_part_;
  Isa kernel_from_ = Isa::kScalar;
  QuantSettings quant_;
  int split_ = 1;
  uint32_t seed_ = 1;
};

}  // namespace qdqrt::kernels::testing
