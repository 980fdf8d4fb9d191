// AVX-512 depthwise convolution: 64 channels (4 zmm) per block, one vpdpwssd per tap and 16
// channels (input widened to 32-bit lanes, weight in the low 16 bits of each lane).
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* in the widening intrinsics).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <vector>

#include "kernels/qdwconv_internal.h"
#include "kernels/qepilogue_avx512_inl.h"

namespace qdqrt::kernels::internal {
namespace {

template <bool kSigned>
inline __m512i widen(__m128i bytes) {
  if constexpr (kSigned) {
    return _mm512_cvtepi8_epi32(bytes);
  } else {
    return _mm512_cvtepu8_epi32(bytes);
  }
}

template <bool kSigned>
void run(const PackedDepthwise& packed, const DepthwiseGeometry& geometry, const DepthwiseArgs& args,
         const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  const int taps = packed.kernel_height * packed.kernel_width;
  const int channels = packed.channels;
  const int64_t stride = packed.channels_padded;
  // Per-call scratch (taps and one padding row): small next to a layer's work, and a local
  // pointer avoids a TLS lookup per pixel in position-independent code.
  thread_local std::vector<const uint8_t*> tap_storage;
  thread_local std::vector<uint8_t> padding_storage;
  tap_storage.resize(taps);
  padding_storage.assign(channels, static_cast<uint8_t>(packed.input_zero_point));
  const uint8_t** tap_pointers = tap_storage.data();
  DepthwisePixelWalker walker(packed, geometry, static_cast<const uint8_t*>(args.input), padding_storage.data(),
                              pixel_begin);
  const int output_size = output_element_size(epilogue.output_type);
  const __m512 clamp_min = _mm512_set1_ps(epilogue.clamp_min);
  const __m512 clamp_max = _mm512_set1_ps(epilogue.clamp_max);
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
    for (int c = 0; c < channels; c += 64) {
      const int remaining = channels - c;
      const int32_t* w = packed.weights.data() + c;
      __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
      __m512i acc2 = _mm512_setzero_si512(), acc3 = _mm512_setzero_si512();
      if (remaining >= 64) {
        for (int tap = 0; tap < taps; ++tap) {
          const uint8_t* x = tap_pointers[tap] + c;
          const int32_t* wt = w + tap * stride;
          acc0 = _mm512_dpwssd_epi32(acc0, widen<kSigned>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))),
                                     _mm512_loadu_si512(wt));
          acc1 = _mm512_dpwssd_epi32(acc1, widen<kSigned>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 16))),
                                     _mm512_loadu_si512(wt + 16));
          acc2 = _mm512_dpwssd_epi32(acc2, widen<kSigned>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 32))),
                                     _mm512_loadu_si512(wt + 32));
          acc3 = _mm512_dpwssd_epi32(acc3, widen<kSigned>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 48))),
                                     _mm512_loadu_si512(wt + 48));
        }
      } else {
        // Channel tail, one 16-channel vector at a time; masked loads never touch bytes past the
        // last channel.
        __m512i* accs[4] = {&acc0, &acc1, &acc2, &acc3};
        for (int v = 0; v * 16 < remaining; ++v) {
          const int count = remaining - 16 * v;
          const __mmask16 mask = count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << count) - 1);
          __m512i acc = _mm512_setzero_si512();
          for (int tap = 0; tap < taps; ++tap) {
            acc = _mm512_dpwssd_epi32(acc, widen<kSigned>(_mm_maskz_loadu_epi8(mask, tap_pointers[tap] + c + 16 * v)),
                                      _mm512_maskz_loadu_epi32(mask, w + tap * stride + 16 * v));
          }
          *accs[v] = acc;
        }
      }
      t.bias = packed.bias.data() + c;
      t.multiplier = packed.multiplier.data() + c;
      t.float_bias = packed.float_bias.data() + c;
      t.c = out + static_cast<int64_t>(c) * output_size;
      t.residual = residual ? residual + c : nullptr;
      store_vector(acc0, 0, remaining, t, 0, clamp_min, clamp_max);
      store_vector(acc1, 16, remaining - 16, t, 0, clamp_min, clamp_max);
      store_vector(acc2, 32, remaining - 32, t, 0, clamp_min, clamp_max);
      store_vector(acc3, 48, remaining - 48, t, 0, clamp_min, clamp_max);
    }
  }
}

}  // namespace

void depthwise_run_avx512vnni(const PackedDepthwise& packed, const DepthwiseGeometry& geometry,
                              const DepthwiseArgs& args, const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  if (packed.input_signed) {
    run<true>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
  } else {
    run<false>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
  }
}

}  // namespace qdqrt::kernels::internal
