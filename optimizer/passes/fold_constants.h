// Evaluates, with the reference kernels, every node whose inputs are all constants and replaces
// its outputs by initializers: Constant nodes, the Abs/ReduceMax/Div/Cast subgraphs QAT exports
// leave to compute weight scales, QuantizeLinear of a float weight (Q(w) -> DQ becomes
// DQ(w_int8)), and Shape of a value whose shape is static.
// Never folded: DequantizeLinear (DQ(w_int8) is what INT8 fusion reads), random ops, and nodes
// whose outputs would be much larger than their inputs (ConstantOfShape/Expand/Tile blow-ups),
// nor Expand/Tile/ConstantOfShape sized by a runtime value's shape (the engine runs them at any batch).
#pragma once

#include <cstddef>
#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

// Outputs above this size are folded only if they are at most twice their inputs' size.
inline constexpr size_t kMaxFoldedBlowupBytes = size_t{1} << 20;

std::unique_ptr<Pass> make_fold_constants_pass();

}  // namespace qdqrt::optimizer
