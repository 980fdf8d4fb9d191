// The vpdpbusd depthwise form (PackedDepthwise::dot_weights), written once over the input's
// signedness, the kernel size K and the stride SW: each qdwconv_dp4_<K>x<K>s<SW>_<qs8|qu8>_avx512vnni.cpp
// file instantiates run_dot for one of them (one file of all eight took over 10 CPU-minutes to
// compile). Kernel name: qs8-qc8w-dwconv-<K>x<K>p64c-dp4-fp32-avx512vnni (qu8-... for uint8
// input; p32c for layers of at most 32 channels). Include ONLY from those files.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "kernels/dwconv/qdwconv_avx512vnni_inl.h"
#include "kernels/gemm/qgemm_epilogue_avx512_inl.h"
#include "kernels/scratch.h"

namespace qdqrt::kernels::internal {
namespace {

// vpdpbusd form (PackedDepthwise::dot_weights): T output pixels of one output row x 64 channels.
// Each input column is loaded once per group of 4 kernel rows, its 4 rows interleaved into bytes
// of 32-bit lanes by two levels of in-lane unpacks (the channels come out in unpack order, as the
// weights and epilogue constants are stored), and serves every kernel column that reads it.

// The vector width of a channel block: zmm for 64 channels, ymm (AVX-512VL) for a last block of at
// most 32 channels, so a 32-channel layer does not compute 64.
using Block64 = Avx512VectorsOfWidth<512>;
using Block32 = Avx512VectorsOfWidth<256>;
template <class D>
constexpr int kBlockChannels = static_cast<int>(D::kBytes);

// Unpack order back to channel order (a 4x4 transpose of 128-bit lanes): 16 channels per zmm.
inline void natural_order(const __m512i (&a)[4], __m512i (&n)[4]) {
  const __m512i t0 = _mm512_shuffle_i64x2(a[0], a[1], 0x44), t1 = _mm512_shuffle_i64x2(a[2], a[3], 0x44);
  const __m512i t2 = _mm512_shuffle_i64x2(a[0], a[1], 0xEE), t3 = _mm512_shuffle_i64x2(a[2], a[3], 0xEE);
  n[0] = _mm512_shuffle_i64x2(t0, t1, 0x88);
  n[1] = _mm512_shuffle_i64x2(t0, t1, 0xDD);
  n[2] = _mm512_shuffle_i64x2(t2, t3, 0x88);
  n[3] = _mm512_shuffle_i64x2(t2, t3, 0xDD);
}

// The same for a 32-channel block: vector i lane L holds channels 16 L + 4 i + j, so channels
// 0..15 are the low lanes of all four.
inline void natural_order(const __m256i (&a)[4], __m512i (&n)[4]) {
  auto join = [](__m256i low, __m256i high) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
  };
  n[0] = join(_mm256_permute2x128_si256(a[0], a[1], 0x20), _mm256_permute2x128_si256(a[2], a[3], 0x20));
  n[1] = join(_mm256_permute2x128_si256(a[0], a[1], 0x31), _mm256_permute2x128_si256(a[2], a[3], 0x31));
  n[2] = n[3] = _mm512_setzero_si512();
}

// The interleaved column: v[i] holds, in unpack order, channels 16 * lane + 4 * i + j with the
// `kRows` input rows in its bytes (bytes past kRows repeat a row: their weights are zero).
// load(r) returns input row r of the column as stored. always_inline and compile-time indices
// only: otherwise GCC keeps the vectors in memory.
template <typename D, bool kSigned, int kRows, typename Load>
[[gnu::always_inline]] inline void interleave_rows(const Load& load_row, typename D::Bytes& v0, typename D::Bytes& v1,
                                                   typename D::Bytes& v2, typename D::Bytes& v3) {
  using V = typename D::Bytes;
  // x + 128 for signed input (vpdpbusd's first operand is unsigned), on the rows before they
  // are interleaved: kRows flips instead of 4.
  const V sign = D::splat_bytes(static_cast<int8_t>(0x80));
  auto load = [&](int r) QDQRT_INLINE_LAMBDA {
    const V x = load_row(r);
    return kSigned ? D::xor_bytes(x, sign) : x;
  };
  const V x0 = load(0);
  const V x1 = kRows > 1 ? load(1) : x0;
  const V x2 = kRows > 2 ? load(2) : x1;
  const V x3 = kRows > 3 ? load(3) : x2;
  V low01, high01, low23, high23;
  D::template interleave<8>(x0, x1, low01, high01);
  D::template interleave<8>(x2, x3, low23, high23);
  D::template interleave<16>(low01, low23, v0, v1);
  D::template interleave<16>(high01, high23, v2, v3);
}

// Where a tile reads its input: at(q, ky) is input column q of the tile in kernel row ky.
// Border tiles: a table resolved per tile (the padding row outside the image).
template <int K>
struct ColumnTable {
  const uint8_t* const (*columns)[K];
  [[gnu::always_inline]] const uint8_t* at(int q, int ky) const { return columns[q][ky]; }
};

// Tiles wholly inside the image: K row pointers (at the tile's first column) and the pixel
// stride, set per output row; nothing resolved per tile.
template <int K>
struct RowBases {
  const uint8_t* rows[K];
  int64_t pixel_stride;
  [[gnu::always_inline]] const uint8_t* at(int q, int ky) const { return rows[ky] + q * pixel_stride; }
};

// T output pixels of one channel block: acc[4 * j + i] is pixel j's vector i (unpack order).
// load(q, ky) is input column q of the tile in kernel row ky, as stored; the weights of row group
// rg and kernel column kx start at weights + (rg * K + kx) * kx_bytes, vector i 4 * kLanes * i bytes on.
template <typename D, bool kSigned, int K, int SW, int T, typename Load>
[[gnu::always_inline]] inline void accumulate_dot_core(const Load& load, const int8_t* weights, int64_t kx_bytes,
                                                       const int32_t* bias, typename D::Bytes (&acc)[4 * T]) {
  constexpr int kColumns = (T - 1) * SW + K;
  constexpr int kGroups = (K + 3) / 4;
  constexpr int kLanes = kBlockChannels<D> / 4;  // int32 lanes per vector
  static_for<4 * T>([&](auto a) QDQRT_INLINE_LAMBDA { acc[a] = D::load_bytes(bias + kLanes * (a % 4)); });
  static_for<kGroups>([&](auto group) QDQRT_INLINE_LAMBDA {
    constexpr int kRows = K - 4 * group < 4 ? K - 4 * group : 4;
    const int8_t* group_weights = weights + group * K * kx_bytes;
    static_for<kColumns>([&](auto q) QDQRT_INLINE_LAMBDA {
      typename D::Bytes v[4];
      auto rows = [&](int r) QDQRT_INLINE_LAMBDA { return load(q, 4 * group + r); };
      interleave_rows<D, kSigned, kRows>(rows, v[0], v[1], v[2], v[3]);
      static_for<K>([&](auto kx) QDQRT_INLINE_LAMBDA {
        constexpr int offset = static_cast<int>(q) - static_cast<int>(kx);
        if constexpr (offset >= 0 && offset % SW == 0 && offset / SW < T) {
          const int8_t* w = group_weights + kx * kx_bytes;
          static_for<4>([&](auto i) QDQRT_INLINE_LAMBDA {
            acc[4 * (offset / SW) + i] = D::dot_bytes(acc[4 * (offset / SW) + i], v[i], D::load_bytes(w + 4 * kLanes * i));
          });
        }
      });
    });
  });
}

// T output pixels x one channel block from c (the blocks of dot_weights).
template <typename D, bool kSigned, bool kFull, int K, int SW, int T, typename Input>
[[gnu::always_inline]] inline void accumulate_dot(const PackedDepthwise& packed, const Input& input,
                                                  int c, typename D::ByteMask mask, typename D::Bytes (&acc)[4 * T]) {
  const int64_t dot_channels = packed.dot_channels;
  auto load = [&](int q, int ky) QDQRT_INLINE_LAMBDA {
    return kFull ? D::load_bytes(input.at(q, ky) + c) : D::load_bytes_masked(mask, input.at(q, ky) + c);
  };
  accumulate_dot_core<D, kSigned, K, SW, T>(load, packed.dot_weights.data() + c * 4, dot_channels * 4,
                                            packed.dot_bias.data() + c, acc);
}

// The int8/uint8 plain epilogue in unpack order: the same float operations as store_vector_plain,
// then in-lane packs (which restore the channel order) instead of one narrowing per vector. The
// clamp keeps every value inside the output type, so the packs' saturation never changes one.
template <typename D>
struct DotPlainStore {
  typename D::Floats clamp_min, clamp_max;
  typename D::Bytes zero_point16;
  typename D::Bytes low_bytes, high_bytes;  // the clamp after rounding, output units (kIntegerClamp)
  bool unsigned_output;
};

// One block's multipliers and float biases, loaded once for every pixel of a tile.
template <typename D>
struct DotConstants {
  typename D::Floats multiplier[4], float_bias[4];
};

// The plain store's form (DotStores::mode): kStoreIntegerClamp (PackedDepthwise::dot_bounded, finite
// clamp) runs the activation clamp on the packed bytes, at most 2 instructions per block instead of
// 8 (rounding is monotonic, so clamping before or after it gives the same integers), and only its
// bounds that are not the output type's (kStoreLow, kStoreHigh); kStoreZeroPoint adds a nonzero
// output zero-point. 3 of about 20 instructions per pixel and 64 channels for the common
// ReLU / ReLU6 with zero-point 0.
constexpr int kStoreZeroPoint = 1, kStoreLow = 2, kStoreHigh = 4, kStoreIntegerClamp = 8;

// Calls f(std::integral_constant<int, mode>) for the stores' mode, one of 9.
template <typename F>
[[gnu::always_inline]] inline void with_store_mode(int mode, F&& f) {
  using std::integral_constant;
  switch (mode) {
    case 8: return f(integral_constant<int, 8>{});
    case 9: return f(integral_constant<int, 9>{});
    case 10: return f(integral_constant<int, 10>{});
    case 11: return f(integral_constant<int, 11>{});
    case 12: return f(integral_constant<int, 12>{});
    case 13: return f(integral_constant<int, 13>{});
    case 14: return f(integral_constant<int, 14>{});
    case 15: return f(integral_constant<int, 15>{});
    default: return f(integral_constant<int, kStoreZeroPoint>{});
  }
}

// Takes the accumulators by value: with a reference to the tile's array, GCC keeps that array in
// memory for the whole accumulation.
template <typename D, int kMode>
[[gnu::always_inline]] inline typename D::Bytes dot_plain_bytes(typename D::Bytes a0, typename D::Bytes a1, typename D::Bytes a2,
                                                            typename D::Bytes a3, const DotConstants<D>& k,
                                                            const DotPlainStore<D>& p) {
  using V = typename D::Bytes;
  auto requantize = [&](V acc, auto i) QDQRT_INLINE_LAMBDA {
    const typename D::Floats y = D::mul_add(D::to_float(acc), k.multiplier[i], k.float_bias[i]);
    if constexpr ((kMode & kStoreIntegerClamp) != 0) return D::round_to_ints(y);
    return D::round_to_ints(D::clamp(y, p.clamp_min, p.clamp_max));
  };
  using std::integral_constant;
  auto zero_point = [&](V words) QDQRT_INLINE_LAMBDA {
    return (kMode & kStoreZeroPoint) != 0 ? D::add_words_saturated(words, p.zero_point16) : words;
  };
  const V words01 = zero_point(
      D::pack_words(requantize(a0, integral_constant<int, 0>{}), requantize(a1, integral_constant<int, 1>{})));
  const V words23 = zero_point(
      D::pack_words(requantize(a2, integral_constant<int, 2>{}), requantize(a3, integral_constant<int, 3>{})));
  V bytes;
  if (p.unsigned_output) {
    bytes = D::template pack_bytes<uint8_t>(words01, words23);
    if constexpr ((kMode & kStoreLow) != 0) bytes = D::template max_bytes<uint8_t>(bytes, p.low_bytes);
    if constexpr ((kMode & kStoreHigh) != 0) bytes = D::template min_bytes<uint8_t>(bytes, p.high_bytes);
  } else {
    bytes = D::template pack_bytes<int8_t>(words01, words23);
    if constexpr ((kMode & kStoreLow) != 0) bytes = D::template max_bytes<int8_t>(bytes, p.low_bytes);
    if constexpr ((kMode & kStoreHigh) != 0) bytes = D::template min_bytes<int8_t>(bytes, p.high_bytes);
  }
  return bytes;
}

template <typename D, bool kFull, int kMode>
[[gnu::always_inline]] inline void store_dot_plain(typename D::Bytes a0, typename D::Bytes a1, typename D::Bytes a2,
                                                   typename D::Bytes a3, const DotConstants<D>& k,
                                                   const DotPlainStore<D>& p, char* out, typename D::ByteMask mask) {
  const typename D::Bytes bytes = dot_plain_bytes<D, kMode>(a0, a1, a2, a3, k, p);
  if constexpr (kFull) {
    D::store_bytes(out, bytes);
  } else {
    D::store_bytes_masked(out, mask, bytes);
  }
}

template <typename D, int T>
struct DotAccumulators {
  typename D::Bytes v[4 * T];
};

// Residual, leaky, pointwise-program or fp32 epilogues: back to channel order, then store_vector
// (single-op programs, as EfficientNet's depthwise convolutions have, go to store_dot_op instead).
// Out of line: large.
template <typename D, int T>
[[gnu::noinline]] void store_dot_general(const DotAccumulators<D, T>& acc, const PackedDepthwise& packed, int c,
                                         int count, char* out, int64_t out_pixel_bytes, const char* residual,
                                         const Epilogue& epilogue, __m512 clamp_min, __m512 clamp_max) {
  TileArgs t;
  t.row_term = nullptr;
  t.c_row_bytes = out_pixel_bytes;
  t.residual_row_bytes = epilogue.residual_row_stride;
  t.epilogue = &epilogue;
  t.bias = packed.bias.data() + c;
  t.multiplier = packed.multiplier.data() + c;
  t.float_bias = packed.float_bias.data() + c;
  t.column0 = c;
  t.c = out + static_cast<int64_t>(c) * output_element_size(epilogue.output_type);
  t.residual = residual ? residual + c : nullptr;
  __m512i natural[T][4];
  for (int j = 0; j < T; ++j) {
    const typename D::Bytes pixel[4] = {acc.v[4 * j], acc.v[4 * j + 1], acc.v[4 * j + 2], acc.v[4 * j + 3]};
    natural_order(pixel, natural[j]);
  }
  for (int i = 0; i < kBlockChannels<D> / 16 && 16 * i < count; ++i) {
    const ColumnConstants constants = load_column_constants(t, 16 * i);
    for (int j = 0; j < T; ++j) {
      store_vector<false>(natural[j][i], 16 * i, count - 16 * i, t, j, constants, clamp_min, clamp_max);
    }
  }
}

// Single-op epilogues (SiLU, sigmoid, ...: single_op_epilogue, as after EfficientNet's depthwise
// convolutions) on zmm accumulators in unpack order, T pixels of 64 channel slots: the op runs
// before the channels go back to their order, on the accumulators as they are (no spill through
// store_block_single_op's channel-order block, no per-row reloads of its column constants). int8/
// uint8 outputs are packed as dot_plain_bytes packs them (the packs' saturation is the saturation
// clamp's lower bound, as in store_rows_single_op_packed); float outputs go back to
// channel order (natural_order) after the op. The same operations per value as store_vector, so
// the same bytes. kGroups = 1: one block of 64 channels from out, `count` of them valid; kGroups = 2:
// the tail layout (dot_tail_block), a 32-channel group per 256-bit half, group g at
// out + g * group_out_bytes, `active` groups of `count` channels each.
template <PointwiseOp kOp, bool kClamp, OutputType kType, int kGroups, int T>
[[gnu::noinline]] void store_dot_op(const DotAccumulators<Block64, T>& acc, const float* multiplier,
                                    const float* float_bias, int count, int active, char* out,
                                    int64_t out_pixel_bytes, int64_t group_out_bytes, const Epilogue& e) {
  __m512 m[4], b[4];
  for (int i = 0; i < 4; ++i) {
    m[i] = _mm512_loadu_ps(multiplier + 16 * i);
    b[i] = _mm512_loadu_ps(float_bias + 16 * i);
  }
  const __m512 clamp_min = _mm512_set1_ps(e.clamp_min), clamp_max = _mm512_set1_ps(e.clamp_max);
  const __m512 inverse_scale = _mm512_set1_ps(e.program_inverse_scale);
  const __m512 saturate_max = _mm512_set1_ps(e.saturate_max);
  const __m512i zero_point16 = _mm512_set1_epi16(static_cast<int16_t>(e.output_zero_point));
  for (int j = 0; j < T; ++j) {
    __m512 y[4];
    for (int i = 0; i < 4; ++i) {
      y[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc.v[4 * j + i]), m[i], b[i]);
      if constexpr (kClamp) y[i] = _mm512_min_ps(_mm512_max_ps(y[i], clamp_min), clamp_max);
      y[i] = apply_single_op<kOp>(y[i]);
    }
    char* pixel = out + j * out_pixel_bytes;
    if constexpr (kType == OutputType::kF32) {
      const __m512i unpacked[4] = {_mm512_castps_si512(y[0]), _mm512_castps_si512(y[1]), _mm512_castps_si512(y[2]),
                                   _mm512_castps_si512(y[3])};
      __m512i natural[4];  // 16 channels each: kGroups = 2 holds group k / 2's channels 16 (k % 2)..
      natural_order(unpacked, natural);
      for (int k = 0; k < 4; ++k) {
        const int group = kGroups == 1 ? 0 : k / 2;
        const int first = kGroups == 1 ? 16 * k : 16 * (k % 2);
        if (group >= active) break;
        float* to = reinterpret_cast<float*>(pixel + group * group_out_bytes) + first;
        _mm512_mask_storeu_ps(to, lane_mask(count - first), _mm512_castsi512_ps(natural[k]));
      }
    } else {
      auto quantize = [&](int i) QDQRT_INLINE_LAMBDA {
        return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_mul_ps(y[i], inverse_scale), saturate_max));
      };
      const __m512i words01 = _mm512_adds_epi16(_mm512_packs_epi32(quantize(0), quantize(1)), zero_point16);
      const __m512i words23 = _mm512_adds_epi16(_mm512_packs_epi32(quantize(2), quantize(3)), zero_point16);
      const __m512i bytes = kType == OutputType::kU8 ? _mm512_packus_epi16(words01, words23)
                                                     : _mm512_packs_epi16(words01, words23);
      if constexpr (kGroups == 1) {
        const __mmask64 mask = count >= 64 ? ~__mmask64(0) : (__mmask64(1) << count) - 1;
        _mm512_mask_storeu_epi8(pixel, mask, bytes);
      } else {
        const __mmask32 mask = count >= 32 ? ~__mmask32(0) : (__mmask32(1) << count) - 1;
        _mm256_mask_storeu_epi8(pixel, mask, _mm512_castsi512_si256(bytes));
        if (active > 1) _mm256_mask_storeu_epi8(pixel + group_out_bytes, mask, _mm512_extracti64x4_epi64(bytes, 1));
      }
    }
  }
}

