// bf16_gemm: a float Gemm, or MatMul with a constant B, in bf16 with fp32 sums
// (kernels/bf16/bf16_gemm.h), when the build asks for it (BuildOptions::bf16, `qdqrt exec --bf16`)
// and the CPU runs the bf16 kernel. Y[rows, N] = A[rows, K] x (alpha * B) + bias, the same
// operands and batch handling as fp32_gemm (float_gemm.cpp), which lowers to this layer; alpha * B
// is rounded to bf16 once at build, each run rounds A's rows to bf16 into the thread's scratch.
// The kernel is the AMX-BF16 one (32-row tiles) where the builder's CPU has it, else the
// AVX512_BF16 one (14 rows); the `amx` param records which. Work items: (column block, row tile),
// ColumnBlockSplit as fp32_gemm. A FusedMatMul's GELU (`gelu` param) runs over each block of the
// output right after the kernel wrote it (fp32_unary's Gelu, in cache). Nothing allocates in run().
#include <algorithm>

#include <fmt/format.h>

#include "engine/layers/float_common.h"
#include "kernels/bf16/bf16_gemm.h"

namespace qdqrt::engine::fp32 {

namespace {

constexpr const char* kBf16GemmKind = "bf16_gemm";

class Bf16GemmLayer final : public Layer {
 public:
  Bf16GemmLayer(kernels::Bf16GemmWeights weights, kernels::Bf16GemmVariant variant, const kernels::Fp32UnaryFn gelu,
                int32_t input, int32_t output)
      : weights_(weights), variant_(variant), mr_(variant == kernels::Bf16GemmVariant::kAmxBf16 ? 32 : kernels::kBf16GemmMr),
        gelu_(gelu), input_(input), output_(output) {}

