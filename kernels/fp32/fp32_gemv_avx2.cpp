// AVX2 + FMA fp32 GEMV / small-M kernel (fp32_gemv_vector_impl.h).
#define QDQRT_SGEMM_AVX2 1
#define QDQRT_SGEMM_NAMESPACE avx2
#include "kernels/fp32/fp32_gemv_vector_impl.h"
