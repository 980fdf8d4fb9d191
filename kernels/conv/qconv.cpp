#include "kernels/conv/qconv.h"

#include <algorithm>
#include <vector>

#include "kernels/conv/qconv_grouped.h"
#include "kernels/conv/qconv_stem.h"
#include "kernels/dispatch.h"

namespace qdqrt::kernels {

namespace {
bool is_pointwise(const PackedConv& p, const ConvShape& s) {
  return p.kernel_height == 1 && p.kernel_width == 1 && s.stride_height == 1 && s.stride_width == 1 &&
         s.pad_top == 0 && s.pad_left == 0 && s.output_height == s.input_height && s.output_width == s.input_width;
}
}  // namespace

PackedConv pack_conv(const ConvWeightsDesc& desc, Isa isa, int nr) {
  PackedConv packed;
  packed.output_channels = desc.output_channels;
  packed.input_channels = desc.input_channels;
  packed.groups = desc.groups;
  packed.kernel_height = desc.kernel_height;
  packed.kernel_width = desc.kernel_width;
  packed.depthwise = desc.groups > 1 && desc.groups == desc.input_channels && desc.groups == desc.output_channels;
  const int taps = desc.kernel_height * desc.kernel_width;
  if (packed.depthwise) {
    DepthwiseWeightsDesc d;
    d.channels = desc.output_channels;
    d.kernel_height = desc.kernel_height;
    d.kernel_width = desc.kernel_width;
    d.weights = desc.weights;  // [C][1][kh][kw] is already [C][kh][kw]
    d.weights_signed = desc.weights_signed;
    d.weight_zero_point = desc.weight_zero_point;
    d.weight_scales = desc.weight_scales;
    d.per_channel = desc.per_channel;
    d.bias_int32 = desc.bias_int32;
    d.bias_float = desc.bias_float;
    d.input_scale = desc.input_scale;
    d.input_zero_point = desc.input_zero_point;
    d.input_signed = desc.input_signed;
    d.output_scale = desc.output_scale;
    packed.depthwise_weights = pack_depthwise(d, isa);
    return packed;
  }
  const int group_in = desc.input_channels / desc.groups;
  const int group_out = desc.output_channels / desc.groups;
  const int k = taps * group_in;
  // Reorder [O][Cg][kh][kw] to the implicit GEMM's k order (kh, kw, Cg).
  std::vector<uint8_t> reordered(static_cast<size_t>(group_out) * k);
  const uint8_t* source = static_cast<const uint8_t*>(desc.weights);
  packed.group_weights.resize(desc.groups);
  for (int g = 0; g < desc.groups; ++g) {
    for (int n = 0; n < group_out; ++n) {
      const int o = g * group_out + n;
      for (int c = 0; c < group_in; ++c) {
        for (int t = 0; t < taps; ++t) {
          reordered[static_cast<size_t>(n) * k + t * group_in + c] =
              source[(static_cast<size_t>(o) * group_in + c) * taps + t];
        }
      }
    }
    GemmWeightsDesc d;
    d.n = group_out;
    d.k = k;
    d.weights = reordered.data();
    d.stride_n = k;
    d.stride_k = 1;
    d.weights_signed = desc.weights_signed;
    d.weight_zero_point = desc.weight_zero_point;
    d.weight_scales = desc.per_channel ? desc.weight_scales + g * group_out : desc.weight_scales;
    d.per_channel = desc.per_channel;
    d.bias_int32 = desc.bias_int32 ? desc.bias_int32 + g * group_out : nullptr;
    d.bias_float = desc.bias_float ? desc.bias_float + g * group_out : nullptr;
    d.input_scale = desc.input_scale;
    d.input_zero_point = desc.input_zero_point;
    d.input_signed = desc.input_signed;
    d.output_scale = desc.output_scale;
    pack_gemm(d, isa, packed.group_weights[g], nr);
  }
  derive_conv_stem(packed, isa);
  return packed;
}

int conv_channel_tiles(const PackedConv& packed) {
  if (packed.depthwise || packed.group_weights.empty()) return 1;
  if (packed.groups != 1) return packed.groups;
  const PackedGemm& weights = packed.group_weights[0];
  return (weights.n + weights.nr - 1) / weights.nr;
}

namespace {

DepthwiseGeometry depthwise_geometry(const ConvShape& shape, int64_t input_pixel_stride) {
  DepthwiseGeometry g;
  g.batch = shape.batch;
  g.input_height = shape.input_height;
  g.input_width = shape.input_width;
  g.input_pixel_stride = input_pixel_stride;
  g.stride_height = shape.stride_height;
  g.stride_width = shape.stride_width;
  g.pad_top = shape.pad_top;
  g.pad_left = shape.pad_left;
  g.dilation_height = shape.dilation_height;
  g.dilation_width = shape.dilation_width;
  g.output_height = shape.output_height;
  g.output_width = shape.output_width;
  return g;
}

}  // namespace

void run_conv(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args, const Epilogue& epilogue,
              int pixel_begin, int pixel_end) {
  run_conv_channels(packed, shape, args, epilogue, pixel_begin, pixel_end, 0, conv_channel_tiles(packed));
}

void run_conv_channels(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args,
                       const Epilogue& epilogue, int pixel_begin, int pixel_end, int tile_begin, int tile_end) {
  if (packed.depthwise) {
    DepthwiseArgs a{args.input, args.output, args.output_pixel_stride};
    run_depthwise(packed.depthwise_weights, depthwise_geometry(shape, args.input_pixel_stride), a, epilogue,
                  pixel_begin, pixel_end);
    return;
  }
  if (conv_stem_applies(packed, shape)) {
    // Tiles count in the conv's tile width (conv_channel_tiles); a caller runs the stem tiles that
    // start in its range, so disjoint ranges still write disjoint columns.
    const PackedGemm& weights = packed.stem_weights;
    const int conv_nr = packed.group_weights[0].nr;
    auto stem_column = [&](int tile) {
      return std::min(weights.n, (tile * conv_nr + weights.nr - 1) / weights.nr * weights.nr);
    };
    const int n_begin = stem_column(tile_begin);
    const int n_end = stem_column(tile_end);
    if (n_begin < n_end) internal::run_conv_stem(packed, shape, args, epilogue, pixel_begin, pixel_end, n_begin, n_end);
    return;
  }
  if (internal::conv_grouped_applies(packed)) {
    const int group_begin = std::clamp(tile_begin, 0, packed.groups);
    const int group_end = std::clamp(tile_end, group_begin, packed.groups);
    internal::run_conv_grouped(packed, shape, args, epilogue, pixel_begin, pixel_end, group_begin, group_end);
    return;
  }
  const int group_in = packed.input_channels / packed.groups;
  const int group_out = packed.output_channels / packed.groups;
  const int output_size = output_element_size(epilogue.output_type);
  const bool pointwise = is_pointwise(packed, shape);
  ConvGeometry geometry;
  geometry.batch = shape.batch;
  geometry.input_height = shape.input_height;
  geometry.input_width = shape.input_width;
  geometry.input_pixel_stride = args.input_pixel_stride;
  geometry.group_channels = group_in;
  geometry.kernel_height = packed.kernel_height;
  geometry.kernel_width = packed.kernel_width;
  geometry.stride_height = shape.stride_height;
  geometry.stride_width = shape.stride_width;
  geometry.pad_top = shape.pad_top;
  geometry.pad_left = shape.pad_left;
  geometry.dilation_height = shape.dilation_height;
  geometry.dilation_width = shape.dilation_width;
  geometry.output_height = shape.output_height;
  geometry.output_width = shape.output_width;
  // Several groups: the tiles are the groups.
  const int group_begin = packed.groups == 1 ? 0 : std::clamp(tile_begin, 0, packed.groups);
  const int group_end = packed.groups == 1 ? 1 : std::clamp(tile_end, group_begin, packed.groups);
  for (int g = group_begin; g < group_end; ++g) {
    const PackedGemm& weights = packed.group_weights[g];
    const uint8_t* input = static_cast<const uint8_t*>(args.input) + static_cast<int64_t>(g) * group_in;
    char* output = static_cast<char*>(args.output) + static_cast<int64_t>(g) * group_out * output_size;
    Epilogue group_epilogue = epilogue;
    group_epilogue.program_channel_offset = epilogue.program_channel_offset + static_cast<int64_t>(g) * group_out;
    if (epilogue.residual) {
      group_epilogue.residual = static_cast<const uint8_t*>(epilogue.residual) + static_cast<int64_t>(g) * group_out;
    }
    // One group: the channel tiles asked for; several: all of each group's.
    const int n_begin = packed.groups == 1 ? std::min(weights.n, tile_begin * weights.nr) : 0;
    const int n_end = packed.groups == 1 ? std::min(weights.n, tile_end * weights.nr) : weights.n;
    if (n_begin >= n_end) continue;
    PrefetchHint next;  // with several groups each group is a GEMM of its own: no hint
    if (packed.groups == 1) next = {std::min(weights.n, args.next_tile_end * weights.nr), args.next_weights, args.warm};
    if (pointwise) {
      GemmArgs a{input, args.input_pixel_stride, output, args.output_pixel_stride, next};
      run_gemm(weights, a, group_epilogue, pixel_begin, pixel_end, n_begin, n_end);
    } else {
      ConvArgs a{input, output, args.output_pixel_stride, next};
      run_conv_gemm(weights, geometry, a, group_epilogue, pixel_begin, pixel_end, n_begin, n_end);
    }
  }
}

std::span<const int8_t> conv_leading_weights(const PackedConv& packed, const ConvShape& shape) {
  if (packed.depthwise || packed.groups != 1 || packed.group_weights.empty() || conv_stem_applies(packed, shape) ||
      internal::conv_grouped_applies(packed)) {
    return {};
  }
  const PackedGemm& weights = packed.group_weights[0];
  return {weights.data.data(), weights.data.size()};
}

std::vector<std::span<const int8_t>> conv_streamed_weights(const PackedConv& packed, const ConvShape& shape) {
  if (packed.depthwise) return {};
  if (conv_stem_applies(packed, shape)) return {{packed.stem_weights.data.data(), packed.stem_weights.data.size()}};
  std::vector<std::span<const int8_t>> spans;
  for (const PackedGemm& group : packed.group_weights) spans.emplace_back(group.data.data(), group.data.size());
  return spans;
}

int conv_pixel_tile(const PackedConv& packed) {
  if (packed.depthwise || packed.group_weights.empty()) return 8;
  if (internal::conv_grouped_applies(packed)) return internal::kGroupedRows;
  const PackedGemm& gemm = packed.group_weights[0];
  const internal::GemmImplementation* impl = gemm_implementation(gemm.isa, gemm.nr);
  return impl != nullptr ? impl->mr : 6;
}

std::string conv_kernel_name(const PackedConv& packed, const ConvShape& shape) {
  if (packed.depthwise) return depthwise_kernel_name(packed.depthwise_weights, depthwise_geometry(shape, 0));
  if (conv_stem_applies(packed, shape)) {
    // The tile the stem runs, named with the input's own signedness.
    std::string name = gemm_kernel_name(packed.stem_weights, true, shape.output_pixels());
    name.replace(0, 3, packed.group_weights[0].input_signed ? "qs8" : "qu8");
    name.replace(name.find("igemm"), 5, "stemconv");
    return name;
  }
  std::string name = gemm_kernel_name(packed.group_weights[0], !is_pointwise(packed, shape), shape.output_pixels());
  if (internal::conv_grouped_applies(packed)) {
    // The grouped form's tile: kGroupedRows x 16, reading the input through tap pointers.
    const size_t op = name.find("igemm-");
    if (op != std::string::npos) {
      const size_t tile_end = name.find('c', op + 6);
      name.replace(op, tile_end - op, "gconv-" + std::to_string(internal::kGroupedRows) + "x16");
    }
  }
  return name;
}

}  // namespace qdqrt::kernels
