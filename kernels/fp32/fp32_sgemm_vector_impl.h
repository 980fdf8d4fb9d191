// The fp32 igemm microkernel (kernels/fp32/fp32_sgemm.h), written once over the vector operations
// of fp32_sgemm_vector_ops.h and compiled per ISA: fp32_sgemm_avx512skx.cpp (14 x 32: 2 zmm per row) and
// fp32_sgemm_avx2.cpp (6 x 16: 2 ymm per row) define QDQRT_SGEMM_AVX512 or QDQRT_SGEMM_AVX2 and
// QDQRT_SGEMM_NAMESPACE, then include this file.
#include <type_traits>

#include "kernels/fp32/fp32_sgemm_prefetch.h"
#include "kernels/fp32/fp32_sgemm_vector_ops.h"

namespace qdqrt::kernels::QDQRT_SGEMM_NAMESPACE {
namespace {

// The accumulators at the start of a k block: the bias on the first block, else the partial sums
// in C; on the last block the epilogue's residual and output lines are fetched while the k loop
// runs (with a short k, the 1x1 expansions of 64 or 128 channels, the epilogue otherwise waits on
// them from L3).
template <int kRows, int kVectors>
[[gnu::always_inline]] inline void start_tile(V (&acc)[kRows][kVectors], const internal::SgemmUkernelArgs& args) {
  if (args.first) {
    for (int v = 0; v < kVectors; ++v) {
      const V bias = load(args.bias + v * kLanes);
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) acc[r][v] = bias;
    }
  } else {
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
      for (int v = 0; v < kVectors; ++v) {
        acc[r][v] = load_part(args.c + r * args.c_row_stride + v * kLanes, std::min(kLanes, args.nc - v * kLanes));
      }
    }
  }
  if (args.last && !args.prefetched) {
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
      for (int v = 0; v < kVectors; ++v) {
        if (args.residual) {
          _mm_prefetch(reinterpret_cast<const char*>(args.residual + r * args.residual_row_stride + v * kLanes),
                       _MM_HINT_T0);
        }
        _mm_prefetch(reinterpret_cast<const char*>(args.c + r * args.c_row_stride + v * kLanes), _MM_HINT_ET0);
      }
    }
  }
}

// Rows kRows (<= kMr) x kVectors (1 or 2) vectors of one panel, A through the row pointers. kPrefetch:
// one line of `prefetch` per k step from the first (lines past k after the loop); a separate
// instance, so the plain kernel's code stays as it was.
template <int kRows, int kVectors, bool kPrefetch>
void tile(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch) {
  V acc[kRows][kVectors];
  start_tile(acc, args);
  const int channels = args.channels;
  const char* prefetch_line = reinterpret_cast<const char*>(prefetch.begin);
  int64_t prefetch_lines = kPrefetch ? prefetch.lines : 0;
  for (int tap = 0; tap < args.taps; ++tap) {
    const float* w = args.w + tap * args.w_tap_stride;
    const float* const* rows = args.a + tap * kMr;
    const float* a[kRows];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) a[r] = rows[r] + args.channel_begin;
    auto step = [&](int c) __attribute__((always_inline)) {
      V b[kVectors];
#pragma GCC unroll 2
      for (int v = 0; v < kVectors; ++v) b[v] = load(w + v * kLanes);
      w += kNr;
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        const V x = broadcast(a[r] + c);
#pragma GCC unroll 2
        for (int v = 0; v < kVectors; ++v) acc[r][v] = fmadd(x, b[v], acc[r][v]);
      }
    };
    int c = 0;
    if (tap == 0 && args.next_c) {
      // The next call's lines, one row vector of C and of the residual per k step (its own loop,
      // so the common loop below carries no test).
      for (const int head = std::min(channels, kRows * kVectors); c < head; ++c) {
        const int r = c / kVectors, v = c % kVectors;
        _mm_prefetch(reinterpret_cast<const char*>(args.next_c + r * args.c_row_stride + v * kLanes), _MM_HINT_ET0);
        if (args.next_residual) {
          _mm_prefetch(reinterpret_cast<const char*>(args.next_residual + r * args.residual_row_stride + v * kLanes),
                       _MM_HINT_T0);
        }
        step(c);
      }
    }
    if (kPrefetch && prefetch_lines > 0) {
      // One line per k step, the plain loop's body otherwise (one more pointer live).
      const int end = static_cast<int>(std::min<int64_t>(channels, c + prefetch_lines));
      prefetch_lines -= end - c;
      for (; c < end; ++c) {
        _mm_prefetch(prefetch_line, _MM_HINT_T1);
        prefetch_line += 64;
        step(c);
      }
    }
    for (; c < channels; ++c) step(c);
  }
  if constexpr (kPrefetch) {
    for (; prefetch_lines > 0; --prefetch_lines, prefetch_line += 64) _mm_prefetch(prefetch_line, _MM_HINT_T1);
  }
  store_tile(acc, args, args.last);
}

