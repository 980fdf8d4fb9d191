// The models a server serves: a Triton-style repository folder (NAME/VERSION/model.onnx or
// model.qdqrt, with an optional NAME/config.json) and/or single files given by name. A model whose
// config.json gives 'input_ranges' is served from one RangeEngine over that range of shapes. The versions
// a model's version_policy selects (the latest one by default) are each loaded into a ModelRunner; engines built from
// ONNX are cached on disk, keyed by the model file's checksum, the build options and the CPU's ISA.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "server/metrics.h"
#include "server/model_config.h"
#include "server/model_runner.h"

namespace qdqrt::server {

struct RepositoryOptions {
  std::string repository_dir;                                 // "" when only single models are served
  std::vector<std::pair<std::string, std::string>> models;  // --model NAME=PATH
  std::string engine_cache_dir;                               // "" disables the cache
  ModelConfig defaults;                                       // for models without config.json
};

struct ModelIndexEntry {
  std::string name;
  std::string version;  // one entry per served version; "" when no version could be found
  std::string state;    // "READY" or "UNAVAILABLE"
  std::string reason;   // why it is unavailable
};

class ModelRepository {
 public:
  ModelRepository(RepositoryOptions options, MetricsRegistry& metrics);
  ~ModelRepository();

  // Loads every model found; a model that fails is listed UNAVAILABLE with the reason. Returns
  // the first failure (the CLI refuses to start on one) or ok.
  Status load_all();
  // (Re)loads the versions of one model its version_policy selects (Triton's repository
  // extension); all of them load or the versions served before stay.
  Status load(const std::string& name);
  Status unload(const std::string& name);
  // The runner for a model and version ("" for the highest served), or the protocol error.
  std::shared_ptr<ModelRunner> find(const std::string& name, const std::string& version, ServeError& error) const;
  // The versions of a model being served, ascending.
  std::vector<std::string> served_versions(const std::string& name) const;
  std::vector<ModelIndexEntry> index() const;
  bool all_ready() const;
  // Answers every queued request and stops every runner.
  void shutdown();
  // Draining: no runner waits the queue delay for more requests.
  void stop_batch_waits();

  // The model files found on disk, by version.
  struct ModelSource {
    std::map<int64_t, std::string> versions;
    std::string config_path;  // "" when the model has no config.json
  };

 private:
  Result<ModelSource> locate(const std::string& name) const;
  // A fixed engine, or a range engine when config.json gives 'input_ranges'.
  struct LoadedEngine {
    std::shared_ptr<const engine::Engine> engine;
    std::shared_ptr<const engine::RangeEngine> range;
  };
  Result<LoadedEngine> build_or_load_engine(const std::string& name, const std::string& path,
                                            const ModelConfig& config) const;

  RepositoryOptions options_;
  MetricsRegistry& metrics_;
  mutable std::mutex mutex_;
  struct Entry {
    std::string version;                                      // the highest on disk, for an unavailable model
    std::map<int64_t, std::shared_ptr<ModelRunner>> runners;  // served versions; empty when unavailable
    std::string reason;
  };
  std::map<std::string, Entry> models_;
};

// A load or unload refused because no model of that name exists (NOT_FOUND, 404).
bool is_unknown_model(const Status& status);

// The cache file name for an engine: "<name>-<hex key>.qdqrt"; the key covers the model bytes,
// the config's build options and the active ISA.
std::string engine_cache_key(const std::string& model_bytes, const ModelConfig& config,
                             const std::map<std::string, Shape>& build_shapes);

}  // namespace qdqrt::server