// store_dot_op for a last block of at most 32 channels (Block32, four ymm per pixel):
// pixel j's vectors 0/2 and 1/3 joined into two zmm (vector i's lane L holds channels
// 16 L + 4 i + 0..3), so the op runs on full zmm; int8 packs of the joined vectors leave
// dot_plain_bytes's two ymm word vectors in the zmm's halves.
template <PointwiseOp kOp, bool kClamp, OutputType kType, int kGroups, int T>
[[gnu::noinline]] void store_dot_op(const DotAccumulators<Block32, T>& acc, const float* multiplier,
                                    const float* float_bias, int count, int /*active*/, char* out,
                                    int64_t out_pixel_bytes, int64_t /*group_out_bytes*/, const Epilogue& e) {
  static_assert(kGroups == 1);
  auto join = [](__m256i low, __m256i high) { return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1); };
  auto join_ps = [](const float* p) {  // floats p[0..7] and p[16..23]
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(p)), _mm256_loadu_ps(p + 16), 1);
  };
  const __m512 m02 = join_ps(multiplier), m13 = join_ps(multiplier + 8);
  const __m512 b02 = join_ps(float_bias), b13 = join_ps(float_bias + 8);
  const __m512 clamp_min = _mm512_set1_ps(e.clamp_min), clamp_max = _mm512_set1_ps(e.clamp_max);
  const __m512 inverse_scale = _mm512_set1_ps(e.program_inverse_scale);
  const __m512 saturate_max = _mm512_set1_ps(e.saturate_max);
  const __m512i zero_point16 = _mm512_set1_epi16(static_cast<int16_t>(e.output_zero_point));
  // Channels 0..15 are lanes 0 of vectors 0, 1, 2, 3, i.e. lanes 0, 4 (second operand), 2, 6 of
  // the joined pair; channels 16..31 the lanes 1.
  const __m512i low_order = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i high_order = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int j = 0; j < T; ++j) {
    auto value = [&](__m512i sum, __m512 m, __m512 b) QDQRT_INLINE_LAMBDA {
      __m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), m, b);
      if constexpr (kClamp) y = _mm512_min_ps(_mm512_max_ps(y, clamp_min), clamp_max);
      return apply_single_op<kOp>(y);
    };
    const __m512 y02 = value(join(acc.v[4 * j], acc.v[4 * j + 2]), m02, b02);
    const __m512 y13 = value(join(acc.v[4 * j + 1], acc.v[4 * j + 3]), m13, b13);
    char* pixel = out + j * out_pixel_bytes;
    if constexpr (kType == OutputType::kF32) {
      float* to = reinterpret_cast<float*>(pixel);
      const __m512i low02 = _mm512_castps_si512(y02), low13 = _mm512_castps_si512(y13);
      _mm512_mask_storeu_ps(to, lane_mask(count),
                            _mm512_castsi512_ps(_mm512_permutex2var_epi64(low02, low_order, low13)));
      _mm512_mask_storeu_ps(to + 16, lane_mask(count - 16),
                            _mm512_castsi512_ps(_mm512_permutex2var_epi64(low02, high_order, low13)));
    } else {
      auto quantize = [&](__m512 y) QDQRT_INLINE_LAMBDA {
        return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_mul_ps(y, inverse_scale), saturate_max));
      };
      const __m512i words = _mm512_adds_epi16(_mm512_packs_epi32(quantize(y02), quantize(y13)), zero_point16);
      const __m256i low = _mm512_castsi512_si256(words), high = _mm512_extracti64x4_epi64(words, 1);
      const __m256i bytes = kType == OutputType::kU8 ? _mm256_packus_epi16(low, high) : _mm256_packs_epi16(low, high);
      const __mmask32 mask = count >= 32 ? ~__mmask32(0) : (__mmask32(1) << count) - 1;
      _mm256_mask_storeu_epi8(pixel, mask, bytes);
    }
  }
}

