#include "optimizer/passes/fuse_qdq_lookup.h"

#include "optimizer/passes/qdq_fusion.h"

namespace qdqrt::optimizer {

std::vector<std::string> FuseQdqLookup::must_run_after() const { return {"fuse_qdq_conv", "fuse_qdq_matmul"}; }

Status FuseQdqLookup::run(Graph& graph, PassContext& context) { return run_qdq_fusion(graph, context, select_qdq_lookup); }

}  // namespace qdqrt::optimizer
