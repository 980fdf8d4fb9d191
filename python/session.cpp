// ONNX Runtime's Python API over qdqrt engines: InferenceSession, SessionOptions, NodeArg, so that
// ORT code switches with `import qdqrt as ort`. An ONNX model is built into an INT8 engine (a QDQ
// model) or an FP32 one (no Q/DQ nodes); a .qdqrt engine file loads as it is. With the TensorRT
// execution provider's profile options (trt_profile_min_shapes, ...) an ONNX model becomes one
// RangeEngine that runs every shape of that range (engine/profiles.h).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include <onnx/onnx_pb.h>

#include "core/file_reading.h"
#include "engine/context_threads.h"
#include "engine/engine_file.h"
#include "engine/profiles.h"
#include "optimizer/pipeline.h"
#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "python/bindings.h"

namespace qdqrt::python {

namespace {

enum class GraphOptimizationLevel { kDisableAll = 0, kEnableBasic = 1, kEnableExtended = 2, kEnableAll = 99 };
enum class ExecutionMode { kSequential = 0, kParallel = 1 };

// ONNX Runtime's SessionOptions. Only these attributes exist (an unknown one, a typo such as
// intra_op_num_thread, raises AttributeError as in ORT); the ones qdqrt has no use for are kept
// so scripts that set and read them run unchanged.
struct SessionOptions {
  int intra_op_num_threads = 0;  // 0: all hardware threads
  int inter_op_num_threads = 0;  // ORT's parallel executor; qdqrt runs layers in order
  bool enable_profiling = false;
  std::string profile_file_prefix = "qdqrt_profile";
  std::string optimized_model_filepath;  // the optimized graph is written there at session creation
  GraphOptimizationLevel graph_optimization_level = GraphOptimizationLevel::kEnableAll;
  ExecutionMode execution_mode = ExecutionMode::kSequential;
  int execution_order = 0;
  int log_severity_level = 2;
  int log_verbosity_level = 0;
  std::string logid;
  bool enable_cpu_mem_arena = true;
  bool enable_mem_pattern = true;
  bool enable_mem_reuse = true;
  bool use_deterministic_compute = false;
  std::map<std::string, std::string> config_entries;  // add_session_config_entry
  // ORT's "session.set_denormal_as_zero": "0" keeps IEEE denormals; unset or anything else flushes
  // them (qdqrt's default, ContextOptions::flush_denormals; ORT's default is to keep them).
  bool flush_denormals() const {
    auto it = config_entries.find("session.set_denormal_as_zero");
    return it == config_entries.end() || it->second != "0";
  }
  // qdqrt's own: the engine's precision and highest ISA (ignored for .qdqrt files, fixed when built).
  std::string precision = "int8";
  py::object max_isa = py::none();
  // A node the engine would run on the reference executor fails the build (BuildOptions::no_reference_layers).
  bool no_reference_layers = false;
  // Float MatMul/Gemm layers with constant weights in bf16 where the CPU runs the bf16 kernels
  // (BuildOptions::bf16, `qdqrt exec --bf16`).
  bool bf16 = false;
};

// ONNX Runtime's RunOptions. `terminate` set before a run makes it fail as in ORT; set by another
// thread while runs using these options execute, it stops them before their next layer (the
// engine's cancel flag, which the options share with the contexts running them).
struct RunOptions {
  int log_severity_level = 2;
  int log_verbosity_level = 0;
  std::string logid;
  std::shared_ptr<std::atomic<bool>> terminate = std::make_shared<std::atomic<bool>>(false);
  bool only_execute_path_to_fetches = false;
  std::map<std::string, std::string> config_entries;  // add_run_config_entry
};

// ONNX Runtime's ModelMetadata (InferenceSession.get_modelmeta()).
struct ModelMetadata {
  std::string producer_name;
  std::string graph_name;
  std::string domain;
  std::string description;
  std::string graph_description;
  int64_t version = 0;
  std::map<std::string, std::string> custom_metadata_map;
};

// ONNX Runtime's OrtValue on the CPU: a numpy array shared with the caller (no copy).
struct OrtValue {
  py::array array;
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

// TensorRT EP's "name:1x3x320x320,other:1x64" (a provider option's value): input name -> shape.
std::map<std::string, Shape> parse_profile_shapes(const std::string& key, const std::string& text) {
  std::map<std::string, Shape> shapes;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string entry = text.substr(start, end - start);
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) {
      throw StatusError{invalid_argument("{}: '{}' is not NAME:DIMS (as 'input:1x3x224x224')", key, entry)};
    }
    Shape shape;
    const std::string dims = entry.substr(colon + 1);
    size_t at = 0;
    while (at <= dims.size()) {
      size_t next = dims.find('x', at);
      if (next == std::string::npos) next = dims.size();
      const std::string digits = dims.substr(at, next - at);
      if (digits.empty() || digits.size() > 12 ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        throw StatusError{invalid_argument("{}: '{}' has a dim '{}' that is not a number", key, entry, digits)};
      }
      shape.push_back(std::stoll(digits));
      at = next + 1;
    }
    if (!shapes.emplace(entry.substr(0, colon), shape).second) {
      throw StatusError{invalid_argument("{}: input '{}' is given twice", key, entry.substr(0, colon))};
    }
    start = end + 1;
  }
  return shapes;
}

// The profile ORT's TensorRT execution provider takes (trt_profile_min_shapes / _opt_ / _max_ in
// a provider's options, given as (name, options) in `providers` or in `provider_options`), or
// none. qdqrt runs the range itself; min and max are needed, opt defaults to max.
std::optional<engine::ShapeProfile> profile_from_providers(const py::object& providers,
                                                           const py::object& provider_options) {
  std::vector<py::dict> option_sets;
  if (!providers.is_none()) {
    for (const py::handle& entry : providers) {
      if (!py::isinstance<py::tuple>(entry)) continue;
      auto pair = py::reinterpret_borrow<py::tuple>(entry);
      if (pair.size() == 2 && py::isinstance<py::dict>(pair[1])) option_sets.push_back(pair[1].cast<py::dict>());
    }
  }
  if (!provider_options.is_none()) {
    for (const py::handle& entry : provider_options) {
      if (py::isinstance<py::dict>(entry)) option_sets.push_back(py::reinterpret_borrow<py::dict>(entry));
    }
  }
  std::map<std::string, std::map<std::string, Shape>> given;  // key -> shapes
  for (const py::dict& options : option_sets) {
    for (const char* key : {"trt_profile_min_shapes", "trt_profile_opt_shapes", "trt_profile_max_shapes"}) {
      if (!options.contains(key)) continue;
      const std::string text = py::str(options[key]).cast<std::string>();
      if (given.contains(key)) throw StatusError{invalid_argument("{} is given twice", key)};
      given[key] = parse_profile_shapes(key, text);
    }
  }
  if (given.empty()) return std::nullopt;
  if (!given.contains("trt_profile_min_shapes") || !given.contains("trt_profile_max_shapes")) {
    throw StatusError{
        invalid_argument("a shape profile needs trt_profile_min_shapes and trt_profile_max_shapes "
                         "(trt_profile_opt_shapes defaults to the max)")};
  }
  Result<engine::ShapeProfile> profile = engine::make_profile(
      given["trt_profile_min_shapes"], given["trt_profile_opt_shapes"], given["trt_profile_max_shapes"]);
  if (!profile.ok()) throw StatusError{profile.status().with_context("trt_profile_*_shapes")};
  return *profile;
}

// An engine with a pool of contexts for it: runs from several Python threads at once each take
// their own context. Swapped whole when the session rebuilds for a larger batch.
struct SessionEngine {
  std::shared_ptr<EngineHandle> handle;
  std::vector<std::unique_ptr<engine::ExecutionContext>> idle_contexts;  // touched with the GIL held
};

class InferenceSession {
 public:
  InferenceSession(const py::object& model, const py::object& options_object,
                   std::optional<engine::ShapeProfile> profile = std::nullopt) {
    if (!options_object.is_none()) options_ = options_object.cast<SessionOptions>();
    source_ = model_source_from(model);
    from_engine_file_ = is_engine_file(source_);
    if (from_engine_file_ && profile) {
      throw StatusError{invalid_argument(
          "trt_profile_*_shapes: an engine file runs the shapes (or the profiles) it was built with; give the ONNX "
          "model")};
    }
    if (from_engine_file_) {
      if (!options_.optimized_model_filepath.empty()) {
        throw StatusError{invalid_argument(
            "optimized_model_filepath: an engine file holds no graph to write (set it for an ONNX model)")};
      }
      if (load_range_engine_file()) return;
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
    build_options_.no_reference_layers = options_.no_reference_layers;
    build_options_.bf16 = options_.bf16;
    if (!options_.optimized_model_filepath.empty()) write_optimized_model(graph);
    if (profile) {
      use_profile(profile);
      return;
    }
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

  py::list run(const py::object& output_names, const py::dict& feeds, const RunOptions* run_options) {
    PreparedRun prepared = run_feeds(names_from(output_names), feeds, {}, run_options);
    py::list results;
    for (py::array& array : prepared.output_arrays) results.append(std::move(array));
    return results;
  }

  // Runs `feeds` (input name -> array, list or OrtValue's array) into new arrays or the
  // preallocated `bound_outputs`; the run's outputs in the order asked for.
  PreparedRun run_feeds(const std::vector<std::string>& names, const py::dict& feeds,
                        const std::map<std::string, py::array>& bound_outputs, const RunOptions* run_options) {
    if (run_options != nullptr && run_options->terminate->load()) {
      throw StatusError{io_error("Exiting due to terminate flag being set to true.")};
    }
    if (range_) return run_range(names, feeds, bound_outputs);
    if (!from_engine_file_ && needs_build(feeds)) build_for(feeds);
    std::shared_ptr<SessionEngine> state = current_;
    PreparedRun prepared = prepare_run(*state->handle, feeds, names, bound_outputs);
    std::unique_ptr<engine::ExecutionContext> context;
    if (state->idle_contexts.empty()) {
      context = state->handle->engine->create_context(
          {.threads = options_.intra_op_num_threads,
           .profiling = options_.enable_profiling,
           .flush_denormals = options_.flush_denormals()});
    } else {
      context = std::move(state->idle_contexts.back());
      state->idle_contexts.pop_back();
    }
    auto start = std::chrono::steady_clock::now();
    // Keeps the flag alive for the run even if the caller drops its RunOptions meanwhile.
    std::shared_ptr<std::atomic<bool>> terminate = run_options != nullptr ? run_options->terminate : nullptr;
    context->set_cancel_flag(terminate.get());
    try {
      run_prepared(*context, prepared);
    } catch (const StatusError& error) {
      context->set_cancel_flag(nullptr);
      state->idle_contexts.push_back(std::move(context));
      if (terminate && terminate->load()) {
        throw StatusError{io_error("Exiting due to terminate flag being set to true. ({})", error.status.message())};
      }
      throw;
    } catch (...) {
      context->set_cancel_flag(nullptr);
      state->idle_contexts.push_back(std::move(context));
      throw;
    }
    context->set_cancel_flag(nullptr);
    if (options_.enable_profiling) record_profile(*state->handle, *context, start, prepared.batch);
    state->idle_contexts.push_back(std::move(context));
    return prepared;
  }

  // ORT's get_modelmeta(): from the ONNX model's header and metadata_props; an engine file keeps
  // only the name of the model it was built from.
  ModelMetadata model_metadata() const {
    ModelMetadata metadata;
    if (from_engine_file_) {
      metadata.producer_name = "qdqrt";
      metadata.graph_name = current_->handle->engine->plan().source_model;
      return metadata;
    }
    onnx::ModelProto model;
    bool parsed = false;
    {
      py::gil_scoped_release release;
      if (source_.path.empty()) {
        parsed = model.ParseFromArray(source_.bytes.data(), static_cast<int>(source_.bytes.size()));
      } else {
        Result<std::string> bytes = read_regular_file(source_.path, "model", size_t{1} << 31);
        parsed = bytes.ok() && model.ParseFromString(*bytes);
      }
    }
    if (!parsed) throw StatusError{io_error("cannot read the model's metadata again")};
    metadata.producer_name = model.producer_name();
    metadata.graph_name = model.graph().name();
    metadata.domain = model.domain();
    metadata.description = model.doc_string();
    metadata.graph_description = model.graph().doc_string();
    metadata.version = model.model_version();
    for (const auto& entry : model.metadata_props()) metadata.custom_metadata_map[entry.key()] = entry.value();
    return metadata;
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

  // The profiles of a session over a range of shapes ([{input: (min, opt, max)}]); None otherwise.
  py::object profiles() const {
    if (!range_) return py::none();
    py::list profiles;
    for (const engine::ShapeProfile& profile : range_->profiles()) {
      py::dict entry;
      for (const auto& [name, range] : profile) entry[py::str(name)] = py::make_tuple(range.min, range.opt, range.max);
      profiles.append(entry);
    }
    return profiles;
  }

  // set_providers(): the TensorRT EP's profile options make the session one over that range (or,
  // none given, one that builds at the feeds' shapes again).
  void use_profile(const std::optional<engine::ShapeProfile>& profile) {
    if (from_engine_file_) {
      if (profile) {
        throw StatusError{invalid_argument(
            "trt_profile_*_shapes: an engine file runs the shapes (or the profiles) it was built with; give the ONNX "
            "model")};
      }
      return;
    }
    if (!profile) {
      if (range_) {
        range_.reset();
        idle_range_contexts_.clear();
        current_.reset();  // the next run builds at its shapes
      }
      return;
    }
    // One engine for the range: a run at any shape in it, each new shape lowered once.
    Result<std::shared_ptr<const engine::RangeEngine>> built = internal_error("unreachable");
    {
      py::gil_scoped_release release;
      built = source_.path.empty() ? engine::RangeEngine::build_from_bytes(source_.bytes, *profile, build_options_)
                                   : engine::RangeEngine::build_from_file(source_.path, *profile, build_options_);
    }
    std::shared_ptr<const engine::RangeEngine> range = value_or_throw(std::move(built));
    std::map<std::string, Shape> opt_shapes;
    for (const auto& [name, input_range] : range->profile()) opt_shapes[name] = input_range.opt;
    auto handle = std::make_shared<EngineHandle>(value_or_throw(range->engine_for(opt_shapes)));
    range_ = std::move(range);
    idle_range_contexts_.clear();
    set_engine(std::move(handle));
  }

  const std::vector<NodeArg>& inputs() const { return inputs_; }
  const std::vector<NodeArg>& outputs() const { return outputs_; }
  // The shape profile ({input: (min, opt, max)}) of a session over a range of shapes; None otherwise.
  py::object profile() const {
    if (!range_) return py::none();
    py::dict profile;
    for (const auto& [name, range] : range_->profile())
      profile[py::str(name)] = py::make_tuple(range.min, range.opt, range.max);
    return profile;
  }
  const SessionOptions& options() const { return options_; }
  // None until the first run when the model has symbolic dims besides the batch.
  std::shared_ptr<EngineHandle> engine() const { return current_ ? current_->handle : nullptr; }

 private:
  // A run of a session over a range of shapes: the feeds' shapes are checked against the profile
  // (an error names the input, dim and range), and the engine lowered for them runs on one of the
  // session's RangeContexts (a context per concurrent run; each keeps its shapes' plans).
  PreparedRun run_range(const std::vector<std::string>& names, const py::dict& feeds,
                        const std::map<std::string, py::array>& bound_outputs) {
    std::map<std::string, Shape> shapes;
    for (auto [key, value] : feeds) {
      if (!py::isinstance<py::str>(key)) continue;
      py::array array = shape_view(value);
      shapes[py::cast<std::string>(key)] = Shape(array.shape(), array.shape() + array.ndim());
    }
    // Held for the run: set_providers() may replace the session's range meanwhile.
    std::shared_ptr<const engine::RangeEngine> range = range_;
    Result<std::shared_ptr<const engine::Engine>> lowered = internal_error("unreachable");
    {
      py::gil_scoped_release release;  // a shape's first run lowers it
      lowered = range->engine_for(shapes);
    }
    EngineHandle handle(value_or_throw(std::move(lowered)));
    PreparedRun prepared = prepare_run(handle, feeds, names, bound_outputs);
    std::unique_ptr<engine::RangeContext> context;
    if (idle_range_contexts_.empty()) {
      context =
          range->create_context({.threads = options_.intra_op_num_threads,
           .profiling = options_.enable_profiling,
           .flush_denormals = options_.flush_denormals()});
    } else {
      context = std::move(idle_range_contexts_.back());
      idle_range_contexts_.pop_back();
    }
    auto start = std::chrono::steady_clock::now();
    Status status;
    {
      py::gil_scoped_release release;
      status = context->run(prepared.input_bindings, prepared.output_bindings);
    }
    if (status.is_ok() && options_.enable_profiling && context->last_context() != nullptr) {
      record_profile(handle, *context->last_context(), start, prepared.batch);
    }
    if (range == range_) idle_range_contexts_.push_back(std::move(context));
    throw_if_error(status);
    return prepared;
  }

  // A range engine's file (qdqrt exec --minShapes/--maxShapes --saveEngine): the session runs its
  // profiles, its NodeArgs are the model's inputs and outputs as the file's model declares them.
  // False for a fixed engine's file.
  bool load_range_engine_file() {
    auto bytes = std::make_shared<std::vector<uint8_t>>();
    Status status;
    {
      py::gil_scoped_release release;
      if (source_.path.empty()) {
        *bytes = source_.bytes;
      } else {
        Result<std::string> text = read_regular_file(source_.path, "engine file", size_t{1} << 40);
        if (text.ok()) bytes->assign(text->begin(), text->end());
        status = text.status();
      }
    }
    throw_if_error(status);
    if (!engine::is_range_engine_file(*bytes)) return false;
    std::shared_ptr<const std::vector<uint8_t>> storage = bytes;
    Result<std::shared_ptr<const engine::RangeEngine>> read = internal_error("unreachable");
    Result<engine::EngineFileContents> contents = internal_error("unreachable");
    Result<Graph> declared = internal_error("unreachable");
    {
      py::gil_scoped_release release;
      read = engine::RangeEngine::read(*storage, storage);
      if (read.ok()) contents = engine::read_engine_file(*storage, storage);
      if (contents.ok() && contents->range) {
        declared = load_onnx_bytes(contents->range->model.bytes.data(), contents->range->model.bytes.size());
      }
    }
    std::shared_ptr<const engine::RangeEngine> range = value_or_throw(std::move(read));
    Graph graph = value_or_throw(std::move(declared));
    for (const std::string& name : graph.inputs) inputs_.push_back(graph_node_arg(graph, name));
    for (const std::string& name : graph.outputs) outputs_.push_back(graph_node_arg(graph, name));
    std::map<std::string, Shape> opt_shapes;
    for (const auto& [name, input_range] : range->profile()) opt_shapes[name] = input_range.opt;
    auto handle = std::make_shared<EngineHandle>(value_or_throw(range->engine_for(opt_shapes)));
    handle->storage = storage;
    range_ = std::move(range);
    set_engine(std::move(handle));
    return true;
  }

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
      if (!py::isinstance<py::str>(key)) continue;
      const std::string name = py::cast<std::string>(key);
      const engine::IoTensorInfo* info = current_->handle->find_input(name);
      auto declared = declared_dims_.find(name);
      py::array array = shape_view(value);
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
      if (!feeds.contains(name) || shape_view(feeds[py::str(name)]).ndim() != static_cast<py::ssize_t>(dims.size())) {
        if (info != nullptr) options.input_shapes[name] = info->shape;
        continue;
      }
      py::array array = shape_view(feeds[py::str(name)]);
      Shape shape(array.shape(), array.shape() + array.ndim());
      if (info != nullptr && info->batched && !shape.empty() &&
          current_->handle->engine->plan().fixed_batch_reason.empty()) {
        shape[0] = std::max(shape[0], 2 * current_->handle->engine->max_batch());
      }
      options.input_shapes[name] = shape;
    }
    set_engine(build_engine_handle(source_, options));
  }

  // ORT's trace events: one "model_run" (cat Session) per run, one "<node>_kernel_time" (cat Node)
  // per layer with args op_name, provider and the type and shape of each input and output, as
  // ORT's profile readers expect; qdqrt's layer kind and kernel in args too.
  void record_profile(const EngineHandle& handle, const engine::ExecutionContext& context,
                      std::chrono::steady_clock::time_point start, int64_t batch) {
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
                               {"dur", run_us},
                               {"args", nlohmann::json::object()}});
    const engine::EnginePlan& plan = handle.engine->plan();
    const int64_t run_batch = batch >= 0 ? batch : plan.max_batch;
    auto type_shapes = [&](const std::vector<int32_t>& tensors) {
      nlohmann::json list = nlohmann::json::array();
      for (int32_t index : tensors) {
        if (index < 0 || static_cast<size_t>(index) >= plan.tensors.size()) continue;
        const engine::PlanTensor& tensor = plan.tensors[static_cast<size_t>(index)];
        Shape shape = tensor.shape;
        if (tensor.batched && static_cast<size_t>(tensor.batch_axis) < shape.size()) {
          shape[static_cast<size_t>(tensor.batch_axis)] = tensor.batch_factor * run_batch;
        }
        list.push_back({{dtype_name(tensor.dtype), shape}});
      }
      return list;
    };
    const std::vector<double>& times = context.last_layer_times_ms();
    for (size_t i = 0; i < plan.layers.size() && i < times.size(); ++i) {
      const engine::PlanLayer& layer = plan.layers[i];
      double duration_us = times[i] * 1000.0;
      profile_events_.push_back({{"cat", "Node"},
                                 {"name", layer.name + "_kernel_time"},
                                 {"ph", "X"},
                                 {"pid", 0},
                                 {"tid", 0},
                                 {"ts", offset_us},
                                 {"dur", duration_us},
                                 {"args",
                                  {{"op_name", layer.op_type},
                                   {"provider", "CPUExecutionProvider"},
                                   {"input_type_shape", type_shapes(layer.inputs)},
                                   {"output_type_shape", type_shapes(layer.outputs)},
                                   {"qdqrt_layer_kind", layer.kind},
                                   {"qdqrt_kernel", layer.kernel}}}});
      offset_us += duration_us;
    }
  }

