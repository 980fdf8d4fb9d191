// AVX-512 NHWC pools: qpool_vector_impl.h with 64 channels per byte vector (max) and 16 int32 lanes
// per sum vector (average); masked channel tails.
#include "kernels/simd_avx512.h"

#define QDQRT_VECTORS Avx512Vectors
#define QDQRT_VECTOR_NAMESPACE avx512skx
#include "kernels/pool/qpool_vector_impl.h"
