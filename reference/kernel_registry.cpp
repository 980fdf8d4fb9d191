#include "reference/kernel_registry.h"

namespace qdqrt {

const KernelRegistry& KernelRegistry::instance() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_quantize_kernels(r);
    register_conv_kernels(r);
    register_matmul_kernels(r);
    register_pool_kernels(r);
    register_normalization_kernels(r);
    register_resize_kernels(r);
    register_elementwise_kernels(r);
    register_reduce_kernels(r);
    register_tensor_kernels(r);
    register_fused_kernels(r);
    return r;
  }();
  return registry;
}

ReferenceKernel KernelRegistry::find(const std::string& domain, const std::string& op_type) const {
  for (const Entry& entry : entries_) {
    if (entry.op_type == op_type && entry.domain == domain) return entry.kernel;
  }
  return nullptr;
}

void KernelRegistry::add(const std::string& domain, const std::string& op_type, ReferenceKernel kernel) {
  entries_.push_back({domain, op_type, kernel});
}

}  // namespace qdqrt
