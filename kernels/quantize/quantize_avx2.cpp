// AVX2 quantize/dequantize/requantize: quantize_vector_impl.h at 8 lanes; tails go through a
// zero-padded stack block so they run the very same vector instructions (no separate scalar formula).
#include "kernels/simd_avx2.h"

#define QDQRT_VECTORS Avx2Vectors
#define QDQRT_VECTOR_NAMESPACE avx2
#include "kernels/quantize/quantize_vector_impl.h"
