#include "optimizer/passes/lower_conv3d.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/attribute_values.h"
#include "core/ops/conv.h"
#include "core/shape_inference.h"
#include "optimizer/graph_utils.h"
#include "optimizer/passes/qdq_params.h"

namespace qdqrt::optimizer {

namespace {

// The conv's weight: a float constant, or DequantizeLinear(integer constant) with per-tensor or
// axis-0 parameters.
struct Weight {
  const Tensor* values = nullptr;  // the float weight, or the DQ's integer constant
  const Node* dequantize = nullptr;
  bool per_tensor = true;
};

std::optional<Weight> constant_weight(const Graph& graph, const ValueIndex& index, const Node& conv) {
  Weight weight;
  weight.values = find_constant(graph, conv.input(1));
  if (weight.values != nullptr) {
    if (weight.values->dtype() != DataType::kFloat) return std::nullopt;
  } else {
    const int producer = index.producer(conv.input(1));
    if (producer < 0) return std::nullopt;
    const Node& dq = graph.nodes[static_cast<size_t>(producer)];
    if (!is_dequantize(dq)) return std::nullopt;
    weight.values = find_constant(graph, dq.input(0));
    const std::optional<QuantParams> params = constant_quant_params(graph, dq);
    if (weight.values == nullptr || !params || dtype_size(weight.values->dtype()) != 1) return std::nullopt;
    weight.per_tensor = params->per_tensor();
    if (!weight.per_tensor && params->axis != 0 && params->axis != -5) return std::nullopt;
    weight.dequantize = &dq;
  }
  if (weight.values->rank() != 5) return std::nullopt;
  return weight;
}

// [O, C, kt, kh, kw] -> [O, taps*C, kh, kw] with W'[o][d*C + c] = W[o][c][first + d]: temporal taps
// [first, first + taps) stacked on the channels the way the Concat of the frame slices stacks the input
// (C: the channels of one group when the conv is grouped).
Tensor taps_as_channels(const Tensor& weight, int64_t first, int64_t taps) {
  const int64_t out_channels = weight.dim(0), channels = weight.dim(1), kernel = weight.dim(2);
  Tensor stacked(weight.dtype(), {out_channels, taps * channels, weight.dim(3), weight.dim(4)});
  const size_t plane = static_cast<size_t>(weight.dim(3) * weight.dim(4)) * dtype_size(weight.dtype());
  const auto* from = static_cast<const uint8_t*>(weight.raw_data());
  auto* to = static_cast<uint8_t*>(stacked.raw_data());
  for (int64_t o = 0; o < out_channels; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t d = 0; d < taps; ++d) {
        std::memcpy(to + static_cast<size_t>((o * taps + d) * channels + c) * plane,
                    from + static_cast<size_t>((o * channels + c) * kernel + first + d) * plane, plane);
      }
    }
  }
  return stacked;
}

// Depthwise [C, 1, kt, kh, kw] -> [C, 1, taps*kh, kw] with W'[c][0][taps*i + d][j] =
// W[c][0][first + d][i][j]: the kernel rows of the taps interleaved the way the frames' rows are.
Tensor taps_as_rows(const Tensor& weight, int64_t first, int64_t taps) {
  const int64_t channels = weight.dim(0), kernel = weight.dim(2), rows = weight.dim(3), columns = weight.dim(4);
  Tensor interleaved(weight.dtype(), {channels, 1, taps * rows, columns});
  const size_t row_bytes = static_cast<size_t>(columns) * dtype_size(weight.dtype());
  const auto* from = static_cast<const uint8_t*>(weight.raw_data());
  auto* to = static_cast<uint8_t*>(interleaved.raw_data());
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t d = 0; d < taps; ++d) {
        std::memcpy(to + static_cast<size_t>((c * rows + i) * taps + d) * row_bytes,
                    from + static_cast<size_t>((c * kernel + first + d) * rows + i) * row_bytes, row_bytes);
      }
    }
  }
  return interleaved;
}

