// Merges the groups of a grouped INT8 convolution with narrow groups (8-16 channels in and out per
// group) into wider ones, filling the weights between the merged groups with zeros: a QConv of G
// groups becomes one of G / s groups whose weights are block-diagonal ([O][s * I/G][kh][kw]).
// The products of the added zeros are exact zeros in the int32 accumulators, so every output is
// unchanged bit for bit; the layer does s times the multiply-adds, on tiles it fills. On
// AMX-INT8 machines that wins: a group of 8 or 16 output channels leaves most of a GEMM tile
// empty and pays the tap gather for 8-16 bytes of depth (RegNetY-400MF's 3x3 convolutions of 8
// channels per group, RegNetX-400MF's of 16: docs/decisions.md has the measurements).
//
// s is the largest divisor of G with s * (O/G) <= 64 output channels per merged group; when G
// has no such divisor above 1 (a prime count of groups) and O <= 128, the whole convolution
// becomes one group. Groups the grouped form takes as they are (uint8 activations, a multiple of
// 4 input channels: kernels/conv/qconv_grouped.h, which reads the input in place instead of
// gathering it) merge only while s * (O/G) <= 16, its tile's columns, and otherwise stay: RegNetY's
// 26 groups of 8 become 13 of 16, RegNetX's groups of 16 stay. It does not fire on other ISAs (not measured there), on depthwise
// convolutions, on groups outside 8-16 channels, or on weights that are not int8 with
// zero-point 0 (an added zero must be a real zero).
#pragma once

#include <memory>
#include <string>

#include "core/graph.h"
#include "kernels/cpu_features.h"
#include "optimizer/pass.h"

namespace qdqrt::optimizer {

// What the selector found for one QConv: the groups per merged group (0: it does not fire, and
// reason says why).
struct GroupMerge {
  int64_t merged_groups = 0;  // s
  std::string reason;
};

// Reads the graph only. `conv` indexes a qdqrt.QConv node; `isa` is the engine's target ISA.
GroupMerge select_group_merge(const Graph& graph, int conv, kernels::Isa isa);

std::unique_ptr<Pass> make_densify_grouped_conv_pass();

}  // namespace qdqrt::optimizer