// store_dot_op for the epilogue's op (op from single_op_epilogue, not kCopy), activation clamp
// and output type; out is the first pixel's channel 0, c the block's first channel.
template <int kGroups, typename D, int T>
void store_dot_op(PointwiseOp op, const DotAccumulators<D, T>& acc, const float* multiplier,
                  const float* float_bias, int c, int count, int active, char* out, int64_t out_pixel_bytes,
                  int64_t group_out_bytes, const Epilogue& e) {
  const bool clamped =
      e.clamp_min > -std::numeric_limits<float>::max() || e.clamp_max < std::numeric_limits<float>::max();
  out += static_cast<int64_t>(c) * output_element_size(e.output_type);
  auto run = [&](auto kind, auto clamp, auto type) {
    store_dot_op<decltype(kind)::value, decltype(clamp)::value, decltype(type)::value, kGroups, T>(
        acc, multiplier, float_bias, count, active, out, out_pixel_bytes, group_out_bytes, e);
  };
  auto with_type = [&](auto kind, auto clamp) {
    using Type = OutputType;
    switch (e.output_type) {
      case Type::kF32: return run(kind, clamp, std::integral_constant<Type, Type::kF32>{});
      case Type::kU8: return run(kind, clamp, std::integral_constant<Type, Type::kU8>{});
      default: return run(kind, clamp, std::integral_constant<Type, Type::kS8>{});
    }
  };
  auto with_clamp = [&](auto kind) {
    clamped ? with_type(kind, std::true_type{}) : with_type(kind, std::false_type{});
  };
  using Op = PointwiseOp;
  switch (op) {
    case Op::kSilu: return with_clamp(std::integral_constant<Op, Op::kSilu>{});
    case Op::kSigmoid: return with_clamp(std::integral_constant<Op, Op::kSigmoid>{});
    case Op::kHardSwish: return with_clamp(std::integral_constant<Op, Op::kHardSwish>{});
    case Op::kGelu: return with_clamp(std::integral_constant<Op, Op::kGelu>{});
    default: return with_clamp(std::integral_constant<Op, Op::kTanh>{});
  }
}

