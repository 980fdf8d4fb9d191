// INT8 data-movement layers.
//   "qconcat":      QConcat along any axis (channel concat of NHWC tensors = pixel rows side by side);
//                   inputs with other quantization are requantized on the fly
//                   (kernels/reorder/qconcat.h). Params (engine/layer_params.h): axis (logical),
//                   y scale/zero-point, per input x scale/zero-point (floats/ints).
//                   Scratch: one ConcatInput per input.
//   "int8_reshape": Reshape / Flatten / Squeeze / Unsqueeze of an int8/uint8 tensor: a copy in plain
//                   layout (an NHWC input whose C or H*W is 1 is read as stored: same bytes).
//   "int8_transpose": Transpose of an int8/uint8 plain tensor (rank <= 6), run as a strided copy
//                   (engine/layers/strided_copy.cpp: tiled 2-D transposes where the last dims swap).
// Both compute every dim from RunState::dim, so the batch may be on any dim (any_batch_layout)
// where the builder tracks it (BuildContext::batch_layout); elsewhere it must stay dim 0.
#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "engine/layers/int8_common.h"
#include "engine/layers/layer_families.h"
#include "kernels/dispatch.h"
#include "kernels/reorder/qconcat.h"
#include "core/ops/fused_layers.h"
#include "core/ops/tensor.h"

namespace qdqrt::engine::int8 {

namespace {

constexpr const char* kConcatKind = "qconcat";
constexpr const char* kReshapeKind = "int8_reshape";
constexpr const char* kTransposeKind = "int8_transpose";
constexpr int64_t kCopyBytesPerItem = 65536;
constexpr size_t kMaxTransposeRank = 6;

// ---------------------------------------------------------------------------------------------
// QConcat

struct ConcatSpec {
  DataType dtype = DataType::kInt8;
  int64_t axis = 0;  // normalized
  Shape y_shape;
  float y_scale = 1;
  int32_t y_zero_point = 0;
  std::vector<float> x_scales;
  std::vector<int32_t> x_zero_points;
};

Result<ConcatSpec> analyze_qconcat(const Node& node, const BuildContext& context) {
  using namespace qdqrt::layers;
  const auto* attributes = dynamic_cast<const QConcatAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return unsupported("{}: attributes are not parsed", node.describe());
  if (attributes->fused.activation.kind != qdqrt::ActivationKind::kNone) {
    return unsupported("{}: activation", node.describe());
  }
  if (node.outputs.size() != 1 || node.outputs[0].empty()) return unsupported("{}: one output", node.describe());
  if (node.inputs.size() < kConcatFirstX + 3 || (node.inputs.size() - kConcatFirstX) % 3 != 0) {
    return unsupported("{}: input count", node.describe());
  }
  ConcatSpec spec;
  QDQRT_ASSIGN_OR_RETURN(spec.y_shape, static_shape(node, context, node.outputs[0]));
  QDQRT_ASSIGN_OR_RETURN(spec.y_scale, scale_input(node, context, kConcatYScale, "y_scale"));
  if (!node.has_input(kConcatYZeroPoint)) return unsupported("{}: y_zero_point is absent", node.describe());
  QDQRT_ASSIGN_OR_RETURN(spec.y_zero_point,
                         zero_point_input(node, context, kConcatYZeroPoint, "y_zero_point", 1, &spec.dtype));
  const int64_t rank = static_cast<int64_t>(spec.y_shape.size());
  spec.axis = attributes->axis < 0 ? attributes->axis + rank : attributes->axis;
  if (spec.axis < 0 || spec.axis >= rank) return unsupported("{}: axis {}", node.describe(), attributes->axis);
  int64_t total = 0;
  for (size_t first = kConcatFirstX; first < node.inputs.size(); first += 3) {
    const std::string& x = node.input(first);
    if (x.empty() || context.constant(x) != nullptr) return unsupported("{}: constant input", node.describe());
    QDQRT_ASSIGN_OR_RETURN(DataType dtype, context.dtype_of(x));
    QDQRT_ASSIGN_OR_RETURN(Shape shape, static_shape(node, context, x));
    if (dtype != spec.dtype || static_cast<int64_t>(shape.size()) != rank) {
      return unsupported("{}: inputs must match the output's type and rank", node.describe());
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != spec.axis && shape[d] != spec.y_shape[d]) return unsupported("{}: input shapes", node.describe());
    }
    total += shape[spec.axis];
    QDQRT_ASSIGN_OR_RETURN(float scale, scale_input(node, context, first + 1, "x_scale"));
    DataType zp_dtype = spec.dtype;
    QDQRT_ASSIGN_OR_RETURN(int32_t zero_point, zero_point_input(node, context, first + 2, "x_zero_point", 1, &zp_dtype));
    if (zp_dtype != spec.dtype) return unsupported("{}: zero-point types", node.describe());
    spec.x_scales.push_back(scale);
    spec.x_zero_points.push_back(zero_point);
  }
  if (total != spec.y_shape[spec.axis]) return unsupported("{}: concat extent", node.describe());
  return spec;
}

Status lower_qconcat(const Node& node, BuildContext& context) {
  QDQRT_ASSIGN_OR_RETURN(ConcatSpec spec, analyze_qconcat(node, context));
  PlanLayer layer = node_layer(node, kConcatKind);
  // Rank 4: channels-last unless that costs more reorders than plain (inputs stored plain, readers
  // that take plain: the Slice + Concat of Swin's shifted-window roll between MatMuls); ties keep
  // channels-last.
  Layout layout = Layout::kPlain;
  if (spec.y_shape.size() == 4) {
    std::vector<std::string> data;
    for (size_t first = qdqrt::layers::kConcatFirstX; first < node.inputs.size(); first += 3) {
      data.push_back(node.input(first));
    }
    QDQRT_ASSIGN_OR_RETURN(LayoutCosts costs, layout_costs(context, data, node.outputs[0]));
    layout = costs.nhwc <= costs.plain ? Layout::kNhwc : Layout::kPlain;
  }
  for (size_t first = qdqrt::layers::kConcatFirstX; first < node.inputs.size(); first += 3) {
    QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input(node.input(first), layout));
    layer.inputs.push_back(x);
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], layout));
  layer.outputs = {y};
  params::kAxis.write(layer, spec.axis);
  params::kYScale.write(layer, spec.y_scale);
  params::kYZeroPoint.write(layer, spec.y_zero_point);
  params::kXScales.write(layer, spec.x_scales);
  params::kXZeroPoints.write(layer, std::vector<int64_t>(spec.x_zero_points.begin(), spec.x_zero_points.end()));
  layer.scratch_bytes = static_cast<int64_t>(spec.x_scales.size() *
                                             std::max(sizeof(kernels::ConcatInput<int8_t>),
                                                      sizeof(kernels::ConcatInput<uint8_t>)));
  const kernels::Isa isa = kernels::usable_isa(context.isa());
  layer.kernel = std::string("x8-concat+") + (spec.dtype == DataType::kInt8
                                                  ? kernels::quantize_kernels<int8_t>(isa).requantize.name
                                                  : kernels::quantize_kernels<uint8_t>(isa).requantize.name);
  context.add_layer(std::move(layer));
  return Status::ok();
}

