// Elementwise INT8 layers.
//   "qbinary": QAdd / QMul (int8 or uint8, numpy broadcasting through kernels/elementwise/broadcast.h, optional
//              fused Relu). Rank-4 operands share the output's layout (NHWC inside INT8 regions);
//              a lower-rank operand joins an NHWC output only when its bytes are ordered the same
//              either way (a per-channel [C,1,1] or a per-pixel [1,H,W] operand).
//              Params (engine/layer_params.h): op ("add"/"mul"), a/b/y scale and zero-point, relu.
//              The batch may be on any axis of a plain output (attention's sequence-first
//              [L, N, E]): the layer runs per image, the dims up to the batch axis.
//   "qlut":    any elementwise 8-bit -> 8-bit map as a 256-entry table (blob "table"): QLookup and
//              QRequantize (the table is the reference kernel evaluated on all 256 input codes, so it
//              is bit-exact with the reference executor) and Relu on an int8 tensor. Layout-preserving.
#include <algorithm>
#include <array>
#include <optional>
#include <type_traits>

#include <fmt/format.h>

#include "engine/layers/int8_common.h"
#include "engine/layers/layer_families.h"
#include "kernels/elementwise/broadcast.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise/qelementwise.h"
#include "kernels/lut/qlut.h"
#include "core/ops/fused_layers.h"
#include "reference/executor.h"

