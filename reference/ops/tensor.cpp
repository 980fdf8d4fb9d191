#include "reference/kernel_registry.h"

namespace qdqrt {

void register_tensor_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace qdqrt
