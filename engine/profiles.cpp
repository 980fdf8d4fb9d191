#include "engine/profiles.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cstring>
#include <set>

#include "core/checked_math.h"
#include "core/file_reading.h"
#include "engine/builder.h"
#include "engine/engine_file.h"
#include "engine/engine_file_format.h"
#include "parser/onnx_loader.h"

namespace qdqrt::engine {

// Where the model is read from for each shape lowered.
struct RangeEngine::Source {
  std::string path;                     // a file (external data next to it)
  std::span<const uint8_t> bytes;       // or a serialized model in memory, kept alive by `owner`
  std::shared_ptr<const void> owner;
  bool from_file = false;

  Result<EnginePlan> build(const BuildOptions& options) const {
    if (from_file) return build_plan_from_onnx_file(path, options);
    return build_plan_from_onnx_bytes(bytes, options);
  }
  // The model's bytes (a file is read now), for the engine file.
  Result<Blob> model_blob() const {
    Blob blob;
    blob.name = "model.onnx";
    if (!from_file) {
      blob.bytes = bytes;
      blob.owner = owner;
      return blob;
    }
    // The largest model protobuf can parse (2 GiB); the engine file holds it whole.
    QDQRT_ASSIGN_OR_RETURN(std::string text, read_regular_file(path, "ONNX model", size_t{2} << 30));
    auto kept = std::make_shared<std::string>(std::move(text));
    blob.bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kept->data()), kept->size());
    blob.owner = kept;
    return blob;
  }
  // The graph inputs as the model declares them (symbolic dims unresolved).
  Result<std::vector<ValueInfo>> declared_inputs() const {
    std::vector<ValueInfo> declared;
    bool read = false;
    LoadOptions options;
    // Stops the load once the inputs are read: nothing after them is needed here (the opt
    // shape's build loads the model in full).
    options.choose_input_shapes = [&](const std::vector<ValueInfo>& inputs) -> Result<std::map<std::string, Shape>> {
      declared = inputs;
      read = true;
      return internal_error("inputs read");
    };
    Result<Graph> loaded = from_file ? load_onnx_file(path, options) : load_onnx_bytes(bytes.data(), bytes.size(), options);
    if (read) return declared;
    if (!loaded.ok()) return loaded.status();
    return internal_error("the model's inputs were not read");
  }
};

namespace {

std::string range_text(const ShapeRange& range) {
  return fmt::format("min {} opt {} max {}", shape_to_string(range.min), shape_to_string(range.opt),
                     shape_to_string(range.max));
}

// Checks one input's range against its declared dims; fills a missing range from them.
Status check_range(const ValueInfo& info, ShapeRange& range) {
  const std::string& name = info.name;
  if (info.shape && range.min.size() != info.shape->size()) {
    return invalid_argument("input '{}': the profile's shapes have rank {} but the model declares {} {}", name,
                            range.min.size(), info.shape->size(), dims_to_string(*info.shape));
  }
  if (range.opt.size() != range.min.size() || range.max.size() != range.min.size()) {
    return invalid_argument("input '{}': min, opt and max shapes differ in rank ({})", name, range_text(range));
  }
  for (size_t axis = 0; axis < range.min.size(); ++axis) {
    const int64_t low = range.min[axis], opt = range.opt[axis], high = range.max[axis];
    const bool declared_empty = info.shape && (*info.shape)[axis].is_static() && (*info.shape)[axis].value == 0;
    if (low < 1 && !(declared_empty && low == 0 && high == 0)) {
      return invalid_argument("input '{}': dim {} has minimum {}; every dim must be at least 1 ({})", name, axis, low,
                              range_text(range));
    }
    if (!(low <= opt && opt <= high)) {
      return invalid_argument("input '{}': dim {} needs min <= opt <= max, got {} <= {} <= {}", name, axis, low, opt,
                              high);
    }
    if (info.shape && (*info.shape)[axis].is_static()) {
      const int64_t fixed = (*info.shape)[axis].value;
      if (low != fixed || high != fixed) {
        return invalid_argument("input '{}': dim {} is {} in the model, the profile gives {}..{}", name, axis, fixed,
                                low, high);
      }
    }
  }
  std::optional<int64_t> count = checked_product(range.max);
  std::optional<int64_t> bytes = count ? checked_mul(*count, static_cast<int64_t>(std::max<size_t>(dtype_size(info.dtype), 1)))
                                       : std::nullopt;
  if (!bytes || *bytes > (int64_t{1} << 60)) {
    return invalid_argument("input '{}': the maximum shape {} has more bytes than an engine can hold (its dims' product "
                            "overflows)",
                            name, shape_to_string(range.max));
  }
  return Status::ok();
}

}  // namespace

