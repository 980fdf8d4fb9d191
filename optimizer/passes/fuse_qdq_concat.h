// Fusion: Concat of DQs -> Q becomes QConcat (inputs requantized to the output's parameters when they differ).
#pragma once

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

class FuseQdqConcat : public Pass {
 public:
  std::string name() const override { return "fuse_qdq_concat"; }
  std::vector<std::string> must_run_after() const override;
  Status run(Graph& graph, PassContext& context) override;
};

}  // namespace qdqrt::optimizer
