// "fp32_pow": Pow of an fp32 tensor by a constant single-value exponent (a decomposed LayerNorm's
// variance, d^2), the reference executor's values bit for bit (kernels/elementwise/fp32_pow.h):
// exponent 2 squares (f32-vsquare-multiversion), any other runs the reference's double pow rounded
// to float (f32-vpow-double-scalar). Elementwise: keeps the input's layout, and the batch may be on
// any axis (any_batch_layout). Params: exponent. Items: chunks of 16384 elements.
//
// A runtime exponent tensor, one of several values, or one a float cannot hold exactly stays on the
// reference layer, which says why; so does a base of another type than fp32 (accepts).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "engine/layers/float_common.h"
#include "kernels/elementwise/fp32_pow.h"

namespace qdqrt::engine::fp32 {

namespace {

constexpr const char* kPowKind = "fp32_pow";
constexpr int64_t kChunk = 16384;

class PowLayer final : public Layer {
 public:
  PowLayer(int32_t input, int32_t output, float exponent) : input_(input), output_(output), exponent_(exponent) {}

  WorkShape work(const RunState& state) const override {
    // A libm pow costs tens of operations per element; a square one.
    return {.items = (state.numel(input_) + kChunk - 1) / kChunk,
            .ops_per_item = static_cast<double>(kChunk) * (exponent_ == 2.0f ? 1.0 : 40.0)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t total = state.numel(input_);
    const int64_t first = begin * kChunk, last = std::min(total, end * kChunk);
    if (last <= first) return;
    const float* x = state.data<const float>(input_) + first;
    float* y = state.data<float>(output_) + first;
    const size_t count = static_cast<size_t>(last - first);
    if (exponent_ == 2.0f) {
      kernels::f32_square(count, x, y);
    } else {
      kernels::f32_pow_double(count, x, static_cast<double>(exponent_), y);
    }
  }

 private:
  int32_t input_, output_;
  float exponent_;
};

Result<std::unique_ptr<Layer>> bind_pow(const BindContext& context) {
  if (context.layer().inputs.size() != 1 || context.layer().outputs.size() != 1) {
    return context.error("expects one input and one output");
  }
  QDQRT_ASSIGN_OR_RETURN(float exponent, params::kExponent.read(context));
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, -1, x->layout));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, -1, x->layout));
  if (x->shape != y->shape || batch_layout_of(*x) != batch_layout_of(*y)) {
    return context.error(fmt::format("input {} and output {} must be one shape, layout and batch",
                                     shape_to_string(x->shape), shape_to_string(y->shape)));
  }
  return std::unique_ptr<Layer>(
      std::make_unique<PowLayer>(context.layer().inputs[0], context.layer().outputs[0], exponent));
}

// The base and the output are fp32 (the exponent may be any numeric type).
bool accepts_pow(const Node& node, const BuildContext& context) {
  return node.inputs.size() == 2 && node.has_input(0) && node.has_input(1) && node.outputs.size() == 1 &&
         value_dtype(context, node.input(0)) == DataType::kFloat &&
         value_dtype(context, node.outputs[0]) == DataType::kFloat;
}

Status lower_pow(const Node& node, BuildContext& context) {
  const Tensor* exponent = context.constant(node.input(1));
  if (exponent == nullptr) {
    return lower_with_reference(
        node, context, "its exponent is computed at run time; the native Pow takes a constant single-value exponent");
  }
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, context.shape_of(node.input(0)));
  if (exponent->numel() != 1 || exponent->rank() > static_cast<int64_t>(x_shape.size())) {
    return lower_with_reference(
        node, context,
        fmt::format("its exponent has shape {}; the native Pow takes a constant single-value exponent that does not "
                    "broadcast the base",
                    shape_to_string(exponent->shape())));
  }
  const double value = exponent->value_as_double(0);
  if (!std::isnan(value) && static_cast<double>(static_cast<float>(value)) != value) {
    return lower_with_reference(node, context,
                                fmt::format("its exponent {} is not exactly a float (the native Pow stores a float)",
                                            value));
  }
  const bool square = value == 2.0;
  PlanLayer layer = make_layer(node, kPowKind, square ? "f32-vsquare-multiversion" : "f32-vpow-double-scalar");
  params::kExponent.write(layer, value);
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input_as_stored(node.input(0)));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], context.tensor(input).layout));
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace

void register_pow(LayerRegistry& registry) {
  registry.add_kind({.kind = kPowKind, .bind = bind_pow, .any_batch_layout = true});
  registry.add_lowering(
      {.domain = "", .op_type = "Pow", .lower = lower_pow, .accepts = accepts_pow, .any_batch_layout = true});
}

}  // namespace qdqrt::engine::fp32
