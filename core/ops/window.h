// The window of Conv and the pools: kernel, strides, dilations, pads and auto_pad resolved into
// output sizes and explicit pads. One resolver for every stage that needs it: the reference
// kernels (reference/ops/conv.cpp, pool.cpp, quantize.cpp), the float engine layers
// (engine/layers/float_conv/, float_pool.cpp) and the INT8 ones (engine/layers/int8_common.cpp),
// so they agree on every output size.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/ops/conv.h"
#include "core/status.h"

namespace qdqrt {

// Output sizes and pads of a sliding window over up to 3 spatial axes. Fewer spatial axes are
// padded at the front with size-1 axes (kernel 1, stride 1, no pads), so kernels can loop over
// exactly three.
struct WindowGeometry {
  int64_t spatial_rank = 0;  // the real number of spatial axes (1..3)
  int64_t input[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t strides[3] = {1, 1, 1};
  int64_t dilations[3] = {1, 1, 1};
  int64_t pads_begin[3] = {0, 0, 0};
  int64_t pads_end[3] = {0, 0, 0};
  int64_t output[3] = {1, 1, 1};
  // The real output spatial dims.
  Shape output_spatial() const;
};

// The window attributes as ONNX gives them (Conv, MaxPool, AveragePool and their fused forms).
struct WindowAttributes {
  AutoPad auto_pad = AutoPad::kNotSet;
  const std::vector<int64_t>* strides = nullptr;    // empty/null = 1
  const std::vector<int64_t>* dilations = nullptr;  // empty/null = 1
  const std::vector<int64_t>* pads = nullptr;       // empty/null = 0
  bool ceil_mode = false;                           // pools only
};

// input_spatial: the spatial dims of the input; kernel: the kernel extent per spatial axis.
// Errors name the node.
Result<WindowGeometry> resolve_window(const Node& node, const Shape& input_spatial, const Shape& kernel,
                                      const WindowAttributes& attributes);

// Window positions along one axis with explicit pads (floor, or ONNX's ceil_mode, where the last
// window must start inside the input or its begin padding); -1 when the dilated kernel is larger
// than the padded input.
int64_t window_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                           int64_t pad_end, bool ceil_mode);

}  // namespace qdqrt
