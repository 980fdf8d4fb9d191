// INT8 GEMM / implicit-GEMM convolution with weights packed at build time.
//
//   C[m][n] = epilogue( sum_k (A[m][k] - a_zp) * (W[n][k] - w_zp) + bias[n] )
//
// A: int8 or uint8 activations (rows, or NHWC pixels gathered through the convolution geometry).
// W: int8 weights (or uint8, converted at pack time), per-tensor or per-output-channel scales.
// Kernels multiply unsigned by signed bytes (vpdpbusd): int8 activations are shifted by +128 while
// the A panel is packed, and -a_zp' * sum_k W[n][k] is folded into the packed bias, so any
// activation zero-point (0, 128, 255, asymmetric) costs nothing in the inner loop.
// A non-zero weight zero-point (activations on both sides, e.g. attention) adds a per-row term
// -w_zp * sum_k A[m][k], computed while packing A.
//
// Threading: run functions compute rows [m_begin, m_end) x columns [n_begin, n_end); n_begin must
// be a multiple of PackedGemm::nr. Disjoint ranges may run concurrently.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

#include "kernels/aligned_buffer.h"
#include "kernels/cpu_features.h"
#include "kernels/qepilogue.h"

namespace qdqrt::kernels {

struct GemmWeightsDesc {
  int n = 0;  // output channels / columns
  int k = 0;  // reduction length
  // Element (n, k) is weights[n * stride_n + k * stride_k] (so [N][K] row-major: stride_n=K, stride_k=1;
  // a MatMul B [K][N]: stride_n=1, stride_k=N).
  const void* weights = nullptr;
  int64_t stride_n = 0;
  int64_t stride_k = 1;
  bool weights_signed = true;
  int32_t weight_zero_point = 0;  // in the weights' own domain (0 for symmetric int8)
  const float* weight_scales = nullptr;  // 1 value, or n values if per_channel
  bool per_channel = false;
  const int32_t* bias_int32 = nullptr;  // in units of input_scale * weight_scale[n] (QLinearConv)
  const float* bias_float = nullptr;    // in real units (QAT exports keep bias in float)
  float input_scale = 1.0f;
  int32_t input_zero_point = 0;
  bool input_signed = true;
  float output_scale = 1.0f;  // 1 when the output is fp32 (real units)
};

// Shared definitions of the requantization constants (the test oracle uses the same functions).
inline float gemm_multiplier(const GemmWeightsDesc& d, int n) {
  float weight_scale = d.per_channel ? d.weight_scales[n] : d.weight_scales[0];
  return d.input_scale * weight_scale / d.output_scale;
}
inline float gemm_float_bias(const GemmWeightsDesc& d, int n) {
  return d.bias_float ? d.bias_float[n] / d.output_scale : 0.0f;
}
inline int32_t gemm_weight_value(const GemmWeightsDesc& d, int n, int k) {
  int64_t index = n * d.stride_n + k * d.stride_k;
  return d.weights_signed ? static_cast<const int8_t*>(d.weights)[index]
                          : static_cast<const uint8_t*>(d.weights)[index];
}

// AMX-INT8 weights pad k to whole 64-byte tile steps (pack_gemm); engine files packed before
// that have k rounded up to k_group only, which the AMX kernel also runs (copying the k tail).
inline constexpr int kAmxKPadding = 64;

// k (at least 1) rounded up to whole AMX tile steps.
inline int64_t amx_padded_k(int64_t k) {
  return (std::max<int64_t>(k, 1) + kAmxKPadding - 1) / kAmxKPadding * kAmxKPadding;
}

// The k_padded pack_gemm gives weights of depth k for a tile of `isa` and `k_group` (run-time
// packing sizes its buffers with it).
inline int64_t packed_k_padded(Isa isa, int k_group, int64_t k) {
  if (isa == Isa::kAmxInt8) return amx_padded_k(k);
  return (std::max<int64_t>(k, 1) + k_group - 1) / k_group * k_group;
}

// Element (n, k) of packed weights: the layout [n / nr][k_padded / k_group][nr][k_group].
inline int64_t packed_weight_index(int64_t k_padded, int64_t nr, int64_t k_group, int64_t n, int64_t k) {
  return (((n / nr) * (k_padded / k_group) + k / k_group) * nr + n % nr) * k_group + k % k_group;
}

struct PackedGemm {
  Isa isa = Isa::kScalar;
  int n = 0, k = 0;
  int nr = 0;             // columns per tile (the ISA's tile shapes: kernels/dispatch.h)
  int k_group = 0;        // k elements per packed group (4 for vpdpbusd, 2 for vpmaddwd)
  int element_size = 1;   // bytes per packed weight (1: int8, 2: int16)
  int k_padded = 0;       // k rounded up to k_group (AMX-INT8: to kAmxKPadding)
  int n_padded = 0;       // n rounded up to nr
  bool input_signed = true;
  int32_t input_zero_point = 0;      // native domain
  int32_t weight_zero_point_s8 = 0;  // signed-domain weight zero-point (row term when non-zero)
  // [n_padded / nr][k_padded / k_group][nr][k_group] weights
  AlignedBuffer<int8_t> data;
  AlignedBuffer<int32_t> bias;        // bias_int32 + zero-point compensation, per column
  AlignedBuffer<float> multiplier;    // per column
  AlignedBuffer<float> float_bias;    // per column, output units
  // Every |accumulator * multiplier + float_bias| stays below 2^30, so converting it to int32 never
  // overflows: the activation clamp may run on the rounded integers (rounding is monotonic).
  // Derived from bias, multiplier and float_bias (update_gemm_bound), never stored.
  bool bounded = false;
};

// Sets PackedGemm::bounded from k, the weight zero-point, bias, multiplier and float_bias (with
// |w| <= 128 for every packed weight). pack_gemm calls it; callers that change multiplier or
// float_bias afterwards (engine load) call it again.
void update_gemm_bound(PackedGemm& packed);

// Packs for `isa` (clamped to what the machine supports) with the register tile of width `nr`
// (0: the one that wastes least on n columns, kernels/dispatch.h choose_gemm_implementation).
// Re-packing into an existing PackedGemm reuses its storage (batched MatMul packs its activation
// B at run time without allocating).
void pack_gemm(const GemmWeightsDesc& desc, Isa isa, PackedGemm& packed, int nr = 0);
PackedGemm pack_gemm(const GemmWeightsDesc& desc, Isa isa, int nr = 0);
inline PackedGemm pack_gemm(const GemmWeightsDesc& desc) { return pack_gemm(desc, active_isa()); }

// Plain row-major GEMM: A element (m, k) at a[m * a_row_stride + k]; C element (m, n) at
// c[m * c_row_stride + n] (elements of the output type).
// What the caller runs after a GEMM call: the call's last column chunk prefetches its weights into
// L2. A hint only; results do not depend on it.
// Bytes [begin, end) of the concatenation of `spans`: weights that later layers read, to be
// fetched into the caches well before their use (never dereferenced).
struct WarmRange {
  const std::span<const int8_t>* spans = nullptr;
  int count = 0;
  int64_t begin = 0, end = 0;
};

struct PrefetchHint {
  // Columns [the call's n_end, n_end) over the same rows (a later channel block); 0: none.
  int n_end = 0;
  // Otherwise these weights (the next layer's: Layer::set_following_weights), never dereferenced.
  std::span<const int8_t> weights = {};
  // Tiles without one of the above prefetch these, one line per k-step.
  WarmRange warm = {};
};

struct GemmArgs {
  const void* a = nullptr;
  int64_t a_row_stride = 0;
  void* c = nullptr;
  int64_t c_row_stride = 0;
  PrefetchHint next = {};
};
void run_gemm(const PackedGemm& packed, const GemmArgs& args, const Epilogue& epilogue, int m_begin, int m_end,
              int n_begin, int n_end);
inline void run_gemm(const PackedGemm& packed, const GemmArgs& args, const Epilogue& epilogue, int m) {
  run_gemm(packed, args, epilogue, 0, m, 0, packed.n);
}

// NHWC convolution geometry for the implicit GEMM: row m = (batch, out_y, out_x) output pixel,
// k = (kernel_y, kernel_x, channel) of one group. Padding reads as the input zero-point.
struct ConvGeometry {
  int batch = 1;
  int input_height = 0, input_width = 0;
  int64_t input_pixel_stride = 0;  // elements between input pixels (total channels)
  int group_channels = 0;          // channels per group (the reduction depth per tap)
  int kernel_height = 1, kernel_width = 1;
  int stride_height = 1, stride_width = 1;
  int pad_top = 0, pad_left = 0;
  int dilation_height = 1, dilation_width = 1;
  int output_height = 0, output_width = 0;
  int output_pixels() const { return batch * output_height * output_width; }
};
// input points at the first channel of this group (base + group * group_channels); c likewise.
struct ConvArgs {
  const void* input = nullptr;
  void* c = nullptr;
  int64_t c_row_stride = 0;  // elements between output pixels
  PrefetchHint next = {};
};
void run_conv_gemm(const PackedGemm& packed, const ConvGeometry& geometry, const ConvArgs& args,
                   const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end);

// "qs8-qc8w-gemm-6x64c4-avx512vnni" style name of the kernel that runs `packed` with m rows.
std::string gemm_kernel_name(const PackedGemm& packed, bool convolution, int m);

}  // namespace qdqrt::kernels
