// AVX2 (8-lane) build of fp32_vector_impl.h.
#define QDQRT_FP32_LANES 8
#define QDQRT_FP32_NAMESPACE avx2
#include "kernels/fp32/fp32_vector_impl.h"
