#include "parser/op_registry.h"
#include "parser/ops/op_families.h"

namespace qdqrt {

void register_resize_ops(OpRegistry& registry) { (void)registry; }

}  // namespace qdqrt
