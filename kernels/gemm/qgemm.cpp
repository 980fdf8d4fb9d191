#include "kernels/gemm/qgemm.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <span>
#include <type_traits>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/scratch.h"

namespace qdqrt::kernels {

namespace {
int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

template <typename Source>
inline int32_t load_weight(const Source* p) {
  return static_cast<int32_t>(*p);
}

// Writes W (minus `shift`) into [tiles][k_groups][nr][k_group] without a division per element and
// returns each column's sum in `sums`.
template <typename Out, typename Source>
void pack_columns_from(const GemmWeightsDesc& desc, const Source* weights, int nr, int k_group, int k_groups, Out* out,
                       int32_t* sums, int32_t shift) {
  const int64_t group_stride = static_cast<int64_t>(nr) * k_group;
  for (int n = 0; n < desc.n; ++n) {
    Out* column = out + (static_cast<int64_t>(n / nr) * k_groups * nr + n % nr) * k_group;
    const Source* source = weights + n * desc.stride_n;
    int32_t sum = 0;
    int k = 0;
    for (int g = 0; k < desc.k; ++g) {
      Out* group = column + g * group_stride;
      for (int e = 0; e < k_group && k < desc.k; ++e, ++k) {
        const int32_t w = load_weight(source + k * desc.stride_k) - shift;
        group[e] = static_cast<Out>(w);
        sum += w;
      }
    }
    sums[n] = sum;
  }
}

// Fast paths for the int8 layout with k groups of 4 (run-time packing of attention operands).
// B^T given as [N][K] (stride_k == 1): whole groups of 4 bytes are copied at once.
void pack_rows_k_contiguous(const GemmWeightsDesc& desc, int nr, int k_groups, int8_t* out, int32_t* sums,
                            uint8_t flip) {
  const int64_t group_stride = static_cast<int64_t>(nr) * 4;
  const int full_groups = desc.k / 4;
  for (int n = 0; n < desc.n; ++n) {
    int8_t* column = out + (static_cast<int64_t>(n / nr) * k_groups * nr + n % nr) * 4;
    const uint8_t* source = static_cast<const uint8_t*>(desc.weights) + n * desc.stride_n;
    int32_t sum = 0;
    for (int g = 0; g < full_groups; ++g) {
      int8_t* group = column + g * group_stride;
      for (int e = 0; e < 4; ++e) {
        const int8_t w = static_cast<int8_t>(source[4 * g + e] ^ flip);
        group[e] = w;
        sum += w;
      }
    }
    for (int k = full_groups * 4; k < desc.k; ++k) {
      const int8_t w = static_cast<int8_t>(source[k] ^ flip);
      column[full_groups * group_stride + (k - full_groups * 4)] = w;
      sum += w;
    }
    sums[n] = sum;
  }
}

// B given as [K][N] (stride_n == 1): four source rows are interleaved into each k group.
void pack_rows_n_contiguous(const GemmWeightsDesc& desc, int nr, int k_groups, int8_t* out, int32_t* sums,
                            uint8_t flip) {
  for (int n = 0; n < desc.n; ++n) sums[n] = 0;
  const uint8_t* base = static_cast<const uint8_t*>(desc.weights);
  for (int g = 0; g < k_groups; ++g) {
    const int k0 = 4 * g;
    const int rows = std::min(4, desc.k - k0);
    for (int n0 = 0; n0 < desc.n; n0 += nr) {
      int8_t* group = out + (static_cast<int64_t>(n0 / nr) * k_groups + g) * nr * 4;
      const int columns = std::min(nr, desc.n - n0);
      for (int e = 0; e < rows; ++e) {
        const uint8_t* row = base + (k0 + e) * desc.stride_k + n0;
        for (int col = 0; col < columns; ++col) {
          const int8_t w = static_cast<int8_t>(row[col] ^ flip);
          group[col * 4 + e] = w;
          sums[n0 + col] += w;
        }
      }
    }
  }
}

template <typename Out>
void pack_columns(const GemmWeightsDesc& desc, int nr, int k_group, int k_groups, Out* out, int32_t* sums,
                  int32_t shift) {
  if constexpr (std::is_same_v<Out, int8_t>) {
    // Unsigned sources become signed with the same xor 0x80 (= -128) the kernels apply to A.
    const uint8_t flip = desc.weights_signed ? 0x00 : 0x80;
    if (k_group == 4 && desc.stride_k == 1) return pack_rows_k_contiguous(desc, nr, k_groups, out, sums, flip);
    if (k_group == 4 && desc.stride_n == 1) return pack_rows_n_contiguous(desc, nr, k_groups, out, sums, flip);
  }
  if (desc.weights_signed) {
    pack_columns_from(desc, static_cast<const int8_t*>(desc.weights), nr, k_group, k_groups, out, sums, shift);
  } else {
    pack_columns_from(desc, static_cast<const uint8_t*>(desc.weights), nr, k_group, k_groups, out, sums, shift);
  }
}
}  // namespace

namespace {
const internal::GemmImplementation& packing_implementation(const GemmWeightsDesc& desc, Isa isa, int nr) {
  if (nr != 0) {
    if (const internal::GemmImplementation* exact = gemm_implementation(isa, nr)) return *exact;
  }
  return choose_gemm_implementation(isa, desc.n);
}

// The implementation that runs `packed` (its ISA and tile width).
const internal::GemmImplementation& running_implementation(const PackedGemm& packed) {
  const internal::GemmImplementation* impl = gemm_implementation(packed.isa, packed.nr);
  assert(impl != nullptr && impl->isa == packed.isa && "packed for a tile this machine does not support");
  return *impl;
}
}  // namespace

void pack_gemm(const GemmWeightsDesc& desc, Isa isa, PackedGemm& packed, int nr) {
  const internal::GemmImplementation& impl = packing_implementation(desc, isa, nr);
  packed.isa = impl.isa;
  packed.n = desc.n;
  packed.k = desc.k;
  packed.nr = impl.nr;
  packed.k_group = impl.k_group;
  packed.element_size = impl.element_size;
  // AMX-INT8 pads k to whole 64-byte tile steps: the kernel then runs full steps only (the
  // products of the zero weights add nothing), where a ragged k cost zero-padded copies of its
  // tail for every 32x32 block (docs/decisions.md).
  packed.k_padded = static_cast<int>(packed_k_padded(impl.isa, impl.k_group, desc.k));
  packed.n_padded = round_up(std::max(desc.n, 1), impl.nr);
  packed.input_signed = desc.input_signed;
  packed.input_zero_point = desc.input_zero_point;
  // Everything below is in the kernel's domain: unsigned activations, signed weights.
  const int32_t weight_shift = desc.weights_signed ? 0 : 128;
  packed.weight_zero_point_s8 = desc.weight_zero_point - weight_shift;
  const uint32_t input_zero_point_u8 = static_cast<uint32_t>(desc.input_zero_point + (desc.input_signed ? 128 : 0));
  const uint32_t weight_zero_point_s8 = static_cast<uint32_t>(packed.weight_zero_point_s8);

  packed.data.resize(static_cast<size_t>(packed.n_padded) * packed.k_padded * packed.element_size);
  packed.bias.resize(packed.n_padded);
  packed.multiplier.resize(packed.n_padded);
  packed.float_bias.resize(packed.n_padded);
  const int k_groups = packed.k_padded / impl.k_group;
  // Run-time packing (batched MatMul) must not allocate once warmed up: per-thread scratch.
  std::span<int32_t> weight_sums(reinterpret_cast<int32_t*>(internal::thread_scratch(
                                     internal::ScratchSlot::kWeightSums, sizeof(int32_t) * desc.n)),
                                 static_cast<size_t>(desc.n));
  if (impl.element_size == 1) {
    pack_columns<int8_t>(desc, impl.nr, impl.k_group, k_groups, packed.data.data(), weight_sums.data(), weight_shift);
  } else {
    pack_columns<int16_t>(desc, impl.nr, impl.k_group, k_groups, reinterpret_cast<int16_t*>(packed.data.data()),
                          weight_sums.data(), weight_shift);
  }
  for (int n = 0; n < desc.n; ++n) {
    const int32_t weight_sum = weight_sums[n];
    // bias - a_zp * sum(w) + K * a_zp * w_zp, in wrapping 32-bit arithmetic like the accumulators.
    uint32_t bias = desc.bias_int32 ? static_cast<uint32_t>(desc.bias_int32[n]) : 0u;
    bias -= input_zero_point_u8 * static_cast<uint32_t>(weight_sum);
    bias += static_cast<uint32_t>(desc.k) * input_zero_point_u8 * weight_zero_point_s8;
    packed.bias[n] = static_cast<int32_t>(bias);
    packed.multiplier[n] = gemm_multiplier(desc, n);
    packed.float_bias[n] = gemm_float_bias(desc, n);
  }
  update_gemm_bound(packed);
}

void update_gemm_bound(PackedGemm& packed) {
  // |sum_k a * w| <= 255 * 128 * K for u8 a and s8 w; the row term -w_zp * sum_k a adds at most
  // 255 * K * |w_zp|. int32 accumulation wraps like the reference's, so never more than 2^31.
  const double products = 255.0 * packed.k * (128.0 + std::fabs(static_cast<double>(packed.weight_zero_point_s8)));
  packed.bounded = true;
  for (int n = 0; n < packed.n; ++n) {
    const double largest_accumulator = std::min(0x1p31, std::fabs(static_cast<double>(packed.bias[n])) + products);
    const double largest = largest_accumulator * std::fabs(static_cast<double>(packed.multiplier[n])) +
                           std::fabs(static_cast<double>(packed.float_bias[n]));
    if (!(largest < 0x1p30)) {  // also false for NaN
      packed.bounded = false;
      return;
    }
  }
}

PackedGemm pack_gemm(const GemmWeightsDesc& desc, Isa isa, int nr) {
  PackedGemm packed;
  pack_gemm(desc, isa, packed, nr);
  return packed;
}

void run_gemm(const PackedGemm& packed, const GemmArgs& args, const Epilogue& epilogue, int m_begin, int m_end,
              int n_begin, int n_end) {
  const internal::GemmImplementation& impl = running_implementation(packed);
  assert(n_begin % packed.nr == 0);
  internal::ASource source;
  source.data = args.a;
  source.row_stride = args.a_row_stride;
  source.next = args.next;
  impl.run(packed, source, args.c, args.c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

void run_conv_gemm(const PackedGemm& packed, const ConvGeometry& geometry, const ConvArgs& args,
                   const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  const internal::GemmImplementation& impl = running_implementation(packed);
  assert(n_begin % packed.nr == 0);
  assert(packed.k == geometry.kernel_height * geometry.kernel_width * geometry.group_channels);
  internal::ASource source;
  source.data = args.input;
  source.conv = &geometry;
  source.next = args.next;
  impl.run(packed, source, args.c, args.c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

std::string gemm_kernel_name(const PackedGemm& packed, bool convolution, int m) {
  // A description that was never packed (nr 0) is named after the tile packing would pick.
  const internal::GemmImplementation* tile = gemm_implementation(packed.isa, packed.nr);
  const internal::GemmImplementation& impl = tile != nullptr ? *tile : choose_gemm_implementation(packed.isa, packed.n);
  std::string name = packed.input_signed ? "qs8" : "qu8";
  name += packed.weight_zero_point_s8 != 0 ? "-qa8w-" : "-qc8w-";
  const bool gemv = m == 1 && !convolution;
  name += convolution ? "igemm-" : gemv ? "gemv-" : "gemm-";
  name += std::to_string(gemv ? 1 : impl.mr) + "x" + std::to_string(impl.nr) + "c" + std::to_string(impl.k_group);
  name += "-fp32-";
  name += isa_name(packed.isa);
  return name;
}

}  // namespace qdqrt::kernels