  // The graph after qdqrt's optimizer (fused layers in the "qdqrt" domain), as ORT writes its
  // optimized graph to optimized_model_filepath when the session is created.
  void write_optimized_model(Graph graph) const {
    Status status;
    {
      py::gil_scoped_release release;
      optimizer::OptimizeOptions optimize_options;
      optimize_options.float_only = build_options_.precision == engine::Precision::kFp32;
      auto optimized = optimizer::optimize(graph, optimize_options);
      status = optimized.ok() ? write_onnx_file(graph, options_.optimized_model_filepath) : optimized.status();
    }
    throw_if_error(status.with_context(fmt::format("optimized_model_filepath '{}'", options_.optimized_model_filepath)));
  }

  // A feed's shape for the rebuild decisions: arrays as they are, lists and scalars through numpy.
  static py::array shape_view(const py::handle& value) {
    if (py::isinstance<py::array>(value)) return py::reinterpret_borrow<py::array>(value);
    return py::array(py::module_::import("numpy").attr("asarray")(value));
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
  std::shared_ptr<const engine::RangeEngine> range_;                        // a session over a range of shapes
  std::vector<std::unique_ptr<engine::RangeContext>> idle_range_contexts_;  // touched with the GIL held
  std::map<std::string, std::vector<Dim>> declared_dims_;  // the ONNX model's inputs as declared
  std::vector<NodeArg> inputs_;
  std::vector<NodeArg> outputs_;
  nlohmann::json profile_events_ = nlohmann::json::array();
  std::chrono::steady_clock::time_point profile_start_;
};

// ORT's IOBinding: inputs and outputs bound ahead of the run. Outputs bound to an OrtValue or a
// buffer are written in place (the zero-copy path); outputs bound by name only get new arrays.
struct IOBinding {
  py::object session_object;  // keeps the session alive
  InferenceSession* session = nullptr;
  py::dict inputs;
  std::vector<std::string> output_names;
  std::map<std::string, py::array> bound_outputs;
  std::vector<py::array> results;  // of the last run, in output_names order

