// qdqrt's public C++ API: build an engine from an ONNX model (or load a saved one), then run it
// from one or many ExecutionContexts.
//
//   auto engine = qdqrt::engine::Engine::build_from_file("model.onnx", {});
//   auto context = (*engine)->create_context({.threads = 2});
//   float input[1 * 3 * 224 * 224], logits[1000];
//   Status status = context->run({{"input", input, {1, 3, 224, 224}}}, {{"logits", logits, {1, 1000}}});
//
// An Engine is immutable and thread-safe; each ExecutionContext owns its activation arena,
// scratch and thread pool (a tbb::task_arena), so several threads run one engine at once, each
// with its own context. Inputs and outputs are the caller's buffers, plain row-major (NCHW).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/plan.h"
#include "kernels/cpu_features.h"
#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::engine {

enum class Precision { kInt8, kFp32 };

struct BuildOptions {
  // kInt8: Q/DQ fused into INT8 layers (explicit quantization, trtexec --int8).
  // kFp32: fake quantization removed, everything in float (trtexec --fp32 for comparison).
  Precision precision = Precision::kInt8;
  // Shapes of the inputs at the maximum batch (symbolic dims must be given here; a symbolic
  // batch dim not given builds for batch 1). The engine runs any batch from 1 to this one.
  std::map<std::string, Shape> input_shapes;
  // Highest ISA to use (the machine's best when kAmxInt8 and it has it).
  kernels::Isa max_isa = kernels::Isa::kAmxInt8;
  // Optimizer pass selection (qdqrt inspect --passes/--disablePasses).
  std::vector<std::string> only_passes;
  std::vector<std::string> disabled_passes;
  // A node no native layer runs is a build error (naming the node, op and reason) instead of a
  // slow "reference" layer running the reference executor's kernel (qdqrt exec --noReferenceLayers).
  bool no_reference_layers = false;
  // Float MatMul/Gemm layers with constant weights (the ones outside Q/DQ in an INT8 model, every
  // one in kFp32) run in bf16 with fp32 accumulation (trtexec --bf16: a permission, not a
  // requirement). Only where kernels::bf16_gemm_usable(); elsewhere they keep their fp32 kernels.
  bool bf16 = false;
  // Values share bytes where a layer would only copy them (engine/plan_aliases.h): a Concat's inputs
  // written in place by their producers, a Reshape's output a view of its input; a copy read only
  // by copies is read through (engine/plan_compose_copies.h). False: every value has bytes of its
  // own and those layers copy (a comparison).
  bool share_buffers = true;
};

struct TensorBinding {
  std::string name;
  void* data = nullptr;
  Shape shape;  // the tensor's shape (dim 0 = this run's batch); checked against the engine
};
struct ConstTensorBinding {
  std::string name;
  const void* data = nullptr;
  Shape shape;
};

struct IoTensorInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Shape shape;  // at the maximum batch
  bool batched = false;
  // When batched: dim batch_axis is batch_factor * the run's batch (inputs: always dim 0, factor 1).
  int32_t batch_axis = 0;
  int64_t batch_factor = 1;
  Shape shape_at_batch(int64_t batch) const {
    Shape result = shape;
    if (batched) result[static_cast<size_t>(batch_axis)] = batch_factor * batch;
    return result;
  }
};

struct LayerProfileEntry {
  std::string name;    // fused source names joined by " + "
  std::string kind;
  std::string kernel;
};

struct ContextOptions {
  int threads = 0;          // 0: all hardware threads
  bool profiling = false;   // record per-layer times of every run
  // Runs read and write denormal floats (below 1.2e-38) as zero, as GPU inference does: a
  // multiply-add with one is ~100x slower on x86 (kernels/denormals.h). false: IEEE gradual
  // underflow, ONNX Runtime's default.
  bool flush_denormals = true;
};

// For a layer of kind "reference": why no native layer runs its node (the plan's `reason` param;
// "not recorded" for plans written without it).
std::string reference_layer_reason(const PlanLayer& layer);

class Engine;

// Memory and threads that several execution contexts used one at a time can share (a RangeContext
// keeps one context per shape it ran, and runs one shape at a time): the activation arena and
// per-thread scratch, grown on a run to the largest plan run on it so far, and the thread pool.
// Contexts sharing it must never run at the same time.
class SharedContextMemory {
 public:
  static std::shared_ptr<SharedContextMemory> create();
  ~SharedContextMemory();
  // Bytes held now (arena and scratch).
  int64_t bytes() const;

