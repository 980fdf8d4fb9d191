// Removes a Pad whose pads are all zero: its output is its input, in every mode. torchvision's
// Swin pads each stage's map to a multiple of the window (F.pad with (7 - W % 7) % 7, computed from
// the input's Shape), which at 224x224 is zero on every stage: evaluate_shape_computations makes
// those pads constant zeros, and the engine would copy the map for nothing (15 copies, 0.15 ms per
// Swin-T inference at 1 thread). Readers of the output read the input; a graph output keeps its name.
//
// Removes only pads that are constants of zeros whose value does not depend on the batch (a pads
// tensor computed from runtime shapes counts only when every element's expression is a constant),
// and keeps a Pad that links a graph input or initializer straight to a graph output.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_remove_empty_pads_pass();

}  // namespace qdqrt::optimizer
