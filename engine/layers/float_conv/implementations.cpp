// fp32 Conv: the ordered list of implementations, lowering (the first implementation that
// accepts the node) and binding (by the layer's mode). See conv.h for the implementations.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/ops/conv.h"
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "core/ops/window.h"
#include "engine/layers/float_conv/conv.h"

namespace qdqrt::engine::fp32 {
namespace conv {

// In order of preference: the NHWC kernels first (Winograd where it pays, the image read in
// place, the igemm, the depthwise), then the NCHW loops and GEMMs, of which gemm_nchw takes any.
const std::vector<const ConvImplementation*>& conv_implementations() {
  static const std::vector<const ConvImplementation*> list = {
      &kWinogradImplementation,      &kDirectNchwImplementation,    &kIgemmImplementation,
      &kDepthwiseNhwcImplementation, &kDepthwiseNchwImplementation, &kPointwiseNchwImplementation,
      &kGemmNchwImplementation};
  return list;
}

const ConvImplementation* implementation_of(ConvMode mode) {
  for (const ConvImplementation* implementation : conv_implementations()) {
    if (implementation->mode == mode) return implementation;
  }
  return nullptr;
}

Result<ConvChoice> choose_implementation(const ConvCandidate& candidate) {
  ConvChoice choice;
  for (const ConvImplementation* implementation : conv_implementations()) {
    QDQRT_ASSIGN_OR_RETURN(Verdict verdict, implementation->accepts(candidate));
    if (verdict.accepted) {
      choice.implementation = implementation;
      return choice;
    }
    choice.declined.emplace_back(implementation->name, std::move(verdict.reason));
  }
  return internal_error("no fp32 Conv implementation accepts the conv");
}

namespace {

// A FusedConv's epilogue on its NHWC conv layer: the clamp or function, the residual as input 1
// (reordered to NHWC when stored otherwise), its source nodes' names.
Status write_fused_epilogue(const Node& node, BuildContext& context, PlanLayer& layer) {
  const auto& attributes = node.attrs<FusedConvAttributes>();
  QDQRT_RETURN_IF_ERROR(write_conv_epilogue(node, attributes.fused.activation, attributes.function, layer));
  if (node.has_input(layers::kFusedConvResidual)) {
    QDQRT_ASSIGN_OR_RETURN(int32_t residual, context.input(node.input(layers::kFusedConvResidual), Layout::kNhwc));
    layer.inputs.push_back(residual);
  }
  if (!attributes.fused.fused_nodes.empty()) {
    layer.name.clear();
    for (const std::string& source : attributes.fused.fused_nodes) layer.name += (layer.name.empty() ? "" : " + ") + source;
    layer.source_nodes = attributes.fused.fused_nodes;
  }
  layer.op_type = "Conv";
  return Status::ok();
}

Status lower_conv(const Node& node, BuildContext& context) {
  const auto& attributes = node.attrs<ConvAttributes>();
  const Tensor* weight = context.constant(node.input(1));
  const Tensor* bias = node.has_input(2) ? context.constant(node.input(2)) : nullptr;
  if (weight == nullptr || weight->dtype() != DataType::kFloat || weight->rank() != 4 ||
      (node.has_input(2) && (bias == nullptr || bias->dtype() != DataType::kFloat))) {
    return lower_with_reference(node, context);  // runtime weights or bias, or not 2-D
  }
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, context.shape_of(node.input(0)));
  QDQRT_ASSIGN_OR_RETURN(Shape y_shape, context.shape_of(node.outputs[0]));
  if (x_shape.size() != 4 || y_shape.size() != 4) return lower_with_reference(node, context);
  const Shape kernel_shape = {weight->dim(2), weight->dim(3)};
  if (!attributes.kernel_shape.empty() && attributes.kernel_shape != kernel_shape)
    return lower_with_reference(node, context);
  WindowAttributes window{.auto_pad = attributes.auto_pad,
                          .strides = &attributes.strides,
                          .dilations = &attributes.dilations,
                          .pads = &attributes.pads,
                          .ceil_mode = false};
  QDQRT_ASSIGN_OR_RETURN(WindowGeometry window_geometry,
                         resolve_window(node, {x_shape[2], x_shape[3]}, kernel_shape, window));
  ConvGeometry g;
  g.channels = x_shape[1], g.height = x_shape[2], g.width = x_shape[3];
  g.out_channels = y_shape[1], g.out_height = y_shape[2], g.out_width = y_shape[3];
  g.group = attributes.group;
  g.kernel_h = kernel_shape[0], g.kernel_w = kernel_shape[1];
  g.stride_h = window_geometry.strides[1], g.stride_w = window_geometry.strides[2];
  g.dilation_h = window_geometry.dilations[1], g.dilation_w = window_geometry.dilations[2];
  g.pad_top = window_geometry.pads_begin[1], g.pad_left = window_geometry.pads_begin[2];
  g.pad_bottom = window_geometry.pads_end[1], g.pad_right = window_geometry.pads_end[2];
  if (g.group < 1 || g.channels % g.group != 0 || g.out_channels % g.group != 0 || weight->dim(0) != g.out_channels ||
      weight->dim(1) != g.in_per_group() || window_geometry.output[1] != g.out_height ||
      window_geometry.output[2] != g.out_width || (bias != nullptr && bias->numel() != g.out_channels)) {
    return lower_with_reference(node, context);  // let the reference report the inconsistency
  }
  ConvCandidate candidate{.g = g,
                          .batch = std::max<int64_t>(x_shape[0], 1),
                          .input_is_plain_image = [&]() -> Result<bool> {
                            QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.input(0)));
                            const PlanTensor tensor = context.tensor(stored);
                            return tensor.layout == Layout::kPlain && tensor.dtype == DataType::kFloat &&
                                   batch_leads(tensor);
                          }};
  QDQRT_ASSIGN_OR_RETURN(ConvChoice choice, choose_implementation(candidate));
  const ConvImplementation& implementation = *choice.implementation;
  g.mode = implementation.mode;
  const bool fused = node.domain == layers::kDomain;
  // The optimizer fuses only convs the NHWC kernels take; the reference runs any other FusedConv,
  // and a gate or row sums on a conv another implementation runs.
  const bool gated = fused && node.has_input(layers::kFusedConvGate);
  const bool row_sums = fused && node.outputs.size() > layers::kFusedConvRowSums &&
                        !node.outputs[layers::kFusedConvRowSums].empty();
  if ((fused && !is_nhwc(g.mode)) || (gated && (!is_gateable(g) || g.channels > INT32_MAX / 2)) ||
      (row_sums && g.mode != ConvMode::kDepthwiseNhwc)) {
    return lower_with_reference(node, context);
  }
  const kernels::Isa isa = kernels::usable_isa(context.isa());
  const kernels::Fp32Kernels fp32 = kernels::fp32_kernels(isa);
  PlanLayer layer;
  int32_t input = -1, output = -1;
  if (is_nhwc(g.mode)) {
    layer = implementation.lower(node, g, *weight, bias, isa, fp32);
    // A [N, C, 1, 1] input (after GlobalAveragePool) holds the same bytes in both layouts: read as stored.
    QDQRT_ASSIGN_OR_RETURN(
        input, g.height == 1 && g.width == 1
                   ? context.input_as_stored(node.input(0))
                   : context.input(node.input(0), g.mode == ConvMode::kDirectNchw ? Layout::kPlain : Layout::kNhwc));
    QDQRT_ASSIGN_OR_RETURN(output, context.output(node.outputs[0], Layout::kNhwc));
    params::kIsa.write(layer, isa);
    params::kClipMin.write(layer, -std::numeric_limits<double>::infinity());
    params::kClipMax.write(layer, std::numeric_limits<double>::infinity());
    params::kEpilogueFunction.write(layer, kernels::Fp32EpilogueActivation::kNone);
  } else {
    set_nchw_tiles(g);
    layer = implementation.lower(node, g, *weight, bias, isa, fp32);
    QDQRT_ASSIGN_OR_RETURN(input, context.input(node.input(0), Layout::kPlain));
    QDQRT_ASSIGN_OR_RETURN(output, context.output(node.outputs[0], Layout::kPlain));
  }
  layer.inputs = {input};
  layer.outputs = {output};
  if (fused) QDQRT_RETURN_IF_ERROR(write_fused_epilogue(node, context, layer));
  if (gated) {
    // Input 2 (after the residual's slot): the gate [N, C, 1, 1], read as stored (its bytes are the
    // same in both layouts); each run scales the packed weights' input channels by it, per image,
    // into scratch.
    QDQRT_ASSIGN_OR_RETURN(int32_t gate, context.input_as_stored(node.input(layers::kFusedConvGate)));
    layer.inputs.resize(3, -1);
    layer.inputs[2] = gate;
    layer.scratch_bytes =
        std::max(layer.scratch_bytes, scratch_floats(g, isa, /*gated=*/true) * static_cast<int64_t>(sizeof(float)));
  }
  if (row_sums) {
    // Output 1: the per-row channel sums [N, OH, C] a RowSumsGlobalAveragePool reads.
    QDQRT_ASSIGN_OR_RETURN(int32_t sums, context.output(node.outputs[layers::kFusedConvRowSums], Layout::kPlain));
    layer.outputs.push_back(sums);
    layer.kernel += " + row sums";
  }
  write_geometry(layer, g);
  params::kTileRows.write(layer, g.tile_rows);
  params::kOutputChannelBlock.write(layer, g.oc_block);
  context.add_layer(std::move(layer));
  return Status::ok();
}

