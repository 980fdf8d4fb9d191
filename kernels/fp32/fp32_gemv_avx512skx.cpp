// AVX-512 fp32 GEMV / small-M kernel (fp32_gemv_vector_impl.h).
#define QDQRT_SGEMM_AVX512 1
#define QDQRT_SGEMM_NAMESPACE avx512skx
#include "kernels/fp32/fp32_gemv_vector_impl.h"
