// Reference Resize (opsets 10..21): nearest (every nearest_mode), linear and cubic, every
// coordinate_transformation_mode, axes and keep_aspect_ratio_policy; antialias is rejected by
// the parser. Each output coordinate maps to a few input taps per axis (1 for nearest, 2 for
// linear, 4 for cubic); the output is the weighted sum over the product of the axes' taps.
#include <algorithm>
#include <cmath>
#include <set>

#include "core/ops/resize.h"
#include "reference/kernel_registry.h"
#include "reference/ops/broadcast.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt {

namespace {

using namespace reference;

struct Tap {
  int64_t index;
  double weight;
};
// The taps of one output coordinate along one axis; `extrapolate` when tf_crop_and_resize maps
// it outside the input (the output element is then extrapolation_value).
struct AxisTaps {
  bool extrapolate = false;
  std::vector<Tap> taps;
};

struct AxisResize {
  int64_t input_size = 1;
  int64_t output_size = 1;
  double scale = 1.0;
  double roi_start = 0.0, roi_end = 1.0;
  bool resized = false;  // false for axes not listed in `axes`: copied unchanged
};

double original_coordinate(const ResizeAttributes& attributes, const AxisResize& axis, int64_t out) {
  return resize_original_coordinate(attributes.coordinate_transformation,
                                    ResizeAxis{.input_size = axis.input_size,
                                               .output_size = axis.output_size,
                                               .scale = axis.scale,
                                               .roi_start = axis.roi_start,
                                               .roi_end = axis.roi_end},
                                    out);
}

// Keys' cubic convolution weights for the taps floor(x)-1 .. floor(x)+2 at fraction t.
std::vector<double> cubic_weights(double a, double t) {
  auto near = [a](double d) { return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0; };       // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a; };  // 1 < |d| < 2
  return {far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)};
}

AxisTaps taps_for(const ResizeAttributes& attributes, const AxisResize& axis, int64_t out) {
  AxisTaps result;
  if (!axis.resized) {
    result.taps.push_back({out, 1.0});
    return result;
  }
  const int64_t last = axis.input_size - 1;
  const double x = original_coordinate(attributes, axis, out);
  if (attributes.coordinate_transformation == CoordinateTransformation::kTfCropAndResize &&
      (x < 0.0 || x > static_cast<double>(last))) {
    result.extrapolate = true;
    return result;
  }
  auto clamp_index = [last](int64_t index) { return std::clamp<int64_t>(index, 0, last); };
  switch (attributes.mode) {
    case ResizeMode::kNearest:
      result.taps.push_back({clamp_index(resize_nearest_index(attributes.nearest_mode, x)), 1.0});
      break;
    case ResizeMode::kLinear: {
      const double clamped = std::clamp(x, 0.0, static_cast<double>(last));
      const int64_t base = static_cast<int64_t>(std::floor(clamped));
      const double t = clamped - static_cast<double>(base);
      result.taps.push_back({base, 1.0 - t});
      result.taps.push_back({clamp_index(base + 1), t});
      break;
    }
    case ResizeMode::kCubic: {
      const int64_t base = static_cast<int64_t>(std::floor(x));
      const std::vector<double> weights = cubic_weights(attributes.cubic_coeff_a, x - static_cast<double>(base));
      double total = 0.0;
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t index = base - 1 + k;
        double weight = weights[static_cast<size_t>(k)];
        // exclude_outside drops taps outside the input and renormalizes the rest.
        if (attributes.exclude_outside && (index < 0 || index > last)) weight = 0.0;
        total += weight;
        result.taps.push_back({clamp_index(index), weight});
      }
      if (attributes.exclude_outside && total != 0.0) {
        for (Tap& tap : result.taps) tap.weight /= total;
      }
      break;
    }
  }
  return result;
}

