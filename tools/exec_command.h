// `qdqrt exec`: trtexec for qdqrt. Builds an engine from an ONNX model (or loads a saved one),
// optionally saves it, runs it on seeded random or .npy inputs for a warm-up time and then at
// least --iterations runs and --duration seconds, and prints the build/load summary, trtexec's
// "=== Performance summary ===" and, with --dumpProfile, the per-layer profile.
// Flag meanings follow trtexec wherever they apply (docs/cli.md lists the differences).
#pragma once

#include <iosfwd>
#include <optional>

#include "tools/exec_options.h"
#include "tools/run_command.h"

namespace qdqrt::tools {

// The whole command after parsing: build or load, save, run, report, export.
std::optional<RunError> run_exec(const ExecOptions& options, std::ostream& out);

}  // namespace qdqrt::tools
