#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <atomic>
#include <functional>
#include <thread>
#include <tbb/task_group.h>
#include <tbb/task_arena.h>

#include "core/version.h"
#include "engine/builder.h"
#include "engine/context_threads.h"
#include "engine/engine_file.h"
#include "engine/layer.h"
#include "engine/layer_team.h"
#include "engine/layer_params.h"
#include "engine/plan_aliases.h"
#include "engine/plan_validation.h"
#include "engine/warm_stream.h"
#include "kernels/aligned_buffer.h"
#include "kernels/denormals.h"
#include "kernels/dispatch.h"
#include "kernels/scratch.h"
#include "optimizer/pipeline.h"
#include "core/shape_inference.h"
#include "engine/batch_tracking.h"
#include "parser/onnx_loader.h"

namespace qdqrt::engine {
namespace {

// Bytes of tensors a layer reads and writes at this run's batch (weights are in its own estimate).
double streamed_bytes(const EnginePlan& plan, const PlanLayer& layer, const RunState& state) {
  double bytes = 0.0;
  auto add = [&](int32_t index) {
    if (index < 0) return;
    const PlanTensor& tensor = plan.tensors[static_cast<size_t>(index)];
    bytes += static_cast<double>(state.numel(index)) * static_cast<double>(dtype_size(tensor.dtype));
  };
  for (int32_t index : layer.inputs) add(index);
  for (int32_t index : layer.outputs) add(index);
  return bytes;
}

// Inputs with a symbolic dim 0 are batched; other symbolic dims must be given.
struct ResolvedInputs {
  std::map<std::string, Shape> shapes;
  std::vector<std::string> batched;
};

Result<ResolvedInputs> resolve_input_shapes(const std::vector<ValueInfo>& declared, const BuildOptions& options) {
  ResolvedInputs resolved;
  for (const auto& given : options.input_shapes) {
    const std::string& name = given.first;
    if (std::none_of(declared.begin(), declared.end(), [&](const ValueInfo& info) { return info.name == name; })) {
      std::vector<std::string> names;
      for (const ValueInfo& info : declared) names.push_back(info.name);
      return invalid_argument("--shapes: '{}' is not an input of the model (inputs: {})", name, fmt::join(names, ", "));
    }
  }
  for (const ValueInfo& info : declared) {
    const std::string& name = info.name;
    if (!info.shape) {
      if (auto it = options.input_shapes.find(name); it != options.input_shapes.end()) {
        resolved.shapes[name] = it->second;
        continue;
      }
      return invalid_argument("input '{}' has unknown rank; give its shape (--shapes={}:DIMS)", name, name);
    }
    const std::vector<Dim>& dims = *info.shape;
    bool batch_symbolic = !dims.empty() && !dims[0].is_static();
    if (batch_symbolic) resolved.batched.push_back(name);
    if (auto it = options.input_shapes.find(name); it != options.input_shapes.end()) {
      resolved.shapes[name] = it->second;
      continue;
    }
    Shape shape;
    for (size_t axis = 0; axis < dims.size(); ++axis) {
      if (dims[axis].is_static()) {
        shape.push_back(dims[axis].value);
      } else if (axis == 0) {
        shape.push_back(1);  // a symbolic batch builds for batch 1 unless --shapes says otherwise
      } else {
        return invalid_argument("input '{}' has symbolic dim {} ({}); give its shape (--shapes={}:DIMS)", name, axis,
                                dims_to_string(dims), name);
      }
    }
    resolved.shapes[name] = shape;
  }
  return resolved;
}

// Optimizes `graph` (static shapes at the maximum batch) once and lowers it. Shape inference
// before and after the optimizer gives every dim an expression of the batch (dim 0 of
// `batched`), which tells the builder where the batch is in every value.
Result<EnginePlan> lower_graph(Graph graph, const BuildOptions& options, const std::vector<std::string>& batched) {
  optimizer::OptimizeOptions optimize_options;
  optimize_options.only_passes = options.only_passes;
  optimize_options.disabled_passes = options.disabled_passes;
  optimize_options.float_only = options.precision == Precision::kFp32;
  // The fusions whose rule follows the kernels' vector width ask for the ISA build_plan picks.
  optimize_options.target_isa = kernels::usable_isa(std::min(options.max_isa, kernels::active_isa()));
  mark_batch_dims(graph, batched);
  QDQRT_RETURN_IF_ERROR(infer_shapes(graph));
  auto report = optimizer::optimize(graph, optimize_options);
  if (!report.ok()) return report.status();
  ShapeInferenceReport shapes;
  QDQRT_RETURN_IF_ERROR(infer_shapes(graph, &shapes));
  QDQRT_ASSIGN_OR_RETURN(EnginePlan plan, build_plan(graph, options, batched, shapes));
  plan.qdqrt_version = kVersion;
  return plan;
}

}  // namespace

std::string reference_layer_reason(const PlanLayer& layer) {
  auto reason = layer.params.get_string(std::string(params::kReferenceReason.key()), "");
  return reason.ok() && !reason->empty() ? *reason : std::string("not recorded");
}

// ------------------------------------------------------------------------------------------------
// Engine

struct Engine::BoundLayers {
  std::vector<std::unique_ptr<Layer>> layers;
};

Engine::~Engine() = default;

namespace {

// An ONNX model read by `load` (from a file or from bytes), loaded once: the loader hands over the
// declared inputs, and infers every shape at the ones chosen from them (the maximum batch).
using LoadGraph = std::function<Result<Graph>(const LoadOptions& options)>;

Result<EnginePlan> plan_from_onnx(const LoadGraph& load, const std::string& model_name, const BuildOptions& options) {
  ResolvedInputs resolved;
  LoadOptions load_options;
  load_options.choose_input_shapes = [&](const std::vector<ValueInfo>& declared) -> Result<std::map<std::string, Shape>> {
    QDQRT_ASSIGN_OR_RETURN(resolved, resolve_input_shapes(declared, options));
    return resolved.shapes;
  };
  QDQRT_ASSIGN_OR_RETURN(Graph graph, load(load_options));
  graph.name = model_name;  // becomes source_model
  return lower_graph(std::move(graph), options, resolved.batched);
}

// Binds a plan just built (any failure comes back as the build's).
Result<std::shared_ptr<const Engine>> bind(Result<EnginePlan> plan) {
  if (!plan.ok()) return plan.status();
  return Engine::from_plan(std::move(plan).value());
}

}  // namespace

Result<EnginePlan> build_plan_from_onnx_file(const std::string& onnx_path, const BuildOptions& options) {
  size_t slash = onnx_path.find_last_of('/');
  std::string model_name = slash == std::string::npos ? onnx_path : onnx_path.substr(slash + 1);
  auto load = [&](const LoadOptions& load_options) { return load_onnx_file(onnx_path, load_options); };
  return plan_from_onnx(load, model_name, options);
}

Result<EnginePlan> build_plan_from_onnx_bytes(std::span<const uint8_t> onnx_bytes, const BuildOptions& options) {
  auto load = [&](const LoadOptions& load_options) {
    return load_onnx_bytes(onnx_bytes.data(), onnx_bytes.size(), load_options);
  };
  return plan_from_onnx(load, "", options);
}

Result<std::shared_ptr<const Engine>> Engine::build_from_file(const std::string& onnx_path, const BuildOptions& options) {
  return bind(build_plan_from_onnx_file(onnx_path, options));
}

Result<std::shared_ptr<const Engine>> Engine::build_from_bytes(std::span<const uint8_t> onnx_bytes,
                                                               const BuildOptions& options) {
  return bind(build_plan_from_onnx_bytes(onnx_bytes, options));
}

Result<std::shared_ptr<const Engine>> Engine::build(Graph graph, const BuildOptions& options) {
  if (!options.input_shapes.empty()) {
    return invalid_argument("Engine::build(Graph): give the shapes in the graph (input_shapes is for ONNX files)");
  }
  // Every input of rank >= 1 is taken as batched along dim 0.
  std::vector<std::string> batched;
  for (const std::string& name : graph.inputs) {
    const ValueInfo* info = graph.find_value(name);
    if (info && info->shape && !info->shape->empty()) batched.push_back(name);
  }
  return bind(lower_graph(std::move(graph), options, batched));
}

Result<std::shared_ptr<const Engine>> Engine::from_plan(EnginePlan plan) {
  std::string binding = "the plan";  // what was being bound when memory ran out
  try {
    QDQRT_RETURN_IF_ERROR(validate_plan(plan));
    std::shared_ptr<Engine> engine(new Engine());
    engine->plan_ = std::move(plan);
    engine->bound_ = std::make_unique<BoundLayers>();
    const LayerRegistry& registry = LayerRegistry::instance();
    for (const PlanLayer& layer : engine->plan_.layers) {
      const LayerKind* kind = registry.find_kind(layer.kind);
      if (!kind) return invalid_model("engine: layer '{}' has unknown kind '{}'", layer.name, layer.kind);
      if (!kind->any_batch_layout) {
        for (const std::vector<int32_t>* list : {&layer.inputs, &layer.outputs}) {
          for (int32_t index : *list) {
            if (index < 0) continue;
            const PlanTensor& tensor = engine->plan_.tensors[static_cast<size_t>(index)];
            if (batch_leads(tensor) || (kind->batch_slices_on_dim0 && batch_on_dim0(tensor))) continue;
            return invalid_model("engine: layer '{}' ({}) takes the batch on dim 0 only, but '{}' {} has it on dim {}"
                                 " ({} per image)",
                                 layer.name, layer.kind, tensor.name, shape_to_string(tensor.shape),
                                 tensor.batch_axis, tensor.batch_factor);
          }
        }
      }
      for (size_t i = 0; i < layer.outputs.size(); ++i) {
        const int32_t index = layer.outputs[i];
        if (index < 0 || engine->plan_.tensors[static_cast<size_t>(index)].row_stride == 0) continue;
        const PlanTensor& strided = engine->plan_.tensors[static_cast<size_t>(index)];
        const int64_t row_length = strided_row_length(engine->plan_, strided);
        if (kind->writes_strided_rows == nullptr || !kind->writes_strided_rows(layer, i, strided, row_length)) {
          return invalid_model("engine: layer '{}' ({}) cannot write '{}' in rows of {} at a row stride of {}",
                               layer.name, layer.kind, strided.name, row_length, strided.row_stride);
        }
      }
      binding = fmt::format("layer '{}' ({})", layer.name, layer.kind);
      BindContext context(engine->plan_, layer);
      auto bound = kind->bind(context);
      if (!bound.ok()) {
        // Every refusal names its layer, also those of shared helpers that do not know it.
        if (bound.status().message().find(binding) != std::string::npos) return bound.status();
        return Status(bound.status().code(), fmt::format("{}: {}", binding, bound.status().message()));
      }
      engine->bound_->layers.push_back(std::move(bound).value());
    }
    // Each layer learns the weights run after it (past up to two layers without any, such as a
    // pool or a softmax, whose few activations leave them in the L2).
    std::vector<std::unique_ptr<Layer>>& layers = engine->bound_->layers;
    for (size_t i = 0; i + 1 < layers.size(); ++i) {
      std::span<const int8_t> next;
      for (size_t j = i + 1; j < layers.size() && j <= i + 3 && next.empty(); ++j) next = layers[j]->leading_weights();
      layers[i]->set_following_weights(next);
    }
    // The warm stream (engine/warm_stream.h).
    std::vector<WeightSpans> streamed;
    for (const auto& layer : layers) streamed.push_back(layer->streamed_weights());
    std::vector<WeightSpans> slices = warm_slices(streamed);
    for (size_t i = 0; i < layers.size(); ++i) {
      if (!slices[i].empty()) layers[i]->set_warm_weights(std::move(slices[i]));
    }
    return std::shared_ptr<const Engine>(std::move(engine));
  } catch (const std::bad_alloc&) {
    return io_error("not enough memory while binding {}", binding);
  } catch (const std::exception& error) {
    return internal_error("engine: unexpected exception while binding layers: {}", error.what());
  }
}

Status Engine::save(const std::string& path) const { return write_plan_file(plan_, path); }

Result<std::shared_ptr<const Engine>> Engine::load(const std::string& path) {
  QDQRT_ASSIGN_OR_RETURN(EnginePlan plan, read_plan_file(path));
  auto engine = from_plan(std::move(plan));
  if (!engine.ok()) return engine.status().with_context(fmt::format("'{}'", path));
  return engine;
}

Result<std::shared_ptr<const Engine>> Engine::load_bytes(std::span<const uint8_t> bytes) {
  // The plan's blobs point into `bytes`, which the caller keeps alive for the engine's life.
  QDQRT_ASSIGN_OR_RETURN(EnginePlan plan, read_plan(bytes, nullptr));
  return from_plan(std::move(plan));
}

namespace {

std::vector<IoTensorInfo> io_tensor_infos(const EnginePlan& plan, const std::vector<int32_t>& indices) {
  std::vector<IoTensorInfo> result;
  for (int32_t index : indices) {
    const PlanTensor& t = plan.tensors[static_cast<size_t>(index)];
    result.push_back({t.name, t.dtype, t.shape, t.batched, t.batch_axis, t.batch_factor});
  }
  return result;
}

}  // namespace

std::vector<IoTensorInfo> Engine::inputs() const { return io_tensor_infos(plan_, plan_.inputs); }

std::vector<IoTensorInfo> Engine::outputs() const { return io_tensor_infos(plan_, plan_.outputs); }

std::vector<LayerProfileEntry> Engine::layers() const {
  std::vector<LayerProfileEntry> result;
  for (const PlanLayer& layer : plan_.layers) result.push_back({layer.name, layer.kind, layer.kernel});
  return result;
}

std::unique_ptr<ExecutionContext> Engine::create_context(const ContextOptions& options) const {
  return std::unique_ptr<ExecutionContext>(new ExecutionContext(shared_from_this(), options, nullptr));
}

std::unique_ptr<ExecutionContext> Engine::create_context(const ContextOptions& options,
                                                         std::shared_ptr<SharedContextMemory> shared) const {
  return std::unique_ptr<ExecutionContext>(new ExecutionContext(shared_from_this(), options, std::move(shared)));
}

// ------------------------------------------------------------------------------------------------
// ExecutionContext

struct SharedContextMemory::Impl {
  kernels::AlignedBuffer<uint8_t> memory;   // activations of whichever context runs
  kernels::AlignedBuffer<uint8_t> scratch;
  std::shared_ptr<tbb::task_arena> arena;   // made by the first context, for its thread count
  int arena_threads = 0;
};

SharedContextMemory::SharedContextMemory() : impl_(std::make_unique<Impl>()) {}
SharedContextMemory::~SharedContextMemory() = default;

std::shared_ptr<SharedContextMemory> SharedContextMemory::create() {
  return std::shared_ptr<SharedContextMemory>(new SharedContextMemory());
}

int64_t SharedContextMemory::bytes() const {
  return static_cast<int64_t>(impl_->memory.size() + impl_->scratch.size());
}

struct ExecutionContext::Impl {
  std::shared_ptr<tbb::task_arena> arena;
  kernels::AlignedBuffer<uint8_t> memory;   // activations (unless shared)
  kernels::AlignedBuffer<uint8_t> scratch;  // one slice per thread slot (unless shared)
  int64_t scratch_stride = 0;
  int64_t arena_bytes = 0;                  // what the plan needs of each
  int64_t scratch_bytes = 0;
  std::shared_ptr<SharedContextMemory> shared;
  const uint8_t* bound_memory = nullptr;    // the shared arena the activations point into
  std::vector<kernels::AlignedBuffer<uint8_t>> output_buffers;  // outputs the caller did not bind
  std::vector<void*> tensor_data;
  std::atomic<bool> layer_failed{false};  // RunState::report_failure
  std::string failure_message;
  bool warmed_up = false;  // every arena thread's kernel scratch is grown (after the first run)
  TeamPacing pacing;       // whether runs go on the calling thread alone while helpers stall
  int64_t single_thread_runs = 0;  // ExecutionContext::single_thread_runs
  bool flush_denormals = true;  // ContextOptions::flush_denormals
  Status allocation_failure;  // set when the constructor could not allocate: every run returns it
};

ExecutionContext::ExecutionContext(std::shared_ptr<const Engine> engine, const ContextOptions& options,
                                   std::shared_ptr<SharedContextMemory> shared)
    : engine_(std::move(engine)), impl_(std::make_unique<Impl>()), profiling_(options.profiling) {
  impl_->flush_denormals = options.flush_denormals;
  const EnginePlan& plan = engine_->plan_;
  threads_ = options.threads > 0 ? std::min(options.threads, max_context_threads())
                                 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl_->shared = std::move(shared);
  if (impl_->shared && impl_->shared->impl_->arena && impl_->shared->impl_->arena_threads == threads_) {
    impl_->arena = impl_->shared->impl_->arena;
  } else {
    impl_->arena = std::make_shared<tbb::task_arena>(threads_);
    if (impl_->shared && !impl_->shared->impl_->arena) {
      impl_->shared->impl_->arena = impl_->arena;
      impl_->shared->impl_->arena_threads = threads_;
    }
  }
  impl_->tensor_data.assign(plan.tensors.size(), nullptr);
  layer_times_ms_.assign(plan.layers.size(), 0.0);
  // The sizes come from the plan (an engine file may ask for anything validate_plan lets through):
  // memory that cannot be had becomes the Status of every run, not an exception.
  std::string what = "the activation arena";
  int64_t bytes = std::max<int64_t>(plan.arena_bytes, 64);
  try {
    impl_->arena_bytes = bytes;
    if (!impl_->shared) impl_->memory.resize(static_cast<size_t>(bytes));
    impl_->scratch_stride = (plan.scratch_bytes_per_thread + 63) / 64 * 64;
    what = fmt::format("the scratch of {} threads", threads_ + 1);
    if (__builtin_mul_overflow(impl_->scratch_stride, int64_t{threads_} + 1, &bytes)) bytes = INT64_MAX;
    bytes = std::max<int64_t>(bytes, 64);
    impl_->scratch_bytes = bytes;
    if (!impl_->shared) impl_->scratch.resize(static_cast<size_t>(bytes));
    impl_->output_buffers.resize(plan.outputs.size());
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      const PlanTensor& output = plan.tensors[static_cast<size_t>(plan.outputs[i])];
      what = fmt::format("output '{}'", output.name);
      bytes = std::max<int64_t>(output.bytes, 64);
      impl_->output_buffers[i].resize(static_cast<size_t>(bytes));
    }
  } catch (const std::bad_alloc&) {
    impl_->allocation_failure = io_error("not enough memory: {} bytes for {} of a context", bytes, what);
    return;
  }
  if (impl_->shared) return;  // activations are pointed into the shared arena by each run
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const PlanTensor& tensor = plan.tensors[t];
    if (tensor.kind == TensorKind::kActivation) impl_->tensor_data[t] = impl_->memory.data() + tensor.arena_offset;
  }
}