  void bind_output_name(const std::string& name) {
    if (std::find(output_names.begin(), output_names.end(), name) == output_names.end()) output_names.push_back(name);
  }
};

void check_cpu_device(const std::string& device_type) {
  if (device_type != "cpu" && device_type != "CPU") {
    throw StatusError{invalid_argument("device_type '{}': qdqrt runs on the CPU only ('cpu')", device_type)};
  }
}

// A numpy view of caller-owned memory (ORT's buffer_ptr bindings): no copy, the caller keeps it alive.
py::array array_over_pointer(const py::object& element_type, const std::vector<int64_t>& shape, uintptr_t pointer) {
  if (pointer == 0) throw StatusError{invalid_argument("buffer_ptr is 0")};
  py::dtype dtype = py::dtype::from_args(element_type);
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::capsule owner(reinterpret_cast<void*>(pointer), [](void*) {});  // the memory is the caller's
  return py::array(dtype, dims, reinterpret_cast<void*>(pointer), owner);
}

// ORT warns (and goes on with the CPU) when a provider it does not have is asked for.
void warn_about_providers(const py::object& providers) {
  if (providers.is_none()) return;
  for (const py::handle& entry : providers) {
    py::object name_object = py::isinstance<py::tuple>(entry) ? py::reinterpret_borrow<py::tuple>(entry)[0]
                                                              : py::reinterpret_borrow<py::object>(entry);
    std::string name = py::str(name_object).cast<std::string>();
    if (name == "CPUExecutionProvider") continue;
    std::string message = fmt::format(
        "Specified provider '{}' is not in available provider names.Available providers: 'CPUExecutionProvider'", name);
    if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw py::error_already_set();
  }
}

py::dict feeds_from_ort_values(const py::dict& values) {
  py::dict feeds;
  for (auto [key, value] : values) {
    feeds[key] = py::isinstance<OrtValue>(value) ? py::object(value.cast<const OrtValue&>().array)
                                                  : py::reinterpret_borrow<py::object>(value);
  }
  return feeds;
}

}  // namespace

