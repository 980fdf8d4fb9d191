// Data-movement layers on plain tensors of any dtype (named after the float family that needs them,
// but they copy bytes):
//   plain_copy       Reshape, Flatten, Squeeze, Unsqueeze: the same bytes under a new
//                    shape. The batch may be on any dim of either (any_batch_layout): both
//                    batched or neither. Also a rank-4 Transpose between NCHW and NHWC with
//                    one side stored channels-last (the other plain, the batch first):
//                    perm (0, 2, 3, 1) of a channels-last input, or perm (0, 3, 1, 2) to a
//                    channels-last output when its readers prefer it. Items: 256 KiB chunks.
//   plain_concat     Concat of runtime tensors along a non-batch axis. Items: outer rows. A
//                    rank-4 concat of channels (axis 1) runs channels-last when that moves
//                    fewer bytes through reorders than running plain (its inputs stored NHWC by
//                    NHWC convs and pools, its readers NHWC: Inception's, GoogLeNet's,
//                    DenseNet's and SqueezeNet's blocks): rows are pixels.
//   plain_transpose  Transpose of rank <= 4 that keeps the batch dim first, run as a strided copy
//                    (engine/layers/strided_copy.cpp): output rows, tiled 2-D transposes where the
//                    last dims swap.
#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "engine/layers/element_size.h"
#include "engine/layers/float_common.h"
#include "core/ops/tensor.h"