namespace qdqrt::engine::int8 {

namespace {

constexpr const char* kBinaryKind = "qbinary";
constexpr const char* kLutKind = "qlut";
constexpr int64_t kLutElementsPerItem = 16384;
constexpr int64_t kBinaryElementsPerItem = 16384;

// ---------------------------------------------------------------------------------------------
// QAdd / QMul

struct BinarySpec {
  DataType dtype = DataType::kInt8;
  Shape a_shape, b_shape, y_shape;
  float a_scale = 1, b_scale = 1, y_scale = 1;
  int32_t a_zero_point = 0, b_zero_point = 0, y_zero_point = 0;
  bool relu = false;
};

// With the batch off dim 0 (attention's sequence-first [L, N, E]) the layer runs image by image,
// an image being what follows the output's batch axis: a batched operand must have the output's
// rank, batch layout and dims before the batch; any other operand must be the same for every
// image (1 in those dims once broadcast to the output's rank).
Status check_images(const Node& node, const BuildContext& context, const BinarySpec& spec) {
  using namespace qdqrt::layers;
  const std::optional<BatchLayout> y_batch = context.batch_layout(node.outputs[0]);
  bool moves = y_batch && !batch_leads(*y_batch);
  for (size_t index : {size_t{kBinaryA}, size_t{kBinaryB}}) {
    const std::optional<BatchLayout> batch = context.batch_layout(node.input(index));
    moves = moves || (batch && !batch_leads(*batch));
  }
  if (!moves) return Status::ok();
  if (!y_batch || !y_batch->batched) {
    return unsupported("{}: an operand's batch is off dim 0 but the output's is not tracked", node.describe());
  }
  const size_t rank = spec.y_shape.size();
  const size_t leading = static_cast<size_t>(y_batch->axis) + 1;
  if (leading > rank) return unsupported("{}: batch axis {} is out of range", node.describe(), y_batch->axis);
  for (size_t index : {size_t{kBinaryA}, size_t{kBinaryB}}) {
    const Shape& shape = index == kBinaryA ? spec.a_shape : spec.b_shape;
    const std::optional<BatchLayout> batch = context.batch_layout(node.input(index));
    if (batch && batch->batched) {
      if (shape.size() != rank || *batch != *y_batch ||
          !std::equal(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(leading), spec.y_shape.begin())) {
        return unsupported("{}: batched operand {} does not line up with the output {} (batch on dim {})",
                           node.describe(), shape_to_string(shape), shape_to_string(spec.y_shape), y_batch->axis);
      }
      continue;
    }
    Shape expanded(rank - std::min(rank, shape.size()), 1);
    expanded.insert(expanded.end(), shape.begin(), shape.end());
    for (size_t axis = 0; axis < leading; ++axis) {
      if (expanded[axis] != 1) {
        return unsupported("{}: operand {} varies along dim {}, before the batch (dim {}): it differs between images",
                           node.describe(), shape_to_string(shape), axis, y_batch->axis);
      }
    }
  }
  return Status::ok();
}

Result<BinarySpec> analyze_qbinary(const Node& node, const BuildContext& context) {
  using namespace qdqrt::layers;
  const auto* attributes = dynamic_cast<const QBinaryAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr) return unsupported("{}: attributes are not parsed", node.describe());
  if (node.outputs.size() != 1 || node.outputs[0].empty()) return unsupported("{}: one output", node.describe());
  BinarySpec spec;
  switch (attributes->fused.activation.kind) {
    case qdqrt::ActivationKind::kNone: break;
    case qdqrt::ActivationKind::kRelu: spec.relu = true; break;
    default: return unsupported("{}: only Relu fuses into the elementwise kernels", node.describe());
  }
  // An operand may be a constant (ONNX Runtime's quantize_static quantizes the bias of an Add after a
  // MatMul, or a Mul's constant factor, as a u8 initializer): the builder materializes it as a tensor.
  for (size_t index : {size_t{kBinaryA}, size_t{kBinaryB}}) {
    const std::string& value = node.input(index);
    if (value.empty()) return unsupported("{}: operand {} is missing", node.describe(), index == kBinaryA ? "A" : "B");
    QDQRT_ASSIGN_OR_RETURN(DataType dtype, context.dtype_of(value));
    if (!is_8bit(dtype) || (index == kBinaryB && dtype != spec.dtype)) {
      return unsupported("{}: operands must share an int8/uint8 type", node.describe());
    }
    spec.dtype = dtype;
  }
  QDQRT_ASSIGN_OR_RETURN(spec.a_shape, static_shape(node, context, node.input(kBinaryA)));
  QDQRT_ASSIGN_OR_RETURN(spec.b_shape, static_shape(node, context, node.input(kBinaryB)));
  QDQRT_ASSIGN_OR_RETURN(spec.y_shape, static_shape(node, context, node.outputs[0]));
  auto plan = kernels::make_broadcast_plan(spec.a_shape, spec.b_shape);
  if (!plan || plan->output_shape != spec.y_shape) return unsupported("{}: shapes do not broadcast", node.describe());
  QDQRT_ASSIGN_OR_RETURN(spec.a_scale, scale_input(node, context, kBinaryAScale, "a_scale"));
  QDQRT_ASSIGN_OR_RETURN(spec.b_scale, scale_input(node, context, kBinaryBScale, "b_scale"));
  if (!node.has_input(kBinaryYScale) || !node.has_input(kBinaryYZeroPoint)) {
    return unsupported("{}: float output", node.describe());
  }
  QDQRT_ASSIGN_OR_RETURN(spec.y_scale, scale_input(node, context, kBinaryYScale, "y_scale"));
  DataType a_zp = spec.dtype, b_zp = spec.dtype, y_zp = spec.dtype;
  QDQRT_ASSIGN_OR_RETURN(spec.a_zero_point, zero_point_input(node, context, kBinaryAZeroPoint, "a_zero_point", 1, &a_zp));
  QDQRT_ASSIGN_OR_RETURN(spec.b_zero_point, zero_point_input(node, context, kBinaryBZeroPoint, "b_zero_point", 1, &b_zp));
  QDQRT_ASSIGN_OR_RETURN(spec.y_zero_point, zero_point_input(node, context, kBinaryYZeroPoint, "y_zero_point", 1, &y_zp));
  if (a_zp != spec.dtype || b_zp != spec.dtype || y_zp != spec.dtype) {
    return unsupported("{}: inputs and output must share one 8-bit type", node.describe());
  }
  return spec;
}

// A rank < 4 operand expanded to rank 4 is ordered the same in NCHW and NHWC when C or H*W is 1.
bool layout_neutral(const Shape& shape) {
  if (shape.size() >= 4) return shape.size() == 4 && (shape[1] == 1 || shape[2] * shape[3] == 1);
  Shape expanded(4 - shape.size(), 1);
  expanded.insert(expanded.end(), shape.begin(), shape.end());
  return expanded[1] == 1 || expanded[2] * expanded[3] == 1;
}

Status lower_qbinary(const Node& node, BuildContext& context) {
  using namespace qdqrt::layers;
  QDQRT_ASSIGN_OR_RETURN(BinarySpec spec, analyze_qbinary(node, context));
  if (Status images = check_images(node, context, spec); !images.is_ok()) {
    return lower_with_reference(node, context, images.message());
  }
  bool nhwc = false;
  if (spec.y_shape.size() == 4) {
    bool any_nhwc = false, neutral = true;
    for (size_t index : {size_t{kBinaryA}, size_t{kBinaryB}}) {
      const Shape& shape = index == kBinaryA ? spec.a_shape : spec.b_shape;
      if (shape.size() == 4) {
        QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.input(index)));
        any_nhwc = any_nhwc || context.tensor(stored).layout == Layout::kNhwc;
      } else {
        neutral = neutral && layout_neutral(shape);
      }
    }
    // Channels-last when an operand is stored so: an elementwise layer has no layout of its own.
    // Choosing it for plain operands because the readers prefer it reordered a plain [B, H, W, C]
    // tensor there and back (Swin's MLP in ONNX Runtime's layout: QMatMul -> bias QAdd -> GELU
    // tables -> QMatMul, two reorders of [1, 56, 56, 384] per block); convolution readers reorder
    // once either way.
    nhwc = any_nhwc && neutral;
    // Channels-last tensors keep the batch on dim 0.
    const std::optional<BatchLayout> y_batch = context.batch_layout(node.outputs[0]);
    if (y_batch && !batch_leads(*y_batch)) nhwc = false;
  }
  const Layout layout = nhwc ? Layout::kNhwc : Layout::kPlain;
  PlanLayer layer = node_layer(node, kBinaryKind);
  QDQRT_ASSIGN_OR_RETURN(int32_t a, context.input(node.input(kBinaryA), layout));
  QDQRT_ASSIGN_OR_RETURN(int32_t b, context.input(node.input(kBinaryB), layout));
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], layout));
  layer.inputs = {a, b};
  layer.outputs = {y};
  const bool is_add = node.op_type == kQAdd;
  params::kQBinaryOp.write(layer, is_add ? kernels::QBinaryOp::kAdd : kernels::QBinaryOp::kMul);
  params::kAScale.write(layer, spec.a_scale);
  params::kBOperandScale.write(layer, spec.b_scale);
  params::kYScale.write(layer, spec.y_scale);
  params::kAZeroPoint.write(layer, spec.a_zero_point);
  params::kBZeroPoint.write(layer, spec.b_zero_point);
  params::kYZeroPoint.write(layer, spec.y_zero_point);
  params::kRelu.write(layer, spec.relu);
  const kernels::Isa isa = kernels::usable_isa(context.isa());
  if (spec.dtype == DataType::kInt8) {
    auto set = kernels::qbinary_kernels<int8_t>(isa);
    layer.kernel = is_add ? set.add.name : set.mul.name;
  } else {
    auto set = kernels::qbinary_kernels<uint8_t>(isa);
    layer.kernel = is_add ? set.add.name : set.mul.name;
  }
  context.add_layer(std::move(layer));
  return Status::ok();
}

