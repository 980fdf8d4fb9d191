// AVX-512 VNNI GEMM: 6 rows x 64 columns (4 zmm) per register tile, 24 int32 accumulators,
// vpdpbusd over k in groups of 4 (u8 activations x s8 weights). A narrow tile (12 x 16) serves
// layers with few output channels, where a 64-column tile would mostly compute padding; a 12 x 32
// tile serves 17..32 channels and widths that are multiples of 32 but not of 64.
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* in the widening intrinsics).
#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include "kernels/gemm/qgemm_copy_avx512_inl.h"
#include "kernels/gemm/qgemm_epilogue_avx512_inl.h"

namespace qdqrt::kernels::internal {
namespace {

// Pieces of the 6x64 (and 5x64) assembly k-loops (Avx512VnniTraits::full_tile_k_loop and
// tap_tile_k_loop): accumulators in zmm8-zmm31 (row r in zmm8+4r..zmm11+4r, each starting from
// the 64 columns' bias), the four weight vectors in zmm0-zmm3, broadcasts in zmm4-zmm7.
#define QDQRT_ROW(row_address, acc0, acc1, acc2, acc3, va)     \
  "vpbroadcastd " row_address ", %%" va "\n\t"               \
  "vpdpbusd %%zmm0, %%" va ", %%" acc0 "\n\t"               \
  "vpdpbusd %%zmm1, %%" va ", %%" acc1 "\n\t"               \
  "vpdpbusd %%zmm2, %%" va ", %%" acc2 "\n\t"               \
  "vpdpbusd %%zmm3, %%" va ", %%" acc3 "\n\t"
#define QDQRT_INIT_ROW(acc0, acc1, acc2, acc3) \
  "vmovdqa64 %%zmm8, %%" acc0 "\n\t"           \
  "vmovdqa64 %%zmm9, %%" acc1 "\n\t"           \
  "vmovdqa64 %%zmm10, %%" acc2 "\n\t"          \
  "vmovdqa64 %%zmm11, %%" acc3 "\n\t"
#define QDQRT_STORE_ROW(offset, acc0, acc1, acc2, acc3) \
  "vmovdqa64 %%" acc0 ", " #offset "+0(%[out])\n\t"     \
  "vmovdqa64 %%" acc1 ", " #offset "+64(%[out])\n\t"    \
  "vmovdqa64 %%" acc2 ", " #offset "+128(%[out])\n\t"   \
  "vmovdqa64 %%" acc3 ", " #offset "+192(%[out])\n\t"
// One k-step's products for rows 0-4, row r's broadcast from address a<r>.
#define QDQRT_ROWS_0_TO_4(a0, a1, a2, a3, a4)                      \
  QDQRT_ROW(a0, "zmm8", "zmm9", "zmm10", "zmm11", "zmm4")          \
  QDQRT_ROW(a1, "zmm12", "zmm13", "zmm14", "zmm15", "zmm5")        \
  QDQRT_ROW(a2, "zmm16", "zmm17", "zmm18", "zmm19", "zmm6")        \
  QDQRT_ROW(a3, "zmm20", "zmm21", "zmm22", "zmm23", "zmm7")        \
  QDQRT_ROW(a4, "zmm24", "zmm25", "zmm26", "zmm27", "zmm4")
// Row 5's products (the 6-row form), its broadcast from `address`.
#define QDQRT_ROW5(address) QDQRT_ROW(address, "zmm28", "zmm29", "zmm30", "zmm31", "zmm5")
// Rows 0-4 from the bias, then `init_row5` (QDQRT_ROW5_INIT or nothing).
#define QDQRT_TILE_INIT(init_row5)                       \
  "vmovdqu64 (%[bias]), %%zmm8\n\t"                      \
  "vmovdqu64 64(%[bias]), %%zmm9\n\t"                    \
  "vmovdqu64 128(%[bias]), %%zmm10\n\t"                  \
  "vmovdqu64 192(%[bias]), %%zmm11\n\t"                  \
  QDQRT_INIT_ROW("zmm12", "zmm13", "zmm14", "zmm15")     \
  QDQRT_INIT_ROW("zmm16", "zmm17", "zmm18", "zmm19")     \
  QDQRT_INIT_ROW("zmm20", "zmm21", "zmm22", "zmm23")     \
  QDQRT_INIT_ROW("zmm24", "zmm25", "zmm26", "zmm27")     \
  init_row5
#define QDQRT_ROW5_INIT QDQRT_INIT_ROW("zmm28", "zmm29", "zmm30", "zmm31")
#define QDQRT_LOAD_WEIGHTS                   \
  "vmovdqu64 (%[b]), %%zmm0\n\t"             \
  "vmovdqu64 64(%[b]), %%zmm1\n\t"           \
  "vmovdqu64 128(%[b]), %%zmm2\n\t"          \
  "vmovdqu64 192(%[b]), %%zmm3\n\t"
// Rows 0-4 to `out` (int32 [rows][64]), then `store_row5` (QDQRT_ROW5_STORE or nothing).
#define QDQRT_TILE_STORE(store_row5)                             \
  QDQRT_STORE_ROW(0, "zmm8", "zmm9", "zmm10", "zmm11")           \
  QDQRT_STORE_ROW(256, "zmm12", "zmm13", "zmm14", "zmm15")       \
  QDQRT_STORE_ROW(512, "zmm16", "zmm17", "zmm18", "zmm19")       \
  QDQRT_STORE_ROW(768, "zmm20", "zmm21", "zmm22", "zmm23")       \
  QDQRT_STORE_ROW(1024, "zmm24", "zmm25", "zmm26", "zmm27")      \
  store_row5
#define QDQRT_ROW5_STORE QDQRT_STORE_ROW(1280, "zmm28", "zmm29", "zmm30", "zmm31")
// One line of weights into L2 per k-step (the loops' prefetch form).
#define QDQRT_PREFETCH_STEP    \
  "prefetcht1 (%[pf])\n\t"    \
  "add $64, %[pf]\n\t"
#define QDQRT_ZMM_CLOBBERS                                                                                   \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
      "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",    \
      "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31"

struct Avx512VnniTraits {
  static constexpr int kMr = 6;
  static constexpr bool kBalancedRows = true;  // the 5-row tile is the 6-row one's assembly
  static constexpr int kNr = 64;
  static constexpr int kKGroup = 4;
  static void copy_flip(uint8_t* dst, const uint8_t* src, int count, uint8_t flip) {
    copy_flip_avx512(dst, src, count, flip);
  }
  using PanelElement = uint8_t;

