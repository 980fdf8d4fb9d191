// Fusion: DQ(a), DQ(b) -> Add/Mul [-> activation] [-> Q] becomes QAdd/QMul (after conv/matmul, which absorb residual Adds).
#pragma once

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

class FuseQdqBinary : public Pass {
 public:
  std::string name() const override { return "fuse_qdq_binary"; }
  std::vector<std::string> must_run_after() const override;
  Status run(Graph& graph, PassContext& context) override;
};

}  // namespace qdqrt::optimizer
