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
  // --bf16: float MatMul/Gemm layers with constant weights run in bf16 (fp32 sums) where the CPU
  // has AVX512_BF16; elsewhere a warning and fp32 kernels (engine::BuildOptions::bf16).
  bool bf16 = false;

  // --shapes: with --onnx the build (maximum) and run shapes; with --loadEngine the run shapes.
  std::map<std::string, Shape> shapes;
  // trtexec's shape range (--minShapes/--optShapes/--maxShapes). When they differ only in the
  // batch, an engine runs batches 1..max: --maxShapes is what is built for, --optShapes the run
  // shape when --shapes does not give one, and --minShapes is checked against the others. When
  // they differ on other dims, a range engine (engine/profiles.h) is built for the range and run
  // at --shapes (or --optShapes).
  std::map<std::string, Shape> min_shapes, opt_shapes, max_shapes;
  // Profiles after the first: a shape flag naming an input its profile already has starts the
  // next profile (--minShapes=x:A --maxShapes=x:B --minShapes=x:C --maxShapes=x:D is two).
  struct ProfileShapes {
    std::map<std::string, Shape> min_shapes, opt_shapes, max_shapes;
  };
  std::vector<ProfileShapes> more_profiles;
  int profile = -1;                       // --profile/--useProfile: the profile runs use (-1: any)
  bool dump_optimization_profile = false; // --dumpOptimizationProfile
  std::vector<InputFileSpec> input_files;  // --loadInputs
  uint64_t seed = 0;                       // --seed (random inputs)

  int iterations = 10;      // --iterations: at least this many timed runs
  double warm_up_ms = 200;  // --warmUp: untimed runs for at least this long first
  double duration_s = 3;    // --duration: timed runs for at least this long
  int avg_runs = 10;        // --avgRuns: runs averaged per line of the trace (--verbose)
  std::vector<double> percentiles = {90, 95, 99};  // --percentile
  int threads = 0;          // --threads (0: every hardware thread, shared by the streams)
  int streams = 1;          // --streams: contexts running at once, each on its own host thread
  std::string calib_path;   // --calib: TensorRT calibration cache for a model without Q/DQ
  std::vector<std::string> float_layers;  // --layerPrecisions=NAME:fp32: nodes kept in float
  bool detailed_layer_info = true;  // --profilingVerbosity (layer_names_only / none: names only)

  std::string export_output_path;      // --exportOutput
  std::string export_profile_path;     // --exportProfile
  std::string export_layer_info_path;  // --exportLayerInfo
  std::string export_times_path;       // --exportTimes
  bool dump_profile = false;           // --dumpProfile
  bool separate_profile_run = false;   // --separateProfileRun
  bool keep_denormals = false;         // --keepDenormals: IEEE denormals (ContextOptions::flush_denormals off)
  bool dump_layer_info = false;        // --dumpLayerInfo
  bool verbose = false;                // --verbose
  bool skip_inference = false;         // --skipInference (--buildOnly): build/load (and save) only
  bool no_reference_layers = false;    // --noReferenceLayers: a layer on the reference executor is an error
  bool dump_output = false;            // --dumpOutput: print the outputs of the last run
  std::vector<std::string> debug_tensors;  // --markDebug: model tensors kept as engine outputs
  std::vector<std::pair<std::string, std::string>> save_debug_tensors;  // --saveDebugTensors: tensor, raw file
  bool plan_version_only = false;      // --getPlanVersionOnly: print who made the --loadEngine file, exit
  bool time_deserialize = false;       // --timeDeserialize: time loading --loadEngine, exit
  double sleep_time_ms = 0;            // --sleepTime: pause between the warm-up and the timed runs
  double idle_time_ms = 0;             // --idleTime: pause between two timed runs (not timed)
  // trtexec flags given that mean nothing on a CPU: one "not applicable on CPU: ..." line each.
  std::vector<std::string> notes;

  bool profiling() const { return dump_profile || !export_profile_path.empty(); }
  // True when --minShapes/--optShapes/--maxShapes differ on a dim other than the batch (dim 0), or
  // give several profiles.
  bool range_beyond_batch() const;
  // The shapes built for: --maxShapes, then --shapes for the inputs --maxShapes does not name.
  std::map<std::string, Shape> build_shapes() const;
  // The shapes run at: --shapes, then --optShapes.
  std::map<std::string, Shape> run_shapes() const;
  engine::Precision precision() const { return fp32 ? engine::Precision::kFp32 : engine::Precision::kInt8; }
};

// What CLI11 fills; finish_exec_options() turns the list-valued texts into ExecOptions fields.
struct ExecCommandLine {
  ExecOptions options;
  std::vector<std::string> shapes_texts;
  std::vector<std::string> min_shapes_texts, opt_shapes_texts, max_shapes_texts;
  std::string profiling_verbosity;  // --profilingVerbosity / --nvtxMode
  std::vector<std::string> layer_precisions_texts;  // --layerPrecisions
  std::vector<std::string> load_inputs_texts;
  std::vector<std::string> mark_debug_texts, save_debug_texts;  // --markDebug, --saveDebugTensors
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