// One channel block (from c, `count` channels left) of a tile.
template <typename D, bool kSigned, int K, int SW, int T, typename Input>
[[gnu::always_inline]] inline void dot_block(const PackedDepthwise& packed, const Input& input, int c,
                                             int count, bool plain, int mode, PointwiseOp op,
                                             const DotPlainStore<D>& store, char* out, int64_t out_pixel_bytes,
                                             const char* residual, const Epilogue& epilogue, __m512 clamp_min,
                                             __m512 clamp_max) {
  using Mask = typename D::ByteMask;
  const bool full = count >= kBlockChannels<D>;
  const Mask mask = full ? Mask(~Mask(0)) : Mask((Mask(1) << count) - 1);
  typename D::Bytes acc[4 * T];
  if (full) {
    accumulate_dot<D, kSigned, true, K, SW, T>(packed, input, c, mask, acc);
  } else {
    accumulate_dot<D, kSigned, false, K, SW, T>(packed, input, c, mask, acc);
  }
  if (plain) {
    constexpr int kLanes = kBlockChannels<D> / 4;
    DotConstants<D> k;
    static_for<4>([&](auto i) QDQRT_INLINE_LAMBDA {
      k.multiplier[i] = D::load(packed.dot_multiplier.data() + c + kLanes * i);
      k.float_bias[i] = D::load(packed.dot_float_bias.data() + c + kLanes * i);
    });
    auto store_all = [&]<bool kFull>(auto store_mode) QDQRT_INLINE_LAMBDA {
      constexpr int kMode = decltype(store_mode)::value;
      static_for<T>([&](auto j) QDQRT_INLINE_LAMBDA {
        store_dot_plain<D, kFull, kMode>(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3], k, store,
                                         out + j * out_pixel_bytes + c, mask);
      });
    };
    if (full) {
      with_store_mode(mode, [&](auto m) QDQRT_INLINE_LAMBDA { store_all.template operator()<true>(m); });
    } else {
      with_store_mode(mode, [&](auto m) QDQRT_INLINE_LAMBDA { store_all.template operator()<false>(m); });
    }
    return;
  }
  DotAccumulators<D, T> copy;  // a copy: the accumulators themselves never escape (else GCC keeps them in memory)
  static_for<4 * T>([&](auto a) QDQRT_INLINE_LAMBDA { copy.v[a] = acc[a]; });
  if (op != PointwiseOp::kCopy) {
    store_dot_op<1>(op, copy, packed.dot_multiplier.data() + c, packed.dot_float_bias.data() + c, c, count, 1, out,
                    out_pixel_bytes, 0, epilogue);
    return;
  }
  store_dot_general<D, T>(copy, packed, c, count, out, out_pixel_bytes, residual, epilogue, clamp_min, clamp_max);
}

