// Each subcommand of the qdqrt CLI adds itself to the app and returns a Command; main() parses
// the command line, then calls run() of the subcommand that was chosen and exits with its code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace qdqrt::tools {

// Exit codes shared by every subcommand (documented in docs/cli.md).
enum ExitCode : int {
  kExitSuccess = 0,
  kExitFailure = 1,  // the model could not be loaded, run or its outputs written
  kExitUsage = 2,    // bad command line: unknown flag, bad value, missing or mismatched input file
};

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // called after parsing when `app` was chosen; returns the exit code
};

Command add_run_command(CLI::App& app);      // qdqrt run: reference executor on a model
Command add_inspect_command(CLI::App& app);  // qdqrt inspect: optimized layer list and summary
Command add_exec_command(CLI::App& app);     // qdqrt exec: build/load an engine and benchmark it
Command add_calibrate_command(CLI::App& app);  // qdqrt calibrate: PTQ calibration -> QDQ ONNX
Command add_eval_command(CLI::App& app);       // qdqrt eval: accuracy/latency table over a data set
Command add_serve_command(CLI::App& app);      // qdqrt serve: KServe v2 / Triton protocol server
Command add_compare_command(CLI::App& app);    // qdqrt compare: per-tensor INT8 vs FP32 error

}  // namespace qdqrt::tools