  template <int MR>
  static void tile(const uint8_t* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t) {
    if constexpr (MR == 1) {
      tile_single_row(a, b, k_groups, t);
      return;
    } else if constexpr (MR >= 5) {
      // The accumulators start from the bias (kAddBias = false below).
      alignas(64) int32_t acc[MR][4][16];
      full_tile_k_loop<MR>(a, a_stride, b, k_groups, t.bias, &acc[0][0][0], t.prefetch);
      store_full_tile<MR>(acc, t);
    } else {
      __m512i acc[MR][4];
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_si512();
      }
      for (int g = 0; g < k_groups; ++g) {
        const __m512i b0 = _mm512_loadu_si512(b);
        const __m512i b1 = _mm512_loadu_si512(b + 64);
        const __m512i b2 = _mm512_loadu_si512(b + 128);
        const __m512i b3 = _mm512_loadu_si512(b + 192);
        b += 256;
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
          int32_t word;
          std::memcpy(&word, a + r * a_stride + 4 * g, 4);
          const __m512i va = _mm512_set1_epi32(word);
          acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], va, b0);
          acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], va, b1);
          acc[r][2] = _mm512_dpbusd_epi32(acc[r][2], va, b2);
          acc[r][3] = _mm512_dpbusd_epi32(acc[r][3], va, b3);
        }
      }
      const __m512 clamp_min = _mm512_set1_ps(t.epilogue->clamp_min);
      const __m512 clamp_max = _mm512_set1_ps(t.epilogue->clamp_max);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) store_vector(acc[r][j], 16 * j, t.n_valid - 16 * j, t, r, clamp_min, clamp_max);
      }
    }
  }

  // A convolution's rows read tap by tap in place (qgemm_driver_inl.h, fill_tap_pointers): the
  // same products as tile<MR> over a gathered panel, so the same bytes.
  static constexpr bool kTapTiles = true;
  template <int MR>
  static void tap_tile(const uint8_t* const* taps, int tap_count, int tap_bytes, const int8_t* b,
                       const TileArgs& t) {
    static_assert(MR == 5 || MR == 6);
    alignas(64) int32_t acc[MR][4][16];
    tap_tile_k_loop<MR>(taps, tap_count, tap_bytes, b, t.bias, &acc[0][0][0], t.prefetch);
    store_full_tile<MR>(acc, t);
  }

  // The epilogue of a 5- or 6-row tile whose accumulators started from the bias.
  template <int MR>
  [[gnu::always_inline]] static void store_full_tile(const int32_t (&acc)[MR][4][16], const TileArgs& t) {
    if (packed_row_epilogue(t)) {
      store_tile_packed<false, MR>(&acc[0][0][0], t);
      return;
    }
    if (const PointwiseOp op = single_op_epilogue(t); op != PointwiseOp::kCopy) {
      store_block_single_op<false>(op, &acc[0][0][0], MR, 4, t);
      return;
    }
    const __m512 clamp_min = _mm512_set1_ps(t.epilogue->clamp_min);
    const __m512 clamp_max = _mm512_set1_ps(t.epilogue->clamp_max);
    for (int j = 0; j < 4; ++j) {
      const int count = t.n_valid - 16 * j;
      if (count <= 0) break;
      const ColumnConstants constants = load_column_constants(t, 16 * j);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        store_vector<false>(_mm512_load_si512(acc[r][j]), 16 * j, count, t, r, constants, clamp_min, clamp_max);
      }
    }
  }

  // The 6x64 (and 5x64) inner loop in assembly: GCC's register allocator spills some of the 24
  // accumulators inside the loop when this is written with intrinsics. Registers as described at
  // the QDQRT_ROW macros; the 5-row form leaves zmm28-zmm31 alone.
  template <int kRows>
  // `prefetch` (TileArgs::prefetch): when not null, one line per k-step from there into L2 (a
  // second form of the loop: the prefetch costs 1-2% where it has nothing to fetch).
  static void full_tile_k_loop(const uint8_t* a, int64_t a_stride, const int8_t* b, int k_groups,
                               const int32_t* bias, int32_t* out, const void* prefetch) {
    static_assert(kRows == 5 || kRows == 6);
    const uint8_t* a3 = a + 3 * a_stride;
    int64_t count = k_groups;
#define QDQRT_K_LOOP(init_row5, row5, store_row5, prefetch_step)                \
  QDQRT_TILE_INIT(init_row5)                                                    \
  "test %[count], %[count]\n\t"                                                 \
  "jle 2f\n\t"                                                                  \
  ".p2align 5\n"                                                                \
  "1:\n\t"                                                                      \
  QDQRT_LOAD_WEIGHTS                                                            \
  prefetch_step                                                                 \
  QDQRT_ROWS_0_TO_4("(%[a])", "(%[a],%[s],1)", "(%[a],%[s],2)", "(%[a3])", "(%[a3],%[s],1)")        \
  row5                                                                          \
  "add $256, %[b]\n\t"                                                          \
  "add $4, %[a]\n\t"                                                            \
  "add $4, %[a3]\n\t"                                                           \
  "dec %[count]\n\t"                                                            \
  "jnz 1b\n"                                                                    \
  "2:\n\t"                                                                      \
  QDQRT_TILE_STORE(store_row5)
#define QDQRT_K_LOOP_OPERANDS                                        \
  : [a] "+r"(a), [a3] "+r"(a3), [b] "+r"(b), [count] "+r"(count), [pf] "+r"(prefetch)    \
  : [s] "r"(a_stride), [out] "r"(out), [bias] "r"(bias)              \
  : "memory", "cc", QDQRT_ZMM_CLOBBERS
#define QDQRT_A_ROW5 QDQRT_ROW5("(%[a3],%[s],2)")
    if (prefetch != nullptr) {
      if constexpr (kRows == 6) {
        __asm__ volatile(QDQRT_K_LOOP(QDQRT_ROW5_INIT, QDQRT_A_ROW5, QDQRT_ROW5_STORE, QDQRT_PREFETCH_STEP)
                             QDQRT_K_LOOP_OPERANDS);
      } else {
        __asm__ volatile(QDQRT_K_LOOP("", "", "", QDQRT_PREFETCH_STEP) QDQRT_K_LOOP_OPERANDS);
      }
    } else {
      if constexpr (kRows == 6) {
        __asm__ volatile(QDQRT_K_LOOP(QDQRT_ROW5_INIT, QDQRT_A_ROW5, QDQRT_ROW5_STORE, "") QDQRT_K_LOOP_OPERANDS);
      } else {
        __asm__ volatile(QDQRT_K_LOOP("", "", "", "") QDQRT_K_LOOP_OPERANDS);
      }
    }
#undef QDQRT_A_ROW5
#undef QDQRT_K_LOOP_OPERANDS
#undef QDQRT_K_LOOP
  }

  // full_tile_k_loop tap by tap: for each of tap_count taps, the rows' pointers are loaded from
  // `taps` (6 per tap, each just past the tap's tap_bytes bytes) and tap_bytes / 4 k-steps run
  // with a negative index counting up to zero. Registers as in full_tile_k_loop.
  template <int kRows>
  static void tap_tile_k_loop(const uint8_t* const* taps, int64_t tap_count, int64_t tap_bytes, const int8_t* b,
                              const int32_t* bias, int32_t* out, const void* prefetch) {
    static_assert(kRows == 5 || kRows == 6);
    static_assert(kTapRowSlots == 6);
    const int64_t start = -tap_bytes;
    const uint8_t *p0, *p1, *p2, *p3, *p4, *p5;
    int64_t i;
#define QDQRT_TAP_LOOP(init_row5, load_p5, row5, store_row5, prefetch_step)     \
  QDQRT_TILE_INIT(init_row5)                                                    \
  "1:\n\t"                                                                      \
  "mov (%[t]), %[p0]\n\t"                                                       \
  "mov 8(%[t]), %[p1]\n\t"                                                      \
  "mov 16(%[t]), %[p2]\n\t"                                                     \
  "mov 24(%[t]), %[p3]\n\t"                                                     \
  "mov 32(%[t]), %[p4]\n\t"                                                     \
  load_p5                                                                       \
  "add $48, %[t]\n\t"                                                           \
  "mov %[start], %[i]\n\t"                                                      \
  ".p2align 5\n"                                                                \
  "2:\n\t"                                                                      \
  QDQRT_LOAD_WEIGHTS                                                            \
  prefetch_step                                                                 \
  QDQRT_ROWS_0_TO_4("(%[p0],%[i],1)", "(%[p1],%[i],1)", "(%[p2],%[i],1)", "(%[p3],%[i],1)",            \
                    "(%[p4],%[i],1)")                                                                \
  row5                                                                          \
  "add $256, %[b]\n\t"                                                          \
  "add $4, %[i]\n\t"                                                            \
  "jnz 2b\n\t"                                                                  \
  "dec %[count]\n\t"                                                            \
  "jnz 1b\n\t"                                                                  \
  QDQRT_TILE_STORE(store_row5)
#define QDQRT_TAP_LOOP_OPERANDS                                                                               \
  : [t] "+r"(taps), [b] "+r"(b), [count] "+r"(tap_count), [p0] "=&r"(p0), [p1] "=&r"(p1), [p2] "=&r"(p2),  \
    [p3] "=&r"(p3), [p4] "=&r"(p4), [p5] "=&r"(p5), [i] "=&r"(i), [pf] "+r"(prefetch)                       \
  : [start] "rm"(start), [out] "r"(out), [bias] "r"(bias)                                                     \
  : "memory", "cc", QDQRT_ZMM_CLOBBERS
#define QDQRT_P5 "mov 40(%[t]), %[p5]\n\t"
#define QDQRT_P_ROW5 QDQRT_ROW5("(%[p5],%[i],1)")
    if (prefetch != nullptr) {
      if constexpr (kRows == 6) {
        __asm__ volatile(QDQRT_TAP_LOOP(QDQRT_ROW5_INIT, QDQRT_P5, QDQRT_P_ROW5, QDQRT_ROW5_STORE, QDQRT_PREFETCH_STEP)
                             QDQRT_TAP_LOOP_OPERANDS);
      } else {
        __asm__ volatile(QDQRT_TAP_LOOP("", "", "", "", QDQRT_PREFETCH_STEP) QDQRT_TAP_LOOP_OPERANDS);
      }
    } else {
      if constexpr (kRows == 6) {
        __asm__ volatile(QDQRT_TAP_LOOP(QDQRT_ROW5_INIT, QDQRT_P5, QDQRT_P_ROW5, QDQRT_ROW5_STORE, "")
                             QDQRT_TAP_LOOP_OPERANDS);
      } else {
        __asm__ volatile(QDQRT_TAP_LOOP("", "", "", "", "") QDQRT_TAP_LOOP_OPERANDS);
      }
    }
#undef QDQRT_P_ROW5
#undef QDQRT_P5
#undef QDQRT_TAP_LOOP_OPERANDS
#undef QDQRT_TAP_LOOP
  }

  // M = 1 (GEMV): bound by streaming the weights, so two k-groups in flight (8 independent
  // accumulators) and a prefetch a few cache lines ahead.
  static void tile_single_row(const uint8_t* a, const int8_t* b, int k_groups, const TileArgs& t) {
    __m512i acc0[4], acc1[4];
    for (int j = 0; j < 4; ++j) acc0[j] = acc1[j] = _mm512_setzero_si512();
    int g = 0;
    for (; g + 2 <= k_groups; g += 2) {
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1024, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1088, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1152, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1216, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1280, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1344, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1408, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1472, _MM_HINT_T0);
      int32_t w0, w1;
      std::memcpy(&w0, a + 4 * g, 4);
      std::memcpy(&w1, a + 4 * g + 4, 4);
      const __m512i va0 = _mm512_set1_epi32(w0);
      const __m512i va1 = _mm512_set1_epi32(w1);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc0[j] = _mm512_dpbusd_epi32(acc0[j], va0, _mm512_loadu_si512(b + 64 * j));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc1[j] = _mm512_dpbusd_epi32(acc1[j], va1, _mm512_loadu_si512(b + 256 + 64 * j));
      b += 512;
    }
    if (g < k_groups) {
      int32_t w0;
      std::memcpy(&w0, a + 4 * g, 4);
      const __m512i va0 = _mm512_set1_epi32(w0);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc0[j] = _mm512_dpbusd_epi32(acc0[j], va0, _mm512_loadu_si512(b + 64 * j));
    }
    const __m512 clamp_min = _mm512_set1_ps(t.epilogue->clamp_min);
    const __m512 clamp_max = _mm512_set1_ps(t.epilogue->clamp_max);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      store_vector(_mm512_add_epi32(acc0[j], acc1[j]), 16 * j, t.n_valid - 16 * j, t, 0, clamp_min, clamp_max);
    }
  }
};

