// The INT8 layer family: the qdqrt-domain fused layers of core/ops/fused_layers.h and the plain
// ONNX ops the optimizer leaves on int8/uint8 tensors (MaxPool, Reshape/Flatten/Squeeze/Unsqueeze,
// Transpose, Relu). One file per group (engine/layers/int8_*.cpp); shared helpers in int8_common.h.
// Every lowering has an `accepts` predicate: nodes with attribute values the kernels do not cover
// (per-channel activation zero-points, 1-D/3-D convolutions, float-output QAdd, ...) fall through
// to the next lowering of their op type, finally the reference layer.
#include "engine/layer.h"
#include "engine/layers/int8_common.h"
#include "engine/layers/layer_families.h"

namespace qdqrt::engine {

void register_int8_layers(LayerRegistry& registry) {
  int8::register_int8_conv_layers(registry);
  int8::register_int8_matmul_layers(registry);
  int8::register_int8_elementwise_layers(registry);
  int8::register_int8_pool_layers(registry);
  int8::register_int8_shape_layers(registry);
}

}  // namespace qdqrt::engine
