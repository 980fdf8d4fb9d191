// fp32 elementwise layers:
//   fp32_binary     Add/Sub/Mul/Div/Max/Min (2 inputs), numpy broadcasting (kernels/elementwise/broadcast.h);
//                   either operand may be a constant (a blob). The broadcast plan is made per
//                   image at bind time, so any run batch reuses it without allocating. An image
//                   is what follows the output's batch axis: with the batch on dim k (attention's
//                   [L, N, E]), the images are the dims up to k at this run's batch, and an
//                   operand that is not batched must be the same for all of them.
//                   Channels-last when the first input is stored NHWC and the other has its
//                   rank-4 shape, or for a squeeze-excite gate [N, C, 1, 1] or a constant of one
//                   value or one per channel (written as [1, 1, 1, C], the memory order).
//   fp32_unary      Relu, Clip, LeakyRelu, HardSigmoid, HardSwish, Sigmoid, Tanh, Gelu (erf), Exp,
//                   Abs, Neg, Sqrt, Erf; keeps the input's layout.
//   fp32_softmax    Softmax over the last axis (opset >= 13), or over dims[axis:] (opset < 13).
//   fp32_batchnorm  inference BatchNormalization as y = x * a[c] + b[c]; channels-last (items:
//                   rows of pixels) when its rank-4 input is stored so (DenseNet's pre-activation
//                   BatchNorm after a channels-last Concat).
//   fp32_fused_batchnorm  FusedBatchNorm (core/ops/fused_batchnorm.h): the same scale and shift of
//                   the channel concatenation of its inputs, read where each lies, then a clamp
//                   (Relu: [0, inf)); one pass where Concat, BatchNorm and Relu made three.
// fp32_unary and fp32_softmax take the batch on any axis (any_batch_layout; softmax: before its
// rows); so does fp32_binary in plain layout.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "engine/layers/float_common.h"
#include "kernels/elementwise/broadcast.h"
#include "core/ops/elementwise.h"
#include "core/ops/fused_batchnorm.h"
#include "core/ops/fused_layers.h"
#include "core/ops/normalization.h"

namespace qdqrt::engine::fp32 {

namespace {

// Elements per work item of the streaming layers (large enough to be worth a thread switch).
constexpr int64_t kChunk = 16384;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---------------------------------------------------------------------------------------------
// Binary

constexpr const char* kBinaryKind = "fp32_binary";

std::optional<kernels::Fp32BinaryOp> binary_op(const std::string& op_type) {
  if (op_type == "Add") return kernels::Fp32BinaryOp::kAdd;
  if (op_type == "Sub") return kernels::Fp32BinaryOp::kSub;
  if (op_type == "Mul") return kernels::Fp32BinaryOp::kMul;
  if (op_type == "Div") return kernels::Fp32BinaryOp::kDiv;
  if (op_type == "Max") return kernels::Fp32BinaryOp::kMax;
  if (op_type == "Min") return kernels::Fp32BinaryOp::kMin;
  return std::nullopt;
}

// `shape` with its first `leading` dims set to 1: one image of a tensor whose batch is on dim
// leading - 1 (the dims before it index images too).
Shape per_image(Shape shape, size_t leading) {
  for (size_t axis = 0; axis < leading && axis < shape.size(); ++axis) shape[axis] = 1;
  return shape;
}

// How many leading dims index images: up to and including the batch axis; 0 when not batched.
size_t image_axes(const PlanTensor& tensor) {
  return tensor.batched && tensor.batch_axis >= 0 ? static_cast<size_t>(tensor.batch_axis) + 1 : 0;
}

// One operand: a runtime tensor (image stride when batched) or a constant blob.
struct Operand {
  int32_t tensor = -1;  // -1: constant
  const float* constant = nullptr;
  int64_t image_stride = 0;  // elements per image when batched, else 0
};

class BinaryLayer final : public Layer {
 public:
  BinaryLayer(kernels::Fp32BinaryOp op, Operand a, Operand b, int32_t output, bool batched,
              kernels::BroadcastPlan plan, kernels::Fp32Kernels fp32)
      : op_(op), a_(a), b_(b), output_(output), batched_(batched), plan_(std::move(plan)), fp32_(fp32) {
    chunk_ = std::min<int64_t>(static_cast<int64_t>(plan_.inner), kChunk);
    if (chunk_ < 1) chunk_ = 1;
    chunks_per_row_ = ceil_div(static_cast<int64_t>(plan_.inner), chunk_);
    image_elements_ = static_cast<int64_t>(plan_.rows * plan_.inner);
  }