#undef QDQRT_ZMM_CLOBBERS
#undef QDQRT_PREFETCH_STEP
#undef QDQRT_ROW5_STORE
#undef QDQRT_TILE_STORE
#undef QDQRT_ROW5
#undef QDQRT_ROWS_0_TO_4
#undef QDQRT_LOAD_WEIGHTS
#undef QDQRT_ROW5_INIT
#undef QDQRT_TILE_INIT
#undef QDQRT_STORE_ROW
#undef QDQRT_INIT_ROW
#undef QDQRT_ROW

// Narrow tiles: MR rows x (16 * kVectors) columns, accumulators in registers (MR * kVectors <= 16,
// so GCC keeps them there without the 6x64 tile's assembly), one broadcast per row and k-group.
template <int kVectors, int kRows>
struct Avx512VnniNarrowTraits {
  static constexpr int kMr = kRows;
  static constexpr int kNr = 16 * kVectors;
  static constexpr int kKGroup = 4;
  static void copy_flip(uint8_t* dst, const uint8_t* src, int count, uint8_t flip) {
    Avx512VnniTraits::copy_flip(dst, src, count, flip);
  }
  using PanelElement = uint8_t;

  template <int MR>
  static void tile(const uint8_t* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t) {
    __m512i acc[MR][kVectors];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < kVectors; ++j) acc[r][j] = _mm512_setzero_si512();
    }
    for (int g = 0; g < k_groups; ++g) {
      __m512i w[kVectors];
#pragma GCC unroll 4
      for (int j = 0; j < kVectors; ++j) w[j] = _mm512_loadu_si512(b + 64 * j);
      b += 64 * kVectors;
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        int32_t word;
        std::memcpy(&word, a + r * a_stride + 4 * g, 4);
        const __m512i va = _mm512_set1_epi32(word);
#pragma GCC unroll 4
        for (int j = 0; j < kVectors; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], va, w[j]);
      }
    }
    if (plain_epilogue(t)) {
      const PlainStore store = plain_store(t);
#pragma GCC unroll 4
      for (int j = 0; j < kVectors; ++j) {
        const int count = t.n_valid - 16 * j;
        if (count <= 0) break;
        const ColumnConstants constants = load_column_constants(t, 16 * j);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) store_vector_plain(acc[r][j], 16 * j, count, r, constants, store);
      }
      return;
    }
    if (const PointwiseOp op = single_op_epilogue(t); op != PointwiseOp::kCopy) {
      alignas(64) int32_t stored[MR][kVectors][16];
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
        for (int j = 0; j < kVectors; ++j) _mm512_store_si512(stored[r][j], acc[r][j]);
      }
      store_block_single_op(op, &stored[0][0][0], MR, kVectors, t);
      return;
    }
    const __m512 clamp_min = _mm512_set1_ps(t.epilogue->clamp_min);
    const __m512 clamp_max = _mm512_set1_ps(t.epilogue->clamp_max);
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) {
      const int count = t.n_valid - 16 * j;
      if (count <= 0) break;
      const ColumnConstants constants = load_column_constants(t, 16 * j);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) store_vector(acc[r][j], 16 * j, count, t, r, constants, clamp_min, clamp_max);
    }
  }
};

