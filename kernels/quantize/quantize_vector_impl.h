// Quantize / dequantize / requantize written once over a vector-traits struct V (simd_avx2.h,
// simd_avx512.h): V::kLanes lanes per step (4 vectors per step in the long loops), the tail as one
// partial vector through the same instructions. Each per-ISA file defines QDQRT_VECTORS (the
// traits) and QDQRT_VECTOR_NAMESPACE (where the kernels go), then includes this file; everything
// but the exported kernels has internal linkage.
#if !defined(QDQRT_VECTORS) || !defined(QDQRT_VECTOR_NAMESPACE)
#error "define QDQRT_VECTORS and QDQRT_VECTOR_NAMESPACE before including quantize_vector_impl.h"
#endif

#include <algorithm>

#include "kernels/quantize/quantize.h"
#include "kernels/reorder/reorder.h"

namespace qdqrt::kernels {
namespace {
namespace quantize_vector {

// out = convert(in lanes) over 4 vectors per step, then single vectors, then one partial vector.
template <class V, class T, class In, class Load, class LoadPartial, class Convert>
inline void for_each_vector_to_bytes(size_t n, const In* input, T* output, Load load, LoadPartial load_partial,
                                     Convert convert) {
  constexpr size_t kLanes = V::kLanes;
  size_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    V::store_narrow4(output + i, convert(load(input + i)), convert(load(input + i + kLanes)),
                     convert(load(input + i + 2 * kLanes)), convert(load(input + i + 3 * kLanes)));
  }
  for (; i + kLanes <= n; i += kLanes) V::store_narrow(output + i, convert(load(input + i)));
  if (i < n) V::store_narrow_partial(output + i, convert(load_partial(input + i, n - i)), n - i);
}

template <class V, class T>
void quantize(size_t n, const float* input, T* output, float scale, int32_t zero_point) {
  const typename V::Floats vscale = V::splat(scale);
  const typename V::Floats lo = V::splat(static_cast<float>(QTraits<T>::min - zero_point));
  const typename V::Floats hi = V::splat(static_cast<float>(QTraits<T>::max - zero_point));
  const typename V::Ints vzero_point = V::splat_int(zero_point);
  for_each_vector_to_bytes<V>(
      n, input, output, [](const float* x) { return V::load(x); },
      [](const float* x, size_t count) { return V::load_partial(x, count); },
      [&](typename V::Floats x) { return V::requantize(V::div(x, vscale), lo, hi, vzero_point); });
}

template <class V, class T>
void requantize(size_t n, const T* input, T* output, const RequantizeParams& params) {
  const typename V::Ints input_zero_point = V::splat_int(params.input_zero_point);
  const typename V::Ints output_zero_point = V::splat_int(params.output_zero_point);
  const typename V::Floats multiplier = V::splat(params.multiplier);
  const typename V::Floats lo = V::splat(params.output_min);
  const typename V::Floats hi = V::splat(params.output_max);
  for_each_vector_to_bytes<V>(
      n, input, output, [](const T* q) { return V::load_widen(q); },
      [](const T* q, size_t count) { return V::load_widen_partial(q, count); },
      [&](typename V::Ints q) {
        const typename V::Floats v = V::mul(V::to_float(V::sub(q, input_zero_point)), multiplier);
        return V::requantize(v, lo, hi, output_zero_point);
      });
}

template <class V, class T>
void dequantize(size_t n, const T* input, float* output, float scale, int32_t zero_point) {
  const typename V::Floats vscale = V::splat(scale);
  const typename V::Ints vzero_point = V::splat_int(zero_point);
  auto convert = [&](typename V::Ints q) { return V::mul(V::to_float(V::sub(q, vzero_point)), vscale); };
  size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(output + i, convert(V::load_widen(input + i)));
  if (i < n) V::store_partial(output + i, convert(V::load_widen_partial(input + i, n - i)), n - i);
}

// Per channel, channels innermost: the channel tail is one partial vector whose parameters are
// loaded once (scale 1 in the unused lanes, so they divide 0 by 1).
template <class V, class T>
void quantize_channels(size_t rows, size_t channels, const float* input, T* output, const float* scales,
                       const int32_t* zero_points) {
  const typename V::Floats qmin = V::splat(static_cast<float>(QTraits<T>::min));
  const typename V::Floats qmax = V::splat(static_cast<float>(QTraits<T>::max));
  auto convert = [&](typename V::Floats x, typename V::Floats scale, typename V::Ints zero_point) {
    const typename V::Floats zero_point_f = V::to_float(zero_point);
    // qmin - zp and qmax - zp are exact: small integers.
    return V::requantize(V::div(x, scale), V::sub(qmin, zero_point_f), V::sub(qmax, zero_point_f), zero_point);
  };
  const size_t full = channels - channels % V::kLanes;
  const size_t tail = channels - full;
  const typename V::Floats tail_scale = V::load_partial(scales + full, tail, 1.0f);
  const typename V::Ints tail_zero_point = V::load_ints_partial(zero_points + full, tail);
  for (size_t r = 0; r < rows; ++r) {
    const float* row_in = input + r * channels;
    T* row_out = output + r * channels;
    for (size_t c = 0; c < full; c += V::kLanes) {
      V::store_narrow(row_out + c, convert(V::load(row_in + c), V::load(scales + c), V::load_ints(zero_points + c)));
    }
    if (tail) {
      V::store_narrow_partial(row_out + full,
                              convert(V::load_partial(row_in + full, tail), tail_scale, tail_zero_point), tail);
    }
  }
}

// Squeeze-excite's gate: rows x channels (channels innermost), each value times its channel's
// gate (one float product, as ONNX Mul), then quantize.
template <class V, class T>
void quantize_gated(size_t rows, size_t channels, const float* input, const float* gate, T* output, float scale,
                    int32_t zero_point) {
  const typename V::Floats vscale = V::splat(scale);
  const typename V::Floats lo = V::splat(static_cast<float>(QTraits<T>::min - zero_point));
  const typename V::Floats hi = V::splat(static_cast<float>(QTraits<T>::max - zero_point));
  const typename V::Ints vzero_point = V::splat_int(zero_point);
  for (size_t r = 0; r < rows; ++r) {
    const float* row_in = input + r * channels;
    for_each_vector_to_bytes<V>(
        channels, row_in, output + r * channels,
        [&](const float* x) { return V::mul(V::load(x), V::load(gate + (x - row_in))); },
        [&](const float* x, size_t count) {
          return V::mul(V::load_partial(x, count), V::load_partial(gate + (x - row_in), count));
        },
        [&](typename V::Floats x) { return V::requantize(V::div(x, vscale), lo, hi, vzero_point); });
  }
}

// Residual end: a + b, the Relu as vmaxps(v, 0) (clamp to [0, inf)), the float sum stored when
// asked for, then quantize's division and requantize.
template <class V, class T, bool kRelu, bool kStoreSum>
void add_quantize_loop(size_t n, const float* a, const float* b, float* sum, T* output, float scale,
                       int32_t zero_point) {
  const typename V::Floats vscale = V::splat(scale);
  const typename V::Floats lo = V::splat(static_cast<float>(QTraits<T>::min - zero_point));
  const typename V::Floats hi = V::splat(static_cast<float>(QTraits<T>::max - zero_point));
  const typename V::Ints vzero_point = V::splat_int(zero_point);
  const typename V::Floats zero = V::splat(0.0f);
  const typename V::Floats infinity = V::splat(__builtin_inff());
  auto value = [&](typename V::Floats x, typename V::Floats y) {
    typename V::Floats v = V::add(x, y);
    if constexpr (kRelu) v = V::clamp(v, zero, infinity);
    return v;
  };
  auto quantized = [&](typename V::Floats v) { return V::requantize(V::div(v, vscale), lo, hi, vzero_point); };
  size_t i = 0;
  for (; i + 2 * V::kLanes <= n; i += 2 * V::kLanes) {
    const typename V::Floats v0 = value(V::load(a + i), V::load(b + i));
    const typename V::Floats v1 = value(V::load(a + i + V::kLanes), V::load(b + i + V::kLanes));
    if constexpr (kStoreSum) {
      V::store(sum + i, v0);
      V::store(sum + i + V::kLanes, v1);
    }
    V::store_narrow(output + i, quantized(v0));
    V::store_narrow(output + i + V::kLanes, quantized(v1));
  }
  for (; i + V::kLanes <= n; i += V::kLanes) {
    const typename V::Floats v = value(V::load(a + i), V::load(b + i));
    if constexpr (kStoreSum) V::store(sum + i, v);
    V::store_narrow(output + i, quantized(v));
  }
  if (i < n) {
    const size_t count = n - i;
    const typename V::Floats v = value(V::load_partial(a + i, count), V::load_partial(b + i, count));
    if constexpr (kStoreSum) V::store_partial(sum + i, v, count);
    V::store_narrow_partial(output + i, quantized(v), count);
  }
}

template <class V, class T>
void add_quantize(size_t n, const float* a, const float* b, float* sum, T* output, float scale, int32_t zero_point,
                  bool relu) {
  if (relu) {
    if (sum != nullptr) return add_quantize_loop<V, T, true, true>(n, a, b, sum, output, scale, zero_point);
    return add_quantize_loop<V, T, true, false>(n, a, b, sum, output, scale, zero_point);
  }
  if (sum != nullptr) return add_quantize_loop<V, T, false, true>(n, a, b, sum, output, scale, zero_point);
  return add_quantize_loop<V, T, false, false>(n, a, b, sum, output, scale, zero_point);
}

template <class V, class T>
void dequantize_channels(size_t rows, size_t channels, const T* input, float* output, const float* scales,
                         const int32_t* zero_points) {
  auto convert = [](typename V::Ints q, typename V::Floats scale, typename V::Ints zero_point) {
    return V::mul(V::to_float(V::sub(q, zero_point)), scale);
  };
  const size_t full = channels - channels % V::kLanes;
  const size_t tail = channels - full;
  const typename V::Floats tail_scale = V::load_partial(scales + full, tail);
  const typename V::Ints tail_zero_point = V::load_ints_partial(zero_points + full, tail);
  for (size_t r = 0; r < rows; ++r) {
    const T* row_in = input + r * channels;
    float* row_out = output + r * channels;
    for (size_t c = 0; c < full; c += V::kLanes) {
      V::store(row_out + c, convert(V::load_widen(row_in + c), V::load(scales + c), V::load_ints(zero_points + c)));
    }
    if (tail) {
      V::store_partial(row_out + full, convert(V::load_widen_partial(row_in + full, tail), tail_scale, tail_zero_point),
                       tail);
    }
  }
}

// Quantizes `count` (<= kLanes) pixels of one plane: int32 lanes inside T's range.
template <class V, class T>
inline typename V::Ints quantize_plane(const float* plane, size_t count, float scale, int32_t zero_point) {
  const typename V::Floats zero_point_f = V::splat(static_cast<float>(zero_point));
  const typename V::Floats x = count == V::kLanes ? V::load(plane) : V::load_partial(plane, count);
  const typename V::Floats lo = V::sub(V::splat(static_cast<float>(QTraits<T>::min)), zero_point_f);
  const typename V::Floats hi = V::sub(V::splat(static_cast<float>(QTraits<T>::max)), zero_point_f);
  return V::requantize(V::div(x, V::splat(scale)), lo, hi, V::splat_int(zero_point));
}

// quantize_nchw_to_nhwc's tiled path: from this many channels the byte transpose has whole 16x16
// tiles to work on; kTile x kTile bytes of stack.
constexpr size_t kTransposeMinChannels = 16;
constexpr size_t kTile = 64;

template <class V, class T>
void quantize_nchw_to_nhwc(size_t channels, size_t pixels, size_t pixel_begin, size_t pixel_end, const float* input,
                           T* output, const float* scales, const int32_t* zero_points) {
  constexpr size_t kLanes = V::kLanes;
  if (channels == 3) {
    // RGB model input: three planes of kLanes pixels interleaved in registers.
    for (size_t p = pixel_begin; p < pixel_end; p += kLanes) {
      const size_t count = std::min(kLanes, pixel_end - p);
      const typename V::Ints q0 = quantize_plane<V, T>(input + p, count, scales[0], zero_points[0]);
      const typename V::Ints q1 = quantize_plane<V, T>(input + pixels + p, count, scales[1], zero_points[1]);
      const typename V::Ints q2 = quantize_plane<V, T>(input + 2 * pixels + p, count, scales[2], zero_points[2]);
      V::store_interleaved3(output + 3 * p, q0, q1, q2, count);
    }
    return;
  }
  if (channels >= kTransposeMinChannels) {
    // Blocks of up to kTile channels x kTile pixels: quantized plane by plane into a tile with whole
    // vector stores, then the tile transposed into the NHWC rows (16x16 byte transposes). The same
    // quantize_plane per element as below: only the order of the stores differs.
    alignas(64) T tile[kTile * kTile];
    for (size_t p = pixel_begin; p < pixel_end; p += kTile) {
      const size_t block = std::min(kTile, pixel_end - p);
      for (size_t c0 = 0; c0 < channels; c0 += kTile) {
        const size_t block_channels = std::min(kTile, channels - c0);
        for (size_t c = 0; c < block_channels; ++c) {
          const float* plane = input + (c0 + c) * pixels + p;
          for (size_t i = 0; i < block; i += kLanes) {  // kLanes divides kTile: a tail lands inside the row
            V::store_narrow(tile + c * kTile + i, quantize_plane<V, T>(plane + i, std::min(kLanes, block - i),
                                                                       scales[c0 + c], zero_points[c0 + c]));
          }
        }
        avx2::transpose8(block_channels, block, reinterpret_cast<const uint8_t*>(tile), kTile,
                         reinterpret_cast<uint8_t*>(output + p * channels + c0), channels);
      }
    }
    return;
  }
  // Few channels: kLanes pixels per plane into a small tile, then scattered to NHWC.
  alignas(16) T tile[kLanes];
  for (size_t p = pixel_begin; p < pixel_end; p += kLanes) {
    const size_t count = std::min(kLanes, pixel_end - p);
    for (size_t c = 0; c < channels; ++c) {
      V::store_narrow(tile, quantize_plane<V, T>(input + c * pixels + p, count, scales[c], zero_points[c]));
      for (size_t i = 0; i < count; ++i) output[(p + i) * channels + c] = tile[i];
    }
  }
}

}  // namespace quantize_vector
}  // namespace

