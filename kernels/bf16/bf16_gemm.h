// BF16 GEMM with fp32 accumulation: the reduced-precision path of the float MatMul/Gemm layers
// with constant weights (BuildOptions::bf16, `qdqrt exec --bf16`).
//
//   C[m][n] = clamp(sum_k bf16(A[m][k]) * bf16(W[k][n]) + bias[n] + residual[m][n], min, max)
//
// W is converted to bf16 once, at build time, and packed in k pairs: [n_padded / NR][K2][NR][2]
// with K2 = ceil(K / 2), element (k, n) of a panel at [k / 2][n % NR][k % 2] (an odd K's last
// pair holds a zero). Each run converts the A rows of a tile to bf16 (round to nearest even) into
// the caller's scratch, [MR][K2][2], so that a row's pair (k, k + 1) is one 32-bit word. The sums
// are those of vdpbf16ps (AVX512_BF16): per pair, accumulator = fma(a[k+1], w[k+1], accumulator),
// then fma(a[k], w[k], accumulator), each rounded to nearest even, denormal inputs read as zero
// and denormal results flushed to zero (Intel SDM, VDPBF16PS), from 0 in pair order; the bias,
// the residual and the clamp follow in fp32 once the sum is done.
//
// Variants:
//   amxbf16     32 x 32 on AMX tiles (tdpbf16ps: four fp32 C tiles, k in blocks of 16 pairs; the
//               same packed weights, B tiles loaded in place). Its sums are the tile unit's, not
//               vdpbf16ps's order: tested against the reference within fp32 summation error.
//   avx512bf16  14 x 32 (28 zmm accumulators, two panel vectors, A pairs broadcast from memory)
//   scalar      14 x 32 in plain C++ emulating each instruction bit for bit: the reference the
//               vector kernel is tested against (exactly equal), not run by the engine.
// Only CPUs with AVX512_BF16 (Cooper Lake, Sapphire Rapids and later, AMD Zen 4+) run the engine
// path; elsewhere the float layers keep their fp32 kernels.
//
// Threading: rows [m_begin, m_end) x columns [n_begin, n_end) (n_begin a multiple of NR); disjoint
// ranges may run concurrently, each with its own scratch. Nothing allocates at run time.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace qdqrt::kernels {

inline constexpr int kBf16GemmMr = 14;
inline constexpr int kBf16GemmNr = 32;

// fp32 -> bf16 as vcvtne2ps2bf16 rounds: to nearest even; zero and denormal inputs give a zero
// of their sign; infinities keep their bits; a NaN keeps its sign and top mantissa bits and is
// made quiet.
uint16_t bf16_from_float(float value);
inline float float_from_bf16(uint16_t value) {
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result;
  __builtin_memcpy(&result, &bits, sizeof(result));
  return result;
}

// What CPUID says (leaf 7 sub-leaf 1, EAX bit 5), and whether the engine may use it: also needs
// the AVX-512 state the kAvx512Vnni level checks and that level not limited away (QDQRT_MAX_ISA).
bool cpu_has_avx512bf16();
bool bf16_gemm_usable();
// AMX-BF16 (CPUID.(7,0):EDX bit 22) with the AMX tile state and permission amx_hardware_missing()
// checks, on top of bf16_gemm_usable(), and kernels not limited below amxint8 (QDQRT_MAX_ISA).
bool bf16_amx_usable();
std::string bf16_amx_unavailable_reason();
// Why bf16_gemm_usable() is false ("" when it is true), for warnings and errors.
std::string bf16_gemm_unavailable_reason();

// Weight element (k, n) is weights[k * stride_k + n * stride_n]: a MatMul's B [K][N] has
// stride_k = N, stride_n = 1; a Gemm's transposed B [N][K] stride_k = 1, stride_n = K.
struct Bf16GemmWeightsDesc {
  int n = 0, k = 0;
  const float* weights = nullptr;
  int64_t stride_k = 0, stride_n = 1;
  const float* bias = nullptr;  // n values or null
};