// Calls f(std::integral_constant<int, rows>) for a tile of `mr` rows (1..kMr): the tiles take
// their row count as a template argument.
template <typename F>
[[gnu::always_inline]] inline void with_rows(int mr, F&& f) {
  switch (mr) {
#if defined(QDQRT_SGEMM_AVX512)
    case 14: return f(std::integral_constant<int, 14>{});
    case 13: return f(std::integral_constant<int, 13>{});
    case 12: return f(std::integral_constant<int, 12>{});
    case 11: return f(std::integral_constant<int, 11>{});
    case 10: return f(std::integral_constant<int, 10>{});
    case 9: return f(std::integral_constant<int, 9>{});
    case 8: return f(std::integral_constant<int, 8>{});
    case 7: return f(std::integral_constant<int, 7>{});
#endif
    case 6: return f(std::integral_constant<int, 6>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 2: return f(std::integral_constant<int, 2>{});
    default: return f(std::integral_constant<int, 1>{});
  }
}

template <int kVectors, bool kPrefetch>
void tile_rows(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch) {
  with_rows(args.mr, [&](auto rows) { tile<decltype(rows)::value, kVectors, kPrefetch>(args, prefetch); });
}

// Rows kRows x kVectors vectors of one panel over one block of k, A packed by
// internal::pack_sgemm_a at args.a[0]: the broadcasts of a k step read one pointer at constant
// offsets. The weight lines of `prefetch` are spread over the k loop, a few per block of
// kSgemmPackChannels steps. Sums in k order, as tile().
template <int kRows, int kVectors>
void packed_a_tile(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch) {
  constexpr int kBlock = internal::kSgemmPackChannels;
  V acc[kRows][kVectors];
  start_tile(acc, args);
  const float* w = args.w;
  const float* a = args.a[0];
  auto step = [&](const float* x_row0) __attribute__((always_inline)) {
    V b[kVectors];
#pragma GCC unroll 2
    for (int v = 0; v < kVectors; ++v) b[v] = load(w + v * kLanes);
    w += kNr;
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const V x = broadcast(x_row0 + r * kBlock);
#pragma GCC unroll 2
      for (int v = 0; v < kVectors; ++v) acc[r][v] = fmadd(x, b[v], acc[r][v]);
    }
  };
  const char* prefetch_line = reinterpret_cast<const char*>(prefetch.begin);
  int64_t prefetch_lines = prefetch.lines;
  const int blocks = args.channels / kBlock;
  const int64_t lines_per_block = blocks > 0 ? (prefetch_lines + blocks - 1) / blocks : 0;
  for (int block = 0; block < blocks; ++block, a += kMr * kBlock) {
    for (int64_t i = 0; i < lines_per_block && prefetch_lines > 0; ++i, --prefetch_lines, prefetch_line += 64) {
      _mm_prefetch(prefetch_line, _MM_HINT_T1);
    }
    // One k step per iteration: unrolled, the compiler ran out of registers for the accumulators.
#pragma GCC unroll 1
    for (int c = 0; c < kBlock; ++c) step(a + c);
  }
#pragma GCC unroll 1
  for (int c = 0; c < args.channels % kBlock; ++c) step(a + c);
  for (; prefetch_lines > 0; --prefetch_lines, prefetch_line += 64) _mm_prefetch(prefetch_line, _MM_HINT_T1);
  store_tile(acc, args, args.last);
}

template <int kVectors>
void packed_a_rows(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch) {
  with_rows(args.mr, [&](auto rows) { packed_a_tile<decltype(rows)::value, kVectors>(args, prefetch); });
}

