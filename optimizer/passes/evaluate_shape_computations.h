// Evaluates the shape computations torch and TF exports leave in a graph (Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape, ConstantOfShape/Equal/Where -> Expand, Slice of a shape, Cast and
// arithmetic on int64 shape tensors) once the graph inputs have static shapes (the engine loads a
// model at its maximum batch, and again at the probe batch).
//
// fold_constants folds Shape of a value with a static shape and every node whose inputs are
// constants, but a value computed from such a folded shape (a Reshape to a computed target) had
// no static shape at load, so neither had anything downstream of it, and their own Shape nodes
// could not fold. This pass alternates the two until nothing changes: fold (fold_constants), then
// infer the shapes still unknown with ONNX's shape inference, now that the shape inputs are
// constants. The folded targets hold the batch the graph was loaded at; the engine's batch
// tracking sees them differ at the probe batch (engine/batch_tracking.h).
//
// Does nothing when every value already has a static shape or a graph input has none.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_evaluate_shape_computations_pass();

}  // namespace qdqrt::optimizer