Status ExecutionContext::bind_shared_memory() {
  SharedContextMemory::Impl& shared = *impl_->shared->impl_;
  const char* what = "the activation arena";
  int64_t bytes = impl_->arena_bytes;
  try {
    if (shared.memory.size() < static_cast<size_t>(impl_->arena_bytes)) {
      shared.memory = kernels::AlignedBuffer<uint8_t>();  // freed before the larger one is had
      shared.memory.resize(static_cast<size_t>(impl_->arena_bytes));
    }
    what = "the scratch";
    bytes = impl_->scratch_bytes;
    if (shared.scratch.size() < static_cast<size_t>(impl_->scratch_bytes)) {
      shared.scratch = kernels::AlignedBuffer<uint8_t>();
      shared.scratch.resize(static_cast<size_t>(impl_->scratch_bytes));
    }
  } catch (const std::bad_alloc&) {
    return io_error("not enough memory: {} bytes for {} of a context", bytes, what);
  }
  if (impl_->bound_memory != shared.memory.data()) {
    const EnginePlan& plan = engine_->plan_;
    for (size_t t = 0; t < plan.tensors.size(); ++t) {
      const PlanTensor& tensor = plan.tensors[t];
      if (tensor.kind == TensorKind::kActivation) impl_->tensor_data[t] = shared.memory.data() + tensor.arena_offset;
    }
    impl_->bound_memory = shared.memory.data();
  }
  return Status::ok();
}

