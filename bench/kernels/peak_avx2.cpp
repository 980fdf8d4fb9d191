// Written in inline assembly: 6 independent vpmaddwd+vpaddd chains (what the AVX2 GEMM's inner
// loop does per 16 multiply-accumulates per instruction pair).
#include "bench/kernels/peak.h"

namespace qdqrt::bench {

int64_t vpmaddwd_ymm_loop(int64_t iterations) {
  for (int64_t it = 0; it < iterations; ++it) {
    __asm__ volatile(
        "vpmaddwd %%ymm14, %%ymm15, %%ymm6\n\t"
        "vpaddd %%ymm6, %%ymm0, %%ymm0\n\t"
        "vpmaddwd %%ymm14, %%ymm15, %%ymm7\n\t"
        "vpaddd %%ymm7, %%ymm1, %%ymm1\n\t"
        "vpmaddwd %%ymm14, %%ymm15, %%ymm8\n\t"
        "vpaddd %%ymm8, %%ymm2, %%ymm2\n\t"
        "vpmaddwd %%ymm14, %%ymm15, %%ymm9\n\t"
        "vpaddd %%ymm9, %%ymm3, %%ymm3\n\t"
        "vpmaddwd %%ymm14, %%ymm15, %%ymm10\n\t"
        "vpaddd %%ymm10, %%ymm4, %%ymm4\n\t"
        "vpmaddwd %%ymm14, %%ymm15, %%ymm11\n\t"
        "vpaddd %%ymm11, %%ymm5, %%ymm5\n\t" ::
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11");
  }
  return iterations * 6 * 16;
}

// fp32: 12 independent vfmadd231ps chains (FMA latency 4-5 x 2 pipes needs >= 10).
int64_t vfmadd_ymm_loop(int64_t iterations) {
  for (int64_t it = 0; it < iterations; ++it) {
    __asm__ volatile(
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm0\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm1\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm2\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm3\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm4\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm5\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm6\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm7\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm8\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm9\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm10\n\t"
        "vfmadd231ps %%ymm14, %%ymm15, %%ymm11\n\t"
        ::
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11");
  }
  return iterations * 12 * 8;
}

}  // namespace qdqrt::bench