// Output sizes, scales and roi per axis from the scales or sizes input.
Result<std::vector<AxisResize>> plan_resize(const Node& node, const ResizeAttributes& attributes, const Tensor& x,
                                            const Tensor* roi, const Tensor* scales, const Tensor* sizes) {
  const int64_t rank = x.rank();
  std::vector<int64_t> axes;
  for (int64_t axis : attributes.axes) {
    QDQRT_ASSIGN_OR_RETURN(int64_t normalized, normalize_axis(node, axis, rank, "attribute 'axes' value"));
    axes.push_back(normalized);
  }
  if (std::set<int64_t>(axes.begin(), axes.end()).size() != axes.size()) {
    return invalid_model("{}: attribute 'axes' repeats an axis", node.describe());
  }
  if (axes.empty()) {
    for (int64_t axis = 0; axis < rank; ++axis) axes.push_back(axis);
  }
  const size_t count = axes.size();
  if ((scales == nullptr) == (sizes == nullptr)) {
    return invalid_model("{}: exactly one of 'scales' and 'sizes' must be given", node.describe());
  }
  std::vector<AxisResize> plan(static_cast<size_t>(rank));
  for (int64_t axis = 0; axis < rank; ++axis) {
    plan[static_cast<size_t>(axis)].input_size = plan[static_cast<size_t>(axis)].output_size = x.dim(axis);
  }
  if (attributes.coordinate_transformation == CoordinateTransformation::kTfCropAndResize) {
    if (roi == nullptr) return invalid_model("{}: tf_crop_and_resize needs the 'roi' input", node.describe());
    QDQRT_RETURN_IF_ERROR(expect_dtype(node, *roi, "roi", {DataType::kFloat, DataType::kDouble}));
    if (roi->numel() != static_cast<int64_t>(2 * count)) {
      return invalid_argument("{}: roi has {} values, expected {} (starts then ends)", node.describe(), roi->numel(),
                              2 * count);
    }
  }
  for (size_t i = 0; i < count; ++i) {
    AxisResize& axis = plan[static_cast<size_t>(axes[i])];
    axis.resized = true;
    if (attributes.coordinate_transformation == CoordinateTransformation::kTfCropAndResize) {
      axis.roi_start = roi->value_as_double(static_cast<int64_t>(i));
      axis.roi_end = roi->value_as_double(static_cast<int64_t>(i + count));
    }
  }
  if (scales != nullptr) {
    QDQRT_RETURN_IF_ERROR(expect_dtype(node, *scales, "scales", {DataType::kFloat}));
    if (scales->numel() != static_cast<int64_t>(count)) {
      return invalid_argument("{}: scales has {} values, expected {}", node.describe(), scales->numel(), count);
    }
    for (size_t i = 0; i < count; ++i) {
      AxisResize& axis = plan[static_cast<size_t>(axes[i])];
      axis.scale = static_cast<double>(scales->data<float>()[i]);
      if (!(axis.scale > 0.0)) {
        return invalid_argument("{}: scales[{}] must be positive, got {}", node.describe(), i, axis.scale);
      }
      axis.output_size = static_cast<int64_t>(std::floor(static_cast<double>(axis.input_size) * axis.scale));
    }
  } else {
    QDQRT_RETURN_IF_ERROR(expect_dtype(node, *sizes, "sizes", {DataType::kInt64}));
    if (sizes->numel() != static_cast<int64_t>(count)) {
      return invalid_argument("{}: sizes has {} values, expected {}", node.describe(), sizes->numel(), count);
    }
    std::vector<double> ratios;
    for (size_t i = 0; i < count; ++i) {
      const int64_t size = sizes->data<int64_t>()[i];
      const int64_t input_size = plan[static_cast<size_t>(axes[i])].input_size;
      if (size < 0 || input_size == 0) {
        return invalid_argument("{}: sizes[{}] = {} is invalid for input size {}", node.describe(), i, size, input_size);
      }
      ratios.push_back(static_cast<double>(size) / static_cast<double>(input_size));
    }
    for (size_t i = 0; i < count; ++i) {
      AxisResize& axis = plan[static_cast<size_t>(axes[i])];
      if (attributes.keep_aspect_ratio_policy == KeepAspectRatioPolicy::kStretch) {
        axis.scale = ratios[i];
        axis.output_size = sizes->data<int64_t>()[i];
      } else {
        // One scale for all listed axes; sizes are rounded half up from it.
        axis.scale = attributes.keep_aspect_ratio_policy == KeepAspectRatioPolicy::kNotLarger
                         ? *std::min_element(ratios.begin(), ratios.end())
                         : *std::max_element(ratios.begin(), ratios.end());
        axis.output_size = static_cast<int64_t>(std::floor(axis.scale * static_cast<double>(axis.input_size) + 0.5));
      }
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const AxisResize& axis = plan[static_cast<size_t>(axes[i])];
    if (axis.output_size < 1 || axis.scale <= 0.0) {
      return invalid_argument("{}: output size {} on axis {} (input {}) is not positive", node.describe(),
                              axis.output_size, axes[i], axis.input_size);
    }
  }
  return plan;
}

template <class T>
void resize_values(const ResizeAttributes& attributes, const Tensor& x, const std::vector<AxisResize>& plan, Tensor& y) {
  const size_t rank = plan.size();
  // Taps for every output coordinate of every axis.
  std::vector<std::vector<AxisTaps>> taps(rank);
  for (size_t axis = 0; axis < rank; ++axis) {
    for (int64_t out = 0; out < plan[axis].output_size; ++out) taps[axis].push_back(taps_for(attributes, plan[axis], out));
  }
  const std::vector<int64_t> in_strides = row_major_strides(x.shape());
  const T* in = x.data<T>();
  T* out = y.data<T>();
  std::vector<int64_t> index(rank, 0);
  std::vector<const AxisTaps*> element_taps(rank);
  for (int64_t flat = 0; flat < y.numel(); ++flat) {
    bool extrapolate = false;
    for (size_t axis = 0; axis < rank; ++axis) {
      element_taps[axis] = &taps[axis][static_cast<size_t>(index[axis])];
      extrapolate = extrapolate || element_taps[axis]->extrapolate;
    }
    double value = attributes.extrapolation_value;
    if (!extrapolate) {
      // Sum over the product of the axes' taps, axis by axis.
      auto accumulate = [&](auto&& self, size_t axis, int64_t offset, double weight) -> double {
        if (axis == rank) return weight * static_cast<double>(in[offset]);
        double sum = 0.0;
        for (const Tap& tap : element_taps[axis]->taps) {
          if (tap.weight == 0.0) continue;
          sum += self(self, axis + 1, offset + tap.index * in_strides[axis], weight * tap.weight);
        }
        return sum;
      };
      value = accumulate(accumulate, 0, 0, 1.0);
    }
    out[flat] = static_cast<T>(value);
    for (size_t axis = rank; axis-- > 0;) {
      if (++index[axis] < plan[axis].output_size) break;
      index[axis] = 0;
    }
  }
}

Status resize_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const ResizeAttributes* typed, typed_attributes<ResizeAttributes>(node));
  const ResizeAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "X"));
  const Tensor* roi = nullptr;
  const Tensor* scales = nullptr;
  const Tensor* sizes = nullptr;
  if (node.opset < 11) {
    QDQRT_ASSIGN_OR_RETURN(scales, required_input(node, inputs, 1, "scales"));
  } else {
    roi = optional_input(inputs, 1);
    scales = optional_input(inputs, 2);
    sizes = optional_input(inputs, 3);
    // Opsets 11-12 require a scales input and pass an empty tensor when sizes are used.
    if (scales != nullptr && scales->numel() == 0) scales = nullptr;
    if (roi != nullptr && roi->numel() == 0) roi = nullptr;
  }
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input X", {DataType::kFloat, DataType::kInt8, DataType::kUint8}));
  if (x->dtype() != DataType::kFloat && attributes.mode != ResizeMode::kNearest) {
    return unsupported("{}: {} input supports only mode 'nearest'", node.describe(), dtype_name(x->dtype()));
  }
  if (x->rank() == 0) return invalid_argument("{}: input X must have rank >= 1", node.describe());
  QDQRT_ASSIGN_OR_RETURN(std::vector<AxisResize> plan, plan_resize(node, attributes, *x, roi, scales, sizes));
  Shape output_shape;
  for (const AxisResize& axis : plan) output_shape.push_back(axis.output_size);
  Tensor y(x->dtype(), output_shape);
  switch (x->dtype()) {
    case DataType::kFloat: resize_values<float>(attributes, *x, plan, y); break;
    case DataType::kInt8: resize_values<int8_t>(attributes, *x, plan, y); break;
    default: resize_values<uint8_t>(attributes, *x, plan, y); break;
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

}  // namespace

void register_resize_kernels(KernelRegistry& registry) { registry.add("", "Resize", resize_kernel); }

}  // namespace qdqrt