namespace qdqrt::engine::fp32 {

namespace {

constexpr const char* kCopyKind = "plain_copy";
constexpr const char* kConcatKind = "plain_concat";
constexpr const char* kTransposeKind = "plain_transpose";
constexpr int64_t kCopyChunkBytes = 256 * 1024;

Status check_tensor(const BindContext& context, const PlanTensor& tensor, const char* what,
                    Layout layout = Layout::kPlain) {
  if (dtype_size(tensor.dtype) == 0) return context.error(fmt::format("{} '{}' has no storage dtype", what, tensor.name));
  if (tensor.layout != layout) {
    const char* expected = layout == Layout::kPlain ? "plain" : "NHWC";
    return context.error(fmt::format("{} '{}' is not {}", what, tensor.name, expected));
  }
  if (safe_numel(tensor.shape) < 0) return context.error(fmt::format("{} '{}' has a bad shape", what, tensor.name));
  if (tensor.batched && (static_cast<size_t>(tensor.batch_axis) >= tensor.shape.size() ||
                         tensor.shape[static_cast<size_t>(tensor.batch_axis)] !=
                             tensor.batch_factor * context.plan().max_batch)) {
    return context.error(fmt::format("{} '{}' is batched but its batch dim is not the maximum batch", what,
                                     tensor.name));
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Copy

class CopyLayer final : public Layer {
 public:
  CopyLayer(int32_t input, int32_t output, size_t element) : input_(input), output_(output), element_(element) {}

  WorkShape work(const RunState& state) const override {
    const int64_t bytes = state.numel(input_) * static_cast<int64_t>(element_);
    return {.items = std::max<int64_t>(1, (bytes + kCopyChunkBytes - 1) / kCopyChunkBytes),
            .ops_per_item = static_cast<double>(kCopyChunkBytes) / 8.0};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t bytes = state.numel(input_) * static_cast<int64_t>(element_);
    const int64_t first = begin * kCopyChunkBytes, last = std::min(bytes, end * kCopyChunkBytes);
    if (last <= first) return;
    std::memcpy(state.data<uint8_t>(output_) + first, state.data<uint8_t>(input_) + first,
                static_cast<size_t>(last - first));
  }

 private:
  int32_t input_, output_;
  size_t element_;
};

Result<std::unique_ptr<Layer>> bind_copy(const BindContext& context) {
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  // One side channels-last (a Transpose between NCHW and NHWC): the other is plain and its shape
  // is the channels-last side's as stored, the batch on dim 0 of both.
  if (x->layout == Layout::kNhwc || y->layout == Layout::kNhwc) {
    const PlanTensor& nhwc = x->layout == Layout::kNhwc ? *x : *y;
    const PlanTensor& plain = x->layout == Layout::kNhwc ? *y : *x;
    QDQRT_RETURN_IF_ERROR(check_tensor(context, plain, &plain == x ? "input" : "output"));
    const Shape& c = nhwc.shape;
    if (c.size() != 4 || plain.shape != Shape{c[0], c[2], c[3], c[1]} || !batch_on_dim0(nhwc) ||
        batch_layout_of(nhwc) != batch_layout_of(plain) || x->dtype != y->dtype) {
      return context.error(fmt::format("NHWC {} {} and plain {} {} are not the same bytes", dtype_name(nhwc.dtype),
                                       shape_to_string(nhwc.shape), dtype_name(plain.dtype), shape_to_string(plain.shape)));
    }
    QDQRT_RETURN_IF_ERROR(check_tensor(context, nhwc, &nhwc == x ? "input" : "output", Layout::kNhwc));
    return std::unique_ptr<Layer>(
        std::make_unique<CopyLayer>(context.layer().inputs[0], context.layer().outputs[0], dtype_size(x->dtype)));
  }
  QDQRT_RETURN_IF_ERROR(check_tensor(context, *x, "input"));
  QDQRT_RETURN_IF_ERROR(check_tensor(context, *y, "output"));
  if (x->dtype != y->dtype || safe_numel(x->shape) != safe_numel(y->shape) || x->batched != y->batched) {
    return context.error(fmt::format("input {} {} and output {} {} differ in dtype, size or batching",
                                     dtype_name(x->dtype), shape_to_string(x->shape), dtype_name(y->dtype),
                                     shape_to_string(y->shape)));
  }
  return std::unique_ptr<Layer>(
      std::make_unique<CopyLayer>(context.layer().inputs[0], context.layer().outputs[0], dtype_size(x->dtype)));
}

Status lower_copy(const Node& node, BuildContext& context) {
  if (!node.has_input(0) || context.constant(node.input(0)) != nullptr || node.outputs.empty()) {
    return lower_with_reference(node, context);
  }
  QDQRT_ASSIGN_OR_RETURN(Shape y_shape, context.shape_of(node.outputs[0]));
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), Layout::kPlain));
  const PlanTensor& x = context.tensor(input);
  // Where the builder tracks the batch, the copy only needs both sides batched or neither
  // ([N,C] -> [N*C] included); else the batch must stay the leading dim ([N,C,1,1] -> [N,C]).
  const std::optional<BatchLayout> y_batch = context.batch_layout(node.outputs[0]);
  const bool batch_fits = y_batch ? y_batch->batched == x.batched
                                  : !x.batched || (batch_leads(x) && !y_shape.empty() && y_shape[0] == x.shape[0]);
  if (safe_numel(x.shape) != safe_numel(y_shape) || dtype_size(x.dtype) == 0 || !batch_fits) {
    return lower_with_reference(node, context);
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  if (context.tensor(output).batched != x.batched) {
    return internal_error("{}: input batched {} but output batched {}", node.describe(), x.batched,
                          context.tensor(output).batched);
  }
  PlanLayer layer = make_layer(node, kCopyKind, "x8-copy");
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Concat

class ConcatLayer final : public Layer {
 public:
  ConcatLayer(std::vector<int32_t> inputs, std::vector<int64_t> row_bytes, int32_t output, int64_t outer_per_image,
              bool batched)
      : inputs_(std::move(inputs)),
        row_bytes_(std::move(row_bytes)),
        output_(output),
        outer_per_image_(outer_per_image),
        batched_(batched) {
    for (int64_t bytes : row_bytes_) out_row_bytes_ += bytes;
  }

  WorkShape work(const RunState& state) const override {
    return {.items = (batched_ ? state.batch : 1) * outer_per_image_,
            .ops_per_item = static_cast<double>(out_row_bytes_) / 8.0};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    uint8_t* out = state.data<uint8_t>(output_);
    for (int64_t row = begin; row < end; ++row) {
      uint8_t* target = out + row * out_row_bytes_;
      for (size_t i = 0; i < inputs_.size(); ++i) {
        std::memcpy(target, state.data<uint8_t>(inputs_[i]) + row * row_bytes_[i], static_cast<size_t>(row_bytes_[i]));
        target += row_bytes_[i];
      }
    }
  }

 private:
  std::vector<int32_t> inputs_;
  std::vector<int64_t> row_bytes_;
  int32_t output_;
  int64_t outer_per_image_;
  bool batched_;
  int64_t out_row_bytes_ = 0;
};

Result<std::unique_ptr<Layer>> bind_concat(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, params::kAxis.read(context));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  const bool nhwc = y->layout == Layout::kNhwc;
  QDQRT_RETURN_IF_ERROR(check_tensor(context, *y, "output", y->layout));
  const int64_t rank = static_cast<int64_t>(y->shape.size());
  if (axis < (y->batched ? 1 : 0) || axis >= rank) return context.error(fmt::format("axis {} is out of range", axis));
  if (nhwc && (rank != 4 || axis != 1 || !batch_leads(*y))) {
    return context.error("a channels-last concat joins the channels (axis 1) of rank-4 tensors with the batch in front");
  }
  if (context.layer().inputs.empty()) return context.error("no inputs");
  const size_t element = dtype_size(y->dtype);
  // Channels-last: the stored [N, H, W, C] order, the channels last.
  auto stored = [nhwc](const Shape& shape) { return nhwc ? Shape{shape[0], shape[2], shape[3], shape[1]} : shape; };
  const int64_t stored_axis = nhwc ? 3 : axis;
  std::vector<int64_t> row_bytes;
  int64_t axis_total = 0;
  for (size_t i = 0; i < context.layer().inputs.size(); ++i) {
    QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(i));
    QDQRT_RETURN_IF_ERROR(check_tensor(context, *x, "input", y->layout));
    bool fits = x->dtype == y->dtype && x->shape.size() == y->shape.size() && x->batched == y->batched &&
                batch_layout_of(*x) == batch_layout_of(*y);
    for (int64_t d = 0; fits && d < rank; ++d) fits = d == axis || x->shape[d] == y->shape[d];
    if (!fits) {
      return context.error(fmt::format("input {} does not fit output {} on axis {}", shape_to_string(x->shape),
                                       shape_to_string(y->shape), axis));
    }
    axis_total += x->shape[axis];
    const Shape x_stored = stored(x->shape);
    row_bytes.push_back(safe_numel(Shape(x_stored.begin() + stored_axis, x_stored.end())) *
                        static_cast<int64_t>(element));
  }
  if (axis_total != y->shape[axis]) return context.error("the inputs' sizes on the axis do not add up to the output's");
  const Shape y_stored = stored(y->shape);
  Shape outer_shape(y_stored.begin(), y_stored.begin() + stored_axis);
  if (y->batched) outer_shape[0] = y->batch_factor;  // dim 0 is batch_factor slices per image
  return std::unique_ptr<Layer>(std::make_unique<ConcatLayer>(context.layer().inputs, std::move(row_bytes),
                                                              context.layer().outputs[0], safe_numel(outer_shape),
                                                              y->batched));
}

Status lower_concat(const Node& node, BuildContext& context) {
  const auto& attributes = node.attrs<ConcatAttributes>();
  QDQRT_ASSIGN_OR_RETURN(Shape y_shape, context.shape_of(node.outputs[0]));
  const int64_t rank = static_cast<int64_t>(y_shape.size());
  const int64_t axis = attributes.axis < 0 ? attributes.axis + rank : attributes.axis;
  if (rank == 0 || axis < 0 || axis >= rank) return lower_with_reference(node, context);
  for (const std::string& input : node.inputs) {
    if (input.empty() || context.constant(input) != nullptr) return lower_with_reference(node, context);
  }
  // Channels-last when the reorders it saves (inputs stored NHWC; the output when its readers take
  // NHWC) outweigh those it adds (inputs stored plain; the output when a reader takes plain).
  Layout layout = Layout::kPlain;
  if (rank == 4 && axis == 1) {
    QDQRT_ASSIGN_OR_RETURN(LayoutCosts costs, layout_costs(context, node.inputs, node.outputs[0]));
    if (costs.batch_leads && costs.nhwc < costs.plain) layout = Layout::kNhwc;
  }
  std::vector<int32_t> inputs;
  int batched = 0;
  for (const std::string& input : node.inputs) {
    QDQRT_ASSIGN_OR_RETURN(int32_t tensor, context.input(input, layout));
    inputs.push_back(tensor);
    batched += context.tensor(tensor).batched ? 1 : 0;
  }
  // All inputs batched (axis past the batch) or none.
  if ((batched != 0 && batched != static_cast<int>(inputs.size())) || (batched && axis == 0)) {
    return lower_with_reference(node, context);
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], layout));
  if (context.tensor(output).batched != (batched != 0)) {
    return internal_error("{}: inputs and output disagree on batching", node.describe());
  }
  PlanLayer layer = make_layer(node, kConcatKind, layout == Layout::kNhwc ? "x8-concat-nhwc" : "x8-concat");
  params::kAxis.write(layer, axis);
  layer.inputs = inputs;
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Transpose

