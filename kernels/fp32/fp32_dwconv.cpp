// fp32 depthwise NHWC convolution: weight packing and the driver that walks output rows and builds
// the per-tap input pointers (portable; the microkernels are per ISA, chosen by
// sgemm_implementation()).
#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "kernels/dispatch.h"
#include "kernels/fp32/fp32_conv_internal.h"
#include "kernels/fp32/fp32_sgemm.h"

namespace qdqrt::kernels {

int depthwise_f32_padded_channels(int channels) { return (channels + 15) / 16 * 16; }

PackedDepthwiseF32 pack_depthwise_f32(int channels, int taps, const float* weights, const float* bias, Isa isa) {
  PackedDepthwiseF32 packed;
  packed.isa = usable_isa(isa);
  packed.channels = channels;
  packed.taps = taps;
  packed.channels_padded = depthwise_f32_padded_channels(channels);
  packed.weights.resize(static_cast<size_t>(packed.channels_padded) * taps);
  packed.bias.resize(static_cast<size_t>(packed.channels_padded));
  packed.zeros.resize(static_cast<size_t>(packed.channels_padded));
  for (int c = 0; c < channels; ++c) {
    for (int tap = 0; tap < taps; ++tap) {
      packed.weights.data()[static_cast<size_t>(tap) * packed.channels_padded + c] = weights[c * taps + tap];
    }
    if (bias) packed.bias.data()[c] = bias[c];
  }
  return packed;
}

PackedDepthwiseF32 packed_depthwise_f32_view(int channels, int taps, Isa isa, const float* weights, const float* bias) {
  PackedDepthwiseF32 packed;
  packed.isa = usable_isa(isa);
  packed.channels = channels;
  packed.taps = taps;
  packed.channels_padded = depthwise_f32_padded_channels(channels);
  packed.weights = AlignedBuffer<float>::view(weights, static_cast<size_t>(packed.channels_padded) * taps);
  packed.bias = AlignedBuffer<float>::view(bias, static_cast<size_t>(packed.channels_padded));
  packed.zeros.resize(static_cast<size_t>(packed.channels_padded));
  return packed;
}

void run_depthwise_f32(const PackedDepthwiseF32& packed, const SconvGeometry& g, const SconvArgs& args,
                       const Fp32Epilogue& epilogue, int64_t row_begin, int64_t row_end, int channel_begin,
                       int channel_end) {
  if (channel_end < 0 || channel_end > packed.channels) channel_end = packed.channels;
  assert(channel_begin % kDepthwiseF32ChannelBlock == 0);
  if (channel_begin >= channel_end) return;
  const internal::SgemmImplementation& impl = sgemm_implementation(packed.isa);
  // The channel range as its own convolution: every pointer moves by channel_begin.
  const float* zeros = packed.zeros.data();
  const float* weights = packed.weights.data() + channel_begin;
  const float* input = args.input + channel_begin;
  float* output = args.output + channel_begin;
  const float* residual = epilogue.residual ? epilogue.residual + channel_begin : nullptr;
  const float* pointers[kSgemmMaxTaps];
  internal::DepthwiseUkernelArgs ukernel_args;
  ukernel_args.channels = channel_end - channel_begin;
  ukernel_args.taps = packed.taps;
  ukernel_args.channels_padded = packed.channels_padded;
  ukernel_args.a = pointers;
  ukernel_args.w = weights;
  ukernel_args.bias = packed.bias.data() + channel_begin;
  ukernel_args.min = epilogue.min;
  ukernel_args.max = epilogue.max;
  ukernel_args.activation = epilogue.activation;
  // Output columns whose every horizontal tap is inside the input: [interior_begin, interior_end).
  const int interior_begin = std::min(g.output_width, (g.pad_left + g.stride_width - 1) / g.stride_width);
  const int last_x = g.input_width - 1 + g.pad_left - (g.kernel_width - 1) * g.dilation_width;
  const int interior_end = std::clamp(last_x < 0 ? 0 : last_x / g.stride_width + 1, interior_begin, g.output_width);
  const float* row_a[kSgemmMaxTaps];
  const float* row_w[kSgemmMaxTaps];
  internal::DepthwisePixelStore store;
  store.bias = packed.bias.data() + channel_begin;
  store.c_step = args.output_row_stride;
  store.residual_step = epilogue.residual_row_stride;
  store.min = epilogue.min;
  store.max = epilogue.max;
  store.activation = epilogue.activation;
  internal::DepthwiseRowArgs row_args;
  static_cast<internal::DepthwisePixelStore&>(row_args) = store;
  row_args.channels = channel_end - channel_begin;
  row_args.a = row_a;
  row_args.w = row_w;
  row_args.a_step = g.stride_width * g.input_pixel_stride;
  // 3x3 and 5x5 kernels at stride 1 or 2 (MobileNet's, EfficientNet's): whole rows, borders
  // included, in blocks of pixels on the window kernel (each input loaded once per kernel row;
  // the 5x5 layers at 7x7 and 14x14 had most of their pixels on the per-pixel border kernel).
  constexpr int kWindowKernelRows = 11;
  if (impl.depthwise_window && g.dilation_width == 1 && (g.kernel_width == 3 || g.kernel_width == 5) &&
      (g.stride_width == 1 || g.stride_width == 2) && g.kernel_height <= kWindowKernelRows) {
    const float* window_a[kWindowKernelRows * internal::kDepthwiseWindowInputs];
    const float* window_w[kWindowKernelRows];
    const float* row_input[kWindowKernelRows];
    internal::DepthwiseWindowArgs window;
    static_cast<internal::DepthwisePixelStore&>(window) = store;
    window.channels = channel_end - channel_begin;
    window.kernel_width = g.kernel_width;
    window.stride = g.stride_width;
    window.a = window_a;
    window.w = window_w;
    window.w_tap_stride = packed.channels_padded;
    for (int64_t row = row_begin; row < row_end; ++row) {
      const int64_t image = row / g.output_height;
      const int oy = static_cast<int>(row % g.output_height);
      const float* image_input = input + image * g.input_image_stride;
      int rows = 0;
      for (int ky = 0; ky < g.kernel_height; ++ky) {
        const int y = oy * g.stride_height - g.pad_top + ky * g.dilation_height;
        if (y < 0 || y >= g.input_height) continue;  // adds zeros
        row_input[rows] = image_input + static_cast<int64_t>(y - args.input_row_offset) * g.input_width * g.input_pixel_stride;
        window_w[rows++] = weights + static_cast<int64_t>(ky) * g.kernel_width * packed.channels_padded;
      }
      window.kernel_rows = rows;
      for (int ox = 0; ox < g.output_width; ox += internal::kDepthwiseWindowPixels) {
        window.pixels = std::min(internal::kDepthwiseWindowPixels, g.output_width - ox);
        const int inputs = g.stride_width * (window.pixels - 1) + g.kernel_width;
        const int x0 = ox * g.stride_width - g.pad_left;
        if (x0 >= 0 && x0 + inputs <= g.input_width) {
          // Inside the row: consecutive pixels, no bounds to test (most blocks; with 32 channels
          // the tests cost about as much as the block's multiply-adds).
          for (int r = 0; r < rows; ++r) {
            const float** out = window_a + r * internal::kDepthwiseWindowInputs;
            const float* pixel = row_input[r] + static_cast<int64_t>(x0) * g.input_pixel_stride;
            for (int j = 0; j < inputs; ++j, pixel += g.input_pixel_stride) out[j] = pixel;
          }
        } else {
          for (int r = 0; r < rows; ++r) {
            const float** out = window_a + r * internal::kDepthwiseWindowInputs;
            for (int j = 0; j < inputs; ++j) {
              const int x = x0 + j;
              out[j] = x >= 0 && x < g.input_width ? row_input[r] + static_cast<int64_t>(x) * g.input_pixel_stride
                                                    : zeros;
            }
          }
        }
        const int64_t pixel = row * g.output_width + ox;
        window.c = output + (pixel - args.output_pixel_offset) * args.output_row_stride;
        window.residual = residual ? residual + pixel * epilogue.residual_row_stride : nullptr;
        impl.depthwise_window(window);
      }
    }
    return;
  }
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t image = row / g.output_height;
    const int oy = static_cast<int>(row % g.output_height);
    const float* image_input = input + image * g.input_image_stride;
    if (interior_end > interior_begin) {
      // The interior run: rows of taps outside the input are left out (they add zeros).
      int taps = 0;
      const int x0 = interior_begin * g.stride_width - g.pad_left;
      for (int ky = 0; ky < g.kernel_height; ++ky) {
        const int y = oy * g.stride_height - g.pad_top + ky * g.dilation_height;
        if (y < 0 || y >= g.input_height) continue;
        for (int kx = 0; kx < g.kernel_width; ++kx, ++taps) {
          row_a[taps] = image_input + (static_cast<int64_t>(y - args.input_row_offset) * g.input_width + x0 +
                                       kx * g.dilation_width) * g.input_pixel_stride;
          row_w[taps] = weights + static_cast<int64_t>(ky * g.kernel_width + kx) * packed.channels_padded;
        }
      }
      const int64_t pixel = row * g.output_width + interior_begin;
      row_args.taps = taps;
      row_args.pixels = interior_end - interior_begin;
      row_args.c = output + (pixel - args.output_pixel_offset) * args.output_row_stride;
      row_args.residual = residual ? residual + pixel * epilogue.residual_row_stride : nullptr;
      impl.depthwise_row(row_args);
    }
    for (int ox = 0; ox < g.output_width; ++ox) {
      if (ox == interior_begin && interior_end > interior_begin) ox = interior_end;
      if (ox >= g.output_width) break;
      internal::tap_pointers(g, image_input, oy, ox, zeros, pointers, 1, args.input_row_offset);
      const int64_t pixel = row * g.output_width + ox;
      ukernel_args.c = output + (pixel - args.output_pixel_offset) * args.output_row_stride;
      ukernel_args.residual = residual ? residual + pixel * epilogue.residual_row_stride : nullptr;
      impl.depthwise(ukernel_args);
    }
  }
}

std::string depthwise_f32_kernel_name(const PackedDepthwiseF32& packed) {
  return fmt::format("f32-dwconv-{}", sgemm_implementation(packed.isa).isa_suffix);
}

}  // namespace qdqrt::kernels