// The 3-D geometry, attributes resolved (per axis: 0 = T, 1 = H, 2 = W).
struct Geometry {
  int64_t kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
  int64_t channels, frames, height, width;               // input
  int64_t out_channels, out_frames, out_height, out_width;  // output
  int64_t groups;
  // The temporal taps from the first to the last that read a frame for some output frame (the
  // others read only padding: left out, as prune_dead_conv_taps does along the height and width).
  int64_t first_tap, kept_taps;
  // Depthwise with several temporal taps and no height dilation: the taps' rows interleave into
  // one image per output frame ([taps * H] rows), so a depthwise 2-D conv of taps*kh x kw rows
  // does the work (stacking the taps on the channels would make a grouped conv of taps inputs per
  // group, which runs one group at a time).
  bool interleaves_taps() const {
    return groups > 1 && groups == channels && out_channels == channels && kept_taps > 1 && dilation[1] == 1;
  }
  // Output frame o, kept tap d reads input frame o*stride + d*dilation + shift; padding covers the
  // frames outside [0, T) that some window reads.
  struct FrameWindow {
    int64_t stride, dilation, shift, pad_begin, pad_end, padded_frames;
  };
  FrameWindow frame_window() const {
    FrameWindow w{};
    w.stride = stride[0];
    w.dilation = dilation[0];
    w.shift = first_tap * w.dilation - pad_begin[0];
    const int64_t last_frame = (out_frames - 1) * w.stride + (kept_taps - 1) * w.dilation + w.shift;
    w.pad_begin = std::max<int64_t>(0, -w.shift);
    w.pad_end = std::max<int64_t>(0, last_frame - (frames - 1));
    w.padded_frames = frames + w.pad_begin + w.pad_end;
    return w;
  }
  bool temporal_only() const {
    return first_tap == 0 && kept_taps == kernel[0] && kernel[1] == 1 && kernel[2] == 1 && stride[1] == 1 && stride[2] == 1 && pad_begin[1] == 0 &&
           pad_begin[2] == 0 && pad_end[1] == 0 && pad_end[2] == 0;
  }
};

std::optional<Geometry> geometry(const Graph& graph, const Node& conv, const Tensor& weight) {
  const auto* attributes = dynamic_cast<const ConvAttributes*>(conv.typed_attributes.get());
  if (attributes == nullptr || attributes->group < 1) return std::nullopt;
  if (attributes->auto_pad != AutoPad::kNotSet && attributes->auto_pad != AutoPad::kValid) return std::nullopt;
  const ValueInfo* input = graph.find_value(conv.input(0));
  const ValueInfo* output = graph.find_value(conv.outputs[0]);
  if (input == nullptr || output == nullptr || input->dtype != DataType::kFloat) return std::nullopt;
  Geometry g{};
  const std::optional<int64_t> dims[] = {fixed_dim(input, 5, 1),  fixed_dim(input, 5, 2),  fixed_dim(input, 5, 3),
                                         fixed_dim(input, 5, 4),  fixed_dim(output, 5, 1), fixed_dim(output, 5, 2),
                                         fixed_dim(output, 5, 3), fixed_dim(output, 5, 4)};
  for (const auto& dim : dims) {
    if (!dim) return std::nullopt;
  }
  g.channels = *dims[0], g.frames = *dims[1], g.height = *dims[2], g.width = *dims[3];
  g.out_channels = *dims[4], g.out_frames = *dims[5], g.out_height = *dims[6], g.out_width = *dims[7];
  g.groups = attributes->group;
  if (g.channels % g.groups != 0 || g.out_channels % g.groups != 0 || weight.dim(0) != g.out_channels ||
      weight.dim(1) * g.groups != g.channels) {
    return std::nullopt;
  }
  const bool explicit_pads = attributes->auto_pad == AutoPad::kNotSet;
  for (size_t axis = 0; axis < 3; ++axis) {
    auto at = [&](const std::vector<int64_t>& values, size_t i, int64_t fallback) {
      return values.size() > i ? values[i] : fallback;
    };
    g.kernel[axis] = weight.dim(static_cast<int64_t>(axis) + 2);
    if (attributes->kernel_shape.size() == 3 && attributes->kernel_shape[axis] != g.kernel[axis]) return std::nullopt;
    g.stride[axis] = at(attributes->strides, axis, 1);
    g.dilation[axis] = at(attributes->dilations, axis, 1);
    g.pad_begin[axis] = explicit_pads ? at(attributes->pads, axis, 0) : 0;
    g.pad_end[axis] = explicit_pads ? at(attributes->pads, axis + 3, 0) : 0;
  }
  // The frames the slices take must be the output's (shape inference computed them the same way).
  const int64_t padded = g.frames + g.pad_begin[0] + g.pad_end[0];
  const int64_t reach = (g.kernel[0] - 1) * g.dilation[0];
  if (padded <= reach || (padded - reach - 1) / g.stride[0] + 1 != g.out_frames) return std::nullopt;
  g.first_tap = -1;
  int64_t last_tap = -1;
  for (int64_t d = 0; d < g.kernel[0]; ++d) {
    for (int64_t o = 0; o < g.out_frames; ++o) {
      const int64_t frame = o * g.stride[0] + d * g.dilation[0] - g.pad_begin[0];
      if (frame >= 0 && frame < g.frames) {
        if (g.first_tap < 0) g.first_tap = d;
        last_tap = d;
        break;
      }
    }
  }
  if (g.first_tap < 0) g.first_tap = 0, last_tap = g.kernel[0] - 1;  // no tap reads a frame: keep them all
  g.kept_taps = last_tap - g.first_tap + 1;
  return g;
}

