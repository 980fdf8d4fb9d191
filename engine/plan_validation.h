// Checks an EnginePlan before its layers are bound (Engine::from_plan): a plan read from a file
// passed the checksum and the reader's structural checks (docs/engine_format.md), but a re-sealed
// file can still say anything. Two kinds of check, both independent of layer kinds, so a new kind
// needs nothing here:
//   - the tensors: dtypes, shapes, bytes, batch axes, arena placement, engine inputs and outputs;
//   - the plan as a program: every tensor a layer reads is an engine input or written by an earlier
//     layer, every engine output and every activation is written exactly once, the kernel a layer
//     records names no ISA above the plan's, and the arena and scratch sizes are no larger than the
//     tensors and layers need.
// What each layer's parameters and blobs mean is checked by its kind's bind (engine/layer.h).
#pragma once

#include "core/status.h"
#include "engine/plan.h"

namespace qdqrt::engine {

Status validate_plan(const EnginePlan& plan);

// The ISA a kernel name ends with ("qs8-vadd-minmax-avx512" -> 3 (avx512vnni level), "x8-copy" ->
// -1: none): the avx512 family names its F/BW/VBMI variants after the features, all within the
// avx512vnni level qdqrt dispatches.
int kernel_isa_level(const std::string& kernel);

}  // namespace qdqrt::engine
