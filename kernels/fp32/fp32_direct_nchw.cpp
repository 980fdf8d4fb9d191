// fp32 direct NCHW convolution of an input of few channels (the stems), on the igemm's packed
// weights: the driver that copies each output row's input rows into a padded buffer (portable;
// the microkernels are per ISA, chosen by sgemm_implementation()).
#include <algorithm>
#include <cassert>
#include <cstring>

#include <fmt/format.h>

#include "kernels/dispatch.h"
#include "kernels/fp32/fp32_sgemm.h"

namespace qdqrt::kernels {

namespace {
// The direct NCHW convolution's padded rows (floats, on the stack): 3 channels x 7 kernel rows of
// a 1024-wide image fit.
constexpr int kDirectMaxChannels = 4;
constexpr int64_t kDirectBufferFloats = 24 * 1024;
// Floats per padded row: every column a window of the output row reads, from -pad_left.
int64_t direct_padded_width(const SconvGeometry& g) {
  const int64_t last = static_cast<int64_t>(g.output_width - 1) * g.stride_width +
                       static_cast<int64_t>(g.kernel_width - 1) * g.dilation_width + 1;
  return std::max<int64_t>(last, g.pad_left + static_cast<int64_t>(g.input_width));
}
}  // namespace

bool direct_nchw_f32_applies(int channels, const SconvGeometry& g) {
  return channels >= 1 && channels <= kDirectMaxChannels && g.kernel_height * g.kernel_width <= kSgemmMaxTaps &&
         g.output_width >= 1 && g.output_height >= 1 && g.pad_left >= 0 && g.pad_top >= 0 &&
         static_cast<int64_t>(channels) * g.kernel_height * direct_padded_width(g) <= kDirectBufferFloats;
}

void run_direct_nchw_f32(const PackedSgemm& packed, const SconvGeometry& g, const SconvArgs& args,
                         const Fp32Epilogue& epilogue, int64_t row_begin, int64_t row_end, int n_begin, int n_end) {
  const internal::SgemmImplementation& impl = sgemm_implementation(packed.isa);
  assert(impl.mr == packed.mr && impl.nr == packed.nr && n_begin % packed.nr == 0);
  assert(direct_nchw_f32_applies(packed.channels, g));
  const int channels = packed.channels, kh = g.kernel_height, kw = g.kernel_width;
  const int64_t width = direct_padded_width(g);
  const int64_t plane = static_cast<int64_t>(g.input_height) * g.input_width;
  alignas(64) float rows[kDirectBufferFloats];
  // Step k = (tap, channel), the packing's order: channel c's copy of kernel row ky, column kx.
  int64_t offsets[kSgemmMaxTaps * kDirectMaxChannels];
  for (int ky = 0; ky < kh; ++ky) {
    for (int kx = 0; kx < kw; ++kx) {
      for (int c = 0; c < channels; ++c) {
        offsets[(ky * kw + kx) * channels + c] =
            (static_cast<int64_t>(c) * kh + ky) * width + static_cast<int64_t>(kx) * g.dilation_width;
      }
    }
  }
  internal::DirectNchwArgs ukernel;
  ukernel.k = static_cast<int>(packed.k());
  ukernel.stride = g.stride_width;
  ukernel.offsets = offsets;
  ukernel.c_row_stride = args.output_row_stride;
  ukernel.residual_row_stride = epilogue.residual_row_stride;
  ukernel.min = epilogue.min;
  ukernel.max = epilogue.max;
  ukernel.activation = epilogue.activation;
  const int64_t panel_floats = packed.k() * packed.nr;
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t image = row / g.output_height;
    const int oy = static_cast<int>(row % g.output_height);
    for (int c = 0; c < channels; ++c) {
      for (int ky = 0; ky < kh; ++ky) {
        float* out = rows + (static_cast<int64_t>(c) * kh + ky) * width;
        const int y = oy * g.stride_height - g.pad_top + ky * g.dilation_height;
        if (y < 0 || y >= g.input_height) {
          std::fill_n(out, width, 0.0f);
          continue;
        }
        std::fill_n(out, g.pad_left, 0.0f);
        std::memcpy(out + g.pad_left, args.input + image * g.input_image_stride + c * plane + static_cast<int64_t>(y) * g.input_width,
                    static_cast<size_t>(g.input_width) * sizeof(float));
        std::fill(out + g.pad_left + g.input_width, out + width, 0.0f);
      }
    }
    for (int x = 0; x < g.output_width; x += packed.mr) {
      ukernel.mr = std::min(packed.mr, g.output_width - x);
      ukernel.origin = rows + static_cast<int64_t>(x) * g.stride_width;
      const int64_t pixel = row * g.output_width + x;
      for (int n = n_begin; n < n_end; n += packed.nr) {
        ukernel.nc = std::min(packed.nr, n_end - n);
        ukernel.w = packed.data.data() + n / packed.nr * panel_floats;
        ukernel.bias = packed.bias.data() + n;
        ukernel.c = args.output + pixel * args.output_row_stride + n;
        ukernel.residual = epilogue.residual ? epilogue.residual + pixel * epilogue.residual_row_stride + n : nullptr;
        impl.direct_nchw(ukernel);
      }
    }
  }
}

std::string direct_nchw_f32_kernel_name(const PackedSgemm& packed) {
  return fmt::format("f32-direct-nchw-{}x{}-{}", packed.mr, packed.nr, sgemm_implementation(packed.isa).isa_suffix);
}

}  // namespace qdqrt::kernels
