#include "parser/op_registry.h"
#include "parser/ops/op_families.h"

namespace qdqrt {

void register_conv_ops(OpRegistry& registry) { (void)registry; }

}  // namespace qdqrt