  WorkShape work(const RunState& state) const override {
    return {.items = images(state) * static_cast<int64_t>(plan_.rows) * chunks_per_row_,
            .ops_per_item = static_cast<double>(chunk_)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const float* a = a_.tensor >= 0 ? state.data<float>(a_.tensor) : a_.constant;
    const float* b = b_.tensor >= 0 ? state.data<float>(b_.tensor) : b_.constant;
    float* y = state.data<float>(output_);
    auto run_row = [&](const float* a_row, const float* b_row, float* y_row, size_t count) {
      switch (plan_.kind) {
        case kernels::BroadcastPlan::Kind::kVectorVector:
          fp32_.binary.fn(op_, count, a_row, b_row, y_row);
          break;
        case kernels::BroadcastPlan::Kind::kVectorScalar:
          fp32_.binary_vs.fn(op_, count, a_row, *b_row, y_row);
          break;
        case kernels::BroadcastPlan::Kind::kScalarVector:
          fp32_.binary_sv.fn(op_, count, *a_row, b_row, y_row);
          break;
      }
    };
    const int64_t rows = static_cast<int64_t>(plan_.rows);
    const int64_t inner = static_cast<int64_t>(plan_.inner);
    if (chunks_per_row_ == 1) {
      // One item per row: the next row's offsets from a cursor, not divisions (short rows).
      kernels::for_each_broadcast_row(plan_, begin, end, [&](int64_t image, int64_t row, size_t a_offset, size_t b_offset) {
        run_row(a + image * a_.image_stride + a_offset, b + image * b_.image_stride + b_offset,
                y + image * image_elements_ + row * inner, plan_.inner);
      });
      return;
    }
    const int64_t per_image = rows * chunks_per_row_;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / per_image;
      const int64_t row = (item % per_image) / chunks_per_row_;
      const int64_t start = (item % chunks_per_row_) * chunk_;
      const size_t count = static_cast<size_t>(std::min(chunk_, inner - start));
      size_t a_offset = 0, b_offset = 0;
      plan_.row_offsets(static_cast<size_t>(row), a_offset, b_offset);
      const float* a_row = a + image * a_.image_stride + a_offset;
      const float* b_row = b + image * b_.image_stride + b_offset;
      float* y_row = y + image * image_elements_ + row * inner + start;
      // A scalar operand is the row's one value whatever the chunk.
      run_row(plan_.kind == kernels::BroadcastPlan::Kind::kScalarVector ? a_row : a_row + start,
              plan_.kind == kernels::BroadcastPlan::Kind::kVectorScalar ? b_row : b_row + start, y_row, count);
    }
  }

 private:
  // The batch and the dims before it, at this run's batch.
  int64_t images(const RunState& state) const {
    return batched_ && image_elements_ > 0 ? state.numel(output_) / image_elements_ : 1;
  }

  kernels::Fp32BinaryOp op_;
  Operand a_, b_;
  int32_t output_;
  bool batched_;
  kernels::BroadcastPlan plan_;
  kernels::Fp32Kernels fp32_;
  int64_t chunk_ = 1, chunks_per_row_ = 1, image_elements_ = 0;
};

Result<std::unique_ptr<Layer>> bind_binary(const BindContext& context) {
  const PlanLayer& layer = context.layer();
  QDQRT_ASSIGN_OR_RETURN(int64_t op_value, params::kBinaryOp.read(context));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  // Channels-last: runtime inputs of the output's shape or [N, C, 1, 1] (a squeeze-excite gate: the
  // same bytes in either layout), constants [1, 1, 1, C or 1] (already in memory order); the
  // broadcast plan works on the memory order NHWC.
  const Layout layout = y->layout;
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, layout == Layout::kNhwc ? 4 : -1, layout));
  if (layout == Layout::kNhwc && !batch_leads(*y)) return context.error("a channels-last output has the batch off dim 0");
  auto memory_order = [&](const Shape& shape) {
    return layout == Layout::kNhwc ? Shape{shape[0], shape[2], shape[3], shape[1]} : shape;
  };
  const size_t leading = image_axes(*y);
  if (leading > y->shape.size()) return context.error(fmt::format("batch axis {} is out of range", y->batch_axis));
  const Shape y_image = memory_order(per_image(y->shape, leading));

  size_t next_input = 0;
  Operand operands[2];
  Shape shapes[2];
  bool any_batched = false;
  for (int side = 0; side < 2; ++side) {
    const std::string_view name = params::kOperands[side];
    QDQRT_ASSIGN_OR_RETURN(bool is_constant, params::kOperandIsConstant.read(context, name));
    if (is_constant) {
      QDQRT_ASSIGN_OR_RETURN(shapes[side], params::kOperandShape.read_any(context, name));
      // Channels-last: one value or one per channel, along the stored last axis.
      if (layout == Layout::kNhwc &&
          (shapes[side].size() != 4 || shapes[side][0] != 1 || shapes[side][1] != 1 || shapes[side][2] != 1 ||
           (shapes[side][3] != 1 && shapes[side][3] != y->shape[1]))) {
        return context.error(fmt::format("channels-last constant {} {} is neither [1, 1, 1, {}] nor one value", name,
                                         shape_to_string(shapes[side]), y->shape[1]));
      }
      const int64_t count = safe_numel(shapes[side]);
      if (count < 0) return context.error(fmt::format("constant {} has a bad shape", name));
      QDQRT_ASSIGN_OR_RETURN(operands[side].constant, params::kOperandValue.read(context, count, name));
    } else {
      QDQRT_BIND_ASSIGN(const PlanTensor* tensor, context, context.input(next_input));
      const bool gate = layout == Layout::kNhwc && tensor->shape.size() == 4 && tensor->shape[0] == y->shape[0] &&
                        tensor->shape[1] == y->shape[1] && tensor->shape[2] == 1 && tensor->shape[3] == 1;
      QDQRT_RETURN_IF_ERROR(expect_tensor(context, *tensor, "input", DataType::kFloat, -1, gate ? tensor->layout : layout));
      if (layout == Layout::kNhwc &&
          ((tensor->shape != y->shape && !gate) || (tensor->batched && tensor->batch_axis != 0))) {
        return context.error(fmt::format("channels-last input '{}' {} is neither shaped like the output {} nor [N, C, 1, 1]",
                                         tensor->name, shape_to_string(tensor->shape), shape_to_string(y->shape)));
      }
      operands[side].tensor = layer.inputs[next_input++];
      shapes[side] = memory_order(per_image(tensor->shape, image_axes(*tensor)));
      if (tensor->batched) {
        // Its images are the output's: the same batch axis and factor, the same dims before it.
        if (!y->batched || tensor->shape.size() != y->shape.size() || batch_layout_of(*tensor) != batch_layout_of(*y) ||
            !std::equal(tensor->shape.begin(), tensor->shape.begin() + static_cast<std::ptrdiff_t>(leading),
                        y->shape.begin())) {
          return context.error(fmt::format("batched input '{}' {} does not line up with output {}", tensor->name,
                                           shape_to_string(tensor->shape), shape_to_string(y->shape)));
        }
        operands[side].image_stride = safe_numel(shapes[side]);
        any_batched = true;
      }
    }
  }
  if (next_input != layer.inputs.size()) return context.error("unexpected extra inputs");
  if (y->batched && !any_batched) return context.error("the output is batched but no input is");
  auto plan = kernels::make_broadcast_plan(shapes[0], shapes[1]);
  if (!plan || plan->output_shape != y_image) {
    return context.error(fmt::format("inputs {} and {} do not broadcast to the output's {}", shape_to_string(shapes[0]),
                                     shape_to_string(shapes[1]), shape_to_string(y_image)));
  }
  return std::unique_ptr<Layer>(std::make_unique<BinaryLayer>(static_cast<kernels::Fp32BinaryOp>(op_value), operands[0],
                                                              operands[1], layer.outputs[0], y->batched, *plan,
                                                              kernels::fp32_kernels(bind_isa(context.plan()))));
}

