// AVX2 + FMA fp32 igemm microkernel: 6 x 16 (fp32_sgemm_vector_impl.h).
#define QDQRT_SGEMM_AVX2 1
#define QDQRT_SGEMM_NAMESPACE avx2
#include "kernels/fp32/fp32_sgemm_vector_impl.h"
