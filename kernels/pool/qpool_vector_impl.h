// NHWC pools written once over a vector-traits struct V (simd_avx2.h, simd_avx512.h): max pool on
// byte vectors of V::kBytes channels, average pools on int32 sums of 4 * V::kLanes channels per
// pass over the taps; the channel tail is one partial block through the same instructions.
// Each per-ISA file defines QDQRT_VECTORS (the traits) and QDQRT_VECTOR_NAMESPACE (where the
// kernels go), then includes this file; everything but the exported kernels has internal linkage.
#if !defined(QDQRT_VECTORS) || !defined(QDQRT_VECTOR_NAMESPACE)
#error "define QDQRT_VECTORS and QDQRT_VECTOR_NAMESPACE before including qpool_vector_impl.h"
#endif

#include <algorithm>

#include "kernels/pool/qpool.h"

namespace qdqrt::kernels {
namespace {
namespace pool_vector {

// float(sum - bias) * multiplier, requantized.
template <class V>
struct Epilogue {
  typename V::Floats lo, hi;
  typename V::Ints output_zero_point;
  explicit Epilogue(const AvgPoolParams& p)
      : lo(V::splat(p.output_min)), hi(V::splat(p.output_max)), output_zero_point(V::splat_int(p.output_zero_point)) {}
  typename V::Ints apply(typename V::Ints sum, typename V::Ints bias, typename V::Floats multiplier) const {
    const typename V::Floats value = V::mul(V::to_float(V::sub(sum, bias)), multiplier);
    return V::requantize(value, lo, hi, output_zero_point);
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

// One pass over the taps for a block of channels: kFull full vectors of int32 sums and, with
// kPartial, one partial vector of `tail` lanes after them; then the block is requantized and
// stored. for_each_input(add) calls add(pointer to the block's first channel) once per tap.
template <class V, size_t kFull, bool kPartial, class T, class ForEachInput>
inline void sum_block(ForEachInput for_each_input, size_t tail, T* out, const Epilogue<V>& epilogue,
                      typename V::Ints bias, typename V::Floats multiplier) {
  constexpr size_t kLanes = V::kLanes;
  typename V::Ints sum[kFull + (kPartial ? 1 : 0)];
  for (auto& value : sum) value = V::zero_ints();
  for_each_input([&](const T* in) {
#pragma GCC unroll 4
    for (size_t q = 0; q < kFull; ++q) sum[q] = V::add(sum[q], V::load_widen(in + q * kLanes));
    if constexpr (kPartial) sum[kFull] = V::add(sum[kFull], V::load_widen_partial(in + kFull * kLanes, tail));
  });
#pragma GCC unroll 4
  for (size_t q = 0; q < kFull; ++q) V::store_narrow(out + q * kLanes, epilogue.apply(sum[q], bias, multiplier));
  if constexpr (kPartial) {
    V::store_narrow_partial(out + kFull * kLanes, epilogue.apply(sum[kFull], bias, multiplier), tail);
  }
}

// Average-pool sums over `channels` channels: blocks of 4 * kLanes channels per pass over the
// taps, then one pass for the rest (up to 3 full vectors and a partial one).
template <class V, class T, class ForEachInput>
inline void sum_channels(size_t channels, ForEachInput for_each_input, T* out, const Epilogue<V>& epilogue,
                         typename V::Ints bias, typename V::Floats multiplier) {
  constexpr size_t kLanes = V::kLanes;
  size_t c = 0;
  for (; c + 4 * kLanes <= channels; c += 4 * kLanes) {
    const auto block_input = [&](auto add) { for_each_input([&](const T* in) { add(in + c); }); };
    sum_block<V, 4, false, T>(block_input, 0, out + c, epilogue, bias, multiplier);
  }
  if (c == channels) return;
  const auto rest_input = [&](auto add) { for_each_input([&](const T* in) { add(in + c); }); };
  const size_t full = (channels - c) / kLanes, tail = (channels - c) % kLanes;
  T* rest = out + c;
  switch (full * 2 + (tail ? 1 : 0)) {
    case 1: return sum_block<V, 0, true, T>(rest_input, tail, rest, epilogue, bias, multiplier);
    case 2: return sum_block<V, 1, false, T>(rest_input, tail, rest, epilogue, bias, multiplier);
    case 3: return sum_block<V, 1, true, T>(rest_input, tail, rest, epilogue, bias, multiplier);
    case 4: return sum_block<V, 2, false, T>(rest_input, tail, rest, epilogue, bias, multiplier);
    case 5: return sum_block<V, 2, true, T>(rest_input, tail, rest, epilogue, bias, multiplier);
    case 6: return sum_block<V, 3, false, T>(rest_input, tail, rest, epilogue, bias, multiplier);
    case 7: return sum_block<V, 3, true, T>(rest_input, tail, rest, epilogue, bias, multiplier);
  }
}

// Max pool over `count` consecutive output pixels of one row whose windows are whole (no padding):
// the tap offsets are the same from each window's origin, which moves by `step` elements.
template <class V, class T, size_t kTaps>
inline void maxpool_full_run(const size_t* offsets, size_t taps, const T* base, size_t step, size_t count,
                             size_t channels, T* out, size_t out_stride) {
  const size_t tap_count = kTaps != 0 ? kTaps : taps;
  size_t o[kTaps != 0 ? kTaps : 1];
  if constexpr (kTaps != 0) {
    for (size_t t = 0; t < kTaps; ++t) o[t] = offsets[t];
  }
  const auto tap_offset = [&](size_t t) { return kTaps != 0 ? o[t] : offsets[t]; };
  size_t c = 0;
  for (; c + V::kBytes <= channels; c += V::kBytes) {
    const T* in = base + c;
    T* dst = out + c;
    for (size_t i = 0; i < count; ++i, in += step, dst += out_stride) {
      typename V::Bytes best = V::load_bytes(in + tap_offset(0));
#pragma GCC unroll 16
      for (size_t t = 1; t < tap_count; ++t) best = V::template max_bytes<T>(best, V::load_bytes(in + tap_offset(t)));
      V::store_bytes(dst, best);
    }
  }
  if (c < channels) {
    const size_t tail = channels - c;
    const T* in = base + c;
    T* dst = out + c;
    for (size_t i = 0; i < count; ++i, in += step, dst += out_stride) {
      typename V::Bytes best = V::load_bytes_partial(in + tap_offset(0), tail);
      for (size_t t = 1; t < tap_count; ++t) {
        best = V::template max_bytes<T>(best, V::load_bytes_partial(in + tap_offset(t), tail));
      }
      V::store_bytes_partial(dst, best, tail);
    }
  }
}

template <class V, class T>
void maxpool(const Pool2dShape& s, size_t pixel_begin, size_t pixel_end, const T* input, T* output) {
  const typename V::Bytes lowest = V::splat_bytes(static_cast<int8_t>(QTraits<T>::min));
  TapList tap_list(s);
  if (pixel_begin >= pixel_end) return;
  // Output columns [0, full_end) have windows whose last column is inside the input.
  const int64_t last_tap = static_cast<int64_t>((s.kernel_width - 1) * s.dilation_width);
  const int64_t reach = static_cast<int64_t>(s.input_width + s.pad_left) - 1 - last_tap;
  const size_t full_end = reach < 0 ? 0 : std::min(s.output_width, static_cast<size_t>(reach) / s.stride_width + 1);
  PoolWindow w = pool_window(s, pixel_begin);
  for (size_t pixel = pixel_begin; pixel < pixel_end; ++pixel, next_pool_window(s, w)) {
    T* out = output + pixel * s.out_stride();
    const T* base = input;
    const size_t* listed = tap_list.list(s, w, input, base);
    if (listed == tap_list.full_offsets && w.ow + 1 < full_end && pixel + 1 < pixel_end) {
      // A whole window: so are the next ones of this row up to full_end (their first column only
      // moves right), walked without the per-pixel window bookkeeping.
      const size_t count = std::min(full_end - w.ow, pixel_end - pixel);
      const size_t step = s.stride_width * s.in_stride();
      const size_t taps = w.valid_taps;
      if (taps == 9) {
        maxpool_full_run<V, T, 9>(listed, taps, base, step, count, s.channels, out, s.out_stride());
      } else {
        maxpool_full_run<V, T, 0>(listed, taps, base, step, count, s.channels, out, s.out_stride());
      }
      // The loop's next_pool_window moves past the run's last pixel.
      pixel += count - 1;
      w.ow += count - 1;
      continue;
    }
    // Max over the taps, one channel block at a time (load_block(tap) loads the block's bytes).
    const auto max_over_taps = [&](auto load_block) {
      typename V::Bytes best = lowest;
      if (listed) {  // tap addresses listed once per pixel: a tight load+max loop
        const size_t taps = w.valid_taps;
        for (size_t t = 0; t < taps; ++t) best = V::template max_bytes<T>(best, load_block(base + listed[t]));
      } else {
        for_each_tap(s, w, input, nullptr, base,
                     [&](const T* tap) { best = V::template max_bytes<T>(best, load_block(tap)); });
      }
      return best;
    };
    size_t c = 0;
    for (; c + V::kBytes <= s.channels; c += V::kBytes) {
      V::store_bytes(out + c, max_over_taps([c](const T* tap) { return V::load_bytes(tap + c); }));
    }
    if (c < s.channels) {
      const size_t count = s.channels - c;
      V::store_bytes_partial(
          out + c, max_over_taps([c, count](const T* tap) { return V::load_bytes_partial(tap + c, count); }), count);
    }
  }
}

template <class V, class T>
void avgpool(const Pool2dShape& s, const AvgPoolParams& p, size_t pixel_begin, size_t pixel_end, const T* input,
             T* output) {
  const Epilogue<V> epilogue(p);
  TapList tap_list(s);
  if (pixel_begin >= pixel_end) return;
  PoolWindow w = pool_window(s, pixel_begin);
  for (size_t pixel = pixel_begin; pixel < pixel_end; ++pixel, next_pool_window(s, w)) {
    const size_t divisor = std::max<size_t>(1, p.count_include_pad ? w.padded_taps : w.valid_taps);
    const typename V::Floats multiplier = V::splat(p.multiplier / static_cast<float>(divisor));
    const typename V::Ints bias = V::splat_int(p.input_zero_point * static_cast<int32_t>(w.valid_taps));
    T* out = output + pixel * s.out_stride();
    const T* base = input;
    const size_t* listed = tap_list.list(s, w, input, base);
    sum_channels<V>(
        s.channels, [&](auto add) { for_each_tap(s, w, input, listed, base, add); }, out, epilogue, bias, multiplier);
  }
}

template <class V, class T>
void global_avgpool(size_t pixels, size_t channels, size_t input_pixel_stride, const T* input, T* output,
                    const AvgPoolParams& p) {
  const size_t stride = input_pixel_stride ? input_pixel_stride : channels;
  const Epilogue<V> epilogue(p);
  const typename V::Floats multiplier = V::splat(p.multiplier / static_cast<float>(std::max<size_t>(1, pixels)));
  const typename V::Ints bias = V::splat_int(p.input_zero_point * static_cast<int32_t>(pixels));
  const auto for_each_pixel = [&](auto add) {
    const T* pixel = input;
    for (size_t i = 0; i < pixels; ++i, pixel += stride) add(pixel);
  };
  sum_channels<V>(channels, for_each_pixel, output, epilogue, bias, multiplier);
}

}  // namespace pool_vector
}  // namespace

namespace QDQRT_VECTOR_NAMESPACE {

template <class T>
void maxpool(const Pool2dShape& shape, size_t pixel_begin, size_t pixel_end, const T* input, T* output) {
  pool_vector::maxpool<QDQRT_VECTORS>(shape, pixel_begin, pixel_end, input, output);
}
template <class T>
void avgpool(const Pool2dShape& shape, const AvgPoolParams& params, size_t pixel_begin, size_t pixel_end,
             const T* input, T* output) {
  pool_vector::avgpool<QDQRT_VECTORS>(shape, params, pixel_begin, pixel_end, input, output);
}
template <class T>
void global_avgpool(size_t pixels, size_t channels, size_t input_pixel_stride, const T* input, T* output,
                    const AvgPoolParams& params) {
  pool_vector::global_avgpool<QDQRT_VECTORS>(pixels, channels, input_pixel_stride, input, output, params);
}

QDQRT_INSTANTIATE_QPOOL_KERNELS(int8_t)
QDQRT_INSTANTIATE_QPOOL_KERNELS(uint8_t)

}  // namespace QDQRT_VECTOR_NAMESPACE
}  // namespace qdqrt::kernels
