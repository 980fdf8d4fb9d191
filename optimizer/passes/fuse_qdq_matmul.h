// Fusion: DQ(a), DQ(b) -> MatMul/Gemm [-> bias Add] [-> Add(quantized residual)] [-> activation] [-> Q] becomes one QMatMul.
#pragma once

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

class FuseQdqMatmul : public Pass {
 public:
  std::string name() const override { return "fuse_qdq_matmul"; }
  std::vector<std::string> must_run_after() const override;
  Status run(Graph& graph, PassContext& context) override;
};

}  // namespace qdqrt::optimizer
