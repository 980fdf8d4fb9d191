// Per-model serving options: the optional config.json beside a model's version folders
// (docs/serve.md), or the defaults below.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "engine/engine.h"
#include "engine/profiles.h"

namespace qdqrt::server {

// Which version folders are served (Triton's version_policy): the `num_versions` highest, all of
// them, or the listed ones.
struct VersionPolicy {
  enum class Kind { kLatest, kAll, kSpecific };
  Kind kind = Kind::kLatest;
  int64_t num_versions = 1;       // kLatest
  std::vector<int64_t> versions;  // kSpecific, ascending, no repeats
};

struct ModelConfig {
  // Largest batch a request or a merged batch may have; the engine is built for it.
  int64_t max_batch_size = 8;
  // Merge queued requests into one run (up to max_batch_size, waiting at most max_queue_delay_us).
  bool dynamic_batching = true;
  int64_t max_queue_delay_us = 0;  // 0 (Triton's default): merge what queued while the last batch ran
  // A batch that reaches one of these sizes runs at once, without waiting for the delay.
  std::vector<int64_t> preferred_batch_sizes;
  // ExecutionContexts on the shared engine, each run by its own thread with this many threads.
  int instance_count = 1;
  int threads_per_instance = 1;
  // Requests waiting for an instance; more are refused with 503 / UNAVAILABLE.
  int64_t max_queue_size = 1024;
  // Input shapes at max batch for inputs whose dims (past the batch) are not static in the model.
  std::map<std::string, Shape> input_shapes;
  // Per input, a range of shapes (TensorRT's optimization profile): the model is served from one
  // engine that runs every shape between min and max (engine/profiles.h). Full shapes, batch
  // included; opt defaults to max.
  std::map<std::string, engine::ShapeRange> input_ranges;
  engine::Precision precision = engine::Precision::kInt8;
  VersionPolicy version_policy;
};

// The ranges config.json (and the matching serve flags) accept.
inline constexpr int64_t kMaxBatchSize = 4096;
inline constexpr int64_t kMaxQueueDelayUs = 10'000'000;  // 10 s
inline constexpr int64_t kMaxInstances = 256;
inline constexpr int64_t kMaxThreads = 256;
inline constexpr int64_t kMaxQueueSize = int64_t{1} << 20;
inline constexpr int64_t kMaxInputElements = int64_t{1} << 31;
// Versions of one model served at once (each holds its own engine and instances).
inline constexpr int64_t kMaxServedVersions = 64;
inline constexpr int64_t kMaxVersionNumber = 999'999'999'999'999'999;  // 18 digits, as folder names

// Reads config.json text; unknown keys are errors (a typo must not silently fall back to defaults).
Result<ModelConfig> parse_model_config(const std::string& json_text, ModelConfig defaults = {});

}  // namespace qdqrt::server
