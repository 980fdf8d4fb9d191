// ONNX Runtime's Python API over qdqrt engines: InferenceSession, SessionOptions, NodeArg, so that
// ORT code switches with `import qdqrt as ort`. An ONNX model is built into an INT8 engine (a QDQ
// model) or an FP32 one (no Q/DQ nodes); a .qdqrt engine file loads as it is.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "parser/onnx_loader.h"
#include "python/bindings.h"

namespace qdqrt::python {

namespace {

enum class GraphOptimizationLevel { kDisableAll = 0, kEnableBasic = 1, kEnableExtended = 2, kEnableAll = 99 };
enum class ExecutionMode { kSequential = 0, kParallel = 1 };

struct SessionOptions {
  int intra_op_num_threads = 0;  // 0: all hardware threads
  bool enable_profiling = false;
  std::string profile_file_prefix = "qdqrt_profile";
  // qdqrt's own: the engine's precision and highest ISA (ignored for .qdqrt files, fixed when built).
  std::string precision = "int8";
  py::object max_isa = py::none();
};

struct NodeArg {
  std::string name;
  py::list shape;  // ints, and strings for symbolic dims (None when the model has no name for one)
  std::string type;
};

py::list dims_list(const std::optional<std::vector<Dim>>& dims) {
  py::list list;
  if (!dims) return list;
  for (const Dim& dim : *dims) {
    if (dim.is_static()) {
      list.append(dim.value);
    } else if (dim.symbol.empty()) {
      list.append(py::none());
    } else {
      list.append(dim.symbol);
    }
  }
  return list;
}

// An engine with a pool of contexts for it: runs from several Python threads at once each take
// their own context. Swapped whole when the session rebuilds for a larger batch.
struct SessionEngine {
  std::shared_ptr<EngineHandle> handle;
  std::vector<std::unique_ptr<engine::ExecutionContext>> idle_contexts;  // touched with the GIL held
};

class InferenceSession {
 public:
  InferenceSession(const py::object& model, const py::object& options_object) {
    if (!options_object.is_none()) options_ = options_object.cast<SessionOptions>();
    source_ = model_source_from(model);
    from_engine_file_ = is_engine_file(source_);
    if (from_engine_file_) {
      set_engine(load_engine_handle(source_));
      for (const engine::IoTensorInfo& info : current_->handle->inputs) inputs_.push_back(engine_node_arg(info));
      for (const engine::IoTensorInfo& info : current_->handle->outputs) outputs_.push_back(engine_node_arg(info));
      return;
    }
    // The model as declared gives the NodeArgs their symbolic dims.
    Result<Graph> declared = internal_error("unreachable");
    {
      py::gil_scoped_release release;
      declared = source_.path.empty() ? load_onnx_bytes(source_.bytes.data(), source_.bytes.size())
                                      : load_onnx_file(source_.path);
    }
    Graph graph = value_or_throw(std::move(declared));
    for (const std::string& name : graph.inputs) inputs_.push_back(graph_node_arg(graph, name));
    for (const std::string& name : graph.outputs) outputs_.push_back(graph_node_arg(graph, name));
    build_options_ = build_options(options_.precision, py::none(), options_.max_isa);
    // Symbolic dims other than the batch take their values from the first run's feeds.
    bool only_batch_symbolic = true;
    for (const std::string& name : graph.inputs) {
      const ValueInfo* info = graph.find_value(name);
      if (info == nullptr || !info->shape) continue;
      declared_dims_[name] = *info->shape;
      for (size_t axis = 1; axis < info->shape->size(); ++axis) only_batch_symbolic &= (*info->shape)[axis].is_static();
    }
    if (only_batch_symbolic) set_engine(build_engine_handle(source_, build_options_));
  }

