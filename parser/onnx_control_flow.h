// Control flow whose outcome is fixed once the model is loaded, replaced by the ops it runs, before
// the graph is converted (qdqrt's Graph has no subgraphs). torch 1.13's exporter writes such
// flow for tensor_split with a list of indices (a Loop over the split points building a tensor
// sequence: MViT's attention pooling) and for a squeeze of a dim whose size it does not know
// (an If on the dim being 1):
//   - Loop with a constant trip count (at most kMaxLoopTrips), a condition that stays true and no
//     scan outputs: unrolled, the body's nodes copied once per iteration (the iteration number a
//     constant, the carried values wired from one copy to the next);
//   - tensor sequences built by SequenceEmpty / SequenceConstruct / SequenceInsert (appending, or
//     at a constant position): SequenceAt at a constant position becomes an Identity of the
//     element, SequenceLength a constant, ConcatFromSequence a Concat (Unsqueezes first for
//     new_axis = 1); the sequence ops go when nothing else reads them;
//   - If whose condition is computed from constants and the dims the file fixes (the loader's
//     and qdqrt's shape inference on the model cut before the Ifs, then Equal/Not/Cast/comparisons
//     evaluated here): the taken branch's nodes copied into the graph.
// What cannot be resolved stays, and the loader reports the op as unsupported.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::onnx_detail {

// A Loop unrolled more often than this stays a Loop (and is reported unsupported).
inline constexpr int64_t kMaxLoopTrips = 1024;
// Nodes the unrolling and branch inlining may add to one graph in all.
inline constexpr int64_t kMaxInlinedNodes = 200000;

// True when the graph has a Loop, an If or a tensor-sequence op.
bool has_control_flow(const onnx::GraphProto& graph);

// Loads a model as the caller does (checks, inference), at the input shapes the file declares.
using LoadForShapes = std::function<Result<Graph>(const onnx::ModelProto& model)>;

// Resolves what it can in `model` (see above). The If conditions are evaluated on the model cut
// before the Ifs, loaded by `load_for_shapes` at the declared input shapes: a condition known
// there holds at any shape; one that depends on a dynamic dim stays (an engine built at a given
// batch may run at others). Unresolvable nodes are left as they are.
Status inline_static_control_flow(onnx::ModelProto& model, const LoadForShapes& load_for_shapes);

}  // namespace qdqrt::onnx_detail
