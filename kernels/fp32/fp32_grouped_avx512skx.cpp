// AVX-512 tile of a grouped conv of G = 4 or 8 input and G output channels per group (ResNeXt-50
// 32x4d's first two stages; fp32_grouped.h). A vector of 16 output channels is 16 / G groups; a
// row's 16 input channels of those groups load as one vector x, lane (q, m) holding channel m of
// group q. For each shift s < G, acc_s += x * W_s, where lane (q, m) of W_s is the weight of
// output (m + s) mod G on input m: every multiply-add does 16 useful products, and no shuffle runs
// in the k loop. At the end acc_s is rotated by s within each group's lanes (lane (q, o) takes
// lane (q, (o - s) mod G)) and the G sums are added: bias + sum over s in order. Weights
// [taps][G][16 lanes].
#define QDQRT_SGEMM_AVX512 1
#define QDQRT_SGEMM_NAMESPACE avx512skx
#include "kernels/fp32/fp32_sgemm_vector_ops.h"

namespace qdqrt::kernels::avx512skx {
namespace {

// The lane indices of each rotation: lane (q, o) takes lane (q, (o - shift) mod kGroup).
template <int kGroup>
struct RotationIndices {
  alignas(64) int32_t index[kGroup][16];
  constexpr RotationIndices() : index{} {
    for (int shift = 0; shift < kGroup; ++shift) {
      for (int lane = 0; lane < 16; ++lane) {
        index[shift][lane] = lane / kGroup * kGroup + (lane % kGroup - shift + kGroup) % kGroup;
      }
    }
  }
};
template <int kGroup>
inline constexpr RotationIndices<kGroup> kRotations{};

template <int kGroup>
inline V rotate_in_groups(V v, int shift) {
  return _mm512_permutexvar_ps(_mm512_load_si512(kRotations<kGroup>.index[shift]), v);
}

// kRows rows (from args' row `row`) x one vector.
template <int kGroup, int kRows>
void shift_tile(const internal::SgemmUkernelArgs& args, int row) {
  V acc[kRows][kGroup];
  const V bias = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << args.nc) - 1u), args.bias);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = bias;
#pragma GCC unroll 8
    for (int s = 1; s < kGroup; ++s) acc[r][s] = _mm512_setzero_ps();
  }
  const __mmask16 input_mask = static_cast<__mmask16>((1u << args.channels) - 1u);
  for (int tap = 0; tap < args.taps; ++tap) {
    const float* w = args.w + tap * kGroup * 16;
    const float* const* rows = args.a + tap * kMr + row;
    V x[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) x[r] = _mm512_maskz_loadu_ps(input_mask, rows[r] + args.channel_begin);
#pragma GCC unroll 8
    for (int s = 0; s < kGroup; ++s) {
      const V weights = load(w + s * 16);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) acc[r][s] = fmadd(x[r], weights, acc[r][s]);
    }
  }
  V sums[kRows][1];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    V sum = acc[r][0];
#pragma GCC unroll 8
    for (int s = 1; s < kGroup; ++s) sum = add(sum, rotate_in_groups<kGroup>(acc[r][s], s));
    sums[r][0] = sum;
  }
  internal::SgemmUkernelArgs rows_args = args;
  rows_args.c = args.c + row * args.c_row_stride;
  if (args.residual) rows_args.residual = args.residual + row * args.residual_row_stride;
  store_tile(sums, rows_args, true);
}

// Rows in blocks of kBlock (the accumulators kBlock x kGroup fill the registers), then the rest.
template <int kGroup, int kBlock>
void shift_rows(const internal::SgemmUkernelArgs& args) {
  int row = 0;
  for (; row + kBlock <= args.mr; row += kBlock) shift_tile<kGroup, kBlock>(args, row);
  switch (args.mr - row) {
    case 6: if constexpr (kBlock > 6) shift_tile<kGroup, 6>(args, row); break;
    case 5: if constexpr (kBlock > 5) shift_tile<kGroup, 5>(args, row); break;
    case 4: if constexpr (kBlock > 4) shift_tile<kGroup, 4>(args, row); break;
    case 3: if constexpr (kBlock > 3) shift_tile<kGroup, 3>(args, row); break;
    case 2: if constexpr (kBlock > 2) shift_tile<kGroup, 2>(args, row); break;
    case 1: shift_tile<kGroup, 1>(args, row); break;
    default: break;
  }
}

}  // namespace

void grouped_shift_ukernel(const internal::SgemmUkernelArgs& args, int group) {
  if (group == 4) {
    shift_rows<4, 7>(args);
  } else {
    shift_rows<8, 3>(args);
  }
}

}  // namespace qdqrt::kernels::avx512skx
