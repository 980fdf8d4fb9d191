// AVX2 NHWC pools: 32 channels per byte vector (max; scalar integer max for the channel tail),
// 8 int32 lanes per sum vector (avg; the channel tail sums into a padded int32 block so its
// requantization runs the same vector instructions).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/pool/qpool.h"
#include "kernels/simd_avx2.h"

namespace qdqrt::kernels::avx2 {

using namespace simd256;

namespace {

template <class T>
inline __m256i max_bytes(__m256i a, __m256i b) {
  if constexpr (std::is_signed_v<T>) {
    return _mm256_max_epi8(a, b);
  } else {
    return _mm256_max_epu8(a, b);
  }
}

struct Epilogue {
  __m256 lo, hi;
  __m256i output_zero_point;
  explicit Epilogue(const AvgPoolParams& p)
      : lo(_mm256_set1_ps(p.output_min)),
        hi(_mm256_set1_ps(p.output_max)),
        output_zero_point(_mm256_set1_epi32(p.output_zero_point)) {}
  __m256i apply(__m256i sum, __m256i bias, __m256 multiplier) const {
    const __m256 value = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sum, bias)), multiplier);
    return requantize8(value, lo, hi, output_zero_point);
  }
};

// Tap list for one output pixel: interior windows reuse the precomputed full-window offsets
// from the window origin; border windows list their valid taps; huge windows return null.
struct TapList {
  size_t full_offsets[kMaxListedTaps];
  size_t offsets[kMaxListedTaps];
  size_t full_taps = 0;  // 0 when the kernel has more than kMaxListedTaps taps
  explicit TapList(const Pool2dShape& s) {
    if (s.kernel_height * s.kernel_width <= kMaxListedTaps) full_taps = pool_full_window_offsets(s, full_offsets);
  }
  // Returns the offsets (count w.valid_taps) and sets base to add them to.
  template <class T>
  const size_t* list(const Pool2dShape& s, const PoolWindow& w, const T* input, const T*& base) {
    if (full_taps != 0 && w.valid_taps == full_taps) {
      const size_t ih = w.oh * s.stride_height - s.pad_top, iw = w.ow * s.stride_width - s.pad_left;
      base = input + ((w.image * s.input_height + ih) * s.input_width + iw) * s.in_stride();
      return full_offsets;
    }
    base = input;
    if (w.valid_taps > kMaxListedTaps) return nullptr;
    pool_window_offsets(s, w, offsets);
    return offsets;
  }
};

// Calls tap(pointer to the tap's pixel, channel 0) for every valid tap of window w: from the
// listed offsets when given (windows up to kMaxListedTaps taps), else walking the window.
template <class T, class Tap>
inline void for_each_tap(const Pool2dShape& s, const PoolWindow& w, const T* input, const size_t* offsets,
                         const T* base, Tap tap) {
  if (offsets) {
    for (size_t t = 0; t < w.valid_taps; ++t) tap(base + offsets[t]);
    return;
  }
  const size_t in_stride = s.in_stride();
  for (size_t kh = w.kh_begin; kh < w.kh_end; ++kh) {
    const size_t ih = w.oh * s.stride_height + kh * s.dilation_height - s.pad_top;
    const T* row = input + ((w.image * s.input_height + ih) * s.input_width) * in_stride;
    for (size_t kw = w.kw_begin; kw < w.kw_end; ++kw) {
      tap(row + (w.ow * s.stride_width + kw * s.dilation_width - s.pad_left) * in_stride);
    }
  }
}

}  // namespace

template <class T>
void maxpool(const Pool2dShape& s, size_t pixel_begin, size_t pixel_end, const T* input, T* output) {
  const __m256i lowest = _mm256_set1_epi8(static_cast<char>(QTraits<T>::min));
  const size_t full = s.channels & ~size_t{31};
  TapList tap_list(s);
  if (pixel_begin >= pixel_end) return;
  PoolWindow w = pool_window(s, pixel_begin);
  for (size_t pixel = pixel_begin; pixel < pixel_end; ++pixel, next_pool_window(s, w)) {
    T* out = output + pixel * s.out_stride();
    const T* base = input;
    const size_t* listed = tap_list.list(s, w, input, base);
    for (size_t c = 0; c < full; c += 32) {
      __m256i best = lowest;
      for_each_tap(s, w, input, listed, base, [&](const T* tap) {
        best = max_bytes<T>(best, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tap + c)));
      });
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c), best);
    }
    if (full < s.channels) {
      T best[32];
      std::fill(best, best + 32, static_cast<T>(QTraits<T>::min));
      for_each_tap(s, w, input, listed, base, [&](const T* tap) {
        for (size_t c = full; c < s.channels; ++c) best[c - full] = std::max(best[c - full], tap[c]);
      });
      std::memcpy(out + full, best, s.channels - full);
    }
  }
}