template <typename D>
[[gnu::always_inline]] inline DotPlainStore<D> dot_plain_store(const Epilogue& epilogue, bool integer_clamp) {
  DotPlainStore<D> store;
  store.clamp_min = D::splat(epilogue.clamp_min);
  store.clamp_max = D::splat(epilogue.clamp_max);
  store.zero_point16 = D::splat_words(static_cast<int16_t>(epilogue.output_zero_point));
  store.low_bytes = store.high_bytes = D::splat_bytes(0);
  store.unsigned_output = epilogue.output_type == OutputType::kU8;
  if (integer_clamp) {
    const int low = _mm_cvtss_si32(_mm_set_ss(epilogue.clamp_min)) + epilogue.output_zero_point;
    const int high = _mm_cvtss_si32(_mm_set_ss(epilogue.clamp_max)) + epilogue.output_zero_point;
    store.low_bytes = D::splat_bytes(static_cast<int8_t>(low));
    store.high_bytes = D::splat_bytes(static_cast<int8_t>(high));
  }
  return store;
}

// The epilogue's form and constants, set once per call.
struct DotStores {
  bool plain = false;  // int8/uint8 output without residual, leaky slope or program
  int mode = kStoreZeroPoint;  // the plain store's form (kStore*)
  PointwiseOp op = PointwiseOp::kCopy;  // not kCopy: a single-op epilogue for store_dot_op
  DotPlainStore<Block64> wide;
  DotPlainStore<Block32> narrow;

  DotStores(const PackedDepthwise& packed, const Epilogue& epilogue) {
    plain = epilogue.residual == nullptr && !epilogue.leaky && epilogue.program == nullptr &&
            epilogue.output_type != OutputType::kF32;
    const bool integer_clamp = plain && packed.dot_bounded && std::fabs(epilogue.clamp_min) <= 0x1p20f &&
                               std::fabs(epilogue.clamp_max) <= 0x1p20f;
    wide = dot_plain_store<Block64>(epilogue, integer_clamp);
    narrow = dot_plain_store<Block32>(epilogue, integer_clamp);
    TileArgs t;  // single_op_epilogue reads the epilogue, the row term and the residual
    t.epilogue = &epilogue;
    t.row_term = nullptr;
    t.residual = static_cast<const char*>(epilogue.residual);
    op = single_op_epilogue(t);
    if (integer_clamp) {
      // The clamp bounds (in [type min, type max]: clamp_min/max include the saturation) that cut.
      const bool u8 = epilogue.output_type == OutputType::kU8;
      const int low = _mm_cvtss_si32(_mm_set_ss(epilogue.clamp_min)) + epilogue.output_zero_point;
      const int high = _mm_cvtss_si32(_mm_set_ss(epilogue.clamp_max)) + epilogue.output_zero_point;
      mode = kStoreIntegerClamp | (epilogue.output_zero_point != 0 ? kStoreZeroPoint : 0) |
             (low > (u8 ? 0 : -128) ? kStoreLow : 0) | (high < (u8 ? 255 : 127) ? kStoreHigh : 0);
    }
  }
};