template <class T>
class QBinaryLayer final : public Layer {
 public:
  kernels::BroadcastPlan plan;  // per image (dim 0 excluded when the output is batched)
  kernels::QBinaryParams params, swapped;
  kernels::QBinaryFn<T> vector_fn = nullptr;
  kernels::QBinaryScalarFn<T> scalar_fn = nullptr;
  int32_t a = -1, b = -1, output = -1;
  bool batched = false;
  int64_t a_image_stride = 0, b_image_stride = 0, output_image_stride = 0;

  // The run's images: the dims up to the output's batch axis at this batch.
  int64_t images(const RunState& state) const { return batched ? state.numel(output) / output_image_stride : 1; }
  // Long rows (same-shape operands are one row per image) are cut into blocks so threads share them.
  int64_t blocks_per_row() const { return ceil_div(static_cast<int64_t>(plan.inner), kBinaryElementsPerItem); }

  WorkShape work(const RunState& state) const override {
    const int64_t items = images(state) * static_cast<int64_t>(plan.rows) * blocks_per_row();
    return {items, static_cast<double>(std::min<int64_t>(static_cast<int64_t>(plan.inner), kBinaryElementsPerItem))};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const T* a_data = state.data<const T>(a);
    const T* b_data = state.data<const T>(b);
    T* out = state.data<T>(output);
    const int64_t rows = static_cast<int64_t>(plan.rows);
    const int64_t blocks = blocks_per_row();
    const int64_t inner = static_cast<int64_t>(plan.inner);
    auto run_row = [&](const T* x, const T* y, T* z, size_t count) {
      switch (plan.kind) {
        case kernels::BroadcastPlan::Kind::kVectorVector: vector_fn(count, x, y, z, params); break;
        case kernels::BroadcastPlan::Kind::kVectorScalar: scalar_fn(count, x, *y, z, params); break;
        case kernels::BroadcastPlan::Kind::kScalarVector: scalar_fn(count, y, *x, z, swapped); break;
      }
    };
    if (blocks == 1) {
      // One item per row: the next row's offsets from a cursor, not divisions (a per-channel
      // scale or shift over rows of 96 channels: Swin's LayerNorm in ONNX Runtime's layout).
      kernels::for_each_broadcast_row(plan, begin, end, [&](int64_t image, int64_t row, size_t a_offset, size_t b_offset) {
        run_row(a_data + image * a_image_stride + a_offset, b_data + image * b_image_stride + b_offset,
                out + image * output_image_stride + row * inner, plan.inner);
      });
      return;
    }
    for (int64_t item = begin; item < end;) {
      // Item = (image, row, block); consecutive blocks of one row become one kernel call.
      const int64_t image = item / (rows * blocks);
      const int64_t row = item / blocks % rows;
      const int64_t first_block = item % blocks;
      const int64_t last_block = std::min(blocks, first_block + (end - item));
      const int64_t offset = first_block * kBinaryElementsPerItem;
      const size_t count = static_cast<size_t>(std::min(inner, last_block * kBinaryElementsPerItem) - offset);
      size_t a_offset = 0, b_offset = 0;
      plan.row_offsets(static_cast<size_t>(row), a_offset, b_offset);
      const T* x = a_data + image * a_image_stride + a_offset;
      const T* y = b_data + image * b_image_stride + b_offset;
      T* z = out + image * output_image_stride + row * inner + offset;
      // A scalar operand is the row's one value whatever the block.
      run_row(plan.kind == kernels::BroadcastPlan::Kind::kScalarVector ? x : x + offset,
              plan.kind == kernels::BroadcastPlan::Kind::kVectorScalar ? y : y + offset, z, count);
      item += last_block - first_block;
    }
  }
};

