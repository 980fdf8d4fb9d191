// Typed attributes of Resize (opsets 10..21). Opset 10 has only `mode`; its coordinates behave
// as asymmetric with floor rounding for nearest, which the parser writes into the fields.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"

namespace qdqrt {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class CoordinateTransformation {
  kHalfPixel,
  kHalfPixelSymmetric,  // opset 19+
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class KeepAspectRatioPolicy { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttributes : OpAttributes {
  ResizeMode mode = ResizeMode::kNearest;
  CoordinateTransformation coordinate_transformation = CoordinateTransformation::kHalfPixel;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation_value = 0.0f;
  std::vector<int64_t> axes;  // opset 18+; empty = all axes (may be negative)
  KeepAspectRatioPolicy keep_aspect_ratio_policy = KeepAspectRatioPolicy::kStretch;  // opset 18+
};

}  // namespace qdqrt