// Every channel block of one tile.
template <bool kSigned, int K, int SW, int T, typename Input>
[[gnu::always_inline]] inline void dot_tile_blocks(const PackedDepthwise& packed, const Input& input, char* out,
                                                   int64_t out_pixel_bytes, const char* residual,
                                                   const Epilogue& epilogue, const DotStores& stores,
                                                   __m512 clamp_min, __m512 clamp_max) {
  const int channels = packed.channels;
  int c = 0;
  for (; channels - c > 32; c += 64) {
    dot_block<Block64, kSigned, K, SW, T>(packed, input, c, channels - c, stores.plain, stores.mode,
                                                   stores.op, stores.wide, out, out_pixel_bytes, residual, epilogue, clamp_min,
                                                   clamp_max);
  }
  if (c < channels) {  // a last block of at most 32 channels
    dot_block<Block32, kSigned, K, SW, T>(packed, input, c, channels - c, stores.plain, stores.mode,
                                                    stores.op, stores.narrow, out, out_pixel_bytes, residual, epilogue,
                                                    clamp_min, clamp_max);
  }
}

// ---------------------------------------------------------------------------------------------
// Layers of 17..32 channels (PackedDepthwise::dot_tail_groups): G = 2 tiles of one output row per
// zmm, a 256-bit half each in the 32-channel layout. On ymm, one tile at a time, such a layer ran
// at 0.7 of the time of a 64-channel one (MobileNetV2's 112x112x32: 20% of peak); this way at 0.6.
// As the tail of wider layers it measured slower than the ymm block (its loads leave L1 between
// the passes, and border groups resolve G column tables), so those keep the ymm block.

// Inside the image, the G tiles T pixels apart: K row pointers at group 0's first column.
template <int K>
struct GroupedRows {
  const uint8_t* rows[K];
  int64_t pixel_stride, group_step;
  [[gnu::always_inline]] const uint8_t* at(int q, int ky, int g) const {
    return rows[ky] + q * pixel_stride + g * group_step;
  }
};

// Border tiles, or fewer than G tiles (the missing ones repeat tile 0): columns[g * kColumns + q][ky].
template <int K, int kColumns>
struct GroupedTable {
  const uint8_t* const (*columns)[K];
  [[gnu::always_inline]] const uint8_t* at(int q, int ky, int g) const { return columns[g * kColumns + q][ky]; }
};

// One zmm of 2 halves of 32 channels from channel c.
template <bool kFull>
[[gnu::always_inline]] inline __m512i load_grouped(const uint8_t* p0, const uint8_t* p1, int c, uint32_t mask) {
  auto half = [&](const uint8_t* p) QDQRT_INLINE_LAMBDA {
    return kFull ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + c))
                 : _mm256_maskz_loadu_epi8(__mmask32(mask), p + c);
  };
  return _mm512_inserti64x4(_mm512_castsi256_si512(half(p0)), half(p1), 1);
}

// Group g's 32 bytes of a zmm, stored at p.
template <int g, bool kFull>
[[gnu::always_inline]] inline void store_grouped(char* p, __m512i bytes, uint32_t mask) {
  const __m256i half = _mm512_extracti64x4_epi64(bytes, g);
  kFull ? _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), half) : _mm256_mask_storeu_epi8(p, __mmask32(mask), half);
}

// `active` (1..G) tiles of T pixels, tile g's output at out + g * group_out_bytes.
template <bool kSigned, bool kFull, int K, int SW, int T, int G, typename Input>
[[gnu::always_inline]] inline void dot_tail_block(const PackedDepthwise& packed, const Input& input, int active,
                                                  char* out, int64_t group_out_bytes, int64_t out_pixel_bytes,
                                                  const char* residual, int64_t group_residual_bytes,
                                                  const Epilogue& epilogue, const DotStores& stores,
                                                  __m512 clamp_min, __m512 clamp_max) {
  using D = Block64;
  const int c = packed.dot_channels - 32;
  const int count = packed.channels - c;
  const uint32_t mask = kFull ? ~0u : (1u << count) - 1;  // count < 32 when not full
  auto load = [&](int q, int ky) QDQRT_INLINE_LAMBDA {
    return load_grouped<kFull>(input.at(q, ky, 0), input.at(q, ky, 1), c, mask);
  };
  typename D::Bytes acc[4 * T];
  accumulate_dot_core<D, kSigned, K, SW, T>(load, packed.dot_tail_weights.data(), 4 * 64, packed.dot_tail_bias.data(),
                                            acc);
  if (stores.plain) {
    DotConstants<D> k;
    static_for<4>([&](auto i) QDQRT_INLINE_LAMBDA {
      k.multiplier[i] = D::load(packed.dot_tail_multiplier.data() + 16 * i);
      k.float_bias[i] = D::load(packed.dot_tail_float_bias.data() + 16 * i);
    });
    with_store_mode(stores.mode, [&](auto store_mode) QDQRT_INLINE_LAMBDA {
      constexpr int kMode = decltype(store_mode)::value;
      static_for<T>([&](auto j) QDQRT_INLINE_LAMBDA {
        const __m512i bytes = dot_plain_bytes<D, kMode>(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3],
                                                        k, stores.wide);
        char* pixel = out + j * out_pixel_bytes + c;
        static_for<G>([&](auto g) QDQRT_INLINE_LAMBDA {
          if (g < active) store_grouped<g, kFull>(pixel + g * group_out_bytes, bytes, mask);
        });
      });
    });
    return;
  }
  if constexpr (G == 2) {
    if (stores.op != PointwiseOp::kCopy) {
      DotAccumulators<D, T> copy;
      static_for<4 * T>([&](auto a) QDQRT_INLINE_LAMBDA { copy.v[a] = acc[a]; });
      store_dot_op<2>(stores.op, copy, packed.dot_tail_multiplier.data(), packed.dot_tail_float_bias.data(), c,
                      count, active, out, out_pixel_bytes, group_out_bytes, epilogue);
      return;
    }
  }
  static_for<G>([&](auto g) QDQRT_INLINE_LAMBDA {
    if (g >= active) return;
    DotAccumulators<Block32, T> copy;
    static_for<4 * T>([&](auto a) QDQRT_INLINE_LAMBDA { copy.v[a] = _mm512_extracti64x4_epi64(acc[a], g); });
    store_dot_general<Block32, T>(copy, packed, c, count, out + g * group_out_bytes, out_pixel_bytes,
                                            residual ? residual + g * group_residual_bytes : nullptr, epilogue,
                                            clamp_min, clamp_max);
  });
}

