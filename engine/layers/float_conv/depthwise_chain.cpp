// FusedDepthwiseConv (core/ops/fused_conv.h; the optimizer's fuse_float_depthwise_chain): each part
// lowered as its own NHWC conv would be (the expansion and projection on the igemm, the depthwise on
// the NHWC depthwise kernel: same packed weights, kernel names and epilogue params), then merged into
// one fp32_conv layer that fused_depthwise.cpp binds: with a projection, the projection's params are
// the layer's own and the depthwise's sit under kDwPrefix; the expansion's under kExPrefix. Inputs:
// x (NHWC) and the projection's residual; outputs: y and, without a projection, the depthwise's
// row sums. When the NHWC kernels would not run a part as planned, the reference runs the node.
#include <fmt/format.h>

#include "core/ops/fused_layers.h"
#include "core/ops/window.h"
#include "engine/layers/float_conv/conv.h"

namespace qdqrt::engine::fp32::conv {

namespace {

struct Part {
  const Tensor* weight = nullptr;
  const Tensor* bias = nullptr;
  ConvGeometry g;
  FusedActivation activation;
  ConvEpilogueFunction function = ConvEpilogueFunction::kNone;
  std::vector<std::string> nodes;  // the graph nodes it stands for
};

// Copies `part`'s params and blobs into `into` under `prefix`.
void copy_params(const PlanLayer& part, std::string_view prefix, PlanLayer& into) {
  for (const auto& [key, value] : part.params.values()) into.params.set(std::string(prefix) + key, value);
  for (const Blob& blob : part.blobs) {
    Blob copy = blob;
    copy.name = std::string(prefix) + blob.name;
    into.blobs.push_back(std::move(copy));
  }
}

// `layer` takes over `from` (run before it): its params under `prefix`, its names and kernel first.
void absorb(PlanLayer& layer, const PlanLayer& from, std::string_view prefix) {
  copy_params(from, prefix, layer);
  layer.name = from.name + " + " + layer.name;
  layer.kernel = from.kernel + " + " + layer.kernel;
  layer.source_nodes.insert(layer.source_nodes.begin(), from.source_nodes.begin(), from.source_nodes.end());
}

// A 1x1 stride-1 conv's geometry over `channels` x height x width.
ConvGeometry pointwise_geometry(int64_t channels, int64_t out_channels, int64_t height, int64_t width) {
  ConvGeometry g;
  g.channels = channels, g.out_channels = out_channels;
  g.height = g.out_height = height;
  g.width = g.out_width = width;
  return g;
}

bool float_weight(const Tensor* weight, int64_t out_channels, int64_t in_per_group) {
  return weight != nullptr && weight->dtype() == DataType::kFloat && weight->rank() == 4 &&
         weight->dim(0) == out_channels && weight->dim(1) == in_per_group;
}

bool float_bias(const Node& node, size_t slot, const Tensor* bias, int64_t channels) {
  return !node.has_input(slot) || (bias != nullptr && bias->dtype() == DataType::kFloat && bias->numel() == channels);
}

// The part's layer as lower_conv would write it (no tensors yet); nullopt when the implementation
// list would not give it `mode`.
Result<std::optional<PlanLayer>> lower_part(const Part& part, ConvMode mode, const ConvCandidate& candidate,
                                            kernels::Isa isa, const kernels::Fp32Kernels& fp32) {
  QDQRT_ASSIGN_OR_RETURN(ConvChoice choice, choose_implementation(candidate));
  if (choice.implementation->mode != mode) return std::optional<PlanLayer>();
  ConvGeometry g = part.g;
  g.mode = mode;
  Node node;
  node.op_type = "Conv";
  for (const std::string& name : part.nodes) node.name += (node.name.empty() ? "" : " + ") + name;
  PlanLayer layer = choice.implementation->lower(node, g, *part.weight, part.bias, isa, fp32);
  layer.source_nodes = part.nodes;
  params::kIsa.write(layer, isa);
  params::kClipMin.write(layer, -std::numeric_limits<double>::infinity());
  params::kClipMax.write(layer, std::numeric_limits<double>::infinity());
  params::kEpilogueFunction.write(layer, kernels::Fp32EpilogueActivation::kNone);
  QDQRT_RETURN_IF_ERROR(write_conv_epilogue(node, part.activation, part.function, layer));
  write_geometry(layer, g);
  params::kTileRows.write(layer, g.tile_rows);
  params::kOutputChannelBlock.write(layer, g.oc_block);
  return std::optional<PlanLayer>(std::move(layer));
}

}  // namespace

Status lower_fused_depthwise(const Node& node, BuildContext& context) {
  using namespace layers;
  const auto& attributes = node.attrs<FusedDepthwiseConvAttributes>();
  const bool expand = node.has_input(kFusedDepthwiseExpandW), project = node.has_input(kFusedDepthwiseProjectW);
  const bool row_sums = node.outputs.size() > kFusedConvRowSums && !node.outputs[kFusedConvRowSums].empty();
  if (!node.has_input(kFusedDepthwiseX) || !node.has_input(kFusedDepthwiseW) || (!expand && !project) ||
      (project && row_sums) || (!project && node.has_input(kFusedDepthwiseResidual))) {
    return lower_with_reference(node, context);
  }
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, context.shape_of(node.input(kFusedDepthwiseX)));
  QDQRT_ASSIGN_OR_RETURN(Shape y_shape, context.shape_of(node.outputs[0]));
  if (x_shape.size() != 4 || y_shape.size() != 4) return lower_with_reference(node, context);
  const std::vector<std::string>& nodes = attributes.fused.fused_nodes;
  auto slice = [&](int part) {
    int64_t first = 0;
    for (int before = 0; before < part; ++before) first += attributes.part_nodes[before];
    return std::vector<std::string>(nodes.begin() + first, nodes.begin() + first + attributes.part_nodes[part]);
  };

