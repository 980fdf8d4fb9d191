// One implementation of the elementwise/softmax fp32 kernels written with GCC vector extensions,
// compiled once per ISA file: fp32_kernels_avx2.cpp (8 lanes) and fp32_kernels_avx512skx.cpp
// (16 lanes) define QDQRT_FP32_LANES and QDQRT_FP32_NAMESPACE, then include this file.
// Everything here has internal linkage except the exported kernels.
#if !defined(QDQRT_FP32_LANES) || !defined(QDQRT_FP32_NAMESPACE)
#error "define QDQRT_FP32_LANES and QDQRT_FP32_NAMESPACE before including fp32_vector_impl.h"
#endif

#include <immintrin.h>

// GCC 12 reports -W(maybe-)uninitialized inside its own AVX-512 intrinsics (the _mm512_undefined_*
// idiom, GCC bug 105593, fixed in GCC 13) wherever they are inlined; silence it for this file.
#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstring>

#include "kernels/fp32/fp32_kernels.h"

#define QDQRT_VECTOR_LANES QDQRT_FP32_LANES
#include "kernels/vector_math_inl.h"
#undef QDQRT_VECTOR_LANES

namespace qdqrt::kernels {
namespace {
namespace fp32vec {

constexpr size_t kLanes = QDQRT_FP32_LANES;
using vmath::vf;
using vmath::vi;
using vmath::splat;
using vmath::load;
using vmath::store;
using vmath::vmax;
using vmath::vmin;
using vmath::vsqrt;
using vmath::vexp;

inline vf unary_value(Fp32UnaryOp op, const Fp32UnaryParams& params, vf x) {
  const vf zero = splat(0.0f), one = splat(1.0f);
  switch (op) {
    case Fp32UnaryOp::kRelu: return vmax(x, zero);
    case Fp32UnaryOp::kClip: return vmin(vmax(x, splat(params.alpha)), splat(params.beta));
    case Fp32UnaryOp::kLeakyRelu: return x >= zero ? x : splat(params.alpha) * x;
    case Fp32UnaryOp::kHardSigmoid:
      return vmax(vmin(splat(params.alpha) * x + splat(params.beta), one), zero);
    case Fp32UnaryOp::kHardSwish: return vmath::vhardswish(x);
    case Fp32UnaryOp::kSigmoid: return vmath::vsigmoid(x);
    case Fp32UnaryOp::kSilu: return vmath::vsilu(x);
    case Fp32UnaryOp::kTanh: return vmath::vtanh(x);
    case Fp32UnaryOp::kGelu: return vmath::vgelu(x);
    case Fp32UnaryOp::kExp: return vexp(x);
    case Fp32UnaryOp::kAbs: return vmath::vabs(x);
    case Fp32UnaryOp::kNeg: return -x;
    case Fp32UnaryOp::kSqrt: return vsqrt(x);
    case Fp32UnaryOp::kErf: return vmath::verf(x);
  }
  return x;
}

inline vf binary_value(Fp32BinaryOp op, vf a, vf b) {
  switch (op) {
    case Fp32BinaryOp::kAdd: return a + b;
    case Fp32BinaryOp::kSub: return a - b;
    case Fp32BinaryOp::kMul: return a * b;
    case Fp32BinaryOp::kDiv: return a / b;
    case Fp32BinaryOp::kMax: return vmax(a, b);
    case Fp32BinaryOp::kMin: return vmin(a, b);
  }
  return a;
}

// A row's tail (count < kLanes elements) in one masked vector, and the max as a shuffle tree: a
// softmax over rows of 49 (Swin's 7x7 windows) spent ~160 cycles per row on a tail through arrays
// and lane-by-lane max; Swin-T's 12 softmax layers 1.70 -> 0.68 ms with softmax_rows<4> (1 thread,
// Zen 5).
#if QDQRT_FP32_LANES == 16
using TailMask = __mmask16;
inline TailMask tail_mask(size_t count) { return static_cast<__mmask16>((1u << count) - 1u); }
inline vf load_tail(const float* p, TailMask m, float fill) {
  return (vf)_mm512_mask_loadu_ps(_mm512_set1_ps(fill), m, p);
}
inline void store_tail(float* p, vf v, TailMask m) { _mm512_mask_storeu_ps(p, m, (__m512)v); }
inline vf keep_lanes(vf v, TailMask m) { return (vf)_mm512_maskz_mov_ps(m, (__m512)v); }
inline float horizontal_max(vf v) { return _mm512_reduce_max_ps((__m512)v); }
#else
using TailMask = __m256i;
inline TailMask tail_mask(size_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline vf load_tail(const float* p, TailMask m, float fill) {
  return (vf)_mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
inline void store_tail(float* p, vf v, TailMask m) { _mm256_maskstore_ps(p, m, (__m256)v); }
inline vf keep_lanes(vf v, TailMask m) { return (vf)_mm256_and_ps((__m256)v, _mm256_castsi256_ps(m)); }
inline float horizontal_max(vf v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  x = _mm_max_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}
#endif

// Applies block(in_pointers..., out) over full vectors, then once on the tail (its other lanes
// read as zeros and not stored).
template <class Block>
inline void for_each_vector(size_t n, const float* a, const float* b, float* out, Block block) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(out + i, block(load(a + i), b ? load(b + i) : vf{}));
  if (i < n) {
    const TailMask mask = tail_mask(n - i);
    store_tail(out + i, block(load_tail(a + i, mask, 0.0f), b ? load_tail(b + i, mask, 0.0f) : vf{}), mask);
  }
}

}  // namespace fp32vec
}  // namespace

namespace QDQRT_FP32_NAMESPACE {

using namespace fp32vec;

// The op switch sits outside the loops: each case instantiates a loop with a constant op.
template <Fp32BinaryOp kOp>
void binary_loop(size_t n, const float* a, const float* b, float* out) {
  for_each_vector(n, a, b, out, [](vf x, vf y) { return binary_value(kOp, x, y); });
}
template <Fp32BinaryOp kOp>
void binary_vs_loop(size_t n, const float* a, float b, float* out) {
  const vf vb = splat(b);
  for_each_vector(n, a, nullptr, out, [vb](vf x, vf) { return binary_value(kOp, x, vb); });
}
template <Fp32BinaryOp kOp>
void binary_sv_loop(size_t n, float a, const float* b, float* out) {
  const vf va = splat(a);
  for_each_vector(n, b, nullptr, out, [va](vf y, vf) { return binary_value(kOp, va, y); });
}
template <Fp32UnaryOp kOp>
void unary_loop(const Fp32UnaryParams& params, size_t n, const float* input, float* output) {
  for_each_vector(n, input, nullptr, output, [&params](vf x, vf) { return unary_value(kOp, params, x); });
}

#define QDQRT_BINARY_CASES(loop, ...)                                              \
  switch (op) {                                                                    \
    case Fp32BinaryOp::kAdd: return loop<Fp32BinaryOp::kAdd>(__VA_ARGS__);         \
    case Fp32BinaryOp::kSub: return loop<Fp32BinaryOp::kSub>(__VA_ARGS__);         \
    case Fp32BinaryOp::kMul: return loop<Fp32BinaryOp::kMul>(__VA_ARGS__);         \
    case Fp32BinaryOp::kDiv: return loop<Fp32BinaryOp::kDiv>(__VA_ARGS__);         \
    case Fp32BinaryOp::kMax: return loop<Fp32BinaryOp::kMax>(__VA_ARGS__);         \
    case Fp32BinaryOp::kMin: return loop<Fp32BinaryOp::kMin>(__VA_ARGS__);         \
  }

void fp32_binary(Fp32BinaryOp op, size_t n, const float* a, const float* b, float* out) {
  QDQRT_BINARY_CASES(binary_loop, n, a, b, out)
}
void fp32_binary_vs(Fp32BinaryOp op, size_t n, const float* a, float b, float* out) {
  QDQRT_BINARY_CASES(binary_vs_loop, n, a, b, out)
}
void fp32_binary_sv(Fp32BinaryOp op, size_t n, float a, const float* b, float* out) {
  QDQRT_BINARY_CASES(binary_sv_loop, n, a, b, out)
}
#undef QDQRT_BINARY_CASES

void fp32_unary(Fp32UnaryOp op, const Fp32UnaryParams& params, size_t n, const float* input, float* output) {
  switch (op) {
    case Fp32UnaryOp::kRelu: return unary_loop<Fp32UnaryOp::kRelu>(params, n, input, output);
    case Fp32UnaryOp::kClip: return unary_loop<Fp32UnaryOp::kClip>(params, n, input, output);
    case Fp32UnaryOp::kLeakyRelu: return unary_loop<Fp32UnaryOp::kLeakyRelu>(params, n, input, output);
    case Fp32UnaryOp::kHardSigmoid: return unary_loop<Fp32UnaryOp::kHardSigmoid>(params, n, input, output);
    case Fp32UnaryOp::kHardSwish: return unary_loop<Fp32UnaryOp::kHardSwish>(params, n, input, output);
    case Fp32UnaryOp::kSigmoid: return unary_loop<Fp32UnaryOp::kSigmoid>(params, n, input, output);
    case Fp32UnaryOp::kSilu: return unary_loop<Fp32UnaryOp::kSilu>(params, n, input, output);
    case Fp32UnaryOp::kTanh: return unary_loop<Fp32UnaryOp::kTanh>(params, n, input, output);
    case Fp32UnaryOp::kGelu: return unary_loop<Fp32UnaryOp::kGelu>(params, n, input, output);
    case Fp32UnaryOp::kExp: return unary_loop<Fp32UnaryOp::kExp>(params, n, input, output);
    case Fp32UnaryOp::kAbs: return unary_loop<Fp32UnaryOp::kAbs>(params, n, input, output);
    case Fp32UnaryOp::kNeg: return unary_loop<Fp32UnaryOp::kNeg>(params, n, input, output);
    case Fp32UnaryOp::kSqrt: return unary_loop<Fp32UnaryOp::kSqrt>(params, n, input, output);
    case Fp32UnaryOp::kErf: return unary_loop<Fp32UnaryOp::kErf>(params, n, input, output);
  }
}

void fp32_channel_sums(size_t rows, size_t channels, size_t row_stride, const float* input, double* sums) {
  typedef float half_vf __attribute__((vector_size(kLanes * 2)));
  typedef double vd __attribute__((vector_size(kLanes * 4)));
  // kHalves double accumulators (half a float vector each) stay in registers over all rows.
  auto sum_columns = [&]<size_t kHalves>(size_t c) {
    vd acc[kHalves] = {};
    for (size_t r = 0; r < rows; ++r) {
      const float* in = input + r * row_stride + c;
      for (size_t h = 0; h < kHalves; ++h) {
        half_vf half;
        std::memcpy(&half, in + h * (kLanes / 2), sizeof half);
        acc[h] += __builtin_convertvector(half, vd);
      }
    }
    for (size_t h = 0; h < kHalves; ++h) std::memcpy(sums + c + h * (kLanes / 2), &acc[h], sizeof(vd));
  };
  // Blocks of 4 float vectors, then the 1-3 vectors left in one pass (EfficientNet's
  // 32/96/144/240/480/672 channels leave 16-48 after the blocks of 64): a pass per vector ran 2
  // add chains, latency bound, and read each row's lines once per pass (docs/decisions.md).
  size_t c = 0;
  for (; c + 4 * kLanes <= channels; c += 4 * kLanes) sum_columns.template operator()<8>(c);
  switch ((channels - c) / kLanes) {
    case 3: sum_columns.template operator()<6>(c); break;
    case 2: sum_columns.template operator()<4>(c); break;
    case 1: sum_columns.template operator()<2>(c); break;
    default: break;
  }
  c += (channels - c) / kLanes * kLanes;
  // The last channels one by one; every channel sums its rows in row order, so all paths agree.
  for (size_t t = c; t < channels; ++t) sums[t] = 0.0;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t t = c; t < channels; ++t) sums[t] += static_cast<double>(input[r * row_stride + t]);
  }
}

void fp32_channel_sums_f32(size_t rows, size_t channels, size_t row_stride, const float* input, float* sums) {
  using fp32vec::vf;
  // Up to 8 vector accumulators per pass over the rows (independent add chains; a depthwise row
  // is in L1, so the adds' latency is the limit), the 1-7 vectors left in one more pass.
  auto sum_columns = [&]<size_t kVectors>(size_t c) {
    vf acc[kVectors];
    for (size_t v = 0; v < kVectors; ++v) acc[v] = fp32vec::splat(0.0f);
    for (size_t r = 0; r < rows; ++r) {
      const float* in = input + r * row_stride + c;
      for (size_t v = 0; v < kVectors; ++v) acc[v] += fp32vec::load(in + v * fp32vec::kLanes);
    }
    for (size_t v = 0; v < kVectors; ++v) fp32vec::store(sums + c + v * fp32vec::kLanes, acc[v]);
  };
  constexpr size_t kLanes = fp32vec::kLanes;
  size_t c = 0;
  for (; c + 8 * kLanes <= channels; c += 8 * kLanes) sum_columns.template operator()<8>(c);
  switch ((channels - c) / kLanes) {
    case 7: sum_columns.template operator()<7>(c); break;
    case 6: sum_columns.template operator()<6>(c); break;
    case 5: sum_columns.template operator()<5>(c); break;
    case 4: sum_columns.template operator()<4>(c); break;
    case 3: sum_columns.template operator()<3>(c); break;
    case 2: sum_columns.template operator()<2>(c); break;
    case 1: sum_columns.template operator()<1>(c); break;
    default: break;
  }
  c += (channels - c) / kLanes * kLanes;
  // The last channels one by one, in row order like every lane above.
  for (size_t t = c; t < channels; ++t) sums[t] = 0.0f;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t t = c; t < channels; ++t) sums[t] += input[r * row_stride + t];
  }
}