  py::list run(const py::object& output_names, const py::dict& feeds) {
    std::vector<std::string> names = names_from(output_names);
    if (!from_engine_file_ && needs_build(feeds)) build_for(feeds);
    std::shared_ptr<SessionEngine> state = current_;
    PreparedRun prepared = prepare_run(*state->handle, feeds, names);
    std::unique_ptr<engine::ExecutionContext> context;
    if (state->idle_contexts.empty()) {
      context = state->handle->engine->create_context(
          {.threads = options_.intra_op_num_threads, .profiling = options_.enable_profiling});
    } else {
      context = std::move(state->idle_contexts.back());
      state->idle_contexts.pop_back();
    }
    auto start = std::chrono::steady_clock::now();
    try {
      run_prepared(*context, prepared);
    } catch (...) {
      state->idle_contexts.push_back(std::move(context));
      throw;
    }
    if (options_.enable_profiling) record_profile(*state->handle, *context, start);
    state->idle_contexts.push_back(std::move(context));
    py::list results;
    for (py::array& array : prepared.output_arrays) results.append(std::move(array));
    return results;
  }

  // Writes the events recorded since the session started (Chrome trace format, as ORT writes them)
  // and returns the file name.
  std::string end_profiling() {
    if (!options_.enable_profiling) return "";
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y-%m-%d_%H-%M-%S", std::localtime(&now));
    std::string path = fmt::format("{}_{}.json", options_.profile_file_prefix, stamp);
    std::ofstream file(path, std::ios::trunc);
    file << profile_events_.dump(1) << "\n";
    if (!file) throw StatusError{io_error("cannot write the profile '{}'", path)};
    profile_events_ = nlohmann::json::array();
    return path;
  }

  const std::vector<NodeArg>& inputs() const { return inputs_; }
  const std::vector<NodeArg>& outputs() const { return outputs_; }
  const SessionOptions& options() const { return options_; }
  // None until the first run when the model has symbolic dims besides the batch.
  std::shared_ptr<EngineHandle> engine() const { return current_ ? current_->handle : nullptr; }

 private:
  void set_engine(std::shared_ptr<EngineHandle> handle) {
    auto state = std::make_shared<SessionEngine>();
    state->handle = std::move(handle);
    current_ = std::move(state);
  }

  // ORT runs any shape the model allows; an engine runs the shapes it was built for, with any batch
  // up to its maximum. Feeds beyond that (a larger batch, another value of a symbolic dim, any
  // other batch for an engine that runs only at its own) rebuild the engine from the ONNX model.
  // A shape the model does not allow is left to the engine's own error.
  bool needs_build(const py::dict& feeds) const {
    if (!current_) return true;
    const engine::Engine& built = *current_->handle->engine;
    for (auto [key, value] : feeds) {
      if (!py::isinstance<py::str>(key) || !py::isinstance<py::array>(value)) continue;
      const std::string name = py::cast<std::string>(key);
      const engine::IoTensorInfo* info = current_->handle->find_input(name);
      auto declared = declared_dims_.find(name);
      py::array array = py::reinterpret_borrow<py::array>(value);
      if (info == nullptr || declared == declared_dims_.end() ||
          array.ndim() != static_cast<py::ssize_t>(info->shape.size()) ||
          declared->second.size() != info->shape.size()) {
        continue;
      }
      for (size_t axis = 0; axis < info->shape.size(); ++axis) {
        const int64_t dim = array.shape(static_cast<py::ssize_t>(axis));
        if (declared->second[axis].is_static() || dim < 1) continue;
        if (axis == 0 && info->batched) {
          if (dim > built.max_batch() || (dim != built.max_batch() && !built.plan().fixed_batch_reason.empty())) {
            return true;
          }
        } else if (dim != info->shape[axis]) {
          return true;
        }
      }
    }
    return false;
  }

