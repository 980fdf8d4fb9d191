#include "kernels/elementwise/broadcast.h"

#include <algorithm>

namespace qdqrt::kernels {

void BroadcastPlan::row_offsets(size_t row, size_t& a_offset, size_t& b_offset) const {
  a_offset = 0;
  b_offset = 0;
  for (size_t d = outer_dims.size(); d-- > 0;) {
    const size_t index = row % outer_dims[d];
    row /= outer_dims[d];
    a_offset += index * a_strides[d];
    b_offset += index * b_strides[d];
  }
}

BroadcastRowCursor::BroadcastRowCursor(const BroadcastPlan& plan, size_t row) : plan_(&plan) {
  for (size_t d = plan.outer_dims.size(); d-- > 0;) {
    index_[d] = row % plan.outer_dims[d];
    row /= plan.outer_dims[d];
    a_offset_ += index_[d] * plan.a_strides[d];
    b_offset_ += index_[d] * plan.b_strides[d];
  }
}

std::optional<BroadcastPlan> make_broadcast_plan(std::span<const int64_t> a_shape,
                                                 std::span<const int64_t> b_shape) {
  const size_t rank = std::max(a_shape.size(), b_shape.size());
  BroadcastPlan plan;
  plan.output_shape.assign(rank, 1);
  // Which operand varies along each (non-unit) output dimension, merged over neighbours.
  enum Varies { kBoth, kOnlyA, kOnlyB };
  struct Group {
    size_t size;
    Varies varies;
  };
  std::vector<Group> groups;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t a_dim = d + a_shape.size() >= rank ? a_shape[d + a_shape.size() - rank] : 1;
    const int64_t b_dim = d + b_shape.size() >= rank ? b_shape[d + b_shape.size() - rank] : 1;
    if (a_dim < 0 || b_dim < 0) return std::nullopt;
    if (a_dim != b_dim && a_dim != 1 && b_dim != 1) return std::nullopt;
    const int64_t out_dim = a_dim == 1 ? b_dim : a_dim;
    plan.output_shape[d] = out_dim;
    if (out_dim == 1) continue;
    const Varies varies = a_dim == b_dim ? kBoth : (a_dim == 1 ? kOnlyB : kOnlyA);
    if (!groups.empty() && groups.back().varies == varies) {
      groups.back().size *= static_cast<size_t>(out_dim);
    } else {
      groups.push_back({static_cast<size_t>(out_dim), varies});
    }
  }
  if (groups.empty()) groups.push_back({1, kBoth});
  for (const Group& group : groups) {
    if (group.size == 0) {  // empty output: no rows at all
      plan.rows = 0;
      plan.inner = 0;
      return plan;
    }
  }
  const Group inner = groups.back();
  plan.inner = inner.size;
  plan.kind = inner.varies == kBoth    ? BroadcastPlan::Kind::kVectorVector
              : inner.varies == kOnlyA ? BroadcastPlan::Kind::kVectorScalar
                                       : BroadcastPlan::Kind::kScalarVector;
  size_t a_running = inner.varies == kOnlyB ? 1 : inner.size;
  size_t b_running = inner.varies == kOnlyA ? 1 : inner.size;
  const size_t outer_count = groups.size() - 1;
  plan.outer_dims.resize(outer_count);
  plan.a_strides.resize(outer_count);
  plan.b_strides.resize(outer_count);
  for (size_t g = outer_count; g-- > 0;) {
    const Group& group = groups[g];
    plan.outer_dims[g] = group.size;
    plan.a_strides[g] = group.varies == kOnlyB ? 0 : a_running;
    plan.b_strides[g] = group.varies == kOnlyA ? 0 : b_running;
    if (group.varies != kOnlyB) a_running *= group.size;
    if (group.varies != kOnlyA) b_running *= group.size;
    plan.rows *= group.size;
  }
  return plan;
}

}  // namespace qdqrt::kernels
