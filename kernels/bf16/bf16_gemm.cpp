// BF16 GEMM: conversion, packing, CPU check and the tile loop (kernels/bf16/bf16_gemm.h).
#include "kernels/bf16/bf16_gemm.h"

#include <cpuid.h>

#include <algorithm>
#include <cassert>
#include <cstring>

#include "kernels/cpu_features.h"

namespace qdqrt::kernels {

namespace {

constexpr int64_t kScratchAlignment = 64;
// Columns a pass over the rows covers: the panels' packed weights stay in the L2 cache (2 MiB per
// core on the CPUs with AVX512_BF16) while every row tile of the call reads them.
constexpr int64_t kPanelBlockBytes = 512 * 1024;

const char* isa_suffix(Bf16GemmVariant variant) {
  switch (variant) {
    case Bf16GemmVariant::kAmxBf16: return "amxbf16";
    case Bf16GemmVariant::kAvx512Bf16: return "avx512bf16";
    case Bf16GemmVariant::kScalar: break;
  }
  return "scalar";
}

}  // namespace

uint16_t bf16_from_float(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint32_t exponent = bits & 0x7F800000u;
  if (exponent == 0) return static_cast<uint16_t>((bits >> 16) & 0x8000u);  // zero, denormal: signed zero
  if (exponent == 0x7F800000u) {
    if ((bits & 0x007FFFFFu) == 0) return static_cast<uint16_t>(bits >> 16);  // infinity
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);                     // NaN: quiet
  }
  const uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

bool cpu_has_avx512bf16() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_max(0, nullptr) < 7) return false;
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    return (eax & (1u << 5)) != 0;
  }();
  return has;
}

bool bf16_gemm_usable() { return bf16_gemm_unavailable_reason().empty(); }

std::string bf16_gemm_unavailable_reason() {
  if (!cpu_has_avx512bf16()) return "this CPU lacks AVX512_BF16";
  // The kernel's AVX-512 needs what the kAvx512Vnni level checks (AVX-512 F/BW/VL/DQ and the OS's
  // zmm state); the level limited away by QDQRT_MAX_ISA limits it too.
  if (!isa_supported(Isa::kAvx512Vnni)) return "the CPU or OS does not support the AVX-512 state it needs";
  if (static_cast<int>(active_isa()) < static_cast<int>(Isa::kAvx512Vnni)) {
    return std::string("kernels are limited to ") + isa_name(active_isa()) + " (QDQRT_MAX_ISA)";
  }
  return "";
}

std::string bf16_amx_unavailable_reason() {
  if (!bf16_gemm_usable()) return bf16_gemm_unavailable_reason();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  if (!(edx & (1u << 22))) return "the CPU lacks AMX-BF16 (CPUID.(7,0):EDX bit 22)";
  std::string missing = amx_hardware_missing();
  if (!missing.empty()) return missing;
  if (static_cast<int>(active_isa()) < static_cast<int>(Isa::kAmxInt8)) {
    return std::string("kernels are limited to ") + isa_name(active_isa()) + " (QDQRT_MAX_ISA)";
  }
  return "";
}

bool bf16_amx_usable() { return bf16_amx_unavailable_reason().empty(); }

Bf16GemmVariant best_bf16_gemm_variant() {
  return bf16_amx_usable() ? Bf16GemmVariant::kAmxBf16 : Bf16GemmVariant::kAvx512Bf16;
}

int bf16_gemm_padded_n(int n) { return (n + kBf16GemmNr - 1) / kBf16GemmNr * kBf16GemmNr; }
int64_t bf16_gemm_k_pairs(int64_t k) { return (k + 1) / 2; }
int64_t packed_bf16_gemm_elements(int n, int64_t k) {
  return static_cast<int64_t>(bf16_gemm_padded_n(n)) * 2 * bf16_gemm_k_pairs(k);
}

void pack_bf16_gemm(const Bf16GemmWeightsDesc& desc, uint16_t* data, float* bias) {
  const int n_padded = bf16_gemm_padded_n(desc.n);
  const int64_t k_pairs = bf16_gemm_k_pairs(desc.k);
  for (int panel = 0; panel < n_padded / kBf16GemmNr; ++panel) {
    uint16_t* out = data + static_cast<int64_t>(panel) * k_pairs * kBf16GemmNr * 2;
    for (int64_t pair = 0; pair < k_pairs; ++pair) {
      for (int j = 0; j < kBf16GemmNr; ++j) {
        const int n = panel * kBf16GemmNr + j;
        for (int half = 0; half < 2; ++half) {
          const int64_t k = pair * 2 + half;
          const bool inside = n < desc.n && k < desc.k;
          *out++ = inside ? bf16_from_float(desc.weights[k * desc.stride_k + n * desc.stride_n]) : uint16_t{0};
        }
      }
    }
  }
  for (int n = 0; n < n_padded; ++n) bias[n] = desc.bias != nullptr && n < desc.n ? desc.bias[n] : 0.0f;
}

