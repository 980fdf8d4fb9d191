// Fusion: DQ(x), DQ(w)[, bias] -> Conv (any group) [-> Add(quantized residual)] [-> Relu/Clip/LeakyRelu] [-> Q] becomes one QConv.
#pragma once

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

class FuseQdqConv : public Pass {
 public:
  std::string name() const override { return "fuse_qdq_conv"; }
  std::vector<std::string> must_run_after() const override;
  Status run(Graph& graph, PassContext& context) override;
};

}  // namespace qdqrt::optimizer
