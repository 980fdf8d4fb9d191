// Moves the QuantizeLinear after a float Concat onto the Concat's inputs: Concat(a, b) -> Q
// becomes Concat(DQ(Q(a)), DQ(Q(b))) -> Q, all with the output Q's parameters, which the concat
// fusion turns into a QConcat copying 8-bit inputs (channels-last inside an INT8 region), and each
// Q(a) the conv writing `a` takes into its epilogue (a new Q moves above the Reshapes/Transposes
// between `a` and the layer writing it, as propagate_qdq moves Qs, where nothing else reads
// what they move: a lowered 3-D conv's Reshape back to 5-D). pytorch-quantization-style models quantize
// only conv inputs, so SqueezeNet's Fire modules and YOLO's CSP blocks concatenated float conv
// outputs (reordered to NCHW) and quantized the result: now the convs write the 8-bit codes.
//
// Exact: Q is elementwise with per-tensor parameters, so Q(concat(a, b)) == concat(Q(a), Q(b)),
// and DQ then Q with equal parameters gives back the same codes. Fires when the Concat's only
// reader is one per-tensor 8-bit Q and every input is float from a node other than a
// DequantizeLinear, or a DequantizeLinear with the Q's parameters (a copy in the QConcat). Not
// when the Concat has another reader (a float op, a graph output), per-axis parameters, a constant
// input (its Q would be a runtime node), an input
// dequantized with other parameters (the QConcat would requantize it, a different rounding from
// Q(DQ(x))), or a float input that another Q with other parameters reads (the layer writing it
// would write one quantization and requantize the other). An input that already has a Q reader
// with equal parameters reuses that Q.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_quantize_concat_inputs_pass();

}  // namespace qdqrt::optimizer
