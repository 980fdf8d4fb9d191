// AVX-512 fp32 row-dot kernel (fp32_dot_rows_vector_impl.h).
#define QDQRT_SGEMM_AVX512 1
#define QDQRT_SGEMM_NAMESPACE avx512skx
#include "kernels/fp32/fp32_dot_rows_vector_impl.h"