Result<ShapeProfile> make_profile(const std::map<std::string, Shape>& min_shapes,
                                  const std::map<std::string, Shape>& opt_shapes,
                                  const std::map<std::string, Shape>& max_shapes) {
  ShapeProfile profile;
  for (const auto& [name, shape] : max_shapes) {
    auto low = min_shapes.find(name);
    if (low == min_shapes.end()) {
      return invalid_argument("input '{}' has a maximum shape but no minimum (--minShapes={}:DIMS)", name, name);
    }
    auto opt = opt_shapes.find(name);
    profile[name] = {low->second, opt == opt_shapes.end() ? shape : opt->second, shape};
  }
  for (const auto& [flag, shapes] : {std::pair{"minimum", &min_shapes}, std::pair{"opt", &opt_shapes}}) {
    for (const auto& [name, shape] : *shapes) {
      if (!max_shapes.count(name)) {
        return invalid_argument("input '{}' has an {} shape but no maximum (--maxShapes={}:DIMS)", name, flag, name);
      }
    }
  }
  return profile;
}

RangeEngine::~RangeEngine() = default;

Result<std::shared_ptr<const RangeEngine>> RangeEngine::build_from_file(const std::string& onnx_path,
                                                                        const ShapeProfile& profile,
                                                                        const BuildOptions& options) {
  return build_from_file(onnx_path, std::vector<ShapeProfile>{profile}, options);
}

Result<std::shared_ptr<const RangeEngine>> RangeEngine::build_from_bytes(std::span<const uint8_t> onnx_bytes,
                                                                         const ShapeProfile& profile,
                                                                         const BuildOptions& options) {
  return build_from_bytes(onnx_bytes, std::vector<ShapeProfile>{profile}, options);
}

Result<std::shared_ptr<const RangeEngine>> RangeEngine::build_from_file(const std::string& onnx_path,
                                                                        const std::vector<ShapeProfile>& profiles,
                                                                        const BuildOptions& options) {
  auto source = std::make_unique<Source>();
  source->path = onnx_path;
  source->from_file = true;
  return build(std::move(source), profiles, options);
}

Result<std::shared_ptr<const RangeEngine>> RangeEngine::build_from_bytes(std::span<const uint8_t> onnx_bytes,
                                                                         const std::vector<ShapeProfile>& profiles,
                                                                         const BuildOptions& options) {
  auto source = std::make_unique<Source>();
  auto copy = std::make_shared<std::vector<uint8_t>>(onnx_bytes.begin(), onnx_bytes.end());
  source->bytes = *copy;
  source->owner = copy;
  return build(std::move(source), profiles, options);
}

