// AVX-512 quantize/dequantize/requantize: quantize_vector_impl.h at 16 lanes, masked tails.
#include "kernels/simd_avx512.h"

#define QDQRT_VECTORS Avx512Vectors
#define QDQRT_VECTOR_NAMESPACE avx512skx
#include "kernels/quantize/quantize_vector_impl.h"
