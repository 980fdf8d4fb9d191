// One engine for a range of input shapes (TensorRT's optimization profiles): per input, a
// min/opt/max shape; the engine runs any shape between min and max on every dim (batch, height,
// width, sequence length).
//
//   engine::ShapeProfile profile{{"input", {{1, 3, 32, 32}, {1, 3, 64, 64}, {1, 3, 64, 64}}}};
//   auto range = engine::RangeEngine::build_from_file("model.onnx", profile, {});
//   auto context = (*range)->create_context({.threads = 2});
//   auto outputs = (*range)->output_infos({{"input", {1, 3, 48, 40}}});  // shapes to bind
//   Status status = context->run({{"input", input, {1, 3, 48, 40}}}, {{"logits", logits, (*outputs)[0].shape}});
//
// How it runs: a shape is lowered from the model the first time it is run, by the same optimizer
// and builder as an engine built for exactly that shape (so every fusion, folded shape constant
// and kernel choice is the one that shape gets), and the plan is cached. TensorRT builds its
// kernels per profile ahead of time; here each new shape costs one build on its first run (the
// opt shape is built with the engine), and a run at a shape seen before reuses its plan and, per
// context, its memory: it allocates nothing. Each cached plan has its own packed weights
// (plan_weight_bytes()).
//
// At most kMaxCachedShapes plans are kept per engine, and as many contexts per RangeContext: the
// least recently run shape's goes first (a later run there lowers it again), so a stream of
// distinct shapes cannot grow memory without bound.
//
// The batch is handled as in a fixed engine: inputs whose dim 0 is symbolic in the model are
// batched, a shape is lowered at the profile's maximum batch and runs any batch from 1 to it
// (an engine that cannot follow the batch is lowered again at the exact batch).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

namespace qdqrt::engine {

// Shapes whose plans (and contexts) are kept at most.
inline constexpr size_t kMaxCachedShapes = 64;

struct ShapeRange {
  Shape min, opt, max;
};
// Input name -> its range. Inputs the model declares fully static need no entry.
using ShapeProfile = std::map<std::string, ShapeRange>;

class RangeEngine;

// Runs a RangeEngine at any shape of its profile; one execution context per shape run, kept.
class RangeContext {
 public:
  ~RangeContext();
  RangeContext(const RangeContext&) = delete;
  RangeContext& operator=(const RangeContext&) = delete;

  // The shape is the inputs' (checked against the profile); outputs must be bound at the shapes
  // RangeEngine::output_infos gives for it. The first run at a shape may lower it.
  Status run(std::span<const ConstTensorBinding> inputs, std::span<const TensorBinding> outputs);
  Status run(std::initializer_list<ConstTensorBinding> inputs, std::initializer_list<TensorBinding> outputs) {
    return run(std::span<const ConstTensorBinding>(inputs.begin(), inputs.size()),
               std::span<const TensorBinding>(outputs.begin(), outputs.size()));
  }
  // The context of the last successful run's shape (its profile, threads); nullptr before one.
  ExecutionContext* last_context() const { return last_; }

 private:
  friend class RangeEngine;
  RangeContext(std::shared_ptr<const RangeEngine> engine, const ContextOptions& options);

  std::shared_ptr<const RangeEngine> engine_;
  ContextOptions options_;
  struct Entry {
    std::unique_ptr<ExecutionContext> context;
    bool fixed_batch = false;  // its plan runs only at the batch it was lowered for
    uint64_t last_run = 0;     // `runs_` when it last ran: the least recent goes first
  };
  // Finds or makes the context of `key_` (evicting the least recently run one beyond the limit).
  Result<std::map<std::vector<int64_t>, Entry>::iterator> context_for_key(bool exact_batch);
  uint64_t runs_ = 0;
  // Per key: a run at a shape seen before finds its context here without taking the engine's lock.
  std::map<std::vector<int64_t>, Entry> contexts_;
  std::vector<const Shape*> ordered_;  // the run's input shapes in model order (reused)
  std::vector<int64_t> key_;  // reused: a run at a known shape builds its key without allocating
  ExecutionContext* last_ = nullptr;
};

class RangeEngine : public std::enable_shared_from_this<RangeEngine> {
 public:
  ~RangeEngine();

