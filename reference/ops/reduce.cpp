#include "reference/kernel_registry.h"

namespace qdqrt {

void register_reduce_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace qdqrt
