// AVX2 byte table lookup: qlut_vector_impl.h on 32 bytes (16 vpshufb per vector).
#include "kernels/simd_avx2.h"

#define QDQRT_VECTORS Avx2Vectors
#define QDQRT_VECTOR_NAMESPACE avx2
#include "kernels/lut/qlut_vector_impl.h"