Result<std::shared_ptr<RangeEngine>> RangeEngine::configure(std::unique_ptr<Source> source,
                                                            const std::vector<ShapeProfile>& profiles,
                                                            const BuildOptions& options) {
  if (!options.input_shapes.empty()) {
    return invalid_argument("a range engine takes its shapes from the profile, not BuildOptions::input_shapes");
  }
  if (profiles.empty()) return invalid_argument("a range engine needs at least one profile");
  if (profiles.size() > kMaxProfiles) {
    return invalid_argument("{} profiles: a range engine takes at most {}", profiles.size(), kMaxProfiles);
  }
  QDQRT_ASSIGN_OR_RETURN(std::vector<ValueInfo> declared, source->declared_inputs());
  std::shared_ptr<RangeEngine> engine(new RangeEngine());
  engine->options_ = options;
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> symbol_places;
  for (size_t index = 0; index < declared.size(); ++index) {
    const ValueInfo& info = declared[index];
    engine->input_names_.push_back(info.name);
    engine->batched_.push_back(info.shape && !info.shape->empty() && !(*info.shape)[0].is_static());
    if (info.shape) {
      for (size_t axis = 0; axis < info.shape->size(); ++axis) {
        const Dim& dim = (*info.shape)[axis];
        if (!dim.is_static() && !dim.symbol.empty()) symbol_places[dim.symbol].emplace_back(index, axis);
      }
    }
  }
  for (auto& [symbol, places] : symbol_places) {
    if (places.size() > 1) engine->shared_dims_.push_back({symbol, std::move(places)});
  }
  for (size_t number = 0; number < profiles.size(); ++number) {
    const ShapeProfile& profile = profiles[number];
    // Messages name the profile only when there are several.
    const std::string where = profiles.size() > 1 ? fmt::format("profile {}: ", number) : std::string();
    for (const auto& entry : profile) {
      const std::string& name = entry.first;
      if (std::find(engine->input_names_.begin(), engine->input_names_.end(), name) == engine->input_names_.end()) {
        return invalid_argument("{}profile: '{}' is not an input of the model (inputs: {})", where, name,
                                fmt::join(engine->input_names_, ", "));
      }
    }
    ShapeProfile complete;
    OrderedProfile ordered;
    bool batch_known = false;
    for (size_t index = 0; index < declared.size(); ++index) {
      const ValueInfo& info = declared[index];
      ShapeRange range;
      if (auto it = profile.find(info.name); it != profile.end()) {
        range = it->second;
      } else if (!info.shape) {
        return invalid_argument("{}input '{}' has unknown rank; give its range (--minShapes/--optShapes/--maxShapes)",
                                where, info.name);
      } else {
        for (size_t axis = 0; axis < info.shape->size(); ++axis) {
          const Dim& dim = (*info.shape)[axis];
          if (!dim.is_static() && axis != 0) {
            return invalid_argument("{}input '{}' has symbolic dim {} ({}); give its range "
                                    "(--minShapes/--optShapes/--maxShapes={}:DIMS)",
                                    where, info.name, axis, dims_to_string(*info.shape), info.name);
          }
          // A symbolic batch without a range runs at batch 1, as in a fixed engine.
          range.min.push_back(dim.is_static() ? dim.value : 1);
        }
        range.opt = range.max = range.min;
      }
      Status checked = check_range(info, range);
      if (!checked.is_ok()) return Status(checked.code(), where + checked.message());
      if (engine->batched_[index]) {
        if (batch_known && range.max[0] != ordered.max_batch) {
          return invalid_argument("{}input '{}': maximum batch {} differs from another input's {}", where, info.name,
                                  range.max[0], ordered.max_batch);
        }
        ordered.max_batch = range.max[0];
        batch_known = true;
      }
      if (number == 0) engine->ranks_.push_back(range.max.size());
      ordered.ranges.push_back(range);
      complete[info.name] = std::move(range);
    }
    engine->profiles_.push_back(std::move(complete));
    engine->ordered_profiles_.push_back(std::move(ordered));
  }
  engine->source_ = std::move(source);
  return engine;
}

std::vector<int64_t> RangeEngine::opt_key(size_t profile) const {
  std::vector<const Shape*> pointers;
  for (const ShapeRange& range : ordered_profiles_[profile].ranges) pointers.push_back(&range.opt);
  std::vector<int64_t> key;
  make_key(pointers, profile, false, key);
  return key;
}

