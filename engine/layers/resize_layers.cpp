// Resize on rank-4 tensors (kernels/resize/resize.h), the two inner dims resized, N and C kept:
//   resize_nearest   fp32, int8 or uint8 in and out (the same dtype): a gather of input pixels.
//   resize_bilinear  fp32: mode 'linear' on the two inner dims.
// NCHW, or channels-last when the input is stored so (per output pixel, a copy of one input
// pixel's channels, or the four taps' channels interpolated).
// Both take every coordinate_transformation_mode but tf_crop_and_resize, every nearest_mode,
// `scales` or `sizes` (constants; keep_aspect_ratio_policy and opset-18 `axes` too), opsets 10..21.
// Cubic, tf_crop_and_resize, runtime scales/sizes, other ranks and a resize of N or C stay on the
// reference layer. The per-row and per-column taps are computed at bind time with the reference
// executor's formulas (reference/ops/resize.cpp) in the same double arithmetic, so outputs are
// bit-identical to it. Items: output rows of every (image, channel) plane (channels-last: output
// rows of every image), at the run's batch.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "core/ops/resize.h"
#include "engine/batch_tracking.h"
#include "engine/layers/float_common.h"
#include "kernels/resize/resize.h"

namespace qdqrt::engine::fp32 {

namespace {

constexpr const char* kNearestKind = "resize_nearest";
constexpr const char* kBilinearKind = "resize_bilinear";

// The layer's params: the coordinate rule and the two inner axes' scales (doubles, as the
// reference uses them; a `sizes` ratio is not a float).
inline constexpr IntCodec kCoordinate{"resize.coordinate", 0,
                                      static_cast<int64_t>(CoordinateTransformation::kTfHalfPixelForNn)};
inline constexpr IntCodec kNearestMode{"resize.nearest_mode", 0, static_cast<int64_t>(NearestMode::kCeil)};
inline constexpr BlobCodec<double> kScales{"resize.scales"};

struct AxisRule {
  CoordinateTransformation coordinate = CoordinateTransformation::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  int64_t input_size = 1, output_size = 1;
  double scale = 1.0;
};

// The reference kernel's coordinate rule (core/ops/resize.h); tf_crop_and_resize is not lowered.
double original_coordinate(const AxisRule& axis, int64_t out) {
  return resize_original_coordinate(
      axis.coordinate, ResizeAxis{.input_size = axis.input_size, .output_size = axis.output_size, .scale = axis.scale},
      out);
}

// The taps of one axis: per output coordinate, index0 (weight0) and index1 (weight1; 0 for nearest).
struct AxisTaps {
  std::vector<int32_t> index0, index1;
  std::vector<double> weight0, weight1;
};

AxisTaps axis_taps(const AxisRule& axis, bool linear) {
  AxisTaps taps;
  const int64_t last = axis.input_size - 1;
  for (int64_t out = 0; out < axis.output_size; ++out) {
    const double x = original_coordinate(axis, out);
    if (!linear) {
      // Clamped in double first: a far-off coordinate must not overflow the integer conversion.
      const double bounded = std::clamp(x, -1.0, static_cast<double>(axis.input_size));
      taps.index0.push_back(static_cast<int32_t>(std::clamp<int64_t>(resize_nearest_index(axis.nearest, bounded), 0, last)));
      taps.index1.push_back(taps.index0.back());
      taps.weight0.push_back(1.0);
      taps.weight1.push_back(0.0);
      continue;
    }
    const double clamped = std::clamp(x, 0.0, static_cast<double>(last));
    const int64_t base = static_cast<int64_t>(std::floor(clamped));
    const double t = clamped - static_cast<double>(base);
    taps.index0.push_back(static_cast<int32_t>(base));
    taps.index1.push_back(static_cast<int32_t>(std::clamp<int64_t>(base + 1, 0, last)));
    taps.weight0.push_back(1.0 - t);
    taps.weight1.push_back(t);
  }
  return taps;
}

// An axis the layer keeps (N or C): every coordinate maps to itself with weight exactly 1.
bool identity_axis(const AxisRule& axis, bool linear) {
  if (axis.scale != 1.0 || axis.output_size != axis.input_size) return false;
  const AxisTaps taps = axis_taps(axis, linear);
  for (int64_t out = 0; out < axis.output_size; ++out) {
    const size_t i = static_cast<size_t>(out);
    if (taps.index0[i] != out || taps.weight0[i] != 1.0 || taps.weight1[i] != 0.0) return false;
  }
  return true;
}

class ResizeLayer final : public Layer {
 public:
  ResizeLayer(bool linear, bool nhwc, size_t element_size, int64_t channels, int64_t height, int64_t width,
              AxisTaps rows, AxisTaps columns, int32_t input, int32_t output, kernels::ResizeKernels kernels)
      : linear_(linear),
        nhwc_(nhwc),
        element_size_(element_size),
        channels_(channels),
        height_(height),
        width_(width),
        rows_(std::move(rows)),
        columns_(std::move(columns)),
        input_(input),
        output_(output),
        kernels_(kernels) {}

