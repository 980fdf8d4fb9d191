// Fusion: DQ -> (Global)AveragePool [-> Q] becomes QAveragePool/QGlobalAveragePool; DQ -> MaxPool -> Q with equal parameters becomes MaxPool on int8.
#pragma once

#include "optimizer/pass.h"

namespace qdqrt::optimizer {

class FuseQdqPool : public Pass {
 public:
  std::string name() const override { return "fuse_qdq_pool"; }
  std::vector<std::string> must_run_after() const override;
  Status run(Graph& graph, PassContext& context) override;
};

}  // namespace qdqrt::optimizer