// Both inputs computed at run time with the output's static rank-4 shape.
bool same_shape_rank4(const Node& node, const BuildContext& context) {
  if (node.inputs.size() != 2 || !node.has_input(0) || !node.has_input(1) || node.outputs.size() != 1) return false;
  if (context.constant(node.input(0)) != nullptr || context.constant(node.input(1)) != nullptr) return false;
  auto a = context.shape_of(node.input(0)), b = context.shape_of(node.input(1)), y = context.shape_of(node.outputs[0]);
  return a.ok() && b.ok() && y.ok() && a->size() == 4 && *a == *b && *a == *y;
}

// Which input (0 or 1) is a runtime [N, C, 1, 1] gate of the other, a runtime [N, C, H, W] of the
// output's shape; nullopt for other inputs.
std::optional<size_t> channel_gate_side(const Node& node, const BuildContext& context) {
  if (node.inputs.size() != 2 || !node.has_input(0) || !node.has_input(1) || node.outputs.size() != 1) return std::nullopt;
  if (context.constant(node.input(0)) != nullptr || context.constant(node.input(1)) != nullptr) return std::nullopt;
  auto a = context.shape_of(node.input(0)), b = context.shape_of(node.input(1)), y = context.shape_of(node.outputs[0]);
  if (!a.ok() || !b.ok() || !y.ok() || a->size() != 4 || b->size() != 4) return std::nullopt;
  auto is_gate = [&](const Shape& gate, const Shape& x) {
    return gate[0] == x[0] && gate[1] == x[1] && gate[2] == 1 && gate[3] == 1 && x[2] * x[3] > 1;
  };
  if (*a == *y && is_gate(*b, *a)) return 1;
  if (*b == *y && is_gate(*a, *b)) return 0;
  return std::nullopt;
}

// Which input (0 or 1) is a float constant of one value or one per channel of the other, a
// runtime tensor of the rank-4 output's shape ([C, 1, 1] or [1, C, 1, 1]: ConvNeXt's layer
// scale); nullopt for other inputs.
std::optional<size_t> channel_constant_side(const Node& node, const BuildContext& context) {
  if (node.inputs.size() != 2 || !node.has_input(0) || !node.has_input(1) || node.outputs.size() != 1) return std::nullopt;
  for (size_t side = 0; side < 2; ++side) {
    const Tensor* constant = context.constant(node.input(side));
    if (constant == nullptr || constant->dtype() != DataType::kFloat || context.constant(node.input(1 - side))) continue;
    auto x = context.shape_of(node.input(1 - side)), y = context.shape_of(node.outputs[0]);
    if (!x.ok() || !y.ok() || x->size() != 4 || *x != *y || constant->rank() > 4) return std::nullopt;
    if (constant->numel() == 1) return side;
    // Left-padded to rank 4, every dim but the channel's is 1.
    Shape padded(4 - static_cast<size_t>(constant->rank()), 1);
    padded.insert(padded.end(), constant->shape().begin(), constant->shape().end());
    if (padded[0] == 1 && padded[1] == (*y)[1] && padded[2] == 1 && padded[3] == 1) return side;
    return std::nullopt;
  }
  return std::nullopt;
}

bool accepts_same_shape_binary(const Node& node, const BuildContext& context) {
  return all_float(node, context) && binary_op(node.op_type).has_value() &&
         (same_shape_rank4(node, context) || channel_gate_side(node, context).has_value() ||
          channel_constant_side(node, context).has_value());
}

