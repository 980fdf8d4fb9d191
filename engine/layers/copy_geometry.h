// The geometry of a strided copy (engine/layers/strided_copy.cpp): which input axis each output
// axis walks, from which index and by which step. Transpose, Gather of a constant index, Expand,
// Slice and Split are all such copies, and so is one copy read through another (compose_copies):
// the plan rewrite engine/plan_compose_copies.h uses that to drop the first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "engine/param_codec.h"
#include "engine/layer_params.h"
#include "engine/plan.h"

namespace qdqrt::engine {

inline constexpr size_t kMaxCopyRank = 6;
// Per output axis, the step along the input axis it walks (>= 1); absent: every step 1.
inline constexpr IntsCodec kCopySteps{"copy.steps", 1, params::kMaxDim};

struct CopyGeometry {
  std::vector<int64_t> source_axes;  // per output axis; -1: broadcast (stride 0)
  std::vector<int64_t> starts;       // per input axis
  std::vector<int64_t> steps;        // per output axis; empty: all 1
  int64_t step(size_t output_axis) const { return steps.empty() ? 1 : steps[output_axis]; }
};

// What strided_copy's bind checks: every output dim fits the input, each input axis is walked at
// most once, batch axes walk batch axes (step 1, start 0), ranks 1..6.
bool fits(const CopyGeometry& geometry, const Shape& x, const BatchLayout& x_batch, const Shape& y,
          const BatchLayout& y_batch);

// The copy reading `first`'s input that gives what `second` reads out of `first`'s output:
// output axis m walks first's input axis first.source_axes[second.source_axes[m]], by the product
// of both steps, from first's start plus second's start times first's step.
CopyGeometry compose_copies(const CopyGeometry& first, const CopyGeometry& second);

// The geometry of a lowered copy layer reading `x` into `y`: strided_copy (source_axes, starts,
// copy.steps), the float/int8 transposes (perm), or a Reshape-like copy (plain_copy, int8_reshape)
// that only drops or adds dims of 1; nullopt for any other layer or params that do not fit.
std::optional<CopyGeometry> copy_geometry_of(const PlanLayer& layer, const PlanTensor& x, const PlanTensor& y);

}  // namespace qdqrt::engine
