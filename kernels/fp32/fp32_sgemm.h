// FP32 GEMM and NHWC convolution on a register-tiled microkernel, weights packed at build time.
//
//   C[m][n] = activation(clamp(sum_k A[m][k] * W[n][k] + bias[n] + residual[m][n], min, max))
//
// Rows m are output pixels (NHWC: a pixel's channels are contiguous), columns n output channels.
// The microkernel is an indirect GEMM (XNNPACK's igemm): it takes, per kernel tap, MR pointers to
// the rows' `channels` contiguous inputs, so 1x1 convolutions read the activations in place, KxK
// ones gather the taps through pointers (padding points at a zero row) and no im2col buffer
// exists. W is packed as panels of NR columns, [n_padded / NR][taps * channels][NR], with k in
// (tap, channel) order; the bias is padded to n_padded.
//
// Tiles (per ISA, chosen by sgemm_tile()):
//   avx512skx  14 x 32 (28 zmm accumulators, B from the panel, A broadcast from memory)
//   avx2        6 x 16 (12 ymm accumulators)
//   scalar      4 x 8  (plain loops: the reference the vector kernels are tested against)
// Summation order is k order per output in every variant (one accumulator per output, fused
// multiply-add in the vector kernels), so results differ from the scalar ones only by FMA rounding.
//
// Threading: run_sconv computes rows [m_begin, m_end) x columns [n_begin, n_end); n_begin must be
// a multiple of nr. Disjoint ranges may run concurrently. Nothing allocates at run time.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "kernels/aligned_buffer.h"
#include "kernels/cpu_features.h"

