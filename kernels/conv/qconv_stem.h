// Internal: the stem form of the INT8 convolution (kernels/conv/qconv_stem.cpp): its run function,
// called by run_conv_channels, and the column builders (portable and AVX-512 VBMI).
#pragma once

#include <cstdint>

#include "kernels/conv/qconv.h"

namespace qdqrt::kernels::internal {

// Output pixels [pixel_begin, pixel_end) x columns [n_begin, n_end) (n_begin a multiple of the
// stem weights' nr) of a convolution for which conv_stem_applies.
void run_conv_stem(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args, const Epilogue& epilogue,
                   int pixel_begin, int pixel_end, int n_begin, int n_end);

// Byte shuffles of the vector column builder: a chunk of `chunk_columns` buffer columns (at most
// 64 bytes) takes byte j from the 64 bytes loaded at kernel row ky's first input column,
// index[ky][j], where bit j of mask[ky] is set. chunk_columns 0: no vector plan (the scalar
// builder runs).
inline constexpr int kStemVectorBytes = 64;
struct StemColumnsPlan {
  int chunk_columns = 0;
  // Consecutive chunks whose input bytes lie in one 64-byte load of each kernel row (the vector
  // builder loads each row once per group and shifts the shuffle indices from chunk to chunk).
  int group_chunks = 1;
  uint64_t mask[kStemVectorBytes];
  uint8_t index[kStemVectorBytes][kStemVectorBytes];
};

// Buffer columns [0, count) = padded input columns p_begin + j (input column p_begin + j -
// pad_left): kernel_height * channels bytes each, rows[ky] for ky in [ky_begin, ky_end) and the
// padding byte elsewhere, every byte xor `flip` (int8 inputs to the unsigned domain; `pad` is
// already in it).
struct StemColumnsArgs {
  const uint8_t* const* rows = nullptr;
  const uint8_t* input_end = nullptr;  // one past the input's last byte (reads stop before it)
  int kernel_height = 0, channels = 0;
  int ky_begin = 0, ky_end = 0;
  int64_t pixel_stride = 0;
  int input_width = 0, pad_left = 0;
  int p_begin = 0, count = 0;
  uint8_t pad = 0, flip = 0;
  uint8_t* out = nullptr;
  const StemColumnsPlan* plan = nullptr;  // the vector builder's shuffles
};
using StemColumnsFn = void (*)(const StemColumnsArgs& args);

}  // namespace qdqrt::kernels::internal

namespace qdqrt::kernels::scalar {
// One 4-byte move per C-byte piece (portable); may write 3 bytes past the last column.
void conv_stem_columns(const internal::StemColumnsArgs& args);
}  // namespace qdqrt::kernels::scalar

namespace qdqrt::kernels::avx512vbmi {
// One masked load and vpermb per kernel row and chunk of columns; writes exactly the columns.
void conv_stem_columns(const internal::StemColumnsArgs& args);
}  // namespace qdqrt::kernels::avx512vbmi