template <class T>
Result<std::unique_ptr<Layer>> bind_qbinary_typed(const BindContext& context, const PlanTensor& a,
                                                  const PlanTensor& b, const PlanTensor& y) {
  using namespace params;
  auto layer = std::make_unique<QBinaryLayer<T>>();
  QDQRT_ASSIGN_OR_RETURN(kernels::QBinaryOp op, kQBinaryOp.read(context));
  const bool is_add = op == kernels::QBinaryOp::kAdd;
  QDQRT_ASSIGN_OR_RETURN(float a_scale, kAScale.read(context));
  QDQRT_ASSIGN_OR_RETURN(float b_scale, kBOperandScale.read(context));
  QDQRT_ASSIGN_OR_RETURN(float y_scale, kYScale.read(context));
  const bool is_signed = std::is_signed_v<T>;
  QDQRT_ASSIGN_OR_RETURN(int32_t a_zero_point, read_zero_point(context, kAZeroPoint, is_signed));
  QDQRT_ASSIGN_OR_RETURN(int32_t b_zero_point, read_zero_point(context, kBZeroPoint, is_signed));
  QDQRT_ASSIGN_OR_RETURN(int32_t y_zero_point, read_zero_point(context, kYZeroPoint, is_signed));
  QDQRT_ASSIGN_OR_RETURN(bool relu, kRelu.read(context));
  layer->params =
      kernels::make_qbinary_params<T>(op, a_scale, a_zero_point, b_scale, b_zero_point, y_scale, y_zero_point, relu);
  layer->swapped = kernels::swap_qbinary_operands(layer->params);
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, supporting_isa(context));
  auto kernels_set = kernels::qbinary_kernels<T>(isa);
  layer->vector_fn = is_add ? kernels_set.add.fn : kernels_set.mul.fn;
  layer->scalar_fn = is_add ? kernels_set.add_scalar.fn : kernels_set.mul_scalar.fn;

  // Operand dims in the output's storage order, expanded to the output's rank.
  const size_t rank = y.shape.size();
  auto storage = [&](const PlanTensor& t, const char* role) -> Result<Shape> {
    if (t.shape.size() > rank) return context.error(fmt::format("{} has a higher rank than the output", role));
    if (t.shape.size() == 4 && t.layout != y.layout) {
      return context.error(fmt::format("{} is stored {}, the output {}", role, layout_name(t.layout),
                                       layout_name(y.layout)));
    }
    Shape expanded(rank - t.shape.size(), 1);
    expanded.insert(expanded.end(), t.shape.begin(), t.shape.end());
    if (y.layout == Layout::kNhwc) {
      if (t.shape.size() != 4 && !layout_neutral(t.shape)) {
        return context.error(fmt::format("{} of rank {} cannot broadcast into an nhwc output", role, t.shape.size()));
      }
      return Shape{expanded[0], expanded[2], expanded[3], expanded[1]};
    }
    return expanded;
  };
  QDQRT_ASSIGN_OR_RETURN(Shape a_shape, storage(a, "a"));
  QDQRT_ASSIGN_OR_RETURN(Shape b_shape, storage(b, "b"));
  Shape y_shape = storage_shape(y);
  layer->batched = y.batched && rank > 0;
  // Images are the dims up to the batch axis (dim 0 but for a plain output of attention's [L, N, E]).
  const size_t leading = layer->batched ? static_cast<size_t>(y.batch_axis) + 1 : 0;
  if (leading > rank || (layer->batched && y.layout == Layout::kNhwc && !batch_leads(y))) {
    return context.error(fmt::format("output batch axis {} does not fit its rank {} and layout {}", y.batch_axis, rank,
                                     layout_name(y.layout)));
  }
  auto leading_elements = [&](const Shape& shape) { return shape_numel(Shape(shape.begin(), shape.begin() + leading)); };
  auto image_stride = [&](const PlanTensor& t, const Shape& shape, const char* role) -> Result<int64_t> {
    if (!layer->batched) {
      if (t.batched) return context.error(fmt::format("{} is batched, the output is not", role));
      return int64_t{0};
    }
    if (t.batched) {
      if (t.shape.size() != rank || batch_layout_of(t) != batch_layout_of(y) ||
          !std::equal(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(leading), y_shape.begin())) {
        return context.error(fmt::format("batched {} {} does not line up with the output {} (batch on dim {})", role,
                                         shape_to_string(t.shape), shape_to_string(y.shape), y.batch_axis));
      }
      return shape_numel(shape) / leading_elements(shape);
    }
    for (size_t axis = 0; axis < leading; ++axis) {
      if (shape[axis] != 1) {
        return context.error(fmt::format("{} {} is not batched but has {} on dim {}, before the batch", role,
                                         shape_to_string(t.shape), shape[axis], axis));
      }
    }
    return int64_t{0};
  };
  QDQRT_ASSIGN_OR_RETURN(layer->a_image_stride, image_stride(a, a_shape, "a"));
  QDQRT_ASSIGN_OR_RETURN(layer->b_image_stride, image_stride(b, b_shape, "b"));
  layer->output_image_stride = layer->batched ? shape_numel(y_shape) / leading_elements(y_shape) : 0;
  const size_t skip = leading;
  Shape a_image(a_shape.begin() + skip, a_shape.end());
  Shape b_image(b_shape.begin() + skip, b_shape.end());
  Shape y_image(y_shape.begin() + skip, y_shape.end());
  if (a_image.empty()) a_image = {1};
  if (b_image.empty()) b_image = {1};
  std::optional<kernels::BroadcastPlan> plan = kernels::make_broadcast_plan(a_image, b_image);
  if (!plan || shape_numel(plan->output_shape) != shape_numel(y_image) ||
      !std::equal(y_image.rbegin(), y_image.rend(), plan->output_shape.rbegin())) {
    return context.error("operand shapes do not broadcast to the output shape");
  }
  layer->plan = std::move(*plan);
  layer->a = context.layer().inputs[0];
  layer->b = context.layer().inputs[1];
  layer->output = context.layer().outputs[0];
  return std::unique_ptr<Layer>(std::move(layer));
}