Result<std::unique_ptr<Layer>> bind_conv(const BindContext& context) {
  if (is_fused_depthwise(context.layer().params)) return bind_fused_depthwise(context);
  QDQRT_ASSIGN_OR_RETURN(int64_t mode, params::kConvMode.read(context));
  const Layout layout = is_nhwc(static_cast<ConvMode>(mode)) ? Layout::kNhwc : Layout::kPlain;
  const Layout input_layout = static_cast<ConvMode>(mode) == ConvMode::kDirectNchw ? Layout::kPlain : layout;
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  const bool one_pixel = x->shape.size() == 4 && x->shape[2] == 1 && x->shape[3] == 1;  // same bytes in both layouts
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, 4,
                                      input_layout == Layout::kNhwc && one_pixel ? x->layout : input_layout));
  if (static_cast<ConvMode>(mode) == ConvMode::kDirectNchw && !batch_leads(*x)) {
    return context.error("direct_nchw mode needs the batch in front");
  }
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, 4, layout));
  if (x->shape[0] != y->shape[0] || x->batched != y->batched) return context.error("input and output batch differ");

  ConvGeometry g;
  g.channels = x->shape[1], g.height = x->shape[2], g.width = x->shape[3];
  g.out_channels = y->shape[1], g.out_height = y->shape[2], g.out_width = y->shape[3];
  QDQRT_ASSIGN_OR_RETURN(g.group, params::kGroup.read(context));
  QDQRT_ASSIGN_OR_RETURN(auto kernel, params::kKernel.read(context, 2));
  QDQRT_ASSIGN_OR_RETURN(auto strides, params::kStrides.read(context, 2));
  QDQRT_ASSIGN_OR_RETURN(auto dilations, params::kDilations.read(context, 2));
  QDQRT_ASSIGN_OR_RETURN(auto pads, params::kPads.read(context, 4));
  QDQRT_ASSIGN_OR_RETURN(g.tile_rows, params::kTileRows.read(context));
  QDQRT_ASSIGN_OR_RETURN(g.oc_block, params::kOutputChannelBlock.read(context));
  g.kernel_h = kernel[0], g.kernel_w = kernel[1], g.stride_h = strides[0], g.stride_w = strides[1];
  g.dilation_h = dilations[0], g.dilation_w = dilations[1];
  g.pad_top = pads[0], g.pad_left = pads[1], g.pad_bottom = pads[2], g.pad_right = pads[3];
  if (g.channels % g.group != 0 || g.out_channels % g.group != 0) {
    return context.error(
        fmt::format("group {} does not divide {} input and {} output channels", g.group, g.channels, g.out_channels));
  }
  // The output size the pads, kernel and strides give must be the plan's.
  if (window_output_size(g.height, g.kernel_h, g.stride_h, g.dilation_h, g.pad_top, g.pad_bottom, false) !=
          g.out_height ||
      window_output_size(g.width, g.kernel_w, g.stride_w, g.dilation_w, g.pad_left, g.pad_right, false) !=
          g.out_width) {
    return context.error(fmt::format("output {} does not follow from input {} and the window",
                                     shape_to_string(y->shape), shape_to_string(x->shape)));
  }
  g.mode = static_cast<ConvMode>(mode);
  if (is_nhwc(g.mode)) return bind_nhwc_conv(context, g, pads, *y);
  QDQRT_RETURN_IF_ERROR(implementation_of(g.mode)->check(context, g));
  return bind_nchw_conv(context, g);
}

