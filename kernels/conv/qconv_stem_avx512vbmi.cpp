// The stem form's column builder with AVX-512 VBMI: per chunk of buffer columns (at most 64
// bytes, e.g. 7 columns of a 3x3 over 3 channels, 3 of a 7x7), one two-table vpermb per pair of
// kernel rows and one store; each kernel row is loaded once per group of chunks that one 64-byte
// load covers (7 chunks of the 7x7 stem). The scalar builder spent one load, xor
// and store per C-byte piece (21 per 7 columns of the 3x3 stem), a third of the layer's time.
#include <immintrin.h>

#include <algorithm>

#include "kernels/conv/qconv_stem.h"

namespace qdqrt::kernels::avx512vbmi {

namespace {
inline __mmask64 byte_mask(int64_t count) { return count >= 64 ? ~__mmask64{0} : ((__mmask64{1} << count) - 1u); }
}  // namespace

void conv_stem_columns(const internal::StemColumnsArgs& a) {
  // Locals: the stores below go through uint8_t pointers, which may alias `a` as far as the
  // compiler knows.
  const internal::StemColumnsPlan& plan = *a.plan;
  const uint8_t* const* rows = a.rows;
  const int ky_begin = a.ky_begin, ky_end = a.ky_end, channels = a.channels;
  const int64_t pixel_stride = a.pixel_stride;
  const int column_bytes = a.kernel_height * channels;
  const int chunk = plan.chunk_columns;
  const int64_t chunk_bytes = static_cast<int64_t>(chunk) * column_bytes;
  uint8_t* const out = a.out;
  const __m512i pad = _mm512_set1_epi8(static_cast<char>(a.pad));
  const __m512i raw_pad = _mm512_set1_epi8(static_cast<char>(a.pad ^ a.flip));
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(a.flip));
  // Columns [inside_begin, inside_end) read the image; the others are padding.
  const int inside_begin = std::clamp(a.pad_left - a.p_begin, 0, a.count);
  const int inside_end = std::clamp(a.input_width + a.pad_left - a.p_begin, inside_begin, a.count);
  auto fill_padding = [&](int begin, int end) {
    for (int64_t byte = static_cast<int64_t>(begin) * column_bytes; byte < static_cast<int64_t>(end) * column_bytes;
         byte += 64) {
      _mm512_mask_storeu_epi8(out + byte, byte_mask(static_cast<int64_t>(end) * column_bytes - byte), pad);
    }
  };
  fill_padding(0, inside_begin);
  int64_t offset = static_cast<int64_t>(a.p_begin + inside_begin - a.pad_left) * pixel_stride;
  const int64_t offset_step = static_cast<int64_t>(chunk) * pixel_stride;
  uint8_t* column = out + static_cast<int64_t>(inside_begin) * column_bytes;
  int j = inside_begin;
  // Whole chunks: a full 64-byte store (the bytes past the chunk are overwritten by the next
  // chunk, the padding fill or the caller's slack).
  // Kernel rows in pairs: one two-table vpermb (vpermt2b) places the bytes of two rows (index bit 6
  // picks the second row), so a 7-row kernel takes 4 shuffles per chunk instead of 7.
  constexpr int kMaxPairs = internal::kStemVectorBytes / 2;
  __m512i pair_index[kMaxPairs];
  __mmask64 pair_mask[kMaxPairs];
  const int pairs = (ky_end - ky_begin) / 2;
  for (int pair = 0; pair < pairs; ++pair) {
    const int ky = ky_begin + 2 * pair;
    const __m512i second = _mm512_or_si512(_mm512_loadu_si512(plan.index[ky + 1]), _mm512_set1_epi8(64));
    pair_index[pair] = _mm512_mask_blend_epi8(plan.mask[ky], second, _mm512_loadu_si512(plan.index[ky]));
    pair_mask[pair] = plan.mask[ky] | plan.mask[ky + 1];
  }
  const int single = (ky_end - ky_begin) % 2 != 0 ? ky_end - 1 : -1;
  // Groups of chunks: each kernel row loaded once (the 64 bytes from the group's first column),
  // the shuffle indices moved by offset_step per chunk (the group's size keeps them inside the
  // 64 bytes: plan_stem_columns). A 64-byte load per row and chunk was the builder's cost (7 rows
  // of split loads for 9 bytes each of the 7x7 stem's 3-column chunks).
  const int group = plan.group_chunks;
  const int64_t group_bytes = static_cast<int64_t>(group - 1) * offset_step + (chunk - 1) * pixel_stride + channels;
  auto load_group_row = [&](int ky) {
    const uint8_t* source = rows[ky] + offset;
    if (source + 64 <= a.input_end) return _mm512_loadu_si512(source);
    return _mm512_maskz_loadu_epi8(byte_mask(std::min<int64_t>(group_bytes, a.input_end - source)), source);
  };
  constexpr int kMaxRows = internal::kStemVectorBytes;
  __m512i loaded[kMaxRows];
  while (j + chunk <= inside_end) {
    for (int ky = ky_begin; ky < ky_end; ++ky) loaded[ky] = load_group_row(ky);
    for (int q = 0; q < group && j + chunk <= inside_end; ++q, j += chunk, column += chunk_bytes) {
      const __m512i shift = _mm512_set1_epi8(static_cast<char>(q * offset_step));
      __m512i bytes = raw_pad;
      for (int pair = 0; pair < pairs; ++pair) {
        const int ky = ky_begin + 2 * pair;
        const __m512i placed =
            _mm512_permutex2var_epi8(loaded[ky], _mm512_add_epi8(pair_index[pair], shift), loaded[ky + 1]);
        bytes = _mm512_mask_mov_epi8(bytes, pair_mask[pair], placed);
      }
      if (single >= 0) {
        bytes = _mm512_mask_permutexvar_epi8(
            bytes, plan.mask[single], _mm512_add_epi8(_mm512_loadu_si512(plan.index[single]), shift), loaded[single]);
      }
      _mm512_storeu_si512(column, _mm512_xor_si512(bytes, flip));
    }
    offset += static_cast<int64_t>(group) * offset_step;
  }
  // The loop leaves `offset` past the last group; the tail below starts at column j.
  offset = static_cast<int64_t>(a.p_begin + j - a.pad_left) * pixel_stride;
  if (j < inside_end) {
    const int columns = inside_end - j;
    const __mmask64 load_mask = byte_mask(static_cast<int64_t>(columns - 1) * pixel_stride + channels);
    __m512i bytes = raw_pad;
    for (int ky = ky_begin; ky < ky_end; ++ky) {
      const __m512i row = _mm512_maskz_loadu_epi8(load_mask, rows[ky] + offset);
      bytes = _mm512_mask_permutexvar_epi8(bytes, plan.mask[ky], _mm512_loadu_si512(plan.index[ky]), row);
    }
    _mm512_mask_storeu_epi8(column, byte_mask(static_cast<int64_t>(columns) * column_bytes),
                            _mm512_xor_si512(bytes, flip));
  }
  fill_padding(inside_end, a.count);
}

}  // namespace qdqrt::kernels::avx512vbmi