Result<std::shared_ptr<const RangeEngine>> RangeEngine::build(std::unique_ptr<Source> source,
                                                              const std::vector<ShapeProfile>& profiles,
                                                              const BuildOptions& options) {
  QDQRT_ASSIGN_OR_RETURN(std::shared_ptr<RangeEngine> engine, configure(std::move(source), profiles, options));
  // Every profile's opt shapes are lowered now: a model that does not build fails here, not at its
  // first run.
  for (size_t profile = 0; profile < engine->ordered_profiles_.size(); ++profile) {
    std::vector<const Shape*> opt;
    for (const ShapeRange& range : engine->ordered_profiles_[profile].ranges) opt.push_back(&range.opt);
    const std::string what = profiles.size() > 1 ? fmt::format("profile {}'s opt shapes", profile) : "the opt shapes";
    auto checked = engine->check_ordered(opt, static_cast<int>(profile));
    if (!checked.ok()) return checked.status().with_context(what);
    auto built = engine->engine_for_key(engine->opt_key(profile));
    if (!built.ok()) return built.status().with_context("building at " + what);
  }
  return std::shared_ptr<const RangeEngine>(std::move(engine));
}

Result<std::pair<std::shared_ptr<const Engine>, RangeSection>> RangeEngine::file_parts() const {
  QDQRT_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> opt, engine_for_key(opt_key(0)));
  RangeSection range;
  range.profiles = profiles_;
  QDQRT_ASSIGN_OR_RETURN(range.model, source_->model_blob());
  if (source_->from_file) {
    // The file holds the model alone: one whose weights lie in external files cannot be lowered
    // from it, so it is refused now rather than when the engine is read.
    Result<Graph> whole = load_onnx_bytes(range.model.bytes.data(), range.model.bytes.size());
    if (!whole.ok()) {
      return whole.status().with_context("a range engine file holds its model in one piece (no external data)");
    }
  }
  range.only_passes = options_.only_passes;
  range.disabled_passes = options_.disabled_passes;
  range.no_reference_layers = options_.no_reference_layers;
  return std::make_pair(std::move(opt), std::move(range));
}

Result<std::vector<uint8_t>> RangeEngine::serialize() const {
  QDQRT_ASSIGN_OR_RETURN(auto parts, file_parts());
  return serialize_engine_file(parts.first->plan(), &parts.second);
}

Status RangeEngine::write_file(const std::string& path) const {
  QDQRT_ASSIGN_OR_RETURN(auto parts, file_parts());
  return write_engine_file(parts.first->plan(), &parts.second, path);
}

Result<std::shared_ptr<const RangeEngine>> RangeEngine::read_file(const std::string& path) {
  QDQRT_ASSIGN_OR_RETURN(EngineFileContents contents, read_engine_file_path(path));
  if (!contents.range) {
    return invalid_argument("engine file '{}' holds an engine built for fixed shapes, not a range engine "
                            "(Engine::load reads it)",
                            path);
  }
  const Blob model = contents.range->model;
  auto source = std::make_unique<Source>();
  source->bytes = model.bytes;
  source->owner = model.owner;
  auto read = from_contents(std::move(source), std::move(contents));
  if (!read.ok()) return read.status().with_context(fmt::format("engine file '{}'", path));
  return read;
}

Result<std::shared_ptr<const RangeEngine>> RangeEngine::read(std::span<const uint8_t> bytes,
                                                             std::shared_ptr<const void> owner) {
  QDQRT_ASSIGN_OR_RETURN(EngineFileContents contents, read_engine_file(bytes, std::move(owner)));
  if (!contents.range) {
    return invalid_argument("the engine file holds an engine built for fixed shapes, not a range engine "
                            "(Engine::load_bytes reads it)");
  }
  auto source = std::make_unique<Source>();
  source->bytes = contents.range->model.bytes;
  source->owner = contents.range->model.owner;
  return from_contents(std::move(source), std::move(contents));
}

