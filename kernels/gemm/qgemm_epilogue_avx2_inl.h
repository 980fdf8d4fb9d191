// The 8-lane (ymm) epilogue shared by the AVX2 and AVX-VNNI GEMM files (both compiled with
// AVX2+FMA). Included inside an anonymous namespace by each of them.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/gemm/qgemm_driver_inl.h"

#define QDQRT_VECTOR_LANES 8
#include "kernels/vector_math_inl.h"
#include "kernels/pointwise/pointwise_eval_inl.h"
#undef QDQRT_VECTOR_LANES

namespace qdqrt::kernels::internal {
namespace {

// The pointwise program on 8 real-unit values, then the output scale and saturation
// (int8/uint8 outputs); the same operations as epilogue_value.
inline __m256 run_program_then_scale8(const Epilogue& e, __m256 y, int64_t column) {
  const PointwiseProgram& program = *e.program;
  const float* constants = program.constant_stride == 0 ? program.constants : program.constants + column;
  y = (__m256)vmath::run_pointwise(program, (vmath::vf)y, constants, nullptr);
  if (e.output_type == OutputType::kF32) return y;
  y = _mm256_mul_ps(y, _mm256_set1_ps(e.program_inverse_scale));
  y = _mm256_min_ps(y, _mm256_set1_ps(e.saturate_max));
  return _mm256_max_ps(y, _mm256_set1_ps(e.saturate_min));
}

// Applies the epilogue to 8 accumulators of one row and stores `count` (0..8) of them.
inline void store_vector8(__m256i acc, int column, int count, const TileArgs& t, int row, __m256 clamp_min,
                          __m256 clamp_max) {
  if (count <= 0) return;
  const Epilogue& e = *t.epilogue;
  acc = _mm256_add_epi32(acc, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.bias + column)));
  if (t.row_term) acc = _mm256_add_epi32(acc, _mm256_set1_epi32(t.row_term[row]));
  __m256 y = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_loadu_ps(t.multiplier + column),
                             _mm256_loadu_ps(t.float_bias + column));
  if (t.residual) {
    int64_t raw = 0;
    std::memcpy(&raw, t.residual + row * t.residual_row_bytes + column, count >= 8 ? 8 : count);
    const __m128i bytes = _mm_cvtsi64_si128(raw);
    __m256i r = e.residual_signed ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
    r = _mm256_sub_epi32(r, _mm256_set1_epi32(e.residual_zero_point));
    y = _mm256_fmadd_ps(_mm256_cvtepi32_ps(r), _mm256_set1_ps(e.residual_multiplier), y);
  }
  if (e.leaky) {
    const __m256 negative = _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LT_OQ);
    y = _mm256_blendv_ps(y, _mm256_mul_ps(y, _mm256_set1_ps(e.leaky_alpha)), negative);
  }
  y = _mm256_max_ps(y, clamp_min);
  y = _mm256_min_ps(y, clamp_max);
  if (e.program != nullptr) y = run_program_then_scale8(e, y, e.program_channel_offset + t.column0 + column);
  char* out = t.c + row * t.c_row_bytes;
  if (e.output_type == OutputType::kF32) {
    if (count >= 8) {
      _mm256_storeu_ps(reinterpret_cast<float*>(out) + column, y);
    } else {
      alignas(32) float values[8];
      _mm256_store_ps(values, y);
      std::memcpy(reinterpret_cast<float*>(out) + column, values, count * sizeof(float));
    }
  } else {
    __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(y), _mm256_set1_epi32(e.output_zero_point));
    // Values are already inside [-128, 127] or [0, 255]: keep the low byte of each lane.
    const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                                          -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    q = _mm256_shuffle_epi8(q, pick);
    const __m128i packed = _mm_unpacklo_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const int64_t eight = _mm_cvtsi128_si64(packed);
    std::memcpy(out + column, &eight, count >= 8 ? 8 : count);
  }
}

}  // namespace
}  // namespace qdqrt::kernels::internal