// 12 rows x 32 columns: the convolution stem form's tile (kernels/conv/qconv_stem.cpp) for 17..32
// output channels, as in MobileNetV2's and EfficientNet's 3x3 stems (K = 28), and the tile packing
// picks for 32-column multiples that are not 64-column ones (dispatch.cpp); 24 accumulators
// that start from the bias, one broadcast per row and k-group for two vpdpbusd (the 12x16 tile
// run twice over the same rows spent one per vpdpbusd). With K this small the epilogue costs
// about as much as the products, so plain int8/uint8 rows leave two at a time: their four
// requantized vectors packed to 64 bytes as store_row_packed packs one 64-column row (same
// operations, same bytes; the clamp on the bytes when PackedGemm::bounded), one 64-byte store
// when the two rows are adjacent in memory. Other epilogues go through store_vector.
struct Avx512VnniStemTraits {
  static constexpr int kMr = 12;
  static constexpr int kNr = 32;
  static constexpr int kKGroup = 4;
  static void copy_flip(uint8_t* dst, const uint8_t* src, int count, uint8_t flip) {
    Avx512VnniTraits::copy_flip(dst, src, count, flip);
  }
  using PanelElement = uint8_t;

  template <int MR>
  static void tile(const uint8_t* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t) {
    __m512i acc[MR][2];
    const __m512i bias0 = _mm512_loadu_si512(t.bias);
    const __m512i bias1 = _mm512_loadu_si512(t.bias + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      acc[r][0] = bias0;
      acc[r][1] = bias1;
    }
    for (int g = 0; g < k_groups; ++g) {
      const __m512i w0 = _mm512_loadu_si512(b);
      const __m512i w1 = _mm512_loadu_si512(b + 64);
      b += 128;
#pragma GCC unroll 12
      for (int r = 0; r < MR; ++r) {
        int32_t word;
        std::memcpy(&word, a + r * a_stride + 4 * g, 4);
        const __m512i va = _mm512_set1_epi32(word);
        acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], va, w0);
        acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], va, w1);
      }
    }
    // The epilogues read the accumulators from memory: handing them the register array itself
    // made GCC keep a memory copy up to date inside the k-loop (a store and two moves per
    // vpdpbusd, 3x the loop's instructions).
    alignas(64) int32_t stored[MR][2][16];
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      _mm512_store_si512(stored[r][0], acc[r][0]);
      _mm512_store_si512(stored[r][1], acc[r][1]);
    }
    if (t.residual == nullptr && packed_row_epilogue(t)) {
      store_pairs(stored, t);
      return;
    }
    if (const PointwiseOp op = single_op_epilogue(t); op != PointwiseOp::kCopy) {
      store_block_single_op<false>(op, &stored[0][0][0], MR, 2, t);
      return;
    }
    const __m512 clamp_min = _mm512_set1_ps(t.epilogue->clamp_min);
    const __m512 clamp_max = _mm512_set1_ps(t.epilogue->clamp_max);
    for (int j = 0; j < 2; ++j) {
      const int count = t.n_valid - 16 * j;
      if (count <= 0) break;
      const ColumnConstants constants = load_column_constants(t, 16 * j);
      for (int r = 0; r < MR; ++r) {
        store_vector<false>(_mm512_load_si512(stored[r][j]), 16 * j, count, t, r, constants, clamp_min, clamp_max);
      }
    }
  }

  // Rows r and r + 1 (or r alone when it is the last) of a plain int8/uint8 tile.
  template <bool kUnsigned, bool kIntegerClamp, int MR>
  [[gnu::always_inline]] static void store_pair(const int32_t (&acc)[MR][2][16], int r, const PackedRowStore& p) {
    auto requantize = [&](int row, int j) {
      __m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(acc[row][j])), p.columns[j].multiplier,
                                 p.columns[j].float_bias);
      if constexpr (!kIntegerClamp) y = _mm512_min_ps(_mm512_max_ps(y, p.clamp_min), p.clamp_max);
      return _mm512_cvtps_epi32(y);
    };
    const int s = r + 1 < MR ? r + 1 : r;
    // Row r's 32 columns then row s's, packed as one 64-column row: row r's 32 bytes then row s's.
    const __m512i bytes = pack_requantized<kUnsigned, kIntegerClamp>(requantize(r, 0), requantize(r, 1),
                                                                     requantize(s, 0), requantize(s, 1), p.packing);
    char* out = p.c + r * p.c_row_bytes;
    const __mmask32 row_mask = static_cast<__mmask32>(p.mask);
    if (s != r && p.c_row_bytes == 32 && row_mask == ~__mmask32(0)) {
      _mm512_storeu_si512(out, bytes);
      return;
    }
    _mm256_mask_storeu_epi8(out, row_mask, _mm512_castsi512_si256(bytes));
    if (s != r) _mm256_mask_storeu_epi8(out + p.c_row_bytes, row_mask, _mm512_extracti64x4_epi64(bytes, 1));
  }

  template <int MR>
  static void store_pairs(const int32_t (&acc)[MR][2][16], const TileArgs& t) {
    const PackedRowStore p = packed_row_store(t, 32);  // t.residual is null here
    auto rows = [&](auto is_unsigned, auto clamp) {
#pragma GCC unroll 6
      for (int r = 0; r < MR; r += 2) {
        store_pair<decltype(is_unsigned)::value, decltype(clamp)::value>(acc, r, p);
      }
    };
    using std::false_type, std::true_type;
    if (t.epilogue->output_type == OutputType::kU8) {
      t.integer_clamp ? rows(true_type{}, true_type{}) : rows(true_type{}, false_type{});
    } else {
      t.integer_clamp ? rows(false_type{}, true_type{}) : rows(false_type{}, false_type{});
    }
  }
};

}  // namespace

void gemm_run_avx512vnni(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                         const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_driver<Avx512VnniTraits>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

void gemm_run_avx512vnni_12x32(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                               const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_driver<Avx512VnniStemTraits>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

void gemm_run_avx512vnni_12x16(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                               const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_driver<Avx512VnniNarrowTraits<1, 12>>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin,
                                            n_end);
}

}  // namespace qdqrt::kernels::internal