Result<std::shared_ptr<const RangeEngine>> RangeEngine::from_contents(std::unique_ptr<Source> source,
                                                                      EngineFileContents contents) {
  const RangeSection& range = *contents.range;
  BuildOptions options;
  if (contents.plan.precision != "int8" && contents.plan.precision != "fp32") {
    return invalid_model("the plan's precision '{}' is neither int8 nor fp32", contents.plan.precision);
  }
  options.precision = contents.plan.precision == "fp32" ? Precision::kFp32 : Precision::kInt8;
  // New shapes are lowered for the ISA the stored plan was (reading checked this CPU has it).
  std::optional<kernels::Isa> isa = kernels::parse_isa(contents.plan.isa);
  if (!isa) return invalid_model("the plan's ISA '{}' is unknown", contents.plan.isa);
  options.max_isa = *isa;
  options.only_passes = range.only_passes;
  options.disabled_passes = range.disabled_passes;
  options.no_reference_layers = range.no_reference_layers;
  // Built with bf16 where its kernels ran (the plan then needs the avx512bf16 feature).
  options.bf16 = std::find(contents.plan.cpu_features.begin(), contents.plan.cpu_features.end(), "avx512bf16") !=
                 contents.plan.cpu_features.end();
  auto configured = configure(std::move(source), range.profiles, options);
  if (!configured.ok()) return configured.status().with_context("the model and profiles it holds");
  std::shared_ptr<RangeEngine> engine = *configured;
  // The stored plan must be the first profile's opt plan: its inputs, in the model's order, at
  // those shapes (the batch at the profile's maximum).
  const std::vector<int64_t> key = engine->opt_key(0);
  const EnginePlan& plan = contents.plan;
  if (plan.inputs.size() != engine->input_names_.size()) {
    return invalid_model("the stored plan has {} inputs, the model {}", plan.inputs.size(),
                         engine->input_names_.size());
  }
  size_t at = 0;
  for (size_t index = 0; index < plan.inputs.size(); ++index) {
    const PlanTensor& tensor = plan.tensors[static_cast<size_t>(plan.inputs[index])];
    const size_t rank = engine->ranks_[index];
    Shape expected(key.begin() + static_cast<ptrdiff_t>(at), key.begin() + static_cast<ptrdiff_t>(at + rank));
    at += rank;
    if (tensor.name != engine->input_names_[index] || tensor.shape != expected) {
      return invalid_model("the stored plan's input {} is '{}' {}, the first profile's opt shapes need '{}' {}", index,
                           tensor.name, shape_to_string(tensor.shape), engine->input_names_[index],
                           shape_to_string(expected));
    }
  }
  QDQRT_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> opt,
                         Engine::from_plan(engine->share_weights(std::move(contents.plan))));
  engine->engines_[key] = CachedEngine{std::move(opt), ++engine->uses_};
  return std::shared_ptr<const RangeEngine>(std::move(engine));
}

Status RangeEngine::check_input(size_t profile, size_t index, const Shape& shape) const {
  const std::string& name = input_names_[index];
  const ShapeRange& range = ordered_profiles_[profile].ranges[index];
  if (shape.size() != range.max.size()) {
    return invalid_argument("input '{}': shape {} has rank {}, the profile's shapes rank {} ({})", name,
                            shape_to_string(shape), shape.size(), range.max.size(), range_text(range));
  }
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    if (shape[axis] < 1 && !(shape[axis] == 0 && range.max[axis] == 0)) {
      return invalid_argument("input '{}': dim {} of {} is {}; every dim must be at least 1 (the profile allows "
                              "{}..{})",
                              name, axis, shape_to_string(shape), shape[axis], range.min[axis], range.max[axis]);
    }
    if (shape[axis] < range.min[axis] || shape[axis] > range.max[axis]) {
      return invalid_argument("input '{}': dim {} of {} is {}, outside the profile's range {}..{} ({})", name, axis,
                              shape_to_string(shape), shape[axis], range.min[axis], range.max[axis],
                              range_text(range));
    }
  }
  return Status::ok();
}

namespace {

// The shapes of a run in model input order, or an error naming a missing or unknown input.
Status order_shapes(const std::vector<std::string>& names, const std::map<std::string, Shape>& shapes,
                    std::vector<const Shape*>& ordered) {
  ordered.clear();
  for (const auto& [name, shape] : shapes) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return invalid_argument("'{}' is not an input of the engine (inputs: {})", name, fmt::join(names, ", "));
    }
  }
  for (const std::string& name : names) {
    auto it = shapes.find(name);
    if (it == shapes.end()) return invalid_argument("no shape given for input '{}'", name);
    ordered.push_back(&it->second);
  }
  return Status::ok();
}

}  // namespace

