// AVX-512BW byte table lookup: qlut_vector_impl.h on 64 bytes, for AVX-512 CPUs without VBMI
// (Skylake-X, Cascade Lake).
#include "kernels/simd_avx512.h"

#define QDQRT_VECTORS Avx512Vectors
#define QDQRT_VECTOR_NAMESPACE avx512skx
#include "kernels/lut/qlut_vector_impl.h"