Status lower_binary(const Node& node, BuildContext& context) {
  auto op = binary_op(node.op_type);
  if (!op || node.inputs.size() != 2 || !node.has_input(0) || !node.has_input(1)) return lower_with_reference(node, context);
  const Tensor* constants[2] = {context.constant(node.input(0)), context.constant(node.input(1))};
  if (constants[0] && constants[1]) return lower_with_reference(node, context);
  const kernels::Fp32Kernels fp32 = kernels::fp32_kernels(kernels::usable_isa(context.isa()));
  PlanLayer layer = make_layer(node, kBinaryKind, fp32.binary.name);
  params::kBinaryOp.write(layer, static_cast<int64_t>(*op));
  // Two runtime inputs of the output's rank-4 shape (a residual Add between INT8 convs): an
  // elementwise op is blind to the memory order, so it runs channels-last when the first input is
  // stored so, and no reorder is needed on either side.
  if (same_shape_rank4(node, context)) {
    QDQRT_ASSIGN_OR_RETURN(int32_t a, context.input_as_stored(node.input(0)));
    if (context.tensor(a).layout == Layout::kNhwc && batch_leads(context.tensor(a))) {
      QDQRT_ASSIGN_OR_RETURN(int32_t b, context.input(node.input(1), Layout::kNhwc));
      for (int side = 0; side < 2; ++side) params::kOperandIsConstant.write(layer, false, params::kOperands[side]);
      layer.inputs = {a, b};
      QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kNhwc));
      layer.outputs = {output};
      context.add_layer(std::move(layer));
      return Status::ok();
    }
  }
  // x [N, C, H, W] stored channels-last times a gate [N, C, 1, 1] (squeeze-excite): channels-last
  // too, the gate read as stored (its bytes are the same in both layouts).
  if (auto gate_side = channel_gate_side(node, context)) {
    const size_t x_side = 1 - *gate_side;
    QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input_as_stored(node.input(x_side)));
    if (context.tensor(x).layout == Layout::kNhwc && batch_leads(context.tensor(x))) {
      QDQRT_ASSIGN_OR_RETURN(int32_t gate, context.input_as_stored(node.input(*gate_side)));
      if (batch_leads(context.tensor(gate)) && context.tensor(gate).batched == context.tensor(x).batched) {
        for (int side = 0; side < 2; ++side) params::kOperandIsConstant.write(layer, false, params::kOperands[side]);
        layer.inputs = x_side == 0 ? std::vector<int32_t>{x, gate} : std::vector<int32_t>{gate, x};
        QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kNhwc));
        layer.outputs = {output};
        context.add_layer(std::move(layer));
        return Status::ok();
      }
    }
  }
  // x stored channels-last with a constant of one value or one per channel: channels-last too, the
  // constant laid along the stored last axis ([1, 1, 1, C]).
  if (auto constant_side = channel_constant_side(node, context)) {
    const size_t x_side = 1 - *constant_side;
    QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input_as_stored(node.input(x_side)));
    if (context.tensor(x).layout == Layout::kNhwc && batch_leads(context.tensor(x))) {
      const Tensor& constant = *constants[*constant_side];
      const std::string_view name = params::kOperands[*constant_side];
      params::kOperandIsConstant.write(layer, true, name);
      params::kOperandShape.write(layer, Shape{1, 1, 1, constant.numel()}, name);
      params::kOperandValue.write_bytes(layer, constant.raw_data(), constant.nbytes(), name);
      params::kOperandIsConstant.write(layer, false, params::kOperands[x_side]);
      layer.inputs = {x};
      QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kNhwc));
      layer.outputs = {output};
      context.add_layer(std::move(layer));
      return Status::ok();
    }
  }
  for (int side = 0; side < 2; ++side) {
    const std::string_view name = params::kOperands[side];
    params::kOperandIsConstant.write(layer, constants[side] != nullptr, name);
    if (constants[side]) {
      params::kOperandShape.write(layer, constants[side]->shape(), name);
      params::kOperandValue.write_bytes(layer, constants[side]->raw_data(), constants[side]->nbytes(), name);
    } else {
      QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(static_cast<size_t>(side)), Layout::kPlain));
      layer.inputs.push_back(input);
    }
  }
  // The per-image broadcast plan needs every batched input to line up with the batched output
  // (the same batch axis and factor, the same dims before it); other broadcasts across the batch
  // go to the reference (decided before declaring the output).
  bool any_batched = false;
  std::optional<BatchLayout> batch;
  for (int32_t input : layer.inputs) {
    const PlanTensor& tensor = context.tensor(input);
    if (!tensor.batched) continue;
    if (batch && *batch != batch_layout_of(tensor)) return lower_with_reference(node, context);
    batch = batch_layout_of(tensor);
    any_batched = true;
  }
  QDQRT_ASSIGN_OR_RETURN(Shape y_shape, context.shape_of(node.outputs[0]));
  const size_t leading = batch ? static_cast<size_t>(batch->axis) + 1 : 0;
  if (batch) {
    const std::optional<BatchLayout> y_batch = context.batch_layout(node.outputs[0]);
    if (leading > y_shape.size() || (!batch_leads(*batch) && (!y_batch || *y_batch != *batch))) {
      return lower_with_reference(node, context);
    }
  }
  for (int32_t input : layer.inputs) {
    const PlanTensor& tensor = context.tensor(input);
    if (tensor.batched && (tensor.shape.size() != y_shape.size() ||
                           !std::equal(tensor.shape.begin(), tensor.shape.begin() + static_cast<std::ptrdiff_t>(leading),
                                       y_shape.begin()))) {
      return lower_with_reference(node, context);
    }
  }
  const Shape y_image = per_image(y_shape, leading);
  Shape shapes[2];
  size_t next = 0;
  for (int side = 0; side < 2; ++side) {
    if (constants[side]) {
      shapes[side] = constants[side]->shape();
    } else {
      const PlanTensor& tensor = context.tensor(layer.inputs[next++]);
      shapes[side] = per_image(tensor.shape, image_axes(tensor));
    }
  }
  auto plan = kernels::make_broadcast_plan(shapes[0], shapes[1]);
  if (!plan || plan->output_shape != y_image) return lower_with_reference(node, context);
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  if (context.tensor(output).batched != any_batched ||
      (any_batched && !batch_leads(*batch) && batch_layout_of(context.tensor(output)) != *batch)) {
    return internal_error("{}: output batched {} but inputs batched {}", node.describe(), context.tensor(output).batched,
                          any_batched);
  }
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Unary

constexpr const char* kUnaryKind = "fp32_unary";

class UnaryLayer final : public Layer {
 public:
  UnaryLayer(kernels::Fp32UnaryOp op, kernels::Fp32UnaryParams params, int32_t input, int32_t output,
             kernels::Fp32Kernels fp32)
      : op_(op), params_(params), input_(input), output_(output), fp32_(fp32) {}

