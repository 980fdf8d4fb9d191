// Written in inline assembly so the 24 accumulators certainly stay in registers.
#include "bench/kernels/peak.h"

namespace qdqrt::bench {

int64_t vpdpbusd_zmm_loop(int64_t iterations) {
  for (int64_t it = 0; it < iterations; ++it) {
    __asm__ volatile(
        "vpdpbusd %%zmm30, %%zmm31, %%zmm0\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm1\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm2\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm3\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm4\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm5\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm6\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm7\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm8\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm9\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm10\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm11\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm12\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm13\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm14\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm15\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm16\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm17\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm18\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm19\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm20\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm21\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm22\n\t"
        "vpdpbusd %%zmm30, %%zmm31, %%zmm23\n\t"
        ::
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
              "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21",
              "xmm22", "xmm23");
  }
  return iterations * 24 * 64;
}

// fp32: 24 independent vfmadd231ps chains (more than FMA latency x throughput on any x86 core).
int64_t vfmadd_zmm_loop(int64_t iterations) {
  for (int64_t it = 0; it < iterations; ++it) {
    __asm__ volatile(
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm0\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm1\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm2\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm3\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm4\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm5\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm6\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm7\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm8\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm9\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm10\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm11\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm12\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm13\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm14\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm15\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm16\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm17\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm18\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm19\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm20\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm21\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm22\n\t"
        "vfmadd231ps %%zmm30, %%zmm31, %%zmm23\n\t"
        ::
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23");
  }
  return iterations * 24 * 16;
}

}  // namespace qdqrt::bench