Result<std::unique_ptr<Layer>> bind_qbinary(const BindContext& context) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* a, check_input(context, 0, {"a", -1, -1, true}));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* b, check_input(context, 1, {"b", -1, -1, true}));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y, check_output(context, 0, {"output", -1, -1, true}));
  if (a->dtype != y->dtype || b->dtype != y->dtype) return context.error("operands and output differ in type");
  if (context.layer().inputs.size() != 2) return context.error("expects two inputs");
  if (y->dtype == DataType::kInt8) return bind_qbinary_typed<int8_t>(context, *a, *b, *y);
  return bind_qbinary_typed<uint8_t>(context, *a, *b, *y);
}

// ---------------------------------------------------------------------------------------------
// Table-driven unary layers

// x (8-bit runtime value) -> y (8-bit) with every other input a single-value constant.
Result<DataType> analyze_unary(const Node& node, const BuildContext& context) {
  if (node.inputs.empty() || node.outputs.size() != 1 || node.outputs[0].empty()) {
    return unsupported("{}: one input and one output", node.describe());
  }
  const std::string& x = node.input(0);
  if (x.empty() || context.constant(x) != nullptr) return unsupported("{}: x must be a runtime value", node.describe());
  QDQRT_ASSIGN_OR_RETURN(DataType x_dtype, context.dtype_of(x));
  QDQRT_ASSIGN_OR_RETURN(DataType y_dtype, context.dtype_of(node.outputs[0]));
  if (!is_8bit(x_dtype) || !is_8bit(y_dtype)) return unsupported("{}: not 8-bit", node.describe());
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (!node.has_input(i)) continue;
    const Tensor* constant = context.constant(node.input(i));
    if (constant == nullptr || constant->numel() != 1) {
      return unsupported("{}: input {} must be a single-value constant", node.describe(), i);
    }
  }
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, static_shape(node, context, x));
  QDQRT_ASSIGN_OR_RETURN(Shape y_shape, static_shape(node, context, node.outputs[0]));
  if (x_shape != y_shape) return unsupported("{}: not elementwise", node.describe());
  return x_dtype;
}

