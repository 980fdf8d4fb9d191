// "layer_norm": the LayerNorm layer (core/ops/fused_layers.h) over the last axis of a plain fp32
// tensor, writing fp32 or, when a QuantizeLinear followed, int8/uint8 (the next Linear's input) in
// the same pass (kernels/norm/layer_norm.h). Params (engine/layer_params.h): epsilon, gamma and
// beta (floats, one per column), and for an 8-bit output scale and zero_point. Rows are
// independent, so the batch may be on any axis but the last (any_batch_layout). Items: rows.
//
// "softmax_quantize": the fused Softmax (core/ops/fused_layers.h) over the last axis of a plain
// fp32 tensor, quantized to int8/uint8 in the same pass (kernels/softmax/softmax_quantize.h):
// attention probabilities written as P.V's int8 input. Params: scale and zero_point. Rows are
// independent (any_batch_layout, the batch off the last axis). Items: blocks of rows.
#include <cmath>

#include <fmt/format.h>

#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "engine/layer.h"
#include "engine/layer_params.h"
#include "engine/layers/layer_families.h"
#include "kernels/dispatch.h"

namespace qdqrt::engine {

namespace {

constexpr const char* kKind = "layer_norm";

bool is_8bit(DataType dtype) { return dtype == DataType::kInt8 || dtype == DataType::kUint8; }

// The x -> y checks LayerNorm and Softmax share: one plain shape, the batch off the last axis.
Status check_row_layer_tensors(const BindContext& context, const PlanTensor& x, const PlanTensor& y) {
  if (x.layout != Layout::kPlain || y.layout != Layout::kPlain || x.shape != y.shape || x.shape.empty() ||
      batch_layout_of(x) != batch_layout_of(y) ||
      (x.batched && static_cast<size_t>(x.batch_axis) + 1 >= x.shape.size())) {
    return context.error(fmt::format("x {} and y {} must be one plain shape, the batch off the last axis",
                                     shape_to_string(x.shape), shape_to_string(y.shape)));
  }
  for (int64_t dim : x.shape) {
    if (dim < 1 || dim > params::kMaxDim)
      return context.error(fmt::format("x has a bad shape {}", shape_to_string(x.shape)));
  }
  return Status::ok();
}

// A constant 8-bit output quantization (one positive finite scale, one 8-bit zero-point).
bool output_quantization_fits(const Node& node, const BuildContext& context, size_t scale_slot) {
  if (!node.has_input(scale_slot) || !node.has_input(scale_slot + 1)) return false;
  const Tensor* scale = context.constant(node.input(scale_slot));
  const Tensor* zero_point = context.constant(node.input(scale_slot + 1));
  return scale != nullptr && scale->numel() == 1 && scale->dtype() == DataType::kFloat &&
         scale->data<float>()[0] > 0.0f && std::isfinite(scale->data<float>()[0]) && zero_point != nullptr &&
         zero_point->numel() == 1 && is_8bit(zero_point->dtype());
}

class LayerNormLayer final : public Layer {
 public:
  int32_t input = -1, output = -1;
  size_t output_element = 4;
  std::vector<float> gamma, beta;
  kernels::LayerNormParams params;  // rows set per run
  kernels::LayerNormFn kernel = nullptr;

  WorkShape work(const RunState& state) const override {
    return {.items = state.numel(input) / static_cast<int64_t>(params.columns),
            .ops_per_item = 8.0 * static_cast<double>(params.columns)};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    kernels::LayerNormParams rows = params;
    rows.rows = static_cast<size_t>(end - begin);
    const size_t first = static_cast<size_t>(begin) * params.columns;
    kernel(rows, state.data<const float>(input) + first, state.data<uint8_t>(output) + first * output_element);
  }
};

Result<std::unique_ptr<Layer>> bind_layer_norm(const BindContext& context) {
  if (context.layer().inputs.size() != 1 || context.layer().outputs.size() != 1) {
    return context.error("expects one input and one output");
  }
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* x, context.input(0));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y, context.output(0));
  if (x->dtype != DataType::kFloat || (y->dtype != DataType::kFloat && !is_8bit(y->dtype))) {
    return context.error(fmt::format("needs float32 -> float32/int8/uint8, got {} -> {}", dtype_name(x->dtype),
                                     dtype_name(y->dtype)));
  }
  QDQRT_RETURN_IF_ERROR(check_row_layer_tensors(context, *x, *y));
  auto layer = std::make_unique<LayerNormLayer>();
  const size_t columns = static_cast<size_t>(x->shape.back());
  QDQRT_ASSIGN_OR_RETURN(layer->gamma, params::kNormGamma.read(context, static_cast<int64_t>(columns)));
  QDQRT_ASSIGN_OR_RETURN(layer->beta, params::kNormBeta.read(context, static_cast<int64_t>(columns)));
  QDQRT_ASSIGN_OR_RETURN(layer->params.epsilon, params::kEpsilon.read(context));
  layer->params.columns = columns;
  layer->params.gamma = layer->gamma.data();
  layer->params.beta = layer->beta.data();
  if (is_8bit(y->dtype)) {
    QDQRT_ASSIGN_OR_RETURN(layer->params.y_scale, params::kScale.read(context));
    const int64_t lowest = y->dtype == DataType::kInt8 ? -128 : 0;
    QDQRT_ASSIGN_OR_RETURN(int64_t zero_point, params::kZeroPoint.read_in(context, lowest, lowest + 255));
    layer->params.y_zero_point = static_cast<int32_t>(zero_point);
    layer->params.y_signed = y->dtype == DataType::kInt8;
    layer->output_element = 1;
  }
  layer->kernel = kernels::layer_norm_kernel(kernels::active_isa()).fn;
  layer->input = context.layer().inputs[0];
  layer->output = context.layer().outputs[0];
  return std::unique_ptr<Layer>(std::move(layer));
}