  Part ex, dw, pw;
  int64_t channels = x_shape[1];
  if (expand) {
    ex.weight = context.constant(node.input(kFusedDepthwiseExpandW));
    ex.bias = node.has_input(kFusedDepthwiseExpandBias) ? context.constant(node.input(kFusedDepthwiseExpandBias))
                                                        : nullptr;
    if (ex.weight == nullptr || ex.weight->rank() != 4) return lower_with_reference(node, context);
    ex.g = pointwise_geometry(channels, ex.weight->dim(0), x_shape[2], x_shape[3]);
    if (!float_weight(ex.weight, ex.g.out_channels, channels) || ex.weight->dim(2) != 1 || ex.weight->dim(3) != 1 ||
        !float_bias(node, kFusedDepthwiseExpandBias, ex.bias, ex.g.out_channels)) {
      return lower_with_reference(node, context);
    }
    ex.activation = attributes.expand.activation, ex.function = attributes.expand.function, ex.nodes = slice(0);
    channels = ex.g.out_channels;
  }
  dw.weight = context.constant(node.input(kFusedDepthwiseW));
  dw.bias = node.has_input(kFusedDepthwiseBias) ? context.constant(node.input(kFusedDepthwiseBias)) : nullptr;
  if (dw.weight == nullptr || dw.weight->rank() != 4) return lower_with_reference(node, context);
  const Shape kernel_shape = {dw.weight->dim(2), dw.weight->dim(3)};
  const WindowAttributes window{.auto_pad = attributes.auto_pad,
                                .strides = &attributes.strides,
                                .dilations = &attributes.dilations,
                                .pads = &attributes.pads,
                                .ceil_mode = false};
  Result<WindowGeometry> resolved = resolve_window(node, {x_shape[2], x_shape[3]}, kernel_shape, window);
  if (!resolved.ok() || (!attributes.kernel_shape.empty() && attributes.kernel_shape != kernel_shape)) {
    return lower_with_reference(node, context);
  }
  ConvGeometry& g = dw.g;
  g.channels = g.out_channels = g.group = channels;
  g.height = x_shape[2], g.width = x_shape[3];
  g.out_height = resolved->output[1], g.out_width = resolved->output[2];
  g.kernel_h = kernel_shape[0], g.kernel_w = kernel_shape[1];
  g.stride_h = resolved->strides[1], g.stride_w = resolved->strides[2];
  g.dilation_h = resolved->dilations[1], g.dilation_w = resolved->dilations[2];
  g.pad_top = resolved->pads_begin[1], g.pad_left = resolved->pads_begin[2];
  g.pad_bottom = resolved->pads_end[1], g.pad_right = resolved->pads_end[2];
  if (attributes.group != channels || !float_weight(dw.weight, channels, 1) ||
      !float_bias(node, kFusedDepthwiseBias, dw.bias, channels)) {
    return lower_with_reference(node, context);
  }
  dw.activation = attributes.fused.activation, dw.function = attributes.function, dw.nodes = slice(1);
  if (project) {
    pw.weight = context.constant(node.input(kFusedDepthwiseProjectW));
    pw.bias = node.has_input(kFusedDepthwiseProjectBias) ? context.constant(node.input(kFusedDepthwiseProjectBias))
                                                         : nullptr;
    if (pw.weight == nullptr || pw.weight->rank() != 4) return lower_with_reference(node, context);
    pw.g = pointwise_geometry(channels, pw.weight->dim(0), g.out_height, g.out_width);
    if (!float_weight(pw.weight, pw.g.out_channels, channels) || pw.weight->dim(2) != 1 || pw.weight->dim(3) != 1 ||
        !float_bias(node, kFusedDepthwiseProjectBias, pw.bias, pw.g.out_channels)) {
      return lower_with_reference(node, context);
    }
    pw.activation = attributes.project.activation, pw.function = attributes.project.function, pw.nodes = slice(2);
  }
  const ConvGeometry& last = project ? pw.g : g;
  if (y_shape != Shape{x_shape[0], last.out_channels, last.out_height, last.out_width}) {
    return lower_with_reference(node, context);
  }

