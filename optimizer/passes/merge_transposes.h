// Merges a Transpose of a Transpose into one Transpose (perm[i] = first[second[i]]), or removes
// both when they cancel: attention's K part, transposed to [B, heads, T, D] by the head split
// (slice_gathered_parts) and again to [B, heads, D, T] for Q x K^T, is then copied once instead of
// twice. Fires only when the inner Transpose has no other reader and is no graph output, and
// both have an explicit perm; a graph output keeps its name.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_merge_transposes_pass();

}  // namespace qdqrt::optimizer
