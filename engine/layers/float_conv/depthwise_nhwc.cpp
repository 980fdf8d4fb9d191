// depthwise_nhwc: NHWC fp32 Conv with group == C == OC on the fp32 depthwise kernel
// (kernels/fp32), the NHWC epilogue. Work items: (block of channels, output row).
#include "engine/layers/float_conv/conv.h"

namespace qdqrt::engine::fp32::conv {

namespace {

Result<Verdict> accepts(const ConvCandidate& candidate) {
  if (auto why = nhwc_kernels_decline(candidate.g)) return Verdict::decline(*why);
  if (!candidate.g.depthwise()) return Verdict::decline("group is not input channels == output channels");
  return Verdict::take();
}

PlanLayer lower(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias, kernels::Isa isa,
                const kernels::Fp32Kernels&) {
  const kernels::PackedDepthwiseF32 packed =
      kernels::pack_depthwise_f32(static_cast<int>(g.channels), static_cast<int>(g.kernel_h * g.kernel_w),
                                  weight.data<float>(), bias != nullptr ? bias->data<float>() : nullptr, isa);
  PlanLayer layer = make_layer(node, kKind, kernels::depthwise_f32_kernel_name(packed));
  params::kWeights.write_bytes(layer, packed.weights.data(), packed.weights.size() * sizeof(float));
  params::kBias.write_bytes(layer, packed.bias.data(), packed.bias.size() * sizeof(float));
  return layer;
}

Status check(const BindContext& context, const ConvGeometry& g) {
  if (!g.depthwise()) return context.error("depthwise mode needs group == input channels == output channels");
  return Status::ok();
}

Status read_weights(const BindContext& context, const ConvGeometry& g, kernels::Isa isa, NhwcWeights& weights) {
  const int channels = static_cast<int>(g.channels);
  const int64_t taps = g.kernel_h * g.kernel_w;
  const int64_t padded = kernels::depthwise_f32_padded_channels(channels);
  QDQRT_ASSIGN_OR_RETURN(const float* packed, params::kWeights.read(context, padded * taps));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, padded));
  weights.depthwise = kernels::packed_depthwise_f32_view(channels, static_cast<int>(taps), isa, packed, bias);
  return Status::ok();
}

}  // namespace

const ConvImplementation kDepthwiseNhwcImplementation{.name = "depthwise_nhwc",
                                                      .mode = ConvMode::kDepthwiseNhwc,
                                                      .accepts = accepts,
                                                      .lower = lower,
                                                      .check = check,
                                                      .read_weights = read_weights};

}  // namespace qdqrt::engine::fp32::conv