  WorkShape work(const RunState& state) const override {
    return {.items = ceil_div(state.numel(input_), kChunk), .ops_per_item = static_cast<double>(kChunk)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t total = state.numel(input_);
    const float* x = state.data<float>(input_);
    float* y = state.data<float>(output_);
    const int64_t first = begin * kChunk, last = std::min(total, end * kChunk);
    if (last > first) fp32_.unary.fn(op_, params_, static_cast<size_t>(last - first), x + first, y + first);
  }

 private:
  kernels::Fp32UnaryOp op_;
  kernels::Fp32UnaryParams params_;
  int32_t input_, output_;
  kernels::Fp32Kernels fp32_;
};

Result<std::unique_ptr<Layer>> bind_unary(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(int64_t op_value, params::kUnaryOp.read(context));
  QDQRT_ASSIGN_OR_RETURN(float alpha, params::kAlpha.read(context));
  QDQRT_ASSIGN_OR_RETURN(float beta, params::kBeta.read(context));
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  if (x->dtype != DataType::kFloat || y->dtype != DataType::kFloat || x->shape != y->shape || x->layout != y->layout ||
      batch_layout_of(*x) != batch_layout_of(*y) || safe_numel(x->shape) < 0) {
    return context.error(fmt::format("input '{}' and output '{}' must be fp32 tensors of one shape and layout", x->name,
                                     y->name));
  }
  kernels::Fp32UnaryParams unary_params{alpha, beta};
  return std::unique_ptr<Layer>(std::make_unique<UnaryLayer>(static_cast<kernels::Fp32UnaryOp>(op_value), unary_params,
                                                             context.layer().inputs[0], context.layer().outputs[0],
                                                             kernels::fp32_kernels(bind_isa(context.plan()))));
}

// A constant scalar input, or nullopt when absent; `ok` false when present but not a constant scalar.
std::optional<float> constant_scalar(const Node& node, const BuildContext& context, size_t index, bool& ok) {
  if (!node.has_input(index)) return std::nullopt;
  const Tensor* tensor = context.constant(node.input(index));
  if (tensor == nullptr || tensor->dtype() != DataType::kFloat || tensor->numel() != 1) {
    ok = false;
    return std::nullopt;
  }
  return tensor->data<float>()[0];
}

Status lower_unary(const Node& node, BuildContext& context) {
  using Op = kernels::Fp32UnaryOp;
  Op op = Op::kRelu;
  kernels::Fp32UnaryParams unary_params;
  const std::string& type = node.op_type;
  if (type == "Relu") {
    op = Op::kRelu;
  } else if (type == "LeakyRelu") {
    op = Op::kLeakyRelu;
    unary_params.alpha = node.attrs<LeakyReluAttributes>().alpha;
  } else if (type == "HardSigmoid") {
    op = Op::kHardSigmoid;
    unary_params.alpha = node.attrs<HardSigmoidAttributes>().alpha;
    unary_params.beta = node.attrs<HardSigmoidAttributes>().beta;
  } else if (type == "HardSwish") {
    op = Op::kHardSwish;
  } else if (type == "Sigmoid") {
    op = Op::kSigmoid;
  } else if (type == "Tanh") {
    op = Op::kTanh;
  } else if (type == "Gelu") {
    if (node.attrs<GeluAttributes>().tanh_approximation) return lower_with_reference(node, context);
    op = Op::kGelu;
  } else if (type == "Exp") {
    op = Op::kExp;
  } else if (type == "Abs") {
    op = Op::kAbs;
  } else if (type == "Neg") {
    op = Op::kNeg;
  } else if (type == "Sqrt") {
    op = Op::kSqrt;
  } else if (type == "Erf") {
    op = Op::kErf;
  } else if (type == "Clip") {
    op = Op::kClip;
    const auto& attributes = node.attrs<ClipAttributes>();
    unary_params.alpha = attributes.min;
    unary_params.beta = attributes.max;
    if (attributes.bounds_from_inputs) {
      bool ok = true;
      unary_params.alpha = constant_scalar(node, context, 1, ok).value_or(std::numeric_limits<float>::lowest());
      unary_params.beta = constant_scalar(node, context, 2, ok).value_or(std::numeric_limits<float>::max());
      if (!ok) return lower_with_reference(node, context);  // runtime bounds
    }
  } else {
    return lower_with_reference(node, context);
  }
  const kernels::Fp32Kernels fp32 = kernels::fp32_kernels(kernels::usable_isa(context.isa()));
  PlanLayer layer = make_layer(node, kUnaryKind, fp32.unary.name);
  params::kUnaryOp.write(layer, static_cast<int64_t>(op));
  params::kAlpha.write(layer, unary_params.alpha);
  params::kBeta.write(layer, unary_params.beta);
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input_as_stored(node.input(0)));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], context.tensor(input).layout));
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Softmax

constexpr const char* kSoftmaxKind = "fp32_softmax";

class SoftmaxLayer final : public Layer {
 public:
  SoftmaxLayer(int64_t cols, int32_t input, int32_t output, kernels::Fp32Kernels fp32)
      : cols_(cols), rows_per_item_(std::max<int64_t>(1, kChunk / cols)), input_(input), output_(output), fp32_(fp32) {}

