// The fp32 igemm microkernel's entry that also prefetches weights (kernels/fp32/fp32_sgemm.h): while
// its k loop runs, the tile fetches into L2 the lines of the weight block a later call reads, one
// line every few k steps. The driver hands each row tile of a panel a share of the next panel's
// block, so weights that come from L3 or memory (each read once per row block: ResNet-50's layer3
// and layer4, a transformer's projections) arrive while the current panel computes instead of
// stalling the next panel's first tile. Sums and results are those of sgemm_ukernel.
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
}  // namespace internal

// The ISA's prefetching microkernel (dispatch.cpp); null for the scalar ISA (the driver then calls
// sgemm_implementation(isa).ukernel).
internal::SgemmPrefetchUkernelFn sgemm_prefetch_ukernel(Isa isa);

namespace avx2 {
void sgemm_prefetch_ukernel(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch);
}
namespace avx512skx {
void sgemm_prefetch_ukernel(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch);
}

}  // namespace qdqrt::kernels
