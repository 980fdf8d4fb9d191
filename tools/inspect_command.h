// qdqrt inspect: optimizes a model and prints its layers the way trtexec's --dumpLayerInfo does.
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "tools/inspect_report.h"
#include "core/status.h"
#include "core/tensor.h"

namespace qdqrt::tools {

struct InspectOptions {
  std::string onnx_path;
  std::string export_layer_info_path;  // --exportLayerInfo ("" = none)
  std::vector<std::string> passes;     // --passes (empty = all)
  std::vector<std::string> disabled_passes;
  std::string dump_graph_dir;          // --dumpGraph ("" = none)
  std::map<std::string, Shape> shapes;  // --shapes
  bool float_only = false;              // --fp32: the float pipeline (OptimizeOptions::float_only)
  bool full_names = false;              // --fullNames: layer names not cut in the table
};

// Loads, optimizes, prints the table and summary to `out`, writes the requested files.
// `usage` is set when the error is the command line's fault (unknown pass, bad shapes).
Status inspect_model(const InspectOptions& options, std::ostream& out, bool& usage);

}  // namespace qdqrt::tools
