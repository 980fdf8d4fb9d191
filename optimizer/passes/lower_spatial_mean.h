// Lowers a ReduceMean over every spatial axis of a float [N, C, spatial...] tensor (`x.mean([2, 3])`
// in MNASNet and ShuffleNetV2) to the GlobalAveragePool it is, followed by Flatten(axis=1) when
// keepdims=0 ([N, C, 1, 1] -> [N, C]). The engine has global-pool layers (FP32, and INT8 between
// Q/DQ: the pool fusion sees a GlobalAveragePool) but none for ReduceMean. Both compute the same
// double sum in the same order divided by the same count, so outputs are bit-identical.
//
// Other ReduceMeans stay: axes that include N or C or leave a spatial axis out, runtime axes, rank
// < 4 (a mean over the last axis of [B, T, D] is LayerNorm's, which fuse_layer_norm matches),
// non-float dtypes, and no axes (all of them, or noop_with_empty_axes).
#pragma once

#include <memory>
#include <string>

#include "core/graph.h"
#include "optimizer/pass.h"

namespace qdqrt::optimizer {

// Why the node is not a spatial mean ("" when it is one). Reads the graph only.
std::string spatial_mean_mismatch(const Graph& graph, const Node& node);

std::unique_ptr<Pass> make_lower_spatial_mean_pass();

}  // namespace qdqrt::optimizer
