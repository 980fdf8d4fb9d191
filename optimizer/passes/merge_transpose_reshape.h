// A Transpose, a Reshape and a Transpose that together only reshape (every value lands where a
// row-major Reshape of the first input puts it) become that Reshape. MViT's attention pools
// transpose channels-last tokens [B, heads, T*H*W, C] to [B, heads, C, T*H*W] and reshape them to
// [B*heads, C, T, H, W]; the depthwise 3-D conv lowered channels-last (lower_conv3d) transposes
// that back to [B*heads, T, H, W, C], and its output leaves the same way round: four copies of
// every pooled tensor that move nothing. Dims are compared at two probe values of every dynamic
// dim (a batch of 1 hides where its axis goes); the Reshape keeps -1 for the one dim that depends
// on them. Fires only when the first Transpose and the Reshape have no other reader and are no
// graph output, and both Transposes have an explicit perm; the last node's output keeps its name.
// In the INT8 pipeline it runs after propagate_qdq, which moves the pools' Q/DQ pairs out from
// between the transposes.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_merge_transpose_reshape_pass();

}  // namespace qdqrt::optimizer