  WorkShape work(const RunState& state) const override {
    return {.items = ceil_div(state.numel(input_) / cols_, rows_per_item_),
            .ops_per_item = 10.0 * static_cast<double>(rows_per_item_ * cols_)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t rows = state.numel(input_) / cols_;
    const int64_t first = begin * rows_per_item_, last = std::min(rows, end * rows_per_item_);
    if (last <= first) return;
    fp32_.softmax.fn(static_cast<size_t>(last - first), static_cast<size_t>(cols_),
                     state.data<float>(input_) + first * cols_, state.data<float>(output_) + first * cols_);
  }

 private:
  int64_t cols_, rows_per_item_;
  int32_t input_, output_;
  kernels::Fp32Kernels fp32_;
};

Result<std::unique_ptr<Layer>> bind_softmax(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, params::kAxis.read(context));
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, -1));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, -1));
  if (x->shape != y->shape || batch_layout_of(*x) != batch_layout_of(*y)) {
    return context.error("input and output shapes differ");
  }
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  // The batch indexes rows: it is before the axis.
  if (axis < (x->batched ? x->batch_axis + 1 : 0) || axis >= rank) {
    return context.error(fmt::format("axis {} is out of range", axis));
  }
  const int64_t cols = safe_numel(Shape(x->shape.begin() + axis, x->shape.end()));
  if (cols < 1) return context.error("softmax rows are empty");
  return std::unique_ptr<Layer>(std::make_unique<SoftmaxLayer>(cols, context.layer().inputs[0], context.layer().outputs[0],
                                                               kernels::fp32_kernels(bind_isa(context.plan()))));
}

Status lower_softmax(const Node& node, BuildContext& context) {
  const auto& attributes = node.attrs<SoftmaxAttributes>();
  QDQRT_ASSIGN_OR_RETURN(Shape shape, context.shape_of(node.input(0)));
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t axis = attributes.axis < 0 ? attributes.axis + rank : attributes.axis;
  // Opset 13 normalizes one axis: a row softmax only when it is the last; before 13 dims[axis:] are one row.
  if (rank == 0 || axis < 0 || axis >= rank || (!attributes.coerce_to_2d && axis != rank - 1) ||
      safe_numel(Shape(shape.begin() + axis, shape.end())) < 1) {
    return lower_with_reference(node, context);
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), Layout::kPlain));
  if (context.tensor(input).batched && context.tensor(input).batch_axis >= axis) return lower_with_reference(node, context);
  const kernels::Fp32Kernels fp32 = kernels::fp32_kernels(kernels::usable_isa(context.isa()));
  PlanLayer layer = make_layer(node, kSoftmaxKind, fp32.softmax.name);
  params::kAxis.write(layer, axis);
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization (inference)

constexpr const char* kBatchNormKind = "fp32_batchnorm";
constexpr const char* kFusedBatchNormKind = "fp32_fused_batchnorm";

// out[i] = in[i] * a[i] + b[i] for i < count: one channels-last pixel. Compiled per ISA; the same
// operations on every clone and every vector width as the plain layer's loop: a multiply, then an
// add (GCC would contract them to an FMA in the FMA clones' wide loops but not in their tails, and
// a channel's result would depend on where it sits in the pixel).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#endif
void scale_shift_pixel(float* __restrict out, const float* __restrict in, const float* __restrict a,
                       const float* __restrict b, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = in[i] * a[i] + b[i];
}

// As scale_shift_pixel, then clamped to [low, high] (max first: Relu's max(v, 0), then Clip's min).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#endif
void scale_shift_clamp_pixel(float* __restrict out, const float* __restrict in, const float* __restrict a,
                             const float* __restrict b, int64_t count, float low, float high) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = in[i] * a[i] + b[i];
    const float above = v < low ? low : v;
    out[i] = above > high ? high : above;
  }
}

// y = clamp(concat(x0, ..., xk-1 along the channels) * a[c] + b[c]); one input and no clamp for a
// plain BatchNormalization.
class BatchNormLayer final : public Layer {
 public:
  // nhwc: plane_ is the width, rows (image, y) the items. input_channels: each input's channels,
  // in order (summing to channels).
  BatchNormLayer(int64_t channels, int64_t plane, int64_t height, bool nhwc, const float* scale_shift,
                 std::vector<int32_t> inputs, std::vector<int64_t> input_channels, int32_t output, bool clamp,
                 float low, float high)
      : channels_(channels),
        plane_(plane),
        height_(height),
        nhwc_(nhwc),
        scale_shift_(scale_shift),
        inputs_(std::move(inputs)),
        input_channels_(std::move(input_channels)),
        output_(output),
        clamp_(clamp),
        low_(low),
        high_(high) {}

  WorkShape work(const RunState& state) const override {
    if (nhwc_) {
      return {.items = state.dim(inputs_[0], 0) * height_,
              .ops_per_item = 2.0 * static_cast<double>(plane_ * channels_)};
    }
    return {.items = state.dim(inputs_[0], 0) * channels_, .ops_per_item = 2.0 * static_cast<double>(plane_)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    float* y = state.data<float>(output_);
    if (nhwc_) {
      int64_t offset = 0;
      for (size_t i = 0; i < inputs_.size(); ++i) {
        const float* x = state.data<float>(inputs_[i]);
        const int64_t count = input_channels_[i];
        const float* a = scale_shift_ + offset;
        const float* b = scale_shift_ + channels_ + offset;
        for (int64_t pixel = begin * plane_; pixel < end * plane_; ++pixel) {
          float* out = y + pixel * channels_ + offset;
          const float* in = x + pixel * count;
          if (clamp_) {
            scale_shift_clamp_pixel(out, in, a, b, count, low_, high_);
          } else {
            scale_shift_pixel(out, in, a, b, count);
          }
        }
        offset += count;
      }
      return;
    }
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / channels_;
      const int64_t channel = item % channels_;
      // The input holding this channel, and the channel within it.
      size_t source = 0;
      int64_t local = channel;
      while (local >= input_channels_[source]) local -= input_channels_[source++];
      const float a = scale_shift_[channel], b = scale_shift_[channels_ + channel];
      const float* in = state.data<float>(inputs_[source]) + (image * input_channels_[source] + local) * plane_;
      float* out = y + item * plane_;
      if (clamp_) {
        for (int64_t i = 0; i < plane_; ++i) {
          const float v = in[i] * a + b;
          const float above = v < low_ ? low_ : v;
          out[i] = above > high_ ? high_ : above;
        }
      } else {
        for (int64_t i = 0; i < plane_; ++i) out[i] = in[i] * a + b;
      }
    }
  }