// Input `slot` is a runtime float tensor of rank >= 1 whose batch, if any, is off the last axis.
bool takes_float_rows(const Node& node, const BuildContext& context, size_t slot) {
  Result<Shape> x = context.shape_of(node.input(slot));
  Result<DataType> x_dtype = context.dtype_of(node.input(slot));
  if (!x.ok() || x->empty() || !x_dtype.ok() || *x_dtype != DataType::kFloat) return false;
  if (context.constant(node.input(slot)) != nullptr) return false;
  const std::optional<BatchLayout> batch = context.batch_layout(node.input(slot));
  return batch && (!batch->batched || static_cast<size_t>(batch->axis) + 1 < x->size());
}

// The plan layer of a fused row layer: plain x (input `slot`) -> plain y, named after the node,
// its sources the fused nodes.
Result<PlanLayer> row_layer(const Node& node, BuildContext& context, const char* kind, const FusedLayerInfo& fused,
                            size_t slot) {
  QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input(node.input(slot), Layout::kPlain));
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], Layout::kPlain));
  PlanLayer layer;
  layer.kind = kind;
  layer.name = node.name;
  layer.source_nodes = fused.fused_nodes.empty() ? std::vector<std::string>{node.name} : fused.fused_nodes;
  layer.op_type = node.op_type;
  layer.inputs = {x};
  layer.outputs = {y};
  return layer;
}

bool accepts_layer_norm(const Node& node, const BuildContext& context) {
  using namespace layers;
  if (node.inputs.size() < kNormYScale || node.outputs.size() != 1) return false;
  if (!takes_float_rows(node, context, kNormX)) return false;
  Result<Shape> x = context.shape_of(node.input(kNormX));
  for (size_t slot : {size_t{kNormGamma}, size_t{kNormBeta}}) {
    const Tensor* row = context.constant(node.input(slot));
    if (row == nullptr || row->dtype() != DataType::kFloat || row->numel() != x->back()) return false;
  }
  return !node.has_input(kNormYScale) || output_quantization_fits(node, context, kNormYScale);
}

