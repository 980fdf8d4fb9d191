// A range of input shapes (TensorRT's optimization profile): per input, the smallest, the
// optimized-for and the largest shape. Used by engine/profiles.h (RangeEngine) and by the engine
// file, which records a range engine's profiles.
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"

namespace qdqrt::engine {

struct ShapeRange {
  Shape min, opt, max;
  bool operator==(const ShapeRange&) const = default;
};
// Input name -> its range. Inputs the model declares fully static need no entry.
using ShapeProfile = std::map<std::string, ShapeRange>;

// Profiles an engine takes at most (an engine file holding more is refused).
inline constexpr size_t kMaxProfiles = 64;

}  // namespace qdqrt::engine
