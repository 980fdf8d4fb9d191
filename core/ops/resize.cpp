#include "core/ops/resize.h"

#include <fmt/format.h>

#include <utility>

#include "core/op_registry.h"
#include "core/ops/op_families.h"

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

}  // namespace

void register_resize_ops(OpRegistry& registry) {
  registry.add({.domain = "", .op_type = "Resize", .parse_attributes = parse_resize});
}

}  // namespace qdqrt