// kRows rows at once: each row's arithmetic is the one-row pass's (the same bits), the rows'
// dependency chains (the max tree, exp, the lane-order sum) interleaved so one row's latency hides
// behind the others' work: 4 rows of 49 columns 15% faster than one at a time (2 rows: 9%).
template <size_t kRows>
[[gnu::always_inline]] inline void softmax_rows(size_t cols, const float* input, float* output, size_t full,
                                                size_t tail, TailMask mask) {
  vf max_vector[kRows], sum_vector[kRows], tail_e[kRows], vmax_value[kRows];
  for (size_t j = 0; j < kRows; ++j) {
    const float* in = input + j * cols;
    max_vector[j] = tail != 0 ? load_tail(in + full, mask, -__builtin_inff()) : splat(-__builtin_inff());
    for (size_t c = 0; c < full; c += kLanes) max_vector[j] = vmax(load(in + c), max_vector[j]);
  }
  for (size_t j = 0; j < kRows; ++j) vmax_value[j] = splat(horizontal_max(max_vector[j]));
  for (size_t j = 0; j < kRows; ++j) {
    const float* in = input + j * cols;
    float* out = output + j * cols;
    sum_vector[j] = splat(0.0f);
    for (size_t c = 0; c < full; c += kLanes) {
      const vf e = vexp(load(in + c) - vmax_value[j]);
      store(out + c, e);
      sum_vector[j] += e;
    }
    tail_e[j] = vf{};
    if (tail != 0) tail_e[j] = keep_lanes(vexp(load_tail(in + full, mask, 0.0f) - vmax_value[j]), mask);
  }
  // The sum in lane order, then the tail in column order: the bits of the sums before masked tails
  // and shuffle reductions (the engines' stored output digests, tests/engine/model_references).
  float sum[kRows];
  for (size_t j = 0; j < kRows; ++j) {
    float lanes[kLanes], tail_lanes[kLanes];
    store(lanes, sum_vector[j]);
    sum[j] = 0.0f;
    for (size_t i = 0; i < kLanes; ++i) sum[j] += lanes[i];
    store(tail_lanes, tail_e[j]);
    for (size_t i = 0; i < tail; ++i) sum[j] += tail_lanes[i];
  }
  for (size_t j = 0; j < kRows; ++j) {
    float* out = output + j * cols;
    const vf inverse = splat(1.0f / sum[j]);
    for (size_t c = 0; c < full; c += kLanes) store(out + c, load(out + c) * inverse);
    if (tail != 0) store_tail(out + full, tail_e[j] * inverse, mask);
  }
}

void fp32_softmax(size_t rows, size_t cols, const float* input, float* output) {
  const size_t full = cols - cols % kLanes;
  const size_t tail = cols - full;
  const TailMask mask = tail_mask(tail);
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) softmax_rows<4>(cols, input + r * cols, output + r * cols, full, tail, mask);
  for (; r < rows; ++r) softmax_rows<1>(cols, input + r * cols, output + r * cols, full, tail, mask);
}

}  // namespace QDQRT_FP32_NAMESPACE
}  // namespace qdqrt::kernels
