// Removes DequantizeLinear -> QuantizeLinear pairs whose parameters (dtype, scales, zero-points,
// axis) are equal: the Q's readers read the DQ's integer input directly. This also collapses
// Q1 -> DQ1 -> Q2 chains with equal parameters into Q1. Chains with different parameters are a
// requantization and stay (the fusion passes may turn DQ -> Q into one integer rescale later).
// Q -> DQ pairs between two float ops carry a QAT model's rounding and are never touched.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_remove_redundant_qdq_pass();

}  // namespace qdqrt::optimizer