Status lower_layer_norm(const Node& node, BuildContext& context) {
  using namespace layers;
  const auto* attributes = dynamic_cast<const LayerNormAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return internal_error("{}: attributes are not parsed", node.describe());
  QDQRT_ASSIGN_OR_RETURN(PlanLayer layer, row_layer(node, context, kKind, attributes->fused, kNormX));
  const Tensor* gamma = context.constant(node.input(kNormGamma));
  const Tensor* beta = context.constant(node.input(kNormBeta));
  params::kNormGamma.write(layer, std::span<const float>(gamma->data<float>(), static_cast<size_t>(gamma->numel())));
  params::kNormBeta.write(layer, std::span<const float>(beta->data<float>(), static_cast<size_t>(beta->numel())));
  params::kEpsilon.write(layer, attributes->epsilon);
  if (node.has_input(kNormYScale)) {
    const Tensor* zero_point = context.constant(node.input(kNormYZeroPoint));
    params::kScale.write(layer, context.constant(node.input(kNormYScale))->data<float>()[0]);
    params::kZeroPoint.write(layer, zero_point->value_as_int64(0));
  }
  layer.kernel = kernels::layer_norm_kernel(context.isa()).name;
  context.add_layer(std::move(layer));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Softmax + QuantizeLinear

constexpr const char* kSoftmaxKind = "softmax_quantize";

class SoftmaxQuantizeLayer final : public Layer {
 public:
  int32_t input = -1, output = -1;
  int64_t rows_per_item = 1;
  kernels::SoftmaxQuantizeParams params;  // rows set per run
  kernels::SoftmaxQuantizeFn kernel = nullptr;

  WorkShape work(const RunState& state) const override {
    const int64_t rows = state.numel(input) / static_cast<int64_t>(params.columns);
    return {.items = (rows + rows_per_item - 1) / rows_per_item,
            .ops_per_item = 12.0 * static_cast<double>(rows_per_item * static_cast<int64_t>(params.columns))};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t rows = state.numel(input) / static_cast<int64_t>(params.columns);
    const int64_t first = begin * rows_per_item, last = std::min(rows, end * rows_per_item);
    if (last <= first) return;
    kernels::SoftmaxQuantizeParams block = params;
    block.rows = static_cast<size_t>(last - first);
    const size_t offset = static_cast<size_t>(first) * params.columns;
    kernel(block, state.data<const float>(input) + offset, state.data<uint8_t>(output) + offset);
  }
};

Result<std::unique_ptr<Layer>> bind_softmax_quantize(const BindContext& context) {
  if (context.layer().inputs.size() != 1 || context.layer().outputs.size() != 1) {
    return context.error("expects one input and one output");
  }
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* x, context.input(0));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y, context.output(0));
  if (x->dtype != DataType::kFloat || !is_8bit(y->dtype)) {
    return context.error(
        fmt::format("needs float32 -> int8/uint8, got {} -> {}", dtype_name(x->dtype), dtype_name(y->dtype)));
  }
  QDQRT_RETURN_IF_ERROR(check_row_layer_tensors(context, *x, *y));
  auto layer = std::make_unique<SoftmaxQuantizeLayer>();
  layer->params.columns = static_cast<size_t>(x->shape.back());
  QDQRT_ASSIGN_OR_RETURN(layer->params.y_scale, params::kScale.read(context));
  const int64_t lowest = y->dtype == DataType::kInt8 ? -128 : 0;
  QDQRT_ASSIGN_OR_RETURN(int64_t zero_point, params::kZeroPoint.read_in(context, lowest, lowest + 255));
  layer->params.y_zero_point = static_cast<int32_t>(zero_point);
  layer->params.y_signed = y->dtype == DataType::kInt8;
  // Items of about 2 K values: a 17-column attention row alone is too little work to schedule.
  layer->rows_per_item = std::max<int64_t>(1, 2048 / static_cast<int64_t>(layer->params.columns));
  layer->kernel = kernels::softmax_quantize_kernel(kernels::active_isa()).fn;
  layer->input = context.layer().inputs[0];
  layer->output = context.layer().outputs[0];
  return std::unique_ptr<Layer>(std::move(layer));
}

bool accepts_softmax_quantize(const Node& node, const BuildContext& context) {
  using namespace layers;
  if (node.inputs.size() < kSoftmaxInputCount || node.outputs.size() != 1) return false;
  return takes_float_rows(node, context, kSoftmaxX) && output_quantization_fits(node, context, kSoftmaxYScale);
}

Status lower_softmax_quantize(const Node& node, BuildContext& context) {
  using namespace layers;
  const auto* attributes = dynamic_cast<const SoftmaxQuantizeAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return internal_error("{}: attributes are not parsed", node.describe());
  QDQRT_ASSIGN_OR_RETURN(PlanLayer layer, row_layer(node, context, kSoftmaxKind, attributes->fused, kSoftmaxX));
  params::kScale.write(layer, context.constant(node.input(kSoftmaxYScale))->data<float>()[0]);
  params::kZeroPoint.write(layer, context.constant(node.input(kSoftmaxYZeroPoint))->value_as_int64(0));
  layer.kernel = kernels::softmax_quantize_kernel(context.isa()).name;
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace

void register_norm_layers(LayerRegistry& registry) {
  registry.add_kind({.kind = kKind, .bind = bind_layer_norm, .any_batch_layout = true});
  registry.add_lowering({.domain = layers::kDomain,
                         .op_type = layers::kLayerNorm,
                         .lower = lower_layer_norm,
                         .accepts = accepts_layer_norm,
                         .any_batch_layout = true});
  registry.add_kind({.kind = kSoftmaxKind, .bind = bind_softmax_quantize, .any_batch_layout = true});
  registry.add_lowering({.domain = layers::kDomain,
                         .op_type = layers::kSoftmax,
                         .lower = lower_softmax_quantize,
                         .accepts = accepts_softmax_quantize,
                         .any_batch_layout = true});
}

}  // namespace qdqrt::engine
