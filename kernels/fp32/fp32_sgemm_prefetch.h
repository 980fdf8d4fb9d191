// The fp32 igemm microkernel's entry that also prefetches weights (kernels/fp32/fp32_sgemm.h): while
// its k loop runs, the tile fetches into L2 the lines of the weight block a later call reads, one
// line every few k steps. The driver hands each row tile of a panel a share of the next panel's
// block, so weights that come from L3 or memory (each read once per row block: ResNet-50's layer3
// and layer4, a transformer's projections) arrive while the current panel computes instead of
// stalling the next panel's first tile. Sums and results are those of sgemm_ukernel. Also the
// packed-A microkernel and run_sgemm_with_layout, which the Gemm/MatMul layers call.
#pragma once

#include <cstdint>

#include "kernels/fp32/fp32_sgemm.h"

namespace qdqrt::kernels {

namespace internal {
struct SgemmPrefetch {
  const float* begin = nullptr;  // the first line to fetch
  int64_t lines = 0;             // 64-byte lines from begin
};
using SgemmPrefetchUkernelFn = void (*)(const SgemmUkernelArgs& args, const SgemmPrefetch& prefetch);

// A row tile's A packed for the packed-A microkernel: k in blocks of kSgemmPackChannels, each block
// holding the tile's MR rows one after another (row r's channels [16 b, 16 b + 16) at
// (b * MR + r) * 16; the last block is as wide as the channels left). Every broadcast of a k step
// then reads one pointer plus a constant offset instead of one pointer per row, and a row block's
// A is copied once for all the panels. Rows past the tile's are not written and never read.
inline constexpr int kSgemmPackChannels = 16;
inline int64_t sgemm_packed_a_floats(int mr, int channels) {
  return static_cast<int64_t>((channels + kSgemmPackChannels - 1) / kSgemmPackChannels) * mr * kSgemmPackChannels;
}
// Packs rows [0, rows) of a tile (row r's block starting at rows_a[r] + channel_begin) into `out`.
void pack_sgemm_a(const float* const* rows_a, int rows, int mr, int channel_begin, int channels, float* out);
}  // namespace internal

// The ISA's prefetching microkernel (dispatch.cpp); null for the scalar ISA (the driver then calls
// sgemm_implementation(isa).ukernel).
internal::SgemmPrefetchUkernelFn sgemm_prefetch_ukernel(Isa isa);
// The ISA's packed-A microkernel: as the prefetching one, over one block of k (taps 1) whose A is a
// tile packed by internal::pack_sgemm_a at args.a[0] (args.channel_begin 0). Same sums, same
// results as sgemm_ukernel on the rows; it does not prefetch args.next_c. The scalar ISA's is the
// plain reference the vector ones are tested against.
internal::SgemmPrefetchUkernelFn sgemm_packed_a_ukernel(Isa isa);

// run_sgemm with a choice of A's layout: kRows reads A's rows in place (run_sgemm's), kPacked packs
// each row block's A (internal::pack_sgemm_a) for the packed-A microkernel when the range walks
// panels inside row blocks (B past the L2 share of kSgemmRowsOuterBytes), kAuto packs for a deep k
// and many columns (the Gemm/MatMul layers ask for it; convolutions keep kRows). Every layout gives
// the same bits.
enum class SgemmALayout { kAuto, kRows, kPacked };
void run_sgemm_with_layout(const PackedSgemm& packed, const float* a, int64_t a_row_stride, float* c,
                           int64_t c_row_stride, const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end,
                           int n_begin, int n_end, SgemmALayout layout);

namespace scalar {
void sgemm_packed_a_ukernel(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch);
}
namespace avx2 {
void sgemm_prefetch_ukernel(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch);
void sgemm_packed_a_ukernel(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch);
}
namespace avx512skx {
void sgemm_prefetch_ukernel(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch);
void sgemm_packed_a_ukernel(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch);
}

}  // namespace qdqrt::kernels
