// direct_nchw: the network's image (a graph input stored NCHW, at most 4 channels) read in place,
// NHWC output, group 1: run_direct_nchw_f32 on the igemm's packed weights (the same sums), no
// reorder of the input. Work items: (block of output channels, output row).
#include <fmt/format.h>

#include "engine/layers/float_conv/conv.h"

namespace qdqrt::engine::fp32::conv {

namespace {

Result<Verdict> accepts(const ConvCandidate& candidate) {
  const ConvGeometry& g = candidate.g;
  if (auto why = nhwc_kernels_decline(g)) return Verdict::decline(*why);
  if (g.group != 1) return Verdict::decline("group is not 1");
  if (g.channels > 4) return Verdict::decline(fmt::format("{} input channels, more than 4", g.channels));
  if (!kernels::direct_nchw_f32_applies(static_cast<int>(g.channels), conv_geometry(g))) {
    return Verdict::decline("the window's rows do not fit the kernel's buffer");
  }
  QDQRT_ASSIGN_OR_RETURN(bool plain, candidate.input_is_plain_image());
  if (!plain) return Verdict::decline("the input is not stored as a plain fp32 image with the batch in front");
  return Verdict::take();
}

PlanLayer lower(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias, kernels::Isa isa,
                const kernels::Fp32Kernels&) {
  return lower_sgemm_packed(node, g, weight, bias, isa, true);
}

Status read_weights(const BindContext& context, const ConvGeometry& g, kernels::Isa isa, NhwcWeights& weights) {
  if (!kernels::direct_nchw_f32_applies(static_cast<int>(g.channels), conv_geometry(g))) {
    return context.error("direct_nchw mode needs at most 4 input channels and a window whose rows fit its buffer");
  }
  return read_sgemm_weights(context, g, isa, weights);
}

}  // namespace

const ConvImplementation kDirectNchwImplementation{.name = "direct_nchw",
                                                   .mode = ConvMode::kDirectNchw,
                                                   .accepts = accepts,
                                                   .lower = lower,
                                                   .check = check_group_one,
                                                   .read_weights = read_weights};

}  // namespace qdqrt::engine::fp32::conv