template <class T>
class ConcatLayer final : public Layer {
 public:
  std::vector<kernels::ConcatInput<T>> templates;  // data pointers filled per run, in scratch
  std::vector<int32_t> inputs;
  std::vector<int64_t> input_strides;  // elements per outer row of each input
  int32_t output = -1;
  int64_t outer_per_image = 1;  // rows per batch image (outer rows = batch * this when batched)
  bool batched = false;
  int64_t row_length = 0;
  kernels::RequantizeFn<T> requantize = nullptr;

  int64_t outer(const RunState& state) const { return batched ? state.dim(output, 0) * outer_per_image : outer_per_image; }
  WorkShape work(const RunState& state) const override {
    return {outer(state), static_cast<double>(row_length)};
  }
  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t> scratch) const override {
    auto* list = reinterpret_cast<kernels::ConcatInput<T>*>(scratch.data());
    for (size_t i = 0; i < templates.size(); ++i) {
      list[i] = templates[i];
      list[i].data = state.data<const T>(inputs[i]);
    }
    kernels::qconcat<T>(static_cast<size_t>(begin), static_cast<size_t>(end), list, templates.size(),
                        state.data<T>(output), requantize);
  }
};

template <class T>
Result<std::unique_ptr<Layer>> bind_qconcat_typed(const BindContext& context, const PlanTensor& y) {
  auto layer = std::make_unique<ConcatLayer<T>>();
  const size_t count = context.layer().inputs.size();
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  using namespace params;
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, kAxis.read_in(context, 0, rank - 1));
  QDQRT_ASSIGN_OR_RETURN(float y_scale, kYScale.read(context));
  constexpr int64_t lo = kernels::QTraits<T>::min, hi = kernels::QTraits<T>::max;
  QDQRT_ASSIGN_OR_RETURN(int32_t y_zero_point, read_zero_point(context, kYZeroPoint, std::is_signed_v<T>));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> zero_points, kXZeroPoints.read_in(context, count, lo, hi));
  QDQRT_ASSIGN_OR_RETURN(std::vector<float> scales, kXScales.read(context, static_cast<int64_t>(count)));
  if (context.layer().scratch_bytes < static_cast<int64_t>(count * sizeof(kernels::ConcatInput<T>))) {
    return context.error("scratch too small for the input list");
  }
  // Storage-order axis: NHWC moves C (logical 1) last and H, W one step forward.
  const bool nhwc = y.layout == Layout::kNhwc;
  static constexpr int64_t kNhwcPosition[4] = {0, 3, 1, 2};
  const int64_t storage_axis = nhwc ? kNhwcPosition[axis] : axis;
  const Shape y_storage = storage_shape(y);
  layer->batched = y.batched;
  if (layer->batched && storage_axis == 0) return context.error("concat along the batch axis");
  int64_t outer = 1;
  for (int64_t d = layer->batched ? 1 : 0; d < storage_axis; ++d) outer *= y_storage[d];
  layer->outer_per_image = outer;
  int64_t after = 1;
  for (int64_t d = storage_axis + 1; d < rank; ++d) after *= y_storage[d];
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, supporting_isa(context));
  layer->requantize = kernels::quantize_kernels<T>(isa).requantize.fn;
  int64_t extent = 0;
  for (size_t i = 0; i < count; ++i) {
    QDQRT_ASSIGN_OR_RETURN(const PlanTensor* x, check_input(context, i, {"input", rank, static_cast<int>(y.layout)}));
    if (x->dtype != y.dtype || x->batched != y.batched) return context.error(fmt::format("input {} type", i));
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && x->shape[d] != y.shape[d]) return context.error(fmt::format("input {} shape", i));
    }
    extent += x->shape[axis];
    const float scale = scales[i];
    kernels::ConcatInput<T> input;
    input.inner = static_cast<size_t>(x->shape[axis] * after);
    input.requantize = scale != y_scale || zero_points[i] != y_zero_point;
    input.params =
        kernels::make_requantize_params<T>(scale, static_cast<int32_t>(zero_points[i]), y_scale, y_zero_point);
    layer->templates.push_back(input);
    layer->inputs.push_back(context.layer().inputs[i]);
  }
  if (extent != y.shape[axis]) return context.error("inputs do not add up to the output's extent");
  layer->row_length = y.shape[axis] * after;
  layer->output = context.layer().outputs[0];
  return std::unique_ptr<Layer>(std::move(layer));
}

