// igemm: NHWC fp32 Conv of group 1 on the fp32 igemm (kernels/fp32/fp32_sgemm.h), weights packed
// at build. A 1x1 conv reads the activations in place; a KxK one gathers its taps through row
// pointers (no im2col). Work items: (block of output channels, microkernel tile of output pixels).
#include "engine/layers/float_conv/conv.h"

namespace qdqrt::engine::fp32::conv {

PlanLayer lower_sgemm_packed(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias,
                             kernels::Isa isa, bool direct) {
  const int taps = static_cast<int>(g.kernel_h * g.kernel_w);
  kernels::SgemmWeightsDesc desc;
  desc.n = static_cast<int>(g.out_channels);
  desc.taps = taps;
  desc.channels = static_cast<int>(g.channels);
  desc.weights = weight.data<float>();
  desc.stride_n = static_cast<int64_t>(g.channels) * taps;
  desc.stride_tap = 1;
  desc.stride_channel = taps;
  desc.bias = bias != nullptr ? bias->data<float>() : nullptr;
  const kernels::PackedSgemm packed = kernels::pack_sgemm(desc, isa);
  PlanLayer layer =
      make_layer(node, kKind,
                 direct ? kernels::direct_nchw_f32_kernel_name(packed)
                        : kernels::sgemm_kernel_name(packed, taps > 1 || g.stride_h > 1 || g.stride_w > 1));
  params::kWeights.write_bytes(layer, packed.data.data(), packed.data.size() * sizeof(float));
  params::kBias.write_bytes(layer, packed.bias.data(), packed.bias.size() * sizeof(float));
  return layer;
}

Status read_sgemm_weights(const BindContext& context, const ConvGeometry& g, kernels::Isa isa, NhwcWeights& weights) {
  const int64_t taps = g.kernel_h * g.kernel_w;
  const int channels = static_cast<int>(g.channels), out_channels = static_cast<int>(g.out_channels);
  const int64_t floats = kernels::packed_sgemm_floats(out_channels, taps * g.channels, isa);
  QDQRT_ASSIGN_OR_RETURN(const float* packed, params::kWeights.read(context, floats));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, kernels::sgemm_padded_n(out_channels, isa)));
  weights.gemm = kernels::packed_sgemm_view(out_channels, static_cast<int>(taps), channels, isa, packed, bias);
  return Status::ok();
}

Status check_group_one(const BindContext& context, const ConvGeometry& g) {
  if (g.group != 1) return context.error("igemm and direct_nchw modes need group 1");
  return Status::ok();
}

namespace {

Result<Verdict> accepts(const ConvCandidate& candidate) {
  if (auto why = nhwc_kernels_decline(candidate.g)) return Verdict::decline(*why);
  if (candidate.g.group != 1) return Verdict::decline("group is not 1");
  return Verdict::take();
}

PlanLayer lower(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias, kernels::Isa isa,
                const kernels::Fp32Kernels&) {
  return lower_sgemm_packed(node, g, weight, bias, isa, false);
}

}  // namespace

const ConvImplementation kIgemmImplementation{.name = "igemm",
                                              .mode = ConvMode::kIgemm,
                                              .accepts = accepts,
                                              .lower = lower,
                                              .check = check_group_one,
                                              .read_weights = read_sgemm_weights};

}  // namespace qdqrt::engine::fp32::conv