// The table of a node by running its reference kernel on all 256 input codes.
Result<std::array<uint8_t, 256>> reference_table(const Node& node, const BuildContext& context, DataType x_dtype) {
  Tensor codes(x_dtype, {256});
  uint8_t* raw = static_cast<uint8_t*>(codes.raw_data());
  for (int v = 0; v < 256; ++v) raw[v] = static_cast<uint8_t>(v);
  std::vector<const Tensor*> inputs(node.inputs.size(), nullptr);
  inputs[0] = &codes;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.has_input(i)) inputs[i] = context.constant(node.input(i));
  }
  QDQRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, run_reference_node(node, inputs));
  if (outputs.empty() || !is_8bit(outputs[0].dtype()) || outputs[0].numel() != 256) {
    return internal_error("{}: the reference kernel did not give 256 8-bit values", node.describe());
  }
  std::array<uint8_t, 256> table{};
  const uint8_t* values = static_cast<const uint8_t*>(outputs[0].raw_data());
  std::copy(values, values + 256, table.begin());
  return table;
}

Status add_lut_layer(const Node& node, BuildContext& context, const std::array<uint8_t, 256>& table) {
  PlanLayer layer = node_layer(node, kLutKind);
  QDQRT_ASSIGN_OR_RETURN(int32_t x, context.input_as_stored(node.input(0)));
  const Layout layout = context.tensor(x).layout;
  QDQRT_ASSIGN_OR_RETURN(int32_t y, context.output(node.outputs[0], layout));
  layer.inputs = {x};
  layer.outputs = {y};
  params::kTable.write(layer, table);
  layer.kernel = kernels::lut_kernel(kernels::usable_isa(context.isa())).name;
  context.add_layer(std::move(layer));
  return Status::ok();
}

Status lower_reference_table(const Node& node, BuildContext& context) {
  QDQRT_ASSIGN_OR_RETURN(DataType x_dtype, analyze_unary(node, context));
  QDQRT_ASSIGN_OR_RETURN(auto table, reference_table(node, context, x_dtype));
  return add_lut_layer(node, context, table);
}

