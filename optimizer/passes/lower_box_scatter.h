// Rewrites a ScatterND that overwrites a box of its data (indices that enumerate every position of
// data[o0:o0+u0, ..., o(k-1):o(k-1)+u(k-1)], in order) into Slices of the data around the box and
// Concats that put the updates in its place: layers the engine runs natively (and may write in
// place), where ScatterND has none. torch exports in-place slice writes this way: MViT-V2's
// `attn[:, :, 1:, 1:] += rel_pos` and its residual pooling's `x[:, :, 1:, :] += q[:, :, 1:, :]`
// become ScatterNDs whose indices are meshgrids: Concat(last axis) of Unsqueeze(last axis) of
// Expand(Range along axis j, the box's shape), the Ranges and the shape constants once the shapes
// are evaluated (the Expands stay runtime nodes: their shape follows the batch). Constant indices
// are checked position by position.
//
// The nested Concats: for each axis j the box does not span whole, from the last, the part built so
// far (box on the axes before j, whole on j's and after) goes between the data before and after
// the box on axis j, sliced to the box on the axes before j.
//
// Must not fire: reduction other than none, indices that are neither a constant nor such a
// meshgrid, not a box (order, gaps, repeats, out of range) or not of rank k + 1, updates of another shape, data of unknown
// shape, and a box that spans part of a dim that changes with the engine's shapes (the batch, a
// dynamic dim), or all of one with indices from the file (not computed from the data's shape:
// they would not follow it).
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_lower_box_scatter_pass();

}  // namespace qdqrt::optimizer