  // The feeds' shapes; a batch that grows at least doubles the maximum, so growing batches rebuild
  // rarely (an engine that runs only at its own batch is built at exactly the feeds' batch).
  void build_for(const py::dict& feeds) {
    engine::BuildOptions options = build_options_;
    for (const auto& [name, dims] : declared_dims_) {
      const engine::IoTensorInfo* info = current_ ? current_->handle->find_input(name) : nullptr;
      py::object value = feeds.contains(name) ? py::reinterpret_borrow<py::object>(feeds[py::str(name)]) : py::none();
      if (!py::isinstance<py::array>(value) ||
          py::reinterpret_borrow<py::array>(value).ndim() != static_cast<py::ssize_t>(dims.size())) {
        if (info != nullptr) options.input_shapes[name] = info->shape;
        continue;
      }
      py::array array = py::reinterpret_borrow<py::array>(value);
      Shape shape(array.shape(), array.shape() + array.ndim());
      if (info != nullptr && info->batched && !shape.empty() &&
          current_->handle->engine->plan().fixed_batch_reason.empty()) {
        shape[0] = std::max(shape[0], 2 * current_->handle->engine->max_batch());
      }
      options.input_shapes[name] = shape;
    }
    set_engine(build_engine_handle(source_, options));
  }

  void record_profile(const EngineHandle& handle, const engine::ExecutionContext& context,
                      std::chrono::steady_clock::time_point start) {
    using std::chrono::duration_cast;
    using std::chrono::microseconds;
    if (profile_events_.empty()) profile_start_ = start;
    double offset_us = static_cast<double>(duration_cast<microseconds>(start - profile_start_).count());
    double run_us = static_cast<double>(duration_cast<microseconds>(std::chrono::steady_clock::now() - start).count());
    profile_events_.push_back({{"cat", "Session"},
                               {"name", "model_run"},
                               {"ph", "X"},
                               {"pid", 0},
                               {"tid", 0},
                               {"ts", offset_us},
                               {"dur", run_us}});
    std::vector<engine::LayerProfileEntry> layers = handle.engine->layers();
    const std::vector<double>& times = context.last_layer_times_ms();
    for (size_t i = 0; i < layers.size() && i < times.size(); ++i) {
      double duration_us = times[i] * 1000.0;
      profile_events_.push_back({{"cat", "Node"},
                                 {"name", layers[i].name},
                                 {"ph", "X"},
                                 {"pid", 0},
                                 {"tid", 0},
                                 {"ts", offset_us},
                                 {"dur", duration_us},
                                 {"args", {{"op_name", layers[i].kind}, {"kernel", layers[i].kernel}}}});
      offset_us += duration_us;
    }
  }

  static NodeArg graph_node_arg(const Graph& graph, const std::string& name) {
    const ValueInfo* info = graph.find_value(name);
    NodeArg arg{name, py::list(), "tensor(undefined)"};
    if (info != nullptr) {
      arg.shape = dims_list(info->shape);
      arg.type = onnx_type_string(info->dtype);
    }
    return arg;
  }

  // From an engine file: the batch dim is "batch" ("N*batch" when it holds N slices per image).
  static NodeArg engine_node_arg(const engine::IoTensorInfo& info) {
    NodeArg arg{info.name, py::list(), onnx_type_string(info.dtype)};
    for (size_t axis = 0; axis < info.shape.size(); ++axis) {
      if (info.batched && axis == static_cast<size_t>(info.batch_axis)) {
        arg.shape.append(info.batch_factor == 1 ? std::string("batch") : fmt::format("{}*batch", info.batch_factor));
      } else {
        arg.shape.append(info.shape[axis]);
      }
    }
    return arg;
  }

