// AVX-512 fp32 igemm microkernel: 14 x 32 (fp32_sgemm_vector_impl.h).
#define QDQRT_SGEMM_AVX512 1
#define QDQRT_SGEMM_NAMESPACE avx512skx
#include "kernels/fp32/fp32_sgemm_vector_impl.h"
