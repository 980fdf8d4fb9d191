// Pieces the Python module's files share: errors, numpy <-> engine tensors, the engine handle that
// InferenceSession, Engine and Context hold. All of it runs with the GIL held unless it says so.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

namespace qdqrt::python {

namespace py = pybind11;

// A Status error on its way to Python: kInvalidArgument becomes qdqrt.InvalidArgument (a ValueError),
// everything else qdqrt.Error (module.cpp registers the translation).
struct StatusError {
  Status status;
};
// Wrong numpy dtype for an input: qdqrt.InvalidType (a TypeError).
struct DtypeError {
  std::string message;
};

inline void throw_if_error(const Status& status) {
  if (!status.is_ok()) throw StatusError{status};
}
template <class T>
T value_or_throw(Result<T> result) {
  if (!result.ok()) throw StatusError{result.status()};
  return std::move(result).value();
}

// The numpy dtype of an engine tensor's element type; StatusError when numpy has none (bfloat16, int4).
py::dtype numpy_dtype(DataType dtype);
// "tensor(float)", "tensor(int64)", ... as ONNX Runtime's NodeArg.type spells them.
std::string onnx_type_string(DataType dtype);

// An engine and what every run asks of it, computed once.
struct EngineHandle {
  std::shared_ptr<const engine::Engine> engine;
  // The engine file's bytes when it was loaded from bytes: its weights are views into them.
  std::shared_ptr<const std::vector<uint8_t>> storage;
  std::vector<engine::IoTensorInfo> inputs;
  std::vector<engine::IoTensorInfo> outputs;

  explicit EngineHandle(std::shared_ptr<const engine::Engine> built);
  const engine::IoTensorInfo* find_input(const std::string& name) const;
  const engine::IoTensorInfo* find_output(const std::string& name) const;
};

// The feeds of one run, checked and bound without copying, and the output arrays allocated for
// them. `feeds` keeps the input arrays alive; destroy it with the GIL held.
struct PreparedRun {
  std::vector<py::array> feeds;
  std::vector<engine::ConstTensorBinding> input_bindings;
  std::vector<py::array> output_arrays;   // in the order asked for (every output when none was named)
  std::vector<std::string> output_names;  // parallel to output_arrays
  std::vector<engine::TensorBinding> output_bindings;
  std::vector<py::array> bound_arrays;  // parallel to output_bindings
  int64_t batch = -1;  // the batch the inputs carry (dim 0 of the batched ones); -1 when none is batched
};

// An input as the engine reads it: a C-contiguous array of the input's dtype in native byte order.
// Arrays that are not C-contiguous or not in native byte order, Python lists and scalars are
// converted with one copy (as ONNX Runtime does); an array of another dtype is InvalidType.
// `info` null (not an input of the engine): the value as an array, for the engine's own error.
py::array input_array(const std::string& name, const py::handle& value, const engine::IoTensorInfo* info);

// Checks dtypes (InvalidType) and converts inputs as input_array() does; names and shapes are the
// engine's to check at run time. `output_names` empty = every output. `bound_outputs`: arrays the
// caller preallocated (io_binding), written in place; each must be C-contiguous, writable and of
// the output's dtype and shape at the run's batch.
PreparedRun prepare_run(const EngineHandle& handle, const py::dict& feeds, const std::vector<std::string>& output_names,
                        const std::map<std::string, py::array>& bound_outputs = {});
// Runs with the GIL released; StatusError on failure.
void run_prepared(engine::ExecutionContext& context, const PreparedRun& prepared);

// Names from None, a str or a sequence of str (ONNX Runtime's output_names argument).
std::vector<std::string> names_from(const py::object& names);
// Model arguments: a path (str or os.PathLike) or the file's bytes.
struct ModelSource {
  std::string path;            // empty when given bytes
  std::vector<uint8_t> bytes;  // the bytes when given bytes
};
ModelSource model_source_from(const py::object& model);
// Does this path or byte string hold a .qdqrt engine (its magic) rather than ONNX?
bool is_engine_file(const ModelSource& source);

// The builder and loader behind qdqrt.build / qdqrt.load / InferenceSession (GIL released while they work).
engine::BuildOptions build_options(const std::string& precision, const py::object& input_shapes,
                                   const py::object& max_isa);
std::shared_ptr<EngineHandle> build_engine_handle(const ModelSource& source, const engine::BuildOptions& options);
std::shared_ptr<EngineHandle> load_engine_handle(const ModelSource& source);

void bind_engine(py::module_& module);
void bind_session(py::module_& module);
void bind_tools(py::module_& module);
void bind_quantization(py::module_& module);  // after bind_tools: it calls qdqrt.calibrate

}  // namespace qdqrt::python
