// The 16-lane (zmm) epilogue shared by the AVX-512 files. Included inside an anonymous namespace.
#pragma once

#include <immintrin.h>

#include <limits>
#include <type_traits>

#include "kernels/gemm/qgemm_driver_inl.h"

#define QDQRT_VECTOR_LANES 16
#include "kernels/vector_math_inl.h"

// After vector_math_inl.h, which defines the lane types it uses.
#include "kernels/pointwise/pointwise_eval_inl.h"
#undef QDQRT_VECTOR_LANES

namespace qdqrt::kernels::internal {
namespace {

// Per-column constants of 16 output columns, loaded once per tile and reused for every row.
struct ColumnConstants {
  __m512i bias;
  __m512 multiplier;
  __m512 float_bias;
};

inline ColumnConstants load_column_constants(const TileArgs& t, int column) {
  return {_mm512_loadu_si512(t.bias + column), _mm512_loadu_ps(t.multiplier + column),
          _mm512_loadu_ps(t.float_bias + column)};
}

// The pointwise program on 16 real-unit values of columns [column, column + 16), then (int8/uint8
// outputs) the output scale and saturation; the same operations as epilogue_value.
inline __m512 run_program_then_scale(const Epilogue& e, __m512 y, int64_t column) {
  const PointwiseProgram& program = *e.program;
  const float* constants = program.constant_stride == 0 ? program.constants : program.constants + column;
  y = (__m512)vmath::run_pointwise(program, (vmath::vf)y, constants, nullptr);
  if (e.output_type == OutputType::kF32) return y;
  y = _mm512_mul_ps(y, _mm512_set1_ps(e.program_inverse_scale));
  y = _mm512_min_ps(y, _mm512_set1_ps(e.saturate_max));
  return _mm512_max_ps(y, _mm512_set1_ps(e.saturate_min));
}

// Applies the epilogue to 16 accumulators of one row and stores `count` (0..16) of them.
// kAddBias = false when the accumulators started from the bias.
template <bool kAddBias = true>
inline void store_vector(__m512i acc, int column, int count, const TileArgs& t, int row, const ColumnConstants& k,
                         __m512 clamp_min, __m512 clamp_max) {
  if (count <= 0) return;
  const Epilogue& e = *t.epilogue;
  const __mmask16 mask = count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << count) - 1);
  if constexpr (kAddBias) acc = _mm512_add_epi32(acc, k.bias);
  if (t.row_term) acc = _mm512_add_epi32(acc, _mm512_set1_epi32(t.row_term[row]));
  __m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), k.multiplier, k.float_bias);
  if (t.residual) {
    const __m128i bytes = _mm_maskz_loadu_epi8(mask, t.residual + row * t.residual_row_bytes + column);
    __m512i r = e.residual_signed ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
    r = _mm512_sub_epi32(r, _mm512_set1_epi32(e.residual_zero_point));
    y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(r), _mm512_set1_ps(e.residual_multiplier), y);
  }
  if (e.leaky) {
    const __mmask16 negative = _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_LT_OQ);
    y = _mm512_mask_mul_ps(y, negative, y, _mm512_set1_ps(e.leaky_alpha));
  }
  y = _mm512_max_ps(y, clamp_min);
  y = _mm512_min_ps(y, clamp_max);
  if (e.program != nullptr) y = run_program_then_scale(e, y, e.program_channel_offset + t.column0 + column);
  char* out = t.c + row * t.c_row_bytes;
  if (e.output_type == OutputType::kF32) {
    _mm512_mask_storeu_ps(reinterpret_cast<float*>(out) + column, mask, y);
  } else {
    __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(y), _mm512_set1_epi32(e.output_zero_point));
    _mm_mask_storeu_epi8(out + column, mask, _mm512_cvtepi32_epi8(q));
  }
}

// The common case: requantize to int8/uint8 with no residual, leaky slope, program or row term.
// Kept apart so its constants stay in registers across a tile: store_vector's stores go through
// char pointers, after which the compiler must reload every Epilogue field it tests.
struct PlainStore {
  __m512 clamp_min, clamp_max;
  __m512i zero_point;
  char* c;
  int64_t c_row_bytes;
};