Result<std::unique_ptr<Layer>> bind_qconcat(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y, check_output(context, 0, {"output", -1, -1, true}));
  if (y->shape.empty() || context.layer().inputs.empty() || context.layer().inputs.size() > 4096) {
    return context.error("needs a ranked output and 1..4096 inputs");
  }
  if (y->dtype == DataType::kInt8) return bind_qconcat_typed<int8_t>(context, *y);
  return bind_qconcat_typed<uint8_t>(context, *y);
}

// ---------------------------------------------------------------------------------------------
// Reshape-like copies

// x is 8-bit, a runtime value with a static shape; the output has as many elements.
Result<Shape> analyze_reshape(const Node& node, const BuildContext& context) {
  if (node.outputs.size() != 1 || node.outputs[0].empty()) return unsupported("{}: one output", node.describe());
  const std::string& x = node.input(0);
  if (x.empty() || context.constant(x) != nullptr) return unsupported("{}: x must be a runtime value", node.describe());
  QDQRT_ASSIGN_OR_RETURN(DataType dtype, context.dtype_of(x));
  if (!is_8bit(dtype)) return unsupported("{}: not 8-bit", node.describe());
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, static_shape(node, context, x));
  QDQRT_ASSIGN_OR_RETURN(Shape y_shape, static_shape(node, context, node.outputs[0]));
  const std::optional<BatchLayout> x_batch = context.batch_layout(x), y_batch = context.batch_layout(node.outputs[0]);
  const bool batch_fits = x_batch && y_batch ? x_batch->batched == y_batch->batched
                                             : !x_shape.empty() && !y_shape.empty() && x_shape[0] == y_shape[0];
  if (shape_numel(x_shape) != shape_numel(y_shape) || x_shape.empty() || y_shape.empty() || !batch_fits) {
    return unsupported("{}: element count or batch changes", node.describe());
  }
  return x_shape;
}

