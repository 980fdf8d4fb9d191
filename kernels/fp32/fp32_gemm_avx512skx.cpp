// Eigen GEMM compiled for AVX-512 (16-wide packets).
#define QDQRT_EIGEN_NAMESPACE qdqrt_eigen_avx512skx
#define QDQRT_GEMM_NAMESPACE avx512skx
#include "kernels/fp32/fp32_gemm_impl.h"
