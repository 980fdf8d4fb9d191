// The command line of `qdqrt exec` (tools/exec_command.h): its options, the CLI11 flags that fill
// them, and the checks of flag combinations and run shapes. Kept apart from the runtime so the
// parsing is tested without an engine.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "core/status.h"
#include "core/tensor.h"
#include "tools/run_command.h"

namespace qdqrt::tools {

struct ExecOptions {
  // Model source: exactly one of these.
  std::string onnx_path;         // --onnx
  std::string load_engine_path;  // --loadEngine
  std::string save_engine_path;  // --saveEngine ("" = do not save)

  // Build precision (--int8 is the default for QDQ models; --best picks int8 too).
  bool int8 = false;
  bool fp32 = false;
  bool best = false;

  // --shapes: with --onnx the build (maximum) and run shapes; with --loadEngine the run shapes.
  std::map<std::string, Shape> shapes;
  std::vector<InputFileSpec> input_files;  // --loadInputs
  uint64_t seed = 0;                       // --seed (random inputs)

  int iterations = 10;      // --iterations: at least this many timed runs
  double warm_up_ms = 200;  // --warmUp: untimed runs for at least this long first
  double duration_s = 3;    // --duration: timed runs for at least this long
  int avg_runs = 10;        // --avgRuns: runs averaged per line of the trace (--verbose)
  std::vector<double> percentiles = {90, 95, 99};  // --percentile
  int threads = 0;          // --threads (0: every hardware thread)

  std::string export_output_path;      // --exportOutput
  std::string export_profile_path;     // --exportProfile
  std::string export_layer_info_path;  // --exportLayerInfo
  std::string export_times_path;       // --exportTimes
  bool dump_profile = false;           // --dumpProfile
  bool separate_profile_run = false;   // --separateProfileRun
  bool dump_layer_info = false;        // --dumpLayerInfo
  bool verbose = false;                // --verbose
  bool skip_inference = false;         // --skipInference: build/load (and save) only

  bool profiling() const { return dump_profile || !export_profile_path.empty(); }
  engine::Precision precision() const { return fp32 ? engine::Precision::kFp32 : engine::Precision::kInt8; }
};

// What CLI11 fills; finish_exec_options() turns the list-valued texts into ExecOptions fields.
struct ExecCommandLine {
  ExecOptions options;
  std::vector<std::string> shapes_texts;
  std::vector<std::string> load_inputs_texts;
  std::string percentile_text = "90,95,99";
};

// Adds every flag of `qdqrt exec` to `exec`, writing into `line`.
void add_exec_flags(CLI::App& exec, ExecCommandLine& line);
// Parses the list-valued flags and checks the combinations (one model source, --int8 vs --fp32,
// output directories exist, ...). Every error is a usage error naming the flag.
Status finish_exec_options(ExecCommandLine& line);

// The concrete run shape of each engine input: --shapes, else the shape of its --loadInputs file,
// else the engine's (maximum-batch) shape. Checks that batched inputs agree on a batch in
// 1..max_batch and that every other dim equals the engine's. Returns the batch.
Result<int64_t> check_run_shapes(const std::vector<engine::IoTensorInfo>& inputs, int64_t max_batch,
                                 const std::map<std::string, Shape>& run_shapes);

}  // namespace qdqrt::tools
