// The float pipeline's pass (OptimizeOptions::float_only): removes the fake quantization of a
// QDQ model so that it runs all in float, for comparison with the INT8 engine.
//   - QuantizeLinear -> DequantizeLinear with equal parameters on a float activation: the DQ's
//     readers read the Q's float input (the Q goes once nothing else reads it);
//   - DequantizeLinear of a constant (a weight, an int32 bias): folded to a float constant, so the
//     weights keep the rounding the QAT model trained with.
// Left alone: a DQ of a graph input or a Q feeding a graph output (real integer interfaces), and
// Q -> DQ with different parameters (a rescale, not an identity).
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_remove_fake_quantization_pass();

}  // namespace qdqrt::optimizer
