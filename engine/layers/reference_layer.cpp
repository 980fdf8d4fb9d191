// Filled in this session (see engine/layers/layer_families.h).
#include "engine/layer.h"
#include "engine/layers/layer_families.h"

namespace qdqrt::engine {

void register_reference_layer(LayerRegistry&) {}

Status lower_with_reference(const Node& node, BuildContext&) {
  return unsupported("no engine layer runs {} '{}' yet", node.op_type, node.name);
}

}  // namespace qdqrt::engine
