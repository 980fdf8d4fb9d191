// Reference kernels: a plain, readable implementation of every supported op with exact ONNX
// semantics. The oracle every optimized path is tested against. One register_*_kernels() per
// op family (reference/ops/<family>.cpp), all listed in kernel_registry.cpp.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt {

// inputs: one per node input, nullptr for an absent optional input.
// outputs: resized to node.outputs.size() by the caller; the kernel assigns each present output.
// Errors (bad shapes, dtypes, values) name the node: use node.describe().
using ReferenceKernel = Status (*)(const Node& node, std::span<const Tensor* const> inputs,
                                   std::vector<Tensor>& outputs);

class KernelRegistry {
 public:
  static const KernelRegistry& instance();
  ReferenceKernel find(const std::string& domain, const std::string& op_type) const;
  void add(const std::string& domain, const std::string& op_type, ReferenceKernel kernel);

 private:
  struct Entry {
    std::string domain;
    std::string op_type;
    ReferenceKernel kernel;
  };
  std::vector<Entry> entries_;
};

void register_quantize_kernels(KernelRegistry& registry);
void register_conv_kernels(KernelRegistry& registry);
void register_matmul_kernels(KernelRegistry& registry);
void register_pool_kernels(KernelRegistry& registry);
void register_normalization_kernels(KernelRegistry& registry);
void register_resize_kernels(KernelRegistry& registry);
void register_elementwise_kernels(KernelRegistry& registry);
void register_reduce_kernels(KernelRegistry& registry);
void register_tensor_kernels(KernelRegistry& registry);
void register_fused_kernels(KernelRegistry& registry);  // qdqrt domain (core/ops/fused_layers.h)

}  // namespace qdqrt
