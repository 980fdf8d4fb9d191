// Filled in this session (see engine/layers/layer_families.h).
#include "engine/layer.h"
#include "engine/layers/layer_families.h"

namespace qdqrt::engine {

void register_int8_layers(LayerRegistry&) {}

}  // namespace qdqrt::engine