inline bool plain_epilogue(const TileArgs& t) {
  const Epilogue& e = *t.epilogue;
  return t.row_term == nullptr && t.residual == nullptr && !e.leaky && e.program == nullptr &&
         e.output_type != OutputType::kF32;
}

inline PlainStore plain_store(const TileArgs& t) {
  const Epilogue& e = *t.epilogue;
  return {_mm512_set1_ps(e.clamp_min), _mm512_set1_ps(e.clamp_max), _mm512_set1_epi32(e.output_zero_point), t.c,
          t.c_row_bytes};
}

// store_vector for plain_epilogue tiles: the same operations, so the same bytes.
template <bool kAddBias = true>
inline void store_vector_plain(__m512i acc, int column, int count, int row, const ColumnConstants& k,
                               const PlainStore& p) {
  if constexpr (kAddBias) acc = _mm512_add_epi32(acc, k.bias);
  __m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), k.multiplier, k.float_bias);
  y = _mm512_min_ps(_mm512_max_ps(y, p.clamp_min), p.clamp_max);
  const __m128i q = _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(y), p.zero_point));
  char* out = p.c + row * p.c_row_bytes + column;
  if (count >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), q);
  } else {
    _mm_mask_storeu_epi8(out, static_cast<__mmask16>((1u << count) - 1), q);
  }
}

// Plain epilogues of 64-column tiles, a whole row at once: the four requantized vectors are
// packed to bytes in-lane (int32 -> int16 with saturation, the zero-point added to the words with
// saturation, int16 -> int8/uint8 with saturation), one vpermd restores column order, and one
// store writes the row: 6 instructions per 64 outputs where store_vector_plain spends 4 x
// (zero-point add + vpmovdb). With kIntegerClamp (TileArgs::integer_clamp) the activation clamp
// runs on the packed bytes (2 instructions instead of 8; rounding is monotonic, so clamping
// before or after it gives the same integers). A residual is added as store_vector adds it, with
// its constants in registers. Same bytes as store_vector_plain and store_vector.
// The packing constants (pack_requantized).
struct BytePacking {
  __m512i zero_point16;
  __m512i low_bytes, high_bytes;  // the clamp in output units (kIntegerClamp)
  __m512i order;                  // dword d of the row from dword 4 * (d % 4) + d / 4 of the packed bytes
};

// integer_clamp: TileArgs::integer_clamp (the bounds are set only then).
inline BytePacking byte_packing(const Epilogue& e, bool integer_clamp) {
  BytePacking b;
  b.zero_point16 = _mm512_set1_epi16(static_cast<int16_t>(e.output_zero_point));
  b.low_bytes = b.high_bytes = _mm512_setzero_si512();
  if (integer_clamp) {
    const int low = _mm_cvtss_si32(_mm_set_ss(e.clamp_min)) + e.output_zero_point;
    const int high = _mm_cvtss_si32(_mm_set_ss(e.clamp_max)) + e.output_zero_point;
    b.low_bytes = _mm512_set1_epi8(static_cast<char>(low));
    b.high_bytes = _mm512_set1_epi8(static_cast<char>(high));
  }
  b.order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return b;
}

struct PackedRowStore {
  __m512 clamp_min, clamp_max;
  BytePacking packing;
  ColumnConstants columns[4];
  char* c;
  int64_t c_row_bytes;
  __mmask64 mask;  // the row's n_valid bytes
  const char* residual;
  int64_t residual_row_bytes;
  __m512i residual_zero_point;
  __m512 residual_multiplier;
};

// int8/uint8 output without leaky slope, pointwise program or row term (a residual is allowed).
inline bool packed_row_epilogue(const TileArgs& t) {
  const Epilogue& e = *t.epilogue;
  return t.row_term == nullptr && !e.leaky && e.program == nullptr && e.output_type != OutputType::kF32;
}