  SessionOptions options_;
  ModelSource source_;
  bool from_engine_file_ = false;
  engine::BuildOptions build_options_;
  std::shared_ptr<SessionEngine> current_;
  std::map<std::string, std::vector<Dim>> declared_dims_;  // the ONNX model's inputs as declared
  std::vector<NodeArg> inputs_;
  std::vector<NodeArg> outputs_;
  nlohmann::json profile_events_ = nlohmann::json::array();
  std::chrono::steady_clock::time_point profile_start_;
};

}  // namespace

void bind_session(py::module_& module) {
  py::class_<SessionOptions>(module, "SessionOptions", py::dynamic_attr(),
                             "ONNX Runtime's SessionOptions: intra_op_num_threads and enable_profiling are used; "
                             "other ORT settings are accepted and ignored.")
      .def(py::init<>())
      .def_readwrite("intra_op_num_threads", &SessionOptions::intra_op_num_threads)
      .def_readwrite("enable_profiling", &SessionOptions::enable_profiling)
      .def_readwrite("profile_file_prefix", &SessionOptions::profile_file_prefix)
      .def_readwrite("precision", &SessionOptions::precision, "qdqrt: 'int8' (default) or 'fp32'")
      .def_readwrite("max_isa", &SessionOptions::max_isa, "qdqrt: highest ISA (None = the machine's best)");

  py::class_<NodeArg>(module, "NodeArg")
      .def_readonly("name", &NodeArg::name)
      .def_readonly("shape", &NodeArg::shape)
      .def_readonly("type", &NodeArg::type)
      .def("__repr__", [](const NodeArg& arg) {
        return fmt::format("NodeArg(name='{}', type='{}', shape={})", arg.name, arg.type,
                           py::repr(arg.shape).cast<std::string>());
      });

  py::class_<InferenceSession>(
      module, "InferenceSession",
      "ONNX Runtime's InferenceSession: an ONNX model (path or bytes) or a .qdqrt engine file.")
      .def(py::init([](const py::object& model, const py::object& options, const py::object& providers,
                       const py::object& provider_options, const py::kwargs&) {
             (void)providers;  // one provider: qdqrt on the CPU
             (void)provider_options;
             return std::make_unique<InferenceSession>(model, options);
           }),
           py::arg("path_or_bytes"), py::arg("sess_options") = py::none(), py::arg("providers") = py::none(),
           py::arg("provider_options") = py::none())
      .def(
          "run",
          [](InferenceSession& self, const py::object& output_names, const py::dict& feeds,
             const py::object& run_options) {
            (void)run_options;
            return self.run(output_names, feeds);
          },
          py::arg("output_names"), py::arg("input_feed"), py::arg("run_options") = py::none(),
          "Returns the outputs named (all when None) as a list of ndarrays.")
      .def("get_inputs", &InferenceSession::inputs)
      .def("get_outputs", &InferenceSession::outputs)
      .def("get_overridable_initializers", [](const InferenceSession&) { return py::list(); })
      .def("get_providers", [](const InferenceSession&) { return std::vector<std::string>{"CPUExecutionProvider"}; })
      .def("get_session_options", &InferenceSession::options)
      .def("end_profiling", &InferenceSession::end_profiling)
      .def_property_readonly("engine", &InferenceSession::engine, "qdqrt: the engine the session runs.");

  module.def("get_available_providers", []() { return std::vector<std::string>{"CPUExecutionProvider"}; });
  module.def("get_device", []() { return std::string("CPU"); });

  // ORT's enums that scripts set on SessionOptions (accepted and ignored: qdqrt always optimizes fully).
  py::enum_<GraphOptimizationLevel>(module, "GraphOptimizationLevel")
      .value("ORT_DISABLE_ALL", GraphOptimizationLevel::kDisableAll)
      .value("ORT_ENABLE_BASIC", GraphOptimizationLevel::kEnableBasic)
      .value("ORT_ENABLE_EXTENDED", GraphOptimizationLevel::kEnableExtended)
      .value("ORT_ENABLE_ALL", GraphOptimizationLevel::kEnableAll);
  py::enum_<ExecutionMode>(module, "ExecutionMode")
      .value("ORT_SEQUENTIAL", ExecutionMode::kSequential)
      .value("ORT_PARALLEL", ExecutionMode::kParallel);
}

}  // namespace qdqrt::python
