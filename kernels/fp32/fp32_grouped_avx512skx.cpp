// AVX-512 tile of a grouped conv of 4 input and 4 output channels per group (ResNeXt-50 32x4d's
// first stage; fp32_grouped.h): one vector of 16 output channels is 4 groups, and each row's 16
// input channels of those groups load as one vector. In-lane shuffles give every lane its own
// group's input channel j (lanes 4q..4q+3 take channel 4q + j), so each multiply-add does 16
// useful products where the half-panel tile's broadcasts do 4. Weights [taps][j][16 lanes] (lane
// l: output l's weight on its group's channel j); sums in (tap, channel) order like the igemm.
#define QDQRT_SGEMM_AVX512 1
#define QDQRT_SGEMM_NAMESPACE avx512skx
#include "kernels/fp32/fp32_sgemm_vector_ops.h"

namespace qdqrt::kernels::avx512skx {
namespace {

template <int kRows>
void group4_tile(const internal::SgemmUkernelArgs& args) {
  V acc[kRows][1];
  const V bias = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << args.nc) - 1u), args.bias);
#pragma GCC unroll 14
  for (int r = 0; r < kRows; ++r) acc[r][0] = bias;
  // The rows' input channels of the vector's groups (fewer in a last vector of fewer groups).
  const __mmask16 input_mask = static_cast<__mmask16>((1u << args.channels) - 1u);
  for (int tap = 0; tap < args.taps; ++tap) {
    const float* w = args.w + tap * 64;
    const V w0 = load(w), w1 = load(w + 16), w2 = load(w + 32), w3 = load(w + 48);
    const float* const* rows = args.a + tap * kMr;
#pragma GCC unroll 14
    for (int r = 0; r < kRows; ++r) {
      const V x = _mm512_maskz_loadu_ps(input_mask, rows[r] + args.channel_begin);
      V sum = acc[r][0];
      sum = fmadd(_mm512_permute_ps(x, 0x00), w0, sum);
      sum = fmadd(_mm512_permute_ps(x, 0x55), w1, sum);
      sum = fmadd(_mm512_permute_ps(x, 0xAA), w2, sum);
      acc[r][0] = fmadd(_mm512_permute_ps(x, 0xFF), w3, sum);
    }
  }
  store_tile(acc, args, true);
}

}  // namespace

void group4_ukernel(const internal::SgemmUkernelArgs& args) {
  switch (args.mr) {
    case 14: return group4_tile<14>(args);
    case 13: return group4_tile<13>(args);
    case 12: return group4_tile<12>(args);
    case 11: return group4_tile<11>(args);
    case 10: return group4_tile<10>(args);
    case 9: return group4_tile<9>(args);
    case 8: return group4_tile<8>(args);
    case 7: return group4_tile<7>(args);
    case 6: return group4_tile<6>(args);
    case 5: return group4_tile<5>(args);
    case 4: return group4_tile<4>(args);
    case 3: return group4_tile<3>(args);
    case 2: return group4_tile<2>(args);
    default: return group4_tile<1>(args);
  }
}

}  // namespace qdqrt::kernels::avx512skx