int64_t bf16_gemm_scratch_bytes(int64_t k) {
  // The larger of the two variants' (AMX: about 1 MiB of converted rows).
  const int64_t vector_bytes = kBf16GemmMr * bf16_gemm_k_pairs(k) * 4;
  const int64_t amx_bytes = internal::amxbf16::scratch_bytes(bf16_gemm_k_pairs(k));
  const int64_t bytes = std::max(vector_bytes, amx_bytes);
  return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
}

std::string bf16_gemm_kernel_name(Bf16GemmVariant variant) {
  const int mr = variant == Bf16GemmVariant::kAmxBf16 ? 32 : kBf16GemmMr;
  return "bf16-gemm-" + std::to_string(mr) + "x" + std::to_string(kBf16GemmNr) + "-" + isa_suffix(variant);
}

void run_bf16_gemm(Bf16GemmVariant variant, const Bf16GemmWeights& weights, const float* a, int64_t a_row_stride,
                   float* c, int64_t c_row_stride, const Bf16GemmEpilogue& epilogue, int64_t m_begin, int64_t m_end,
                   int n_begin, int n_end, void* scratch) {
  assert(n_begin % kBf16GemmNr == 0 && n_end <= weights.n);
  if (variant == Bf16GemmVariant::kAmxBf16) {
    internal::amxbf16::run(weights, a, a_row_stride, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end,
                           scratch);
    return;
  }
  const bool vector = variant == Bf16GemmVariant::kAvx512Bf16;
  const internal::Bf16UkernelFn ukernel =
      vector ? internal::avx512bf16::bf16_gemm_ukernel : internal::scalar::bf16_gemm_ukernel;
  const internal::Bf16ConvertFn convert = vector ? internal::avx512bf16::bf16_convert : internal::scalar::bf16_convert;
  const int64_t k = weights.k, k_pairs = bf16_gemm_k_pairs(k), k_even = k & ~int64_t{1};
  const int64_t panel_elements = k_pairs * kBf16GemmNr * 2;
  const int panels_per_block =
      static_cast<int>(std::max<int64_t>(1, kPanelBlockBytes / (panel_elements * static_cast<int64_t>(sizeof(uint16_t)))));
  auto* a_pairs = static_cast<uint32_t*>(scratch);
  auto* a_bf16 = static_cast<uint16_t*>(scratch);

  internal::Bf16UkernelArgs args;
  args.k_pairs = k_pairs;
  args.a = a_pairs;
  args.a_row_pairs = k_pairs;
  args.c_row_stride = c_row_stride;
  args.residual_row_stride = epilogue.residual_row_stride;
  args.min = epilogue.min;
  args.max = epilogue.max;
  for (int block_begin = n_begin; block_begin < n_end; block_begin += panels_per_block * kBf16GemmNr) {
    const int block_end = std::min(n_end, block_begin + panels_per_block * kBf16GemmNr);
    for (int64_t m0 = m_begin; m0 < m_end; m0 += kBf16GemmMr) {
      const int mr = static_cast<int>(std::min<int64_t>(kBf16GemmMr, m_end - m0));
      for (int r = 0; r < mr; ++r) {
        const float* row = a + (m0 + r) * a_row_stride;
        uint16_t* out = a_bf16 + static_cast<int64_t>(r) * k_pairs * 2;
        convert(row, k_even, out);
        if (k_even != k) {  // an odd K's last pair: (a[k - 1], 0), as the packed weights
          out[k_even] = bf16_from_float(row[k_even]);
          out[k_even + 1] = 0;
        }
      }
      args.mr = mr;
      for (int column = block_begin; column < block_end; column += kBf16GemmNr) {
        args.nc = std::min(kBf16GemmNr, block_end - column);
        args.w = weights.data + static_cast<int64_t>(column / kBf16GemmNr) * panel_elements;
        args.bias = weights.bias + column;
        args.c = c + m0 * c_row_stride + column;
        args.residual =
            epilogue.residual != nullptr ? epilogue.residual + m0 * epilogue.residual_row_stride + column : nullptr;
        ukernel(args);
      }
    }
  }
}

}  // namespace qdqrt::kernels