Result<std::unique_ptr<Layer>> bind_transpose(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto perm, params::kPerm.read_any(context));
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_RETURN_IF_ERROR(check_tensor(context, *x, "input"));
  QDQRT_RETURN_IF_ERROR(check_tensor(context, *y, "output"));
  const size_t rank = x->shape.size();
  if (rank < 1 || rank > 4 || perm.size() != rank || y->shape.size() != rank || x->dtype != y->dtype ||
      x->batched != y->batched) {
    return context.error("transpose needs equal ranks 1..4, a full perm and equal dtypes");
  }
  std::vector<bool> seen(rank, false);
  for (size_t j = 0; j < rank; ++j) {
    if (perm[j] < 0 || perm[j] >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(perm[j])]) {
      return context.error("perm is not a permutation");
    }
    seen[static_cast<size_t>(perm[j])] = true;
    if (y->shape[j] != x->shape[static_cast<size_t>(perm[j])]) return context.error("output shape does not follow perm");
  }
  if (x->batched && perm[0] != 0) return context.error("a batched transpose must keep axis 0 first");
  // Runs as a strided copy: rows of the output, tiled 2-D transposes where the last dims swap.
  return make_transpose_copy(context.layer().inputs[0], context.layer().outputs[0], dtype_size(x->dtype), perm);
}

