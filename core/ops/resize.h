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

// One axis of a Resize, for the coordinate rules the reference kernel and the engine's layers
// share (so their taps are the same bit for bit).
struct ResizeAxis {
  int64_t input_size = 1, output_size = 1;
  double scale = 1.0;                      // output / input along the axis
  double roi_start = 0.0, roi_end = 1.0;   // tf_crop_and_resize only
};
// The input coordinate of output index `out` (coordinate_transformation_mode), in double as ONNX's
// reference computes it; length_resized is scale * input size (with `sizes` the scale is size /
// input size, so it equals the integer size).
double resize_original_coordinate(CoordinateTransformation mode, const ResizeAxis& axis, int64_t out);
// The input index nearest_mode picks for coordinate `x` (before clamping to the axis).
int64_t resize_nearest_index(NearestMode mode, double x);

}  // namespace qdqrt
