#include "server/model_repository.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/file_reading.h"
#include "engine/engine_file.h"
#include "kernels/cpu_features.h"
#include "parser/onnx_loader.h"

namespace qdqrt::server {

namespace fs = std::filesystem;

namespace {

// A model or config; a FIFO or device in the repository is refused, not read forever.
Result<std::string> read_file(const std::string& path, const std::string& what = "file") {
  return read_regular_file(path, what, size_t{1} << 31);
}

// A name a client may ask to load: one folder of the repository, never a path out of it.
bool is_model_name(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    return c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
}

// Engines loaded from a .qdqrt keep pointers into the file's bytes. Reading them into memory
// pins what was verified at load: a file overwritten in place later cannot change the numbers
// served (mapped pages of a file would show the new bytes).
struct PinnedEngine {
  std::vector<uint8_t> bytes;
  std::shared_ptr<const engine::Engine> engine;  // destroyed before `bytes`
};

// Either kind of engine file: a fixed engine, or a range engine's file (qdqrt exec
// --minShapes/--maxShapes --saveEngine), which keeps views into the bytes as well.
struct PinnedFile {
  std::shared_ptr<const engine::Engine> engine;
  std::shared_ptr<const engine::RangeEngine> range;
};

Result<PinnedFile> load_pinned_file(const std::string& path) {
  QDQRT_ASSIGN_OR_RETURN(std::string text, read_file(path, "engine file"));
  auto pinned = std::make_shared<PinnedEngine>();
  pinned->bytes.assign(text.begin(), text.end());
  text = std::string();
  if (engine::is_range_engine_file(pinned->bytes)) {
    std::shared_ptr<const std::vector<uint8_t>> bytes(pinned, &pinned->bytes);
    auto loaded = engine::RangeEngine::read(*bytes, bytes);
    if (!loaded.ok()) return loaded.status().with_context(fmt::format("'{}'", path));
    return PinnedFile{nullptr, *loaded};
  }
  auto loaded = engine::Engine::load_bytes(pinned->bytes);
  if (!loaded.ok()) return loaded.status().with_context(fmt::format("'{}'", path));
  pinned->engine = *loaded;
  return PinnedFile{std::shared_ptr<const engine::Engine>(pinned, pinned->engine.get()), nullptr};
}

Result<std::shared_ptr<const engine::Engine>> load_pinned_engine(const std::string& path) {
  QDQRT_ASSIGN_OR_RETURN(PinnedFile file, load_pinned_file(path));
  if (!file.engine) return invalid_argument("'{}' holds a range engine, not an engine for one shape", path);
  return file.engine;
}

bool is_version_name(const std::string& text) {
  return !text.empty() && text.size() < 19 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Shapes to build for: the config's, else the model's with a symbolic batch set to max_batch_size.
Result<std::map<std::string, Shape>> build_shapes_for(const Graph& graph, const ModelConfig& config) {
  std::map<std::string, Shape> shapes;
  for (const auto& [name, shape] : config.input_shapes) {
    if (std::find(graph.inputs.begin(), graph.inputs.end(), name) == graph.inputs.end()) {
      return invalid_argument("config.json 'input_shapes' names '{}', which is not an input of the model (inputs: {})",
                              name, fmt::join(graph.inputs, ", "));
    }
  }
  for (const std::string& name : graph.inputs) {
    auto given = config.input_shapes.find(name);
    if (given != config.input_shapes.end()) {
      shapes[name] = given->second;
      continue;
    }
    const ValueInfo* info = graph.find_value(name);
    if (info == nullptr || !info->shape || info->shape->empty()) {
      return invalid_argument("input '{}' has no known shape: give it in config.json 'input_shapes'", name);
    }
    Shape shape;
    for (size_t axis = 0; axis < info->shape->size(); ++axis) {
      const Dim& dim = (*info->shape)[axis];
      if (dim.is_static()) {
        shape.push_back(dim.value);
      } else if (axis == 0) {
        shape.push_back(config.max_batch_size);
      } else {
        return invalid_argument(
            "input '{}' {} has a symbolic dim past the batch: give its shape in config.json "
            "'input_shapes' or its range of shapes in 'input_ranges'",
            name, dims_to_string(*info->shape));
      }
    }
    shapes[name] = shape;
  }
  return shapes;
}

// The profile of a model served over a range of shapes: config.json's 'input_ranges'; an input
// without one runs at its 'input_shapes' entry or the model's static dims, any batch from 1 up to
// the ranged inputs' maximum batch (else max_batch_size).
Result<engine::ShapeProfile> profile_for(const Graph& graph, const ModelConfig& config) {
  for (const auto& [name, range] : config.input_ranges) {
    if (std::find(graph.inputs.begin(), graph.inputs.end(), name) == graph.inputs.end()) {
      return invalid_argument("config.json 'input_ranges' names '{}', which is not an input of the model (inputs: {})",
                              name, fmt::join(graph.inputs, ", "));
    }
  }
  auto batch_is_symbolic = [&](const std::string& name) {
    const ValueInfo* info = graph.find_value(name);
    return info != nullptr && info->shape && !info->shape->empty() && !(*info->shape)[0].is_static();
  };
  int64_t batch = config.max_batch_size;
  for (const auto& [name, range] : config.input_ranges) {
    if (batch_is_symbolic(name) && !range.max.empty()) {
      batch = range.max[0];
      break;
    }
  }
  engine::ShapeProfile profile(config.input_ranges.begin(), config.input_ranges.end());
  for (const std::string& name : graph.inputs) {
    if (profile.contains(name)) continue;
    const ValueInfo* info = graph.find_value(name);
    Shape shape;
    if (auto given = config.input_shapes.find(name); given != config.input_shapes.end()) {
      shape = given->second;
    } else if (info == nullptr || !info->shape) {
      return invalid_argument("input '{}' has no known shape: give its range in config.json 'input_ranges'", name);
    } else {
      for (size_t axis = 0; axis < info->shape->size(); ++axis) {
        const Dim& dim = (*info->shape)[axis];
        if (!dim.is_static() && axis != 0) {
          return invalid_argument(
              "input '{}' {} has a symbolic dim past the batch: give its range in config.json "
              "'input_ranges'",
              name, dims_to_string(*info->shape));
        }
        shape.push_back(dim.is_static() ? dim.value : batch);
      }
    }
    engine::ShapeRange range{shape, shape, shape};
    if (batch_is_symbolic(name) && !shape.empty()) {
      range.min[0] = 1;
      range.opt[0] = range.max[0] = batch;
    }
    profile[name] = std::move(range);
  }
  return profile;
}

bool engine_matches(const engine::Engine& engine, const std::map<std::string, Shape>& shapes) {
  std::vector<engine::IoTensorInfo> inputs = engine.inputs();
  if (inputs.size() != shapes.size()) return false;
  for (const auto& info : inputs) {
    auto wanted = shapes.find(info.name);
    if (wanted == shapes.end() || wanted->second != info.shape) return false;
  }
  return true;
}

// What config.json asks of the engine itself (a saved .qdqrt engine has its shapes already).
Status check_config_against_engine(const std::string& name, const ModelConfig& config, const engine::Engine& engine) {
  std::vector<engine::IoTensorInfo> inputs = engine.inputs();
  for (const auto& [input, shape] : config.input_shapes) {
    auto found = std::find_if(inputs.begin(), inputs.end(), [&input = input](const auto& info) { return info.name == input; });
    if (found == inputs.end()) {
      std::vector<std::string> names;
      for (const auto& info : inputs) names.push_back(info.name);
      return invalid_argument("model '{}': config.json 'input_shapes' names '{}', which is not an input of the model "
                              "(inputs: {})",
                              name, input, fmt::join(names, ", "));
    }
  }
  return Status::ok();
}

// The versions on disk a model's version_policy serves, ascending.
Result<std::vector<int64_t>> select_versions(const std::string& name, const VersionPolicy& policy,
                                             const std::map<int64_t, std::string>& on_disk) {
  std::vector<int64_t> available;
  for (const auto& [version, path] : on_disk) available.push_back(version);
  std::vector<int64_t> selected;
  switch (policy.kind) {
    case VersionPolicy::Kind::kLatest: {
      size_t count = std::min(available.size(), static_cast<size_t>(policy.num_versions));
      selected.assign(available.end() - static_cast<std::ptrdiff_t>(count), available.end());
      break;
    }
    case VersionPolicy::Kind::kAll:
      if (available.size() > static_cast<size_t>(kMaxServedVersions)) {
        return invalid_argument("model '{}': 'version_policy.all' would serve {} versions, more than {}", name,
                                available.size(), kMaxServedVersions);
      }
      selected = available;
      break;
    case VersionPolicy::Kind::kSpecific:
      for (int64_t version : policy.versions) {
        if (!on_disk.contains(version)) {
          return invalid_argument("model '{}': 'version_policy.specific.versions' names version {}, which is not on "
                                  "disk (versions: {})",
                                  name, version, fmt::join(available, ", "));
        }
      }
      selected = policy.versions;
      break;
  }
  return selected;
}

}  // namespace

std::string engine_cache_key(const std::string& model_bytes, const ModelConfig& config,
                             const std::map<std::string, Shape>& build_shapes) {
  std::string options = fmt::format("{:016x}|precision={}|isa={}", XXH64(model_bytes.data(), model_bytes.size(), 0),
                                    config.precision == engine::Precision::kInt8 ? "int8" : "fp32",
                                    kernels::isa_name(kernels::active_isa()));
  for (const auto& [name, shape] : build_shapes) options += fmt::format("|{}={}", name, fmt::join(shape, "x"));
  return fmt::format("{:016x}", XXH64(options.data(), options.size(), 0));
}

bool is_unknown_model(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument && status.message().starts_with("no model '");
}

ModelRepository::ModelRepository(RepositoryOptions options, MetricsRegistry& metrics)
    : options_(std::move(options)), metrics_(metrics) {}

ModelRepository::~ModelRepository() { shutdown(); }

Result<ModelRepository::ModelSource> ModelRepository::locate(const std::string& name) const {
  for (const auto& [model_name, path] : options_.models) {
    if (model_name == name) return ModelSource{{{1, path}}, ""};
  }
  if (options_.repository_dir.empty() || !is_model_name(name)) {
    return invalid_argument("no model '{}' in the repository", name);
  }
  fs::path model_dir = fs::path(options_.repository_dir) / name;
  std::error_code error;
  if (!fs::is_directory(model_dir, error)) return invalid_argument("no model '{}' in the repository", name);
  ModelSource best;
  for (const auto& entry : fs::directory_iterator(model_dir, error)) {
    std::string version = entry.path().filename().string();
    if (!entry.is_directory() || !is_version_name(version)) continue;
    // A saved engine wins over the ONNX file in the same folder.
    for (const char* file : {"model.qdqrt", "model.onnx"}) {
      fs::path candidate = entry.path() / file;
      if (fs::is_regular_file(candidate, error)) {
        best.versions.emplace(std::stoll(version), candidate.string());
        break;
      }
    }
  }
  if (best.versions.empty()) {
    return invalid_argument("model '{}' has no NAME/VERSION/model.onnx or model.qdqrt", name);
  }
  // Triton's config.pbtxt is not read: refused rather than silently ignored.
  if (fs::exists(fs::symlink_status(model_dir / "config.pbtxt", error))) {
    return invalid_argument("model '{}' has a config.pbtxt (Triton's protobuf text), which qdqrt does not read: give its "
                            "settings in config.json (docs/serve.md) and remove config.pbtxt",
                            name);
  }
  // Any config.json, also a directory, FIFO or dangling link: load() refuses what is not a
  // regular file instead of serving with defaults.
  fs::path config = model_dir / "config.json";
  if (fs::exists(fs::symlink_status(config, error))) best.config_path = config.string();
  return best;
}

Result<ModelRepository::LoadedEngine> ModelRepository::build_or_load_engine(const std::string& name,
                                                                            const std::string& path,
                                                                            const ModelConfig& config) const {
  if (path.ends_with(".qdqrt")) {
    if (!config.input_ranges.empty()) {
      return invalid_argument(
          "config.json 'input_ranges' needs a model.onnx; '{}' is an engine file, which holds "
          "its own shapes (a range engine's file, its profiles)",
          path);
    }
    // A range engine's file (qdqrt exec --minShapes/--maxShapes --saveEngine) serves its profiles.
    QDQRT_ASSIGN_OR_RETURN(PinnedFile file, load_pinned_file(path));
    return LoadedEngine{std::move(file.engine), std::move(file.range)};
  }
  QDQRT_ASSIGN_OR_RETURN(std::string model_bytes, read_file(path));
  QDQRT_ASSIGN_OR_RETURN(Graph graph, load_onnx_file(path));
  if (!config.input_ranges.empty()) {
    // One engine for the range; each shape is lowered on its first request.
    QDQRT_ASSIGN_OR_RETURN(engine::ShapeProfile profile, profile_for(graph, config));
    // Cached as a range engine's file, keyed by the range as well.
    std::string cache_path;
    if (!options_.engine_cache_dir.empty()) {
      std::map<std::string, Shape> key_shapes;
      for (const auto& [input, range] : profile) {
        key_shapes["range:" + input + ":min"] = range.min;
        key_shapes["range:" + input + ":opt"] = range.opt;
        key_shapes["range:" + input + ":max"] = range.max;
      }
      cache_path = (fs::path(options_.engine_cache_dir) /
                    fmt::format("{}-{}.qdqrt", name, engine_cache_key(model_bytes, config, key_shapes)))
                       .string();
      std::error_code error;
      if (fs::exists(cache_path, error)) {
        auto cached = load_pinned_file(cache_path);
        if (cached.ok() && cached->range && cached->range->profiles() == std::vector<engine::ShapeProfile>{profile}) {
          fmt::print(stderr, "serve: model '{}': range engine from the cache {}\n", name, cache_path);
          return LoadedEngine{nullptr, cached->range};
        }
        fmt::print(
            stderr, "serve: model '{}': cache entry {} is unusable ({}); rebuilding\n", name, cache_path,
            cached.ok() ? (cached->range ? "profiles differ" : "not a range engine") : cached.status().to_string());
      }
    }
    engine::BuildOptions build;
    build.precision = config.precision;
    auto range = engine::RangeEngine::build_from_file(path, profile, build);
    if (!range.ok()) return range.status().with_context("config.json 'input_ranges'");
    if (!cache_path.empty()) {
      std::error_code error;
      fs::create_directories(options_.engine_cache_dir, error);
      std::string temporary = fmt::format("{}.tmp{}", cache_path, ::getpid());
      Status saved = (*range)->write_file(temporary);
      if (saved.is_ok()) fs::rename(temporary, cache_path, error);
      if (!saved.is_ok() || error) {
        fs::remove(temporary, error);
        fmt::print(stderr, "serve: model '{}': range engine not cached: {}\n", name,
                   saved.is_ok() ? error.message() : saved.to_string());
      }
    }
    return LoadedEngine{nullptr, *range};
  }
  QDQRT_ASSIGN_OR_RETURN(auto shapes, build_shapes_for(graph, config));
  std::string cache_path;
  if (!options_.engine_cache_dir.empty()) {
    cache_path = (fs::path(options_.engine_cache_dir) / fmt::format("{}-{}.qdqrt", name, engine_cache_key(model_bytes, config, shapes))).string();
    std::error_code error;
    if (fs::exists(cache_path, error)) {
      // The engine file carries a checksum and a format version: a corrupt or stale entry fails
      // here (or does not match the shapes asked for) and is rebuilt, never used.
      auto cached = load_pinned_engine(cache_path);
      if (cached.ok() && engine_matches(**cached, shapes)) {
        fmt::print(stderr, "serve: model '{}': engine from the cache {}\n", name, cache_path);
        return LoadedEngine{*cached, nullptr};
      }
      fmt::print(stderr, "serve: model '{}': cache entry {} is unusable ({}); rebuilding\n", name, cache_path,
                 cached.ok() ? "shapes differ" : cached.status().to_string());
    }
  }
  engine::BuildOptions build;
  build.precision = config.precision;
  build.input_shapes = shapes;
  auto built = engine::Engine::build_from_file(path, build);
  if (!built.ok()) return built.status();
  LoadedEngine loaded{*built, nullptr};
  if (!cache_path.empty()) {
    std::error_code error;
    fs::create_directories(options_.engine_cache_dir, error);
    // Written aside and renamed, so a concurrent reader never sees half a file.
    std::string temporary = fmt::format("{}.tmp{}", cache_path, ::getpid());
    Status saved = (*built)->save(temporary);
    if (saved.is_ok()) fs::rename(temporary, cache_path, error);
    if (!saved.is_ok() || error) {
      fs::remove(temporary, error);
      fmt::print(stderr, "serve: model '{}': engine not cached: {}\n", name, saved.is_ok() ? error.message() : saved.to_string());
    }
  }
  return loaded;
}

Status ModelRepository::load(const std::string& name) {
  auto source = locate(name);
  if (!source.ok() && is_unknown_model(source.status())) {
    // Nothing of that name on disk: no entry is made (a request must not add a model that can
    // never be ready). A loaded version keeps serving; an entry that failed before is dropped.
    std::lock_guard lock(mutex_);
    auto found = models_.find(name);
    if (found != models_.end() && found->second.runners.empty()) models_.erase(found);
    return source.status();
  }
  Entry entry;
  Status status = [&]() -> Status {
    if (!source.ok()) return source.status();
    entry.version = std::to_string(source->versions.rbegin()->first);
    try {
      ModelConfig config = options_.defaults;
      if (!source->config_path.empty()) {
        QDQRT_ASSIGN_OR_RETURN(std::string text, read_file(source->config_path, "config.json"));
        auto parsed = parse_model_config(text, options_.defaults);
        if (!parsed.ok()) return parsed.status().with_context(source->config_path);
        config = *parsed;
      }
      unsigned cores = std::thread::hardware_concurrency();
      if (cores > 0 && static_cast<unsigned>(config.instance_count * config.threads_per_instance) > cores) {
        // Oversubscribed contexts time-slice each other: slower, not wrong, so only a warning.
        fmt::print(stderr, "serve: model '{}': {} instances x {} threads exceed the {} cores\n", name,
                   config.instance_count, config.threads_per_instance, cores);
      }
      auto versions = select_versions(name, config.version_policy, source->versions);
      if (!versions.ok()) return versions.status().with_context(source->config_path);
      for (int64_t version : *versions) {
        const std::string& path = source->versions.at(version);
        auto engine = build_or_load_engine(name, path, config);
        if (!engine.ok()) return engine.status().with_context(fmt::format("version {}", version));
        auto metrics = metrics_.model_metrics(name, std::to_string(version));
        if (engine->range) {
          auto runner = ModelRunner::create_for_range(engine->range, config, std::move(metrics));
          if (!runner.ok()) return runner.status().with_context(fmt::format("version {}", version));
          entry.runners[version] = *runner;
          continue;
        }
        QDQRT_RETURN_IF_ERROR(check_config_against_engine(name, config, *engine->engine));
        entry.runners[version] = std::make_shared<ModelRunner>(engine->engine, config, std::move(metrics));
      }
      return Status::ok();
    } catch (const std::bad_alloc&) {
      return io_error("not enough memory to load model '{}'", name);
    } catch (const std::exception& error) {
      return internal_error("loading model '{}': {}", name, error.what());
    }
  }();
  if (!status.is_ok() && status.message().find(fmt::format("model '{}'", name)) == std::string::npos) {
    status = status.with_context(fmt::format("model '{}'", name));
  }
  std::vector<std::shared_ptr<ModelRunner>> replaced;
  if (!status.is_ok()) {
    // All versions or none: the ones already started are stopped.
    entry.reason = status.to_string();
    for (auto& [version, runner] : entry.runners) replaced.push_back(std::move(runner));
    entry.runners.clear();
  }
  {
    std::lock_guard lock(mutex_);
    // A failed reload keeps serving the versions that were loaded.
    Entry& slot = models_[name];
    if (status.is_ok() || slot.runners.empty()) {
      for (auto& [version, runner] : slot.runners) replaced.push_back(std::move(runner));
      slot = std::move(entry);
    }
  }
  for (auto& runner : replaced) runner->shutdown();
  return status;
}

Status ModelRepository::unload(const std::string& name) {
  std::vector<std::shared_ptr<ModelRunner>> runners;
  {
    std::lock_guard lock(mutex_);
    auto found = models_.find(name);
    if (found == models_.end()) return invalid_argument("no model '{}' in the repository", name);
    for (auto& [version, runner] : found->second.runners) runners.push_back(std::move(runner));
    found->second.runners.clear();
    found->second.reason = "unloaded";
  }
  // Requests already queued are answered; new ones see the model unavailable.
  for (auto& runner : runners) runner->shutdown();
  return Status::ok();
}

Status ModelRepository::load_all() {
  std::vector<std::string> names;
  for (const auto& [name, path] : options_.models) names.push_back(name);
  std::error_code error;
  if (!options_.repository_dir.empty()) {
    if (!fs::is_directory(options_.repository_dir, error)) {
      return invalid_argument("model repository '{}' is not a directory", options_.repository_dir);
    }
    for (const auto& entry : fs::directory_iterator(options_.repository_dir, error)) {
      std::string name = entry.path().filename().string();
      if (entry.is_directory() && name[0] != '.') names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  Status first_failure;
  for (const std::string& name : names) {
    Status status = load(name);
    if (!status.is_ok() && first_failure.is_ok()) first_failure = status;
  }
  return first_failure;
}

std::shared_ptr<ModelRunner> ModelRepository::find(const std::string& name, const std::string& version,
                                                   ServeError& error) const {
  std::lock_guard lock(mutex_);
  auto found = models_.find(name);
  if (found == models_.end()) {
    error = serve_error(ErrorKind::kNotFound, "unknown model '{}'", name);
    return nullptr;
  }
  const Entry& entry = found->second;
  if (entry.runners.empty()) {
    if (!version.empty() && version != entry.version) {
      error = serve_error(ErrorKind::kNotFound, "unknown version '{}' of model '{}'", version, name);
    } else {
      error = serve_error(ErrorKind::kUnavailable, "model '{}' is not ready: {}", name, entry.reason);
    }
    return nullptr;
  }
  if (version.empty()) return entry.runners.rbegin()->second;
  auto served = is_version_name(version) ? entry.runners.find(std::stoll(version)) : entry.runners.end();
  // "01" names no folder: versions are compared as the decimal numbers their folders spell.
  if (served == entry.runners.end() || std::to_string(served->first) != version) {
    std::vector<int64_t> versions;
    for (const auto& [number, runner] : entry.runners) versions.push_back(number);
    error = serve_error(ErrorKind::kNotFound, "version '{}' of model '{}' is not served (served: {})", version, name,
                        fmt::join(versions, ", "));
    return nullptr;
  }
  return served->second;
}

std::vector<std::string> ModelRepository::served_versions(const std::string& name) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> versions;
  auto found = models_.find(name);
  if (found == models_.end()) return versions;
  for (const auto& [number, runner] : found->second.runners) versions.push_back(std::to_string(number));
  return versions;
}

std::vector<ModelIndexEntry> ModelRepository::index() const {
  std::lock_guard lock(mutex_);
  std::vector<ModelIndexEntry> entries;
  for (const auto& [name, entry] : models_) {
    if (entry.runners.empty()) entries.push_back({name, entry.version, "UNAVAILABLE", entry.reason});
    for (const auto& [version, runner] : entry.runners) entries.push_back({name, std::to_string(version), "READY", ""});
  }
  return entries;
}

bool ModelRepository::all_ready() const {
  std::lock_guard lock(mutex_);
  return std::all_of(models_.begin(), models_.end(), [](const auto& item) { return !item.second.runners.empty(); });
}

void ModelRepository::stop_batch_waits() {
  std::lock_guard lock(mutex_);
  for (auto& [name, entry] : models_) {
    for (auto& [version, runner] : entry.runners) runner->stop_batch_waits();
  }
}

void ModelRepository::shutdown() {
  std::vector<std::shared_ptr<ModelRunner>> runners;
  {
    std::lock_guard lock(mutex_);
    for (auto& [name, entry] : models_) {
      for (auto& [version, runner] : entry.runners) runners.push_back(runner);
    }
  }
  for (auto& runner : runners) runner->shutdown();
}

}  // namespace qdqrt::server