// The NHWC implementations write their one output's pixels at any stride (kernels::SconvArgs):
// rows of one pixel's channels.
bool writes_strided_rows(const PlanLayer& layer, size_t output, const PlanTensor& tensor, int64_t row_length) {
  Result<int64_t> mode = layer.params.get_int(std::string(params::kConvMode.key()));
  return output == 0 && layer.outputs.size() == 1 && !is_fused_depthwise(layer.params) && mode.ok() &&
         *mode >= 0 && *mode <= static_cast<int64_t>(ConvMode::kDirectNchw) && is_nhwc(static_cast<ConvMode>(*mode)) &&
         tensor.layout == Layout::kNhwc && tensor.shape.size() == 4 && row_length == tensor.shape[1];
}

}  // namespace
}  // namespace conv

void register_conv(LayerRegistry& registry) {
  // Conv layers count images by RunState::dim(x, 0): the frames of a lowered 3-D conv are images.
  registry.add_kind({.kind = conv::kKind,
                     .bind = conv::bind_conv,
                     .batch_slices_on_dim0 = true,
                     .writes_strided_rows = conv::writes_strided_rows});
  registry.add_lowering({.domain = "",
                         .op_type = "Conv",
                         .lower = conv::lower_conv,
                         .accepts = all_float,
                         .prefers_nhwc = true,
                         .batch_slices_on_dim0 = true});
  registry.add_lowering({.domain = layers::kDomain,
                         .op_type = layers::kFusedConv,
                         .lower = conv::lower_conv,
                         .accepts = all_float,
                         .prefers_nhwc = true,
                         .batch_slices_on_dim0 = true});
  registry.add_lowering({.domain = layers::kDomain,
                         .op_type = layers::kFusedDepthwiseConv,
                         .lower = conv::lower_fused_depthwise,
                         .accepts = all_float,
                         .prefers_nhwc = true});
  registry.add_lowering({.domain = layers::kDomain,
                         .op_type = layers::kRowSumsGlobalAveragePool,
                         .lower = conv::lower_row_sums_pool,
                         .accepts = all_float,
                         .prefers_nhwc = true});
}

}  // namespace qdqrt::engine::fp32