int bf16_gemm_padded_n(int n);
int64_t bf16_gemm_k_pairs(int64_t k);
// uint16_t elements of the packed weights: n_padded * 2 * k_pairs.
int64_t packed_bf16_gemm_elements(int n, int64_t k);
// Packs into caller memory (64-byte aligned): `data` packed_bf16_gemm_elements() values, `bias`
// bf16_gemm_padded_n() floats (zeros past n).
void pack_bf16_gemm(const Bf16GemmWeightsDesc& desc, uint16_t* data, float* bias);

// Packed weights kept elsewhere (the engine file's blobs).
struct Bf16GemmWeights {
  int n = 0, k = 0;
  const uint16_t* data = nullptr;
  const float* bias = nullptr;
};

struct Bf16GemmEpilogue {
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  const float* residual = nullptr;  // element (m, n) at residual[m * residual_row_stride + n]
  int64_t residual_row_stride = 0;
};

// Bytes of scratch one run_bf16_gemm call needs (the converted A rows of one tile).
int64_t bf16_gemm_scratch_bytes(int64_t k);

enum class Bf16GemmVariant { kScalar, kAvx512Bf16, kAmxBf16 };
// The engine's choice on this machine: kAmxBf16 where usable, else kAvx512Bf16.
Bf16GemmVariant best_bf16_gemm_variant();
// "bf16-gemm-14x32-avx512bf16", "bf16-gemm-32x32-amxbf16".
std::string bf16_gemm_kernel_name(Bf16GemmVariant variant);

// A row m at a + m * a_row_stride (k values); scratch: bf16_gemm_scratch_bytes(k) bytes, 64-byte
// aligned (any variant). kAvx512Bf16 needs cpu_has_avx512bf16(), kAmxBf16 bf16_amx_usable().
void run_bf16_gemm(Bf16GemmVariant variant, const Bf16GemmWeights& weights, const float* a, int64_t a_row_stride,
                   float* c, int64_t c_row_stride, const Bf16GemmEpilogue& epilogue, int64_t m_begin, int64_t m_end,
                   int n_begin, int n_end, void* scratch);

namespace internal {
// One tile: rows [0, mr) (mr <= MR) of `a` (bf16 pairs, row r at a + r * a_row_pairs 32-bit
// words), columns [0, nc) (nc <= NR) of one panel `w` ([K2][NR][2]), all K2 pairs.
struct Bf16UkernelArgs {
  int mr = 0, nc = 0;
  int64_t k_pairs = 0;
  const uint32_t* a = nullptr;
  int64_t a_row_pairs = 0;
  const uint16_t* w = nullptr;
  const float* bias = nullptr;  // the panel's NR values
  float* c = nullptr;
  int64_t c_row_stride = 0;
  const float* residual = nullptr;  // the tile's first element, or null
  int64_t residual_row_stride = 0;
  float min = 0.0f, max = 0.0f;
};
// Converts `count` floats to bf16 (bf16_from_float's rounding), count even.
using Bf16ConvertFn = void (*)(const float* input, int64_t count, uint16_t* output);
using Bf16UkernelFn = void (*)(const Bf16UkernelArgs& args);
namespace scalar {
void bf16_gemm_ukernel(const Bf16UkernelArgs& args);
void bf16_convert(const float* input, int64_t count, uint16_t* output);
}  // namespace scalar
namespace avx512bf16 {
void bf16_gemm_ukernel(const Bf16UkernelArgs& args);
void bf16_convert(const float* input, int64_t count, uint16_t* output);
}  // namespace avx512bf16
namespace amxbf16 {
int64_t padded_pairs(int64_t k_pairs);  // k pairs rounded up to the 16 of a tile row
int64_t rows_per_pass(int64_t k_pairs);  // A rows converted at a time (a multiple of 32)
int64_t scratch_bytes(int64_t k_pairs);
void run(const Bf16GemmWeights& weights, const float* a, int64_t a_row_stride, float* c, int64_t c_row_stride,
         const Bf16GemmEpilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end, void* scratch);
}  // namespace amxbf16
}  // namespace internal

}  // namespace qdqrt::kernels
