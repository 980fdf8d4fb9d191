// igemm: NHWC fp32 Conv on the fp32 igemm (kernels/fp32/fp32_sgemm.h), weights packed at build. A
// 1x1 conv reads the activations in place; a KxK one gathers its taps through row pointers (no
// im2col). Group 1, or 1 < group < C (ResNeXt, RegNet) as blocks of groups, each a dense conv with
// zeros off the groups' diagonal (kernels/fp32/fp32_grouped.h). Group 1 with taps that read only
// padding for part of the output (dilated convs on small maps): those taps left out per row tile
// (kernels/fp32/fp32_live_taps.h). Work items: (block of output
// channels, microkernel tile of output pixels).
#include <algorithm>
#include <vector>

#include "engine/layers/float_conv/conv.h"
#include "kernels/fp32/fp32_live_taps.h"

namespace qdqrt::engine::fp32::conv {

PlanLayer lower_sgemm_packed(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias,
                             kernels::Isa isa, bool direct) {
  const int taps = static_cast<int>(g.kernel_h * g.kernel_w);
  const float* bias_data = bias != nullptr ? bias->data<float>() : nullptr;
  if (g.group != 1) {
    const kernels::PackedGroupedSgemm packed =
        kernels::pack_grouped_sgemm(weight.data<float>(), bias_data, static_cast<int>(g.out_channels),
                                    static_cast<int>(g.in_per_group()), taps, static_cast<int>(g.group), isa);
    PlanLayer layer = make_layer(node, kKind, kernels::grouped_sgemm_kernel_name(isa));
    // One blob each: the full blocks' packing, then the tail block's.
    std::vector<float> data(static_cast<size_t>(packed.layout.floats())), bias_values;
    std::copy(packed.full.data.data(), packed.full.data.data() + packed.full.data.size(), data.begin());
    std::copy(packed.tail.data.data(), packed.tail.data.data() + packed.tail.data.size(),
              data.begin() + packed.layout.full_floats);
    bias_values.assign(packed.full.bias.data(), packed.full.bias.data() + packed.full.bias.size());
    bias_values.insert(bias_values.end(), packed.tail.bias.data(), packed.tail.bias.data() + packed.tail.bias.size());
    params::kWeights.write_bytes(layer, data.data(), data.size() * sizeof(float));
    params::kBias.write_bytes(layer, bias_values.data(), bias_values.size() * sizeof(float));
    return layer;
  }
  kernels::SgemmWeightsDesc desc;
  desc.n = static_cast<int>(g.out_channels);
  desc.taps = taps;
  desc.channels = static_cast<int>(g.channels);
  desc.weights = weight.data<float>();
  desc.stride_n = static_cast<int64_t>(g.channels) * taps;
  desc.stride_tap = 1;
  desc.stride_channel = taps;
  desc.bias = bias_data;
  const kernels::PackedSgemm packed = kernels::pack_sgemm(desc, isa);
  // The layer runs run_sconv_live_taps where it applies (NhwcConvLayer decides the same at binding).
  const bool live_taps = !direct && kernels::sconv_live_taps_apply(packed, conv_geometry(g));
  PlanLayer layer =
      make_layer(node, kKind,
                 direct ? kernels::direct_nchw_f32_kernel_name(packed)
                        : kernels::sgemm_kernel_name(packed, taps > 1 || g.stride_h > 1 || g.stride_w > 1) +
                              (live_taps ? " + live taps" : ""));
  params::kWeights.write_bytes(layer, packed.data.data(), packed.data.size() * sizeof(float));
  params::kBias.write_bytes(layer, packed.bias.data(), packed.bias.size() * sizeof(float));
  return layer;
}

Status read_sgemm_weights(const BindContext& context, const ConvGeometry& g, kernels::Isa isa, NhwcWeights& weights) {
  const int64_t taps = g.kernel_h * g.kernel_w;
  const int channels = static_cast<int>(g.channels), out_channels = static_cast<int>(g.out_channels);
  if (g.group != 1) {
    const kernels::GroupedSgemmLayout layout = kernels::grouped_sgemm_layout(
        out_channels, static_cast<int>(g.in_per_group()), static_cast<int>(taps), static_cast<int>(g.group), isa);
    QDQRT_ASSIGN_OR_RETURN(const float* packed, params::kWeights.read(context, layout.floats()));
    QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, layout.bias_floats()));
    weights.grouped = kernels::packed_grouped_sgemm_view(layout, static_cast<int>(taps), isa, packed, bias);
    return Status::ok();
  }
  const int64_t floats = kernels::packed_sgemm_floats(out_channels, taps * g.channels, isa);
  QDQRT_ASSIGN_OR_RETURN(const float* packed, params::kWeights.read(context, floats));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, kernels::sgemm_padded_n(out_channels, isa)));
  weights.gemm = kernels::packed_sgemm_view(out_channels, static_cast<int>(taps), channels, isa, packed, bias);
  return Status::ok();
}

Status check_group_one(const BindContext& context, const ConvGeometry& g) {
  if (g.group != 1) return context.error("direct_nchw mode needs group 1");
  return Status::ok();
}

namespace {

Result<Verdict> accepts(const ConvCandidate& candidate) {
  // nhwc_kernels_decline takes group 1, depthwise, and groups that fill panels in blocks.
  if (auto why = nhwc_kernels_decline(candidate.g)) return Verdict::decline(*why);
  if (candidate.g.depthwise() && candidate.g.group != 1) return Verdict::decline("depthwise");
  return Verdict::take();
}

PlanLayer lower(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias, kernels::Isa isa,
                const kernels::Fp32Kernels&) {
  return lower_sgemm_packed(node, g, weight, bias, isa, false);
}

Status check(const BindContext& context, const ConvGeometry& g) {
  if (g.depthwise() && g.group != 1) return context.error("igemm mode takes no depthwise conv");
  if (auto why = nhwc_kernels_decline(g)) return context.error(fmt::format("igemm mode: {}", *why));
  return Status::ok();
}

}  // namespace

const ConvImplementation kIgemmImplementation{.name = "igemm",
                                              .mode = ConvMode::kIgemm,
                                              .accepts = accepts,
                                              .lower = lower,
                                              .check = check,
                                              .read_weights = read_sgemm_weights};

}  // namespace qdqrt::engine::fp32::conv