  WorkShape work(const RunState& state) const override {
    const int64_t out_height = static_cast<int64_t>(rows_.index0.size());
    const double per_element = linear_ ? 4.0 : 1.0;
    if (nhwc_) {
      return {.items = state.dim(input_, 0) * out_height,
              .ops_per_item = static_cast<double>(columns_.index0.size() * channels_) * kStreamingOpsPerElement};
    }
    return {.items = state.dim(input_, 0) * channels_ * out_height,
            .ops_per_item = static_cast<double>(columns_.index0.size()) * per_element * kStreamingOpsPerElement};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const int64_t out_height = static_cast<int64_t>(rows_.index0.size());
    const size_t out_width = columns_.index0.size();
    const auto* x = static_cast<const uint8_t*>(state.data(input_));
    auto* y = static_cast<uint8_t*>(state.data(output_));
    if (nhwc_) {
      for (int64_t item = begin; item < end; ++item) {
        if (linear_) {
          linear_row_nhwc(reinterpret_cast<const float*>(x), reinterpret_cast<float*>(y), item);
        } else {
          nearest_row_nhwc(x, y, item);
        }
      }
      return;
    }
    for (int64_t item = begin; item < end; ++item) {
      const int64_t plane = item / out_height;
      const size_t oh = static_cast<size_t>(item - plane * out_height);
      const uint8_t* in = x + static_cast<size_t>(plane * height_ * width_) * element_size_;
      uint8_t* out = y + static_cast<size_t>(item) * out_width * element_size_;
      const size_t row0 = static_cast<size_t>(rows_.index0[oh]) * static_cast<size_t>(width_) * element_size_;
      if (!linear_) {
        if (element_size_ == 4) {
          kernels_.nearest.fn(reinterpret_cast<const float*>(in + row0), columns_.index0.data(), 0, out_width,
                              reinterpret_cast<float*>(out));
        } else {
          kernels_.nearest_s8.fn(reinterpret_cast<const int8_t*>(in + row0), columns_.index0.data(), 0, out_width,
                                 reinterpret_cast<int8_t*>(out));
        }
        continue;
      }
      const auto* plane_in = reinterpret_cast<const float*>(in);
      kernels::ResizeLinearRow row;
      row.in0 = plane_in + static_cast<size_t>(rows_.index0[oh]) * static_cast<size_t>(width_);
      row.in1 = plane_in + static_cast<size_t>(rows_.index1[oh]) * static_cast<size_t>(width_);
      row.wy0 = rows_.weight0[oh];
      row.wy1 = rows_.weight1[oh];
      row.x0 = columns_.index0.data();
      row.x1 = columns_.index1.data();
      row.wx0 = columns_.weight0.data();
      row.wx1 = columns_.weight1.data();
      kernels_.linear.fn(row, 0, out_width, reinterpret_cast<float*>(out));
    }
  }

