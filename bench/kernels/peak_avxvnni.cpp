// Written in inline assembly so the 12 accumulators certainly stay in registers.
#include "bench/kernels/peak.h"

namespace qdqrt::bench {

int64_t vpdpbusd_ymm_loop(int64_t iterations) {
  for (int64_t it = 0; it < iterations; ++it) {
    __asm__ volatile(
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm0\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm1\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm2\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm3\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm4\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm5\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm6\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm7\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm8\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm9\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm10\n\t"
        "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm11\n\t" ::
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11");
  }
  return iterations * 12 * 32;
}

}  // namespace qdqrt::bench