template <class T>
void avgpool(const Pool2dShape& s, const AvgPoolParams& p, size_t pixel_begin, size_t pixel_end, const T* input,
             T* output) {
  const Epilogue epilogue(p);
  const size_t full = s.channels & ~size_t{7};
  TapList tap_list(s);
  if (pixel_begin >= pixel_end) return;
  PoolWindow w = pool_window(s, pixel_begin);
  for (size_t pixel = pixel_begin; pixel < pixel_end; ++pixel, next_pool_window(s, w)) {
    const size_t divisor = std::max<size_t>(1, p.count_include_pad ? w.padded_taps : w.valid_taps);
    const __m256 multiplier = _mm256_set1_ps(p.multiplier / static_cast<float>(divisor));
    const __m256i bias = _mm256_set1_epi32(p.input_zero_point * static_cast<int32_t>(w.valid_taps));
    T* out = output + pixel * s.out_stride();
    const T* base = input;
    const size_t* listed = tap_list.list(s, w, input, base);
    size_t c = 0;
    for (; c + 32 <= full; c += 32) {  // 4 sum vectors per pass over the taps
      __m256i sum[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256()};
      for_each_tap(s, w, input, listed, base, [&](const T* tap) {
        for (int q = 0; q < 4; ++q) sum[q] = _mm256_add_epi32(sum[q], load8_epi32(tap + c + 8 * q));
      });
      for (int q = 0; q < 4; ++q) store8(out + c + 8 * q, epilogue.apply(sum[q], bias, multiplier));
    }
    for (; c < full; c += 8) {
      __m256i sum = _mm256_setzero_si256();
      for_each_tap(s, w, input, listed, base, [&](const T* tap) { sum = _mm256_add_epi32(sum, load8_epi32(tap + c)); });
      store8(out + c, epilogue.apply(sum, bias, multiplier));
    }
    if (full < s.channels) {
      alignas(32) int32_t sums[8] = {};
      for_each_tap(s, w, input, listed, base, [&](const T* tap) {
        for (size_t c = full; c < s.channels; ++c) sums[c - full] += tap[c];
      });
      T block[8];
      store8(block, epilogue.apply(_mm256_load_si256(reinterpret_cast<const __m256i*>(sums)), bias, multiplier));
      std::memcpy(out + full, block, s.channels - full);
    }
  }
}

template <class T>
void global_avgpool(size_t pixels, size_t channels, size_t input_pixel_stride, const T* input, T* output,
                    const AvgPoolParams& p) {
  const size_t stride = input_pixel_stride ? input_pixel_stride : channels;
  const Epilogue epilogue(p);
  const __m256 multiplier = _mm256_set1_ps(p.multiplier / static_cast<float>(std::max<size_t>(1, pixels)));
  const __m256i bias = _mm256_set1_epi32(p.input_zero_point * static_cast<int32_t>(pixels));
  size_t c = 0;
  for (; c + 32 <= channels; c += 32) {
    __m256i sum[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                      _mm256_setzero_si256()};
    const T* column = input + c;
    for (size_t i = 0; i < pixels; ++i, column += stride) {
      for (int q = 0; q < 4; ++q) sum[q] = _mm256_add_epi32(sum[q], load8_epi32(column + 8 * q));
    }
    for (int q = 0; q < 4; ++q) store8(output + c + 8 * q, epilogue.apply(sum[q], bias, multiplier));
  }
  for (; c + 8 <= channels; c += 8) {
    __m256i sum = _mm256_setzero_si256();
    const T* column = input + c;
    for (size_t i = 0; i < pixels; ++i, column += stride) sum = _mm256_add_epi32(sum, load8_epi32(column));
    store8(output + c, epilogue.apply(sum, bias, multiplier));
  }
  if (c < channels) {
    alignas(32) int32_t sums[8] = {};
    const T* column = input + c;
    for (size_t i = 0; i < pixels; ++i, column += stride) {
      for (size_t k = 0; k < channels - c; ++k) sums[k] += column[k];
    }
    T block[8];
    store8(block, epilogue.apply(_mm256_load_si256(reinterpret_cast<const __m256i*>(sums)), bias, multiplier));
    std::memcpy(output + c, block, channels - c);
  }
}

#define QDQRT_INSTANTIATE(T)                                                                                    \
  template void maxpool<T>(const Pool2dShape&, size_t, size_t, const T*, T*);                                   \
  template void avgpool<T>(const Pool2dShape&, const AvgPoolParams&, size_t, size_t, const T*, T*);             \
  template void global_avgpool<T>(size_t, size_t, size_t, const T*, T*, const AvgPoolParams&);
QDQRT_INSTANTIATE(int8_t)
QDQRT_INSTANTIATE(uint8_t)
#undef QDQRT_INSTANTIATE

}  // namespace qdqrt::kernels::avx2
