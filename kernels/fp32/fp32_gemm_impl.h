// Eigen-backed fp32 GEMM, compiled once per ISA file (fp32_gemm_avx2.cpp, fp32_gemm_avx512skx.cpp).
// Each file renames Eigen's namespace (QDQRT_EIGEN_NAMESPACE) so the differently-compiled Eigen
// template instances never share a mangled name: otherwise the linker would keep one arbitrary
// copy (an ODR violation that can run AVX-512 code on an AVX2-only CPU).
#if !defined(QDQRT_EIGEN_NAMESPACE) || !defined(QDQRT_GEMM_NAMESPACE)
#error "define QDQRT_EIGEN_NAMESPACE and QDQRT_GEMM_NAMESPACE before including fp32_gemm_impl.h"
#endif

// GCC 12 reports -Wmaybe-uninitialized inside Eigen's AVX-512 transposes (the _mm512_undefined_ps
// idiom, a known false positive); it fires where Eigen is inlined, so the whole file needs it.
#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define Eigen QDQRT_EIGEN_NAMESPACE
#include <Eigen/Core>

#include "kernels/fp32/fp32_kernels.h"

namespace qdqrt::kernels::QDQRT_GEMM_NAMESPACE {

void fp32_gemm(const Fp32GemmParams& p, const float* a, size_t lda, const float* b, size_t ldb, const float* bias,
               float* c, size_t ldc) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ConstMap = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;
  using MutableMap = Eigen::Map<Matrix, 0, Eigen::OuterStride<>>;
  const auto m = static_cast<Eigen::Index>(p.m), n = static_cast<Eigen::Index>(p.n),
             k = static_cast<Eigen::Index>(p.k);
  if (m == 0 || n == 0) return;
  MutableMap c_map(c, m, n, Eigen::OuterStride<>(static_cast<Eigen::Index>(ldc)));
  if (p.beta == 0.0f) {
    c_map.setZero();
  } else if (p.beta != 1.0f) {
    c_map *= p.beta;
  }
  if (k > 0) {
    const ConstMap a_map(a, p.transpose_a ? k : m, p.transpose_a ? m : k,
                         Eigen::OuterStride<>(static_cast<Eigen::Index>(lda)));
    const ConstMap b_map(b, p.transpose_b ? n : k, p.transpose_b ? k : n,
                         Eigen::OuterStride<>(static_cast<Eigen::Index>(ldb)));
    const float alpha = p.alpha;
    // With one row Eigen takes its GEMV path, which copies that row of the expression alpha * A
    // into a heap temporary; without alpha (the usual 1) it reads A in place and run() stays
    // allocation-free. Same bits: the kernels scale by alpha = 1 either way.
    const bool plain = alpha == 1.0f && !p.transpose_a;
    if (plain && !p.transpose_b) c_map.noalias() += a_map * b_map;
    if (plain && p.transpose_b) c_map.noalias() += a_map * b_map.transpose();
    if (!plain && !p.transpose_a && !p.transpose_b) c_map.noalias() += alpha * a_map * b_map;
    if (!plain && !p.transpose_a && p.transpose_b) c_map.noalias() += alpha * a_map * b_map.transpose();
    if (p.transpose_a && !p.transpose_b) c_map.noalias() += alpha * a_map.transpose() * b_map;
    if (p.transpose_a && p.transpose_b) c_map.noalias() += alpha * a_map.transpose() * b_map.transpose();
  }
  if (bias) {
    c_map.rowwise() += Eigen::Map<const Eigen::Matrix<float, 1, Eigen::Dynamic>>(bias, n);
  }
  if (p.relu) c_map = c_map.cwiseMax(0.0f);
}

}  // namespace qdqrt::kernels::QDQRT_GEMM_NAMESPACE

#undef Eigen
