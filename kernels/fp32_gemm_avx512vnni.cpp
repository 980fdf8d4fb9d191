// Eigen GEMM compiled for AVX-512 (16-wide packets).
#define QDQRT_EIGEN_NAMESPACE qdqrt_eigen_avx512
#define QDQRT_GEMM_NAMESPACE avx512
#include "kernels/fp32_gemm_impl.h"