// `columns`: the tile's width, 64, or 32 for a 32-column tile (whose columns[2..3] are not
// loaded: the packed arrays end at n_padded).
inline PackedRowStore packed_row_store(const TileArgs& t, int columns = 64) {
  const Epilogue& e = *t.epilogue;
  PackedRowStore p;
  p.clamp_min = _mm512_set1_ps(e.clamp_min);
  p.clamp_max = _mm512_set1_ps(e.clamp_max);
  p.packing = byte_packing(e, t.integer_clamp);
  for (int j = 0; j < columns / 16; ++j) p.columns[j] = load_column_constants(t, 16 * j);
  p.c = t.c;
  p.c_row_bytes = t.c_row_bytes;
  p.mask = t.n_valid >= columns ? ~__mmask64(0) >> (64 - columns) : (__mmask64(1) << t.n_valid) - 1;
  p.residual = t.residual;
  p.residual_row_bytes = t.residual_row_bytes;
  p.residual_zero_point = _mm512_set1_epi32(e.residual_zero_point);
  p.residual_multiplier = _mm512_set1_ps(e.residual_multiplier);
  return p;
}

// Four vectors of requantized int32 (16 columns each, in column order) to their 64 bytes in that
// order: saturating packs, the output zero-point, the activation clamp on the bytes when
// kIntegerClamp, and the dword permute that undoes the packs' in-lane interleave.
template <bool kUnsigned, bool kIntegerClamp>
[[gnu::always_inline]] inline __m512i pack_requantized(__m512i q0, __m512i q1, __m512i q2, __m512i q3,
                                                       const BytePacking& p) {
  const __m512i words01 = _mm512_adds_epi16(_mm512_packs_epi32(q0, q1), p.zero_point16);
  const __m512i words23 = _mm512_adds_epi16(_mm512_packs_epi32(q2, q3), p.zero_point16);
  __m512i bytes;
  if constexpr (kUnsigned) {
    bytes = _mm512_packus_epi16(words01, words23);
    if constexpr (kIntegerClamp) bytes = _mm512_min_epu8(_mm512_max_epu8(bytes, p.low_bytes), p.high_bytes);
  } else {
    bytes = _mm512_packs_epi16(words01, words23);
    if constexpr (kIntegerClamp) bytes = _mm512_min_epi8(_mm512_max_epi8(bytes, p.low_bytes), p.high_bytes);
  }
  return _mm512_permutexvar_epi32(p.order, bytes);
}

// Row `row` of a 64-column tile; kAddBias = false when the accumulators started from the bias.
// kResidual: 0 none, 1 uint8, 2 int8 residual.
// kFullRow: all 64 columns are stored (p.mask full): the residual bytes are read without a mask.
template <bool kUnsigned, bool kIntegerClamp, bool kAddBias, int kResidual, bool kFullRow = false>
[[gnu::always_inline]] inline void store_row_packed(const int32_t* acc, int row, const PackedRowStore& p) {
  const char* residual = kResidual != 0 ? p.residual + row * p.residual_row_bytes : nullptr;
  auto requantize = [&](int j) {
    __m512i sum = _mm512_load_si512(acc + 16 * j);
    if constexpr (kAddBias) sum = _mm512_add_epi32(sum, p.columns[j].bias);
    __m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), p.columns[j].multiplier, p.columns[j].float_bias);
    if constexpr (kResidual != 0) {
      __m128i bytes;
      if constexpr (kFullRow) {
        bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(residual + 16 * j));
      } else {
        bytes = _mm_maskz_loadu_epi8(static_cast<__mmask16>(p.mask >> (16 * j)), residual + 16 * j);
      }
      __m512i r = kResidual == 2 ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
      r = _mm512_sub_epi32(r, p.residual_zero_point);
      y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(r), p.residual_multiplier, y);
    }
    if constexpr (!kIntegerClamp) y = _mm512_min_ps(_mm512_max_ps(y, p.clamp_min), p.clamp_max);
    return _mm512_cvtps_epi32(y);
  };
  const __m512i bytes =
      pack_requantized<kUnsigned, kIntegerClamp>(requantize(0), requantize(1), requantize(2), requantize(3), p.packing);
  char* out = p.c + row * p.c_row_bytes;
  if (kFullRow || p.mask == ~__mmask64(0)) {
    _mm512_storeu_si512(out, bytes);
  } else {
    _mm512_mask_storeu_epi8(out, p.mask, bytes);
  }
}

