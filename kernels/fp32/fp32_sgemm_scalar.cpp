// Portable fp32 igemm microkernel, 4 x 8: the reference the vector microkernels are tested
// against (same packing, same k order per output, bias first; multiply and add rounded apart).
#include <algorithm>

#include "kernels/fp32/fp32_sgemm.h"
#include "kernels/fp32/fp32_sgemm_prefetch.h"

#define QDQRT_VECTOR_LANES 1
#include "kernels/vector_math_inl.h"
#undef QDQRT_VECTOR_LANES

namespace qdqrt::kernels::scalar {

namespace {
constexpr int kMr = 4;
constexpr int kNr = 8;

float activate(Fp32EpilogueActivation activation, float value) {
  switch (activation) {
    case Fp32EpilogueActivation::kNone: return value;
    case Fp32EpilogueActivation::kSigmoid: return vmath::vsigmoid(value);
    case Fp32EpilogueActivation::kSilu: return vmath::vsilu(value);
    case Fp32EpilogueActivation::kHardSwish: return vmath::vhardswish(value);
    case Fp32EpilogueActivation::kGelu: return vmath::vgelu(value);
  }
  return value;
}
}  // namespace

void sgemm_ukernel(const internal::SgemmUkernelArgs& args) {
  for (int r = 0; r < args.mr; ++r) {
    for (int n = 0; n < args.nc; ++n) {
      float sum = args.first ? args.bias[n] : args.c[r * args.c_row_stride + n];
      for (int tap = 0; tap < args.taps; ++tap) {
        const float* w = args.w + tap * args.w_tap_stride + n;
        const float* a = args.a[tap * kMr + r] + args.channel_begin;
        for (int c = 0; c < args.channels; ++c, w += kNr) sum += a[c] * *w;
      }
      if (args.last) {
        if (args.residual) sum += args.residual[r * args.residual_row_stride + n];
        sum = activate(args.activation, std::min(std::max(sum, args.min), args.max));
      }
      args.c[r * args.c_row_stride + n] = sum;
    }
  }
}

// A packed by internal::pack_sgemm_a: row r's channel c of the block at a[0]; sums as sgemm_ukernel.
void sgemm_packed_a_ukernel(const internal::SgemmUkernelArgs& args, const internal::SgemmPrefetch&) {
  constexpr int kBlock = internal::kSgemmPackChannels;
  const float* a = args.a[0];
  for (int r = 0; r < args.mr; ++r) {
    for (int n = 0; n < args.nc; ++n) {
      float sum = args.first ? args.bias[n] : args.c[r * args.c_row_stride + n];
      const float* w = args.w + n;
      for (int c = 0; c < args.channels; ++c, w += kNr) sum += a[(c / kBlock * kMr + r) * kBlock + c % kBlock] * *w;
      if (args.last) {
        if (args.residual) sum += args.residual[r * args.residual_row_stride + n];
        sum = activate(args.activation, std::min(std::max(sum, args.min), args.max));
      }
      args.c[r * args.c_row_stride + n] = sum;
    }
  }
}

void direct_nchw_ukernel(const internal::DirectNchwArgs& args) {
  for (int r = 0; r < args.mr; ++r) {
    for (int n = 0; n < args.nc; ++n) {
      float sum = args.bias[n];
      for (int k = 0; k < args.k; ++k) sum += args.origin[args.offsets[k] + r * args.stride] * args.w[k * kNr + n];
      if (args.residual) sum += args.residual[r * args.residual_row_stride + n];
      args.c[r * args.c_row_stride + n] = activate(args.activation, std::min(std::max(sum, args.min), args.max));
    }
  }
}

void depthwise_ukernel(const internal::DepthwiseUkernelArgs& args) {
  for (int c = 0; c < args.channels; ++c) {
    float sum = args.bias[c];
    for (int tap = 0; tap < args.taps; ++tap) sum += args.a[tap][c] * args.w[static_cast<int64_t>(tap) * args.channels_padded + c];
    if (args.residual) sum += args.residual[c];
    args.c[c] = activate(args.activation, std::min(std::max(sum, args.min), args.max));
  }
}

namespace {
// Output pixel `pixel`, channel c: residual, clamp, activation (the row and window kernels' store).
void store_pixel(const internal::DepthwisePixelStore& store, float sum, int pixel, int c) {
  if (store.residual) sum += store.residual[pixel * store.residual_step + c];
  store.c[pixel * store.c_step + c] = activate(store.activation, std::min(std::max(sum, store.min), store.max));
}
}  // namespace

void depthwise_row_ukernel(const internal::DepthwiseRowArgs& args) {
  for (int p = 0; p < args.pixels; ++p) {
    for (int c = 0; c < args.channels; ++c) {
      float sum = args.bias[c];
      for (int tap = 0; tap < args.taps; ++tap) sum += args.a[tap][p * args.a_step + c] * args.w[tap][c];
      store_pixel(args, sum, p, c);
    }
  }
}

void depthwise_window_ukernel(const internal::DepthwiseWindowArgs& args) {
  for (int p = 0; p < args.pixels; ++p) {
    for (int c = 0; c < args.channels; ++c) {
      float sum = args.bias[c];
      for (int r = 0; r < args.kernel_rows; ++r) {
        for (int kx = 0; kx < args.kernel_width; ++kx) {
          sum += args.a[r * internal::kDepthwiseWindowInputs + p * args.stride + kx][c] *
                 args.w[r][kx * args.w_tap_stride + c];
        }
      }
      store_pixel(args, sum, p, c);
    }
  }
}

// B^T d B and A^T m A written out per channel: the reference of the vector transforms (same
// operations in the same order).
void winograd_input_ukernel(const internal::WinogradInputArgs& args) {
  for (int c = 0; c < args.channels; ++c) {
    float d[4][4], rows[4][4];
    for (int i = 0; i < 16; ++i) d[i / 4][i % 4] = args.a[i][c];
    for (int j = 0; j < 4; ++j) {
      rows[0][j] = d[0][j] - d[2][j];
      rows[1][j] = d[1][j] + d[2][j];
      rows[2][j] = d[2][j] - d[1][j];
      rows[3][j] = d[1][j] - d[3][j];
    }
    for (int i = 0; i < 4; ++i) {
      float* v = args.v + static_cast<int64_t>(i * 4) * args.v_stride + c;
      v[0] = rows[i][0] - rows[i][2];
      v[args.v_stride] = rows[i][1] + rows[i][2];
      v[2 * args.v_stride] = rows[i][2] - rows[i][1];
      v[3 * args.v_stride] = rows[i][1] - rows[i][3];
    }
  }
}

void winograd_output_ukernel(const internal::WinogradOutputArgs& args) {
  for (int c = 0; c < args.channels; ++c) {
    float m[4][4];
    for (int t = 0; t < 16; ++t) m[t / 4][t % 4] = args.m[t * args.m_stride + c];
    float columns[2][4];
    for (int j = 0; j < 4; ++j) {
      columns[0][j] = m[0][j] + m[1][j] + m[2][j];
      columns[1][j] = m[1][j] - m[2][j] - m[3][j];
    }
    for (int i = 0; i < 2; ++i) {
      const float pixel[2] = {columns[i][0] + columns[i][1] + columns[i][2],
                              columns[i][1] - columns[i][2] - columns[i][3]};
      for (int j = 0; j < 2; ++j) {
        float* out = args.c[i * 2 + j];
        if (out == nullptr) continue;
        float value = pixel[j];
        if (args.residual) value += args.residual[i * 2 + j][c];
        out[c] = activate(args.activation, std::min(std::max(value, args.min), args.max));
      }
    }
  }
}

}  // namespace qdqrt::kernels::scalar
