// Typed attributes of Conv and ConvTranspose (also used by QLinearConv and ConvInteger, which
// share Conv's attribute set). Empty vectors mean "use the ONNX default", resolved against the
// actual input/weight shapes by the kernel (kernel_shape from the weight, strides/dilations 1,
// pads 0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };
const char* auto_pad_name(AutoPad auto_pad);

struct ConvAttributes : OpAttributes {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> dilations;     // per spatial axis; empty = all 1
  int64_t group = 1;
  std::vector<int64_t> kernel_shape;  // per spatial axis; empty = from the weight
  std::vector<int64_t> pads;          // [x1_begin, x2_begin, ..., x1_end, x2_end, ...]; empty = 0
  std::vector<int64_t> strides;       // per spatial axis; empty = all 1
};

struct ConvTransposeAttributes : ConvAttributes {
  std::vector<int64_t> output_padding;  // per spatial axis; empty = 0
  std::vector<int64_t> output_shape;    // spatial dims (or N, C, spatial...); empty = computed
};

// Reads auto_pad ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID").
Result<AutoPad> parse_auto_pad(const Node& node);
// Parses Conv's attribute set from any op that carries it (Conv, QLinearConv, ConvInteger).
Result<ConvAttributes> parse_conv_attribute_set(const Node& node);

}  // namespace qdqrt