Result<size_t> RangeEngine::check_ordered(std::span<const Shape* const> ordered, int selected) const {
  for (const SharedDim& shared : shared_dims_) {
    const auto [first_input, first_axis] = shared.places.front();
    const int64_t value = (*ordered[first_input])[first_axis];
    for (const auto& [input, axis] : shared.places) {
      if ((*ordered[input])[axis] != value) {
        return invalid_argument("input '{}' dim {} is {} but input '{}' dim {} is {}: both are '{}' in the model",
                                input_names_[input], axis, (*ordered[input])[axis], input_names_[first_input],
                                first_axis, value, shared.symbol);
      }
    }
  }
  int64_t batch = -1;
  for (size_t index = 0; index < ordered.size(); ++index) {
    if (!batched_[index]) continue;
    const int64_t bound = (*ordered[index])[0];
    if (batch >= 0 && bound != batch) {
      return invalid_argument("input '{}': batch {} differs from the batch {} of the other inputs",
                              input_names_[index], bound, batch);
    }
    batch = bound;
  }
  auto check_profile = [&](size_t profile) -> Status {
    for (size_t index = 0; index < ordered.size(); ++index) {
      QDQRT_RETURN_IF_ERROR(check_input(profile, index, *ordered[index]));
    }
    return Status::ok();
  };
  if (selected >= 0) {
    if (static_cast<size_t>(selected) >= ordered_profiles_.size()) {
      return invalid_argument("profile {} selected, the engine has {}", selected, ordered_profiles_.size());
    }
    Status status = check_profile(static_cast<size_t>(selected));
    if (!status.is_ok() && ordered_profiles_.size() > 1) return status.with_context(fmt::format("profile {}", selected));
    QDQRT_RETURN_IF_ERROR(status);
    return static_cast<size_t>(selected);
  }
  std::vector<std::string> reasons;
  for (size_t profile = 0; profile < ordered_profiles_.size(); ++profile) {
    Status status = check_profile(profile);
    if (status.is_ok()) return profile;
    if (ordered_profiles_.size() == 1) return status;
    reasons.push_back(fmt::format("profile {}: {}", profile, status.message()));
  }
  return invalid_argument("the shapes lie in none of the {} profiles: {}", ordered_profiles_.size(),
                          fmt::join(reasons, "; "));
}

Result<size_t> RangeEngine::check_shapes(const std::map<std::string, Shape>& shapes, int profile) const {
  std::vector<const Shape*> ordered;
  QDQRT_RETURN_IF_ERROR(order_shapes(input_names_, shapes, ordered));
  return check_ordered(ordered, profile);
}

void RangeEngine::make_key(std::span<const Shape* const> shapes, size_t profile, bool exact_batch,
                           std::vector<int64_t>& key) const {
  key.clear();
  const int64_t max_batch = ordered_profiles_[profile].max_batch;
  for (size_t index = 0; index < shapes.size(); ++index) {
    const Shape& shape = *shapes[index];
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      key.push_back(axis == 0 && batched_[index] && !exact_batch ? max_batch : shape[axis]);
    }
  }
}

Result<std::shared_ptr<const Engine>> RangeEngine::engine_for_key(const std::vector<int64_t>& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = engines_.find(key); it != engines_.end()) {
    it->second.last_use = ++uses_;
    return it->second.engine;
  }
  BuildOptions options = options_;
  size_t at = 0;
  for (size_t index = 0; index < input_names_.size(); ++index) {
    const size_t rank = ranks_[index];
    if (at + rank > key.size()) return internal_error("range engine: a shape key is shorter than the inputs");
    options.input_shapes[input_names_[index]] = Shape(key.begin() + static_cast<ptrdiff_t>(at),
                                                      key.begin() + static_cast<ptrdiff_t>(at + rank));
    at += rank;
  }
  auto plan = source_->build(options);
  Result<std::shared_ptr<const Engine>> built = plan.ok() ? Engine::from_plan(share_weights(std::move(plan).value()))
                                                          : Result<std::shared_ptr<const Engine>>(plan.status());
