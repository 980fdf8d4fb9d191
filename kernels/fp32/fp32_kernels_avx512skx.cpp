// AVX-512 (16-lane) build of fp32_vector_impl.h.
#define QDQRT_FP32_LANES 16
#define QDQRT_FP32_NAMESPACE avx512skx
#include "kernels/fp32/fp32_vector_impl.h"