 private:
  // Channels-last nearest: output row `item` (image * out_height + oh), each output pixel a copy of
  // its input pixel's channels (fp32: + 0.0f, as the NCHW kernel).
  void nearest_row_nhwc(const uint8_t* x, uint8_t* y, int64_t item) const {
    const int64_t out_height = static_cast<int64_t>(rows_.index0.size());
    const size_t out_width = columns_.index0.size();
    const int64_t image = item / out_height;
    const size_t oh = static_cast<size_t>(item - image * out_height);
    const size_t pixel = static_cast<size_t>(channels_) * element_size_;
    const uint8_t* in =
        x + static_cast<size_t>(image * height_ + rows_.index0[oh]) * static_cast<size_t>(width_) * pixel;
    uint8_t* out = y + static_cast<size_t>(item) * out_width * pixel;
    for (size_t ow = 0; ow < out_width; ++ow) {
      const uint8_t* source = in + static_cast<size_t>(columns_.index0[ow]) * pixel;
      uint8_t* target = out + ow * pixel;
      if (element_size_ == 1) {
        std::memcpy(target, source, pixel);
      } else {
        const auto* from = reinterpret_cast<const float*>(source);
        auto* to = reinterpret_cast<float*>(target);
        for (int64_t c = 0; c < channels_; ++c) to[c] = from[c] + 0.0f;
      }
    }
  }

  // Channels-last bilinear: output row `item` (image * out_height + oh).
  void linear_row_nhwc(const float* x, float* y, int64_t item) const {
    const int64_t out_height = static_cast<int64_t>(rows_.index0.size());
    const size_t out_width = columns_.index0.size();
    const int64_t image = item / out_height;
    const size_t oh = static_cast<size_t>(item - image * out_height);
    const size_t row_floats = static_cast<size_t>(width_ * channels_);
    const float* in = x + static_cast<size_t>(image * height_) * row_floats;
    kernels::ResizeLinearRow row;
    row.in0 = in + static_cast<size_t>(rows_.index0[oh]) * row_floats;
    row.in1 = in + static_cast<size_t>(rows_.index1[oh]) * row_floats;
    row.wy0 = rows_.weight0[oh];
    row.wy1 = rows_.weight1[oh];
    row.x0 = columns_.index0.data();
    row.x1 = columns_.index1.data();
    row.wx0 = columns_.weight0.data();
    row.wx1 = columns_.weight1.data();
    kernels_.linear_nhwc.fn(row, static_cast<size_t>(channels_), 0, out_width,
                            y + static_cast<size_t>(item) * out_width * static_cast<size_t>(channels_));
  }

  bool linear_, nhwc_;
  size_t element_size_;
  int64_t channels_, height_, width_;
  AxisTaps rows_, columns_;
  int32_t input_, output_;
  kernels::ResizeKernels kernels_;
};

Result<std::unique_ptr<Layer>> bind_resize(const BindContext& context, bool linear) {
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  // Either layout (channels-last after an NHWC conv or inside an INT8 region), the same for both.
  const Layout layout = x->layout;
  if (!linear && (x->dtype == DataType::kInt8 || x->dtype == DataType::kUint8)) {
    QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", x->dtype, 4, layout));
  } else {
    QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, 4, layout));
  }
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", x->dtype, 4, layout));
  if (x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1] || batch_layout_of(*x) != batch_layout_of(*y) ||
      (x->batched && !batch_leads(*x))) {
    return context.error(fmt::format("input {} and output {} differ in batch or channels", shape_to_string(x->shape),
                                     shape_to_string(y->shape)));
  }
  for (size_t axis = 2; axis < 4; ++axis) {
    if (x->shape[axis] < 1 || y->shape[axis] < 1 || x->shape[axis] > std::numeric_limits<int32_t>::max()) {
      return context.error(fmt::format("input {} or output {} has an empty or too large plane",
                                       shape_to_string(x->shape), shape_to_string(y->shape)));
    }
  }
  QDQRT_ASSIGN_OR_RETURN(int64_t coordinate, kCoordinate.read(context));
  QDQRT_ASSIGN_OR_RETURN(int64_t nearest, kNearestMode.read(context));
  QDQRT_ASSIGN_OR_RETURN(const double* scales, kScales.read(context, 2));
  AxisRule axes[2];
  for (int i = 0; i < 2; ++i) {
    if (!std::isfinite(scales[i]) || !(scales[i] > 0.0)) {
      return context.error(fmt::format("scale {} of axis {} is not a positive finite number", scales[i], i + 2));
    }
    axes[i].coordinate = static_cast<CoordinateTransformation>(coordinate);
    axes[i].nearest = static_cast<NearestMode>(nearest);
    axes[i].input_size = x->shape[static_cast<size_t>(i) + 2];
    axes[i].output_size = y->shape[static_cast<size_t>(i) + 2];
    axes[i].scale = scales[i];
  }
  const kernels::ResizeKernels kernels = kernels::resize_kernels(bind_isa(context.plan()));
  return std::unique_ptr<Layer>(
      std::make_unique<ResizeLayer>(linear, layout == Layout::kNhwc, x->dtype == DataType::kFloat ? 4 : 1, x->shape[1],
                                    x->shape[2], x->shape[3], axis_taps(axes[0], linear), axis_taps(axes[1], linear),
                                    context.layer().inputs[0], context.layer().outputs[0], kernels));
}