// Rows x 64 accumulators (row-major, 64 int32 per row) through store_row_packed (the tile passed
// packed_row_epilogue).
template <bool kAddBias, int kRows>
[[gnu::always_inline]] inline void store_tile_packed(const int32_t* acc, const TileArgs& t) {
  const PackedRowStore p = packed_row_store(t);
  const Epilogue& e = *t.epilogue;
  // The integer clamp also needs the residual term bounded: |(r - r_zp) * r_multiplier| <= 2^29
  // keeps every value below 2^30 + 2^29.
  const bool integer_clamp =
      t.integer_clamp && (t.residual == nullptr || 255.0f * std::fabs(e.residual_multiplier) <= 0x1p29f);
  const int residual = t.residual == nullptr ? 0 : e.residual_signed ? 2 : 1;
  // full_row: all 64 columns stored, residual bytes read without a mask (ResNet's expansions).
  auto rows = [&](auto is_unsigned, auto clamp, auto residual_kind, auto full_row) __attribute__((always_inline)) {
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      store_row_packed<decltype(is_unsigned)::value, decltype(clamp)::value, kAddBias, decltype(residual_kind)::value,
                       decltype(full_row)::value>(acc + 64 * r, r, p);
    }
  };
  auto with_output = [&](auto residual_kind) __attribute__((always_inline)) {
    using std::false_type, std::true_type;
    const bool unsigned_output = e.output_type == OutputType::kU8;
    if (decltype(residual_kind)::value != 0 && integer_clamp && p.mask == ~__mmask64(0)) {
      unsigned_output ? rows(true_type{}, true_type{}, residual_kind, true_type{})
                      : rows(false_type{}, true_type{}, residual_kind, true_type{});
    } else if (unsigned_output) {
      integer_clamp ? rows(true_type{}, true_type{}, residual_kind, false_type{})
                    : rows(true_type{}, false_type{}, residual_kind, false_type{});
    } else {
      integer_clamp ? rows(false_type{}, true_type{}, residual_kind, false_type{})
                    : rows(false_type{}, false_type{}, residual_kind, false_type{});
    }
  };
  if (residual == 0) {
    with_output(std::integral_constant<int, 0>{});
  } else if (residual == 1) {
    with_output(std::integral_constant<int, 1>{});
  } else {
    with_output(std::integral_constant<int, 2>{});
  }
}

// Tiles whose program is one inline op on the value (SiLU, Sigmoid, HardSwish, GELU, Tanh: see
// run_pointwise) with no residual, leaky slope or row term, as after EfficientNet's convs. The op
// is chosen once per tile and the constants stay in registers (store_vector reloads every
// Epilogue field after each char store); the same operations as store_vector, so the same bytes.
// kCopy: not such a tile.
inline PointwiseOp single_op_epilogue(const TileArgs& t) {
  const Epilogue& e = *t.epilogue;
  if (e.program == nullptr || t.row_term != nullptr || t.residual != nullptr || e.leaky) return PointwiseOp::kCopy;
  const PointwiseProgram& program = *e.program;
  const PointwiseInstruction& first = program.code[0];
  if (program.size != 1 || first.dst != 0 || first.a != 0) return PointwiseOp::kCopy;
  switch (first.op) {
    case PointwiseOp::kSilu:
    case PointwiseOp::kSigmoid:
    case PointwiseOp::kHardSwish:
    case PointwiseOp::kGelu:
    case PointwiseOp::kTanh: return first.op;
    default: return PointwiseOp::kCopy;
  }
}

template <PointwiseOp kOp>
inline __m512 apply_single_op(__m512 y) {
  const vmath::vf x = (vmath::vf)y;
  if constexpr (kOp == PointwiseOp::kSilu) return (__m512)vmath::vsilu(x);
  if constexpr (kOp == PointwiseOp::kSigmoid) return (__m512)vmath::vsigmoid(x);
  if constexpr (kOp == PointwiseOp::kHardSwish) return (__m512)vmath::vhardswish(x);
  if constexpr (kOp == PointwiseOp::kGelu) return (__m512)vmath::vgelu(x);
  if constexpr (kOp == PointwiseOp::kTanh) return (__m512)vmath::vtanh(x);
}

