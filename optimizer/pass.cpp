#include "optimizer/pass.h"

#include <algorithm>

namespace qdqrt::optimizer {

void PassContext::note_float(const Node& node, std::string reason) {
  for (const FloatReason& existing : float_reasons) {
    if (existing.node == node.name) return;
  }
  float_reasons.push_back({node.name, node.op_type, std::move(reason)});
}

void PassContext::clear_float_reason(const std::string& node_name) {
  std::erase_if(float_reasons, [&](const FloatReason& r) { return r.node == node_name; });
}

}  // namespace qdqrt::optimizer