// The scales of the four axes (as the reference computes them) from the constant scales/sizes,
// or why this node stays on the reference (an empty reason: native). Errors name the node.
struct ResizePlan {
  std::vector<double> scale;
  std::vector<int64_t> output;
  std::string reference_reason;
};

Result<ResizePlan> plan_scales(const Node& node, const ResizeAttributes& attributes, const Shape& x_shape,
                               const BuildContext& context) {
  ResizePlan plan;
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  auto input_at = [&](size_t i) -> std::string { return i < node.inputs.size() ? node.inputs[i] : std::string(); };
  const std::string scales_name = node.opset < 11 ? input_at(1) : input_at(2);
  const std::string sizes_name = node.opset < 11 ? std::string() : input_at(3);
  const Tensor* scales = scales_name.empty() ? nullptr : context.constant(scales_name);
  // `sizes` built from the input's Shape (torch's F.interpolate(size=...)) hold the maximum batch
  // in their N entry; the layer takes N from the run and the lowering checks that the output's
  // batch is where the input's is, so the other entries are batch-independent and an initializer
  // of the optimized graph is read without pinning the engine to its maximum batch.
  // Shape inference's expressions of its elements (ValueInfo::elements) say which entries follow
  // the batch: only the batch's own entry (the first, over axis 0) may.
  const Tensor* sizes = nullptr;
  if (!sizes_name.empty()) {
    const Tensor* found = context.graph().find_initializer(sizes_name);
    const ValueInfo* info = context.graph().find_value(sizes_name);
    bool only_batch_entry_follows = found != nullptr;
    if (found != nullptr && info != nullptr && info->from_runtime_shapes) {
      const bool first_is_batch = attributes.axes.empty() || attributes.axes.front() == 0 ||
                                  attributes.axes.front() == -rank;
      only_batch_entry_follows = info->elements.has_value();
      for (size_t i = 0; only_batch_entry_follows && i < info->elements->size(); ++i) {
        const DimExpr& entry = (*info->elements)[i].expr;
        const bool follows = !entry.known() || entry.depends_on(kBatchSymbol);
        if (follows && !(i == 0 && first_is_batch)) only_batch_entry_follows = false;
      }
    }
    sizes = only_batch_entry_follows ? found : context.constant(sizes_name);
  }
  if ((!scales_name.empty() && scales == nullptr) || (!sizes_name.empty() && sizes == nullptr)) {
    plan.reference_reason = "scales or sizes computed at run time";
    return plan;
  }
  if (scales != nullptr && scales->numel() == 0) scales = nullptr;  // opsets 11-12 pass an empty scales with sizes
  if ((scales == nullptr) == (sizes == nullptr)) {
    return invalid_model("{}: exactly one of 'scales' and 'sizes' must be given", node.describe());
  }
  std::vector<int64_t> axes;
  for (int64_t axis : attributes.axes) {
    if (axis < -rank || axis >= rank) {
      return invalid_model("{}: attribute 'axes' value {} is out of range for rank {}", node.describe(), axis, rank);
    }
    axes.push_back(axis < 0 ? axis + rank : axis);
  }
  if (std::set<int64_t>(axes.begin(), axes.end()).size() != axes.size()) {
    return invalid_model("{}: attribute 'axes' repeats an axis", node.describe());
  }
  if (axes.empty()) {
    for (int64_t axis = 0; axis < rank; ++axis) axes.push_back(axis);
  }
  plan.scale.assign(static_cast<size_t>(rank), 1.0);
  plan.output.assign(x_shape.begin(), x_shape.end());
  if (scales != nullptr) {
    if (scales->dtype() != DataType::kFloat || scales->numel() != static_cast<int64_t>(axes.size())) {
      return invalid_argument("{}: scales has {} values of {}, expected {} floats", node.describe(), scales->numel(),
                              dtype_name(scales->dtype()), axes.size());
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      const double scale = static_cast<double>(scales->data<float>()[i]);
      if (!(scale > 0.0) || !std::isfinite(scale)) {
        return invalid_argument("{}: scales[{}] must be positive and finite, got {}", node.describe(), i, scale);
      }
      const size_t axis = static_cast<size_t>(axes[i]);
      plan.scale[axis] = scale;
      plan.output[axis] = static_cast<int64_t>(std::floor(static_cast<double>(x_shape[axis]) * scale));
    }
  } else {
    if (sizes->dtype() != DataType::kInt64 || sizes->numel() != static_cast<int64_t>(axes.size())) {
      return invalid_argument("{}: sizes has {} values of {}, expected {} int64", node.describe(), sizes->numel(),
                              dtype_name(sizes->dtype()), axes.size());
    }
    std::vector<double> ratios;
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t size = sizes->data<int64_t>()[i];
      const int64_t input_size = x_shape[static_cast<size_t>(axes[i])];
      if (size < 1 || input_size < 1) {
        return invalid_argument("{}: sizes[{}] = {} is invalid for input size {}", node.describe(), i, size,
                                input_size);
      }
      ratios.push_back(static_cast<double>(size) / static_cast<double>(input_size));
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t axis = static_cast<size_t>(axes[i]);
      if (attributes.keep_aspect_ratio_policy == KeepAspectRatioPolicy::kStretch) {
        plan.scale[axis] = ratios[i];
        plan.output[axis] = sizes->data<int64_t>()[i];
      } else {
        plan.scale[axis] = attributes.keep_aspect_ratio_policy == KeepAspectRatioPolicy::kNotLarger
                               ? *std::min_element(ratios.begin(), ratios.end())
                               : *std::max_element(ratios.begin(), ratios.end());
        plan.output[axis] =
            static_cast<int64_t>(std::floor(plan.scale[axis] * static_cast<double>(x_shape[axis]) + 0.5));
      }
    }
  }
  for (size_t axis = 0; axis < plan.output.size(); ++axis) {
    if (plan.output[axis] < 1) {
      return invalid_argument("{}: output size {} on axis {} (input {}) is not positive", node.describe(),
                              plan.output[axis], axis, x_shape[axis]);
    }
  }
  return plan;
}

