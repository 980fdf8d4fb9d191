// AVX2 NHWC pools: qpool_vector_impl.h with 32 channels per byte vector (max) and 8 int32 lanes
// per sum vector (average); channel tails go through a zero-padded stack block.
#include "kernels/simd_avx2.h"

#define QDQRT_VECTORS Avx2Vectors
#define QDQRT_VECTOR_NAMESPACE avx2
#include "kernels/pool/qpool_vector_impl.h"
