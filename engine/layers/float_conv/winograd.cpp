// winograd: NHWC fp32 Conv of group 1, 3x3 stride 1 (pads <= 1), from kWinogradMinTiles 2x2
// output tiles per run (conv.h): F(2x2, 3x3) (kernels/fp32/fp32_winograd.h) on the igemm's microkernel, 2.25x fewer
// multiplies; per-thread scratch for the transformed tiles. Work items: (block of output
// channels, microkernel tile of 2x2 output tiles).
#include <fmt/format.h>

#include "engine/layers/float_conv/conv.h"

namespace qdqrt::engine::fp32::conv {

namespace {

Result<Verdict> accepts(const ConvCandidate& candidate) {
  const ConvGeometry& g = candidate.g;
  if (auto why = nhwc_kernels_decline(g)) return Verdict::decline(*why);
  if (g.group != 1) return Verdict::decline("group is not 1");
  if (!winograd_applies(g)) return Verdict::decline("not a 3x3 stride-1 undilated window with pads <= 1");
  const int64_t tiles = winograd_tiles(g, candidate.batch);
  if (tiles < kWinogradMinTiles) {
    return Verdict::decline(fmt::format("{} 2x2 output tiles per run ({} image{}), fewer than {}", tiles,
                                        candidate.batch, candidate.batch == 1 ? "" : "s", kWinogradMinTiles));
  }
  return Verdict::take();
}

PlanLayer lower(const Node& node, const ConvGeometry& g, const Tensor& weight, const Tensor* bias, kernels::Isa isa,
                const kernels::Fp32Kernels&) {
  const kernels::PackedWinogradF32 packed =
      kernels::pack_winograd_f32(static_cast<int>(g.out_channels), static_cast<int>(g.channels), weight.data<float>(),
                                 bias != nullptr ? bias->data<float>() : nullptr, isa);
  PlanLayer layer = make_layer(node, kKind, kernels::winograd_f32_kernel_name(isa));
  params::kWeights.write_bytes(layer, packed.data.data(), packed.data.size() * sizeof(float));
  params::kBias.write_bytes(layer, packed.bias.data(), packed.bias.size() * sizeof(float));
  ConvGeometry winograd = g;
  winograd.mode = ConvMode::kWinograd;
  layer.scratch_bytes = scratch_floats(winograd, isa) * static_cast<int64_t>(sizeof(float));
  return layer;
}

Status check(const BindContext& context, const ConvGeometry& g) {
  if (!winograd_applies(g))
    return context.error("winograd mode needs group 1 and a 3x3 stride-1 window with pads <= 1");
  return Status::ok();
}

Status read_weights(const BindContext& context, const ConvGeometry& g, kernels::Isa isa, NhwcWeights& weights) {
  const int channels = static_cast<int>(g.channels), out_channels = static_cast<int>(g.out_channels);
  if (static_cast<int64_t>(scratch_floats(g, isa) * sizeof(float)) > context.layer().scratch_bytes) {
    return context.error(fmt::format("scratch_bytes {} is less than the {} the Winograd tiles need",
                                     context.layer().scratch_bytes, scratch_floats(g, isa) * sizeof(float)));
  }
  const int64_t floats = kernels::packed_winograd_f32_floats(out_channels, channels, isa);
  QDQRT_ASSIGN_OR_RETURN(const float* packed, params::kWeights.read(context, floats));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kBias.read(context, kernels::sgemm_padded_n(out_channels, isa)));
  weights.winograd = kernels::packed_winograd_f32_view(out_channels, channels, isa, packed, bias);
  return Status::ok();
}

}  // namespace

const ConvImplementation kWinogradImplementation{.name = "winograd",
                                                 .mode = ConvMode::kWinograd,
                                                 .accepts = accepts,
                                                 .lower = lower,
                                                 .check = check,
                                                 .read_weights = read_weights};

}  // namespace qdqrt::engine::fp32::conv
