// Copies read through copies. A copy layer (strided_copy, the float/int8 Transpose layers, or a
// Reshape-like copy that only drops or adds dims of 1: engine/layers/copy_geometry.h) whose output
// only copy layers read, and at most once over (their outputs together no larger than it), goes:
// each reader becomes one strided_copy of the writer's input walking both geometries at once
// (compose_copies), and the writer's output leaves the plan. A Reshape-like copy read by another is
// left to the alias rewrite (both become free views there).
// Attention's head split writes [B, T, 3, H, D] -> [B, H, 3, T, D] and then reads q, k and v out of
// it; read through, the three parts are copied once instead of twice. Both tensors between must be
// plain activations (not engine outputs), every geometry must fit (the batch stays on batch axes).
// Run by build_plan before alias_in_place (engine/plan_aliases.h), with BuildOptions::share_buffers.
#pragma once

#include "core/status.h"
#include "engine/plan.h"

namespace qdqrt::engine {

// Rewrites `plan` (layers and tensors, before plan_memory); returns how many copy layers it removed.
Result<int> compose_copies_in_plan(EnginePlan& plan);

}  // namespace qdqrt::engine
