// AVX2 QAdd/QMul: qelementwise_vector_impl.h at 8 lanes; tails run the same vector code on a
// zero-padded stack block.
#include "kernels/simd_avx2.h"

#define QDQRT_VECTORS Avx2Vectors
#define QDQRT_VECTOR_NAMESPACE avx2
#include "kernels/elementwise/qelementwise_vector_impl.h"