namespace qdqrt::kernels {

struct SgemmTile {
  int mr = 0, nr = 0;
};
SgemmTile sgemm_tile(Isa isa);

// Weight element (n, tap, c) is weights[n * stride_n + tap * stride_tap + c * stride_channel].
// ONNX Conv weights [O][C][kh][kw]: stride_n = C*kh*kw, stride_tap = 1, stride_channel = kh*kw.
// A MatMul B [K][N]: taps 1, stride_n = 1, stride_channel = N.
struct SgemmWeightsDesc {
  int n = 0;
  int taps = 1;
  int channels = 0;  // reduction depth per tap
  const float* weights = nullptr;
  int64_t stride_n = 0, stride_tap = 0, stride_channel = 1;
  const float* bias = nullptr;  // n values or null
};

struct PackedSgemm {
  Isa isa = Isa::kScalar;
  int n = 0, taps = 1, channels = 0;
  int mr = 0, nr = 0;
  int n_padded = 0;
  AlignedBuffer<float> data;  // [n_padded / nr][taps * channels][nr]
  AlignedBuffer<float> bias;  // n_padded
  AlignedBuffer<float> zeros; // `channels` zeros: the row padded taps read
  int64_t k() const { return static_cast<int64_t>(taps) * channels; }
};

// Packs for `isa` (clamped to what this machine runs).
PackedSgemm pack_sgemm(const SgemmWeightsDesc& desc, Isa isa);
// The weights part of pack_sgemm into caller memory (packed_sgemm_floats() floats, 64-byte
// aligned), allocating nothing: B of a MatMul of two activations, packed per run. The bias is
// not written.
void pack_sgemm_into(const SgemmWeightsDesc& desc, Isa isa, float* data);
// A PackedSgemm over packed data and bias kept elsewhere (an engine file's blobs, 64-byte aligned):
// `data` holds packed_sgemm_floats() floats, `bias` n_padded (the packing's own layout).
// with_zeros: allocate the zero row padded taps read (convolutions; run_sgemm needs none, and a
// view made without it allocates nothing).
PackedSgemm packed_sgemm_view(int n, int taps, int channels, Isa isa, const float* data, const float* bias,
                              bool with_zeros = true);
int64_t packed_sgemm_floats(int n, int64_t k, Isa isa);
// The packed weights of columns [n_begin, n_end) with every input channel c (of every tap) scaled
// by scale[c], written at their own offsets into `out` (packed_sgemm_floats() floats, 64-byte
// aligned; the other panels are not touched); n_begin a multiple of nr. A convolution of
// x * scale[c] (EfficientNet's squeeze-excite gate) then runs on x with
// packed_sgemm_view(..., out, ...) and no pass over the activations. Sums differ from scaling
// the input by the rounding of w * s instead of x * s.
void scale_packed_sgemm_channels(const PackedSgemm& packed, const float* scale, int n_begin, int n_end, float* out);
int sgemm_padded_n(int n, Isa isa);

// Applied after the clamp, with the vector math of kernels/vector_math_inl.h (kGelu: the erf form,
// the function fp32_unary's Gelu runs, so a fused GELU rounds as the separate layer did).
enum class Fp32EpilogueActivation : int32_t { kNone = 0, kSigmoid = 1, kSilu = 2, kHardSwish = 3, kGelu = 4 };
const char* fp32_epilogue_activation_name(Fp32EpilogueActivation activation);

struct Fp32Epilogue {
  Fp32EpilogueActivation activation = Fp32EpilogueActivation::kNone;
  float min = -std::numeric_limits<float>::infinity();  // Relu: 0
  float max = std::numeric_limits<float>::infinity();
  const float* residual = nullptr;  // added before the clamp, element (m, n) at residual[m * residual_row_stride + n]
  int64_t residual_row_stride = 0;
};

// NHWC convolution geometry (one group): row m = (image, out_y, out_x).
struct SconvGeometry {
  int input_height = 1, input_width = 1;
  int64_t input_pixel_stride = 0;  // floats between input pixels
  int64_t input_image_stride = 0;  // floats between images
  int kernel_height = 1, kernel_width = 1;
  int stride_height = 1, stride_width = 1;
  int pad_top = 0, pad_left = 0;
  int dilation_height = 1, dilation_width = 1;
  int output_height = 1, output_width = 1;
  int64_t output_pixels_per_image() const { return static_cast<int64_t>(output_height) * output_width; }
};

struct SconvArgs {
  const float* input = nullptr;  // first channel of the group
  float* output = nullptr;
  int64_t output_row_stride = 0;  // floats between output pixels
  // run_depthwise_f32 only: output pixel p (not the residual's) is written at output +
  // (p - output_pixel_offset) * output_row_stride, so a band of rows can go to a small buffer.
  int64_t output_pixel_offset = 0;
  // run_depthwise_f32 only: input row y of an image is read at input + image * input_image_stride
  // + (y - input_row_offset) * input_width * input_pixel_stride (a buffer of some rows).
  int input_row_offset = 0;
};

void run_sconv(const PackedSgemm& packed, const SconvGeometry& geometry, const SconvArgs& args,
               const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end);

// A convolution of an NCHW input with few channels (a network's 3-channel image) to NHWC output,
// on the igemm's packed weights (pack_sgemm with (tap, channel) k order) and sums: bit-identical
// to run_sconv on the same input reordered to NHWC. Per output row, the input rows its windows
// read are copied, zero-padded, into a small buffer, [C][kernel_height][padded width]; then a tile
// of MR consecutive output pixels reads step k (tap, channel) at one pointer + k's offset + r *
// stride_width: no per-tap pointers and no reorder of the input to NHWC (MobileNetV2's and
// EfficientNet-B0's 3x3 stride-2 stems). The geometry's input_image_stride is C * H * W (NCHW),
// input_pixel_stride unused. Output rows [row_begin, row_end) (row = image * output_height + y),
// columns [n_begin, n_end) (n_begin a multiple of nr).
bool direct_nchw_f32_applies(int channels, const SconvGeometry& geometry);
std::string direct_nchw_f32_kernel_name(const PackedSgemm& packed);  // "f32-direct-nchw-14x32-avx512"
void run_direct_nchw_f32(const PackedSgemm& packed, const SconvGeometry& geometry, const SconvArgs& args,
                         const Fp32Epilogue& epilogue, int64_t row_begin, int64_t row_end, int n_begin, int n_end);

// Plain row-major GEMM: A row m at a + m * a_row_stride (packed.channels values, taps == 1).
void run_sgemm(const PackedSgemm& packed, const float* a, int64_t a_row_stride, float* c, int64_t c_row_stride,
               const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end);

// Depthwise NHWC convolution (groups == channels, one output channel per input channel). Weights
// [taps][channels_padded] (channels_padded a multiple of 16), bias channels_padded; the vector
// kernels run 16 (AVX-512) or 8 (AVX2) channels per vector, fused multiply-add in tap order.
struct PackedDepthwiseF32 {
  Isa isa = Isa::kScalar;
  int channels = 0, taps = 1, channels_padded = 0;
  AlignedBuffer<float> weights;
  AlignedBuffer<float> bias;
  AlignedBuffer<float> zeros;  // channels_padded zeros: the pixel padded taps read
};
// weights: ONNX [C][1][kh][kw]; bias may be null.
PackedDepthwiseF32 pack_depthwise_f32(int channels, int taps, const float* weights, const float* bias, Isa isa);
int depthwise_f32_padded_channels(int channels);
PackedDepthwiseF32 packed_depthwise_f32_view(int channels, int taps, Isa isa, const float* weights, const float* bias);
// Output rows [row_begin, row_end) (row = image * output_height + out_y), channels
// [channel_begin, channel_end) (channel_begin a multiple of kDepthwiseF32ChannelBlock; the default:
// every channel); the geometry's input_pixel_stride/args.output_row_stride are per pixel. The
// residual is indexed like the output. Disjoint ranges may run concurrently.
inline constexpr int kDepthwiseF32ChannelBlock = 16;
void run_depthwise_f32(const PackedDepthwiseF32& packed, const SconvGeometry& geometry, const SconvArgs& args,
                       const Fp32Epilogue& epilogue, int64_t row_begin, int64_t row_end, int channel_begin = 0,
                       int channel_end = -1);
std::string depthwise_f32_kernel_name(const PackedDepthwiseF32& packed);

// "f32-igemm-14x32-avx512" style name.
std::string sgemm_kernel_name(const PackedSgemm& packed, bool convolution);
std::string sgemm_kernel_name(Isa isa, bool convolution);

namespace internal {
// One microkernel call: rows [0, mr) (mr <= MR), columns [0, nc) (nc <= NR) of one panel, over a
// block of k: `taps` taps x channels [channel_begin, channel_begin + channels). a[tap * MR + r]
// points at row r's inputs for the block's tap `tap`; rows >= mr are not read. The first block
// starts from the bias, later ones from C; only the last applies the epilogue.
struct SgemmUkernelArgs {
  int mr = 0, nc = 0;
  int taps = 1, channel_begin = 0, channels = 0;
  bool first = true, last = true;
  const float* const* a = nullptr;
  const float* w = nullptr;     // the block's first weights: row (tap, channel_begin) of the panel
  int64_t w_tap_stride = 0;     // floats from one tap's weights to the next (all channels x NR)
  const float* bias = nullptr;  // the panel's NR bias values
  float* c = nullptr;
  int64_t c_row_stride = 0;
  const float* residual = nullptr;  // the tile's first element, or null
  int64_t residual_row_stride = 0;
  float min = 0.0f, max = 0.0f;
  Fp32EpilogueActivation activation = Fp32EpilogueActivation::kNone;
  // The next call's tile of C and of the residual (same row strides), or null: the last block
  // prefetches their lines while its k loop runs, a few per k step.
  const float* next_c = nullptr;
  const float* next_residual = nullptr;
  bool prefetched = false;  // the previous call prefetched this tile's lines
};
using SgemmUkernelFn = void (*)(const SgemmUkernelArgs& args);
// One output pixel of a depthwise convolution: a[tap] points at the tap's input pixel (the zero
// row when padded), w at [taps][channels_padded] weights.
struct DepthwiseUkernelArgs {
  int channels = 0, taps = 1, channels_padded = 0;
  const float* const* a = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* c = nullptr;
  const float* residual = nullptr;
  float min = 0.0f, max = 0.0f;
  Fp32EpilogueActivation activation = Fp32EpilogueActivation::kNone;
};
using DepthwiseUkernelFn = void (*)(const DepthwiseUkernelArgs& args);
// A run of `pixels` output pixels of one row whose taps are all inside the input: tap t of pixel p
// reads a[t] + p * a_step, its weights w[t] ([channels_padded]); output pixel p at c + p * c_step.
// The output side of the row and window kernels: output pixel p at c + p * c_step.
struct DepthwisePixelStore {
  const float* bias = nullptr;
  float* c = nullptr;
  int64_t c_step = 0;
  const float* residual = nullptr;  // pixel p at residual + p * residual_step
  int64_t residual_step = 0;
  float min = 0.0f, max = 0.0f;
  Fp32EpilogueActivation activation = Fp32EpilogueActivation::kNone;
};
struct DepthwiseRowArgs : DepthwisePixelStore {
  int channels = 0, taps = 0, pixels = 0;
  const float* const* a = nullptr;
  const float* const* w = nullptr;
  int64_t a_step = 0;
};
using DepthwiseRowUkernelFn = void (*)(const DepthwiseRowArgs& args);
// A block of `pixels` (1..kDepthwiseWindowPixels) consecutive output pixels of one row of a
// depthwise convolution with kernel_width 3 or 5, stride_width 1 or 2 and no horizontal dilation:
// the block's window in kernel row r is inputs = stride * (pixels - 1) + kernel_width pixels,
// each loaded once and multiplied by every horizontal tap that reads it (a row of P pixels x KW
// taps loads P + KW - 1 inputs instead of P x KW). a[r * kDepthwiseWindowInputs + j] points at
// input j of kernel row r (the zero pixel outside the input), w[r] at that row's first tap's
// weights (tap kx at w[r] + kx * w_tap_stride). Rows of taps wholly outside the input are left
// out (kernel_rows counts the rest). Sums in tap order, like the other depthwise kernels.
inline constexpr int kDepthwiseWindowPixels = 8;
inline constexpr int kDepthwiseWindowInputs = 2 * (kDepthwiseWindowPixels - 1) + 5;
struct DepthwiseWindowArgs : DepthwisePixelStore {
  int channels = 0, kernel_rows = 0, kernel_width = 3, stride = 1, pixels = 0;
  const float* const* a = nullptr;
  const float* const* w = nullptr;
  int64_t w_tap_stride = 0;
};
using DepthwiseWindowUkernelFn = void (*)(const DepthwiseWindowArgs& args);
// Winograd F(2x2, 3x3) transforms of one tile (kernels/fp32/fp32_winograd.h), `channels` values
// per pixel. Input: a[dy * 4 + dx] points at the 4x4 patch's pixels (the zero pixel outside the
// input); V[t] = (B^T d B)[t] goes to v + t * v_stride.
struct WinogradInputArgs {
  int channels = 0;
  const float* const* a = nullptr;
  float* v = nullptr;
  int64_t v_stride = 0;
};
using WinogradInputFn = void (*)(const WinogradInputArgs& args);
// Output: M[t] at m + t * m_stride; output pixel (dy, dx) of the 2x2 block goes to c[dy * 2 + dx]
// (null: past the output's edge, not written) after residual[dy * 2 + dx] (when residual is not
// null), the clamp and the activation.
struct WinogradOutputArgs {
  int channels = 0;
  const float* m = nullptr;
  int64_t m_stride = 0;
  float* const* c = nullptr;
  const float* const* residual = nullptr;
  float min = 0.0f, max = 0.0f;
  Fp32EpilogueActivation activation = Fp32EpilogueActivation::kNone;
};
using WinogradOutputFn = void (*)(const WinogradOutputArgs& args);
// A tile of `mr` consecutive output pixels of one output row x one panel of a direct NCHW
// convolution (run_direct_nchw_f32): step k of pixel r reads origin[offsets[k] + r * stride],
// weights w[k * NR ..], sums from the bias in k order, then the epilogue.
struct DirectNchwArgs {
  int mr = 0, nc = 0, k = 0, stride = 1;
  const float* origin = nullptr;
  const int64_t* offsets = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* c = nullptr;
  int64_t c_row_stride = 0;
  const float* residual = nullptr;
  int64_t residual_row_stride = 0;
  float min = 0.0f, max = 0.0f;
  Fp32EpilogueActivation activation = Fp32EpilogueActivation::kNone;
};
using DirectNchwUkernelFn = void (*)(const DirectNchwArgs& args);
struct SgemmImplementation {
  SgemmUkernelFn ukernel = nullptr;
  int mr = 0, nr = 0;
  const char* isa_suffix = "";  // "scalar", "avx2", "avx512"
  DepthwiseUkernelFn depthwise = nullptr;
  DepthwiseRowUkernelFn depthwise_row = nullptr;
  WinogradInputFn winograd_input = nullptr;
  WinogradOutputFn winograd_output = nullptr;
  DepthwiseWindowUkernelFn depthwise_window = nullptr;
  DirectNchwUkernelFn direct_nchw = nullptr;
};
}  // namespace internal

// Kernel taps per convolution the igemm takes (11 x 11); larger kernels are not supported.
inline constexpr int kSgemmMaxTaps = 121;

#define QDQRT_DECLARE_SGEMM(isa) \
  namespace isa {                \
  void sgemm_ukernel(const internal::SgemmUkernelArgs& args); \
  void depthwise_ukernel(const internal::DepthwiseUkernelArgs& args); \
  void depthwise_row_ukernel(const internal::DepthwiseRowArgs& args); \
  void winograd_input_ukernel(const internal::WinogradInputArgs& args); \
  void winograd_output_ukernel(const internal::WinogradOutputArgs& args); \
  void depthwise_window_ukernel(const internal::DepthwiseWindowArgs& args); \
  void direct_nchw_ukernel(const internal::DirectNchwArgs& args); \
  }
QDQRT_DECLARE_SGEMM(scalar)
QDQRT_DECLARE_SGEMM(avx2)
QDQRT_DECLARE_SGEMM(avx512skx)
#undef QDQRT_DECLARE_SGEMM

}  // namespace qdqrt::kernels