 private:
  int64_t channels_, plane_, height_;
  bool nhwc_;
  const float* scale_shift_;
  std::vector<int32_t> inputs_;
  std::vector<int64_t> input_channels_;
  int32_t output_;
  bool clamp_;
  float low_, high_;
};

Result<std::unique_ptr<Layer>> bind_batchnorm(const BindContext& context) {
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  const bool nhwc = x->layout == Layout::kNhwc;
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, nhwc ? 4 : -1, x->layout));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, nhwc ? 4 : -1, x->layout));
  if (x->shape.size() < 2 || x->shape != y->shape || x->batched != y->batched) {
    return context.error(fmt::format("input {} and output {} must be one shape of rank >= 2", shape_to_string(x->shape),
                                     shape_to_string(y->shape)));
  }
  if (nhwc && (!batch_leads(*x) || !batch_leads(*y))) {
    return context.error("a channels-last input has the batch off dim 0");
  }
  const int64_t channels = x->shape[1];
  const int64_t plane = nhwc ? x->shape[3] : safe_numel(Shape(x->shape.begin() + 2, x->shape.end()));
  const int64_t height = nhwc ? x->shape[2] : 1;
  QDQRT_ASSIGN_OR_RETURN(const float* scale_shift, params::kScaleShift.read(context, 2 * channels));
  return std::unique_ptr<Layer>(std::make_unique<BatchNormLayer>(
      channels, plane, height, nhwc, scale_shift, std::vector<int32_t>{context.layer().inputs[0]},
      std::vector<int64_t>{channels}, context.layer().outputs[0], /*clamp=*/false, 0.0f, 0.0f));
}

// fp32_fused_batchnorm: inputs x0..xk-1 (one layout, batch on dim 0, equal dims but dim 1), the
// output their concatenation's shape; scale_shift over its channels, then the clamp act.min/max.
Result<std::unique_ptr<Layer>> bind_fused_batchnorm(const BindContext& context) {
  const size_t count = context.layer().inputs.size();
  if (count == 0) return context.error("has no input");
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  const bool nhwc = y->layout == Layout::kNhwc;
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, nhwc ? 4 : -1, y->layout));
  if (y->shape.size() < 2 || !batch_leads(*y)) {
    return context.error(fmt::format("output {} must have rank >= 2 and the batch on dim 0", shape_to_string(y->shape)));
  }
  std::vector<int64_t> input_channels;
  int64_t channels = 0;
  for (size_t i = 0; i < count; ++i) {
    QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(i));
    QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, nhwc ? 4 : -1, y->layout));
    Shape expected = y->shape;
    if (x->shape.size() == expected.size()) expected[1] = x->shape[1];
    if (x->shape != expected || x->batched != y->batched || !batch_leads(*x)) {
      return context.error(fmt::format("input {} {} is not the output {} but for dim 1, batch on dim 0", i,
                                       shape_to_string(x->shape), shape_to_string(y->shape)));
    }
    input_channels.push_back(x->shape[1]);
    channels += x->shape[1];
  }
  if (channels != y->shape[1]) {
    return context.error(fmt::format("the inputs' {} channels are not the output's {}", channels, y->shape[1]));
  }
  const int64_t plane = nhwc ? y->shape[3] : safe_numel(Shape(y->shape.begin() + 2, y->shape.end()));
  const int64_t height = nhwc ? y->shape[2] : 1;
  QDQRT_ASSIGN_OR_RETURN(const float* scale_shift, params::kScaleShift.read(context, 2 * channels));
  QDQRT_ASSIGN_OR_RETURN(const float low, params::kClipMin.read(context));
  QDQRT_ASSIGN_OR_RETURN(const float high, params::kClipMax.read(context));
  if (!(low <= high)) return context.error(fmt::format("clamp [{}, {}] is empty", low, high));
  return std::unique_ptr<Layer>(std::make_unique<BatchNormLayer>(
      channels, plane, height, nhwc, scale_shift, context.layer().inputs, std::move(input_channels),
      context.layer().outputs[0], /*clamp=*/true, low, high));
}

// The per-channel a = scale / sqrt(var + epsilon) and b = B - mean * a (in double) of
// params = {scale, B, mean, var}, as [a..., b...].
std::vector<float> batchnorm_scale_shift(const Tensor* const params[4], int64_t channels, float epsilon) {
  std::vector<float> scale_shift(static_cast<size_t>(2 * channels));
  for (int64_t c = 0; c < channels; ++c) {
    const double scale = params[0]->data<float>()[c], bias = params[1]->data<float>()[c];
    const double mean = params[2]->data<float>()[c], var = params[3]->data<float>()[c];
    const double a = scale / std::sqrt(var + static_cast<double>(epsilon));
    scale_shift[static_cast<size_t>(c)] = static_cast<float>(a);
    scale_shift[static_cast<size_t>(channels + c)] = static_cast<float>(bias - mean * a);
  }
  return scale_shift;
}