  WorkShape work(const RunState& state) const override {
    const ColumnBlockSplit split = work_split(state);
    return {.items = split.items(),
            .ops_per_item = 2.0 * static_cast<double>(mr_) * static_cast<double>(weights_.n) /
                            static_cast<double>(split.column_blocks) * static_cast<double>(weights_.k)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const override {
    const int64_t rows = this->rows(state);
    const float* a = state.data<float>(input_);
    float* y = state.data<float>(output_);
    work_split(state).for_each_call(begin, end, [&](int64_t first, int64_t last, int64_t column_begin, int64_t column_end) {
      const int64_t row_end = std::min(rows, last * mr_);
      kernels::run_bf16_gemm(variant_, weights_, a, weights_.k, y, weights_.n, {}, first * mr_, row_end,
                             static_cast<int>(column_begin), static_cast<int>(column_end), scratch.data());
      if (gelu_ == nullptr) return;
      for (int64_t row = first * mr_; row < row_end; ++row) {
        float* out = y + row * weights_.n + column_begin;
        gelu_(kernels::Fp32UnaryOp::kGelu, {}, static_cast<size_t>(column_end - column_begin), out, out);
      }
    });
  }

 private:
  int64_t rows(const RunState& state) const { return state.numel(input_) / weights_.k; }
  ColumnBlockSplit work_split(const RunState& state) const {
    return ColumnBlockSplit((rows(state) + mr_ - 1) / mr_, weights_.n, kernels::kBf16GemmNr);
  }

  kernels::Bf16GemmWeights weights_;
  kernels::Bf16GemmVariant variant_;
  int64_t mr_;
  kernels::Fp32UnaryFn gelu_;  // null: no GELU
  int32_t input_, output_;
};

Result<std::unique_ptr<Layer>> bind_bf16_gemm(const BindContext& context) {
  QDQRT_BIND_ASSIGN(const PlanTensor* a, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_ASSIGN_OR_RETURN(int64_t k, params::kK.read(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t n, params::kN.read(context));
  QDQRT_RETURN_IF_ERROR(check_gemm_tensors(context, *a, *y, k, n));
  QDQRT_ASSIGN_OR_RETURN(bool amx, params::kBf16Amx.read(context));
  if (!kernels::bf16_gemm_usable()) {
    return context.error(fmt::format("the bf16 kernel needs AVX512_BF16: {}", kernels::bf16_gemm_unavailable_reason()));
  }
  if (amx && !kernels::bf16_amx_usable()) {
    return context.error(fmt::format("the bf16 kernel needs AMX-BF16: {}", kernels::bf16_amx_unavailable_reason()));
  }
  if (context.layer().scratch_bytes < kernels::bf16_gemm_scratch_bytes(k)) {
    return context.error(fmt::format("scratch_bytes {} is less than the {} the bf16 rows of one tile need",
                                     context.layer().scratch_bytes, kernels::bf16_gemm_scratch_bytes(k)));
  }
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  QDQRT_ASSIGN_OR_RETURN(const uint16_t* weights,
                         params::kBf16Weights.read(context, kernels::packed_bf16_gemm_elements(ni, k)));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, kernels::bf16_gemm_padded_n(ni)));
  const kernels::Bf16GemmVariant variant = amx ? kernels::Bf16GemmVariant::kAmxBf16 : kernels::Bf16GemmVariant::kAvx512Bf16;
  bool gelu = false;
  if (context.layer().params.has(std::string(params::kBf16Gelu.key()))) {
    QDQRT_ASSIGN_OR_RETURN(gelu, params::kBf16Gelu.read(context));
  }
  const kernels::Fp32UnaryFn unary = gelu ? kernels::fp32_kernels(bind_isa(context.plan())).unary.fn : nullptr;
  return std::unique_ptr<Layer>(std::make_unique<Bf16GemmLayer>(kernels::Bf16GemmWeights{ni, ki, weights, bias}, variant,
                                                                unary, context.layer().inputs[0],
                                                                context.layer().outputs[0]));
}

}  // namespace

Status add_bf16_gemm_layer(const Node& node, BuildContext& context, const float* values, int64_t k, int64_t n,
                           bool trans_b, const std::vector<float>& bias, bool gelu, int32_t input, int32_t output) {
  kernels::Bf16GemmWeightsDesc desc;
  desc.n = static_cast<int>(n);
  desc.k = static_cast<int>(k);
  desc.weights = values;
  desc.stride_k = trans_b ? 1 : n;
  desc.stride_n = trans_b ? k : 1;
  desc.bias = bias.empty() ? nullptr : bias.data();
  kernels::AlignedBuffer<uint16_t> packed(static_cast<size_t>(kernels::packed_bf16_gemm_elements(desc.n, k)));
  kernels::AlignedBuffer<float> padded_bias(static_cast<size_t>(kernels::bf16_gemm_padded_n(desc.n)));
  kernels::pack_bf16_gemm(desc, packed.data(), padded_bias.data());
  // AMX where the plan's ISA allows AMX tiles (BuildOptions::max_isa too, not only QDQRT_MAX_ISA).
  const kernels::Bf16GemmVariant variant = context.isa() == kernels::Isa::kAmxInt8
                                               ? kernels::best_bf16_gemm_variant()
                                               : kernels::Bf16GemmVariant::kAvx512Bf16;
  PlanLayer layer = make_layer(node, kBf16GemmKind, kernels::bf16_gemm_kernel_name(variant));
  layer.inputs = {input};
  layer.outputs = {output};
  layer.scratch_bytes = kernels::bf16_gemm_scratch_bytes(k);
  params::kK.write(layer, k);
  params::kN.write(layer, n);
  params::kBf16Amx.write(layer, variant == kernels::Bf16GemmVariant::kAmxBf16);
  params::kBf16Weights.write_bytes(layer, packed.data(), packed.size() * sizeof(uint16_t));
  params::kBias.write_bytes(layer, padded_bias.data(), padded_bias.size() * sizeof(float));
  if (gelu) params::kBf16Gelu.write(layer, true);
  context.add_layer(std::move(layer));
  return Status::ok();
}

void register_bf16_gemm(LayerRegistry& registry) {
  registry.add_kind({.kind = kBf16GemmKind, .bind = bind_bf16_gemm, .any_batch_layout = true});
}

}  // namespace qdqrt::engine::fp32
