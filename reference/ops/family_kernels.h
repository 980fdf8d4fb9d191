// Reference kernels registered by a family file rather than kernel_registry.cpp: ScatterND
// (core/ops/scatter.h, with the tensor family) and Einsum (core/ops/einsum.h, with MatMul).
#pragma once

namespace qdqrt {

class KernelRegistry;

void register_scatter_kernels(KernelRegistry& registry);  // reference/ops/scatter.cpp
void register_einsum_kernels(KernelRegistry& registry);   // reference/ops/einsum.cpp

}  // namespace qdqrt
