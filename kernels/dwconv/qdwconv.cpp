#include "kernels/dwconv/qdwconv.h"

#include <cassert>

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
  return packed;
}

void run_depthwise(const PackedDepthwise& packed, const DepthwiseGeometry& geometry, const DepthwiseArgs& args,
                   const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  const internal::DepthwiseImplementation& impl = depthwise_implementation(packed.isa);
  assert(impl.isa == packed.isa && "packed for an ISA this machine does not support");
  if (pixel_begin >= pixel_end) return;
  impl.run(packed, geometry, args, epilogue, pixel_begin, pixel_end);
}

std::string depthwise_kernel_name(const PackedDepthwise& packed) {
  const internal::DepthwiseImplementation& impl = depthwise_implementation(packed.isa);
  std::string name = packed.input_signed ? "qs8" : "qu8";
  name += "-qc8w-dwconv-" + std::to_string(packed.kernel_height) + "x" + std::to_string(packed.kernel_width) + "p" +
          std::to_string(impl.channel_block) + "c-fp32-" + isa_name(packed.isa);
  return name;
}

}  // namespace qdqrt::kernels