ExecutionContext::~ExecutionContext() = default;

namespace {

// The batch a binding implies, or an error naming the tensor and the mismatch.
Status check_binding_shape(const PlanTensor& tensor, const Shape& shape, int64_t max_batch, const char* what,
                           int64_t& batch) {
  const size_t batch_axis = static_cast<size_t>(tensor.batch_axis);
  const int64_t factor = tensor.batch_factor;
  const bool ranks_match = shape.size() == tensor.shape.size();
  const int64_t bound_batch = tensor.batched && ranks_match ? shape[batch_axis] / factor : -1;
  bool ok = ranks_match;
  for (size_t axis = 0; ok && axis < shape.size(); ++axis) {
    if (tensor.batched && axis == batch_axis) {
      ok = shape[axis] % factor == 0 && bound_batch >= 1 && bound_batch <= max_batch &&
           (batch < 0 || bound_batch == batch);
    } else {
      ok = shape[axis] == tensor.shape[axis];
    }
  }
  if (!ok) {
    if (tensor.batched && ranks_match && batch >= 0 && shape[batch_axis] % factor == 0 && bound_batch != batch) {
      return invalid_argument("{} '{}': batch {} differs from the batch {} of the other inputs", what, tensor.name,
                              bound_batch, batch);
    }
    std::string batch_range;
    if (tensor.batched) {
      batch_range = factor == 1 ? fmt::format(" (dim {} may be 1..{})", batch_axis, max_batch)
                                : fmt::format(" (dim {} may be {} x 1..{})", batch_axis, factor, max_batch);
    }
    return invalid_argument("{} '{}': shape {} does not match the engine's {}{}", what, tensor.name,
                            shape_to_string(shape), shape_to_string(tensor.shape), batch_range);
  }
  if (tensor.batched && batch < 0) batch = bound_batch;
  return Status::ok();
}

}  // namespace

