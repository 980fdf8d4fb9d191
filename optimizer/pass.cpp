#include "optimizer/pass.h"

#include <algorithm>

#include "kernels/dispatch.h"

namespace qdqrt::optimizer {

void PassContext::note_float(const Node& node, std::string reason) {
  for (const FloatReason& existing : float_reasons) {
    if (existing.node == node.name) return;
  }
  float_reasons.push_back({node.name, node.op_type, std::move(reason)});
}

kernels::Isa PassContext::isa() const { return kernels::usable_isa(target_isa.value_or(kernels::active_isa())); }

void PassContext::clear_float_reason(const std::string& node_name) {
  std::erase_if(float_reasons, [&](const FloatReason& r) { return r.node == node_name; });
}

}  // namespace qdqrt::optimizer