template <bool kSigned, int K, int SW, int T, int G, typename Input>
[[gnu::noinline]] void dot_tail_tiles(const PackedDepthwise& packed, const Input& input, int active, char* out,
                                      int64_t group_out_bytes, int64_t out_pixel_bytes, const char* residual,
                                      int64_t group_residual_bytes, const Epilogue& epilogue, const DotStores& stores,
                                      __m512 clamp_min, __m512 clamp_max) {
  if (packed.channels - (packed.dot_channels - 32) == 64 / G) {
    dot_tail_block<kSigned, true, K, SW, T, G>(packed, input, active, out, group_out_bytes, out_pixel_bytes, residual,
                                               group_residual_bytes, epilogue, stores, clamp_min, clamp_max);
  } else {
    dot_tail_block<kSigned, false, K, SW, T, G>(packed, input, active, out, group_out_bytes, out_pixel_bytes, residual,
                                                group_residual_bytes, epilogue, stores, clamp_min, clamp_max);
  }
}

// The tile width run_dot uses with `left` pixels of a row left.
inline int dot_tile_width(int left, int tile = 4) {
  return left <= tile ? left : left < 2 * tile ? (left + 1) / 2 : tile;
}

// The tail block over `left` pixels of output row out_y from out_x: the same tiles as run_dot,
// up to G consecutive ones of equal width per call.
template <bool kSigned, int K, int SW, int G>
void dot_tail_row(const PackedDepthwise& packed, const DepthwiseGeometry& g, const uint8_t* image,
                  const uint8_t* padding, int out_y, int out_x, int left, char* out, int64_t out_pixel_bytes,
                  const char* residual, const Epilogue& epilogue, const DotStores& stores, __m512 clamp_min,
                  __m512 clamp_max) {
  const int64_t row_bytes = static_cast<int64_t>(g.input_width) * g.input_pixel_stride;
  const int first_y = out_y * g.stride_height - g.pad_top;
  const bool rows_inside = first_y >= 0 && first_y + K <= g.input_height;
  while (left > 0) {
    const int n = dot_tile_width(left);
    int active = 1;
    while (active < G && left - active * n > 0 && dot_tile_width(left - active * n) == n) ++active;
    const int first_x = out_x * SW - g.pad_left;
    const int last_x = first_x + (active * n - 1) * SW + K;  // one past the last column read
    const int64_t group_out_bytes = n * out_pixel_bytes;
    const int64_t group_residual_bytes = n * epilogue.residual_row_stride;
    auto run = [&]<int T>() {
      constexpr int kColumns = (T - 1) * SW + K;
      if (active == G && rows_inside && first_x >= 0 && last_x <= g.input_width) {
        GroupedRows<K> rows;
        rows.pixel_stride = g.input_pixel_stride;
        rows.group_step = static_cast<int64_t>(T) * SW * g.input_pixel_stride;
        for (int ky = 0; ky < K; ++ky) rows.rows[ky] = image + (first_y + ky) * row_bytes + first_x * g.input_pixel_stride;
        dot_tail_tiles<kSigned, K, SW, T, G>(packed, rows, active, out, group_out_bytes, out_pixel_bytes, residual,
                                             group_residual_bytes, epilogue, stores, clamp_min, clamp_max);
        return;
      }
      const uint8_t* columns[G * kColumns][K];
      for (int group = 0; group < G; ++group) {
        const int x0 = first_x + (group < active ? group : 0) * T * SW;
        for (int ky = 0; ky < K; ++ky) {
          const int in_y = first_y + ky;
          const bool row_inside = in_y >= 0 && in_y < g.input_height;
          for (int q = 0; q < kColumns; ++q) {
            const int in_x = x0 + q;
            columns[group * kColumns + q][ky] =
                row_inside && in_x >= 0 && in_x < g.input_width
                    ? image + in_y * row_bytes + static_cast<int64_t>(in_x) * g.input_pixel_stride
                    : padding;
          }
        }
      }
      dot_tail_tiles<kSigned, K, SW, T, G>(packed, GroupedTable<K, kColumns>{columns}, active, out, group_out_bytes,
                                           out_pixel_bytes, residual, group_residual_bytes, epilogue, stores,
                                           clamp_min, clamp_max);
    };
    switch (n) {
      case 1: run.template operator()<1>(); break;
      case 2: run.template operator()<2>(); break;
      case 3: run.template operator()<3>(); break;
      default: run.template operator()<4>(); break;
    }
    left -= active * n;
    out_x += active * n;
    out += active * group_out_bytes;
    if (residual) residual += active * group_residual_bytes;
  }
}

// One tile wholly inside the image: `rows` point at its first input column in each kernel row.
// Stride 2 and single tiles run through this: through dot_tiles_inside (even with one tile per
// call) stride-2 tiles measured 1-3.7 points slower on the Zen 4, 14x14 stride-1 layers 1-2.
template <bool kSigned, int K, int SW, int T>
void dot_tile_inside(const PackedDepthwise& packed, const RowBases<K>& rows, char* out, int64_t out_pixel_bytes,
                     const char* residual, const Epilogue& epilogue, const DotStores& stores, __m512 clamp_min,
                     __m512 clamp_max) {
  dot_tile_blocks<kSigned, K, SW, T>(packed, rows, out, out_pixel_bytes, residual, epilogue, stores, clamp_min,
                                     clamp_max);
}

// `tiles` consecutive tiles of one output row wholly inside the image: `rows` point at the first
// tile's first input column in each kernel row. One call per run of tiles, not per tile.
template <bool kSigned, int K, int SW, int T>
void dot_tiles_inside(const PackedDepthwise& packed, RowBases<K> rows, int tiles, char* out, int64_t out_pixel_bytes,
                      const char* residual, const Epilogue& epilogue, const DotStores& stores, __m512 clamp_min,
                      __m512 clamp_max) {
  const int64_t step = static_cast<int64_t>(T) * SW * rows.pixel_stride;
  for (int t = 0; t < tiles; ++t) {
    dot_tile_blocks<kSigned, K, SW, T>(packed, rows, out, out_pixel_bytes, residual, epilogue, stores, clamp_min,
                                       clamp_max);
    for (int ky = 0; ky < K; ++ky) rows.rows[ky] += step;
    out += T * out_pixel_bytes;
    if (residual) residual += T * epilogue.residual_row_stride;
  }
}

