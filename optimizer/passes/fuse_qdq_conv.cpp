#include "optimizer/passes/fuse_qdq_conv.h"

#include "optimizer/passes/qdq_fusion.h"

namespace qdqrt::optimizer {

std::vector<std::string> FuseQdqConv::must_run_after() const { return {"fold_constants", "fold_batchnorm", "propagate_qdq", "remove_redundant_qdq"}; }

Status FuseQdqConv::run(Graph& graph, PassContext& context) { return run_qdq_fusion(graph, context, select_qdq_conv); }

}  // namespace qdqrt::optimizer
