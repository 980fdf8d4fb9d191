// Folds a constant-zero Pad of the spatial axes into the AveragePool that reads it: the pool reads
// the Pad's input with the pads added to its own and count_include_pad=1. torch.onnx writes this
// Pad for every avg_pool2d with padding and count_include_pad=True (Inception-v3's pool branches)
// and an all-zero one before DenseNet's transition pools; the engine has pool layers (FP32, and
// INT8 between Q/DQ) but none for Pad.
//
// Averaging zeros the Pad wrote over a window without pads equals averaging with the pads counted
// (count_include_pad=1): same taps, same sum, same divisor. It does not fold when that is not so:
// a non-zero value or another mode (reflect, edge, wrap), a pad of N or C or a negative pad (a
// crop), runtime pads, a pool whose own pads are excluded from its count (count_include_pad=0
// with pads), auto_pad SAME_*, or ceil_mode windows the folded pool would place differently.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "optimizer/graph_utils.h"
#include "optimizer/pass.h"

namespace qdqrt::optimizer {

// What the selector found for one AveragePool: the fold, or why not (empty reason: its input is
// not a Pad).
struct PadPoolFold {
  std::string pad_input;              // the value the pool reads instead
  std::vector<int64_t> pads;          // the pool's new pads [x1_begin, ..., x1_end, ...]
  bool count_include_pad = false;     // the pool's new count_include_pad
};
struct PadPoolSelection {
  std::optional<PadPoolFold> fold;
  std::string reason;
};

// Reads the graph only. `pool` indexes an AveragePool node.
PadPoolSelection select_pad_pool_fold(const Graph& graph, const ValueIndex& index, int pool);

std::unique_ptr<Pass> make_fold_pad_into_pool_pass();

}  // namespace qdqrt::optimizer
