// AVX-512 NHWC pools: 64 channels per byte vector (max), 16 int32 lanes per sum vector (avg),
// masked channel tails.
#include <algorithm>
#include <type_traits>

#include "kernels/pool/qpool.h"
#include "kernels/simd_avx512.h"

namespace qdqrt::kernels::avx512skx {

using namespace simd512;

namespace {

template <class T>
inline __m512i max_bytes(__m512i a, __m512i b) {
  if constexpr (std::is_signed_v<T>) {
    return _mm512_max_epi8(a, b);
  } else {
    return _mm512_max_epu8(a, b);
  }
}

struct Epilogue {
  __m512 lo, hi;
  __m512i output_zero_point;
  explicit Epilogue(const AvgPoolParams& p)
      : lo(_mm512_set1_ps(p.output_min)),
        hi(_mm512_set1_ps(p.output_max)),
        output_zero_point(_mm512_set1_epi32(p.output_zero_point)) {}
  // float(sum - bias) * multiplier, requantized.
  __m512i apply(__m512i sum, __m512i bias, __m512 multiplier) const {
    const __m512 value = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sum, bias)), multiplier);
    return requantize16(value, lo, hi, output_zero_point);
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

}  // namespace

template <class T>
void maxpool(const Pool2dShape& s, size_t pixel_begin, size_t pixel_end, const T* input, T* output) {
  const __m512i lowest = _mm512_set1_epi8(static_cast<char>(QTraits<T>::min));
  const size_t in_stride = s.in_stride();
  TapList tap_list(s);
  if (pixel_begin >= pixel_end) return;
  PoolWindow w = pool_window(s, pixel_begin);
  for (size_t pixel = pixel_begin; pixel < pixel_end; ++pixel, next_pool_window(s, w)) {
    T* out = output + pixel * s.out_stride();
    const T* base = input;
    if (const size_t* offsets = tap_list.list(s, w, input, base)) {
      // Tap addresses once per pixel, then a tight load+max loop per 64-channel block.
      const size_t taps = w.valid_taps;
      for (size_t c = 0; c < s.channels; c += 64) {
        const __mmask64 mask = tail_mask64(s.channels - c);
        __m512i best = lowest;
        for (size_t t = 0; t < taps; ++t) best = max_bytes<T>(best, _mm512_maskz_loadu_epi8(mask, base + offsets[t] + c));
        _mm512_mask_storeu_epi8(out + c, mask, best);
      }
      continue;
    }
    for (size_t c = 0; c < s.channels; c += 64) {
      const __mmask64 mask = tail_mask64(s.channels - c);
      __m512i best = lowest;
      for (size_t kh = w.kh_begin; kh < w.kh_end; ++kh) {
        const size_t ih = w.oh * s.stride_height + kh * s.dilation_height - s.pad_top;
        const T* row = input + ((w.image * s.input_height + ih) * s.input_width) * in_stride + c;
        for (size_t kw = w.kw_begin; kw < w.kw_end; ++kw) {
          const size_t iw = w.ow * s.stride_width + kw * s.dilation_width - s.pad_left;
          best = max_bytes<T>(best, _mm512_maskz_loadu_epi8(mask, row + iw * in_stride));
        }
      }
      _mm512_mask_storeu_epi8(out + c, mask, best);
    }
  }
}