  // Builds the engine for `profile` (and lowers the opt shape). `options.input_shapes` must be
  // empty: the profile gives the shapes.
  static Result<std::shared_ptr<const RangeEngine>> build_from_file(const std::string& onnx_path,
                                                                    const ShapeProfile& profile,
                                                                    const BuildOptions& options);
  // A serialized ONNX model in memory (copied; no external data).
  static Result<std::shared_ptr<const RangeEngine>> build_from_bytes(std::span<const uint8_t> onnx_bytes,
                                                                     const ShapeProfile& profile,
                                                                     const BuildOptions& options);

  std::unique_ptr<RangeContext> create_context(const ContextOptions& options = {}) const;

  // The profile, with an entry for every input (static inputs: min = opt = max).
  const ShapeProfile& profile() const { return profile_; }
  // The inputs in the model's order.
  const std::vector<std::string>& input_names() const { return input_names_; }
  // An error naming the input, dim and range when `shapes` (every input) is not in the profile.
  Status check_shapes(const std::map<std::string, Shape>& shapes) const;
  // The engine that runs `shapes` (lowered and cached on first use; thread-safe).
  Result<std::shared_ptr<const Engine>> engine_for(const std::map<std::string, Shape>& shapes) const;
  // The outputs (names, dtypes, shapes) of a run at `shapes`.
  Result<std::vector<IoTensorInfo>> output_infos(const std::map<std::string, Shape>& shapes) const;

  // Plans lowered so far (the opt shape's included) and their packed weights in bytes.
  int64_t plans_lowered() const;
  int64_t plan_weight_bytes() const;

 private:
  friend class RangeContext;
  struct Source;
  RangeEngine() = default;
  static Result<std::shared_ptr<const RangeEngine>> build(std::unique_ptr<Source> source, const ShapeProfile& profile,
                                                          const BuildOptions& options);

  // Checks `shape` of input `index` against its range.
  Status check_input(size_t index, const Shape& shape) const;
  // Checks a run's shapes (per input in model order): ranges, shared symbols, one batch.
  Status check_ordered(std::span<const Shape* const> ordered) const;
  // The key of a run at these shapes (per input in model order), written into `key`: the shape
  // lowered for it, the batch replaced by the profile's maximum unless `exact_batch`.
  void make_key(std::span<const Shape* const> shapes, bool exact_batch, std::vector<int64_t>& key) const;
  // The engine of `key` (lowered on first use).
  Result<std::shared_ptr<const Engine>> engine_for_key(const std::vector<int64_t>& key) const;

  std::unique_ptr<Source> source_;
  BuildOptions options_;
  ShapeProfile profile_;
  std::vector<std::string> input_names_;
  std::vector<Shape> max_shapes_;      // per input, model order
  std::vector<bool> batched_;          // per input: dim 0 is the model's symbolic batch
  int64_t max_batch_ = 1;
  // Dims one symbol (dim_param) names in several inputs: they must agree in every run.
  struct SharedDim {
    std::string symbol;
    std::vector<std::pair<size_t, size_t>> places;  // (input index, axis)
  };
  std::vector<SharedDim> shared_dims_;

  // Held while a shape is lowered: lowerings run one at a time.
  mutable std::mutex mutex_;
  struct CachedEngine {
    std::shared_ptr<const Engine> engine;
    uint64_t last_use = 0;
  };
  mutable std::map<std::vector<int64_t>, CachedEngine> engines_;
  mutable uint64_t uses_ = 0;
};

// A profile from --minShapes/--optShapes/--maxShapes maps: every input named in one must be in
// all three (opt defaults to max when absent).
Result<ShapeProfile> make_profile(const std::map<std::string, Shape>& min_shapes,
                                  const std::map<std::string, Shape>& opt_shapes,
                                  const std::map<std::string, Shape>& max_shapes);

}  // namespace qdqrt::engine
