// The optimizer: runs the passes of optimizer/pipeline.cpp, in that file's order.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "optimizer/fusions/fusion.h"
#include "optimizer/graph_utils.h"
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
  // runs: the result has only float ops (standard ones, LayerNorm and FusedConv). Pass names come
  // from pipeline_pass_names(true).
  bool float_only = false;
  // The ISA the engine will build for (its kernels' dispatch choice under BuildOptions::max_isa);
  // unset: the host's. Fusion rules that follow the kernels' vector width read it.
  std::optional<kernels::Isa> target_isa;
  // Called after each pass that ran (e.g. to dump the graph).
  std::function<Status(const std::string& pass_name, const Graph& graph)> after_pass;
};

struct OptimizeReport {
  std::vector<std::string> passes_run;
  std::vector<FloatReason> float_reasons;
};

// Names of every pass, in pipeline order (of the float pipeline when `float_only`).
std::vector<std::string> pipeline_pass_names(bool float_only = false);

// Each pass's must_run_after names a pass listed before it, and no pass is listed twice; a
// must_run_after naming a pass missing from the list is an error too (it catches typos and
// removed passes). optimize() checks its pipeline with this.
Status check_pass_order(const std::vector<std::unique_ptr<Pass>>& passes);

Result<OptimizeReport> optimize(Graph& graph, const OptimizeOptions& options = {});

// Can `node` run in INT8 as the graph stands? Asks the fusions' selectors in pipeline order and
// returns the first selection or reason (empty when no fusion pattern involves the node).
SelectResult select_int8_layer(const Graph& graph, const ValueIndex& index, int node);

}  // namespace qdqrt::optimizer