 private:
  friend class ExecutionContext;
  SharedContextMemory();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class ExecutionContext {
 public:
  ~ExecutionContext();
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;

  // Runs the engine. The batch is dim 0 of the inputs (all batched inputs must agree, 1..max; only
  // max when the engine cannot run other batches: EnginePlan::fixed_batch_reason says why).
  // Every input must be bound; outputs not bound are computed into internal buffers and dropped.
  // No heap allocation after the first run with a given set of bindings.
  Status run(std::span<const ConstTensorBinding> inputs, std::span<const TensorBinding> outputs);
  Status run(std::initializer_list<ConstTensorBinding> inputs, std::initializer_list<TensorBinding> outputs) {
    return run(std::span<const ConstTensorBinding>(inputs.begin(), inputs.size()),
               std::span<const TensorBinding>(outputs.begin(), outputs.size()));
  }

  // A flag another thread may set to stop the runs of this context: a run checks it before each
  // layer and, when set, returns an error naming the layer it stopped at (its outputs are not
  // valid). nullptr (the default): runs are not cancellable. The flag must outlive the runs.
  void set_cancel_flag(const std::atomic<bool>* flag) { cancel_ = flag; }

  void set_profiling(bool enabled) { profiling_ = enabled; }
  bool profiling() const { return profiling_; }
  // Per layer (plan order), the time of the last profiled run in milliseconds.
  const std::vector<double>& last_layer_times_ms() const { return layer_times_ms_; }
  int threads() const { return threads_; }
  // Runs of a multi-thread context that went on the calling thread alone, whole or from some layer
  // on, because its helper threads stalled (another process held their cores; docs/engine.md).
  int64_t single_thread_runs() const;
  const Engine& engine() const { return *engine_; }

 private:
  friend class Engine;
  struct Impl;
  ExecutionContext(std::shared_ptr<const Engine> engine, const ContextOptions& options,
                   std::shared_ptr<SharedContextMemory> shared);
  // With shared memory: grows it to this plan's needs and points the activations into it.
  Status bind_shared_memory();

  std::shared_ptr<const Engine> engine_;
  std::unique_ptr<Impl> impl_;
  bool profiling_ = false;
  const std::atomic<bool>* cancel_ = nullptr;
  int threads_ = 1;
  std::vector<double> layer_times_ms_;
};

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  ~Engine();

  static Result<std::shared_ptr<const Engine>> build_from_file(const std::string& onnx_path, const BuildOptions& options);
  // A serialized ONNX model in memory (external data is not supported: the model has no directory).
  static Result<std::shared_ptr<const Engine>> build_from_bytes(std::span<const uint8_t> onnx_bytes,
                                                                const BuildOptions& options);
  static Result<std::shared_ptr<const Engine>> build(Graph graph, const BuildOptions& options);
  // Binds a plan (built or read from a file): validates it and creates every layer.
  static Result<std::shared_ptr<const Engine>> from_plan(EnginePlan plan);

  // The engine file (.qdqrt): see engine/engine_file.h and docs/engine_format.md.
  Status save(const std::string& path) const;
  static Result<std::shared_ptr<const Engine>> load(const std::string& path);
  static Result<std::shared_ptr<const Engine>> load_bytes(std::span<const uint8_t> bytes);

  std::unique_ptr<ExecutionContext> create_context(const ContextOptions& options = {}) const;
  // A context whose activation arena, scratch and thread pool are `shared`'s (see
  // SharedContextMemory): what a run needs beyond what it holds is allocated by that run.
  std::unique_ptr<ExecutionContext> create_context(const ContextOptions& options,
                                                   std::shared_ptr<SharedContextMemory> shared) const;

  const EnginePlan& plan() const { return plan_; }
  std::vector<IoTensorInfo> inputs() const;
  std::vector<IoTensorInfo> outputs() const;
  int64_t max_batch() const { return plan_.max_batch; }
  std::vector<LayerProfileEntry> layers() const;

 private:
  friend class ExecutionContext;
  struct BoundLayers;
  Engine() = default;

  EnginePlan plan_;
  std::unique_ptr<BoundLayers> bound_;
};

}  // namespace qdqrt::engine
