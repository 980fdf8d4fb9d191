// The ONE place kernels are chosen from the ISA level: GEMM/conv, depthwise, and the supporting
// kernels (quantize, elementwise, pools, LUT, reorder, fp32).
#include "kernels/dispatch.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <string>

#include "kernels/fp32/fp32_dot_rows.h"
#include "kernels/fp32/fp32_gemv.h"
#include "kernels/fp32/fp32_small_matmul.h"
#include "kernels/fp32/fp32_sgemm_prefetch.h"
#include "kernels/gemm/qgemm_amx.h"

namespace qdqrt::kernels {

Isa usable_isa(Isa requested) { return best_supported_up_to(requested); }

// --- GEMM / implicit-GEMM convolution family ---
// mr, nr, k_group and element_size must match the Traits in the corresponding source file.
// Each ISA lists its tile widths widest first; AVX-512 VNNI also has narrower tiles (more rows,
// fewer columns) so that layers whose output channels are not a multiple of 64 (16..48, 96, 144,
// 160: MobileNets' pointwise layers) do not compute padding columns; choose_gemm_implementation
// weighs them. There is no 8x32 tile: it was slower than 6x64 and 12x16 on small-K layers
// (docs/decisions.md).
std::span<const internal::GemmImplementation> gemm_implementations(Isa isa) {
  static const internal::GemmImplementation kScalar[] = {{Isa::kScalar, 4, 16, 4, 1, internal::gemm_run_scalar}};
  static const internal::GemmImplementation kAvx2[] = {{Isa::kAvx2, 6, 16, 2, 2, internal::gemm_run_avx2}};
  static const internal::GemmImplementation kAvxVnni[] = {{Isa::kAvxVnni, 6, 16, 4, 1, internal::gemm_run_avxvnni}};
  static const internal::GemmImplementation kAvx512Vnni[] = {
      {Isa::kAvx512Vnni, 6, 64, 4, 1, internal::gemm_run_avx512vnni},
      {Isa::kAvx512Vnni, 12, 32, 4, 1, internal::gemm_run_avx512vnni_12x32},
      {Isa::kAvx512Vnni, 12, 16, 4, 1, internal::gemm_run_avx512vnni_12x16}};
  // AMX-INT8: 32 rows (two 16-row tiles) over the avx512vnni layouts of the same widths.
  static const internal::GemmImplementation kAmxInt8[] = {
      {Isa::kAmxInt8, 32, 64, 4, 1, internal::gemm_run_amxint8},
      {Isa::kAmxInt8, 32, 16, 4, 1, internal::gemm_run_amxint8_32x16}};
  switch (usable_isa(isa)) {
    case Isa::kAmxInt8: return kAmxInt8;
    case Isa::kAvx512Vnni: return kAvx512Vnni;
    case Isa::kAvxVnni: return kAvxVnni;
    case Isa::kAvx2: return kAvx2;
    case Isa::kScalar: break;
  }
  return kScalar;
}

const internal::GemmImplementation& gemm_implementation(Isa isa) { return gemm_implementations(isa).front(); }

Isa gemm_isa_for_shape(Isa isa, int64_t rows, int64_t k, int64_t n) {
  if (usable_isa(isa) != Isa::kAmxInt8) return isa;
  // AMX packs k padded to whole tile steps (amx_padded_k).
  const bool fills_tile_rows =
      (k >= 64 && k % 64 == 0) || k >= 512 || (k >= 96 && 4 * k >= 3 * amx_padded_k(k) && n >= 32);
  return rows > 1 && fills_tile_rows ? isa : Isa::kAvx512Vnni;
}

const internal::GemmImplementation* gemm_implementation(Isa isa, int nr) {
  for (const internal::GemmImplementation& impl : gemm_implementations(isa)) {
    if (impl.nr == nr) return &impl;
  }
  return nullptr;
}

// The 12x32 tile for 17..32 channels, also when the conv's weights were packed for another width
// (an engine saved when packing did not pick 12x32 for them).
const internal::GemmImplementation* conv_stem_implementation(Isa isa, int n) {
  if (usable_isa(isa) != Isa::kAvx512Vnni || n <= 16 || n > 32) return nullptr;
  return gemm_implementation(isa, 32);
}

internal::StemColumnsFn conv_stem_columns_kernel(Isa isa) {
  const Isa usable = usable_isa(isa);
  if ((usable == Isa::kAvx512Vnni || usable == Isa::kAmxInt8) && cpu_has_avx512vbmi()) {
    return avx512vbmi::conv_stem_columns;
  }
  return scalar::conv_stem_columns;
}

// Cost of one row per k-group: the column tiles times (vector products + one broadcast load per
// tile row), so padding columns count as much as real ones. Ties keep the earlier (wider) tile. On
// a Zen 5 it ranks the three AVX-512 VNNI tiles as the kernel bench does on MobileNetV2's and
// EfficientNet-B0's pointwise layers (docs/kernels.md, "The 12x32 tile for pointwise layers").
const internal::GemmImplementation& choose_gemm_implementation(Isa isa, int n) {
  const std::span<const internal::GemmImplementation> options = gemm_implementations(isa);
  const internal::GemmImplementation* best = nullptr;
  double best_cost = 0.0;
  for (const internal::GemmImplementation& impl : options) {  // ties keep the wider tile
    const int tiles = (std::max(n, 1) + impl.nr - 1) / impl.nr;
    const double cost = tiles * (impl.nr / 16.0 + 0.25);
    if (best == nullptr || cost < best_cost) {
      best = &impl;
      best_cost = cost;
    }
  }
  return *best;
}

// --- Depthwise convolution family ---
// AVX-VNNI adds nothing for depthwise (16-bit products), so it uses the AVX2 kernel; AMX has no
// depthwise form, so the AMX level uses the AVX-512 VNNI kernel.
const internal::DepthwiseImplementation& depthwise_implementation(Isa isa) {
  static const internal::DepthwiseImplementation kScalar{Isa::kScalar, 1, internal::depthwise_run_scalar};
  static const internal::DepthwiseImplementation kAvx2{Isa::kAvx2, 32, internal::depthwise_run_avx2};
  static const internal::DepthwiseImplementation kAvx512Vnni{Isa::kAvx512Vnni, 64,
                                                             internal::depthwise_run_avx512vnni};
  switch (usable_isa(isa)) {
    case Isa::kAmxInt8:
    case Isa::kAvx512Vnni: return kAvx512Vnni;
    case Isa::kAvxVnni:
    case Isa::kAvx2: return kAvx2;
    case Isa::kScalar: break;
  }
  return kScalar;
}

// --- Supporting kernels ---

namespace {

enum class Impl { kScalar, kAvx2, kAvx512Skx };

Impl impl_for(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return Impl::kScalar;
    case Isa::kAvx2:
    case Isa::kAvxVnni: return Impl::kAvx2;
    case Isa::kAvx512Vnni:
    case Isa::kAmxInt8: return Impl::kAvx512Skx;
  }
  return Impl::kScalar;
}

const char* suffix(Impl impl) {
  switch (impl) {
    case Impl::kScalar: return "scalar";
    case Impl::kAvx2: return "avx2";
    case Impl::kAvx512Skx: return "avx512";
  }
  return "scalar";
}

// Kernel names live for the whole program; built once per (family, dtype, isa).
const char* name(const std::string& dtype_op, Impl impl) {
  static std::mutex mutex;
  static std::deque<std::string> names;
  const std::string full = dtype_op + "-" + suffix(impl);
  std::lock_guard<std::mutex> lock(mutex);
  for (const std::string& existing : names) {
    if (existing == full) return existing.c_str();
  }
  return names.emplace_back(full).c_str();
}

template <class T>
std::string dtype_op(const char* op) {
  return std::string(QTraits<T>::prefix) + "-" + op;
}

}  // namespace