namespace QDQRT_VECTOR_NAMESPACE {

template <class T>
void quantize(size_t n, const float* input, T* output, float scale, int32_t zero_point) {
  quantize_vector::quantize<QDQRT_VECTORS>(n, input, output, scale, zero_point);
}
template <class T>
void dequantize(size_t n, const T* input, float* output, float scale, int32_t zero_point) {
  quantize_vector::dequantize<QDQRT_VECTORS>(n, input, output, scale, zero_point);
}
template <class T>
void quantize_channels(size_t rows, size_t channels, const float* input, T* output, const float* scales,
                       const int32_t* zero_points) {
  quantize_vector::quantize_channels<QDQRT_VECTORS>(rows, channels, input, output, scales, zero_points);
}
template <class T>
void quantize_gated(size_t rows, size_t channels, const float* input, const float* gate, T* output, float scale,
                    int32_t zero_point) {
  quantize_vector::quantize_gated<QDQRT_VECTORS>(rows, channels, input, gate, output, scale, zero_point);
}
template <class T>
void add_quantize(size_t n, const float* a, const float* b, float* sum, T* output, float scale, int32_t zero_point,
                  bool relu) {
  quantize_vector::add_quantize<QDQRT_VECTORS, T>(n, a, b, sum, output, scale, zero_point, relu);
}
template <class T>
void dequantize_channels(size_t rows, size_t channels, const T* input, float* output, const float* scales,
                         const int32_t* zero_points) {
  quantize_vector::dequantize_channels<QDQRT_VECTORS>(rows, channels, input, output, scales, zero_points);
}
template <class T>
void requantize(size_t n, const T* input, T* output, const RequantizeParams& params) {
  quantize_vector::requantize<QDQRT_VECTORS>(n, input, output, params);
}
template <class T>
void quantize_nchw_to_nhwc(size_t channels, size_t pixels, size_t pixel_begin, size_t pixel_end, const float* input,
                           T* output, const float* scales, const int32_t* zero_points) {
  quantize_vector::quantize_nchw_to_nhwc<QDQRT_VECTORS>(channels, pixels, pixel_begin, pixel_end, input, output, scales,
                                                        zero_points);
}

QDQRT_INSTANTIATE_QUANTIZE_KERNELS(int8_t)
QDQRT_INSTANTIATE_QUANTIZE_KERNELS(uint8_t)

}  // namespace QDQRT_VECTOR_NAMESPACE
}  // namespace qdqrt::kernels