// A direct NCHW tile (internal::DirectNchwArgs): kRows pixels x both vectors of the panel (the
// padded bias and weights cover them; the store writes nc columns), pixel r's input at r * stride
// from the step's address (kStride 0: args.stride), so the broadcasts take immediate offsets.
template <int kRows, int kStride>
void direct_tile(const internal::DirectNchwArgs& args) {
  V acc[kRows][2];
  const V bias0 = load(args.bias), bias1 = load(args.bias + kLanes);
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) acc[r][0] = bias0, acc[r][1] = bias1;
  const int stride = kStride > 0 ? kStride : args.stride;
  const float* w = args.w;
  for (int k = 0; k < args.k; ++k, w += kNr) {
    const float* a = args.origin + args.offsets[k];
    const V b0 = load(w), b1 = load(w + kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const V x = broadcast(a + r * stride);
      acc[r][0] = fmadd(x, b0, acc[r][0]);
      acc[r][1] = fmadd(x, b1, acc[r][1]);
    }
  }
  store_tile(acc, args, true);
}

template <int kStride>
void direct_rows(const internal::DirectNchwArgs& args) {
  with_rows(args.mr, [&](auto rows) { direct_tile<decltype(rows)::value, kStride>(args); });
}

}  // namespace

void direct_nchw_ukernel(const internal::DirectNchwArgs& args) {
  switch (args.stride) {
    case 1: return direct_rows<1>(args);
    case 2: return direct_rows<2>(args);
    default: return direct_rows<0>(args);
  }
}

void depthwise_ukernel(const internal::DepthwiseUkernelArgs& args) {
  const V low = splat(args.min), high = splat(args.max);
  constexpr int kBlock = 4;  // vectors per pass: 4 accumulators hide the FMA latency
  int c = 0;
  for (; c + kBlock * kLanes <= args.channels; c += kBlock * kLanes) {
    V acc[kBlock];
    for (int v = 0; v < kBlock; ++v) acc[v] = load(args.bias + c + v * kLanes);
    for (int tap = 0; tap < args.taps; ++tap) {
      const float* a = args.a[tap] + c;
      const float* w = args.w + static_cast<int64_t>(tap) * args.channels_padded + c;
#pragma GCC unroll 4
      for (int v = 0; v < kBlock; ++v) acc[v] = fmadd(load_part(a + v * kLanes, kLanes), load(w + v * kLanes), acc[v]);
    }
    for (int v = 0; v < kBlock; ++v) {
      V value = acc[v];
      if (args.residual) value = add(value, load_part(args.residual + c + v * kLanes, kLanes));
      store_part(args.c + c + v * kLanes, activate(args.activation, vmin(high, vmax(low, value))), kLanes);
    }
  }
  for (; c < args.channels; c += kLanes) {
    const int count = std::min(kLanes, args.channels - c);
    V acc = load(args.bias + c);
    for (int tap = 0; tap < args.taps; ++tap) {
      acc = fmadd(load_part(args.a[tap] + c, count), load(args.w + static_cast<int64_t>(tap) * args.channels_padded + c),
                  acc);
    }
    if (args.residual) acc = add(acc, load_part(args.residual + c, count));
    store_part(args.c + c, activate(args.activation, vmin(high, vmax(low, acc))), count);
  }
}

// Output pixel `pixel`'s channels [c, c + count): residual, clamp to [low, high], activation.
inline void store_pixel(const internal::DepthwisePixelStore& store, V value, V low, V high, int pixel, int c,
                        int count) {
  if (store.residual) value = add(value, load_part(store.residual + pixel * store.residual_step + c, count));
  store_part(store.c + pixel * store.c_step + c, activate(store.activation, vmin(high, vmax(low, value))), count);
}

// Pixels [first, first + kPixels)'s channels [c, c + count): store_pixel each, with the residual,
// activation and lane-count tests made once for all of them when there is no activation (they
// were made per pixel: ~15 instructions each, as many as a kernel row's multiply-adds).
template <int kPixels>
[[gnu::always_inline]] inline void store_pixels(const internal::DepthwisePixelStore& store, const V (&acc)[kPixels],
                                                V low, V high, int first, int c, int count) {
  if (store.activation != Fp32EpilogueActivation::kNone) {
#pragma GCC unroll 8
    for (int p = 0; p < kPixels; ++p) store_pixel(store, acc[p], low, high, first + p, c, count);
    return;
  }
  const PartMask mask = part_mask(count);
  auto pixels = [&](auto with_residual, auto whole) __attribute__((always_inline)) {
    constexpr bool kResidual = decltype(with_residual)::value;
#pragma GCC unroll 8
    for (int p = 0; p < kPixels; ++p) {
      clamp_store<kResidual>(acc[p], kResidual ? store.residual + (first + p) * store.residual_step + c : nullptr,
                             store.c + (first + p) * store.c_step + c, low, high, true, decltype(whole)::value, mask);
    }
  };
  with_residual_and_whole(store.residual != nullptr, count == kLanes, pixels);
}