std::vector<Isa> supported_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAmxInt8}) {
    if (isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

// ---------------------------------------------------------------- quantize / dequantize / requantize
template <class T>
QuantizeKernels<T> quantize_kernels(Isa isa) {
  const Impl impl = impl_for(isa);
  QuantizeKernels<T> k;
  switch (impl) {
    case Impl::kScalar:
      k.quantize.fn = scalar::quantize<T>;
      k.dequantize.fn = scalar::dequantize<T>;
      k.quantize_channels.fn = scalar::quantize_channels<T>;
      k.quantize_gated.fn = scalar::quantize_gated<T>;
      k.add_quantize.fn = scalar::add_quantize<T>;
      k.dequantize_channels.fn = scalar::dequantize_channels<T>;
      k.requantize.fn = scalar::requantize<T>;
      k.quantize_nchw_to_nhwc.fn = scalar::quantize_nchw_to_nhwc<T>;
      break;
    case Impl::kAvx2:
      k.quantize.fn = avx2::quantize<T>;
      k.dequantize.fn = avx2::dequantize<T>;
      k.quantize_channels.fn = avx2::quantize_channels<T>;
      k.quantize_gated.fn = avx2::quantize_gated<T>;
      k.add_quantize.fn = avx2::add_quantize<T>;
      k.dequantize_channels.fn = avx2::dequantize_channels<T>;
      k.requantize.fn = avx2::requantize<T>;
      k.quantize_nchw_to_nhwc.fn = avx2::quantize_nchw_to_nhwc<T>;
      break;
    case Impl::kAvx512Skx:
      k.quantize.fn = avx512skx::quantize<T>;
      k.dequantize.fn = avx512skx::dequantize<T>;
      k.quantize_channels.fn = avx512skx::quantize_channels<T>;
      k.quantize_gated.fn = avx512skx::quantize_gated<T>;
      k.add_quantize.fn = avx512skx::add_quantize<T>;
      k.dequantize_channels.fn = avx512skx::dequantize_channels<T>;
      k.requantize.fn = avx512skx::requantize<T>;
      k.quantize_nchw_to_nhwc.fn = avx512skx::quantize_nchw_to_nhwc<T>;
      break;
  }
  const std::string prefix = QTraits<T>::prefix;
  k.quantize.name = name("f32-" + prefix + "-vcvt", impl);
  k.dequantize.name = name(prefix + "-f32-vcvt", impl);
  k.quantize_channels.name = name("f32-" + prefix + "-vcvt-qc", impl);
  k.quantize_gated.name = name("f32-" + prefix + "-vmulcvt-gate", impl);
  k.add_quantize.name = name("f32-" + prefix + "-vaddcvt", impl);
  k.dequantize_channels.name = name(prefix + "-f32-vcvt-qc", impl);
  k.requantize.name = name(dtype_op<T>("requantize-minmax"), impl);
  k.quantize_nchw_to_nhwc.name = name("f32-" + prefix + "-vcvt-nchw2nhwc", impl);
  return k;
}
template QuantizeKernels<int8_t> quantize_kernels<int8_t>(Isa);
template QuantizeKernels<uint8_t> quantize_kernels<uint8_t>(Isa);

// ---------------------------------------------------------------- QAdd / QMul
template <class T>
QBinaryKernels<T> qbinary_kernels(Isa isa) {
  const Impl impl = impl_for(isa);
  QBinaryKernels<T> k;
  switch (impl) {
    case Impl::kScalar:
      k.add.fn = scalar::qadd<T>;
      k.add_scalar.fn = scalar::qadd_scalar<T>;
      k.mul.fn = scalar::qmul<T>;
      k.mul_scalar.fn = scalar::qmul_scalar<T>;
      break;
    case Impl::kAvx2:
      k.add.fn = avx2::qadd<T>;
      k.add_scalar.fn = avx2::qadd_scalar<T>;
      k.mul.fn = avx2::qmul<T>;
      k.mul_scalar.fn = avx2::qmul_scalar<T>;
      break;
    case Impl::kAvx512Skx:
      k.add.fn = avx512skx::qadd<T>;
      k.add_scalar.fn = avx512skx::qadd_scalar<T>;
      k.mul.fn = avx512skx::qmul<T>;
      k.mul_scalar.fn = avx512skx::qmul_scalar<T>;
      break;
  }
  k.add.name = name(dtype_op<T>("vadd-minmax"), impl);
  k.add_scalar.name = name(dtype_op<T>("vaddc-minmax"), impl);
  k.mul.name = name(dtype_op<T>("vmul-minmax"), impl);
  k.mul_scalar.name = name(dtype_op<T>("vmulc-minmax"), impl);
  return k;
}
template QBinaryKernels<int8_t> qbinary_kernels<int8_t>(Isa);
template QBinaryKernels<uint8_t> qbinary_kernels<uint8_t>(Isa);

// ---------------------------------------------------------------- pools
template <class T>
QPoolKernels<T> qpool_kernels(Isa isa) {
  const Impl impl = impl_for(isa);
  QPoolKernels<T> k;
  switch (impl) {
    case Impl::kScalar:
      k.maxpool.fn = scalar::maxpool<T>;
      k.avgpool.fn = scalar::avgpool<T>;
      k.global_avgpool.fn = scalar::global_avgpool<T>;
      break;
    case Impl::kAvx2:
      k.maxpool.fn = avx2::maxpool<T>;
      k.avgpool.fn = avx2::avgpool<T>;
      k.global_avgpool.fn = avx2::global_avgpool<T>;
      break;
    case Impl::kAvx512Skx:
      k.maxpool.fn = avx512skx::maxpool<T>;
      k.avgpool.fn = avx512skx::avgpool<T>;
      k.global_avgpool.fn = avx512skx::global_avgpool<T>;
      break;
  }
  k.maxpool.name = name(dtype_op<T>("maxpool-nhwc"), impl);
  k.avgpool.name = name(dtype_op<T>("avgpool-nhwc-minmax"), impl);
  k.global_avgpool.name = name(dtype_op<T>("gavgpool-nhwc-minmax"), impl);
  return k;
}
template QPoolKernels<int8_t> qpool_kernels<int8_t>(Isa);
template QPoolKernels<uint8_t> qpool_kernels<uint8_t>(Isa);

// ---------------------------------------------------------------- lookup tables
NamedKernel<LutFn> lut_kernel(Isa isa, bool allow_vbmi) {
  switch (impl_for(isa)) {
    case Impl::kScalar: return {scalar::lut, "x8-lut-scalar"};
    case Impl::kAvx2: return {avx2::lut, "x8-lut-avx2"};
    case Impl::kAvx512Skx:
      // VBMI is an extra CPUID bit on top of the AVX-512 level; active_isa() limits it as well.
      if (allow_vbmi && cpu_has_avx512vbmi()) return {avx512vbmi::lut, "x8-lut-avx512vbmi"};
      return {avx512skx::lut, "x8-lut-avx512bw"};
  }
  return {scalar::lut, "x8-lut-scalar"};
}

// ---------------------------------------------------------------- reorders
ReorderKernels reorder_kernels(Isa isa) {
  // Transposes are load/store-shuffle bound; the AVX2 tiles serve AVX-512 machines as well.
  if (impl_for(isa) == Impl::kScalar) {
    return {{scalar::transpose8, "x8-transpose-scalar"}, {scalar::transpose32, "x32-transpose-scalar"}};
  }
  return {{avx2::transpose8, "x8-transpose-16x16-avx2"}, {avx2::transpose32, "x32-transpose-8x8-avx2"}};
}

// ---------------------------------------------------------------- fp32
Fp32Kernels fp32_kernels(Isa isa) {
  const Impl impl = impl_for(isa);
  Fp32Kernels k;
  switch (impl) {
    case Impl::kScalar:
      k = {{scalar::fp32_binary}, {scalar::fp32_binary_vs}, {scalar::fp32_binary_sv},
           {scalar::fp32_unary},  {scalar::fp32_softmax},   {scalar::fp32_gemm},
           {scalar::fp32_channel_sums}, {scalar::fp32_channel_sums_f32}};
      break;
    case Impl::kAvx2:
      k = {{avx2::fp32_binary}, {avx2::fp32_binary_vs}, {avx2::fp32_binary_sv},
           {avx2::fp32_unary},  {avx2::fp32_softmax},   {avx2::fp32_gemm},
           {avx2::fp32_channel_sums}, {avx2::fp32_channel_sums_f32}};
      break;
    case Impl::kAvx512Skx:
      k = {{avx512skx::fp32_binary}, {avx512skx::fp32_binary_vs}, {avx512skx::fp32_binary_sv},
           {avx512skx::fp32_unary},  {avx512skx::fp32_softmax},   {avx512skx::fp32_gemm},
           {avx512skx::fp32_channel_sums}, {avx512skx::fp32_channel_sums_f32}};
      break;
  }
  k.binary.name = name("f32-vbinary", impl);
  k.binary_vs.name = name("f32-vbinaryc", impl);
  k.binary_sv.name = name("f32-vrbinaryc", impl);
  k.unary.name = name("f32-vunary", impl);
  k.softmax.name = name("f32-softmax", impl);
  k.channel_sums.name = name("f32-channel-sums", impl);
  k.channel_sums_f32.name = name("f32-channel-sums-f32", impl);
  k.gemm.name = name(impl == Impl::kScalar ? "f32-gemm" : "f32-gemm-eigen", impl);  // scalar: plain loops
  return k;
}

// ---------------------------------------------------------------- LayerNorm
NamedKernel<LayerNormFn> layer_norm_kernel(Isa isa) {
  const Impl impl = impl_for(isa);
  LayerNormFn fn = impl == Impl::kScalar ? scalar::layer_norm : impl == Impl::kAvx2 ? avx2::layer_norm
                                                                                    : avx512skx::layer_norm;
  return {fn, name("f32-layernorm", impl)};
}

// ---------------------------------------------------------------- Softmax + QuantizeLinear
NamedKernel<SoftmaxQuantizeFn> softmax_quantize_kernel(Isa isa) {
  const Impl impl = impl_for(isa);
  SoftmaxQuantizeFn fn = impl == Impl::kScalar ? scalar::softmax_quantize
                         : impl == Impl::kAvx2 ? avx2::softmax_quantize
                                               : avx512skx::softmax_quantize;
  return {fn, name("f32-qs8-softmax", impl)};
}

// ---------------------------------------------------------------- fp32 igemm
const internal::SgemmImplementation& sgemm_implementation(Isa isa) {
  static const internal::SgemmImplementation kScalarImpl{scalar::sgemm_ukernel, 4, 8, "scalar",
                                                                 scalar::depthwise_ukernel,
                                                                 scalar::depthwise_row_ukernel,
                                                                 scalar::winograd_input_ukernel,
                                                                 scalar::winograd_output_ukernel,
                                                                 scalar::depthwise_window_ukernel, scalar::direct_nchw_ukernel};
  static const internal::SgemmImplementation kAvx2Impl{avx2::sgemm_ukernel, 6, 16, "avx2", avx2::depthwise_ukernel,
                                                              avx2::depthwise_row_ukernel,
                                                              avx2::winograd_input_ukernel,
                                                              avx2::winograd_output_ukernel,
                                                              avx2::depthwise_window_ukernel, avx2::direct_nchw_ukernel};
  static const internal::SgemmImplementation kAvx512Impl{avx512skx::sgemm_ukernel, 14, 32, "avx512",
                                                                    avx512skx::depthwise_ukernel,
                                                                    avx512skx::depthwise_row_ukernel,
                                                                    avx512skx::winograd_input_ukernel,
                                                                    avx512skx::winograd_output_ukernel,
                                                                    avx512skx::depthwise_window_ukernel, avx512skx::direct_nchw_ukernel};
  switch (impl_for(isa)) {
    case Impl::kScalar: return kScalarImpl;
    case Impl::kAvx2: return kAvx2Impl;
    case Impl::kAvx512Skx: return kAvx512Impl;
  }
  return kScalarImpl;
}

internal::SgemmPrefetchUkernelFn sgemm_prefetch_ukernel(Isa isa) {
  switch (impl_for(isa)) {
    case Impl::kScalar: return nullptr;
    case Impl::kAvx2: return avx2::sgemm_prefetch_ukernel;
    case Impl::kAvx512Skx: return avx512skx::sgemm_prefetch_ukernel;
  }
  return nullptr;
}

internal::SgemmPrefetchUkernelFn sgemm_packed_a_ukernel(Isa isa) {
  switch (impl_for(isa)) {
    case Impl::kScalar: return scalar::sgemm_packed_a_ukernel;
    case Impl::kAvx2: return avx2::sgemm_packed_a_ukernel;
    case Impl::kAvx512Skx: return avx512skx::sgemm_packed_a_ukernel;
  }
  return scalar::sgemm_packed_a_ukernel;
}

// ---------------------------------------------------------------- fp32 GEMV / small M
const internal::SgemvImplementation& sgemv_implementation(Isa isa) {
  static const internal::SgemvImplementation kScalarImpl{};  // the microkernel's 4 x 8 loops
  static const internal::SgemvImplementation kAvx2Impl{avx2::sgemv_ukernel, kSgemvMaxRowsAvx2};
  static const internal::SgemvImplementation kAvx512Impl{avx512skx::sgemv_ukernel, kSgemvMaxRowsAvx512};
  switch (impl_for(isa)) {
    case Impl::kScalar: return kScalarImpl;
    case Impl::kAvx2: return kAvx2Impl;
    case Impl::kAvx512Skx: return kAvx512Impl;
  }
  return kScalarImpl;
}

// ---------------------------------------------------------------- fp32 small-matrix MatMul
const internal::SmallMatmulImplementation& small_matmul_implementation(Isa isa) {
  static const internal::SmallMatmulImplementation kScalarImpl{};  // the igemm's tiles
  static const internal::SmallMatmulImplementation kAvx2Impl{avx2::small_matmul_ukernel, 8,
                                                             kSmallMatmulMaxAccumulatorsAvx2,
                                                             kSmallMatmulMaxRowsAvx2, "avx2"};
  static const internal::SmallMatmulImplementation kAvx512Impl{avx512skx::small_matmul_ukernel, 16,
                                                               kSmallMatmulMaxAccumulatorsAvx512,
                                                               kSmallMatmulMaxRowsAvx512, "avx512"};
  switch (impl_for(isa)) {
    case Impl::kScalar: return kScalarImpl;
    case Impl::kAvx2: return kAvx2Impl;
    case Impl::kAvx512Skx: return kAvx512Impl;
  }
  return kScalarImpl;
}

// ---------------------------------------------------------------- fp32 row dots (N = 1)
const internal::DotRowsImplementation& dot_rows_implementation(Isa isa) {
  static const internal::DotRowsImplementation kScalarImpl{};  // the igemm's tiles
  static const internal::DotRowsImplementation kAvx2Impl{avx2::dot_rows_ukernel, 8, "avx2"};
  static const internal::DotRowsImplementation kAvx512Impl{avx512skx::dot_rows_ukernel, 16, "avx512"};
  switch (impl_for(isa)) {
    case Impl::kScalar: return kScalarImpl;
    case Impl::kAvx2: return kAvx2Impl;
    case Impl::kAvx512Skx: return kAvx512Impl;
  }
  return kScalarImpl;
}

}  // namespace qdqrt::kernels
