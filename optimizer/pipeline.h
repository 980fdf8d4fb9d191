// The optimizer: runs the passes of optimizer/pipeline.cpp, in that file's order.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "optimizer/pass.h"
#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::optimizer {

struct OptimizeOptions {
  // Non-empty: run only these passes (pipeline order is kept). Unknown names are an error.
  std::vector<std::string> only_passes;
  std::vector<std::string> disabled_passes;
  // The float pipeline (`qdqrt exec --fp32`, `qdqrt inspect --fp32`): the same QDQ model all in
  // float. Fake quantization goes (Q -> DQ pairs on activations become identities, DQ of constant
  // weights folds to float constants), BatchNorm folds into the float Conv, and no Q/DQ fusion
  // runs: the result has only standard float ONNX ops. Pass names come from
  // pipeline_pass_names(true).
  bool float_only = false;
  // Called after each pass that ran (e.g. to dump the graph).
  std::function<Status(const std::string& pass_name, const Graph& graph)> after_pass;
};

struct OptimizeReport {
  std::vector<std::string> passes_run;
  std::vector<FloatReason> float_reasons;
};

// Names of every pass, in pipeline order (of the float pipeline when `float_only`).
std::vector<std::string> pipeline_pass_names(bool float_only = false);

Result<OptimizeReport> optimize(Graph& graph, const OptimizeOptions& options = {});

}  // namespace qdqrt::optimizer