void bind_session(py::module_& module) {
  auto checked_threads = [](int SessionOptions::*field, const char* name) {
    return [field, name](SessionOptions& self, int threads) {
      throw_if_error(engine::check_context_threads(threads).with_context(name));
      self.*field = threads;
    };
  };
  py::class_<SessionOptions>(module, "SessionOptions",
                             "ONNX Runtime's SessionOptions: intra_op_num_threads, enable_profiling, "
                             "profile_file_prefix and optimized_model_filepath are used; ORT's other settings are "
                             "accepted and kept; an unknown attribute raises AttributeError.")
      .def(py::init<>())
      .def_property(
          "intra_op_num_threads", [](const SessionOptions& self) { return self.intra_op_num_threads; },
          checked_threads(&SessionOptions::intra_op_num_threads, "intra_op_num_threads"))
      .def_property(
          "inter_op_num_threads", [](const SessionOptions& self) { return self.inter_op_num_threads; },
          checked_threads(&SessionOptions::inter_op_num_threads, "inter_op_num_threads"))
      .def_readwrite("enable_profiling", &SessionOptions::enable_profiling)
      .def_readwrite("profile_file_prefix", &SessionOptions::profile_file_prefix)
      .def_readwrite("optimized_model_filepath", &SessionOptions::optimized_model_filepath)
      .def_readwrite("graph_optimization_level", &SessionOptions::graph_optimization_level)
      .def_readwrite("execution_mode", &SessionOptions::execution_mode)
      .def_readwrite("execution_order", &SessionOptions::execution_order)
      .def_readwrite("log_severity_level", &SessionOptions::log_severity_level)
      .def_readwrite("log_verbosity_level", &SessionOptions::log_verbosity_level)
      .def_readwrite("logid", &SessionOptions::logid)
      .def_readwrite("enable_cpu_mem_arena", &SessionOptions::enable_cpu_mem_arena)
      .def_readwrite("enable_mem_pattern", &SessionOptions::enable_mem_pattern)
      .def_readwrite("enable_mem_reuse", &SessionOptions::enable_mem_reuse)
      .def_readwrite("use_deterministic_compute", &SessionOptions::use_deterministic_compute)
      .def("add_session_config_entry",
           [](SessionOptions& self, const std::string& key, const std::string& value) { self.config_entries[key] = value; })
      .def("get_session_config_entry",
           [](const SessionOptions& self, const std::string& key) {
             auto it = self.config_entries.find(key);
             if (it == self.config_entries.end()) {
               throw StatusError{invalid_argument("SessionOptions has no config entry '{}'", key)};
             }
             return it->second;
           })
      .def_readwrite("precision", &SessionOptions::precision, "qdqrt: 'int8' (default) or 'fp32'")
      .def_readwrite("max_isa", &SessionOptions::max_isa, "qdqrt: highest ISA (None = the machine's best)")
      .def_readwrite("no_reference_layers", &SessionOptions::no_reference_layers,
                     "qdqrt: fail when a node would run on the reference executor (slow fallback) instead of a native layer")
      .def_readwrite("bf16", &SessionOptions::bf16,
                     "qdqrt: float MatMul/Gemm layers with constant weights in bf16 (fp32 sums) where the CPU has "
                     "AVX512_BF16 or AMX-BF16, as trtexec --bf16; elsewhere they stay fp32");

  py::class_<RunOptions>(module, "RunOptions", "ONNX Runtime's RunOptions: terminate is used, the rest kept.")
      .def(py::init<>())
      .def_readwrite("log_severity_level", &RunOptions::log_severity_level)
      .def_readwrite("log_verbosity_level", &RunOptions::log_verbosity_level)
      .def_readwrite("logid", &RunOptions::logid)
      .def_property(
          "terminate", [](const RunOptions& self) { return self.terminate->load(); },
          [](RunOptions& self, bool value) { self.terminate->store(value); },
          "True stops the runs using these options: before a run starts, or before the next layer of a run "
          "executing in another thread")
      .def_readwrite("only_execute_path_to_fetches", &RunOptions::only_execute_path_to_fetches)
      .def("add_run_config_entry",
           [](RunOptions& self, const std::string& key, const std::string& value) { self.config_entries[key] = value; })
      .def("get_run_config_entry", [](const RunOptions& self, const std::string& key) {
        auto it = self.config_entries.find(key);
        if (it == self.config_entries.end()) throw StatusError{invalid_argument("RunOptions has no config entry '{}'", key)};
        return it->second;
      });

  py::class_<ModelMetadata>(module, "ModelMetadata")
      .def_readonly("producer_name", &ModelMetadata::producer_name)
      .def_readonly("graph_name", &ModelMetadata::graph_name)
      .def_readonly("domain", &ModelMetadata::domain)
      .def_readonly("description", &ModelMetadata::description)
      .def_readonly("graph_description", &ModelMetadata::graph_description)
      .def_readonly("version", &ModelMetadata::version)
      .def_readonly("custom_metadata_map", &ModelMetadata::custom_metadata_map);

  py::class_<OrtValue>(module, "OrtValue", "ONNX Runtime's OrtValue on the CPU: shares its numpy array's memory.")
      .def_static(
          "ortvalue_from_numpy",
          [](const py::array& array, const std::string& device_type, int device_id) {
            check_cpu_device(device_type);
            (void)device_id;
            // The engine reads C-contiguous memory: other arrays are copied once, here.
            return OrtValue{py::array(py::module_::import("numpy").attr("ascontiguousarray")(array))};
          },
          py::arg("numpy_obj"), py::arg("device_type") = "cpu", py::arg("device_id") = 0)
      .def_static(
          "ortvalue_from_shape_and_type",
          [](const std::vector<int64_t>& shape, const py::object& element_type, const std::string& device_type,
             int device_id) {
            check_cpu_device(device_type);
            (void)device_id;
            for (int64_t dim : shape) {
              if (dim < 0) throw StatusError{invalid_argument("shape {} has a negative dim", shape_to_string(shape))};
            }
            return OrtValue{py::array(py::module_::import("numpy").attr("empty")(shape, element_type))};
          },
          py::arg("shape"), py::arg("element_type"), py::arg("device_type") = "cpu", py::arg("device_id") = 0)
      .def("numpy", [](const OrtValue& self) { return self.array; }, "The array (shared, not a copy).")
      .def("shape", [](const OrtValue& self) { return std::vector<py::ssize_t>(self.array.shape(), self.array.shape() + self.array.ndim()); })
      .def("data_type",
           [](const OrtValue& self) {
             std::string name = py::str(self.array.dtype()).cast<std::string>();
             if (name == "float32") return std::string("tensor(float)");
             if (name == "float64") return std::string("tensor(double)");
             return fmt::format("tensor({})", name);
           })
      .def("element_type", [](const OrtValue& self) { return self.array.dtype(); })
      .def("device_name", [](const OrtValue&) { return std::string("cpu"); })
      .def("is_tensor", [](const OrtValue&) { return true; })
      .def("has_value", [](const OrtValue&) { return true; })
      .def("data_ptr", [](const OrtValue& self) { return reinterpret_cast<uintptr_t>(self.array.data()); });

  py::class_<IOBinding>(module, "IOBinding", "ONNX Runtime's IOBinding (InferenceSession.io_binding()).")
      .def("bind_cpu_input",
           [](IOBinding& self, const std::string& name, const py::object& array) { self.inputs[py::str(name)] = array; })
      .def(
          "bind_input",
          [](IOBinding& self, const std::string& name, const std::string& device_type, int device_id,
             const py::object& element_type, const std::vector<int64_t>& shape, uintptr_t buffer_ptr) {
            check_cpu_device(device_type);
            (void)device_id;
            self.inputs[py::str(name)] = array_over_pointer(element_type, shape, buffer_ptr);
          },
          py::arg("name"), py::arg("device_type"), py::arg("device_id"), py::arg("element_type"), py::arg("shape"),
          py::arg("buffer_ptr"))
      .def("bind_ortvalue_input",
           [](IOBinding& self, const std::string& name, const OrtValue& value) { self.inputs[py::str(name)] = value.array; })
      .def(
          "bind_output",
          [](IOBinding& self, const std::string& name, const std::string& device_type, int device_id,
             const py::object& element_type, const py::object& shape, const py::object& buffer_ptr) {
            check_cpu_device(device_type);
            (void)device_id;
            self.bind_output_name(name);
            if (buffer_ptr.is_none()) {
              self.bound_outputs.erase(name);
              return;
            }
            if (element_type.is_none() || shape.is_none()) {
              throw StatusError{invalid_argument("bind_output '{}': a buffer_ptr needs element_type and shape", name)};
            }
            self.bound_outputs[name] =
                array_over_pointer(element_type, shape.cast<std::vector<int64_t>>(), buffer_ptr.cast<uintptr_t>());
          },
          py::arg("name"), py::arg("device_type") = "cpu", py::arg("device_id") = 0, py::arg("element_type") = py::none(),
          py::arg("shape") = py::none(), py::arg("buffer_ptr") = py::none())
      .def("bind_ortvalue_output",
           [](IOBinding& self, const std::string& name, const OrtValue& value) {
             self.bind_output_name(name);
             self.bound_outputs[name] = value.array;
           })
      .def("get_outputs",
           [](const IOBinding& self) {
             py::list values;
             for (const py::array& array : self.results) values.append(OrtValue{array});
             return values;
           })
      .def("copy_outputs_to_cpu",
           [](const IOBinding& self) {
             py::list arrays;
             for (const py::array& array : self.results) arrays.append(py::array(py::module_::import("numpy").attr("array")(array)));
             return arrays;
           })
      .def("clear_binding_inputs", [](IOBinding& self) { self.inputs = py::dict(); })
      .def("clear_binding_outputs",
           [](IOBinding& self) {
             self.output_names.clear();
             self.bound_outputs.clear();
             self.results.clear();
           })
      .def("synchronize_inputs", [](const IOBinding&) {})
      .def("synchronize_outputs", [](const IOBinding&) {});

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
             warn_about_providers(providers);  // one provider: qdqrt on the CPU
             // The TensorRT EP's profile options: one engine for that range of shapes.
             return std::make_unique<InferenceSession>(model, options,
                                                       profile_from_providers(providers, provider_options));
           }),
           py::arg("path_or_bytes"), py::arg("sess_options") = py::none(), py::arg("providers") = py::none(),
           py::arg("provider_options") = py::none())
      .def(
          "run",
          [](InferenceSession& self, const py::object& output_names, const py::dict& feeds,
             const RunOptions* run_options) { return self.run(output_names, feeds, run_options); },
          py::arg("output_names"), py::arg("input_feed"), py::arg("run_options") = py::none(),
          "Returns the outputs named (all when None) as a list of ndarrays.")
      .def(
          "run_with_ort_values",
          [](InferenceSession& self, const py::object& output_names, const py::dict& feeds,
             const RunOptions* run_options) {
            PreparedRun prepared = self.run_feeds(names_from(output_names), feeds_from_ort_values(feeds), {}, run_options);
            py::list values;
            for (py::array& array : prepared.output_arrays) values.append(OrtValue{std::move(array)});
            return values;
          },
          py::arg("output_names"), py::arg("input_dict_ort_values"), py::arg("run_options") = py::none(),
          "As run, with OrtValues in and out.")
      .def("io_binding",
           [](py::object self) {
             IOBinding binding;
             binding.session = self.cast<InferenceSession*>();
             binding.session_object = std::move(self);
             return binding;
           })
      .def(
          "run_with_iobinding",
          [](InferenceSession& self, IOBinding& binding, const RunOptions* run_options) {
            if (binding.session != &self) {
              throw StatusError{invalid_argument("the IOBinding belongs to another InferenceSession")};
            }
            PreparedRun prepared = self.run_feeds(binding.output_names, binding.inputs, binding.bound_outputs, run_options);
            binding.results = std::move(prepared.output_arrays);
            if (binding.output_names.empty()) binding.output_names = prepared.output_names;
          },
          py::arg("iobinding"), py::arg("run_options") = py::none())
      .def("get_inputs", &InferenceSession::inputs)
      .def("get_outputs", &InferenceSession::outputs)
      .def("get_modelmeta", &InferenceSession::model_metadata)
      .def("get_overridable_initializers", [](const InferenceSession&) { return py::list(); })
      .def("get_providers", [](const InferenceSession&) { return std::vector<std::string>{"CPUExecutionProvider"}; })
      .def("get_provider_options",
           [](const InferenceSession&) {
             py::dict options;
             options["CPUExecutionProvider"] = py::dict();
             return options;
           })
      .def(
          "set_providers",
          [](InferenceSession& self, const py::object& providers, const py::object& provider_options) {
            warn_about_providers(providers);
            self.use_profile(profile_from_providers(providers, provider_options));
          },
          py::arg("providers") = py::none(), py::arg("provider_options") = py::none())
      .def("get_session_options", &InferenceSession::options)
      .def("end_profiling", &InferenceSession::end_profiling)
      .def_property_readonly("engine", &InferenceSession::engine,
                             "qdqrt: the engine the session runs (over a range of shapes: the one built for the "
                             "opt shapes).")
      .def_property_readonly("profiles", &InferenceSession::profiles,
                             "qdqrt: every profile of a session over a range of shapes (a range engine's file may "
                             "hold several); None otherwise.")
      .def_property_readonly("profile", &InferenceSession::profile,
                             "qdqrt: {input: (min, opt, max)} of a session over a range of shapes "
                             "(trt_profile_*_shapes provider options); None otherwise.");

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