Status lower_reshape(const Node& node, BuildContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, analyze_reshape(node, context));
  PlanLayer layer = node_layer(node, kReshapeKind);
  QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.input(0)));
  int32_t x = stored;
  const PlanTensor& tensor = context.tensor(stored);
  const bool same_bytes = tensor.layout == Layout::kNhwc && (x_shape[1] == 1 || x_shape[2] * x_shape[3] == 1);
  if (tensor.layout != Layout::kPlain && !same_bytes) {
    QDQRT_ASSIGN_OR_RETURN(x, context.input(node.input(0), Layout::kPlain));
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], Layout::kPlain));
  layer.inputs = {x};
  layer.outputs = {y};
  layer.kernel = "x8-copy";
  context.add_layer(std::move(layer));
  return Status::ok();
}

class CopyLayer final : public Layer {
 public:
  int32_t input = -1, output = -1;
  WorkShape work(const RunState& state) const override {
    return {ceil_div(state.numel(input), kCopyBytesPerItem), static_cast<double>(kCopyBytesPerItem) / 8};
  }
  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t count = state.numel(input);
    const int64_t first = std::min(count, begin * kCopyBytesPerItem);
    const int64_t last = std::min(count, end * kCopyBytesPerItem);
    const uint8_t* x = state.data<const uint8_t>(input);
    uint8_t* y = state.data<uint8_t>(output);
    if (last > first && x != y) std::memcpy(y + first, x + first, static_cast<size_t>(last - first));
  }
};

Result<std::unique_ptr<Layer>> bind_reshape(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* x, check_input(context, 0, {"input", -1, -1, true}));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y,
                         check_output(context, 0, {"output", -1, static_cast<int>(Layout::kPlain), true}));
  const bool same_bytes = x->layout == Layout::kPlain || x->shape[1] == 1 || x->shape[2] * x->shape[3] == 1;
  if (!same_bytes) return context.error("an nhwc input must be reordered first");
  if (x->dtype != y->dtype || shape_numel(x->shape) != shape_numel(y->shape) || x->batched != y->batched) {
    return context.error("input and output differ in type, element count or batch");
  }
  if (context.layer().inputs.size() != 1) return context.error("expects one input");
  auto layer = std::make_unique<CopyLayer>();
  layer->input = context.layer().inputs[0];
  layer->output = context.layer().outputs[0];
  return std::unique_ptr<Layer>(std::move(layer));
}

// ---------------------------------------------------------------------------------------------
// Transpose

// Where the batch of an input laid out as `x` is after the transpose `perm`.
BatchLayout permuted_batch(const BatchLayout& x, const std::vector<int64_t>& perm) {
  BatchLayout y = x;
  for (size_t d = 0; d < perm.size(); ++d) {
    if (perm[d] == x.axis) y.axis = static_cast<int32_t>(d);
  }
  return y;
}

Result<std::vector<int64_t>> analyze_transpose(const Node& node, const BuildContext& context) {
  const auto* attributes = dynamic_cast<const TransposeAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return unsupported("{}: attributes are not parsed", node.describe());
  if (node.outputs.size() != 1 || node.outputs[0].empty()) return unsupported("{}: one output", node.describe());
  const std::string& x = node.input(0);
  if (x.empty() || context.constant(x) != nullptr) return unsupported("{}: x must be a runtime value", node.describe());
  QDQRT_ASSIGN_OR_RETURN(DataType dtype, context.dtype_of(x));
  if (!is_8bit(dtype)) return unsupported("{}: not 8-bit", node.describe());
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, static_shape(node, context, x));
  if (x_shape.empty() || x_shape.size() > kMaxTransposeRank) return unsupported("{}: rank", node.describe());
  std::vector<int64_t> perm = attributes->perm;
  if (perm.empty()) {
    for (size_t d = x_shape.size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  }
  if (perm.size() != x_shape.size()) return unsupported("{}: perm size", node.describe());
  // The output's batch dim must be where perm puts the input's.
  const std::optional<BatchLayout> x_batch = context.batch_layout(x), y_batch = context.batch_layout(node.outputs[0]);
  if (!x_batch || !y_batch) {
    if (perm[0] != 0) return unsupported("{}: the batch dim must stay first", node.describe());
  } else if (x_batch->batched && permuted_batch(*x_batch, perm) != *y_batch) {
    return unsupported("{}: the output's batch dim is not the permuted input's", node.describe());
  }
  return perm;
}

