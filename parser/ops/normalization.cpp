#include "parser/op_registry.h"
#include "parser/ops/op_families.h"

namespace qdqrt {

void register_normalization_ops(OpRegistry& registry) { (void)registry; }

}  // namespace qdqrt
