// The grouped form's ISA-independent half: when it applies, the tap pointers, and the plain
// reference of the tile loop (the scalar epilogue on the same products) that the avx512vnni
// runner is tested against.
#include "kernels/conv/qconv_grouped.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

namespace qdqrt::kernels {

bool conv_grouped_form_fits(int groups, int input_channels, int output_channels, int kernel_height, int kernel_width,
                            bool input_signed) {
  if (groups <= 1 || input_channels % groups != 0 || output_channels % groups != 0 || input_signed) return false;
  // Depthwise convolutions have their own family.
  if (groups == input_channels && groups == output_channels) return false;
  // A 1x1 reads each group's rows in place already (the plain GEMM).
  const int taps = kernel_height * kernel_width;
  const int group_in = input_channels / groups;
  const int group_out = output_channels / groups;
  return taps > 1 && taps <= internal::kGroupedMaxTaps && input_channels <= internal::kGroupedMaxChannels &&
         group_in % 4 == 0 && group_out <= 16;
}

}  // namespace qdqrt::kernels

namespace qdqrt::kernels::internal {

bool conv_grouped_applies(const PackedConv& packed) {
  if (packed.depthwise || packed.group_weights.empty() ||
      static_cast<int>(packed.group_weights.size()) != packed.groups ||
      !kernels::conv_grouped_form_fits(packed.groups, packed.input_channels, packed.output_channels,
                                       packed.kernel_height, packed.kernel_width,
                                       packed.group_weights[0].input_signed)) {
    return false;
  }
  const int taps = packed.kernel_height * packed.kernel_width;
  const int group_in = packed.input_channels / packed.groups;
  const int group_out = packed.output_channels / packed.groups;
  for (const PackedGemm& weights : packed.group_weights) {
    if (weights.isa != Isa::kAvx512Vnni || weights.nr != 16 || weights.k_group != 4 || weights.element_size != 1 ||
        weights.k != taps * group_in || weights.k_padded != weights.k || weights.n != group_out ||
        weights.input_signed || weights.weight_zero_point_s8 != 0) {
      return false;
    }
  }
  return true;
}

void conv_grouped_pointers(const ConvShape& shape, int kernel_height, int kernel_width, const uint8_t* input,
                           int64_t input_pixel_stride, const uint8_t* padding, int64_t pixel, int rows,
                           const uint8_t** pointers) {
  const int64_t image_pixels = static_cast<int64_t>(shape.output_height) * shape.output_width;
  const int64_t image_bytes = static_cast<int64_t>(shape.input_height) * shape.input_width * input_pixel_stride;
  const int taps = kernel_height * kernel_width;
  // Each tap's offset from the window's first pixel: an interior window is its first pixel plus these.
  int64_t tap_offsets[kGroupedMaxTaps];
  for (int ky = 0; ky < kernel_height; ++ky) {
    for (int kx = 0; kx < kernel_width; ++kx) {
      tap_offsets[ky * kernel_width + kx] = (static_cast<int64_t>(ky) * shape.dilation_height * shape.input_width +
                                             static_cast<int64_t>(kx) * shape.dilation_width) *
                                            input_pixel_stride;
    }
  }
  const int window_height = (kernel_height - 1) * shape.dilation_height + 1;
  const int window_width = (kernel_width - 1) * shape.dilation_width + 1;
  int64_t image = pixel / image_pixels;
  const int64_t in_image = pixel - image * image_pixels;
  int out_y = static_cast<int>(in_image / shape.output_width);
  int out_x = static_cast<int>(in_image - static_cast<int64_t>(out_y) * shape.output_width);
  for (int r = 0; r < rows; ++r) {
    const uint8_t* base = input + image * image_bytes;
    const uint8_t** row = pointers + static_cast<int64_t>(r) * taps;
    const int first_y = out_y * shape.stride_height - shape.pad_top;
    const int first_x = out_x * shape.stride_width - shape.pad_left;
    if (first_y >= 0 && first_y + window_height <= shape.input_height && first_x >= 0 &&
        first_x + window_width <= shape.input_width) {
      const uint8_t* window = base + (static_cast<int64_t>(first_y) * shape.input_width + first_x) * input_pixel_stride;
      for (int t = 0; t < taps; ++t) row[t] = window + tap_offsets[t];
    } else {
      for (int ky = 0; ky < kernel_height; ++ky) {
        const int y = first_y + ky * shape.dilation_height;
        for (int kx = 0; kx < kernel_width; ++kx) {
          const int x = first_x + kx * shape.dilation_width;
          const bool inside = y >= 0 && y < shape.input_height && x >= 0 && x < shape.input_width;
          row[ky * kernel_width + kx] =
              inside ? base + (static_cast<int64_t>(y) * shape.input_width + x) * input_pixel_stride : padding;
        }
      }
    }
    if (++out_x == shape.output_width) {
      out_x = 0;
      if (++out_y == shape.output_height) {
        out_y = 0;
        ++image;
      }
    }
  }
}

namespace {

// The padding row: the zero-point byte for every input channel.
struct PaddingRow {
  alignas(64) uint8_t bytes[kGroupedMaxChannels];
  PaddingRow(int channels, uint8_t zero_point) { std::memset(bytes, zero_point, static_cast<size_t>(channels)); }
};

}  // namespace

// The reference: the same products through the same pointers, one at a time, then the scalar
// epilogue (epilogue_value / epilogue_store, the definition every ISA's epilogue matches).
void run_conv_grouped_reference(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args,
                                const Epilogue& epilogue, int pixel_begin, int pixel_end, int group_begin,
                                int group_end) {
  assert(conv_grouped_applies(packed));
  const int taps = packed.kernel_height * packed.kernel_width;
  const int group_in = packed.input_channels / packed.groups;
  const int group_out = packed.output_channels / packed.groups;
  const int tap_groups = group_in / 4;
  const PaddingRow padding(packed.input_channels, static_cast<uint8_t>(packed.group_weights[0].input_zero_point));
  const uint8_t* pointers[kGroupedRows * kGroupedMaxTaps];
  const int output_size = output_element_size(epilogue.output_type);
  for (int m = pixel_begin; m < pixel_end; m += kGroupedRows) {
    const int rows = std::min(kGroupedRows, pixel_end - m);
    conv_grouped_pointers(shape, packed.kernel_height, packed.kernel_width, static_cast<const uint8_t*>(args.input),
                          args.input_pixel_stride, padding.bytes, m, rows, pointers);
    for (int g = group_begin; g < group_end; ++g) {
      const PackedGemm& weights = packed.group_weights[static_cast<size_t>(g)];
      Epilogue group_epilogue = epilogue;
      group_epilogue.program_channel_offset = epilogue.program_channel_offset + static_cast<int64_t>(g) * group_out;
      for (int r = 0; r < rows; ++r) {
        const int64_t pixel = m + r;
        char* out = static_cast<char*>(args.output) + (pixel * args.output_pixel_stride + g * group_out) * output_size;
        for (int n = 0; n < group_out; ++n) {
          int32_t acc = weights.bias[static_cast<size_t>(n)];
          for (int t = 0; t < taps; ++t) {
            const uint8_t* a = pointers[r * taps + t] + static_cast<int64_t>(g) * group_in;
            for (int j = 0; j < tap_groups; ++j) {
              const int8_t* w = weights.data.data() + ((static_cast<int64_t>(t) * tap_groups + j) * 16 + n) * 4;
              for (int i = 0; i < 4; ++i) acc += static_cast<int32_t>(a[4 * j + i]) * w[i];
            }
          }
          int32_t residual = 0;
          if (epilogue.residual) {
            const int64_t index = pixel * epilogue.residual_row_stride + static_cast<int64_t>(g) * group_out + n;
            residual = epilogue.residual_signed ? static_cast<const int8_t*>(epilogue.residual)[index]
                                                : static_cast<const uint8_t*>(epilogue.residual)[index];
          }
          const float y = epilogue_value(acc, weights.multiplier[static_cast<size_t>(n)],
                                         weights.float_bias[static_cast<size_t>(n)], group_epilogue, residual, n);
          epilogue_store(y, group_epilogue, out, n);
        }
      }
    }
  }
}

void run_conv_grouped(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args,
                      const Epilogue& epilogue, int pixel_begin, int pixel_end, int group_begin, int group_end) {
  assert(conv_grouped_applies(packed));
  run_conv_grouped_avx512vnni(packed, shape, args, epilogue, pixel_begin, pixel_end, group_begin, group_end);
}

}  // namespace qdqrt::kernels::internal