#if defined(__GLIBC__)
  // Lowering parses the model and optimizes a whole graph: many large short-lived allocations that
  // glibc keeps in its heap once freed (a 57 MB encoder's process grew 21 MiB per shape lowered,
  // of which 0.6 MiB is held by the cached plan). Hand them back to the system.
  malloc_trim(0);
#endif
  if (!built.ok()) {
    std::vector<std::string> shapes;
    for (const auto& [name, shape] : options.input_shapes) shapes.push_back(name + ":" + shape_to_string(shape));
    return built.status().with_context(fmt::format("lowering shape {}", fmt::join(shapes, " ")));
  }
  if (engines_.size() >= kMaxCachedShapes) {
    auto oldest = std::min_element(engines_.begin(), engines_.end(), [](const auto& a, const auto& b) {
      return a.second.last_use < b.second.last_use;
    });
    engines_.erase(oldest);  // contexts running it keep it alive
  }
  engines_[key] = CachedEngine{*built, ++uses_};
  return *built;
}

namespace {

// The batch of a run: dim 0 of the batched inputs (they agree), or `otherwise` when none is.
int64_t run_batch(std::span<const Shape* const> ordered, const std::vector<bool>& batched, int64_t otherwise) {
  for (size_t index = 0; index < ordered.size(); ++index) {
    if (batched[index]) return (*ordered[index])[0];
  }
  return otherwise;
}

}  // namespace

Result<std::shared_ptr<const Engine>> RangeEngine::engine_for(const std::map<std::string, Shape>& shapes) const {
  std::vector<const Shape*> ordered;
  QDQRT_RETURN_IF_ERROR(order_shapes(input_names_, shapes, ordered));
  QDQRT_ASSIGN_OR_RETURN(size_t profile, check_ordered(ordered, -1));
  std::vector<int64_t> key;
  make_key(ordered, profile, false, key);
  QDQRT_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> engine, engine_for_key(key));
  const int64_t max_batch = ordered_profiles_[profile].max_batch;
  if (run_batch(ordered, batched_, max_batch) == max_batch || engine->plan().fixed_batch_reason.empty()) return engine;
  make_key(ordered, profile, true, key);
  return engine_for_key(key);
}

Result<std::vector<IoTensorInfo>> RangeEngine::output_infos(const std::map<std::string, Shape>& shapes) const {
  QDQRT_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> engine, engine_for(shapes));
  int64_t batch = engine->max_batch();
  for (size_t index = 0; index < input_names_.size(); ++index) {
    if (batched_[index]) batch = shapes.at(input_names_[index])[0];
  }
  std::vector<IoTensorInfo> outputs = engine->outputs();
  for (IoTensorInfo& output : outputs) {
    output.shape = output.shape_at_batch(batch);
  }
  return outputs;
}

int64_t RangeEngine::plans_lowered() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(engines_.size());
}

int64_t RangeEngine::plan_weight_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t bytes = 0;
  std::set<const uint8_t*> counted;  // a blob shared by several plans counts once
  for (const auto& [key, cached] : engines_) {
    for (const PlanLayer& layer : cached.engine->plan().layers) {
      for (const Blob& blob : layer.blobs) {
        if (counted.insert(blob.bytes.data()).second) bytes += static_cast<int64_t>(blob.bytes.size());
      }
    }
  }
  return bytes;
}

EnginePlan RangeEngine::share_weights(EnginePlan plan) const {
  for (PlanLayer& layer : plan.layers) {
    for (Blob& blob : layer.blobs) {
      // Small blobs (scales, a few biases) cost more to look up than they save.
      if (blob.bytes.size() < kMinSharedBlobBytes) continue;
      const uint64_t hash = file_format::xxhash64(blob.bytes.data(), blob.bytes.size(), blob.bytes.size());
      auto [begin, end] = weight_pool_.equal_range(hash);
      bool shared = false;
      for (auto it = begin; it != end;) {
        std::shared_ptr<const void> owner = it->second.owner.lock();
        if (!owner) {  // every plan holding it was evicted
          it = weight_pool_.erase(it);
          continue;
        }
        if (it->second.bytes.size() == blob.bytes.size() &&
            std::memcmp(it->second.bytes.data(), blob.bytes.data(), blob.bytes.size()) == 0) {
          blob.bytes = it->second.bytes;
          blob.owner = std::move(owner);
          shared = true;
          break;
        }
        ++it;
      }
      if (!shared && blob.owner) weight_pool_.emplace(hash, PooledBlob{blob.owner, blob.bytes});
    }
  }
  return plan;
}