// int8/uint8 rows of 4 vectors (64-column tiles) of store_block_single_op: kLive (1..4) vectors
// hold columns; the results are packed to bytes as store_row_packed packs them (3 in-lane packs and
// zero-point adds and one vpermd per 64 outputs where the per-vector path spends 4 x (zero-point
// add + vpmovdb)), and the saturation clamp's lower bound is the packs' saturation (epilogue_value
// clamps to saturate_max first, then to saturate_min = type min - zero-point: rounding is
// monotonic, values below it and -inf, which vcvtps2dq turns into INT_MIN, saturate to the type's
// minimum either way): the same bytes as store_vector.
template <PointwiseOp kOp, bool kClamp, bool kAddBias, int kLive>
[[gnu::always_inline]] inline void store_rows_single_op_packed(const int32_t* acc, int rows, const TileArgs& t) {
  const Epilogue& e = *t.epilogue;
  const __m512 clamp_min = _mm512_set1_ps(e.clamp_min), clamp_max = _mm512_set1_ps(e.clamp_max);
  const __m512 inverse_scale = _mm512_set1_ps(e.program_inverse_scale);
  const __m512 saturate_max = _mm512_set1_ps(e.saturate_max);
  const BytePacking packing = byte_packing(e, false);
  const bool is_unsigned = e.output_type == OutputType::kU8;
  const __mmask64 mask = t.n_valid >= 64 ? ~__mmask64(0) : (__mmask64(1) << t.n_valid) - 1;
  ColumnConstants k[kLive];
  for (int j = 0; j < kLive; ++j) k[j] = load_column_constants(t, 16 * j);
  char* const c = t.c;
  const int64_t c_row_bytes = t.c_row_bytes;
  for (int r = 0; r < rows; ++r) {
    auto quantize = [&](int j) {
      if (j >= kLive) return _mm512_setzero_si512();
      __m512i sum = _mm512_load_si512(acc + (r * 4 + j) * 16);
      if constexpr (kAddBias) sum = _mm512_add_epi32(sum, k[j].bias);
      __m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), k[j].multiplier, k[j].float_bias);
      if constexpr (kClamp) y = _mm512_min_ps(_mm512_max_ps(y, clamp_min), clamp_max);
      y = apply_single_op<kOp>(y);
      // The packs saturate below: the lower bound of the saturation clamp is implied.
      return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_mul_ps(y, inverse_scale), saturate_max));
    };
    const __m512i q0 = quantize(0), q1 = quantize(1), q2 = quantize(2), q3 = quantize(3);
    const __m512i bytes = is_unsigned ? pack_requantized<true, false>(q0, q1, q2, q3, packing)
                                      : pack_requantized<false, false>(q0, q1, q2, q3, packing);
    _mm512_mask_storeu_epi8(c + r * c_row_bytes, mask, bytes);
  }
}