int64_t ExecutionContext::single_thread_runs() const { return impl_->single_thread_runs; }

Status ExecutionContext::run(std::span<const ConstTensorBinding> inputs, std::span<const TensorBinding> outputs) {
  if (!impl_->allocation_failure.is_ok()) return impl_->allocation_failure;
  if (impl_->shared) QDQRT_RETURN_IF_ERROR(bind_shared_memory());
  const EnginePlan& plan = engine_->plan_;
  std::vector<void*>& data = impl_->tensor_data;
  int64_t batch = -1;
  for (int32_t index : plan.inputs) data[static_cast<size_t>(index)] = nullptr;
  for (const ConstTensorBinding& binding : inputs) {
    int32_t found = -1;
    for (int32_t index : plan.inputs) {
      if (plan.tensors[static_cast<size_t>(index)].name == binding.name) found = index;
    }
    if (found < 0) return invalid_argument("'{}' is not an input of the engine", binding.name);
    const PlanTensor& tensor = plan.tensors[static_cast<size_t>(found)];
    if (data[static_cast<size_t>(found)]) return invalid_argument("input '{}' is bound twice", binding.name);
    if (!binding.data) return invalid_argument("input '{}': data is null", binding.name);
    QDQRT_RETURN_IF_ERROR(check_binding_shape(tensor, binding.shape, plan.max_batch, "input", batch));
    data[static_cast<size_t>(found)] = const_cast<void*>(binding.data);
  }
  for (int32_t index : plan.inputs) {
    if (!data[static_cast<size_t>(index)]) {
      return invalid_argument("input '{}' is not bound", plan.tensors[static_cast<size_t>(index)].name);
    }
  }
  if (batch < 0) batch = plan.max_batch;
  if (batch != plan.max_batch && !plan.fixed_batch_reason.empty()) {
    return invalid_argument("batch {}: this engine runs only at batch {}, the batch it was built for: {}", batch,
                            plan.max_batch, plan.fixed_batch_reason);
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    data[static_cast<size_t>(plan.outputs[i])] = impl_->output_buffers[i].data();
  }
  for (const TensorBinding& binding : outputs) {
    int32_t found = -1;
    for (int32_t index : plan.outputs) {
      if (plan.tensors[static_cast<size_t>(index)].name == binding.name) found = index;
    }
    if (found < 0) return invalid_argument("'{}' is not an output of the engine", binding.name);
    const PlanTensor& tensor = plan.tensors[static_cast<size_t>(found)];
    if (!binding.data) return invalid_argument("output '{}': data is null", binding.name);
    int64_t output_batch = batch;
    QDQRT_RETURN_IF_ERROR(check_binding_shape(tensor, binding.shape, plan.max_batch, "output", output_batch));
    data[static_cast<size_t>(found)] = binding.data;
  }

  RunState state;
  state.plan = &plan;
  state.batch = batch;
  state.tensor_data = &data;
  impl_->layer_failed.store(false);
  state.layer_failed = &impl_->layer_failed;
  state.failure_message = &impl_->failure_message;
  const auto& layers = engine_->bound_->layers;
  size_t failed_layer = layers.size();
  // While the helpers stall (another process holds the other cores), runs go on this thread alone.
  const int threads = impl_->pacing.solo(std::chrono::steady_clock::now()) ? 1 : threads_;
  state.threads = threads;
  uint8_t* scratch_base = impl_->shared ? impl_->shared->impl_->scratch.data() : impl_->scratch.data();
  const int64_t scratch_stride = impl_->scratch_stride;
  const bool profiling = profiling_;
  const std::atomic<bool>* cancel = cancel_;
  size_t cancelled_at = layers.size();

  const bool flush_denormals = impl_->flush_denormals;
  impl_->arena->execute([&] {
    // The mode of every thread that runs a layer, restored when it is done (a caller's thread may
    // run chunks too).
    const kernels::ScopedDenormalsAsZero denormals(flush_denormals);
    // This thread drives the layers; the helpers join the team as the pool starts them (their
    // wake-up overlaps the first layers) and stay until the last layer is done.
    LayerTeam team;
    const auto run_start = std::chrono::steady_clock::now();
    // Set when the stalls so far cost much of the run (stalls_dominate): the rest goes on this
    // thread alone.
    bool alone = false;
    tbb::task_group helpers;
    for (int helper = 1; helper < threads; ++helper) {
      helpers.run([&] {
        const kernels::ScopedDenormalsAsZero helper_denormals(flush_denormals);
        team.help();
      });
    }
    for (size_t i = 0; i < layers.size(); ++i) {
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
        cancelled_at = i;
        break;
      }
      const Layer& layer = *layers[i];
      const int64_t scratch_bytes = plan.layers[i].scratch_bytes;
      auto start = profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      const WorkShape work = layer.work(state);
      // After stalls that cost much of the run, the rest does not wait on the helpers again.
      if (!alone && team.stalled())
        alone = stalls_dominate(team.stall_wait(), std::chrono::steady_clock::now() - run_start);
      const int64_t chunks = layer_chunks(work, streamed_bytes(plan, plan.layers[i], state), alone ? 1 : threads);
      if (chunks <= 1) {
        int slot = std::max(0, tbb::this_task_arena::current_thread_index());
        layer.run(state, 0, work.items,
                  std::span<uint8_t>(scratch_base + slot * scratch_stride, static_cast<size_t>(scratch_bytes)));
      } else {
        // Each part is a run of consecutive chunks: one call for all of them (a GEMM layer then
        // streams its weights once, not once per chunk).
        const int64_t items = work.items;
        const int parts = static_cast<int>(std::min<int64_t>(chunks, threads));
        team.run_parts(parts, [&](int part) {
          int slot = std::max(0, tbb::this_task_arena::current_thread_index());
          std::span<uint8_t> scratch(scratch_base + slot * scratch_stride, static_cast<size_t>(scratch_bytes));
          const int64_t first_chunk = chunks * part / parts, end_chunk = chunks * (part + 1) / parts;
          const int64_t begin = items * first_chunk / chunks, end = items * end_chunk / chunks;
          if (begin < end) layer.run(state, begin, end, scratch);
        });
      }
      if (profiling) {
        layer_times_ms_[i] =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      }
      if (impl_->layer_failed.load(std::memory_order_relaxed)) {
        failed_layer = i;
        break;
      }
    }
    team.stop();
    // A helper that lost its core while it spun for the next layer holds this join until it gets
    // its core back (a busy 2-vCPU guest: a quarter of the runs, ~1.4 ms per run on average, where
    // no helper stalled inside a layer): that counts as a stall too, unless a helper was asleep
    // (then the join waits for its wake-up).
    const auto stopped = std::chrono::steady_clock::now();
    helpers.wait();
    const auto joined = std::chrono::steady_clock::now();
    const bool late_join = joined - stopped > kHelperStallSlack && !team.helper_asleep_at_stop();
    const auto stall_wait = team.stall_wait() + (late_join ? joined - stopped : std::chrono::steady_clock::duration{});
    // The first run grows the kernels' scratch (page faults on every thread): not a stall.
    if (threads > 1 && impl_->warmed_up)
      impl_->pacing.record(alone || stalls_dominate(stall_wait, joined - run_start), joined);
    if (threads_ > 1 && (threads == 1 || alone)) ++impl_->single_thread_runs;
  });
  if (!impl_->warmed_up) {
    // The kernels keep scratch per thread and grow it on first use; after the first run, grow it
    // on every thread of the arena to the sizes seen, so a later run where a thread meets a layer
    // for the first time does not allocate. Each task waits until all have started, so every
    // thread of the arena runs exactly one. The wait has one deadline for all tasks: with more
    // threads than cores they start one after another, and a wait per task would add up.
    impl_->warmed_up = true;
    if (threads_ > 1) {
      std::atomic<int> arrived{0};
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      impl_->arena->execute([&] {
        tbb::task_group group;
        for (int t = 0; t < threads_; ++t) {
          group.run([&] {
            kernels::internal::reserve_thread_scratch();
            arrived.fetch_add(1);
            while (arrived.load() < threads_ && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
          });
        }
        group.wait();
      });
    } else {
      kernels::internal::reserve_thread_scratch();
    }
  }
  if (cancelled_at < layers.size()) {
    const PlanLayer& layer = plan.layers[cancelled_at];
    return invalid_argument("the run was cancelled before layer '{}' ({} of {}); the outputs are not valid",
                            layer.name, cancelled_at + 1, layers.size());
  }
  if (failed_layer < layers.size()) {
    const PlanLayer& layer = plan.layers[failed_layer];
    return invalid_argument("layer '{}' ({} {}) failed at batch {}: {}; the outputs are not valid", layer.name,
                            layer.kind, layer.op_type, batch, impl_->failure_message);
  }
  return Status::ok();
}

}  // namespace qdqrt::engine
