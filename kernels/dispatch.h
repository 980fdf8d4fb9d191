// The ONE place that maps an ISA to kernel implementations, per kernel family.
// Packing functions ask here which layout to produce; run functions dispatch on the ISA recorded
// in the packed data (so a packed engine records what was picked). Lower ISAs can be forced with
// set_max_isa() or QDQRT_MAX_ISA (see cpu_features.h).
#pragma once

#include "kernels/cpu_features.h"
#include "kernels/qdwconv_internal.h"
#include "kernels/qgemm_internal.h"

namespace qdqrt::kernels {

// Clamps a requested ISA to what this machine supports.
Isa usable_isa(Isa requested);

// --- GEMM / implicit-GEMM convolution family ---
const internal::GemmImplementation& gemm_implementation(Isa isa);

// --- Depthwise convolution family ---
const internal::DepthwiseImplementation& depthwise_implementation(Isa isa);

}  // namespace qdqrt::kernels
