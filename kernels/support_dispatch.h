// Kernel selection for the supporting kernels (quantize, elementwise, pools, LUT, reorder, fp32).
// Each family has one function mapping an Isa to its implementation set; call it with active_isa()
// (the default) in the runtime, or with any isa_supported() level in tests and benchmarks.
//   Isa::kScalar                 -> reference (portable scalar)
//   Isa::kAvx2, Isa::kAvxVnni    -> avx2 (these kernels need no VNNI)
//   Isa::kAvx512Vnni             -> avx512 (F/BW/VL; the LUT uses VBMI when avx512vbmi_usable())
// Names follow XNNPACK: <dtype>-<op>[-minmax]-<isa>, e.g. "qs8-vadd-minmax-avx512", "x8-lut-avx512vbmi".
// To be folded into kernels/dispatch.cpp (the single CPUID-driven choice) when merged.
#pragma once

#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/fp32_kernels.h"
#include "kernels/qelementwise.h"
#include "kernels/qlut.h"
#include "kernels/qpool.h"
#include "kernels/qtypes.h"
#include "kernels/quantize.h"
#include "kernels/reorder.h"

namespace qdqrt::kernels {

template <class T>
struct QuantizeKernels {
  NamedKernel<QuantizeFn<T>> quantize;
  NamedKernel<DequantizeFn<T>> dequantize;
  NamedKernel<QuantizeChannelsFn<T>> quantize_channels;
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

// Every Isa level this CPU supports, lowest first (for sweeps over variants).
std::vector<Isa> supported_isas();

}  // namespace qdqrt::kernels
