// AVX2 depthwise convolution: 32 channels (4 ymm) per block, vpmaddwd per tap and 8 channels
// (input widened to 32-bit lanes, weight in the low 16 bits of each lane). Also serves AVX-VNNI.
#include <immintrin.h>

#include <cstring>

#include "kernels/dwconv/qdwconv_internal.h"
#include "kernels/gemm/qgemm_epilogue_avx2_inl.h"
#include "kernels/scratch.h"

namespace qdqrt::kernels::internal {
namespace {

template <bool kSigned>
inline __m256i load_widen(const uint8_t* x, int count) {
  __m128i bytes;
  if (count >= 8) {
    bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x));
  } else {
    int64_t raw = 0;
    if (count > 0) std::memcpy(&raw, x, count);
    bytes = _mm_cvtsi64_si128(raw);
  }
  if constexpr (kSigned) {
    return _mm256_cvtepi8_epi32(bytes);
  } else {
    return _mm256_cvtepu8_epi32(bytes);
  }
}

template <bool kSigned>
void run(const PackedDepthwise& packed, const DepthwiseGeometry& geometry, const DepthwiseArgs& args,
         const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  const int taps = packed.kernel_height * packed.kernel_width;
  const int channels = packed.channels;
  const int64_t stride = packed.channels_padded;
  // Per-thread scratch: the tap pointers and one padding row.
  const uint8_t** tap_pointers =
      reinterpret_cast<const uint8_t**>(thread_scratch(ScratchSlot::kTapPointers, taps * sizeof(const uint8_t*)));
  uint8_t* padding = thread_scratch(ScratchSlot::kPadding, channels + 64);
  std::memset(padding, static_cast<uint8_t>(packed.input_zero_point), channels + 64);
  DepthwisePixelWalker walker(packed, geometry, static_cast<const uint8_t*>(args.input), padding, pixel_begin);
  const int output_size = output_element_size(epilogue.output_type);
  const __m256 clamp_min = _mm256_set1_ps(epilogue.clamp_min);
  const __m256 clamp_max = _mm256_set1_ps(epilogue.clamp_max);
  TileArgs t;
  t.row_term = nullptr;
  t.c_row_bytes = 0;
  t.residual_row_bytes = 0;
  t.epilogue = &epilogue;
  for (int64_t p = pixel_begin; p < pixel_end; ++p) {
    walker.next(tap_pointers);
    char* out = static_cast<char*>(args.output) + p * args.output_pixel_stride * output_size;
    const char* residual =
        epilogue.residual ? static_cast<const char*>(epilogue.residual) + p * epilogue.residual_row_stride : nullptr;
    for (int c = 0; c < channels; c += 32) {
      const int remaining = channels - c;
      const int32_t* w = packed.weights.data() + c;
      __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256()};
      // Weights are padded to 16 channels; lanes past the last channel are never stored.
      const int vectors = remaining >= 32 ? 4 : (remaining + 7) / 8;
      for (int tap = 0; tap < taps; ++tap) {
        const uint8_t* x = tap_pointers[tap] + c;
        const int32_t* wt = w + tap * stride;
        for (int v = 0; v < vectors; ++v) {
          const __m256i weights = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wt + 8 * v));
          acc[v] = _mm256_add_epi32(acc[v], _mm256_madd_epi16(load_widen<kSigned>(x + 8 * v, remaining - 8 * v), weights));
        }
      }
      t.bias = packed.bias.data() + c;
      t.multiplier = packed.multiplier.data() + c;
      t.float_bias = packed.float_bias.data() + c;
      t.column0 = c;
      t.c = out + static_cast<int64_t>(c) * output_size;
      t.residual = residual ? residual + c : nullptr;
      for (int v = 0; v < vectors; ++v) store_vector8(acc[v], 8 * v, remaining - 8 * v, t, 0, clamp_min, clamp_max);
    }
  }
}

}  // namespace

void depthwise_run_avx2(const PackedDepthwise& packed, const DepthwiseGeometry& geometry, const DepthwiseArgs& args,
                        const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  if (packed.input_signed) {
    run<true>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
  } else {
    run<false>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
  }
}

}  // namespace qdqrt::kernels::internal