  const kernels::Isa isa = kernels::usable_isa(context.isa());
  const kernels::Fp32Kernels fp32 = kernels::fp32_kernels(isa);
  const std::string& x_value = node.input(kFusedDepthwiseX);
  // Only the first part reads the input as it is stored; the others read NHWC intermediates.
  ConvCandidate first{.g = expand ? ex.g : g, .input_is_plain_image = [&]() -> Result<bool> {
                        QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(x_value));
                        const PlanTensor tensor = context.tensor(stored);
                        return tensor.layout == Layout::kPlain && tensor.dtype == DataType::kFloat &&
                               batch_leads(tensor);
                      }};
  auto inner = [](const ConvGeometry& part_g) {
    return ConvCandidate{.g = part_g, .input_is_plain_image = []() -> Result<bool> { return false; }};
  };
  std::optional<PlanLayer> ex_layer, dw_layer, pw_layer;
  if (expand) {
    QDQRT_ASSIGN_OR_RETURN(ex_layer, lower_part(ex, ConvMode::kIgemm, first, isa, fp32));
  }
  QDQRT_ASSIGN_OR_RETURN(dw_layer, lower_part(dw, ConvMode::kDepthwiseNhwc, expand ? inner(g) : first, isa, fp32));
  if (project) {
    QDQRT_ASSIGN_OR_RETURN(pw_layer, lower_part(pw, ConvMode::kIgemm, inner(pw.g), isa, fp32));
  }
  if ((expand && !ex_layer) || !dw_layer || (project && !pw_layer)) return lower_with_reference(node, context);

  // The merge: the projection takes the depthwise, then the depthwise (alone or with its
  // projection) takes the expansion.
  PlanLayer layer;
  if (project) {
    layer = std::move(*pw_layer);
    absorb(layer, *dw_layer, kDwPrefix);
    kFusedChannels.write(layer, channels, kDwPrefix);
  } else {
    layer = std::move(*dw_layer);
  }
  if (expand) {
    absorb(layer, *ex_layer, kExPrefix);
    if (!project) kFusedChannels.write(layer, channels, kDwPrefix);
  }
  const ConvGeometry& input_g = expand ? ex.g : g;
  QDQRT_ASSIGN_OR_RETURN(int32_t input, input_g.height == 1 && input_g.width == 1
                                            ? context.input_as_stored(x_value)
                                            : context.input(x_value, Layout::kNhwc));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kNhwc));
  layer.inputs = {input};
  layer.outputs = {output};
  if (node.has_input(kFusedDepthwiseResidual)) {
    QDQRT_ASSIGN_OR_RETURN(int32_t residual, context.input(node.input(kFusedDepthwiseResidual), Layout::kNhwc));
    layer.inputs.push_back(residual);
  }
  if (row_sums) {
    QDQRT_ASSIGN_OR_RETURN(int32_t sums, context.output(node.outputs[kFusedConvRowSums], Layout::kPlain));
    layer.outputs.push_back(sums);
    layer.kernel += " + row sums";
  }
  layer.scratch_bytes = fused_scratch(expand, project, channels, x_shape[3], x_shape[2], y_shape[3], y_shape[2],
                                      g.kernel_h, g.stride_h, g.dilation_h)
                            .bytes();
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace qdqrt::engine::fp32::conv
