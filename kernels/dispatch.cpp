#include "kernels/dispatch.h"

namespace qdqrt::kernels {

Isa usable_isa(Isa requested) {
  Isa detected = detected_isa();
  return static_cast<int>(requested) < static_cast<int>(detected) ? requested : detected;
}

// --- GEMM / implicit-GEMM convolution family ---
// mr, nr, k_group and element_size must match the Traits in the corresponding source file.
const internal::GemmImplementation& gemm_implementation(Isa isa) {
  static const internal::GemmImplementation kScalar{Isa::kScalar, 4, 16, 4, 1, internal::gemm_run_scalar};
  static const internal::GemmImplementation kAvx2{Isa::kAvx2, 6, 16, 2, 2, internal::gemm_run_avx2};
  static const internal::GemmImplementation kAvxVnni{Isa::kAvxVnni, 6, 16, 4, 1, internal::gemm_run_avxvnni};
  static const internal::GemmImplementation kAvx512Vnni{Isa::kAvx512Vnni, 6, 64, 4, 1,
                                                        internal::gemm_run_avx512vnni};
  switch (usable_isa(isa)) {
    case Isa::kAvx512Vnni: return kAvx512Vnni;
    case Isa::kAvxVnni: return kAvxVnni;
    case Isa::kAvx2: return kAvx2;
    case Isa::kScalar: break;
  }
  return kScalar;
}

// --- Depthwise convolution family ---
// AVX-VNNI adds nothing for depthwise (16-bit products), so it uses the AVX2 kernel.
const internal::DepthwiseImplementation& depthwise_implementation(Isa isa) {
  static const internal::DepthwiseImplementation kScalar{Isa::kScalar, 1, internal::depthwise_run_scalar};
  static const internal::DepthwiseImplementation kAvx2{Isa::kAvx2, 32, internal::depthwise_run_avx2};
  static const internal::DepthwiseImplementation kAvx512Vnni{Isa::kAvx512Vnni, 64,
                                                             internal::depthwise_run_avx512vnni};
  switch (usable_isa(isa)) {
    case Isa::kAvx512Vnni: return kAvx512Vnni;
    case Isa::kAvxVnni:
    case Isa::kAvx2: return kAvx2;
    case Isa::kScalar: break;
  }
  return kScalar;
}

}  // namespace qdqrt::kernels