void depthwise_row_ukernel(const internal::DepthwiseRowArgs& in_args) {
  const internal::DepthwiseRowArgs args = in_args;  // not reloaded after each store (depthwise_window)
  const V low = splat(args.min), high = splat(args.max);
  constexpr int kPixels = 4;  // independent accumulators per weight vector: hide the FMA latency
  int p = 0;
  auto finish = [&](V value, int pixel, int c, int count) { store_pixel(args, value, low, high, pixel, c, count); };
  for (; p + kPixels <= args.pixels; p += kPixels) {
    for (int c = 0; c < args.channels; c += kLanes) {
      const int count = std::min(kLanes, args.channels - c);
      V acc[kPixels];
      const V bias = load(args.bias + c);
#pragma GCC unroll 4
      for (int i = 0; i < kPixels; ++i) acc[i] = bias;
      for (int tap = 0; tap < args.taps; ++tap) {
        const V w = load(args.w[tap] + c);
        const float* a = args.a[tap] + p * args.a_step + c;
#pragma GCC unroll 4
        for (int i = 0; i < kPixels; ++i) acc[i] = fmadd(load_part(a + i * args.a_step, count), w, acc[i]);
      }
      store_pixels(args, acc, low, high, p, c, count);
    }
  }
  for (; p < args.pixels; ++p) {
    for (int c = 0; c < args.channels; c += kLanes) {
      const int count = std::min(kLanes, args.channels - c);
      V acc = load(args.bias + c);
      for (int tap = 0; tap < args.taps; ++tap) {
        acc = fmadd(load_part(args.a[tap] + p * args.a_step + c, count), load(args.w[tap] + c), acc);
      }
      finish(acc, p, c, count);
    }
  }
}

namespace {

// kPixels output pixels x one vector of channels per pass: each input of a kernel row's window is
// loaded once and feeds every (pixel, tap) pair that reads it, with the row's kKw weight vectors
// in registers (3x3 stride 1: 13 loads per 24 FMAs, against 5 per 4 in depthwise_row_ukernel).
template <int kKw, int kStride, int kPixels>
void depthwise_window(const internal::DepthwiseWindowArgs& in_args) {
  // A local copy: the stores go through float pointers, which may alias the caller's arguments
  // (their min/max are floats), so fields read from them were reloaded after every store.
  const internal::DepthwiseWindowArgs args = in_args;
  constexpr int kInputs = kStride * (kPixels - 1) + kKw;
  const V low = splat(args.min), high = splat(args.max);
  for (int c = 0; c < args.channels; c += kLanes) {
    const int count = std::min(kLanes, args.channels - c);
    V acc[kPixels];
    const V bias = load(args.bias + c);
#pragma GCC unroll 8
    for (int p = 0; p < kPixels; ++p) acc[p] = bias;
    for (int r = 0; r < args.kernel_rows; ++r) {
      const float* const* in = args.a + r * internal::kDepthwiseWindowInputs;
      V w[kKw];
#pragma GCC unroll 5
      for (int kx = 0; kx < kKw; ++kx) w[kx] = load(args.w[r] + kx * args.w_tap_stride + c);
      V x[kInputs];
#pragma GCC unroll 19
      for (int j = 0; j < kInputs; ++j) x[j] = count == kLanes ? loadu(in[j] + c) : load_part(in[j] + c, count);
      // Tap by tap, each tap over all the pixels: an accumulator's next multiply-add comes kPixels
      // later, past the FMA latency (input by input, each input's two or three taps, it came one
      // input later: the chains ran at the latency, 70 GFLOPS on MobileNetV2's 56x56x144). Each
      // pixel still adds its taps in ascending kx.
#pragma GCC unroll 5
      for (int kx = 0; kx < kKw; ++kx) {
#pragma GCC unroll 8
        for (int p = 0; p < kPixels; ++p) acc[p] = fmadd(x[p * kStride + kx], w[kx], acc[p]);
      }
    }
    store_pixels(args, acc, low, high, 0, c, count);
  }
}

template <int kKw, int kStride>
void depthwise_window_pixels(const internal::DepthwiseWindowArgs& args) {
  static_assert(internal::kDepthwiseWindowPixels == 8);
  switch (args.pixels) {
    case 8: return depthwise_window<kKw, kStride, 8>(args);
    case 7: return depthwise_window<kKw, kStride, 7>(args);
    case 6: return depthwise_window<kKw, kStride, 6>(args);
    case 5: return depthwise_window<kKw, kStride, 5>(args);
    case 4: return depthwise_window<kKw, kStride, 4>(args);
    case 3: return depthwise_window<kKw, kStride, 3>(args);
    case 2: return depthwise_window<kKw, kStride, 2>(args);
    default: return depthwise_window<kKw, kStride, 1>(args);
  }
}

}  // namespace

