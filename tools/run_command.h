// `qdqrt run`: load a model, feed it inputs (from .npy files or seeded random values), run the
// reference executor, print a summary of each output and optionally save outputs as .npy.
// The pieces are separate functions so tests can drive them without the command line.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "reference/executor.h"

namespace qdqrt::tools {

// One --loadInputs entry: NAME:FILE.npy.
struct InputFileSpec {
  std::string name;
  std::string path;
};

struct RunOptions {
  std::string onnx_path;
  std::vector<InputFileSpec> input_files;   // --loadInputs
  std::map<std::string, Shape> shapes;      // --shapes
  std::string save_outputs_dir;             // --saveOutputs ("" = do not save)
  uint64_t seed = 0;                        // --seed
  int iterations = 1;                       // --iterations
  bool verbose = false;                     // --verbose
};

// "a:x.npy,b:y.npy" -> specs. A name holding ':' or ',' may be single-quoted: 'in:0':x.npy.
// Checks syntax only (the files are checked when read).
Result<std::vector<InputFileSpec>> parse_load_inputs(const std::string& text);
// "a:1x3x224x224,b:2x5" -> shapes. The name is everything before the last ':'; a scalar is "a:".
Result<std::map<std::string, Shape>> parse_shapes(const std::string& text);

// The concrete shape to give graph input `info`: its static dims, each symbolic dim set from
// `requested` (from --shapes) or 1. Errors when `requested` contradicts rank or a static dim.
Result<Shape> resolve_input_shape(const ValueInfo& info, const std::optional<Shape>& requested);
// Checks a user-supplied tensor for input `info`: dtype, rank, static dims and --shapes.
Status check_input_tensor(const ValueInfo& info, const Tensor& tensor, const std::optional<Shape>& requested);

// Seeded random tensor: floats ~U(-1, 1), integers uniform in [0, 3], bools 0/1.
Result<Tensor> random_tensor(DataType dtype, const Shape& shape, std::mt19937_64& rng);

// Every graph input: read from its --loadInputs file or generated (seeded by options.seed, in
// graph input order). Errors name the flag and the value at fault.
Result<TensorMap> prepare_inputs(const Graph& graph, const RunOptions& options, std::ostream& log);

// "name: float32 [1, 10]" then values, min/max/mean and, for 2-D outputs, argmax per row.
std::string summarize_tensor(const std::string& name, const Tensor& tensor);
// A value name as a file name: characters other than [A-Za-z0-9._-] become '_'.
std::string sanitize_file_name(const std::string& name);

// Usage errors (bad flags or input files) and failures (model cannot run, outputs cannot be
// written) are distinguished so that the command can choose its exit code.
struct RunError {
  bool usage = false;
  Status status;
};

// Everything after loading: inputs, timed runs, summary on `out`, optional saving.
std::optional<RunError> run_loaded_graph(const Graph& graph, const RunOptions& options, std::ostream& out);
// The whole command: load options.onnx_path then run_loaded_graph().
std::optional<RunError> run_model(const RunOptions& options, std::ostream& out);

}  // namespace qdqrt::tools