// A Transpose whose output in `output_layout` holds the same bytes as `input` as stored.
Status add_layout_copy(const Node& node, BuildContext& context, int32_t input, Layout output_layout) {
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], output_layout));
  if (context.tensor(output).batched != context.tensor(input).batched) {
    return internal_error("{}: input and output disagree on batching", node.describe());
  }
  PlanLayer layer = make_layer(node, kCopyKind, "x8-copy");
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace

Result<bool> lower_transpose_as_relabel(const Node& node, BuildContext& context) {
  if (!node.has_input(0) || node.outputs.size() != 1 || context.constant(node.input(0)) != nullptr) return false;
  const std::vector<int64_t>& perm = node.attrs<TransposeAttributes>().perm;
  // The batch on dim 0 of both sides, any number of slices per image ([N*T', C, H, W] of a lowered
  // 3-D conv included): the stored bytes of a smaller batch are still the leading ones.
  if (perm == std::vector<int64_t>{0, 2, 3, 1}) {
    QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.input(0)));
    if (context.tensor(stored).layout == Layout::kNhwc && batch_on_dim0(context.tensor(stored))) {
      QDQRT_RETURN_IF_ERROR(add_layout_copy(node, context, stored, Layout::kPlain));
      return true;
    }
  } else if (perm == std::vector<int64_t>{0, 3, 1, 2} && context.consumers_prefer_nhwc(node.outputs[0])) {
    QDQRT_ASSIGN_OR_RETURN(Shape x_shape, context.shape_of(node.input(0)));
    if (x_shape.size() != 4) return false;
    QDQRT_ASSIGN_OR_RETURN(int32_t plain, context.input(node.input(0), Layout::kPlain));
    if (batch_on_dim0(context.tensor(plain))) {
      QDQRT_RETURN_IF_ERROR(add_layout_copy(node, context, plain, Layout::kNhwc));
      return true;
    }
  }
  return false;
}