Tensor int64_tensor(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

// Builds the nodes that replace one Conv, in order.
class Lowering {
 public:
  Lowering(Graph& graph, const Node& conv) : graph_(graph), conv_(conv) {}

  Result<std::string> add(const std::string& op_type, const std::string& suffix, std::vector<std::string> inputs,
                          AttributeMap attributes = {}, const std::string& output = {}) {
    const std::string value =
        output.empty() ? add_value(graph_, conv_.name + "/" + suffix + "_output", DataType::kFloat) : output;
    QDQRT_ASSIGN_OR_RETURN(Node node, make_onnx_node(conv_, op_type, unique_node_name(graph_, conv_.name + "/" + suffix),
                                                     std::move(inputs), value, std::move(attributes)));
    added_.push_back(std::move(node));
    return added_.back().outputs[0];
  }
  // The 2-D Conv: it keeps the 3-D conv's name (profiles, layer info and `inspect` name the node
  // of the file), so it is added after the 3-D conv has left the graph.
  Result<std::string> conv2d(std::vector<std::string> inputs, AttributeMap attributes) {
    const std::string value = add_value(graph_, conv_.name + "/conv2d_output", DataType::kFloat);
    QDQRT_ASSIGN_OR_RETURN(Node node,
                           make_onnx_node(conv_, "Conv", conv_.name, std::move(inputs), value, std::move(attributes)));
    added_.push_back(std::move(node));
    return value;
  }
  // A Relu the 3-D conv's output went through, applied to the 2-D conv's output instead (before
  // the Reshape and Transpose, so the Conv layer fuses it and a QuantizeLinear after it moves up).
  Result<std::string> relu(const Node* relu, const std::string& input) {
    if (relu == nullptr) return input;
    return add("Relu", "relu", {input});
  }
  std::string constant(const std::string& suffix, Tensor tensor) {
    return add_initializer(graph_, conv_.name + "/" + suffix, std::move(tensor));
  }
  // The 2-D conv's weight: `values` (reshaped or restacked) as a constant, behind a copy of the
  // weight's DequantizeLinear when it has one.
  Result<std::string> weight(const Weight& weight, Tensor values) {
    const std::string name = constant("weight", std::move(values));
    if (weight.dequantize == nullptr) return name;
    std::vector<std::string> inputs = weight.dequantize->inputs;
    inputs[0] = name;
    AttributeMap attributes = weight.dequantize->attributes;
    if (!weight.per_tensor) attributes["axis"] = int_attribute(0);
    const std::string value = add_value(graph_, conv_.name + "/weight_dequantized", DataType::kFloat);
    QDQRT_ASSIGN_OR_RETURN(Node node, make_onnx_node(*weight.dequantize, "DequantizeLinear",
                                                     unique_node_name(graph_, conv_.name + "/weight_dequantize"),
                                                     std::move(inputs), value, std::move(attributes)));
    added_.push_back(std::move(node));
    return value;
  }
  std::vector<Node>& added() { return added_; }

 private:
  Graph& graph_;
  const Node& conv_;
  std::vector<Node> added_;
};

// One Slice of axis 1 (the padded frames) per kept temporal tap: frames start, start + stride, ...,
// one per output frame.
Result<std::vector<std::string>> slice_taps(const std::string& x, const Geometry& g, Lowering& lowering) {
  const auto [stride, dilation, shift, pad_begin, pad_end, padded_frames] = g.frame_window();
  std::vector<std::string> taps;
  const std::string axes = lowering.constant("tap_axes", int64_tensor({1}));
  const std::string steps = lowering.constant("tap_steps", int64_tensor({stride}));
  for (int64_t d = 0; d < g.kept_taps; ++d) {
    const int64_t start = d * dilation + shift + pad_begin;
    const std::string suffix = "tap" + std::to_string(g.first_tap + d);
    QDQRT_ASSIGN_OR_RETURN(
        std::string tap,
        lowering.add("Slice", suffix,
                     {x, lowering.constant(suffix + "_starts", int64_tensor({start})),
                      lowering.constant(suffix + "_ends", int64_tensor({start + (g.out_frames - 1) * stride + 1})),
                      axes, steps}));
    taps.push_back(std::move(tap));
  }
  return taps;
}

// Depthwise with several temporal taps (Geometry::interleaves_taps), channels-last so the taps'
// rows interleave as whole rows of W*C values and the 2-D conv reads NHWC without a reorder:
//   [N, C, T, H, W] -> [N, T, H, W, C] (one transpose) -> [N, T, H*W*C], padded on T ->
//   [N, Tp, H, 1, W*C] -> per tap the frames it reads, [N, T', H, 1, W*C] -> Concat on axis 3:
//   [N, T', H, taps, W*C], which is NHWC [N*T', taps*H, W, C] -> [N*T', C, taps*H, W] (a layout
//   relabel before an NHWC conv) -> the depthwise 2-D conv of taps*kh x kw rows at stride taps*sh
//   -> [N*T', H', W', C] (a relabel after it) -> [N, T', H', W', C] -> [N, C, T', H', W'].
Status lower_interleaved_depthwise(const Node& conv, const Node* relu, const Weight& weight, const Geometry& g,
                                   Lowering& lowering, std::vector<std::string> conv_inputs, const std::string& output) {
  const int64_t row_values = g.width * g.channels, taps = g.kept_taps;
  const auto [stride, dilation, shift, pad_begin, pad_end, padded_frames] = g.frame_window();
  QDQRT_ASSIGN_OR_RETURN(std::string x, lowering.add("Transpose", "channels_last", {conv.input(0)},
                                                     {{"perm", ints_attribute({0, 2, 3, 4, 1})}}));
  if (pad_begin > 0 || pad_end > 0) {
    QDQRT_ASSIGN_OR_RETURN(
        x, lowering.add("Reshape", "frames_as_rows",
                        {x, lowering.constant("frames_as_rows_shape",
                                              int64_tensor({-1, g.frames, g.height * row_values}))}));
    QDQRT_ASSIGN_OR_RETURN(
        x, lowering.add("Pad", "pad_frames",
                        {x, lowering.constant("pad_frames_pads", int64_tensor({0, pad_begin, 0, 0, pad_end, 0}))}));
  }
  QDQRT_ASSIGN_OR_RETURN(
      x, lowering.add("Reshape", "frames_by_rows",
                      {x, lowering.constant("frames_by_rows_shape",
                                            int64_tensor({-1, padded_frames, g.height, 1, row_values}))}));
  QDQRT_ASSIGN_OR_RETURN(std::vector<std::string> tap_rows, slice_taps(x, g, lowering));
  QDQRT_ASSIGN_OR_RETURN(x, lowering.add("Concat", "stack_taps", tap_rows, {{"axis", int_attribute(3)}}));
  QDQRT_ASSIGN_OR_RETURN(
      x, lowering.add("Reshape", "frames_as_batch",
                      {x, lowering.constant("frames_as_batch_shape",
                                            int64_tensor({-1, taps * g.height, g.width, g.channels}))}));
  QDQRT_ASSIGN_OR_RETURN(conv_inputs[0], lowering.add("Transpose", "channels_first_rows", {x},
                                                      {{"perm", ints_attribute({0, 3, 1, 2})}}));
  QDQRT_ASSIGN_OR_RETURN(conv_inputs[1], lowering.weight(weight, taps_as_rows(*weight.values, g.first_tap, taps)));
  QDQRT_ASSIGN_OR_RETURN(
      std::string y,
      lowering.conv2d(conv_inputs, {{"group", int_attribute(g.groups)},
                                    {"kernel_shape", ints_attribute({taps * g.kernel[1], g.kernel[2]})},
                                    {"strides", ints_attribute({taps * g.stride[1], g.stride[2]})},
                                    {"dilations", ints_attribute({g.dilation[1], g.dilation[2]})},
                                    {"pads", ints_attribute({taps * g.pad_begin[1], g.pad_begin[2],
                                                             taps * g.pad_end[1], g.pad_end[2]})}}));
  QDQRT_ASSIGN_OR_RETURN(y, lowering.relu(relu, y));
  QDQRT_ASSIGN_OR_RETURN(y, lowering.add("Transpose", "pixels_channels_last", {y},
                                         {{"perm", ints_attribute({0, 2, 3, 1})}}));
  QDQRT_ASSIGN_OR_RETURN(
      y, lowering.add("Reshape", "batch_as_frames",
                      {y, lowering.constant("batch_as_frames_shape", int64_tensor({-1, g.out_frames, g.out_height,
                                                                                   g.out_width, g.out_channels}))}));
  return lowering.add("Transpose", "channels_first", {y}, {{"perm", ints_attribute({0, 4, 1, 2, 3})}}, output)
      .status();
}

// `relu`: the Relu that alone reads the conv's output (absorbed: the lowering writes its output).
Status lower(const Node& conv, const Node* relu, const Weight& weight, const Geometry& g, Lowering& lowering) {
  std::vector<std::string> conv_inputs(2);
  if (conv.has_input(2)) conv_inputs.push_back(conv.input(2));
  const std::string& output = relu != nullptr ? relu->outputs[0] : conv.outputs[0];
  if (g.temporal_only()) {
    // [N, C, T, H, W] is [N, C, T, H*W]: a kt x 1 conv over it, no data moved.
    QDQRT_ASSIGN_OR_RETURN(
        conv_inputs[0],
        lowering.add("Reshape", "frames_by_pixels",
                     {conv.input(0), lowering.constant("frames_by_pixels_shape",
                                                       int64_tensor({-1, g.channels, g.frames, g.height * g.width}))}));
    QDQRT_ASSIGN_OR_RETURN(conv_inputs[1], lowering.weight(weight, weight.values->reshaped({g.out_channels, weight.values->dim(1),
                                                                                            g.kernel[0], 1})));
    QDQRT_ASSIGN_OR_RETURN(std::string y, lowering.conv2d(conv_inputs, {{"group", int_attribute(g.groups)},
                                                                        {"kernel_shape", ints_attribute({g.kernel[0], 1})},
                                                                        {"strides", ints_attribute({g.stride[0], 1})},
                                                                        {"dilations", ints_attribute({g.dilation[0], 1})},
                                                                        {"pads", ints_attribute({g.pad_begin[0], 0,
                                                                                                 g.pad_end[0], 0})}}));
    QDQRT_ASSIGN_OR_RETURN(y, lowering.relu(relu, y));
    QDQRT_RETURN_IF_ERROR(
        lowering
            .add("Reshape", "to_5d",
                 {y, lowering.constant("to_5d_shape", int64_tensor({-1, g.out_channels, g.out_frames, g.out_height,
                                                                    g.out_width}))},
                 {}, output)
            .status());
    return Status::ok();
  }
  if (g.interleaves_taps()) return lower_interleaved_depthwise(conv, relu, weight, g, lowering, conv_inputs, output);
  // Frames first, then the temporal taps stacked on the channels.
  QDQRT_ASSIGN_OR_RETURN(std::string x, lowering.add("Transpose", "frames_first", {conv.input(0)},
                                                     {{"perm", ints_attribute({0, 2, 1, 3, 4})}}));
  const auto [stride, dilation, shift, pad_begin, pad_end, padded_frames] = g.frame_window();
  if (pad_begin > 0 || pad_end > 0) {
    // Whole frames as rows ([N, T, C*H*W]): the Pad copies a frame per row, not a row of W.
    QDQRT_ASSIGN_OR_RETURN(
        x, lowering.add("Reshape", "frames_as_rows",
                        {x, lowering.constant("frames_as_rows_shape",
                                              int64_tensor({-1, g.frames, g.channels * g.height * g.width}))}));
    QDQRT_ASSIGN_OR_RETURN(
        x, lowering.add("Pad", "pad_frames",
                        {x, lowering.constant("pad_frames_pads", int64_tensor({0, pad_begin, 0, 0, pad_end, 0}))}));
  }
  // x: [N, T, C, H, W], or [N, T, C*H*W] when padded; the taps below slice axis 1 of either.
  if (g.kept_taps > 1 || stride > 1 || g.out_frames != padded_frames) {
    // Grouped: each group's taps stacked on its own channels ([group][tap][channel of the group],
    // the order of the 2-D grouped conv's inputs), so the taps are concatenated within
    // [N, T, groups, C/groups * H * W].
    int64_t concat_axis = 2;
    if (g.groups > 1) {
      QDQRT_ASSIGN_OR_RETURN(
          x, lowering.add("Reshape", "frames_by_groups",
                          {x, lowering.constant("frames_by_groups_shape",
                                                int64_tensor({-1, padded_frames, g.groups,
                                                              g.channels / g.groups * g.height * g.width}))}));
      concat_axis = 3;
    }
    QDQRT_ASSIGN_OR_RETURN(std::vector<std::string> taps, slice_taps(x, g, lowering));
    if (taps.size() == 1) {
      x = taps[0];
    } else {
      QDQRT_ASSIGN_OR_RETURN(x, lowering.add("Concat", "stack_taps", taps, {{"axis", int_attribute(concat_axis)}}));
    }
  }
  // Stacked on the channels: one image per output frame.
  const int64_t stacked = g.kept_taps * g.channels;
  QDQRT_ASSIGN_OR_RETURN(conv_inputs[0],
                         lowering.add("Reshape", "frames_as_batch",
                                      {x, lowering.constant("frames_as_batch_shape",
                                                            int64_tensor({-1, stacked, g.height, g.width}))}));
  QDQRT_ASSIGN_OR_RETURN(conv_inputs[1],
                         lowering.weight(weight, taps_as_channels(*weight.values, g.first_tap, g.kept_taps)));
  QDQRT_ASSIGN_OR_RETURN(
      std::string y,
      lowering.conv2d(conv_inputs, {{"group", int_attribute(g.groups)},
                                    {"kernel_shape", ints_attribute({g.kernel[1], g.kernel[2]})},
                                    {"strides", ints_attribute({g.stride[1], g.stride[2]})},
                                    {"dilations", ints_attribute({g.dilation[1], g.dilation[2]})},
                                    {"pads", ints_attribute({g.pad_begin[1], g.pad_begin[2],
                                                             g.pad_end[1], g.pad_end[2]})}}));
  QDQRT_ASSIGN_OR_RETURN(y, lowering.relu(relu, y));
  QDQRT_ASSIGN_OR_RETURN(
      const std::string frames,
      lowering.add("Reshape", "batch_as_frames",
                   {y, lowering.constant("batch_as_frames_shape", int64_tensor({-1, g.out_frames, g.out_channels,
                                                                                g.out_height, g.out_width}))}));
  QDQRT_RETURN_IF_ERROR(
      lowering.add("Transpose", "channels_first", {frames}, {{"perm", ints_attribute({0, 2, 1, 3, 4})}}, output)
          .status());
  return Status::ok();
}

class LowerConv3dPass : public Pass {
 public:
  std::string name() const override { return "lower_conv3d"; }
  // A BatchNormalization after the 3-D conv is folded into its weight first.
  std::vector<std::string> must_run_after() const override { return {"fold_batchnorm"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const Node conv = graph.nodes[i];
      if (!conv.domain.empty() || conv.op_type != "Conv" || conv.outputs.size() != 1 || conv.opset < 11) continue;
      const ValueIndex index(graph);
      const std::optional<Weight> weight = constant_weight(graph, index, conv);
      if (!weight) continue;
      const std::optional<Geometry> g = geometry(graph, conv, *weight->values);
      if (!g) continue;
      // A Relu that alone reads the conv's output goes before the data movement.
      const std::vector<int>& readers = index.consumers(conv.outputs[0]);
      int relu_index = -1;
      if (readers.size() == 1 && !index.is_graph_output(conv.outputs[0])) {
        const Node& reader = graph.nodes[static_cast<size_t>(readers[0])];
        if (reader.domain.empty() && reader.op_type == "Relu" && reader.outputs.size() == 1 &&
            static_cast<size_t>(readers[0]) > i) {
          relu_index = readers[0];
        }
      }
      const std::optional<Node> relu =
          relu_index >= 0 ? std::optional<Node>(graph.nodes[static_cast<size_t>(relu_index)]) : std::nullopt;
      Lowering lowering(graph, conv);
      QDQRT_RETURN_IF_ERROR(lower(conv, relu ? &*relu : nullptr, *weight, *g, lowering));
      std::vector<Node>& added = lowering.added();
      if (relu_index >= 0) graph.nodes.erase(graph.nodes.begin() + relu_index);
      graph.nodes.erase(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i), added.begin(), added.end());
      i += added.size() - 1;
      changed = true;
    }
    if (!changed) return Status::ok();
    remove_unused(graph);  // the 3-D weights and their DequantizeLinears
    // The new values' dims (with their expressions) for the passes after this one.
    return infer_shapes(graph);
  }
};

}  // namespace

std::unique_ptr<Pass> make_lower_conv3d_pass() { return std::make_unique<LowerConv3dPass>(); }

}  // namespace qdqrt::optimizer
