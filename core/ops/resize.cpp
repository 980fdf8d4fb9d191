#include "core/ops/resize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/op_registry.h"
#include "core/ops/op_families.h"
#include "core/ops/shape_function_helpers.h"

namespace qdqrt {

namespace {

// Maps an attribute string to its enum value; the error lists the accepted names.
template <class Enum>
Result<Enum> parse_choice(const AttributeReader& reader, const std::string& key, const std::string& default_value,
                          const std::vector<std::pair<const char*, Enum>>& choices) {
  QDQRT_ASSIGN_OR_RETURN(std::string text, reader.get_string(key, default_value));
  std::string names;
  for (const auto& [name, value] : choices) {
    if (text == name) return value;
    names += names.empty() ? name : std::string(", ") + name;
  }
  return reader.error(key, fmt::format("unknown value '{}' (expected one of {})", text, names));
}

Status check_defined_since(const AttributeReader& reader, const Node& node, const std::string& key,
                           int64_t since_opset) {
  if (reader.has(key) && node.opset < since_opset) {
    return reader.error(key, fmt::format("not defined before opset {} (node has opset {})", since_opset, node.opset));
  }
  return Status::ok();
}

Result<std::shared_ptr<const OpAttributes>> parse_resize(const Node& node) {
  AttributeReader reader(node);
  for (const char* key : {"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                          "extrapolation_value", "nearest_mode"}) {
    QDQRT_RETURN_IF_ERROR(check_defined_since(reader, node, key, 11));
  }
  for (const char* key : {"antialias", "axes", "keep_aspect_ratio_policy"}) {
    QDQRT_RETURN_IF_ERROR(check_defined_since(reader, node, key, 18));
  }
  ResizeAttributes attributes;
  if (node.opset < 11) {
    QDQRT_ASSIGN_OR_RETURN(attributes.mode, parse_choice<ResizeMode>(reader, "mode", "nearest",
                                                                     {{"nearest", ResizeMode::kNearest},
                                                                      {"linear", ResizeMode::kLinear}}));
    attributes.coordinate_transformation = CoordinateTransformation::kAsymmetric;
    attributes.nearest_mode = NearestMode::kFloor;
    return make_attributes(attributes);
  }
  QDQRT_ASSIGN_OR_RETURN(attributes.mode, parse_choice<ResizeMode>(reader, "mode", "nearest",
                                                                   {{"nearest", ResizeMode::kNearest},
                                                                    {"linear", ResizeMode::kLinear},
                                                                    {"cubic", ResizeMode::kCubic}}));
  std::vector<std::pair<const char*, CoordinateTransformation>> transformations = {
      {"half_pixel", CoordinateTransformation::kHalfPixel},
      {"pytorch_half_pixel", CoordinateTransformation::kPytorchHalfPixel},
      {"align_corners", CoordinateTransformation::kAlignCorners},
      {"asymmetric", CoordinateTransformation::kAsymmetric},
      {"tf_crop_and_resize", CoordinateTransformation::kTfCropAndResize},
  };
  // tf_half_pixel_for_nn is no longer listed from opset 18 on, but ONNX's own tests and reference
  // keep using it, so it is accepted at every opset; half_pixel_symmetric exists from opset 19.
  transformations.push_back({"tf_half_pixel_for_nn", CoordinateTransformation::kTfHalfPixelForNn});
  if (node.opset >= 19) transformations.push_back({"half_pixel_symmetric", CoordinateTransformation::kHalfPixelSymmetric});
  QDQRT_ASSIGN_OR_RETURN(attributes.coordinate_transformation,
                         parse_choice(reader, "coordinate_transformation_mode", "half_pixel", transformations));
  QDQRT_ASSIGN_OR_RETURN(attributes.nearest_mode,
                         parse_choice<NearestMode>(reader, "nearest_mode", "round_prefer_floor",
                                                   {{"round_prefer_floor", NearestMode::kRoundPreferFloor},
                                                    {"round_prefer_ceil", NearestMode::kRoundPreferCeil},
                                                    {"floor", NearestMode::kFloor},
                                                    {"ceil", NearestMode::kCeil}}));
  QDQRT_ASSIGN_OR_RETURN(attributes.cubic_coeff_a, reader.get_float("cubic_coeff_a", -0.75f));
  QDQRT_ASSIGN_OR_RETURN(int64_t exclude_outside, reader.get_int("exclude_outside", 0));
  if (exclude_outside != 0 && exclude_outside != 1) {
    return reader.error("exclude_outside", fmt::format("must be 0 or 1, got {}", exclude_outside));
  }
  attributes.exclude_outside = exclude_outside == 1;
  QDQRT_ASSIGN_OR_RETURN(attributes.extrapolation_value, reader.get_float("extrapolation_value", 0.0f));
  QDQRT_ASSIGN_OR_RETURN(int64_t antialias, reader.get_int("antialias", 0));
  if (antialias != 0) return unsupported("{}: attribute 'antialias': only 0 is supported, got {}", node.describe(), antialias);
  QDQRT_ASSIGN_OR_RETURN(attributes.axes, reader.get_ints("axes"));
  QDQRT_ASSIGN_OR_RETURN(attributes.keep_aspect_ratio_policy,
                         parse_choice<KeepAspectRatioPolicy>(reader, "keep_aspect_ratio_policy", "stretch",
                                                             {{"stretch", KeepAspectRatioPolicy::kStretch},
                                                              {"not_larger", KeepAspectRatioPolicy::kNotLarger},
                                                              {"not_smaller", KeepAspectRatioPolicy::kNotSmaller}}));
  return make_attributes(attributes);
}

// Largest resized dim (int64 arithmetic on it stays defined).
constexpr double kMaxResizedDim = 1e15;

// One axis scaled: floor(in * scale), the rule the kernels size their output by. The expression
// follows the input's where the scale is an integer (k * in) or one over one (in // k).
Dim scaled_dim(const Dim& in, double scale) {
  Dim out;
  if (in.is_static()) out.value = static_cast<int64_t>(std::floor(static_cast<double>(in.value) * scale));
  if (in.expr.is_constant() && in.is_static()) {
    out.expr = DimExpr::constant(out.value);
  } else if (scale >= 1.0 && scale == std::floor(scale) && scale < 1e9) {
    out.expr = DimExpr::constant(static_cast<int64_t>(scale)) * in.expr;
  } else if (scale > 0.0 && scale < 1.0) {
    const double inverse = 1.0 / scale;
    if (inverse == std::floor(inverse) && inverse < 1e9 && inverse * scale == 1.0) {
      out.expr = floor_div(in.expr, DimExpr::constant(static_cast<int64_t>(inverse)));
    }
  }
  return out;
}

// Resize: x's dims with the resized axes (attribute 'axes' from opset 18, else all) set from
// 'sizes' (its elements, so sizes computed from a Shape follow the batch) or scaled by the
// constant 'scales' (input 1 at opset 10, 2 after; sizes is input 3).
Status infer_resize(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<ResizeAttributes>(context, parse_resize));
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  const Node& node = context.node();
  std::vector<size_t> axes;
  for (int64_t axis : attributes->axes) {
    QDQRT_ASSIGN_OR_RETURN(size_t resolved, resolve_axis(context, axis, x.size(), "attribute 'axes' value"));
    if (std::find(axes.begin(), axes.end(), resolved) != axes.end()) {
      return context.error("attribute 'axes' repeats axis {}", resolved);
    }
    axes.push_back(resolved);
  }
  if (axes.empty()) {
    for (size_t i = 0; i < x.size(); ++i) axes.push_back(i);
  }
  const size_t scales_slot = node.opset < 11 ? 1 : 2;
  const Tensor* scales = context.input_constant(scales_slot);
  // An empty scales input (opset 11..12 need one beside sizes) is not given.
  const OptionalDims& scales_dims = context.input_dims(scales_slot);
  const bool empty_scales = (scales != nullptr && scales->numel() == 0) ||
                            (scales_dims && dims_product(*scales_dims).is_static() && dims_product(*scales_dims).value == 0);
  const bool has_scales = context.has_input(scales_slot) && !empty_scales;
  const bool has_sizes = node.opset >= 11 && context.has_input(3);
  if (has_scales == has_sizes) {
    return context.error("exactly one of 'scales' and 'sizes' must be given ({} are)", has_scales ? "both" : "neither");
  }
  Dims y = x;
  if (has_scales) {
    if (scales == nullptr) {
      return context.error("'scales' (input {}, '{}') is not a constant", scales_slot, node.input(scales_slot));
    }
    if (scales->dtype() != DataType::kFloat) return context.error("'scales' must be float");
    if (scales->numel() != static_cast<int64_t>(axes.size())) {
      return context.error("'scales' has {} values, the resized axes are {}", scales->numel(), axes.size());
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      const double scale = static_cast<double>(scales->data<float>()[i]);
      if (!(scale > 0.0)) return context.error("scales[{}] must be positive, got {}", i, scale);
      const Dim& in = x[axes[i]];
      if (in.is_static() && !(static_cast<double>(in.value) * scale < kMaxResizedDim)) {
        return context.error("scales[{}] = {} resizes axis {} (size {}) past {}", i, scale, axes[i], in.value,
                             kMaxResizedDim);
      }
      if (scale >= kMaxResizedDim) return context.error("scales[{}] = {} is too large", i, scale);
      y[axes[i]] = scaled_dim(x[axes[i]], scale);
    }
  } else {
    const OptionalDims& sizes = context.input_elements(3);
    if (!sizes) return context.error("'sizes' (input 3, '{}') is not a known constant or shape", node.input(3));
    if (sizes->size() != axes.size()) {
      return context.error("'sizes' has {} values, the resized axes are {}", sizes->size(), axes.size());
    }
    if (attributes->keep_aspect_ratio_policy == KeepAspectRatioPolicy::kStretch) {
      for (size_t i = 0; i < axes.size(); ++i) y[axes[i]] = (*sizes)[i];
    } else {
      // One scale for every resized axis (the smallest or largest ratio), sizes rounded half up
      // from it: values only, known where the sizes and the input's dims are.
      std::vector<double> ratios;
      bool constant = true;
      for (size_t i = 0; i < axes.size(); ++i) {
        std::optional<int64_t> size = (*sizes)[i].expr.constant_value();
        const Dim& in = x[axes[i]];
        if (!size || !in.is_static()) {
          return context.error("keep_aspect_ratio_policy needs known sizes and input dims");
        }
        if (*size < 0 || in.value == 0)
          return context.error("sizes[{}] = {} is invalid for input size {}", i, *size, in.value);
        ratios.push_back(static_cast<double>(*size) / static_cast<double>(in.value));
        constant = constant && in.expr.is_constant();
      }
      const double scale = attributes->keep_aspect_ratio_policy == KeepAspectRatioPolicy::kNotLarger
                               ? *std::min_element(ratios.begin(), ratios.end())
                               : *std::max_element(ratios.begin(), ratios.end());
      for (size_t axis : axes) {
        const double size = std::floor(scale * static_cast<double>(x[axis].value) + 0.5);
        if (!(size < kMaxResizedDim)) return context.error("output size {} on axis {} is too large", size, axis);
        Dim out;
        out.value = static_cast<int64_t>(size);
        if (constant) out.expr = DimExpr::constant(out.value);
        y[axis] = out;
      }
    }
  }
  for (size_t axis : axes) {
    const Dim& out = y[axis];
    const std::optional<int64_t> constant = out.expr.constant_value();
    if ((out.is_static() && out.value < 1) || (constant && *constant < 1)) {
      return context.error("output size {} on axis {} is not positive", constant ? *constant : out.value, axis);
    }
  }
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

}  // namespace

void register_resize_ops(OpRegistry& registry) {
  registry.add({.domain = "", .op_type = "Resize", .parse_attributes = parse_resize, .infer_shape = infer_resize});
}

double resize_original_coordinate(CoordinateTransformation mode, const ResizeAxis& axis, int64_t out) {
  const double x = static_cast<double>(out);
  const double in = static_cast<double>(axis.input_size);
  const double resized = axis.scale * in;
  switch (mode) {
    case CoordinateTransformation::kHalfPixel: return (x + 0.5) / axis.scale - 0.5;
    case CoordinateTransformation::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(axis.output_size) / resized;
      const double offset = in / 2.0 * (1.0 - adjustment);
      return offset + (x + 0.5) / axis.scale - 0.5;
    }
    case CoordinateTransformation::kPytorchHalfPixel: return resized > 1.0 ? (x + 0.5) / axis.scale - 0.5 : 0.0;
    case CoordinateTransformation::kAlignCorners: return resized == 1.0 ? 0.0 : x * (in - 1.0) / (resized - 1.0);
    case CoordinateTransformation::kAsymmetric: return x / axis.scale;
    case CoordinateTransformation::kTfHalfPixelForNn: return (x + 0.5) / axis.scale;
    case CoordinateTransformation::kTfCropAndResize:
      return resized == 1.0
                 ? 0.5 * (axis.roi_start + axis.roi_end) * (in - 1.0)
                 : axis.roi_start * (in - 1.0) + x * (axis.roi_end - axis.roi_start) * (in - 1.0) / (resized - 1.0);
  }
  return x;
}

int64_t resize_nearest_index(NearestMode mode, double x) {
  switch (mode) {
    case NearestMode::kRoundPreferFloor: return static_cast<int64_t>(std::ceil(x - 0.5));
    case NearestMode::kRoundPreferCeil: return static_cast<int64_t>(std::floor(x + 0.5));
    case NearestMode::kFloor: return static_cast<int64_t>(std::floor(x));
    case NearestMode::kCeil: return static_cast<int64_t>(std::ceil(x));
  }
  return 0;
}

}  // namespace qdqrt
