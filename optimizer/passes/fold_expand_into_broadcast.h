// Drops an Expand whose every reader is a float Add/Sub/Mul/Div whose other operand already has the
// Expand's output dims: the binary op broadcasts the Expand's input itself, to the same dims and
// the same values. torch exports F.normalize(x, dim=-1) as x / ReduceL2(x).clamp(eps).expand_as(x):
// Swin-V2's cosine attention expanded each query's and key's norm over the head's 32 values
// (a copy of the whole tensor per norm, 24 per Swin-V2-T inference) for a Div that reads them back;
// the Div now takes one norm per row.
//
// Must not fire: an Expand that is a graph output, one read by another op (or by a binary op as
// both operands, or whose other operand is smaller than the Expand's output: the result's dims
// would change), a non-float Expand, or shapes that are not known.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_fold_expand_into_broadcast_pass();

}  // namespace qdqrt::optimizer