Status lower_int8_relu(const Node& node, BuildContext& context) {
  QDQRT_ASSIGN_OR_RETURN(DataType x_dtype, analyze_unary(node, context));
  std::array<uint8_t, 256> table{};
  for (int v = 0; v < 256; ++v) {
    // Relu on raw integers: int8 codes below 0 become 0; uint8 codes are never negative.
    const bool negative = x_dtype == DataType::kInt8 && static_cast<int8_t>(v) < 0;
    table[static_cast<size_t>(v)] = negative ? 0 : static_cast<uint8_t>(v);
  }
  return add_lut_layer(node, context, table);
}

class LutLayer final : public Layer {
 public:
  kernels::LutFn lut = nullptr;
  const uint8_t* table = nullptr;
  int32_t input = -1, output = -1;
  std::vector<std::shared_ptr<const void>> owners;

  WorkShape work(const RunState& state) const override {
    return {ceil_div(state.numel(input), kLutElementsPerItem), static_cast<double>(kLutElementsPerItem)};
  }
  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t count = state.numel(input);
    const int64_t first = begin * kLutElementsPerItem;
    const int64_t last = std::min(count, end * kLutElementsPerItem);
    if (first >= last) return;
    lut(static_cast<size_t>(last - first), state.data<const uint8_t>(input) + first,
        state.data<uint8_t>(output) + first, table);
  }
};

Result<std::unique_ptr<Layer>> bind_lut(const BindContext& context) {
  auto layer = std::make_unique<LutLayer>();
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* x, check_input(context, 0, {"input", -1, -1, true}));
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* y, check_output(context, 0, {"output", -1, -1, true}));
  if (x->shape != y->shape || x->layout != y->layout || x->batched != y->batched ||
      batch_layout_of(*x) != batch_layout_of(*y)) {
    return context.error("input and output differ in shape, layout or batch axis");
  }
  if (context.layer().inputs.size() != 1) return context.error("expects one input");
  QDQRT_ASSIGN_OR_RETURN(layer->table, params::kTable.read(context, 256));
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, supporting_isa(context));
  layer->lut = kernels::lut_kernel(isa).fn;
  layer->input = context.layer().inputs[0];
  layer->output = context.layer().outputs[0];
  layer->owners = blob_owners(context.layer());
  return std::unique_ptr<Layer>(std::move(layer));
}

bool accepts_unary(const Node& node, const BuildContext& context) { return analyze_unary(node, context).ok(); }

}  // namespace

void register_int8_elementwise_layers(LayerRegistry& registry) {
  registry.add_kind({.kind = kBinaryKind, .bind = bind_qbinary, .any_batch_layout = true});
  // A table maps each element on its own: the batch may be on any axis.
  registry.add_kind({.kind = kLutKind, .bind = bind_lut, .any_batch_layout = true});
  for (const char* op : {qdqrt::layers::kQAdd, qdqrt::layers::kQMul}) {
    NodeLowering lowering;
    lowering.domain = qdqrt::layers::kDomain;
    lowering.op_type = op;
    lowering.lower = lower_qbinary;
    lowering.accepts = [](const Node& node, const BuildContext& context) {
      return analyze_qbinary(node, context).ok();
    };
    lowering.prefers_nhwc = true;
    lowering.follows_layout = true;
    lowering.any_batch_layout = true;
    registry.add_lowering(std::move(lowering));
  }
  // QRequantize is made by the optimizer when a fused layer's float output fed several Q nodes.
  for (const char* op : {qdqrt::layers::kQLookup, "QRequantize"}) {
    NodeLowering lowering;
    lowering.domain = qdqrt::layers::kDomain;
    lowering.op_type = op;
    lowering.lower = lower_reference_table;
    lowering.accepts = accepts_unary;
    lowering.prefers_nhwc = true;
    lowering.follows_layout = true;
    lowering.any_batch_layout = true;
    registry.add_lowering(std::move(lowering));
  }
  NodeLowering relu;
  relu.domain = kOnnxDomain;
  relu.op_type = "Relu";
  relu.lower = lower_int8_relu;
  relu.accepts = accepts_unary;
  relu.prefers_nhwc = true;
  relu.follows_layout = true;
  relu.any_batch_layout = true;
  registry.add_lowering(std::move(relu));
}

}  // namespace qdqrt::engine::int8
