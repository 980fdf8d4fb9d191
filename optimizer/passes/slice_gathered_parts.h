// Rewrites the parts of a packed value that Gathers take after a Reshape and Transpose into Slices
// of the packed value's last axis: the head split of timm-style and Swin attention
//
//   qkv = Linear(x) [..., 3 * H * D];  t = Transpose(Reshape(qkv, [..., 3, H, D]), perm)
//   q, k, v = Gather(t, 0 / 1 / 2, axis a)          (perm[a] the Reshape's "3" axis)
//
// becomes, per Gather, Transpose(Reshape(Slice(qkv, [i N/3, (i+1) N/3), axis -1), [..., H, D]), perm
// without a): each part copied once (a third of the packed value) instead of the whole Transpose
// and then each Gather's third, and split_sliced_projection, after it, turns the Slices of a
// projection into one projection per part, which leaves only the per-part Transpose. Same values.
//
// Fires only when: every reader of the Transpose is a Gather of one constant scalar index on the
// same axis, that axis comes from the Reshape's first split of the packed value's last axis (the
// Reshape keeps the leading dims and splits N into static dims, the first G), the Reshape and the
// packed value have no other reader and no value in the chain is a graph output. Runs after
// evaluate_shape_computations (the Reshape's shape is a constant by then).
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_slice_gathered_parts_pass();

}  // namespace qdqrt::optimizer