// A tile that reads padding: its column pointers resolved here.
template <bool kSigned, int K, int SW, int T>
void dot_tile(const PackedDepthwise& packed, const DepthwiseGeometry& g, const uint8_t* image, const uint8_t* padding,
              int out_y, int out_x0, char* out, int64_t out_pixel_bytes, const char* residual,
              const Epilogue& epilogue, const DotStores& stores, __m512 clamp_min, __m512 clamp_max) {
  constexpr int kColumns = (T - 1) * SW + K;
  const int64_t row_bytes = static_cast<int64_t>(g.input_width) * g.input_pixel_stride;
  const int first_x = out_x0 * SW - g.pad_left;
  // columns[q][ky]: input column q of kernel row ky, or the padding row; resolved once per tile.
  const uint8_t* columns[kColumns][K];
  for (int ky = 0; ky < K; ++ky) {
    const int in_y = out_y * g.stride_height - g.pad_top + ky;
    const bool row_inside = in_y >= 0 && in_y < g.input_height;
    for (int q = 0; q < kColumns; ++q) {
      const int in_x = first_x + q;
      columns[q][ky] = row_inside && in_x >= 0 && in_x < g.input_width
                           ? image + in_y * row_bytes + static_cast<int64_t>(in_x) * g.input_pixel_stride
                           : padding;
    }
  }
  dot_tile_blocks<kSigned, K, SW, T>(packed, ColumnTable<K>{columns}, out, out_pixel_bytes, residual, epilogue, stores,
                                     clamp_min, clamp_max);
}

// Splits each output row of [pixel_begin, pixel_end) into tiles of at most kTile pixels (a
// remainder between kTile and 2 * kTile in two near-equal tiles). The row pointers are set once
// per output row; only tiles that read padding resolve their columns one by one. Layers of 17..32
// channels (dot_tail_groups) run whole rows through dot_tail_row instead.
template <bool kSigned, int K, int SW>
void run_dot(const PackedDepthwise& packed, const DepthwiseGeometry& g, const DepthwiseArgs& args,
             const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  // 3x3 stride 2 reads 2 T + 1 columns per tile: 5 pixels share the per-tile work (bias,
  // constants, calls) over one more pixel than 4. Not 5x5, whose 32-channel tail block is then
  // slower (docs/decisions.md).
  constexpr int kTile = SW == 2 && K == 3 ? 5 : 4;
  const uint8_t* padding = padding_row(packed, packed.dot_channels);
  const int output_size = output_element_size(epilogue.output_type);
  const int64_t out_pixel_bytes = args.output_pixel_stride * output_size;
  const __m512 clamp_min = _mm512_set1_ps(epilogue.clamp_min);
  const __m512 clamp_max = _mm512_set1_ps(epilogue.clamp_max);
  const DotStores stores(packed, epilogue);
  int64_t p = pixel_begin;
  while (p < pixel_end) {
    DepthwiseRowSpan span = depthwise_row_span(g, args, p, pixel_end);
    if (packed.dot_tail_groups) {  // 17..32 channels: the whole row, 2 tiles per vector
      char* out = static_cast<char*>(args.output) + p * out_pixel_bytes;
      const char* residual = residual_pixel(epilogue, p);
      dot_tail_row<kSigned, K, SW, 2>(packed, g, span.image, padding, span.out_y, span.out_x,
                                      static_cast<int>(span.row_end - p), out, out_pixel_bytes, residual, epilogue,
                                      stores, clamp_min, clamp_max);
      p = span.row_end;
      continue;
    }
    const int first_y = span.out_y * g.stride_height - g.pad_top;
    const bool rows_inside = first_y >= 0 && first_y + K <= g.input_height;
    RowBases<K> rows;
    rows.pixel_stride = g.input_pixel_stride;
    while (p < span.row_end) {
      const int left = static_cast<int>(span.row_end - p);
      const int n = dot_tile_width(left, kTile);
      char* out = static_cast<char*>(args.output) + p * out_pixel_bytes;
      const char* residual = residual_pixel(epilogue, p);
      const int first_x = span.out_x * SW - g.pad_left;
      const bool inside = rows_inside && first_x >= 0 && first_x + (n - 1) * SW + K <= g.input_width;
      int tiles = 1;  // full tiles inside the image from here on (each n = kTile)
      if (inside) {
        for (int ky = 0; ky < K; ++ky) {
          rows.rows[ky] =
              span.image + (static_cast<int64_t>(first_y + ky) * g.input_width + first_x) * g.input_pixel_stride;
        }
        if (SW == 1 && n == kTile) {
          for (;;) {
            const int next_left = left - tiles * kTile;
            const int next_x = first_x + tiles * kTile * SW;
            if ((next_left >= 2 * kTile || next_left == kTile) && next_x + (kTile - 1) * SW + K <= g.input_width) {
              ++tiles;
            } else {
              break;
            }
          }
        }
      }
      switch (n) {
#define QDQRT_TILE(count)                                                                                            \
  case count:                                                                                                        \
    if (inside && (SW != 1 || tiles == 1)) {                                                                         \
      dot_tile_inside<kSigned, K, SW, count>(packed, rows, out, out_pixel_bytes, residual, epilogue, stores,         \
                                             clamp_min, clamp_max);                                                  \
    } else if (inside) {                                                                                             \
      dot_tiles_inside<kSigned, K, SW, count>(packed, rows, tiles, out, out_pixel_bytes, residual, epilogue, stores, \
                                              clamp_min, clamp_max);                                                 \
    } else {                                                                                                         \
      dot_tile<kSigned, K, SW, count>(packed, g, span.image, padding, span.out_y, span.out_x, out, out_pixel_bytes,  \
                                      residual, epilogue, stores, clamp_min, clamp_max);                             \
    }                                                                                                                \
    break;
        QDQRT_TILE(1) QDQRT_TILE(2) QDQRT_TILE(3) QDQRT_TILE(4)
        case 5:
          if constexpr (kTile == 5) {
            if (inside) {
              dot_tile_inside<kSigned, K, SW, 5>(packed, rows, out, out_pixel_bytes, residual, epilogue, stores,
                                                 clamp_min, clamp_max);
            } else {
              dot_tile<kSigned, K, SW, 5>(packed, g, span.image, padding, span.out_y, span.out_x, out,
                                          out_pixel_bytes, residual, epilogue, stores, clamp_min, clamp_max);
            }
          }
          break;
#undef QDQRT_TILE
      }
      p += tiles * n;
      span.out_x += tiles * n;
    }
  }
}

}  // namespace
}  // namespace qdqrt::kernels::internal
