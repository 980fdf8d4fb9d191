// Which instructions compete with vpdpbusd for its execution pipes: the 6x64 tile's k-step (4
// weight loads, 6 activation broadcasts, 24 vpdpbusd; bytes in L1) alone and with 12 more
// instructions of one kind on free registers. An op that costs nothing here can hide in a tile's
// epilogue; one that slows the loop takes vpdpbusd issue slots (docs/kernels.md, "Zen 5").
#include <cstdint>

#include "bench/kernels/peak.h"

namespace qdqrt::bench {
namespace {

alignas(64) uint8_t g_activations[6 * 8192 + 4096];
alignas(64) int8_t g_weights[64 * 256];
constexpr int kKGroups = 64;

#define QDQRT_CLOBBERS                                                                                         \
  "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", \
      "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",   \
      "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31"
#define QDQRT_ROW(address, acc0, acc1, acc2, acc3, va) \
  "vpbroadcastd " address ", %%" va "\n\t"             \
  "vpdpbusd %%zmm0, %%" va ", %%" acc0 "\n\t"          \
  "vpdpbusd %%zmm1, %%" va ", %%" acc1 "\n\t"          \
  "vpdpbusd %%zmm2, %%" va ", %%" acc2 "\n\t"          \
  "vpdpbusd %%zmm3, %%" va ", %%" acc3 "\n\t"
// One k-step with `extra` (two instructions writing zmm6/zmm7) after each row.
#define QDQRT_K_STEP(extra)                                                    \
  "vmovdqu64 (%[b]), %%zmm0\n\t"                                               \
  "vmovdqu64 64(%[b]), %%zmm1\n\t"                                             \
  "vmovdqu64 128(%[b]), %%zmm2\n\t"                                            \
  "vmovdqu64 192(%[b]), %%zmm3\n\t"                                            \
  QDQRT_ROW("(%[a])", "zmm8", "zmm9", "zmm10", "zmm11", "zmm4") extra          \
  QDQRT_ROW("(%[a],%[s],1)", "zmm12", "zmm13", "zmm14", "zmm15", "zmm5") extra \
  QDQRT_ROW("(%[a],%[s],2)", "zmm16", "zmm17", "zmm18", "zmm19", "zmm4") extra \
  QDQRT_ROW("(%[a3])", "zmm20", "zmm21", "zmm22", "zmm23", "zmm5") extra       \
  QDQRT_ROW("(%[a3],%[s],1)", "zmm24", "zmm25", "zmm26", "zmm27", "zmm4") extra \
  QDQRT_ROW("(%[a3],%[s],2)", "zmm28", "zmm29", "zmm30", "zmm31", "zmm5") extra

// `iterations` k-steps over 64 k-groups at a time; activation rows `stride` bytes apart.
#define QDQRT_PIPE_LOOP(name, stride, extra)                                                        \
  int64_t name(int64_t iterations) {                                                                \
    const int64_t s = stride;                                                                       \
    for (int64_t done = 0; done < iterations; done += kKGroups) {                                   \
      const uint8_t* a = g_activations;                                                             \
      const uint8_t* a3 = g_activations + 3 * s;                                                    \
      const int8_t* b = g_weights;                                                                  \
      int64_t count = kKGroups;                                                                     \
      __asm__ volatile(".p2align 5\n1:\n\t" QDQRT_K_STEP(extra) "add $256, %[b]\n\t"                \
                       "add $4, %[a]\n\t"                                                           \
                       "add $4, %[a3]\n\t"                                                          \
                       "dec %[count]\n\t"                                                           \
                       "jnz 1b\n\t"                                                                 \
                       : [a] "+r"(a), [a3] "+r"(a3), [b] "+r"(b), [count] "+r"(count)               \
                       : [s] "r"(s)                                                                 \
                       : QDQRT_CLOBBERS);                                                           \
    }                                                                                               \
    return (iterations / kKGroups) * kKGroups * 24 * 64;                                            \
  }

}  // namespace

QDQRT_PIPE_LOOP(pipes_tile_k_step, 256, "")
QDQRT_PIPE_LOOP(pipes_tile_k_step_stride4096, 4096, "")
QDQRT_PIPE_LOOP(pipes_plus_cvt, 256, "vcvtdq2ps %%zmm8, %%zmm6\n\tvcvtps2dq %%zmm9, %%zmm7\n\t")
QDQRT_PIPE_LOOP(pipes_plus_mul, 256, "vmulps %%zmm8, %%zmm9, %%zmm6\n\tvmulps %%zmm10, %%zmm11, %%zmm7\n\t")
QDQRT_PIPE_LOOP(pipes_plus_pack, 256, "vpackssdw %%zmm8, %%zmm9, %%zmm6\n\tvpackuswb %%zmm10, %%zmm11, %%zmm7\n\t")
QDQRT_PIPE_LOOP(pipes_plus_vpermd, 256, "vpermd %%zmm8, %%zmm9, %%zmm6\n\tvpermd %%zmm10, %%zmm11, %%zmm7\n\t")
QDQRT_PIPE_LOOP(pipes_plus_int_minmax_add, 256, "vpmaxub %%zmm8, %%zmm9, %%zmm6\n\tvpaddsw %%zmm10, %%zmm11, %%zmm7\n\t")
QDQRT_PIPE_LOOP(pipes_plus_load, 256, "vmovdqu64 512(%[b]), %%zmm6\n\tvmovdqu64 576(%[b]), %%zmm7\n\t")

#undef QDQRT_PIPE_LOOP
#undef QDQRT_K_STEP
#undef QDQRT_ROW
#undef QDQRT_CLOBBERS

}  // namespace qdqrt::bench