template <class T>
void avgpool(const Pool2dShape& s, const AvgPoolParams& p, size_t pixel_begin, size_t pixel_end, const T* input,
             T* output) {
  const Epilogue epilogue(p);
  const size_t in_stride = s.in_stride();
  TapList tap_list(s);
  if (pixel_begin >= pixel_end) return;
  PoolWindow w = pool_window(s, pixel_begin);
  for (size_t pixel = pixel_begin; pixel < pixel_end; ++pixel, next_pool_window(s, w)) {
    const size_t divisor = std::max<size_t>(1, p.count_include_pad ? w.padded_taps : w.valid_taps);
    const __m512 multiplier = _mm512_set1_ps(p.multiplier / static_cast<float>(divisor));
    const __m512i bias = _mm512_set1_epi32(p.input_zero_point * static_cast<int32_t>(w.valid_taps));
    T* out = output + pixel * s.out_stride();
    const T* base = input;
    const size_t* offsets = tap_list.list(s, w, input, base);
    const bool listed = offsets != nullptr;
    const size_t taps = w.valid_taps;
    // 64 channels (4 int32 sum vectors) per pass over the window taps.
    for (size_t c = 0; c < s.channels; c += 64) {
      const size_t block = std::min<size_t>(64, s.channels - c);
      __mmask16 masks[4];
      for (size_t q = 0; q < 4; ++q) {
        const size_t lanes = block > q * 16 ? std::min<size_t>(16, block - q * 16) : 0;
        masks[q] = lanes == 16 ? __mmask16(0xffff) : tail_mask16(lanes);
      }
      __m512i sum[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                        _mm512_setzero_si512()};
      if (listed) {
        for (size_t t = 0; t < taps; ++t) {
          const T* tap = base + offsets[t] + c;
          for (size_t q = 0; q < 4; ++q) sum[q] = _mm512_add_epi32(sum[q], maskz_load16_epi32(masks[q], tap + 16 * q));
        }
      } else {
        for (size_t kh = w.kh_begin; kh < w.kh_end; ++kh) {
          const size_t ih = w.oh * s.stride_height + kh * s.dilation_height - s.pad_top;
          const T* row = input + ((w.image * s.input_height + ih) * s.input_width) * in_stride + c;
          for (size_t kw = w.kw_begin; kw < w.kw_end; ++kw) {
            const T* tap = row + (w.ow * s.stride_width + kw * s.dilation_width - s.pad_left) * in_stride;
            for (size_t q = 0; q < 4; ++q) {
              sum[q] = _mm512_add_epi32(sum[q], maskz_load16_epi32(masks[q], tap + 16 * q));
            }
          }
        }
      }
      for (size_t q = 0; q < 4 && q * 16 < block; ++q) {
        mask_store16(out + c + 16 * q, masks[q], epilogue.apply(sum[q], bias, multiplier));
      }
    }
  }
}

template <class T>
void global_avgpool(size_t pixels, size_t channels, size_t input_pixel_stride, const T* input, T* output,
                    const AvgPoolParams& p) {
  const size_t stride = input_pixel_stride ? input_pixel_stride : channels;
  const Epilogue epilogue(p);
  const __m512 multiplier = _mm512_set1_ps(p.multiplier / static_cast<float>(std::max<size_t>(1, pixels)));
  const __m512i bias = _mm512_set1_epi32(p.input_zero_point * static_cast<int32_t>(pixels));
  // 64 channels (4 int32 vectors) per pass over the pixels.
  for (size_t c = 0; c < channels; c += 64) {
    const size_t block = std::min<size_t>(64, channels - c);
    __mmask16 masks[4];
    for (size_t q = 0; q < 4; ++q) {
      const size_t lanes = block > q * 16 ? std::min<size_t>(16, block - q * 16) : 0;
      masks[q] = lanes == 16 ? __mmask16(0xffff) : tail_mask16(lanes);
    }
    __m512i sum[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                      _mm512_setzero_si512()};
    const T* column = input + c;
    if (block == 64) {
      for (size_t i = 0; i < pixels; ++i, column += stride) {
        for (size_t q = 0; q < 4; ++q) sum[q] = _mm512_add_epi32(sum[q], load16_epi32(column + 16 * q));
      }
    } else {
      for (size_t i = 0; i < pixels; ++i, column += stride) {
        for (size_t q = 0; q < 4; ++q) {
          sum[q] = _mm512_add_epi32(sum[q], maskz_load16_epi32(masks[q], column + 16 * q));
        }
      }
    }
    for (size_t q = 0; q < 4 && q * 16 < block; ++q) {
      mask_store16(output + c + 16 * q, masks[q], epilogue.apply(sum[q], bias, multiplier));
    }
  }
}

#define QDQRT_INSTANTIATE(T)                                                                                    \
  template void maxpool<T>(const Pool2dShape&, size_t, size_t, const T*, T*);                                   \
  template void avgpool<T>(const Pool2dShape&, const AvgPoolParams&, size_t, size_t, const T*, T*);             \
  template void global_avgpool<T>(size_t, size_t, size_t, const T*, T*, const AvgPoolParams&);
QDQRT_INSTANTIATE(int8_t)
QDQRT_INSTANTIATE(uint8_t)
#undef QDQRT_INSTANTIATE

}  // namespace qdqrt::kernels::avx512skx