std::unique_ptr<RangeContext> RangeEngine::create_context(const ContextOptions& options) const {
  return std::unique_ptr<RangeContext>(new RangeContext(shared_from_this(), options));
}

// ------------------------------------------------------------------------------------------------
// RangeContext

RangeContext::RangeContext(std::shared_ptr<const RangeEngine> engine, const ContextOptions& options)
    : engine_(std::move(engine)), options_(options), memory_(SharedContextMemory::create()) {
  size_t dims = 0;
  for (size_t rank : engine_->ranks_) dims += rank;
  key_.reserve(dims);
  ordered_.reserve(engine_->input_names_.size());
}

RangeContext::~RangeContext() = default;

Status RangeContext::set_profile(int index) {
  const size_t count = engine_->profiles_.size();
  if (index < -1 || (index >= 0 && static_cast<size_t>(index) >= count)) {
    return invalid_argument("profile {} does not exist: the engine has {} (0..{}; -1 for any)", index, count,
                            count - 1);
  }
  profile_ = index;
  return Status::ok();
}

Result<std::map<std::vector<int64_t>, RangeContext::Entry>::iterator> RangeContext::context_for_key(bool exact_batch) {
  auto it = contexts_.find(key_);
  if (it != contexts_.end()) return it;
  QDQRT_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> lowered, engine_->engine_for_key(key_));
  if (contexts_.size() >= kMaxCachedShapes) {
    auto oldest = std::min_element(contexts_.begin(), contexts_.end(), [](const auto& a, const auto& b) {
      return a.second.last_run < b.second.last_run;
    });
    if (last_ == oldest->second.context.get()) last_ = nullptr;
    contexts_.erase(oldest);
  }
  const bool fixed_batch = !exact_batch && !lowered->plan().fixed_batch_reason.empty();
  return contexts_.emplace(key_, Entry{lowered->create_context(options_, memory_), fixed_batch, ++runs_}).first;
}

Status RangeContext::run(std::span<const ConstTensorBinding> inputs, std::span<const TensorBinding> outputs) {
  const RangeEngine& engine = *engine_;
  const std::vector<std::string>& names = engine.input_names_;
  ordered_.clear();
  for (const std::string& name : names) {
    const ConstTensorBinding* found = nullptr;
    for (const ConstTensorBinding& binding : inputs) {
      if (binding.name == name) found = &binding;
    }
    if (found == nullptr) return invalid_argument("input '{}' is not bound", name);
    ordered_.push_back(&found->shape);
  }
  for (const ConstTensorBinding& binding : inputs) {
    if (std::find(names.begin(), names.end(), binding.name) == names.end()) {
      return invalid_argument("'{}' is not an input of the engine", binding.name);
    }
  }
  QDQRT_ASSIGN_OR_RETURN(size_t profile, engine.check_ordered(ordered_, profile_));
  const int64_t max_batch = engine.ordered_profiles_[profile].max_batch;
  const int64_t batch = run_batch(ordered_, engine.batched_, max_batch);
  // The plan lowered at the maximum batch, unless it runs only there and this run's batch is another.
  engine.make_key(ordered_, profile, false, key_);
  QDQRT_ASSIGN_OR_RETURN(auto it, context_for_key(false));
  if (batch != max_batch && it->second.fixed_batch) {
    engine.make_key(ordered_, profile, true, key_);
    QDQRT_ASSIGN_OR_RETURN(it, context_for_key(true));
  }
  it->second.last_run = ++runs_;
  ExecutionContext& context = *it->second.context;
  context.set_profiling(options_.profiling);
  Status status = context.run(inputs, outputs);
  if (status.is_ok()) last_ = &context;
  return status;
}

}  // namespace qdqrt::engine
