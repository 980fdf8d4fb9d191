#include "optimizer/passes/fuse_qdq_pool.h"

#include "optimizer/passes/qdq_fusion.h"

namespace qdqrt::optimizer {

namespace {
SelectResult select_any_pool(const Graph& graph, const ValueIndex& index, int node) {
  SelectResult result = select_qdq_pool(graph, index, node);
  if (result.selection || !result.reason.empty()) return result;
  return select_qdq_max_pool(graph, index, node);
}
}  // namespace

std::vector<std::string> FuseQdqPool::must_run_after() const { return {"fold_constants", "fold_batchnorm", "propagate_qdq", "remove_redundant_qdq", "fuse_qdq_conv", "fuse_qdq_matmul"}; }

Status FuseQdqPool::run(Graph& graph, PassContext& context) { return run_qdq_fusion(graph, context, select_any_pool); }

}  // namespace qdqrt::optimizer