// `acc` holds rows x vectors x 16 int32 accumulators, row-major; kAddBias = false when they
// started from the bias. Stores t.n_valid columns of each row.
template <PointwiseOp kOp, bool kFloatOutput, bool kAddBias>
__attribute__((noinline)) void store_block_single_op(const int32_t* acc, int rows, int vectors, const TileArgs& t) {
  const Epilogue& e = *t.epilogue;
  const __m512 clamp_min = _mm512_set1_ps(e.clamp_min), clamp_max = _mm512_set1_ps(e.clamp_max);
  const __m512 inverse_scale = _mm512_set1_ps(e.program_inverse_scale);
  const __m512 saturate_min = _mm512_set1_ps(e.saturate_min), saturate_max = _mm512_set1_ps(e.saturate_max);
  const __m512i zero_point = _mm512_set1_epi32(e.output_zero_point);
  char* const c = t.c;
  const int64_t c_row_bytes = t.c_row_bytes;
  // Without an activation the bounds are infinite and the (finite) value passes unchanged.
  const bool clamped =
      e.clamp_min > -std::numeric_limits<float>::max() || e.clamp_max < std::numeric_limits<float>::max();
  if constexpr (!kFloatOutput) {
    if (vectors == 4 && t.n_valid > 0) {
      auto packed = [&](auto clamp) {
        constexpr bool kClamp = decltype(clamp)::value;
        switch ((t.n_valid + 15) / 16) {
          case 1: return store_rows_single_op_packed<kOp, kClamp, kAddBias, 1>(acc, rows, t);
          case 2: return store_rows_single_op_packed<kOp, kClamp, kAddBias, 2>(acc, rows, t);
          case 3: return store_rows_single_op_packed<kOp, kClamp, kAddBias, 3>(acc, rows, t);
          default: return store_rows_single_op_packed<kOp, kClamp, kAddBias, 4>(acc, rows, t);
        }
      };
      if (clamped) {
        packed(std::true_type{});
      } else {
        packed(std::false_type{});
      }
      return;
    }
  }
  auto store_rows = [&](auto clamp) {
    for (int j = 0; j < vectors; ++j) {
      const int count = t.n_valid - 16 * j;
      if (count <= 0) break;
      const __mmask16 mask = count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << count) - 1);
      const ColumnConstants k = load_column_constants(t, 16 * j);
      for (int r = 0; r < rows; ++r) {
        __m512i sum = _mm512_load_si512(acc + (r * vectors + j) * 16);
        if constexpr (kAddBias) sum = _mm512_add_epi32(sum, k.bias);
        __m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), k.multiplier, k.float_bias);
        if constexpr (decltype(clamp)::value) y = _mm512_min_ps(_mm512_max_ps(y, clamp_min), clamp_max);
        y = apply_single_op<kOp>(y);
        char* out = c + r * c_row_bytes;
        if constexpr (kFloatOutput) {
          _mm512_mask_storeu_ps(reinterpret_cast<float*>(out) + 16 * j, mask, y);
        } else {
          y = _mm512_max_ps(_mm512_min_ps(_mm512_mul_ps(y, inverse_scale), saturate_max), saturate_min);
          const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(y), zero_point);
          _mm_mask_storeu_epi8(out + 16 * j, mask, _mm512_cvtepi32_epi8(q));
        }
      }
    }
  };
  if (clamped) {
    store_rows(std::true_type{});
  } else {
    store_rows(std::false_type{});
  }
}

template <bool kFloatOutput, bool kAddBias>
inline void store_block_single_op(PointwiseOp op, const int32_t* acc, int rows, int vectors, const TileArgs& t) {
  switch (op) {
    case PointwiseOp::kSilu:
      store_block_single_op<PointwiseOp::kSilu, kFloatOutput, kAddBias>(acc, rows, vectors, t);
      break;
    case PointwiseOp::kSigmoid:
      store_block_single_op<PointwiseOp::kSigmoid, kFloatOutput, kAddBias>(acc, rows, vectors, t);
      break;
    case PointwiseOp::kHardSwish:
      store_block_single_op<PointwiseOp::kHardSwish, kFloatOutput, kAddBias>(acc, rows, vectors, t);
      break;
    case PointwiseOp::kGelu:
      store_block_single_op<PointwiseOp::kGelu, kFloatOutput, kAddBias>(acc, rows, vectors, t);
      break;
    default: store_block_single_op<PointwiseOp::kTanh, kFloatOutput, kAddBias>(acc, rows, vectors, t); break;
  }
}

// Runs store_block_single_op for `op` (from single_op_epilogue, not kCopy) and the output type.
template <bool kAddBias = true>
inline void store_block_single_op(PointwiseOp op, const int32_t* acc, int rows, int vectors, const TileArgs& t) {
  if (t.epilogue->output_type == OutputType::kF32) {
    store_block_single_op<true, kAddBias>(op, acc, rows, vectors, t);
  } else {
    store_block_single_op<false, kAddBias>(op, acc, rows, vectors, t);
  }
}

inline void store_vector(__m512i acc, int column, int count, const TileArgs& t, int row, __m512 clamp_min,
                         __m512 clamp_max) {
  if (count <= 0) return;
  store_vector(acc, column, count, t, row, load_column_constants(t, column), clamp_min, clamp_max);
}

}  // namespace
}  // namespace qdqrt::kernels::internal
