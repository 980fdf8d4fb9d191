// The optimizer's pass interface. One graph-level pass per file in
// optimizer/passes/<verb>_<object>.{h,cpp}; the fusions are rows of optimizer/fusions/registry.cpp
// run as FusionPass. The order lives in optimizer/pipeline.cpp only.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "kernels/cpu_features.h"

namespace qdqrt::optimizer {

// Why an op that looks quantized stayed in float ("Add 'add_3': residual input is float").
struct FloatReason {
  std::string node;
  std::string op_type;
  std::string reason;
};

struct PassContext {
  // Filled by fusion passes for `qdqrt inspect`; later passes may erase entries for nodes they
  // fuse after all.
  std::vector<FloatReason> float_reasons;
  // Initializers fold_constants computed from the shape of a runtime value (Shape of an
  // activation and what was folded from it): they hold the batch the graph was loaded at.
  std::set<std::string> folded_from_runtime_shapes;
  // The ISA the engine will pick kernels for (the build's limit, OptimizeOptions::target_isa);
  // unset: the host's (kernels' dispatch choice). Fusions whose rule follows the kernels' vector
  // width ask isa().
  std::optional<kernels::Isa> target_isa;
  kernels::Isa isa() const;
  // Records a reason once per node (the first one wins: it is the most specific).
  void note_float(const Node& node, std::string reason);
  void clear_float_reason(const std::string& node_name);
};

class Pass {
 public:
  virtual ~Pass() = default;
  // snake_case, the file's name: "fold_constants".
  virtual std::string name() const = 0;
  // Passes that, when enabled, must have run before this one (checked by the pipeline).
  virtual std::vector<std::string> must_run_after() const { return {}; }
  virtual Status run(Graph& graph, PassContext& context) = 0;
};

}  // namespace qdqrt::optimizer
