// Portable depthwise convolution over the packed layout.
#include <vector>

#include "kernels/dwconv/qdwconv_internal.h"

namespace qdqrt::kernels::internal {

void depthwise_run_scalar(const PackedDepthwise& packed, const DepthwiseGeometry& geometry, const DepthwiseArgs& args,
                          const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  const int taps = packed.kernel_height * packed.kernel_width;
  const int channels = packed.channels;
  std::vector<const uint8_t*> tap_pointers(taps);
  std::vector<uint8_t> padding(channels, static_cast<uint8_t>(packed.input_zero_point));
  DepthwisePixelWalker walker(packed, geometry, static_cast<const uint8_t*>(args.input), padding.data(), pixel_begin);
  const int output_size = output_element_size(epilogue.output_type);
  for (int64_t p = pixel_begin; p < pixel_end; ++p) {
    walker.next(tap_pointers.data());
    char* out = static_cast<char*>(args.output) + p * args.output_pixel_stride * output_size;
    for (int c = 0; c < channels; ++c) {
      uint32_t acc = static_cast<uint32_t>(packed.bias[c]);
      for (int t = 0; t < taps; ++t) {
        const uint8_t raw = tap_pointers[t][c];
        const int32_t x = packed.input_signed ? static_cast<int8_t>(raw) : raw;
        const int32_t w = static_cast<int16_t>(packed.weights[static_cast<size_t>(t) * packed.channels_padded + c]);
        acc += static_cast<uint32_t>(x * w);
      }
      const float y = epilogue_value(static_cast<int32_t>(acc), packed.multiplier[c], packed.float_bias[c], epilogue,
                                     residual_at(epilogue, p, c), c);
      epilogue_store(y, epilogue, out, c);
    }
  }
}

}  // namespace qdqrt::kernels::internal