bool resize_accepts(const Node& node, const BuildContext& context) {
  if (node.inputs.empty() || node.outputs.empty()) return false;
  const DataType x = value_dtype(context, node.inputs[0]);
  return (x == DataType::kFloat || x == DataType::kInt8 || x == DataType::kUint8) &&
         value_dtype(context, node.outputs[0]) == x;
}

Status lower_resize(const Node& node, BuildContext& context) {
  const ResizeAttributes& attributes = node.attrs<ResizeAttributes>();
  const bool linear = attributes.mode == ResizeMode::kLinear;
  const DataType dtype = value_dtype(context, node.inputs[0]);
  if ((attributes.mode != ResizeMode::kNearest && !linear) || (linear && dtype != DataType::kFloat) ||
      attributes.coordinate_transformation == CoordinateTransformation::kTfCropAndResize) {
    return lower_with_reference(node, context);
  }
  QDQRT_ASSIGN_OR_RETURN(Shape x_shape, context.shape_of(node.input(0)));
  QDQRT_ASSIGN_OR_RETURN(Shape y_shape, context.shape_of(node.outputs[0]));
  if (x_shape.size() != 4 || y_shape.size() != 4) return lower_with_reference(node, context);
  for (int64_t dim : x_shape) {
    if (dim < 1 || dim > std::numeric_limits<int32_t>::max()) return lower_with_reference(node, context);
  }
  // A Resize that changes where the batch is (sizes that fix it) runs on the reference.
  const std::optional<BatchLayout> in_batch = context.batch_layout(node.input(0));
  const std::optional<BatchLayout> out_batch = context.batch_layout(node.outputs[0]);
  if (in_batch && out_batch && !(*in_batch == *out_batch)) return lower_with_reference(node, context);
  QDQRT_ASSIGN_OR_RETURN(ResizePlan plan, plan_scales(node, attributes, x_shape, context));
  if (!plan.reference_reason.empty() || plan.output != std::vector<int64_t>(y_shape.begin(), y_shape.end())) {
    return lower_with_reference(node, context);
  }
  // N and C must map to themselves, N at every batch the engine runs.
  for (size_t axis = 0; axis < 2; ++axis) {
    for (int64_t size = axis == 0 ? 1 : x_shape[axis]; size <= x_shape[axis]; ++size) {
      const AxisRule rule{.coordinate = attributes.coordinate_transformation,
                          .nearest = attributes.nearest_mode,
                          .input_size = size,
                          .output_size = size,
                          .scale = plan.scale[axis]};
      if (!identity_axis(rule, linear)) return lower_with_reference(node, context);
    }
  }
  const kernels::ResizeKernels kernels = kernels::resize_kernels(kernels::usable_isa(context.isa()));
  const char* kernel = linear                      ? kernels.linear.name
                       : dtype == DataType::kFloat ? kernels.nearest.name
                                                   : kernels.nearest_s8.name;
  PlanLayer layer = make_layer(node, linear ? kBilinearKind : kNearestKind, kernel);
  kCoordinate.write(layer, static_cast<int64_t>(attributes.coordinate_transformation));
  kNearestMode.write(layer, static_cast<int64_t>(attributes.nearest_mode));
  const double scales[2] = {plan.scale[2], plan.scale[3]};
  kScales.write(layer, std::span<const double>(scales, 2));
  // A channels-last input stays channels-last (an INT8 region's tensors, a float NHWC conv's
  // output): no reorder on either side.
  QDQRT_ASSIGN_OR_RETURN(int32_t stored, context.input_as_stored(node.input(0)));
  const PlanTensor stored_tensor = context.tensor(stored);
  const Layout layout =
      stored_tensor.layout == Layout::kNhwc && batch_leads(stored_tensor) ? Layout::kNhwc : Layout::kPlain;
  if (layout == Layout::kNhwc) {
    layer.kernel = linear                      ? kernels.linear_nhwc.name
                   : dtype == DataType::kFloat ? "f32-resize-nearest-nhwc-scalar"
                                               : "x8-resize-nearest-nhwc-memcpy";
  }
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), layout));
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], layout));
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace

void register_resize(LayerRegistry& registry) {
  registry.add_kind({kNearestKind, [](const BindContext& context) { return bind_resize(context, false); }});
  registry.add_kind({kBilinearKind, [](const BindContext& context) { return bind_resize(context, true); }});
  registry.add_lowering({.domain = "", .op_type = "Resize", .lower = lower_resize, .accepts = resize_accepts});
}

}  // namespace qdqrt::engine::fp32