Status lower_batchnorm(const Node& node, BuildContext& context) {
  const auto& attributes = node.attrs<BatchNormalizationAttributes>();
  QDQRT_ASSIGN_OR_RETURN(Shape shape, context.shape_of(node.input(0)));
  const Tensor* params[4] = {};
  for (size_t i = 0; i < 4; ++i) params[i] = context.constant(node.input(i + 1));
  bool supported = shape.size() >= 2 && node.inputs.size() == 5;
  for (size_t i = 1; i < node.outputs.size(); ++i) supported = supported && node.outputs[i].empty();
  for (const Tensor* tensor : params) {
    supported = supported && tensor != nullptr && tensor->dtype() == DataType::kFloat && tensor->rank() == 1 &&
                tensor->dim(0) == shape[1];
  }
  if (node.find_attribute("training_mode") && node.find_attribute("training_mode")->i != 0) supported = false;
  if (!supported) return lower_with_reference(node, context);
  const int64_t channels = shape[1];
  const std::vector<float> scale_shift = batchnorm_scale_shift(params, channels, attributes.epsilon);
  PlanLayer layer = make_layer(node, kBatchNormKind, "f32-vscaleshift-scalar");
  params::kScaleShift.write(layer, scale_shift);
  // A rank-4 input stored channels-last (batch in front) is read as stored.
  Layout layout = Layout::kPlain;
  if (shape.size() == 4) {
    QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.input(0)));
    if (context.tensor(stored).layout == Layout::kNhwc && batch_leads(context.tensor(stored))) {
      layout = Layout::kNhwc;
      layer.kernel = "f32-vscaleshift-nhwc-multiversion";
    }
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), layout));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], layout));
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

// FusedBatchNorm: channels-last when every input is stored so with the batch in front (DenseNet's:
// the convs before write NHWC), else plain; constant float [C] parameters, a Relu or Clip at most.
Status lower_fused_batchnorm(const Node& node, BuildContext& context) {
  using namespace layers;
  const auto* attributes = dynamic_cast<const FusedBatchNormAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return internal_error("{}: attributes not parsed", node.describe());
  if (node.inputs.size() <= kFusedBatchNormFirstX || node.outputs.size() != 1) return lower_with_reference(node, context);
  QDQRT_ASSIGN_OR_RETURN(Shape shape, context.shape_of(node.outputs[0]));
  if (shape.size() < 2) return lower_with_reference(node, context);
  const int64_t channels = shape[1];
  const Tensor* params[4] = {};
  for (size_t i = 0; i < 4; ++i) {
    params[i] = context.constant(node.input(kFusedBatchNormScale + i));
    if (params[i] == nullptr || params[i]->dtype() != DataType::kFloat || params[i]->rank() != 1 ||
        params[i]->dim(0) != channels) {
      return lower_with_reference(node, context);
    }
  }
  const FusedActivation& activation = attributes->fused.activation;
  float low = -std::numeric_limits<float>::infinity(), high = std::numeric_limits<float>::infinity();
  if (activation.kind == ActivationKind::kRelu) {
    low = 0.0f;
  } else if (activation.kind == ActivationKind::kClip) {
    low = activation.min, high = activation.max;
  } else if (activation.kind != ActivationKind::kNone || attributes->fused.has_pointwise()) {
    return lower_with_reference(node, context);
  }
  Layout layout = shape.size() == 4 ? Layout::kNhwc : Layout::kPlain;
  for (size_t i = kFusedBatchNormFirstX; i < node.inputs.size(); ++i) {
    if (node.input(i).empty() || context.constant(node.input(i)) != nullptr) return lower_with_reference(node, context);
    QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.input(i)));
    const PlanTensor tensor = context.tensor(stored);
    if (!batch_leads(tensor)) return lower_with_reference(node, context);
    if (tensor.layout != Layout::kNhwc) layout = Layout::kPlain;
  }
  PlanLayer layer = make_layer(node, kFusedBatchNormKind,
                               layout == Layout::kNhwc ? "f32-vscaleshift-clamp-nhwc-multiversion" : "f32-vscaleshift-clamp-scalar");
  params::kScaleShift.write(layer, batchnorm_scale_shift(params, channels, attributes->epsilon));
  params::kClipMin.write(layer, low);
  params::kClipMax.write(layer, high);
  for (size_t i = kFusedBatchNormFirstX; i < node.inputs.size(); ++i) {
    QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(i), layout));
    layer.inputs.push_back(input);
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], layout));
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace

void register_elementwise(LayerRegistry& registry) {
  registry.add_kind({.kind = kBinaryKind, .bind = bind_binary, .any_batch_layout = true});
  registry.add_kind({.kind = kUnaryKind, .bind = bind_unary, .any_batch_layout = true});
  registry.add_kind({.kind = kSoftmaxKind, .bind = bind_softmax, .any_batch_layout = true});
  registry.add_kind({kBatchNormKind, bind_batchnorm});
  registry.add_kind({kFusedBatchNormKind, bind_fused_batchnorm});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    // First: the same-shape and channel-gate forms read channels-last inputs as stored (their
    // producers may write NHWC).
    registry.add_lowering(
        {.domain = "",
         .op_type = op,
         .lower = lower_binary,
         .accepts = accepts_same_shape_binary,
         .prefers_nhwc = true,
         .follows_layout = true});
    registry.add_lowering(
        {.domain = "", .op_type = op, .lower = lower_binary, .accepts = all_float, .any_batch_layout = true});
  }
  for (const char* op : {"Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid", "Tanh", "Gelu", "Exp", "Abs", "Neg",
                         "Sqrt", "Erf", "Clip"}) {
    registry.add_lowering(
        {.domain = "", .op_type = op, .lower = lower_unary, .accepts = all_float, .any_batch_layout = true});
  }
  registry.add_lowering(
      {.domain = "", .op_type = "Softmax", .lower = lower_softmax, .accepts = all_float, .any_batch_layout = true});
  registry.add_lowering({.domain = "",
                         .op_type = "BatchNormalization",
                         .lower = lower_batchnorm,
                         .accepts = all_float,
                         .prefers_nhwc = true});
  registry.add_lowering({.domain = layers::kDomain,
                         .op_type = layers::kFusedBatchNorm,
                         .lower = lower_fused_batchnorm,
                         .accepts = all_float,
                         .prefers_nhwc = true});
}

}  // namespace qdqrt::engine::fp32
