// The ONE place that maps an ISA to kernel implementations, per kernel family.
// Packing functions ask here which layout to produce; run functions dispatch on the ISA recorded
// in the packed data (so a packed engine records what was picked). Lower ISAs can be forced with
// set_max_isa() or QDQRT_MAX_ISA (see cpu_features.h).
#pragma once

#include <span>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/reorder/reorder.h"
#include "kernels/quantize/quantize.h"
#include "kernels/qtypes.h"
#include "kernels/pool/qpool.h"
#include "kernels/lut/qlut.h"
#include "kernels/elementwise/qelementwise.h"
#include "kernels/fp32/fp32_kernels.h"
#include "kernels/norm/layer_norm.h"
#include "kernels/softmax/softmax_quantize.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "kernels/conv/qconv_stem.h"
#include "kernels/dwconv/qdwconv_internal.h"
#include "kernels/gemm/qgemm_internal.h"

namespace qdqrt::kernels {

// Clamps a requested ISA to what this machine supports.
Isa usable_isa(Isa requested);

// --- GEMM / implicit-GEMM convolution family ---
// Every register-tile shape of an ISA (widest first), the widest one, the one of a given tile
// width (nullptr if the ISA has none), and the one packing picks for n output columns.
std::span<const internal::GemmImplementation> gemm_implementations(Isa isa);
const internal::GemmImplementation& gemm_implementation(Isa isa);
const internal::GemmImplementation* gemm_implementation(Isa isa, int nr);
const internal::GemmImplementation& choose_gemm_implementation(Isa isa, int n);
// The ISA a GEMM of `rows` rows (output pixels or matrix rows, over the build's batch), depth k
// (a convolution's kernel_h * kernel_w * group channels) and n columns is packed for when the
// engine asks for `isa`. AMX-INT8 packs k padded to whole 64-byte tile steps (zero weights), and
// runs: k a multiple of 64, k of 512 and more, or k of 96 and more that fills three quarters of
// its steps with at least 32 columns; never a single row (a GEMV: each 16x16 block pays a tile
// store and a memory epilogue for one useful row). The others run the avx512vnni tiles, whose
// layouts AMX shares (docs/decisions.md). Any other level comes back unchanged.
Isa gemm_isa_for_shape(Isa isa, int64_t rows, int64_t k, int64_t n);
// The tile the convolution stem form (kernels/conv/qconv.h) runs n output channels with, when it
// has one of its own (AVX-512 VNNI, 17..32 channels: 12x32); nullptr: the conv's packed tile.
const internal::GemmImplementation* conv_stem_implementation(Isa isa, int n);

// --- The convolution stem form's column builder (kernels/conv/qconv_stem.h) ---
// For weights packed for `isa`: AVX-512 VBMI (vpermb) when isa is an AVX-512 level and the CPU
// has VBMI, else the portable one.
internal::StemColumnsFn conv_stem_columns_kernel(Isa isa);

// --- Depthwise convolution family ---
const internal::DepthwiseImplementation& depthwise_implementation(Isa isa);

// --- Supporting kernels (quantize, elementwise, pools, LUT, reorder, fp32) ---
// Kernel selection for the supporting kernels (quantize, elementwise, pools, LUT, reorder, fp32).
// Each family has one function mapping an Isa to its implementation set; call it with active_isa()
// (the default) in the runtime, or with any isa_supported() level in tests and benchmarks.
//   Isa::kScalar                 -> scalar (portable C++)
//   Isa::kAvx2, Isa::kAvxVnni    -> avx2 (these kernels need no VNNI)
//   Isa::kAvx512Vnni, kAmxInt8   -> avx512skx (F/BW/VL/DQ, no VNNI needed; the LUT uses VBMI when
//                                   avx512vbmi_usable())
// Names follow XNNPACK: <dtype>-<op>[-minmax]-<isa>, e.g. "qs8-vadd-minmax-avx512", "x8-lut-avx512vbmi"
// (the avx512skx kernels are named "-avx512", the LUT's "-avx512bw").


template <class T>
struct QuantizeKernels {
  NamedKernel<QuantizeFn<T>> quantize;
  NamedKernel<DequantizeFn<T>> dequantize;
  NamedKernel<QuantizeChannelsFn<T>> quantize_channels;
  NamedKernel<QuantizeGatedFn<T>> quantize_gated;
  NamedKernel<AddQuantizeFn<T>> add_quantize;
  NamedKernel<DequantizeChannelsFn<T>> dequantize_channels;
  NamedKernel<RequantizeFn<T>> requantize;
  NamedKernel<QuantizeNchwToNhwcFn<T>> quantize_nchw_to_nhwc;
};
template <class T>
QuantizeKernels<T> quantize_kernels(Isa isa = active_isa());

template <class T>
struct QBinaryKernels {
  NamedKernel<QBinaryFn<T>> add;
  NamedKernel<QBinaryScalarFn<T>> add_scalar;
  NamedKernel<QBinaryFn<T>> mul;
  NamedKernel<QBinaryScalarFn<T>> mul_scalar;
};
template <class T>
QBinaryKernels<T> qbinary_kernels(Isa isa = active_isa());

template <class T>
struct QPoolKernels {
  NamedKernel<MaxPoolFn<T>> maxpool;
  NamedKernel<AvgPoolFn<T>> avgpool;
  NamedKernel<GlobalAvgPoolFn<T>> global_avgpool;
};
template <class T>
QPoolKernels<T> qpool_kernels(Isa isa = active_isa());

// allow_vbmi=false forces the AVX-512BW shuffle variant on a VBMI machine (for tests/benches).
NamedKernel<LutFn> lut_kernel(Isa isa = active_isa(), bool allow_vbmi = true);

struct ReorderKernels {
  NamedKernel<Transpose8Fn> transpose8;
  NamedKernel<Transpose32Fn> transpose32;
};
ReorderKernels reorder_kernels(Isa isa = active_isa());

Fp32Kernels fp32_kernels(Isa isa = active_isa());
// The fp32 igemm microkernel and its tile (kernels/fp32/fp32_sgemm.h): 14x32 avx512, 6x16 avx2, 4x8 scalar.
const internal::SgemmImplementation& sgemm_implementation(Isa isa);

// Every Isa level this CPU supports, lowest first (for sweeps over variants).
std::vector<Isa> supported_isas();

// LayerNorm over rows (kernels/norm/layer_norm.h): "f32-layernorm-<isa>".
NamedKernel<LayerNormFn> layer_norm_kernel(Isa isa);

// Softmax over rows quantized to 8 bits (kernels/softmax/softmax_quantize.h): "f32-qs8-softmax-<isa>".
NamedKernel<SoftmaxQuantizeFn> softmax_quantize_kernel(Isa isa);

}  // namespace qdqrt::kernels
