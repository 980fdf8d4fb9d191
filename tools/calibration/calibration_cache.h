// TensorRT's INT8 calibration cache (the text an IInt8Calibrator writes with writeCalibrationCache):
//   TRT-8601-EntropyCalibration2
//   input: 3c010a14
//   conv1_output: 3d8e4ac5
// one "tensor: scale" line per tensor, the scale (amax / 127) as the 8 hex digits of its float32 bits.
#pragma once

#include <map>
#include <string>

#include "core/status.h"
#include "tools/calibration/histogram.h"

namespace qdqrt::calibration {

inline constexpr const char* kTensorRTCacheVersion = "TRT-8601";

// "EntropyCalibration2" for entropy (and percentile/mse, which TensorRT has no name for),
// "MinMaxCalibration" for max.
const char* tensorrt_algorithm_name(const MethodSpec& method);

// scales: tensor -> float32 scale, written in name order.
std::string format_calibration_cache(const std::map<std::string, float>& scales, const MethodSpec& method);
Status write_calibration_cache(const std::string& path, const std::map<std::string, float>& scales,
                               const MethodSpec& method);

// The reverse, for `qdqrt exec --calib`: tensor -> scale from a cache written by TensorRT or by
// `qdqrt calibrate`. The first line must name a calibration ("TRT-<version>-<algorithm>"); a tensor
// name may hold ':' (the scale follows the last ": "). Errors name the line.
Result<std::map<std::string, float>> parse_calibration_cache(const std::string& text);
Result<std::map<std::string, float>> read_calibration_cache(const std::string& path);

}  // namespace qdqrt::calibration
