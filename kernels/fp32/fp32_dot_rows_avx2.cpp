// AVX2 fp32 row-dot kernel (fp32_dot_rows_vector_impl.h).
#define QDQRT_SGEMM_AVX2 1
#define QDQRT_SGEMM_NAMESPACE avx2
#include "kernels/fp32/fp32_dot_rows_vector_impl.h"
