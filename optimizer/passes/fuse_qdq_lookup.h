// Fusion: DQ -> Sigmoid/Tanh/HardSwish/HardSigmoid/Gelu -> Q, and DQ(x) -> Sigmoid -> Mul(x) -> Q (SiLU), become a table-driven QLookup.
#pragma once

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

class FuseQdqLookup : public Pass {
 public:
  std::string name() const override { return "fuse_qdq_lookup"; }
  std::vector<std::string> must_run_after() const override;
  Status run(Graph& graph, PassContext& context) override;
};

}  // namespace qdqrt::optimizer
