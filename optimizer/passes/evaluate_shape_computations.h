// Evaluates the shape computations torch and TF exports leave in a graph (Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape, ConstantOfShape/Equal/Where -> Expand, Slice of a shape, Cast and
// arithmetic on int64 shape tensors) once the graph inputs have static shapes (the engine builds a
// model at its maximum batch).
//
// fold_constants folds Shape of a value with a static shape and every node whose inputs are
// constants, but a value computed from such a folded shape (a Reshape to a computed target) may
// have had no static shape at load, so neither had anything downstream of it, and their own Shape
// nodes could not fold. This pass alternates qdqrt's shape inference (core/shape_inference.h, which
// follows the elements of shape tensors) and fold_constants until nothing changes. A folded target
// holds the shapes the graph is built at, with its elements' expressions beside it
// (ValueInfo::elements), which tell the engine whether it follows the batch
// (engine/batch_tracking.h).
//
// Does nothing when every value already has a static shape or a graph input has none.
#pragma once

#include <memory>

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

std::unique_ptr<Pass> make_evaluate_shape_computations_pass();

}  // namespace qdqrt::optimizer
