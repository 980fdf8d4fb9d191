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
// context, its memory: it allocates nothing. Packed weights equal between the plans of several
// shapes (most layers pack the same weights whatever the shape) are held once (plan_weight_bytes()).
//
// Several profiles (trtexec's repeated --minShapes/--optShapes/--maxShapes, --profile=N): a run's
// shapes must all lie in one of them; a RangeContext runs any profile unless one is selected. Each
// profile's opt shape is lowered with the engine.
//
// Saved (write_file) the engine file holds the profiles, the ONNX model and the first profile's
// opt plan (format kRangeEngineFormatVersion, docs/engine_format.md); read back (read_file) it
// runs that shape without lowering and lowers any other on its first run, as the built engine does.
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
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "engine/shape_profile.h"

namespace qdqrt::engine {

// Shapes whose plans (and contexts) are kept at most.
inline constexpr size_t kMaxCachedShapes = 64;

struct EngineFileContents;
struct RangeSection;


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
  // Runs only shapes of profile `index` (TensorRT's setOptimizationProfile); -1 (the default):
  // the first profile holding the run's shapes.
  Status set_profile(int index);
  int profile_index() const { return profile_; }

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
  int profile_ = -1;
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
  // Several profiles (at least one).
  static Result<std::shared_ptr<const RangeEngine>> build_from_file(const std::string& onnx_path,
                                                                    const std::vector<ShapeProfile>& profiles,
                                                                    const BuildOptions& options);
  static Result<std::shared_ptr<const RangeEngine>> build_from_bytes(std::span<const uint8_t> onnx_bytes,
                                                                     const std::vector<ShapeProfile>& profiles,
                                                                     const BuildOptions& options);

  // The engine file (.qdqrt) of a range engine: its profiles, its model (without external data)
  // and the first profile's opt plan. Reading verifies the file and checks the plan against the
  // model and profiles; a fixed engine's file is refused (Engine::load reads it).
  Status write_file(const std::string& path) const;
  Result<std::vector<uint8_t>> serialize() const;
  static Result<std::shared_ptr<const RangeEngine>> read_file(const std::string& path);
  // `owner` keeps `bytes` alive as long as the engine (nullptr: the caller does).
  static Result<std::shared_ptr<const RangeEngine>> read(std::span<const uint8_t> bytes,
                                                         std::shared_ptr<const void> owner);

  std::unique_ptr<RangeContext> create_context(const ContextOptions& options = {}) const;

  // The profiles, with an entry for every input (static inputs: min = opt = max); profile() is
  // the first.
  const std::vector<ShapeProfile>& profiles() const { return profiles_; }
  const ShapeProfile& profile() const { return profiles_.front(); }
  // The options shapes are lowered with (precision, ISA, passes).
  const BuildOptions& build_options() const { return options_; }
  // The inputs in the model's order.
  const std::vector<std::string>& input_names() const { return input_names_; }
  // An error naming the input, dim and range when `shapes` (every input) lie in no profile (or
  // not in profile `profile` when it is >= 0); else the index of the profile they lie in.
  Result<size_t> check_shapes(const std::map<std::string, Shape>& shapes, int profile = -1) const;
  // The engine that runs `shapes` (lowered and cached on first use; thread-safe).
  Result<std::shared_ptr<const Engine>> engine_for(const std::map<std::string, Shape>& shapes) const;
  // The outputs (names, dtypes, shapes) of a run at `shapes`.
  Result<std::vector<IoTensorInfo>> output_infos(const std::map<std::string, Shape>& shapes) const;

  // Plans lowered so far (the opt shape's included) and their packed weights in bytes (weights
  // shared by several plans counted once).
  int64_t plans_lowered() const;
  int64_t plan_weight_bytes() const;

 private:
  friend class RangeContext;
  struct Source;
  RangeEngine() = default;
  // Checks the profiles against the model's declared inputs and sets up the engine (no lowering).
  static Result<std::shared_ptr<RangeEngine>> configure(std::unique_ptr<Source> source,
                                                        const std::vector<ShapeProfile>& profiles,
                                                        const BuildOptions& options);
  static Result<std::shared_ptr<const RangeEngine>> build(std::unique_ptr<Source> source,
                                                          const std::vector<ShapeProfile>& profiles,
                                                          const BuildOptions& options);
  // A read file's engine: the model and profiles checked, the stored plan cached as the first
  // profile's opt plan.
  static Result<std::shared_ptr<const RangeEngine>> from_contents(std::unique_ptr<Source> source,
                                                                  EngineFileContents contents);
  // What the engine file holds: the first profile's opt engine and the range section.
  Result<std::pair<std::shared_ptr<const Engine>, RangeSection>> file_parts() const;

  // Checks `shape` of input `index` against its range in profile `profile`.
  Status check_input(size_t profile, size_t index, const Shape& shape) const;
  // Checks a run's shapes (per input in model order): ranges, shared symbols, one batch; returns
  // the profile they lie in (`selected` when >= 0, else the first that holds them).
  Result<size_t> check_ordered(std::span<const Shape* const> ordered, int selected) const;
  // The key of a run at these shapes (per input in model order) in profile `profile`, written into
  // `key`: the shape lowered for it, the batch replaced by the profile's maximum unless `exact_batch`.
  void make_key(std::span<const Shape* const> shapes, size_t profile, bool exact_batch,
                std::vector<int64_t>& key) const;
  // The key of profile `profile`'s opt shapes.
  std::vector<int64_t> opt_key(size_t profile) const;
  // The engine of `key` (lowered on first use).
  Result<std::shared_ptr<const Engine>> engine_for_key(const std::vector<int64_t>& key) const;

  std::unique_ptr<Source> source_;
  BuildOptions options_;
  std::vector<ShapeProfile> profiles_;
  // Per profile: per input (model order) its range, and the profile's maximum batch.
  struct OrderedProfile {
    std::vector<ShapeRange> ranges;
    int64_t max_batch = 1;
  };
  std::vector<OrderedProfile> ordered_profiles_;
  std::vector<std::string> input_names_;
  std::vector<size_t> ranks_;          // per input, model order
  std::vector<bool> batched_;          // per input: dim 0 is the model's symbolic batch
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

  // Packed weights shared between the plans of different shapes: most layers pack the same
  // weights whatever the shape, so a plan's blob equal to one an earlier plan holds is replaced by
  // it before binding (held weakly: evicting every plan that uses a blob frees it).
  static constexpr size_t kMinSharedBlobBytes = 256;
  struct PooledBlob {
    std::weak_ptr<const void> owner;
    std::span<const uint8_t> bytes;
  };
  mutable std::unordered_multimap<uint64_t, PooledBlob> weight_pool_;  // by content hash
  // `plan` with its blobs replaced by equal pooled ones (called under mutex_, or before sharing).
  EnginePlan share_weights(EnginePlan plan) const;
};

// A profile from --minShapes/--optShapes/--maxShapes maps: every input named in one must be in
// all three (opt defaults to max when absent).
Result<ShapeProfile> make_profile(const std::map<std::string, Shape>& min_shapes,
                                  const std::map<std::string, Shape>& opt_shapes,
                                  const std::map<std::string, Shape>& max_shapes);

}  // namespace qdqrt::engine