Status lower_transpose(const Node& node, BuildContext& context) {
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> perm, analyze_transpose(node, context));
  // Between NCHW and NHWC with one side stored channels-last: the same bytes, no transpose.
  QDQRT_ASSIGN_OR_RETURN(bool relabeled, fp32::lower_transpose_as_relabel(node, context));
  if (relabeled) return Status::ok();
  PlanLayer layer = node_layer(node, kTransposeKind);
  QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input(node.input(0), Layout::kPlain));
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], Layout::kPlain));
  layer.inputs = {x};
  layer.outputs = {y};
  params::kPerm.write(layer, perm);
  layer.kernel = "x8-transpose-strided";
  context.add_layer(std::move(layer));
  return Status::ok();
}

Result<std::unique_ptr<Layer>> bind_transpose(const BindContext& context) {
  const int plain = static_cast<int>(Layout::kPlain);
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* x, check_input(context, 0, {"input", -1, plain, true}));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y, check_output(context, 0, {"output", -1, plain, true}));
  const size_t rank = x->shape.size();
  if (rank == 0 || rank > kMaxTransposeRank || y->shape.size() != rank || x->dtype != y->dtype) {
    return context.error("input and output must be 8-bit tensors of one rank <= 6");
  }
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                         params::kPerm.read_in(context, rank, 0, static_cast<int64_t>(rank) - 1));
  std::array<bool, kMaxTransposeRank> seen{};
  for (size_t d = 0; d < rank; ++d) {
    const size_t source = static_cast<size_t>(perm[d]);
    if (seen[source]) return context.error("perm is not a permutation");
    seen[source] = true;
    if (y->shape[d] != x->shape[source]) return context.error("output shape is not the permuted input shape");
  }
  if (x->batched != y->batched || (x->batched && permuted_batch(batch_layout_of(*x), perm) != batch_layout_of(*y))) {
    return context.error("the output's batch dim is not the permuted input's");
  }
  if (context.layer().inputs.size() != 1) return context.error("expects one input");
  // Runs as a strided copy: rows of the output, tiled 2-D transposes where the last dims swap.
  return make_transpose_copy(context.layer().inputs[0], context.layer().outputs[0], 1, perm);
}

}  // namespace

void register_int8_shape_layers(LayerRegistry& registry) {
  registry.add_kind({kConcatKind, bind_qconcat});
  registry.add_kind({kReshapeKind, bind_reshape, true});
  registry.add_kind({kTransposeKind, bind_transpose, true});

  NodeLowering concat;
  concat.domain = qdqrt::layers::kDomain;
  concat.op_type = qdqrt::layers::kQConcat;
  concat.lower = lower_qconcat;
  concat.accepts = [](const Node& node, const BuildContext& context) { return analyze_qconcat(node, context).ok(); };
  concat.prefers_nhwc = true;
  concat.follows_layout = true;
  registry.add_lowering(std::move(concat));

  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
    NodeLowering reshape;
    reshape.domain = kOnnxDomain;
    reshape.op_type = op;
    reshape.lower = lower_reshape;
    reshape.accepts = [](const Node& node, const BuildContext& context) { return analyze_reshape(node, context).ok(); };
    reshape.any_batch_layout = true;
    registry.add_lowering(std::move(reshape));
  }

  NodeLowering transpose;
  transpose.domain = kOnnxDomain;
  transpose.op_type = "Transpose";
  transpose.lower = lower_transpose;
  transpose.accepts = [](const Node& node, const BuildContext& context) {
    return analyze_transpose(node, context).ok();
  };
  transpose.any_batch_layout = true;
  // lower_transpose_as_relabel makes this permute of a channels-last input a copy.
  transpose.prefers_nhwc_for = [](const Node& node) {
    const auto* attributes = dynamic_cast<const TransposeAttributes*>(node.typed_attributes.get());
    return attributes != nullptr && attributes->perm == std::vector<int64_t>{0, 2, 3, 1};
  };
  registry.add_lowering(std::move(transpose));
}

}  // namespace qdqrt::engine::int8
