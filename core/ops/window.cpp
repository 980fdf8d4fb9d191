#include "core/ops/window.h"

#include <algorithm>

namespace qdqrt {

Shape WindowGeometry::output_spatial() const {
  Shape shape;
  for (int64_t i = 3 - spatial_rank; i < 3; ++i) shape.push_back(output[i]);
  return shape;
}

int64_t window_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                           int64_t pad_end, bool ceil_mode) {
  const int64_t extent = dilation * (kernel - 1) + 1;  // the dilated kernel's size
  const int64_t span = input + pad_begin + pad_end - extent;
  if (span < 0) return -1;
  if (!ceil_mode) return span / stride + 1;
  int64_t output = (span + stride - 1) / stride + 1;
  if ((output - 1) * stride >= input + pad_begin) --output;
  return output;
}

Result<WindowGeometry> resolve_window(const Node& node, const Shape& input_spatial, const Shape& kernel,
                                      const WindowAttributes& attributes) {
  int64_t rank = static_cast<int64_t>(input_spatial.size());
  if (rank < 1 || rank > 3) {
    return unsupported("{}: {} spatial axes (input needs 1 to 3 spatial axes)", node.describe(), rank);
  }
  if (static_cast<int64_t>(kernel.size()) != rank) {
    return invalid_argument("{}: kernel has {} spatial axes, input has {}", node.describe(), kernel.size(), rank);
  }
  auto check_length = [&](const std::vector<int64_t>* values, int64_t expected, const char* key) -> Status {
    if (values == nullptr || values->empty() || static_cast<int64_t>(values->size()) == expected) return Status::ok();
    return invalid_argument("{}: attribute '{}' has {} values, the input needs {}", node.describe(), key,
                            values->size(), expected);
  };
  QDQRT_RETURN_IF_ERROR(check_length(attributes.strides, rank, "strides"));
  QDQRT_RETURN_IF_ERROR(check_length(attributes.dilations, rank, "dilations"));
  QDQRT_RETURN_IF_ERROR(check_length(attributes.pads, 2 * rank, "pads"));

  WindowGeometry g;
  g.spatial_rank = rank;
  int64_t offset = 3 - rank;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t axis = offset + i;
    size_t index = static_cast<size_t>(i);
    g.input[axis] = input_spatial[index];
    g.kernel[axis] = kernel[index];
    if (attributes.strides && !attributes.strides->empty()) g.strides[axis] = (*attributes.strides)[index];
    if (attributes.dilations && !attributes.dilations->empty()) g.dilations[axis] = (*attributes.dilations)[index];
    int64_t extent = g.dilations[axis] * (g.kernel[axis] - 1) + 1;  // the dilated kernel's size
    int64_t in = g.input[axis];
    int64_t stride = g.strides[axis];
    switch (attributes.auto_pad) {
      case AutoPad::kNotSet: {
        if (attributes.pads && !attributes.pads->empty()) {
          g.pads_begin[axis] = (*attributes.pads)[index];
          g.pads_end[axis] = (*attributes.pads)[index + static_cast<size_t>(rank)];
        }
        g.output[axis] = window_output_size(in, g.kernel[axis], stride, g.dilations[axis], g.pads_begin[axis],
                                            g.pads_end[axis], attributes.ceil_mode);
        if (g.output[axis] < 0) {
          return invalid_argument("{}: kernel extent {} exceeds padded input size {} on spatial axis {}",
                                  node.describe(), extent, in + g.pads_begin[axis] + g.pads_end[axis], i);
        }
        break;
      }
      case AutoPad::kValid: {
        // ONNX: ceil((in - extent + 1) / stride), which is the floor formula; ceil_mode does not apply.
        g.output[axis] = window_output_size(in, g.kernel[axis], stride, g.dilations[axis], 0, 0, false);
        if (g.output[axis] < 0) {
          return invalid_argument("{}: kernel extent {} exceeds input size {} on spatial axis {}", node.describe(),
                                  extent, in, i);
        }
        break;
      }
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        g.output[axis] = (in + stride - 1) / stride;
        int64_t total = std::max<int64_t>(0, (g.output[axis] - 1) * stride + extent - in);
        int64_t smaller = total / 2;
        g.pads_begin[axis] = attributes.auto_pad == AutoPad::kSameUpper ? smaller : total - smaller;
        g.pads_end[axis] = total - g.pads_begin[axis];
        break;
      }
    }
  }
  return g;
}

}  // namespace qdqrt
