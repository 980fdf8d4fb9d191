#include "reference/ops/convolution.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace qdqrt::reference {

Result<ConvPlan> plan_conv(const Node& node, const Shape& x_shape, const Shape& w_shape,
                           const ConvAttributes& attributes) {
  if (x_shape.size() < 3) {
    return invalid_argument("{}: input X must have rank >= 3 ([N, C, spatial...]), got shape {}", node.describe(),
                            shape_to_string(x_shape));
  }
  if (w_shape.size() != x_shape.size()) {
    return invalid_argument("{}: weight W has shape {}, expected rank {} like X {}", node.describe(),
                            shape_to_string(w_shape), x_shape.size(), shape_to_string(x_shape));
  }
  ConvPlan plan;
  plan.batch = x_shape[0];
  plan.in_channels = x_shape[1];
  plan.out_channels = w_shape[0];
  plan.group = attributes.group;
  if (plan.in_channels % plan.group != 0 || plan.out_channels % plan.group != 0) {
    return invalid_argument("{}: group {} does not divide input channels {} and output channels {}", node.describe(),
                            plan.group, plan.in_channels, plan.out_channels);
  }
  if (w_shape[1] * plan.group != plan.in_channels) {
    return invalid_argument("{}: weight W {} expects {} input channels per group, X {} has {} channels in {} groups",
                            node.describe(), shape_to_string(w_shape), w_shape[1], shape_to_string(x_shape),
                            plan.in_channels, plan.group);
  }
  Shape input_spatial(x_shape.begin() + 2, x_shape.end());
  Shape kernel(w_shape.begin() + 2, w_shape.end());
  if (!attributes.kernel_shape.empty() && attributes.kernel_shape != kernel) {
    return invalid_argument("{}: attribute kernel_shape [{}] does not match weight W shape {}", node.describe(),
                            fmt::join(attributes.kernel_shape, ", "), shape_to_string(w_shape));
  }
  WindowAttributes window{.auto_pad = attributes.auto_pad,
                          .strides = &attributes.strides,
                          .dilations = &attributes.dilations,
                          .pads = &attributes.pads,
                          .ceil_mode = false};
  QDQRT_ASSIGN_OR_RETURN(plan.geometry, resolve_window(node, input_spatial, kernel, window));
  plan.output_shape = {plan.batch, plan.out_channels};
  for (int64_t dim : plan.geometry.output_spatial()) plan.output_shape.push_back(dim);
  return plan;
}

}  // namespace qdqrt::reference
