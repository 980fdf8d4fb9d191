#include "kernels/dwconv/qdwconv.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kernels/dispatch.h"

namespace qdqrt::kernels {

PackedDepthwise pack_depthwise(const DepthwiseWeightsDesc& desc, Isa isa) {
  const internal::DepthwiseImplementation& impl = depthwise_implementation(isa);
  PackedDepthwise packed;
  packed.isa = impl.isa;
  packed.channels = desc.channels;
  packed.channels_padded = (desc.channels + 15) / 16 * 16;
  packed.kernel_height = desc.kernel_height;
  packed.kernel_width = desc.kernel_width;
  packed.input_signed = desc.input_signed;
  packed.input_zero_point = desc.input_zero_point;
  const int taps = desc.kernel_height * desc.kernel_width;
  packed.weights.resize(static_cast<size_t>(taps) * packed.channels_padded);
  packed.bias.resize(packed.channels_padded);
  packed.multiplier.resize(packed.channels_padded);
  packed.float_bias.resize(packed.channels_padded);
  for (int c = 0; c < desc.channels; ++c) {
    int32_t weight_sum = 0;
    for (int t = 0; t < taps; ++t) {
      const int32_t w = depthwise_weight_value(desc, c, t) - desc.weight_zero_point;
      weight_sum += w;
      packed.weights[static_cast<size_t>(t) * packed.channels_padded + c] =
          static_cast<int32_t>(static_cast<uint16_t>(static_cast<int16_t>(w)));
    }
    uint32_t bias = desc.bias_int32 ? static_cast<uint32_t>(desc.bias_int32[c]) : 0u;
    bias -= static_cast<uint32_t>(desc.input_zero_point) * static_cast<uint32_t>(weight_sum);
    packed.bias[c] = static_cast<int32_t>(bias);
    packed.multiplier[c] = depthwise_multiplier(desc, c);
    packed.float_bias[c] = depthwise_float_bias(desc, c);
  }
  prepare_depthwise_dot(packed);
  return packed;
}

void prepare_depthwise_dot(PackedDepthwise& packed) {
  packed.dot_weights = {};
  packed.dot_bias = {};
  packed.dot_multiplier = {};
  packed.dot_float_bias = {};
  packed.dot_channels = 0;
  packed.dot_bounded = false;
  packed.dot_tail_groups = 0;
  packed.dot_tail_weights = {};
  packed.dot_tail_bias = {};
  packed.dot_tail_multiplier = {};
  packed.dot_tail_float_bias = {};
  const int kernel = packed.kernel_height;
  if (packed.isa < Isa::kAvx512Vnni || kernel != packed.kernel_width || (kernel != 3 && kernel != 5)) return;
  const int taps = kernel * kernel;
  const int64_t stride = packed.channels_padded;
  auto weight = [&](int c, int tap) { return static_cast<int16_t>(packed.weights[tap * stride + c]); };
  for (int c = 0; c < packed.channels; ++c) {
    for (int t = 0; t < taps; ++t) {
      if (weight(c, t) < -128 || weight(c, t) > 127) return;
    }
  }
  const int row_groups = (kernel + 3) / 4;
  // Blocks of 64 channels; a last one of at most 32 channels is a block of 32.
  auto block_width = [&](int block) { return packed.channels - block > 32 ? 64 : 32; };
  int dot_channels = 0;
  while (dot_channels < packed.channels) dot_channels += block_width(dot_channels);
  packed.dot_channels = dot_channels;
  packed.dot_weights.resize(static_cast<size_t>(row_groups) * kernel * dot_channels * 4);
  packed.dot_bias.resize(dot_channels);
  packed.dot_multiplier.resize(dot_channels);
  packed.dot_float_bias.resize(dot_channels);
  packed.dot_bounded = true;
  for (int block = 0; block < dot_channels; block += block_width(block)) {
    const int width = block_width(block);
    for (int position = 0; position < width; ++position) {
      const int c = block + depthwise_dot_channel(position, width);
      const int slot = block + position;
      if (c >= packed.channels) continue;  // zero weights and constants: computed, never stored
      int32_t weight_sum = 0, weight_magnitude = 0;
      for (int ky = 0; ky < kernel; ++ky) {
        for (int kx = 0; kx < kernel; ++kx) {
          const int16_t w = weight(c, ky * kernel + kx);
          weight_sum += w;
          weight_magnitude += std::abs(w);
          const size_t row_base = (static_cast<size_t>(ky / 4) * kernel + kx) * dot_channels;
          packed.dot_weights[(row_base + slot) * 4 + ky % 4] = static_cast<int8_t>(w);
        }
      }
      // Signed input runs as x + 128 (a sign-bit flip), which adds 128 * sum(w) to the dot product.
      const uint32_t correction = packed.input_signed ? 128u * static_cast<uint32_t>(weight_sum) : 0u;
      packed.dot_bias[slot] = static_cast<int32_t>(static_cast<uint32_t>(packed.bias[c]) - correction);
      packed.dot_multiplier[slot] = packed.multiplier[c];
      packed.dot_float_bias[slot] = packed.float_bias[c];
      // int32 accumulation wraps like the reference's, so no accumulator exceeds 2^31 either way.
      const double largest_accumulator =
          std::min(0x1p31, std::fabs(static_cast<double>(packed.dot_bias[slot])) + 255.0 * weight_magnitude);
      const double largest = largest_accumulator * std::fabs(static_cast<double>(packed.multiplier[c])) +
                             std::fabs(static_cast<double>(packed.float_bias[c]));
      if (!(largest < 0x1p30)) packed.dot_bounded = false;  // also false for NaN
    }
  }
  // 17..32 channels: the 32-channel layout repeated for 2 tiles per zmm.
  const int tail = dot_channels - 32;
  if (dot_channels == 32 && packed.channels > 16) {
    const int groups = 2;
    const int lanes_per_group = 4 / groups;
    packed.dot_tail_groups = groups;
    packed.dot_tail_weights.resize(static_cast<size_t>(row_groups) * kernel * 4 * 64);
    packed.dot_tail_bias.resize(64);
    packed.dot_tail_multiplier.resize(64);
    packed.dot_tail_float_bias.resize(64);
    for (int vector = 0; vector < 4; ++vector) {
      for (int lane = 0; lane < 4; ++lane) {
        // The 32-channel layout: vector i at 8 * i int32 lanes, its 128-bit lane L at 4 * L more.
        const int source = tail + 8 * vector + 4 * (lane % lanes_per_group);
        for (int j = 0; j < 4; ++j) {
          const int target = 16 * vector + 4 * lane + j;
          packed.dot_tail_bias[target] = packed.dot_bias[source + j];
          packed.dot_tail_multiplier[target] = packed.dot_multiplier[source + j];
          packed.dot_tail_float_bias[target] = packed.dot_float_bias[source + j];
        }
        for (int group_kx = 0; group_kx < row_groups * kernel; ++group_kx) {
          std::memcpy(&packed.dot_tail_weights[(static_cast<size_t>(group_kx) * 4 + vector) * 64 + 16 * lane],
                      &packed.dot_weights[(static_cast<size_t>(group_kx) * dot_channels + source) * 4], 16);
        }
      }
    }
  }
}

void run_depthwise(const PackedDepthwise& packed, const DepthwiseGeometry& geometry, const DepthwiseArgs& args,
                   const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  const internal::DepthwiseImplementation& impl = depthwise_implementation(packed.isa);
  assert(impl.isa == packed.isa && "packed for an ISA this machine does not support");
  if (pixel_begin >= pixel_end) return;
  impl.run(packed, geometry, args, epilogue, pixel_begin, pixel_end);
}

std::string depthwise_kernel_name(const PackedDepthwise& packed, const DepthwiseGeometry& geometry) {
  const internal::DepthwiseImplementation& impl = depthwise_implementation(packed.isa);
  // The channels per inner block of the kernel that runs: on AVX-512 VNNI one of three forms,
  // the vpdpbusd one ("dp4": 4 kernel rows per 32-bit lane) in blocks of 64 channels (32 for
  // layers of at most 32), the row tiles in blocks of 16.
  int channel_block = impl.channel_block;
  std::string form;
  if (impl.isa == Isa::kAvx512Vnni) {
    switch (internal::depthwise_avx512_form(packed, geometry)) {
      case internal::DepthwiseAvx512Form::kDot:
        channel_block = packed.dot_channels > 32 ? 64 : 32;
        form = "dp4-";
        break;
      case internal::DepthwiseAvx512Form::kRows:
        channel_block = 16;
        break;
      case internal::DepthwiseAvx512Form::kPixels:
        break;
    }
  }
  return std::string(packed.input_signed ? "qs8" : "qu8") + "-qc8w-dwconv-" + std::to_string(packed.kernel_height) +
         "x" + std::to_string(packed.kernel_width) + "p" + std::to_string(channel_block) + "c-" + form + "fp32-" +
         isa_name(packed.isa);
}

}  // namespace qdqrt::kernels