namespace {

Status lower_transpose(const Node& node, BuildContext& context) {
  const auto& attributes = node.attrs<TransposeAttributes>();
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, context.shape_of(node.input(0)));
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  std::vector<int64_t> perm = attributes.perm;
  if (perm.empty()) {
    for (int64_t axis = rank - 1; axis >= 0; --axis) perm.push_back(axis);
  }
  const size_t element = dtype_size(value_dtype(context, node.input(0)));
  if (rank < 1 || rank > 4 || static_cast<int64_t>(perm.size()) != rank || context.constant(node.input(0)) != nullptr ||
      !is_copyable_element_size(element)) {
    return lower_with_reference(node, context);
  }
  // NCHW <-> NHWC permutes of a rank-4 tensor (ConvNeXt's around its LayerNorms and Linears)
  // where one side is stored channels-last: its bytes are already the other side's, so the layer
  // is a copy (a view once aliased), and no reorder runs before or after it.
  QDQRT_ASSIGN_OR_RETURN(bool relabeled, lower_transpose_as_relabel(node, context));
  if (relabeled) return Status::ok();
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), Layout::kPlain));
  if (context.tensor(input).batched && perm[0] != 0) return lower_with_reference(node, context);
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  if (context.tensor(output).batched != context.tensor(input).batched) {
    return internal_error("{}: input and output disagree on batching", node.describe());
  }
  PlanLayer layer = make_layer(node, kTransposeKind, fmt::format("x{}-transpose-scalar", element * 8));
  params::kPerm.write(layer, perm);
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace

void register_shape(LayerRegistry& registry) {
  registry.add_kind({.kind = kCopyKind, .bind = bind_copy, .any_batch_layout = true});
  // The batch on dim 0 with several slices per image too (a Concat past dim 0 copies whole rows).
  registry.add_kind({.kind = kConcatKind, .bind = bind_concat, .batch_slices_on_dim0 = true});
  registry.add_kind({.kind = kTransposeKind, .bind = bind_transpose, .batch_slices_on_dim0 = true});
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
    registry.add_lowering({.domain = "", .op_type = op, .lower = lower_copy, .accepts = {}, .any_batch_layout = true});
  }
  registry.add_lowering({.domain = "",
                         .op_type = "Concat",
                         .lower = lower_concat,
                         .accepts = {},
                         .prefers_nhwc = true,
                         .batch_slices_on_dim0 = true,
                         .follows_layout = true});
  registry.add_lowering({.domain = "",
                         .op_type = "Transpose",
                         .lower = lower_transpose,
                         .accepts = {},
                         // Rank-4 NCHW <-> NHWC permutes of [N*T', ...] too (strided_copy leaves them).
                         .batch_slices_on_dim0 = true,
                         .prefers_nhwc_for = [](const Node& node) {
                           // lower_transpose makes this permute of a channels-last input a copy.
                           return node.attrs<TransposeAttributes>().perm == std::vector<int64_t>{0, 2, 3, 1};
                         }});
}

}  // namespace qdqrt::engine::fp32
