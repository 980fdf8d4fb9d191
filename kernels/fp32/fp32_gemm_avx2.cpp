// Eigen GEMM compiled for AVX2+FMA (8-wide packets).
#define QDQRT_EIGEN_NAMESPACE qdqrt_eigen_avx2
#define QDQRT_GEMM_NAMESPACE avx2
#include "kernels/fp32/fp32_gemm_impl.h"
