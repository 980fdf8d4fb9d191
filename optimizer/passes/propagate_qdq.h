// Grows INT8 regions the way TensorRT does, by moving DequantizeLinear forward and
// QuantizeLinear backward through ops that commute with them:
//  - DQ -> op  becomes  op(int8) -> DQ, and  op -> Q  becomes  Q -> op(int8), for MaxPool,
//    Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Slice, Gather (constant indices) and Pad
//    (edge/reflect, or constant whose float value 0 becomes the zero-point);
//  - Concat whose inputs all come from DQs with equal per-tensor parameters -> Concat(int8) -> DQ;
//  - DQ(int8 constant weight) -> Transpose (per-axis: the axis follows the permutation) or,
//    per-tensor, another of the ops above with constant inputs: evaluated on the int8 constant;
//  - Relu/Clip directly before a Q is dropped when the Q's saturation already clamps the same
//    way (Q(min) is the dtype's minimum, e.g. Relu before uint8 with zero-point 0).
// A Q does not move above a Slice or Gather whose input has other readers (it would quantize all
// of the input for the part picked). Only per-tensor constant parameters move (per-channel
// activation scales stay put). A DQ read
// by several nodes is duplicated for the reader it moves past (the others keep the original), as
// ONNX Runtime's EnsureUniqueDQForNodeUnit does: one quantized value then has one DQ per unit.
#pragma once

#include <memory>

#include "core/graph.h"
#include "optimizer/pass.h"

namespace qdqrt::optimizer {

// The backward rule alone, for passes that add a Q after this pass has run: moves the
// QuantizeLinear graph.nodes[q_index] above the op producing its input when they commute (and the
// input has no other reader). True when it moved; the Q keeps its index, the op's output becomes
// the Q's output.
bool move_quantize_above_producer(Graph& graph, size_t q_index);

std::unique_ptr<Pass> make_propagate_qdq_pass();

}  // namespace qdqrt::optimizer