void depthwise_window_ukernel(const internal::DepthwiseWindowArgs& args) {
  if (args.kernel_width == 5) {
    return args.stride == 2 ? depthwise_window_pixels<5, 2>(args) : depthwise_window_pixels<5, 1>(args);
  }
  return args.stride == 2 ? depthwise_window_pixels<3, 2>(args) : depthwise_window_pixels<3, 1>(args);
}

// Winograd F(2x2, 3x3) transforms, one vector of channels at a time (the scalar kernel's
// operations in its order, so results are bit-exact with it).
void winograd_input_ukernel(const internal::WinogradInputArgs& args) {
  for (int c = 0; c < args.channels; c += kLanes) {
    const int count = std::min(kLanes, args.channels - c);
    V d[4][4], rows[4][4];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) d[i / 4][i % 4] = load_part(args.a[i] + c, count);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      rows[0][j] = sub(d[0][j], d[2][j]);
      rows[1][j] = add(d[1][j], d[2][j]);
      rows[2][j] = sub(d[2][j], d[1][j]);
      rows[3][j] = sub(d[1][j], d[3][j]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      float* v = args.v + static_cast<int64_t>(i * 4) * args.v_stride + c;
      store_part(v, sub(rows[i][0], rows[i][2]), count);
      store_part(v + args.v_stride, add(rows[i][1], rows[i][2]), count);
      store_part(v + 2 * args.v_stride, sub(rows[i][2], rows[i][1]), count);
      store_part(v + 3 * args.v_stride, sub(rows[i][1], rows[i][3]), count);
    }
  }
}

void winograd_output_ukernel(const internal::WinogradOutputArgs& args) {
  const V low = splat(args.min), high = splat(args.max);
  for (int c = 0; c < args.channels; c += kLanes) {
    const int count = std::min(kLanes, args.channels - c);
    V m[4][4], columns[2][4];
#pragma GCC unroll 16
    for (int t = 0; t < 16; ++t) m[t / 4][t % 4] = load_part(args.m + t * args.m_stride + c, count);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      columns[0][j] = add(add(m[0][j], m[1][j]), m[2][j]);
      columns[1][j] = sub(sub(m[1][j], m[2][j]), m[3][j]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; ++i) {
      const V pixel[2] = {add(add(columns[i][0], columns[i][1]), columns[i][2]),
                          sub(sub(columns[i][1], columns[i][2]), columns[i][3])};
#pragma GCC unroll 2
      for (int j = 0; j < 2; ++j) {
        float* out = args.c[i * 2 + j];
        if (out == nullptr) continue;
        V value = pixel[j];
        if (args.residual) value = add(value, load_part(args.residual[i * 2 + j] + c, count));
        store_part(out + c, activate(args.activation, vmin(high, vmax(low, value))), count);
      }
    }
  }
}

void sgemm_ukernel(const internal::SgemmUkernelArgs& args) {
  const internal::SgemmPrefetch none;
  if (args.nc <= kLanes) return tile_rows<1, false>(args, none);
  tile_rows<2, false>(args, none);
}

void sgemm_prefetch_ukernel(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch) {
  if (args.nc <= kLanes) return tile_rows<1, true>(args, prefetch);
  tile_rows<2, true>(args, prefetch);
}

void sgemm_packed_a_ukernel(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch& prefetch) {
  if (args.nc <= kLanes) return packed_a_rows<1>(args, prefetch);
  packed_a_rows<2>(args, prefetch);
}

}  // namespace qdqrt::kernels::QDQRT_SGEMM_NAMESPACE
